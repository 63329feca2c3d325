/* Authorization: who a request is (s3_principal_t), bucket and user policies (JSON, parsed once
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

typedef enum { S3_PRINCIPAL_ANON, S3_PRINCIPAL_ROOT, S3_PRINCIPAL_USER } s3_principal_kind_t;
typedef struct s3_principal {
    s3_principal_kind_t kind;
    char user[65];         /* IAM user name ("" for root/anon) */
    char canonical_id[65]; /* 64 hex ("" for anon) */
    char arn[160];
    char access_key[129];
} s3_principal_t;

/* The anonymous principal (every field empty). */
void s3_principal_anon(s3_principal_t *p);

/* ---- ACLs ------------------------------------------------------------------------------- */

/* Permissions are bits so a grant can hold several and FULL_CONTROL is all of them. */
enum {
    S3_PERM_READ = 1u,
    S3_PERM_WRITE = 2u,
    S3_PERM_READ_ACP = 4u,
    S3_PERM_WRITE_ACP = 8u,
    S3_PERM_FULL_CONTROL = 15u,
};

typedef enum {
    S3_GRANTEE_USER,         /* a canonical user id */
    S3_GRANTEE_ALL_USERS,    /* http://acs.amazonaws.com/groups/global/AllUsers (anonymous too) */
    S3_GRANTEE_AUTH_USERS,   /* http://acs.amazonaws.com/groups/global/AuthenticatedUsers */
    S3_GRANTEE_LOG_DELIVERY, /* http://acs.amazonaws.com/groups/s3/LogDelivery (kept, never
                                matches a request principal) */
} s3_grantee_kind_t;

#define S3_ACL_MAX_GRANTS 100
#define S3_GROUP_ALL_USERS "http://acs.amazonaws.com/groups/global/AllUsers"
#define S3_GROUP_AUTH_USERS "http://acs.amazonaws.com/groups/global/AuthenticatedUsers"
#define S3_GROUP_LOG_DELIVERY "http://acs.amazonaws.com/groups/s3/LogDelivery"

typedef struct s3_grant {
    s3_grantee_kind_t kind;
    char id[65];   /* canonical id for S3_GRANTEE_USER, else "" */
    unsigned perm; /* S3_PERM_* bits */
} s3_grant_t;

typedef struct s3_acl {
    char owner[65]; /* canonical id of the owner */
    size_t n;
    s3_grant_t g[S3_ACL_MAX_GRANTS];
} s3_acl_t;

/* The default ACL (private): the owner with FULL_CONTROL. */
void s3_acl_private(s3_acl_t *acl, const char *owner);
/* Removes every grant to AllUsers and AuthenticatedUsers (PublicAccessBlock's
 * IgnorePublicAcls). */
void s3_acl_drop_public(s3_acl_t *acl);

/* A canned ACL by its x-amz-acl name (private, public-read, public-read-write,
 * authenticated-read, bucket-owner-read, bucket-owner-full-control, log-delivery-write,
 * aws-exec-read). bucket_owner is the bucket's owner (for bucket-owner-*; may equal owner).
 * S3_ERR_INVALID_ARGUMENT with msg naming the value when unknown. */
s3_err_t s3_acl_canned(s3_acl_t *acl, const char *name, const char *owner, const char *bucket_owner,
                       char *msg, size_t msglen);

/* Adds the grantees of one x-amz-grant-* header value (perm: one S3_PERM_* value), e.g.
 * `id="79a5...", uri="http://acs.amazonaws.com/groups/global/AllUsers"`. An emailAddress
 * grantee is S3_ERR_NOT_IMPLEMENTED (wharf has no e-mail directory); a malformed list is
 * S3_ERR_INVALID_ARGUMENT; msg names the fault. */
s3_err_t s3_acl_grant_header(s3_acl_t *acl, unsigned perm, const char *value, char *msg,
                             size_t msglen);
