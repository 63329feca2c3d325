/* SPDX-License-Identifier: Apache-2.0 */
/* The IAM API's files (iam.c: the request, its answers and who may; iam_users.c: users,
 * access keys, inline user policies; iam_groups.c: groups; iam_policies.c: managed policies,
 * their attachments and the policy set a user's requests are weighed against; iam_roles.c:
 * roles, their trust and inline policies). */
#ifndef WH_S3CTL_IAM_INT_H
#define WH_S3CTL_IAM_INT_H

#include "s3ctl/s3ctl.h"

#include <time.h>

#define IAM_XMLNS "https://iam.amazonaws.com/doc/2010-05-08/"
#define STS_XMLNS "https://sts.amazonaws.com/doc/2011-06-15/"
#define IAM_MAX_PARAMS 12
#define IAM_MAX_POLICY_BYTES 10240
#define IAM_MAX_POLICY_NAME 128
#define IAM_MAX_PATH 512
#define IAM_DEFAULT_MAX_ITEMS 100
#define IAM_ARN_MAX 800

/* IAM record kinds (meta.h's rec_*), each key made of names that cannot hold '|'. */
#define IAM_REC_GROUP "group"             /* lower(group) -> name, path, id, created */
#define IAM_REC_GMEMBER IDENT_REC_GMEMBER /* lower(group)|user -> "" */
#define IAM_REC_UMEMBER IDENT_REC_UMEMBER /* user|lower(group) -> "" */
#define IAM_REC_GPOLICY "gpolicy"         /* lower(group)|policy name -> document */
#define IAM_REC_POLICY "policy"           /* policy name -> path, id, created, document */
#define IAM_REC_UATTACH IDENT_REC_UATTACH /* user|policy ARN -> "" */
#define IAM_REC_GATTACH "gattach"         /* lower(group)|policy ARN -> "" */
#define IAM_REC_ROLE "role"               /* lower(role) -> name, path, id, created, trust, ... */
#define IAM_REC_RPOLICY "rpolicy"         /* lower(role)|policy name -> document */
#define IAM_REC_RATTACH "rattach"         /* lower(role)|policy ARN -> "" */

typedef struct iam_ctx {
    front_req_t *r;
    s3h_out_t *o;
    ident_t *id;
    meta_t *m;
    char *form; /* the body, NUL-terminated */
    const char *action;
    const char *xmlns;            /* the answers' namespace: IAM's or STS's */
    char *params[IAM_MAX_PARAMS]; /* decoded values, freed at the end */
    int np;
} iam_ctx_t;

typedef int (*iam_action_fn)(iam_ctx_t *c);

typedef struct iam_role {
    char key[65]; /* lower-cased name */
    char name[65];
    char path[IAM_MAX_PATH + 1];
    char id[32];
    char desc[1001];
    long long created;
    int max_session; /* seconds */
    char *trust;     /* malloc'd trust policy (iam_role_free) */
} iam_role_t;

int iam_err(iam_ctx_t *c, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
int iam_store_err(iam_ctx_t *c, wh_status_t st, const char *what);
void iam_resp_begin(iam_ctx_t *c, wh_sbuf_t *b, bool result);
int iam_resp_end(iam_ctx_t *c, wh_sbuf_t *b, bool result);
int iam_resp_empty(iam_ctx_t *c);
/* The ListGroupPolicies / ListRolePolicies reply: the names of the IAM records of kind under
 * prefix ("<owner>|"), what naming the owner for a store error. */
int iam_resp_rec_names(iam_ctx_t *c, const char *kind, const char *prefix, const char *what);
void iam_xml_time(wh_sbuf_t *b, const char *name, time_t t);
/* The decoded form parameter, or NULL when absent. */
const char *iam_param(iam_ctx_t *c, const char *name);
int iam_bad_name(iam_ctx_t *c, const char *field, const char *v, size_t max);
/* A required name parameter, checked; NULL after putting the error in c->o. */
const char *iam_need_name(iam_ctx_t *c, const char *param, size_t max, int *status);
/* The stored user name given names without regard to case (given when none). */
const char *iam_user_name(iam_ctx_t *c, const char *given);
/* Path (default "/"): it starts and ends with '/'. NULL after the error. */
const char *iam_path_param(iam_ctx_t *c, const char *param, int *status);
/* MaxItems (default 100); 0 after the error in *status. */
uint64_t iam_max_items(iam_ctx_t *c, int *status);
/* Root always; a user when its policies allow iam:<Action> on resource and none denies it.
 * 0 to go on, else the error status. */
int iam_authorize(iam_ctx_t *c, const char *resource);
int iam_no_user(iam_ctx_t *c, const char *name);
/* The user's Path ("/" when none is kept): malloc'd, NULL out of memory. */
char *iam_user_path(iam_ctx_t *c, const char *user);
void iam_lower(const char *in, char *out, size_t cap);
/* A record document's field (form-encoded), decoded into out; false when absent. */
bool iam_rec_field(const char *doc, const char *name, char *out, size_t cap);
/* Appends "&name=value" (the value encoded) to b; the first without its '&'. */
void iam_rec_add(wh_sbuf_t *b, const char *name, const char *value);
/* An id of IAM's shape: prefix and 17 upper-case letters and digits. */
void iam_new_id(const char *prefix, char *out, size_t cap);
/* The policy document, checked as an identity policy: 0, else the error put in c->o. */
int iam_check_doc(iam_ctx_t *c, const char *doc, const char *owner);
/* A policy document as IAM sends it back (URL-encoded). */
void iam_xml_doc(wh_sbuf_t *b, const char *name, const char *doc);

/* The actions of each file: NULL when the name is none of them. */
iam_action_fn iam_users_action(const char *name);
iam_action_fn iam_groups_action(const char *name);
iam_action_fn iam_policies_action(const char *name);
iam_action_fn iam_roles_action(const char *name);
iam_action_fn iam_sts_action(const char *name); /* sts.c */

/* The role of name (without regard to case): WH_OK, NOT_FOUND, or a store error. */
wh_status_t iam_role_get(meta_t *m, const char *name, iam_role_t *r);
void iam_role_free(iam_role_t *r);
void iam_role_arn(const char *account, const iam_role_t *r, char *out, size_t cap);
/* The trust policy's shape: an object whose Statement (one or a list) has an Effect, an sts:
 * Action and a Principal. NULL when it is good, else why not. */
const char *iam_trust_invalid(const char *doc);
/* Does the trust policy let who_arn (of account) perform action (sts:AssumeRole)? A statement
 * with a Condition is not weighed (never grants). */
bool iam_trust_allows(const char *doc, const char *who_arn, const char *account,
                      const char *action);

/* For DeleteUser: whether the user is in a group or has a managed policy attached. */
wh_status_t iam_user_has_links(meta_t *m, const char *user, bool *has);
/* Every identity policy of the user (inline, its groups' inline, and the managed ones
 * attached to it or its groups), named for messages (meta_policies_free). */
wh_status_t iam_user_policy_set(meta_t *m, const char *user, meta_policy_t **out, size_t *n);
/* The identity policies of a principal: a user's, or a role session's role's (sts.c). */
wh_status_t iam_principal_policy_set(meta_t *m, const auth_principal_t *who, meta_policy_t **out,
                                     size_t *n);
/* Every policy of a role (inline and attached managed ones); role_key: its lower-cased name. */
wh_status_t iam_role_policy_set(meta_t *m, const char *role_key, meta_policy_t **out, size_t *n);

#endif
