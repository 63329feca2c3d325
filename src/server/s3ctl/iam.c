/* SPDX-License-Identifier: Apache-2.0 */
/* The IAM API subset `aws iam` and boto3's iam client speak, on wharfd's own port: users,
 * access keys, groups, inline and managed policies (iam_int.h names the files). Query protocol:
 * POST / with an application/x-www-form-urlencoded body (Action=...&Version=2010-05-08&...), signed
 * with SigV4 for the service "iam"; answers are XML in the IAM namespace, errors IAM's
 * ErrorResponse with its codes.
 *
 * Its clients sign the body's SHA-256 without sending it, so the signature is checked here,
 * once the body is read (http.c lets this row through unverified). Who may: root always; a
 * user when one of its policies (inline, its groups', managed ones attached) allows the action
 * (iam:CreateUser, ...) on the target's ARN and none denies it (the authorization engine's
 * auth_policy_eval). */
#include "base/codec.h"
#include "base/digest.h"
#include "base/log.h"
#include "s3/xml.h"
#include "s3ctl/iam_int.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define MOD "iam"
#define IAM_MAX_BODY (64u << 10)

/* ---- answers ---- */

int iam_err(iam_ctx_t *c, int status, const char *code, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    wh_sbuf_printf(&b, S3H_XML_DECL "<ErrorResponse xmlns=\"%s\"><Error><Type>",
                   c->xmlns ? c->xmlns : IAM_XMLNS);
    wh_sbuf_puts(&b, status >= 500 ? "Receiver" : "Sender");
    wh_sbuf_puts(&b, "</Type>");
    s3_xml_elem(&b, "Code", code);
    s3_xml_elem(&b, "Message", msg);
    wh_sbuf_puts(&b, "</Error>");
    s3_xml_elem(&b, "RequestId", c->r->id);
    wh_sbuf_puts(&b, "</ErrorResponse>");
    wh_debug(MOD, "error id=%s action=%s status=%d code=%s message=%s", c->r->id,
             c->action ? c->action : "-", status, code, msg);
    return s3h_ok_xml(c->o, status, &b);
}

/* A store failure as an IAM error. */
int iam_resp_rec_names(iam_ctx_t *c, const char *kind, const char *prefix, const char *what)
{
    meta_rec_t *ps = NULL;
    size_t n = 0;
    wh_status_t st = meta_rec_list(c->m, kind, prefix, &ps, &n);
    if (st != WH_OK)
        return iam_store_err(c, st, what);
    wh_sbuf_t b;
    iam_resp_begin(c, &b, true);
    wh_sbuf_puts(&b, "<PolicyNames>");
    for (size_t i = 0; i < n; i++)
        s3_xml_elem(&b, "member", ps[i].key + strlen(prefix));
    wh_sbuf_puts(&b, "</PolicyNames><IsTruncated>false</IsTruncated>");
    meta_recs_free(ps, n);
    return iam_resp_end(c, &b, true);
}

int iam_store_err(iam_ctx_t *c, wh_status_t st, const char *what)
{
    if (st == WH_ERR_UNAVAILABLE || st == WH_ERR_BUSY)
        return iam_err(c, 503, "ServiceUnavailable",
                       "%s: the metadata database is unreachable or busy; retry", what);
    return iam_err(c, 500, "ServiceFailure", "%s failed: %s", what, wh_status_str(st));
}

void iam_resp_begin(iam_ctx_t *c, wh_sbuf_t *b, bool result)
{
    wh_sbuf_init(b);
    wh_sbuf_printf(b, S3H_XML_DECL "<%sResponse xmlns=\"%s\">", c->action,
                   c->xmlns ? c->xmlns : IAM_XMLNS);
    if (result)
        wh_sbuf_printf(b, "<%sResult>", c->action);
}

int iam_resp_end(iam_ctx_t *c, wh_sbuf_t *b, bool result)
{
    if (result)
        wh_sbuf_printf(b, "</%sResult>", c->action);
    wh_sbuf_puts(b, "<ResponseMetadata>");
    s3_xml_elem(b, "RequestId", c->r->id);
    wh_sbuf_printf(b, "</ResponseMetadata></%sResponse>", c->action);
    return s3h_ok_xml(c->o, 200, b);
}

