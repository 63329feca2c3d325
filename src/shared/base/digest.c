/* SPDX-License-Identifier: Apache-2.0 */
#include "base/digest.h"
#include "base/codec.h"

#include <openssl/evp.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <string.h>

/* The digests are fetched from the default provider once. EVP_sha256() and friends make
 * OpenSSL 3 fetch the implementation again on every EVP_DigestInit (a locked lookup), and the
 * one-shot HMAC() also fetches and sets up an EVP_MAC per call: together they took most of
 * the time of a SigV4 verification (several HMACs each). */
static pthread_once_t g_md_once = PTHREAD_ONCE_INIT;
static EVP_MD *g_sha256, *g_md5, *g_sha1;

static void md_fetch(void)
{
    g_sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
    g_md5 = EVP_MD_fetch(NULL, "MD5", NULL);
    g_sha1 = EVP_MD_fetch(NULL, "SHA1", NULL);
}

static const EVP_MD *md_sha1(void)
{
    pthread_once(&g_md_once, md_fetch);
    return g_sha1 ? g_sha1 : EVP_sha1();
}

static const EVP_MD *md_sha256(void)
{
    pthread_once(&g_md_once, md_fetch);
    return g_sha256 ? g_sha256 : EVP_sha256();
}

static const EVP_MD *md_md5(void)
{
    pthread_once(&g_md_once, md_fetch);
    return g_md5 ? g_md5 : EVP_md5();
}

static int evp_init(void **ctx, const EVP_MD *md)
{
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    if (!c)
        return -1;
    if (EVP_DigestInit_ex(c, md, NULL) != 1) {
        EVP_MD_CTX_free(c);
        return -1;
    }
    *ctx = c;
    return 0;
}

int wh_md5_init(wh_md5_t *m)
{
    return evp_init(&m->_ctx, md_md5());
}

void wh_md5_update(wh_md5_t *m, const void *p, size_t n)
{
    EVP_DigestUpdate(m->_ctx, p, n);
}

void wh_md5_final(wh_md5_t *m, uint8_t out[WH_MD5_LEN])
{
    unsigned int len = WH_MD5_LEN;
    EVP_DigestFinal_ex(m->_ctx, out, &len);
    EVP_MD_CTX_free(m->_ctx);
    m->_ctx = NULL;
}

void wh_md5_free(wh_md5_t *m)
{
    if (m && m->_ctx) {
        EVP_MD_CTX_free(m->_ctx);
        m->_ctx = NULL;
    }
}

void wh_md5(const void *p, size_t n, uint8_t out[WH_MD5_LEN])
{
    unsigned int len = WH_MD5_LEN;
    EVP_Digest(p, n, out, &len, md_md5(), NULL);
}

int wh_sha256_init(wh_sha256_t *s)
{
    return evp_init(&s->_ctx, md_sha256());
}

void wh_sha256_update(wh_sha256_t *s, const void *p, size_t n)
{
    EVP_DigestUpdate(s->_ctx, p, n);
}

void wh_sha256_final(wh_sha256_t *s, uint8_t out[WH_SHA256_LEN])
{
    unsigned int len = WH_SHA256_LEN;
    EVP_DigestFinal_ex(s->_ctx, out, &len);
    EVP_MD_CTX_free(s->_ctx);
    s->_ctx = NULL;
}

void wh_sha256_free(wh_sha256_t *s)
{
    if (s && s->_ctx) {
        EVP_MD_CTX_free(s->_ctx);
        s->_ctx = NULL;
    }
}

void wh_sha256(const void *p, size_t n, uint8_t out[WH_SHA256_LEN])
{
    unsigned int len = WH_SHA256_LEN;
    EVP_Digest(p, n, out, &len, md_sha256(), NULL);
}

void wh_sha256_hex(const void *p, size_t n, char out[65])
{
    uint8_t d[WH_SHA256_LEN];
    wh_sha256(p, n, d);
    wh_hex_encode(d, sizeof d, out);
}

/* HMAC (RFC 2104) over one digest context: H((K ^ opad) || H((K ^ ipad) || msg)). out may
 * be key (SigV4 derives its key in place). dlen: the digest's length (at most 32). */
static void hmac_md(const EVP_MD *md, size_t dlen, const void *key, size_t klen, const void *msg,
                    size_t mlen, uint8_t *out)
{
    enum { BLOCK = 64 };
    uint8_t k[BLOCK] = {0}, pad[BLOCK] = {0}, inner[WH_SHA256_LEN]; /* fail: reads pad */
    unsigned int len = (unsigned)dlen;
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    if (!c)
        goto fail;
    if (klen > BLOCK) {
        if (EVP_DigestInit_ex2(c, md, NULL) != 1 || EVP_DigestUpdate(c, key, klen) != 1 ||
            EVP_DigestFinal_ex(c, k, &len) != 1)
            goto fail;
    } else if (klen) {
        memcpy(k, key, klen);
    }
    for (size_t i = 0; i < BLOCK; i++)
        pad[i] = k[i] ^ 0x36;
    if (EVP_DigestInit_ex2(c, md, NULL) != 1 || EVP_DigestUpdate(c, pad, BLOCK) != 1 ||
        EVP_DigestUpdate(c, msg, mlen) != 1 || EVP_DigestFinal_ex(c, inner, &len) != 1)
        goto fail;
    for (size_t i = 0; i < BLOCK; i++)
        pad[i] = k[i] ^ 0x5c;
    if (EVP_DigestInit_ex2(c, md, NULL) != 1 || EVP_DigestUpdate(c, pad, BLOCK) != 1 ||
        EVP_DigestUpdate(c, inner, dlen) != 1 || EVP_DigestFinal_ex(c, out, &len) != 1)
        goto fail;
    EVP_MD_CTX_free(c);
    return;
fail:
    /* Only when OpenSSL cannot allocate: a random MAC, so that no signature a client could
     * send (all zeros, say) matches it. */
    if (wh_random_bytes(out, dlen) != 0)
        for (size_t i = 0; i < dlen; i++)
            out[i] = (uint8_t)(k[i] ^ pad[i] ^ 0xa5);
    EVP_MD_CTX_free(c);
}

void wh_hmac_sha256(const void *key, size_t klen, const void *msg, size_t mlen,
                    uint8_t out[WH_SHA256_LEN])
{
    hmac_md(md_sha256(), WH_SHA256_LEN, key, klen, msg, mlen, out);
}

void wh_hmac_sha1(const void *key, size_t klen, const void *msg, size_t mlen,
                  uint8_t out[WH_SHA1_LEN])
{
    hmac_md(md_sha1(), WH_SHA1_LEN, key, klen, msg, mlen, out);
}

int wh_random_bytes(void *buf, size_t n)
{
    return RAND_bytes(buf, (int)n) == 1 ? 0 : -1;
}
