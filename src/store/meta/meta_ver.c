/* SPDX-License-Identifier: Apache-2.0 */
/* The versioning rules, once for every backend (meta_ver.h). Invariant the rules keep: a key
 * with older versions has a current row (removing the current version promotes the next
 * newest), so a scan of the current rows visits every key that has any version. An archived
 * version keeps its chunk map; only a removed version's data comes back in *old. */
#include "meta/meta_rules.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

/* Makes room for a new current version of the key (an object or a delete marker): archives
 * the current one (Enabled, or Suspended over a non-null version) or lets it go (the null
 * version is replaced), and under Suspended removes an older null version. Fills vid. */
static wh_status_t meta_ver_make_room(const meta_ver_dialect_t *d, void *c, const char *bucket,
                                      const char *key, size_t klen, int state,
                                      const meta_cur_t *cur, int64_t seq, char *vid,
                                      data_ref_t *old)
{
    data_ref_clear(old);
    wh_status_t st = WH_OK;
    if (state == DATA_VERSIONING_ENABLED) {
        if ((st = meta_version_id_new((uint64_t)seq, vid)) != WH_OK)
            return st;
        return cur->exists ? d->archive(c, bucket, key, klen) : WH_OK;
    }
    snprintf(vid, DATA_VERSION_ID_MAX, "null");
    if (!cur->exists)
        return WH_OK;
    /* The null version is about to be replaced: never one that is locked (a bucket with
     * object lock keeps versioning Enabled, so this holds only for rows of another state). */
    meta_lockchk_t chk = {DATA_BYPASS_NONE, (int64_t)time(NULL), NULL};
    if (strcmp(cur->vid, "null") == 0)
        return (st = meta_lockchk_refuse(&chk, cur->lock_mode, cur->lock_until, cur->hold)) != WH_OK
                   ? st
                   : d->cur_release(c, bucket, key, klen, old);
    if ((st = d->archive(c, bucket, key, klen)) != WH_OK)
        return st;
    bool found;
    return d->ver_take(c, bucket, key, klen, "null", &chk, old, &found, NULL);
}

wh_status_t meta_ver_commit(const meta_ver_dialect_t *d, void *c, const char *bucket,
                            const char *key, size_t klen, data_obj_meta_t *meta,
                            const data_ref_t *ref, data_ref_t *old, data_cond_t *cond)
{
    int state = 0;
    meta_cur_t cur;
    wh_status_t st = d->versioning(c, bucket, &state);
    if (st == WH_OK)
        st = d->cur(c, bucket, key, klen, &cur);
    if (st == WH_OK) /* a delete marker is no object to If-None-Match or If-Match */
        st = meta_cond_check(cond, cur.exists && !cur.dm, cur.etag);
    if (st != WH_OK)
        return st;
    int64_t seq = (int64_t)meta_version_seq_next(cur.exists ? (uint64_t)cur.seq : 0);
    meta->delete_marker = false;
    st = meta_ver_make_room(d, c, bucket, key, klen, state, &cur, seq, meta->version_id, old);
    return st == WH_OK ? d->obj_upsert(c, bucket, key, klen, meta, ref, seq) : st;
}

/* The object_delete_version slot's transaction. */
typedef struct meta_vdel {
    const char *bucket, *key, *vid;
    size_t klen;
    int bypass;
    data_del_cond_t *cond;
    data_del_result_t *res;
    data_ref_t *old;
} meta_vdel_t;

/* The delete's condition against the version it would remove, read in the delete's own
 * transaction: no overwrite can come between the check and the delete (SQLite: the writer's
 * lock; PostgreSQL: SERIALIZABLE, an overwrite committed meanwhile makes one of the two
 * retry). */
static wh_status_t meta_ver_del_cond(const meta_ver_dialect_t *d, void *c, const meta_vdel_t *a)
{
    if (!a->cond)
        return WH_OK;
    data_obj_meta_t m;
    memset(&m, 0, sizeof m);
    wh_status_t st = d->version_get(c, a->bucket, a->key, a->klen, a->vid, &m);
    if (st == WH_OK || st == WH_ERR_NOT_FOUND)
        st = data_del_cond_check(a->cond, st == WH_OK ? &m : NULL);
    data_obj_meta_free(&m);
    return st;
}

