/* SPDX-License-Identifier: Apache-2.0 */
/* The S3 front's dispatch: the front_ops table, the begin and finish steps, and the one function
 * that turns a handler's answer into the reply. The handlers live in one file per API family
 * (s3api.h lists them). */
#include "s3api/s3api.h"
#include "base/log.h"
#include "s3/xml.h"

#include <microhttpd.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define MOD "s3"

/* (level, method, sub-resources, copy source) -> API, body, RDMA token, handlers. Rows are tried
 * in order, the first match wins, so the more specific rows of a method come first. A row
 * without a begin step names an API the router answers itself (BadRequest). */
#define SVC FRONT_AT_SERVICE
#define BKT FRONT_AT_BUCKET
#define OBJ FRONT_AT_OBJECT
#define NONE_ FRONT_BODY_NONE
#define BUF_ FRONT_BODY_BUFFER
#define WR_ FRONT_BODY_WRITER
#define FORM_ FRONT_BODY_FORM
const front_op_t front_ops[] = {
    /* level method  q1            q2            q1 value copy api                             body
       rdma  begin, finish, IAM action, obj_acl */
    /* wharf's own: a cluster gateway's dashboard (`wharf admin cluster`); root only */
    {SVC, "GET", "x-wharf-cluster", NULL, NULL, false, FRONT_API_WHARF_CLUSTER, NONE_, false,
     s3h_admin_cluster, NULL, NULL, false},
    {SVC, "GET", NULL, NULL, NULL, false, FRONT_API_LIST_BUCKETS, NONE_, false, s3h_bucket_list_all,
     NULL, "s3:ListAllMyBuckets", false},
    /* The IAM API's query protocol (aws iam --endpoint-url): POST / with a form body; it
     * authenticates and authorizes itself once the body is read (iam.c). */
    {SVC, "POST", NULL, NULL, NULL, false, FRONT_API_IAM, BUF_, false, s3h_iam_begin,
     s3h_iam_finish, NULL, false},

    {BKT, "GET", "acl", NULL, NULL, false, FRONT_API_GET_BUCKET_ACL, NONE_, false,
     s3h_acl_bucket_get, NULL, "s3:GetBucketAcl", false},
    {BKT, "PUT", "acl", NULL, NULL, false, FRONT_API_PUT_BUCKET_ACL, BUF_, false, s3h_acl_put_begin,
     s3h_acl_bucket_put_finish, "s3:PutBucketAcl", false},
    {BKT, "GET", "policy", NULL, NULL, false, FRONT_API_GET_BUCKET_POLICY, NONE_, false,
     s3h_policy_get, NULL, "s3:GetBucketPolicy", false},
    {BKT, "PUT", "policy", NULL, NULL, false, FRONT_API_PUT_BUCKET_POLICY, BUF_, false,
     s3h_policy_put_begin, s3h_policy_put_finish, "s3:PutBucketPolicy", false},
    {BKT, "DELETE", "policy", NULL, NULL, false, FRONT_API_DELETE_BUCKET_POLICY, NONE_, false,
     s3h_policy_delete, NULL, "s3:DeleteBucketPolicy", false},
    {BKT, "GET", "policyStatus", NULL, NULL, false, FRONT_API_GET_BUCKET_POLICY_STATUS, NONE_,
     false, s3h_policy_status, NULL, "s3:GetBucketPolicyStatus", false},
    {BKT, "GET", "tagging", NULL, NULL, false, FRONT_API_GET_BUCKET_TAGGING, NONE_, false,
     s3h_btag_get, NULL, "s3:GetBucketTagging", false},
    {BKT, "PUT", "tagging", NULL, NULL, false, FRONT_API_PUT_BUCKET_TAGGING, BUF_, false,
     s3h_bconfig_put_begin, s3h_btag_put_finish, "s3:PutBucketTagging", false},
    {BKT, "DELETE", "tagging", NULL, NULL, false, FRONT_API_DELETE_BUCKET_TAGGING, NONE_, false,
     s3h_btag_delete, NULL, "s3:PutBucketTagging", false},
    {BKT, "GET", "cors", NULL, NULL, false, FRONT_API_GET_BUCKET_CORS, NONE_, false, s3h_cors_get,
     NULL, "s3:GetBucketCORS", false},
    {BKT, "PUT", "cors", NULL, NULL, false, FRONT_API_PUT_BUCKET_CORS, BUF_, false,
     s3h_bconfig_put_begin, s3h_cors_put_finish, "s3:PutBucketCORS", false},
    {BKT, "DELETE", "cors", NULL, NULL, false, FRONT_API_DELETE_BUCKET_CORS, NONE_, false,
     s3h_cors_delete, NULL, "s3:PutBucketCORS", false},
    {BKT, "GET", "encryption", NULL, NULL, false, FRONT_API_GET_BUCKET_ENCRYPTION, NONE_, false,
     s3h_benc_get, NULL, "s3:GetEncryptionConfiguration", false},
    {BKT, "PUT", "encryption", NULL, NULL, false, FRONT_API_PUT_BUCKET_ENCRYPTION, BUF_, false,
     s3h_bconfig_put_begin, s3h_benc_put_finish, "s3:PutEncryptionConfiguration", false},
    {BKT, "DELETE", "encryption", NULL, NULL, false, FRONT_API_DELETE_BUCKET_ENCRYPTION, NONE_,
     false, s3h_benc_delete, NULL, "s3:PutEncryptionConfiguration", false},
    {BKT, "GET", "publicAccessBlock", NULL, NULL, false, FRONT_API_GET_PUBLIC_ACCESS_BLOCK, NONE_,
     false, s3h_pab_get, NULL, "s3:GetBucketPublicAccessBlock", false},
    {BKT, "PUT", "publicAccessBlock", NULL, NULL, false, FRONT_API_PUT_PUBLIC_ACCESS_BLOCK, BUF_,
     false, s3h_bconfig_put_begin, s3h_pab_put_finish, "s3:PutBucketPublicAccessBlock", false},
    {BKT, "DELETE", "publicAccessBlock", NULL, NULL, false, FRONT_API_DELETE_PUBLIC_ACCESS_BLOCK,
     NONE_, false, s3h_pab_delete, NULL, "s3:PutBucketPublicAccessBlock", false},
    {BKT, "GET", "ownershipControls", NULL, NULL, false, FRONT_API_GET_OWNERSHIP_CONTROLS, NONE_,
     false, s3h_own_get, NULL, "s3:GetBucketOwnershipControls", false},
    {BKT, "PUT", "ownershipControls", NULL, NULL, false, FRONT_API_PUT_OWNERSHIP_CONTROLS, BUF_,
     false, s3h_bconfig_put_begin, s3h_own_put_finish, "s3:PutBucketOwnershipControls", false},
    {BKT, "DELETE", "ownershipControls", NULL, NULL, false, FRONT_API_DELETE_OWNERSHIP_CONTROLS,
     NONE_, false, s3h_own_delete, NULL, "s3:PutBucketOwnershipControls", false},
    {BKT, "GET", "lifecycle", NULL, NULL, false, FRONT_API_GET_BUCKET_LIFECYCLE, NONE_, false,
     s3h_lc_get, NULL, "s3:GetLifecycleConfiguration", false},
    {BKT, "PUT", "lifecycle", NULL, NULL, false, FRONT_API_PUT_BUCKET_LIFECYCLE, BUF_, false,
     s3h_bconfig_put_begin, s3h_lc_put_finish, "s3:PutLifecycleConfiguration", false},
    {BKT, "GET", "object-lock", NULL, NULL, false, FRONT_API_GET_OBJECT_LOCK_CONFIG, NONE_, false,
     s3h_olc_get, NULL, "s3:GetBucketObjectLockConfiguration", false},
    {BKT, "PUT", "object-lock", NULL, NULL, false, FRONT_API_PUT_OBJECT_LOCK_CONFIG, BUF_, false,
     s3h_bconfig_put_begin, s3h_olc_put_finish, "s3:PutBucketObjectLockConfiguration", false},
    {BKT, "DELETE", "lifecycle", NULL, NULL, false, FRONT_API_DELETE_BUCKET_LIFECYCLE, NONE_, false,
     s3h_lc_delete, NULL, "s3:PutLifecycleConfiguration", false},
    /* A browser's CORS preflight: unsigned, decided by the bucket's CORS rules alone. */
    {BKT, "OPTIONS", NULL, NULL, NULL, false, FRONT_API_CORS_PREFLIGHT, NONE_, false,
     s3h_cors_preflight, NULL, NULL, false},
    {BKT, "PUT", "versioning", NULL, NULL, false, FRONT_API_PUT_BUCKET_VERSIONING, BUF_, false,
     s3h_bucket_versioning_put_begin, s3h_bucket_versioning_put_finish, "s3:PutBucketVersioning",
     false},
    {BKT, "PUT", NULL, NULL, NULL, false, FRONT_API_CREATE_BUCKET, BUF_, false,
     s3h_bucket_create_begin, s3h_bucket_create_finish, "s3:CreateBucket", false},
    {BKT, "DELETE", NULL, NULL, NULL, false, FRONT_API_DELETE_BUCKET, NONE_, false,
     s3h_bucket_delete, NULL, "s3:DeleteBucket", false},
    {BKT, "HEAD", NULL, NULL, NULL, false, FRONT_API_HEAD_BUCKET, NONE_, false, s3h_bucket_head,
     NULL, "s3:ListBucket", false},
    /* DeleteObjects checks s3:DeleteObject key by key (s3api_authz_check), as S3 does. */
    {BKT, "POST", "delete", NULL, NULL, false, FRONT_API_DELETE_OBJECTS, BUF_, false,
     s3api_write_delete_many_begin, s3api_write_delete_many_finish, "s3:DeleteObject", false},
    /* wharf's RDMA batch: s3:GetObject or s3:PutObject key by key (object_batch.c). */
    {BKT, "POST", "rdma-batch", NULL, NULL, false, FRONT_API_RDMA_BATCH, BUF_, true,
     s3api_batch_begin, s3api_batch_finish, "s3:GetObject", false},
    /* POST Object, the browser form upload: its signature and policy are form fields, and
     * s3:PutObject on the form's key is checked once the form names it (post_object.c). */
    {BKT, "POST", NULL, NULL, NULL, false, FRONT_API_POST_OBJECT, FORM_, false, s3api_post_begin,
     s3api_post_finish, NULL, false},
    {BKT, "GET", "location", NULL, NULL, false, FRONT_API_GET_BUCKET_LOCATION, NONE_, false,
     s3h_bucket_location, NULL, "s3:GetBucketLocation", false},
    {BKT, "GET", "versioning", NULL, NULL, false, FRONT_API_GET_BUCKET_VERSIONING, NONE_, false,
     s3h_bucket_versioning, NULL, "s3:GetBucketVersioning", false},
    {BKT, "GET", "versions", NULL, NULL, false, FRONT_API_LIST_OBJECT_VERSIONS, NONE_, false,
     s3api_list_versions, NULL, "s3:ListBucketVersions", false},
    {BKT, "GET", "uploads", NULL, NULL, false, FRONT_API_LIST_MULTIPART_UPLOADS, NONE_, false,
     s3api_mpu_list_uploads, NULL, "s3:ListBucketMultipartUploads", false},
    {BKT, "GET", "list-type", NULL, "2", false, FRONT_API_LIST_OBJECTS_V2, NONE_, false,
     s3api_list_v2, NULL, "s3:ListBucket", false},
    {BKT, "GET", NULL, NULL, NULL, false, FRONT_API_LIST_OBJECTS, NONE_, false, s3api_list_v1, NULL,
     "s3:ListBucket", false},

    {OBJ, "GET", "acl", NULL, NULL, false, FRONT_API_GET_OBJECT_ACL, NONE_, false,
     s3h_acl_object_get, NULL, "s3:GetObjectAcl", true},
    {OBJ, "PUT", "acl", NULL, NULL, false, FRONT_API_PUT_OBJECT_ACL, BUF_, false, s3h_acl_put_begin,
     s3h_acl_object_put_finish, "s3:PutObjectAcl", true},
    {OBJ, "GET", "uploadId", NULL, NULL, false, FRONT_API_LIST_PARTS, NONE_, false,
     s3api_mpu_list_parts, NULL, "s3:ListMultipartUploadParts", false},
    /* Tagging and attributes: decided by policies (object ACLs grant neither, as in S3). */
    {OBJ, "GET", "tagging", NULL, NULL, false, FRONT_API_GET_OBJECT_TAGGING, NONE_, false,
     s3h_tagging_get, NULL, "s3:GetObjectTagging", false},
    {OBJ, "PUT", "tagging", NULL, NULL, false, FRONT_API_PUT_OBJECT_TAGGING, BUF_, false,
     s3h_tagging_put_begin, s3h_tagging_put_finish, "s3:PutObjectTagging", false},
    {OBJ, "DELETE", "tagging", NULL, NULL, false, FRONT_API_DELETE_OBJECT_TAGGING, NONE_, false,
     s3h_tagging_delete, NULL, "s3:DeleteObjectTagging", false},
    /* Object Lock: decided by policies (no ACL grants them, as in S3). */
    {OBJ, "GET", "retention", NULL, NULL, false, FRONT_API_GET_OBJECT_RETENTION, NONE_, false,
     s3h_retention_get, NULL, "s3:GetObjectRetention", false},
    {OBJ, "PUT", "retention", NULL, NULL, false, FRONT_API_PUT_OBJECT_RETENTION, BUF_, false,
     s3h_lock_obj_put_begin, s3h_retention_put_finish, "s3:PutObjectRetention", false},
    {OBJ, "GET", "legal-hold", NULL, NULL, false, FRONT_API_GET_OBJECT_LEGAL_HOLD, NONE_, false,
     s3h_legal_hold_get, NULL, "s3:GetObjectLegalHold", false},
    {OBJ, "PUT", "legal-hold", NULL, NULL, false, FRONT_API_PUT_OBJECT_LEGAL_HOLD, BUF_, false,
     s3h_lock_obj_put_begin, s3h_legal_hold_put_finish, "s3:PutObjectLegalHold", false},
    {OBJ, "GET", "attributes", NULL, NULL, false, FRONT_API_GET_OBJECT_ATTRIBUTES, NONE_, false,
     s3api_object_attributes, NULL, "s3:GetObjectAttributes", false},
    {OBJ, "GET", NULL, NULL, NULL, false, FRONT_API_GET_OBJECT, NONE_, true, s3api_read_object,
     NULL, "s3:GetObject", true},
    {OBJ, "HEAD", NULL, NULL, NULL, false, FRONT_API_HEAD_OBJECT, NONE_, true, s3api_read_object,
     NULL, "s3:GetObject", true},
    /* The copies also need s3:GetObject on the source (s3api_copy_src_open checks it). */
    {OBJ, "PUT", "uploadId", "partNumber", NULL, true, FRONT_API_UPLOAD_PART_COPY, NONE_, false,
     s3api_mpu_part_copy, NULL, "s3:PutObject", false},
    {OBJ, "PUT", "uploadId", "partNumber", NULL, false, FRONT_API_UPLOAD_PART, WR_, true,
     s3api_mpu_part_begin, s3api_mpu_part_finish, "s3:PutObject", false},
    {OBJ, "PUT", "uploadId", NULL, NULL, false, FRONT_API_BAD_REQUEST, NONE_, false, NULL, NULL,
     NULL, false},
    {OBJ, "PUT", "partNumber", NULL, NULL, false, FRONT_API_BAD_REQUEST, NONE_, false, NULL, NULL,
     NULL, false},
    /* RenameObject (S3 Express): s3:PutObject on the destination here, s3:GetObject and
     * s3:DeleteObject on the source in the handler (object_rename.c). */
    {OBJ, "PUT", "renameObject", NULL, NULL, false, FRONT_API_RENAME_OBJECT, NONE_, false,
     s3api_write_rename, NULL, "s3:PutObject", false},
    {OBJ, "PUT", NULL, NULL, NULL, true, FRONT_API_COPY_OBJECT, NONE_, false, s3api_write_copy,
     NULL, "s3:PutObject", false},
    {OBJ, "PUT", NULL, NULL, NULL, false, FRONT_API_PUT_OBJECT, WR_, true, s3api_write_put_begin,
     s3api_write_put_finish, "s3:PutObject", false},
    {OBJ, "DELETE", "uploadId", NULL, NULL, false, FRONT_API_ABORT_MPU, NONE_, false,
     s3api_mpu_abort, NULL, "s3:AbortMultipartUpload", false},
    {OBJ, "DELETE", NULL, NULL, NULL, false, FRONT_API_DELETE_OBJECT, NONE_, false,
     s3api_write_delete, NULL, "s3:DeleteObject", false},
    {OBJ, "OPTIONS", NULL, NULL, NULL, false, FRONT_API_CORS_PREFLIGHT, NONE_, false,
     s3h_cors_preflight, NULL, NULL, false},
    {OBJ, "POST", "uploads", NULL, NULL, false, FRONT_API_CREATE_MPU, NONE_, false,
     s3api_mpu_create, NULL, "s3:PutObject", false},
    {OBJ, "POST", "uploadId", NULL, NULL, false, FRONT_API_COMPLETE_MPU, BUF_, false,
     s3api_mpu_complete_begin, s3api_mpu_complete_finish, "s3:PutObject", false},
};
const size_t s3api_ops_count = sizeof front_ops / sizeof front_ops[0];
#undef SVC
#undef BKT
#undef OBJ
#undef NONE_
#undef BUF_
#undef WR_
#undef FORM_

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
    case FRONT_API_CREATE_MPU:
    case FRONT_API_UPLOAD_PART:
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
                          "x-amz-rdma-token is served on GetObject, PutObject and UploadPart "
                          "only, not on %s",
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

static wh_status_t app_start(front_t *s, void **state)
{
    s3h_lc_t *lc = NULL;
    wh_status_t st = s3h_lc_start(s->store, &s->cfg.lifecycle_period_s, &lc);
    *state = lc;
    return st;
}

static void app_stop(void *state)
{
    s3h_lc_stop(state);
}

static void app_metrics(void *state, wh_sbuf_t *out)
{
    s3h_lc_metrics(state, out);
}

const front_app_ops_t s3api_app = {
    .ops = front_ops,
    .n_ops = sizeof front_ops / sizeof front_ops[0],
    .begin = s3api_begin,
    .finish = s3api_finish,
    .cleanup = s3api_cleanup,
    .body_digest = s3api_body_digest,
    .form_feed = s3api_form_feed,
    .start = app_start,
    .stop = app_stop,
    .metrics = app_metrics,
};
