/* SPDX-License-Identifier: Apache-2.0 */
/* Authorization: who a request is (auth_principal_t), bucket and user policies (JSON, parsed once
 * into a compiled form and evaluated without allocating), ACLs (canned, x-amz-grant-* headers,
 * the AccessControlPolicy XML, a compact text form for storage), and the one decision in AWS's
 * order: an explicit Deny anywhere wins; then an Allow from a user policy, the bucket policy or
 * the ACL; else AccessDenied. Root is always allowed (an operator's key must not be lockable out
 * of its own store).
 *
 * Pure: no server or store dependency, so unit tests and fuzzers drive it directly. policy.c
 * holds the policy parser and evaluator, acl.c the ACL forms, authz.c the action table and the
 * decision. */
#ifndef WH_AUTH_AUTHZ_H
#define WH_AUTH_AUTHZ_H

#include "base/util.h"
#include "s3/errors.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- principals (identity fills them in the SigV4 step) -------------------------------- */

typedef enum {
    AUTH_PRINCIPAL_ANON,
    AUTH_PRINCIPAL_ROOT,
    AUTH_PRINCIPAL_USER
} auth_principal_kind_t;
typedef struct auth_principal {
    auth_principal_kind_t kind;
    char user[65];         /* IAM user name ("" for root/anon) */
    char canonical_id[65]; /* 64 hex ("" for anon) */
    char arn[160];
    char access_key[129];
} auth_principal_t;

/* The anonymous principal (every field empty). */
void auth_principal_anon(auth_principal_t *p);

/* ---- ACLs ------------------------------------------------------------------------------- */

/* Permissions are bits so a grant can hold several and FULL_CONTROL is all of them. */
enum {
    AUTH_PERM_READ = 1u,
    AUTH_PERM_WRITE = 2u,
    AUTH_PERM_READ_ACP = 4u,
    AUTH_PERM_WRITE_ACP = 8u,
    AUTH_PERM_FULL_CONTROL = 15u,
};

typedef enum {
    AUTH_GRANTEE_USER,         /* a canonical user id */
    AUTH_GRANTEE_ALL_USERS,    /* http://acs.amazonaws.com/groups/global/AllUsers (anonymous too) */
    AUTH_GRANTEE_AUTH_USERS,   /* http://acs.amazonaws.com/groups/global/AuthenticatedUsers */
    AUTH_GRANTEE_LOG_DELIVERY, /* http://acs.amazonaws.com/groups/s3/LogDelivery (kept, never
                                matches a request principal) */
} auth_grantee_kind_t;

#define AUTH_ACL_MAX_GRANTS 100
#define AUTH_GROUP_ALL_USERS "http://acs.amazonaws.com/groups/global/AllUsers"
#define AUTH_GROUP_AUTH_USERS "http://acs.amazonaws.com/groups/global/AuthenticatedUsers"
#define AUTH_GROUP_LOG_DELIVERY "http://acs.amazonaws.com/groups/s3/LogDelivery"

typedef struct auth_grant {
    auth_grantee_kind_t kind;
    char id[65];   /* canonical id for AUTH_GRANTEE_USER, else "" */
    unsigned perm; /* AUTH_PERM_* bits */
} auth_grant_t;

typedef struct auth_acl {
    char owner[65]; /* canonical id of the owner */
    size_t n;
    auth_grant_t g[AUTH_ACL_MAX_GRANTS];
} auth_acl_t;

/* The default ACL (private): the owner with FULL_CONTROL. */
void auth_acl_private(auth_acl_t *acl, const char *owner);
/* Removes every grant to AllUsers and AuthenticatedUsers (PublicAccessBlock's
 * IgnorePublicAcls). */
void auth_acl_drop_public(auth_acl_t *acl);

/* A canned ACL by its x-amz-acl name (private, public-read, public-read-write,
 * authenticated-read, bucket-owner-read, bucket-owner-full-control, log-delivery-write,
 * aws-exec-read). bucket_owner is the bucket's owner (for bucket-owner-*; may equal owner).
 * S3_ERR_INVALID_ARGUMENT with msg naming the value when unknown. */
s3_err_t auth_acl_canned(auth_acl_t *acl, const char *name, const char *owner,
                         const char *bucket_owner, char *msg, size_t msglen);

/* Adds the grantees of one x-amz-grant-* header value (perm: one AUTH_PERM_* value), e.g.
 * `id="79a5...", uri="http://acs.amazonaws.com/groups/global/AllUsers"`. An emailAddress
 * grantee is S3_ERR_NOT_IMPLEMENTED (wharf has no e-mail directory); a malformed list is
 * S3_ERR_INVALID_ARGUMENT; msg names the fault. */
