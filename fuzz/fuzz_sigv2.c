/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer driver for auth_sigv2_verify (AWS Signature Version 2) with the request taken from
 * the input, as fuzz_sigv4 does:
 *   line 1 method, line 2 path, line 3 query (empty: none), then "name: value" header lines.
 * Checks: the header parser and verify never crash and every failure says why; the same
 * request signed here (Date set, string to sign by auth_sigv2_string_to_sign) always verifies,
 * stops verifying when one signature character changes or an x-amz-* header is added after
 * signing; a V2 POST form signature verifies for its policy only. */
#include "auth/sigv2.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

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
    char msg[512], ak[128], sig[64];
    const char *h = fz_get(&r, "authorization");
    if (h && auth_sigv2_parse_header(h, ak, sig, msg, sizeof msg) != S3_OK &&
        (msg[0] == '\0' || strlen(msg) >= sizeof msg))
        abort();
    (void)auth_sigv2_present(&req);
    s3_err_t e = auth_sigv2_verify(&req, fz_get(&r, "x-fuzz-vhost"), fz_secret, NULL, now, &a, msg,
                                   sizeof msg);
    if (e != S3_OK && (msg[0] == '\0' || strlen(msg) >= sizeof msg))
        abort();
    if (e == S3_OK && !a.sigv2)
        abort();

    /* Round trip: sign the request as a client would, then verify it. */
    fz_req_t s = {0};
    char date[40];
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    s.names[s.n] = "date", s.values[s.n++] = date;
    for (size_t i = 0; i < r.n && s.n < FZ_MAX_H; i++) {
        if (!name_ok(r.names[i]) || fz_get(&s, r.names[i]) ||
            !strcasecmp(r.names[i], "authorization") || !strcasecmp(r.names[i], "x-amz-date") ||
            !strcasecmp(r.names[i], "x-amz-content-sha256"))
            continue; /* the first of each name, as the server's lookup sees it */
        s.names[s.n] = r.names[i], s.values[s.n++] = r.values[i];
    }
    req.arg = &s;
    wh_sbuf_t sts;
    wh_sbuf_init(&sts);
    char authz[200], mine[AUTH_SIGV2_SIG_LEN + 1];
    if (auth_sigv2_string_to_sign(&req, NULL, path, date, 0, NULL, &sts) == 0) {
        auth_sigv2_sign("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", sts.data, sts.len, mine);
        snprintf(authz, sizeof authz, "AWS AKIAIOSFODNN7EXAMPLE:%s", mine);
        s.names[s.n] = "authorization", s.values[s.n++] = authz;
        e = auth_sigv2_verify(&req, NULL, fz_secret, NULL, now, &a, msg, sizeof msg);
        if (e != S3_OK)
            abort(); /* what the client signs, the server must accept */
        char *c = authz + strlen("AWS AKIAIOSFODNN7EXAMPLE:") + 5, was = *c;
        *c = *c == 'A' ? 'B' : 'A';
        if (auth_sigv2_verify(&req, NULL, fz_secret, NULL, now, &a, msg, sizeof msg) !=
            S3_ERR_SIGNATURE_MISMATCH)
            abort();
        *c = was;
        if (!fz_get(&s, "x-amz-fuzz-unsigned") && s.n < FZ_MAX_H + 4) {
            s.names[s.n] = "X-Amz-Fuzz-Unsigned", s.values[s.n++] = "1";
            if (auth_sigv2_verify(&req, NULL, fz_secret, NULL, now, &a, msg, sizeof msg) !=
                S3_ERR_SIGNATURE_MISMATCH)
                abort();
        }
    }
    wh_sbuf_free(&sts);
    /* The POST form: the path line stands for the policy. */
    char pak[128];
    auth_sigv2_sign("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", path, strlen(path), mine);
    if (auth_sigv2_post_verify("AKIAIOSFODNN7EXAMPLE", mine, path, fz_secret, NULL, pak, msg,
                               sizeof msg) != S3_OK)
        abort();
    if (query && strcmp(query, path) != 0 &&
        auth_sigv2_post_verify("AKIAIOSFODNN7EXAMPLE", mine, query, fz_secret, NULL, pak, msg,
                               sizeof msg) != S3_ERR_SIGNATURE_MISMATCH)
        abort();
    free(buf);
    return 0;
}
