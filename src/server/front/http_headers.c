/* SPDX-License-Identifier: Apache-2.0 */
/* The HTTP front's request headers: collected once, indexed for lookups (front_hdr), and the
 * SigV4 verification over them (front_req_verify). */
#include "front/http_int.h"
#include "auth/sigv2.h"
#include "base/defaults.h"
#include "base/log.h"

#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define MOD "http"

/* ---- headers ----------------------------------------------------------------------------
 * The header section is collected once, in time linear in its size: each line is appended
 * (no lookups while collecting), the collection stops at the size and count limits, and the
 * array is then sorted by lowercase name (stable, so repeated headers keep their order) and
 * repeats are comma-joined. Lookups are binary searches. A linear duplicate search per line
 * made 10,000 header lines cost a fifth of a second of CPU before authentication. */

const char *front_hdr(const front_req_t *r, const char *lname)
{
    size_t lo = 0, hi = r->nhdrs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(r->hdrs[mid].lname, lname);
        if (c == 0)
            return r->hdrs[mid].value;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

bool front_req_add_header(front_req_t *r, const char *key, const char *value)
{
    if (!value)
        value = "";
    size_t kn = strlen(key), vn = strlen(value);
    r->hdr_bytes += kn + vn + 4; /* "name: value\r\n" */
    r->hdr_lines++;
    if (r->hdr_bytes > FRONT_MAX_HEADER_BYTES || r->hdr_lines > FRONT_MAX_HEADER_LINES)
        return false; /* over a limit: the request is refused, the rest is not looked at */
    if (r->nhdrs == r->hdrs_cap) {
        size_t cap = r->hdrs_cap ? r->hdrs_cap * 2 : 32;
        front_hdr_t *h = realloc(r->hdrs, cap * sizeof *h);
        if (!h)
            goto oom;
        r->hdrs = h;
        r->hdrs_cap = cap;
    }
    char *lname = malloc(kn + 1);
    char *v = malloc(vn + 1);
    if (!lname || !v) {
        free(lname);
        free(v);
        goto oom;
    }
    for (size_t i = 0; i <= kn; i++) {
        char c = key[i];
        lname[i] = (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
    }
    memcpy(v, value, vn + 1);
    r->hdrs[r->nhdrs].lname = lname;
    r->hdrs[r->nhdrs].value = v;
    r->nhdrs++;
    return true;
oom:
    r->hdr_oom = true;
    return false;
}

enum MHD_Result front_req_collect_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                         const char *value)
{
    (void)kind;
    if (!key)
        return MHD_YES;
    return front_req_add_header(cls, key, value) ? MHD_YES : MHD_NO;
}

typedef struct hdr_sort {
    front_hdr_t h;
    size_t seq;
} hdr_sort_t;

static int hdr_sort_cmp(const void *a, const void *b)
{
    const hdr_sort_t *x = a, *y = b;
    int c = strcmp(x->h.lname, y->h.lname);
    if (c)
        return c;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Sorts the collected headers by name and joins repeats with ",". Returns false on OOM. */
bool front_req_index_headers(front_req_t *r)
{
    if (r->nhdrs < 2)
        return true;
    hdr_sort_t *t = malloc(r->nhdrs * sizeof *t);
    if (!t)
        return false;
    for (size_t i = 0; i < r->nhdrs; i++)
        t[i] = (hdr_sort_t){r->hdrs[i], i};
    qsort(t, r->nhdrs, sizeof *t, hdr_sort_cmp);
    bool ok = true;
    size_t out = 0;
    for (size_t i = 0; i < r->nhdrs;) {
        size_t j = i + 1, len = strlen(t[i].h.value);
        while (j < r->nhdrs && strcmp(t[j].h.lname, t[i].h.lname) == 0)
            len += 1 + strlen(t[j++].h.value);
        front_hdr_t h = t[i].h;
        if (j > i + 1) {
            char *joined = ok ? malloc(len + 1) : NULL;
            if (joined) {
                size_t k = 0;
                for (size_t m = i; m < j; m++) {
                    size_t n = strlen(t[m].h.value);
                    if (m > i)
                        joined[k++] = ',';
                    memcpy(joined + k, t[m].h.value, n);
                    k += n;
                }
                joined[k] = '\0';
            } else {
                ok = false;
            }
            for (size_t m = i + 1; m < j; m++) {
                free(t[m].h.lname);
                free(t[m].h.value);
            }
            if (joined) {
                free(h.value);
                h.value = joined;
            }
        }
        r->hdrs[out++] = h;
        i = j;
    }
    r->nhdrs = out;
    free(t);
    return ok;
}

static const char *sigv4_get_header(void *arg, const char *lname)
{
    return front_hdr(arg, lname);
}

static const char *sigv4_header_at(void *arg, size_t i, const char **value)
{
    const front_req_t *r = arg;
    if (i >= r->nhdrs)
        return NULL;
    *value = r->hdrs[i].value;
    return r->hdrs[i].lname;
}

/* Root's key never touches the database; any other is one indexed lookup of the users' keys
 * (identity.h), so a deleted or Inactive key fails at this very request. */
const char *front_req_secret(void *arg, const char *access_key)
{
    front_req_t *r = arg;
    front_t *s = r->srv;
    if (strcmp(access_key, s->cfg.access_key) == 0) {
        ident_root(s->ident, access_key, &r->who);
        return s->cfg.secret_key;
    }
    wh_status_t st =
        ident_lookup(s->ident, access_key, r->secret_buf, sizeof r->secret_buf, &r->who);
    if (st != WH_OK) {
        if (st != WH_ERR_NOT_FOUND)
            wh_warn(MOD, "access key lookup failed id=%s: %s", r->id, wh_status_str(st));
        r->ident_err = st;
        return NULL;
    }
    return r->secret_buf;
}

void front_req_secret_wipe(front_req_t *r)
{
    memset(r->secret_buf, 0, sizeof r->secret_buf);
}

static s3_err_t verify_as(front_req_t *r, time_t now, const char *service, const char *payload_hash,
                          char *msg, size_t msglen)
{
    auth_http_req_t hr = {
        .method = r->method,
        .path = r->path,
        .query = r->query,
        .get_header = sigv4_get_header,
        .header_at = sigv4_header_at,
        .arg = r,
        .service = service,
        .payload_hash = payload_hash,
    };
    /* Signature Version 2 (header "AWS key:sig", or the query's AWSAccessKeyId and
     * Signature): served unless the setting sigv2 = off refuses it, never served as an
     * anonymous request. */
    const char *authz = front_hdr(r, "authorization");
    if (auth_sigv2_present(&hr)) {
        memset(&r->who, 0, sizeof r->who);
        if (service) {
            snprintf(msg, msglen,
                     "the %s API takes AWS Signature Version 4 only, not Signature Version 2",
                     service);
            return S3_ERR_INVALID_REQUEST;
        }
        if (r->srv->cfg.sigv2_off) {
            snprintf(msg, msglen,
                     "Signature Version 2 is turned off on this server (setting sigv2 = off, "
                     "--sigv2 off): sign the request with AWS Signature Version 4 "
                     "(AWS4-HMAC-SHA256)");
            return S3_ERR_INVALID_REQUEST;
        }
        s3_err_t e = auth_sigv2_verify(&hr, r->route.vhost ? r->route.bucket : NULL,
                                       front_req_secret, r, now, &r->auth, msg, msglen);
        front_req_secret_wipe(r);
        if (e != S3_OK)
            memset(&r->who, 0, sizeof r->who);
        if (e == S3_ERR_INVALID_ACCESS_KEY && r->ident_err == WH_ERR_UNAVAILABLE) {
            snprintf(msg, msglen, "the metadata database holding access keys is unreachable");
            e = S3_ERR_SERVICE_UNAVAILABLE;
        }
        return e;
    }
    /* No Authorization header and no presigned query: the anonymous principal, served only
     * where an ACL or a bucket policy grants it (s3h_authorize). */
    if (!authz && !(r->query && (strstr(r->query, "X-Amz-Signature=") ||
                                 strstr(r->query, "X-Amz-Credential=")))) {
        memset(&r->auth, 0, sizeof r->auth);
        const char *h = front_hdr(r, "x-amz-content-sha256");
        r->auth.mode = AUTH_PAYLOAD_UNSIGNED;
        if (h && strlen(h) == 64 && strspn(h, "0123456789abcdef") == 64) {
            r->auth.mode = AUTH_PAYLOAD_SHA256; /* a claimed body hash is still checked */
            memcpy(r->auth.payload_hash, h, 65);
        } else if (h && strcmp(h, "STREAMING-UNSIGNED-PAYLOAD-TRAILER") == 0) {
            r->auth.mode = AUTH_PAYLOAD_STREAMING_UNSIGNED_TRAILER;
            r->auth.has_trailer = front_hdr(r, "x-amz-trailer") != NULL;
        }
        auth_principal_anon(&r->who);
        return S3_OK;
    }
    s3_err_t e = auth_sigv4_verify(&hr, front_req_secret, r, now, &r->auth, msg, msglen);
    front_req_secret_wipe(r);
    if (e != S3_OK)
        memset(&r->who, 0, sizeof r->who); /* anonymous until a signature passes */
    if (e == S3_ERR_INVALID_ACCESS_KEY && r->ident_err == WH_ERR_UNAVAILABLE) {
        snprintf(msg, msglen, "the metadata database holding access keys is unreachable");
        e = S3_ERR_SERVICE_UNAVAILABLE;
    }
    /* The credential scope names the region the request was signed for; S3 refuses another
     * region's. IAM is global: its clients sign for us-east-1 whatever the S3 region is. */
    const char *want = r->srv->cfg.region ? r->srv->cfg.region : WH_DEFAULT_REGION;
    if (e == S3_OK && strcmp(r->auth.region, want) != 0 &&
        !(service && strcmp(service, "iam") == 0 &&
          (strcmp(r->auth.region, "us-east-1") == 0 || r->auth.region[0] == '\0'))) {
        snprintf(msg, msglen,
                 "the authorization %s malformed; the region '%.63s' is "
                 "wrong; expecting '%s'",
                 r->auth.presigned ? "query parameters are" : "header is", r->auth.region, want);
        memset(&r->who, 0, sizeof r->who);
        e = r->auth.presigned ? S3_ERR_AUTH_QUERY_MALFORMED : S3_ERR_AUTH_HEADER_MALFORMED;
    }
    return e;
}

s3_err_t front_req_verify(front_req_t *r, time_t now, char *msg, size_t msglen)
{
    return verify_as(r, now, NULL, NULL, msg, msglen);
}

s3_err_t front_req_verify_iam(front_req_t *r, time_t now, const char *payload_hash, char *msg,
                              size_t msglen)
{
    return verify_as(r, now, "iam", payload_hash, msg, msglen);
}

bool front_req_swap_headers(front_req_t *r, bool (*drop)(const char *lname),
                            const char *const *names, const char *const *values, size_t n)
{
    size_t keep = 0;
    r->hdr_bytes = r->hdr_lines = 0;
    for (size_t i = 0; i < r->nhdrs; i++) {
        if (drop(r->hdrs[i].lname)) {
            free(r->hdrs[i].lname);
            free(r->hdrs[i].value);
            continue;
        }
        r->hdr_bytes += strlen(r->hdrs[i].lname) + strlen(r->hdrs[i].value) + 4;
        r->hdr_lines++;
        r->hdrs[keep++] = r->hdrs[i];
    }
    r->nhdrs = keep;
    for (size_t i = 0; i < n; i++)
        if (!front_req_add_header(r, names[i], values[i]))
            return false;
    return !r->hdr_oom && front_req_index_headers(r);
}
