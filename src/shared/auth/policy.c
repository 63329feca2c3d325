/* SPDX-License-Identifier: Apache-2.0 */
/* Bucket and user policies: the JSON grammar AWS accepts for S3 (Version, Statement, Sid,
 * Effect, Principal/NotPrincipal, Action/NotAction, Resource/NotResource, Condition), parsed
 * once with jansson into a compiled form, and evaluated without allocating.
 *
 * The compiled form lives in one arena that auth_policy_free releases at once; evaluation only
 * reads it, so one compiled policy serves every thread. */
#include "auth/policy_int.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- arena ------------------------------------------------------------------------------ */

static void *arena_alloc(arena_blk_t **a, size_t n)
{
    n = (n + sizeof(max_align_t) - 1) & ~(sizeof(max_align_t) - 1);
    if (!*a || (*a)->cap - (*a)->used < n) {
        size_t cap = n > 4096 ? n : 4096;
        arena_blk_t *b = malloc(sizeof *b + cap);
        if (!b)
            return NULL;
        b->next = *a;
        b->used = 0;
        b->cap = cap;
        *a = b;
    }
    void *p = (char *)(*a)->data + (*a)->used;
    (*a)->used += n;
    memset(p, 0, n);
    return p;
}

static char *arena_strdup(arena_blk_t **a, const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = arena_alloc(a, n);
    if (p)
        memcpy(p, s, n);
    return p;
}

/* ---- the tables of the grammar ---------------------------------------------------------- */

static const struct {
    const char *name;
    cond_key_t key;
} g_keys[] = {
    {"aws:SourceIp", K_SOURCE_IP},
    {"s3:prefix", K_PREFIX},
    {"s3:delimiter", K_DELIMITER},
    {"s3:max-keys", K_MAX_KEYS},
    {"aws:SecureTransport", K_SECURE_TRANSPORT},
    {"aws:username", K_USERNAME},
    {"aws:PrincipalArn", K_PRINCIPAL_ARN},
    {"s3:x-amz-acl", K_X_AMZ_ACL},
    {"s3:authType", K_AUTH_TYPE},
    {"s3:signatureversion", K_SIGNATURE_VERSION},
};

static const struct {
    const char *name;
    cond_test_t test;
    bool neg;
} g_ops[] = {
    {"StringEquals", T_STR, false},
    {"StringNotEquals", T_STR, true},
    {"StringEqualsIgnoreCase", T_STR_IC, false},
    {"StringNotEqualsIgnoreCase", T_STR_IC, true},
    {"StringLike", T_LIKE, false},
    {"StringNotLike", T_LIKE, true},
    {"ArnEquals", T_LIKE, false},
    {"ArnNotEquals", T_LIKE, true},
    {"ArnLike", T_LIKE, false},
    {"ArnNotLike", T_LIKE, true},
    {"NumericEquals", T_NUM_EQ, false},
    {"NumericNotEquals", T_NUM_EQ, true},
    {"NumericLessThan", T_NUM_LT, false},
    {"NumericLessThanEquals", T_NUM_LE, false},
    {"NumericGreaterThan", T_NUM_GT, false},
    {"NumericGreaterThanEquals", T_NUM_GE, false},
    {"IpAddress", T_IP, false},
    {"NotIpAddress", T_IP, true},
    {"Bool", T_BOOL, false},
    {"Null", T_NULL, false},
};

/* ---- parse ------------------------------------------------------------------------------ */

typedef struct pctx {
    auth_policy_t *pol;
    bool user; /* user policy: no Principal */
    char *msg;
    size_t msglen;
    size_t si; /* statement number, from 1, for messages; 0 outside */
} pctx_t;

