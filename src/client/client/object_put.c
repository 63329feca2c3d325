/* SPDX-License-Identifier: Apache-2.0 */
/* libwharf: object PUT over RDMA (the server reads the bytes from the registered source) or
 * HTTP; one request, or multipart with parallel parts at or above multipart_threshold. */
#include "client/object.h"
#include "base/defaults.h"

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

typedef struct put_part {
    char etag[80];
    uint64_t crc;
} put_part_t;

typedef struct put_op {
    wc_op_t op;
    const uint8_t *src;
    uint64_t len, part;
    xfer_mr_t *mr;
    bool dev;              /* src is GPU memory */
    const char *upload_id; /* NULL: single PUT */
    put_part_t *parts;
    bool if_none_match; /* the write's condition: on the PUT, or on the completion */
    const char *if_match;
    bool append;           /* x-amz-write-offset-bytes: write_offset */
    char write_offset[24]; /* decimal (the request keeps a pointer to it) */
} put_op_t;

/* The caller's condition, on the request that commits the object. */
static void put_cond_headers(const put_op_t *p, wc_req_t *req)
{
    if (p->if_none_match)
        wc_req_header(req, "if-none-match", "*");
    else if (p->if_match)
        wc_req_header(req, "if-match", p->if_match);
    if (p->append)
        wc_req_header(req, "x-amz-write-offset-bytes", p->write_offset);
}

/* One PUT (object or part). Returns false when it must be re-sent over HTTP. */
static bool put_one(put_op_t *p, unsigned i, wc_conn_t *conn, bool rdma)
{
    wc_op_t *op = &p->op;
    wharf_client_t *c = op->c;
    uint64_t rel = (uint64_t)i * p->part;
    uint64_t len = p->upload_id ? WH_MIN(p->part, p->len - rel) : p->len;
    const uint8_t *src = p->src + rel;
    char what[192], query[600], token[XFER_TOKEN_MAX_LEN], crcb64[13], msg[WC_ERR_LEN];
    wc_req_t req = {.method = "PUT", .bucket = op->bucket, .key = op->key};
    if (p->upload_id) {
        wh_sbuf_t q;
        wh_sbuf_init(&q);
        wh_sbuf_printf(&q, "partNumber=%u&uploadId=", i + 1);
        s3_uri_encode(p->upload_id, strlen(p->upload_id), 1, &q);
        snprintf(query, sizeof query, "%s", q.data ? q.data : "");
        wh_sbuf_free(&q);
        req.query = query;
        snprintf(what, sizeof what, "PUT %s/%s (part %u, %s)", op->bucket, op->key, i + 1,
                 rdma ? c->provider : "http");
    } else {
        snprintf(what, sizeof what, "PUT %s/%s (%s)", op->bucket, op->key,
                 rdma ? c->provider : "http");
    }
    uint64_t crc = 0;
    if (p->dev && !rdma) {
        wc_op_fail(op, WH_ERR_UNSUPPORTED,
                   "%s: HTTP cannot read a body from GPU memory and "
                   "libwharf does not stage; copy to host memory first",
                   what);
        return true;
    }
    if (op->verify && !p->dev) { /* GPU source: the server's crc of what it pulled is kept */
        crc = wh_crc64nvme(0, src, len);
        wh_crc64nvme_b64(crc, crcb64);
        wc_req_header(&req, "x-amz-checksum-crc64nvme", crcb64);
    }
    req.has_body = true;
    req.payload_hash = AUTH_UNSIGNED_PAYLOAD;
    if (!p->upload_id)
        put_cond_headers(p, &req);
    if (rdma) {
        /* Bracket first: the endpoint the token names stays until the reply (xfer_quiesce). */
        xfer_progress_begin(c->xfer);
        wh_status_t pst =
            xfer_token_pack(xfer_mr_owner(p->mr), p->mr, src, len, token, sizeof token);
        if (pst != WH_OK) {
            xfer_progress_end(c->xfer);
            wc_op_fail(op, pst, "%s: packing the token for [%p, +%" PRIu64 ") failed (%s)", what,
                       (const void *)src, len, wh_status_str(pst));
            return true;
        }
        wc_req_header(&req, "x-amz-rdma-token", token);
        req.body = NULL;
        req.body_len = 0; /* Content-Length: 0; the token's size is the size */
    } else {
        req.body = src;
        req.body_len = len;
    }
    wc_resp_t r;
    wh_status_t st = wc_http_do(c, conn, &req, &r);
    if (rdma)
        xfer_progress_end(c->xfer);
    wc_op_note_reply(op, &r);
    wh_status_t http_st = st;
    bool finished = !rdma; /* over RDMA: once the server said its reads ended */
    bool done = true;
    if (st != WH_OK) {
        wc_http_describe(c, what, st, &r, msg, sizeof msg);
        wc_op_fail(op, st, "%s", msg);
        goto out;
    }
    if (rdma && r.status == 501) {
        done = !wc_op_declined(op, what, &r);
        goto out;
    }
    finished = r.status == 200 || !rdma; /* a 200: the server's reads have all ended */
    if (r.status != 200) {
        st = wc_http_status_map(&r);
        wc_http_describe(c, what, st, &r, msg, sizeof msg);
        wc_op_fail(op, st, "%s", msg);
        goto out;
    }
    if (rdma) {
        if (!r.has_rdma_reply) {
            wc_op_fail(op, WH_ERR_PROTOCOL,
                       "%s: the reply has no x-amz-rdma-reply header: the "
                       "server ignored the token (and may have stored an empty object)",
                       what);
            goto out;
        }
        if (!r.has_rdma_bytes || r.rdma_bytes != len) {
            wc_op_fail(op, WH_ERR_PROTOCOL,
                       "%s: x-amz-rdma-bytes-transferred is %s%" PRIu64 " but %" PRIu64
                       " bytes were sent",
                       what, r.has_rdma_bytes ? "" : "missing, ", r.rdma_bytes, len);
            goto out;
        }
    }
    if (p->dev && r.has_crc64)
        crc = r.crc64;
    else if (op->verify && r.has_crc64 && r.crc64 != crc) {
        atomic_fetch_add(&c->st_checksum_failures, 1);
        wc_op_fail(op, WH_ERR_CHECKSUM,
                   "%s: the server stored crc64nvme %016" PRIx64 " but the source's is %016" PRIx64,
                   what, r.crc64, crc);
        goto out;
    }
    if (!r.etag[0]) {
        wc_op_fail(op, WH_ERR_PROTOCOL, "%s: the reply has no ETag", what);
        goto out;
    }
    snprintf(p->parts[i].etag, sizeof p->parts[i].etag, "%s", r.etag);
    p->parts[i].crc = crc;
    if (rdma) {
        atomic_fetch_add(&c->st_rdma_ops, 1);
        atomic_fetch_add(&c->st_rdma_bytes, len);
    } else {
        atomic_fetch_add(&c->st_http_ops, 1);
        atomic_fetch_add(&c->st_http_bytes, len);
    }
    pthread_mutex_lock(&op->mu);
    if (rdma)
        op->any_rdma = true;
    else
        op->any_http = true;
    pthread_mutex_unlock(&op->mu);
out:
    if (rdma)
        wc_op_rdma_ended(op, xfer_mr_owner(p->mr), http_st, &r, finished);
    wc_resp_fini(&r);
    return done;
}

