/* SPDX-License-Identifier: Apache-2.0 */
/* libwharf: RDMA batches (wharf_batch_get, wharf_batch_put; docs/protocol.md "Batches"). The
 * entries are cut into requests of at most S3_BATCH_MAX_KEYS keys and S3_BATCH_MAX_LIST bytes
 * of list; each request is one signed POST /bucket?rdma-batch whose token names the caller's
 * whole region, run as the pieces of one operation (up to `concurrency` at once). Under
 * fallback http (or transport http) each key is one plain GET or PUT instead, and the report
 * says so. */
#include "client/object.h"

#include "base/crc.h"
#include "base/digest.h"
#include "base/log.h"
#include "s3/batch.h"
#include "xfer/token.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MOD "client"

typedef struct batch_op {
    wc_op_t op;
    s3_batch_op_t kind;
    uint8_t *base;
    uint64_t base_len;
    xfer_mr_t *mr;
    bool dev;
    char *entries; /* wharf_batch_entry_t, stride apart */
    size_t stride;
    size_t *starts; /* request i: entries [starts[i], starts[i + 1]) */
    bool *http;     /* request i was declined: its keys go over HTTP (fallback http) */
    _Atomic uint64_t bytes;
} batch_op_t;

void wharf_batch_entry_init(wharf_batch_entry_t *e, size_t size)
{
    if (!e || size < sizeof(size_t))
        return;
    memset(e, 0, size);
    e->size = size;
}

static wharf_batch_entry_t *entry_at(char *entries, size_t stride, size_t i)
{
    return (wharf_batch_entry_t *)(void *)(entries + i * stride);
}

static wharf_status_t code_status(const char *code)
{
    static const struct {
        const char *code;
        wharf_status_t st;
    } map[] = {{"OK", WHARF_OK},
               {"NoSuchKey", WHARF_ERR_NOT_FOUND},
               {"NoSuchBucket", WHARF_ERR_NOT_FOUND},
               {"AccessDenied", WHARF_ERR_AUTH},
               {"PreconditionFailed", WHARF_ERR_PRECONDITION},
               {"InvalidArgument", WHARF_ERR_INVALID},
               {"NotImplemented", WHARF_ERR_UNSUPPORTED},
               {"InternalError", WHARF_ERR_INTERNAL},
               {"ChecksumMismatch", WHARF_ERR_CHECKSUM}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(code, map[i].code))
            return map[i].st;
    return WHARF_ERR_HTTP;
}

/* The entries' statuses from a parsed reply; the landed (GET) or sent (PUT) bytes of host
 * memory checked against the server's crc64nvme when verifying. */
static void batch_apply(batch_op_t *b, size_t lo, const s3_batch_status_t *sv, size_t n)
{
    wc_op_t *op = &b->op;
    uint64_t bytes = 0;
    for (size_t k = 0; k < n; k++) {
        wharf_batch_entry_t *e = entry_at(b->entries, b->stride, lo + k);
        const s3_batch_status_t *s = &sv[k];
        snprintf(e->code, sizeof e->code, "%s", s->code);
        snprintf(e->etag, sizeof e->etag, "%s", s->etag);
        snprintf(e->message, sizeof e->message, "%s", s->message);
        e->status = code_status(s->code);
        e->bytes = e->status == WHARF_OK ? s->size : 0;
        e->crc64nvme = s->crc64nvme;
        if (e->status != WHARF_OK)
            continue;
        if (!s->has_crc || s->size > e->length) {
            e->status = WHARF_ERR_PROTOCOL;
            snprintf(e->message, sizeof e->message,
                     "the server's answer for this key has no crc64nvme or more bytes than its "
                     "slot");
            continue;
        }
        if (op->verify && !b->dev) {
            uint64_t crc = wh_crc64nvme(0, b->base + e->offset, s->size);
            if (crc != s->crc64nvme) {
                atomic_fetch_add(&op->c->st_checksum_failures, 1);
                e->status = WHARF_ERR_CHECKSUM;
                snprintf(e->code, sizeof e->code, "ChecksumMismatch");
                snprintf(e->message, sizeof e->message,
                         "crc64nvme of the slot's bytes is %016" PRIx64
                         " but the server's is %016" PRIx64,
                         crc, s->crc64nvme);
                continue;
            }
        }
        bytes += s->size;
    }
    atomic_fetch_add(&b->bytes, bytes);
    atomic_fetch_add(&op->c->st_rdma_ops, 1);
    atomic_fetch_add(&op->c->st_rdma_bytes, bytes);
}

