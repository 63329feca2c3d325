/* SPDX-License-Identifier: Apache-2.0 */
/* libwharf: the scatter GET (wharf_object_get_scatter; docs/protocol.md, "Scatter GET"). Over
 * RDMA the windows go in batches of at most XFER_WIN_MAX, one signed POST ?x-wharf-scatter=1
 * each, run in parallel like a GET's pieces; each batch's token names the span of dst its
 * windows land in, and the reply's per-window crc64nvme is checked against the landed bytes.
 * Over HTTP (no provider, transport HTTP, or a decline under fallback=http) one ranged GET per
 * window. */
#include "client/object.h"

#include "base/crc.h"
#include "base/codec.h"
#include "base/digest.h"
#include "xfer/token.h"
#include "xfer/windows.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SCAT_MIN_PER 64 /* windows a batch takes before the next runner gets any */

typedef struct scat_op {
    wc_op_t op;
    uint8_t *dst;
    uint64_t dst_len;
    const wharf_window_t *w;
    size_t n, per; /* windows, windows per batch */
    uint64_t *crcs;
    xfer_mr_t *mr;
    bool dev;
    wharf_xfer_opts_t http_opts; /* a window's HTTP GET */
} scat_op_t;

/* Batch i's windows, their destinations made relative to the span [lo, hi) of dst they fill. */
static void scat_span(const scat_op_t *s, size_t a, size_t b, uint64_t *lo, uint64_t *hi)
{
    *lo = UINT64_MAX;
    *hi = 0;
    for (size_t i = a; i < b; i++) {
        if (!s->w[i].length)
            continue;
        *lo = WH_MIN(*lo, s->w[i].dst_off);
        *hi = WH_MAX(*hi, s->w[i].dst_off + s->w[i].length);
    }
    if (*lo == UINT64_MAX)
        *lo = *hi = 0;
}

/* The batch over HTTP: a ranged GET per window (the crc computed here). */
static void scat_batch_http(scat_op_t *s, size_t a, size_t b)
{
    wc_op_t *op = &s->op;
    for (size_t i = a; i < b && !atomic_load(&op->failed); i++) {
        const wharf_window_t *w = &s->w[i];
        if (!w->length) {
            s->crcs[i] = 0;
            continue;
        }
        wharf_report_t rep;
        wharf_report_init(&rep, sizeof rep);
        wharf_status_t st = wharf_object_get(op->c, op->bucket, op->key, s->dst + w->dst_off,
                                             w->length, w->offset, w->length, &s->http_opts, &rep);
        atomic_fetch_add(&op->requests, rep.requests);
        if (st != WHARF_OK) {
            wc_op_fail(op, (wh_status_t)st, "scatter GET %s/%s, window %zu over http: %s",
                       op->bucket, op->key, i, wharf_last_error());
            return;
        }
        if (rep.bytes != w->length) {
            wc_op_fail(op, WH_ERR_RANGE,
                       "scatter GET %s/%s, window %zu: %" PRIu64 " of %" PRIu64
                       " bytes (past the object's end)",
                       op->bucket, op->key, i, rep.bytes, w->length);
            return;
        }
        s->crcs[i] = wh_crc64nvme(0, s->dst + w->dst_off, w->length);
    }
    pthread_mutex_lock(&op->mu);
    op->any_http = true;
    pthread_mutex_unlock(&op->mu);
}

/* The per-window crcs of a reply body: n lines of 16 lowercase hex digits. */
static bool scat_parse_crcs(const char *p, size_t len, size_t n, uint64_t *out)
{
    if (len != n * 17)
        return false;
    for (size_t i = 0; i < n; i++) {
        const char *l = p + i * 17;
        uint64_t v = 0;
        for (int k = 0; k < 16; k++) {
            char c = l[k];
            int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
            if (d < 0)
                return false;
            v = v << 4 | (uint64_t)d;
        }
        if (l[16] != '\n')
            return false;
        out[i] = v;
    }
    return true;
}

