/* SPDX-License-Identifier: Apache-2.0 */
/* The metadata table's buckets and objects: their rows, ACLs, policies and configurations,
 * the key-ordered scan and S3's listing over it. Included by meta.h; see it for the contract. */
#ifndef WH_META_META_BUCKET_H
#define WH_META_META_BUCKET_H

#include "meta/meta.h"

/* One row of a listing scan. Return 0 to go on, 1 to stop, or a negative wh_status_t. */
typedef int (*meta_scan_fn)(void *arg, const void *key, size_t klen, uint64_t size, time_t mtime,
                            const char *etag, const char *owner);

typedef struct meta_object_ops meta_object_ops_t;
struct meta_object_ops {
    /* owner: canonical id ("" = root); acl: the serialised ACL text or NULL. EXISTS. */
    wh_status_t (*bucket_create)(meta_t *m, const char *name, time_t created, const char *owner,
                                 const char *acl);
    /* NOT_FOUND; NOT_EMPTY while it holds objects. Its incomplete uploads are dropped with
     * it, as S3 does: *parts gets their parts (data to release; free with meta_parts_free). */
    wh_status_t (*bucket_delete)(meta_t *m, const char *name, meta_part_t **parts, size_t *n);
    wh_status_t (*bucket_exists)(meta_t *m, const char *name);
    wh_status_t (*bucket_list)(meta_t *m, data_bucket_info_t **out, size_t *n);
    /* Owner, ACL and policy of a bucket (free with data_bucket_auth_free). NOT_FOUND. */
    wh_status_t (*bucket_auth_get)(meta_t *m, const char *name, data_bucket_auth_t *out);
    /* NULL acl or policy: none (the default ACL / no policy). NOT_FOUND: no such bucket. */
    wh_status_t (*bucket_set_acl)(meta_t *m, const char *name, const char *acl);
    wh_status_t (*bucket_set_policy)(meta_t *m, const char *name, const char *policy);
    /* A bucket configuration (data_battr_t): value NULL removes it (PAB and OWNERSHIP: back
     * to 0). NOT_FOUND: no such bucket. */
    wh_status_t (*bucket_attr_set)(meta_t *m, const char *name, data_battr_t which,
                                   const char *value);
    /* *out malloc'd, NULL when unset (PAB and OWNERSHIP: always set, "0" by default).
     * NOT_FOUND: no such bucket. */
    wh_status_t (*bucket_attr_get)(meta_t *m, const char *name, data_battr_t which, char **out);
    /* NOT_FOUND: no such bucket or key. */
    wh_status_t (*object_set_acl)(meta_t *m, const char *bucket, const char *key, size_t klen,
                                  const char *acl);
    /* meta and ref may be NULL. ref->chunks malloc'd. NOT_FOUND: no such bucket or key. */
    wh_status_t (*object_get)(meta_t *m, const char *bucket, const char *key, size_t klen,
                              data_obj_meta_t *meta, data_ref_t *ref);
    /* Inserts or replaces; *old gets the replaced reference ("" if none). NOT_FOUND: bucket.
     * cond (NULL: none) is checked in the same transaction (meta_cond_check). */
    wh_status_t (*object_put)(meta_t *m, const char *bucket, const char *key, size_t klen,
                              data_obj_meta_t *meta, const data_ref_t *ref, data_ref_t *old,
                              data_cond_t *cond);
    /* RenameObject: in one transaction the current object of src becomes the current object
     * of dst (same bucket), its bytes, metadata and ETag unmoved; dst's former object goes to
     * *old (data to release). Only in a bucket whose versioning is off (else UNSUPPORTED).
     * scond against the source, cond against the destination (meta_cond_check); *fail says
     * what refused it (data_rename_fail_t). src == dst: the checks, then nothing. */
    wh_status_t (*object_rename)(meta_t *m, const char *bucket, const char *src, size_t slen,
                                 const char *dst, size_t dlen, const data_rename_src_cond_t *scond,
                                 data_cond_t *cond, data_rename_fail_t *fail, data_ref_t *old);
    /* An append's commit (S3 Express's x-amz-write-offset-bytes): in one transaction, the key's
     * current object must still be the one whose data id is expect_id (else PRECONDITION: a
     * racing write got there first), not locked (AUTH), in a bucket whose versioning is off
     * (else UNSUPPORTED); it is then replaced by meta/ref, whose bytes reuse the old object's
     * extents: *old (its reference, chunk map dropped) is NOT to be released by the caller. */
    wh_status_t (*object_swap)(meta_t *m, const char *bucket, const char *key, size_t klen,
                               const char *expect_id, data_obj_meta_t *meta, const data_ref_t *ref,
                               data_ref_t *old);
    /* *old "" when there was no such key (WH_OK: idempotent). NOT_FOUND: bucket. */
    wh_status_t (*object_delete)(meta_t *m, const char *bucket, const char *key, size_t klen,
                                 data_ref_t *old);
    /* Rows of bucket in key order from `from` (inclusive or not) until fn stops or keys end.
     * Delete markers are not rows of this scan (ListObjects does not show them). */
    wh_status_t (*object_scan)(meta_t *m, const char *bucket, const void *from, size_t flen,
                               bool inclusive, meta_scan_fn fn, void *arg);
    /* WH_OK if an object or part row refers to data id, itself or as a chunk of its chunk
     * map (a composed multipart object's extents), WH_ERR_NOT_FOUND if none does. */
    wh_status_t (*data_referenced)(meta_t *m, const char *id);
};

