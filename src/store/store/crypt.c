/* SPDX-License-Identifier: Apache-2.0 */
/* Encryption at rest (crypt.h): AES-256-GCM segments under a writer, and a reader that
 * decrypts and authenticates only the segments a read touches. libcrypto (already wharf's,
 * for sealing and digests) runs AES-GCM with AES-NI and carry-less multiply where the CPU has
 * them. */
#include "store/crypt.h"

#include "base/codec.h"
#include "base/digest.h"
#include "base/log.h"
#include "base/util.h"
#include "store/store_int.h"

#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

#define MOD "store"
/* The header's first 4 bytes (no NUL is stored). */
static const char SSE_MAGIC[4] = "WSE1";
#define SSE_MAGIC_LEN sizeof SSE_MAGIC
#define SSE_IV_LEN 12
#define SSE_STORED_SEG ((uint64_t)STORE_SSE_SEG + STORE_SSE_TAG)

/* ---- parameters ---- */

wh_status_t store_sse_parse(const char *text, store_sse_t *out)
{
    memset(out, 0, sizeof *out);
    if (!text || !text[0])
        return WH_OK;
    const char *p;
    if (strncmp(text, "S3;", 3) == 0) {
        out->kind = STORE_SSE_S3;
        p = text + 3;
    } else if (strncmp(text, "C;", 2) == 0) {
        out->kind = STORE_SSE_C;
        p = text + 2;
    } else if (strncmp(text, "K;", 2) == 0) {
        out->kind = STORE_SSE_KMS;
        p = text + 2;
    } else {
        return WH_ERR_INVALID;
    }
    if (strlen(p) < 2 * STORE_SSE_SALT_LEN + 1 || p[2 * STORE_SSE_SALT_LEN] != ';' ||
        wh_hex_decode(p, 2 * STORE_SSE_SALT_LEN, out->salt, sizeof out->salt) != 0)
        return WH_ERR_INVALID;
    p += 2 * STORE_SSE_SALT_LEN + 1;
    size_t n = strcspn(p, ";");
    if (n == 0 || n >= sizeof out->secret)
        return WH_ERR_INVALID;
    memcpy(out->secret, p, n);
    out->secret[n] = '\0';
    p += n;
    if (*p == ';') {
        if (strncmp(p, ";n=", 3) != 0 || !p[3])
            return WH_ERR_INVALID;
        out->parts = p + 3;
    }
    return WH_OK;
}

char *store_sse_format(const store_sse_t *s)
{
    char salt[2 * STORE_SSE_SALT_LEN + 1];
    wh_hex_encode(s->salt, sizeof s->salt, salt);
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    wh_sbuf_printf(&b, "%s;%s;%s",
                   s->kind == STORE_SSE_C     ? "C"
                   : s->kind == STORE_SSE_KMS ? "K"
                                              : "S3",
                   salt, s->secret);
    return wh_sbuf_steal(&b);
}

void store_sse_c_derive(const uint8_t ckey[STORE_SSE_KEY_LEN],
                        const uint8_t salt[STORE_SSE_SALT_LEN], uint8_t key[STORE_SSE_KEY_LEN],
                        char verifier[65])
{
    /* The two labels, without their NULs (they are hashed as bytes). */
    static const char verify_label[18] = "wharf-sse-c-verify", data_label[16] = "wharf-sse-c-data";
    uint8_t msg[32 + STORE_SSE_SALT_LEN], v[WH_SHA256_LEN];
    memcpy(msg, verify_label, sizeof verify_label);
    memcpy(msg + sizeof verify_label, salt, STORE_SSE_SALT_LEN);
    wh_hmac_sha256(ckey, STORE_SSE_KEY_LEN, msg, sizeof verify_label + STORE_SSE_SALT_LEN, v);
    wh_hex_encode(v, sizeof v, verifier);
    memcpy(msg, data_label, sizeof data_label);
    memcpy(msg + sizeof data_label, salt, STORE_SSE_SALT_LEN);
    wh_hmac_sha256(ckey, STORE_SSE_KEY_LEN, msg, sizeof data_label + STORE_SSE_SALT_LEN, key);
}