/* The x-amz-grant-* header name of a permission ("x-amz-grant-read", ...), or NULL. */
const char *s3_acl_grant_header_name(unsigned perm);

/* AccessControlPolicy XML (PutBucketAcl/PutObjectAcl bodies). S3_ERR_MALFORMED_ACL with msg on
 * any fault (unknown permission, grantee type, group, missing Owner/ID); an EmailAddress
 * grantee is S3_ERR_NOT_IMPLEMENTED. */
s3_err_t s3_acl_parse_xml(const char *xml, size_t len, s3_acl_t *acl, char *msg, size_t msglen);
/* The AccessControlPolicy document (with the declaration). display_name: the owner's name
 * shown in Owner/DisplayName and in its own grants (may be NULL: the id). */
void s3_acl_format_xml(const s3_acl_t *acl, const char *display_name, wh_sbuf_t *b);

/* Storage text: "1;<owner>;<grants>", grants comma-separated "<kind><perm hex>[:<id>]" with
 * kind u (user), a (AllUsers), t (AuthenticatedUsers), l (LogDelivery). */
void s3_acl_serialize(const s3_acl_t *acl, wh_sbuf_t *b);
/* NULL or "" text: the private ACL of fallback_owner. WH-style status as s3_err_t:
 * S3_ERR_INTERNAL with msg when stored text cannot be read. */
s3_err_t s3_acl_deserialize(const char *text, const char *fallback_owner, s3_acl_t *acl, char *msg,
                            size_t msglen);

/* Does the ACL give principal p every bit of perm? (The owner always has FULL_CONTROL over
 * the ACL itself: READ_ACP and WRITE_ACP, as AWS.) */
bool s3_acl_allows(const s3_acl_t *acl, const s3_principal_t *p, unsigned perm);
/* Does the ACL grant anything to AllUsers or AuthenticatedUsers? (GetBucketPolicyStatus-like
 * checks, tests.) */
bool s3_acl_is_public(const s3_acl_t *acl);

/* ---- policies --------------------------------------------------------------------------- */

/* AWS's cap for a bucket policy. */
#define S3_POLICY_MAX_BYTES (20u * 1024)

typedef struct s3_policy s3_policy_t; /* compiled, immutable, shareable between threads */

typedef enum { S3_POLICY_NO_MATCH = 0, S3_POLICY_ALLOW, S3_POLICY_DENY } s3_policy_result_t;

/* A bucket policy: every statement needs Principal or NotPrincipal. S3_ERR_MALFORMED_POLICY
 * with msg naming the fault ("Statement 2: unknown condition operator StringEqualz", ...). */
s3_err_t s3_policy_parse(const char *json, size_t len, s3_policy_t **out, char *msg, size_t msglen);
/* A user (identity) policy: no Principal; it applies to the user it is attached to. */
s3_err_t s3_policy_parse_user(const char *json, size_t len, s3_policy_t **out, char *msg,
                              size_t msglen);
void s3_policy_free(s3_policy_t *pol);
/* Every Resource pattern of a bucket policy lies in bucket (AWS refuses others with
 * "Policy has invalid resource"). */
s3_err_t s3_policy_check_bucket(const s3_policy_t *pol, const char *bucket, char *msg,
                                size_t msglen);
/* Does an Allow statement grant to "*" without a condition narrowing it? (PolicyStatus.) */
bool s3_policy_is_public(const s3_policy_t *pol);

/* A parsed client address for aws:SourceIp. */
typedef struct s3_ip {
    int family; /* 0: unknown, 4, 6 */
    uint8_t a[16];
} s3_ip_t;
/* "1.2.3.4", "::1", "::ffff:1.2.3.4" (taken as v4); false when not an address. */
bool s3_ip_parse(const char *s, s3_ip_t *out);