__attribute__((format(printf, 2, 3))) static s3_err_t bad(pctx_t *c, const char *fmt, ...)
{
    char m[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    if (c->msg && c->msglen) {
        if (c->si)
            snprintf(c->msg, c->msglen, "Statement %zu: %s", c->si, m);
        else
            snprintf(c->msg, c->msglen, "%s", m);
    }
    return S3_ERR_MALFORMED_POLICY;
}

static s3_err_t oom(pctx_t *c)
{
    if (c->msg && c->msglen)
        snprintf(c->msg, c->msglen, "out of memory compiling the policy");
    return S3_ERR_INTERNAL;
}

/* A string or an array of strings: calls add for each. */
typedef s3_err_t (*str_cb)(pctx_t *c, const char *s, void *slot, size_t i);

static s3_err_t str_list(pctx_t *c, json_t *v, const char *field, void **arr, size_t elem,
                         size_t *n, str_cb cb)
{
    size_t cnt = json_is_array(v) ? json_array_size(v) : 1;
    if (!json_is_string(v) && !json_is_array(v))
        return bad(c, "%s must be a string or an array of strings", field);
    if (cnt == 0)
        return bad(c, "%s is an empty array", field);
    *arr = arena_alloc(&c->pol->arena, elem * cnt);
    if (!*arr)
        return oom(c);
    for (size_t i = 0; i < cnt; i++) {
        json_t *e = json_is_array(v) ? json_array_get(v, i) : v;
        if (!json_is_string(e))
            return bad(c, "%s must hold strings only", field);
        const char *s = json_string_value(e);
        if (strlen(s) != json_string_length(e))
            return bad(c, "%s holds a NUL byte", field);
        s3_err_t e2 = cb(c, s, (char *)*arr + i * elem, i);
        if (e2 != S3_OK)
            return e2;
    }
    *n = cnt;
    return S3_OK;
}

static bool has_var(pctx_t *c, const char *s)
{
    return c->pol->vars && strstr(s, "${") != NULL;
}

/* Every ${...} of a value is one the evaluator expands (policy_eval.c): a variable it could
 * not expand would make a Deny never match, so the policy is refused instead. */
static s3_err_t vars_check(pctx_t *c, const char *s, const char *where)
{
    if (!c->pol->vars)
        return S3_OK;
    for (const char *p = strstr(s, "${"); p; p = strstr(p + 2, "${")) {
        const char *end = strchr(p, '}');
        size_t n = end ? (size_t)(end - p - 2) : 0;
        if (end && ((n == 1 && strchr("*?$", p[2])) ||
                    (n == 12 && strncasecmp(p + 2, "aws:username", 12) == 0)))
            continue;
        return bad(c,
                   "%s \"%s\": wharf expands only the policy variables ${aws:username}, "
                   "${*}, ${?} and ${$}",
                   where, s);
    }
    return S3_OK;
}

static s3_err_t add_action(pctx_t *c, const char *s, void *slot, size_t i)
{
    (void)i;
    pattern_t *p = slot;
    /* A user policy may also grant the IAM API's actions (iam:CreateUser, ...) and wharf's own
     * (wharf:Console, the browser console). */
    size_t pfx = strcmp(s, "*") == 0                           ? 0
                 : strncasecmp(s, "s3:", 3) == 0               ? 3
                 : c->user && strncasecmp(s, "iam:", 4) == 0   ? 4
                 : c->user && strncasecmp(s, "wharf:", 6) == 0 ? 6
                                                               : (size_t)-1;
    if (pfx == (size_t)-1)
        return bad(c, "Policy has invalid action \"%s\" (only s3:%s actions and * are allowed)", s,
                   c->user ? ", iam: and wharf:" : "");
    if (!s[pfx])
        return bad(c, "Policy has invalid action \"%s\"", s);
    if (!(p->s = arena_strdup(&c->pol->arena, s)))
        return oom(c);
    return S3_OK;
}

static s3_err_t add_resource(pctx_t *c, const char *s, void *slot, size_t i)
{
    (void)i;
    pattern_t *p = slot;
    /* A user policy may name IAM users (arn:aws:iam::ACCOUNT:user/NAME) for iam: actions. */
    if (c->user && strncmp(s, "arn:aws:iam::", 13) == 0 && s[13]) {
        if (vars_check(c, s, "Resource") != S3_OK)
            return S3_ERR_MALFORMED_POLICY;
        if (!(p->s = arena_strdup(&c->pol->arena, s)))
            return oom(c);
        p->has_var = has_var(c, s);
        return S3_OK;
    }
    if (strcmp(s, "*") != 0 && strncmp(s, "arn:aws:s3:::", 13) != 0)
        return bad(c, "Policy has invalid resource \"%s\" (an arn:aws:s3::: ARN or *)", s);
    if (strcmp(s, "*") != 0 && !s[13])
        return bad(c, "Policy has invalid resource \"%s\" (no bucket)", s);
    if (vars_check(c, s, "Resource") != S3_OK)
        return S3_ERR_MALFORMED_POLICY;
    if (!(p->s = arena_strdup(&c->pol->arena, s)))
        return oom(c);
    p->has_var = has_var(c, s);
    return S3_OK;
}

static bool all_digits(const char *s, size_t n)
{
    if (strlen(s) != n)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isdigit((unsigned char)s[i]))
            return false;
    return true;
}

