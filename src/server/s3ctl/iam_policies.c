/* SPDX-License-Identifier: Apache-2.0 */
/* The IAM API's managed policies (iam_int.h): customer managed ones are IAM records under
 * their lower-cased name, with one version (v1: UpdatePolicy's versions are not kept); two
 * AWS managed ones are built in (AmazonS3FullAccess, AmazonS3ReadOnlyAccess; their s3:
 * statements, without s3-object-lambda's, which wharf has not). Attachments are
 * records under the user or group. iam_user_policy_set gathers what a user's requests are
 * weighed against. */
#include "base/log.h"
#include "s3/xml.h"
#include "s3ctl/iam_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MOD "iam"
#define POLICY_NAME_MAX 128
#define GROUP_KEY_MAX 128
#define AWS_POLICY_PREFIX "arn:aws:iam::aws:policy/"

static const struct {
    const char *name, *id, *doc;
} AWS_POLICIES[] = {
    {"AmazonS3FullAccess", "ANPAIFIR6V6BVTRAHWINE",
     "{\"Version\":\"2012-10-17\",\"Statement\":[{\"Effect\":\"Allow\",\"Action\":"
     "\"s3:*\",\"Resource\":\"*\"}]}"},
    {"AmazonS3ReadOnlyAccess", "ANPAIZTJ4DXE7G6AGAE6M",
     "{\"Version\":\"2012-10-17\",\"Statement\":[{\"Effect\":\"Allow\",\"Action\":[\"s3:Get*\","
     "\"s3:List*\",\"s3:Describe*\"],\"Resource\":\"*\"}]}"},
};

typedef struct {
    char arn[IAM_ARN_MAX];
    char name[POLICY_NAME_MAX + 1];
    char key[POLICY_NAME_MAX + 1];
    char path[IAM_MAX_PATH + 1];
    char id[32];
    char desc[1001];
    long long created;
    bool aws;
    char *doc; /* malloc'd, or AWS_POLICIES' */
} iam_mpol_t;

static void mpol_free(iam_mpol_t *p)
{
    if (!p->aws)
        free(p->doc);
    p->doc = NULL;
}

static void mpol_parse(iam_mpol_t *p, const char *account, const char *key, const char *doc)
{
    memset(p, 0, sizeof *p);
    snprintf(p->key, sizeof p->key, "%s", key);
    char num[24] = "0";
    iam_rec_field(doc, "name", p->name, sizeof p->name);
    if (!iam_rec_field(doc, "path", p->path, sizeof p->path))
        snprintf(p->path, sizeof p->path, "/");
    iam_rec_field(doc, "id", p->id, sizeof p->id);
    iam_rec_field(doc, "desc", p->desc, sizeof p->desc);
    iam_rec_field(doc, "created", num, sizeof num);
    p->created = atoll(num);
    snprintf(p->arn, sizeof p->arn, "arn:aws:iam::%s:policy%s%s", account, p->path, p->name);
    wh_sbuf_t d;
    wh_sbuf_init(&d);
    if (auth_query_param(doc, "doc", &d) == 1 && !d.oom) {
        wh_sbuf_append(&d, "", 1);
        p->doc = wh_sbuf_steal(&d);
    }
    wh_sbuf_free(&d);
}

