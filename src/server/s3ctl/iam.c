/* SPDX-License-Identifier: Apache-2.0 */
/* The IAM API subset `aws iam` and boto3's iam client speak, on wharfd's own port: users,
 * access keys and inline user policies. Query protocol: POST / with an
 * application/x-www-form-urlencoded body (Action=...&Version=2010-05-08&...), signed with
 * SigV4 for the service "iam"; answers are XML in the IAM namespace, errors IAM's
 * ErrorResponse with its codes.
 *
 * Its clients sign the body's SHA-256 without sending it, so the signature is checked here,
 * once the body is read (http.c lets this row through unverified). Who may: root always; a
 * user when one of its inline policies allows the action (iam:CreateUser, ...) on the target
 * user's ARN and none denies it (the authorization engine's auth_policy_eval). */
#include "base/codec.h"
#include "base/digest.h"
#include "base/log.h"
#include "s3/xml.h"
#include "s3ctl/s3ctl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define MOD "iam"
#define IAM_XMLNS "https://iam.amazonaws.com/doc/2010-05-08/"
#define IAM_MAX_BODY (64u << 10)
#define IAM_MAX_PARAMS 8
/* AWS's quotas: two access keys per user; inline policy text (we allow 10 KiB per policy). */
#define IAM_MAX_KEYS_PER_USER 2
#define IAM_MAX_POLICY_BYTES 10240
#define IAM_MAX_POLICY_NAME 128
#define IAM_DEFAULT_MAX_ITEMS 100

typedef struct iam_ctx {
    front_req_t *r;
    s3h_out_t *o;
    ident_t *id;
    meta_t *m;
    char *form; /* the body, NUL-terminated */
    const char *action;
    char *params[IAM_MAX_PARAMS]; /* decoded values, freed at the end */
    int np;
} iam_ctx_t;

/* ---- answers ---- */