static void put_run(wc_op_t *op, unsigned i, wc_conn_t *conn)
{
    put_op_t *p = (put_op_t *)op;
    if (op->rdma && !atomic_load(&op->force_http)) {
        if (put_one(p, i, conn, true))
            return;
    }
    put_one(p, i, conn, false);
}

/* POST ?uploads -> UploadId */
typedef struct walk_one {
    const char *path;
    char *out;
    size_t outlen;
    bool found;
    char code[64], message[256];
} walk_one_t;

static void walk_one_cb(void *arg, const char *path, const char *text, size_t len)
{
    walk_one_t *w = arg;
    size_t n;
    if (!strcmp(path, w->path) && w->out) {
        n = WH_MIN(len, w->outlen - 1);
        memcpy(w->out, text, n);
        w->out[n] = '\0';
        w->found = true;
    } else if (!strcmp(path, "Error/Code")) {
        n = WH_MIN(len, sizeof w->code - 1);
        memcpy(w->code, text, n);
        w->code[n] = '\0';
    } else if (!strcmp(path, "Error/Message")) {
        n = WH_MIN(len, sizeof w->message - 1);
        memcpy(w->message, text, n);
        w->message[n] = '\0';
    }
}

static wh_status_t mp_post(put_op_t *p, wc_conn_t *conn, const char *query, const char *body,
                           const char *want_path, char *out, size_t outlen, const char *what)
{
    wc_op_t *op = &p->op;
    wharf_client_t *c = op->c;
    char sha[65], msg[WC_ERR_LEN];
    wh_sbuf_t rb;
    wh_sbuf_init(&rb);
    wc_req_t req = {.method = "POST", .bucket = op->bucket, .key = op->key, .query = query};
    req.has_body = true;
    req.body = body;
    req.body_len = body ? strlen(body) : 0;
    wh_sha256_hex(body ? body : "", req.body_len, sha);
    req.payload_hash = sha;
    req.body_out = &rb;
    if (body) /* the completion commits the object */
        put_cond_headers(p, &req);
    wc_resp_t r;
    wh_status_t st = wc_http_do(c, conn, &req, &r);
    wc_op_note_reply(op, &r);
    if (st == WH_OK && r.status != 200)
        st = wc_http_status_map(&r);
    if (st != WH_OK) {
        wc_http_describe(c, what, st, &r, msg, sizeof msg);
        wc_op_fail(op, st, "%s", msg);
        goto out;
    }
    walk_one_t w = {.path = want_path, .out = out, .outlen = outlen};
    if (rb.oom || s3_xml_walk(rb.data ? rb.data : "", rb.len, walk_one_cb, &w) != 0) {
        st = WH_ERR_PROTOCOL;
        wc_op_fail(op, st, "%s: the reply body is not valid XML", what);
        goto out;
    }
    if (w.code[0]) { /* CompleteMultipartUpload can fail inside a 200 */
        st = !strcmp(w.code, "InvalidPart") || !strcmp(w.code, "InvalidPartOrder") ? WH_ERR_INVALID
                                                                                   : WH_ERR_HTTP;
        wc_op_fail(op, st, "%s: 200 carrying error %s: %s", what, w.code, w.message);
        goto out;
    }
    if (!w.found || !out[0]) {
        st = WH_ERR_PROTOCOL;
        wc_op_fail(op, st, "%s: the reply lacks %s", what, want_path);
        goto out;
    }
    if (r.etag[0] && !strcmp(want_path, "CompleteMultipartUploadResult/ETag")) {
        pthread_mutex_lock(&op->mu);
        snprintf(op->etag, sizeof op->etag, "%s", r.etag);
        pthread_mutex_unlock(&op->mu);
    }
out:
    wh_sbuf_free(&rb);
    wc_resp_fini(&r);
    return st;
}

