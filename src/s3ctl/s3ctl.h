/* The S3 handlers of buckets, their configuration and IAM, and what every S3 handler shares,
 * one file per family; the object handlers and the dispatch are the layer above (s3api).
 *
 *   s3_out.c       building a handler's answer (srv_out_t)
 *   s3_util.c      XML pieces, preconditions, store-status mapping, checksums
 *   s3_authz.c     the authorization step (srv_authorize) and what it loads
 *   s3_sse.c       server-side encryption: SSE-C and SSE-S3 of a request, the bucket default
 *   s3_version.c   versionId, and Get/PutBucketVersioning
 *   s3_bucket.c    ListBuckets, Create/Delete/HeadBucket, GetBucketLocation
 *   s3_acl.c       ?acl and ?policy, and the ACL a new bucket or object gets from its request
 *   s3_bconfig.c   bucket tagging, encryption, CORS, PublicAccessBlock, OwnershipControls,
 *                  lifecycle configuration
 *   s3_lifecycle.c the lifecycle worker
 *   s3_lock.c      Object Lock: the bucket's configuration, a version's retention and legal hold
 *   s3_tagging.c   object tagging
 *   iam.c          the IAM API (users, access keys, inline user policies) */
#ifndef WH_S3CTL_S3CTL_H
#define WH_S3CTL_S3CTL_H

#include "front/front.h"
#include "meta/meta.h"
#include "store/crypt.h"

#include <stdbool.h>
#include <stdint.h>

#define S3_XMLNS "http://s3.amazonaws.com/doc/2006-03-01/"
#define XML_DECL "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"

/* A handler's answer. Owned by the dispatcher, which sends and releases it. */
typedef struct srv_out {
    int status;       /* HTTP status; 0 while nothing is decided */
    const char *code; /* S3 error code (static), NULL for a success */
    char msg[320];    /* the error message */
    bool has_xml;     /* success body: xml (application/xml) */
    wh_sbuf_t xml;
    struct MHD_Response *resp; /* success body other than XML (object bytes); NULL: empty */
    wh_sbuf_t hdrs;            /* extra headers, "name\0value\0" pairs, on either kind */
    uint64_t tx_body;          /* bytes of object body the response carries (metrics) */
} srv_out_t;

/* ---- building an answer (s3_out.c); each returns the status for the handler to return - */

