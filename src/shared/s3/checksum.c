/* SPDX-License-Identifier: Apache-2.0 */
/* S3 checksums: negotiation (header or x-amz-trailer), claimed values, running digests. */
#include "s3/checksum.h"
#include "base/codec.h"
#include "base/crc.h"

#include <isa-l/crc.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static const struct {
    const char *hdr;
    size_t len;
    const char *name;
} g_sums[S3_SUM__COUNT] = {
#define S3_SUM_ROW_(e, h, l, n) [e] = {h, l, n},
    S3_SUM_LIST(S3_SUM_ROW_)
#undef S3_SUM_ROW_
};

const char *s3_sum_header(s3_sum_t a)
{
    return (unsigned)a < S3_SUM__COUNT ? g_sums[a].hdr : "";
}

const char *s3_sum_name(s3_sum_t a)
{
    return (unsigned)a < S3_SUM__COUNT ? g_sums[a].name : "";
}

size_t s3_sum_len(s3_sum_t a)
{
    return (unsigned)a < S3_SUM__COUNT ? g_sums[a].len : 0;
}

/* Calls fn on each trimmed, non-empty item of a comma list; stops when fn returns false. */
typedef bool (*list_item_cb)(void *arg, const char *p, size_t n);

static bool list_each(const char *list, list_item_cb fn, void *arg)
{
    for (const char *p = list; p && *p;) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        const char *e = p;
        while (*e && *e != ',')
            e++;
        const char *z = e;
        while (z > p && (z[-1] == ' ' || z[-1] == '\t'))
            z--;
        if (z > p && !fn(arg, p, (size_t)(z - p)))
            return false;
        p = e;
    }
    return true;
}

typedef struct find_arg {
    const char *name;
    size_t n;
} find_arg_t;

static bool find_item(void *arg, const char *p, size_t n)
{
    const find_arg_t *f = arg;
    return !(n == f->n && strncasecmp(p, f->name, n) == 0); /* false (stop) when found */
}

bool s3_trailer_lists(const char *trailer_hdr, const char *lname)
{
    find_arg_t f = {lname, strlen(lname)};
    return trailer_hdr && !list_each(trailer_hdr, find_item, &f);
}

bool s3_sum_named(s3_lookup_cb hdr, void *arg, s3_sum_t a)
{
    if ((unsigned)a >= S3_SUM__COUNT)
        return false;
    return hdr(arg, g_sums[a].hdr) || s3_trailer_lists(hdr(arg, "x-amz-trailer"), g_sums[a].hdr);
}

typedef struct have_arg {
    s3_lookup_cb have;
    void *arg;
    char missing[64];
} have_arg_t;

static bool have_item(void *arg, const char *p, size_t n)
{
    have_arg_t *h = arg;
    char name[64];
    if (n > sizeof name - 1)
        n = sizeof name - 1;
    for (size_t i = 0; i < n; i++)
        name[i] = (char)((p[i] >= 'A' && p[i] <= 'Z') ? p[i] - 'A' + 'a' : p[i]);
    name[n] = '\0';
    if (h->have(h->arg, name))
        return true;
    memcpy(h->missing, name, n + 1);
    return false;
}

s3_err_t s3_trailers_check(const char *trailer_hdr, s3_lookup_cb have, void *arg, char *msg,
                           size_t msglen)
{
    have_arg_t h = {.have = have, .arg = arg};
    if (!trailer_hdr || list_each(trailer_hdr, have_item, &h))
        return S3_OK;
    snprintf(msg, msglen, "x-amz-trailer declares %s but the body ended without it", h.missing);
    return S3_ERR_INCOMPLETE_BODY;
}

s3_err_t s3_sums_read(s3_lookup_cb hdr, s3_lookup_cb trailer, void *arg, s3_sums_t *out, char *msg,
                      size_t msglen)
{
    memset(out, 0, sizeof *out);
    const char *md5 = hdr(arg, "content-md5");
    if (md5) {
        uint8_t d[WH_MD5_LEN + 4];
        if (wh_base64_decode(md5, strlen(md5), d, sizeof d) != WH_MD5_LEN) {
            snprintf(msg, msglen, "Content-MD5 must be the base64 of 16 bytes");
            return S3_ERR_INVALID_DIGEST;
        }
        memcpy(out->md5, d, WH_MD5_LEN);
        out->md5_set = true;
    }
    for (int i = 0; i < S3_SUM__COUNT; i++) {
        const char *v = trailer ? trailer(arg, g_sums[i].hdr) : NULL;
        if (!v)
            v = hdr(arg, g_sums[i].hdr);
        if (!v)
            continue;
        uint8_t d[S3_SUM_MAX_LEN + 8];
        if (wh_base64_decode(v, strlen(v), d, sizeof d) != (long)g_sums[i].len) {
            snprintf(msg, msglen, "Value for %s is invalid: base64 of %zu bytes", g_sums[i].hdr,
                     g_sums[i].len);
            return S3_ERR_INVALID_REQUEST;
        }
        out->set[i] = true;
        memcpy(out->val[i], d, g_sums[i].len);
        wh_base64_encode(d, g_sums[i].len, out->b64[i]);
    }
    return S3_OK;
}