int iam_resp_empty(iam_ctx_t *c)
{
    wh_sbuf_t b;
    iam_resp_begin(c, &b, false);
    return iam_resp_end(c, &b, false);
}

void iam_xml_time(wh_sbuf_t *b, const char *name, time_t t)
{
    char iso[25];
    wh_iso8601(t, iso);
    s3_xml_elem(b, name, iso);
}

void iam_xml_doc(wh_sbuf_t *b, const char *name, const char *doc)
{
    wh_sbuf_t enc;
    wh_sbuf_init(&enc);
    s3_uri_encode(doc, strlen(doc), 1, &enc); /* IAM sends policy documents URL-encoded */
    s3_xml_elem(b, name, enc.data ? enc.data : "");
    wh_sbuf_free(&enc);
}

/* ---- parameters and records ---- */

/* A bad %-escape reads as absent and is caught by the check of what is required. */
const char *iam_param(iam_ctx_t *c, const char *name)
{
    if (c->np == IAM_MAX_PARAMS)
        return NULL;
    wh_sbuf_t v;
    wh_sbuf_init(&v);
    int rc = auth_query_param(c->form, name, &v);
    if (rc != 1 || v.oom) {
        wh_sbuf_free(&v);
        return NULL;
    }
    wh_sbuf_append(&v, "", 1); /* a value of "" still needs its NUL */
    c->params[c->np] = wh_sbuf_steal(&v);
    return c->params[c->np++];
}

int iam_bad_name(iam_ctx_t *c, const char *field, const char *v, size_t max)
{
    return iam_err(c, 400, "ValidationError",
                   "1 validation error detected: Value '%.80s' at '%s' failed to satisfy "
                   "constraint: Member must have length 1 to %zu and match [\\w+=,.@-]+",
                   v ? v : "", field, max);
}

const char *iam_need_name(iam_ctx_t *c, const char *param, size_t max, int *status)
{
    const char *v = iam_param(c, param);
    if (!v) {
        *status = iam_err(c, 400, "ValidationError", "%s is required by %s", param, c->action);
        return NULL;
    }
    if (!ident_name_valid(v, max)) {
        *status = iam_bad_name(c, param, v, max);
        return NULL;
    }
    return strcmp(param, "UserName") == 0 ? iam_user_name(c, v) : v;
}

/* IAM's user names are unique without regard to case: the stored name that matches given, or
 * given when none does (or the list cannot be read: the exact name is then tried). */
const char *iam_user_name(iam_ctx_t *c, const char *given)
{
    if (meta_user_get(c->m, given, NULL) == WH_OK || c->np == IAM_MAX_PARAMS)
        return given;
    meta_user_t *us = NULL;
    size_t n = 0;
    const char *out = given;
    if (meta_user_list(c->m, &us, &n) == WH_OK) {
        for (size_t i = 0; i < n; i++) {
            if (strcasecmp(us[i].name, given) == 0 && (c->params[c->np] = strdup(us[i].name))) {
                out = c->params[c->np++];
                break;
            }
        }
    }
    free(us);
    return out;
}

const char *iam_path_param(iam_ctx_t *c, const char *param, int *status)
{
    const char *p = iam_param(c, param);
    if (!p)
        return "/";
    size_t n = strlen(p);
    bool ok = n >= 1 && n <= IAM_MAX_PATH && p[0] == '/' && p[n - 1] == '/';
    for (size_t i = 0; ok && i < n; i++)
        ok = p[i] > 0x20 && p[i] < 0x7f;
    if (!ok) {
        *status = iam_err(c, 400, "ValidationError",
                          "%s '%.80s' must start and end with '/' and hold only printable "
                          "ASCII, at most %d characters",
                          param, p, IAM_MAX_PATH);
        return NULL;
    }
    return p;
}