/* The policy an ARN names: WH_OK, NOT_FOUND, or a store error. */
static wh_status_t mpol_find(meta_t *m, const char *account, const char *arn, iam_mpol_t *p)
{
    memset(p, 0, sizeof *p);
    if (strncmp(arn, AWS_POLICY_PREFIX, strlen(AWS_POLICY_PREFIX)) == 0) {
        const char *n = arn + strlen(AWS_POLICY_PREFIX);
        for (size_t i = 0; i < WH_ARRAY_SIZE(AWS_POLICIES); i++) {
            if (strcmp(n, AWS_POLICIES[i].name) != 0)
                continue;
            p->aws = true;
            snprintf(p->arn, sizeof p->arn, "%s", arn);
            snprintf(p->name, sizeof p->name, "%s", AWS_POLICIES[i].name);
            snprintf(p->path, sizeof p->path, "/");
            snprintf(p->id, sizeof p->id, "%s", AWS_POLICIES[i].id);
            p->doc = (char *)AWS_POLICIES[i].doc;
            return WH_OK;
        }
        return WH_ERR_NOT_FOUND;
    }
    char pre[96];
    snprintf(pre, sizeof pre, "arn:aws:iam::%s:policy/", account);
    const char *slash = strrchr(arn, '/');
    if (strncmp(arn, pre, strlen(pre) - 1) != 0 || !slash || !slash[1] ||
        strlen(slash + 1) > POLICY_NAME_MAX)
        return WH_ERR_NOT_FOUND;
    char key[POLICY_NAME_MAX + 1];
    iam_lower(slash + 1, key, sizeof key);
    char *doc = NULL;
    wh_status_t st = meta_rec_get(m, IAM_REC_POLICY, key, &doc);
    if (st == WH_OK) {
        mpol_parse(p, account, key, doc);
        if (strcmp(p->arn, arn) != 0) { /* another path, or another case */
            mpol_free(p);
            st = WH_ERR_NOT_FOUND;
        }
    }
    free(doc);
    return st;
}

static void xml_mpol(wh_sbuf_t *b, const iam_mpol_t *p, size_t attached)
{
    s3_xml_elem(b, "PolicyName", p->name);
    s3_xml_elem(b, "PolicyId", p->id);
    s3_xml_elem(b, "Arn", p->arn);
    s3_xml_elem(b, "Path", p->path);
    s3_xml_elem(b, "DefaultVersionId", "v1");
    wh_sbuf_printf(b, "<AttachmentCount>%zu</AttachmentCount>", attached);
    s3_xml_elem(b, "IsAttachable", "true");
    if (p->desc[0])
        s3_xml_elem(b, "Description", p->desc);
    iam_xml_time(b, "CreateDate", (time_t)p->created);
    iam_xml_time(b, "UpdateDate", (time_t)p->created);
}

/* How many users and groups have the policy attached. */
static wh_status_t attach_count(meta_t *m, const char *arn, size_t *count)
{
    static const char *const kinds[] = {IAM_REC_UATTACH, IAM_REC_GATTACH, IAM_REC_RATTACH};
    *count = 0;
    for (size_t k = 0; k < WH_ARRAY_SIZE(kinds); k++) {
        meta_rec_t *rs = NULL;
        size_t n = 0;
        wh_status_t st = meta_rec_list(m, kinds[k], "", &rs, &n);
        if (st != WH_OK)
            return st;
        for (size_t i = 0; i < n; i++) {
            const char *bar = strchr(rs[i].key, '|');
            *count += bar && strcmp(bar + 1, arn) == 0;
        }
        meta_recs_free(rs, n);
    }
    return WH_OK;
}

/* PolicyArn, its policy and the caller's right to c->action on it: 0, else the error. */
static int mpol_target(iam_ctx_t *c, iam_mpol_t *p)
{
    memset(p, 0, sizeof *p);
    const char *arn = iam_param(c, "PolicyArn");
    if (!arn || !*arn)
        return iam_err(c, 400, "ValidationError", "PolicyArn is required by %s", c->action);
    int status = iam_authorize(c, arn);
    if (status)
        return status;
    wh_status_t st = mpol_find(c->m, ident_account(c->id), arn, p);
    if (st == WH_ERR_NOT_FOUND)
        return iam_err(c, 404, "NoSuchEntity", "Policy %.300s does not exist or is not attachable.",
                       arn);
    if (st != WH_OK)
        return iam_store_err(c, st, "reading the policy");
    return 0;
}

/* ---- policies ---- */

