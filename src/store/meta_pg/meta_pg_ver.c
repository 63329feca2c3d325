/* SPDX-License-Identifier: Apache-2.0 */
/* PostgreSQL metadata backend: versions, as meta_sqlite_ver.c does it for SQLite: objects
 * holds each key's current version (delete markers included), versions the older ones, and a
 * commit archives, replaces or removes rows in its SERIALIZABLE transaction. A key with older
 * versions always has a current row, so a scan of objects visits every versioned key. An
 * archived version keeps its chunk map, so garbage collection never takes its chunks; a
 * removed version's chunk map is dropped (and its chunks queued) in the same transaction. */
#include "base/log.h"
#include "meta_pg/meta_pg_int.h"
#include "meta/meta_rules.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PG_VSCAN_BATCH 256

static void pp_obj(pg_params_t *p, const char *bucket, const char *key, size_t klen)
{
    pp_text(p, bucket);
    pp_bytes(p, key, klen);
}

static wh_status_t pg_versioning(void *conn, const char *bucket, int *state)
{
    pg_conn_t *c = conn;
    pg_params_t p = {0};
    pp_text(&p, bucket);
    PGresult *r;
    wh_status_t st = pg_exec(c, "SELECT versioning FROM buckets WHERE name = $1", &p, &r,
                             "bucket versioning lookup");
    if (st != WH_OK)
        return st;
    if (PQntuples(r) == 0)
        st = WH_ERR_NOT_FOUND;
    else
        *state = (int)pg_i64(r, 0, 0);
    PQclear(r);
    return st;
}

static wh_status_t pg_cur(void *conn, const char *bucket, const char *key, size_t klen,
                          meta_cur_t *cur)
{
    pg_conn_t *c = conn;
    memset(cur, 0, sizeof *cur);
    pg_params_t p = {0};
    pp_obj(&p, bucket, key, klen);
    PGresult *r;
    wh_status_t st = pg_exec(c,
                             "SELECT version_id, seq, dm, etag, lock_mode, lock_until,"
                             " legal_hold FROM objects"
                             " WHERE bucket = $1 AND key = $2",
                             &p, &r, "current version lookup");
    if (st != WH_OK)
        return st;
    if (PQntuples(r) > 0) {
        cur->exists = true;
        pg_copy(r, 0, 0, cur->vid, sizeof cur->vid);
        cur->seq = pg_i64(r, 0, 1);
        cur->dm = pg_i64(r, 0, 2) != 0;
        pg_copy(r, 0, 3, cur->etag, sizeof cur->etag);
        cur->lock_mode = (int)pg_i64(r, 0, 4);
        cur->lock_until = pg_i64(r, 0, 5);
        cur->hold = pg_i64(r, 0, 6) != 0;
    }
    PQclear(r);
    return WH_OK;
}

static wh_status_t pg_exec_obj(pg_conn_t *c, const char *sql, const char *bucket, const char *key,
                               size_t klen, const char *what)
{
    pg_params_t p = {0};
    pp_obj(&p, bucket, key, klen);
    return pg_exec(c, sql, &p, NULL, what);
}

static const char PG_ARCHIVE[] =
    "INSERT INTO versions(bucket, key, " PG_OBJ_COLS ") SELECT bucket, key, " PG_OBJ_COLS
    " FROM objects WHERE bucket = $1 AND key = $2";

/* Archives the key's current row. Version ids are unique (random bits), so a duplicate can
 * only be the same current row archived by a concurrent transaction that committed first: a
 * serialization conflict that PostgreSQL reports as a unique violation (no read of versions
 * came before the insert). It is retried as one, never answered as an error. */
