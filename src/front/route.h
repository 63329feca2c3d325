/* Request routing: from method, raw path, raw query and Host to one S3 API, a bucket and a key.
 *
 * Addressing (docs/features.md, "S3 over HTTP"): virtual-host style is used when the Host
 * (port stripped) is not an IP literal, contains a dot, and is not the endpoint host given to
 * the router; the bucket is then the part before ".localhost" when the host ends in
 * ".localhost", else the first label. Every other request is path-style: /bucket/key. (http.c falls
 * back to path-style when such a vhost bucket does not exist and the path is not "/", so path-style
 * clients of a dotted endpoint name keep working.) The key is the percent-decoded rest of the path
 * after "/bucket/" ('+' stays '+'); it is never used as a file path.
 *
 * Which API a request is comes from one table, which the application hands the front
 * (srv_app_ops_t; the S3 API's is srv_ops, s3api.c): each row matches a level
 * (service, bucket, object), a method, the sub-resources that must be present and whether
 * x-amz-copy-source is, and names the API, the body it takes, whether an x-amz-rdma-token is
 * allowed, and its handlers. The first matching row wins; no row is MethodNotAllowed.
 *
 * Pure functions with no I/O, so a fuzzer can drive them. */
#ifndef WH_FRONT_ROUTE_H
#define WH_FRONT_ROUTE_H

#include <stdbool.h>
#include <stddef.h>

