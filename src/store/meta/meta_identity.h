/* SPDX-License-Identifier: Apache-2.0 */
/* The metadata table's identities: IAM users, their access keys and inline policies. Included
 * by meta.h. */
#ifndef WH_META_META_IDENTITY_H
#define WH_META_META_IDENTITY_H

#include "meta/meta.h"

/* ---- identity: IAM users, their access keys and inline policies ----
 * Names follow IAM: [A-Za-z0-9+=,.@_-]{1,64} (users and policies). The store keeps secrets
 * only sealed (ident/identity.c: AES-256-GCM under the server key); it never sees them. */
#define META_USER_MAX 64
#define META_AK_MAX 128
#define META_SEALED_MAX 256
typedef struct meta_user {
    char name[META_USER_MAX + 1];
    char user_id[32];      /* "AIDA" + 17 upper-case alnum */
    char canonical_id[65]; /* 64 hex */
    time_t created;
} meta_user_t;
typedef struct meta_access_key {
    char access_key[META_AK_MAX + 1];
    char user[META_USER_MAX + 1];
    char secret_sealed[META_SEALED_MAX]; /* text form of the sealed secret */
    bool active;                         /* false: Inactive, refused like an unknown key */
    time_t created;
    /* Filled by key_get (one indexed query joins the user): */
    char user_id[32];
    char canonical_id[65];
} meta_access_key_t;
typedef struct meta_policy {
    char name[129];
    char *doc; /* malloc'd JSON text */
} meta_policy_t;
void meta_policies_free(meta_policy_t *p, size_t n);

typedef struct meta_ident_ops meta_ident_ops_t;
struct meta_ident_ops {
    wh_status_t (*user_create)(meta_t *m, const meta_user_t *u);            /* EXISTS */
    wh_status_t (*user_get)(meta_t *m, const char *name, meta_user_t *out); /* NOT_FOUND */
    wh_status_t (*user_list)(meta_t *m, meta_user_t **out, size_t *n);      /* by name; free() */
    /* force: also drops the user's keys and policies; else NOT_EMPTY while any remain. */
    wh_status_t (*user_delete)(meta_t *m, const char *name, bool force);
    /* NOT_FOUND: no such user; EXISTS: the access key id is taken. */
    wh_status_t (*key_create)(meta_t *m, const meta_access_key_t *k);
    /* The key with its user's ids, in one indexed query (the SigV4 lookup). NOT_FOUND. */
    wh_status_t (*key_get)(meta_t *m, const char *access_key, meta_access_key_t *out);
    /* The user's keys, oldest first; free(). NOT_FOUND: no such user. */
    wh_status_t (*key_list)(meta_t *m, const char *user, meta_access_key_t **out, size_t *n);
    wh_status_t (*key_delete)(meta_t *m, const char *access_key); /* NOT_FOUND */
    wh_status_t (*key_set_active)(meta_t *m, const char *access_key, bool active);
    /* Inserts or replaces the user's inline policy. NOT_FOUND: no such user. */
    wh_status_t (*user_policy_put)(meta_t *m, const char *user, const char *name, const char *doc);
    wh_status_t (*user_policy_get)(meta_t *m, const char *user, const char *name,
                                   char **doc); /* NOT_FOUND */
    /* Every inline policy of the user with its document, by name (meta_policies_free).
     * NOT_FOUND: no such user. */
    wh_status_t (*user_policy_list)(meta_t *m, const char *user, meta_policy_t **out, size_t *n);
    wh_status_t (*user_policy_delete)(meta_t *m, const char *user, const char *name);
};

wh_status_t meta_cached_key_get(meta_t *m, const char *ak, meta_access_key_t *out);
wh_status_t meta_cached_user_policy_list(meta_t *m, const char *user, meta_policy_t **out,
                                         size_t *n);

static inline wh_status_t meta_user_create(meta_t *m, const meta_user_t *u)
{
    return META_HAS(m, ident, user_create) ? m->ops->ident->user_create(m, u) : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_user_get(meta_t *m, const char *name, meta_user_t *out)
{
    return META_HAS(m, ident, user_get) ? m->ops->ident->user_get(m, name, out)
                                        : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_user_list(meta_t *m, meta_user_t **out, size_t *n)
{
    return META_HAS(m, ident, user_list) ? m->ops->ident->user_list(m, out, n) : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_user_delete(meta_t *m, const char *name, bool force)
{
    return META_HAS(m, ident, user_delete) ? m->ops->ident->user_delete(m, name, force)
                                           : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_key_create(meta_t *m, const meta_access_key_t *k)
{
    return META_HAS(m, ident, key_create) ? m->ops->ident->key_create(m, k) : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_key_get(meta_t *m, const char *access_key, meta_access_key_t *out)
{
    return meta_cached_key_get(m, access_key, out);
}

static inline wh_status_t meta_key_list(meta_t *m, const char *user, meta_access_key_t **out,
                                        size_t *n)
{
    return META_HAS(m, ident, key_list) ? m->ops->ident->key_list(m, user, out, n)
                                        : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_key_delete(meta_t *m, const char *access_key)
{
    return META_HAS(m, ident, key_delete) ? m->ops->ident->key_delete(m, access_key)
                                          : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_key_set_active(meta_t *m, const char *access_key, bool active)
{
    return META_HAS(m, ident, key_set_active) ? m->ops->ident->key_set_active(m, access_key, active)
                                              : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_user_policy_put(meta_t *m, const char *user, const char *name,
                                               const char *doc)
{
    return META_HAS(m, ident, user_policy_put) ? m->ops->ident->user_policy_put(m, user, name, doc)
                                               : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_user_policy_get(meta_t *m, const char *user, const char *name,
                                               char **doc)
{
    return META_HAS(m, ident, user_policy_get) ? m->ops->ident->user_policy_get(m, user, name, doc)
                                               : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_user_policy_list(meta_t *m, const char *user, meta_policy_t **out,
                                                size_t *n)
{
    return meta_cached_user_policy_list(m, user, out, n);
}

static inline wh_status_t meta_user_policy_delete(meta_t *m, const char *user, const char *name)
{
    return META_HAS(m, ident, user_policy_delete) ? m->ops->ident->user_policy_delete(m, user, name)
                                                  : WH_ERR_UNSUPPORTED;
}

#endif