static wh_status_t pg_archive(void *conn, const char *bucket, const char *key, size_t klen)
{
    pg_conn_t *c = conn;
    wh_status_t st = pg_exec_obj(c, PG_ARCHIVE, bucket, key, klen, "version archive");
    if (st == WH_ERR_EXISTS) {
        wh_debug("store", "PostgreSQL version archive: a concurrent commit archived the row, "
                          "retrying");
        c->retryable = true;
        meta_tx_note_retryable();
        st = WH_ERR_BUSY;
    }
    return st;
}

static wh_status_t pg_cur_release(void *conn, const char *bucket, const char *key, size_t klen,
                                  data_ref_t *old)
{
    pg_conn_t *c = conn;
    wh_status_t st = pg_obj_ref(c, bucket, key, klen, old);
    return st == WH_OK ? pg_chunks_drop(c, old->id) : st;
}

/* Removes the older version vid of the key; its data into *old. *found false: none.
 * WH_ERR_AUTH when its lock forbids it (chk): read in this transaction (SERIALIZABLE: a
 * concurrent lock change makes one of the two retry). */
static wh_status_t pg_ver_take(void *conn, const char *bucket, const char *key, size_t klen,
                               const char *vid, const meta_lockchk_t *chk, data_ref_t *old,
                               bool *found, bool *dm)
{
    pg_conn_t *c = conn;
    pg_params_t p = {0};
    pp_obj(&p, bucket, key, klen);
    pp_text(&p, vid);
    PGresult *r;
    data_ref_clear(old);
    wh_status_t st = pg_exec(c,
                             "SELECT lock_mode, lock_until, legal_hold FROM versions"
                             " WHERE bucket = $1 AND key = $2 AND version_id = $3",
                             &p, &r, "version lock lookup");
    if (st != WH_OK)
        return st;
    if (PQntuples(r) > 0)
        st = meta_lockchk_refuse(chk, (int)pg_i64(r, 0, 0), pg_i64(r, 0, 1), pg_i64(r, 0, 2) != 0);
    PQclear(r);
    if (st != WH_OK)
        return st;
    st = pg_exec(c,
                 "DELETE FROM versions WHERE bucket = $1 AND key = $2"
                 " AND version_id = $3 RETURNING data_id, dm",
                 &p, &r, "version delete");
    if (st != WH_OK)
        return st;
    *found = PQntuples(r) > 0;
    if (*found) {
        pg_copy(r, 0, 0, old->id, sizeof old->id);
        if (dm)
            *dm = pg_i64(r, 0, 1) != 0;
    }
    PQclear(r);
    if (*found && old->id[0] && (st = pg_chunks_get(c, old)) == WH_OK)
        st = pg_chunks_drop(c, old->id);
    return st;
}

/* ---- reads ---- */

typedef struct {
    const char *bucket, *key, *vid;
    size_t klen;
    data_obj_meta_t *meta;
    data_ref_t *ref;
} pg_vget_arg_t;

static wh_status_t rd_get_from(pg_conn_t *c, pg_vget_arg_t *a, const char *table)
{
    pg_params_t p = {0};
    pp_obj(&p, a->bucket, a->key, a->klen);
    if (a->vid)
        pp_text(&p, a->vid);
    char sql[768];
    /* One statement, one snapshot: the row and its chunk map agree. */
    snprintf(sql, sizeof sql,
             "SELECT o.size, o.mtime, o.etag, o.content_type, o.user_meta, o.crc32c,"
             " o.crc64nvme, o.parts, o.data_id, o.owner, o.acl, o.version_id, o.seq, o.dm,"
             " o.tags, o.part_sizes, o.sse, o.lock_mode, o.lock_until, o.legal_hold, " PG_CHUNK_COLS
             " FROM %s o LEFT JOIN chunks c ON c.data_id = o.data_id AND o.data_id <> ''"
             " WHERE o.bucket = $1 AND o.key = $2%s ORDER BY c.idx",
             table, a->vid ? " AND o.version_id = $3" : "");
    PGresult *r;
    wh_status_t st = pg_exec(c, sql, &p, &r, "object lookup");
    if (st != WH_OK)
        return st;
    if (PQntuples(r) == 0) {
        PQclear(r);
        return WH_ERR_NOT_FOUND;
    }
    if (a->meta) {
        data_obj_meta_free(a->meta);
        memset(a->meta, 0, sizeof *a->meta);
    }
    if (a->ref)
        data_ref_clear(a->ref);
    st = pg_obj_row(r, 0, 0, a->meta, a->ref);
    for (int i = 0; st == WH_OK && a->ref && i < PQntuples(r); i++)
        st = pg_chunk_add(r, i, PG_OBJ_NCOLS, a->ref);
    PQclear(r);
    return st;
}

