/* SPDX-License-Identifier: Apache-2.0 */
/* SigV4 verification (server side), for the Authorization header and presigned URLs.
 *
 * Verification rebuilds the canonical request from the request as received; S3 does not
 * double-encode the path, so each path segment is decoded and re-encoded (s3_uri_encode), and
 * the raw path is tried as well for clients that sign what they sent without normalising it. */
#include "auth/sigv4_int.h"

#include "base/codec.h"
#include "base/digest.h"
#include "base/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Canonical headers ("name:value\n" for each signed header) into out. A signed header that the
 * request lacks is an error: the client signed something we did not receive. */
static s3_err_t canon_headers(const auth_http_req_t *req, const char *signed_headers,
                              wh_sbuf_t *out, char *msg, size_t msglen)
{
    char name[256];
    const char *c = signed_headers;
    while (1) {
        const char *semi = strchr(c, ';');
        size_t len = semi ? (size_t)(semi - c) : strlen(c);
        if (len >= sizeof name)
            return s3_errf(S3_ERR_AUTH_HEADER_MALFORMED, msg, msglen,
                           "signed header name longer than %zu bytes", sizeof name - 1);
        memcpy(name, c, len);
        name[len] = '\0';
        const char *v = req->get_header(req->arg, name);
        if (!v)
            return s3_errf(S3_ERR_SIGNATURE_MISMATCH, msg, msglen,
                           "header '%s' is in SignedHeaders but not in the request", name);
        wh_sbuf_append(out, name, len);
        wh_sbuf_append(out, ":", 1);
        sigv4_canon_value(out, v);
        wh_sbuf_append(out, "\n", 1);
        if (!semi)
            break;
        c = semi + 1;
    }
    return S3_OK;
}

/* True if name (any case, n bytes) is in the ';'-separated lowercase list. */
static int list_has(const char *list, const char *name, size_t n)
{
    const char *c = list;
    while (*c) {
        const char *semi = strchr(c, ';');
        size_t len = semi ? (size_t)(semi - c) : strlen(c);
        if (len == n && strncasecmp(c, name, n) == 0)
            return 1;
        if (!semi)
            break;
        c = semi + 1;
    }
    return 0;
}

/* Every x-amz-* header must be signed: unsigned ones could change what the request does
 * (x-amz-copy-source, x-amz-rdma-token, x-amz-meta-*, x-amz-acl, ...) without the signer's
 * consent. Exempt are the headers the signature binds by value anyway (see sigv4.h). The
 * reply names the offenders, after S3's wording. */
static s3_err_t check_unsigned(const auth_http_req_t *req, const char *signed_headers,
                               int presigned, char *msg, size_t msglen)
{
    if (!req->header_at)
        return s3_errf(S3_ERR_INTERNAL, msg, msglen,
                       "the request's headers cannot be enumerated to check their signing");
    wh_sbuf_t bad;
    wh_sbuf_init(&bad);
    size_t nbad = 0;
    const char *name, *value;
    for (size_t i = 0; (name = req->header_at(req->arg, i, &value)) != NULL; i++) {
        size_t n = strlen(name);
        if (n < 6 || strncasecmp(name, "x-amz-", 6) != 0)
            continue;
        if (strcasecmp(name, "x-amz-content-sha256") == 0 ||
            (!presigned && strcasecmp(name, "x-amz-date") == 0))
            continue;
        if (list_has(signed_headers, name, n))
            continue;
        if (nbad++ < 8) {
            wh_sbuf_puts(&bad, nbad > 1 ? ", " : ": ");
            for (size_t k = 0; k < n && k < 64; k++) {
                char ch = name[k];
                ch = (ch >= 'A' && ch <= 'Z') ? (char)(ch - 'A' + 'a') : ch;
                wh_sbuf_append(&bad, &ch, 1);
            }
        }
    }
    s3_err_t e = S3_OK;
    if (nbad)
        e = s3_errf(S3_ERR_ACCESS_DENIED, msg, msglen,
                    "There were headers present in the request which were not signed%s%s",
                    bad.data && !bad.oom ? bad.data : "", nbad > 8 ? ", ..." : "");
    wh_sbuf_free(&bad);
    return e;
}