static s3_err_t add_aws_principal(pctx_t *c, const char *s, void *slot, size_t i)
{
    (void)i;
    princ_t *p = slot;
    if (strcmp(s, "*") == 0) {
        p->kind = P_ANY;
        return S3_OK;
    }
    const char *acct = NULL;
    size_t alen = 0;
    if (all_digits(s, 12)) {
        acct = s, alen = 12;
    } else if (strncmp(s, "arn:aws:iam::", 13) == 0 && strlen(s) > 26 && s[25] == ':') {
        const char *a = s + 13;
        for (size_t k = 0; k < 12; k++)
            if (!isdigit((unsigned char)a[k]))
                return bad(c, "Invalid principal in policy: \"%s\" (account id)", s);
        const char *rest = s + 26;
        if (strcmp(rest, "root") == 0) {
            acct = a, alen = 12;
        } else if (strncmp(rest, "user/", 5) == 0 && rest[5] && !strchr(rest + 5, '*') &&
                   !strchr(rest + 5, '?')) {
            p->kind = P_ARN;
            if (!(p->s = arena_strdup(&c->pol->arena, s)))
                return oom(c);
            return S3_OK;
        } else {
            return bad(c,
                       "Invalid principal in policy: \"%s\" (root, user/NAME, an account "
                       "id or *)",
                       s);
        }
    } else {
        return bad(c, "Invalid principal in policy: \"%s\"", s);
    }
    char *a = arena_alloc(&c->pol->arena, alen + 1);
    if (!a)
        return oom(c);
    memcpy(a, acct, alen);
    p->kind = P_ACCOUNT;
    p->s = a;
    return S3_OK;
}

static s3_err_t add_canonical(pctx_t *c, const char *s, void *slot, size_t i)
{
    (void)i;
    princ_t *p = slot;
    size_t n = strlen(s);
    if (n == 0 || n > 64)
        return bad(c, "Invalid principal in policy: CanonicalUser \"%s\"", s);
    p->kind = P_CANONICAL;
    if (!(p->s = arena_strdup(&c->pol->arena, s)))
        return oom(c);
    return S3_OK;
}

