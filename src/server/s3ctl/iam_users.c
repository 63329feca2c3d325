/* SPDX-License-Identifier: Apache-2.0 */
/* The IAM API's users, their access keys and inline policies (iam_int.h). A user's Path is an
 * IAM record beside its row; the keys the root makes for itself belong to IDENT_ROOT_USER. */
#include "base/codec.h"
#include "base/log.h"
#include "s3/xml.h"
#include "s3ctl/iam_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MOD "iam"
/* AWS's quota: two access keys per user. */
#define IAM_MAX_KEYS_PER_USER 2

static void xml_user(iam_ctx_t *c, wh_sbuf_t *b, const meta_user_t *u)
{
    char arn[IAM_ARN_MAX];
    char *path = iam_user_path(c, u->name);
    ident_user_arn(c->id, u->name, arn, sizeof arn);
    s3_xml_elem(b, "Path", path ? path : "/");
    free(path);
    s3_xml_elem(b, "UserName", u->name);
    s3_xml_elem(b, "UserId", u->user_id);
    s3_xml_elem(b, "Arn", arn);
    iam_xml_time(b, "CreateDate", u->created);
}

static void xml_key(wh_sbuf_t *b, const meta_access_key_t *k, const char *secret)
{
    if (strcmp(k->user, IDENT_ROOT_USER) != 0)
        s3_xml_elem(b, "UserName", k->user);
    s3_xml_elem(b, "AccessKeyId", k->access_key);
    s3_xml_elem(b, "Status", k->active ? "Active" : "Inactive");
    if (secret)
        s3_xml_elem(b, "SecretAccessKey", secret);
    iam_xml_time(b, "CreateDate", k->created);
}

/* UserName when given, else the caller's own user (key operations of a user on itself; the
 * root's own keys belong to IDENT_ROOT_USER). */
static const char *user_or_self(iam_ctx_t *c, int *status)
{
    const char *u = iam_param(c, "UserName");
    if (u) {
        if (!ident_name_valid(u, META_USER_MAX)) {
            *status = iam_bad_name(c, "UserName", u, META_USER_MAX);
            return NULL;
        }
        return iam_user_name(c, u);
    }
    if (c->r->who.kind == AUTH_PRINCIPAL_USER)
        return c->r->who.user;
    return IDENT_ROOT_USER;
}

/* The target user (UserName; or the caller itself when self_ok and none is named),
 * authorized for c->action on its ARN. NULL after putting the error in c->o. */
static const char *target_user(iam_ctx_t *c, bool self_ok, int *status)
{
    const char *name =
        self_ok ? user_or_self(c, status) : iam_need_name(c, "UserName", META_USER_MAX, status);
    if (!name)
        return NULL;
    char arn[IAM_ARN_MAX];
    if (strcmp(name, IDENT_ROOT_USER) == 0)
        snprintf(arn, sizeof arn, "%s", c->r->who.arn);
    else
        ident_user_arn(c->id, name, arn, sizeof arn);
    if ((*status = iam_authorize(c, arn)))
        return NULL;
    return name;
}

/* NoSuchEntity for a missing policy: naming the user when it is the user that is missing. */
static int no_policy(iam_ctx_t *c, const char *name, const char *pname)
{
    if (meta_user_get(c->m, name, NULL) == WH_ERR_NOT_FOUND)
        return iam_no_user(c, name);
    return iam_err(c, 404, "NoSuchEntity", "The user policy with name %s cannot be found.", pname);
}

static int answer_user(iam_ctx_t *c, const meta_user_t *u)
{
    wh_sbuf_t b;
    iam_resp_begin(c, &b, true);
    wh_sbuf_puts(&b, "<User>");
    xml_user(c, &b, u);
    wh_sbuf_puts(&b, "</User>");
    return iam_resp_end(c, &b, true);
}

/* ---- actions ---- */

static int act_create_user(iam_ctx_t *c)
{
    int status = 0;
    const char *name = target_user(c, false, &status);
    if (!name)
        return status;
    const char *path = iam_path_param(c, "Path", &status);
    if (!path)
        return status;
    /* The path first: a user never exists without it (a path left by a failed create is
     * replaced by the next one). */
    wh_status_t st = WH_OK;
    if (strcmp(path, "/") != 0 || meta_user_get(c->m, name, NULL) == WH_ERR_NOT_FOUND) {
        if (meta_user_get(c->m, name, NULL) == WH_OK)
            return iam_err(c, 409, "EntityAlreadyExists", "User with name %s already exists.",
                           name);
        st = meta_rec_put(c->m, IDENT_REC_USER_PATH, name, path, false);
        if (st != WH_OK)
            return iam_store_err(c, st, "storing the user's path");
    }
    meta_user_t u;
    st = ident_user_create(c->id, name, &u);
    if (st == WH_ERR_EXISTS)
        return iam_err(c, 409, "EntityAlreadyExists", "User with name %s already exists.", name);
    if (st != WH_OK)
        return iam_store_err(c, st, "creating the user");
    wh_info(MOD, "user created name=%s path=%s by=%s", name, path, c->r->who.arn);
    return answer_user(c, &u);
}