static wh_status_t rd_get_version(void *conn, void *arg)
{
    pg_vget_arg_t *a = arg;
    wh_status_t st = rd_get_from(conn, a, "objects");
    if (st == WH_ERR_NOT_FOUND && a->vid)
        st = rd_get_from(conn, a, "versions");
    /* A version promoted to current between the two statements is in neither snapshot. */
    if (st == WH_ERR_NOT_FOUND && a->vid)
        st = rd_get_from(conn, a, "objects");
    return st;
}

/* ---- the versioning rules' row operations (meta_ver.h) ---- */

static wh_status_t pg_version_get(void *conn, const char *bucket, const char *key, size_t klen,
                                  const char *vid, data_obj_meta_t *meta)
{
    pg_vget_arg_t g = {bucket, key, vid, klen, meta, NULL};
    return rd_get_version(conn, &g);
}

static wh_status_t pg_obj_delete(void *conn, const char *bucket, const char *key, size_t klen)
{
    return pg_exec_obj(conn, "DELETE FROM objects WHERE bucket = $1 AND key = $2", bucket, key,
                       klen, "object delete");
}

static wh_status_t pg_obj_rekey(void *conn, const char *bucket, const char *key, size_t klen,
                                const char *dst, size_t dlen)
{
    pg_params_t p = {0};
    pp_obj(&p, bucket, key, klen);
    pp_bytes(&p, dst, dlen);
    return pg_exec(conn, "UPDATE objects SET key = $3 WHERE bucket = $1 AND key = $2", &p, NULL,
                   "object rename");
}

static wh_status_t pg_ver_promote(void *conn, const char *bucket, const char *key, size_t klen)
{
    return pg_exec_obj(conn,
                       "WITH top AS (DELETE FROM versions WHERE bucket = $1 AND key = $2"
                       " AND seq = (SELECT max(seq) FROM versions WHERE bucket = $1"
                       " AND key = $2) RETURNING *)"
                       " INSERT INTO objects(bucket, key, " PG_OBJ_COLS ")"
                       " SELECT bucket, key, " PG_OBJ_COLS " FROM top",
                       bucket, key, klen, "version promote");
}

static wh_status_t pg_tags_put(void *conn, const char *bucket, const char *key, size_t klen,
                               const char *vid, const char *tags, bool *changed)
{
    pg_params_t p = {0};
    pp_obj(&p, bucket, key, klen);
    pp_text(&p, NULL);
    p.v[p.n - 1] = tags; /* NULL: none */
    if (vid)
        pp_text(&p, vid);
    PGresult *r;
    wh_status_t st = pg_exec(conn,
                             !vid ? "UPDATE objects SET tags = $3 WHERE bucket = $1 AND key = $2"
                                    " AND dm = 0 RETURNING 1"
                                  : "UPDATE versions SET tags = $3 WHERE bucket = $1 AND key = $2"
                                    " AND version_id = $4 AND dm = 0 RETURNING 1",
                             &p, &r, "tag update");
    if (st != WH_OK)
        return st;
    *changed = PQntuples(r) == 1;
    PQclear(r);
    return WH_OK;
}

