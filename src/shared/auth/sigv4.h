/* SPDX-License-Identifier: Apache-2.0 */
/* AWS Signature Version 4: one implementation for the server (verify) and the client (sign).
 * Covers the Authorization header, presigned URLs (X-Amz-* query) and the seed signature
 * of aws-chunked streaming uploads (see auth/chunked.h for the chunk signatures). */
#ifndef WH_AUTH_SIGV4_H
#define WH_AUTH_SIGV4_H

#include "base/util.h"
#include "s3/errors.h"
#include "s3/uri.h"

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define AUTH_UNSIGNED_PAYLOAD "UNSIGNED-PAYLOAD"
#define AUTH_STREAMING_SIGNED "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
#define AUTH_STREAMING_SIGNED_TRAILER "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"
#define AUTH_STREAMING_UNSIGNED_TRAILER "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
#define AUTH_EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define AUTH_MAX_SKEW_S (15 * 60)

/* What the verifier needs from a request. Header lookup is by lowercase name; it returns NULL
 * when absent. A header that appears several times must be returned comma-joined.
 * header_at enumerates the request's headers (each name once, any case): the i-th name, its
 * value in *value, NULL past the last. It is required: verification walks the headers to
 * refuse x-amz-* headers that the signature does not cover. */
typedef struct auth_http_req {
    const char *method;
    const char *path;  /* as received on the wire: percent-encoded, no query */
    const char *query; /* raw query string after '?', or NULL */
    const char *(*get_header)(void *arg, const char *lname);
    const char *(*header_at)(void *arg, size_t i, const char **value);
    void *arg;
    const char *service; /* the credential scope's service: NULL is "s3"; "iam" */
    /* Hex SHA-256 of the body the caller already read, signed as the payload when the request
     * has no x-amz-content-sha256 (the IAM API's clients send none). NULL: none. */
    const char *payload_hash;
} auth_http_req_t;

typedef enum {
    AUTH_PAYLOAD_SHA256 = 0,       /* hex hash of the body, checked by the caller */
    AUTH_PAYLOAD_UNSIGNED,         /* UNSIGNED-PAYLOAD */
    AUTH_PAYLOAD_STREAMING_SIGNED, /* aws-chunked with chunk signatures (optionally trailer) */
    AUTH_PAYLOAD_STREAMING_UNSIGNED_TRAILER,
    AUTH_PAYLOAD_EMPTY, /* no x-amz-content-sha256 (presigned) = UNSIGNED */
} auth_payload_mode_t;

/* The outcome of a successful verification; what later stages need. */
typedef struct auth_auth {
    char access_key[128];
    char region[64];
    char amz_date[17];         /* 20130524T000000Z */
    char scope[160];           /* 20130524/us-east-1/s3/aws4_request */
    char signature[65];        /* the request's (seed) signature */
    char signed_headers[1024]; /* ";"-separated, lowercase */
    char payload_hash[65];     /* when mode is AUTH_PAYLOAD_SHA256 */
    uint8_t signing_key[32];   /* kSigning, for chunk signatures */
    auth_payload_mode_t mode;
    int presigned;
    int has_trailer; /* x-amz-trailer present */
    time_t req_time;
    int signed_trailer; /* STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER: the trailer is signed */
    int sigv2;          /* Signature Version 2 (auth/sigv2.h): no region, no signing key */
} auth_auth_t;

/* Returns the secret for access_key, or NULL when unknown. */
typedef const char *(*auth_secret_cb)(void *arg, const char *access_key);

/* Verifies the request's SigV4 (header or presigned form). On failure returns the S3 error and
 * writes a specific reason into msg (e.g. "x-amz-rdma-token is not in SignedHeaders").
 * Anonymous requests (no auth at all) give S3_ERR_ACCESS_DENIED. Every x-amz-* header must be
 * signed, as S3 requires (an unsigned x-amz-copy-source would turn a presigned PUT into a
 * copy of any object): otherwise S3_ERR_ACCESS_DENIED naming the unsigned headers. Exempt are
 * only headers whose value the signature binds anyway: x-amz-content-sha256 (the canonical
 * request's payload line) and, in the header form, x-amz-date (the string to sign). */