static int act_get_user(iam_ctx_t *c)
{
    int status = 0;
    const char *name = iam_param(c, "UserName");
    if (name && !ident_name_valid(name, META_USER_MAX))
        return iam_bad_name(c, "UserName", name, META_USER_MAX);
    if (name)
        name = iam_user_name(c, name);
    if (!name && c->r->who.kind == AUTH_PRINCIPAL_USER)
        name = c->r->who.user;
    char arn[IAM_ARN_MAX];
    if (name)
        ident_user_arn(c->id, name, arn, sizeof arn);
    if ((status = iam_authorize(c, name ? arn : c->r->who.arn)))
        return status;
    wh_sbuf_t b;
    if (!name) { /* root asking about itself */
        iam_resp_begin(c, &b, true);
        wh_sbuf_puts(&b, "<User>");
        s3_xml_elem(&b, "UserId", ident_account(c->id));
        s3_xml_elem(&b, "Arn", c->r->who.arn);
        iam_xml_time(&b, "CreateDate", 0);
        wh_sbuf_puts(&b, "</User>");
        return iam_resp_end(c, &b, true);
    }
    meta_user_t u;
    wh_status_t st = meta_user_get(c->m, name, &u);
    if (st == WH_ERR_NOT_FOUND)
        return iam_no_user(c, name);
    if (st != WH_OK)
        return iam_store_err(c, st, "reading the user");
    return answer_user(c, &u);
}

/* A renamed user's IAM records follow it: its path, its memberships (both records of each)
 * and its attached policies. Not one transaction with the rename: a failure is logged and the
 * records left behind name nobody (a user of the old name made later would inherit them). */
static wh_status_t records_follow(meta_t *m, const char *from, const char *to)
{
    char *path = NULL;
    wh_status_t st = meta_rec_get(m, IDENT_REC_USER_PATH, from, &path);
    if (st == WH_OK && (st = meta_rec_put(m, IDENT_REC_USER_PATH, to, path, false)) == WH_OK)
        st = meta_rec_delete(m, IDENT_REC_USER_PATH, from);
    free(path);
    if (st != WH_OK && st != WH_ERR_NOT_FOUND)
        return st;
    static const char *const kinds[] = {IAM_REC_UMEMBER, IAM_REC_UATTACH};
    char prefix[META_USER_MAX + 2], key[IAM_ARN_MAX + META_USER_MAX + 2];
    snprintf(prefix, sizeof prefix, "%s|", from);
    st = WH_OK;
    for (size_t k = 0; st == WH_OK && k < WH_ARRAY_SIZE(kinds); k++) {
        meta_rec_t *rs = NULL;
        size_t n = 0;
        st = meta_rec_list(m, kinds[k], prefix, &rs, &n);
        for (size_t i = 0; st == WH_OK && i < n; i++) {
            const char *rest = rs[i].key + strlen(prefix); /* a group key, or a policy ARN */
            snprintf(key, sizeof key, "%s|%s", to, rest);
            if ((st = meta_rec_put(m, kinds[k], key, "", false)) == WH_OK)
                st = meta_rec_delete(m, kinds[k], rs[i].key);
            if (st == WH_OK && k == 0) { /* a membership: the group's side too */
                char gk[IAM_ARN_MAX + META_USER_MAX + 2];
                snprintf(gk, sizeof gk, "%s|%s", rest, from);
                snprintf(key, sizeof key, "%s|%s", rest, to);
                if ((st = meta_rec_put(m, IAM_REC_GMEMBER, key, "", false)) == WH_OK)
                    st = meta_rec_delete(m, IAM_REC_GMEMBER, gk);
                if (st == WH_ERR_NOT_FOUND)
                    st = WH_OK;
            }
        }
        meta_recs_free(rs, n);
    }
    return st;
}

