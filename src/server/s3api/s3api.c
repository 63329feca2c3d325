/* SPDX-License-Identifier: Apache-2.0 */
/* The S3 front's dispatch: the begin and finish steps, and the one function that turns a
 * handler's answer into the reply. The routing table is routes.c; the handlers live in one file
 * per API family (s3api.h lists them). */
#include "s3api/s3api.h"
#include "base/log.h"
#include "s3/xml.h"

#include <microhttpd.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define MOD "s3"

static void out_init(s3h_out_t *o)
{
    memset(o, 0, sizeof *o);
    wh_sbuf_init(&o->xml);
    wh_sbuf_init(&o->hdrs);
}

static void out_free(s3h_out_t *o)
{
    if (o->resp)
        MHD_destroy_response(o->resp);
    wh_sbuf_free(&o->xml);
    wh_sbuf_free(&o->hdrs);
}

static void add_headers(struct MHD_Response *resp, const s3h_out_t *o)
{
    if (!resp || !o->hdrs.data)
        return;
    for (size_t i = 0; i < o->hdrs.len;) {
        const char *n = o->hdrs.data + i;
        const char *v = n + strlen(n) + 1;
        front_resp_header(resp, n, v);
        i = (size_t)(v - o->hdrs.data) + strlen(v) + 1;
    }
}

/* The one reply: an S3 error (XML document, or bodiless for HEAD and token requests, with the
 * answer's headers either way) or a success with its body and headers. */
static void s3api_send(front_req_t *r, s3h_out_t *o)
{
    s3h_cors_actual(r, o);
    if (o->hdrs.oom || o->xml.oom)
        s3h_err(o, S3_ERR_INTERNAL, "out of memory building the reply");
    if (o->code) {
        if (r->head || r->token_req || !o->hdrs.len) {
            struct MHD_Response *resp = NULL;
            if (o->hdrs.len && (resp = front_resp_empty()))
                add_headers(resp, o);
            front_reply_err_raw(r, o->status, o->code, o->msg, resp);
            return;
        }
        /* The XML error document with the answer's headers (416 carries Content-Range). */
        wh_sbuf_t b, res;
        wh_sbuf_init(&b);
        wh_sbuf_init(&res);
        if (s3h_b(r)) {
            wh_sbuf_printf(&res, "/%s", s3h_b(r));
            if (s3h_k(r))
                wh_sbuf_printf(&res, "/%s", s3h_k(r));
        }
        s3_xml_error(&b, o->code, o->msg, res.data ? res.data : "/", r->id);
        wh_sbuf_free(&res);
        if (b.oom) {
            wh_sbuf_free(&b);
            front_reply_err(r, S3_ERR_INTERNAL, "out of memory building the reply");
            return;
        }
        wh_debug(MOD, "error reply id=%s status=%d code=%s message=%s", r->id, o->status, o->code,
                 o->msg);
        size_t n = b.len;
        struct MHD_Response *resp = front_resp_buffer(wh_sbuf_steal(&b), n);
        if (resp) {
            front_resp_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/xml");
            add_headers(resp, o);
        }
        r->tx_body = n;
        r->err_code = o->code;
        r->err_msg = o->msg;
        front_reply(r, o->status, resp);
        return;
    }
    struct MHD_Response *resp;
    if (o->has_xml) {
        size_t n = o->xml.len;
        resp = front_resp_buffer(wh_sbuf_steal(&o->xml), n);
        if (resp)
            front_resp_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/xml");
        if (!r->head)
            r->tx_body = n;
    } else if (o->resp) {
        resp = o->resp;
        o->resp = NULL;
        r->tx_body = o->tx_body;
    } else {
        resp = front_resp_empty();
    }
    add_headers(resp, o);
    front_reply(r, o->status, resp);
}

/* ---- dispatch --------------------------------------------------------------------------- */

/* What manages a bucket stays with the bucket owner's account (its root and its users, as
 * their policies allow), whatever a bucket policy or ACL grants "*": an anonymous caller never
 * reads, replaces or removes the policy (405, as S3 answers a principal of another account),
 * and never changes any of the bucket's configuration (ACL, versioning, Object Lock,
 * lifecycle, PublicAccessBlock, OwnershipControls, tagging, CORS, default encryption) or
 * deletes the bucket (403): each of those binds the owner's own objects and requests (a
 * COMPLIANCE default retention cannot be undone). Checked after the decision allowed the
 * row's action. */