uint64_t store_sse_blob_size(uint64_t n)
{
    return STORE_SSE_HDR + n + STORE_SSE_TAG * ((n + STORE_SSE_SEG - 1) / STORE_SSE_SEG);
}

/* The blobs of an object: plaintext sizes and part numbers (one blob, part 0, without a part
 * list). *sizes and *nums malloc'd. */
static wh_status_t sse_blobs(const data_obj_meta_t *m, const store_sse_t *sse, uint64_t **sizes,
                             uint32_t **nums, size_t *n)
{
    size_t cnt = 1;
    if (sse->parts) {
        for (const char *p = sse->parts; *p; p++)
            cnt += *p == ',';
    }
    uint64_t *sz = calloc(cnt, sizeof *sz);
    uint32_t *nu = calloc(cnt, sizeof *nu);
    if (!sz || !nu) {
        free(sz);
        free(nu);
        return WH_ERR_NOMEM;
    }
    wh_status_t s = WH_OK;
    if (!sse->parts) {
        sz[0] = m->size;
    } else {
        const char *p = sse->parts, *q = m->part_sizes;
        uint64_t total = 0;
        for (size_t i = 0; i < cnt && s == WH_OK; i++) {
            size_t pl = strcspn(p, ","), ql = q ? strcspn(q, ",") : 0;
            uint64_t num = 0;
            if (!q || !pl || !ql || wh_parse_u64(p, pl, &num) != 0 || num > STORE_MAX_PARTS ||
                wh_parse_u64(q, ql, &sz[i]) != 0) {
                s = WH_ERR_INVALID;
                break;
            }
            nu[i] = (uint32_t)num;
            total += sz[i];
            p += pl + (p[pl] == ',');
            q += ql + (q[ql] == ',');
        }
        if (s == WH_OK && total != m->size)
            s = WH_ERR_INVALID;
    }
    if (s != WH_OK) {
        wh_error(MOD, "encrypted object with inconsistent part list: sizes=%s parts=%s",
                 m->part_sizes ? m->part_sizes : "-", sse->parts);
        free(sz);
        free(nu);
        return s;
    }
    *sizes = sz;
    *nums = nu;
    *n = cnt;
    return WH_OK;
}

wh_status_t store_sse_stored_size(const data_obj_meta_t *m, uint64_t *out)
{
    store_sse_t sse;
    wh_status_t s = store_sse_parse(m->sse, &sse);
    if (s != WH_OK)
        return s;
    uint64_t *sz;
    uint32_t *nu;
    size_t n;
    if ((s = sse_blobs(m, &sse, &sz, &nu, &n)) != WH_OK)
        return s;
    uint64_t t = 0;
    for (size_t i = 0; i < n; i++)
        t += store_sse_blob_size(sz[i]);
    free(sz);
    free(nu);
    *out = t;
    return WH_OK;
}

/* ---- one segment ---- */

static void seg_nonce_aad(const uint8_t iv[SSE_IV_LEN], const uint8_t salt[STORE_SSE_SALT_LEN],
                          uint32_t part, uint64_t idx, uint8_t nonce[SSE_IV_LEN], uint8_t aad[32])
{
    memcpy(nonce, iv, SSE_IV_LEN);
    for (int i = 0; i < 8; i++)
        nonce[4 + i] ^= (uint8_t)(idx >> (56 - 8 * i));
    memcpy(aad, SSE_MAGIC, SSE_MAGIC_LEN);
    memcpy(aad + 4, salt, STORE_SSE_SALT_LEN);
    for (int i = 0; i < 4; i++)
        aad[20 + i] = (uint8_t)(part >> (24 - 8 * i));
    for (int i = 0; i < 8; i++)
        aad[24 + i] = (uint8_t)(idx >> (56 - 8 * i));
}

