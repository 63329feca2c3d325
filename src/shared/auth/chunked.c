/* SPDX-License-Identifier: Apache-2.0 */
/* aws-chunked decoder: a byte-at-a-time state machine, so the body may arrive in any pieces.
 *
 *   signed:    <hex>;chunk-signature=<sig>\r\n<data>\r\n ... 0;chunk-signature=<sig>\r\n
 *              [trailer lines, x-amz-trailer-signature:<sig>\r\n]  \r\n
 *   unsigned:  <hex>\r\n<data>\r\n ... 0\r\n [trailer lines] \r\n
 *
 * Every chunk signature chains from the previous one (the first from the request's seed
 * signature); the trailer signature chains from the final chunk's. */
#include "auth/chunked.h"

#include "base/codec.h"
#include "base/digest.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum {
    CK_LINE,    /* reading a chunk header line */
    CK_DATA,    /* reading chunk data */
    CK_DATA_CR, /* the \r after chunk data */
    CK_DATA_LF, /* the \n after chunk data */
    CK_TRAILER, /* reading trailer lines after the final chunk */
    CK_DONE,
    CK_ERROR,
} ck_state_t;

typedef struct ck_trailer {
    char *name; /* lowercase */
    char *value;
} ck_trailer_t;

struct auth_chunked {
    auth_auth_t auth;
    int sign;           /* chunk signatures expected */
    int trailer_signed; /* x-amz-trailer-signature expected */
    ck_state_t st;
    s3_err_t err;
    char line[AUTH_CHUNKED_MAX_LINE + 1];
    size_t line_len;
    uint64_t remaining; /* of the current chunk's data */
    uint64_t chunk_len;
    uint64_t chunk_no; /* 1-based, for messages */
    uint64_t decoded;
    char prev_sig[65];
    char chunk_sig[65]; /* declared by the current chunk */
    wh_sha256_t sha;
    int sha_on;
    ck_trailer_t trailers[AUTH_CHUNKED_MAX_TRAILERS];
    size_t n_trailers;
    int have_trailer_sig;
    int skipped_blank; /* the blank line of the LF-then-CRLF trailer variant */
};

/* ---------------------------------------------------------------------------------------- */

static void sign_hex(const uint8_t key[32], const char *sts, size_t n, char out[65])
{
    uint8_t mac[WH_SHA256_LEN];
    wh_hmac_sha256(key, 32, sts, n, mac);
    wh_hex_encode(mac, sizeof mac, out);
}

static void chunk_sig_from_hash(const uint8_t key[32], const char *amz_date, const char *scope,
                                const char *prev, const char data_hash[65], char out[65])
{
    char sts[512];
    int n =
        snprintf(sts, sizeof sts, "AWS4-HMAC-SHA256-PAYLOAD\n%s\n%s\n%s\n" AUTH_EMPTY_SHA256 "\n%s",
                 amz_date, scope, prev, data_hash);
    sign_hex(key, sts, (size_t)WH_MIN((size_t)n, sizeof sts - 1), out);
}

void auth_chunk_signature(const uint8_t key[32], const char *amz_date, const char *scope,
                          const char *prev_sig, const void *data, size_t len, char out[65])
{
    char h[65];
    wh_sha256_hex(data, len, h);
    chunk_sig_from_hash(key, amz_date, scope, prev_sig, h, out);
}

void auth_trailer_signature(const uint8_t key[32], const char *amz_date, const char *scope,
                            const char *prev_sig, const char *canonical, size_t len, char out[65])
{
    char h[65], sts[512];
    wh_sha256_hex(canonical, len, h);
    int n = snprintf(sts, sizeof sts, "AWS4-HMAC-SHA256-TRAILER\n%s\n%s\n%s\n%s", amz_date, scope,
                     prev_sig, h);
    sign_hex(key, sts, (size_t)WH_MIN((size_t)n, sizeof sts - 1), out);
}

static int ct_equal(const char *a, const char *b, size_t n)
{
    unsigned char d = 0;
    for (size_t i = 0; i < n; i++)
        d |= (unsigned char)(a[i] ^ b[i]);
    return d == 0;
}

/* ---------------------------------------------------------------------------------------- */