uint64_t iam_max_items(iam_ctx_t *c, int *status)
{
    const char *max_s = iam_param(c, "MaxItems");
    uint64_t max = IAM_DEFAULT_MAX_ITEMS;
    if (max_s && (wh_parse_u64(max_s, strlen(max_s), &max) != 0 || max < 1 || max > 1000)) {
        *status =
            iam_err(c, 400, "ValidationError", "MaxItems must be 1 to 1000, got '%.40s'", max_s);
        return 0;
    }
    return max;
}

void iam_lower(const char *in, char *out, size_t cap)
{
    size_t i = 0;
    for (; in[i] && i + 1 < cap; i++)
        out[i] = (char)tolower((unsigned char)in[i]);
    out[i] = '\0';
}

bool iam_rec_field(const char *doc, const char *name, char *out, size_t cap)
{
    wh_sbuf_t v;
    wh_sbuf_init(&v);
    bool ok = auth_query_param(doc, name, &v) == 1 && !v.oom;
    if (ok)
        snprintf(out, cap, "%.*s", (int)v.len, v.data ? v.data : "");
    wh_sbuf_free(&v);
    return ok;
}

void iam_rec_add(wh_sbuf_t *b, const char *name, const char *value)
{
    if (b->len)
        wh_sbuf_puts(b, "&");
    wh_sbuf_puts(b, name);
    wh_sbuf_puts(b, "=");
    s3_uri_encode(value, strlen(value), 1, b);
}

void iam_new_id(const char *prefix, char *out, size_t cap)
{
    static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    unsigned char raw[17];
    if (wh_random_bytes(raw, sizeof raw) != 0)
        memset(raw, 0, sizeof raw); /* only an id's uniqueness suffers; names are the keys */
    size_t n = (size_t)snprintf(out, cap, "%s", prefix);
    for (size_t i = 0; i < sizeof raw && n + 1 < cap; i++)
        out[n++] = abc[raw[i] % (sizeof abc - 1)];
    out[n < cap ? n : cap - 1] = '\0';
}

int iam_check_doc(iam_ctx_t *c, const char *doc, const char *owner)
{
    if (!doc || !*doc)
        return iam_err(c, 400, "ValidationError", "PolicyDocument is required by %s", c->action);
    size_t len = strlen(doc);
    if (len > IAM_MAX_POLICY_BYTES)
        return iam_err(c, 409, "LimitExceeded", "Maximum policy size of %u bytes exceeded for %s.",
                       IAM_MAX_POLICY_BYTES, owner);
    auth_policy_t *pol = NULL;
    char msg[300] = "";
    if (auth_policy_parse_user(doc, len, &pol, msg, sizeof msg) != S3_OK)
        return iam_err(c, 400, "MalformedPolicyDocument", "%s",
                       msg[0] ? msg : "the policy document does not parse");
    auth_policy_free(pol);
    return 0;
}

int iam_no_user(iam_ctx_t *c, const char *name)
{
    return iam_err(c, 404, "NoSuchEntity", "The user with name %s cannot be found.", name);
}

char *iam_user_path(iam_ctx_t *c, const char *user)
{
    char *p = NULL;
    if (meta_rec_get(c->m, IDENT_REC_USER_PATH, user, &p) == WH_OK && p)
        return p;
    free(p);
    return strdup("/");
}

/* ---- authorization ---- */

/* A session's policy (AssumeRole's Policy), which its requests must pass too: *deny set when
 * it does not allow ctx's action on the resource (or on bare, the same without account). */
static wh_status_t session_gate(iam_ctx_t *c, auth_authz_ctx_t *ctx, const char *bare, bool *deny)
{
    if (!IDENT_IS_SESSION_KEY(c->r->who.access_key))
        return WH_OK;
    char *doc = NULL;
    wh_status_t st = ident_session_policy(c->id, c->r->who.access_key, &doc);
    if (st == WH_ERR_NOT_FOUND)
        return WH_OK;
    auth_policy_t *pol = NULL;
    char msg[200];
    if (st == WH_OK && auth_policy_parse_user(doc, strlen(doc), &pol, msg, sizeof msg) != S3_OK)
        st = WH_ERR_INTERNAL; /* checked at AssumeRole: refuse rather than drop it */
    free(doc);
    if (st != WH_OK)
        return st;
    const char *res = ctx->resource;
    bool allow = false, denied = false;
    for (int pass = 0; pass < (bare[0] ? 2 : 1); pass++) {
        ctx->resource = pass ? bare : res;
        auth_policy_result_t r = auth_policy_eval(pol, ctx);
        allow |= r == AUTH_POLICY_ALLOW;
        denied |= r == AUTH_POLICY_DENY;
    }
    ctx->resource = res;
    auth_policy_free(pol);
    *deny = denied || !allow;
    return WH_OK;
}

