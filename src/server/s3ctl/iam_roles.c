/* SPDX-License-Identifier: Apache-2.0 */
/* The IAM API's roles (iam_int.h): a role is an IAM record under its lower-cased name with its
 * trust policy (AssumeRolePolicyDocument); its inline policies are records under it. The
 * trust policy is read here too, for AssumeRole: which principals may assume the role. */
#include "base/log.h"
#include "s3/xml.h"
#include "s3ctl/iam_int.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MOD "iam"
#define ROLE_MAX 64
#define ROLE_DEFAULT_SESSION 3600
#define ROLE_MAX_SESSION 43200

static void role_parse(const char *key, const char *doc, iam_role_t *r)
{
    char k[ROLE_MAX + 1];
    snprintf(k, sizeof k, "%s", key); /* key may be r->key */
    free(r->trust);
    memset(r, 0, sizeof *r);
    memcpy(r->key, k, sizeof k);
    char num[24] = "0";
    iam_rec_field(doc, "name", r->name, sizeof r->name);
    if (!iam_rec_field(doc, "path", r->path, sizeof r->path))
        snprintf(r->path, sizeof r->path, "/");
    iam_rec_field(doc, "id", r->id, sizeof r->id);
    iam_rec_field(doc, "desc", r->desc, sizeof r->desc);
    iam_rec_field(doc, "created", num, sizeof num);
    r->created = atoll(num);
    snprintf(num, sizeof num, "%d", ROLE_DEFAULT_SESSION);
    iam_rec_field(doc, "maxdur", num, sizeof num);
    r->max_session = atoi(num);
    wh_sbuf_t d;
    wh_sbuf_init(&d);
    if (auth_query_param(doc, "trust", &d) == 1 && !d.oom) {
        wh_sbuf_append(&d, "", 1);
        r->trust = wh_sbuf_steal(&d);
    }
    wh_sbuf_free(&d);
}

void iam_role_free(iam_role_t *r)
{
    free(r->trust);
    r->trust = NULL;
}

void iam_role_arn(const char *account, const iam_role_t *r, char *out, size_t cap)
{
    snprintf(out, cap, "arn:aws:iam::%s:role%s%s", account, r->path, r->name);
}

wh_status_t iam_role_get(meta_t *m, const char *name, iam_role_t *r)
{
    memset(r, 0, sizeof *r);
    char key[ROLE_MAX + 1];
    if (strlen(name) > ROLE_MAX)
        return WH_ERR_NOT_FOUND;
    iam_lower(name, key, sizeof key);
    char *doc = NULL;
    wh_status_t st = meta_rec_get(m, IAM_REC_ROLE, key, &doc);
    if (st == WH_OK)
        role_parse(key, doc, r);
    free(doc);
    return st;
}

static wh_status_t role_store(meta_t *m, const iam_role_t *r, bool create)
{
    char created[24], maxdur[24];
    snprintf(created, sizeof created, "%lld", r->created);
    snprintf(maxdur, sizeof maxdur, "%d", r->max_session);
    wh_sbuf_t d;
    wh_sbuf_init(&d);
    iam_rec_add(&d, "name", r->name);
    iam_rec_add(&d, "path", r->path);
    iam_rec_add(&d, "id", r->id);
    iam_rec_add(&d, "desc", r->desc);
    iam_rec_add(&d, "created", created);
    iam_rec_add(&d, "maxdur", maxdur);
    iam_rec_add(&d, "trust", r->trust ? r->trust : "");
    wh_status_t st = d.oom ? WH_ERR_NOMEM : meta_rec_put(m, IAM_REC_ROLE, r->key, d.data, create);
    wh_sbuf_free(&d);
    return st;
}

/* ---- trust policies ---- */

static bool str_or_list_has(json_t *v, const char *want, bool glob)
{
    size_t n = json_is_array(v) ? json_array_size(v) : 1;
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_is_array(v) ? json_array_get(v, i) : v;
        const char *s = json_string_value(e);
        if (s && (glob ? auth_glob(s, want, true) : strcmp(s, want) == 0))
            return true;
    }
    return false;
}

