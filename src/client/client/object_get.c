/* SPDX-License-Identifier: Apache-2.0 */
/* libwharf: object GET into registered memory over RDMA, or into any memory over HTTP, in
 * parallel pieces (client/object.h); and HEAD (wharf_object_stat). */
#include "client/object.h"

#include "base/crc.h"
#include "base/digest.h"
#include "base/log.h"
#include "auth/sigv4.h"
#include "s3/xml.h"
#include "xfer/token.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MOD "client"

typedef struct get_op {
    wc_op_t op;
    uint8_t *dst;
    uint64_t offset, length, chunk;
    xfer_mr_t *mr;
    bool dev;     /* dst is GPU memory: the CPU never touches it */
    bool crc_all; /* compute crc of HTTP pieces too (whole-object check) */
    wc_get_piece_t *pieces;
} get_op_t;

static void get_piece_http(get_op_t *g, unsigned i, wc_conn_t *conn, uint64_t off, uint64_t len,
                           uint8_t *dst)
{
    wc_op_t *op = &g->op;
    wharf_client_t *c = op->c;
    wc_get_piece_t *pc = &g->pieces[i];
    char range[64], what[128];
    snprintf(range, sizeof range, "bytes=%" PRIu64 "-%" PRIu64, off, off + len - 1);
    snprintf(what, sizeof what, "GET %s/%s (%s, http)", op->bucket, op->key, range);
    if (g->dev) {
        wc_op_fail(op, WH_ERR_UNSUPPORTED,
                   "%s: HTTP cannot land bytes in GPU memory and libwharf "
                   "does not stage; GET into host memory and copy (wharf.torch stages and says so)",
                   what);
        return;
    }
    wc_req_t req = {.method = "GET",
                    .bucket = op->bucket,
                    .key = op->key,
                    .query = op->query[0] ? op->query : NULL};
    wc_req_header(&req, "range", range);
    wc_req_header(&req, "x-amz-checksum-mode", "ENABLED"); /* the stored checksum, to verify */
    req.dst = dst;
    req.dst_cap = len;
    wc_resp_t r;
    wh_status_t st = wc_http_do(c, conn, &req, &r);
    wc_op_note_reply(op, &r);
    char msg[WC_ERR_LEN];
    if (st != WH_OK) {
        wc_http_describe(c, what, st, &r, msg, sizeof msg);
        wc_op_fail(op, st, "%s", msg);
        goto out;
    }
    if (r.status == 416) {
        wc_get_piece_416(&r, pc);
        if (i == 0) {
            wc_http_describe(c, what, WH_ERR_RANGE, &r, msg, sizeof msg);
            wc_op_fail(op, WH_ERR_RANGE, "%s", msg);
        }
        goto out;
    }
    if (r.status < 200 || r.status >= 300) {
        st = wc_http_status_map(&r);
        wc_http_describe(c, what, st, &r, msg, sizeof msg);
        wc_op_fail(op, st, "%s", msg);
        goto out;
    }
    uint64_t n;
    if (!wc_get_reply_extent(&r, off, len, &n, pc, msg, sizeof msg)) {
        wc_op_fail(op, WH_ERR_PROTOCOL, "%s: %s", what, msg);
        goto out;
    }
    if (n != UINT64_MAX && r.body_len != n) {
        wc_op_fail(op, WH_ERR_PROTOCOL,
                   "%s: Content-Range says %" PRIu64 " bytes but %" PRIu64 " arrived", what, n,
                   r.body_len);
        goto out;
    }
    pc->got = r.body_len;
    if (g->crc_all) {
        pc->crc = wh_crc64nvme(0, dst, pc->got);
        pc->has_crc = true;
    }
    atomic_fetch_add(&c->st_http_ops, 1);
    atomic_fetch_add(&c->st_http_bytes, pc->got);
    pthread_mutex_lock(&op->mu);
    op->any_http = true;
    pthread_mutex_unlock(&op->mu);
out:
    wc_resp_fini(&r);
}

