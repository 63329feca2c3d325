/* SPDX-License-Identifier: Apache-2.0 */
/* Internal to the SigV4 files (sigv4_canon.c, sigv4_parse.c, sigv4_sign.c, sigv4.c): the
 * canonicalisation pieces shared by signing and verification, and the parsers of the
 * Authorization header and the presign query parameters. Not for use outside src/shared/s3. */
#ifndef WH_AUTH_SIGV4_INT_H
#define WH_AUTH_SIGV4_INT_H

#include "auth/sigv4.h"

#define SIGV4_ALGO "AWS4-HMAC-SHA256"
#define SIGV4_TERM "aws4_request"
#define SIGV4_MAX_QUERY_PARAMS 1000
#define SIGV4_MAX_SIGNED_HEADERS 64
#define SIGV4_MAX_PRESIGN_EXPIRES (7 * 24 * 3600)

/* ---- sigv4_canon.c ---- */

/* signature = hex(HMAC(kSigning, "AWS4-HMAC-SHA256\n<date>\n<scope>\n<hex(sha256(creq))>")) */
void sigv4_signature(const uint8_t key[32], const char *amz_date, const char *scope,
                     const char *creq, size_t creq_len, char sig[65]);
/* Appends a header value trimmed, with runs of spaces and tabs collapsed to one space. */
void sigv4_canon_value(wh_sbuf_t *b, const char *v);
/* Constant-time comparison of n bytes. */
int sigv4_ct_equal(const char *a, const char *b, size_t n);
/* Canonical URI of a received path (segments decoded and re-encoded); -1 on a bad escape. */
int sigv4_canon_path(const char *path, wh_sbuf_t *out);

/* ---- sigv4_parse.c ---- */

/* The parsed credential and signature, from either the header or the query form. */
typedef struct sigv4_parsed {
    char access_key[128];
    char date8[9];
    char region[64];
    char signed_headers[1024];
    char signature[65];
    const char *service; /* the credential scope's service to accept ("s3", "iam") */
} sigv4_parsed_t;

int sigv4_all_digits(const char *s, size_t n);
int sigv4_amz_date_valid(const char *s, size_t n);
/* "AKID/20130524/us-east-1/s3/aws4_request"; bad is the error code for a malformed value. */
s3_err_t sigv4_parse_credential(const char *cred, size_t n, sigv4_parsed_t *p, s3_err_t bad,
                                char *msg, size_t msglen);
/* Lowercase header names separated by ';', no duplicates, host among them. */
s3_err_t sigv4_parse_signed_headers(const char *s, size_t n, sigv4_parsed_t *p, s3_err_t bad,
                                    char *msg, size_t msglen);
s3_err_t sigv4_parse_signature(const char *s, size_t n, sigv4_parsed_t *p, s3_err_t bad, char *msg,
                               size_t msglen);
/* "AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., Signature=..." */
s3_err_t sigv4_parse_auth_header(const char *h, sigv4_parsed_t *p, char *msg, size_t msglen);
/* x-amz-content-sha256: a hex hash, UNSIGNED-PAYLOAD or one of the streaming modes. */
s3_err_t sigv4_classify_payload(const char *v, auth_auth_t *a, char *msg, size_t msglen);
int sigv4_has_param(const char *query, const char *name);
/* Reads a required presign parameter into out (NUL-terminated, at most outlen-1 bytes). */
s3_err_t sigv4_presign_param(const char *query, const char *name, char *out, size_t outlen,
                             char *msg, size_t msglen);

#endif