static bool has_sts_action(json_t *v)
{
    size_t n = json_is_array(v) ? json_array_size(v) : 1;
    for (size_t i = 0; i < n; i++) {
        const char *s = json_string_value(json_is_array(v) ? json_array_get(v, i) : v);
        if (s && strncasecmp(s, "sts:", 4) == 0)
            return true;
    }
    return false;
}

/* The trust policy's shape: an object whose Statement (one or a list) has an Effect, an Action
 * of sts: actions and a Principal. NULL when it is good, else why not. */
const char *iam_trust_invalid(const char *doc)
{
    json_error_t je;
    json_t *root = json_loads(doc, 0, &je);
    const char *why = NULL;
    json_t *sts = root ? json_object_get(root, "Statement") : NULL;
    if (!root || !json_is_object(root))
        why = "the trust policy is not a JSON object";
    else if (!sts || !(json_is_array(sts) || json_is_object(sts)))
        why = "the trust policy has no Statement";
    size_t n = sts && json_is_array(sts) ? json_array_size(sts) : 1;
    for (size_t i = 0; !why && i < n; i++) {
        json_t *st = json_is_array(sts) ? json_array_get(sts, i) : sts;
        const char *eff = json_string_value(json_object_get(st, "Effect"));
        json_t *act = json_object_get(st, "Action");
        if (!eff || (strcmp(eff, "Allow") != 0 && strcmp(eff, "Deny") != 0))
            why = "a trust policy statement needs Effect Allow or Deny";
        else if (!act || !has_sts_action(act))
            why = "a trust policy statement needs an sts: Action";
        else if (!json_object_get(st, "Principal"))
            why = "a trust policy statement needs a Principal";
    }
    json_decref(root);
    return why;
}

/* Does the principal (its ARN, the account's root ARN, or "*") match the statement's? */
static bool principal_matches(json_t *p, const char *who_arn, const char *account)
{
    if (json_is_string(p))
        return strcmp(json_string_value(p), "*") == 0;
    json_t *aws = json_object_get(p, "AWS");
    if (!aws || !who_arn[0]) /* an empty ARN matches nothing, "" in a policy included */
        return false;
    char root[64], bare[IAM_ARN_MAX] = "";
    snprintf(root, sizeof root, "arn:aws:iam::%s:root", account);
    /* An ARN without its account ("arn:aws:iam:::user/x", as single-tenant stores write it)
     * names this account's. */
    char pre[40];
    int pl = snprintf(pre, sizeof pre, "arn:aws:iam::%s:", account);
    if (pl > 0 && strncmp(who_arn, pre, (size_t)pl) == 0)
        snprintf(bare, sizeof bare, "arn:aws:iam:::%s", who_arn + pl);
    return str_or_list_has(aws, "*", false) || str_or_list_has(aws, who_arn, false) ||
           (bare[0] && str_or_list_has(aws, bare, false)) || str_or_list_has(aws, root, false) ||
           str_or_list_has(aws, "arn:aws:iam:::root", false) ||
           str_or_list_has(aws, account, false);
}

bool iam_trust_allows(const char *doc, const char *who_arn, const char *account, const char *action)
{
    json_error_t je;
    json_t *root = doc ? json_loads(doc, 0, &je) : NULL;
    json_t *sts = root ? json_object_get(root, "Statement") : NULL;
    bool allow = false, deny = false;
    size_t n = sts && json_is_array(sts) ? json_array_size(sts) : (sts ? 1 : 0);
    for (size_t i = 0; i < n; i++) {
        json_t *st = json_is_array(sts) ? json_array_get(sts, i) : sts;
        const char *eff = json_string_value(json_object_get(st, "Effect"));
        json_t *act = json_object_get(st, "Action");
        if (!eff || !act || !str_or_list_has(act, action, true) ||
            json_object_get(st, "Condition")) /* conditions are not weighed: never granted */
            continue;
        if (!principal_matches(json_object_get(st, "Principal"), who_arn, account))
            continue;
        deny |= strcmp(eff, "Deny") == 0;
        allow |= strcmp(eff, "Allow") == 0;
    }
    json_decref(root);
    return allow && !deny;
}

/* ---- actions ---- */

static int no_role(iam_ctx_t *c, const char *name)
{
    return iam_err(c, 404, "NoSuchEntity", "The role with name %s cannot be found.", name);
}

