/* SPDX-License-Identifier: Apache-2.0 */
/* SQLite metadata backend: versions. The objects table holds each key's current version (a
 * delete marker included), the versions table the older ones; a commit archives, replaces or
 * removes rows as the bucket's versioning says, in its own write transaction. Invariant: a
 * key with older versions has a current row (removing the current version promotes the next
 * newest), so a scan of the objects table visits every key that has any version. */
#include "base/log.h"
#include "meta_sqlite/meta_sqlite_int.h"
#include "meta/meta_rules.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void sq_bind_obj(sqlite3_stmt *s, const char *bucket, const char *key, size_t klen)
{
    sq_bind_text(s, 1, bucket);
    sq_bind_key(s, 2, key, klen);
}

static wh_status_t sq_versioning(void *conn, const char *bucket, int *state)
{
    sq_conn_t *c = conn;
    sqlite3_stmt *s = c->stmt[S_VERSIONING_GET];
    sq_bind_text(s, 1, bucket);
    int rc = sqlite3_step(s);
    wh_status_t st = rc == SQLITE_ROW    ? WH_OK
                     : rc == SQLITE_DONE ? WH_ERR_NOT_FOUND
                                         : sq_fail(c, rc, "bucket versioning lookup");
    if (st == WH_OK)
        *state = sqlite3_column_int(s, 0);
    sq_done(s);
    return st;
}

static wh_status_t sq_cur(void *conn, const char *bucket, const char *key, size_t klen,
                          meta_cur_t *cur)
{
    sq_conn_t *c = conn;
    memset(cur, 0, sizeof *cur);
    sqlite3_stmt *s = c->stmt[S_OBJ_CUR];
    sq_bind_obj(s, bucket, key, klen);
    int rc = sqlite3_step(s);
    wh_status_t st = WH_OK;
    if (rc == SQLITE_ROW) {
        cur->exists = true;
        sq_col_copy(s, 0, cur->vid, sizeof cur->vid);
        cur->seq = sqlite3_column_int64(s, 1);
        cur->dm = sqlite3_column_int(s, 2) != 0;
        sq_col_copy(s, 3, cur->etag, sizeof cur->etag);
        cur->lock_mode = sqlite3_column_int(s, 4);
        cur->lock_until = (int64_t)sqlite3_column_int64(s, 5);
        cur->hold = sqlite3_column_int(s, 6) != 0;
    } else if (rc != SQLITE_DONE) {
        st = sq_fail(c, rc, "current version lookup");
    }
    sq_done(s);
    return st;
}

/* Runs a two-parameter (bucket, key) statement. */
static wh_status_t sq_exec_obj(sq_conn_t *c, int which, const char *bucket, const char *key,
                               size_t klen, const char *what)
{
    sqlite3_stmt *s = c->stmt[which];
    sq_bind_obj(s, bucket, key, klen);
    return sq_exec_stmt(c, s, what);
}

/* The current row's data goes (into *old, its chunk map dropped): it is being replaced. */
static wh_status_t sq_cur_release(void *conn, const char *bucket, const char *key, size_t klen,
                                  data_ref_t *old)
{
    sq_conn_t *c = conn;
    wh_status_t st = sq_obj_ref(c, bucket, key, klen, old);
    return st == WH_OK ? sq_chunks_drop(c, old->id) : st;
}

/* Removes the older version vid of the key; its data into *old. *found false: none.
 * WH_ERR_AUTH when its lock forbids it (chk). */