static void batch_run(wc_op_t *op, unsigned i, wc_conn_t *conn)
{
    batch_op_t *b = (batch_op_t *)op;
    wharf_client_t *c = op->c;
    size_t lo = b->starts[i], n = b->starts[i + 1] - lo;
    char what[200], token[XFER_TOKEN_MAX_LEN], sha[65], msg[WC_ERR_LEN];
    snprintf(what, sizeof what, "POST %s?rdma-batch (%s of %zu keys, rdma %s)", op->bucket,
             b->kind == S3_BATCH_GET ? "GET" : "PUT", n, c->provider);
    s3_batch_entry_t *se = calloc(n, sizeof *se);
    s3_batch_status_t *sv = calloc(n, sizeof *sv);
    wh_sbuf_t list, out;
    wh_sbuf_init(&list);
    wh_sbuf_init(&out);
    wc_resp_t r;
    memset(&r, 0, sizeof r);
    wh_status_t http_st = WH_OK;
    bool finished = false, sent = false;
    if (!se || !sv) {
        wc_op_fail(op, WH_ERR_NOMEM, "%s: out of memory", what);
        goto out;
    }
    for (size_t k = 0; k < n; k++) {
        const wharf_batch_entry_t *e = entry_at(b->entries, b->stride, lo + k);
        se[k] = (s3_batch_entry_t){.key = (char *)(uintptr_t)e->key,
                                   .off = e->offset,
                                   .len = e->length,
                                   .if_none_match = e->if_none_match != 0};
    }
    s3_batch_format(b->kind, se, n, &list);
    if (list.oom) {
        wc_op_fail(op, WH_ERR_NOMEM, "%s: out of memory", what);
        goto out;
    }
    wh_sha256_hex(list.data, list.len, sha);
    xfer_progress_begin(c->xfer);
    wh_status_t st =
        xfer_token_pack(xfer_mr_owner(b->mr), b->mr, b->base, b->base_len, token, sizeof token);
    if (st != WH_OK) {
        xfer_progress_end(c->xfer);
        wc_op_fail(op, st, "%s: packing the token for [%p, +%" PRIu64 ") failed (%s)", what,
                   (void *)b->base, b->base_len, wh_status_str(st));
        goto out;
    }
    wc_req_t req = {.method = "POST",
                    .bucket = op->bucket,
                    .query = "rdma-batch",
                    .has_body = true,
                    .body = list.data,
                    .body_len = list.len,
                    .payload_hash = sha,
                    .body_out = &out};
    wc_req_header(&req, "content-type", "text/plain");
    wc_req_header(&req, "x-amz-rdma-token", token);
    st = wc_http_do(c, conn, &req, &r);
    sent = true;
    xfer_progress_end(c->xfer);
    wc_op_note_reply(op, &r);
    http_st = st;
    if (st != WH_OK) {
        wc_http_describe(c, what, st, &r, msg, sizeof msg);
        wc_op_fail(op, st, "%s", msg);
        goto out;
    }
    if (r.status == 501) {
        if (wc_op_declined(op, what, &r))
            b->http[i] = true;
        goto out;
    }
    if (r.status < 200 || r.status >= 300) {
        st = wc_http_status_map(&r);
        wc_http_describe(c, what, st, &r, msg, sizeof msg);
        wc_op_fail(op, st, "%s", msg);
        goto out;
    }
    if (!r.has_rdma_reply) {
        wc_op_fail(op, WH_ERR_PROTOCOL,
                   "%s: the reply lacks x-amz-rdma-reply: the server did not serve the batch "
                   "(not wharfd, or a proxy); nothing it says can be trusted to have landed",
                   what);
        goto out;
    }
    finished = true; /* the server answered after its transfers ended */
    if (s3_batch_reply_parse(out.data ? out.data : "", out.len, n, sv, msg, sizeof msg) != 0) {
        wc_op_fail(op, WH_ERR_PROTOCOL, "%s: %s", what, msg);
        goto out;
    }
    batch_apply(b, lo, sv, n);
    pthread_mutex_lock(&op->mu);
    op->any_rdma = true;
    pthread_mutex_unlock(&op->mu);
out:
    if (sent)
        wc_op_rdma_ended(op, xfer_mr_owner(b->mr), http_st, &r, finished);
    wc_resp_fini(&r);
    wh_sbuf_free(&list);
    wh_sbuf_free(&out);
    free(se);
    free(sv);
}

