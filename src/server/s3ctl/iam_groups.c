/* SPDX-License-Identifier: Apache-2.0 */
/* The IAM API's groups (iam_int.h): a group is an IAM record under its lower-cased name (IAM's
 * group names are unique without regard to case); a membership is two records, one under the
 * group and one under the user, so that either side lists with one prefix query. Inline group
 * policies are records under the group. */
#include "base/log.h"
#include "s3/xml.h"
#include "s3ctl/iam_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MOD "iam"
#define GROUP_MAX 128

typedef struct {
    char key[GROUP_MAX + 1]; /* lower-cased name */
    char name[GROUP_MAX + 1];
    char path[IAM_MAX_PATH + 1];
    char id[32];
    long long created;
} iam_group_t;

static void group_arn(iam_ctx_t *c, const iam_group_t *g, char *out, size_t cap)
{
    snprintf(out, cap, "arn:aws:iam::%s:group%s%s", ident_account(c->id), g->path, g->name);
}

static void group_parse(const char *key, const char *doc, iam_group_t *g)
{
    char k[GROUP_MAX + 1];
    snprintf(k, sizeof k, "%s", key); /* key may be g->key */
    memset(g, 0, sizeof *g);
    memcpy(g->key, k, sizeof k);
    char num[24] = "0";
    iam_rec_field(doc, "name", g->name, sizeof g->name);
    if (!iam_rec_field(doc, "path", g->path, sizeof g->path))
        snprintf(g->path, sizeof g->path, "/");
    iam_rec_field(doc, "id", g->id, sizeof g->id);
    iam_rec_field(doc, "created", num, sizeof num);
    g->created = atoll(num);
}

static int no_group(iam_ctx_t *c, const char *name)
{
    return iam_err(c, 404, "NoSuchEntity", "The group with name %s cannot be found.", name);
}

/* GroupName, its record and the caller's right to c->action on it: 0, else the error. */
static int group_target(iam_ctx_t *c, iam_group_t *g, bool must_exist)
{
    memset(g, 0, sizeof *g);
    int status = 0;
    const char *name = iam_need_name(c, "GroupName", GROUP_MAX, &status);
    if (!name)
        return status;
    memset(g, 0, sizeof *g);
    iam_lower(name, g->key, sizeof g->key);
    char *doc = NULL;
    wh_status_t st = meta_rec_get(c->m, IAM_REC_GROUP, g->key, &doc);
    if (st == WH_OK)
        group_parse(g->key, doc, g);
    free(doc);
    if (st != WH_OK && st != WH_ERR_NOT_FOUND)
        return iam_store_err(c, st, "reading the group");
    if (st == WH_ERR_NOT_FOUND) {
        snprintf(g->name, sizeof g->name, "%s", name);
        snprintf(g->path, sizeof g->path, "/");
    }
    char arn[IAM_ARN_MAX];
    group_arn(c, g, arn, sizeof arn);
    if ((status = iam_authorize(c, arn)))
        return status;
    if (must_exist && st == WH_ERR_NOT_FOUND)
        return no_group(c, name);
    return 0;
}

static void xml_group(iam_ctx_t *c, wh_sbuf_t *b, const iam_group_t *g)
{
    char arn[IAM_ARN_MAX];
    group_arn(c, g, arn, sizeof arn);
    s3_xml_elem(b, "Path", g->path);
    s3_xml_elem(b, "GroupName", g->name);
    s3_xml_elem(b, "GroupId", g->id);
    s3_xml_elem(b, "Arn", arn);
    iam_xml_time(b, "CreateDate", (time_t)g->created);
}

static void member_key(char *out, size_t cap, const char *a, const char *b)
{
    snprintf(out, cap, "%s|%s", a, b);
}

/* ---- groups ---- */