static wh_status_t pg_ver_lock_get(void *conn, const char *bucket, const char *key, size_t klen,
                                   const char *vid, meta_cur_t *lk)
{
    pg_params_t p = {0};
    pp_obj(&p, bucket, key, klen);
    pp_text(&p, vid);
    PGresult *r;
    wh_status_t st = pg_exec(conn,
                             "SELECT dm, lock_mode, lock_until, legal_hold FROM versions"
                             " WHERE bucket = $1 AND key = $2 AND version_id = $3",
                             &p, &r, "version lock lookup");
    if (st != WH_OK)
        return st;
    if (PQntuples(r) == 0) {
        st = WH_ERR_NOT_FOUND;
    } else {
        lk->dm = pg_i64(r, 0, 0) != 0;
        lk->lock_mode = (int)pg_i64(r, 0, 1);
        lk->lock_until = pg_i64(r, 0, 2);
        lk->hold = pg_i64(r, 0, 3) != 0;
    }
    PQclear(r);
    return st;
}

static wh_status_t pg_lock_put(void *conn, const char *bucket, const char *key, size_t klen,
                               const char *vid, int mode, int64_t until, bool hold)
{
    pg_params_t p = {0};
    pp_obj(&p, bucket, key, klen);
    pp_i64(&p, mode);
    pp_i64(&p, until);
    pp_i64(&p, hold ? 1 : 0);
    if (vid)
        pp_text(&p, vid);
    return pg_exec(conn,
                   !vid ? "UPDATE objects SET lock_mode = $3, lock_until = $4, legal_hold = $5"
                          " WHERE bucket = $1 AND key = $2 AND dm = 0"
                        : "UPDATE versions SET lock_mode = $3, lock_until = $4, legal_hold = $5"
                          " WHERE bucket = $1 AND key = $2 AND version_id = $6 AND dm = 0",
                   &p, NULL, "version lock update");
}

const meta_ver_dialect_t PG_VER = {
    .versioning = pg_versioning,
    .cur = pg_cur,
    .version_get = pg_version_get,
    .archive = pg_archive,
    .cur_release = pg_cur_release,
    .ver_take = pg_ver_take,
    .obj_upsert = pg_obj_upsert,
    .obj_delete = pg_obj_delete,
    .ver_promote = pg_ver_promote,
    .tags_put = pg_tags_put,
    .ver_lock_get = pg_ver_lock_get,
    .lock_put = pg_lock_put,
    .obj_rekey = pg_obj_rekey,
};

wh_status_t pg_object_get_version(meta_t *m, const char *bucket, const char *key, size_t klen,
                                  const char *version_id, data_obj_meta_t *meta, data_ref_t *ref)
{
    if (meta)
        memset(meta, 0, sizeof *meta);
    if (ref)
        memset(ref, 0, sizeof *ref);
    pg_vget_arg_t a = {bucket, key, version_id, klen, meta, ref};
    wh_status_t st = pg_read(PGM(m), rd_get_version, &a);
    if (st != WH_OK) {
        data_obj_meta_free(meta);
        data_ref_clear(ref);
    }
    return st;
}

typedef struct {
    const char *bucket;
    int *state;
} pg_vstate_arg_t;

static wh_status_t rd_versioning(void *conn, void *arg)
{
    pg_vstate_arg_t *a = arg;
    return pg_versioning(conn, a->bucket, a->state);
}

wh_status_t pg_bucket_versioning_get(meta_t *m, const char *bucket, int *state)
{
    pg_vstate_arg_t a = {bucket, state};
    return pg_read(PGM(m), rd_versioning, &a);
}

static wh_status_t tx_versioning_set(void *conn, void *arg)
{
    pg_vstate_arg_t *a = arg;
    wh_status_t st = pg_bucket_check(conn, a->bucket);
    if (st != WH_OK)
        return st;
    pg_params_t p = {0};
    pp_text(&p, a->bucket);
    pp_i64(&p, *a->state);
    PGresult *r;
    st = pg_exec(conn,
                 "UPDATE buckets SET versioning = $2 WHERE name = $1"
                 " AND ($2 = 1 OR object_lock IS NULL) RETURNING 1",
                 &p, &r, "bucket versioning update");
    if (st != WH_OK)
        return st;
    st = PQntuples(r) == 1 ? WH_OK : WH_ERR_PRECONDITION; /* object lock keeps it Enabled */
    PQclear(r);
    return st;
}