wh_status_t meta_cached_bucket_auth_get(meta_t *m, const char *bucket, data_bucket_auth_t *out);

/* S3 listing over object_scan (meta_list.c). */
wh_status_t meta_object_list(meta_t *m, const char *bucket, const data_list_params_t *p,
                             data_list_result_t *out);

static inline wh_status_t meta_bucket_create(meta_t *m, const char *name, time_t created,
                                             const char *owner, const char *acl)
{
    return META_HAS(m, objects, bucket_create)
               ? m->ops->objects->bucket_create(m, name, created, owner, acl)
               : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_bucket_delete(meta_t *m, const char *name, meta_part_t **parts,
                                             size_t *n)
{
    return META_HAS(m, objects, bucket_delete) ? m->ops->objects->bucket_delete(m, name, parts, n)
                                               : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_bucket_exists(meta_t *m, const char *name)
{
    return META_HAS(m, objects, bucket_exists) ? m->ops->objects->bucket_exists(m, name)
                                               : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_bucket_list(meta_t *m, data_bucket_info_t **out, size_t *n)
{
    return META_HAS(m, objects, bucket_list) ? m->ops->objects->bucket_list(m, out, n)
                                             : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_bucket_auth_get(meta_t *m, const char *name, data_bucket_auth_t *out)
{
    return meta_cached_bucket_auth_get(m, name, out);
}

static inline wh_status_t meta_bucket_set_acl(meta_t *m, const char *name, const char *acl)
{
    return META_HAS(m, objects, bucket_set_acl) ? m->ops->objects->bucket_set_acl(m, name, acl)
                                                : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_bucket_set_policy(meta_t *m, const char *name, const char *policy)
{
    return META_HAS(m, objects, bucket_set_policy)
               ? m->ops->objects->bucket_set_policy(m, name, policy)
               : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_bucket_attr_set(meta_t *m, const char *name, data_battr_t which,
                                               const char *value)
{
    return META_HAS(m, objects, bucket_attr_set)
               ? m->ops->objects->bucket_attr_set(m, name, which, value)
               : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_bucket_attr_get(meta_t *m, const char *name, data_battr_t which,
                                               char **out)
{
    return META_HAS(m, objects, bucket_attr_get)
               ? m->ops->objects->bucket_attr_get(m, name, which, out)
               : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_object_set_acl(meta_t *m, const char *bucket, const char *key,
                                              size_t klen, const char *acl)
{
    return META_HAS(m, objects, object_set_acl)
               ? m->ops->objects->object_set_acl(m, bucket, key, klen, acl)
               : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_object_get(meta_t *m, const char *bucket, const char *key,
                                          size_t klen, data_obj_meta_t *meta, data_ref_t *ref)
{
    return META_HAS(m, objects, object_get)
               ? m->ops->objects->object_get(m, bucket, key, klen, meta, ref)
               : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_object_put(meta_t *m, const char *bucket, const char *key,
                                          size_t klen, data_obj_meta_t *meta, const data_ref_t *ref,
                                          data_ref_t *old, data_cond_t *cond)
{
    return META_HAS(m, objects, object_put)
               ? m->ops->objects->object_put(m, bucket, key, klen, meta, ref, old, cond)
               : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_object_rename(meta_t *m, const char *bucket, const char *src,
                                             size_t slen, const char *dst, size_t dlen,
                                             const data_rename_src_cond_t *scond, data_cond_t *cond,
                                             data_rename_fail_t *fail, data_ref_t *old)
{
    return META_HAS(m, objects, object_rename)
               ? m->ops->objects->object_rename(m, bucket, src, slen, dst, dlen, scond, cond, fail,
                                                old)
               : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_object_swap(meta_t *m, const char *bucket, const char *key,
                                           size_t klen, const char *expect_id,
                                           data_obj_meta_t *meta, const data_ref_t *ref,
                                           data_ref_t *old)
{
    return META_HAS(m, objects, object_swap)
               ? m->ops->objects->object_swap(m, bucket, key, klen, expect_id, meta, ref, old)
               : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_object_delete(meta_t *m, const char *bucket, const char *key,
                                             size_t klen, data_ref_t *old)
{
    return META_HAS(m, objects, object_delete)
               ? m->ops->objects->object_delete(m, bucket, key, klen, old)
               : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_object_scan(meta_t *m, const char *bucket, const void *from,
                                           size_t flen, bool inclusive, meta_scan_fn fn, void *arg)
{
    return META_HAS(m, objects, object_scan)
               ? m->ops->objects->object_scan(m, bucket, from, flen, inclusive, fn, arg)
               : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_data_referenced(meta_t *m, const char *id)
{
    return META_HAS(m, objects, data_referenced) ? m->ops->objects->data_referenced(m, id)
                                                 : WH_ERR_UNSUPPORTED;
}

#endif
