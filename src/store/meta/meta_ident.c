/* SPDX-License-Identifier: Apache-2.0 */
/* The identity rules, once for every backend (meta_ident.h). */
#include "meta/meta_rules.h"

static wh_status_t meta_ident_user_delete(const meta_ident_dialect_t *d, void *c, const char *name,
                                          bool force)
{
    wh_status_t st = d->user_check(c, name, META_USER_UPDATE);
    if (st != WH_OK)
        return st;
    if (!force) {
        bool has = false;
        if ((st = d->user_has_dependants(c, name, &has)) != WH_OK)
            return st;
        if (has)
            return WH_ERR_NOT_EMPTY;
    }
    return d->user_rows_delete(c, name);
}

static wh_status_t meta_ident_key_create(const meta_ident_dialect_t *d, void *c,
                                         const meta_access_key_t *k)
{
    /* The user's row held: a concurrent user delete cannot leave this key without its user. */
    wh_status_t st = d->user_check(c, k->user, META_USER_SHARE);
    return st == WH_OK ? d->key_insert(c, k) : st;
}

static wh_status_t meta_ident_policy_put(const meta_ident_dialect_t *d, void *c, const char *user,
                                         const char *name, const char *doc)
{
    wh_status_t st = d->user_check(c, user, META_USER_READ);
    return st == WH_OK ? d->policy_upsert(c, user, name, doc) : st;
}

/* ---- the slots: each rule in one write transaction of the backend's (write_auth: what
 * authorization reads changes) ---- */

typedef struct {
    const char *name, *user, *doc;
    bool force;
    const meta_access_key_t *k;
    const meta_ident_dialect_t *d;
} meta_ident_arg_t;

static wh_status_t tx_user_delete(void *conn, void *arg)
{
    meta_ident_arg_t *a = arg;
    return meta_ident_user_delete(a->d, conn, a->name, a->force);
}

wh_status_t meta_rules_user_delete(meta_t *m, const char *name, bool force)
{
    meta_ident_arg_t a = {.name = name, .force = force, .d = m->rules->ident};
    return m->rules->write_auth(m, tx_user_delete, &a);
}

static wh_status_t tx_key_create(void *conn, void *arg)
{
    meta_ident_arg_t *a = arg;
    return meta_ident_key_create(a->d, conn, a->k);
}

wh_status_t meta_rules_key_create(meta_t *m, const meta_access_key_t *k)
{
    meta_ident_arg_t a = {.k = k, .d = m->rules->ident};
    return m->rules->write_auth(m, tx_key_create, &a);
}

static wh_status_t tx_policy_put(void *conn, void *arg)
{
    meta_ident_arg_t *a = arg;
    return meta_ident_policy_put(a->d, conn, a->user, a->name, a->doc);
}

wh_status_t meta_rules_user_policy_put(meta_t *m, const char *user, const char *name,
                                       const char *doc)
{
    meta_ident_arg_t a = {.name = name, .user = user, .doc = doc, .d = m->rules->ident};
    return m->rules->write_auth(m, tx_policy_put, &a);
}
