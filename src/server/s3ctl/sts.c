/* SPDX-License-Identifier: Apache-2.0 */
/* STS on wharfd's port (Version 2011-06-15, signed for the service "sts", through the IAM
 * row): GetCallerIdentity, GetSessionToken and AssumeRole. Temporary credentials are ident's
 * sessions (ident/session.c); a role session signs as
 * arn:aws:sts::<account>:assumed-role/<role>/<session> and is weighed against the role's
 * policies (iam_principal_policy_set), and against its session policy when AssumeRole had one
 * (s3ctl/authorize.c and iam_authorize: a request must pass both). */
#include "base/digest.h"
#include "base/log.h"
#include "s3/xml.h"
#include "s3ctl/iam_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MOD "sts"
#define STS_MIN_DURATION 900
#define STS_SESSION_DEFAULT 43200
#define STS_SESSION_MAX 129600
#define STS_ROLE_DEFAULT 3600
#define STS_MAX_SESSION_POLICY 2048 /* AWS's limit on the plain text */

/* DurationSeconds within [STS_MIN_DURATION, max] (def when absent); 0 after the error. */
static long duration(iam_ctx_t *c, long def, long max, int *status)
{
    const char *v = iam_param(c, "DurationSeconds");
    if (!v)
        return def;
    char *end = NULL;
    long d = strtol(v, &end, 10);
    if (!*v || *end || d < STS_MIN_DURATION || d > max) {
        *status = iam_err(c, 400, "ValidationError",
                          "DurationSeconds must be %d to %ld seconds, got '%.40s'",
                          STS_MIN_DURATION, max, v);
        return 0;
    }
    return d;
}

static int answer_credentials(iam_ctx_t *c, const ident_session_t *s, const char *role_arn,
                              const char *role_id, const char *session)
{
    wh_sbuf_t b;
    iam_resp_begin(c, &b, true);
    wh_sbuf_puts(&b, "<Credentials>");
    s3_xml_elem(&b, "AccessKeyId", s->access_key);
    s3_xml_elem(&b, "SecretAccessKey", s->secret);
    s3_xml_elem(&b, "SessionToken", s->token);
    iam_xml_time(&b, "Expiration", s->expires);
    wh_sbuf_puts(&b, "</Credentials>");
    if (role_arn) {
        wh_sbuf_puts(&b, "<AssumedRoleUser>");
        wh_sbuf_printf(&b, "<AssumedRoleId>%s:%s</AssumedRoleId>", role_id, session);
        s3_xml_elem(&b, "Arn", role_arn);
        wh_sbuf_puts(&b, "</AssumedRoleUser><PackedPolicySize>0</PackedPolicySize>");
    }
    return iam_resp_end(c, &b, true);
}

static int act_caller_identity(iam_ctx_t *c)
{
    const auth_principal_t *who = &c->r->who;
    wh_sbuf_t b;
    iam_resp_begin(c, &b, true);
    s3_xml_elem(&b, "Arn", who->arn);
    s3_xml_elem(&b, "UserId",
                who->kind == AUTH_PRINCIPAL_ROOT ? ident_account(c->id) : who->canonical_id);
    s3_xml_elem(&b, "Account", ident_account(c->id));
    return iam_resp_end(c, &b, true);
}

static int act_session_token(iam_ctx_t *c)
{
    const auth_principal_t *who = &c->r->who;
    if (IDENT_IS_SESSION_KEY(who->access_key))
        return iam_err(c, 403, "AccessDenied",
                       "GetSessionToken takes a long-term key, not temporary credentials");
    int status = 0;
    long d = duration(c, STS_SESSION_DEFAULT, STS_SESSION_MAX, &status);
    if (!d)
        return status;
    ident_session_t s;
    wh_status_t st = ident_session_create(c->id, who, time(NULL) + d, NULL, &s);
    if (st != WH_OK)
        return iam_store_err(c, st, "making the session");
    wh_info(MOD, "session token by=%s access_key=%s seconds=%ld", who->arn, s.access_key, d);
    int ret = answer_credentials(c, &s, NULL, NULL, NULL);
    memset(&s, 0, sizeof s);
    return ret;
}

