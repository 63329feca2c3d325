/* SPDX-License-Identifier: Apache-2.0 */
/* AWS Signature Version 2 verification (auth/sigv2.h).
 *
 * Signers differ in a few places, and each variant is tried (each is one HMAC-SHA1):
 *  - the Date line when x-amz-date is sent: AWS documents it empty, botocore signs the Date
 *    header there anyway;
 *  - the path: as sent, or decoded and re-encoded the way SigV4 canonicalises it, or (a
 *    bucket-level request) with the trailing '/' botocore adds;
 *  - the sub-resources: the classic list (what botocore and s3cmd sign), or that list with
 *    the ones AWS's later APIs added (what RGW and newer signers sign);
 *  - botocore's operation query ahead of the sub-resources (below).
 * Every variant is built from the request as received: none lets a signature cover less. */
#include "auth/sigv2.h"
#include "auth/sigv4_int.h"

#include "base/codec.h"
#include "base/digest.h"
#include "base/log.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* The sub-resources every V2 signer signs (AWS's documented list, and botocore's). */
static const char *const k_sub_classic[] = {
    "accelerate",
    "acl",
    "cors",
    "defaultObjectAcl",
    "delete",
    "lifecycle",
    "location",
    "logging",
    "notification",
    "partNumber",
    "policy",
    "requestPayment",
    "response-cache-control",
    "response-content-disposition",
    "response-content-encoding",
    "response-content-language",
    "response-content-type",
    "response-expires",
    "restore",
    "storageClass",
    "tagging",
    "torrent",
    "uploadId",
    "uploads",
    "versionId",
    "versioning",
    "versions",
    "website",
    "replication",
    "analytics",
    "metrics",
    "inventory",
    "select",
    "select-type",
    "object-lock",
    "legal-hold",
    "retention",
};

/* Added by later signers (RGW's list, newer SDKs). */
static const char *const k_sub_extended[] = {
    "encryption",     "ownershipControls", "publicAccessBlock",   "attributes",     "append",
    "position",       "policyStatus",      "intelligent-tiering", "website-config", "replicas",
    "tagging-config", "uploadId-marker",   "object-lambda",       "renameObject",
};

int auth_sigv2_subresource(const char *name, size_t n, int extended)
{
    for (size_t i = 0; i < WH_ARRAY_SIZE(k_sub_classic); i++)
        if (strlen(k_sub_classic[i]) == n && memcmp(k_sub_classic[i], name, n) == 0)
            return 1;
    if (extended)
        for (size_t i = 0; i < WH_ARRAY_SIZE(k_sub_extended); i++)
            if (strlen(k_sub_extended[i]) == n && memcmp(k_sub_extended[i], name, n) == 0)
                return 1;
    return 0;
}

int auth_sigv2_present(const auth_http_req_t *req)
{
    const char *authz = req->get_header(req->arg, "authorization");
    if (authz)
        return strncmp(authz, "AWS ", 4) == 0;
    if (sigv4_has_param(req->query, "X-Amz-Algorithm") ||
        sigv4_has_param(req->query, "X-Amz-Credential") ||
        sigv4_has_param(req->query, "X-Amz-Signature"))
        return 0;
    return sigv4_has_param(req->query, "AWSAccessKeyId") ||
           sigv4_has_param(req->query, "Signature");
}

s3_err_t auth_sigv2_parse_header(const char *h, char access_key[128], char sig[64], char *msg,
                                 size_t msglen)
{
    static const char want[] = "AWS authorization header is invalid; expected "
                               "'AWS AccessKeyId:Signature'";
    if (strncmp(h, "AWS ", 4) != 0)
        return s3_errf(S3_ERR_INVALID_ARGUMENT, msg, msglen, "%s", want);
    const char *p = h + 4;
    while (*p == ' ')
        p++;
    const char *colon = strrchr(p, ':');
    if (!colon || colon == p || colon[1] == '\0')
        return s3_errf(S3_ERR_INVALID_ARGUMENT, msg, msglen, "%s", want);
    size_t akl = (size_t)(colon - p);
    const char *s = colon + 1;
    size_t sl = strlen(s);
    while (sl && s[sl - 1] == ' ')
        sl--;
    if (akl >= 128 || memchr(p, ' ', akl) || sl == 0 || sl >= 64 || memchr(s, ' ', sl))
        return s3_errf(S3_ERR_INVALID_ARGUMENT, msg, msglen, "%s", want);
    memcpy(access_key, p, akl);
    access_key[akl] = '\0';
    memcpy(sig, s, sl);
    sig[sl] = '\0';
    return S3_OK;
}

