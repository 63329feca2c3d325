/* SPDX-License-Identifier: Apache-2.0 */
/* The S3 handlers of buckets, their configuration and IAM, and what every S3 handler shares,
 * one file per family; the object handlers and the dispatch are the layer above (s3api).
 *
 *   out.c       building a handler's answer (s3h_out_t)
 *   handler_util.c      XML pieces, preconditions, store-status mapping, checksums
 *   authorize.c     the authorization step (s3h_authorize) and what it loads
 *   sse.c       server-side encryption: SSE-C and SSE-S3 of a request, the bucket default
 *   versioning.c   versionId, and Get/PutBucketVersioning
 *   bucket.c    ListBuckets, Create/Delete/HeadBucket, GetBucketLocation
 *   acl_ops.c       ?acl and ?policy, and the ACL a new bucket or object gets from its request
 *   bconfig.c   bucket tagging, encryption, CORS, PublicAccessBlock, OwnershipControls,
 *                  lifecycle configuration
 *   lifecycle_run.c the lifecycle worker
 *   lifecycle_hdr.c the x-amz-expiration header of object replies
 *   lock.c      Object Lock: the bucket's configuration, a version's retention and legal hold
 *   tagging.c   object tagging
 *   iam.c          the IAM API (users, access keys, inline user policies) */
#ifndef WH_S3CTL_S3CTL_H
#define WH_S3CTL_S3CTL_H

#include "front/front.h"
#include "meta/meta.h"
#include "store/crypt.h"

#include <stdbool.h>
#include <stdint.h>

#define S3H_XMLNS "http://s3.amazonaws.com/doc/2006-03-01/"
#define S3H_XML_DECL "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"

/* A handler's answer. Owned by the dispatcher, which sends and releases it. */
typedef struct s3h_out {
    int status;       /* HTTP status; 0 while nothing is decided */
    const char *code; /* S3 error code (static), NULL for a success */
    char msg[320];    /* the error message */
    bool has_xml;     /* success body: xml (application/xml) */
    wh_sbuf_t xml;
    struct MHD_Response *resp; /* success body other than XML (object bytes); NULL: empty */
    wh_sbuf_t hdrs;            /* extra headers, "name\0value\0" pairs, on either kind */
    uint64_t tx_body;          /* bytes of object body the response carries (metrics) */
} s3h_out_t;

/* ---- building an answer (out.c); each returns the status for the handler to return - */