s3_err_t auth_acl_grant_header(auth_acl_t *acl, unsigned perm, const char *value, char *msg,
                               size_t msglen);
/* The x-amz-grant-* header name of a permission ("x-amz-grant-read", ...), or NULL. */
const char *auth_acl_grant_header_name(unsigned perm);

/* AccessControlPolicy XML (PutBucketAcl/PutObjectAcl bodies). S3_ERR_MALFORMED_ACL with msg on
 * any fault (unknown permission, grantee type, group, missing Owner/ID); an EmailAddress
 * grantee is S3_ERR_NOT_IMPLEMENTED. */
s3_err_t auth_acl_parse_xml(const char *xml, size_t len, auth_acl_t *acl, char *msg, size_t msglen);
/* The AccessControlPolicy document (with the declaration). display_name: the owner's name
 * shown in Owner/DisplayName and in its own grants (may be NULL: the id). */
void auth_acl_format_xml(const auth_acl_t *acl, const char *display_name, wh_sbuf_t *b);

/* Storage text: "1;<owner>;<grants>", grants comma-separated "<kind><perm hex>[:<id>]" with
 * kind u (user), a (AllUsers), t (AuthenticatedUsers), l (LogDelivery). */
void auth_acl_serialize(const auth_acl_t *acl, wh_sbuf_t *b);
/* NULL or "" text: the private ACL of fallback_owner. WH-style status as s3_err_t:
 * S3_ERR_INTERNAL with msg when stored text cannot be read. */
s3_err_t auth_acl_deserialize(const char *text, const char *fallback_owner, auth_acl_t *acl,
                              char *msg, size_t msglen);

/* Does the ACL give principal p every bit of perm? (The owner always has FULL_CONTROL over
 * the ACL itself: READ_ACP and WRITE_ACP, as AWS.) */
bool auth_acl_allows(const auth_acl_t *acl, const auth_principal_t *p, unsigned perm);
/* Does the ACL grant anything to AllUsers or AuthenticatedUsers? (GetBucketPolicyStatus-like
 * checks, tests.) */
bool auth_acl_is_public(const auth_acl_t *acl);

/* ---- policies --------------------------------------------------------------------------- */

/* AWS's cap for a bucket policy. */
#define AUTH_POLICY_MAX_BYTES (20u * 1024)

typedef struct auth_policy auth_policy_t; /* compiled, immutable, shareable between threads */

typedef enum { AUTH_POLICY_NO_MATCH = 0, AUTH_POLICY_ALLOW, AUTH_POLICY_DENY } auth_policy_result_t;

/* A bucket policy: every statement needs Principal or NotPrincipal. S3_ERR_MALFORMED_POLICY
 * with msg naming the fault ("Statement 2: unknown condition operator StringEqualz", ...). */
s3_err_t auth_policy_parse(const char *json, size_t len, auth_policy_t **out, char *msg,
                           size_t msglen);
/* A user (identity) policy: no Principal; it applies to the user it is attached to. */
s3_err_t auth_policy_parse_user(const char *json, size_t len, auth_policy_t **out, char *msg,
                                size_t msglen);
void auth_policy_free(auth_policy_t *pol);
/* Every Resource pattern of a bucket policy lies in bucket (AWS refuses others with
 * "Policy has invalid resource"). */
s3_err_t auth_policy_check_bucket(const auth_policy_t *pol, const char *bucket, char *msg,
                                  size_t msglen);
/* Does an Allow statement grant to "*" without a condition narrowing it? (PolicyStatus.) */
bool auth_policy_is_public(const auth_policy_t *pol);

/* A parsed client address for aws:SourceIp. */
typedef struct auth_ip {
    int family; /* 0: unknown, 4, 6 */
    uint8_t a[16];
} auth_ip_t;
/* "1.2.3.4", "::1", "::ffff:1.2.3.4" (taken as v4); false when not an address. */
bool auth_ip_parse(const char *s, auth_ip_t *out);

