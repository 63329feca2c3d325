/* Request routing: from method, raw path, raw query and Host to one S3 API, a bucket and a key.
 *
 * Addressing (documented in README): virtual-host style is used when the Host (port stripped)
 * is not an IP literal, contains a dot, and is not the endpoint host given to srv_route_parse;
 * the bucket is then the part before ".localhost" when the host ends in ".localhost", else the
 * first label. Every other request is path-style: /bucket/key. (http.c falls back to path-style
 * when such a vhost bucket does not exist and the path is not "/", so path-style clients of a
 * dotted endpoint name keep working.) The key is the percent-decoded
 * rest of the path after "/bucket/" ('+' stays '+'); it is never used as a file path.
 *
 * Pure functions with no I/O, so a fuzzer can drive them. */
#ifndef WH_SERVER_ROUTE_H
#define WH_SERVER_ROUTE_H

#include <stdbool.h>
#include <stddef.h>

/* X(enum, "ApiName") — the names are the metrics label values. */
#define SRV_API_LIST(X)                                                                    \
    X(SRV_API_UNKNOWN, "Unknown")                                                          \
    X(SRV_API_HEALTH, "Health")                                                            \
    X(SRV_API_METRICS, "Metrics")                                                          \
    X(SRV_API_LIST_BUCKETS, "ListBuckets")                                                 \
    X(SRV_API_CREATE_BUCKET, "CreateBucket")                                               \
    X(SRV_API_DELETE_BUCKET, "DeleteBucket")                                               \
    X(SRV_API_HEAD_BUCKET, "HeadBucket")                                                   \
    X(SRV_API_GET_BUCKET_LOCATION, "GetBucketLocation")                                    \
    X(SRV_API_GET_BUCKET_VERSIONING, "GetBucketVersioning")                                \
    X(SRV_API_LIST_OBJECT_VERSIONS, "ListObjectVersions")                                  \
    X(SRV_API_LIST_OBJECTS, "ListObjects")                                                 \
    X(SRV_API_LIST_OBJECTS_V2, "ListObjectsV2")                                            \
    X(SRV_API_LIST_MULTIPART_UPLOADS, "ListMultipartUploads")                              \
    X(SRV_API_DELETE_OBJECTS, "DeleteObjects")                                             \
    X(SRV_API_PUT_OBJECT, "PutObject")                                                     \
    X(SRV_API_COPY_OBJECT, "CopyObject")                                                   \
    X(SRV_API_GET_OBJECT, "GetObject")                                                     \
    X(SRV_API_HEAD_OBJECT, "HeadObject")                                                   \
    X(SRV_API_DELETE_OBJECT, "DeleteObject")                                               \
    X(SRV_API_CREATE_MPU, "CreateMultipartUpload")                                         \
    X(SRV_API_UPLOAD_PART, "UploadPart")                                                   \
    X(SRV_API_UPLOAD_PART_COPY, "UploadPartCopy")                                          \
    X(SRV_API_COMPLETE_MPU, "CompleteMultipartUpload")                                     \
    X(SRV_API_ABORT_MPU, "AbortMultipartUpload")                                           \
    X(SRV_API_LIST_PARTS, "ListParts")                                                     \
    X(SRV_API_NOT_IMPLEMENTED, "NotImplemented")                                           \
    X(SRV_API_METHOD_NOT_ALLOWED, "MethodNotAllowed")                                      \
    X(SRV_API_BAD_REQUEST, "BadRequest")

typedef enum {
#define SRV_API_ENUM_(e, n) e,
    SRV_API_LIST(SRV_API_ENUM_)
#undef SRV_API_ENUM_
        SRV_API__COUNT
} srv_api_t;

const char *srv_api_name(srv_api_t api);

/* One decoded query parameter; value is "" when the raw form had no '='. */
typedef struct srv_qparam {
    char *name;
    char *value;
    bool has_value;
} srv_qparam_t;

#define SRV_MAX_QPARAMS 64

typedef struct srv_route {
    srv_api_t api;
    char *bucket;          /* malloc'd, NULL for service-level requests */
    char *key;             /* malloc'd, decoded; NULL for bucket-level requests */
    size_t key_len;
    bool vhost;            /* bucket came from Host */
    srv_qparam_t q[SRV_MAX_QPARAMS];
    size_t nq;
    const char *unsupported; /* subresource that made it NotImplemented (static or a q name) */
    const char *why;         /* reason for SRV_API_BAD_REQUEST (static) */
} srv_route_t;

/* method: "GET", ...; raw_path: as received (percent-encoded, starts with '/'); raw_query: after
 * '?' or NULL; host: the Host header or NULL; endpoint_host: the --listen host (may be NULL).
 * has_copy_source: an x-amz-copy-source header is present (PUT object -> CopyObject).
 * Always fills out (api SRV_API_BAD_REQUEST with why on a malformed path or query);
 * release with srv_route_free. */
void srv_route_parse(const char *method, const char *raw_path, const char *raw_query,
                     const char *host, const char *endpoint_host, bool has_copy_source,
                     srv_route_t *out);
void srv_route_free(srv_route_t *r);

/* The decoded value of query parameter name, or NULL when absent. */
const char *srv_route_q(const srv_route_t *r, const char *name);

#endif