/* Returns false when the batch must go over HTTP (declined, fallback=http). */
static bool scat_batch_rdma(scat_op_t *s, size_t a, size_t b, wc_conn_t *conn)
{
    wc_op_t *op = &s->op;
    wharf_client_t *c = op->c;
    uint64_t lo, hi;
    scat_span(s, a, b, &lo, &hi);
    char what[200], token[XFER_TOKEN_MAX_LEN], hash[65];
    snprintf(what, sizeof what, "scatter GET %s/%s (windows %zu-%zu, rdma %s)", op->bucket, op->key,
             a, b - 1, c->provider);
    wh_sbuf_t list, body;
    wh_sbuf_init(&list);
    wh_sbuf_init(&body);
    for (size_t i = a; i < b; i++) {
        char line[XFER_WIN_LINE_MAX];
        xfer_window_t xw = {.off = s->w[i].offset,
                            .len = s->w[i].length,
                            .dst = s->w[i].length ? s->w[i].dst_off - lo : 0};
        wh_sbuf_append(&list, line, xfer_window_format(&xw, line));
    }
    if (list.oom) {
        wc_op_fail(op, WH_ERR_NOMEM, "%s: out of memory", what);
        goto done;
    }
    uint8_t d[WH_SHA256_LEN];
    wh_sha256_t sh;
    wh_sha256_init(&sh);
    wh_sha256_update(&sh, list.data, list.len);
    wh_sha256_final(&sh, d);
    wh_hex_encode(d, sizeof d, hash);
    /* A token of at least one byte, even for a batch of empty windows. */
    uint64_t span = hi > lo ? hi - lo : 1;
    if (lo + span > s->dst_len)
        lo = s->dst_len - span;
    xfer_progress_begin(c->xfer);
    wh_status_t st =
        xfer_token_pack(xfer_mr_owner(s->mr), s->mr, s->dst + lo, span, token, sizeof token);
    if (st != WH_OK) {
        xfer_progress_end(c->xfer);
        wc_op_fail(op, st, "%s: packing the token failed (%s)", what, wh_status_str(st));
        goto done;
    }
    wc_req_t req = {.method = "POST",
                    .bucket = op->bucket,
                    .key = op->key,
                    .query = "x-wharf-scatter=1",
                    .has_body = true,
                    .body = list.data,
                    .body_len = list.len,
                    .payload_hash = hash,
                    .body_out = &body};
    wc_req_header(&req, "x-amz-rdma-token", token);
    wc_resp_t r;
    st = wc_http_do(c, conn, &req, &r);
    xfer_progress_end(c->xfer);
    wc_op_note_reply(op, &r);
    wh_status_t http_st = st;
    bool finished = false, done = true;
    char msg[WC_ERR_LEN];
    if (st != WH_OK) {
        wc_http_describe(c, what, st, &r, msg, sizeof msg);
        wc_op_fail(op, st, "%s", msg);
        goto out;
    }
    if (r.status == 501 && r.has_rdma_reply) {
        done = !wc_op_declined(op, what, &r);
        goto out;
    }
    if (r.status != 200) {
        st = r.status == 501 ? WH_ERR_UNSUPPORTED : wc_http_status_map(&r);
        wc_http_describe(c, what, st, &r, msg, sizeof msg);
        wc_op_fail(op, st, "%s%s", msg,
                   r.status == 501 || r.status == 405
                       ? " (the server does not know the scatter GET extension)"
                       : "");
        goto out;
    }
    uint64_t due = 0;
    for (size_t i = a; i < b; i++)
        due += s->w[i].length;
    if (!r.has_rdma_reply || !r.has_rdma_bytes || r.rdma_bytes != due) {
        wc_op_fail(op, WH_ERR_PROTOCOL,
                   "%s: the reply %s (x-amz-rdma-bytes-transferred %" PRIu64 ", %" PRIu64 " due)",
                   what, r.has_rdma_reply ? "moved the wrong count" : "has no x-amz-rdma-reply",
                   r.rdma_bytes, due);
        goto out;
    }
    if (!scat_parse_crcs(body.data ? body.data : "", body.len, b - a, s->crcs + a)) {
        wc_op_fail(op, WH_ERR_PROTOCOL, "%s: the reply body is not %zu crc64nvme lines (%zu bytes)",
                   what, b - a, body.len);
        goto out;
    }
    if (op->verify && !s->dev) {
        for (size_t i = a; i < b; i++) {
            uint64_t got = wh_crc64nvme(0, s->dst + s->w[i].dst_off, s->w[i].length);
            if (got != s->crcs[i]) {
                atomic_fetch_add(&c->st_checksum_failures, 1);
                wc_op_fail(op, WH_ERR_CHECKSUM,
                           "%s: window %zu's crc64nvme of the landed bytes is %016" PRIx64
                           " but the server sent %016" PRIx64,
                           what, i, got, s->crcs[i]);
                goto out;
            }
        }
    }
    atomic_fetch_add(&c->st_rdma_ops, 1);
    atomic_fetch_add(&c->st_rdma_bytes, due);
    pthread_mutex_lock(&op->mu);
    op->any_rdma = true;
    pthread_mutex_unlock(&op->mu);
    finished = true;
out:
    wc_op_rdma_ended(op, xfer_mr_owner(s->mr), http_st, &r, finished);
    wc_resp_fini(&r);
    wh_sbuf_free(&list);
    wh_sbuf_free(&body);
    return done;
done:
    wh_sbuf_free(&list);
    wh_sbuf_free(&body);
    return true;
}

