/* SPDX-License-Identifier: Apache-2.0 */
/* RenameObject over the metadata table (store.h, store_object_rename). */
#include "meta/meta.h"
#include "store/store_int.h"

#include <string.h>

typedef struct {
    const store_rename_args_t *a;
    data_rename_fail_t *fail;
} store_rename_arg_t;

static wh_status_t store_rename_fn(store_t *st, void *arg)
{
    store_rename_arg_t *r = arg;
    const store_rename_args_t *a = r->a;
    data_ref_t old;
    memset(&old, 0, sizeof old);
    wh_status_t s =
        meta_object_rename(st->meta, a->bucket, a->src_key, strlen(a->src_key), a->dst_key,
                           strlen(a->dst_key), a->scond, a->cond, r->fail, &old);
    if (s == WH_OK)
        store_release(st, &old); /* the destination's former object */
    data_ref_clear(&old);
    return s;
}

wh_status_t store_object_rename(store_t *st, const store_rename_args_t *a, data_rename_fail_t *fail)
{
    data_rename_fail_t dummy = DATA_RENAME_OK;
    if (!fail)
        fail = &dummy;
    *fail = DATA_RENAME_OK;
    if (!store_key_valid(a->src_key, strlen(a->src_key)) ||
        !store_key_valid(a->dst_key, strlen(a->dst_key)))
        return WH_ERR_INVALID;
    store_rename_arg_t r = {a, fail};
    return store_run_freeing(st, store_rename_fn, &r);
}
