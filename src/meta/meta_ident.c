/* The identity rules, once for every backend (meta_ident.h). */
#include "meta/meta_ident.h"

wh_status_t meta_ident_user_delete(const meta_ident_dialect_t *d, void *c, const char *name,
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

wh_status_t meta_ident_key_create(const meta_ident_dialect_t *d, void *c,
                                  const meta_access_key_t *k)
{
    /* The user's row held: a concurrent user delete cannot leave this key without its user. */
    wh_status_t st = d->user_check(c, k->user, META_USER_SHARE);
    return st == WH_OK ? d->key_insert(c, k) : st;
}

wh_status_t meta_ident_policy_put(const meta_ident_dialect_t *d, void *c, const char *user,
                                  const char *name, const char *doc)
{
    wh_status_t st = d->user_check(c, user, META_USER_READ);
    return st == WH_OK ? d->policy_upsert(c, user, name, doc) : st;
}
