/* SPDX-License-Identifier: Apache-2.0 */
/* S3 error codes: one table for the server (XML error replies) and the client (mapping). */
#ifndef WH_S3_ERRORS_H
#define WH_S3_ERRORS_H

#include <stddef.h>

/* X(enum, "Code", http status, "default message") */
#define S3_ERR_LIST(X)                                                                             \
    X(S3_OK, "", 200, "")                                                                          \
    X(S3_ERR_ACCESS_DENIED, "AccessDenied", 403, "Access Denied")                                  \
    X(S3_ERR_BAD_DIGEST, "BadDigest", 400,                                                         \
      "The Content-MD5 or checksum you specified did not match what we received.")                 \
    X(S3_ERR_BUCKET_EXISTS, "BucketAlreadyOwnedByYou", 409,                                        \
      "Your previous request to create the named bucket succeeded and you already own it.")        \
    X(S3_ERR_BUCKET_NOT_EMPTY, "BucketNotEmpty", 409,                                              \
      "The bucket you tried to delete is not empty.")                                              \
    X(S3_ERR_ENTITY_TOO_SMALL, "EntityTooSmall", 400,                                              \
      "Your proposed upload is smaller than the minimum allowed object size.")                     \
    X(S3_ERR_ENTITY_TOO_LARGE, "EntityTooLarge", 400,                                              \
      "Your proposed upload exceeds the maximum allowed object size.")                             \
    X(S3_ERR_INCOMPLETE_BODY, "IncompleteBody", 400,                                               \
      "You did not provide the number of bytes specified by the Content-Length HTTP header.")      \
    X(S3_ERR_INTERNAL, "InternalError", 500,                                                       \
      "We encountered an internal error. Please try again.")                                       \
    X(S3_ERR_INVALID_ACCESS_KEY, "InvalidAccessKeyId", 403,                                        \
      "The AWS access key Id you provided does not exist in our records.")                         \
    X(S3_ERR_INVALID_ARGUMENT, "InvalidArgument", 400, "Invalid Argument")                         \
    X(S3_ERR_INVALID_BUCKET_NAME, "InvalidBucketName", 400, "The specified bucket is not valid.")  \
    X(S3_ERR_INVALID_DIGEST, "InvalidDigest", 400, "The Content-MD5 you specified is not valid.")  \
    X(S3_ERR_INVALID_PART, "InvalidPart", 400,                                                     \
      "One or more of the specified parts could not be found. The part may not have been "         \
      "uploaded, or the specified entity tag may not match the part's entity tag.")                \
    X(S3_ERR_INVALID_PART_ORDER, "InvalidPartOrder", 400,                                          \
      "The list of parts was not in ascending order. Parts must be ordered by part number.")       \
    X(S3_ERR_INVALID_RANGE, "InvalidRange", 416, "The requested range is not satisfiable")         \
    X(S3_ERR_INVALID_REQUEST, "InvalidRequest", 400, "Invalid Request")                            \
    X(S3_ERR_INVALID_WRITE_OFFSET, "InvalidWriteOffset", 400,                                      \
      "The write offset value that you specified does not match the current object size.")         \
    X(S3_ERR_KEY_TOO_LONG, "KeyTooLongError", 400, "Your key is too long.")                        \
    X(S3_ERR_MALFORMED_ACL, "MalformedACLError", 400,                                              \
      "The XML you provided was not well-formed or did not validate against our published "        \
      "schema.")                                                                                   \
    X(S3_ERR_MALFORMED_POLICY, "MalformedPolicy", 400,                                             \
      "Policies must be valid JSON and the first byte must be '{'")                                \
    X(S3_ERR_MALFORMED_XML, "MalformedXML", 400,                                                   \
      "The XML you provided was not well-formed or did not validate against our published "        \
      "schema.")                                                                                   \
    X(S3_ERR_METADATA_TOO_LARGE, "MetadataTooLarge", 400,                                          \
      "Your metadata headers exceed the maximum allowed metadata size.")                           \
    X(S3_ERR_METHOD_NOT_ALLOWED, "MethodNotAllowed", 405,                                          \
      "The specified method is not allowed against this resource.")                                \
    X(S3_ERR_MISSING_CONTENT_LENGTH, "MissingContentLength", 411,                                  \
      "You must provide the Content-Length HTTP header.")                                          \
    X(S3_ERR_MISSING_SECURITY_HEADER, "MissingSecurityHeader", 400,                                \
      "Your request was missing a required header.")                                               \
    X(S3_ERR_NO_SUCH_BUCKET, "NoSuchBucket", 404, "The specified bucket does not exist.")          \
    X(S3_ERR_NO_SUCH_BUCKET_POLICY, "NoSuchBucketPolicy", 404, "The bucket policy does not exist") \
    X(S3_ERR_NO_SUCH_KEY, "NoSuchKey", 404, "The specified key does not exist.")                   \
    X(S3_ERR_NO_SUCH_UPLOAD, "NoSuchUpload", 404,                                                  \
      "The specified multipart upload does not exist.")                                            \
    X(S3_ERR_NOT_IMPLEMENTED, "NotImplemented", 501,                                               \
      "A header you provided implies functionality that is not implemented.")                      \
    X(S3_ERR_NOT_MODIFIED, "NotModified", 304, "Not Modified")                                     \
    X(S3_ERR_PRECONDITION_FAILED, "PreconditionFailed", 412,                                       \
      "At least one of the pre-conditions you specified did not hold.")                            \
    X(S3_ERR_REQUEST_TIME_TOO_SKEWED, "RequestTimeTooSkewed", 403,                                 \
      "The difference between the request time and the server's time is too large.")               \
    X(S3_ERR_SIGNATURE_MISMATCH, "SignatureDoesNotMatch", 403,                                     \
      "The request signature we calculated does not match the signature you provided. Check your " \
      "key and signing method.")                                                                   \
    X(S3_ERR_AUTH_HEADER_MALFORMED, "AuthorizationHeaderMalformed", 400,                           \
      "The authorization header is malformed.")                                                    \
    X(S3_ERR_AUTH_QUERY_MALFORMED, "AuthorizationQueryParametersError", 400,                       \
      "Error parsing the X-Amz-Credential parameter.")                                             \
    X(S3_ERR_EXPIRED_TOKEN, "AccessDenied", 403, "Request has expired")                            \
    X(S3_ERR_CONTENT_SHA256_MISMATCH, "XAmzContentSHA256Mismatch", 400,                            \
      "The provided 'x-amz-content-sha256' header does not match what was computed.")              \
    X(S3_ERR_REQUEST_HEADER_TOO_LARGE, "RequestHeaderSectionTooLarge", 400,                        \
      "Your request header section exceeds the maximum allowed size.")                             \
    X(S3_ERR_SERVICE_UNAVAILABLE, "ServiceUnavailable", 503, "Reduce your request rate.")          \
    X(S3_ERR_INVALID_ENCODING, "InvalidArgument", 400,                                             \
      "Invalid Encoding Method specified in Request")                                              \
    X(S3_ERR_SLOW_DOWN, "SlowDown", 503, "Please reduce your request rate.")                       \
    X(S3_ERR_CONDITIONAL_REQUEST_CONFLICT, "ConditionalRequestConflict", 409,                      \
      "A conflicting operation occurred. If using PutObject you can retry the request. If using "  \
      "multipart upload you should initiate another CreateMultipartUpload request and re-upload "  \
      "each part.")                                                                                \
    X(S3_ERR_NO_SUCH_VERSION, "NoSuchVersion", 404, "The specified version does not exist.")       \
    X(S3_ERR_INVALID_TAG, "InvalidTag", 400, "The tag provided was not a valid tag.")              \
    X(S3_ERR_INVALID_PART_NUMBER, "InvalidPartNumber", 416,                                        \
      "The requested partnumber is not satisfiable")                                               \
    X(S3_ERR_INSUFFICIENT_STORAGE, "InsufficientStorage", 507,                                     \
      "The storage is full: delete objects to free space, then retry.")                            \
    X(S3_ERR_NO_SUCH_TAG_SET, "NoSuchTagSet", 404, "The TagSet does not exist")                    \
    X(S3_ERR_NO_SUCH_CORS, "NoSuchCORSConfiguration", 404,                                         \
      "The CORS configuration does not exist")                                                     \
    X(S3_ERR_NO_SUCH_PAB, "NoSuchPublicAccessBlockConfiguration", 404,                             \
      "The public access block configuration was not found")                                       \
    X(S3_ERR_NO_SUCH_OWNERSHIP, "OwnershipControlsNotFoundError", 404,                             \
      "The bucket ownership controls were not found")                                              \
    X(S3_ERR_ACL_NOT_SUPPORTED, "AccessControlListNotSupported", 400,                              \
      "The bucket does not allow ACLs")                                                            \
    X(S3_ERR_CORS_FORBIDDEN, "AccessForbidden", 403,                                               \
      "CORSResponse: This CORS request is not allowed.")                                           \
    X(S3_ERR_NO_SUCH_LIFECYCLE, "NoSuchLifecycleConfiguration", 404,                               \
      "The lifecycle configuration does not exist")                                                \
    X(S3_ERR_NO_SUCH_ENCRYPTION, "ServerSideEncryptionConfigurationNotFoundError", 404,            \
      "The server side encryption configuration was not found")                                    \
    X(S3_ERR_MALFORMED_POST_REQUEST, "MalformedPOSTRequest", 400,                                  \
      "The body of your POST request is not well-formed multipart/form-data.")                     \
    X(S3_ERR_INVALID_BUCKET_STATE, "InvalidBucketState", 409,                                      \
      "The request is not valid with the current state of the bucket.")                            \
    X(S3_ERR_NO_SUCH_OBJECT_LOCK_CONFIG, "ObjectLockConfigurationNotFoundError", 404,              \
      "Object Lock configuration does not exist for this bucket")                                  \
    X(S3_ERR_NO_SUCH_OBJECT_LOCK, "NoSuchObjectLockConfiguration", 404,                            \
      "The specified object does not have a ObjectLock configuration")                             \
    X(S3_ERR_INVALID_POLICY_DOCUMENT, "InvalidPolicyDocument", 400,                                \
      "The content of the form does not meet the conditions specified in the policy document.")    \
    X(S3_ERR_UNRESOLVABLE_EMAIL, "UnresolvableGrantByEmailAddress", 400,                           \
      "The email address you provided does not match any account on record.")                      \
    X(S3_ERR_INVALID_RETENTION_PERIOD, "InvalidRetentionPeriod", 400,                              \
      "The retention period must be a positive integer.")

typedef enum {
#define S3_ERR_ENUM_(e, c, h, m) e,
    S3_ERR_LIST(S3_ERR_ENUM_)
#undef S3_ERR_ENUM_
        S3_ERR__COUNT
} s3_err_t;

const char *s3_err_code(s3_err_t e);
int s3_err_http_status(s3_err_t e);
const char *s3_err_message(s3_err_t e);
/* The reply for a failed internal status: 507 InsufficientStorage for a full disk, 503
 * ServiceUnavailable for an unreachable backend, SlowDown for memory, else InternalError. */
s3_err_t s3_err_from_status(int wh_status);
/* Writes the message (printf-style) into msg when there is room, and returns e: the one way
 * the S3 parsers say what was wrong, as in `return s3_errf(S3_ERR_MALFORMED_XML, msg, msglen,
 * "rule %zu has no ID", i);` (wh_errf is the same for wh_status_t). */
s3_err_t s3_errf(s3_err_t e, char *msg, size_t msglen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
