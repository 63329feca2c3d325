/* AWS Signature Version 4: signing (client) and verification (server).
 *
 * One canonical-request builder serves both directions, so a request signed by s3_sigv4_sign
 * verifies under s3_sigv4_verify byte for byte. Verification rebuilds the canonical request
 * from the request as received; S3 does not double-encode the path, so each path segment is
 * decoded and re-encoded (s3_uri_encode), and the raw path is tried as well for clients that
 * sign what they sent without normalising it. */
#include "s3/sigv4.h"

#include "base/codec.h"
#include "base/digest.h"
#include "base/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIGV4_ALGO "AWS4-HMAC-SHA256"
#define SIGV4_TERM "aws4_request"
#define SIGV4_MAX_QUERY_PARAMS 1000
#define SIGV4_MAX_SIGNED_HEADERS 64
#define SIGV4_MAX_PRESIGN_EXPIRES (7 * 24 * 3600)

/* ---------------------------------------------------------------------------------------- */
/* URI encoding */

static int uri_unreserved(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           c == '-' || c == '.' || c == '_' || c == '~';
}

void s3_uri_encode(const char *s, size_t n, int encode_slash, wh_sbuf_t *out)
{
    static const char hexu[] = "0123456789ABCDEF";
    char buf[256];
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (k + 3 > sizeof buf) {
            wh_sbuf_append(out, buf, k);
            k = 0;
        }
        if (uri_unreserved(c) || (c == '/' && !encode_slash)) {
            buf[k++] = (char)c;
        } else {
            buf[k++] = '%';
            buf[k++] = hexu[c >> 4];
            buf[k++] = hexu[c & 15];
        }
    }
    wh_sbuf_append(out, buf, k);
}

static int uri_decode(const char *s, size_t n, int plus_is_space, wh_sbuf_t *out)
{
    char buf[256];
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (k == sizeof buf) {
            wh_sbuf_append(out, buf, k);
            k = 0;
        }
        char c = s[i];
        if (c == '%') {
            if (i + 2 >= n)
                return -1;
            int hi = wh_hex_digit((char)s[i + 1]), lo = wh_hex_digit((char)s[i + 2]);
            if (hi < 0 || lo < 0)
                return -1;
            buf[k++] = (char)(hi << 4 | lo);
            i += 2;
        } else if (c == '+' && plus_is_space) {
            buf[k++] = ' ';
        } else {
            buf[k++] = c;
        }
    }
    wh_sbuf_append(out, buf, k);
    return 0;
}

int s3_uri_decode(const char *s, size_t n, wh_sbuf_t *out)
{
    return uri_decode(s, n, 0, out);
}

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

int s3_sigv4_canonical_query(const char *query, const char *skip_name, wh_sbuf_t *out)
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
            if (uri_decode(p, klen, 1, &tmp) != 0)
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
                if (uri_decode(v, vlen, 1, &tmp) != 0)
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