auth_chunked_t *auth_chunked_new(const auth_auth_t *auth)
{
    if (auth->mode != AUTH_PAYLOAD_STREAMING_SIGNED &&
        auth->mode != AUTH_PAYLOAD_STREAMING_UNSIGNED_TRAILER)
        return NULL;
    auth_chunked_t *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->auth = *auth;
    c->sign = auth->mode == AUTH_PAYLOAD_STREAMING_SIGNED;
    c->trailer_signed = c->sign && auth->signed_trailer;
    c->st = CK_LINE;
    c->err = S3_OK;
    memcpy(c->prev_sig, auth->signature, sizeof c->prev_sig);
    c->prev_sig[64] = '\0';
    return c;
}

void auth_chunked_free(auth_chunked_t *c)
{
    if (!c)
        return;
    if (c->sha_on)
        wh_sha256_free(&c->sha);
    for (size_t i = 0; i < c->n_trailers; i++) {
        free(c->trailers[i].name);
        free(c->trailers[i].value);
    }
    free(c);
}

const char *auth_chunked_trailer(const auth_chunked_t *c, const char *lname)
{
    for (size_t i = 0; i < c->n_trailers; i++)
        if (strcmp(c->trailers[i].name, lname) == 0)
            return c->trailers[i].value;
    return NULL;
}

uint64_t auth_chunked_decoded(const auth_chunked_t *c)
{
    return c->decoded;
}

static s3_err_t ck_fail(auth_chunked_t *c, s3_err_t e, char *msg, size_t msglen, const char *fmt,
                        ...) __attribute__((format(printf, 5, 6)));

static s3_err_t ck_fail(auth_chunked_t *c, s3_err_t e, char *msg, size_t msglen, const char *fmt,
                        ...)
{
    c->st = CK_ERROR;
    c->err = e;
    if (msg && msglen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, msglen, fmt, ap);
        va_end(ap);
    }
    return e;
}

static int is_hex(char ch)
{
    return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F');
}

/* A complete chunk header line (without \r\n). */
static s3_err_t ck_header(auth_chunked_t *c, char *msg, size_t msglen)
{
    const char *l = c->line;
    size_t n = c->line_len, h = 0;
    while (h < n && is_hex(l[h]))
        h++;
    uint64_t size;
    if (h == 0 || wh_hex_u64(l, h, &size) != 0)
        return ck_fail(c, S3_ERR_INCOMPLETE_BODY, msg, msglen,
                       "aws-chunked chunk %llu: header '%.40s' does not start with a hex size "
                       "of 1 to 16 digits",
                       (unsigned long long)c->chunk_no, l);
    if (size > AUTH_CHUNKED_MAX_CHUNK)
        return ck_fail(c, S3_ERR_INCOMPLETE_BODY, msg, msglen,
                       "aws-chunked chunk %llu is %llu bytes; chunks may be at most %u bytes",
                       (unsigned long long)c->chunk_no, (unsigned long long)size,
                       AUTH_CHUNKED_MAX_CHUNK);
    const char *ext = l + h;
    size_t elen = n - h;
    static const char sigkey[] = ";chunk-signature=";
    const size_t sklen = sizeof sigkey - 1;
    if (c->sign) {
        if (elen != sklen + 64 || memcmp(ext, sigkey, sklen) != 0)
            return ck_fail(c, S3_ERR_INCOMPLETE_BODY, msg, msglen,
                           "aws-chunked chunk %llu: header must be "
                           "'<hex-size>;chunk-signature=<64 hex>', got '%.120s'",
                           (unsigned long long)c->chunk_no, l);
        for (size_t i = 0; i < 64; i++) {
            char ch = ext[sklen + i];
            if (!is_hex(ch))
                return ck_fail(c, S3_ERR_INCOMPLETE_BODY, msg, msglen,
                               "aws-chunked chunk %llu: chunk-signature is not 64 hex characters",
                               (unsigned long long)c->chunk_no);
            c->chunk_sig[i] = (ch >= 'A' && ch <= 'F') ? (char)(ch - 'A' + 'a') : ch;
        }
        c->chunk_sig[64] = '\0';
        if (wh_sha256_init(&c->sha) != 0)
            return ck_fail(c, S3_ERR_INTERNAL, msg, msglen, "cannot initialise sha256");
        c->sha_on = 1;
    } else if (elen && ext[0] != ';') {
        /* Unsigned: chunk extensions are allowed (and ignored), nothing else. */
        return ck_fail(c, S3_ERR_INCOMPLETE_BODY, msg, msglen,
                       "aws-chunked chunk %llu: header '%.40s' is not '<hex-size>'",
                       (unsigned long long)c->chunk_no, l);
    } else if (elen >= sklen && memcmp(ext, sigkey, sklen) == 0) {
        return ck_fail(c, S3_ERR_INCOMPLETE_BODY, msg, msglen,
                       "aws-chunked chunk %llu carries a chunk-signature but the request says "
                       "x-amz-content-sha256: " AUTH_STREAMING_UNSIGNED_TRAILER,
                       (unsigned long long)c->chunk_no);
    }
    c->chunk_len = c->remaining = size;
    return S3_OK;
}