int iam_authorize(iam_ctx_t *c, const char *resource)
{
    const auth_principal_t *who = &c->r->who;
    if (who->kind == AUTH_PRINCIPAL_ROOT)
        return 0;
    char action[64];
    snprintf(action, sizeof action, "iam:%s", c->action);
    bool allow = false, deny = false;
    if (who->kind == AUTH_PRINCIPAL_USER) {
        meta_policy_t *pols = NULL;
        size_t n = 0;
        wh_status_t st = iam_principal_policy_set(c->m, who, &pols, &n);
        if (st != WH_OK && st != WH_ERR_NOT_FOUND)
            return iam_store_err(c, st, "reading the caller's policies");
        auth_authz_ctx_t ctx = {.who = who,
                                .account = ident_account(c->id),
                                .action = action,
                                .resource = resource,
                                .auth_type =
                                    c->r->auth.presigned ? "REST-QUERY-STRING" : "REST-HEADER"};
        s3h_peer_ip(c->r, &ctx.source_ip); /* the address without its port */
        char pre[40], bare[IAM_ARN_MAX] = "";
        int pl = snprintf(pre, sizeof pre, "arn:aws:iam::%s:", ident_account(c->id));
        if (pl > 0 && strncmp(resource, pre, (size_t)pl) == 0)
            snprintf(bare, sizeof bare, "arn:aws:iam:::%s", resource + pl);
        for (size_t i = 0; i < n && !deny; i++) {
            auth_policy_t *pol = NULL;
            char msg[200];
            if (auth_policy_parse_user(pols[i].doc, strlen(pols[i].doc), &pol, msg, sizeof msg) !=
                S3_OK) {
                /* Fail closed: skipping it would drop whatever it denies. */
                wh_warn(MOD, "user %s: stored policy %s no longer parses (%s); refusing", who->user,
                        pols[i].name, msg);
                int ret = iam_err(c, 500, "ServiceFailure",
                                  "user %s: stored policy %s cannot be read (%s); no request of "
                                  "this user is allowed until it is replaced or deleted",
                                  who->user, pols[i].name, msg);
                meta_policies_free(pols, n); /* after the message that names one of them */
                return ret;
            }
            /* The resource as named, and without its account (arn:aws:iam:::user/x, as
             * single-tenant stores write it): either names it. */
            for (int pass = 0; pass < (bare[0] ? 2 : 1); pass++) {
                ctx.resource = pass ? bare : resource;
                auth_policy_result_t res = auth_policy_eval(pol, &ctx);
                deny |= res == AUTH_POLICY_DENY;
                allow |= res == AUTH_POLICY_ALLOW;
            }
            auth_policy_free(pol);
        }
        meta_policies_free(pols, n);
        if (allow && !deny && (st = session_gate(c, &ctx, bare, &deny)) != WH_OK)
            return iam_store_err(c, st, "reading the session policy");
        allow &= !deny;
    }
    if (allow && !deny)
        return 0;
    return iam_err(c, 403, "AccessDenied",
                   "User: %s is not authorized to perform: %s on resource: %s%s",
                   who->arn[0] ? who->arn : "anonymous", action, resource,
                   deny ? " with an explicit deny" : "");
}

/* Actions of the IAM API that wharf does not implement (roles, policy versions past the
 * first, instance profiles, MFA, federation, ...): 501 NotImplemented, where a name IAM does not
 * have is 400 InvalidAction. */