/* X(enum, "ApiName") — the names are the metrics label values. */
#define SRV_API_LIST(X)                                                                            \
    X(SRV_API_UNKNOWN, "Unknown")                                                                  \
    X(SRV_API_HEALTH, "Health")                                                                    \
    X(SRV_API_METRICS, "Metrics")                                                                  \
    X(SRV_API_LIST_BUCKETS, "ListBuckets")                                                         \
    X(SRV_API_CREATE_BUCKET, "CreateBucket")                                                       \
    X(SRV_API_DELETE_BUCKET, "DeleteBucket")                                                       \
    X(SRV_API_HEAD_BUCKET, "HeadBucket")                                                           \
    X(SRV_API_GET_BUCKET_LOCATION, "GetBucketLocation")                                            \
    X(SRV_API_GET_BUCKET_VERSIONING, "GetBucketVersioning")                                        \
    X(SRV_API_LIST_OBJECT_VERSIONS, "ListObjectVersions")                                          \
    X(SRV_API_PUT_BUCKET_VERSIONING, "PutBucketVersioning")                                        \
    X(SRV_API_GET_OBJECT_TAGGING, "GetObjectTagging")                                              \
    X(SRV_API_PUT_OBJECT_TAGGING, "PutObjectTagging")                                              \
    X(SRV_API_DELETE_OBJECT_TAGGING, "DeleteObjectTagging")                                        \
    X(SRV_API_GET_OBJECT_ATTRIBUTES, "GetObjectAttributes")                                        \
    X(SRV_API_LIST_OBJECTS, "ListObjects")                                                         \
    X(SRV_API_LIST_OBJECTS_V2, "ListObjectsV2")                                                    \
    X(SRV_API_LIST_MULTIPART_UPLOADS, "ListMultipartUploads")                                      \
    X(SRV_API_DELETE_OBJECTS, "DeleteObjects")                                                     \
    X(SRV_API_PUT_OBJECT, "PutObject")                                                             \
    X(SRV_API_COPY_OBJECT, "CopyObject")                                                           \
    X(SRV_API_GET_OBJECT, "GetObject")                                                             \
    X(SRV_API_HEAD_OBJECT, "HeadObject")                                                           \
    X(SRV_API_DELETE_OBJECT, "DeleteObject")                                                       \
    X(SRV_API_CREATE_MPU, "CreateMultipartUpload")                                                 \
    X(SRV_API_UPLOAD_PART, "UploadPart")                                                           \
    X(SRV_API_UPLOAD_PART_COPY, "UploadPartCopy")                                                  \
    X(SRV_API_COMPLETE_MPU, "CompleteMultipartUpload")                                             \
    X(SRV_API_ABORT_MPU, "AbortMultipartUpload")                                                   \
    X(SRV_API_LIST_PARTS, "ListParts")                                                             \
    X(SRV_API_IAM, "IAM")                                                                          \
    X(SRV_API_WHARF_CLUSTER, "WharfAdminCluster")                                                  \
    X(SRV_API_CONSOLE, "Console")                                                                  \
    X(SRV_API_GET_BUCKET_ACL, "GetBucketAcl")                                                      \
    X(SRV_API_PUT_BUCKET_ACL, "PutBucketAcl")                                                      \
    X(SRV_API_GET_OBJECT_ACL, "GetObjectAcl")                                                      \
    X(SRV_API_PUT_OBJECT_ACL, "PutObjectAcl")                                                      \
    X(SRV_API_GET_BUCKET_POLICY, "GetBucketPolicy")                                                \
    X(SRV_API_PUT_BUCKET_POLICY, "PutBucketPolicy")                                                \
    X(SRV_API_DELETE_BUCKET_POLICY, "DeleteBucketPolicy")                                          \
    X(SRV_API_GET_BUCKET_POLICY_STATUS, "GetBucketPolicyStatus")                                   \
    X(SRV_API_GET_BUCKET_TAGGING, "GetBucketTagging")                                              \
    X(SRV_API_PUT_BUCKET_TAGGING, "PutBucketTagging")                                              \
    X(SRV_API_DELETE_BUCKET_TAGGING, "DeleteBucketTagging")                                        \
    X(SRV_API_GET_BUCKET_CORS, "GetBucketCors")                                                    \
    X(SRV_API_PUT_BUCKET_CORS, "PutBucketCors")                                                    \
    X(SRV_API_DELETE_BUCKET_CORS, "DeleteBucketCors")                                              \
    X(SRV_API_CORS_PREFLIGHT, "CorsPreflight")                                                     \
    X(SRV_API_GET_BUCKET_ENCRYPTION, "GetBucketEncryption")                                        \
    X(SRV_API_PUT_BUCKET_ENCRYPTION, "PutBucketEncryption")                                        \
    X(SRV_API_DELETE_BUCKET_ENCRYPTION, "DeleteBucketEncryption")                                  \
    X(SRV_API_GET_PUBLIC_ACCESS_BLOCK, "GetPublicAccessBlock")                                     \
    X(SRV_API_PUT_PUBLIC_ACCESS_BLOCK, "PutPublicAccessBlock")                                     \
    X(SRV_API_DELETE_PUBLIC_ACCESS_BLOCK, "DeletePublicAccessBlock")                               \
    X(SRV_API_GET_OWNERSHIP_CONTROLS, "GetBucketOwnershipControls")                                \
    X(SRV_API_PUT_OWNERSHIP_CONTROLS, "PutBucketOwnershipControls")                                \
    X(SRV_API_DELETE_OWNERSHIP_CONTROLS, "DeleteBucketOwnershipControls")                          \
    X(SRV_API_GET_BUCKET_LIFECYCLE, "GetBucketLifecycleConfiguration")                             \
    X(SRV_API_PUT_BUCKET_LIFECYCLE, "PutBucketLifecycleConfiguration")                             \
    X(SRV_API_DELETE_BUCKET_LIFECYCLE, "DeleteBucketLifecycle")                                    \
    X(SRV_API_POST_OBJECT, "PostObject")                                                           \
    X(SRV_API_GET_OBJECT_LOCK_CONFIG, "GetObjectLockConfiguration")                                \
    X(SRV_API_PUT_OBJECT_LOCK_CONFIG, "PutObjectLockConfiguration")                                \
    X(SRV_API_GET_OBJECT_RETENTION, "GetObjectRetention")                                          \
    X(SRV_API_PUT_OBJECT_RETENTION, "PutObjectRetention")                                          \
    X(SRV_API_GET_OBJECT_LEGAL_HOLD, "GetObjectLegalHold")                                         \
    X(SRV_API_PUT_OBJECT_LEGAL_HOLD, "PutObjectLegalHold")                                         \
    X(SRV_API_RENAME_OBJECT, "RenameObject")                                                       \
    X(SRV_API_NOT_IMPLEMENTED, "NotImplemented")                                                   \
    X(SRV_API_METHOD_NOT_ALLOWED, "MethodNotAllowed")                                              \
    X(SRV_API_BAD_REQUEST, "BadRequest")