s3_err_t auth_sigv4_verify(const auth_http_req_t *req, auth_secret_cb secret_cb, void *cb_arg,
                           time_t now, auth_auth_t *out, char *msg, size_t msglen)
{
    if (msg && msglen)
        msg[0] = '\0';
    auth_auth_t a;
    memset(&a, 0, sizeof a);
    sigv4_parsed_t p;
    memset(&p, 0, sizeof p);
    p.service = req->service ? req->service : "s3";
    s3_err_t e;
    const char *query = req->query;
    const char *authz = req->get_header(req->arg, "authorization");
    int q_auth = sigv4_has_param(query, "X-Amz-Algorithm") ||
                 sigv4_has_param(query, "X-Amz-Signature") ||
                 sigv4_has_param(query, "X-Amz-Credential");
    if (authz && q_auth)
        return s3_errf(S3_ERR_INVALID_ARGUMENT, msg, msglen,
                       "only one auth mechanism is allowed: the request has both an Authorization "
                       "header and X-Amz-* query parameters");
    if (!authz && !q_auth) {
        if (sigv4_has_param(query, "AWSAccessKeyId") && sigv4_has_param(query, "Signature"))
            return s3_errf(
                S3_ERR_INVALID_REQUEST, msg, msglen,
                "signature version 2 presigned URLs are not supported; presign with " SIGV4_ALGO);
        return s3_errf(S3_ERR_ACCESS_DENIED, msg, msglen,
                       "the request is not signed (no Authorization header, no X-Amz-Signature); "
                       "anonymous access is not allowed");
    }

    char amz_date[17] = "";
    const s3_err_t bad = authz ? S3_ERR_AUTH_HEADER_MALFORMED : S3_ERR_AUTH_QUERY_MALFORMED;
    if (authz) {
        if ((e = sigv4_parse_auth_header(authz, &p, msg, msglen)) != S3_OK)
            return e;
        const char *xd = req->get_header(req->arg, "x-amz-date");
        if (xd) {
            if (!sigv4_amz_date_valid(xd, strlen(xd)) || wh_amz_date_parse(xd, &a.req_time) != 0)
                return s3_errf(S3_ERR_ACCESS_DENIED, msg, msglen,
                               "x-amz-date '%.40s' is not of the form YYYYMMDDTHHMMSSZ", xd);
            memcpy(amz_date, xd, 17);
        } else {
            const char *d = req->get_header(req->arg, "date");
            if (!d)
                return s3_errf(S3_ERR_ACCESS_DENIED, msg, msglen,
                               "SigV4 requires an x-amz-date or Date header");
            if (wh_http_date_parse(d, &a.req_time) != 0)
                return s3_errf(S3_ERR_ACCESS_DENIED, msg, msglen,
                               "Date '%.40s' is not an HTTP date", d);
            wh_amz_date(a.req_time, amz_date);
        }
        if (memcmp(p.date8, amz_date, 8) != 0)
            return s3_errf(bad, msg, msglen,
                           "credential date %s does not match the request date %s", p.date8,
                           amz_date);
        long long skew = (long long)now - (long long)a.req_time;
        if (skew > AUTH_MAX_SKEW_S || skew < -AUTH_MAX_SKEW_S)
            return s3_errf(S3_ERR_REQUEST_TIME_TOO_SKEWED, msg, msglen,
                           "request time %s is %lld s %s the server's clock; at most %d s allowed",
                           amz_date, skew < 0 ? -skew : skew, skew < 0 ? "ahead of" : "behind",
                           AUTH_MAX_SKEW_S);
    } else {
        char algo[32], cred[256], sh[1024], sig[80], expires_s[16];
        if ((e = sigv4_presign_param(query, "X-Amz-Algorithm", algo, sizeof algo, msg, msglen)))
            return e;
        if (strcmp(algo, SIGV4_ALGO) != 0)
            return s3_errf(bad, msg, msglen, "X-Amz-Algorithm must be " SIGV4_ALGO ", got '%s'",
                           algo);
        if ((e = sigv4_presign_param(query, "X-Amz-Credential", cred, sizeof cred, msg, msglen)) ||
            (e = sigv4_parse_credential(cred, strlen(cred), &p, bad, msg, msglen)))
            return e;
        if ((e = sigv4_presign_param(query, "X-Amz-Date", amz_date, sizeof amz_date, msg, msglen)))
            return e;
        if (!sigv4_amz_date_valid(amz_date, strlen(amz_date)) ||
            wh_amz_date_parse(amz_date, &a.req_time) != 0)
            return s3_errf(bad, msg, msglen, "X-Amz-Date '%s' is not of the form YYYYMMDDTHHMMSSZ",
                           amz_date);
        if (memcmp(p.date8, amz_date, 8) != 0)
            return s3_errf(bad, msg, msglen,
                           "credential date %s does not match the request date %s", p.date8,
                           amz_date);
        if ((e = sigv4_presign_param(query, "X-Amz-Expires", expires_s, sizeof expires_s, msg,
                                     msglen)))
            return e;
        uint64_t expires;
        if (wh_parse_u64(expires_s, strlen(expires_s), &expires) != 0 || expires < 1 ||
            expires > SIGV4_MAX_PRESIGN_EXPIRES)
            return s3_errf(bad, msg, msglen,
                           "X-Amz-Expires must be a number of seconds from 1 to %d (7 days), "
                           "got '%s'",
                           SIGV4_MAX_PRESIGN_EXPIRES, expires_s);
        if ((e = sigv4_presign_param(query, "X-Amz-SignedHeaders", sh, sizeof sh, msg, msglen)) ||
            (e = sigv4_parse_signed_headers(sh, strlen(sh), &p, bad, msg, msglen)))
            return e;
        if ((e = sigv4_presign_param(query, "X-Amz-Signature", sig, sizeof sig, msg, msglen)) ||
            (e = sigv4_parse_signature(sig, strlen(sig), &p, bad, msg, msglen)))
            return e;
        if ((long long)a.req_time - (long long)now > AUTH_MAX_SKEW_S)
            return s3_errf(S3_ERR_ACCESS_DENIED, msg, msglen,
                           "presigned URL is not valid yet: X-Amz-Date %s is in the future",
                           amz_date);
        if ((long long)now > (long long)a.req_time + (long long)expires)
            return s3_errf(S3_ERR_EXPIRED_TOKEN, msg, msglen,
                           "presigned URL expired: signed at %s for %llu s, now %lld s past that",
                           amz_date, (unsigned long long)expires,
                           (long long)now - (long long)a.req_time - (long long)expires);
        a.presigned = 1;
    }
    /* Payload mode. */
    const char *csha = req->get_header(req->arg, "x-amz-content-sha256");
    if (csha) {
        if ((e = sigv4_classify_payload(csha, &a, msg, msglen)) != S3_OK)
            return e;
    } else if (req->payload_hash) {
        /* The caller hashed the body itself (the IAM API: its clients send no
         * x-amz-content-sha256); the signature covers that hash. */
        a.mode = AUTH_PAYLOAD_SHA256;
        snprintf(a.payload_hash, sizeof a.payload_hash, "%s", req->payload_hash);
        csha = req->payload_hash;
    } else if (a.presigned) {
        a.mode = AUTH_PAYLOAD_EMPTY;
    } else {
        return s3_errf(S3_ERR_INVALID_REQUEST, msg, msglen,
                       "missing required header for this request: x-amz-content-sha256");
    }
    a.has_trailer = req->get_header(req->arg, "x-amz-trailer") != NULL;

    const char *secret = secret_cb(cb_arg, p.access_key);
    if (!secret)
        return s3_errf(S3_ERR_INVALID_ACCESS_KEY, msg, msglen,
                       "access key '%.100s' is not known to this server", p.access_key);

    /* Canonical request: method, path, query, headers, signed headers, payload hash. */
    int ok = 0;
    wh_sbuf_t path, rest, creq;
    wh_sbuf_init(&path);
    wh_sbuf_init(&rest);
    wh_sbuf_init(&creq);
    char scope[160];
    snprintf(scope, sizeof scope, "%s/%s/%s/" SIGV4_TERM, p.date8, p.region, p.service);
    wh_sbuf_append(&rest, "\n", 1);
    if (auth_sigv4_canonical_query(query, a.presigned ? "X-Amz-Signature" : NULL, &rest) != 0) {
        e = s3_errf(S3_ERR_INVALID_ARGUMENT, msg, msglen,
                    "the query string has a bad %%-escape or more than %d parameters",
                    SIGV4_MAX_QUERY_PARAMS);
        goto cleanup;
    }
    wh_sbuf_append(&rest, "\n", 1);
    if ((e = canon_headers(req, p.signed_headers, &rest, msg, msglen)) != S3_OK)
        goto cleanup;
    wh_sbuf_printf(&rest, "\n%s\n%s", p.signed_headers, csha ? csha : AUTH_UNSIGNED_PAYLOAD);

    uint8_t key[32];
    char sig[65];
    auth_sigv4_signing_key_service(secret, p.date8, p.region, p.service, key);
    int norm_ok = sigv4_canon_path(req->path, &path) == 0;
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
            e = s3_errf(S3_ERR_INTERNAL, msg, msglen,
                        "out of memory building the canonical request");
            goto cleanup;
        }
        sigv4_signature(key, amz_date, scope, creq.data, creq.len, sig);
        ok = sigv4_ct_equal(sig, p.signature, 64);
    }
    if (!ok) {
        char h[65];
        wh_sha256_hex(creq.data ? creq.data : "", creq.len, h);
        wh_debug("s3", "sigv4 mismatch access_key=%s canonical_request_sha256=%s", p.access_key, h);
        e = s3_errf(S3_ERR_SIGNATURE_MISMATCH, msg, msglen,
                    "the signature does not match the one computed over the canonical request "
                    "(sha256 %s); check the secret key and that the method, path, query and the "
                    "signed headers (%.200s) were sent as signed",
                    h, p.signed_headers);
        goto cleanup;
    }
    if ((e = check_unsigned(req, p.signed_headers, a.presigned, msg, msglen)) != S3_OK)
        goto cleanup;

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

int auth_auth_header_signed(const auth_auth_t *a, const char *lname)
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