/* RoleName, its record and the caller's right to c->action on it: 0, else the error. */
static int role_target(iam_ctx_t *c, iam_role_t *r, bool must_exist)
{
    memset(r, 0, sizeof *r);
    int status = 0;
    const char *name = iam_need_name(c, "RoleName", ROLE_MAX, &status);
    if (!name)
        return status;
    wh_status_t st = iam_role_get(c->m, name, r);
    if (st != WH_OK && st != WH_ERR_NOT_FOUND)
        return iam_store_err(c, st, "reading the role");
    if (st == WH_ERR_NOT_FOUND) {
        iam_lower(name, r->key, sizeof r->key);
        snprintf(r->name, sizeof r->name, "%s", name);
        snprintf(r->path, sizeof r->path, "/");
    }
    char arn[IAM_ARN_MAX];
    iam_role_arn(ident_account(c->id), r, arn, sizeof arn);
    if ((status = iam_authorize(c, arn)) || (must_exist && st == WH_ERR_NOT_FOUND)) {
        iam_role_free(r);
        return status ? status : no_role(c, name);
    }
    return 0;
}

static void xml_role(iam_ctx_t *c, wh_sbuf_t *b, const iam_role_t *r)
{
    char arn[IAM_ARN_MAX];
    iam_role_arn(ident_account(c->id), r, arn, sizeof arn);
    s3_xml_elem(b, "Path", r->path);
    s3_xml_elem(b, "RoleName", r->name);
    s3_xml_elem(b, "RoleId", r->id);
    s3_xml_elem(b, "Arn", arn);
    iam_xml_time(b, "CreateDate", (time_t)r->created);
    iam_xml_doc(b, "AssumeRolePolicyDocument", r->trust ? r->trust : "");
    if (r->desc[0])
        s3_xml_elem(b, "Description", r->desc);
    wh_sbuf_printf(b, "<MaxSessionDuration>%d</MaxSessionDuration>", r->max_session);
}

static int answer_role(iam_ctx_t *c, iam_role_t *r)
{
    wh_sbuf_t b;
    iam_resp_begin(c, &b, true);
    wh_sbuf_puts(&b, "<Role>");
    xml_role(c, &b, r);
    wh_sbuf_puts(&b, "</Role>");
    iam_role_free(r);
    return iam_resp_end(c, &b, true);
}

static int check_trust(iam_ctx_t *c, const char *doc)
{
    if (!doc || !*doc)
        return iam_err(c, 400, "ValidationError", "AssumeRolePolicyDocument is required by %s",
                       c->action);
    if (strlen(doc) > IAM_MAX_POLICY_BYTES)
        return iam_err(c, 409, "LimitExceeded", "the trust policy exceeds %u bytes",
                       IAM_MAX_POLICY_BYTES);
    const char *why = iam_trust_invalid(doc);
    return why ? iam_err(c, 400, "MalformedPolicyDocument", "%s", why) : 0;
}

static int act_create_role(iam_ctx_t *c)
{
    iam_role_t r;
    int status = role_target(c, &r, false);
    if (status)
        return status;
    if (r.id[0]) {
        iam_role_free(&r);
        return iam_err(c, 409, "EntityAlreadyExists", "Role with name %s already exists.", r.name);
    }
    const char *path = iam_path_param(c, "Path", &status);
    const char *trust = iam_param(c, "AssumeRolePolicyDocument");
    const char *desc = iam_param(c, "Description");
    const char *dur = iam_param(c, "MaxSessionDuration");
    if (!path || (status = check_trust(c, trust)))
        return status;
    r.max_session = dur ? atoi(dur) : ROLE_DEFAULT_SESSION;
    if (r.max_session < ROLE_DEFAULT_SESSION || r.max_session > ROLE_MAX_SESSION)
        return iam_err(c, 400, "ValidationError", "MaxSessionDuration must be %d to %d seconds",
                       ROLE_DEFAULT_SESSION, ROLE_MAX_SESSION);
    snprintf(r.path, sizeof r.path, "%s", path);
    snprintf(r.desc, sizeof r.desc, "%s", desc ? desc : "");
    iam_new_id("AROA", r.id, sizeof r.id);
    r.created = (long long)time(NULL);
    if (!(r.trust = strdup(trust)))
        return iam_err(c, 503, "ServiceUnavailable", "out of memory");
    wh_status_t st = role_store(c->m, &r, true);
    if (st != WH_OK) {
        iam_role_free(&r);
        return st == WH_ERR_EXISTS ? iam_err(c, 409, "EntityAlreadyExists",
                                             "Role with name %s already exists.", r.name)
                                   : iam_store_err(c, st, "creating the role");
    }
    wh_info(MOD, "role created name=%s path=%s by=%s", r.name, r.path, c->r->who.arn);
    return answer_role(c, &r);
}

