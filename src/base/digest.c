#include "base/digest.h"
#include "base/codec.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

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
    return evp_init(&m->_ctx, EVP_md5());
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
    EVP_Digest(p, n, out, &len, EVP_md5(), NULL);
}

int wh_sha256_init(wh_sha256_t *s)
{
    return evp_init(&s->_ctx, EVP_sha256());
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
    EVP_Digest(p, n, out, &len, EVP_sha256(), NULL);
}

void wh_sha256_hex(const void *p, size_t n, char out[65])
{
    uint8_t d[WH_SHA256_LEN];
    wh_sha256(p, n, d);
    wh_hex_encode(d, sizeof d, out);
}

void wh_hmac_sha256(const void *key, size_t klen, const void *msg, size_t mlen,
                    uint8_t out[WH_SHA256_LEN])
{
    unsigned int len = WH_SHA256_LEN;
    HMAC(EVP_sha256(), key, (int)klen, msg, mlen, out, &len);
}

int wh_random_bytes(void *buf, size_t n)
{
    return RAND_bytes(buf, (int)n) == 1 ? 0 : -1;
}