static wh_status_t meta_ver_delete(const meta_ver_dialect_t *d, void *c, meta_vdel_t *a)
{
    data_del_result_t *res = a->res;
    memset(res, 0, sizeof *res);
    data_ref_clear(a->old);
    int state = 0;
    meta_cur_t cur;
    wh_status_t st = d->versioning(c, a->bucket, &state);
    if (st == WH_OK)
        st = d->cur(c, a->bucket, a->key, a->klen, &cur);
    if (st == WH_OK)
        st = meta_ver_del_cond(d, c, a);
    if (st != WH_OK)
        return st;
    /* The lock of the version this would destroy is read here, in the delete's own write
     * transaction: a PutObjectRetention or legal hold cannot slip in between. */
    meta_lockchk_t chk = {a->bypass, (int64_t)time(NULL), res};
    if (!a->vid && state == DATA_VERSIONING_OFF) {
        if (!cur.exists)
            return WH_OK; /* nothing to delete: idempotent */
        if ((st = meta_lockchk_refuse(&chk, cur.lock_mode, cur.lock_until, cur.hold)) != WH_OK ||
            (st = d->cur_release(c, a->bucket, a->key, a->klen, a->old)) != WH_OK)
            return st;
        return d->obj_delete(c, a->bucket, a->key, a->klen);
    }
    if (!a->vid) {
        /* A delete marker becomes the current version. */
        int64_t seq = (int64_t)meta_version_seq_next(cur.exists ? (uint64_t)cur.seq : 0);
        data_obj_meta_t dm;
        memset(&dm, 0, sizeof dm);
        dm.mtime = time(NULL);
        dm.delete_marker = true;
        st = meta_ver_make_room(d, c, a->bucket, a->key, a->klen, state, &cur, seq, dm.version_id,
                                a->old);
        data_ref_t none;
        memset(&none, 0, sizeof none);
        if (st == WH_OK)
            st = d->obj_upsert(c, a->bucket, a->key, a->klen, &dm, &none, seq);
        snprintf(res->version_id, sizeof res->version_id, "%s", dm.version_id);
        res->delete_marker = true;
        return st;
    }
    snprintf(res->version_id, sizeof res->version_id, "%s", a->vid);
    if (cur.exists && strcmp(cur.vid, a->vid) == 0) {
        /* The current version goes; the next newest (if any) becomes current. */
        res->delete_marker = cur.dm;
        if ((st = meta_lockchk_refuse(&chk, cur.lock_mode, cur.lock_until, cur.hold)) != WH_OK ||
            (st = d->cur_release(c, a->bucket, a->key, a->klen, a->old)) != WH_OK ||
            (st = d->obj_delete(c, a->bucket, a->key, a->klen)) != WH_OK)
            return st;
        return d->ver_promote(c, a->bucket, a->key, a->klen);
    }
    bool found = false;
    st = d->ver_take(c, a->bucket, a->key, a->klen, a->vid, &chk, a->old, &found,
                     &res->delete_marker);
    if (st == WH_OK && !found)
        res->version_id[0] = '\0'; /* no such version: nothing deleted (idempotent) */
    return st;
}

/* The object_tags_set slot's transaction: the version vid (NULL: the current one) gets tags;
 * NOT_FOUND for no such bucket, version, or a delete marker. */
static wh_status_t meta_ver_tags_set(const meta_ver_dialect_t *d, void *c, const char *bucket,
                                     const char *key, size_t klen, const char *vid,
                                     const char *tags)
{
    int state = 0; /* read for the bucket's existence */
    meta_cur_t cur;
    wh_status_t st = d->versioning(c, bucket, &state);
    if (st == WH_OK)
        st = d->cur(c, bucket, key, klen, &cur);
    if (st != WH_OK)
        return st;
    bool on_cur = !vid || (cur.exists && strcmp(cur.vid, vid) == 0);
    bool changed = false;
    st = d->tags_put(c, bucket, key, klen, on_cur ? NULL : vid, tags, &changed);
    return st == WH_OK && !changed ? WH_ERR_NOT_FOUND : st;
}

/* The object_lock_set slot's transaction: the change is checked against the lock the version
 * has now, read in the same transaction (a delete cannot slip in between). */
static wh_status_t meta_ver_lock_set(const meta_ver_dialect_t *d, void *c, const char *bucket,
                                     const char *key, size_t klen, const char *vid,
                                     const data_lock_set_t *req, data_obj_meta_t *out)
{
    int state = 0; /* read for the bucket's existence */
    meta_cur_t cur, lk;
    wh_status_t st = d->versioning(c, bucket, &state);
    if (st == WH_OK)
        st = d->cur(c, bucket, key, klen, &cur);
    if (st != WH_OK)
        return st;
    bool on_cur = cur.exists && (!vid || strcmp(cur.vid, vid) == 0);
    if (on_cur) {
        lk = cur;
    } else {
        if (!vid)
            return WH_ERR_NOT_FOUND;
        memset(&lk, 0, sizeof lk);
        if ((st = d->ver_lock_get(c, bucket, key, klen, vid, &lk)) != WH_OK)
            return st;
    }
    if (lk.dm)
        return WH_ERR_NOT_FOUND;
    int mode = lk.lock_mode;
    int64_t until = lk.lock_until;
    bool hold = lk.hold;
    if ((st = meta_lock_change(req, &mode, &until, &hold)) != WH_OK ||
        (st = d->lock_put(c, bucket, key, klen, on_cur ? NULL : vid, mode, until, hold)) != WH_OK)
        return st;
    if (out) {
        out->lock_mode = mode;
        out->lock_until = until;
        out->legal_hold = hold;
        snprintf(out->version_id, sizeof out->version_id, "%s", on_cur ? cur.vid : vid);
    }
    return WH_OK;
}