static int act_get_role(iam_ctx_t *c)
{
    iam_role_t r;
    int status = role_target(c, &r, true);
    return status ? status : answer_role(c, &r);
}

static int act_update_trust(iam_ctx_t *c)
{
    iam_role_t r;
    int status = role_target(c, &r, true);
    if (status)
        return status;
    const char *trust = iam_param(c, "PolicyDocument");
    if ((status = check_trust(c, trust))) {
        iam_role_free(&r);
        return status;
    }
    free(r.trust);
    r.trust = strdup(trust);
    wh_status_t st = r.trust ? role_store(c->m, &r, false) : WH_ERR_NOMEM;
    iam_role_free(&r);
    if (st != WH_OK)
        return iam_store_err(c, st, "updating the trust policy");
    return iam_resp_empty(c);
}

static int act_list_roles(iam_ctx_t *c)
{
    char all[IAM_ARN_MAX];
    snprintf(all, sizeof all, "arn:aws:iam::%s:role/*", ident_account(c->id));
    int status = iam_authorize(c, all);
    if (status)
        return status;
    const char *prefix = iam_param(c, "PathPrefix");
    meta_rec_t *rs = NULL;
    size_t n = 0;
    wh_status_t st = meta_rec_list(c->m, IAM_REC_ROLE, "", &rs, &n);
    if (st != WH_OK)
        return iam_store_err(c, st, "listing roles");
    wh_sbuf_t b;
    iam_resp_begin(c, &b, true);
    wh_sbuf_puts(&b, "<Roles>");
    for (size_t i = 0; i < n; i++) {
        iam_role_t r = {0};
        role_parse(rs[i].key, rs[i].doc, &r);
        if (!prefix || strncmp(r.path, prefix, strlen(prefix)) == 0) {
            wh_sbuf_puts(&b, "<member>");
            xml_role(c, &b, &r);
            wh_sbuf_puts(&b, "</member>");
        }
        iam_role_free(&r);
    }
    wh_sbuf_puts(&b, "</Roles><IsTruncated>false</IsTruncated>");
    meta_recs_free(rs, n);
    return iam_resp_end(c, &b, true);
}

static int act_delete_role(iam_ctx_t *c)
{
    iam_role_t r;
    int status = role_target(c, &r, true);
    if (status)
        return status;
    iam_role_free(&r);
    char prefix[ROLE_MAX + 2];
    snprintf(prefix, sizeof prefix, "%s|", r.key);
    static const char *const deps[] = {IAM_REC_RPOLICY, IAM_REC_RATTACH};
    for (size_t i = 0; i < WH_ARRAY_SIZE(deps); i++) {
        meta_rec_t *rs = NULL;
        size_t n = 0;
        wh_status_t st = meta_rec_list(c->m, deps[i], prefix, &rs, &n);
        meta_recs_free(rs, n);
        if (st != WH_OK)
            return iam_store_err(c, st, "reading the role's policies");
        if (n)
            return iam_err(c, 409, "DeleteConflict",
                           "Cannot delete entity, must delete its policies and detach its managed "
                           "policies first.");
    }
    wh_status_t st = meta_rec_delete(c->m, IAM_REC_ROLE, r.key);
    if (st == WH_ERR_NOT_FOUND)
        return no_role(c, r.name);
    if (st != WH_OK)
        return iam_store_err(c, st, "deleting the role");
    wh_info(MOD, "role deleted name=%s by=%s", r.name, c->r->who.arn);
    return iam_resp_empty(c);
}

/* ---- inline role policies ---- */