/* One key over plain HTTP (fallback): its status from the call's. */
static void batch_http_one(batch_op_t *b, wharf_batch_entry_t *e)
{
    wc_op_t *op = &b->op;
    wharf_xfer_opts_t o;
    wharf_xfer_opts_init(&o, sizeof o);
    o.transport = WHARF_TRANSPORT_HTTP;
    o.verify_checksum = op->verify;
    o.if_none_match = e->if_none_match;
    wharf_report_t rep;
    wharf_report_init(&rep, sizeof rep);
    wharf_status_t st =
        b->kind == S3_BATCH_GET
            ? wharf_object_get(op->c, op->bucket, e->key, b->base + e->offset, e->length, 0,
                               WHARF_WHOLE, &o, &rep)
            : wharf_object_put(op->c, op->bucket, e->key, b->base + e->offset, e->length, &o, &rep);
    e->status = st;
    e->bytes = st == WHARF_OK ? rep.bytes : 0;
    e->crc64nvme = rep.crc64nvme;
    snprintf(e->code, sizeof e->code, "%s", st == WHARF_OK ? "OK" : wharf_status_str(st));
    size_t el = strlen(rep.etag);
    if (el >= 2 && rep.etag[0] == '"')
        snprintf(e->etag, sizeof e->etag, "%.*s", (int)(el - 2), rep.etag + 1);
    else
        snprintf(e->etag, sizeof e->etag, "%s", rep.etag);
    snprintf(e->message, sizeof e->message, "%s", st == WHARF_OK ? "" : wharf_last_error());
    atomic_fetch_add(&b->bytes, e->bytes);
    op->any_http = true;
}

/* Request boundaries: at most S3_BATCH_MAX_KEYS keys and S3_BATCH_MAX_LIST bytes of list. */
static size_t batch_cut(batch_op_t *b, size_t n)
{
    size_t nreq = 0, used = sizeof S3_BATCH_MAGIC + 8, keys = 0;
    b->starts[0] = 0;
    for (size_t i = 0; i < n; i++) {
        const wharf_batch_entry_t *e = entry_at(b->entries, b->stride, i);
        size_t line = 48 + 3 * strlen(e->key); /* worst case: every byte escaped */
        if (keys && (keys == S3_BATCH_MAX_KEYS || used + line > S3_BATCH_MAX_LIST)) {
            b->starts[++nreq] = i;
            used = sizeof S3_BATCH_MAGIC + 8;
            keys = 0;
        }
        used += line;
        keys++;
    }
    b->starts[++nreq] = n;
    return nreq;
}

