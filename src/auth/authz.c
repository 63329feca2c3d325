/* The action table (which ACL permission AWS maps each S3 action to) and the one decision. */
#include "auth/authz.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

static const struct {
    const char *action;
    s3_acl_level_t level;
    unsigned perm;
} g_actions[] = {
    {"s3:ListBucket", S3_ACL_BUCKET, S3_PERM_READ},
    {"s3:ListBucketVersions", S3_ACL_BUCKET, S3_PERM_READ},
    {"s3:ListBucketMultipartUploads", S3_ACL_BUCKET, S3_PERM_READ},
    {"s3:PutObject", S3_ACL_BUCKET, S3_PERM_WRITE},
    {"s3:DeleteObject", S3_ACL_BUCKET, S3_PERM_WRITE},
    {"s3:DeleteObjectVersion", S3_ACL_BUCKET, S3_PERM_WRITE},
    /* An upload in progress is managed by whoever may write into the bucket. */
    {"s3:AbortMultipartUpload", S3_ACL_BUCKET, S3_PERM_WRITE},
    {"s3:ListMultipartUploadParts", S3_ACL_BUCKET, S3_PERM_WRITE},
    {"s3:GetBucketAcl", S3_ACL_BUCKET, S3_PERM_READ_ACP},
    {"s3:PutBucketAcl", S3_ACL_BUCKET, S3_PERM_WRITE_ACP},
    {"s3:GetObject", S3_ACL_OBJECT, S3_PERM_READ},
    {"s3:GetObjectVersion", S3_ACL_OBJECT, S3_PERM_READ},
    {"s3:GetObjectAcl", S3_ACL_OBJECT, S3_PERM_READ_ACP},
    {"s3:GetObjectVersionAcl", S3_ACL_OBJECT, S3_PERM_READ_ACP},
    {"s3:PutObjectAcl", S3_ACL_OBJECT, S3_PERM_WRITE_ACP},
    {"s3:PutObjectVersionAcl", S3_ACL_OBJECT, S3_PERM_WRITE_ACP},
};

s3_action_acl_t s3_action_acl(const char *action)
{
    for (size_t i = 0; action && i < sizeof g_actions / sizeof g_actions[0]; i++)
        if (strcasecmp(g_actions[i].action, action) == 0)
            return (s3_action_acl_t){g_actions[i].level, g_actions[i].perm};
    return (s3_action_acl_t){S3_ACL_NONE, 0};
}

bool s3_action_is_service(const char *action)
{
    return action && (strcasecmp(action, "s3:ListAllMyBuckets") == 0 ||
                      strcasecmp(action, "s3:CreateBucket") == 0);
}

bool s3_resource_arn(char *out, size_t outlen, const char *bucket, const char *key)
{
    int n = key      ? snprintf(out, outlen, "arn:aws:s3:::%s/%s", bucket ? bucket : "", key)
            : bucket ? snprintf(out, outlen, "arn:aws:s3:::%s", bucket)
                     : snprintf(out, outlen, "arn:aws:s3:::*");
    return n >= 0 && (size_t)n < outlen;
}

static bool is_owner(const s3_principal_t *p, const char *owner)
{
    return p && p->kind != S3_PRINCIPAL_ANON && p->canonical_id[0] && owner &&
           strcmp(p->canonical_id, owner) == 0;
}

s3_authz_t s3_authz_decide(const s3_authz_in_t *in)
{
    const s3_principal_t *who = in->ctx.who;
    if (!who)
        return S3_AUTHZ_DENY_IMPLICIT;
    if (who->kind == S3_PRINCIPAL_ROOT)
        return S3_AUTHZ_ALLOW;
    bool allow = false;
    if (who->kind == S3_PRINCIPAL_USER) {
        for (size_t i = 0; i < in->n_user_policies; i++) {
            s3_policy_result_t r = s3_policy_eval(in->user_policies[i], &in->ctx);
            if (r == S3_POLICY_DENY)
                return S3_AUTHZ_DENY_EXPLICIT;
            allow |= r == S3_POLICY_ALLOW;
        }
    }
    if (in->bucket_policy) {
        s3_policy_result_t r = s3_policy_eval(in->bucket_policy, &in->ctx);
        if (r == S3_POLICY_DENY)
            return S3_AUTHZ_DENY_EXPLICIT;
        allow |= r == S3_POLICY_ALLOW;
    }
    if (allow)
        return S3_AUTHZ_ALLOW;
    const char *action = in->ctx.action;
    if (s3_action_is_service(action))
        return who->kind != S3_PRINCIPAL_ANON ? S3_AUTHZ_ALLOW : S3_AUTHZ_DENY_IMPLICIT;
    if (!in->bucket_owner)
        return S3_AUTHZ_DENY_IMPLICIT;
    bool bowner = is_owner(who, in->bucket_owner);
    s3_action_acl_t m = s3_action_acl(action);
    switch (m.level) {
    case S3_ACL_BUCKET:
        /* The owner's own ACL grants it FULL_CONTROL, whatever grants were set since. */
        if (bowner || s3_acl_allows(in->bucket_acl, who, m.perm))
            return S3_AUTHZ_ALLOW;
        break;
    case S3_ACL_OBJECT:
        if (in->object_pending)
            return S3_AUTHZ_NEED_OBJECT;
        if (in->object_acl)
            return s3_acl_allows(in->object_acl, who, m.perm) ? S3_AUTHZ_ALLOW
                                                              : S3_AUTHZ_DENY_IMPLICIT;
        /* No such object: who may list the bucket learns that (404); others get 403. */
        if (bowner || s3_acl_allows(in->bucket_acl, who, S3_PERM_READ))
            return S3_AUTHZ_ALLOW;
        break;
    case S3_ACL_NONE:
        /* Actions no ACL grants (DeleteBucket, the policy and configuration sub-resources):
         * the bucket owner, and for an object's own configuration (tagging), its owner. */
        if (bowner)
            return S3_AUTHZ_ALLOW;
        if (in->object_pending)
            return S3_AUTHZ_NEED_OBJECT;
        if (in->object_acl && is_owner(who, in->object_acl->owner))
            return S3_AUTHZ_ALLOW;
        break;
    }
    return S3_AUTHZ_DENY_IMPLICIT;
}