static int act_create_policy(iam_ctx_t *c)
{
    int status = 0;
    const char *name = iam_need_name(c, "PolicyName", POLICY_NAME_MAX, &status);
    if (!name)
        return status;
    const char *path = iam_path_param(c, "Path", &status);
    if (!path)
        return status;
    iam_mpol_t p;
    memset(&p, 0, sizeof p);
    snprintf(p.name, sizeof p.name, "%s", name);
    snprintf(p.path, sizeof p.path, "%s", path);
    snprintf(p.arn, sizeof p.arn, "arn:aws:iam::%s:policy%s%s", ident_account(c->id), path, name);
    if ((status = iam_authorize(c, p.arn)))
        return status;
    const char *doc = iam_param(c, "PolicyDocument");
    char owner[160];
    snprintf(owner, sizeof owner, "policy %s", name);
    if ((status = iam_check_doc(c, doc, owner)))
        return status;
    const char *desc = iam_param(c, "Description");
    snprintf(p.desc, sizeof p.desc, "%s", desc ? desc : "");
    iam_lower(name, p.key, sizeof p.key);
    iam_new_id("ANPA", p.id, sizeof p.id);
    p.created = (long long)time(NULL);
    char num[24];
    snprintf(num, sizeof num, "%lld", p.created);
    wh_sbuf_t d;
    wh_sbuf_init(&d);
    iam_rec_add(&d, "name", p.name);
    iam_rec_add(&d, "path", p.path);
    iam_rec_add(&d, "id", p.id);
    iam_rec_add(&d, "desc", p.desc);
    iam_rec_add(&d, "created", num);
    iam_rec_add(&d, "doc", doc);
    wh_status_t st = d.oom ? WH_ERR_NOMEM : meta_rec_put(c->m, IAM_REC_POLICY, p.key, d.data, true);
    wh_sbuf_free(&d);
    if (st == WH_ERR_EXISTS)
        return iam_err(c, 409, "EntityAlreadyExists", "A policy called %s already exists.", name);
    if (st != WH_OK)
        return iam_store_err(c, st, "creating the policy");
    wh_info(MOD, "policy created arn=%s by=%s", p.arn, c->r->who.arn);
    wh_sbuf_t b;
    iam_resp_begin(c, &b, true);
    wh_sbuf_puts(&b, "<Policy>");
    xml_mpol(&b, &p, 0);
    wh_sbuf_puts(&b, "</Policy>");
    return iam_resp_end(c, &b, true);
}

static int act_get_policy(iam_ctx_t *c)
{
    iam_mpol_t p;
    int status = mpol_target(c, &p);
    if (status)
        return status;
    size_t n = 0;
    wh_status_t st = attach_count(c->m, p.arn, &n);
    if (st != WH_OK) {
        mpol_free(&p);
        return iam_store_err(c, st, "counting the policy's attachments");
    }
    wh_sbuf_t b;
    iam_resp_begin(c, &b, true);
    wh_sbuf_puts(&b, "<Policy>");
    xml_mpol(&b, &p, n);
    wh_sbuf_puts(&b, "</Policy>");
    mpol_free(&p);
    return iam_resp_end(c, &b, true);
}

static int act_get_version(iam_ctx_t *c)
{
    iam_mpol_t p;
    int status = mpol_target(c, &p);
    if (status)
        return status;
    const char *v = iam_param(c, "VersionId");
    if (!v || strcmp(v, "v1") != 0) {
        mpol_free(&p);
        return iam_err(c, 404, "NoSuchEntity", "Policy %s version %.40s does not exist.", p.arn,
                       v ? v : "");
    }
    wh_sbuf_t b;
    iam_resp_begin(c, &b, true);
    wh_sbuf_puts(&b, "<PolicyVersion>");
    iam_xml_doc(&b, "Document", p.doc ? p.doc : "");
    s3_xml_elem(&b, "VersionId", "v1");
    s3_xml_elem(&b, "IsDefaultVersion", "true");
    iam_xml_time(&b, "CreateDate", (time_t)p.created);
    wh_sbuf_puts(&b, "</PolicyVersion>");
    mpol_free(&p);
    return iam_resp_end(c, &b, true);
}

static int act_list_versions(iam_ctx_t *c)
{
    iam_mpol_t p;
    int status = mpol_target(c, &p);
    if (status)
        return status;
    wh_sbuf_t b;
    iam_resp_begin(c, &b, true);
    wh_sbuf_puts(&b, "<Versions><member>");
    s3_xml_elem(&b, "VersionId", "v1");
    s3_xml_elem(&b, "IsDefaultVersion", "true");
    iam_xml_time(&b, "CreateDate", (time_t)p.created);
    wh_sbuf_puts(&b, "</member></Versions><IsTruncated>false</IsTruncated>");
    mpol_free(&p);
    return iam_resp_end(c, &b, true);
}