/* ---- the slots: each rule in one write transaction of the backend's ---- */

typedef struct {
    const char *bucket, *key;
    size_t klen;
    data_obj_meta_t *meta;
    const data_ref_t *ref;
    data_ref_t *old;
    data_cond_t *cond;
    const char *vid, *tags;
    const data_lock_set_t *req;
    data_obj_meta_t *out;
    const meta_ver_dialect_t *d;
} meta_ver_arg_t;

static wh_status_t tx_object_put(void *conn, void *arg)
{
    meta_ver_arg_t *a = arg;
    return meta_ver_commit(a->d, conn, a->bucket, a->key, a->klen, a->meta, a->ref, a->old,
                           a->cond);
}

wh_status_t meta_rules_object_put(meta_t *m, const char *bucket, const char *key, size_t klen,
                                  data_obj_meta_t *meta, const data_ref_t *ref, data_ref_t *old,
                                  data_cond_t *cond)
{
    meta_ver_arg_t a = {.bucket = bucket,
                        .key = key,
                        .klen = klen,
                        .meta = meta,
                        .ref = ref,
                        .old = old,
                        .cond = cond,
                        .d = m->rules->ver};
    memset(old, 0, sizeof *old);
    wh_status_t st = m->rules->write_group(m, tx_object_put, &a);
    if (st != WH_OK)
        data_ref_clear(old);
    return st;
}

typedef struct {
    meta_vdel_t v;
    const meta_ver_dialect_t *d;
} meta_vdel_arg_t;

static wh_status_t tx_delete_version(void *conn, void *arg)
{
    meta_vdel_arg_t *a = arg;
    return meta_ver_delete(a->d, conn, &a->v);
}

wh_status_t meta_rules_object_delete_version(meta_t *m, const char *bucket, const char *key,
                                             size_t klen, const char *version_id, int bypass,
                                             data_del_cond_t *cond, data_del_result_t *res,
                                             data_ref_t *old)
{
    data_del_result_t dummy;
    meta_vdel_arg_t a = {{bucket, key, version_id, klen, bypass, cond, res ? res : &dummy, old},
                         m->rules->ver};
    memset(old, 0, sizeof *old);
    wh_status_t st = m->rules->write(m, tx_delete_version, &a);
    if (st != WH_OK)
        data_ref_clear(old);
    return st;
}

/* S3's DELETE of a key: what it does follows the bucket's versioning. */
wh_status_t meta_rules_object_delete(meta_t *m, const char *bucket, const char *key, size_t klen,
                                     data_ref_t *old)
{
    return meta_rules_object_delete_version(m, bucket, key, klen, NULL, DATA_BYPASS_NONE, NULL,
                                            NULL, old);
}

static wh_status_t tx_tags_set(void *conn, void *arg)
{
    meta_ver_arg_t *a = arg;
    return meta_ver_tags_set(a->d, conn, a->bucket, a->key, a->klen, a->vid, a->tags);
}

wh_status_t meta_rules_object_tags_set(meta_t *m, const char *bucket, const char *key, size_t klen,
                                       const char *version_id, const char *tags)
{
    meta_ver_arg_t a = {.bucket = bucket,
                        .key = key,
                        .klen = klen,
                        .vid = version_id,
                        .tags = tags,
                        .d = m->rules->ver};
    return m->rules->write(m, tx_tags_set, &a);
}

static wh_status_t tx_lock_set(void *conn, void *arg)
{
    meta_ver_arg_t *a = arg;
    return meta_ver_lock_set(a->d, conn, a->bucket, a->key, a->klen, a->vid, a->req, a->out);
}

wh_status_t meta_rules_object_lock_set(meta_t *m, const char *bucket, const char *key, size_t klen,
                                       const char *version_id, const data_lock_set_t *req,
                                       data_obj_meta_t *out)
{
    meta_ver_arg_t a = {.bucket = bucket,
                        .key = key,
                        .klen = klen,
                        .vid = version_id,
                        .req = req,
                        .out = out,
                        .d = m->rules->ver};
    return m->rules->write(m, tx_lock_set, &a);
}