/* Returns false when the piece must be re-sent over HTTP (declined, fallback=http). */
static bool get_piece_rdma(get_op_t *g, unsigned i, wc_conn_t *conn, uint64_t off, uint64_t len,
                           uint8_t *dst)
{
    wc_op_t *op = &g->op;
    wharf_client_t *c = op->c;
    wc_get_piece_t *pc = &g->pieces[i];
    char range[64], what[160], token[XFER_TOKEN_MAX_LEN];
    snprintf(range, sizeof range, "bytes=%" PRIu64 "-%" PRIu64, off, off + len - 1);
    snprintf(what, sizeof what, "GET %s/%s (%s, rdma %s)", op->bucket, op->key, range, c->provider);
    /* The bracket opens before the token is packed: the endpoint it names cannot be replaced
     * (xfer_quiesce) until the reply is in. */
    xfer_progress_begin(c->xfer);
    wh_status_t st = xfer_token_pack(xfer_mr_owner(g->mr), g->mr, dst, len, token, sizeof token);
    if (st != WH_OK) {
        xfer_progress_end(c->xfer);
        wc_op_fail(op, st, "%s: packing the token for [%p, +%" PRIu64 ") failed (%s)", what,
                   (void *)dst, len, wh_status_str(st));
        return true;
    }
    wc_req_t req = {.method = "GET",
                    .bucket = op->bucket,
                    .key = op->key,
                    .query = op->query[0] ? op->query : NULL};
    wc_req_header(&req, "range", range);
    wc_req_header(&req, "x-amz-rdma-token", token);
    wc_resp_t r;
    st = wc_http_do(c, conn, &req, &r); /* body: counted, must be 0 */
    xfer_progress_end(c->xfer);
    wc_op_note_reply(op, &r);
    wh_status_t http_st = st;
    bool finished = false; /* the server's transfer ended and its bytes were checked */
    bool done = true;
    char msg[WC_ERR_LEN];
    if (st != WH_OK) {
        wc_http_describe(c, what, st, &r, msg, sizeof msg);
        wc_op_fail(op, st, "%s", msg);
        goto out;
    }
    if (r.status == 501) {
        done = !wc_op_declined(op, what, &r);
        goto out;
    }
    if (r.status == 416) {
        wc_get_piece_416(&r, pc);
        if (i == 0) {
            wc_http_describe(c, what, WH_ERR_RANGE, &r, msg, sizeof msg);
            wc_op_fail(op, WH_ERR_RANGE, "%s", msg);
        }
        goto out;
    }
    if (r.status < 200 || r.status >= 300) {
        st = wc_http_status_map(&r);
        wc_http_describe(c, what, st, &r, msg, sizeof msg);
        wc_op_fail(op, st, "%s", msg);
        goto out;
    }
    uint64_t n;
    if (!wc_get_rdma_reply(&r, off, len, &n, pc, msg, sizeof msg)) {
        wc_op_fail(op, WH_ERR_PROTOCOL, "%s: %s", what, msg);
        goto out;
    }
    pc->got = n;
    if (g->dev) {
        /* GPU memory: the CPU cannot read the landed bytes, so the crc is the server's (of
         * exactly the bytes it moved); reading them back would cost a second copy. */
        if (r.has_crc64) {
            pc->crc = r.crc64;
            pc->has_crc = true;
        }
    } else if (op->verify || g->crc_all) {
        pc->crc = wh_crc64nvme(0, dst, n);
        pc->has_crc = true;
    }
    if (op->verify && !g->dev) {
        if (!r.has_crc64) {
            wc_op_fail(op, WH_ERR_PROTOCOL,
                       "%s: the reply lacks x-amz-checksum-crc64nvme%s; the "
                       "landed bytes cannot be checked (turn verify_checksum off to skip)",
                       what, r.bad_crc64 ? " (malformed)" : "");
            goto out;
        }
        if (r.crc64 != pc->crc) {
            atomic_fetch_add(&c->st_checksum_failures, 1);
            wc_op_fail(op, WH_ERR_CHECKSUM,
                       "%s: crc64nvme of the landed bytes is %016" PRIx64
                       " but the server sent %016" PRIx64 "; the transport did not land the data "
                       "it reported",
                       what, pc->crc, r.crc64);
            goto out;
        }
    }
    atomic_fetch_add(&c->st_rdma_ops, 1);
    atomic_fetch_add(&c->st_rdma_bytes, n);
    pthread_mutex_lock(&op->mu);
    op->any_rdma = true;
    pthread_mutex_unlock(&op->mu);
    finished = true;
out:
    wc_op_rdma_ended(op, xfer_mr_owner(g->mr), http_st, &r, finished);
    wc_resp_fini(&r);
    return done;
}

static void get_run(wc_op_t *op, unsigned i, wc_conn_t *conn)
{
    get_op_t *g = (get_op_t *)op;
    uint64_t rel = (uint64_t)i * g->chunk;
    uint64_t len = WH_MIN(g->chunk, g->length - rel);
    uint64_t off = g->offset + rel;
    uint8_t *dst = g->dst + rel;
    if (op->rdma && !atomic_load(&op->force_http)) {
        if (get_piece_rdma(g, i, conn, off, len, dst))
            return;
    }
    get_piece_http(g, i, conn, off, len, dst);
}

