/* SPDX-License-Identifier: Apache-2.0 */
/* Temporary credentials (STS's GetSessionToken and AssumeRole): an access key id ASIA..., a
 * secret and a session token, kept as an IAM record (kind "session", key: the access key id)
 * with the secret sealed under the server key, the token's SHA-256 (never the token), the
 * expiry and the principal the credentials sign as. Every request signed with them is checked
 * here: the token it carries must be the session's, and the session unexpired. */
#include "base/codec.h"
#include "base/digest.h"
#include "base/log.h"
#include "auth/sigv4.h"
#include "ident/identity.h"
#include "s3/uri.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MOD "ident"
#define KIND "session"
#define SESSION_KEEP_EXPIRED 86400

static int random_text(char *out, size_t n)
{
    static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    unsigned char raw[IDENT_TOKEN_LEN];
    if (n > sizeof raw || wh_random_bytes(raw, n) != 0)
        return -1;
    for (size_t i = 0; i < n; i++)
        out[i] = abc[raw[i] % (sizeof abc - 1)];
    out[n] = '\0';
    return 0;
}

static void add(wh_sbuf_t *b, const char *name, const char *value)
{
    if (b->len)
        wh_sbuf_puts(b, "&");
    wh_sbuf_puts(b, name);
    wh_sbuf_puts(b, "=");
    s3_uri_encode(value, strlen(value), 1, b);
}

static bool field(const char *doc, const char *name, char *out, size_t cap)
{
    wh_sbuf_t v;
    wh_sbuf_init(&v);
    bool ok = auth_query_param(doc, name, &v) == 1 && !v.oom;
    if (ok)
        snprintf(out, cap, "%.*s", (int)v.len, v.data ? v.data : "");
    wh_sbuf_free(&v);
    return ok;
}

/* Sessions expired a day ago are dropped when a new one is made: they keep answering
 * ExpiredToken until then. */
static void sessions_prune(ident_t *id)
{
    meta_rec_t *rs = NULL;
    size_t n = 0;
    if (meta_rec_list(ident_meta(id), KIND, "", &rs, &n) != WH_OK)
        return;
    long long old = (long long)time(NULL) - SESSION_KEEP_EXPIRED;
    for (size_t i = 0; i < n; i++) {
        char exp[24] = "0";
        field(rs[i].doc, "exp", exp, sizeof exp);
        if (atoll(exp) < old)
            meta_rec_delete(ident_meta(id), KIND, rs[i].key);
    }
    meta_recs_free(rs, n);
}

wh_status_t ident_session_create(ident_t *id, const auth_principal_t *as, time_t expires,
                                 const char *policy, ident_session_t *out)
{
    sessions_prune(id);
    memset(out, 0, sizeof *out);
    memcpy(out->access_key, "ASIA", 4);
    if (random_text(out->access_key + 4, 16) != 0 || random_text(out->secret, 40) != 0 ||
        random_text(out->token, IDENT_TOKEN_LEN) != 0)
        return WH_ERR_INTERNAL;
    for (char *p = out->access_key + 4; *p; p++) /* ids are upper case, as AWS's */
        if (*p >= 'a' && *p <= 'z')
            *p = (char)(*p - 'a' + 'A');
    out->expires = expires;
    char sealed[META_SEALED_MAX], tok[65], exp[24], kind[4];
    wh_status_t st =
        ident_seal(id, out->access_key, out->secret, strlen(out->secret), sealed, sizeof sealed);
    if (st != WH_OK)
        return st;
    wh_sha256_hex(out->token, strlen(out->token), tok);
    snprintf(exp, sizeof exp, "%lld", (long long)expires);
    snprintf(kind, sizeof kind, "%d", (int)as->kind);
    wh_sbuf_t d;
    wh_sbuf_init(&d);
    add(&d, "sealed", sealed);
    add(&d, "tok", tok);
    add(&d, "exp", exp);
    add(&d, "kind", kind);
    add(&d, "user", as->user);
    add(&d, "canon", as->canonical_id);
    add(&d, "arn", as->arn);
    if (policy)
        add(&d, "spol", policy);
    st = d.oom ? WH_ERR_NOMEM : meta_rec_put(ident_meta(id), KIND, out->access_key, d.data, true);
    wh_sbuf_free(&d);
    return st;
}

wh_status_t ident_session_lookup(ident_t *id, const char *access_key, const char *token,
                                 char *secret, size_t cap, auth_principal_t *who)
{
    char *doc = NULL;
    wh_status_t st = meta_rec_get(ident_meta(id), KIND, access_key, &doc);
    if (st != WH_OK) {
        free(doc);
        return st;
    }
    char sealed[META_SEALED_MAX] = "", tok[65] = "", exp[24] = "0", kind[4] = "0", given[65];
    field(doc, "sealed", sealed, sizeof sealed);
    field(doc, "tok", tok, sizeof tok);
    field(doc, "exp", exp, sizeof exp);
    field(doc, "kind", kind, sizeof kind);
    memset(who, 0, sizeof *who);
    field(doc, "user", who->user, sizeof who->user);
    field(doc, "canon", who->canonical_id, sizeof who->canonical_id);
    field(doc, "arn", who->arn, sizeof who->arn);
    free(doc);
    wh_sha256_hex(token ? token : "", token ? strlen(token) : 0, given);
    if (!token || strcmp(given, tok) != 0) {
        memset(who, 0, sizeof *who);
        /* without a token the key is unknown, as AWS answers; with another, a bad token */
        return token ? WH_ERR_AUTH : WH_ERR_NOT_FOUND;
    }
    if ((long long)time(NULL) >= atoll(exp)) {
        memset(who, 0, sizeof *who);
        return WH_ERR_TIMEOUT; /* kept a day, to say so (ident_session_create drops it) */
    }
    if (cap < 41 || ident_unseal(id, access_key, sealed, secret, 40) != WH_OK) {
        memset(who, 0, sizeof *who);
        wh_error(MOD, "the secret of session %s does not open with this server key", access_key);
        return WH_ERR_INTERNAL;
    }
    secret[40] = '\0';
    who->kind = atoi(kind) == AUTH_PRINCIPAL_ROOT ? AUTH_PRINCIPAL_ROOT : AUTH_PRINCIPAL_USER;
    snprintf(who->access_key, sizeof who->access_key, "%s", access_key);
    return WH_OK;
}

wh_status_t ident_session_policy(ident_t *id, const char *access_key, char **doc)
{
    *doc = NULL;
    char *rec = NULL;
    wh_status_t st = meta_rec_get(ident_meta(id), KIND, access_key, &rec);
    if (st == WH_OK) {
        wh_sbuf_t v;
        wh_sbuf_init(&v);
        if (auth_query_param(rec, "spol", &v) != 1)
            st = WH_ERR_NOT_FOUND;
        else if (v.oom)
            st = WH_ERR_NOMEM;
        else {
            wh_sbuf_append(&v, "", 1);
            *doc = wh_sbuf_steal(&v);
        }
        wh_sbuf_free(&v);
    }
    free(rec);
    return st;
}
