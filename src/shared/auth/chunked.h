/* SPDX-License-Identifier: Apache-2.0 */
/* aws-chunked request bodies: STREAMING-AWS4-HMAC-SHA256-PAYLOAD(-TRAILER) with chunk signatures
 * verified, and STREAMING-UNSIGNED-PAYLOAD-TRAILER with x-amz-checksum-* trailers.
 * Incremental: feed the raw body in any pieces; decoded payload goes to the sink. */
#ifndef WH_AUTH_CHUNKED_H
#define WH_AUTH_CHUNKED_H

#include "s3/errors.h"
#include "auth/sigv4.h"

#include <stddef.h>

typedef struct auth_chunked auth_chunked_t;

/* Return 0 to go on, non-zero to stop (feed then returns S3_ERR_INTERNAL). */
typedef int (*auth_chunked_sink_cb)(void *arg, const void *data, size_t len);

/* auth: the verified request (mode and signing key); copied. */
auth_chunked_t *auth_chunked_new(const auth_auth_t *auth);
void auth_chunked_free(auth_chunked_t *c);
/* On error writes a reason into msg (e.g. "chunk 3 signature mismatch"). */
s3_err_t auth_chunked_feed(auth_chunked_t *c, const void *data, size_t len,
                           auth_chunked_sink_cb sink, void *arg, char *msg, size_t msglen);
/* Call at the end of the body: checks that the final chunk and trailers were complete. */
s3_err_t auth_chunked_finish(auth_chunked_t *c, char *msg, size_t msglen);
/* A trailer's value by lowercase name (e.g. "x-amz-checksum-crc32c"), or NULL. */
const char *auth_chunked_trailer(const auth_chunked_t *c, const char *lname);
/* Decoded payload bytes so far. */
uint64_t auth_chunked_decoded(const auth_chunked_t *c);

/* --- Additions --- */

#define AUTH_CHUNKED_MAX_CHUNK (16u << 20) /* larger chunks are refused */
#define AUTH_CHUNKED_MAX_LINE 1024         /* chunk header and trailer lines */
#define AUTH_CHUNKED_MAX_TRAILERS 16

/* Notes on auth_chunked_new: it returns NULL when auth->mode is not a streaming mode. Payload
 * bytes reach the sink as they arrive, before their chunk's signature is checked at the end of
 * the chunk, so the caller must not commit anything until auth_chunked_finish returns S3_OK. */

/* Chunk signature (the encoder's side, for clients and tests): hex HMAC over
 * "AWS4-HMAC-SHA256-PAYLOAD\n<amz_date>\n<scope>\n<prev_sig>\n<sha256('')>\n<sha256(data)>". */
void auth_chunk_signature(const uint8_t key[32], const char *amz_date, const char *scope,
                          const char *prev_sig, const void *data, size_t len, char out[65]);
/* Trailer signature over "AWS4-HMAC-SHA256-TRAILER\n<amz_date>\n<scope>\n<prev_sig>\n
 * <sha256(canonical)>", canonical being each trailer as "name:value\n" (lowercase name). */
void auth_trailer_signature(const uint8_t key[32], const char *amz_date, const char *scope,
                            const char *prev_sig, const char *canonical, size_t len, char out[65]);

#endif