static int rpol_target(iam_ctx_t *c, iam_role_t *r, const char **pname, char *key, size_t cap)
{
    int status = role_target(c, r, true);
    if (status)
        return status;
    iam_role_free(r);
    if (!(*pname = iam_need_name(c, "PolicyName", IAM_MAX_POLICY_NAME, &status)))
        return status;
    snprintf(key, cap, "%s|%s", r->key, *pname);
    return 0;
}

static int act_put_rpol(iam_ctx_t *c)
{
    iam_role_t r;
    const char *pname;
    char key[ROLE_MAX + IAM_MAX_POLICY_NAME + 2];
    int status = rpol_target(c, &r, &pname, key, sizeof key);
    if (status)
        return status;
    const char *doc = iam_param(c, "PolicyDocument");
    char owner[96];
    snprintf(owner, sizeof owner, "role %s", r.name);
    if ((status = iam_check_doc(c, doc, owner)))
        return status;
    wh_status_t st = meta_rec_put(c->m, IAM_REC_RPOLICY, key, doc, false);
    if (st != WH_OK)
        return iam_store_err(c, st, "storing the role policy");
    wh_info(MOD, "role policy put role=%s policy=%s by=%s", r.name, pname, c->r->who.arn);
    return iam_resp_empty(c);
}

static int act_get_rpol(iam_ctx_t *c)
{
    iam_role_t r;
    const char *pname;
    char key[ROLE_MAX + IAM_MAX_POLICY_NAME + 2];
    int status = rpol_target(c, &r, &pname, key, sizeof key);
    if (status)
        return status;
    char *doc = NULL;
    wh_status_t st = meta_rec_get(c->m, IAM_REC_RPOLICY, key, &doc);
    if (st == WH_ERR_NOT_FOUND)
        return iam_err(c, 404, "NoSuchEntity", "The role policy with name %s cannot be found.",
                       pname);
    if (st != WH_OK)
        return iam_store_err(c, st, "reading the role policy");
    wh_sbuf_t b;
    iam_resp_begin(c, &b, true);
    s3_xml_elem(&b, "RoleName", r.name);
    s3_xml_elem(&b, "PolicyName", pname);
    iam_xml_doc(&b, "PolicyDocument", doc);
    free(doc);
    return iam_resp_end(c, &b, true);
}

static int act_delete_rpol(iam_ctx_t *c)
{
    iam_role_t r;
    const char *pname;
    char key[ROLE_MAX + IAM_MAX_POLICY_NAME + 2];
    int status = rpol_target(c, &r, &pname, key, sizeof key);
    if (status)
        return status;
    wh_status_t st = meta_rec_delete(c->m, IAM_REC_RPOLICY, key);
    if (st == WH_ERR_NOT_FOUND)
        return iam_err(c, 404, "NoSuchEntity", "The role policy with name %s cannot be found.",
                       pname);
    if (st != WH_OK)
        return iam_store_err(c, st, "deleting the role policy");
    wh_info(MOD, "role policy deleted role=%s policy=%s by=%s", r.name, pname, c->r->who.arn);
    return iam_resp_empty(c);
}

static int act_list_rpols(iam_ctx_t *c)
{
    iam_role_t r;
    int status = role_target(c, &r, true);
    if (status)
        return status;
    iam_role_free(&r);
    char prefix[ROLE_MAX + 2];
    snprintf(prefix, sizeof prefix, "%s|", r.key);
    return iam_resp_rec_names(c, IAM_REC_RPOLICY, prefix, "listing the role's policies");
}

static const struct {
    const char *name;
    iam_action_fn fn;
} ROLE_ACTIONS[] = {
    {"CreateRole", act_create_role},
    {"GetRole", act_get_role},
    {"ListRoles", act_list_roles},
    {"DeleteRole", act_delete_role},
    {"UpdateAssumeRolePolicy", act_update_trust},
    {"PutRolePolicy", act_put_rpol},
    {"GetRolePolicy", act_get_rpol},
    {"DeleteRolePolicy", act_delete_rpol},
    {"ListRolePolicies", act_list_rpols},
};

iam_action_fn iam_roles_action(const char *name)
{
    for (size_t i = 0; i < WH_ARRAY_SIZE(ROLE_ACTIONS); i++)
        if (strcmp(name, ROLE_ACTIONS[i].name) == 0)
            return ROLE_ACTIONS[i].fn;
    return NULL;
}