static int act_create_group(iam_ctx_t *c)
{
    iam_group_t g;
    int status = group_target(c, &g, false);
    if (status)
        return status;
    if (g.id[0])
        return iam_err(c, 409, "EntityAlreadyExists", "Group with name %s already exists.", g.name);
    const char *path = iam_path_param(c, "Path", &status);
    if (!path)
        return status;
    snprintf(g.path, sizeof g.path, "%s", path);
    iam_new_id("AGPA", g.id, sizeof g.id);
    g.created = (long long)time(NULL);
    wh_sbuf_t d;
    wh_sbuf_init(&d);
    char num[24];
    snprintf(num, sizeof num, "%lld", g.created);
    iam_rec_add(&d, "name", g.name);
    iam_rec_add(&d, "path", g.path);
    iam_rec_add(&d, "id", g.id);
    iam_rec_add(&d, "created", num);
    wh_status_t st = d.oom ? WH_ERR_NOMEM : meta_rec_put(c->m, IAM_REC_GROUP, g.key, d.data, true);
    wh_sbuf_free(&d);
    if (st == WH_ERR_EXISTS)
        return iam_err(c, 409, "EntityAlreadyExists", "Group with name %s already exists.", g.name);
    if (st != WH_OK)
        return iam_store_err(c, st, "creating the group");
    wh_info(MOD, "group created name=%s path=%s by=%s", g.name, g.path, c->r->who.arn);
    wh_sbuf_t b;
    iam_resp_begin(c, &b, true);
    wh_sbuf_puts(&b, "<Group>");
    xml_group(c, &b, &g);
    wh_sbuf_puts(&b, "</Group>");
    return iam_resp_end(c, &b, true);
}

static int act_get_group(iam_ctx_t *c)
{
    iam_group_t g;
    int status = group_target(c, &g, true);
    if (status)
        return status;
    char prefix[GROUP_MAX + 2];
    member_key(prefix, sizeof prefix, g.key, "");
    meta_rec_t *ms = NULL;
    size_t n = 0;
    wh_status_t st = meta_rec_list(c->m, IAM_REC_GMEMBER, prefix, &ms, &n);
    if (st != WH_OK)
        return iam_store_err(c, st, "listing the group's users");
    wh_sbuf_t b;
    iam_resp_begin(c, &b, true);
    wh_sbuf_puts(&b, "<Group>");
    xml_group(c, &b, &g);
    wh_sbuf_puts(&b, "</Group><Users>");
    for (size_t i = 0; i < n; i++) {
        const char *user = ms[i].key + strlen(prefix);
        char arn[IAM_ARN_MAX];
        char *path = iam_user_path(c, user);
        meta_user_t u;
        if (meta_user_get(c->m, user, &u) != WH_OK) {
            free(path);
            continue; /* removed meanwhile */
        }
        ident_user_arn(c->id, user, arn, sizeof arn);
        wh_sbuf_puts(&b, "<member>");
        s3_xml_elem(&b, "Path", path ? path : "/");
        s3_xml_elem(&b, "UserName", user);
        s3_xml_elem(&b, "UserId", u.user_id);
        s3_xml_elem(&b, "Arn", arn);
        iam_xml_time(&b, "CreateDate", u.created);
        wh_sbuf_puts(&b, "</member>");
        free(path);
    }
    wh_sbuf_puts(&b, "</Users><IsTruncated>false</IsTruncated>");
    meta_recs_free(ms, n);
    return iam_resp_end(c, &b, true);
}

static int act_list_groups(iam_ctx_t *c)
{
    char all[IAM_ARN_MAX];
    snprintf(all, sizeof all, "arn:aws:iam::%s:group/*", ident_account(c->id));
    int status = iam_authorize(c, all);
    if (status)
        return status;
    const char *prefix = iam_param(c, "PathPrefix");
    meta_rec_t *gs = NULL;
    size_t n = 0;
    wh_status_t st = meta_rec_list(c->m, IAM_REC_GROUP, "", &gs, &n);
    if (st != WH_OK)
        return iam_store_err(c, st, "listing groups");
    wh_sbuf_t b;
    iam_resp_begin(c, &b, true);
    wh_sbuf_puts(&b, "<Groups>");
    for (size_t i = 0; i < n; i++) {
        iam_group_t g;
        group_parse(gs[i].key, gs[i].doc, &g);
        if (prefix && strncmp(g.path, prefix, strlen(prefix)) != 0)
            continue;
        wh_sbuf_puts(&b, "<member>");
        xml_group(c, &b, &g);
        wh_sbuf_puts(&b, "</member>");
    }
    wh_sbuf_puts(&b, "</Groups><IsTruncated>false</IsTruncated>");
    meta_recs_free(gs, n);
    return iam_resp_end(c, &b, true);
}