static wharf_status_t batch_call(wharf_client_t *c, s3_batch_op_t kind, const char *bucket,
                                 void *base, uint64_t base_len, wharf_batch_entry_t *entries,
                                 size_t n, const wharf_xfer_opts_t *uopts, wharf_report_t *report)
{
    const char *fn = kind == S3_BATCH_GET ? "wharf_batch_get" : "wharf_batch_put";
    wc_client_enter(c);
    if (!c || !bucket || !*bucket || !base || !entries || n == 0) {
        wc_set_error("%s: client, bucket, base and at least one entry are required", fn);
        return WHARF_ERR_INVALID;
    }
    if (entries[0].size < sizeof(wharf_batch_entry_t)) {
        wc_set_error("%s: entries[0].size is %zu; call wharf_batch_entry_init(&e, sizeof e) on "
                     "every entry",
                     fn, entries[0].size);
        return WHARF_ERR_INVALID;
    }
    size_t stride = entries[0].size;
    for (size_t i = 0; i < n; i++) {
        wharf_batch_entry_t *e = entry_at((char *)entries, stride, i);
        if (e->size != stride || !e->key || !*e->key || e->length == 0 ||
            e->length > WHARF_BATCH_MAX_OBJECT || e->offset > base_len ||
            e->length > base_len - e->offset) {
            wc_set_error("%s: entry %zu (key '%.200s'): every entry needs the same size field, a "
                         "key, and a slot of 1 to %llu bytes inside [base, base+%" PRIu64 ")",
                         fn, i, e->key ? e->key : "(null)",
                         (unsigned long long)WHARF_BATCH_MAX_OBJECT, base_len);
            return WHARF_ERR_INVALID;
        }
    }
    wharf_xfer_opts_t o;
    wh_status_t st = wc_opts_resolve(c, uopts, &o);
    if (st != WH_OK)
        return (wharf_status_t)st;
    batch_op_t b;
    memset(&b, 0, sizeof b);
    wc_op_t *op = &b.op;
    wc_op_init(op, c, bucket, "?rdma-batch");
    op->verify = o.verify_checksum != 0;
    op->conc = o.concurrency;
    b.kind = kind;
    b.base = base;
    b.base_len = base_len;
    b.entries = (char *)entries;
    b.stride = stride;
    b.starts = calloc(n + 1, sizeof *b.starts);
    b.http = calloc(n + 1, sizeof *b.http);
    if (!b.starts || !b.http) {
        st = WH_ERR_NOMEM;
        wc_set_error("%s: out of memory", fn);
        goto out;
    }
    size_t nreq = batch_cut(&b, n);
    if ((st = wc_op_choose(op, &o)) != WH_OK)
        goto out;
    if (op->rdma) {
        st = wc_mem_find(c, base, base_len, &b.mr);
        b.dev = st == WH_OK && wc_mr_is_device(b.mr);
        op->device = b.dev;
        op->dev_provider = b.dev ? xfer_name(xfer_mr_owner(b.mr)) : NULL;
        if (st != WH_OK) {
            if (c->fallback != WHARF_FALLBACK_HTTP)
                goto out; /* message set by wc_mem_find */
            op->rdma = false;
            op->fell_back = true;
            snprintf(op->reason, sizeof op->reason, "%s", wc_get_error());
            atomic_fetch_add(&c->st_fallbacks, 1);
            wc_clear_error();
            st = WH_OK;
        }
    }
    if (!op->rdma && wc_mem_is_cuda(c, base, base_len)) {
        st = WH_ERR_UNSUPPORTED;
        wc_set_error("%s %s: the region is GPU memory, which only the RDMA path reaches", fn,
                     bucket);
        goto out;
    }
    if (op->rdma) {
        op->n = (unsigned)nreq;
        op->run = batch_run;
        wc_op_execute(op);
        if (op->st != WH_OK) {
            st = op->st;
            wc_set_error("%s", op->err);
            goto out;
        }
    } else {
        for (size_t i = 0; i < nreq; i++)
            b.http[i] = true;
    }
    for (size_t i = 0; i < nreq; i++)
        for (size_t k = b.starts[i]; b.http[i] && k < b.starts[i + 1]; k++)
            batch_http_one(&b, entry_at(b.entries, stride, k));
    wc_clear_error();
out:
    wc_op_report(op, st, atomic_load(&b.bytes), 0, report);
    wc_op_fini(op);
    free(b.starts);
    free(b.http);
    return (wharf_status_t)st;
}

wharf_status_t wharf_batch_get(wharf_client_t *c, const char *bucket, void *base, uint64_t base_len,
                               wharf_batch_entry_t *entries, size_t n,
                               const wharf_xfer_opts_t *opts, wharf_report_t *report)
{
    return batch_call(c, S3_BATCH_GET, bucket, base, base_len, entries, n, opts, report);
}

wharf_status_t wharf_batch_put(wharf_client_t *c, const char *bucket, const void *base,
                               uint64_t base_len, wharf_batch_entry_t *entries, size_t n,
                               const wharf_xfer_opts_t *opts, wharf_report_t *report)
{
    return batch_call(c, S3_BATCH_PUT, bucket, (void *)(uintptr_t)base, base_len, entries, n, opts,
                      report);
}