/* An S3 error with its default status; msg NULL or "": the default message. */
int srv_err(srv_out_t *o, s3_err_t e, const char *msg);
int srv_errf(srv_out_t *o, s3_err_t e, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* An error whose code is not in s3/errors.h (an RDMA refusal's, a region mismatch's). */
int srv_err_raw(srv_out_t *o, int status, const char *code, const char *msg);
/* Success with an XML document (taken out of xml), or with no body, or with resp's body. */
int srv_ok_xml(srv_out_t *o, int status, wh_sbuf_t *xml);
int srv_ok(srv_out_t *o, int status);
int srv_ok_resp(srv_out_t *o, int status, struct MHD_Response *resp, uint64_t tx_body);
/* Adds a header to whatever the answer becomes. */
void srv_out_header(srv_out_t *o, const char *name, const char *value);
void srv_out_header_u64(srv_out_t *o, const char *name, uint64_t v);

/* ---- shared helpers (s3_util.c) --------------------------------------------------------- */

static inline store_t *srv_st(const srv_req_t *r)
{
    return r->srv->store;
}
static inline const char *srv_b(const srv_req_t *r)
{
    return r->route.bucket;
}
static inline const char *srv_k(const srv_req_t *r)
{
    return r->route.key;
}

/* <elem><ID/><DisplayName/></elem> of the request's principal (ListBuckets). */
void srv_xml_owner(const srv_req_t *r, wh_sbuf_t *b, const char *elem);
/* The same for a stored owner ("" = root). */
void srv_xml_owner_of(const srv_req_t *r, wh_sbuf_t *b, const char *elem, const char *stored);
void srv_etag_quoted(const char *etag, char out[84]);
void srv_xml_etag(wh_sbuf_t *b, const char *etag);
void srv_xml_time(wh_sbuf_t *b, const char *name, time_t t);
/* The text of an element, URL-encoded when the request asked for encoding-type=url. */
void srv_xml_enc(wh_sbuf_t *b, const char *name, const char *text, bool url);

/* Each returns 0 when the check passes, else the status of the error put in o. */
int srv_need_bucket(srv_req_t *r, srv_out_t *o);
int srv_key_check(srv_req_t *r, srv_out_t *o);
/* Optional non-negative integer query parameter. */
int srv_q_uint(srv_req_t *r, srv_out_t *o, const char *name, uint64_t dflt, uint64_t *out);
int srv_q_encoding_url(srv_req_t *r, srv_out_t *o, bool *url);
/* Content-MD5 of a buffered (XML) body. */
int srv_body_md5_check(srv_req_t *r, srv_out_t *o);

/* NoSuchBucket when the bucket is missing, else the given error. */
int srv_err_not_found(srv_req_t *r, srv_out_t *o, s3_err_t otherwise);
/* A store status as an S3 error: NOT_FOUND as NoSuchKey (or NoSuchBucket), NOMEM as SlowDown,
 * the rest as InternalError naming what failed. */
int srv_err_status(srv_req_t *r, srv_out_t *o, wh_status_t st, const char *what);

/* If-Match & co (pfx "" or "x-amz-copy-source-"): 0 to go on, or 304 / 412. */
int srv_preconditions(srv_req_t *r, const store_obj_meta_t *m, const char *pfx);
/* A delete's conditions into c, for the store to check in the delete's metadata transaction
 * against the version it removes (store_delete_args_t.cond): If-Match,
 * x-amz-if-match-last-modified-time and x-amz-if-match-size of DeleteObject, or (etag
 * non-NULL) a DeleteObjects entry's <ETag>. *any false when there is none. c->if_match borrows
 * the header or etag. 0, or 400 InvalidArgument naming a malformed header. */
int srv_delete_cond(srv_req_t *r, srv_out_t *o, const char *etag, store_del_cond_t *c, bool *any);
/* The answer to a delete whose condition failed (c->failed set): 412 PreconditionFailed, or 404
 * NoSuchKey for If-Match on no object. */
int srv_delete_cond_failed(srv_out_t *o, const char *key, const store_del_cond_t *c);
/* A write's If-None-Match: * / If-Match: ETAG (PutObject, CompleteMultipartUpload) into c,
 * for the store to check in the committing transaction: 0, or the error's status (501 for an
 * If-None-Match other than *, as S3 answers). */
int srv_write_cond(srv_req_t *r, srv_out_t *o, store_cond_t *c);
/* The answer to a failed conditional commit: 412 PreconditionFailed, NoSuchKey (If-Match on a
 * missing key), 409 ConditionalRequestConflict for a conflict; else srv_err_status. */
int srv_write_cond_err(srv_req_t *r, srv_out_t *o, wh_status_t st, const store_cond_t *c,
                       const char *what);

/* Checksums of an object body (HTTP or RDMA). srv_sums_start switches on the extra digests
 * the request names; srv_sums_read reads the claims (trailer first); srv_sums_check compares
 * them with what the writer and the digests computed (md5_hex gets the writer's MD5). */
int srv_sums_start(srv_req_t *r, srv_out_t *o);
int srv_sums_read(srv_req_t *r, srv_out_t *o, s3_sums_t *w);
int srv_sums_check(srv_req_t *r, srv_out_t *o, const s3_sums_t *w, store_writer_t *wr,
                   char md5_hex[33]);
/* The verified extra checksums, kept with the object and echoed on the PUT answer. */
void srv_sums_to_meta(store_obj_meta_t *m, const s3_sums_t *w);
void srv_sums_to_out(srv_out_t *o, const s3_sums_t *w);
/* Every trailer x-amz-trailer names has arrived. */
int srv_trailers_check(srv_req_t *r, srv_out_t *o);

/* ---- server-side encryption (s3_sse.c) ------------------------------------------------- */

/* What a request asks of encryption: SSE-C's key (wiped by srv_sse_req_wipe) or SSE-S3. */
typedef struct srv_sse_req {
    store_sse_kind_t kind;
    uint8_t ckey[STORE_SSE_KEY_LEN];
    char ckey_md5[32]; /* as sent, checked */
} srv_sse_req_t;
void srv_sse_req_wipe(srv_sse_req_t *q);
/* The request came over TLS (the answer aws:SecureTransport gets). */
bool srv_req_secure(const srv_req_t *r);
/* Parses the SSE-C headers (copy_source: the x-amz-copy-source-... ones) and, unless
 * copy_source, x-amz-server-side-encryption (accepted only where allow_s3). SSE-C over plain
 * HTTP is 400; aws:kms is 501. 0 or the error's status. */
int srv_sse_request(srv_req_t *r, srv_out_t *o, bool copy_source, bool allow_s3, srv_sse_req_t *q);
/* A write that names no encryption takes the bucket's default (PutBucketEncryption). */
int srv_sse_default(srv_req_t *r, srv_out_t *o, srv_sse_req_t *q);
/* New object parameters for q: *sse (malloc'd, NULL for none) and its data key. */
int srv_sse_new(srv_req_t *r, srv_out_t *o, const srv_sse_req_t *q, char **sse,
                uint8_t key[STORE_SSE_KEY_LEN]);
/* The data key of an object with parameters text, given what the request carries: WH_OK, or
 * the S3 error (InvalidRequest: no key given; AccessDenied: the wrong key) in *err/msg. */
wh_status_t srv_sse_key(srv_req_t *r, const char *text, const srv_sse_req_t *q,
                        uint8_t key[STORE_SSE_KEY_LEN], s3_err_t *err, char *msg, size_t cap);
/* GET/HEAD: checks q against the object m and, with rd, gives rd its key. 0 or error. */
int srv_sse_open(srv_req_t *r, srv_out_t *o, const store_obj_meta_t *m, const srv_sse_req_t *q,
                 store_reader_t *rd);
/* The reply headers of an object with parameters text (NULL: none). */
void srv_sse_headers(srv_out_t *o, const char *text, const srv_sse_req_t *q);
/* PUT/UploadPart: encrypts r->w as the request (or, for a part, its upload) says. */
int srv_sse_writer(srv_req_t *r, srv_out_t *o, bool part);
/* The headers srv_sse_writer's encryption gives the PUT/UploadPart reply. */
void srv_sse_reply(const srv_req_t *r, srv_out_t *o);
/* CopyObject's copy, decrypting the source and encrypting the destination as the request
 * says: 0 with *st the store's answer, or an error's status (the key checks). src_etag[80]
 * and *src_size: the source version copied (its ETag; the copy's may differ, under SSE-C). */
int srv_sse_copy(srv_req_t *r, srv_out_t *o, const char *sbucket, const char *skey,
                 const char *sversion, const store_obj_meta_t *replace_meta,
                 store_obj_meta_t *out_meta, wh_status_t *st, char *src_etag, uint64_t *src_size);

/* ---- authorization (s3_authz.c) --------------------------------------------------------- */

typedef struct srv_authz srv_authz_t;
/* The row's action for r's principal: 0 to go on, else the error's status (AccessDenied,
 * NoSuchBucket). Root: always 0, nothing loaded. */
int srv_authorize(srv_req_t *r, const srv_op_t *op, srv_out_t *o);
/* For obj_acl rows, after the handler looked the object up (m NULL: no such object) and
 * before it moves a byte: 0 or the error's status. Nothing to do when not pending. */
int srv_authz_object(srv_req_t *r, srv_out_t *o, const store_obj_meta_t *m);
/* A decision besides the row's: action on bucket/key (key NULL: the bucket), m the object
 * when the action reads it (the copy source), else NULL. 0 or the error's status. */
int srv_authz_other(srv_req_t *r, srv_out_t *o, const char *action, const char *bucket,
                    const char *key, const store_obj_meta_t *m);
/* A success answered while an object check is pending becomes AccessDenied (a safety net). */
int srv_authz_guard(srv_req_t *r, srv_out_t *o, int status);
void srv_authz_release(srv_req_t *r);
/* srv_authorize found the bucket (its lookup answers the handler's existence check). */
bool srv_authz_bucket_known(const srv_req_t *r);
/* The bucket owner's canonical id when srv_authorize loaded it, else NULL. */
const char *srv_authz_bucket_owner(const srv_req_t *r);
/* The principal's inline user policies (identity's store). */
wh_status_t srv_user_policies(srv_req_t *r, meta_policy_t **out, size_t *n);

/* The TCP peer's address as aws:SourceIp (zeroed, absent, over the Unix socket). */
void srv_peer_ip(const srv_req_t *r, s3_ip_t *out);
const char *srv_account_id(const srv_req_t *r);
/* A stored owner ("" = root) as a canonical id. */
void srv_owner_id(const srv_req_t *r, const char *stored, char out[65]);
/* The owner value a new bucket or object of r's principal is stored with. */
const char *srv_owner_stored(const srv_req_t *r);

/* ---- ACLs from requests (s3_acl.c) ------------------------------------------------------ */

/* x-amz-acl or x-amz-grant-* of r (both: InvalidRequest) as the serialised ACL of a new
 * resource owned by owner (canonical id) in a bucket owned by bucket_owner; *text NULL when
 * the request names none (the default: private). 0 or the error's status. */
int srv_acl_from_request(srv_req_t *r, srv_out_t *o, const char *owner, const char *bucket_owner,
                         char **text);
/* The owner and ACL of a new object of r into m (PutObject, CopyObject,
 * CreateMultipartUpload). */
int srv_acl_to_meta(srv_req_t *r, srv_out_t *o, store_obj_meta_t *m);
/* The request's x-amz-acl or x-amz-grant-* grant more than the owner's own full control (what
 * BucketOwnerEnforced refuses). */
bool srv_acl_request_grants(srv_req_t *r);

/* s3_version.c: the versionId query (NULL when absent; 400 when malformed). */
int srv_version_q(srv_req_t *r, srv_out_t *o, const char **vid);
/* x-amz-version-id of a reply (the "null" version only when asked: the request named one). */
void srv_out_version(srv_out_t *o, const char *vid, bool asked);
/* A read that found no version: a delete marker (404 NoSuchKey, or 405 when asked by
 * versionId; x-amz-delete-marker either way), NoSuchVersion, or NoSuchKey/NoSuchBucket. */
int srv_version_not_found(srv_req_t *r, srv_out_t *o, const store_obj_meta_t *m, const char *vid);

/* ---- Object Lock (s3_lock.c) ------------------------------------------------------------ */

struct s3_lock_config;
/* The bucket's ObjectLockConfiguration (*enabled false: object lock is off). 0 or the error's
 * status (NoSuchBucket). */
int srv_lock_config_load(srv_req_t *r, srv_out_t *o, bool *enabled, struct s3_lock_config *cfg);
/* Stores cfg as the bucket's configuration (CreateBucket, PutObjectLockConfiguration). */
int srv_lock_enable(srv_req_t *r, srv_out_t *o, const struct s3_lock_config *cfg);
/* The lock a new version gets (m's lock_mode, lock_until, legal_hold): the request's
 * x-amz-object-lock-* headers, else the bucket's default retention. Headers on a bucket without
 * object lock: 400 InvalidRequest. 0 or the error's status. */
int srv_lock_from_request(srv_req_t *r, srv_out_t *o, store_obj_meta_t *m);
/* x-amz-object-lock-mode, -retain-until-date and -legal-hold of a GET/HEAD answer, each to a
 * caller allowed s3:GetObjectRetention / s3:GetObjectLegalHold (as S3). */
void srv_lock_headers(srv_req_t *r, srv_out_t *o, const store_obj_meta_t *m);
/* x-amz-bypass-governance-retention: true of a request whose caller is allowed
 * s3:BypassGovernanceRetention on key: *bypass STORE_BYPASS_GOVERNANCE, else NONE (a caller
 * without the permission bypasses nothing). 0, or the status of an error other than a denial. */
int srv_lock_bypass(srv_req_t *r, srv_out_t *o, const char *key, int *bypass);
/* The AccessDenied message of a delete that res says a lock refused. */
void srv_lock_refusal(const store_del_result_t *res, const char *key, const char *vid, char *msg,
                      size_t n);

/* s3_tagging.c: x-amz-tagging of a write in the canonical stored form (*tags NULL: none). */
int srv_tags_from_request(srv_req_t *r, srv_out_t *o, char **tags);
void srv_out_tag_count(srv_out_t *o, const char *tags);

/* The request names checksum algorithm a (header or trailer). */
bool srv_sum_named(srv_req_t *r, s3_sum_t a);

/* s3_util.c: CreateMultipartUpload within the per-bucket cap on incomplete uploads
 * (srv_config_t max_uploads): 0, or 400 TooManyUploads naming the cap. */
int srv_mpu_cap_check(srv_req_t *r, srv_out_t *o);

/* s3_util.c: a CompleteMultipartUpload whose upload is gone: true when the key's current
 * object is what that list of parts completed into (its ETag is the md5 of the listed part
 * ETags, "-N"), so a retry after a success is answered 200 again, as S3 does; m gets the
 * object's metadata then. */
bool srv_mpu_completed_before(srv_req_t *r, const store_complete_part_t *parts, size_t n,
                              store_obj_meta_t *m);

/* ---- handler steps of the bucket, configuration and IAM rows (the srv_ops rows) ---------- */

int srv_bucket_list_all(srv_req_t *r, srv_out_t *o);
/* GET /?x-wharf-cluster[=text] (root only): a cluster gateway's dashboard, JSON (or text);
 * 501 NotImplemented on a server that is not a gateway. */
int srv_admin_cluster(srv_req_t *r, srv_out_t *o);
int srv_bucket_create_begin(srv_req_t *r, srv_out_t *o);
int srv_bucket_create_finish(srv_req_t *r, srv_out_t *o);
int srv_bucket_delete(srv_req_t *r, srv_out_t *o);
int srv_bucket_head(srv_req_t *r, srv_out_t *o);
int srv_bucket_location(srv_req_t *r, srv_out_t *o);
int srv_bucket_versioning(srv_req_t *r, srv_out_t *o);
int srv_bucket_versioning_put_begin(srv_req_t *r, srv_out_t *o);
int srv_bucket_versioning_put_finish(srv_req_t *r, srv_out_t *o);

int srv_tagging_get(srv_req_t *r, srv_out_t *o);
int srv_tagging_put_begin(srv_req_t *r, srv_out_t *o);
int srv_tagging_put_finish(srv_req_t *r, srv_out_t *o);
int srv_tagging_delete(srv_req_t *r, srv_out_t *o);

/* s3_lock.c: the Object Lock sub-resources. */
int srv_olc_get(srv_req_t *r, srv_out_t *o);
int srv_olc_put_finish(srv_req_t *r, srv_out_t *o);
int srv_lock_obj_put_begin(srv_req_t *r, srv_out_t *o);
int srv_retention_get(srv_req_t *r, srv_out_t *o);
int srv_retention_put_finish(srv_req_t *r, srv_out_t *o);
int srv_legal_hold_get(srv_req_t *r, srv_out_t *o);
int srv_legal_hold_put_finish(srv_req_t *r, srv_out_t *o);

/* iam.c: the IAM API (users, access keys, inline user policies). */
int srv_iam_begin(srv_req_t *r, srv_out_t *o);
int srv_iam_finish(srv_req_t *r, srv_out_t *o);
int srv_acl_bucket_get(srv_req_t *r, srv_out_t *o);
int srv_acl_object_get(srv_req_t *r, srv_out_t *o);
/* s3_lifecycle.c: the lifecycle worker, a thread applying the buckets' lifecycle rules every
 * period_s seconds (0: SRV_LIFECYCLE_PERIOD_DEFAULT). st is borrowed: stop the worker before
 * closing it. WHARF_LIFECYCLE_DAY_SECONDS (a test-only setting) shortens a day. The S3 app
 * (srv_s3_app) starts it through the front's start/stop/metrics slots. */
typedef struct srv_lc srv_lc_t;
wh_status_t srv_lc_start(store_t *st, unsigned period_s, srv_lc_t **out);
void srv_lc_stop(srv_lc_t *lc); /* NULL-safe; waits for a pass under way to stop */
/* Its counters, in the Prometheus text form (NULL: nothing). */
void srv_lc_metrics(srv_lc_t *lc, wh_sbuf_t *out);

/* s3_bconfig.c: bucket tagging, CORS, PublicAccessBlock, OwnershipControls. */
int srv_bconfig_put_begin(srv_req_t *r, srv_out_t *o);
int srv_btag_get(srv_req_t *r, srv_out_t *o);
int srv_btag_put_finish(srv_req_t *r, srv_out_t *o);
int srv_btag_delete(srv_req_t *r, srv_out_t *o);
int srv_benc_get(srv_req_t *r, srv_out_t *o);
int srv_benc_put_finish(srv_req_t *r, srv_out_t *o);
int srv_benc_delete(srv_req_t *r, srv_out_t *o);
int srv_cors_get(srv_req_t *r, srv_out_t *o);
int srv_cors_put_finish(srv_req_t *r, srv_out_t *o);
int srv_cors_delete(srv_req_t *r, srv_out_t *o);
int srv_cors_preflight(srv_req_t *r, srv_out_t *o);
/* Access-Control-* headers on the answer of a request whose Origin a CORS rule allows. */
void srv_cors_actual(srv_req_t *r, srv_out_t *o);
int srv_pab_get(srv_req_t *r, srv_out_t *o);
int srv_pab_put_finish(srv_req_t *r, srv_out_t *o);
int srv_pab_delete(srv_req_t *r, srv_out_t *o);
int srv_own_get(srv_req_t *r, srv_out_t *o);
int srv_own_put_finish(srv_req_t *r, srv_out_t *o);
int srv_own_delete(srv_req_t *r, srv_out_t *o);
int srv_lc_get(srv_req_t *r, srv_out_t *o);
int srv_lc_put_finish(srv_req_t *r, srv_out_t *o);
int srv_lc_delete(srv_req_t *r, srv_out_t *o);
/* An explicit ACL about to be stored in the request's bucket (acl NULL when it is only
 * named by headers that change nothing): 400 AccessControlListNotSupported under
 * BucketOwnerEnforced, 403 when BlockPublicAcls refuses a public one; else 0. */
int srv_bconfig_acl_guard(srv_req_t *r, srv_out_t *o, const s3_acl_t *acl, bool explicit_acl);
/* A bucket policy about to be stored: 403 when BlockPublicPolicy refuses a public one. */
int srv_bconfig_policy_guard(srv_req_t *r, srv_out_t *o, const s3_policy_t *pol);

int srv_acl_put_begin(srv_req_t *r, srv_out_t *o);
int srv_acl_bucket_put_finish(srv_req_t *r, srv_out_t *o);
int srv_acl_object_put_finish(srv_req_t *r, srv_out_t *o);
int srv_policy_get(srv_req_t *r, srv_out_t *o);
int srv_policy_put_begin(srv_req_t *r, srv_out_t *o);
int srv_policy_put_finish(srv_req_t *r, srv_out_t *o);
int srv_policy_delete(srv_req_t *r, srv_out_t *o);
int srv_policy_status(srv_req_t *r, srv_out_t *o);

#endif