static wh_status_t sq_ver_take(void *conn, const char *bucket, const char *key, size_t klen,
                               const char *vid, const meta_lockchk_t *chk, data_ref_t *old,
                               bool *found, bool *dm)
{
    sq_conn_t *c = conn;
    sqlite3_stmt *s = c->stmt[S_VER_FIND];
    sq_bind_obj(s, bucket, key, klen);
    sq_bind_text(s, 3, vid);
    int rc = sqlite3_step(s);
    wh_status_t st = WH_OK;
    data_ref_clear(old);
    *found = rc == SQLITE_ROW;
    if (rc == SQLITE_ROW) {
        sq_col_copy(s, 0, old->id, sizeof old->id);
        if (dm)
            *dm = sqlite3_column_int(s, 1) != 0;
        st = meta_lockchk_refuse(chk, sqlite3_column_int(s, 2), (int64_t)sqlite3_column_int64(s, 3),
                                 sqlite3_column_int(s, 4) != 0);
        if (st != WH_OK)
            data_ref_clear(old);
    } else if (rc != SQLITE_DONE) {
        st = sq_fail(c, rc, "version lookup");
    }
    sq_done(s);
    if (st != WH_OK || !*found)
        return st;
    if (old->id[0] && (st = sq_chunks_get(c, old)) == WH_OK)
        st = sq_chunks_drop(c, old->id);
    if (st != WH_OK)
        return st;
    s = c->stmt[S_VER_DELETE];
    sq_bind_obj(s, bucket, key, klen);
    sq_bind_text(s, 3, vid);
    return sq_exec_stmt(c, s, "version delete");
}

/* ---- reads ---- */

static wh_status_t sq_get_from(sq_conn_t *c, int which, const char *bucket, const char *key,
                               size_t klen, const char *vid, data_obj_meta_t *meta, data_ref_t *ref)
{
    sqlite3_stmt *s = c->stmt[which];
    sq_bind_obj(s, bucket, key, klen);
    if (vid)
        sq_bind_text(s, 3, vid);
    int rc = sqlite3_step(s);
    wh_status_t st = rc == SQLITE_ROW    ? sq_obj_row(s, meta, ref)
                     : rc == SQLITE_DONE ? WH_ERR_NOT_FOUND
                                         : sq_fail(c, rc, "object lookup");
    sq_done(s);
    return st;
}

wh_status_t sq_object_get_version(meta_t *mm, const char *bucket, const char *key, size_t klen,
                                  const char *version_id, data_obj_meta_t *meta, data_ref_t *ref)
{
    sq_conn_t *c = &SQ(mm)->rd;
    if (meta)
        memset(meta, 0, sizeof *meta);
    if (ref)
        memset(ref, 0, sizeof *ref);
    pthread_mutex_lock(&c->lock);
    wh_status_t st;
    if (!version_id) {
        st = sq_get_from(c, S_OBJ_GET, bucket, key, klen, NULL, meta, ref);
    } else {
        /* Current first, then older. A version promoted to current between the two reads
         * (its newer one deleted) is in neither snapshot: look at the current row again. */
        st = sq_get_from(c, S_OBJ_GET_VID, bucket, key, klen, version_id, meta, ref);
        if (st == WH_ERR_NOT_FOUND)
            st = sq_get_from(c, S_VER_GET, bucket, key, klen, version_id, meta, ref);
        if (st == WH_ERR_NOT_FOUND)
            st = sq_get_from(c, S_OBJ_GET_VID, bucket, key, klen, version_id, meta, ref);
    }
    /* The reader has no open transaction: the chunk map is read by a statement of its own. A
     * concurrent replace may have dropped it; the data table's open then fails with NOT_FOUND
     * and the store looks again. */
    if (st == WH_OK && ref && ref->id[0])
        st = sq_chunks_get(c, ref);
    pthread_mutex_unlock(&c->lock);
    if (st != WH_OK) {
        data_obj_meta_free(meta);
        data_ref_clear(ref);
    }
    return st;
}

/* ---- the versioning rules' row operations (meta_ver.h), on the writer's connection ---- */

static wh_status_t sq_version_get(void *conn, const char *bucket, const char *key, size_t klen,
                                  const char *vid, data_obj_meta_t *meta)
{
    sq_conn_t *c = conn;
    if (!vid)
        return sq_get_from(c, S_OBJ_GET, bucket, key, klen, NULL, meta, NULL);
    wh_status_t st = sq_get_from(c, S_OBJ_GET_VID, bucket, key, klen, vid, meta, NULL);
    return st == WH_ERR_NOT_FOUND ? sq_get_from(c, S_VER_GET, bucket, key, klen, vid, meta, NULL)
                                  : st;
}

static wh_status_t sq_archive(void *conn, const char *bucket, const char *key, size_t klen)
{
    return sq_exec_obj(conn, S_VER_ARCHIVE, bucket, key, klen, "version archive");
}

