/* SPDX-License-Identifier: Apache-2.0 */
/* The versioning rules of the metadata table, written once for every backend (meta_ver.c):
 * the state machine of a commit (Off, Enabled, Suspended: archive, replace or remove the
 * current version and an older null version), delete markers, the delete of one version with
 * the promotion of the next newest, the conditional and Object Lock checks of both, and a
 * version's tags and lock changes (retention, legal hold), each in the caller's write
 * transaction.
 *
 * A backend gives the rules a meta_ver_dialect_t: the few row operations they are made of,
 * each one statement (or two) of its own SQL dialect, run on the transaction's connection
 * (conn, the backend's own). The rules never see SQL; the backends never decide what a state
 * does. The meta_ops_t slots that run the rules in a transaction are meta_rules.h's. */
#ifndef WH_META_META_VER_H
#define WH_META_META_VER_H

#include "meta/meta.h"

/* The key's current row, as a commit needs it. */
typedef struct meta_cur {
    bool exists, dm;
    char vid[DATA_VERSION_ID_MAX];
    int64_t seq;
    char etag[80];
    int lock_mode;
    int64_t lock_until;
    bool hold;
} meta_cur_t;

/* The lock check of a transaction that would destroy a version: what may be bypassed, and
 * where a refusal says why (res may be NULL). */
typedef struct meta_lockchk {
    int bypass;
    int64_t now;
    data_del_result_t *res;
} meta_lockchk_t;

/* WH_ERR_AUTH (res filled) when the version's lock forbids destroying it. */
static inline wh_status_t meta_lockchk_refuse(const meta_lockchk_t *k, int mode, int64_t until,
                                              bool hold)
{
    return meta_lock_refuse(k->bypass, k->now, k->res, mode, until, hold);
}

typedef struct meta_ver_dialect {
    /* The bucket's versioning state; NOT_FOUND: no such bucket. */
    wh_status_t (*versioning)(void *conn, const char *bucket, int *state);
    /* The key's current row (cur->exists false: none). */
    wh_status_t (*cur)(void *conn, const char *bucket, const char *key, size_t klen,
                       meta_cur_t *cur);
    /* A version of the key for a delete's condition (vid NULL: the current row, delete markers
     * included; else that version, current or older). NOT_FOUND: none. */
    wh_status_t (*version_get)(void *conn, const char *bucket, const char *key, size_t klen,
                               const char *vid, data_obj_meta_t *meta);
    /* Copies the current row into the older versions (it stays current until replaced). */
    wh_status_t (*archive)(void *conn, const char *bucket, const char *key, size_t klen);
    /* The current row's data into *old, its chunk map dropped: the row is being replaced. */
    wh_status_t (*cur_release)(void *conn, const char *bucket, const char *key, size_t klen,
                               data_ref_t *old);
    /* Removes the older version vid: its data into *old (chunk map dropped), *found false
     * when there is none, *dm (may be NULL) whether it was a delete marker. WH_ERR_AUTH when
     * its lock forbids it (chk), and nothing removed. */
    wh_status_t (*ver_take)(void *conn, const char *bucket, const char *key, size_t klen,
                            const char *vid, const meta_lockchk_t *chk, data_ref_t *old,
                            bool *found, bool *dm);
    /* Inserts or replaces the current row. */
    wh_status_t (*obj_upsert)(void *conn, const char *bucket, const char *key, size_t klen,
                              const data_obj_meta_t *meta, const data_ref_t *ref, int64_t seq);
    /* Deletes the current row. */
    wh_status_t (*obj_delete)(void *conn, const char *bucket, const char *key, size_t klen);
    /* The newest older version (if any) leaves the versions and becomes the current row. */
    wh_status_t (*ver_promote)(void *conn, const char *bucket, const char *key, size_t klen);
    /* Sets the tags (NULL: none) of the version vid (NULL: the current row) unless it is a
     * delete marker; *changed whether a row was. */
    wh_status_t (*tags_put)(void *conn, const char *bucket, const char *key, size_t klen,
                            const char *vid, const char *tags, bool *changed);
    /* The older version vid's delete-marker flag and lock (into dm, lock_mode, lock_until,
     * hold of *lk). NOT_FOUND: none. */
    wh_status_t (*ver_lock_get)(void *conn, const char *bucket, const char *key, size_t klen,
                                const char *vid, meta_cur_t *lk);
    /* Sets the lock of the version vid (NULL: the current row) unless it is a delete marker. */
    wh_status_t (*lock_put)(void *conn, const char *bucket, const char *key, size_t klen,
                            const char *vid, int mode, int64_t until, bool hold);
    /* The current row of key becomes the current row of dst (no row there: the rule made
     * room), everything in it kept: its data id, so its bytes and chunk map stay as they are. */
    wh_status_t (*obj_rekey)(void *conn, const char *bucket, const char *key, size_t klen,
                             const char *dst, size_t dlen);
} meta_ver_dialect_t;

/* The versioning-aware commit of a new current row (PUT, completion): checks cond (a delete
 * marker is no object to it), archives or replaces the current version as the bucket's state
 * says, sets meta->version_id; *old gets the data to release. In a write transaction. */
wh_status_t meta_ver_commit(const meta_ver_dialect_t *d, void *conn, const char *bucket,
                            const char *key, size_t klen, data_obj_meta_t *meta,
                            const data_ref_t *ref, data_ref_t *old, data_cond_t *cond);

#endif
