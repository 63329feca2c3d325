/* SPDX-License-Identifier: Apache-2.0 */
/* An append's commit, once for every backend (meta.h, object_swap): the new object replaces
 * the current one only if that is still the one the append extended (its data id), so of two
 * appends racing at one offset exactly one commits; the other finds another data id and
 * changes nothing. */
#include "meta/meta_rules.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

typedef struct {
    const meta_ver_dialect_t *d;
    const char *bucket, *key, *expect_id;
    size_t klen;
    data_obj_meta_t *meta;
    const data_ref_t *ref;
    data_ref_t *old;
} meta_swap_arg_t;

static wh_status_t tx_swap(void *c, void *arg)
{
    meta_swap_arg_t *a = arg;
    const meta_ver_dialect_t *d = a->d;
    data_ref_clear(a->old);
    int state = 0;
    meta_cur_t cur;
    wh_status_t st = d->versioning(c, a->bucket, &state);
    if (st != WH_OK)
        return st;
    if (state != DATA_VERSIONING_OFF)
        return WH_ERR_UNSUPPORTED;
    if ((st = d->cur(c, a->bucket, a->key, a->klen, &cur)) != WH_OK)
        return st;
    if (!cur.exists || cur.dm)
        return WH_ERR_PRECONDITION; /* deleted meanwhile: not the object the append extended */
    meta_lockchk_t chk = {DATA_BYPASS_NONE, (int64_t)time(NULL), NULL};
    if ((st = meta_lockchk_refuse(&chk, cur.lock_mode, cur.lock_until, cur.hold)) != WH_OK)
        return st;
    if ((st = d->cur_release(c, a->bucket, a->key, a->klen, a->old)) != WH_OK)
        return st;
    if (strcmp(a->old->id, a->expect_id) != 0)
        return WH_ERR_PRECONDITION;
    int64_t seq = (int64_t)meta_version_seq_next((uint64_t)cur.seq);
    a->meta->delete_marker = false;
    snprintf(a->meta->version_id, sizeof a->meta->version_id, "null");
    return d->obj_upsert(c, a->bucket, a->key, a->klen, a->meta, a->ref, seq);
}

wh_status_t meta_rules_object_swap(meta_t *m, const char *bucket, const char *key, size_t klen,
                                   const char *expect_id, data_obj_meta_t *meta,
                                   const data_ref_t *ref, data_ref_t *old)
{
    meta_swap_arg_t a = {m->rules->ver, bucket, key, expect_id, klen, meta, ref, old};
    memset(old, 0, sizeof *old);
    wh_status_t st = m->rules->write(m, tx_swap, &a);
    if (st != WH_OK)
        data_ref_clear(old);
    return st;
}