static int iam_err(iam_ctx_t *c, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int iam_err(iam_ctx_t *c, int status, const char *code, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    wh_sbuf_puts(&b, S3H_XML_DECL "<ErrorResponse xmlns=\"" IAM_XMLNS "\"><Error><Type>");
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
static int iam_store_err(iam_ctx_t *c, wh_status_t st, const char *what)
{
    if (st == WH_ERR_UNAVAILABLE || st == WH_ERR_BUSY)
        return iam_err(c, 503, "ServiceUnavailable",
                       "%s: the metadata database is unreachable "
                       "or busy; retry",
                       what);
    return iam_err(c, 500, "ServiceFailure", "%s failed: %s", what, wh_status_str(st));
}

static void resp_begin(iam_ctx_t *c, wh_sbuf_t *b, bool result)
{
    wh_sbuf_init(b);
    wh_sbuf_printf(b, S3H_XML_DECL "<%sResponse xmlns=\"" IAM_XMLNS "\">", c->action);
    if (result)
        wh_sbuf_printf(b, "<%sResult>", c->action);
}

static int resp_end(iam_ctx_t *c, wh_sbuf_t *b, bool result)
{
    if (result)
        wh_sbuf_printf(b, "</%sResult>", c->action);
    wh_sbuf_puts(b, "<ResponseMetadata>");
    s3_xml_elem(b, "RequestId", c->r->id);
    wh_sbuf_printf(b, "</ResponseMetadata></%sResponse>", c->action);
    return s3h_ok_xml(c->o, 200, b);
}

static int resp_empty(iam_ctx_t *c)
{
    wh_sbuf_t b;
    resp_begin(c, &b, false);
    return resp_end(c, &b, false);
}

static void xml_time(wh_sbuf_t *b, const char *name, time_t t)
{
    char iso[25];
    wh_iso8601(t, iso);
    s3_xml_elem(b, name, iso);
}

static void xml_user(iam_ctx_t *c, wh_sbuf_t *b, const meta_user_t *u)
{
    char arn[256];
    ident_user_arn(c->id, u->name, arn, sizeof arn);
    s3_xml_elem(b, "Path", "/");
    s3_xml_elem(b, "UserName", u->name);
    s3_xml_elem(b, "UserId", u->user_id);
    s3_xml_elem(b, "Arn", arn);
    xml_time(b, "CreateDate", u->created);
}

static void xml_key(wh_sbuf_t *b, const meta_access_key_t *k, const char *secret)
{
    s3_xml_elem(b, "UserName", k->user);
    s3_xml_elem(b, "AccessKeyId", k->access_key);
    s3_xml_elem(b, "Status", k->active ? "Active" : "Inactive");
    if (secret)
        s3_xml_elem(b, "SecretAccessKey", secret);
    xml_time(b, "CreateDate", k->created);
}

/* ---- parameters ---- */

/* The decoded form parameter name, or NULL when absent. A bad %-escape reads as absent and
 * is caught by the check of what is required. */
static const char *param(iam_ctx_t *c, const char *name)
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

static int bad_name(iam_ctx_t *c, const char *field, const char *v, size_t max)
{
    return iam_err(c, 400, "ValidationError",
                   "1 validation error detected: Value '%.80s' at '%s' failed to satisfy "
                   "constraint: Member must have length 1 to %zu and match [\\w+=,.@-]+",
                   v ? v : "", field, max);
}

/* The UserName parameter (required), checked. NULL after putting the error in c->o. */
static const char *need_user(iam_ctx_t *c, int *status)
{
    const char *u = param(c, "UserName");
    if (!u) {
        *status = iam_err(c, 400, "ValidationError", "UserName is required by %s", c->action);
        return NULL;
    }
    if (!ident_name_valid(u, META_USER_MAX)) {
        *status = bad_name(c, "userName", u, META_USER_MAX);
        return NULL;
    }
    return u;
}

/* UserName when given, else the caller's own user (key operations of a user on itself). */
static const char *user_or_self(iam_ctx_t *c, int *status)
{
    const char *u = param(c, "UserName");
    if (u) {
        if (!ident_name_valid(u, META_USER_MAX)) {
            *status = bad_name(c, "userName", u, META_USER_MAX);
            return NULL;
        }
        return u;
    }
    if (c->r->who.kind == AUTH_PRINCIPAL_USER)
        return c->r->who.user;
    *status = iam_err(c, 400, "ValidationError",
                      "%s needs a UserName: the root key lives in "
                      "wharfd's environment, not in IAM",
                      c->action);
    return NULL;
}

static int no_user(iam_ctx_t *c, const char *name)
{
    return iam_err(c, 404, "NoSuchEntity", "The user with name %s cannot be found.", name);
}

/* ---- authorization ---- */

/* Root always; a user when its inline policies allow "iam:<Action>" on the target's ARN
 * (or "*" for account-wide actions) and none denies it. 0 to go on, else the error status. */
static int authorize(iam_ctx_t *c, const char *target)
{
    const auth_principal_t *who = &c->r->who;
    if (who->kind == AUTH_PRINCIPAL_ROOT)
        return 0;
    char action[64], resource[256];
    snprintf(action, sizeof action, "iam:%s", c->action);
    if (target)
        ident_user_arn(c->id, target, resource, sizeof resource);
    else
        snprintf(resource, sizeof resource, "arn:aws:iam::%s:user/*", ident_account(c->id));
    bool allow = false, deny = false;
    if (who->kind == AUTH_PRINCIPAL_USER) {
        meta_policy_t *pols = NULL;
        size_t n = 0;
        wh_status_t st = meta_user_policy_list(c->m, who->user, &pols, &n);
        if (st != WH_OK && st != WH_ERR_NOT_FOUND)
            return iam_store_err(c, st, "reading the caller's policies");
        auth_authz_ctx_t ctx = {.who = who,
                                .account = ident_account(c->id),
                                .action = action,
                                .resource = resource,
                                .auth_type =
                                    c->r->auth.presigned ? "REST-QUERY-STRING" : "REST-HEADER"};
        s3h_peer_ip(c->r, &ctx.source_ip); /* the address without its port */
        for (size_t i = 0; i < n && !deny; i++) {
            auth_policy_t *pol = NULL;
            char msg[200];
            if (auth_policy_parse_user(pols[i].doc, strlen(pols[i].doc), &pol, msg, sizeof msg) !=
                S3_OK) {
                /* Fail closed: skipping it would drop whatever it denies. */
                wh_warn(MOD, "user %s: stored policy %s no longer parses (%s); refusing", who->user,
                        pols[i].name, msg);
                int ret = iam_err(c, 500, "ServiceFailure",
                                  "user %s: stored policy %s cannot "
                                  "be read (%s); no request of this user is allowed until it "
                                  "is replaced or deleted",
                                  who->user, pols[i].name, msg);
                meta_policies_free(pols, n); /* after the message that names one of them */
                return ret;
            }
            auth_policy_result_t res = auth_policy_eval(pol, &ctx);
            deny |= res == AUTH_POLICY_DENY;
            allow |= res == AUTH_POLICY_ALLOW;
            auth_policy_free(pol);
        }
        meta_policies_free(pols, n);
    }
    if (allow && !deny)
        return 0;
    return iam_err(c, 403, "AccessDenied",
                   "User: %s is not authorized to perform: %s on "
                   "resource: %s%s",
                   who->arn[0] ? who->arn : "anonymous", action, resource,
                   deny ? " with an explicit deny" : "");
}

/* The target user (UserName; or the caller's own user when self_ok and none is named),
 * authorized for c->action. NULL after putting the error in c->o. */
static const char *target_user(iam_ctx_t *c, bool self_ok, int *status)
{
    const char *name = self_ok ? user_or_self(c, status) : need_user(c, status);
    if (name && (*status = authorize(c, name)))
        return NULL;
    return name;
}

/* NoSuchEntity for a missing policy: naming the user when it is the user that is missing. */
static int no_policy(iam_ctx_t *c, const char *name, const char *pname)
{
    if (meta_user_get(c->m, name, NULL) == WH_ERR_NOT_FOUND)
        return no_user(c, name);
    return iam_err(c, 404, "NoSuchEntity", "The user policy with name %s cannot be found.", pname);
}

/* ---- actions ---- */

static int act_create_user(iam_ctx_t *c)
{
    int status = 0;
    const char *name = target_user(c, false, &status);
    if (!name)
        return status;
    const char *path = param(c, "Path");
    if (path && strcmp(path, "/") != 0)
        return iam_err(c, 400, "ValidationError",
                       "only the Path \"/\" is kept by wharf, got "
                       "'%.80s'",
                       path);
    meta_user_t u;
    wh_status_t st = ident_user_create(c->id, name, &u);
    if (st == WH_ERR_EXISTS)
        return iam_err(c, 409, "EntityAlreadyExists", "User with name %s already exists.", name);
    if (st != WH_OK)
        return iam_store_err(c, st, "creating the user");
    wh_info(MOD, "user created name=%s by=%s", name, c->r->who.arn);
    wh_sbuf_t b;
    resp_begin(c, &b, true);
    wh_sbuf_puts(&b, "<User>");
    xml_user(c, &b, &u);
    wh_sbuf_puts(&b, "</User>");
    return resp_end(c, &b, true);
}

static int act_get_user(iam_ctx_t *c)
{
    int status = 0;
    const char *name = param(c, "UserName");
    if (name && !ident_name_valid(name, META_USER_MAX))
        return bad_name(c, "userName", name, META_USER_MAX);
    if (!name && c->r->who.kind == AUTH_PRINCIPAL_USER)
        name = c->r->who.user;
    if (name && (status = authorize(c, name)))
        return status;
    wh_sbuf_t b;
    if (!name) { /* root asking about itself */
        resp_begin(c, &b, true);
        wh_sbuf_puts(&b, "<User>");
        s3_xml_elem(&b, "UserId", ident_account(c->id));
        s3_xml_elem(&b, "Arn", c->r->who.arn);
        xml_time(&b, "CreateDate", 0);
        wh_sbuf_puts(&b, "</User>");
        return resp_end(c, &b, true);
    }
    meta_user_t u;
    wh_status_t st = meta_user_get(c->m, name, &u);
    if (st == WH_ERR_NOT_FOUND)
        return no_user(c, name);
    if (st != WH_OK)
        return iam_store_err(c, st, "reading the user");
    resp_begin(c, &b, true);
    wh_sbuf_puts(&b, "<User>");
    xml_user(c, &b, &u);
    wh_sbuf_puts(&b, "</User>");
    return resp_end(c, &b, true);
}

static int act_delete_user(iam_ctx_t *c)
{
    int status = 0;
    const char *name = target_user(c, false, &status);
    if (!name)
        return status;
    wh_status_t st = meta_user_delete(c->m, name, false);
    if (st == WH_ERR_NOT_FOUND)
        return no_user(c, name);
    if (st == WH_ERR_NOT_EMPTY)
        return iam_err(c, 409, "DeleteConflict",
                       "Cannot delete entity, must delete access "
                       "keys and inline policies first.");
    if (st != WH_OK)
        return iam_store_err(c, st, "deleting the user");
    wh_info(MOD, "user deleted name=%s by=%s", name, c->r->who.arn);
    return resp_empty(c);
}

static int act_list_users(iam_ctx_t *c)
{
    int status = authorize(c, NULL);
    if (status)
        return status;
    const char *prefix = param(c, "PathPrefix");
    const char *marker = param(c, "Marker");
    const char *max_s = param(c, "MaxItems");
    uint64_t max = IAM_DEFAULT_MAX_ITEMS;
    if (max_s && (wh_parse_u64(max_s, strlen(max_s), &max) != 0 || max < 1 || max > 1000))
        return iam_err(c, 400, "ValidationError", "MaxItems must be 1 to 1000, got '%.40s'", max_s);
    meta_user_t *us = NULL;
    size_t n = 0;
    wh_status_t st = meta_user_list(c->m, &us, &n);
    if (st != WH_OK)
        return iam_store_err(c, st, "listing users");
    bool all_paths = !prefix || strcmp(prefix, "/") == 0;
    wh_sbuf_t b;
    resp_begin(c, &b, true);
    wh_sbuf_puts(&b, "<Users>");
    size_t shown = 0;
    const char *last = NULL;
    bool truncated = false;
    for (size_t i = 0; i < n && all_paths; i++) {
        if (marker && strcmp(us[i].name, marker) <= 0)
            continue;
        if (shown == max) {
            truncated = true;
            break;
        }
        wh_sbuf_puts(&b, "<member>");
        xml_user(c, &b, &us[i]);
        wh_sbuf_puts(&b, "</member>");
        last = us[i].name;
        shown++;
    }
    wh_sbuf_puts(&b, "</Users>");
    s3_xml_elem(&b, "IsTruncated", truncated ? "true" : "false");
    if (truncated && last)
        s3_xml_elem(&b, "Marker", last);
    free(us);
    return resp_end(c, &b, true);
}

static int act_create_key(iam_ctx_t *c)
{
    int status = 0;
    const char *name = target_user(c, true, &status);
    if (!name)
        return status;
    meta_access_key_t *ks = NULL;
    size_t n = 0;
    wh_status_t st = meta_key_list(c->m, name, &ks, &n);
    free(ks);
    if (st == WH_ERR_NOT_FOUND)
        return no_user(c, name);
    if (st != WH_OK)
        return iam_store_err(c, st, "listing the user's keys");
    if (n >= IAM_MAX_KEYS_PER_USER)
        return iam_err(c, 409, "LimitExceeded", "Cannot exceed quota for AccessKeysPerUser: %d",
                       IAM_MAX_KEYS_PER_USER);
    meta_access_key_t k;
    char secret[IDENT_SECRET_MAX + 1], msg[200];
    st = ident_key_create(c->id, name, NULL, NULL, &k, secret, msg, sizeof msg);
    if (st == WH_ERR_NOT_FOUND)
        return no_user(c, name);
    if (st == WH_ERR_UNSUPPORTED)
        return iam_err(c, 500, "ServiceFailure", "%s", msg);
    if (st != WH_OK)
        return iam_store_err(c, st, "creating the access key");
    wh_info(MOD, "access key created user=%s access_key=%s by=%s", name, k.access_key,
            c->r->who.arn);
    wh_sbuf_t b;
    resp_begin(c, &b, true);
    wh_sbuf_puts(&b, "<AccessKey>");
    xml_key(&b, &k, secret);
    wh_sbuf_puts(&b, "</AccessKey>");
    memset(secret, 0, sizeof secret);
    return resp_end(c, &b, true);
}

static int act_list_keys(iam_ctx_t *c)
{
    int status = 0;
    const char *name = target_user(c, true, &status);
    if (!name)
        return status;
    meta_access_key_t *ks = NULL;
    size_t n = 0;
    wh_status_t st = meta_key_list(c->m, name, &ks, &n);
    if (st == WH_ERR_NOT_FOUND)
        return no_user(c, name);
    if (st != WH_OK)
        return iam_store_err(c, st, "listing the user's keys");
    wh_sbuf_t b;
    resp_begin(c, &b, true);
    wh_sbuf_puts(&b, "<AccessKeyMetadata>");
    for (size_t i = 0; i < n; i++) {
        wh_sbuf_puts(&b, "<member>");
        xml_key(&b, &ks[i], NULL);
        wh_sbuf_puts(&b, "</member>");
    }
    wh_sbuf_puts(&b, "</AccessKeyMetadata><IsTruncated>false</IsTruncated>");
    free(ks);
    return resp_end(c, &b, true);
}

/* AccessKeyId of user name: its row, or an error status (NoSuchEntity also when the key is
 * another user's, so a caller learns nothing about keys it may not touch). */
static int key_of_user(iam_ctx_t *c, const char *name, const char *ak, meta_access_key_t *k)
{
    if (!ak || !*ak)
        return iam_err(c, 400, "ValidationError", "AccessKeyId is required by %s", c->action);
    wh_status_t st = meta_key_get(c->m, ak, k);
    if (st == WH_OK && strcmp(k->user, name) != 0)
        st = WH_ERR_NOT_FOUND;
    if (st == WH_ERR_NOT_FOUND)
        return iam_err(c, 404, "NoSuchEntity", "The Access Key with id %.128s cannot be found.",
                       ak);
    if (st != WH_OK)
        return iam_store_err(c, st, "reading the access key");
    return 0;
}

static int act_delete_key(iam_ctx_t *c)
{
    int status = 0;
    const char *name = target_user(c, true, &status);
    if (!name)
        return status;
    const char *ak = param(c, "AccessKeyId");
    meta_access_key_t k;
    if ((status = key_of_user(c, name, ak, &k)))
        return status;
    wh_status_t st = meta_key_delete(c->m, ak);
    if (st != WH_OK && st != WH_ERR_NOT_FOUND)
        return iam_store_err(c, st, "deleting the access key");
    wh_info(MOD, "access key deleted user=%s access_key=%s by=%s", name, ak, c->r->who.arn);
    return resp_empty(c);
}

static int act_update_key(iam_ctx_t *c)
{
    int status = 0;
    const char *name = target_user(c, true, &status);
    if (!name)
        return status;
    const char *ak = param(c, "AccessKeyId");
    const char *stat = param(c, "Status");
    if (!stat || (strcmp(stat, "Active") != 0 && strcmp(stat, "Inactive") != 0))
        return iam_err(c, 400, "ValidationError",
                       "Status must be Active or Inactive, got "
                       "'%.40s'",
                       stat ? stat : "");
    meta_access_key_t k;
    if ((status = key_of_user(c, name, ak, &k)))
        return status;
    wh_status_t st = meta_key_set_active(c->m, ak, strcmp(stat, "Active") == 0);
    if (st != WH_OK)
        return iam_store_err(c, st, "updating the access key");
    wh_info(MOD, "access key status user=%s access_key=%s status=%s by=%s", name, ak, stat,
            c->r->who.arn);
    return resp_empty(c);
}

static const char *need_policy_name(iam_ctx_t *c, int *status)
{
    const char *p = param(c, "PolicyName");
    if (!p || !ident_name_valid(p, IAM_MAX_POLICY_NAME)) {
        *status = bad_name(c, "policyName", p, IAM_MAX_POLICY_NAME);
        return NULL;
    }
    return p;
}

static int act_put_policy(iam_ctx_t *c)
{
    int status = 0;
    const char *name = target_user(c, false, &status);
    if (!name)
        return status;
    const char *pname = need_policy_name(c, &status);
    if (!pname)
        return status;
    const char *doc = param(c, "PolicyDocument");
    if (!doc || !*doc)
        return iam_err(c, 400, "ValidationError", "PolicyDocument is required by %s", c->action);
    size_t len = strlen(doc);
    if (len > IAM_MAX_POLICY_BYTES)
        return iam_err(c, 409, "LimitExceeded",
                       "Maximum policy size of %u bytes exceeded for "
                       "user %s.",
                       IAM_MAX_POLICY_BYTES, name);
    auth_policy_t *pol = NULL;
    char msg[300] = "";
    if (auth_policy_parse_user(doc, len, &pol, msg, sizeof msg) != S3_OK)
        return iam_err(c, 400, "MalformedPolicyDocument", "%s",
                       msg[0] ? msg
                              : "the policy "
                                "document does not parse");
    auth_policy_free(pol);
    wh_status_t st = meta_user_policy_put(c->m, name, pname, doc);
    if (st == WH_ERR_NOT_FOUND)
        return no_user(c, name);
    if (st != WH_OK)
        return iam_store_err(c, st, "storing the policy");
    wh_info(MOD, "user policy put user=%s policy=%s by=%s", name, pname, c->r->who.arn);
    return resp_empty(c);
}

static int act_get_policy(iam_ctx_t *c)
{
    int status = 0;
    const char *name = target_user(c, false, &status);
    if (!name)
        return status;
    const char *pname = need_policy_name(c, &status);
    if (!pname)
        return status;
    char *doc = NULL;
    wh_status_t st = meta_user_policy_get(c->m, name, pname, &doc);
    if (st == WH_ERR_NOT_FOUND)
        return no_policy(c, name, pname);
    if (st != WH_OK)
        return iam_store_err(c, st, "reading the policy");
    wh_sbuf_t b, enc;
    wh_sbuf_init(&enc);
    s3_uri_encode(doc, strlen(doc), 1, &enc); /* IAM sends policy documents URL-encoded */
    free(doc);
    resp_begin(c, &b, true);
    s3_xml_elem(&b, "UserName", name);
    s3_xml_elem(&b, "PolicyName", pname);
    s3_xml_elem(&b, "PolicyDocument", enc.data ? enc.data : "");
    wh_sbuf_free(&enc);
    return resp_end(c, &b, true);
}

static int act_delete_policy(iam_ctx_t *c)
{
    int status = 0;
    const char *name = target_user(c, false, &status);
    if (!name)
        return status;
    const char *pname = need_policy_name(c, &status);
    if (!pname)
        return status;
    wh_status_t st = meta_user_policy_delete(c->m, name, pname);
    if (st == WH_ERR_NOT_FOUND)
        return no_policy(c, name, pname);
    if (st != WH_OK)
        return iam_store_err(c, st, "deleting the policy");
    wh_info(MOD, "user policy deleted user=%s policy=%s by=%s", name, pname, c->r->who.arn);
    return resp_empty(c);
}

static int act_list_policies(iam_ctx_t *c)
{
    int status = 0;
    const char *name = target_user(c, false, &status);
    if (!name)
        return status;
    meta_policy_t *pols = NULL;
    size_t n = 0;
    wh_status_t st = meta_user_policy_list(c->m, name, &pols, &n);
    if (st == WH_ERR_NOT_FOUND)
        return no_user(c, name);
    if (st != WH_OK)
        return iam_store_err(c, st, "listing the policies");
    wh_sbuf_t b;
    resp_begin(c, &b, true);
    wh_sbuf_puts(&b, "<PolicyNames>");
    for (size_t i = 0; i < n; i++)
        s3_xml_elem(&b, "member", pols[i].name);
    wh_sbuf_puts(&b, "</PolicyNames><IsTruncated>false</IsTruncated>");
    meta_policies_free(pols, n);
    return resp_end(c, &b, true);
}

/* Actions of the IAM API that wharf does not implement (groups, roles, managed policies,
 * instance profiles, MFA, federation, ...): 501 NotImplemented, where a name IAM does not
 * have is 400 InvalidAction. */
static const char *const IAM_UNIMPLEMENTED[] = {
    "AddClientIDToOpenIDConnectProvider",
    "AddRoleToInstanceProfile",
    "AddUserToGroup",
    "AttachGroupPolicy",
    "AttachRolePolicy",
    "AttachUserPolicy",
    "ChangePassword",
    "CreateAccountAlias",
    "CreateGroup",
    "CreateInstanceProfile",
    "CreateLoginProfile",
    "CreateOpenIDConnectProvider",
    "CreatePolicy",
    "CreatePolicyVersion",
    "CreateRole",
    "CreateSAMLProvider",
    "CreateServiceLinkedRole",
    "CreateServiceSpecificCredential",
    "CreateVirtualMFADevice",
    "DeactivateMFADevice",
    "DeleteAccountAlias",
    "DeleteAccountPasswordPolicy",
    "DeleteGroup",
    "DeleteGroupPolicy",
    "DeleteInstanceProfile",
    "DeleteLoginProfile",
    "DeleteOpenIDConnectProvider",
    "DeletePolicy",
    "DeletePolicyVersion",
    "DeleteRole",
    "DeleteRolePermissionsBoundary",
    "DeleteRolePolicy",
    "DeleteSAMLProvider",
    "DeleteServerCertificate",
    "DeleteServiceLinkedRole",
    "DeleteServiceSpecificCredential",
    "DeleteSigningCertificate",
    "DeleteSSHPublicKey",
    "DeleteUserPermissionsBoundary",
    "DeleteVirtualMFADevice",
    "DetachGroupPolicy",
    "DetachRolePolicy",
    "DetachUserPolicy",
    "EnableMFADevice",
    "GenerateCredentialReport",
    "GetAccountAuthorizationDetails",
    "GetAccountPasswordPolicy",
    "GetAccountSummary",
    "GetCredentialReport",
    "GetGroup",
    "GetGroupPolicy",
    "GetInstanceProfile",
    "GetLoginProfile",
    "GetOpenIDConnectProvider",
    "GetPolicy",
    "GetPolicyVersion",
    "GetRole",
    "GetRolePolicy",
    "GetSAMLProvider",
    "GetServerCertificate",
    "GetSSHPublicKey",
    "ListAccountAliases",
    "ListAttachedGroupPolicies",
    "ListAttachedRolePolicies",
    "ListAttachedUserPolicies",
    "ListEntitiesForPolicy",
    "ListGroupPolicies",
    "ListGroups",
    "ListGroupsForUser",
    "ListInstanceProfiles",
    "ListInstanceProfilesForRole",
    "ListMFADevices",
    "ListOpenIDConnectProviders",
    "ListPolicies",
    "ListPolicyVersions",
    "ListRolePolicies",
    "ListRoles",
    "ListRoleTags",
    "ListSAMLProviders",
    "ListServerCertificates",
    "ListServiceSpecificCredentials",
    "ListSigningCertificates",
    "ListSSHPublicKeys",
    "ListUserTags",
    "ListVirtualMFADevices",
    "PutGroupPolicy",
    "PutRolePermissionsBoundary",
    "PutRolePolicy",
    "PutUserPermissionsBoundary",
    "RemoveRoleFromInstanceProfile",
    "RemoveUserFromGroup",
    "ResyncMFADevice",
    "SetDefaultPolicyVersion",
    "SimulateCustomPolicy",
    "SimulatePrincipalPolicy",
    "TagRole",
    "TagUser",
    "UntagRole",
    "UntagUser",
    "UpdateAccountPasswordPolicy",
    "UpdateAssumeRolePolicy",
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

static const struct {
    const char *name;
    int (*fn)(iam_ctx_t *c);
} IAM_ACTIONS[] = {
    {"CreateUser", act_create_user},         {"GetUser", act_get_user},
    {"DeleteUser", act_delete_user},         {"ListUsers", act_list_users},
    {"CreateAccessKey", act_create_key},     {"ListAccessKeys", act_list_keys},
    {"DeleteAccessKey", act_delete_key},     {"UpdateAccessKey", act_update_key},
    {"PutUserPolicy", act_put_policy},       {"GetUserPolicy", act_get_policy},
    {"DeleteUserPolicy", act_delete_policy}, {"ListUserPolicies", act_list_policies},
};

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
    /* STS (AssumeRole and the rest) arrives here too, signed for the service "sts": there
     * are no roles or temporary credentials to hand out. Nothing is done, so nothing needs the
     * signature checked first. */
    const char *authz = front_hdr(r, "authorization");
    if (authz && strstr(authz, "/sts/aws4_request")) {
        status = iam_err(&c, 501, "NotImplemented",
                         "wharf does not implement STS: there are "
                         "no roles or temporary credentials; sign with an IAM user's access "
                         "key");
        goto out;
    }
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
    const char *action = param(&c, "Action");
    if (!action) {
        status = iam_err(&c, 400, "MissingAction", "the form has no Action parameter");
        goto out;
    }
    const char *version = param(&c, "Version");
    if (version && strcmp(version, "2011-06-15") == 0) {
        status = iam_err(&c, 501, "NotImplemented",
                         "wharf does not implement STS (%.64s): "
                         "there are no roles or temporary credentials; sign with an IAM "
                         "user's access key",
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
    for (size_t i = 0; i < WH_ARRAY_SIZE(IAM_ACTIONS); i++) {
        if (strcmp(action, IAM_ACTIONS[i].name) == 0) {
            c.action = IAM_ACTIONS[i].name;
            status = IAM_ACTIONS[i].fn(&c);
            break;
        }
    }
    if (!status && iam_action_known(action))
        status = iam_err(&c, 501, "NotImplemented",
                         "wharf does not implement the IAM action "
                         "%.64s (users, access keys and inline user policies only)",
                         action);
    else if (!status)
        status = iam_err(&c, 400, "InvalidAction", "%.64s is not an IAM action", action);
out:
    for (int i = 0; i < c.np; i++)
        free(c.params[i]);
    free(c.form);
    return status;
}