static wh_status_t sq_obj_delete(void *conn, const char *bucket, const char *key, size_t klen)
{
    return sq_exec_obj(conn, S_OBJ_DELETE, bucket, key, klen, "object delete");
}

static wh_status_t sq_obj_rekey(void *conn, const char *bucket, const char *key, size_t klen,
                                const char *dst, size_t dlen)
{
    sq_conn_t *c = conn;
    sqlite3_stmt *s = c->stmt[S_OBJ_REKEY];
    sq_bind_obj(s, bucket, key, klen);
    sq_bind_key(s, 3, dst, dlen);
    return sq_exec_stmt(c, s, "object rename");
}

static wh_status_t sq_ver_promote(void *conn, const char *bucket, const char *key, size_t klen)
{
    wh_status_t st = sq_exec_obj(conn, S_VER_PROMOTE, bucket, key, klen, "version promote");
    return st == WH_OK ? sq_exec_obj(conn, S_VER_DROP_PROMOTED, bucket, key, klen,
                                     "promoted version delete")
                       : st;
}

static wh_status_t sq_tags_put(void *conn, const char *bucket, const char *key, size_t klen,
                               const char *vid, const char *tags, bool *changed)
{
    sq_conn_t *c = conn;
    sqlite3_stmt *s = c->stmt[vid ? S_TAGS_VER : S_TAGS_CUR];
    sq_bind_obj(s, bucket, key, klen);
    if (!vid) {
        sq_bind_text_or_null(s, 3, tags);
    } else {
        sq_bind_text(s, 3, vid);
        sq_bind_text_or_null(s, 4, tags);
    }
    wh_status_t st = sq_exec_stmt(c, s, "tag update");
    *changed = st == WH_OK && sqlite3_changes(c->db) == 1;
    return st;
}

static wh_status_t sq_ver_lock_get(void *conn, const char *bucket, const char *key, size_t klen,
                                   const char *vid, meta_cur_t *lk)
{
    sq_conn_t *c = conn;
    sqlite3_stmt *s = c->stmt[S_LOCK_VER_GET];
    sq_bind_obj(s, bucket, key, klen);
    sq_bind_text(s, 3, vid);
    int rc = sqlite3_step(s);
    wh_status_t st = rc == SQLITE_ROW    ? WH_OK
                     : rc == SQLITE_DONE ? WH_ERR_NOT_FOUND
                                         : sq_fail(c, rc, "version lock lookup");
    if (st == WH_OK) {
        lk->dm = sqlite3_column_int(s, 0) != 0;
        lk->lock_mode = sqlite3_column_int(s, 1);
        lk->lock_until = (int64_t)sqlite3_column_int64(s, 2);
        lk->hold = sqlite3_column_int(s, 3) != 0;
    }
    sq_done(s);
    return st;
}

static wh_status_t sq_lock_put(void *conn, const char *bucket, const char *key, size_t klen,
                               const char *vid, int mode, int64_t until, bool hold)
{
    sq_conn_t *c = conn;
    sqlite3_stmt *s = c->stmt[vid ? S_LOCK_VER_SET : S_LOCK_CUR_SET];
    sq_bind_obj(s, bucket, key, klen);
    int i = 3;
    if (vid)
        sq_bind_text(s, i++, vid);
    sqlite3_bind_int(s, i++, mode);
    sqlite3_bind_int64(s, i++, (sqlite3_int64)until);
    sqlite3_bind_int(s, i, hold ? 1 : 0);
    return sq_exec_stmt(c, s, "version lock update");
}

const meta_ver_dialect_t SQ_VER = {
    .versioning = sq_versioning,
    .cur = sq_cur,
    .version_get = sq_version_get,
    .archive = sq_archive,
    .cur_release = sq_cur_release,
    .ver_take = sq_ver_take,
    .obj_upsert = sq_obj_upsert,
    .obj_delete = sq_obj_delete,
    .ver_promote = sq_ver_promote,
    .tags_put = sq_tags_put,
    .ver_lock_get = sq_ver_lock_get,
    .lock_put = sq_lock_put,
    .obj_rekey = sq_obj_rekey,
};