/* "versionId=<encoded>" into out ("" for NULL or ""). */
static wh_status_t version_query(const char *vid, char *out, size_t cap, const char *what,
                                 const char *bucket, const char *key)
{
    out[0] = '\0';
    if (!vid || !vid[0])
        return WH_OK;
    wh_sbuf_t q;
    wh_sbuf_init(&q);
    wh_sbuf_puts(&q, "versionId=");
    s3_uri_encode(vid, strlen(vid), 1, &q);
    if (q.oom || q.len >= cap) {
        wh_sbuf_free(&q);
        wc_set_error("%s %s/%s: version_id is too long (%zu bytes)", what, bucket, key,
                     strlen(vid));
        return WH_ERR_INVALID;
    }
    memcpy(out, q.data, q.len + 1);
    wh_sbuf_free(&q);
    return WH_OK;
}

WHARF_API wharf_status_t wharf_object_get(wharf_client_t *c, const char *bucket, const char *key,
                                          void *dst, uint64_t dst_len, uint64_t offset,
                                          uint64_t length, const wharf_xfer_opts_t *uopts,
                                          wharf_report_t *report)
{
    wc_client_enter(c);
    if (!c || !wc_name_ok(bucket, key) || (!dst && dst_len)) {
        wc_set_error("wharf_object_get: client, bucket, key and dst are required");
        return WHARF_ERR_INVALID;
    }
    wharf_xfer_opts_t o;
    wh_status_t st = wc_opts_resolve(c, uopts, &o);
    if (st != WH_OK)
        return (wharf_status_t)st;
    get_op_t g;
    memset(&g, 0, sizeof g);
    wc_op_t *op = &g.op;
    wc_op_init(op, c, bucket, key);
    op->verify = o.verify_checksum != 0;
    op->conc = o.concurrency;
    uint64_t bytes = 0, crc = 0;
    wharf_stat_t sb;
    memset(&sb, 0, sizeof sb); /* read only when have_stat; the analyzer cannot tell */
    /* Every piece (and the HEAD that sizes a whole read) names the version. */
    st = version_query(o.version_id, op->query, sizeof op->query, "GET", bucket, key);
    if (st != WH_OK)
        goto out;
    bool have_stat = false;

    st = wc_op_choose(op, &o);
    if (st != WH_OK)
        goto out;
    if (length == WHARF_WHOLE) {
        wharf_stat_init(&sb, sizeof sb);
        st = wc_head_object(c, bucket, key, &sb, op, op->query);
        if (st != WH_OK)
            goto out;
        have_stat = true;
        if (offset > sb.length) {
            st = WH_ERR_RANGE;
            wc_set_error("GET %s/%s: offset %" PRIu64 " is past the end of the object (%" PRIu64
                         " bytes)",
                         bucket, key, offset, sb.length);
            goto out;
        }
        length = sb.length - offset;
    }
    if (length > dst_len) {
        st = WH_ERR_TOO_LARGE;
        wc_set_error("GET %s/%s: the destination holds %" PRIu64 " bytes but %" PRIu64
                     " are asked for; pass a larger buffer or a shorter range",
                     bucket, key, dst_len, length);
        goto out;
    }
    if (offset + length < offset) {
        st = WH_ERR_RANGE;
        wc_set_error("GET %s/%s: offset + length overflows", bucket, key);
        goto out;
    }
    if (length == 0)
        goto out; /* nothing to move (an empty object, or an empty range) */
    g.dst = dst;
    g.offset = offset;
    g.length = length;
    g.chunk = c->chunk_size;
    g.crc_all = op->verify && have_stat && sb.has_crc64nvme && offset == 0;
    if (!op->rdma && wc_mem_is_cuda(c, dst, length)) {
        st = WH_ERR_UNSUPPORTED;
        wc_set_error("GET %s/%s: the destination is GPU memory, which only the RDMA path "
                     "(cuda1 over the Unix socket) reaches; HTTP cannot land bytes there",
                     bucket, key);
        goto out;
    }
    if (op->rdma) {
        st = wc_mem_find(c, dst, length, &g.mr);
        g.dev = st == WH_OK && wc_mr_is_device(g.mr);
        op->device = g.dev;
        op->dev_provider = g.dev ? xfer_name(xfer_mr_owner(g.mr)) : NULL;
        if (g.dev)
            g.crc_all = false;
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
    op->n = wc_get_piece_count(length, &g.chunk);
    g.pieces = calloc(op->n, sizeof *g.pieces);
    if (!g.pieces) {
        st = WH_ERR_NOMEM;
        wc_set_error("GET %s/%s: out of memory", bucket, key);
        goto out;
    }
    op->run = get_run;
    wc_op_execute(op);
    if (op->st != WH_OK) {
        st = op->st;
        wc_set_error("%s", op->err);
        goto out;
    }
    char why[WC_ERR_LEN];
    st = wc_get_stitch(g.pieces, op->n, g.chunk, offset, length, &bytes, &crc, why, sizeof why);
    if (st != WH_OK) {
        wc_set_error("GET %s/%s: %s", bucket, key, why);
        goto out;
    }
    if (g.crc_all && bytes == sb.length && crc != sb.crc64nvme) {
        atomic_fetch_add(&c->st_checksum_failures, 1);
        st = WH_ERR_CHECKSUM;
        wc_set_error("GET %s/%s: crc64nvme of the %" PRIu64 " bytes received is %016" PRIx64
                     " but the object's is %016" PRIx64,
                     bucket, key, bytes, crc, sb.crc64nvme);
        goto out;
    }
out:
    if (st == WH_OK && op->fell_back && !op->any_http && bytes)
        op->any_http = true;
    wc_op_report(op, st, bytes, (g.crc_all || (op->verify && !op->any_http)) ? crc : 0, report);
    free(g.pieces);
    wc_op_fini(op);
    return (wharf_status_t)st;
}

/* ---- stat (HEAD) ------------------------------------------------------------------------ */

wh_status_t wc_head_object(wharf_client_t *c, const char *bucket, const char *key,
                           wharf_stat_t *out, wc_op_t *op, const char *query)
{
    wc_conn_t *conn = wc_client_conn_get(c);
    if (!conn)
        return WH_ERR_NOMEM;
    wc_req_t req = {
        .method = "HEAD", .bucket = bucket, .key = key, .query = query && query[0] ? query : NULL};
    wc_req_header(&req, "x-amz-checksum-mode", "ENABLED");
    wc_resp_t r;
    char what[128], msg[WC_ERR_LEN];
    snprintf(what, sizeof what, "HEAD %s/%s", bucket, key);
    wh_status_t st = wc_http_do(c, conn, &req, &r);
    wc_client_conn_put(c, conn);
    if (op)
        wc_op_note_reply(op, &r);
    if (st == WH_OK && (r.status < 200 || r.status >= 300)) {
        st = wc_http_status_map(&r);
        if (r.status == 404 && !strcmp(r.s3_code, "NotFound"))
            snprintf(r.s3_code, sizeof r.s3_code, "NoSuchKey");
    }
    if (st != WH_OK) {
        wc_http_describe(c, what, st, &r, msg, sizeof msg);
        wc_set_error("%s", msg);
        goto out;
    }
    if (!r.has_content_length) {
        st = WH_ERR_PROTOCOL;
        wc_set_error("%s: the reply has no Content-Length", what);
        goto out;
    }
    wharf_stat_t s;
    memset(&s, 0, sizeof s);
    s.size = sizeof s;
    s.length = r.content_length;
    time_t t = 0;
    if (r.last_modified[0] && wh_http_date_parse(r.last_modified, &t) == 0)
        s.mtime = (int64_t)t;
    snprintf(s.etag, sizeof s.etag, "%s", r.etag);
    snprintf(s.content_type, sizeof s.content_type, "%s", r.content_type);
    s.has_crc64nvme = r.has_crc64;
    s.crc64nvme = r.has_crc64 ? r.crc64 : 0;
    wc_copy_out(out, &s, sizeof s);
out:
    wc_resp_fini(&r);
    return st;
}

WHARF_API wharf_status_t wharf_object_stat(wharf_client_t *c, const char *bucket, const char *key,
                                           wharf_stat_t *out)
{
    wc_client_enter(c);
    if (!c || !wc_name_ok(bucket, key) || !out || out->size < sizeof(size_t)) {
        wc_set_error("wharf_object_stat: client, bucket, key and out (set up with "
                     "wharf_stat_init) are required");
        return WHARF_ERR_INVALID;
    }
    return (wharf_status_t)wc_head_object(c, bucket, key, out, NULL, NULL);
}

WHARF_API wharf_status_t wharf_object_stat_version(wharf_client_t *c, const char *bucket,
                                                   const char *key, const char *version_id,
                                                   wharf_stat_t *out)
{
    wc_client_enter(c);
    if (!c || !wc_name_ok(bucket, key) || !out || out->size < sizeof(size_t)) {
        wc_set_error("wharf_object_stat_version: client, bucket, key and out (set up with "
                     "wharf_stat_init) are required");
        return WHARF_ERR_INVALID;
    }
    char q[320];
    wh_status_t st = version_query(version_id, q, sizeof q, "HEAD", bucket, key);
    if (st != WH_OK)
        return (wharf_status_t)st;
    return (wharf_status_t)wc_head_object(c, bucket, key, out, NULL, q[0] ? q : NULL);
}