/* The end of a chunk's data: check its signature and chain it. */
static s3_err_t ck_chunk_end(auth_chunked_t *c, char *msg, size_t msglen)
{
    if (!c->sign)
        return S3_OK;
    uint8_t d[WH_SHA256_LEN];
    char h[65], sig[65];
    wh_sha256_final(&c->sha, d);
    c->sha_on = 0;
    wh_hex_encode(d, sizeof d, h);
    chunk_sig_from_hash(c->auth.signing_key, c->auth.amz_date, c->auth.scope, c->prev_sig, h, sig);
    if (!ct_equal(sig, c->chunk_sig, 64))
        return ck_fail(c, S3_ERR_SIGNATURE_MISMATCH, msg, msglen,
                       "aws-chunked chunk %llu (%llu bytes) signature does not match its data",
                       (unsigned long long)c->chunk_no, (unsigned long long)c->chunk_len);
    memcpy(c->prev_sig, sig, sizeof sig);
    return S3_OK;
}

/* A complete trailer line (without its line end). An empty one ends the body. */
static s3_err_t ck_trailer_line(auth_chunked_t *c, char *msg, size_t msglen)
{
    const char *l = c->line;
    size_t n = c->line_len;
    if (n == 0) {
        /* Some clients end the checksum line with \n and put \r\n before the signature line. */
        if (c->trailer_signed && !c->have_trailer_sig && c->n_trailers > 0 && !c->skipped_blank) {
            c->skipped_blank = 1;
            return S3_OK;
        }
        if (c->trailer_signed && !c->have_trailer_sig)
            return ck_fail(c, S3_ERR_SIGNATURE_MISMATCH, msg, msglen,
                           "the aws-chunked body ended without x-amz-trailer-signature, "
                           "which " AUTH_STREAMING_SIGNED_TRAILER " requires");
        c->st = CK_DONE;
        return S3_OK;
    }
    if (c->have_trailer_sig)
        return ck_fail(c, S3_ERR_INCOMPLETE_BODY, msg, msglen,
                       "aws-chunked trailer '%.40s' follows x-amz-trailer-signature", l);
    if (c->sign && !c->trailer_signed)
        return ck_fail(c, S3_ERR_INCOMPLETE_BODY, msg, msglen,
                       "aws-chunked body has trailer '%.40s' but the request says "
                       "x-amz-content-sha256: " AUTH_STREAMING_SIGNED " (no trailers)",
                       l);
    const char *colon = memchr(l, ':', n);
    if (!colon || colon == l)
        return ck_fail(c, S3_ERR_INCOMPLETE_BODY, msg, msglen,
                       "aws-chunked trailer line '%.40s' is not 'name:value'", l);
    size_t nlen = (size_t)(colon - l);
    for (size_t i = 0; i < nlen; i++) {
        unsigned char ch = (unsigned char)l[i];
        if (ch <= ' ' || ch >= 0x7f)
            return ck_fail(c, S3_ERR_INCOMPLETE_BODY, msg, msglen,
                           "aws-chunked trailer name '%.*s' has an invalid character",
                           (int)WH_MIN(nlen, 40), l);
    }
    const char *v = colon + 1;
    size_t vlen = n - nlen - 1;
    while (vlen && (*v == ' ' || *v == '\t'))
        v++, vlen--;
    while (vlen && (v[vlen - 1] == ' ' || v[vlen - 1] == '\t'))
        vlen--;
    if (memchr(v, '\0', vlen))
        return ck_fail(c, S3_ERR_INCOMPLETE_BODY, msg, msglen,
                       "aws-chunked trailer value holds a NUL byte");
    char lname[AUTH_CHUNKED_MAX_LINE + 1];
    for (size_t i = 0; i < nlen; i++)
        lname[i] = (l[i] >= 'A' && l[i] <= 'Z') ? (char)(l[i] - 'A' + 'a') : l[i];
    lname[nlen] = '\0';

    if (strcmp(lname, "x-amz-trailer-signature") == 0) {
        if (!c->trailer_signed)
            return ck_fail(c, S3_ERR_INCOMPLETE_BODY, msg, msglen,
                           "aws-chunked body has x-amz-trailer-signature but the request says "
                           "x-amz-content-sha256: " AUTH_STREAMING_UNSIGNED_TRAILER);
        char want[65];
        wh_sbuf_t canon;
        wh_sbuf_init(&canon);
        for (size_t i = 0; i < c->n_trailers; i++)
            wh_sbuf_printf(&canon, "%s:%s\n", c->trailers[i].name, c->trailers[i].value);
        if (canon.oom) {
            wh_sbuf_free(&canon);
            return ck_fail(c, S3_ERR_INTERNAL, msg, msglen, "out of memory");
        }
        auth_trailer_signature(c->auth.signing_key, c->auth.amz_date, c->auth.scope, c->prev_sig,
                               canon.data ? canon.data : "", canon.len, want);
        wh_sbuf_free(&canon);
        int ok = vlen == 64;
        for (size_t i = 0; ok && i < 64; i++)
            ok = is_hex(v[i]);
        char got[65];
        if (ok) {
            for (size_t i = 0; i < 64; i++)
                got[i] = (v[i] >= 'A' && v[i] <= 'F') ? (char)(v[i] - 'A' + 'a') : v[i];
            got[64] = '\0';
        }
        if (!ok || !ct_equal(got, want, 64))
            return ck_fail(c, S3_ERR_SIGNATURE_MISMATCH, msg, msglen,
                           "aws-chunked x-amz-trailer-signature does not match the trailers");
        c->have_trailer_sig = 1;
        return S3_OK;
    }
    if (c->n_trailers == AUTH_CHUNKED_MAX_TRAILERS)
        return ck_fail(c, S3_ERR_INCOMPLETE_BODY, msg, msglen,
                       "aws-chunked body has more than %d trailers", AUTH_CHUNKED_MAX_TRAILERS);
    if (auth_chunked_trailer(c, lname))
        return ck_fail(c, S3_ERR_INCOMPLETE_BODY, msg, msglen,
                       "aws-chunked trailer '%s' appears twice", lname);
    ck_trailer_t *t = &c->trailers[c->n_trailers];
    t->name = strdup(lname);
    t->value = strndup(v, vlen);
    if (!t->name || !t->value) {
        free(t->name);
        free(t->value);
        t->name = t->value = NULL;
        return ck_fail(c, S3_ERR_INTERNAL, msg, msglen, "out of memory");
    }
    c->n_trailers++;
    return S3_OK;
}

