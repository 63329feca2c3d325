/* SPDX-License-Identifier: Apache-2.0 */
/* The metadata table's versions (see store.h): object_put, upload_complete and object_delete
 * follow the bucket's versioning state, read in their transaction. An archived version keeps
 * its chunk map; only a removed version's data comes back in *old. Included by meta.h. */
#ifndef WH_META_META_VERSION_H
#define WH_META_META_VERSION_H

#include "meta/meta.h"

/* One version row of a version scan. */
typedef struct meta_version_row {
    const void *key;
    size_t klen;
    const char *version_id;
    bool latest, delete_marker;
    uint64_t size;
    time_t mtime;
    const char *etag;
} meta_version_row_t;
/* Return 0 to go on, 1 to stop, or a negative wh_status_t. */
typedef int (*meta_version_fn)(void *arg, const meta_version_row_t *row);

typedef struct meta_version_ops meta_version_ops_t;
struct meta_version_ops {
    wh_status_t (*bucket_versioning_get)(meta_t *m, const char *bucket, int *state);
    /* WH_ERR_PRECONDITION: Suspended asked of a bucket with object lock (read in the same
     * transaction; bucket_attr_set of DATA_BATTR_OBJECT_LOCK, for its part, changes only a
     * bucket whose versioning is Enabled, else answers NOT_FOUND). */
    wh_status_t (*bucket_versioning_set)(meta_t *m, const char *bucket, int state);
    /* version_id NULL: the current row, delete markers included (meta->delete_marker). */
    wh_status_t (*object_get_version)(meta_t *m, const char *bucket, const char *key, size_t klen,
                                      const char *version_id, data_obj_meta_t *meta,
                                      data_ref_t *ref);
    /* bypass: STORE_BYPASS_* (data/types.h): what lock the delete may pass over. A version that its
     * lock keeps (a retention or a legal hold, read in the delete's transaction): WH_ERR_AUTH, with
     * res->locked saying why. cond (NULL: none) is checked in the same transaction against the
     * version the delete would remove (data_del_cond_check): WH_ERR_PRECONDITION or NOT_FOUND
     * with cond->failed set, and nothing deleted. */
    wh_status_t (*object_delete_version)(meta_t *m, const char *bucket, const char *key,
                                         size_t klen, const char *version_id, int bypass,
                                         data_del_cond_t *cond, data_del_result_t *res,
                                         data_ref_t *old);
    /* Changes one version's retention and/or legal hold (version_id NULL: the current), in one
     * transaction that checks the change against the lock the version has
     * (data_lock_set_check): WH_ERR_AUTH when refused, NOT_FOUND for no such version or a
     * delete marker. out (may be NULL) gets the version's lock after the change (lock_mode,
     * lock_until, legal_hold, version_id only). */
    wh_status_t (*object_lock_set)(meta_t *m, const char *bucket, const char *key, size_t klen,
                                   const char *version_id, const data_lock_set_t *req,
                                   data_obj_meta_t *out);
    /* Keys from `from` in order (current rows, delete markers included), each followed by
     * its older versions newest first, until fn stops or keys end. */
    wh_status_t (*version_scan)(meta_t *m, const char *bucket, const void *from, size_t flen,
                                bool inclusive, meta_version_fn fn, void *arg);
    wh_status_t (*object_tags_set)(meta_t *m, const char *bucket, const char *key, size_t klen,
                                   const char *version_id, const char *tags);
};

/* S3's listing of versions over version_scan (meta_list.c). */
wh_status_t meta_version_list(meta_t *m, const char *bucket, const data_version_params_t *p,
                              data_version_result_t *out);

static inline wh_status_t meta_bucket_versioning_get(meta_t *m, const char *bucket, int *state)
{
    return META_HAS(m, versions, bucket_versioning_get)
               ? m->ops->versions->bucket_versioning_get(m, bucket, state)
               : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_bucket_versioning_set(meta_t *m, const char *bucket, int state)
{
    return META_HAS(m, versions, bucket_versioning_set)
               ? m->ops->versions->bucket_versioning_set(m, bucket, state)
               : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_object_get_version(meta_t *m, const char *bucket, const char *key,
                                                  size_t klen, const char *version_id,
                                                  data_obj_meta_t *meta, data_ref_t *ref)
{
    return META_HAS(m, versions, object_get_version)
               ? m->ops->versions->object_get_version(m, bucket, key, klen, version_id, meta, ref)
               : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_object_delete_version(meta_t *m, const char *bucket, const char *key,
                                                     size_t klen, const char *version_id,
                                                     int bypass, data_del_cond_t *cond,
                                                     data_del_result_t *res, data_ref_t *old)
{
    return META_HAS(m, versions, object_delete_version)
               ? m->ops->versions->object_delete_version(m, bucket, key, klen, version_id, bypass,
                                                         cond, res, old)
               : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_version_scan(meta_t *m, const char *bucket, const void *from,
                                            size_t flen, bool inclusive, meta_version_fn fn,
                                            void *arg)
{
    return META_HAS(m, versions, version_scan)
               ? m->ops->versions->version_scan(m, bucket, from, flen, inclusive, fn, arg)
               : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_object_lock_set(meta_t *m, const char *bucket, const char *key,
                                               size_t klen, const char *version_id,
                                               const data_lock_set_t *req, data_obj_meta_t *out)
{
    return META_HAS(m, versions, object_lock_set)
               ? m->ops->versions->object_lock_set(m, bucket, key, klen, version_id, req, out)
               : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_object_tags_set(meta_t *m, const char *bucket, const char *key,
                                               size_t klen, const char *version_id,
                                               const char *tags)
{
    return META_HAS(m, versions, object_tags_set)
               ? m->ops->versions->object_tags_set(m, bucket, key, klen, version_id, tags)
               : WH_ERR_UNSUPPORTED;
}

#endif