static int act_delete_policy(iam_ctx_t *c)
{
    iam_mpol_t p;
    int status = mpol_target(c, &p);
    if (status)
        return status;
    bool aws = p.aws;
    mpol_free(&p);
    if (aws)
        return iam_err(c, 400, "InvalidInput", "AWS managed policies cannot be deleted.");
    size_t n = 0;
    wh_status_t st = attach_count(c->m, p.arn, &n);
    if (st == WH_OK && n)
        return iam_err(c, 409, "DeleteConflict",
                       "Cannot delete a policy attached to entities: detach it first.");
    if (st == WH_OK)
        st = meta_rec_delete(c->m, IAM_REC_POLICY, p.key);
    if (st == WH_ERR_NOT_FOUND)
        return iam_err(c, 404, "NoSuchEntity", "Policy %s does not exist.", p.arn);
    if (st != WH_OK)
        return iam_store_err(c, st, "deleting the policy");
    wh_info(MOD, "policy deleted arn=%s by=%s", p.arn, c->r->who.arn);
    return iam_resp_empty(c);
}

static int act_list_policies(iam_ctx_t *c)
{
    char all[IAM_ARN_MAX];
    snprintf(all, sizeof all, "arn:aws:iam::%s:policy/*", ident_account(c->id));
    int status = iam_authorize(c, all);
    if (status)
        return status;
    const char *scope = iam_param(c, "Scope");
    const char *prefix = iam_param(c, "PathPrefix");
    const char *only = iam_param(c, "OnlyAttached");
    bool aws = !scope || strcmp(scope, "Local") != 0;
    bool local = !scope || strcmp(scope, "AWS") != 0;
    bool only_attached = only && strcmp(only, "true") == 0;
    meta_rec_t *rs = NULL;
    size_t n = 0;
    wh_status_t st = local ? meta_rec_list(c->m, IAM_REC_POLICY, "", &rs, &n) : WH_OK;
    if (st != WH_OK)
        return iam_store_err(c, st, "listing policies");
    wh_sbuf_t b;
    iam_resp_begin(c, &b, true);
    wh_sbuf_puts(&b, "<Policies>");
    size_t total = (aws ? WH_ARRAY_SIZE(AWS_POLICIES) : 0) + n;
    for (size_t i = 0; st == WH_OK && i < total; i++) {
        iam_mpol_t p;
        if (aws && i < WH_ARRAY_SIZE(AWS_POLICIES)) {
            char arn[IAM_ARN_MAX];
            snprintf(arn, sizeof arn, AWS_POLICY_PREFIX "%s", AWS_POLICIES[i].name);
            mpol_find(c->m, ident_account(c->id), arn, &p);
        } else {
            size_t j = i - (aws ? WH_ARRAY_SIZE(AWS_POLICIES) : 0);
            mpol_parse(&p, ident_account(c->id), rs[j].key, rs[j].doc);
        }
        size_t cnt = 0;
        st = attach_count(c->m, p.arn, &cnt);
        if (st == WH_OK && (!prefix || strncmp(p.path, prefix, strlen(prefix)) == 0) &&
            (!only_attached || cnt)) {
            wh_sbuf_puts(&b, "<member>");
            xml_mpol(&b, &p, cnt);
            wh_sbuf_puts(&b, "</member>");
        }
        mpol_free(&p);
    }
    meta_recs_free(rs, n);
    if (st != WH_OK) {
        wh_sbuf_free(&b);
        return iam_store_err(c, st, "counting attachments");
    }
    wh_sbuf_puts(&b, "</Policies><IsTruncated>false</IsTruncated>");
    return iam_resp_end(c, &b, true);
}

/* ---- attachments ---- */

/* The holder an attachment action names: a user, a group or a role. */
typedef enum { HOLD_USER, HOLD_GROUP, HOLD_ROLE } holder_t;

static const char *const HOLD_PARAM[] = {"UserName", "GroupName", "RoleName"};
static const char *const HOLD_KIND[] = {IAM_REC_UATTACH, IAM_REC_GATTACH, IAM_REC_RATTACH};