static void mp_abort(put_op_t *p, wc_conn_t *conn, const char *upload_id)
{
    wc_op_t *op = &p->op;
    wh_sbuf_t q;
    wh_sbuf_init(&q);
    wh_sbuf_puts(&q, "uploadId=");
    s3_uri_encode(upload_id, strlen(upload_id), 1, &q);
    if (q.oom) {
        wh_sbuf_free(&q);
        return;
    }
    wc_req_t req = {.method = "DELETE", .bucket = op->bucket, .key = op->key, .query = q.data};
    wc_resp_t r;
    wh_status_t st = wc_http_do(op->c, conn, &req, &r);
    if (st != WH_OK || r.status >= 300)
        wh_warn(MOD, "abort multipart failed bucket=%s key=%s upload=%s status=%ld", op->bucket,
                op->key, upload_id, r.status);
    wc_resp_fini(&r);
    wh_sbuf_free(&q);
}

static wh_status_t put_multipart(put_op_t *p)
{
    wc_op_t *op = &p->op;
    wharf_client_t *c = op->c;
    char upload_id[512] = "", etag[80] = "", what[160];
    wh_sbuf_t body, q;
    wh_sbuf_init(&body);
    wh_sbuf_init(&q);
    wc_conn_t *conn = wc_client_conn_get(c);
    if (!conn)
        return WH_ERR_NOMEM;
    snprintf(what, sizeof what, "POST %s/%s?uploads", op->bucket, op->key);
    wh_status_t st = mp_post(p, conn, "uploads=", NULL, "InitiateMultipartUploadResult/UploadId",
                             upload_id, sizeof upload_id, what);
    wc_client_conn_put(c, conn);
    conn = NULL;
    if (st != WH_OK)
        goto out;
    p->upload_id = upload_id;
    op->run = put_run;
    wc_op_execute(op);
    conn = wc_client_conn_get(c);
    if (!conn) {
        st = WH_ERR_NOMEM;
        goto out_abort;
    }
    if (op->st != WH_OK) {
        st = op->st;
        goto out_abort;
    }
    wh_sbuf_puts(&body, "<CompleteMultipartUpload>");
    for (unsigned i = 0; i < op->n; i++) {
        wh_sbuf_printf(&body, "<Part><PartNumber>%u</PartNumber>", i + 1);
        s3_xml_elem(&body, "ETag", p->parts[i].etag);
        if (op->verify) {
            char b64[13];
            wh_crc64nvme_b64(p->parts[i].crc, b64);
            s3_xml_elem(&body, "ChecksumCRC64NVME", b64);
        }
        wh_sbuf_puts(&body, "</Part>");
    }
    wh_sbuf_puts(&body, "</CompleteMultipartUpload>");
    wh_sbuf_puts(&q, "uploadId=");
    s3_uri_encode(upload_id, strlen(upload_id), 1, &q);
    if (body.oom || q.oom) {
        st = WH_ERR_NOMEM;
        wc_op_fail(op, st, "POST %s/%s: out of memory", op->bucket, op->key);
        goto out_abort;
    }
    snprintf(what, sizeof what, "POST %s/%s?uploadId (complete %u parts)", op->bucket, op->key,
             op->n);
    st = mp_post(p, conn, q.data, body.data, "CompleteMultipartUploadResult/ETag", etag,
                 sizeof etag, what);
    if (st != WH_OK)
        goto out_abort;
    pthread_mutex_lock(&op->mu);
    if (!op->etag[0] || strcmp(op->etag, etag) != 0)
        snprintf(op->etag, sizeof op->etag, "%s", etag);
    pthread_mutex_unlock(&op->mu);
    goto out;
out_abort:
    if (conn)
        mp_abort(p, conn, upload_id);
out:
    wc_client_conn_put(c, conn);
    wh_sbuf_free(&body);
    wh_sbuf_free(&q);
    return st;
}

