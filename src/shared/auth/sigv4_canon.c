/* SPDX-License-Identifier: Apache-2.0 */
/* SigV4 canonicalisation shared by signing and verification: query encoding, the
 * canonical query string, header value folding, the canonical path of a received request,
 * the signing key and the signature over a canonical request.
 *
 * One canonical-request builder serves both directions, so a request signed by auth_sigv4_sign
 * verifies under auth_sigv4_verify byte for byte. */
#include "auth/sigv4_int.h"

#include "base/codec.h"
#include "base/digest.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------- */
/* Query strings */

typedef struct qparam {
    size_t koff, klen, voff, vlen; /* into the encoded buffer */
} qparam_t;

static int qparam_cmp(const void *a, const void *b, void *arg)
{
    const qparam_t *x = a, *y = b;
    const char *base = arg;
    size_t n = WH_MIN(x->klen, y->klen);
    int c = memcmp(base + x->koff, base + y->koff, n);
    if (c)
        return c;
    if (x->klen != y->klen)
        return x->klen < y->klen ? -1 : 1;
    n = WH_MIN(x->vlen, y->vlen);
    c = memcmp(base + x->voff, base + y->voff, n);
    if (c)
        return c;
    if (x->vlen != y->vlen)
        return x->vlen < y->vlen ? -1 : 1;
    return 0;
}

int auth_sigv4_canonical_query(const char *query, const char *skip_name, wh_sbuf_t *out)
{
    if (!query || !*query)
        return 0;
    int rc = -1;
    wh_sbuf_t enc, tmp;
    wh_sbuf_init(&enc);
    wh_sbuf_init(&tmp);
    qparam_t *ps = NULL;
    size_t np = 0, cap = 0;
    const char *p = query;
    while (*p) {
        const char *amp = strchr(p, '&');
        size_t plen = amp ? (size_t)(amp - p) : strlen(p);
        if (plen > 0) {
            const char *eq = memchr(p, '=', plen);
            size_t klen = eq ? (size_t)(eq - p) : plen;
            const char *v = eq ? eq + 1 : p + plen;
            size_t vlen = eq ? plen - klen - 1 : 0;
            wh_sbuf_reset(&tmp);
            if (s3_uri_decode_form(p, klen, &tmp) != 0)
                goto cleanup;
            int skip = skip_name && tmp.len == strlen(skip_name) &&
                       memcmp(tmp.data, skip_name, tmp.len) == 0;
            if (!skip) {
                if (np == SIGV4_MAX_QUERY_PARAMS)
                    goto cleanup;
                if (np == cap) {
                    size_t ncap = cap ? cap * 2 : 16;
                    qparam_t *n2 = realloc(ps, ncap * sizeof *ps);
                    if (!n2)
                        goto cleanup;
                    ps = n2;
                    cap = ncap;
                }
                qparam_t *q = &ps[np++];
                q->koff = enc.len;
                s3_uri_encode(tmp.data ? tmp.data : "", tmp.len, 1, &enc);
                q->klen = enc.len - q->koff;
                wh_sbuf_reset(&tmp);
                if (s3_uri_decode_form(v, vlen, &tmp) != 0)
                    goto cleanup;
                q->voff = enc.len;
                s3_uri_encode(tmp.data ? tmp.data : "", tmp.len, 1, &enc);
                q->vlen = enc.len - q->voff;
            }
        }
        if (!amp)
            break;
        p = amp + 1;
    }
    if (enc.oom || tmp.oom)
        goto cleanup;
    if (np > 1)
        qsort_r(ps, np, sizeof *ps, qparam_cmp, enc.data);
    for (size_t i = 0; i < np; i++) {
        if (i)
            wh_sbuf_append(out, "&", 1);
        wh_sbuf_append(out, enc.data + ps[i].koff, ps[i].klen);
        wh_sbuf_append(out, "=", 1);
        wh_sbuf_append(out, enc.data + ps[i].voff, ps[i].vlen);
    }
    rc = out->oom ? -1 : 0;
cleanup:
    free(ps);
    wh_sbuf_free(&enc);
    wh_sbuf_free(&tmp);
    return rc;
}

