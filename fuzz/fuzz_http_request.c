/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer driver for wharfd's request path as libmicrohttpd hands a request over: the
 * method, the raw URL (path and query) and the header lines go through the server's own
 * header collection, routing and SigV4 verification (src/server/front/http.c), with no server
 * running. Input: a request line "METHOD URL", then "name: value" lines (LF or CRLF).
 * Checks:
 *  - nothing crashes; the header limits hold; after indexing the names are lowercase,
 *    strictly sorted and each found by front_hdr; routing always names an API;
 *  - every refused verification says why;
 *  - the same request signed by a client over its header lines as sent (repeats included,
 *    in order) verifies through the server's collection, and is refused once an unsigned
 *    x-amz-* header is added;
 *  - POST Object's header swap (front_req_swap_headers) keeps the index sound and drops what
 *    it was told to. */
#include "front/http_int.h"
#include "s3api/s3api.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_MAX_LINES 64
#define FZ_AK "AKIAIOSFODNN7EXAMPLE"
#define FZ_SK "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"

typedef struct fz_line {
    const char *name, *value;
} fz_line_t;

static front_t g_srv; /* only cfg is read: the credentials, the listen host */

static front_req_t *fz_req(const char *method, const char *url)
{
    front_req_t *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->srv = &g_srv;
    r->method = method;
    r->raw_uri = strdup(url);
    wh_sbuf_init(&r->buf);
    if (!r->raw_uri || !front_req_split_uri(r)) {
        front_req_free(r);
        return NULL;
    }
    return r;
}

/* After indexing the names are lowercase, strictly sorted and each found by front_hdr. */
static void fz_check_index(front_req_t *r)
{
    for (size_t i = 0; i < r->nhdrs; i++) {
        for (const char *c = r->hdrs[i].lname; *c; c++)
            if (*c >= 'A' && *c <= 'Z')
                abort();
        if (i && strcmp(r->hdrs[i - 1].lname, r->hdrs[i].lname) >= 0)
            abort(); /* not sorted, or a repeat left unjoined */
        if (front_hdr(r, r->hdrs[i].lname) != r->hdrs[i].value)
            abort();
    }
}

/* Collects and indexes; returns false when the request is refused for its headers. */
static bool fz_collect(front_req_t *r, const fz_line_t *l, size_t n)
{
    bool ok = true;
    for (size_t i = 0; i < n && ok; i++)
        ok = front_req_add_header(r, l[i].name, l[i].value);
    if (!ok)
        return false;
    if (r->hdr_bytes > FRONT_MAX_HEADER_BYTES || r->hdr_lines > FRONT_MAX_HEADER_LINES)
        abort(); /* over a limit, yet accepted */
    if (!front_req_index_headers(r))
        return false;
    fz_check_index(r);
    return true;
}

/* POST Object's swap (the form's fields for the request's object headers): what drop names
 * is gone, the rest and the new pairs are indexed as on arrival. */
static bool fz_drop(const char *lname)
{
    return strncmp(lname, "x-amz-", 6) == 0 || strcmp(lname, "content-type") == 0;
}

static void fz_swap(front_req_t *r, const fz_line_t *l, size_t n)
{
    const char *names[FZ_MAX_LINES], *values[FZ_MAX_LINES];
    size_t k = 0;
    for (size_t i = n / 2; i < n; i++, k++) {
        names[k] = l[i].name;
        values[k] = l[i].value;
    }
    if (!front_req_swap_headers(r, fz_drop, names, values, k))
        return;
    fz_check_index(r);
    for (size_t i = 0; i < r->nhdrs; i++) {
        if (!fz_drop(r->hdrs[i].lname))
            continue;
        bool added = false; /* a dropped name is back only when a new pair brought it */
        for (size_t j = 0; j < k && !added; j++)
            added = strcasecmp(names[j], r->hdrs[i].lname) == 0;
        if (!added)
            abort();
    }
}

static s3_err_t fz_verify(front_req_t *r, time_t now)
{
    char msg[256] = "";
    s3_err_t e = front_req_verify(r, now, msg, sizeof msg);
    if (e != S3_OK && !msg[0])
        abort(); /* a refusal must say why */
    return e;
}

/* A token as HTTP allows in a header name, and short enough for SignedHeaders. */
static bool name_ok(const char *s)
{
    size_t n = strlen(s);
    if (!n || n > 40)
        return false;
    for (; *s; s++) {
        char c = *s;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.'))
            return false;
    }
    return true;
}

static bool value_ok(const char *v)
{
    size_t n = strlen(v);
    /* As delivered by an HTTP parser: no surrounding whitespace, no control bytes. */
    if (n && (v[0] == ' ' || v[0] == '\t' || v[n - 1] == ' ' || v[n - 1] == '\t'))
        return false;
    for (; *v; v++)
        if ((unsigned char)*v < 0x20 && *v != '\t')
            return false;
    return true;
}

static bool reserved(const char *name)
{
    static const char *const own[] = {"host", "x-amz-date", "x-amz-content-sha256",
                                      "authorization"};
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
        if (strcasecmp(name, own[i]) == 0)
            return true;
    return false;
}

/* Signs method/url over lines (plus host, x-amz-date, x-amz-content-sha256) as a client
 * would, then runs the server's path over exactly those lines and the Authorization. */