/* An S3 error with its default status; msg NULL or "": the default message. */
int s3h_err(s3h_out_t *o, s3_err_t e, const char *msg);
int s3h_errf(s3h_out_t *o, s3_err_t e, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* An error whose code is not in s3/errors.h (an RDMA refusal's, a region mismatch's). */
int s3h_err_raw(s3h_out_t *o, int status, const char *code, const char *msg);
/* Success with an XML document (taken out of xml), or with no body, or with resp's body. */
int s3h_ok_xml(s3h_out_t *o, int status, wh_sbuf_t *xml);
int s3h_ok(s3h_out_t *o, int status);
int s3h_ok_resp(s3h_out_t *o, int status, struct MHD_Response *resp, uint64_t tx_body);
/* Adds a header to whatever the answer becomes. */
void s3h_out_header(s3h_out_t *o, const char *name, const char *value);
void s3h_out_header_u64(s3h_out_t *o, const char *name, uint64_t v);

/* ---- shared helpers (handler_util.c) --------------------------------------------------------- */

static inline store_t *s3h_st(const front_req_t *r)
{
    return r->srv->store;
}
static inline const char *s3h_b(const front_req_t *r)
{
    return r->route.bucket;
}
static inline const char *s3h_k(const front_req_t *r)
{
    return r->route.key;
}

/* <elem><ID/><DisplayName/></elem> of the request's principal (ListBuckets). */
void s3h_xml_owner(const front_req_t *r, wh_sbuf_t *b, const char *elem);
/* The same for a stored owner ("" = root). */
void s3h_xml_owner_of(const front_req_t *r, wh_sbuf_t *b, const char *elem, const char *stored);
void s3h_etag_quoted(const char *etag, char out[84]);
void s3h_xml_etag(wh_sbuf_t *b, const char *etag);
void s3h_xml_time(wh_sbuf_t *b, const char *name, time_t t);
/* The text of an element, URL-encoded when the request asked for encoding-type=url. */
void s3h_xml_enc(wh_sbuf_t *b, const char *name, const char *text, bool url);

/* Each returns 0 when the check passes, else the status of the error put in o. */
int s3h_need_bucket(front_req_t *r, s3h_out_t *o);
int s3h_key_check(front_req_t *r, s3h_out_t *o);
/* Optional non-negative integer query parameter. */
int s3h_q_uint(front_req_t *r, s3h_out_t *o, const char *name, uint64_t dflt, uint64_t *out);
int s3h_q_encoding_url(front_req_t *r, s3h_out_t *o, bool *url);
/* Content-MD5 of a buffered (XML) body. */
int s3h_body_md5_check(front_req_t *r, s3h_out_t *o);

/* NoSuchBucket when the bucket is missing, else the given error. */
int s3h_err_not_found(front_req_t *r, s3h_out_t *o, s3_err_t otherwise);
/* A store status as an S3 error: NOT_FOUND as NoSuchKey (or NoSuchBucket), NOMEM as SlowDown,
 * the rest as InternalError naming what failed. */
int s3h_err_status(front_req_t *r, s3h_out_t *o, wh_status_t st, const char *what);

/* If-Match & co (pfx "" or "x-amz-copy-source-"): 0 to go on, or 304 / 412. */
int s3h_preconditions(front_req_t *r, const data_obj_meta_t *m, const char *pfx);
/* A delete's conditions into c, for the store to check in the delete's metadata transaction
 * against the version it removes (store_delete_args_t.cond): If-Match,
 * x-amz-if-match-last-modified-time and x-amz-if-match-size of DeleteObject, or (etag
 * non-NULL) a DeleteObjects entry's <ETag>. *any false when there is none. c->if_match borrows
 * the header or etag. 0, or 400 InvalidArgument naming a malformed header. */
int s3h_delete_cond(front_req_t *r, s3h_out_t *o, const char *etag, data_del_cond_t *c, bool *any);
/* The answer to a delete whose condition failed (c->failed set): 412 PreconditionFailed, or 404
 * NoSuchKey for If-Match on no object. */
int s3h_delete_cond_failed(s3h_out_t *o, const char *key, const data_del_cond_t *c);
/* A write's If-None-Match: * / If-Match: ETAG (PutObject, CompleteMultipartUpload) into c,
 * for the store to check in the committing transaction: 0, or the error's status (501 for an
 * If-None-Match other than *, as S3 answers). */
int s3h_write_cond(front_req_t *r, s3h_out_t *o, data_cond_t *c);
/* The answer to a failed conditional commit: 412 PreconditionFailed, NoSuchKey (If-Match on a
 * missing key), 409 ConditionalRequestConflict for a conflict; else s3h_err_status. */
int s3h_write_cond_err(front_req_t *r, s3h_out_t *o, wh_status_t st, const data_cond_t *c,
                       const char *what);

/* Checksums of an object body (HTTP or RDMA). s3h_sums_start switches on the extra digests
 * the request names; s3h_sums_read reads the claims (trailer first); s3h_sums_check compares
 * them with what the writer and the digests computed (md5_hex gets the writer's MD5). */
int s3h_sums_start(front_req_t *r, s3h_out_t *o);
int s3h_sums_read(front_req_t *r, s3h_out_t *o, s3_sums_t *w);
int s3h_sums_check(front_req_t *r, s3h_out_t *o, const s3_sums_t *w, store_writer_t *wr,
                   char md5_hex[33]);
/* The verified extra checksums, kept with the object and echoed on the PUT answer. */
void s3h_sums_to_meta(data_obj_meta_t *m, const s3_sums_t *w);
void s3h_sums_to_out(s3h_out_t *o, const s3_sums_t *w);
/* Every trailer x-amz-trailer names has arrived. */
int s3h_trailers_check(front_req_t *r, s3h_out_t *o);

/* ---- server-side encryption (sse.c) ------------------------------------------------- */

/* What a request asks of encryption: SSE-C's key (wiped by s3h_sse_req_wipe) or SSE-S3. */
typedef struct s3h_sse_req {
    store_sse_kind_t kind;
    uint8_t ckey[STORE_SSE_KEY_LEN];
    char ckey_md5[32]; /* as sent, checked */
} s3h_sse_req_t;
void s3h_sse_req_wipe(s3h_sse_req_t *q);
/* The request came over TLS (the answer aws:SecureTransport gets). */
bool s3h_req_secure(const front_req_t *r);
/* Parses the SSE-C headers (copy_source: the x-amz-copy-source-... ones) and, unless
 * copy_source, x-amz-server-side-encryption (accepted only where allow_s3). SSE-C over plain
 * HTTP is 400; aws:kms is 501. 0 or the error's status. */
int s3h_sse_request(front_req_t *r, s3h_out_t *o, bool copy_source, bool allow_s3,
                    s3h_sse_req_t *q);
/* A write that names no encryption takes the bucket's default (PutBucketEncryption). */
int s3h_sse_default(front_req_t *r, s3h_out_t *o, s3h_sse_req_t *q);
/* New object parameters for q: *sse (malloc'd, NULL for none) and its data key. */
int s3h_sse_new(front_req_t *r, s3h_out_t *o, const s3h_sse_req_t *q, char **sse,
                uint8_t key[STORE_SSE_KEY_LEN]);
/* The data key of an object with parameters text, given what the request carries: WH_OK, or
 * the S3 error (InvalidRequest: no key given; AccessDenied: the wrong key) in *err/msg. */
wh_status_t s3h_sse_key(front_req_t *r, const char *text, const s3h_sse_req_t *q,
                        uint8_t key[STORE_SSE_KEY_LEN], s3_err_t *err, char *msg, size_t cap);
/* GET/HEAD: checks q against the object m and, with rd, gives rd its key. 0 or error. */
int s3h_sse_open(front_req_t *r, s3h_out_t *o, const data_obj_meta_t *m, const s3h_sse_req_t *q,
                 data_reader_t *rd);
/* The reply headers of an object with parameters text (NULL: none). */
void s3h_sse_headers(s3h_out_t *o, const char *text, const s3h_sse_req_t *q);
/* PUT/UploadPart: encrypts r->w as the request (or, for a part, its upload) says. */
int s3h_sse_writer(front_req_t *r, s3h_out_t *o, bool part);
/* The headers s3h_sse_writer's encryption gives the PUT/UploadPart reply. */
void s3h_sse_reply(const front_req_t *r, s3h_out_t *o);
/* CopyObject's copy, decrypting the source and encrypting the destination as the request
 * says: 0 with *st the store's answer, or an error's status (the key checks). src_etag[80]
 * and *src_size: the source version copied (its ETag; the copy's may differ, under SSE-C). */
int s3h_sse_copy(front_req_t *r, s3h_out_t *o, const char *sbucket, const char *skey,
                 const char *sversion, const data_obj_meta_t *replace_meta,
                 data_obj_meta_t *out_meta, wh_status_t *st, char *src_etag, uint64_t *src_size);

/* ---- authorization (authorize.c) --------------------------------------------------------- */

typedef struct front_authz s3h_authz_t;
/* The row's action for r's principal: 0 to go on, else the error's status (AccessDenied,
 * NoSuchBucket). Root: always 0, nothing loaded. */
int s3h_authorize(front_req_t *r, const front_op_t *op, s3h_out_t *o);
/* For obj_acl rows, after the handler looked the object up (m NULL: no such object) and
 * before it moves a byte: 0 or the error's status. Nothing to do when not pending. */
int s3h_authz_object(front_req_t *r, s3h_out_t *o, const data_obj_meta_t *m);
/* A decision besides the row's: action on bucket/key (key NULL: the bucket), m the object
 * when the action reads it (the copy source), else NULL. 0 or the error's status. */
int s3h_authz_other(front_req_t *r, s3h_out_t *o, const char *action, const char *bucket,
                    const char *key, const data_obj_meta_t *m);
/* A success answered while an object check is pending becomes AccessDenied (a safety net). */
int s3h_authz_guard(front_req_t *r, s3h_out_t *o, int status);
void s3h_authz_release(front_req_t *r);
/* s3h_authorize found the bucket (its lookup answers the handler's existence check). */
bool s3h_authz_bucket_known(const front_req_t *r);
/* The bucket owner's canonical id when s3h_authorize loaded it, else NULL. */
const char *s3h_authz_bucket_owner(const front_req_t *r);
/* The principal's inline user policies (identity's store). */
wh_status_t s3h_user_policies(front_req_t *r, meta_policy_t **out, size_t *n);

/* The TCP peer's address as aws:SourceIp (zeroed, absent, over the Unix socket). */
void s3h_peer_ip(const front_req_t *r, auth_ip_t *out);
const char *s3h_account_id(const front_req_t *r);
/* A stored owner ("" = root) as a canonical id. */
void s3h_owner_id(const front_req_t *r, const char *stored, char out[65]);
/* The owner value a new bucket or object of r's principal is stored with. */
const char *s3h_owner_stored(const front_req_t *r);

/* ---- ACLs from requests (acl_ops.c) ------------------------------------------------------ */

/* x-amz-acl or x-amz-grant-* of r (both: InvalidRequest) as the serialised ACL of a new
 * resource owned by owner (canonical id) in a bucket owned by bucket_owner; *text NULL when
 * the request names none (the default: private). 0 or the error's status. */
int s3h_acl_from_request(front_req_t *r, s3h_out_t *o, const char *owner, const char *bucket_owner,
                         char **text);
/* The owner and ACL of a new object of r into m (PutObject, CopyObject,
 * CreateMultipartUpload). */
int s3h_acl_to_meta(front_req_t *r, s3h_out_t *o, data_obj_meta_t *m);
/* The request's x-amz-acl or x-amz-grant-* grant more than the owner's own full control (what
 * BucketOwnerEnforced refuses). */
bool s3h_acl_request_grants(front_req_t *r);

/* versioning.c: the versionId query (NULL when absent; 400 when malformed). */
int s3h_version_q(front_req_t *r, s3h_out_t *o, const char **vid);
/* x-amz-version-id of a reply (the "null" version only when asked: the request named one). */
void s3h_out_version(s3h_out_t *o, const char *vid, bool asked);
/* A read that found no version: a delete marker (404 NoSuchKey, or 405 when asked by
 * versionId; x-amz-delete-marker either way), NoSuchVersion, or NoSuchKey/NoSuchBucket. */
int s3h_version_not_found(front_req_t *r, s3h_out_t *o, const data_obj_meta_t *m, const char *vid);

/* ---- Object Lock (lock.c) ------------------------------------------------------------ */

struct s3_lock_config;
/* The bucket's ObjectLockConfiguration (*enabled false: object lock is off). 0 or the error's
 * status (NoSuchBucket). */
int s3h_lock_config_load(front_req_t *r, s3h_out_t *o, bool *enabled, struct s3_lock_config *cfg);
/* Stores cfg as the bucket's configuration (CreateBucket, PutObjectLockConfiguration). */
int s3h_lock_enable(front_req_t *r, s3h_out_t *o, const struct s3_lock_config *cfg);
/* The lock a new version gets (m's lock_mode, lock_until, legal_hold): the request's
 * x-amz-object-lock-* headers, else the bucket's default retention. Headers on a bucket without
 * object lock: 400 InvalidRequest. 0 or the error's status. */
int s3h_lock_from_request(front_req_t *r, s3h_out_t *o, data_obj_meta_t *m);
/* x-amz-object-lock-mode, -retain-until-date and -legal-hold of a GET/HEAD answer, each to a
 * caller allowed s3:GetObjectRetention / s3:GetObjectLegalHold (as S3). */
void s3h_lock_headers(front_req_t *r, s3h_out_t *o, const data_obj_meta_t *m);
/* x-amz-bypass-governance-retention: true of a request whose caller is allowed
 * s3:BypassGovernanceRetention on key: *bypass DATA_BYPASS_GOVERNANCE, else NONE (a caller
 * without the permission bypasses nothing). 0, or the status of an error other than a denial. */
int s3h_lock_bypass(front_req_t *r, s3h_out_t *o, const char *key, int *bypass);
/* The AccessDenied message of a delete that res says a lock refused. */
void s3h_lock_refusal(const data_del_result_t *res, const char *key, const char *vid, char *msg,
                      size_t n);

/* tagging.c: x-amz-tagging of a write in the canonical stored form (*tags NULL: none). */
int s3h_tags_from_request(front_req_t *r, s3h_out_t *o, char **tags);
void s3h_out_tag_count(s3h_out_t *o, const char *tags);

/* The request names checksum algorithm a (header or trailer). */
bool s3h_sum_named(front_req_t *r, s3_sum_t a);

/* handler_util.c: CreateMultipartUpload within the per-bucket cap on incomplete uploads
 * (front_config_t max_uploads): 0, or 400 TooManyUploads naming the cap. */
int s3h_mpu_cap_check(front_req_t *r, s3h_out_t *o);

/* handler_util.c: a CompleteMultipartUpload whose upload is gone: true when the key's current
 * object is what that list of parts completed into (its ETag is the md5 of the listed part
 * ETags, "-N"), so a retry after a success is answered 200 again, as S3 does; m gets the
 * object's metadata then. */
bool s3h_mpu_completed_before(front_req_t *r, const store_complete_part_t *parts, size_t n,
                              data_obj_meta_t *m);

/* ---- handler steps of the bucket, configuration and IAM rows (the front_ops rows) ---------- */

int s3h_bucket_list_all(front_req_t *r, s3h_out_t *o);
/* GET /?x-wharf-cluster[=text] (root only): a cluster gateway's dashboard, JSON (or text);
 * 501 NotImplemented on a server that is not a gateway. */
int s3h_admin_cluster(front_req_t *r, s3h_out_t *o);
int s3h_bucket_create_begin(front_req_t *r, s3h_out_t *o);
int s3h_bucket_create_finish(front_req_t *r, s3h_out_t *o);
int s3h_bucket_delete(front_req_t *r, s3h_out_t *o);
int s3h_bucket_head(front_req_t *r, s3h_out_t *o);
int s3h_bucket_location(front_req_t *r, s3h_out_t *o);
int s3h_bucket_versioning(front_req_t *r, s3h_out_t *o);
int s3h_bucket_versioning_put_begin(front_req_t *r, s3h_out_t *o);
int s3h_bucket_versioning_put_finish(front_req_t *r, s3h_out_t *o);

int s3h_tagging_get(front_req_t *r, s3h_out_t *o);
int s3h_tagging_put_begin(front_req_t *r, s3h_out_t *o);
int s3h_tagging_put_finish(front_req_t *r, s3h_out_t *o);
int s3h_tagging_delete(front_req_t *r, s3h_out_t *o);

/* lock.c: the Object Lock sub-resources. */
int s3h_olc_get(front_req_t *r, s3h_out_t *o);
int s3h_olc_put_finish(front_req_t *r, s3h_out_t *o);
int s3h_lock_obj_put_begin(front_req_t *r, s3h_out_t *o);
int s3h_retention_get(front_req_t *r, s3h_out_t *o);
int s3h_retention_put_finish(front_req_t *r, s3h_out_t *o);
int s3h_legal_hold_get(front_req_t *r, s3h_out_t *o);
int s3h_legal_hold_put_finish(front_req_t *r, s3h_out_t *o);

/* iam.c: the IAM API (users, access keys, inline user policies). */
int s3h_iam_begin(front_req_t *r, s3h_out_t *o);
int s3h_iam_finish(front_req_t *r, s3h_out_t *o);
int s3h_acl_bucket_get(front_req_t *r, s3h_out_t *o);
int s3h_acl_object_get(front_req_t *r, s3h_out_t *o);
/* lifecycle_run.c: the lifecycle worker, a thread applying the buckets' lifecycle rules every
 * period_s seconds (0: FRONT_LIFECYCLE_PERIOD_DEFAULT). st is borrowed: stop the worker before
 * closing it. WHARF_LIFECYCLE_DAY_SECONDS (a test-only setting) shortens a day. The S3 app
 * (s3api_app) starts it through the front's start/stop/metrics slots. */
typedef struct s3h_lc s3h_lc_t;
/* period_s: the front's setting, read before every wait (a SIGHUP may change it); 0: the
 * default. */
wh_status_t s3h_lc_start(store_t *st, const _Atomic unsigned *period_s, s3h_lc_t **out);
void s3h_lc_stop(s3h_lc_t *lc); /* NULL-safe; waits for a pass under way to stop */
/* Its counters, in the Prometheus text form (NULL: nothing). */
void s3h_lc_metrics(s3h_lc_t *lc, wh_sbuf_t *out);

/* lifecycle_hdr.c: x-amz-expiration on o when a lifecycle rule of the request's bucket will
 * expire the current version key (size bytes, of time mtime, tags in the stored query form or
 * NULL). Nothing when none does or the document cannot be read. */
void s3h_lc_expiration_header(front_req_t *r, s3h_out_t *o, const char *key, uint64_t size,
                              time_t mtime, const char *tags);

/* bconfig.c: the bucket configurations kept beside the bucket's row (store_bucket_attr_*), one
 * kind each. A new kind is a row of bconfig.c's table and three front_ops rows naming
 * s3h_bconfig_get, s3h_bconfig_put_begin/_put_finish and s3h_bconfig_delete. */
typedef struct s3h_bconfig_kind {
    const char *subresource; /* the query parameter its front_ops rows match ("cors") */
    data_battr_t attr;       /* where its value is kept */
    s3_err_t not_configured; /* GET while there is none (NoSuchCORSConfiguration) */
    const char *what;        /* for messages: "CORS configuration" */
    int put_status;          /* a PUT's answer: 200, or 204 (tagging) */
    /* The stored value (never NULL) -> the GET document, appended to b after the XML
     * declaration: 0, -1 when the value says there is none, or the error's status (set in o). */
    int (*format)(s3h_out_t *o, const char *stored, wh_sbuf_t *b);
    /* The PUT document, validated -> the value to keep, appended to v; *unset: remove the
     * configuration instead. 0, or the error's status (set in o). */
    int (*parse)(front_req_t *r, s3h_out_t *o, const char *doc, size_t len, wh_sbuf_t *v,
                 bool *unset);
} s3h_bconfig_kind_t;
/* The kind a sub-resource names, or NULL. */
const s3h_bconfig_kind_t *s3h_bconfig_kind(const char *subresource);
/* Get/Put/Delete of the kind the request's front_ops row names (its q1). */
int s3h_bconfig_get(front_req_t *r, s3h_out_t *o);
int s3h_bconfig_put_begin(front_req_t *r, s3h_out_t *o);
int s3h_bconfig_put_finish(front_req_t *r, s3h_out_t *o);
int s3h_bconfig_delete(front_req_t *r, s3h_out_t *o);
int s3h_cors_preflight(front_req_t *r, s3h_out_t *o);
/* Access-Control-* headers on the answer of a request whose Origin a CORS rule allows. */
void s3h_cors_actual(front_req_t *r, s3h_out_t *o);
/* An explicit ACL about to be stored in the request's bucket (acl NULL when it is only
 * named by headers that change nothing): 400 AccessControlListNotSupported under
 * BucketOwnerEnforced, 403 when BlockPublicAcls refuses a public one; else 0. */
int s3h_bconfig_acl_guard(front_req_t *r, s3h_out_t *o, const auth_acl_t *acl, bool explicit_acl);
/* A bucket policy about to be stored: 403 when BlockPublicPolicy refuses a public one. */
int s3h_bconfig_policy_guard(front_req_t *r, s3h_out_t *o, const auth_policy_t *pol);

int s3h_acl_put_begin(front_req_t *r, s3h_out_t *o);
int s3h_acl_bucket_put_finish(front_req_t *r, s3h_out_t *o);
int s3h_acl_object_put_finish(front_req_t *r, s3h_out_t *o);
int s3h_policy_get(front_req_t *r, s3h_out_t *o);
int s3h_policy_put_begin(front_req_t *r, s3h_out_t *o);
int s3h_policy_put_finish(front_req_t *r, s3h_out_t *o);
int s3h_policy_delete(front_req_t *r, s3h_out_t *o);
int s3h_policy_status(front_req_t *r, s3h_out_t *o);

#endif
