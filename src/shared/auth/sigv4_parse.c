/* SPDX-License-Identifier: Apache-2.0 */
/* SigV4 request parsing (server side): the Authorization header's Credential, SignedHeaders
 * and Signature, the presign query parameters and the payload mode. Every failure names what
 * was wrong. */
#include "auth/sigv4_int.h"

#include "base/codec.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sigv4_all_digits(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return 0;
    return 1;
}

/* "AKID/20130524/us-east-1/s3/aws4_request" */
s3_err_t sigv4_parse_credential(const char *cred, size_t n, sigv4_parsed_t *p, s3_err_t bad,
                                char *msg, size_t msglen)
{
    /* From the right: terminator, service, region, date; the rest is the access key. */
    const char *end = cred + n, *parts[4];
    size_t lens[4];
    for (int i = 0; i < 4; i++) {
        const char *s = end;
        while (s > cred && s[-1] != '/')
            s--;
        if (s == cred)
            return s3_errf(bad, msg, msglen,
                           "credential '%.200s' is not of the form "
                           "<access-key>/<YYYYMMDD>/<region>/s3/aws4_request",
                           cred);
        parts[i] = s;
        lens[i] = (size_t)(end - s);
        end = s - 1;
    }
    size_t aklen = (size_t)(end - cred);
    if (lens[0] != strlen(SIGV4_TERM) || memcmp(parts[0], SIGV4_TERM, lens[0]) != 0)
        return s3_errf(bad, msg, msglen, "credential must end in '/aws4_request', got '%.*s'",
                       (int)WH_MIN(lens[0], 64), parts[0]);
    const char *want = p->service ? p->service : "s3";
    if (lens[1] != strlen(want) || memcmp(parts[1], want, lens[1]) != 0)
        return s3_errf(bad, msg, msglen, "credential service must be '%s', got '%.*s'", want,
                       (int)WH_MIN(lens[1], 64), parts[1]);
    /* IAM is global: an SDK configured with an empty region (boto3's region_name='') signs
     * its scope with an empty one, which IAM accepts as us-east-1. S3 needs a region. */
    bool global = p->service && strcmp(p->service, "iam") == 0;
    if ((lens[2] == 0 && !global) || lens[2] >= sizeof p->region)
        return s3_errf(bad, msg, msglen, "credential region must be 1 to %zu characters",
                       sizeof p->region - 1);
    for (size_t i = 0; i < lens[2]; i++) {
        char c = parts[2][i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_'))
            return s3_errf(bad, msg, msglen, "credential region '%.*s' has an invalid character",
                           (int)WH_MIN(lens[2], 64), parts[2]);
    }
    if (lens[3] != 8 || !sigv4_all_digits(parts[3], 8))
        return s3_errf(bad, msg, msglen, "credential date must be YYYYMMDD, got '%.*s'",
                       (int)WH_MIN(lens[3], 64), parts[3]);
    if (aklen == 0 || aklen >= sizeof p->access_key)
        return s3_errf(bad, msg, msglen, "credential access key must be 1 to %zu characters",
                       sizeof p->access_key - 1);
    memcpy(p->access_key, cred, aklen);
    p->access_key[aklen] = '\0';
    memcpy(p->date8, parts[3], 8);
    p->date8[8] = '\0';
    memcpy(p->region, parts[2], lens[2]);
    p->region[lens[2]] = '\0';
    return S3_OK;
}

/* Lowercase header names separated by ';', no duplicates, host among them. */
s3_err_t sigv4_parse_signed_headers(const char *s, size_t n, sigv4_parsed_t *p, s3_err_t bad,
                                    char *msg, size_t msglen)
{
    if (n == 0)
        return s3_errf(bad, msg, msglen, "SignedHeaders is empty; it must list at least host");
    if (n >= sizeof p->signed_headers)
        return s3_errf(bad, msg, msglen, "SignedHeaders is longer than %zu bytes",
                       sizeof p->signed_headers - 1);
    memcpy(p->signed_headers, s, n);
    p->signed_headers[n] = '\0';
    const char *names[SIGV4_MAX_SIGNED_HEADERS];
    size_t lens[SIGV4_MAX_SIGNED_HEADERS], cnt = 0;
    int has_host = 0;
    const char *c = p->signed_headers;
    while (1) {
        const char *semi = strchr(c, ';');
        size_t len = semi ? (size_t)(semi - c) : strlen(c);
        if (len == 0)
            return s3_errf(bad, msg, msglen, "SignedHeaders '%.200s' has an empty name",
                           p->signed_headers);
        for (size_t i = 0; i < len; i++) {
            char ch = c[i];
            if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' ||
                  ch == '.'))
                return s3_errf(bad, msg, msglen,
                               "SignedHeaders name '%.*s' must be lowercase letters, digits, "
                               "'-', '_' or '.'",
                               (int)WH_MIN(len, 64), c);
        }
        if (cnt == SIGV4_MAX_SIGNED_HEADERS)
            return s3_errf(bad, msg, msglen, "SignedHeaders lists more than %d headers",
                           SIGV4_MAX_SIGNED_HEADERS);
        for (size_t i = 0; i < cnt; i++)
            if (lens[i] == len && memcmp(names[i], c, len) == 0)
                return s3_errf(bad, msg, msglen, "SignedHeaders lists '%.*s' twice",
                               (int)WH_MIN(len, 64), c);
        names[cnt] = c;
        lens[cnt++] = len;
        if (len == 4 && memcmp(c, "host", 4) == 0)
            has_host = 1;
        if (!semi)
            break;
        c = semi + 1;
    }
    if (!has_host)
        return s3_errf(bad, msg, msglen, "SignedHeaders '%.200s' does not include host",
                       p->signed_headers);
    return S3_OK;
}