s3_err_t auth_chunked_feed(auth_chunked_t *c, const void *data, size_t len,
                           auth_chunked_sink_cb sink, void *arg, char *msg, size_t msglen)
{
    const char *p = data, *end = p + len;
    s3_err_t e;
    if (c->st == CK_ERROR)
        return ck_fail(c, c->err, msg, msglen, "the aws-chunked body already failed");
    while (p < end) {
        switch (c->st) {
        case CK_LINE:
        case CK_TRAILER: {
            /* Chunk header lines end in \r\n; trailer lines in \n with an optional \r. */
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            size_t take = nl ? (size_t)(nl - p) : (size_t)(end - p);
            if (c->line_len + take > AUTH_CHUNKED_MAX_LINE)
                return ck_fail(c, S3_ERR_INCOMPLETE_BODY, msg, msglen,
                               "aws-chunked %s line is longer than %d bytes",
                               c->st == CK_LINE ? "chunk header" : "trailer",
                               AUTH_CHUNKED_MAX_LINE);
            memcpy(c->line + c->line_len, p, take);
            c->line_len += take;
            p += take;
            if (!nl)
                break;
            p++; /* the \n */
            int cr = c->line_len > 0 && c->line[c->line_len - 1] == '\r';
            if (cr)
                c->line_len--;
            c->line[c->line_len] = '\0';
            if (c->st == CK_LINE) {
                c->chunk_no++;
                if (!cr)
                    return ck_fail(c, S3_ERR_INCOMPLETE_BODY, msg, msglen,
                                   "aws-chunked chunk %llu header does not end in \\r\\n",
                                   (unsigned long long)c->chunk_no);
                if ((e = ck_header(c, msg, msglen)) != S3_OK)
                    return e;
                c->line_len = 0;
                if (c->chunk_len == 0) {
                    if ((e = ck_chunk_end(c, msg, msglen)) != S3_OK)
                        return e;
                    c->st = CK_TRAILER;
                } else {
                    c->st = CK_DATA;
                }
            } else {
                if ((e = ck_trailer_line(c, msg, msglen)) != S3_OK)
                    return e;
                c->line_len = 0;
            }
            break;
        }
        case CK_DATA: {
            size_t take = (size_t)WH_MIN((uint64_t)(end - p), c->remaining);
            if (c->sha_on)
                wh_sha256_update(&c->sha, p, take);
            if (sink && sink(arg, p, take) != 0)
                return ck_fail(c, S3_ERR_INTERNAL, msg, msglen,
                               "the receiver stopped the upload at decoded byte %llu",
                               (unsigned long long)c->decoded);
            c->decoded += take;
            c->remaining -= take;
            p += take;
            if (c->remaining == 0) {
                if ((e = ck_chunk_end(c, msg, msglen)) != S3_OK)
                    return e;
                c->st = CK_DATA_CR;
            }
            break;
        }
        case CK_DATA_CR:
        case CK_DATA_LF:
            if (*p != (c->st == CK_DATA_CR ? '\r' : '\n'))
                return ck_fail(c, S3_ERR_INCOMPLETE_BODY, msg, msglen,
                               "aws-chunked chunk %llu: its %llu data bytes are not followed "
                               "by \\r\\n (more data than the size says?)",
                               (unsigned long long)c->chunk_no, (unsigned long long)c->chunk_len);
            p++;
            c->st = c->st == CK_DATA_CR ? CK_DATA_LF : CK_LINE;
            break;
        case CK_DONE:
            return ck_fail(c, S3_ERR_INCOMPLETE_BODY, msg, msglen,
                           "%zu bytes follow the end of the aws-chunked body", (size_t)(end - p));
        case CK_ERROR:
            return c->err;
        }
    }
    return S3_OK;
}