/* The holder the action names, authorized, checked to exist: its record key (a user name, or
 * a group's or role's lower-cased name) into key. 0, else the error status. */
static int holder_target(iam_ctx_t *c, holder_t h, char *key, size_t cap)
{
    int status = 0;
    const char *name =
        iam_need_name(c, HOLD_PARAM[h], h == HOLD_USER ? META_USER_MAX : GROUP_KEY_MAX, &status);
    if (!name)
        return status;
    char arn[IAM_ARN_MAX];
    wh_status_t st;
    if (h != HOLD_USER) {
        iam_lower(name, key, cap);
        char *doc = NULL;
        st = meta_rec_get(c->m, h == HOLD_GROUP ? IAM_REC_GROUP : IAM_REC_ROLE, key, &doc);
        char path[IAM_MAX_PATH + 1] = "/";
        if (st == WH_OK)
            iam_rec_field(doc, "path", path, sizeof path);
        free(doc);
        snprintf(arn, sizeof arn, "arn:aws:iam::%s:%s%s%s", ident_account(c->id),
                 h == HOLD_GROUP ? "group" : "role", path, name);
    } else {
        snprintf(key, cap, "%s", name);
        st = meta_user_get(c->m, name, NULL);
        ident_user_arn(c->id, name, arn, sizeof arn);
    }
    if ((status = iam_authorize(c, arn)))
        return status;
    if (st == WH_ERR_NOT_FOUND)
        return h == HOLD_USER
                   ? iam_no_user(c, name)
                   : iam_err(c, 404, "NoSuchEntity", "The %s with name %s cannot be found.",
                             h == HOLD_GROUP ? "group" : "role", name);
    if (st != WH_OK)
        return iam_store_err(c, st, "reading the policy's holder");
    return 0;
}

static int attach_change(iam_ctx_t *c, holder_t h, bool attach)
{
    char key[GROUP_KEY_MAX + 1];
    int status = holder_target(c, h, key, sizeof key);
    if (status)
        return status;
    const char *arn = iam_param(c, "PolicyArn");
    if (!arn || !*arn)
        return iam_err(c, 400, "ValidationError", "PolicyArn is required by %s", c->action);
    char rk[GROUP_KEY_MAX + IAM_ARN_MAX + 2];
    snprintf(rk, sizeof rk, "%s|%s", key, arn);
    wh_status_t st;
    if (attach) {
        iam_mpol_t p;
        st = mpol_find(c->m, ident_account(c->id), arn, &p);
        mpol_free(&p);
        if (st == WH_ERR_NOT_FOUND)
            return iam_err(c, 404, "NoSuchEntity",
                           "Policy %.300s does not exist or is not attachable.", arn);
        if (st == WH_OK)
            st = meta_rec_put(c->m, HOLD_KIND[h], rk, "", false);
    } else {
        st = meta_rec_delete(c->m, HOLD_KIND[h], rk);
        if (st == WH_ERR_NOT_FOUND)
            return iam_err(c, 404, "NoSuchEntity", "Policy %.300s was not found attached.", arn);
    }
    if (st != WH_OK)
        return iam_store_err(c, st, "changing the attachment");
    wh_info(MOD, "policy %s %s=%s arn=%s by=%s", attach ? "attached" : "detached", HOLD_PARAM[h],
            key, arn, c->r->who.arn);
    return iam_resp_empty(c);
}

static int act_attach_user(iam_ctx_t *c)
{
    return attach_change(c, HOLD_USER, true);
}
static int act_detach_user(iam_ctx_t *c)
{
    return attach_change(c, HOLD_USER, false);
}
static int act_attach_group(iam_ctx_t *c)
{
    return attach_change(c, HOLD_GROUP, true);
}
static int act_detach_group(iam_ctx_t *c)
{
    return attach_change(c, HOLD_GROUP, false);
}
static int act_attach_role(iam_ctx_t *c)
{
    return attach_change(c, HOLD_ROLE, true);
}
static int act_detach_role(iam_ctx_t *c)
{
    return attach_change(c, HOLD_ROLE, false);
}