static const char *const IAM_UNIMPLEMENTED[] = {
    "AddClientIDToOpenIDConnectProvider",
    "AddRoleToInstanceProfile",
    "ChangePassword",
    "CreateAccountAlias",
    "CreateInstanceProfile",
    "CreateLoginProfile",
    "CreateOpenIDConnectProvider",
    "CreatePolicyVersion",
    "CreateSAMLProvider",
    "CreateServiceLinkedRole",
    "CreateServiceSpecificCredential",
    "CreateVirtualMFADevice",
    "DeactivateMFADevice",
    "DeleteAccountAlias",
    "DeleteAccountPasswordPolicy",
    "DeleteInstanceProfile",
    "DeleteLoginProfile",
    "DeleteOpenIDConnectProvider",
    "DeletePolicyVersion",
    "DeleteRolePermissionsBoundary",
    "DeleteSAMLProvider",
    "DeleteServerCertificate",
    "DeleteServiceLinkedRole",
    "DeleteServiceSpecificCredential",
    "DeleteSigningCertificate",
    "DeleteSSHPublicKey",
    "DeleteUserPermissionsBoundary",
    "DeleteVirtualMFADevice",
    "EnableMFADevice",
    "GenerateCredentialReport",
    "GetAccountAuthorizationDetails",
    "GetAccountPasswordPolicy",
    "GetCredentialReport",
    "GetInstanceProfile",
    "GetLoginProfile",
    "GetOpenIDConnectProvider",
    "GetSAMLProvider",
    "GetServerCertificate",
    "GetSSHPublicKey",
    "ListAccountAliases",
    "ListEntitiesForPolicy",
    "ListInstanceProfiles",
    "ListInstanceProfilesForRole",
    "ListMFADevices",
    "ListRoleTags",
    "ListSAMLProviders",
    "ListServerCertificates",
    "ListServiceSpecificCredentials",
    "ListSigningCertificates",
    "ListSSHPublicKeys",
    "ListUserTags",
    "ListVirtualMFADevices",
    "PutRolePermissionsBoundary",
    "PutUserPermissionsBoundary",
    "RemoveRoleFromInstanceProfile",
    "ResyncMFADevice",
    "SetDefaultPolicyVersion",
    "SimulateCustomPolicy",
    "SimulatePrincipalPolicy",
    "TagRole",
    "TagUser",
    "UntagRole",
    "UntagUser",
    "UpdateAccountPasswordPolicy",
    "UpdateGroup",
    "UpdateLoginProfile",
    "UpdateRole",
    "UpdateRoleDescription",
    "UpdateServerCertificate",
    "UpdateSigningCertificate",
    "UpdateSSHPublicKey",
    "UploadServerCertificate",
    "UploadSigningCertificate",
    "UploadSSHPublicKey",
};

static bool iam_action_known(const char *action)
{
    for (size_t i = 0; i < WH_ARRAY_SIZE(IAM_UNIMPLEMENTED); i++)
        if (strcmp(action, IAM_UNIMPLEMENTED[i]) == 0)
            return true;
    return false;
}

/* ---- the handler steps ---- */

int s3h_iam_begin(front_req_t *r, s3h_out_t *o)
{
    if (s3h_kms_api_is(r))
        return s3h_kms_begin(r, o);
    iam_ctx_t c = {.r = r, .o = o, .action = "Unknown"};
    const char *ct = front_hdr(r, "content-type");
    if (!ct || strncasecmp(ct, "application/x-www-form-urlencoded", 33) != 0)
        return iam_err(&c, 400, "InvalidAction",
                       "POST / is the IAM API: send an "
                       "application/x-www-form-urlencoded body (Action=...&Version=2010-05-08)");
    const char *cl = front_hdr(r, "content-length");
    uint64_t n = 0;
    if (cl && wh_parse_u64(cl, strlen(cl), &n) == 0 && n > IAM_MAX_BODY)
        return iam_err(&c, 400, "ValidationError", "the request body exceeds %u bytes",
                       IAM_MAX_BODY);
    /* The body is hashed at finish (the signature covers it): no payload pipeline. */
    r->auth.mode = AUTH_PAYLOAD_UNSIGNED;
    return 0;
}