/* UpdateUser: a new name (the user keeps its ids, keys and policies) and a new Path. */
static int act_update_user(iam_ctx_t *c)
{
    int status = 0;
    const char *name = target_user(c, false, &status);
    if (!name)
        return status;
    const char *new_name = iam_param(c, "NewUserName");
    if (new_name && !ident_name_valid(new_name, META_USER_MAX))
        return iam_bad_name(c, "NewUserName", new_name, META_USER_MAX);
    const char *path = iam_param(c, "NewPath") ? iam_path_param(c, "NewPath", &status) : NULL;
    if (status)
        return status;
    wh_status_t st = meta_user_get(c->m, name, NULL);
    if (st == WH_ERR_NOT_FOUND)
        return iam_no_user(c, name);
    if (st == WH_OK && new_name && strcmp(new_name, name) != 0) {
        const char *taken = iam_user_name(c, new_name);
        if (strcasecmp(taken, name) != 0 && meta_user_get(c->m, taken, NULL) == WH_OK)
            return iam_err(c, 409, "EntityAlreadyExists", "User with name %s already exists.",
                           new_name);
        st = meta_user_rename(c->m, name, new_name);
        if (st == WH_ERR_EXISTS)
            return iam_err(c, 409, "EntityAlreadyExists", "User with name %s already exists.",
                           new_name);
        if (st == WH_OK) {
            wh_status_t fs = records_follow(c->m, name, new_name);
            if (fs != WH_OK) /* renamed all the same: say what lags */
                wh_warn(MOD, "user %s renamed %s; its records did not all follow: %s", name,
                        new_name, wh_status_str(fs));
            name = new_name;
        }
    }
    if (st == WH_OK && path)
        st = meta_rec_put(c->m, IDENT_REC_USER_PATH, name, path, false);
    if (st != WH_OK)
        return iam_store_err(c, st, "updating the user");
    wh_info(MOD, "user updated name=%s path=%s by=%s", name, path ? path : "-", c->r->who.arn);
    return iam_resp_empty(c);
}

static int act_delete_user(iam_ctx_t *c)
{
    int status = 0;
    const char *name = target_user(c, false, &status);
    if (!name)
        return status;
    bool links = false;
    wh_status_t st = iam_user_has_links(c->m, name, &links);
    if (st != WH_OK)
        return iam_store_err(c, st, "reading the user's groups and attached policies");
    if (links)
        return iam_err(c, 409, "DeleteConflict",
                       "Cannot delete entity, must remove the user from its groups and detach "
                       "its managed policies first.");
    st = meta_user_delete(c->m, name, false);
    if (st == WH_ERR_NOT_FOUND)
        return iam_no_user(c, name);
    if (st == WH_ERR_NOT_EMPTY)
        return iam_err(c, 409, "DeleteConflict",
                       "Cannot delete entity, must delete access keys and inline policies "
                       "first.");
    if (st != WH_OK)
        return iam_store_err(c, st, "deleting the user");
    st = meta_rec_delete(c->m, IDENT_REC_USER_PATH, name);
    if (st != WH_OK && st != WH_ERR_NOT_FOUND) /* the user is gone; a next create replaces it */
        wh_warn(MOD, "user %s deleted, its path record not: %s", name, wh_status_str(st));
    wh_info(MOD, "user deleted name=%s by=%s", name, c->r->who.arn);
    return iam_resp_empty(c);
}

static int user_cmp(const void *a, const void *b)
{
    const meta_user_t *x = a, *y = b;
    int r = strcasecmp(x->name, y->name);
    return r ? r : strcmp(x->name, y->name);
}

static int act_list_users(iam_ctx_t *c)
{
    char all[IAM_ARN_MAX];
    snprintf(all, sizeof all, "arn:aws:iam::%s:user/*", ident_account(c->id));
    int status = iam_authorize(c, all);
    if (status)
        return status;
    const char *prefix = iam_param(c, "PathPrefix");
    const char *marker = iam_param(c, "Marker");
    uint64_t max = iam_max_items(c, &status);
    if (!max)
        return status;
    meta_user_t *us = NULL;
    size_t n = 0;
    wh_status_t st = meta_user_list(c->m, &us, &n);
    if (st != WH_OK)
        return iam_store_err(c, st, "listing users");
    if (n)
        qsort(us, n, sizeof *us, user_cmp); /* IAM lists names without regard to case */
    wh_sbuf_t b;
    iam_resp_begin(c, &b, true);
    wh_sbuf_puts(&b, "<Users>");
    size_t shown = 0;
    const char *last = NULL;
    bool truncated = false;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(us[i].name, IDENT_ROOT_USER) == 0 || (marker && strcmp(us[i].name, marker) <= 0))
            continue;
        if (prefix && strcmp(prefix, "/") != 0) {
            char *path = iam_user_path(c, us[i].name);
            bool in = path && strncmp(path, prefix, strlen(prefix)) == 0;
            free(path);
            if (!in)
                continue;
        }
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
    return iam_resp_end(c, &b, true);
}