/* Appends the value with leading and trailing spaces and tabs dropped. */
static void trimmed(wh_sbuf_t *out, const char *v)
{
    while (*v == ' ' || *v == '\t')
        v++;
    size_t n = strlen(v);
    while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
        n--;
    wh_sbuf_append(out, v, n);
}

typedef struct amz_hdr {
    char name[128];
    const char *value;
} amz_hdr_t;

static int amz_cmp(const void *a, const void *b)
{
    return strcmp(((const amz_hdr_t *)a)->name, ((const amz_hdr_t *)b)->name);
}

/* "name:value\n" for each x-amz-* header, lowercase names in order. -1 on too many. */
static int amz_headers(const auth_http_req_t *req, wh_sbuf_t *out)
{
    enum { MAX_AMZ = 64 };
    amz_hdr_t h[MAX_AMZ];
    size_t n = 0;
    const char *name, *value;
    for (size_t i = 0; req->header_at && (name = req->header_at(req->arg, i, &value)); i++) {
        size_t l = strlen(name);
        if (l < 6 || strncasecmp(name, "x-amz-", 6) != 0)
            continue;
        if (n == MAX_AMZ || l >= sizeof h[0].name)
            return -1;
        for (size_t k = 0; k <= l; k++) {
            char c = name[k];
            h[n].name[k] = (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
        }
        h[n++].value = value;
    }
    qsort(h, n, sizeof h[0], amz_cmp);
    for (size_t i = 0; i < n; i++) {
        wh_sbuf_puts(out, h[i].name);
        wh_sbuf_append(out, ":", 1);
        trimmed(out, h[i].value);
        wh_sbuf_append(out, "\n", 1);
    }
    return 0;
}

typedef struct subres {
    const char *name; /* into the raw query */
    size_t name_len;
    const char *value; /* raw, NULL: no '=' */
    size_t value_len;
} subres_t;

static int subres_cmp(const void *a, const void *b)
{
    const subres_t *x = a, *y = b;
    size_t n = x->name_len < y->name_len ? x->name_len : y->name_len;
    int c = memcmp(x->name, y->name, n);
    if (c)
        return c;
    return x->name_len < y->name_len ? -1 : x->name_len > y->name_len;
}

/* "?a&b=v" of the signed sub-resources, values decoded. -1 on a bad escape or too many. */
static int sub_resources(const char *query, int extended, wh_sbuf_t *out)
{
    enum { MAX_SUB = 64 };
    subres_t s[MAX_SUB];
    size_t n = 0;
    for (const char *p = query; p && *p;) {
        const char *amp = strchr(p, '&');
        size_t len = amp ? (size_t)(amp - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        size_t nl = eq ? (size_t)(eq - p) : len;
        if (nl && auth_sigv2_subresource(p, nl, extended)) {
            if (n == MAX_SUB)
                return -1;
            s[n].name = p;
            s[n].name_len = nl;
            s[n].value = eq ? eq + 1 : NULL;
            s[n].value_len = eq ? len - nl - 1 : 0;
            n++;
        }
        if (!amp)
            break;
        p = amp + 1;
    }
    if (!n)
        return 0;
    /* Stable: equal names keep their order (botocore sorts by name only). */
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && subres_cmp(&s[j - 1], &s[j]) > 0; j--) {
            subres_t t = s[j];
            s[j] = s[j - 1];
            s[j - 1] = t;
        }
    for (size_t i = 0; i < n; i++) {
        wh_sbuf_append(out, i ? "&" : "?", 1);
        wh_sbuf_append(out, s[i].name, s[i].name_len);
        if (s[i].value) {
            wh_sbuf_append(out, "=", 1);
            if (s3_uri_decode(s[i].value, s[i].value_len, out) != 0)
                return -1;
        }
    }
    return 0;
}

int auth_sigv2_string_to_sign(const auth_http_req_t *req, const char *vhost_bucket, const char *uri,
                              const char *date_line, int extended, const char *path_query,
                              wh_sbuf_t *out)
{
    const char *md5 = req->get_header(req->arg, "content-md5");
    const char *ct = req->get_header(req->arg, "content-type");
    wh_sbuf_puts(out, req->method);
    wh_sbuf_append(out, "\n", 1);
    if (md5)
        trimmed(out, md5);
    wh_sbuf_append(out, "\n", 1);
    if (ct)
        trimmed(out, ct);
    wh_sbuf_append(out, "\n", 1);
    trimmed(out, date_line ? date_line : "");
    wh_sbuf_append(out, "\n", 1);
    if (amz_headers(req, out) != 0)
        return -1;
    if (vhost_bucket && *vhost_bucket) {
        wh_sbuf_append(out, "/", 1);
        wh_sbuf_puts(out, vhost_bucket);
    }
    wh_sbuf_puts(out, uri && *uri ? uri : "/");
    if (path_query) {
        wh_sbuf_append(out, "?", 1);
        wh_sbuf_puts(out, path_query);
    }
    if (sub_resources(req->query, extended, out) != 0)
        return -1;
    return out->oom ? -1 : 0;
}

void auth_sigv2_sign(const char *secret, const char *data, size_t len,
                     char out[AUTH_SIGV2_SIG_LEN + 1])
{
    uint8_t mac[WH_SHA1_LEN];
    wh_hmac_sha1(secret, strlen(secret), data, len, mac);
    size_t n = wh_base64_encode(mac, sizeof mac, out);
    out[n] = '\0';
}

/* The signature as sent, with a '+' that query decoding turned into a space put back. */
static void sig_fix(char *sig)
{
    for (char *c = sig; *c; c++)
        if (*c == ' ')
            *c = '+';
}

/* An HTTP date, also with a numeric zone (s3cmd: "Tue, 08 Dec 2026 00:25:51 +0000"). */
static int parse_date(const char *d, time_t *t)
{
    if (wh_http_date_parse(d, t) == 0 || wh_amz_date_parse(d, t) == 0)
        return 0;
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    const char *end = strptime(d, "%a, %d %b %Y %H:%M:%S +0000", &tm);
    if (!end || *end)
        return -1;
    *t = timegm(&tm);
    return 0;
}

/* The request's date (x-amz-date first, else Date): HTTP-date or YYYYMMDDTHHMMSSZ. */
static s3_err_t header_time(const auth_http_req_t *req, time_t now, time_t *t, char *msg,
                            size_t msglen)
{
    const char *xd = req->get_header(req->arg, "x-amz-date");
    const char *d = xd ? xd : req->get_header(req->arg, "date");
    const char *which = xd ? "x-amz-date" : "Date";
    if (!d)
        return s3_errf(S3_ERR_ACCESS_DENIED, msg, msglen,
                       "AWS authentication requires a valid Date or x-amz-date header");
    if (parse_date(d, t) != 0 || *t <= 0)
        return s3_errf(S3_ERR_ACCESS_DENIED, msg, msglen,
                       "AWS authentication requires a valid Date or x-amz-date header: "
                       "%s '%.40s' is not an HTTP date",
                       which, d);
    long long skew = (long long)now - (long long)*t;
    if (skew > AUTH_MAX_SKEW_S || skew < -AUTH_MAX_SKEW_S)
        return s3_errf(S3_ERR_REQUEST_TIME_TOO_SKEWED, msg, msglen,
                       "The difference between the request time and the server's time is too "
                       "large: %s '%.40s' is %lld s %s the server's clock; at most %d s",
                       which, d, skew < 0 ? -skew : skew, skew < 0 ? "ahead of" : "behind",
                       AUTH_MAX_SKEW_S);
    return S3_OK;
}

s3_err_t auth_sigv2_verify(const auth_http_req_t *req, const char *vhost_bucket,
                           auth_secret_cb secret_cb, void *cb_arg, time_t now, auth_auth_t *out,
                           char *msg, size_t msglen)
{
    if (msg && msglen)
        msg[0] = '\0';
    auth_auth_t a;
    memset(&a, 0, sizeof a);
    a.sigv2 = 1;
    char sig[64] = "";
    const char *authz = req->get_header(req->arg, "authorization");
    const char *dates[2] = {NULL, NULL}; /* the Date line's candidates */
    char expires_s[32] = "";
    s3_err_t e;
    if (authz) {
        if ((e = auth_sigv2_parse_header(authz, a.access_key, sig, msg, msglen)) != S3_OK)
            return e;
        if ((e = header_time(req, now, &a.req_time, msg, msglen)) != S3_OK)
            return e;
        const char *xd = req->get_header(req->arg, "x-amz-date");
        const char *d = req->get_header(req->arg, "date");
        dates[0] = xd ? "" : d;
        dates[1] = xd && d ? d : NULL;
    } else {
        if (sigv4_has_param(req->query, "X-Amz-Signature") ||
            sigv4_has_param(req->query, "X-Amz-Credential"))
            return s3_errf(S3_ERR_INVALID_ARGUMENT, msg, msglen,
                           "only one auth mechanism is allowed: the query has both "
                           "Signature Version 2 and X-Amz-* parameters");
        char ak[160];
        if ((e = sigv4_presign_param(req->query, "AWSAccessKeyId", ak, sizeof ak, msg, msglen)) ||
            (e = sigv4_presign_param(req->query, "Signature", sig, sizeof sig, msg, msglen)) ||
            (e = sigv4_presign_param(req->query, "Expires", expires_s, sizeof expires_s, msg,
                                     msglen)))
            return e == S3_ERR_AUTH_QUERY_MALFORMED ? S3_ERR_ACCESS_DENIED : e;
        if (strlen(ak) >= sizeof a.access_key || !*ak)
            return s3_errf(S3_ERR_ACCESS_DENIED, msg, msglen,
                           "AWSAccessKeyId must be 1 to 127 characters");
        memcpy(a.access_key, ak, strlen(ak) + 1); /* fits: checked just above */
        sig_fix(sig);
        uint64_t exp;
        if (wh_parse_u64(expires_s, strlen(expires_s), &exp) != 0 || exp > (uint64_t)INT64_MAX)
            return s3_errf(S3_ERR_ACCESS_DENIED, msg, msglen,
                           "Expires must be the URL's expiry in seconds since the epoch, got "
                           "'%.20s'",
                           expires_s);
        if ((long long)now > (long long)exp)
            return s3_errf(S3_ERR_ACCESS_DENIED, msg, msglen,
                           "Request has expired: Expires %s is %lld s in the past", expires_s,
                           (long long)now - (long long)exp);
        a.req_time = now;
        a.presigned = 1;
        dates[0] = expires_s;
    }
    /* The body is not signed: a claimed x-amz-content-sha256 is still checked by the caller. */
    const char *csha = req->get_header(req->arg, "x-amz-content-sha256");
    a.mode = AUTH_PAYLOAD_UNSIGNED;
    if (csha && strlen(csha) == 64 && strspn(csha, "0123456789abcdef") == 64) {
        a.mode = AUTH_PAYLOAD_SHA256;
        memcpy(a.payload_hash, csha, 65);
    } else if (csha && strcmp(csha, AUTH_STREAMING_UNSIGNED_TRAILER) == 0) {
        a.mode = AUTH_PAYLOAD_STREAMING_UNSIGNED_TRAILER;
    } else if (csha && strcmp(csha, AUTH_UNSIGNED_PAYLOAD) != 0) {
        return s3_errf(S3_ERR_INVALID_ARGUMENT, msg, msglen,
                       "x-amz-content-sha256 '%.80s' cannot be used with Signature Version 2 "
                       "(chunk signatures are SigV4's)",
                       csha);
    }
    a.has_trailer = req->get_header(req->arg, "x-amz-trailer") != NULL;

    const char *secret = secret_cb(cb_arg, a.access_key);
    if (!secret)
        return s3_errf(S3_ERR_INVALID_ACCESS_KEY, msg, msglen,
                       "The AWS Access Key Id you provided does not exist in our records: "
                       "'%.100s'",
                       a.access_key);

    wh_sbuf_t sts, path, slash;
    wh_sbuf_init(&sts);
    wh_sbuf_init(&path);
    wh_sbuf_init(&slash);
    const char *raw = req->path && *req->path ? req->path : "/";
    const char *uris[3] = {raw, NULL, NULL};
    if (sigv4_canon_path(raw, &path) == 0 && path.data && strcmp(path.data, raw) != 0)
        uris[1] = path.data;
    /* A bucket-level request "/bucket": botocore signs "/bucket/". */
    if (raw[0] == '/' && raw[1] && !strchr(raw + 1, '/')) {
        wh_sbuf_printf(&slash, "%s/", raw);
        uris[2] = slash.oom ? NULL : slash.data;
    }
    /* botocore's HmacV1 signs its operation's path, static query included ("/b/k?acl"), and
     * then the sub-resources again ("/b/k?acl?acl"): the query's first parameter as sent. */
    char first_q[256] = "";
    const char *amp = req->query ? strchr(req->query, '&') : NULL;
    size_t fl = req->query ? (amp ? (size_t)(amp - req->query) : strlen(req->query)) : 0;
    if (fl && fl < sizeof first_q) {
        memcpy(first_q, req->query, fl);
        first_q[fl] = '\0';
    }
    int ok = 0, built = 0;
    char want[AUTH_SIGV2_SIG_LEN + 1];
    for (int v = 0; v < 24 && !ok; v++) {
        int ext = v & 1, d = (v >> 1) & 1, pq = (v >> 2) & 1, u = v >> 3;
        if (!uris[u] || (d && !dates[d]) || (pq && !first_q[0]))
            continue;
        wh_sbuf_reset(&sts);
        if (auth_sigv2_string_to_sign(req, vhost_bucket, uris[u], dates[d], ext,
                                      pq ? first_q : NULL, &sts) != 0)
            continue;
        built = 1;
        auth_sigv2_sign(secret, sts.data, sts.len, want);
        ok = strlen(sig) == AUTH_SIGV2_SIG_LEN && sigv4_ct_equal(want, sig, AUTH_SIGV2_SIG_LEN);
    }
    if (!ok) {
        if (!built)
            e = s3_errf(S3_ERR_INVALID_ARGUMENT, msg, msglen,
                        "the request's query or x-amz-* headers cannot be canonicalised (a "
                        "bad %%-escape, or more than 64 of them)");
        else
            e = s3_errf(S3_ERR_SIGNATURE_MISMATCH, msg, msglen,
                        "The request signature we calculated does not match the signature "
                        "you provided (Signature Version 2, HMAC-SHA1); check the secret key "
                        "and the string to sign");
        wh_debug("s3", "sigv2 mismatch access_key=%s", a.access_key);
        goto cleanup;
    }
    /* Every x-amz-* header is in the string to sign. */
    {
        size_t off = 0;
        const char *name, *value;
        for (size_t i = 0; (name = req->header_at(req->arg, i, &value)) != NULL; i++) {
            size_t l = strlen(name);
            if (l < 6 || strncasecmp(name, "x-amz-", 6) != 0)
                continue;
            if (off + l + 2 >= sizeof a.signed_headers)
                break;
            if (off)
                a.signed_headers[off++] = ';';
            for (size_t k = 0; k < l; k++) {
                char c = name[k];
                a.signed_headers[off++] = (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
            }
            a.signed_headers[off] = '\0';
        }
    }
    snprintf(a.signature, sizeof a.signature, "%s", sig);
    *out = a;
    e = S3_OK;
cleanup:
    wh_sbuf_free(&sts);
    wh_sbuf_free(&path);
    wh_sbuf_free(&slash);
    return e;
}

s3_err_t auth_sigv2_post_verify(const char *access_key, const char *signature,
                                const char *policy_b64, auth_secret_cb secret_cb, void *cb_arg,
                                char access_key_out[128], char *msg, size_t msglen)
{
    if (!access_key || !*access_key || !signature || !policy_b64)
        return s3_errf(S3_ERR_INVALID_ARGUMENT, msg, msglen,
                       "a Signature Version 2 POST form needs AWSAccessKeyId, policy and "
                       "signature");
    if (strlen(access_key) >= 128)
        return s3_errf(S3_ERR_INVALID_ARGUMENT, msg, msglen,
                       "AWSAccessKeyId is longer than 127 characters");
    const char *secret = secret_cb(cb_arg, access_key);
    if (!secret)
        return s3_errf(S3_ERR_INVALID_ACCESS_KEY, msg, msglen,
                       "The AWS Access Key Id you provided does not exist in our records");
    char want[AUTH_SIGV2_SIG_LEN + 1];
    auth_sigv2_sign(secret, policy_b64, strlen(policy_b64), want);
    if (strlen(signature) != AUTH_SIGV2_SIG_LEN ||
        !sigv4_ct_equal(want, signature, AUTH_SIGV2_SIG_LEN))
        return s3_errf(S3_ERR_SIGNATURE_MISMATCH, msg, msglen,
                       "The request signature we calculated does not match the signature you "
                       "provided: signature must be base64(HMAC-SHA1(secret, policy))");
    snprintf(access_key_out, 128, "%s", access_key);
    return S3_OK;
}
