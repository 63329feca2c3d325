/* SPDX-License-Identifier: Apache-2.0 */
/* AWS Signature Version 2 (HMAC-SHA1): the Authorization header "AWS AKID:signature", the
 * presigned query (AWSAccessKeyId, Expires, Signature) and the POST form (AWSAccessKeyId,
 * policy, signature). Verified beside SigV4 (auth/sigv4.h), with the same request view, the
 * same secret lookup and the same outcome (auth_auth_t with sigv2 set), so that everything
 * after authentication is the same for both.
 *
 * StringToSign = Method \n Content-MD5 \n Content-Type \n Date \n CanonicalizedAmzHeaders
 *                CanonicalizedResource
 * Date is empty when x-amz-date is sent (it is then among the amz headers), and is the
 * Expires value in the presigned form. CanonicalizedResource is "/bucket" (virtual-host
 * requests) + the path as sent + the sub-resources (auth_sigv2_subresource) sorted by name. */
#ifndef WH_AUTH_SIGV2_H
#define WH_AUTH_SIGV2_H

#include "auth/sigv4.h"

/* The base64 HMAC-SHA1 signature is 28 characters. */
#define AUTH_SIGV2_SIG_LEN 28

/* True when the request is signed with SigV2: an Authorization header starting "AWS " or a
 * query with AWSAccessKeyId (or Signature without X-Amz-*). */
int auth_sigv2_present(const auth_http_req_t *req);

/* Parses "AWS AKID:signature". S3_ERR_INVALID_ARGUMENT (with msg) when malformed. */
s3_err_t auth_sigv2_parse_header(const char *h, char access_key[128], char sig[64], char *msg,
                                 size_t msglen);

/* True when name (a query parameter's name) is a sub-resource that V2 signs. extended: also
 * those that AWS's newer APIs added but older signers (botocore) do not sign. */
int auth_sigv2_subresource(const char *name, size_t n, int extended);

/* The string to sign of req. vhost_bucket: the bucket when it came from the Host (NULL or ""
 * for path-style). date_line: what goes on the Date line. uri: the path to sign (as sent).
 * path_query: text signed as "?text" after uri, before the sub-resources (NULL: none).
 * Appends to out; 0, or -1 on a bad %-escape in the query. */
int auth_sigv2_string_to_sign(const auth_http_req_t *req, const char *vhost_bucket, const char *uri,
                              const char *date_line, int extended, const char *path_query,
                              wh_sbuf_t *out);

/* base64(HMAC-SHA1(secret, data)) into out (NUL-terminated). */
void auth_sigv2_sign(const char *secret, const char *data, size_t len,
                     char out[AUTH_SIGV2_SIG_LEN + 1]);

/* Verifies the request's SigV2 (header or presigned form): the Date/x-amz-date skew (at
 * most AUTH_MAX_SKEW_S) or the presigned Expires, then the signature. out receives the
 * outcome (sigv2 = 1; region empty; signed_headers lists the x-amz-* headers, all signed).
 * Errors as S3 answers them: InvalidArgument (malformed header), AccessDenied (no or bad date,
 * expired URL), RequestTimeTooSkewed, InvalidAccessKeyId, SignatureDoesNotMatch. */
s3_err_t auth_sigv2_verify(const auth_http_req_t *req, const char *vhost_bucket,
                           auth_secret_cb secret_cb, void *cb_arg, time_t now, auth_auth_t *out,
                           char *msg, size_t msglen);

/* A POST form signed with V2: signature = base64(HMAC-SHA1(secret, policy_b64)). */
s3_err_t auth_sigv2_post_verify(const char *access_key, const char *signature,
                                const char *policy_b64, auth_secret_cb secret_cb, void *cb_arg,
                                char access_key_out[128], char *msg, size_t msglen);

#endif