int s3_query_param(const char *query, const char *name, wh_sbuf_t *out)
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
        if (plen && uri_decode(p, klen, 1, &tmp) == 0 && tmp.len == nlen &&
            memcmp(tmp.data, name, nlen) == 0) {
            rc = eq ? (uri_decode(eq + 1, plen - klen - 1, 1, out) == 0 ? 1 : -1) : 1;
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

void s3_sigv4_signing_key_service(const char *secret, const char *date8, const char *region,
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

void s3_sigv4_signing_key(const char *secret, const char *date8, const char *region,
                          uint8_t out[32])
{
    s3_sigv4_signing_key_service(secret, date8, region, "s3", out);
}

/* signature = hex(HMAC(kSigning, "AWS4-HMAC-SHA256\n<date>\n<scope>\n<hex(sha256(creq))>")) */
static void sigv4_signature(const uint8_t key[32], const char *amz_date, const char *scope,
                            const char *creq, size_t creq_len, char sig[65])
{
    char h[65], sts[256];
    wh_sha256_hex(creq, creq_len, h);
    int n = snprintf(sts, sizeof sts, SIGV4_ALGO "\n%s\n%s\n%s", amz_date, scope, h);
    uint8_t mac[WH_SHA256_LEN];
    wh_hmac_sha256(key, 32, sts, (size_t)WH_MIN((size_t)n, sizeof sts - 1), mac);
    wh_hex_encode(mac, sizeof mac, sig);
}

/* Appends a header value trimmed, with runs of spaces and tabs collapsed to one space. */
static void canon_value(wh_sbuf_t *b, const char *v)
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

static int ct_equal(const char *a, const char *b, size_t n)
{
    unsigned char d = 0;
    for (size_t i = 0; i < n; i++)
        d |= (unsigned char)(a[i] ^ b[i]);
    return d == 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Signing (client) */

typedef struct sign_hdr {
    char *lname;
    const char *value;
    size_t idx;
} sign_hdr_t;

static int sign_hdr_cmp(const void *a, const void *b)
{
    const sign_hdr_t *x = a, *y = b;
    int c = strcmp(x->lname, y->lname);
    if (c)
        return c;
    return x->idx < y->idx ? -1 : x->idx > y->idx; /* stable: keep the caller's order */
}

int s3_sigv4_sign_service(const s3_sign_input_t *in, const char *service,
                          wh_sbuf_t *canonical_request, char *out, size_t outlen)
{
    int rc = -1;
    wh_sbuf_t creq, signed_hdrs;
    wh_sbuf_init(&creq);
    wh_sbuf_init(&signed_hdrs);
    sign_hdr_t *hs = calloc(in->n_headers ? in->n_headers : 1, sizeof *hs);
    if (!hs)
        return -1;
    for (size_t i = 0; i < in->n_headers; i++) {
        hs[i].lname = strdup(in->header_names[i]);
        if (!hs[i].lname)
            goto cleanup;
        for (char *c = hs[i].lname; *c; c++)
            if (*c >= 'A' && *c <= 'Z')
                *c = (char)(*c - 'A' + 'a');
        hs[i].value = in->header_values[i] ? in->header_values[i] : "";
        hs[i].idx = i;
    }
    qsort(hs, in->n_headers, sizeof *hs, sign_hdr_cmp);

    char amz_date[17], date8[9], scope[160];
    wh_amz_date(in->when, amz_date);
    memcpy(date8, amz_date, 8);
    date8[8] = '\0';
    if ((size_t)snprintf(scope, sizeof scope, "%s/%s/%s/" SIGV4_TERM, date8, in->region,
                         service) >= sizeof scope)
        goto cleanup;

    wh_sbuf_puts(&creq, in->method);
    wh_sbuf_append(&creq, "\n", 1);
    wh_sbuf_puts(&creq, in->canonical_uri && *in->canonical_uri ? in->canonical_uri : "/");
    wh_sbuf_append(&creq, "\n", 1);
    if (s3_sigv4_canonical_query(in->query, NULL, &creq) != 0)
        goto cleanup;
    wh_sbuf_append(&creq, "\n", 1);
    for (size_t i = 0; i < in->n_headers; i++) {
        int same = i > 0 && strcmp(hs[i].lname, hs[i - 1].lname) == 0;
        if (same) {
            wh_sbuf_append(&creq, ",", 1); /* repeated header: values comma-joined in order */
        } else {
            if (i > 0) {
                wh_sbuf_append(&creq, "\n", 1);
                wh_sbuf_append(&signed_hdrs, ";", 1);
            }
            wh_sbuf_puts(&creq, hs[i].lname);
            wh_sbuf_append(&creq, ":", 1);
            wh_sbuf_puts(&signed_hdrs, hs[i].lname);
        }
        canon_value(&creq, hs[i].value);
    }
    if (in->n_headers)
        wh_sbuf_append(&creq, "\n", 1);
    wh_sbuf_append(&creq, "\n", 1);
    if (signed_hdrs.len)
        wh_sbuf_append(&creq, signed_hdrs.data, signed_hdrs.len);
    wh_sbuf_append(&creq, "\n", 1);
    wh_sbuf_puts(&creq, in->payload_hash ? in->payload_hash : S3_UNSIGNED_PAYLOAD);
    if (creq.oom || signed_hdrs.oom)
        goto cleanup;

    uint8_t key[32];
    char sig[65];
    s3_sigv4_signing_key_service(in->secret_key, date8, in->region, service, key);
    sigv4_signature(key, amz_date, scope, creq.data, creq.len, sig);
    int n = snprintf(out, outlen, SIGV4_ALGO " Credential=%s/%s, SignedHeaders=%s, Signature=%s",
                     in->access_key, scope, signed_hdrs.data ? signed_hdrs.data : "", sig);
    if (n < 0 || (size_t)n >= outlen)
        goto cleanup;
    if (canonical_request)
        wh_sbuf_append(canonical_request, creq.data, creq.len);
    rc = 0;
cleanup:
    for (size_t i = 0; i < in->n_headers; i++)
        free(hs[i].lname);
    free(hs);
    wh_sbuf_free(&creq);
    wh_sbuf_free(&signed_hdrs);
    return rc;
}

int s3_sigv4_sign(const s3_sign_input_t *in, char *out, size_t outlen)
{
    return s3_sigv4_sign_service(in, "s3", NULL, out, outlen);
}

int s3_sigv4_presign(const char *method, const char *canonical_uri, const char *host,
                     const char *access_key, const char *secret_key, const char *region,
                     time_t when, unsigned expires, wh_sbuf_t *out)
{
    if (expires < 1 || expires > SIGV4_MAX_PRESIGN_EXPIRES)
        return -1;
    char amz_date[17], date8[9], scope[160];
    wh_amz_date(when, amz_date);
    memcpy(date8, amz_date, 8);
    date8[8] = '\0';
    if ((size_t)snprintf(scope, sizeof scope, "%s/%s/s3/" SIGV4_TERM, date8, region) >=
        sizeof scope)
        return -1;
    int rc = -1;
    wh_sbuf_t q, cred, creq;
    wh_sbuf_init(&q);
    wh_sbuf_init(&cred);
    wh_sbuf_init(&creq);
    wh_sbuf_puts(&cred, access_key);
    wh_sbuf_append(&cred, "/", 1);
    wh_sbuf_puts(&cred, scope);
    /* Already in canonical (sorted) order. */
    wh_sbuf_puts(&q, "X-Amz-Algorithm=" SIGV4_ALGO "&X-Amz-Credential=");
    s3_uri_encode(cred.data ? cred.data : "", cred.len, 1, &q);
    wh_sbuf_printf(&q, "&X-Amz-Date=%s&X-Amz-Expires=%u&X-Amz-SignedHeaders=host", amz_date,
                   expires);
    wh_sbuf_printf(&creq, "%s\n%s\n", method,
                   canonical_uri && *canonical_uri ? canonical_uri : "/");
    wh_sbuf_append(&creq, q.data, q.len);
    wh_sbuf_puts(&creq, "\nhost:");
    canon_value(&creq, host);
    wh_sbuf_puts(&creq, "\n\nhost\n" S3_UNSIGNED_PAYLOAD);
    if (q.oom || cred.oom || creq.oom)
        goto cleanup;
    uint8_t key[32];
    char sig[65];
    s3_sigv4_signing_key(secret_key, date8, region, key);
    sigv4_signature(key, amz_date, scope, creq.data, creq.len, sig);
    wh_sbuf_append(out, q.data, q.len);
    wh_sbuf_puts(out, "&X-Amz-Signature=");
    wh_sbuf_puts(out, sig);
    rc = out->oom ? -1 : 0;
cleanup:
    wh_sbuf_free(&q);
    wh_sbuf_free(&cred);
    wh_sbuf_free(&creq);
    return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* Verification (server) */

/* The parsed credential and signature, from either the header or the query form. */
typedef struct sigv4_parsed {
    char access_key[128];
    char date8[9];
    char region[64];
    char signed_headers[1024];
    char signature[65];
} sigv4_parsed_t;

static s3_err_t fail(char *msg, size_t msglen, s3_err_t e, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static s3_err_t fail(char *msg, size_t msglen, s3_err_t e, const char *fmt, ...)
{
    if (msg && msglen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, msglen, fmt, ap);
        va_end(ap);
    }
    return e;
}

static int all_digits(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return 0;
    return 1;
}

/* "AKID/20130524/us-east-1/s3/aws4_request" */
static s3_err_t parse_credential(const char *cred, size_t n, sigv4_parsed_t *p, s3_err_t bad,
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
            return fail(msg, msglen, bad,
                        "credential '%.200s' is not of the form "
                        "<access-key>/<YYYYMMDD>/<region>/s3/aws4_request",
                        cred);
        parts[i] = s;
        lens[i] = (size_t)(end - s);
        end = s - 1;
    }
    size_t aklen = (size_t)(end - cred);
    if (lens[0] != strlen(SIGV4_TERM) || memcmp(parts[0], SIGV4_TERM, lens[0]) != 0)
        return fail(msg, msglen, bad, "credential must end in '/aws4_request', got '%.*s'",
                    (int)WH_MIN(lens[0], 64), parts[0]);
    if (lens[1] != 2 || memcmp(parts[1], "s3", 2) != 0)
        return fail(msg, msglen, bad, "credential service must be 's3', got '%.*s'",
                    (int)WH_MIN(lens[1], 64), parts[1]);
    if (lens[2] == 0 || lens[2] >= sizeof p->region)
        return fail(msg, msglen, bad, "credential region must be 1 to %zu characters",
                    sizeof p->region - 1);
    for (size_t i = 0; i < lens[2]; i++) {
        char c = parts[2][i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_'))
            return fail(msg, msglen, bad, "credential region '%.*s' has an invalid character",
                        (int)WH_MIN(lens[2], 64), parts[2]);
    }
    if (lens[3] != 8 || !all_digits(parts[3], 8))
        return fail(msg, msglen, bad, "credential date must be YYYYMMDD, got '%.*s'",
                    (int)WH_MIN(lens[3], 64), parts[3]);
    if (aklen == 0 || aklen >= sizeof p->access_key)
        return fail(msg, msglen, bad, "credential access key must be 1 to %zu characters",
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
static s3_err_t parse_signed_headers(const char *s, size_t n, sigv4_parsed_t *p, s3_err_t bad,
                                     char *msg, size_t msglen)
{
    if (n == 0)
        return fail(msg, msglen, bad, "SignedHeaders is empty; it must list at least host");
    if (n >= sizeof p->signed_headers)
        return fail(msg, msglen, bad, "SignedHeaders is longer than %zu bytes",
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
            return fail(msg, msglen, bad, "SignedHeaders '%.200s' has an empty name",
                        p->signed_headers);
        for (size_t i = 0; i < len; i++) {
            char ch = c[i];
            if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' ||
                  ch == '_' || ch == '.'))
                return fail(msg, msglen, bad,
                            "SignedHeaders name '%.*s' must be lowercase letters, digits, "
                            "'-', '_' or '.'",
                            (int)WH_MIN(len, 64), c);
        }
        if (cnt == SIGV4_MAX_SIGNED_HEADERS)
            return fail(msg, msglen, bad, "SignedHeaders lists more than %d headers",
                        SIGV4_MAX_SIGNED_HEADERS);
        for (size_t i = 0; i < cnt; i++)
            if (lens[i] == len && memcmp(names[i], c, len) == 0)
                return fail(msg, msglen, bad, "SignedHeaders lists '%.*s' twice",
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
        return fail(msg, msglen, bad, "SignedHeaders '%.200s' does not include host",
                    p->signed_headers);
    return S3_OK;
}

static s3_err_t parse_signature(const char *s, size_t n, sigv4_parsed_t *p, s3_err_t bad,
                                char *msg, size_t msglen)
{
    if (n != 64)
        return fail(msg, msglen, bad, "Signature must be 64 hex characters, got %zu", n);
    for (size_t i = 0; i < 64; i++) {
        int v = wh_hex_digit((char)s[i]);
        if (v < 0)
            return fail(msg, msglen, bad, "Signature has a non-hex character at offset %zu", i);
        p->signature[i] = "0123456789abcdef"[v];
    }
    p->signature[64] = '\0';
    return S3_OK;
}

/* "AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., Signature=..." */
static s3_err_t parse_auth_header(const char *h, sigv4_parsed_t *p, char *msg, size_t msglen)
{
    const s3_err_t bad = S3_ERR_AUTH_HEADER_MALFORMED;
    size_t alen = strlen(SIGV4_ALGO);
    if (strncmp(h, "AWS ", 4) == 0)
        return fail(msg, msglen, S3_ERR_INVALID_REQUEST,
                    "signature version 2 is not supported; sign requests with " SIGV4_ALGO);
    if (strncmp(h, SIGV4_ALGO, alen) != 0 || (h[alen] != ' ' && h[alen] != '\t'))
        return fail(msg, msglen, bad,
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
            return fail(msg, msglen, bad, "Authorization component '%.*s' has no '='",
                        (int)WH_MIN(clen, 64), comp);
        size_t klen = (size_t)(eq - comp), vlen = clen - klen - 1;
        const char *v = eq + 1;
        s3_err_t e = S3_OK;
        int *seen = NULL;
        if (klen == 10 && memcmp(comp, "Credential", 10) == 0) {
            seen = &have_cred;
            if (!*seen)
                e = parse_credential(v, vlen, p, bad, msg, msglen);
        } else if (klen == 13 && memcmp(comp, "SignedHeaders", 13) == 0) {
            seen = &have_sh;
            if (!*seen)
                e = parse_signed_headers(v, vlen, p, bad, msg, msglen);
        } else if (klen == 9 && memcmp(comp, "Signature", 9) == 0) {
            seen = &have_sig;
            if (!*seen)
                e = parse_signature(v, vlen, p, bad, msg, msglen);
        } else {
            return fail(msg, msglen, bad, "Authorization has an unknown component '%.*s'",
                        (int)WH_MIN(klen, 64), comp);
        }
        if (*seen)
            return fail(msg, msglen, bad, "Authorization has '%.*s' twice", (int)klen, comp);
        if (e != S3_OK)
            return e;
        *seen = 1;
    }
    if (!have_cred)
        return fail(msg, msglen, bad, "Authorization is missing Credential=");
    if (!have_sh)
        return fail(msg, msglen, bad, "Authorization is missing SignedHeaders=");
    if (!have_sig)
        return fail(msg, msglen, bad, "Authorization is missing Signature=");
    return S3_OK;
}

static int amz_date_valid(const char *s, size_t n)
{
    return n == 16 && all_digits(s, 8) && s[8] == 'T' && all_digits(s + 9, 6) && s[15] == 'Z';
}

static s3_err_t classify_payload(const char *v, s3_auth_t *a, char *msg, size_t msglen)
{
    size_t n = strlen(v);
    if (n == 64) {
        int ok = 1;
        for (size_t i = 0; i < 64 && ok; i++)
            ok = wh_hex_digit((char)v[i]) >= 0;
        if (ok) {
            a->mode = S3_PAYLOAD_SHA256;
            for (size_t i = 0; i < 64; i++)
                a->payload_hash[i] = "0123456789abcdef"[wh_hex_digit((char)v[i])];
            a->payload_hash[64] = '\0';
            return S3_OK;
        }
    }
    if (strcmp(v, S3_UNSIGNED_PAYLOAD) == 0) {
        a->mode = S3_PAYLOAD_UNSIGNED;
    } else if (strcmp(v, S3_STREAMING_SIGNED) == 0) {
        a->mode = S3_PAYLOAD_STREAMING_SIGNED;
    } else if (strcmp(v, S3_STREAMING_SIGNED_TRAILER) == 0) {
        a->mode = S3_PAYLOAD_STREAMING_SIGNED;
        a->signed_trailer = 1;
    } else if (strcmp(v, S3_STREAMING_UNSIGNED_TRAILER) == 0) {
        a->mode = S3_PAYLOAD_STREAMING_UNSIGNED_TRAILER;
    } else {
        return fail(msg, msglen, S3_ERR_INVALID_ARGUMENT,
                    "x-amz-content-sha256 must be a 64-hex SHA-256 of the body, "
                    S3_UNSIGNED_PAYLOAD ", " S3_STREAMING_SIGNED ", " S3_STREAMING_SIGNED_TRAILER
                    " or " S3_STREAMING_UNSIGNED_TRAILER "; got '%.80s'",
                    v);
    }
    return S3_OK;
}

/* Canonical URI from the path as received: every segment decoded, then re-encoded the way
 * S3 clients encode (unreserved kept, everything else %XX, '/' separating segments).
 * Returns -1 when a segment has a bad %-escape. */
static int canon_path(const char *path, wh_sbuf_t *out)
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
        if (uri_decode(p, len, 0, &seg) != 0) {
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

/* Canonical headers ("name:value\n" for each signed header) into out. A signed header that the
 * request lacks is an error: the client signed something we did not receive. */
static s3_err_t canon_headers(const s3_http_req_t *req, const char *signed_headers,
                              wh_sbuf_t *out, char *msg, size_t msglen)
{
    char name[256];
    const char *c = signed_headers;
    while (1) {
        const char *semi = strchr(c, ';');
        size_t len = semi ? (size_t)(semi - c) : strlen(c);
        if (len >= sizeof name)
            return fail(msg, msglen, S3_ERR_AUTH_HEADER_MALFORMED,
                        "signed header name longer than %zu bytes", sizeof name - 1);
        memcpy(name, c, len);
        name[len] = '\0';
        const char *v = req->get_header(req->arg, name);
        if (!v)
            return fail(msg, msglen, S3_ERR_SIGNATURE_MISMATCH,
                        "header '%s' is in SignedHeaders but not in the request", name);
        wh_sbuf_append(out, name, len);
        wh_sbuf_append(out, ":", 1);
        canon_value(out, v);
        wh_sbuf_append(out, "\n", 1);
        if (!semi)
            break;
        c = semi + 1;
    }
    return S3_OK;
}

static int has_param(const char *query, const char *name)
{
    wh_sbuf_t tmp;
    wh_sbuf_init(&tmp);
    int r = s3_query_param(query, name, &tmp);
    wh_sbuf_free(&tmp);
    return r != 0;
}

/* Reads a required presign parameter into out (NUL-terminated, at most outlen-1 bytes). */
static s3_err_t presign_param(const char *query, const char *name, char *out, size_t outlen,
                              char *msg, size_t msglen)
{
    wh_sbuf_t v;
    wh_sbuf_init(&v);
    int r = s3_query_param(query, name, &v);
    s3_err_t e = S3_OK;
    if (r == 0)
        e = fail(msg, msglen, S3_ERR_AUTH_QUERY_MALFORMED,
                 "presigned URL is missing the %s query parameter", name);
    else if (r < 0 || v.oom)
        e = fail(msg, msglen, S3_ERR_AUTH_QUERY_MALFORMED,
                 "query parameter %s has a bad %%-escape", name);
    else if (v.len >= outlen || (v.len && memchr(v.data, '\0', v.len)))
        e = fail(msg, msglen, S3_ERR_AUTH_QUERY_MALFORMED,
                 "query parameter %s is longer than %zu bytes or holds a NUL", name,
                 outlen - 1);
    else {
        memcpy(out, v.len ? v.data : "", v.len);
        out[v.len] = '\0';
    }
    wh_sbuf_free(&v);
    return e;
}

s3_err_t s3_sigv4_verify(const s3_http_req_t *req, s3_secret_cb secret_cb, void *cb_arg,
                         time_t now, s3_auth_t *out, char *msg, size_t msglen)
{
    if (msg && msglen)
        msg[0] = '\0';
    s3_auth_t a;
    memset(&a, 0, sizeof a);
    sigv4_parsed_t p;
    memset(&p, 0, sizeof p);
    s3_err_t e;
    const char *query = req->query;
    const char *authz = req->get_header(req->arg, "authorization");
    int q_auth = has_param(query, "X-Amz-Algorithm") || has_param(query, "X-Amz-Signature") ||
                 has_param(query, "X-Amz-Credential");
    if (authz && q_auth)
        return fail(msg, msglen, S3_ERR_INVALID_ARGUMENT,
                    "only one auth mechanism is allowed: the request has both an Authorization "
                    "header and X-Amz-* query parameters");
    if (!authz && !q_auth) {
        if (has_param(query, "AWSAccessKeyId") && has_param(query, "Signature"))
            return fail(msg, msglen, S3_ERR_INVALID_REQUEST,
                        "signature version 2 presigned URLs are not supported; presign with "
                        SIGV4_ALGO);
        return fail(msg, msglen, S3_ERR_ACCESS_DENIED,
                    "the request is not signed (no Authorization header, no X-Amz-Signature); "
                    "anonymous access is not allowed");
    }

    char amz_date[17] = "";
    const s3_err_t bad = authz ? S3_ERR_AUTH_HEADER_MALFORMED : S3_ERR_AUTH_QUERY_MALFORMED;
    if (authz) {
        if ((e = parse_auth_header(authz, &p, msg, msglen)) != S3_OK)
            return e;
        const char *xd = req->get_header(req->arg, "x-amz-date");
        if (xd) {
            if (!amz_date_valid(xd, strlen(xd)) || wh_amz_date_parse(xd, &a.req_time) != 0)
                return fail(msg, msglen, S3_ERR_ACCESS_DENIED,
                            "x-amz-date '%.40s' is not of the form YYYYMMDDTHHMMSSZ", xd);
            memcpy(amz_date, xd, 17);
        } else {
            const char *d = req->get_header(req->arg, "date");
            if (!d)
                return fail(msg, msglen, S3_ERR_ACCESS_DENIED,
                            "SigV4 requires an x-amz-date or Date header");
            if (wh_http_date_parse(d, &a.req_time) != 0)
                return fail(msg, msglen, S3_ERR_ACCESS_DENIED,
                            "Date '%.40s' is not an HTTP date", d);
            wh_amz_date(a.req_time, amz_date);
        }
        if (memcmp(p.date8, amz_date, 8) != 0)
            return fail(msg, msglen, bad,
                        "credential date %s does not match the request date %s", p.date8,
                        amz_date);
        long long skew = (long long)now - (long long)a.req_time;
        if (skew > S3_MAX_SKEW_S || skew < -S3_MAX_SKEW_S)
            return fail(msg, msglen, S3_ERR_REQUEST_TIME_TOO_SKEWED,
                        "request time %s is %lld s %s the server's clock; at most %d s allowed",
                        amz_date, skew < 0 ? -skew : skew, skew < 0 ? "ahead of" : "behind",
                        S3_MAX_SKEW_S);
    } else {
        char algo[32], cred[256], sh[1024], sig[80], expires_s[16];
        if ((e = presign_param(query, "X-Amz-Algorithm", algo, sizeof algo, msg, msglen)))
            return e;
        if (strcmp(algo, SIGV4_ALGO) != 0)
            return fail(msg, msglen, bad, "X-Amz-Algorithm must be " SIGV4_ALGO ", got '%s'",
                        algo);
        if ((e = presign_param(query, "X-Amz-Credential", cred, sizeof cred, msg, msglen)) ||
            (e = parse_credential(cred, strlen(cred), &p, bad, msg, msglen)))
            return e;
        if ((e = presign_param(query, "X-Amz-Date", amz_date, sizeof amz_date, msg, msglen)))
            return e;
        if (!amz_date_valid(amz_date, strlen(amz_date)) ||
            wh_amz_date_parse(amz_date, &a.req_time) != 0)
            return fail(msg, msglen, bad, "X-Amz-Date '%s' is not of the form YYYYMMDDTHHMMSSZ",
                        amz_date);
        if (memcmp(p.date8, amz_date, 8) != 0)
            return fail(msg, msglen, bad,
                        "credential date %s does not match the request date %s", p.date8,
                        amz_date);
        if ((e = presign_param(query, "X-Amz-Expires", expires_s, sizeof expires_s, msg,
                               msglen)))
            return e;
        uint64_t expires;
        if (wh_parse_u64(expires_s, strlen(expires_s), &expires) != 0 || expires < 1 ||
            expires > SIGV4_MAX_PRESIGN_EXPIRES)
            return fail(msg, msglen, bad,
                        "X-Amz-Expires must be a number of seconds from 1 to %d (7 days), "
                        "got '%s'",
                        SIGV4_MAX_PRESIGN_EXPIRES, expires_s);
        if ((e = presign_param(query, "X-Amz-SignedHeaders", sh, sizeof sh, msg, msglen)) ||
            (e = parse_signed_headers(sh, strlen(sh), &p, bad, msg, msglen)))
            return e;
        if ((e = presign_param(query, "X-Amz-Signature", sig, sizeof sig, msg, msglen)) ||
            (e = parse_signature(sig, strlen(sig), &p, bad, msg, msglen)))
            return e;
        if ((long long)a.req_time - (long long)now > S3_MAX_SKEW_S)
            return fail(msg, msglen, S3_ERR_ACCESS_DENIED,
                        "presigned URL is not valid yet: X-Amz-Date %s is in the future",
                        amz_date);
        if ((long long)now > (long long)a.req_time + (long long)expires)
            return fail(msg, msglen, S3_ERR_EXPIRED_TOKEN,
                        "presigned URL expired: signed at %s for %llu s, now %lld s past that",
                        amz_date, (unsigned long long)expires,
                        (long long)now - (long long)a.req_time - (long long)expires);
        a.presigned = 1;
    }
    /* Payload mode. */
    const char *csha = req->get_header(req->arg, "x-amz-content-sha256");
    if (csha) {
        if ((e = classify_payload(csha, &a, msg, msglen)) != S3_OK)
            return e;
    } else if (a.presigned) {
        a.mode = S3_PAYLOAD_EMPTY;
    } else {
        return fail(msg, msglen, S3_ERR_INVALID_REQUEST,
                    "missing required header for this request: x-amz-content-sha256");
    }
    a.has_trailer = req->get_header(req->arg, "x-amz-trailer") != NULL;

    const char *secret = secret_cb(cb_arg, p.access_key);
    if (!secret)
        return fail(msg, msglen, S3_ERR_INVALID_ACCESS_KEY,
                    "access key '%.100s' is not known to this server", p.access_key);

    /* Canonical request: method, path, query, headers, signed headers, payload hash. */
    int ok = 0;
    wh_sbuf_t path, rest, creq;
    wh_sbuf_init(&path);
    wh_sbuf_init(&rest);
    wh_sbuf_init(&creq);
    char scope[160];
    snprintf(scope, sizeof scope, "%s/%s/s3/" SIGV4_TERM, p.date8, p.region);
    wh_sbuf_append(&rest, "\n", 1);
    if (s3_sigv4_canonical_query(query, a.presigned ? "X-Amz-Signature" : NULL, &rest) != 0) {
        e = fail(msg, msglen, S3_ERR_INVALID_ARGUMENT,
                 "the query string has a bad %%-escape or more than %d parameters",
                 SIGV4_MAX_QUERY_PARAMS);
        goto cleanup;
    }
    wh_sbuf_append(&rest, "\n", 1);
    if ((e = canon_headers(req, p.signed_headers, &rest, msg, msglen)) != S3_OK)
        goto cleanup;
    wh_sbuf_printf(&rest, "\n%s\n%s", p.signed_headers,
                   csha ? csha : S3_UNSIGNED_PAYLOAD);

    uint8_t key[32];
    char sig[65];
    s3_sigv4_signing_key(secret, p.date8, p.region, key);
    int norm_ok = canon_path(req->path, &path) == 0;
    const char *raw = req->path && *req->path ? req->path : "/";
    for (int attempt = 0; attempt < 2 && !ok; attempt++) {
        const char *uri;
        if (attempt == 0) {
            if (!norm_ok)
                continue;
            uri = path.data;
        } else {
            if (norm_ok && strcmp(path.data, raw) == 0)
                break;
            uri = raw;
        }
        wh_sbuf_reset(&creq);
        wh_sbuf_puts(&creq, req->method);
        wh_sbuf_append(&creq, "\n", 1);
        wh_sbuf_puts(&creq, uri);
        wh_sbuf_append(&creq, rest.data, rest.len);
        if (creq.oom || rest.oom) {
            e = fail(msg, msglen, S3_ERR_INTERNAL, "out of memory building the canonical request");
            goto cleanup;
        }
        sigv4_signature(key, amz_date, scope, creq.data, creq.len, sig);
        ok = ct_equal(sig, p.signature, 64);
    }
    if (!ok) {
        char h[65];
        wh_sha256_hex(creq.data ? creq.data : "", creq.len, h);
        wh_debug("s3", "sigv4 mismatch access_key=%s canonical_request_sha256=%s", p.access_key, h);
        e = fail(msg, msglen, S3_ERR_SIGNATURE_MISMATCH,
                 "the signature does not match the one computed over the canonical request "
                 "(sha256 %s); check the secret key and that the method, path, query and the "
                 "signed headers (%.200s) were sent as signed",
                 h, p.signed_headers);
        goto cleanup;
    }

    snprintf(a.access_key, sizeof a.access_key, "%s", p.access_key);
    snprintf(a.region, sizeof a.region, "%s", p.region);
    memcpy(a.amz_date, amz_date, sizeof a.amz_date);
    snprintf(a.scope, sizeof a.scope, "%s", scope);
    memcpy(a.signature, p.signature, sizeof a.signature);
    snprintf(a.signed_headers, sizeof a.signed_headers, "%s", p.signed_headers);
    memcpy(a.signing_key, key, sizeof key);
    *out = a;
    e = S3_OK;
cleanup:
    wh_sbuf_free(&path);
    wh_sbuf_free(&rest);
    wh_sbuf_free(&creq);
    return e;
}

int s3_auth_header_signed(const s3_auth_t *a, const char *lname)
{
    size_t n = strlen(lname);
    const char *c = a->signed_headers;
    while (*c) {
        const char *semi = strchr(c, ';');
        size_t len = semi ? (size_t)(semi - c) : strlen(c);
        if (len == n && memcmp(c, lname, n) == 0)
            return 1;
        if (!semi)
            break;
        c = semi + 1;
    }
    return 0;
}