static int owner_account_only(const front_req_t *r, const front_op_t *op, s3h_out_t *o)
{
    if (r->who.kind != AUTH_PRINCIPAL_ANON)
        return 0;
    switch (op->api) {
    case FRONT_API_GET_BUCKET_POLICY:
    case FRONT_API_PUT_BUCKET_POLICY:
    case FRONT_API_DELETE_BUCKET_POLICY:
        return s3h_errf(o, S3_ERR_METHOD_NOT_ALLOWED,
                        "%s is served to the bucket owner's account only, not to anonymous "
                        "requests",
                        front_api_name(op->api));
    case FRONT_API_PUT_BUCKET_ACL:
    case FRONT_API_DELETE_BUCKET:
    case FRONT_API_PUT_BUCKET_VERSIONING:
    case FRONT_API_PUT_OBJECT_LOCK_CONFIG:
    case FRONT_API_PUT_BUCKET_LIFECYCLE:
    case FRONT_API_DELETE_BUCKET_LIFECYCLE:
    case FRONT_API_PUT_PUBLIC_ACCESS_BLOCK:
    case FRONT_API_DELETE_PUBLIC_ACCESS_BLOCK:
    case FRONT_API_PUT_OWNERSHIP_CONTROLS:
    case FRONT_API_DELETE_OWNERSHIP_CONTROLS:
    case FRONT_API_PUT_BUCKET_TAGGING:
    case FRONT_API_DELETE_BUCKET_TAGGING:
    case FRONT_API_PUT_BUCKET_CORS:
    case FRONT_API_DELETE_BUCKET_CORS:
    case FRONT_API_PUT_BUCKET_ENCRYPTION:
    case FRONT_API_DELETE_BUCKET_ENCRYPTION:
        return s3h_errf(o, S3_ERR_ACCESS_DENIED,
                        "%s is served to the bucket owner's account only, not to anonymous "
                        "requests, whatever a policy or ACL grants",
                        front_api_name(op->api));
    default:
        return 0;
    }
}

/* x-amz-expected-bucket-owner (and, on a copy, x-amz-source-expected-bucket-owner) names the
 * account the caller expects to own the bucket: every bucket here is this server's account's,
 * so another account id is 403 AccessDenied, as S3 answers, before anything is done. */
static int expected_owner(const front_req_t *r, s3h_out_t *o)
{
    static const char *const names[] = {"x-amz-expected-bucket-owner",
                                        "x-amz-source-expected-bucket-owner"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *v = front_hdr(r, names[i]);
        if (v && strcmp(v, s3h_account_id(r)) != 0)
            return s3h_errf(o, S3_ERR_ACCESS_DENIED,
                            "Access Denied: %s names account %.40s, but the bucket is owned by "
                            "another account",
                            names[i], v);
    }
    return 0;
}

/* The APIs that serve server-side encryption headers (sse.c); elsewhere they are refused. */
/* With x-amz-rdma-token alike: the bytes go through the server's cipher on the way. */
static bool sse_served(const front_op_t *op, bool copy_source)
{
    switch (op->api) {
    case FRONT_API_COPY_OBJECT:
    case FRONT_API_UPLOAD_PART_COPY:
        return true;
    case FRONT_API_PUT_OBJECT:
    case FRONT_API_GET_OBJECT:
    case FRONT_API_HEAD_OBJECT:
    case FRONT_API_GET_OBJECT_ATTRIBUTES: /* the SSE-C key, as GET: object_attrs.c */
    case FRONT_API_WHARF_SCATTER:
    case FRONT_API_CREATE_MPU:
    case FRONT_API_UPLOAD_PART:
    case FRONT_API_WHARF_GATHER_PART:
    case FRONT_API_COMPLETE_MPU: /* S3 accepts (and needs not) the SSE-C headers there */
        return !copy_source;
    default:
        return false;
    }
}

/* Request headers that ask for work wharfd does not do: refused with 501 naming the feature,
 * never answered 200 with the work silently skipped. */