static void scat_run(wc_op_t *op, unsigned i, wc_conn_t *conn)
{
    scat_op_t *s = (scat_op_t *)op;
    size_t a = (size_t)i * s->per, b = WH_MIN(s->n, a + s->per);
    if (op->rdma && !atomic_load(&op->force_http) && scat_batch_rdma(s, a, b, conn))
        return;
    scat_batch_http(s, a, b);
}

WHARF_API wharf_status_t wharf_object_get_scatter(wharf_client_t *c, const char *bucket,
                                                  const char *key, void *dst, uint64_t dst_len,
                                                  const wharf_window_t *windows, size_t n,
                                                  uint64_t *crcs, const wharf_xfer_opts_t *uopts,
                                                  wharf_report_t *report)
{
    wc_client_enter(c);
    if (!c || !wc_name_ok(bucket, key) || !dst || (!windows && n)) {
        wc_set_error("wharf_object_get_scatter: client, bucket, key, dst and windows are "
                     "required");
        return WHARF_ERR_INVALID;
    }
    wharf_xfer_opts_t o;
    wh_status_t st = wc_opts_resolve(c, uopts, &o);
    if (st != WH_OK)
        return (wharf_status_t)st;
    scat_op_t s;
    memset(&s, 0, sizeof s);
    wc_op_t *op = &s.op;
    wc_op_init(op, c, bucket, key);
    op->verify = o.verify_checksum != 0;
    op->conc = o.concurrency;
    uint64_t bytes = 0;
    s.dst = dst;
    s.dst_len = dst_len;
    s.w = windows;
    s.n = n;
    s.crcs = crcs ? crcs : calloc(n ? n : 1, sizeof *s.crcs);
    s.http_opts = o;
    s.http_opts.transport = WHARF_TRANSPORT_HTTP;
    s.http_opts.concurrency = 1;
    if (!s.crcs) {
        st = WH_ERR_NOMEM;
        wc_set_error("scatter GET %s/%s: out of memory", bucket, key);
        goto out;
    }
    if (o.version_id && o.version_id[0]) {
        st = WH_ERR_UNSUPPORTED;
        wc_set_error("scatter GET %s/%s: version_id is not taken by a scatter GET yet", bucket,
                     key);
        goto out;
    }
    /* Bounds here too: the server refuses what does not fit, and so does the client first. */
    char why[300];
    xfer_window_t *xw = calloc(n ? n : 1, sizeof *xw);
    if (!xw) {
        st = WH_ERR_NOMEM;
        wc_set_error("scatter GET %s/%s: out of memory", bucket, key);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        xw[i] = (xfer_window_t){
            .off = windows[i].offset, .len = windows[i].length, .dst = windows[i].dst_off};
        if (xw[i].off + xw[i].len < xw[i].off || xw[i].dst + xw[i].len < xw[i].dst) {
            free(xw);
            st = WH_ERR_INVALID;
            wc_set_error("scatter GET %s/%s: window %zu wraps past 2^64", bucket, key, i);
            goto out;
        }
        bytes += windows[i].length;
    }
    xfer_win_check_t ck = xfer_windows_check(xw, n, UINT64_MAX, dst_len, why, sizeof why);
    free(xw);
    if (ck != XFER_WIN_OK) {
        st = ck == XFER_WIN_NOMEM ? WH_ERR_NOMEM : WH_ERR_INVALID;
        wc_set_error("scatter GET %s/%s: %s", bucket, key,
                     ck == XFER_WIN_OUTSIDE ? "a window lies outside dst" : why);
        if (ck == XFER_WIN_OUTSIDE)
            wc_set_error("scatter GET %s/%s: %s (dst_len)", bucket, key, why);
        goto out;
    }
    if (bytes == 0) { /* no window holds a byte (or there is none): nothing to move */
        memset(s.crcs, 0, (n ? n : 1) * sizeof *s.crcs);
        goto out;
    }
    st = wc_op_choose(op, &o);
    if (st != WH_OK)
        goto out;
    if (!op->rdma && wc_mem_is_cuda(c, dst, dst_len)) {
        st = WH_ERR_UNSUPPORTED;
        wc_set_error("scatter GET %s/%s: the destination is GPU memory, which only the RDMA "
                     "path reaches",
                     bucket, key);
        goto out;
    }
    if (op->rdma) {
        st = wc_mem_find(c, dst, dst_len, &s.mr);
        s.dev = st == WH_OK && wc_mr_is_device(s.mr);
        op->device = s.dev;
        op->dev_provider = s.dev ? xfer_name(xfer_mr_owner(s.mr)) : NULL;
        if (st != WH_OK) {
            if (c->fallback != WHARF_FALLBACK_HTTP)
                goto out;
            op->rdma = false;
            op->fell_back = true;
            snprintf(op->reason, sizeof op->reason, "%s", wc_get_error());
            atomic_fetch_add(&c->st_fallbacks, 1);
            wc_clear_error();
            st = WH_OK;
        }
    }
    if (s.dev && !op->rdma) {
        st = WH_ERR_UNSUPPORTED;
        wc_set_error("scatter GET %s/%s: GPU memory needs the RDMA path", bucket, key);
        goto out;
    }
    /* Batches: as many as the concurrency asks, each within the server's bound. */
    unsigned conc = op->conc ? op->conc : 1;
    s.per = (n + conc - 1) / conc;
    if (s.per < SCAT_MIN_PER) /* a few windows are one request, not one per runner */
        s.per = WH_MIN(n, (size_t)SCAT_MIN_PER);
    if (s.per > XFER_WIN_MAX)
        s.per = XFER_WIN_MAX;
    if (!op->rdma)
        s.per = n; /* HTTP: one runner per window would be a GET each anyway */
    op->n = (unsigned)((n + s.per - 1) / s.per);
    op->run = scat_run;
    wc_op_execute(op);
    if (op->st != WH_OK) {
        st = op->st;
        wc_set_error("%s", op->err);
    }
out:
    wc_op_report(op, st, st == WH_OK ? bytes : 0, 0, report);
    if (s.crcs != crcs)
        free(s.crcs);
    wc_op_fini(op);
    return (wharf_status_t)st;
}