/* Encrypts (enc) n bytes of in to out and writes the tag after them, or decrypts and checks
 * the tag that follows in. 0, or -1 (a decrypt: the tag failed). */
static int seg_crypt(EVP_CIPHER_CTX *c, bool enc, const uint8_t iv[SSE_IV_LEN],
                     const uint8_t salt[STORE_SSE_SALT_LEN], uint32_t part, uint64_t idx,
                     const uint8_t *in, size_t n, uint8_t *out)
{
    uint8_t nonce[SSE_IV_LEN], aad[32];
    seg_nonce_aad(iv, salt, part, idx, nonce, aad);
    int len = 0;
    if (enc) {
        if (EVP_EncryptInit_ex(c, NULL, NULL, NULL, nonce) != 1 ||
            EVP_EncryptUpdate(c, NULL, &len, aad, sizeof aad) != 1 ||
            (n && EVP_EncryptUpdate(c, out, &len, in, (int)n) != 1) ||
            EVP_EncryptFinal_ex(c, out + n, &len) != 1 ||
            EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, STORE_SSE_TAG, out + n) != 1)
            return -1;
        return 0;
    }
    if (EVP_DecryptInit_ex(c, NULL, NULL, NULL, nonce) != 1 ||
        EVP_DecryptUpdate(c, NULL, &len, aad, sizeof aad) != 1 ||
        (n && EVP_DecryptUpdate(c, out, &len, in, (int)n) != 1) ||
        EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, STORE_SSE_TAG, (void *)(in + n)) != 1 ||
        EVP_DecryptFinal_ex(c, out + n, &len) != 1)
        return -1;
    return 0;
}

static EVP_CIPHER_CTX *sse_ctx(const uint8_t key[STORE_SSE_KEY_LEN], bool enc)
{
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    if (!c)
        return NULL;
    int ok = enc ? EVP_EncryptInit_ex(c, EVP_aes_256_gcm(), NULL, key, NULL)
                 : EVP_DecryptInit_ex(c, EVP_aes_256_gcm(), NULL, key, NULL);
    if (ok != 1 || EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_IVLEN, SSE_IV_LEN, NULL) != 1) {
        EVP_CIPHER_CTX_free(c);
        return NULL;
    }
    return c;
}

/* ---- writer ---- */

struct store_crypt_w {
    EVP_CIPHER_CTX *ctx;
    char *sse; /* the parameters, for the row */
    uint8_t iv[SSE_IV_LEN];
    uint8_t salt[STORE_SSE_SALT_LEN];
    uint32_t part;
    bool etag_mac; /* SSE-C: the stored ETag is store_sse_c_etag's */
    uint8_t etag_key[STORE_SSE_KEY_LEN];
    uint64_t idx; /* next segment */
    size_t fill;  /* plaintext bytes in pt */
    uint8_t pt[STORE_SSE_SEG];
    uint8_t ct[STORE_SSE_SEG + STORE_SSE_TAG];
};