static int act_delete_group(iam_ctx_t *c)
{
    iam_group_t g;
    int status = group_target(c, &g, true);
    if (status)
        return status;
    char prefix[GROUP_MAX + 2];
    member_key(prefix, sizeof prefix, g.key, "");
    static const char *const deps[] = {IAM_REC_GMEMBER, IAM_REC_GPOLICY, IAM_REC_GATTACH};
    for (size_t i = 0; i < WH_ARRAY_SIZE(deps); i++) {
        meta_rec_t *rs = NULL;
        size_t n = 0;
        wh_status_t st = meta_rec_list(c->m, deps[i], prefix, &rs, &n);
        meta_recs_free(rs, n);
        if (st != WH_OK)
            return iam_store_err(c, st, "reading what the group holds");
        if (n)
            return iam_err(c, 409, "DeleteConflict",
                           "Cannot delete entity, must remove users from the group, delete its "
                           "policies and detach its managed policies first.");
    }
    wh_status_t st = meta_rec_delete(c->m, IAM_REC_GROUP, g.key);
    if (st == WH_ERR_NOT_FOUND)
        return no_group(c, g.name);
    if (st != WH_OK)
        return iam_store_err(c, st, "deleting the group");
    wh_info(MOD, "group deleted name=%s by=%s", g.name, c->r->who.arn);
    return iam_resp_empty(c);
}

/* ---- members ---- */

static int member_change(iam_ctx_t *c, bool add)
{
    iam_group_t g;
    int status = group_target(c, &g, true);
    if (status)
        return status;
    const char *user = iam_need_name(c, "UserName", META_USER_MAX, &status);
    if (!user)
        return status;
    wh_status_t st = meta_user_get(c->m, user, NULL);
    if (st == WH_ERR_NOT_FOUND)
        return iam_no_user(c, user);
    char gk[GROUP_MAX + META_USER_MAX + 2], uk[GROUP_MAX + META_USER_MAX + 2];
    member_key(gk, sizeof gk, g.key, user);
    member_key(uk, sizeof uk, user, g.key);
    if (st == WH_OK && add) {
        st = meta_rec_put(c->m, IAM_REC_GMEMBER, gk, "", false);
        if (st == WH_OK)
            st = meta_rec_put(c->m, IAM_REC_UMEMBER, uk, "", false);
    } else if (st == WH_OK) {
        st = meta_rec_delete(c->m, IAM_REC_GMEMBER, gk);
        if (st == WH_ERR_NOT_FOUND)
            return iam_err(c, 404, "NoSuchEntity", "User %s is not in group %s.", user, g.name);
        wh_status_t st2 = meta_rec_delete(c->m, IAM_REC_UMEMBER, uk);
        if (st == WH_OK && st2 != WH_ERR_NOT_FOUND)
            st = st2;
    }
    if (st != WH_OK)
        return iam_store_err(c, st, "changing the group's users");
    wh_info(MOD, "group %s user=%s group=%s by=%s", add ? "add" : "remove", user, g.name,
            c->r->who.arn);
    return iam_resp_empty(c);
}

static int act_add_user(iam_ctx_t *c)
{
    return member_change(c, true);
}

static int act_remove_user(iam_ctx_t *c)
{
    return member_change(c, false);
}

static int act_groups_for_user(iam_ctx_t *c)
{
    int status = 0;
    const char *user = iam_need_name(c, "UserName", META_USER_MAX, &status);
    if (!user)
        return status;
    char arn[IAM_ARN_MAX];
    ident_user_arn(c->id, user, arn, sizeof arn);
    if ((status = iam_authorize(c, arn)))
        return status;
    wh_status_t st = meta_user_get(c->m, user, NULL);
    if (st == WH_ERR_NOT_FOUND)
        return iam_no_user(c, user);
    char prefix[META_USER_MAX + 2];
    member_key(prefix, sizeof prefix, user, "");
    meta_rec_t *ms = NULL;
    size_t n = 0;
    if (st == WH_OK)
        st = meta_rec_list(c->m, IAM_REC_UMEMBER, prefix, &ms, &n);
    if (st != WH_OK)
        return iam_store_err(c, st, "listing the user's groups");
    wh_sbuf_t b;
    iam_resp_begin(c, &b, true);
    wh_sbuf_puts(&b, "<Groups>");
    for (size_t i = 0; i < n; i++) {
        char *doc = NULL;
        const char *gkey = ms[i].key + strlen(prefix);
        if (meta_rec_get(c->m, IAM_REC_GROUP, gkey, &doc) == WH_OK) {
            iam_group_t g;
            group_parse(gkey, doc, &g);
            wh_sbuf_puts(&b, "<member>");
            xml_group(c, &b, &g);
            wh_sbuf_puts(&b, "</member>");
        }
        free(doc);
    }
    wh_sbuf_puts(&b, "</Groups><IsTruncated>false</IsTruncated>");
    meta_recs_free(ms, n);
    return iam_resp_end(c, &b, true);
}

