/* SPDX-License-Identifier: Apache-2.0 */
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
 * (front_app_ops_t; the S3 API's is front_ops, s3api/app.c): each row matches a level
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
#define FRONT_API_LIST(X)                                                                          \
    X(FRONT_API_UNKNOWN, "Unknown")                                                                \
    X(FRONT_API_HEALTH, "Health")                                                                  \
    X(FRONT_API_METRICS, "Metrics")                                                                \
    X(FRONT_API_LIST_BUCKETS, "ListBuckets")                                                       \
    X(FRONT_API_CREATE_BUCKET, "CreateBucket")                                                     \
    X(FRONT_API_DELETE_BUCKET, "DeleteBucket")                                                     \
    X(FRONT_API_HEAD_BUCKET, "HeadBucket")                                                         \
    X(FRONT_API_GET_BUCKET_LOCATION, "GetBucketLocation")                                          \
    X(FRONT_API_GET_BUCKET_VERSIONING, "GetBucketVersioning")                                      \
    X(FRONT_API_LIST_OBJECT_VERSIONS, "ListObjectVersions")                                        \
    X(FRONT_API_PUT_BUCKET_VERSIONING, "PutBucketVersioning")                                      \
    X(FRONT_API_GET_OBJECT_TAGGING, "GetObjectTagging")                                            \
    X(FRONT_API_PUT_OBJECT_TAGGING, "PutObjectTagging")                                            \
    X(FRONT_API_DELETE_OBJECT_TAGGING, "DeleteObjectTagging")                                      \
    X(FRONT_API_GET_OBJECT_ATTRIBUTES, "GetObjectAttributes")                                      \
    X(FRONT_API_LIST_OBJECTS, "ListObjects")                                                       \
    X(FRONT_API_LIST_OBJECTS_V2, "ListObjectsV2")                                                  \
    X(FRONT_API_LIST_MULTIPART_UPLOADS, "ListMultipartUploads")                                    \
    X(FRONT_API_DELETE_OBJECTS, "DeleteObjects")                                                   \
    X(FRONT_API_RDMA_BATCH, "RdmaBatch")                                                           \
    X(FRONT_API_PUT_OBJECT, "PutObject")                                                           \
    X(FRONT_API_COPY_OBJECT, "CopyObject")                                                         \
    X(FRONT_API_GET_OBJECT, "GetObject")                                                           \
    X(FRONT_API_HEAD_OBJECT, "HeadObject")                                                         \
    X(FRONT_API_DELETE_OBJECT, "DeleteObject")                                                     \
    X(FRONT_API_CREATE_MPU, "CreateMultipartUpload")                                               \
    X(FRONT_API_UPLOAD_PART, "UploadPart")                                                         \
    X(FRONT_API_UPLOAD_PART_COPY, "UploadPartCopy")                                                \
    X(FRONT_API_COMPLETE_MPU, "CompleteMultipartUpload")                                           \
    X(FRONT_API_ABORT_MPU, "AbortMultipartUpload")                                                 \
    X(FRONT_API_LIST_PARTS, "ListParts")                                                           \
    X(FRONT_API_IAM, "IAM")                                                                        \
    X(FRONT_API_WHARF_CLUSTER, "WharfAdminCluster")                                                \
    X(FRONT_API_WHARF_SCATTER, "WharfScatterGet")                                                  \
    X(FRONT_API_WHARF_GATHER_PART, "WharfGatherUploadPart")                                        \
    X(FRONT_API_CONSOLE, "Console")                                                                \
    X(FRONT_API_GET_BUCKET_ACL, "GetBucketAcl")                                                    \
    X(FRONT_API_PUT_BUCKET_ACL, "PutBucketAcl")                                                    \
    X(FRONT_API_GET_OBJECT_ACL, "GetObjectAcl")                                                    \
    X(FRONT_API_PUT_OBJECT_ACL, "PutObjectAcl")                                                    \
    X(FRONT_API_GET_BUCKET_POLICY, "GetBucketPolicy")                                              \
    X(FRONT_API_PUT_BUCKET_POLICY, "PutBucketPolicy")                                              \
    X(FRONT_API_DELETE_BUCKET_POLICY, "DeleteBucketPolicy")                                        \
    X(FRONT_API_GET_BUCKET_POLICY_STATUS, "GetBucketPolicyStatus")                                 \
    X(FRONT_API_GET_BUCKET_TAGGING, "GetBucketTagging")                                            \
    X(FRONT_API_PUT_BUCKET_TAGGING, "PutBucketTagging")                                            \
    X(FRONT_API_DELETE_BUCKET_TAGGING, "DeleteBucketTagging")                                      \
    X(FRONT_API_GET_BUCKET_CORS, "GetBucketCors")                                                  \
    X(FRONT_API_PUT_BUCKET_CORS, "PutBucketCors")                                                  \
    X(FRONT_API_DELETE_BUCKET_CORS, "DeleteBucketCors")                                            \
    X(FRONT_API_CORS_PREFLIGHT, "CorsPreflight")                                                   \
    X(FRONT_API_GET_BUCKET_ENCRYPTION, "GetBucketEncryption")                                      \
    X(FRONT_API_PUT_BUCKET_ENCRYPTION, "PutBucketEncryption")                                      \
    X(FRONT_API_DELETE_BUCKET_ENCRYPTION, "DeleteBucketEncryption")                                \
    X(FRONT_API_GET_PUBLIC_ACCESS_BLOCK, "GetPublicAccessBlock")                                   \
    X(FRONT_API_PUT_PUBLIC_ACCESS_BLOCK, "PutPublicAccessBlock")                                   \
    X(FRONT_API_DELETE_PUBLIC_ACCESS_BLOCK, "DeletePublicAccessBlock")                             \
    X(FRONT_API_GET_OWNERSHIP_CONTROLS, "GetBucketOwnershipControls")                              \
    X(FRONT_API_PUT_OWNERSHIP_CONTROLS, "PutBucketOwnershipControls")                              \
    X(FRONT_API_DELETE_OWNERSHIP_CONTROLS, "DeleteBucketOwnershipControls")                        \
    X(FRONT_API_GET_BUCKET_LIFECYCLE, "GetBucketLifecycleConfiguration")                           \
    X(FRONT_API_PUT_BUCKET_LIFECYCLE, "PutBucketLifecycleConfiguration")                           \
    X(FRONT_API_DELETE_BUCKET_LIFECYCLE, "DeleteBucketLifecycle")                                  \
    X(FRONT_API_POST_OBJECT, "PostObject")                                                         \
    X(FRONT_API_GET_OBJECT_LOCK_CONFIG, "GetObjectLockConfiguration")                              \
    X(FRONT_API_PUT_OBJECT_LOCK_CONFIG, "PutObjectLockConfiguration")                              \
    X(FRONT_API_GET_OBJECT_RETENTION, "GetObjectRetention")                                        \
    X(FRONT_API_PUT_OBJECT_RETENTION, "PutObjectRetention")                                        \
    X(FRONT_API_GET_OBJECT_LEGAL_HOLD, "GetObjectLegalHold")                                       \
    X(FRONT_API_PUT_OBJECT_LEGAL_HOLD, "PutObjectLegalHold")                                       \
    X(FRONT_API_RENAME_OBJECT, "RenameObject")                                                     \
    X(FRONT_API_NOT_IMPLEMENTED, "NotImplemented")                                                 \
    X(FRONT_API_METHOD_NOT_ALLOWED, "MethodNotAllowed")                                            \
    X(FRONT_API_BAD_REQUEST, "BadRequest")

typedef enum {
#define FRONT_API_ENUM_(e, n) e,
    FRONT_API_LIST(FRONT_API_ENUM_)
#undef FRONT_API_ENUM_
        FRONT_API__COUNT
} front_api_t;

const char *front_api_name(front_api_t api);

/* What a handler reads after its begin step. */
typedef enum {
    FRONT_BODY_NONE = 0, /* the API takes no body; a response is queued on the first call */
    FRONT_BODY_DISCARD,  /* an error is pending: read and drop the rest */
    FRONT_BODY_BUFFER,   /* XML bodies: kept in memory up to FRONT_MAX_XML_BODY */
    FRONT_BODY_WRITER,   /* object bytes: streamed into a store writer */
    FRONT_BODY_FORM,     /* multipart/form-data (POST Object): s3api_form_feed */
} front_body_kind_t;

typedef enum { FRONT_AT_SERVICE, FRONT_AT_BUCKET, FRONT_AT_OBJECT } front_level_t;

struct front_req;
struct s3h_out;
/* A handler step: returns the HTTP status of its answer, which it put in *out (s3ctl/s3ctl.h), or 0
 * when it wants the request body first (begin steps of APIs with a body). */
typedef int (*front_handler_cb)(struct front_req *r, struct s3h_out *out);

typedef struct front_op {
    front_level_t level;
    const char *method;
    const char *q1, *q2;  /* query parameters that must be present (NULL: none) */
    const char *q1_value; /* the value q1 must have, or NULL for any */
    bool copy;            /* matches only with an x-amz-copy-source header */
    front_api_t api;
    front_body_kind_t body; /* what begin may ask for by returning 0 */
    bool rdma;              /* an x-amz-rdma-token is allowed */
    front_handler_cb begin;
    front_handler_cb finish; /* after the whole body arrived; NULL when body is NONE */
    /* The IAM action s3h_authorize checks before begin ("s3:GetObject"); NULL: root only. */
    const char *action;
    /* The decision may need the object's ACL, and the handler loads the object anyway: it
     * calls s3h_authz_object before any byte moves (one metadata lookup, not two). */
    bool obj_acl;
} front_op_t;

/* One decoded query parameter; value is "" when the raw form had no '='. */
typedef struct front_qparam {
    char *name;
    char *value;
    bool has_value;
} front_qparam_t;

#define FRONT_MAX_QPARAMS 64

typedef struct front_route {
    front_api_t api;
    char *bucket; /* malloc'd, NULL for service-level requests */
    char *key;    /* malloc'd, decoded; NULL for bucket-level requests */
    size_t key_len;
    bool vhost; /* bucket came from Host */
    front_qparam_t q[FRONT_MAX_QPARAMS];
    size_t nq;
    const char *unsupported; /* subresource that made it NotImplemented (static or a q name) */
    const char *why;         /* reason for FRONT_API_BAD_REQUEST (static) */
    const front_op_t *op;    /* the matching row of the table; NULL for the others */
} front_route_t;

/* Routes over the table ops[0..n_ops). method: "GET", ...; raw_path: as received
 * (percent-encoded, starts with '/'); raw_query: after '?' or NULL; host: the Host header or
 * NULL; endpoint_host: the --listen host (may be NULL). has_copy_source: an x-amz-copy-source
 * header is present (PUT object -> CopyObject). Always fills out (api FRONT_API_BAD_REQUEST with
 * why on a malformed path or query); release with front_route_free. */
void front_route_parse_in(const front_op_t *ops, size_t n_ops, const char *method,
                          const char *raw_path, const char *raw_query, const char *host,
                          const char *endpoint_host, bool has_copy_source, front_route_t *out);
void front_route_free(front_route_t *r);

/* The decoded value of query parameter name, or NULL when absent. */
const char *front_route_q(const front_route_t *r, const char *name);

#endif