static int refuse_unbuilt(front_req_t *r, const front_op_t *op, s3h_out_t *o)
{
    for (size_t i = 0; i < r->nhdrs; i++) {
        const char *n = r->hdrs[i].lname;
        bool copy_src = strncmp(n, "x-amz-copy-source-server-side-encryption-customer-", 50) == 0;
        if ((copy_src || strncmp(n, "x-amz-server-side-encryption", 28) == 0) &&
            !sse_served(op, copy_src)) {
            if (r->token_req) /* a decline: the client may resend over HTTP */
                s3h_out_header(o, "x-amz-rdma-reply", "501");
            return s3h_errf(o, S3_ERR_NOT_IMPLEMENTED,
                            "server-side encryption (header %s) is not served on %s", n,
                            front_api_name(op->api));
        }
        if (strcmp(n, "x-amz-write-offset-bytes") == 0 && op->api != FRONT_API_PUT_OBJECT)
            return s3h_errf(o, S3_ERR_INVALID_REQUEST,
                            "x-amz-write-offset-bytes (an append) is taken by PutObject only, not "
                            "by %s",
                            front_api_name(op->api));
        /* Object lock headers set the lock of the version a write makes (lock.c); on any
         * other request they would be dropped unseen: refused instead. */
        if (strncmp(n, "x-amz-object-lock-", 18) == 0 && op->api != FRONT_API_PUT_OBJECT &&
            op->api != FRONT_API_COPY_OBJECT && op->api != FRONT_API_CREATE_MPU &&
            op->api != FRONT_API_POST_OBJECT)
            return s3h_errf(o, S3_ERR_INVALID_REQUEST,
                            "%s is taken by PutObject, CopyObject and CreateMultipartUpload "
                            "only, not by %s",
                            n, front_api_name(op->api));
    }
    return 0;
}

void s3api_begin(front_req_t *r)
{
    const front_op_t *op = r->route.op;
    s3h_out_t o;
    out_init(&o);
    int status;
    if (!op)
        status = s3h_err(&o, S3_ERR_NOT_IMPLEMENTED, NULL);
    else if (r->token_req && !op->rdma)
        status = s3h_errf(&o, S3_ERR_INVALID_REQUEST,
                          "x-amz-rdma-token is served on GetObject, PutObject, UploadPart, "
                          "the scatter GET, the gather UploadPart and the RDMA batch only, not "
                          "on %s",
                          front_api_name(op->api));
    else if (!(status = expected_owner(r, &o)) && !(status = s3h_authorize(r, op, &o)) &&
             !(status = owner_account_only(r, op, &o)) && !(status = refuse_unbuilt(r, op, &o)))
        status = op->begin(r, &o);
    status = s3h_authz_guard(r, &o, status);
    if (status == 0) {
        out_free(&o);
        /* status 0 means op ran; with op NULL
         * status is s3h_err's 501, which the analyzer cannot see (another file) */
        /* NOLINTNEXTLINE(clang-analyzer-core.NullDereference) */
        if (op->body == FRONT_BODY_NONE || !op->finish) {
            front_reply_err(r, S3_ERR_INTERNAL, "handler neither replied nor took a body");
            return;
        }
        r->body = op->body;
        return;
    }
    s3api_send(r, &o);
    out_free(&o);
}

void s3api_finish(front_req_t *r)
{
    const front_op_t *op = r->route.op;
    s3h_out_t o;
    out_init(&o);
    int status = op && op->finish ? op->finish(r, &o)
                                  : s3h_err(&o, S3_ERR_INTERNAL, "no finish step for this API");
    if (status == 0)
        s3h_err(&o, S3_ERR_INTERNAL, "handler did not reply");
    s3h_authz_guard(r, &o, status);
    s3api_send(r, &o);
    out_free(&o);
}

void s3api_body_digest(front_req_t *r, const void *p, size_t n)
{
    s3_sum_ctx_update(&r->sums, p, n);
}

void s3api_cleanup(front_req_t *r)
{
    s3api_post_free(r);
    s3h_authz_release(r);
    s3_sum_ctx_free(&r->sums);
    if (r->w) {
        store_writer_abort(r->w);
        r->w = NULL;
    }
}

void s3api_route_parse(const char *method, const char *raw_path, const char *raw_query,
                       const char *host, const char *endpoint_host, bool has_copy_source,
                       front_route_t *out)
{
    front_route_parse_in(front_ops, s3api_ops_count, method, raw_path, raw_query, host,
                         endpoint_host, has_copy_source, out);
}