/* The request as the policy sees it. Strings are NUL-terminated and owned by the caller. */
#define AUTH_ARN_MAX 1100 /* "arn:aws:s3:::" + bucket (63) + "/" + key (1024) */
typedef struct auth_authz_ctx {
    const auth_principal_t *who;
    const char *account;  /* the deployment's 12-digit account id */
    const char *action;   /* "s3:GetObject" */
    const char *resource; /* "arn:aws:s3:::bucket" or "arn:aws:s3:::bucket/key" */
    auth_ip_t source_ip;
    bool secure_transport;
    const char *prefix;    /* s3:prefix, NULL when absent */
    const char *delimiter; /* s3:delimiter, NULL when absent */
    bool has_max_keys;
    uint64_t max_keys;     /* s3:max-keys */
    const char *x_amz_acl; /* s3:x-amz-acl: the request's canned ACL header, NULL when absent */
    /* s3:authType: "REST-HEADER" or "REST-QUERY-STRING" for a signed request, NULL for an
     * anonymous one (s3:signatureversion is "AWS4-HMAC-SHA256" exactly when it is set). */
    const char *auth_type;
    /* Request headers as condition keys (NULL: absent): s3:x-amz-server-side-encryption,
     * s3:x-amz-server-side-encryption-aws-kms-key-id, s3:x-amz-copy-source ("bucket/key", no
     * leading slash), s3:x-amz-metadata-directive, aws:Referer, and s3:x-amz-grant-read,
     * -write, -read-acp, -write-acp, -full-control in that order. */
    const char *sse;
    const char *sse_kms_key_id;
    const char *copy_source;
    const char *metadata_directive;
    const char *referer;
    const char *grant[5];
    /* s3:RequestObjectTag/<k> and s3:RequestObjectTagKeys: the request's x-amz-tagging
     * ("k=v&k2=v2", URL-encoded; NULL: no tags sent). */
    const char *request_tags;
    /* s3:ExistingObjectTag/<k>: the target object's tags in the same form, malloc'd (NULL: no
     * object, or no tags); called only when a policy names such a key. NULL: absent. */
    char *(*existing_tags)(void *arg);
    void *existing_arg;
} auth_authz_ctx_t;

auth_policy_result_t auth_policy_eval(const auth_policy_t *pol, const auth_authz_ctx_t *ctx);

/* Glob with * (any run) and ? (one byte); fold: ASCII case-insensitive (actions). */
bool auth_glob(const char *pat, const char *s, bool fold);

/* ---- actions and the decision ----------------------------------------------------------- */

/* Which ACL an action is checked against and with which permission (AWS's mapping): READ on
 * a bucket lists it, WRITE on a bucket puts and deletes objects, READ on an object gets it,
 * READ_ACP/WRITE_ACP the ?acl sub-resources. perm 0: no ACL permission grants it (only the
 * bucket owner, or a policy). */
typedef enum { AUTH_ACL_NONE, AUTH_ACL_BUCKET, AUTH_ACL_OBJECT } auth_acl_level_t;
typedef struct auth_action_acl {
    auth_acl_level_t level;
    unsigned perm;
} auth_action_acl_t;
auth_action_acl_t auth_action_acl(const char *action);

/* s3:ListAllMyBuckets and s3:CreateBucket: any authenticated principal may, unless a user
 * policy denies. */
bool auth_action_is_service(const char *action);

/* Writes "arn:aws:s3:::bucket[/key]" into out (AUTH_ARN_MAX); false when it does not fit. With
 * no bucket (ListAllMyBuckets): "arn:aws:s3:::*", which the patterns "*" and "arn:aws:s3:::*"
 * both match, as in AWS. */
bool auth_resource_arn(char *out, size_t outlen, const char *bucket, const char *key);

typedef enum {
    AUTH_AUTHZ_ALLOW = 0,
    AUTH_AUTHZ_DENY_EXPLICIT,
    AUTH_AUTHZ_DENY_IMPLICIT,
    AUTH_AUTHZ_NEED_OBJECT, /* object_pending, and only the object's ACL can decide */
} auth_authz_t;

/* What one decision weighs. Any pointer may be NULL (absent). */
typedef struct auth_authz_in {
    auth_authz_ctx_t ctx;
    const auth_policy_t *const *user_policies; /* the principal's (USER only) */
    size_t n_user_policies;
    const auth_policy_t *bucket_policy;
    const char *bucket_owner;     /* canonical id; NULL: service-level action */
    const auth_acl_t *bucket_acl; /* for AUTH_ACL_BUCKET actions */
    const auth_acl_t *object_acl; /* for AUTH_ACL_OBJECT actions (NULL: object missing) */
    bool object_pending;          /* the object is not loaded yet: object_acl means nothing */
} auth_authz_in_t;

/* AWS's order: root allowed; explicit Deny in any policy; Allow from a user policy, the bucket
 * policy, the ACL the action maps to, or bucket ownership (the owner's own ACL grants it
 * FULL_CONTROL, and owner-only actions such as DeleteBucket or PutBucketPolicy); else implicit
 * deny. No allocation. */
auth_authz_t auth_authz_decide(const auth_authz_in_t *in);

#endif