/* The request as the policy sees it. Strings are NUL-terminated and owned by the caller. */
#define S3_ARN_MAX 1100 /* "arn:aws:s3:::" + bucket (63) + "/" + key (1024) */
typedef struct s3_authz_ctx {
    const s3_principal_t *who;
    const char *account;  /* the deployment's 12-digit account id */
    const char *action;   /* "s3:GetObject" */
    const char *resource; /* "arn:aws:s3:::bucket" or "arn:aws:s3:::bucket/key" */
    s3_ip_t source_ip;
    bool secure_transport;
    const char *prefix;    /* s3:prefix, NULL when absent */
    const char *delimiter; /* s3:delimiter, NULL when absent */
    bool has_max_keys;
    uint64_t max_keys;     /* s3:max-keys */
    const char *x_amz_acl; /* s3:x-amz-acl: the request's canned ACL header, NULL when absent */
    /* s3:authType: "REST-HEADER" or "REST-QUERY-STRING" for a signed request, NULL for an
     * anonymous one (s3:signatureversion is "AWS4-HMAC-SHA256" exactly when it is set). */
    const char *auth_type;
} s3_authz_ctx_t;

s3_policy_result_t s3_policy_eval(const s3_policy_t *pol, const s3_authz_ctx_t *ctx);

/* Glob with * (any run) and ? (one byte); fold: ASCII case-insensitive (actions). */
bool s3_glob(const char *pat, const char *s, bool fold);

/* ---- actions and the decision ----------------------------------------------------------- */

/* Which ACL an action is checked against and with which permission (AWS's mapping): READ on
 * a bucket lists it, WRITE on a bucket puts and deletes objects, READ on an object gets it,
 * READ_ACP/WRITE_ACP the ?acl sub-resources. perm 0: no ACL permission grants it (only the
 * bucket owner, or a policy). */
typedef enum { S3_ACL_NONE, S3_ACL_BUCKET, S3_ACL_OBJECT } s3_acl_level_t;
typedef struct s3_action_acl {
    s3_acl_level_t level;
    unsigned perm;
} s3_action_acl_t;
s3_action_acl_t s3_action_acl(const char *action);

/* s3:ListAllMyBuckets and s3:CreateBucket: any authenticated principal may, unless a user
 * policy denies. */
bool s3_action_is_service(const char *action);

/* Writes "arn:aws:s3:::bucket[/key]" into out (S3_ARN_MAX); false when it does not fit. With
 * no bucket (ListAllMyBuckets): "arn:aws:s3:::*", which the patterns "*" and "arn:aws:s3:::*"
 * both match, as in AWS. */
bool s3_resource_arn(char *out, size_t outlen, const char *bucket, const char *key);

typedef enum {
    S3_AUTHZ_ALLOW = 0,
    S3_AUTHZ_DENY_EXPLICIT,
    S3_AUTHZ_DENY_IMPLICIT,
    S3_AUTHZ_NEED_OBJECT, /* object_pending, and only the object's ACL can decide */
} s3_authz_t;

/* What one decision weighs. Any pointer may be NULL (absent). */
typedef struct s3_authz_in {
    s3_authz_ctx_t ctx;
    const s3_policy_t *const *user_policies; /* the principal's (USER only) */
    size_t n_user_policies;
    const s3_policy_t *bucket_policy;
    const char *bucket_owner;   /* canonical id; NULL: service-level action */
    const s3_acl_t *bucket_acl; /* for S3_ACL_BUCKET actions */
    const s3_acl_t *object_acl; /* for S3_ACL_OBJECT actions (NULL: object missing) */
    bool object_pending;        /* the object is not loaded yet: object_acl means nothing */
} s3_authz_in_t;

/* AWS's order: root allowed; explicit Deny in any policy; Allow from a user policy, the bucket
 * policy, the ACL the action maps to, or bucket ownership (the owner's own ACL grants it
 * FULL_CONTROL, and owner-only actions such as DeleteBucket or PutBucketPolicy); else implicit
 * deny. No allocation. */
s3_authz_t s3_authz_decide(const s3_authz_in_t *in);

#endif