s3_err_t auth_chunked_finish(auth_chunked_t *c, char *msg, size_t msglen)
{
    switch (c->st) {
    case CK_DONE:
        return S3_OK;
    case CK_ERROR:
        return ck_fail(c, c->err, msg, msglen, "the aws-chunked body already failed");
    case CK_DATA:
        return ck_fail(c, S3_ERR_INCOMPLETE_BODY, msg, msglen,
                       "the body ended inside aws-chunked chunk %llu: %llu of %llu bytes received",
                       (unsigned long long)c->chunk_no,
                       (unsigned long long)(c->chunk_len - c->remaining),
                       (unsigned long long)c->chunk_len);
    case CK_TRAILER:
        if (c->trailer_signed && !c->have_trailer_sig && c->skipped_blank && !c->line_len)
            return ck_fail(c, S3_ERR_SIGNATURE_MISMATCH, msg, msglen,
                           "the aws-chunked body ended without x-amz-trailer-signature, "
                           "which " AUTH_STREAMING_SIGNED_TRAILER " requires");
        return ck_fail(c, S3_ERR_INCOMPLETE_BODY, msg, msglen,
                       "the body ended after the final aws-chunked chunk without the closing "
                       "empty line%s",
                       c->trailer_signed && !c->have_trailer_sig ? " and trailer signature" : "");
    default:
        return ck_fail(c, S3_ERR_INCOMPLETE_BODY, msg, msglen,
                       "the body ended before the final (zero-size) aws-chunked chunk; %llu "
                       "bytes decoded",
                       (unsigned long long)c->decoded);
    }
}