static void fz_round_trip(const char *method, const char *url, const fz_line_t *in, size_t n,
                          time_t now)
{
    fz_line_t l[FZ_MAX_LINES + 5];
    const char *names[FZ_MAX_LINES + 5], *values[FZ_MAX_LINES + 5];
    char amz[17];
    wh_amz_date(now, amz);
    size_t k = 0;
    l[k++] = (fz_line_t){"Host", "127.0.0.1:9000"};
    l[k++] = (fz_line_t){"X-Amz-Date", amz};
    l[k++] = (fz_line_t){"X-Amz-Content-SHA256", AUTH_UNSIGNED_PAYLOAD};
    for (size_t i = 0; i < n; i++)
        if (name_ok(in[i].name) && value_ok(in[i].value) && !reserved(in[i].name))
            l[k++] = in[i];
    front_req_t *r = fz_req(method, url);
    if (!r)
        return;
    for (size_t i = 0; i < k; i++)
        names[i] = l[i].name, values[i] = l[i].value;
    char authz[4096];
    auth_sign_input_t si = {.method = method,
                            .canonical_uri = r->path,
                            .query = r->query,
                            .header_names = names,
                            .header_values = values,
                            .n_headers = k,
                            .payload_hash = AUTH_UNSIGNED_PAYLOAD,
                            .access_key = FZ_AK,
                            .secret_key = FZ_SK,
                            .region = "us-east-1",
                            .when = now};
    wh_sbuf_t tmp;
    wh_sbuf_init(&tmp);
    bool presigned = r->query && (auth_query_param(r->query, "X-Amz-Algorithm", &tmp) != 0 ||
                                  auth_query_param(r->query, "X-Amz-Signature", &tmp) != 0 ||
                                  auth_query_param(r->query, "X-Amz-Credential", &tmp) != 0);
    wh_sbuf_free(&tmp);
    size_t signed_headers = 0, signed_len = 0;
    bool has_probe = false;
    for (size_t i = 0; i < k; i++) {
        bool dup = false;
        for (size_t j = 0; j < i && !dup; j++)
            dup = strcasecmp(l[i].name, l[j].name) == 0;
        signed_headers += !dup;
        signed_len += dup ? 0 : strlen(l[i].name) + 1;
        has_probe = has_probe || strcasecmp(l[i].name, "x-amz-fuzz-unsigned") == 0;
    }
    /* The verifier takes at most 64 signed headers in a SignedHeaders under 1024 bytes. */
    if (presigned || signed_headers > 64 || signed_len >= 1024 ||
        auth_sigv4_sign(&si, authz, sizeof authz) != 0) {
        front_req_free(r);
        return;
    }
    l[k++] = (fz_line_t){"Authorization", authz};
    if (fz_collect(r, l, k)) {
        s3_err_t e = fz_verify(r, now);
        if (e != S3_OK && e != S3_ERR_INVALID_ARGUMENT)
            abort(); /* what the client signed, the server must accept (a bad query aside) */
        front_req_free(r);
        /* The same with an x-amz-* header the signature does not cover. */
        r = fz_req(method, url);
        if (!r)
            return;
        l[k++] = (fz_line_t){"X-Amz-Fuzz-Unsigned", "/secret/creds"};
        if (!has_probe && fz_collect(r, l, k) && e == S3_OK &&
            fz_verify(r, now) != S3_ERR_ACCESS_DENIED)
            abort();
    }
    front_req_free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 65536)
        return 0;
    if (!g_srv.cfg.access_key) {
        g_srv.cfg.access_key = FZ_AK;
        g_srv.cfg.secret_key = FZ_SK;
        g_srv.cfg.listen_host = "127.0.0.1";
    }
    char *buf = malloc(size + 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    /* Request line. */
    char *p = buf, *eol = strchr(p, '\n');
    if (eol)
        *eol = '\0';
    if (eol && eol > p && eol[-1] == '\r')
        eol[-1] = '\0';
    char *sp = strchr(p, ' ');
    const char *method = p, *url = "/";
    if (sp) {
        *sp = '\0';
        url = sp + 1;
        char *v = strchr(sp + 1, ' ');
        if (v)
            *v = '\0'; /* " HTTP/1.1" */
    }
    if (!*method)
        method = "GET";
    /* Header lines, as libmicrohttpd splits them: name up to ':', value without leading
     * whitespace. */
    fz_line_t lines[FZ_MAX_LINES];
    size_t n = 0;
    for (p = eol ? eol + 1 : NULL; p && *p && n < FZ_MAX_LINES;) {
        eol = strchr(p, '\n');
        if (eol)
            *eol = '\0';
        if (eol && eol > p && eol[-1] == '\r')
            eol[-1] = '\0';
        char *colon = strchr(p, ':');
        if (colon && colon > p) {
            *colon = '\0';
            char *v = colon + 1;
            while (*v == ' ' || *v == '\t')
                v++;
            lines[n++] = (fz_line_t){p, v};
        }
        p = eol ? eol + 1 : NULL;
    }

    time_t now;
    wh_amz_date_parse("20130524T000500Z", &now);
    front_req_t *r = fz_req(method, url);
    if (r) {
        if (fz_collect(r, lines, n)) {
            s3api_route_parse(r->method, r->path, r->query, front_hdr(r, "host"),
                              g_srv.cfg.listen_host, front_hdr(r, "x-amz-copy-source") != NULL,
                              &r->route);
            if ((unsigned)r->route.api >= FRONT_API__COUNT)
                abort();
            if (r->route.api == FRONT_API_BAD_REQUEST && !r->route.why)
                abort();
            (void)fz_verify(r, now);
            fz_swap(r, lines, n);
        }
        front_req_free(r);
    }
    fz_round_trip(method, url, lines, n, now);
    free(buf);
    return 0;
}