int s3h_iam_finish(front_req_t *r, s3h_out_t *o)
{
    if (s3h_kms_api_is(r))
        return s3h_kms_finish(r, o);
    iam_ctx_t c = {.r = r, .o = o, .id = r->srv->ident, .action = "Unknown"};
    c.m = ident_meta(c.id);
    int status;
    if (r->buf.len > IAM_MAX_BODY) {
        status =
            iam_err(&c, 400, "ValidationError", "the request body exceeds %u bytes", IAM_MAX_BODY);
        goto out;
    }
    /* STS arrives here too, signed for the service "sts" (front_req_verify_iam tells). */
    const char *authz = front_hdr(r, "authorization");
    bool sts = authz && strstr(authz, "/sts/aws4_request");
    if (sts)
        c.xmlns = STS_XMLNS;
    char hex[65];
    wh_sha256_hex(r->buf.data ? r->buf.data : "", r->buf.len, hex);
    char msg[320] = "";
    s3_err_t e = front_req_verify_iam(r, time(NULL), hex, msg, sizeof msg);
    if (e == S3_OK && r->auth.mode != AUTH_PAYLOAD_SHA256)
        e = S3_ERR_ACCESS_DENIED, snprintf(msg, sizeof msg,
                                           "the IAM API needs a signed body "
                                           "(x-amz-content-sha256 of it, or none)");
    else if (e == S3_OK && strcmp(r->auth.payload_hash, hex) != 0)
        e = S3_ERR_CONTENT_SHA256_MISMATCH, snprintf(msg, sizeof msg,
                                                     "x-amz-content-sha256 "
                                                     "does not match the body");
    if (e != S3_OK) {
        if (e == S3_ERR_INVALID_ACCESS_KEY)
            status = iam_err(&c, 403, "InvalidClientTokenId",
                             "The security token included in "
                             "the request is invalid: %s",
                             msg);
        else
            status = iam_err(&c, s3_err_http_status(e), s3_err_code(e), "%s",
                             msg[0] ? msg : s3_err_message(e));
        goto out;
    }
    if (r->who.kind == AUTH_PRINCIPAL_ANON) {
        status = iam_err(&c, 403, "AccessDenied", "the IAM API needs a signed request");
        goto out;
    }
    c.form = malloc(r->buf.len + 1);
    if (!c.form) {
        status = iam_err(&c, 503, "ServiceUnavailable", "out of memory");
        goto out;
    }
    memcpy(c.form, r->buf.data ? r->buf.data : "", r->buf.len);
    c.form[r->buf.len] = '\0';
    const char *action = iam_param(&c, "Action");
    if (!action) {
        status = iam_err(&c, 400, "MissingAction", "the form has no Action parameter");
        goto out;
    }
    const char *version = iam_param(&c, "Version");
    if (version && strcmp(version, "2011-06-15") == 0) {
        sts = true;
        c.xmlns = STS_XMLNS;
    }
    iam_action_fn fn = sts ? iam_sts_action(action) : NULL;
    if (sts) {
        c.action = fn ? action : "Unknown";
        status = fn ? fn(&c)
                    : iam_err(&c, 501, "NotImplemented",
                              "wharf does not implement the STS action %.64s (GetCallerIdentity, "
                              "GetSessionToken and AssumeRole only)",
                              action);
        goto out;
    }
    if (version && strcmp(version, "2010-05-08") != 0) {
        status = iam_err(&c, 400, "InvalidParameterValue",
                         "Version must be 2010-05-08, got "
                         "'%.40s'",
                         version);
        goto out;
    }
    status = 0;
    fn = iam_users_action(action);
    if (!fn)
        fn = iam_groups_action(action);
    if (!fn)
        fn = iam_policies_action(action);
    if (!fn)
        fn = iam_roles_action(action);
    if (fn) {
        c.action = action;
        status = fn(&c);
    }
    if (!status && iam_action_known(action))
        status = iam_err(&c, 501, "NotImplemented",
                         "wharf does not implement the IAM action "
                         "%.64s (users, access keys, groups, roles and managed policies only)",
                         action);
    else if (!status)
        status = iam_err(&c, 400, "InvalidAction", "%.64s is not an IAM action", action);
out:
    for (int i = 0; i < c.np; i++)
        free(c.params[i]);
    free(c.form);
    return status;
}
