/* SPDX-License-Identifier: Apache-2.0 */
/* Policy evaluation: the compiled form (policy_int.h) against one request, without
 * allocating: wildcard matching, addresses and CIDR blocks, ${...} variables expanded into
 * stack buffers, the condition operators and AWS's rule that a Deny wins. */
#include "auth/policy_int.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

bool auth_glob(const char *pat, const char *s, bool fold)
{
    /* Iterative: on a mismatch go back to the last '*' and let it take one more byte. */
    const char *star = NULL, *resume = NULL;
    while (*s) {
        unsigned char pc = (unsigned char)*pat, sc = (unsigned char)*s;
        if (pc == '*') {
            star = pat++;
            resume = s;
            continue;
        }
        if (pc && (pc == '?' || pc == sc || (fold && tolower(pc) == tolower(sc)))) {
            pat++, s++;
            continue;
        }
        if (!star)
            return false;
        pat = star + 1;
        s = ++resume;
    }
    while (*pat == '*')
        pat++;
    return *pat == '\0';
}

bool auth_ip_parse(const char *s, auth_ip_t *out)
{
    memset(out, 0, sizeof *out);
    if (!s || !*s)
        return false;
    if (inet_pton(AF_INET, s, out->a) == 1) {
        out->family = 4;
        return true;
    }
    if (inet_pton(AF_INET6, s, out->a) == 1) {
        static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        if (memcmp(out->a, mapped, 12) == 0) {
            memmove(out->a, out->a + 12, 4);
            memset(out->a + 4, 0, 12);
            out->family = 4;
        } else {
            out->family = 6;
        }
        return true;
    }
    memset(out, 0, sizeof *out);
    return false;
}

static bool ip_in(const auth_ip_t *ip, const auth_ip_t *net, unsigned plen)
{
    if (ip->family != net->family)
        return false;
    unsigned full = plen / 8, rem = plen % 8;
    if (memcmp(ip->a, net->a, full) != 0)
        return false;
    if (rem) {
        uint8_t mask = (uint8_t)(0xff << (8 - rem));
        if ((ip->a[full] & mask) != (net->a[full] & mask))
            return false;
    }
    return true;
}

/* ${aws:username} and the escapes ${*} ${?} ${$}, into out; false when it does not fit or a
 * variable has no value in this request (the pattern then matches nothing). */
static bool expand(const char *pat, const auth_authz_ctx_t *x, char *out, size_t cap)
{
    size_t o = 0;
    for (const char *p = pat; *p;) {
        const char *val = NULL;
        size_t vl = 0, adv = 1;
        if (p[0] == '$' && p[1] == '{') {
            const char *end = strchr(p, '}');
            if (!end)
                return false;
            size_t n = (size_t)(end - p - 2);
            adv = n + 3;
            if (n == 1 && strchr("*?$", p[2])) {
                val = p + 2, vl = 1;
            } else if (n == 12 && strncasecmp(p + 2, "aws:username", 12) == 0) {
                if (!x->who || x->who->kind != AUTH_PRINCIPAL_USER)
                    return false;
                val = x->who->user, vl = strlen(val);
            } else {
                return false;
            }
        } else {
            val = p, vl = 1;
        }
        if (o + vl + 1 > cap)
            return false;
        memcpy(out + o, val, vl);
        o += vl;
        p += adv;
    }
    out[o] = '\0';
    return true;
}

/* A pattern against s; with variables the pattern is expanded first. Wildcards that came from
 * a ${*} escape are matched as wildcards too (AWS keeps them literal; close enough for keys
 * that never hold '*'). */
static bool pat_match(const pattern_t *p, const char *s, bool fold, const auth_authz_ctx_t *x)
{
    if (!p->has_var)
        return auth_glob(p->s, s, fold);
    char buf[AUTH_ARN_MAX + 256];
    return expand(p->s, x, buf, sizeof buf) && auth_glob(buf, s, fold);
}

static bool principal_match(const stmt_t *st, const auth_authz_ctx_t *x)
{
    const auth_principal_t *w = x->who;
    for (size_t i = 0; i < st->np; i++) {
        const princ_t *p = &st->p[i];
        switch (p->kind) {
        case P_ANY:
            return true;
        case P_ACCOUNT:
            /* The account (NNN or arn:aws:iam::NNN:root), as AWS reads it: an Allow
             * delegates to the account, whose users then need their own policies (their
             * user policies are weighed besides this one), so it grants the account's root
             * only; a Deny, or a NotPrincipal exception, covers every principal of it. */
            if (!w || w->kind == AUTH_PRINCIPAL_ANON || !x->account ||
                strcmp(x->account, p->s) != 0)
                break;
            if (w->kind == AUTH_PRINCIPAL_ROOT || st->deny || st->not_principal)
                return true;
            break;
        case P_ARN:
            if (w && w->arn[0] && strcmp(w->arn, p->s) == 0)
                return true;
            break;
        case P_CANONICAL:
            if (w && w->canonical_id[0] && strcmp(w->canonical_id, p->s) == 0)
                return true;
            break;
        case P_SERVICE: /* no request of wharf's is made by an AWS service */
            break;
        }
    }
    return false;
}