static int list_attached(iam_ctx_t *c, holder_t h)
{
    char key[GROUP_KEY_MAX + 1];
    int status = holder_target(c, h, key, sizeof key);
    if (status)
        return status;
    char prefix[GROUP_KEY_MAX + 2];
    snprintf(prefix, sizeof prefix, "%s|", key);
    meta_rec_t *rs = NULL;
    size_t n = 0;
    wh_status_t st = meta_rec_list(c->m, HOLD_KIND[h], prefix, &rs, &n);
    if (st != WH_OK)
        return iam_store_err(c, st, "listing attached policies");
    wh_sbuf_t b;
    iam_resp_begin(c, &b, true);
    wh_sbuf_puts(&b, "<AttachedPolicies>");
    for (size_t i = 0; i < n; i++) {
        const char *arn = rs[i].key + strlen(prefix);
        const char *slash = strrchr(arn, '/');
        wh_sbuf_puts(&b, "<member>");
        s3_xml_elem(&b, "PolicyName", slash ? slash + 1 : arn);
        s3_xml_elem(&b, "PolicyArn", arn);
        wh_sbuf_puts(&b, "</member>");
    }
    wh_sbuf_puts(&b, "</AttachedPolicies><IsTruncated>false</IsTruncated>");
    meta_recs_free(rs, n);
    return iam_resp_end(c, &b, true);
}

static int act_list_attached_user(iam_ctx_t *c)
{
    return list_attached(c, HOLD_USER);
}
static int act_list_attached_group(iam_ctx_t *c)
{
    return list_attached(c, HOLD_GROUP);
}
static int act_list_attached_role(iam_ctx_t *c)
{
    return list_attached(c, HOLD_ROLE);
}

/* ---- what authorization reads ---- */

wh_status_t iam_user_has_links(meta_t *m, const char *user, bool *has)
{
    static const char *const kinds[] = {IAM_REC_UMEMBER, IAM_REC_UATTACH};
    char prefix[META_USER_MAX + 2];
    snprintf(prefix, sizeof prefix, "%s|", user);
    *has = false;
    for (size_t k = 0; k < WH_ARRAY_SIZE(kinds) && !*has; k++) {
        meta_rec_t *rs = NULL;
        size_t n = 0;
        wh_status_t st = meta_rec_list(m, kinds[k], prefix, &rs, &n);
        meta_recs_free(rs, n);
        if (st != WH_OK)
            return st;
        *has = n > 0;
    }
    return WH_OK;
}

typedef struct {
    meta_policy_t *p;
    size_t n, cap;
} polset_t;

static wh_status_t polset_add(polset_t *s, const char *what, const char *name, const char *doc)
{
    if (!meta_grow((void **)&s->p, &s->cap, s->n + 1, sizeof *s->p))
        return WH_ERR_NOMEM;
    meta_policy_t *e = &s->p[s->n];
    snprintf(e->name, sizeof e->name, "%s%s", what, name);
    if (!(e->doc = strdup(doc)))
        return WH_ERR_NOMEM;
    s->n++;
    return WH_OK;
}

/* The managed policies attached under prefix (of kind) into s. */
static wh_status_t add_attached(meta_t *m, polset_t *s, const char *kind, const char *prefix)
{
    meta_rec_t *rs = NULL;
    size_t n = 0;
    wh_status_t st = meta_rec_list(m, kind, prefix, &rs, &n);
    for (size_t i = 0; st == WH_OK && i < n; i++) {
        const char *arn = rs[i].key + strlen(prefix);
        /* The account is read from the ARN itself: attach checked it names this account's. */
        char account[32] = "";
        sscanf(arn, "arn:aws:iam::%31[^:]", account);
        iam_mpol_t p;
        wh_status_t fs = mpol_find(m, account, arn, &p);
        if (fs == WH_OK && p.doc)
            st = polset_add(s, "managed ", arn, p.doc);
        else if (fs != WH_ERR_NOT_FOUND && fs != WH_OK)
            st = fs; /* a policy deleted since: attaches nothing */
        mpol_free(&p);
    }
    meta_recs_free(rs, n);
    return st;
}