s3_err_t sigv4_parse_signature(const char *s, size_t n, sigv4_parsed_t *p, s3_err_t bad, char *msg,
                               size_t msglen)
{
    if (n != 64)
        return s3_errf(bad, msg, msglen, "Signature must be 64 hex characters, got %zu", n);
    for (size_t i = 0; i < 64; i++) {
        int v = wh_hex_digit((char)s[i]);
        if (v < 0)
            return s3_errf(bad, msg, msglen, "Signature has a non-hex character at offset %zu", i);
        p->signature[i] = "0123456789abcdef"[v];
    }
    p->signature[64] = '\0';
    return S3_OK;
}

/* "AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., Signature=..." */
s3_err_t sigv4_parse_auth_header(const char *h, sigv4_parsed_t *p, char *msg, size_t msglen)
{
    const s3_err_t bad = S3_ERR_AUTH_HEADER_MALFORMED;
    size_t alen = strlen(SIGV4_ALGO);
    if (strncmp(h, "AWS ", 4) == 0)
        return s3_errf(S3_ERR_INVALID_REQUEST, msg, msglen,
                       "signature version 2 is not supported; sign requests with " SIGV4_ALGO);
    if (strncmp(h, SIGV4_ALGO, alen) != 0 || (h[alen] != ' ' && h[alen] != '\t'))
        return s3_errf(bad, msg, msglen,
                       "Authorization must start with '" SIGV4_ALGO " ', got '%.32s'", h);
    const char *c = h + alen;
    int have_cred = 0, have_sh = 0, have_sig = 0;
    while (*c) {
        while (*c == ' ' || *c == '\t' || *c == ',')
            c++;
        if (!*c)
            break;
        const char *comp = c;
        while (*c && *c != ',')
            c++;
        size_t clen = (size_t)(c - comp);
        while (clen && (comp[clen - 1] == ' ' || comp[clen - 1] == '\t'))
            clen--;
        const char *eq = memchr(comp, '=', clen);
        if (!eq)
            return s3_errf(bad, msg, msglen, "Authorization component '%.*s' has no '='",
                           (int)WH_MIN(clen, 64), comp);
        size_t klen = (size_t)(eq - comp), vlen = clen - klen - 1;
        const char *v = eq + 1;
        s3_err_t e = S3_OK;
        int *seen = NULL;
        if (klen == 10 && memcmp(comp, "Credential", 10) == 0) {
            seen = &have_cred;
            if (!*seen)
                e = sigv4_parse_credential(v, vlen, p, bad, msg, msglen);
        } else if (klen == 13 && memcmp(comp, "SignedHeaders", 13) == 0) {
            seen = &have_sh;
            if (!*seen)
                e = sigv4_parse_signed_headers(v, vlen, p, bad, msg, msglen);
        } else if (klen == 9 && memcmp(comp, "Signature", 9) == 0) {
            seen = &have_sig;
            if (!*seen)
                e = sigv4_parse_signature(v, vlen, p, bad, msg, msglen);
        } else {
            return s3_errf(bad, msg, msglen, "Authorization has an unknown component '%.*s'",
                           (int)WH_MIN(klen, 64), comp);
        }
        if (*seen)
            return s3_errf(bad, msg, msglen, "Authorization has '%.*s' twice", (int)klen, comp);
        if (e != S3_OK)
            return e;
        *seen = 1;
    }
    if (!have_cred)
        return s3_errf(bad, msg, msglen, "Authorization is missing Credential=");
    if (!have_sh)
        return s3_errf(bad, msg, msglen, "Authorization is missing SignedHeaders=");
    if (!have_sig)
        return s3_errf(bad, msg, msglen, "Authorization is missing Signature=");
    return S3_OK;
}

