/* SPDX-License-Identifier: Apache-2.0 */
/* The metadata table's multipart uploads and their parts. Included by meta.h. */
#ifndef WH_META_META_UPLOAD_H
#define WH_META_META_UPLOAD_H

#include "meta/meta.h"

typedef struct meta_upload_ops meta_upload_ops_t;
struct meta_upload_ops {
    /* The upload row keeps the object's content type and user metadata until completion. */
    wh_status_t (*upload_create)(meta_t *m, const char *bucket, const char *key,
                                 const char *upload_id, const data_obj_meta_t *meta,
                                 time_t initiated);
    wh_status_t (*upload_get)(meta_t *m, const char *bucket, const char *key, const char *upload_id,
                              data_obj_meta_t *meta);
    wh_status_t (*part_put)(meta_t *m, const char *bucket, const char *key, const char *upload_id,
                            const data_part_info_t *info, const data_ref_t *ref, data_ref_t *old);
    /* Numbers > marker in order, at most max (0 = all); free with meta_parts_free. */
    wh_status_t (*part_list)(meta_t *m, const char *bucket, const char *key, const char *upload_id,
                             uint32_t marker, uint32_t max, meta_part_t **out, size_t *n,
                             bool *truncated);
    /* Drops the upload and its parts; *parts receives them (their data to release). */
    wh_status_t (*upload_delete)(meta_t *m, const char *bucket, const char *key,
                                 const char *upload_id, meta_part_t **parts, size_t *n);
    /* Atomically: the upload exists, each parts[i].info.number still maps to parts[i].ref.id
     * (else WH_ERR_PRECONDITION), the object row is upserted with ref, and the upload and its
     * parts are dropped. *all gets every part (data to release unless ref reuses it: a chunked
     * table that completes by reference shares chunk ids, which are then not released).
     * cond as object_put's, checked after the parts. */
    wh_status_t (*upload_complete)(meta_t *m, const char *bucket, const char *key,
                                   const char *upload_id, const meta_part_t *parts, size_t n,
                                   data_obj_meta_t *meta, const data_ref_t *ref, data_ref_t *old,
                                   meta_part_t **all, size_t *n_all, data_cond_t *cond);
    /* page NULL: every upload under prefix; else that page (a ListMultipartUploads page
     * reads only the rows it shows, and the one past them). */
    wh_status_t (*upload_list)(meta_t *m, const char *bucket, const char *prefix,
                               const data_upload_page_t *page, data_upload_info_t **out, size_t *n);
    /* The bucket's incomplete uploads (for the per-bucket cap). */
    wh_status_t (*upload_count)(meta_t *m, const char *bucket, uint64_t *n);
};

static inline wh_status_t meta_upload_create(meta_t *m, const char *bucket, const char *key,
                                             const char *upload_id, const data_obj_meta_t *meta,
                                             time_t initiated)
{
    return META_HAS(m, uploads, upload_create)
               ? m->ops->uploads->upload_create(m, bucket, key, upload_id, meta, initiated)
               : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_upload_get(meta_t *m, const char *bucket, const char *key,
                                          const char *upload_id, data_obj_meta_t *meta)
{
    return META_HAS(m, uploads, upload_get)
               ? m->ops->uploads->upload_get(m, bucket, key, upload_id, meta)
               : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_part_put(meta_t *m, const char *bucket, const char *key,
                                        const char *upload_id, const data_part_info_t *info,
                                        const data_ref_t *ref, data_ref_t *old)
{
    return META_HAS(m, uploads, part_put)
               ? m->ops->uploads->part_put(m, bucket, key, upload_id, info, ref, old)
               : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_part_list(meta_t *m, const char *bucket, const char *key,
                                         const char *upload_id, uint32_t marker, uint32_t max,
                                         meta_part_t **out, size_t *n, bool *truncated)
{
    return META_HAS(m, uploads, part_list)
               ? m->ops->uploads->part_list(m, bucket, key, upload_id, marker, max, out, n,
                                            truncated)
               : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_upload_delete(meta_t *m, const char *bucket, const char *key,
                                             const char *upload_id, meta_part_t **parts, size_t *n)
{
    return META_HAS(m, uploads, upload_delete)
               ? m->ops->uploads->upload_delete(m, bucket, key, upload_id, parts, n)
               : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_upload_complete(meta_t *m, const char *bucket, const char *key,
                                               const char *upload_id, const meta_part_t *parts,
                                               size_t n, data_obj_meta_t *meta,
                                               const data_ref_t *ref, data_ref_t *old,
                                               meta_part_t **all, size_t *n_all, data_cond_t *cond)
{
    return META_HAS(m, uploads, upload_complete)
               ? m->ops->uploads->upload_complete(m, bucket, key, upload_id, parts, n, meta, ref,
                                                  old, all, n_all, cond)
               : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_upload_list(meta_t *m, const char *bucket, const char *prefix,
                                           const data_upload_page_t *page, data_upload_info_t **out,
                                           size_t *n)
{
    return META_HAS(m, uploads, upload_list)
               ? m->ops->uploads->upload_list(m, bucket, prefix, page, out, n)
               : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_upload_count(meta_t *m, const char *bucket, uint64_t *n)
{
    return META_HAS(m, uploads, upload_count) ? m->ops->uploads->upload_count(m, bucket, n)
                                              : WH_ERR_UNSUPPORTED;
}

#endif