s3_err_t s3_sums_compare(const s3_sums_t *want, s3_sum_t a, const uint8_t *got, char *msg,
                         size_t msglen)
{
    if ((unsigned)a >= S3_SUM__COUNT || !want->set[a] ||
        memcmp(want->val[a], got, g_sums[a].len) == 0)
        return S3_OK;
    char gs[S3_SUM_B64_LEN];
    wh_base64_encode(got, g_sums[a].len, gs);
    snprintf(msg, msglen, "The %s you specified (%s) did not match the calculated checksum (%s).",
             g_sums[a].name, want->b64[a], gs);
    return S3_ERR_BAD_DIGEST;
}

s3_err_t s3_sums_compare_md5(const s3_sums_t *want, const uint8_t got[WH_MD5_LEN], char *msg,
                             size_t msglen)
{
    if (!want->md5_set || memcmp(want->md5, got, WH_MD5_LEN) == 0)
        return S3_OK;
    char w[33], g[33];
    wh_hex_encode(want->md5, WH_MD5_LEN, w);
    wh_hex_encode(got, WH_MD5_LEN, g);
    snprintf(msg, msglen, "Content-MD5 is %s (hex) but the body's MD5 is %s", w, g);
    return S3_ERR_BAD_DIGEST;
}

void s3_sum_u32(uint32_t v, uint8_t out[4])
{
    for (int i = 0; i < 4; i++)
        out[i] = (uint8_t)(v >> (24 - 8 * i));
}

void s3_sum_u64(uint64_t v, uint8_t out[8])
{
    for (int i = 0; i < 8; i++)
        out[i] = (uint8_t)(v >> (56 - 8 * i));
}

int s3_sum_ctx_init(s3_sum_ctx_t *c, const bool on[S3_SUM__COUNT])
{
    memset(c, 0, sizeof *c);
    memcpy(c->on, on, sizeof c->on);
    if (c->on[S3_SUM_SHA1]) {
        c->_sha1 = EVP_MD_CTX_new();
        if (!c->_sha1 || EVP_DigestInit_ex(c->_sha1, EVP_sha1(), NULL) != 1)
            goto err;
    }
    if (c->on[S3_SUM_SHA256] && wh_sha256_init(&c->_sha256) != 0) {
        c->on[S3_SUM_SHA256] = false;
        goto err;
    }
    return 0;
err:
    s3_sum_ctx_free(c);
    return -1;
}

void s3_sum_ctx_update(s3_sum_ctx_t *c, const void *p, size_t n)
{
    if (c->on[S3_SUM_CRC32])
        c->crc32 = crc32_gzip_refl(c->crc32, p, n);
    if (c->on[S3_SUM_CRC32C])
        c->crc32c = wh_crc32c(c->crc32c, p, n);
    if (c->on[S3_SUM_CRC64NVME])
        c->crc64 = wh_crc64nvme(c->crc64, p, n);
    if (c->_sha1)
        EVP_DigestUpdate(c->_sha1, p, n);
    if (c->on[S3_SUM_SHA256])
        wh_sha256_update(&c->_sha256, p, n);
}

void s3_sum_ctx_final(s3_sum_ctx_t *c, uint8_t out[S3_SUM__COUNT][S3_SUM_MAX_LEN])
{
    memset(out, 0, S3_SUM__COUNT * S3_SUM_MAX_LEN);
    if (c->on[S3_SUM_CRC32])
        s3_sum_u32(c->crc32, out[S3_SUM_CRC32]);
    if (c->on[S3_SUM_CRC32C])
        s3_sum_u32(c->crc32c, out[S3_SUM_CRC32C]);
    if (c->on[S3_SUM_CRC64NVME])
        s3_sum_u64(c->crc64, out[S3_SUM_CRC64NVME]);
    if (c->_sha1) {
        unsigned len = 0;
        EVP_DigestFinal_ex(c->_sha1, out[S3_SUM_SHA1], &len);
    }
    if (c->on[S3_SUM_SHA256]) {
        wh_sha256_final(&c->_sha256, out[S3_SUM_SHA256]);
        c->on[S3_SUM_SHA256] = false; /* final released it */
    }
    s3_sum_ctx_free(c);
}

void s3_sum_ctx_free(s3_sum_ctx_t *c)
{
    if (c->_sha1) {
        EVP_MD_CTX_free(c->_sha1);
        c->_sha1 = NULL;
    }
    if (c->on[S3_SUM_SHA256]) {
        wh_sha256_free(&c->_sha256);
    }
    memset(c->on, 0, sizeof c->on);
}
