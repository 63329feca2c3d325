/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer driver for auth_sigv4_verify with the request taken from the input:
 *   line 1 method, line 2 path, line 3 query (empty: none), then "name: value" header lines.
 * Checks: verify never crashes and every failure says why; and the same request, signed by
 * auth_sigv4_sign (with host, x-amz-date and x-amz-content-sha256 set), always verifies, stops
 * verifying when one signature character changes, and is refused with an unsigned x-amz-*
 * header added. */
#include "auth/sigv4.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_MAX_H 24

typedef struct fz_req {
    const char *names[FZ_MAX_H + 4];
    const char *values[FZ_MAX_H + 4];
    size_t n;
} fz_req_t;

static const char *fz_get(void *arg, const char *lname)
{
    fz_req_t *r = arg;
    for (size_t i = 0; i < r->n; i++)
        if (strcasecmp(r->names[i], lname) == 0)
            return r->values[i];
    return NULL;
}

static const char *fz_at(void *arg, size_t i, const char **value)
{
    fz_req_t *r = arg;
    if (i >= r->n)
        return NULL;
    *value = r->values[i];
    return r->names[i];
}

static const char *fz_secret(void *arg, const char *ak)
{
    (void)arg;
    return strcmp(ak, "AKIAIOSFODNN7EXAMPLE") == 0 ? "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
                                                   : NULL;
}

static int name_ok(const char *s)
{
    if (!*s || strlen(s) > 40)
        return 0;
    for (; *s; s++) {
        char c = *s;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.'))
            return 0;
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 16384)
        return 0;
    char *buf = malloc(size + 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    char *lines[3 + FZ_MAX_H] = {0};
    size_t nl = 0;
    for (char *p = buf; p && nl < 3 + FZ_MAX_H;) {
        lines[nl++] = p;
        char *e = strchr(p, '\n');
        if (e)
            *e++ = '\0';
        p = e;
    }
    const char *method = lines[0] ? lines[0] : "GET";
    const char *path = nl > 1 ? lines[1] : "/";
    const char *query = nl > 2 && lines[2][0] ? lines[2] : NULL;
    fz_req_t r = {0};
    for (size_t i = 3; i < nl; i++) {
        char *colon = strchr(lines[i], ':');
        if (!colon)
            continue;
        *colon = '\0';
        char *v = colon + 1;
        while (*v == ' ')
            v++;
        r.names[r.n] = lines[i];
        r.values[r.n++] = v;
    }
    auth_http_req_t req = {.method = method,
                           .path = path,
                           .query = query,
                           .get_header = fz_get,
                           .header_at = fz_at,
                           .arg = &r};
    time_t now;
    wh_amz_date_parse("20130524T000500Z", &now);
    auth_auth_t a;
    char msg[512];
    s3_err_t e = auth_sigv4_verify(&req, fz_secret, NULL, now, &a, msg, sizeof msg);
    if (e != S3_OK && (msg[0] == '\0' || strlen(msg) >= sizeof msg))
        abort();
    if (e == S3_OK && !auth_auth_header_signed(&a, "host"))
        abort();

    /* Round trip: sign the request as a client would, then verify it. */
    fz_req_t s = {0};
    char amz[17];
    wh_amz_date(now, amz);
    s.names[s.n] = "host", s.values[s.n++] = fz_get(&r, "host") ? fz_get(&r, "host") : "h";
    s.names[s.n] = "x-amz-date", s.values[s.n++] = amz;
    s.names[s.n] = "x-amz-content-sha256", s.values[s.n++] = AUTH_UNSIGNED_PAYLOAD;
    for (size_t i = 0; i < r.n && s.n < FZ_MAX_H; i++) {
        if (!name_ok(r.names[i]) || fz_get(&s, r.names[i]) ||
            !strcasecmp(r.names[i], "authorization"))
            continue; /* the first of each name, as the server's lookup sees it */
        s.names[s.n] = r.names[i], s.values[s.n++] = r.values[i];
    }
    auth_sign_input_t in = {.method = method,
                            .canonical_uri = path,
                            .query = query,
                            .header_names = s.names,
                            .header_values = s.values,
                            .n_headers = s.n,
                            .payload_hash = AUTH_UNSIGNED_PAYLOAD,
                            .access_key = "AKIAIOSFODNN7EXAMPLE",
                            .secret_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                            .region = "us-east-1",
                            .when = now};
    char authz[2048];
    wh_sbuf_t tmp;
    wh_sbuf_init(&tmp);
    int has_q_auth = auth_query_param(query, "X-Amz-Algorithm", &tmp) != 0 ||
                     auth_query_param(query, "X-Amz-Signature", &tmp) != 0 ||
                     auth_query_param(query, "X-Amz-Credential", &tmp) != 0;
    wh_sbuf_free(&tmp);
    if (!has_q_auth && auth_sigv4_sign(&in, authz, sizeof authz) == 0) {
        s.names[s.n] = "authorization", s.values[s.n++] = authz;
        req.arg = &s;
        e = auth_sigv4_verify(&req, fz_secret, NULL, now, &a, msg, sizeof msg);
        if (e != S3_OK)
            abort(); /* what the client signs, the server must accept */
        char *sig = strstr(authz, "Signature=") + 10, was = sig[5];
        sig[5] = sig[5] == '0' ? '1' : '0';
        if (auth_sigv4_verify(&req, fz_secret, NULL, now, &a, msg, sizeof msg) !=
            S3_ERR_SIGNATURE_MISMATCH)
            abort();
        sig[5] = was;
        /* An x-amz-* header that the signature does not cover is refused. */
        if (!fz_get(&s, "x-amz-fuzz-unsigned")) {
            s.names[s.n] = "X-Amz-Fuzz-Unsigned", s.values[s.n++] = "1";
            if (auth_sigv4_verify(&req, fz_secret, NULL, now, &a, msg, sizeof msg) !=
                S3_ERR_ACCESS_DENIED)
                abort();
        }
    }
    free(buf);
    return 0;
}