int auth_query_param(const char *query, const char *name, wh_sbuf_t *out)
{
    if (!query)
        return 0;
    size_t nlen = strlen(name);
    wh_sbuf_t tmp;
    wh_sbuf_init(&tmp);
    int rc = 0;
    const char *p = query;
    while (*p) {
        const char *amp = strchr(p, '&');
        size_t plen = amp ? (size_t)(amp - p) : strlen(p);
        const char *eq = memchr(p, '=', plen);
        size_t klen = eq ? (size_t)(eq - p) : plen;
        wh_sbuf_reset(&tmp);
        if (plen && s3_uri_decode_form(p, klen, &tmp) == 0 && tmp.len == nlen &&
            memcmp(tmp.data, name, nlen) == 0) {
            rc = eq ? (s3_uri_decode_form(eq + 1, plen - klen - 1, out) == 0 ? 1 : -1) : 1;
            break;
        }
        if (!amp)
            break;
        p = amp + 1;
    }
    wh_sbuf_free(&tmp);
    return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* Keys and signatures */

static void sigv4_derive_key(const char *secret, const char *date8, const char *region,
                             const char *service, uint8_t out[32])
{
    uint8_t k[WH_SHA256_LEN];
    wh_sbuf_t ks;
    wh_sbuf_init(&ks);
    wh_sbuf_puts(&ks, "AWS4");
    wh_sbuf_puts(&ks, secret);
    wh_hmac_sha256(ks.data, ks.oom ? 0 : ks.len, date8, strlen(date8), k);
    wh_sbuf_free(&ks);
    wh_hmac_sha256(k, sizeof k, region, strlen(region), k);
    wh_hmac_sha256(k, sizeof k, service, strlen(service), k);
    wh_hmac_sha256(k, sizeof k, SIGV4_TERM, strlen(SIGV4_TERM), out);
}

/* The last key each thread derived, with what it was derived from: a server verifying many
 * requests of one user on one day derives the same key each time (four HMACs per request), as
 * AWS's SDKs avoid by caching it. The secret is held only as its SHA-256, compared in constant
 * time; a date, region or service longer than its slot is not cached. */
typedef struct sigv4_key_cache {
    bool valid;
    uint8_t secret_sha[WH_SHA256_LEN];
    char date8[9], region[65], service[33];
    uint8_t key[WH_SHA256_LEN];
} sigv4_key_cache_t;

static __thread sigv4_key_cache_t g_key_cache;

void auth_sigv4_signing_key_service(const char *secret, const char *date8, const char *region,
                                    const char *service, uint8_t out[32])
{
    sigv4_key_cache_t *c = &g_key_cache;
    uint8_t sha[WH_SHA256_LEN];
    bool fits = strlen(date8) < sizeof c->date8 && strlen(region) < sizeof c->region &&
                strlen(service) < sizeof c->service;
    if (fits) {
        wh_sha256(secret, strlen(secret), sha);
        if (c->valid &&
            sigv4_ct_equal((const char *)c->secret_sha, (const char *)sha, sizeof sha) &&
            strcmp(c->date8, date8) == 0 && strcmp(c->region, region) == 0 &&
            strcmp(c->service, service) == 0) {
            memcpy(out, c->key, WH_SHA256_LEN);
            return;
        }
    }
    sigv4_derive_key(secret, date8, region, service, out);
    if (fits) {
        memcpy(c->secret_sha, sha, sizeof sha);
        strcpy(c->date8, date8);
        strcpy(c->region, region);
        strcpy(c->service, service);
        memcpy(c->key, out, WH_SHA256_LEN);
        c->valid = true;
    }
}

void auth_sigv4_signing_key(const char *secret, const char *date8, const char *region,
                            uint8_t out[32])
{
    auth_sigv4_signing_key_service(secret, date8, region, "s3", out);
}

void sigv4_signature(const uint8_t key[32], const char *amz_date, const char *scope,
                     const char *creq, size_t creq_len, char sig[65])
{
    char h[65], sts[256];
    wh_sha256_hex(creq, creq_len, h);
    int n = snprintf(sts, sizeof sts, SIGV4_ALGO "\n%s\n%s\n%s", amz_date, scope, h);
    uint8_t mac[WH_SHA256_LEN];
    wh_hmac_sha256(key, 32, sts, (size_t)WH_MIN((size_t)n, sizeof sts - 1), mac);
    wh_hex_encode(mac, sizeof mac, sig);
}

void sigv4_canon_value(wh_sbuf_t *b, const char *v)
{
    size_t n = strlen(v), i = 0;
    while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
        n--;
    while (i < n && (v[i] == ' ' || v[i] == '\t'))
        i++;
    size_t start = i;
    while (i < n) {
        if (v[i] == ' ' || v[i] == '\t') {
            wh_sbuf_append(b, v + start, i - start);
            wh_sbuf_append(b, " ", 1);
            while (i < n && (v[i] == ' ' || v[i] == '\t'))
                i++;
            start = i;
        } else {
            i++;
        }
    }
    wh_sbuf_append(b, v + start, i - start);
}

int sigv4_ct_equal(const char *a, const char *b, size_t n)
{
    unsigned char d = 0;
    for (size_t i = 0; i < n; i++)
        d |= (unsigned char)(a[i] ^ b[i]);
    return d == 0;
}

/* Canonical URI from the path as received: every segment decoded, then re-encoded the way
 * S3 clients encode (unreserved kept, everything else %XX, '/' separating segments).
 * Returns -1 when a segment has a bad %-escape. */
int sigv4_canon_path(const char *path, wh_sbuf_t *out)
{
    if (!path || !*path) {
        wh_sbuf_append(out, "/", 1);
        return 0;
    }
    wh_sbuf_t seg;
    wh_sbuf_init(&seg);
    int rc = 0;
    const char *p = path;
    while (1) {
        const char *slash = strchr(p, '/');
        size_t len = slash ? (size_t)(slash - p) : strlen(p);
        wh_sbuf_reset(&seg);
        if (s3_uri_decode(p, len, &seg) != 0) {
            rc = -1;
            break;
        }
        s3_uri_encode(seg.data ? seg.data : "", seg.len, 1, out);
        if (!slash)
            break;
        wh_sbuf_append(out, "/", 1);
        p = slash + 1;
    }
    if (seg.oom || out->oom)
        rc = -1;
    wh_sbuf_free(&seg);
    return rc;
}
