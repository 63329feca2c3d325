/* SPDX-License-Identifier: Apache-2.0 */
/* Digests over OpenSSL libcrypto: MD5 (ETags, Content-MD5), SHA-256 and HMAC-SHA256 (SigV4),
 * HMAC-SHA1 (SigV2). */
#ifndef WH_BASE_DIGEST_H
#define WH_BASE_DIGEST_H

#include <stddef.h>
#include <stdint.h>

#define WH_MD5_LEN 16
#define WH_SHA256_LEN 32
#define WH_SHA1_LEN 20

typedef struct wh_md5 {
    void *_ctx; /* EVP_MD_CTX */
} wh_md5_t;
typedef struct wh_sha256 {
    void *_ctx;
} wh_sha256_t;

int wh_md5_init(wh_md5_t *m);
void wh_md5_update(wh_md5_t *m, const void *p, size_t n);
void wh_md5_final(wh_md5_t *m, uint8_t out[WH_MD5_LEN]); /* also frees */
void wh_md5_free(wh_md5_t *m);                           /* abandon without final; NULL-safe */
void wh_md5(const void *p, size_t n, uint8_t out[WH_MD5_LEN]);

int wh_sha256_init(wh_sha256_t *s);
void wh_sha256_update(wh_sha256_t *s, const void *p, size_t n);
void wh_sha256_final(wh_sha256_t *s, uint8_t out[WH_SHA256_LEN]);
void wh_sha256_free(wh_sha256_t *s);
void wh_sha256(const void *p, size_t n, uint8_t out[WH_SHA256_LEN]);
/* Lowercase hex SHA-256 of p into out[65]. */
void wh_sha256_hex(const void *p, size_t n, char out[65]);

void wh_hmac_sha256(const void *key, size_t klen, const void *msg, size_t mlen,
                    uint8_t out[WH_SHA256_LEN]);
/* HMAC-SHA1: AWS Signature Version 2 only (auth/sigv2.h). */
void wh_hmac_sha1(const void *key, size_t klen, const void *msg, size_t mlen,
                  uint8_t out[WH_SHA1_LEN]);

/* Fills buf with cryptographically random bytes. Returns 0 or -1. */
int wh_random_bytes(void *buf, size_t n);

#endif