/* "logging.s3.amazonaws.com": a DNS-like name of letters, digits, '.' and '-'. */
static s3_err_t add_service(pctx_t *c, const char *s, void *slot, size_t i)
{
    (void)i;
    princ_t *p = slot;
    size_t n = strlen(s);
    if (n == 0 || n > 128 || strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789.-") != n)
        return bad(c,
                   "Invalid principal in policy: Service \"%s\" (a service name such as "
                   "logging.s3.amazonaws.com)",
                   s);
    p->kind = P_SERVICE;
    if (!(p->s = arena_strdup(&c->pol->arena, s)))
        return oom(c);
    return S3_OK;
}

static s3_err_t parse_principal(pctx_t *c, stmt_t *st, json_t *v, const char *field)
{
    if (json_is_string(v)) {
        if (strcmp(json_string_value(v), "*") != 0)
            return bad(c, "Invalid principal in policy: %s must be \"*\" or an object", field);
        st->np = 1;
        if (!(st->p = arena_alloc(&c->pol->arena, sizeof *st->p)))
            return oom(c);
        st->p[0].kind = P_ANY;
        return S3_OK;
    }
    if (!json_is_object(v) || json_object_size(v) == 0)
        return bad(c, "Invalid principal in policy: %s must be \"*\" or {\"AWS\": ...}", field);
    /* Each key's list, concatenated. */
    size_t total = 0;
    princ_t *all = NULL;
    const char *k;
    json_t *e;
    json_object_foreach(v, k, e)
    {
        princ_t *part = NULL;
        size_t n = 0;
        s3_err_t err;
        if (strcmp(k, "AWS") == 0)
            err = str_list(c, e, "Principal AWS", (void **)&part, sizeof *part, &n,
                           add_aws_principal);
        else if (strcmp(k, "CanonicalUser") == 0)
            err = str_list(c, e, "Principal CanonicalUser", (void **)&part, sizeof *part, &n,
                           add_canonical);
        else if (strcmp(k, "Service") == 0)
            err =
                str_list(c, e, "Principal Service", (void **)&part, sizeof *part, &n, add_service);
        else
            return bad(c,
                       "Invalid principal in policy: unsupported principal type \"%s\" "
                       "(AWS, CanonicalUser or Service)",
                       k);
        if (err != S3_OK)
            return err;
        princ_t *m = arena_alloc(&c->pol->arena, (total + n) * sizeof *m);
        if (!m)
            return oom(c);
        if (total)
            memcpy(m, all, total * sizeof *m);
        memcpy(m + total, part, n * sizeof *m);
        all = m;
        total += n;
    }
    st->p = all;
    st->np = total;
    return S3_OK;
}

static bool parse_cidr(const char *s, auth_ip_t *ip, unsigned *plen)
{
    char buf[64];
    size_t n = strlen(s);
    if (n >= sizeof buf)
        return false;
    memcpy(buf, s, n + 1);
    char *slash = strchr(buf, '/');
    long bits = -1;
    if (slash) {
        *slash = '\0';
        char *end;
        if (!isdigit((unsigned char)slash[1]))
            return false;
        bits = strtol(slash + 1, &end, 10);
        if (*end)
            return false;
    }
    if (!auth_ip_parse(buf, ip))
        return false;
    long max = ip->family == 4 ? 32 : 128;
    if (bits < 0)
        bits = max;
    if (bits > max)
        return false;
    *plen = (unsigned)bits;
    return true;
}

static s3_err_t parse_cond_value(pctx_t *c, cond_t *cd, json_t *e, cond_val_t *out, const char *op,
                                 const char *key)
{
    char tmp[64];
    const char *s;
    if (json_is_string(e)) {
        s = json_string_value(e);
        if (strlen(s) != json_string_length(e))
            return bad(c, "Condition %s %s: a value holds a NUL byte", op, key);
    } else if (json_is_true(e) || json_is_false(e)) {
        s = json_is_true(e) ? "true" : "false";
    } else if (json_is_integer(e)) {
        snprintf(tmp, sizeof tmp, "%lld", (long long)json_integer_value(e));
        s = tmp;
    } else if (json_is_real(e)) {
        snprintf(tmp, sizeof tmp, "%.17g", json_real_value(e));
        s = tmp;
    } else {
        return bad(c, "Condition %s %s: values must be strings, numbers or booleans", op, key);
    }
    if (vars_check(c, s, "Condition value") != S3_OK)
        return S3_ERR_MALFORMED_POLICY;
    if (!(out->s = arena_strdup(&c->pol->arena, s)))
        return oom(c);
    out->has_var = has_var(c, s);
    switch (cd->test) {
    case T_NUM_EQ:
    case T_NUM_LT:
    case T_NUM_LE:
    case T_NUM_GT:
    case T_NUM_GE: {
        char *end;
        out->num = strtod(s, &end);
        if (!*s || *end)
            return bad(c, "Condition %s %s: \"%s\" is not a number", op, key, s);
        break;
    }
    case T_IP:
        if (!parse_cidr(s, &out->ip, &out->plen))
            return bad(c, "Condition %s %s: \"%s\" is not an IP address or CIDR block", op, key, s);
        break;
    case T_BOOL:
    case T_NULL:
        if (strcasecmp(s, "true") != 0 && strcasecmp(s, "false") != 0)
            return bad(c, "Condition %s %s: \"%s\" is not true or false", op, key, s);
        break;
    default:
        break;
    }
    return S3_OK;
}

static s3_err_t parse_condition(pctx_t *c, stmt_t *st, json_t *v)
{
    if (!json_is_object(v))
        return bad(c, "Condition must be an object");
    size_t total = 0;
    const char *op;
    json_t *keys;
    json_object_foreach(v, op, keys)
    {
        if (!json_is_object(keys))
            return bad(c, "Condition %s must be an object of keys", op);
        total += json_object_size(keys);
    }
    if (!(st->c = arena_alloc(&c->pol->arena, (total ? total : 1) * sizeof *st->c)))
        return oom(c);
    json_object_foreach(v, op, keys)
    {
        char base[64];
        size_t ol = strlen(op);
        bool ifx = ol > 8 && strcmp(op + ol - 8, "IfExists") == 0;
        snprintf(base, sizeof base, "%.*s", (int)(ifx ? ol - 8 : ol), op);
        size_t oi = 0;
        while (oi < sizeof g_ops / sizeof g_ops[0] && strcmp(g_ops[oi].name, base) != 0)
            oi++;
        if (oi == sizeof g_ops / sizeof g_ops[0] || (ifx && g_ops[oi].test == T_NULL))
            return bad(c, "unknown condition operator \"%s\"", op);
        const char *key;
        json_t *vals;
        json_object_foreach(keys, key, vals)
        {
            cond_t *cd = &st->c[st->nc++];
            cd->test = g_ops[oi].test;
            cd->neg = g_ops[oi].neg;
            cd->if_exists = ifx;
            cd->key = K_UNKNOWN;
            for (size_t k = 0; k < sizeof g_keys / sizeof g_keys[0]; k++)
                if (strcasecmp(g_keys[k].name, key) == 0)
                    cd->key = g_keys[k].key;
            if (!strchr(key, ':'))
                return bad(c, "Condition %s: key \"%s\" has no prefix (aws: or s3:)", op, key);
            /* A key wharf cannot evaluate is refused: taken as absent, a Deny on it would
             * never fire (the policy would fail open). */
            if (cd->key == K_UNKNOWN)
                return bad(c,
                           "Condition %s: wharf cannot evaluate the condition key "
                           "\"%.64s\" (docs/access.md lists the keys it does)",
                           op, key);
            size_t n = json_is_array(vals) ? json_array_size(vals) : 1;
            if (n == 0)
                return bad(c, "Condition %s %s: empty value list", op, key);
            if (!(cd->v = arena_alloc(&c->pol->arena, n * sizeof *cd->v)))
                return oom(c);
            for (size_t i = 0; i < n; i++) {
                json_t *e = json_is_array(vals) ? json_array_get(vals, i) : vals;
                s3_err_t err = parse_cond_value(c, cd, e, &cd->v[i], op, key);
                if (err != S3_OK)
                    return err;
            }
            cd->n = n;
        }
    }
    return S3_OK;
}

static s3_err_t parse_stmt(pctx_t *c, stmt_t *st, json_t *o)
{
    if (!json_is_object(o))
        return bad(c, "a statement must be an object");
    static const char *const known[] = {"Sid",          "Effect",      "Principal",
                                        "NotPrincipal", "Action",      "NotAction",
                                        "Resource",     "NotResource", "Condition"};
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v)
    {
        size_t i = 0;
        while (i < sizeof known / sizeof known[0] && strcmp(known[i], k) != 0)
            i++;
        if (i == sizeof known / sizeof known[0])
            return bad(c, "unknown field \"%s\"", k);
    }
    json_t *sid = json_object_get(o, "Sid");
    if (sid && !json_is_string(sid))
        return bad(c, "Sid must be a string");
    json_t *eff = json_object_get(o, "Effect");
    if (!eff)
        return bad(c, "missing required field Effect");
    if (!json_is_string(eff) || (strcmp(json_string_value(eff), "Allow") != 0 &&
                                 strcmp(json_string_value(eff), "Deny") != 0))
        return bad(c, "Effect must be \"Allow\" or \"Deny\"");
    st->deny = strcmp(json_string_value(eff), "Deny") == 0;

    json_t *pr = json_object_get(o, "Principal"), *npr = json_object_get(o, "NotPrincipal");
    if (pr && npr)
        return bad(c, "Principal and NotPrincipal together");
    if (c->user && (pr || npr))
        return bad(c, "a user policy cannot name a Principal (it applies to its user)");
    if (!c->user && !pr && !npr)
        return bad(c, "missing required field Principal");
    if (pr || npr) {
        st->has_principal = true;
        st->not_principal = npr != NULL;
        s3_err_t e = parse_principal(c, st, pr ? pr : npr, pr ? "Principal" : "NotPrincipal");
        if (e != S3_OK)
            return e;
    }

    json_t *ac = json_object_get(o, "Action"), *nac = json_object_get(o, "NotAction");
    if (ac && nac)
        return bad(c, "Action and NotAction together");
    if (!ac && !nac)
        return bad(c, "missing required field Action");
    st->not_action = nac != NULL;
    s3_err_t e = str_list(c, ac ? ac : nac, ac ? "Action" : "NotAction", (void **)&st->a,
                          sizeof *st->a, &st->na, add_action);
    if (e != S3_OK)
        return e;

    json_t *rs = json_object_get(o, "Resource"), *nrs = json_object_get(o, "NotResource");
    if (rs && nrs)
        return bad(c, "Resource and NotResource together");
    if (!rs && !nrs)
        return bad(c, "missing required field Resource");
    st->not_resource = nrs != NULL;
    e = str_list(c, rs ? rs : nrs, rs ? "Resource" : "NotResource", (void **)&st->r, sizeof *st->r,
                 &st->nr, add_resource);
    if (e != S3_OK)
        return e;

    json_t *cond = json_object_get(o, "Condition");
    if (cond)
        return parse_condition(c, st, cond);
    return S3_OK;
}