static int act_assume_role(iam_ctx_t *c)
{
    const auth_principal_t *who = &c->r->who;
    const char *arn = iam_param(c, "RoleArn");
    int status = 0;
    const char *session = iam_need_name(c, "RoleSessionName", 64, &status);
    if (!session)
        return status;
    if (!arn || !*arn)
        return iam_err(c, 400, "ValidationError", "RoleArn is required by AssumeRole");
    if (iam_param(c, "PolicyArns.member.1"))
        return iam_err(c, 501, "NotImplemented",
                       "wharf does not implement managed session policies (PolicyArns); an "
                       "inline session policy (Policy) is");
    const char *spol = iam_param(c, "Policy");
    if (spol && strlen(spol) > STS_MAX_SESSION_POLICY)
        return iam_err(c, 400, "PackedPolicyTooLarge", "the session policy exceeds %d characters",
                       STS_MAX_SESSION_POLICY);
    if (spol && (status = iam_check_doc(c, spol, "the session")))
        return status;
    const char *slash = strrchr(arn, '/');
    iam_role_t role;
    char want[IAM_ARN_MAX] = "";
    wh_status_t st = slash ? iam_role_get(c->m, slash + 1, &role) : WH_ERR_NOT_FOUND;
    if (st == WH_OK)
        iam_role_arn(ident_account(c->id), &role, want, sizeof want);
    char bare[IAM_ARN_MAX]; /* the same ARN without its account, as single-tenant stores write it */
    snprintf(bare, sizeof bare, "arn:aws:iam:::role%s%s", st == WH_OK ? role.path : "",
             st == WH_OK ? role.name : "");
    if (st == WH_OK && strcmp(want, arn) != 0 && strcmp(bare, arn) != 0) {
        iam_role_free(&role);
        st = WH_ERR_NOT_FOUND;
    }
    if (st == WH_ERR_NOT_FOUND)
        return iam_err(c, 404, "NoSuchEntity", "The role %.300s cannot be found.", arn);
    if (st != WH_OK)
        return iam_store_err(c, st, "reading the role");
    bool trusted = iam_trust_allows(role.trust, who->arn, ident_account(c->id), "sts:AssumeRole");
    long d = duration(c, STS_ROLE_DEFAULT, role.max_session, &status);
    auth_principal_t as;
    memset(&as, 0, sizeof as);
    as.kind = AUTH_PRINCIPAL_USER;
    snprintf(as.arn, sizeof as.arn, "arn:aws:sts::%s:assumed-role/%s/%s", ident_account(c->id),
             role.name, session);
    wh_sha256_hex(want, strlen(want), as.canonical_id); /* the role's, not the caller's */
    char role_id[32];
    snprintf(role_id, sizeof role_id, "%s", role.id);
    iam_role_free(&role);
    if (!trusted)
        return iam_err(c, 403, "AccessDenied",
                       "User: %s is not authorized to perform: sts:AssumeRole on resource: %s "
                       "(the role's trust policy does not allow it)",
                       who->arn, arn);
    if (!d)
        return status;
    ident_session_t s;
    st = ident_session_create(c->id, &as, time(NULL) + d, spol, &s);
    if (st != WH_OK)
        return iam_store_err(c, st, "making the session");
    wh_info(MOD, "role assumed by=%s role=%s session=%s access_key=%s seconds=%ld", who->arn, arn,
            session, s.access_key, d);
    int ret = answer_credentials(c, &s, as.arn, role_id, session);
    memset(&s, 0, sizeof s);
    return ret;
}

static const struct {
    const char *name;
    iam_action_fn fn;
} STS_ACTIONS[] = {
    {"GetCallerIdentity", act_caller_identity},
    {"GetSessionToken", act_session_token},
    {"AssumeRole", act_assume_role},
};

iam_action_fn iam_sts_action(const char *name)
{
    for (size_t i = 0; i < WH_ARRAY_SIZE(STS_ACTIONS); i++)
        if (strcmp(name, STS_ACTIONS[i].name) == 0)
            return STS_ACTIONS[i].fn;
    return NULL;
}

wh_status_t iam_principal_policy_set(meta_t *m, const auth_principal_t *who, meta_policy_t **out,
                                     size_t *n)
{
    const char *ar = strstr(who->arn, ":assumed-role/");
    if (!ar || who->user[0])
        return iam_user_policy_set(m, who->user, out, n);
    ar += strlen(":assumed-role/");
    const char *end = strchr(ar, '/');
    char key[65];
    size_t len = end ? (size_t)(end - ar) : strlen(ar);
    if (len >= sizeof key)
        return WH_ERR_NOT_FOUND;
    char name[65];
    memcpy(name, ar, len);
    name[len] = '\0';
    iam_lower(name, key, sizeof key);
    return iam_role_policy_set(m, key, out, n);
}