wh_status_t store_writer_encrypt(store_writer_t *w, const uint8_t key[STORE_SSE_KEY_LEN],
                                 const char *sse, uint32_t part)
{
    store_sse_t ps;
    if (w->size || w->md5_done || w->crypt || store_sse_parse(sse, &ps) != WH_OK ||
        ps.kind == STORE_SSE_NONE)
        return WH_ERR_INVALID;
    struct store_crypt_w *c = calloc(1, sizeof *c);
    if (!c || !(c->sse = strdup(sse))) {
        free(c);
        return WH_ERR_NOMEM;
    }
    const uint8_t *salt = ps.salt;
    uint8_t hdr[STORE_SSE_HDR];
    memcpy(hdr, SSE_MAGIC, SSE_MAGIC_LEN);
    if (wh_random_bytes(c->iv, sizeof c->iv) != 0 || !(c->ctx = sse_ctx(key, true))) {
        wh_error(MOD, "cannot set up AES-256-GCM for an encrypted write");
        free(c->sse);
        free(c);
        return WH_ERR_INTERNAL;
    }
    memcpy(hdr + 4, c->iv, SSE_IV_LEN);
    memcpy(c->salt, salt, sizeof c->salt);
    c->part = part;
    if (ps.kind == STORE_SSE_C) {
        c->etag_mac = true;
        memcpy(c->etag_key, key, sizeof c->etag_key);
    }
    wh_status_t s = data_write(w->dw, hdr, sizeof hdr);
    if (s != WH_OK) {
        EVP_CIPHER_CTX_free(c->ctx);
        free(c->sse);
        free(c);
        w->broken = true;
        return s;
    }
    /* Part and digest ETags hash stored bytes read back: an encrypted writer keeps the plain
     * MD5 of what it was given, inline. */
    w->part_size = 0;
    w->digest_etag = false;
    w->crypt = c;
    return WH_OK;
}

static wh_status_t crypt_seg_out(store_writer_t *w)
{
    struct store_crypt_w *c = w->crypt;
    if (seg_crypt(c->ctx, true, c->iv, c->salt, c->part, c->idx, c->pt, c->fill, c->ct) != 0) {
        wh_error(MOD, "AES-256-GCM encryption failed");
        return WH_ERR_INTERNAL;
    }
    wh_status_t s = data_write(w->dw, c->ct, c->fill + STORE_SSE_TAG);
    if (s == WH_OK) {
        c->idx++;
        c->fill = 0;
    }
    return s;
}

wh_status_t store_crypt_write(store_writer_t *w, const void *p, size_t n)
{
    struct store_crypt_w *c = w->crypt;
    const uint8_t *b = p;
    while (n) {
        size_t k = WH_MIN(n, (size_t)STORE_SSE_SEG - c->fill);
        memcpy(c->pt + c->fill, b, k);
        c->fill += k;
        b += k;
        n -= k;
        if (c->fill == STORE_SSE_SEG) {
            wh_status_t s = crypt_seg_out(w);
            if (s != WH_OK)
                return s;
        }
    }
    return WH_OK;
}

const char *store_crypt_sse(const store_writer_t *w)
{
    return w->crypt ? w->crypt->sse : NULL;
}

wh_status_t store_crypt_flush(store_writer_t *w)
{
    if (!w->crypt || w->crypt->fill == 0)
        return WH_OK;
    return crypt_seg_out(w);
}

void store_sse_c_etag(const uint8_t key[STORE_SSE_KEY_LEN], const char md5_hex[33], char out[33])
{
    static const char LABEL[] = "wharf-sse-c-etag";
    uint8_t k[WH_SHA256_LEN], mac[WH_SHA256_LEN];
    wh_hmac_sha256(key, STORE_SSE_KEY_LEN, LABEL, sizeof LABEL - 1, k);
    wh_hmac_sha256(k, sizeof k, md5_hex, 32, mac);
    wh_hex_encode(mac, 16, out);
    OPENSSL_cleanse(k, sizeof k);
}

void store_crypt_etag_seal(const store_writer_t *w, char etag[33])
{
    if (w->crypt && w->crypt->etag_mac && strlen(etag) == 32) {
        char md5[33];
        memcpy(md5, etag, sizeof md5);
        store_sse_c_etag(w->crypt->etag_key, md5, etag);
    }
}

void store_crypt_free(store_writer_t *w)
{
    if (!w->crypt)
        return;
    EVP_CIPHER_CTX_free(w->crypt->ctx);
    free(w->crypt->sse);
    OPENSSL_cleanse(w->crypt, sizeof *w->crypt);
    free(w->crypt);
    w->crypt = NULL;
}

/* ---- reader ---- */