/* The root's key row holder, made at its first CreateAccessKey. */
static wh_status_t root_user_ensure(iam_ctx_t *c)
{
    wh_status_t st = meta_user_get(c->m, IDENT_ROOT_USER, NULL);
    if (st == WH_ERR_NOT_FOUND) {
        st = ident_user_create(c->id, IDENT_ROOT_USER, NULL);
        if (st == WH_ERR_EXISTS)
            st = WH_OK;
    }
    return st;
}

static int act_create_key(iam_ctx_t *c)
{
    int status = 0;
    const char *name = target_user(c, true, &status);
    if (!name)
        return status;
    wh_status_t st = strcmp(name, IDENT_ROOT_USER) == 0 ? root_user_ensure(c) : WH_OK;
    if (st != WH_OK)
        return iam_store_err(c, st, "making the root's key holder");
    meta_access_key_t *ks = NULL;
    size_t n = 0;
    st = meta_key_list(c->m, name, &ks, &n);
    free(ks);
    if (st == WH_ERR_NOT_FOUND)
        return iam_no_user(c, name);
    if (st != WH_OK)
        return iam_store_err(c, st, "listing the user's keys");
    if (n >= IAM_MAX_KEYS_PER_USER)
        return iam_err(c, 409, "LimitExceeded", "Cannot exceed quota for AccessKeysPerUser: %d",
                       IAM_MAX_KEYS_PER_USER);
    meta_access_key_t k;
    char secret[IDENT_SECRET_MAX + 1], msg[200];
    st = ident_key_create(c->id, name, NULL, NULL, &k, secret, msg, sizeof msg);
    if (st == WH_ERR_NOT_FOUND)
        return iam_no_user(c, name);
    if (st == WH_ERR_UNSUPPORTED)
        return iam_err(c, 500, "ServiceFailure", "%s", msg);
    if (st != WH_OK)
        return iam_store_err(c, st, "creating the access key");
    wh_info(MOD, "access key created user=%s access_key=%s by=%s", name, k.access_key,
            c->r->who.arn);
    wh_sbuf_t b;
    iam_resp_begin(c, &b, true);
    wh_sbuf_puts(&b, "<AccessKey>");
    xml_key(&b, &k, secret);
    wh_sbuf_puts(&b, "</AccessKey>");
    memset(secret, 0, sizeof secret);
    return iam_resp_end(c, &b, true);
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
    if (st == WH_ERR_NOT_FOUND && strcmp(name, IDENT_ROOT_USER) == 0)
        st = WH_OK; /* the root has made no key yet */
    if (st == WH_ERR_NOT_FOUND)
        return iam_no_user(c, name);
    if (st != WH_OK)
        return iam_store_err(c, st, "listing the user's keys");
    wh_sbuf_t b;
    iam_resp_begin(c, &b, true);
    wh_sbuf_puts(&b, "<AccessKeyMetadata>");
    for (size_t i = 0; i < n; i++) {
        wh_sbuf_puts(&b, "<member>");
        xml_key(&b, &ks[i], NULL);
        wh_sbuf_puts(&b, "</member>");
    }
    wh_sbuf_puts(&b, "</AccessKeyMetadata><IsTruncated>false</IsTruncated>");
    free(ks);
    return iam_resp_end(c, &b, true);
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
    const char *ak = iam_param(c, "AccessKeyId");
    meta_access_key_t k;
    if ((status = key_of_user(c, name, ak, &k)))
        return status;
    wh_status_t st = meta_key_delete(c->m, ak);
    if (st != WH_OK && st != WH_ERR_NOT_FOUND)
        return iam_store_err(c, st, "deleting the access key");
    wh_info(MOD, "access key deleted user=%s access_key=%s by=%s", name, ak, c->r->who.arn);
    return iam_resp_empty(c);
}

static int act_update_key(iam_ctx_t *c)
{
    int status = 0;
    const char *name = target_user(c, true, &status);
    if (!name)
        return status;
    const char *ak = iam_param(c, "AccessKeyId");
    const char *stat = iam_param(c, "Status");
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
    return iam_resp_empty(c);
}

