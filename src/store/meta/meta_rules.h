/* SPDX-License-Identifier: Apache-2.0 */
/* How the rules written once (meta_ver.c, meta_mpu.c, meta_ident.c) reach a backend: its
 * write transactions and its tables of row operations. A backend sets meta_t.rules at open
 * and points the meta_ops_t slots below at these functions, which run the rule in one write
 * transaction of the backend's: the slot's whole code, the same for every backend. */
#ifndef WH_META_META_RULES_H
#define WH_META_META_RULES_H

#include "meta/meta_ident.h"
#include "meta/meta_mpu.h"

typedef struct meta_rules {
    /* Runs fn in one write transaction on a connection of the backend's (retried as it
     * needs: fn starts afresh each time). */
    wh_status_t (*write)(meta_t *m, meta_tx_fn fn, void *arg);
    /* write, for an object or part commit, which the backend may commit with others. */
    wh_status_t (*write_group)(meta_t *m, meta_tx_fn fn, void *arg);
    /* write, for a change to what authorization reads (users, access keys, user policies). */
    wh_status_t (*write_auth)(meta_t *m, meta_tx_fn fn, void *arg);
    const meta_ver_dialect_t *ver;
    const meta_mpu_dialect_t *mpu;
    const meta_ident_dialect_t *ident;
} meta_rules_t;

/* meta_ops_t slots (meta.h says what each answers). */
wh_status_t meta_rules_object_put(meta_t *m, const char *bucket, const char *key, size_t klen,
                                  data_obj_meta_t *meta, const data_ref_t *ref, data_ref_t *old,
                                  data_cond_t *cond);
wh_status_t meta_rules_object_delete(meta_t *m, const char *bucket, const char *key, size_t klen,
                                     data_ref_t *old);
wh_status_t meta_rules_object_delete_version(meta_t *m, const char *bucket, const char *key,
                                             size_t klen, const char *version_id, int bypass,
                                             data_del_cond_t *cond, data_del_result_t *res,
                                             data_ref_t *old);
wh_status_t meta_rules_object_lock_set(meta_t *m, const char *bucket, const char *key, size_t klen,
                                       const char *version_id, const data_lock_set_t *req,
                                       data_obj_meta_t *out);
wh_status_t meta_rules_object_tags_set(meta_t *m, const char *bucket, const char *key, size_t klen,
                                       const char *version_id, const char *tags);
wh_status_t meta_rules_part_put(meta_t *m, const char *bucket, const char *key,
                                const char *upload_id, const data_part_info_t *info,
                                const data_ref_t *ref, data_ref_t *old);
wh_status_t meta_rules_upload_delete(meta_t *m, const char *bucket, const char *key,
                                     const char *upload_id, meta_part_t **parts, size_t *n);
wh_status_t meta_rules_upload_complete(meta_t *m, const char *bucket, const char *key,
                                       const char *upload_id, const meta_part_t *parts, size_t n,
                                       data_obj_meta_t *meta, const data_ref_t *ref,
                                       data_ref_t *old, meta_part_t **all, size_t *n_all,
                                       data_cond_t *cond);
wh_status_t meta_rules_object_rename(meta_t *m, const char *bucket, const char *src, size_t slen,
                                     const char *dst, size_t dlen,
                                     const data_rename_src_cond_t *scond, data_cond_t *cond,
                                     data_rename_fail_t *fail, data_ref_t *old);
wh_status_t meta_rules_object_swap(meta_t *m, const char *bucket, const char *key, size_t klen,
                                   const char *expect_id, data_obj_meta_t *meta,
                                   const data_ref_t *ref, data_ref_t *old);
wh_status_t meta_rules_user_delete(meta_t *m, const char *name, bool force);
wh_status_t meta_rules_key_create(meta_t *m, const meta_access_key_t *k);
wh_status_t meta_rules_user_policy_put(meta_t *m, const char *user, const char *name,
                                       const char *doc);

#endif
