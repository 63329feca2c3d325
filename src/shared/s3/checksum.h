/* SPDX-License-Identifier: Apache-2.0 */
/* S3 checksums: which algorithms a request names, the values it claims, the digests over the
 * body, and the comparison. One implementation for every caller of the S3 wire format.
 *
 * A request names an algorithm by sending its header (x-amz-checksum-<alg>) or by listing that
 * header in x-amz-trailer (the aws-chunked trailer then carries the value). Content-MD5 is read
 * here too, as it follows the same claim-then-verify pattern. */
#ifndef WH_S3_CHECKSUM_H
#define WH_S3_CHECKSUM_H

#include "base/digest.h"
#include "s3/errors.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* X(enum, "header", raw length, "name in messages") */
#define S3_SUM_LIST(X)                                                                             \
    X(S3_SUM_CRC32, "x-amz-checksum-crc32", 4, "CRC32")                                            \
    X(S3_SUM_CRC32C, "x-amz-checksum-crc32c", 4, "CRC32C")                                         \
    X(S3_SUM_CRC64NVME, "x-amz-checksum-crc64nvme", 8, "CRC64NVME")                                \
    X(S3_SUM_SHA1, "x-amz-checksum-sha1", 20, "SHA1")                                              \
    X(S3_SUM_SHA256, "x-amz-checksum-sha256", 32, "SHA256")

typedef enum {
#define S3_SUM_ENUM_(e, h, l, n) e,
    S3_SUM_LIST(S3_SUM_ENUM_)
#undef S3_SUM_ENUM_
        S3_SUM__COUNT
} s3_sum_t;

#define S3_SUM_MAX_LEN 32
#define S3_SUM_B64_LEN 48 /* base64 of S3_SUM_MAX_LEN bytes, NUL included */

const char *s3_sum_header(s3_sum_t a); /* "x-amz-checksum-crc32c" */
const char *s3_sum_name(s3_sum_t a);   /* "CRC32C" */
size_t s3_sum_len(s3_sum_t a);         /* raw digest bytes */

/* A header (or trailer) value by lowercase name, or NULL. */
typedef const char *(*s3_lookup_cb)(void *arg, const char *lname);

/* True when lname (a lowercase header name) appears in the comma list of x-amz-trailer. */
bool s3_trailer_lists(const char *trailer_hdr, const char *lname);
/* The negotiation: the request names algorithm a, in its header or in x-amz-trailer. */
bool s3_sum_named(s3_lookup_cb hdr, void *arg, s3_sum_t a);

/* Every header x-amz-trailer declares must have arrived (have() finds it): an unsigned payload
 * is only as safe as its checksum. S3_ERR_INCOMPLETE_BODY naming the first missing one. */
s3_err_t s3_trailers_check(const char *trailer_hdr, s3_lookup_cb have, void *arg, char *msg,
                           size_t msglen);

/* What the client claims. Values are raw (big-endian for the CRCs) plus the canonical base64. */
typedef struct s3_sums {
    bool md5_set;
    uint8_t md5[WH_MD5_LEN];
    bool set[S3_SUM__COUNT];
    uint8_t val[S3_SUM__COUNT][S3_SUM_MAX_LEN];
    char b64[S3_SUM__COUNT][S3_SUM_B64_LEN];
} s3_sums_t;

/* Reads Content-MD5 from hdr and each x-amz-checksum-* from trailer first (NULL: no trailer)
 * and then hdr. A malformed value is S3_ERR_INVALID_DIGEST (Content-MD5) or
 * S3_ERR_INVALID_REQUEST, with msg naming the header and the length it must have. */
s3_err_t s3_sums_read(s3_lookup_cb hdr, s3_lookup_cb trailer, void *arg, s3_sums_t *out, char *msg,
                      size_t msglen);

/* Compares a claimed value with what was computed (raw bytes, s3_sum_len(a) of them). S3_OK
 * when nothing was claimed or it matches; S3_ERR_BAD_DIGEST with both values otherwise. */
s3_err_t s3_sums_compare(const s3_sums_t *want, s3_sum_t a, const uint8_t *got, char *msg,
                         size_t msglen);
s3_err_t s3_sums_compare_md5(const s3_sums_t *want, const uint8_t got[WH_MD5_LEN], char *msg,
                             size_t msglen);

/* Raw big-endian forms of the CRC values, as the wire carries them. */
void s3_sum_u32(uint32_t v, uint8_t out[4]);
void s3_sum_u64(uint64_t v, uint8_t out[8]);

/* Running digests over a body for the algorithms a caller switches on. */
typedef struct s3_sum_ctx {
    bool on[S3_SUM__COUNT];
    uint32_t crc32, crc32c;
    uint64_t crc64;
    void *_sha1; /* EVP_MD_CTX */
    wh_sha256_t _sha256;
} s3_sum_ctx_t;

/* Starts the digests named in on[]; returns 0, or -1 (nothing left to free). */
int s3_sum_ctx_init(s3_sum_ctx_t *c, const bool on[S3_SUM__COUNT]);
void s3_sum_ctx_update(s3_sum_ctx_t *c, const void *p, size_t n);
/* Finishes into out (zeros for those off) and releases the context. */
void s3_sum_ctx_final(s3_sum_ctx_t *c, uint8_t out[S3_SUM__COUNT][S3_SUM_MAX_LEN]);
void s3_sum_ctx_free(s3_sum_ctx_t *c); /* abandon; safe on a zeroed or finished context */

#endif