/* The request's value of a condition key as text (NULL: absent); num gets the number where
 * the key is numeric. buf holds formatted numbers. */
static const char *key_value(cond_key_t k, const auth_authz_ctx_t *x, char *buf, size_t cap)
{
    switch (k) {
    case K_PREFIX:
        return x->prefix;
    case K_DELIMITER:
        return x->delimiter;
    case K_MAX_KEYS:
        if (!x->has_max_keys)
            return NULL;
        snprintf(buf, cap, "%llu", (unsigned long long)x->max_keys);
        return buf;
    case K_SECURE_TRANSPORT:
        return x->secure_transport ? "true" : "false";
    case K_USERNAME:
        return x->who && x->who->kind == AUTH_PRINCIPAL_USER ? x->who->user : NULL;
    case K_PRINCIPAL_ARN:
        return x->who && x->who->arn[0] ? x->who->arn : NULL;
    case K_SOURCE_IP:
        return x->source_ip.family ? "ip" : NULL;
    case K_X_AMZ_ACL:
        return x->x_amz_acl;
    case K_AUTH_TYPE:
        return x->auth_type;
    case K_SIGNATURE_VERSION:
        return x->auth_type ? "AWS4-HMAC-SHA256" : NULL;
    case K_UNKNOWN:
        return NULL;
    }
    return NULL;
}

static bool value_match(const cond_t *cd, const cond_val_t *v, const char *s,
                        const auth_authz_ctx_t *x)
{
    char vb[AUTH_ARN_MAX + 256];
    const char *vs = v->s;
    if (v->has_var) {
        if (!expand(v->s, x, vb, sizeof vb))
            return false;
        vs = vb;
    }
    switch (cd->test) {
    case T_STR:
        return strcmp(vs, s) == 0;
    case T_STR_IC:
        return strcasecmp(vs, s) == 0;
    case T_LIKE:
        return auth_glob(vs, s, false);
    case T_BOOL:
        return strcasecmp(vs, s) == 0;
    case T_IP:
        return ip_in(&x->source_ip, &v->ip, v->plen);
    case T_NUM_EQ:
    case T_NUM_LT:
    case T_NUM_LE:
    case T_NUM_GT:
    case T_NUM_GE: {
        char *end;
        double d = strtod(s, &end);
        if (!*s || *end)
            return false;
        switch (cd->test) {
        case T_NUM_EQ:
            return d == v->num;
        case T_NUM_LT:
            return d < v->num;
        case T_NUM_LE:
            return d <= v->num;
        case T_NUM_GT:
            return d > v->num;
        default:
            return d >= v->num;
        }
    }
    case T_NULL:
        return false;
    }
    return false;
}

static bool cond_holds(const cond_t *cd, const auth_authz_ctx_t *x)
{
    char buf[32];
    const char *s = key_value(cd->key, x, buf, sizeof buf);
    if (cd->test == T_NULL) {
        /* "Null": {"k": "true"} holds when k is absent. */
        bool want_absent = strcasecmp(cd->v[0].s, "true") == 0;
        return want_absent == (s == NULL);
    }
    if (cd->key == K_SOURCE_IP && cd->test != T_IP)
        s = NULL; /* the address only compares as an address */
    if (!s)
        return cd->if_exists || cd->neg; /* AWS: a negated operator holds for a missing key */
    if (cd->test == T_IP && cd->key != K_SOURCE_IP)
        return cd->neg;
    bool any = false;
    for (size_t i = 0; i < cd->n && !any; i++)
        any = value_match(cd, &cd->v[i], s, x);
    return cd->neg ? !any : any;
}

static bool stmt_applies(const stmt_t *st, const auth_authz_ctx_t *x)
{
    if (st->has_principal && principal_match(st, x) == st->not_principal)
        return false;
    bool hit = false;
    for (size_t i = 0; i < st->na && !hit; i++)
        hit = pat_match(&st->a[i], x->action, true, x);
    if (hit == st->not_action)
        return false;
    hit = false;
    for (size_t i = 0; i < st->nr && !hit; i++)
        hit = pat_match(&st->r[i], x->resource, false, x);
    if (hit == st->not_resource)
        return false;
    for (size_t i = 0; i < st->nc; i++)
        if (!cond_holds(&st->c[i], x))
            return false;
    return true;
}

auth_policy_result_t auth_policy_eval(const auth_policy_t *pol, const auth_authz_ctx_t *ctx)
{
    if (!pol || !ctx->action || !ctx->resource)
        return AUTH_POLICY_NO_MATCH;
    bool allow = false;
    for (size_t i = 0; i < pol->n; i++) {
        const stmt_t *st = &pol->st[i];
        if (st->deny) {
            if (stmt_applies(st, ctx))
                return AUTH_POLICY_DENY;
        } else if (!allow && stmt_applies(st, ctx)) {
            allow = true;
        }
    }
    return allow ? AUTH_POLICY_ALLOW : AUTH_POLICY_NO_MATCH;
}