static s3_err_t policy_parse(const char *json, size_t len, bool user, auth_policy_t **out,
                             char *msg, size_t msglen)
{
    *out = NULL;
    if (msg && msglen)
        msg[0] = '\0';
    pctx_t c = {.user = user, .msg = msg, .msglen = msglen};
    if (!json || len == 0)
        return bad(&c, "the policy is empty");
    if (len > AUTH_POLICY_MAX_BYTES)
        return bad(&c,
                   "Policy exceeds the maximum allowed document size (%zu bytes, the "
                   "limit is %u)",
                   len, AUTH_POLICY_MAX_BYTES);
    json_error_t je;
    json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return bad(&c, "the policy is not valid JSON: %s (line %d, column %d)", je.text, je.line,
                   je.column);
    s3_err_t err = S3_OK;
    auth_policy_t *pol = calloc(1, sizeof *pol);
    if (!pol) {
        err = oom(&c);
        goto cleanup;
    }
    c.pol = pol;
    if (!json_is_object(root)) {
        err = bad(&c, "the policy must be a JSON object");
        goto cleanup;
    }
    const char *k;
    json_t *v;
    json_object_foreach(root, k, v)
    {
        if (strcmp(k, "Version") != 0 && strcmp(k, "Id") != 0 && strcmp(k, "Statement") != 0) {
            err = bad(&c, "unknown field \"%s\" (Version, Id, Statement)", k);
            goto cleanup;
        }
    }
    json_t *ver = json_object_get(root, "Version");
    if (ver && (!json_is_string(ver) || (strcmp(json_string_value(ver), "2012-10-17") != 0 &&
                                         strcmp(json_string_value(ver), "2008-10-17") != 0))) {
        err = bad(&c, "Version must be \"2012-10-17\" or \"2008-10-17\"");
        goto cleanup;
    }
    pol->vars = ver && strcmp(json_string_value(ver), "2012-10-17") == 0;
    json_t *sts = json_object_get(root, "Statement");
    if (!sts) {
        err = bad(&c, "missing required field Statement");
        goto cleanup;
    }
    if (!json_is_object(sts) && !json_is_array(sts)) {
        err = bad(&c, "Statement must be an object or an array of objects");
        goto cleanup;
    }
    size_t n = json_is_array(sts) ? json_array_size(sts) : 1;
    if (n == 0) {
        err = bad(&c, "Statement is an empty array");
        goto cleanup;
    }
    if (!(pol->st = arena_alloc(&pol->arena, n * sizeof *pol->st))) {
        err = oom(&c);
        goto cleanup;
    }
    for (size_t i = 0; i < n; i++) {
        c.si = i + 1;
        err = parse_stmt(&c, &pol->st[i], json_is_array(sts) ? json_array_get(sts, i) : sts);
        if (err != S3_OK)
            goto cleanup;
    }
    pol->n = n;
    *out = pol;
    pol = NULL;
cleanup:
    auth_policy_free(pol);
    json_decref(root);
    return err;
}

