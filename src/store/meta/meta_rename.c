/* SPDX-License-Identifier: Apache-2.0 */
/* RenameObject's rule, once for every backend (meta.h, object_rename): one write transaction
 * reads the bucket's versioning, the source's and the destination's current rows, checks the
 * conditions and the locks, lets the destination's object go and moves the source's row to the
 * destination key. No byte moves: the row keeps its data id, so a reader that opened the source
 * before the rename reads it whole, and one that looks the source up after it finds nothing.
 * Racing writers are ordered by the backend's transaction (SQLite: the writer's lock;
 * PostgreSQL: SERIALIZABLE, the loser retries and then sees the winner's commit). */
#include "meta/meta_rules.h"

#include <string.h>
#include <time.h>

typedef struct {
    const meta_ver_dialect_t *d;
    const char *bucket, *src, *dst;
    size_t slen, dlen;
    const data_rename_src_cond_t *scond;
    data_cond_t *cond;
    data_rename_fail_t *fail;
    data_ref_t *old;
} meta_rename_arg_t;

static wh_status_t rename_src_check(const meta_rename_arg_t *a, void *c)
{
    if (!a->scond)
        return WH_OK;
    data_obj_meta_t m;
    memset(&m, 0, sizeof m);
    wh_status_t st = a->d->version_get(c, a->bucket, a->src, a->slen, NULL, &m);
    if (st == WH_OK && !data_rename_src_cond_ok(a->scond, &m)) {
        *a->fail = DATA_RENAME_SRC_COND;
        st = WH_ERR_PRECONDITION;
    }
    data_obj_meta_free(&m);
    return st;
}

static wh_status_t tx_rename(void *c, void *arg)
{
    meta_rename_arg_t *a = arg;
    const meta_ver_dialect_t *d = a->d;
    *a->fail = DATA_RENAME_OK;
    data_ref_clear(a->old);
    if (a->cond)
        a->cond->failed = false;
    int state = 0;
    meta_cur_t s, t;
    wh_status_t st = d->versioning(c, a->bucket, &state);
    if (st != WH_OK)
        return st;
    if (state != DATA_VERSIONING_OFF) {
        *a->fail = DATA_RENAME_VERSIONED;
        return WH_ERR_UNSUPPORTED;
    }
    if ((st = d->cur(c, a->bucket, a->src, a->slen, &s)) != WH_OK)
        return st;
    if (!s.exists || s.dm) {
        *a->fail = DATA_RENAME_SRC_MISSING;
        return WH_ERR_NOT_FOUND;
    }
    if ((st = rename_src_check(a, c)) != WH_OK)
        return st;
    /* The source leaves its key: a lock that forbids deleting it forbids renaming it. */
    meta_lockchk_t chk = {DATA_BYPASS_NONE, (int64_t)time(NULL), NULL};
    if ((st = meta_lockchk_refuse(&chk, s.lock_mode, s.lock_until, s.hold)) != WH_OK) {
        *a->fail = DATA_RENAME_LOCKED;
        return st;
    }
    if ((st = d->cur(c, a->bucket, a->dst, a->dlen, &t)) != WH_OK)
        return st;
    if ((st = meta_cond_check(a->cond, t.exists && !t.dm, t.etag)) != WH_OK) {
        *a->fail = DATA_RENAME_DST_COND;
        return st;
    }
    if (a->slen == a->dlen && memcmp(a->src, a->dst, a->slen) == 0)
        return WH_OK;
    if (t.exists) {
        if ((st = meta_lockchk_refuse(&chk, t.lock_mode, t.lock_until, t.hold)) != WH_OK) {
            *a->fail = DATA_RENAME_LOCKED;
            return st;
        }
        if ((st = d->cur_release(c, a->bucket, a->dst, a->dlen, a->old)) != WH_OK ||
            (st = d->obj_delete(c, a->bucket, a->dst, a->dlen)) != WH_OK)
            return st;
    }
    return d->obj_rekey(c, a->bucket, a->src, a->slen, a->dst, a->dlen);
}

wh_status_t meta_rules_object_rename(meta_t *m, const char *bucket, const char *src, size_t slen,
                                     const char *dst, size_t dlen,
                                     const data_rename_src_cond_t *scond, data_cond_t *cond,
                                     data_rename_fail_t *fail, data_ref_t *old)
{
    data_rename_fail_t dummy;
    meta_rename_arg_t a = {m->rules->ver,        bucket, src, dst, slen, dlen, scond, cond,
                           fail ? fail : &dummy, old};
    memset(old, 0, sizeof *old);
    if (!m->rules->ver->obj_rekey)
        return WH_ERR_UNSUPPORTED;
    wh_status_t st = m->rules->write(m, tx_rename, &a);
    if (st != WH_OK)
        data_ref_clear(old);
    return st;
}
