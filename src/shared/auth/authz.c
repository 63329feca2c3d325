/* SPDX-License-Identifier: Apache-2.0 */
/* The action table (which ACL permission AWS maps each S3 action to) and the one decision. */
#include "auth/authz.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

static const struct {
    const char *action;
    auth_acl_level_t level;
    unsigned perm;
} g_actions[] = {
    {"s3:ListBucket", AUTH_ACL_BUCKET, AUTH_PERM_READ},
    {"s3:ListBucketVersions", AUTH_ACL_BUCKET, AUTH_PERM_READ},
    {"s3:ListBucketMultipartUploads", AUTH_ACL_BUCKET, AUTH_PERM_READ},
    {"s3:PutObject", AUTH_ACL_BUCKET, AUTH_PERM_WRITE},
    {"s3:DeleteObject", AUTH_ACL_BUCKET, AUTH_PERM_WRITE},
    {"s3:DeleteObjectVersion", AUTH_ACL_BUCKET, AUTH_PERM_WRITE},
    /* An upload in progress is managed by whoever may write into the bucket. */
    {"s3:AbortMultipartUpload", AUTH_ACL_BUCKET, AUTH_PERM_WRITE},
    {"s3:ListMultipartUploadParts", AUTH_ACL_BUCKET, AUTH_PERM_WRITE},
    {"s3:GetBucketAcl", AUTH_ACL_BUCKET, AUTH_PERM_READ_ACP},
    {"s3:PutBucketAcl", AUTH_ACL_BUCKET, AUTH_PERM_WRITE_ACP},
    {"s3:GetObject", AUTH_ACL_OBJECT, AUTH_PERM_READ},
    {"s3:GetObjectVersion", AUTH_ACL_OBJECT, AUTH_PERM_READ},
    {"s3:GetObjectAcl", AUTH_ACL_OBJECT, AUTH_PERM_READ_ACP},
    {"s3:GetObjectVersionAcl", AUTH_ACL_OBJECT, AUTH_PERM_READ_ACP},
    {"s3:PutObjectAcl", AUTH_ACL_OBJECT, AUTH_PERM_WRITE_ACP},
    {"s3:PutObjectVersionAcl", AUTH_ACL_OBJECT, AUTH_PERM_WRITE_ACP},
};

auth_action_acl_t auth_action_acl(const char *action)
{
    for (size_t i = 0; action && i < sizeof g_actions / sizeof g_actions[0]; i++)
        if (strcasecmp(g_actions[i].action, action) == 0)
            return (auth_action_acl_t){g_actions[i].level, g_actions[i].perm};
    return (auth_action_acl_t){AUTH_ACL_NONE, 0};
}

bool auth_action_is_service(const char *action)
{
    return action && (strcasecmp(action, "s3:ListAllMyBuckets") == 0 ||
                      strcasecmp(action, "s3:CreateBucket") == 0);
}

bool auth_resource_arn(char *out, size_t outlen, const char *bucket, const char *key)
{
    int n = key      ? snprintf(out, outlen, "arn:aws:s3:::%s/%s", bucket ? bucket : "", key)
            : bucket ? snprintf(out, outlen, "arn:aws:s3:::%s", bucket)
                     : snprintf(out, outlen, "arn:aws:s3:::*");
    return n >= 0 && (size_t)n < outlen;
}

static bool is_owner(const auth_principal_t *p, const char *owner)
{
    return p && p->kind != AUTH_PRINCIPAL_ANON && p->canonical_id[0] && owner &&
           strcmp(p->canonical_id, owner) == 0;
}

auth_authz_t auth_authz_decide(const auth_authz_in_t *in)
{
    const auth_principal_t *who = in->ctx.who;
    if (!who)
        return AUTH_AUTHZ_DENY_IMPLICIT;
    if (who->kind == AUTH_PRINCIPAL_ROOT)
        return AUTH_AUTHZ_ALLOW;
    bool allow = false;
    if (who->kind == AUTH_PRINCIPAL_USER) {
        for (size_t i = 0; i < in->n_user_policies; i++) {
            auth_policy_result_t r = auth_policy_eval(in->user_policies[i], &in->ctx);
            if (r == AUTH_POLICY_DENY)
                return AUTH_AUTHZ_DENY_EXPLICIT;
            allow |= r == AUTH_POLICY_ALLOW;
        }
    }
    if (in->bucket_policy) {
        auth_policy_result_t r = auth_policy_eval(in->bucket_policy, &in->ctx);
        if (r == AUTH_POLICY_DENY)
            return AUTH_AUTHZ_DENY_EXPLICIT;
        allow |= r == AUTH_POLICY_ALLOW;
    }
    if (allow)
        return AUTH_AUTHZ_ALLOW;
    const char *action = in->ctx.action;
    if (auth_action_is_service(action))
        return who->kind != AUTH_PRINCIPAL_ANON ? AUTH_AUTHZ_ALLOW : AUTH_AUTHZ_DENY_IMPLICIT;
    if (!in->bucket_owner)
        return AUTH_AUTHZ_DENY_IMPLICIT;
    bool bowner = is_owner(who, in->bucket_owner);
    auth_action_acl_t m = auth_action_acl(action);
    switch (m.level) {
    case AUTH_ACL_BUCKET:
        /* The owner's own ACL grants it FULL_CONTROL, whatever grants were set since. */
        if (bowner || auth_acl_allows(in->bucket_acl, who, m.perm))
            return AUTH_AUTHZ_ALLOW;
        break;
    case AUTH_ACL_OBJECT:
        if (in->object_pending)
            return AUTH_AUTHZ_NEED_OBJECT;
        if (in->object_acl)
            return auth_acl_allows(in->object_acl, who, m.perm) ? AUTH_AUTHZ_ALLOW
                                                                : AUTH_AUTHZ_DENY_IMPLICIT;
        /* No such object: who may list the bucket learns that (404); others get 403. */
        if (bowner || auth_acl_allows(in->bucket_acl, who, AUTH_PERM_READ))
            return AUTH_AUTHZ_ALLOW;
        break;
    case AUTH_ACL_NONE:
        /* Actions no ACL grants (DeleteBucket, the policy and configuration sub-resources):
         * the bucket owner, and for an object's own configuration (tagging), its owner. */
        if (bowner)
            return AUTH_AUTHZ_ALLOW;
        if (in->object_pending)
            return AUTH_AUTHZ_NEED_OBJECT;
        if (in->object_acl && is_owner(who, in->object_acl->owner))
            return AUTH_AUTHZ_ALLOW;
        break;
    }
    return AUTH_AUTHZ_DENY_IMPLICIT;
}