typedef struct sse_blob {
    uint64_t pt_off, pt_len, st_off;
    uint32_t num;
    bool have_iv;
    uint8_t iv[SSE_IV_LEN];
} sse_blob_t;

typedef struct sse_reader {
    data_reader_t base; /* base.data: sse_table; base.size: the plaintext size */
    data_reader_t *raw;
    EVP_CIPHER_CTX *ctx; /* NULL until the key is given */
    uint8_t salt[STORE_SSE_SALT_LEN];
    sse_blob_t *blobs;
    size_t nblobs;
    /* The last segment decrypted, so a stream read in blocks that straddle segments decrypts
     * each once. */
    size_t c_blob;
    uint64_t c_idx;
    size_t c_len; /* 0: none */
    uint8_t pt[STORE_SSE_SEG];
    uint8_t st[STORE_SSE_SEG + STORE_SSE_TAG];
} sse_reader_t;

static const data_ops_t sse_ops;
static data_table_t sse_table = {.ops = &sse_ops};

static size_t blob_of(const sse_reader_t *r, uint64_t off)
{
    size_t lo = 0, hi = r->nblobs;
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (r->blobs[mid].pt_off <= off)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* Decrypts segment idx of blob bi into r->pt (the cache). */
static wh_status_t seg_load(sse_reader_t *r, size_t bi, uint64_t idx)
{
    if (r->c_len && r->c_blob == bi && r->c_idx == idx)
        return WH_OK;
    sse_blob_t *b = &r->blobs[bi];
    if (!b->have_iv) {
        uint8_t hdr[STORE_SSE_HDR];
        wh_status_t s = store_reader_pread(r->raw, hdr, sizeof hdr, b->st_off);
        if (s != WH_OK)
            return s;
        if (memcmp(hdr, SSE_MAGIC, SSE_MAGIC_LEN) != 0) {
            wh_error(MOD, "encrypted object: bad blob header at stored offset %llu",
                     (unsigned long long)b->st_off);
            return WH_ERR_CHECKSUM;
        }
        memcpy(b->iv, hdr + 4, SSE_IV_LEN);
        b->have_iv = true;
    }
    uint64_t start = idx * STORE_SSE_SEG;
    size_t n = (size_t)WH_MIN((uint64_t)STORE_SSE_SEG, b->pt_len - start);
    r->c_len = 0;
    wh_status_t s = store_reader_pread(r->raw, r->st, n + STORE_SSE_TAG,
                                       b->st_off + STORE_SSE_HDR + idx * SSE_STORED_SEG);
    if (s != WH_OK)
        return s == WH_ERR_RANGE ? WH_ERR_CHECKSUM : s;
    if (seg_crypt(r->ctx, false, b->iv, r->salt, b->num, idx, r->st, n, r->pt) != 0) {
        wh_error(MOD,
                 "encrypted object: segment %llu of part %u fails authentication (damaged "
                 "on disk, or moved): not served",
                 (unsigned long long)idx, b->num);
        return WH_ERR_CHECKSUM;
    }
    r->c_blob = bi;
    r->c_idx = idx;
    r->c_len = n;
    return WH_OK;
}

static wh_status_t sse_pread(data_reader_t *rr, void *buf, size_t n, uint64_t off)
{
    sse_reader_t *r = (sse_reader_t *)rr;
    if (!r->ctx)
        return WH_ERR_AUTH;
    uint8_t *out = buf;
    while (n) {
        size_t bi = blob_of(r, off);
        sse_blob_t *b = &r->blobs[bi];
        while (b->pt_len == 0 && bi + 1 < r->nblobs)
            b = &r->blobs[++bi];
        uint64_t in = off - b->pt_off, idx = in / STORE_SSE_SEG;
        wh_status_t s = seg_load(r, bi, idx);
        if (s != WH_OK)
            return s;
        size_t at = (size_t)(in - idx * STORE_SSE_SEG);
        size_t k = WH_MIN(n, r->c_len - at);
        memcpy(out, r->pt + at, k);
        out += k;
        off += k;
        n -= k;
    }
    return WH_OK;
}

/* Before a streamed reply's header: the raw table's own check, then the first segment of the
 * range is authenticated, so a damaged small object is an error status, not a short body. */
static wh_status_t sse_prepare(data_reader_t *rr, uint64_t off, uint64_t len, char *msg,
                               size_t msglen)
{
    sse_reader_t *r = (sse_reader_t *)rr;
    wh_status_t s = store_reader_prepare(r->raw, 0, store_reader_size(r->raw), msg, msglen);
    if (s != WH_OK || len == 0)
        return s;
    uint8_t one;
    s = sse_pread(rr, &one, 1, off);
    if (s != WH_OK)
        snprintf(msg, msglen,
                 "the object's stored bytes fail authentication at offset %llu: "
                 "not served",
                 (unsigned long long)off);
    return s;
}

static void sse_close(data_reader_t *rr)
{
    sse_reader_t *r = (sse_reader_t *)rr;
    store_reader_close(r->raw);
    EVP_CIPHER_CTX_free(r->ctx);
    free(r->blobs);
    OPENSSL_cleanse(r->pt, sizeof r->pt);
    free(r);
}

static const data_ops_t sse_ops = {
    .name = "sse",
    .reader_pread = sse_pread,
    .reader_prepare = sse_prepare,
    .reader_close = sse_close,
};

wh_status_t store_crypt_wrap(data_reader_t *raw, const data_obj_meta_t *m, data_reader_t **out)
{
    store_sse_t sse;
    wh_status_t s = store_sse_parse(m->sse, &sse);
    if (s != WH_OK) {
        wh_error(MOD, "encrypted object with malformed parameters");
        store_reader_close(raw);
        return WH_ERR_IO;
    }
    uint64_t *sz = NULL;
    uint32_t *nu = NULL;
    size_t n = 0;
    sse_reader_t *r = calloc(1, sizeof *r);
    if (!r || (s = sse_blobs(m, &sse, &sz, &nu, &n)) != WH_OK ||
        !(r->blobs = calloc(n, sizeof *r->blobs))) {
        s = r && s == WH_OK ? WH_ERR_NOMEM : (s == WH_ERR_INVALID ? WH_ERR_IO : s);
        if (!r)
            s = WH_ERR_NOMEM;
        free(r ? r->blobs : NULL);
        free(r);
        free(sz);
        free(nu);
        store_reader_close(raw);
        return s;
    }
    uint64_t pt = 0, st = 0;
    for (size_t i = 0; i < n; i++) {
        r->blobs[i].pt_off = pt;
        r->blobs[i].pt_len = sz[i];
        r->blobs[i].st_off = st;
        r->blobs[i].num = nu[i];
        pt += sz[i];
        st += store_sse_blob_size(sz[i]);
    }
    free(sz);
    free(nu);
    r->nblobs = n;
    r->raw = raw;
    memcpy(r->salt, sse.salt, sizeof r->salt);
    r->base.data = &sse_table;
    r->base.size = m->size;
    *out = &r->base;
    return WH_OK;
}

wh_status_t store_reader_set_key(data_reader_t *rr, const uint8_t key[STORE_SSE_KEY_LEN])
{
    if (!rr || rr->data != &sse_table)
        return WH_ERR_INVALID;
    sse_reader_t *r = (sse_reader_t *)rr;
    EVP_CIPHER_CTX *c = sse_ctx(key, false);
    if (!c)
        return WH_ERR_INTERNAL;
    EVP_CIPHER_CTX_free(r->ctx);
    r->ctx = c;
    r->c_len = 0;
    return WH_OK;
}

bool store_reader_encrypted(const data_reader_t *r)
{
    return r && r->data == &sse_table;
}