s3_err_t auth_sigv4_verify(const auth_http_req_t *req, auth_secret_cb secret_cb, void *cb_arg,
                           time_t now, auth_auth_t *out, char *msg, size_t msglen);

/* True if the lowercase header name is among the request's signed headers. */
int auth_auth_header_signed(const auth_auth_t *a, const char *lname);

/* Client side. headers: n name/value pairs (any case); they are all signed. They must include
 * host, x-amz-date and x-amz-content-sha256 (payload_hash is what the latter says).
 * canonical_uri must already be URI-encoded (s3_uri_encode with encode_slash=0).
 * query: the raw query string (may be NULL); it is canonicalised (sorted) here.
 * Writes the Authorization header value into out. Returns 0, or -1 if it does not fit. */
typedef struct auth_sign_input {
    const char *method;
    const char *canonical_uri;
    const char *query;
    const char *const *header_names;
    const char *const *header_values;
    size_t n_headers;
    const char *payload_hash;
    const char *access_key;
    const char *secret_key;
    const char *region;
    time_t when;
} auth_sign_input_t;

int auth_sigv4_sign(const auth_sign_input_t *in, char *out, size_t outlen);

/* Presigned URL query string (without '?'), for method/uri with expires seconds; host is the
 * only signed header. Appends to out. */
int auth_sigv4_presign(const char *method, const char *canonical_uri, const char *host,
                       const char *access_key, const char *secret_key, const char *region,
                       time_t when, unsigned expires, wh_sbuf_t *out);

/* Derives kSigning = HMAC chain over date(YYYYMMDD), region, "s3", "aws4_request". */
void auth_sigv4_signing_key(const char *secret, const char *date8, const char *region,
                            uint8_t out[32]);

/* --- Additions (same algorithm, more knobs) --- */

/* auth_sigv4_sign for any service name (AWS's generic test suite signs for "service").
 * canonical_request, when not NULL, receives the canonical request (for tests and debugging). */
int auth_sigv4_sign_service(const auth_sign_input_t *in, const char *service,
                            wh_sbuf_t *canonical_request, char *out, size_t outlen);
void auth_sigv4_signing_key_service(const char *secret, const char *date8, const char *region,
                                    const char *service, uint8_t out[32]);

/* Canonical query string of a raw query (NULL or "" gives ""): each name and value is
 * percent-decoded ('+' read as a space, as form encoding and S3 do), re-encoded with
 * s3_uri_encode(encode_slash=1), and the pairs sorted by encoded name, then value.
 * A parameter whose decoded name equals skip_name exactly is left out (NULL: none).
 * Appends to out. Returns 0, or -1 on a bad %-escape or more than 1000 parameters. */
int auth_sigv4_canonical_query(const char *query, const char *skip_name, wh_sbuf_t *out);

/* The first query parameter named name (exact, case-sensitive), decoded like above, appended
 * to out. Returns 1 when found, 0 when absent, -1 on a bad %-escape in its value. */
int auth_query_param(const char *query, const char *name, wh_sbuf_t *out);

/* A browser POST form's SigV4 fields (each NULL when the form lacks it). */
typedef struct auth_post_auth {
    const char *algorithm;  /* x-amz-algorithm: AWS4-HMAC-SHA256 */
    const char *credential; /* x-amz-credential: AKID/YYYYMMDD/region/s3/aws4_request */
    const char *amz_date;   /* x-amz-date */
    const char *signature;  /* x-amz-signature: hex HMAC of policy_b64 with the signing key */
    const char *policy_b64; /* the policy field, as sent */
} auth_post_auth_t;

/* Verifies a POST form's signature (sigv4_post.c); the policy's expiration and conditions are
 * the caller's (auth/post_policy.h). access_key receives the signer's key. S3_OK, or the error
 * (InvalidArgument for a malformed field, InvalidAccessKeyId, SignatureDoesNotMatch) with msg. */
s3_err_t auth_sigv4_post_verify(const auth_post_auth_t *in, auth_secret_cb secret_cb, void *cb_arg,
                                char access_key[128], char *msg, size_t msglen);
/* The signature of a POST policy (clients and tests): hex into out. */
void auth_sigv4_post_sign(const char *secret, const char *date8, const char *region,
                          const char *policy_b64, char out[65]);

#endif