static const char *need_policy_name(iam_ctx_t *c, int *status)
{
    return iam_need_name(c, "PolicyName", IAM_MAX_POLICY_NAME, status);
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
    const char *doc = iam_param(c, "PolicyDocument");
    char owner[96];
    snprintf(owner, sizeof owner, "user %s", name);
    if ((status = iam_check_doc(c, doc, owner)))
        return status;
    wh_status_t st = meta_user_policy_put(c->m, name, pname, doc);
    if (st == WH_ERR_NOT_FOUND)
        return iam_no_user(c, name);
    if (st != WH_OK)
        return iam_store_err(c, st, "storing the policy");
    wh_info(MOD, "user policy put user=%s policy=%s by=%s", name, pname, c->r->who.arn);
    return iam_resp_empty(c);
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
    wh_sbuf_t b;
    iam_resp_begin(c, &b, true);
    s3_xml_elem(&b, "UserName", name);
    s3_xml_elem(&b, "PolicyName", pname);
    iam_xml_doc(&b, "PolicyDocument", doc);
    free(doc);
    return iam_resp_end(c, &b, true);
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
    return iam_resp_empty(c);
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
        return iam_no_user(c, name);
    if (st != WH_OK)
        return iam_store_err(c, st, "listing the policies");
    wh_sbuf_t b;
    iam_resp_begin(c, &b, true);
    wh_sbuf_puts(&b, "<PolicyNames>");
    for (size_t i = 0; i < n; i++)
        s3_xml_elem(&b, "member", pols[i].name);
    wh_sbuf_puts(&b, "</PolicyNames><IsTruncated>false</IsTruncated>");
    meta_policies_free(pols, n);
    return iam_resp_end(c, &b, true);
}

/* Actions of the IAM API that wharf does not implement (groups, roles, managed policies,
 * instance profiles, MFA, federation, ...): 501 NotImplemented, where a name IAM does not
 * have is 400 InvalidAction. */

/* GetAccountSummary: the counts of what the account holds, and IAM's quotas that apply. */
static int act_account_summary(iam_ctx_t *c)
{
    int status = iam_authorize(c, "*");
    if (status)
        return status;
    meta_user_t *us = NULL;
    size_t nu = 0, counts[3] = {0};
    wh_status_t st = meta_user_list(c->m, &us, &nu);
    size_t users = 0;
    for (size_t i = 0; st == WH_OK && i < nu; i++)
        users += strcmp(us[i].name, IDENT_ROOT_USER) != 0; /* the root's key holder is no user */
    free(us);
    static const char *const kinds[] = {IAM_REC_GROUP, IAM_REC_POLICY, IAM_REC_ROLE};
    for (size_t k = 0; st == WH_OK && k < WH_ARRAY_SIZE(kinds); k++) {
        meta_rec_t *rs = NULL;
        st = meta_rec_list(c->m, kinds[k], "", &rs, &counts[k]);
        meta_recs_free(rs, counts[k]);
    }
    if (st != WH_OK)
        return iam_store_err(c, st, "counting the account's entities");
    const struct {
        const char *k;
        size_t v;
    } e[] = {{"Users", users},
             {"Groups", counts[0]},
             {"Policies", counts[1]},
             {"AccessKeysPerUserQuota", IAM_MAX_KEYS_PER_USER},
             {"PolicySizeQuota", IAM_MAX_POLICY_BYTES},
             {"UserPolicySizeQuota", IAM_MAX_POLICY_BYTES},
             {"GroupPolicySizeQuota", IAM_MAX_POLICY_BYTES},
             {"Roles", counts[2]},
             {"Providers", 0}};
    wh_sbuf_t b;
    iam_resp_begin(c, &b, true);
    wh_sbuf_puts(&b, "<SummaryMap>");
    for (size_t i = 0; i < WH_ARRAY_SIZE(e); i++)
        wh_sbuf_printf(&b, "<entry><key>%s</key><value>%zu</value></entry>", e[i].k, e[i].v);
    wh_sbuf_puts(&b, "</SummaryMap>");
    return iam_resp_end(c, &b, true);
}

static const struct {
    const char *name;
    iam_action_fn fn;
} USER_ACTIONS[] = {
    {"CreateUser", act_create_user},         {"GetUser", act_get_user},
    {"UpdateUser", act_update_user},         {"DeleteUser", act_delete_user},
    {"ListUsers", act_list_users},           {"CreateAccessKey", act_create_key},
    {"ListAccessKeys", act_list_keys},       {"DeleteAccessKey", act_delete_key},
    {"UpdateAccessKey", act_update_key},     {"PutUserPolicy", act_put_policy},
    {"GetUserPolicy", act_get_policy},       {"DeleteUserPolicy", act_delete_policy},
    {"ListUserPolicies", act_list_policies}, {"GetAccountSummary", act_account_summary},
};

iam_action_fn iam_users_action(const char *name)
{
    for (size_t i = 0; i < WH_ARRAY_SIZE(USER_ACTIONS); i++)
        if (strcmp(name, USER_ACTIONS[i].name) == 0)
            return USER_ACTIONS[i].fn;
    return NULL;
}