wh_status_t iam_user_policy_set(meta_t *m, const char *user, meta_policy_t **out, size_t *n)
{
    polset_t s = {0};
    meta_policy_t *inl = NULL;
    size_t ni = 0;
    wh_status_t st = meta_user_policy_list(m, user, &inl, &ni);
    if (st != WH_OK)
        return st;
    s.p = inl;
    s.n = s.cap = ni;
    char prefix[META_USER_MAX + 2];
    snprintf(prefix, sizeof prefix, "%s|", user);
    st = add_attached(m, &s, IAM_REC_UATTACH, prefix);
    meta_rec_t *gs = NULL;
    size_t ng = 0;
    if (st == WH_OK)
        st = meta_rec_list(m, IAM_REC_UMEMBER, prefix, &gs, &ng);
    for (size_t i = 0; st == WH_OK && i < ng; i++) {
        char gp[GROUP_KEY_MAX + 2];
        snprintf(gp, sizeof gp, "%s|", gs[i].key + strlen(prefix));
        meta_rec_t *ps = NULL;
        size_t np = 0;
        st = meta_rec_list(m, IAM_REC_GPOLICY, gp, &ps, &np);
        for (size_t j = 0; st == WH_OK && j < np; j++)
            st = polset_add(&s, "group ", ps[j].key, ps[j].doc);
        meta_recs_free(ps, np);
        if (st == WH_OK)
            st = add_attached(m, &s, IAM_REC_GATTACH, gp);
    }
    meta_recs_free(gs, ng);
    if (st != WH_OK) {
        meta_policies_free(s.p, s.n);
        return st;
    }
    *out = s.p;
    *n = s.n;
    return WH_OK;
}

wh_status_t iam_role_policy_set(meta_t *m, const char *role_key, meta_policy_t **out, size_t *n)
{
    polset_t s = {0};
    char prefix[GROUP_KEY_MAX + 2];
    snprintf(prefix, sizeof prefix, "%s|", role_key);
    meta_rec_t *ps = NULL;
    size_t np = 0;
    wh_status_t st = meta_rec_list(m, IAM_REC_RPOLICY, prefix, &ps, &np);
    for (size_t j = 0; st == WH_OK && j < np; j++)
        st = polset_add(&s, "role ", ps[j].key, ps[j].doc);
    meta_recs_free(ps, np);
    if (st == WH_OK)
        st = add_attached(m, &s, IAM_REC_RATTACH, prefix);
    if (st != WH_OK) {
        meta_policies_free(s.p, s.n);
        return st;
    }
    *out = s.p;
    *n = s.n;
    return WH_OK;
}

/* OpenID Connect providers are not kept: the list is empty (what a client that cleans up by
 * listing needs); creating one is refused with 501. */
static int act_list_oidc(iam_ctx_t *c)
{
    int status = iam_authorize(c, "*");
    if (status)
        return status;
    wh_sbuf_t b;
    iam_resp_begin(c, &b, true);
    wh_sbuf_puts(&b, "<OpenIDConnectProviderList></OpenIDConnectProviderList>");
    return iam_resp_end(c, &b, true);
}

static const struct {
    const char *name;
    iam_action_fn fn;
} POLICY_ACTIONS[] = {
    {"CreatePolicy", act_create_policy},
    {"GetPolicy", act_get_policy},
    {"GetPolicyVersion", act_get_version},
    {"ListPolicyVersions", act_list_versions},
    {"DeletePolicy", act_delete_policy},
    {"ListPolicies", act_list_policies},
    {"AttachUserPolicy", act_attach_user},
    {"DetachUserPolicy", act_detach_user},
    {"AttachGroupPolicy", act_attach_group},
    {"DetachGroupPolicy", act_detach_group},
    {"ListAttachedUserPolicies", act_list_attached_user},
    {"ListAttachedGroupPolicies", act_list_attached_group},
    {"AttachRolePolicy", act_attach_role},
    {"DetachRolePolicy", act_detach_role},
    {"ListAttachedRolePolicies", act_list_attached_role},
    {"ListOpenIDConnectProviders", act_list_oidc},
};

iam_action_fn iam_policies_action(const char *name)
{
    for (size_t i = 0; i < WH_ARRAY_SIZE(POLICY_ACTIONS); i++)
        if (strcmp(name, POLICY_ACTIONS[i].name) == 0)
            return POLICY_ACTIONS[i].fn;
    return NULL;
}