/* ---- inline group policies ---- */

static int gpol_target(iam_ctx_t *c, iam_group_t *g, const char **pname, char *key, size_t cap)
{
    int status = group_target(c, g, true);
    if (status)
        return status;
    if (!(*pname = iam_need_name(c, "PolicyName", IAM_MAX_POLICY_NAME, &status)))
        return status;
    member_key(key, cap, g->key, *pname);
    return 0;
}

static int act_put_gpol(iam_ctx_t *c)
{
    iam_group_t g;
    const char *pname;
    char key[GROUP_MAX + IAM_MAX_POLICY_NAME + 2];
    int status = gpol_target(c, &g, &pname, key, sizeof key);
    if (status)
        return status;
    const char *doc = iam_param(c, "PolicyDocument");
    char owner[160];
    snprintf(owner, sizeof owner, "group %s", g.name);
    if ((status = iam_check_doc(c, doc, owner)))
        return status;
    wh_status_t st = meta_rec_put(c->m, IAM_REC_GPOLICY, key, doc, false);
    if (st != WH_OK)
        return iam_store_err(c, st, "storing the group policy");
    wh_info(MOD, "group policy put group=%s policy=%s by=%s", g.name, pname, c->r->who.arn);
    return iam_resp_empty(c);
}

static int no_gpol(iam_ctx_t *c, const char *pname)
{
    return iam_err(c, 404, "NoSuchEntity", "The group policy with name %s cannot be found.", pname);
}

static int act_get_gpol(iam_ctx_t *c)
{
    iam_group_t g;
    const char *pname;
    char key[GROUP_MAX + IAM_MAX_POLICY_NAME + 2];
    int status = gpol_target(c, &g, &pname, key, sizeof key);
    if (status)
        return status;
    char *doc = NULL;
    wh_status_t st = meta_rec_get(c->m, IAM_REC_GPOLICY, key, &doc);
    if (st == WH_ERR_NOT_FOUND)
        return no_gpol(c, pname);
    if (st != WH_OK)
        return iam_store_err(c, st, "reading the group policy");
    wh_sbuf_t b;
    iam_resp_begin(c, &b, true);
    s3_xml_elem(&b, "GroupName", g.name);
    s3_xml_elem(&b, "PolicyName", pname);
    iam_xml_doc(&b, "PolicyDocument", doc);
    free(doc);
    return iam_resp_end(c, &b, true);
}

static int act_delete_gpol(iam_ctx_t *c)
{
    iam_group_t g;
    const char *pname;
    char key[GROUP_MAX + IAM_MAX_POLICY_NAME + 2];
    int status = gpol_target(c, &g, &pname, key, sizeof key);
    if (status)
        return status;
    wh_status_t st = meta_rec_delete(c->m, IAM_REC_GPOLICY, key);
    if (st == WH_ERR_NOT_FOUND)
        return no_gpol(c, pname);
    if (st != WH_OK)
        return iam_store_err(c, st, "deleting the group policy");
    wh_info(MOD, "group policy deleted group=%s policy=%s by=%s", g.name, pname, c->r->who.arn);
    return iam_resp_empty(c);
}

static int act_list_gpols(iam_ctx_t *c)
{
    iam_group_t g;
    int status = group_target(c, &g, true);
    if (status)
        return status;
    char prefix[GROUP_MAX + 2];
    member_key(prefix, sizeof prefix, g.key, "");
    return iam_resp_rec_names(c, IAM_REC_GPOLICY, prefix, "listing the group's policies");
}

static const struct {
    const char *name;
    iam_action_fn fn;
} GROUP_ACTIONS[] = {
    {"CreateGroup", act_create_group},
    {"GetGroup", act_get_group},
    {"ListGroups", act_list_groups},
    {"DeleteGroup", act_delete_group},
    {"AddUserToGroup", act_add_user},
    {"RemoveUserFromGroup", act_remove_user},
    {"ListGroupsForUser", act_groups_for_user},
    {"PutGroupPolicy", act_put_gpol},
    {"GetGroupPolicy", act_get_gpol},
    {"DeleteGroupPolicy", act_delete_gpol},
    {"ListGroupPolicies", act_list_gpols},
};

iam_action_fn iam_groups_action(const char *name)
{
    for (size_t i = 0; i < WH_ARRAY_SIZE(GROUP_ACTIONS); i++)
        if (strcmp(name, GROUP_ACTIONS[i].name) == 0)
            return GROUP_ACTIONS[i].fn;
    return NULL;
}