typedef enum {
#define SRV_API_ENUM_(e, n) e,
    SRV_API_LIST(SRV_API_ENUM_)
#undef SRV_API_ENUM_
        SRV_API__COUNT
} srv_api_t;

const char *srv_api_name(srv_api_t api);

/* What a handler reads after its begin step. */
typedef enum {
    SRV_BODY_NONE = 0, /* the API takes no body; a response is queued on the first call */
    SRV_BODY_DISCARD,  /* an error is pending: read and drop the rest */
    SRV_BODY_BUFFER,   /* XML bodies: kept in memory up to SRV_MAX_XML_BODY */
    SRV_BODY_WRITER,   /* object bytes: streamed into a store writer */
    SRV_BODY_FORM,     /* multipart/form-data (POST Object): srv_s3_form_feed */
} srv_body_kind_t;

typedef enum { SRV_AT_SERVICE, SRV_AT_BUCKET, SRV_AT_OBJECT } srv_level_t;

struct srv_req;
struct srv_out;
/* A handler step: returns the HTTP status of its answer, which it put in *out (s3ctl/s3ctl.h), or 0
 * when it wants the request body first (begin steps of APIs with a body). */
typedef int (*srv_handler_cb)(struct srv_req *r, struct srv_out *out);

typedef struct srv_op {
    srv_level_t level;
    const char *method;
    const char *q1, *q2;  /* query parameters that must be present (NULL: none) */
    const char *q1_value; /* the value q1 must have, or NULL for any */
    bool copy;            /* matches only with an x-amz-copy-source header */
    srv_api_t api;
    srv_body_kind_t body; /* what begin may ask for by returning 0 */
    bool rdma;            /* an x-amz-rdma-token is allowed */
    srv_handler_cb begin;
    srv_handler_cb finish; /* after the whole body arrived; NULL when body is NONE */
    /* The IAM action srv_authorize checks before begin ("s3:GetObject"); NULL: root only. */
    const char *action;
    /* The decision may need the object's ACL, and the handler loads the object anyway: it
     * calls srv_authz_object before any byte moves (one metadata lookup, not two). */
    bool obj_acl;
} srv_op_t;

/* One decoded query parameter; value is "" when the raw form had no '='. */
typedef struct srv_qparam {
    char *name;
    char *value;
    bool has_value;
} srv_qparam_t;

#define SRV_MAX_QPARAMS 64

typedef struct srv_route {
    srv_api_t api;
    char *bucket; /* malloc'd, NULL for service-level requests */
    char *key;    /* malloc'd, decoded; NULL for bucket-level requests */
    size_t key_len;
    bool vhost; /* bucket came from Host */
    srv_qparam_t q[SRV_MAX_QPARAMS];
    size_t nq;
    const char *unsupported; /* subresource that made it NotImplemented (static or a q name) */
    const char *why;         /* reason for SRV_API_BAD_REQUEST (static) */
    const srv_op_t *op;      /* the matching row of the table; NULL for the others */
} srv_route_t;

/* Routes over the table ops[0..n_ops). method: "GET", ...; raw_path: as received
 * (percent-encoded, starts with '/'); raw_query: after '?' or NULL; host: the Host header or
 * NULL; endpoint_host: the --listen host (may be NULL). has_copy_source: an x-amz-copy-source
 * header is present (PUT object -> CopyObject). Always fills out (api SRV_API_BAD_REQUEST with
 * why on a malformed path or query); release with srv_route_free. */
void srv_route_parse_in(const srv_op_t *ops, size_t n_ops, const char *method, const char *raw_path,
                        const char *raw_query, const char *host, const char *endpoint_host,
                        bool has_copy_source, srv_route_t *out);
void srv_route_free(srv_route_t *r);

/* The decoded value of query parameter name, or NULL when absent. */
const char *srv_route_q(const srv_route_t *r, const char *name);

#endif
