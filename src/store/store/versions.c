/* SPDX-License-Identifier: Apache-2.0 */
/* The storage engine's versions (store.h, "versions"): bucket versioning state, version ids,
 * tags. Reads, deletes and copies of any version are in store.c (a version id is a field of
 * their argument structs); the version listing is the metadata table's (meta_version_list). */
#include "base/log.h"
#include "store/store_int.h"

#include <stdlib.h>
#include <string.h>

bool store_version_id_valid(const char *v)
{
    if (!v)
        return false;
    if (strcmp(v, "null") == 0)
        return true;
    size_t n = strlen(v);
    if (n != 32)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((v[i] >= '0' && v[i] <= '9') || (v[i] >= 'a' && v[i] <= 'f')))
            return false;
    return true;
}

wh_status_t store_bucket_versioning_get(store_t *st, const char *bucket, data_versioning_t *out)
{
    int v = 0;
    wh_status_t s = meta_bucket_versioning_get(st->meta, bucket, &v);
    if (s == WH_OK)
        *out = v == DATA_VERSIONING_ENABLED     ? DATA_VERSIONING_ENABLED
               : v == DATA_VERSIONING_SUSPENDED ? DATA_VERSIONING_SUSPENDED
                                                : DATA_VERSIONING_OFF;
    return s;
}

wh_status_t store_bucket_versioning_set(store_t *st, const char *bucket, data_versioning_t v)
{
    if (v != DATA_VERSIONING_ENABLED && v != DATA_VERSIONING_SUSPENDED)
        return WH_ERR_INVALID; /* S3 never turns versioning off once it was on */
    return meta_bucket_versioning_set(st->meta, bucket, (int)v);
}

wh_status_t store_object_tags_set(store_t *st, const char *bucket, const char *key,
                                  const char *version_id, const char *tags)
{
    return meta_object_tags_set(st->meta, bucket, key, strlen(key), version_id, tags);
}

wh_status_t store_version_list(store_t *st, const char *bucket, const data_version_params_t *p,
                               data_version_result_t *out)
{
    return meta_version_list(st->meta, bucket, p, out);
}

wh_status_t store_object_lock_set(store_t *st, const char *bucket, const char *key,
                                  const char *version_id, const data_lock_set_t *req,
                                  data_obj_meta_t *out)
{
    return meta_object_lock_set(st->meta, bucket, key, strlen(key), version_id, req, out);
}