wh_status_t pg_bucket_versioning_set(meta_t *m, const char *bucket, int state)
{
    pg_vstate_arg_t a = {bucket, &state};
    return pg_write(PGM(m), tx_versioning_set, &a);
}

/* ---- the version scan: batches of keys, each key's older versions after it ---- */

wh_status_t pg_version_scan(meta_t *mm, const char *bucket, const void *from, size_t flen,
                            bool inclusive, meta_version_fn fn, void *arg)
{
    /* Not retried on a lost connection: the walk may already have handed rows out. */
    pg_conn_t *c = pg_get(PGM(mm));
    char *cur = NULL;
    size_t clen = 0;
    wh_status_t st = WH_OK;
    int stop = 0;
    for (;;) {
        pg_params_t p = {0};
        pp_text(&p, bucket);
        pp_bytes(&p, from, flen);
        pp_i64(&p, PG_VSCAN_BATCH);
        PGresult *r;
        st = pg_exec(c,
                     inclusive ? "SELECT encode(key, 'hex'), version_id, dm, size, mtime, etag"
                                 " FROM objects WHERE bucket = $1 AND key >= $2 ORDER BY key"
                                 " LIMIT $3"
                               : "SELECT encode(key, 'hex'), version_id, dm, size, mtime, etag"
                                 " FROM objects WHERE bucket = $1 AND key > $2 ORDER BY key"
                                 " LIMIT $3",
                     &p, &r, "version scan");
        if (st != WH_OK)
            break;
        int n = PQntuples(r);
        for (int i = 0; i < n && !stop && st == WH_OK; i++) {
            size_t klen;
            char *k = pg_hexcol(r, i, 0, &klen);
            if (!k) {
                st = WH_ERR_NOMEM;
                break;
            }
            free(cur);
            cur = k;
            clen = klen;
            meta_version_row_t row = {
                .key = k,
                .klen = klen,
                .version_id = PQgetvalue(r, i, 1),
                .latest = true,
                .delete_marker = pg_i64(r, i, 2) != 0,
                .size = (uint64_t)pg_i64(r, i, 3),
                .mtime = (time_t)pg_i64(r, i, 4),
                .etag = PQgetvalue(r, i, 5),
            };
            if ((stop = fn(arg, &row)) != 0)
                break;
            pg_params_t q = {0};
            pp_obj(&q, bucket, k, klen);
            PGresult *v;
            st = pg_exec(c,
                         "SELECT version_id, dm, size, mtime, etag FROM versions"
                         " WHERE bucket = $1 AND key = $2 ORDER BY seq DESC",
                         &q, &v, "version list");
            if (st != WH_OK)
                break;
            for (int j = 0; j < PQntuples(v) && !stop; j++) {
                meta_version_row_t o = {
                    .key = k,
                    .klen = klen,
                    .version_id = PQgetvalue(v, j, 0),
                    .latest = false,
                    .delete_marker = pg_i64(v, j, 1) != 0,
                    .size = (uint64_t)pg_i64(v, j, 2),
                    .mtime = (time_t)pg_i64(v, j, 3),
                    .etag = PQgetvalue(v, j, 4),
                };
                stop = fn(arg, &o);
            }
            PQclear(v);
        }
        PQclear(r);
        if (stop < 0)
            st = (wh_status_t)stop;
        if (st != WH_OK || stop || n < PG_VSCAN_BATCH)
            break;
        from = cur;
        flen = clen;
        inclusive = false;
    }
    free(cur);
    pg_put(c);
    return st;
}