s3_err_t auth_policy_parse(const char *json, size_t len, auth_policy_t **out, char *msg,
                           size_t msglen)
{
    return policy_parse(json, len, false, out, msg, msglen);
}

s3_err_t auth_policy_parse_user(const char *json, size_t len, auth_policy_t **out, char *msg,
                                size_t msglen)
{
    return policy_parse(json, len, true, out, msg, msglen);
}

void auth_policy_free(auth_policy_t *pol)
{
    if (!pol)
        return;
    for (arena_blk_t *b = pol->arena, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    free(pol);
}

s3_err_t auth_policy_check_bucket(const auth_policy_t *pol, const char *bucket, char *msg,
                                  size_t msglen)
{
    char arn[AUTH_ARN_MAX];
    if (!auth_resource_arn(arn, sizeof arn, bucket, NULL))
        return S3_ERR_INVALID_BUCKET_NAME;
    size_t al = strlen(arn);
    for (size_t i = 0; i < pol->n; i++) {
        const stmt_t *st = &pol->st[i];
        for (size_t j = 0; j < st->nr; j++) {
            const char *p = st->r[j].s;
            if (auth_glob(p, arn, false) || (strncmp(p, arn, al) == 0 && p[al] == '/'))
                continue;
            char probe[AUTH_ARN_MAX + 2];
            snprintf(probe, sizeof probe, "%s/", arn);
            /* "arn:aws:s3:::b*" covers objects of b too; a pattern that reaches neither the
             * bucket nor its objects names another bucket. */
            if (strncmp(p, probe, strlen(probe)) == 0 || auth_glob(p, probe, false))
                continue; /* (the any-bucket, any-key pattern reaches b's objects too) */
            if (msg && msglen)
                snprintf(msg, msglen,
                         "Statement %zu: Policy has invalid resource \"%s\" (not "
                         "in bucket %s)",
                         i + 1, p, bucket);
            return S3_ERR_MALFORMED_POLICY;
        }
    }
    return S3_OK;
}

bool auth_policy_is_public(const auth_policy_t *pol)
{
    for (size_t i = 0; pol && i < pol->n; i++) {
        const stmt_t *st = &pol->st[i];
        if (st->deny || st->not_principal || st->nc)
            continue;
        for (size_t j = 0; j < st->np; j++)
            if (st->p[j].kind == P_ANY)
                return true;
    }
    return false;
}