wh_status_t sq_bucket_versioning_get(meta_t *mm, const char *bucket, int *state)
{
    sq_conn_t *c = &SQ(mm)->rd;
    pthread_mutex_lock(&c->lock);
    wh_status_t st = sq_versioning(c, bucket, state);
    pthread_mutex_unlock(&c->lock);
    return st;
}

typedef struct {
    const char *bucket;
    int state;
} sq_vset_arg_t;

static wh_status_t tx_versioning_set(void *conn, void *arg)
{
    sq_conn_t *c = conn;
    sq_vset_arg_t *a = arg;
    wh_status_t st = sq_bucket_check(c, a->bucket);
    if (st != WH_OK)
        return st;
    sqlite3_stmt *s = c->stmt[S_VERSIONING_SET];
    sq_bind_text(s, 1, a->bucket);
    sqlite3_bind_int(s, 2, a->state);
    if ((st = sq_exec_stmt(c, s, "bucket versioning update")) != WH_OK)
        return st;
    return sqlite3_changes(c->db) == 1 ? WH_OK : WH_ERR_PRECONDITION; /* object lock */
}

wh_status_t sq_bucket_versioning_set(meta_t *m, const char *bucket, int state)
{
    sq_vset_arg_t a = {bucket, state};
    return sq_write(SQ(m), tx_versioning_set, &a);
}

/* ---- the version scan ---- */

wh_status_t sq_version_scan(meta_t *mm, const char *bucket, const void *from, size_t flen,
                            bool inclusive, meta_version_fn fn, void *arg)
{
    sq_conn_t *c = &SQ(mm)->rd;
    wh_status_t st = WH_OK;
    int rc, stop = 0;
    pthread_mutex_lock(&c->lock);
    sqlite3_stmt *s = c->stmt[inclusive ? S_VER_SCAN_GE : S_VER_SCAN_GT];
    sqlite3_stmt *v = c->stmt[S_VER_OF_KEY];
    sq_bind_text(s, 1, bucket);
    sq_bind_key(s, 2, from, flen);
    while (!stop && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        char vid[DATA_VERSION_ID_MAX], etag[80];
        const void *key = sqlite3_column_blob(s, 0);
        size_t klen = (size_t)sqlite3_column_bytes(s, 0);
        sq_col_copy(s, 1, vid, sizeof vid);
        sq_col_copy(s, 5, etag, sizeof etag);
        meta_version_row_t row = {
            .key = key,
            .klen = klen,
            .version_id = vid,
            .latest = true,
            .delete_marker = sqlite3_column_int(s, 2) != 0,
            .size = (uint64_t)sqlite3_column_int64(s, 3),
            .mtime = (time_t)sqlite3_column_int64(s, 4),
            .etag = etag,
        };
        stop = fn(arg, &row);
        if (stop)
            break;
        /* The key's older versions, newest first (the key's bytes stay valid: s is not
         * stepped meanwhile). */
        sq_bind_text(v, 1, bucket);
        sq_bind_key(v, 2, key, klen);
        int vrc;
        while (!stop && (vrc = sqlite3_step(v)) == SQLITE_ROW) {
            char ovid[DATA_VERSION_ID_MAX], oetag[80];
            sq_col_copy(v, 0, ovid, sizeof ovid);
            sq_col_copy(v, 4, oetag, sizeof oetag);
            meta_version_row_t o = {
                .key = key,
                .klen = klen,
                .version_id = ovid,
                .latest = false,
                .delete_marker = sqlite3_column_int(v, 1) != 0,
                .size = (uint64_t)sqlite3_column_int64(v, 2),
                .mtime = (time_t)sqlite3_column_int64(v, 3),
                .etag = oetag,
            };
            stop = fn(arg, &o);
        }
        if (!stop && vrc != SQLITE_DONE)
            st = sq_fail(c, vrc, "version list");
        sq_done(v);
        if (st != WH_OK)
            break;
    }
    if (stop < 0)
        st = (wh_status_t)stop;
    else if (st == WH_OK && !stop && rc != SQLITE_DONE)
        st = sq_fail(c, rc, "version scan");
    sq_done(s);
    pthread_mutex_unlock(&c->lock);
    return st;
}