WHARF_API wharf_status_t wharf_object_put(wharf_client_t *c, const char *bucket, const char *key,
                                          const void *src, uint64_t len,
                                          const wharf_xfer_opts_t *uopts, wharf_report_t *report)
{
    wc_client_enter(c);
    if (!c || !wc_name_ok(bucket, key) || (!src && len)) {
        wc_set_error("wharf_object_put: client, bucket, key and src are required");
        return WHARF_ERR_INVALID;
    }
    wharf_xfer_opts_t o;
    wh_status_t st = wc_opts_resolve(c, uopts, &o);
    if (st != WH_OK)
        return (wharf_status_t)st;
    put_op_t p;
    memset(&p, 0, sizeof p);
    wc_op_t *op = &p.op;
    wc_op_init(op, c, bucket, key);
    op->verify = o.verify_checksum != 0;
    op->conc = o.concurrency;
    p.src = src;
    p.len = len;
    p.if_none_match = o.if_none_match != 0;
    p.if_match = o.if_match && o.if_match[0] ? o.if_match : NULL;
    p.append = o.append != 0;
    snprintf(p.write_offset, sizeof p.write_offset, "%llu", (unsigned long long)o.write_offset);
    uint64_t crc = 0;

    st = wc_op_choose(op, &o);
    if (st != WH_OK)
        goto out;
    if (len == 0) {
        /* Nothing to move; an RDMA token of size 0 names no memory. Plain empty PUT. */
        op->rdma = false;
    }
    if (!op->rdma && wc_mem_is_cuda(c, src, len)) {
        st = WH_ERR_UNSUPPORTED;
        wc_set_error("PUT %s/%s: the source is GPU memory, which only the RDMA path (cuda1 "
                     "over the Unix socket) reads; HTTP cannot send a body from there",
                     bucket, key);
        goto out;
    }
    if (op->rdma) {
        st = wc_mem_find(c, src, len, &p.mr);
        p.dev = st == WH_OK && wc_mr_is_device(p.mr);
        op->device = p.dev;
        op->dev_provider = p.dev ? xfer_name(xfer_mr_owner(p.mr)) : NULL;
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
    uint64_t threshold = c->multipart_threshold;
    if (op->rdma && !p.dev && c->multipart_threshold_default)
        threshold = WH_DEFAULT_RDMA_MULTIPART_THRESHOLD;
    /* An append is one request: its offset names one place. */
    if (!p.append && len >= threshold && len > 0) {
        p.part = c->part_size;
        if ((len + p.part - 1) / p.part > 10000) /* S3's part count limit */
            p.part = (len + 9999) / 10000;
        op->n = (unsigned)((len + p.part - 1) / p.part);
    } else {
        p.part = len ? len : 1;
        op->n = 1;
    }
    p.parts = calloc(op->n, sizeof *p.parts);
    if (!p.parts) {
        st = WH_ERR_NOMEM;
        wc_set_error("PUT %s/%s: out of memory", bucket, key);
        goto out;
    }
    if (op->n == 1 && (len < threshold || p.append)) {
        wc_conn_t *conn = wc_client_conn_get(c);
        if (!conn) {
            st = WH_ERR_NOMEM;
            goto out;
        }
        put_run(op, 0, conn);
        wc_client_conn_put(c, conn);
        st = op->st;
    } else {
        st = put_multipart(&p);
        if (op->st != WH_OK)
            st = op->st;
    }
    if (st != WH_OK) {
        wc_set_error("%s", op->err[0] ? op->err : wh_status_str(st));
        goto out;
    }
    if (op->verify) {
        for (unsigned i = 0; i < op->n; i++) {
            uint64_t plen = op->n == 1 ? len : WH_MIN(p.part, len - (uint64_t)i * p.part);
            crc = wh_crc64nvme_combine(crc, p.parts[i].crc, plen);
        }
    }
out:
    if (st == WH_OK && op->fell_back && !op->any_http && len)
        op->any_http = true;
    wc_op_report(op, st, st == WH_OK ? len : 0, crc, report);
    free(p.parts);
    wc_op_fini(op);
    return (wharf_status_t)st;
}