int sigv4_amz_date_valid(const char *s, size_t n)
{
    return n == 16 && sigv4_all_digits(s, 8) && s[8] == 'T' && sigv4_all_digits(s + 9, 6) &&
           s[15] == 'Z';
}

s3_err_t sigv4_classify_payload(const char *v, auth_auth_t *a, char *msg, size_t msglen)
{
    size_t n = strlen(v);
    if (n == 64) {
        int ok = 1;
        for (size_t i = 0; i < 64 && ok; i++)
            ok = wh_hex_digit((char)v[i]) >= 0;
        if (ok) {
            a->mode = AUTH_PAYLOAD_SHA256;
            for (size_t i = 0; i < 64; i++)
                a->payload_hash[i] = "0123456789abcdef"[wh_hex_digit((char)v[i])];
            a->payload_hash[64] = '\0';
            return S3_OK;
        }
    }
    if (strcmp(v, AUTH_UNSIGNED_PAYLOAD) == 0) {
        a->mode = AUTH_PAYLOAD_UNSIGNED;
    } else if (strcmp(v, AUTH_STREAMING_SIGNED) == 0) {
        a->mode = AUTH_PAYLOAD_STREAMING_SIGNED;
    } else if (strcmp(v, AUTH_STREAMING_SIGNED_TRAILER) == 0) {
        a->mode = AUTH_PAYLOAD_STREAMING_SIGNED;
        a->signed_trailer = 1;
    } else if (strcmp(v, AUTH_STREAMING_UNSIGNED_TRAILER) == 0) {
        a->mode = AUTH_PAYLOAD_STREAMING_UNSIGNED_TRAILER;
    } else {
        return s3_errf(
            S3_ERR_INVALID_ARGUMENT, msg, msglen,
            "x-amz-content-sha256 must be a 64-hex SHA-256 of the body, " AUTH_UNSIGNED_PAYLOAD
            ", " AUTH_STREAMING_SIGNED ", " AUTH_STREAMING_SIGNED_TRAILER
            " or " AUTH_STREAMING_UNSIGNED_TRAILER "; got '%.80s'",
            v);
    }
    return S3_OK;
}

int sigv4_has_param(const char *query, const char *name)
{
    wh_sbuf_t tmp;
    wh_sbuf_init(&tmp);
    int r = auth_query_param(query, name, &tmp);
    wh_sbuf_free(&tmp);
    return r != 0;
}

/* Reads a required presign parameter into out (NUL-terminated, at most outlen-1 bytes). */
s3_err_t sigv4_presign_param(const char *query, const char *name, char *out, size_t outlen,
                             char *msg, size_t msglen)
{
    wh_sbuf_t v;
    wh_sbuf_init(&v);
    int r = auth_query_param(query, name, &v);
    s3_err_t e = S3_OK;
    if (r == 0)
        e = s3_errf(S3_ERR_AUTH_QUERY_MALFORMED, msg, msglen,
                    "presigned URL is missing the %s query parameter", name);
    else if (r < 0 || v.oom)
        e = s3_errf(S3_ERR_AUTH_QUERY_MALFORMED, msg, msglen,
                    "query parameter %s has a bad %%-escape", name);
    else if (v.len >= outlen || (v.len && memchr(v.data, '\0', v.len)))
        e = s3_errf(S3_ERR_AUTH_QUERY_MALFORMED, msg, msglen,
                    "query parameter %s is longer than %zu bytes or holds a NUL", name, outlen - 1);
    else {
        memcpy(out, v.len ? v.data : "", v.len);
        out[v.len] = '\0';
    }
    wh_sbuf_free(&v);
    return e;
}
