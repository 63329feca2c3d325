/* SPDX-License-Identifier: Apache-2.0 */
/* SQLite metadata backend: object rows, chunk maps and the listing scan. See meta_sqlite_int.h. */
#include "base/log.h"
#include "meta_sqlite/meta_sqlite_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- chunk maps ---- */

wh_status_t sq_chunks_put(void *conn, const data_ref_t *ref)
{
    sq_conn_t *c = conn;
    for (size_t i = 0; i < ref->n_chunks; i++) {
        const data_chunk_t *ch = &ref->chunks[i];
        char reps[DATA_CHUNK_MAX_REPLICAS * 11 + 1];
        meta_replicas_format(ch, reps, sizeof reps);
        sqlite3_stmt *s = c->stmt[S_CHUNK_INSERT];
        sq_bind_text(s, 1, ref->id);
        sqlite3_bind_int64(s, 2, (sqlite3_int64)i);
        sq_bind_text(s, 3, ch->id);
        sqlite3_bind_int64(s, 4, (sqlite3_int64)ch->offset);
        sqlite3_bind_int64(s, 5, (sqlite3_int64)ch->length);
        sqlite3_bind_int64(s, 6, (sqlite3_int64)ch->crc64nvme);
        sqlite3_bind_text(s, 7, reps, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(s, 8, ch->ec_k);
        sqlite3_bind_int64(s, 9, ch->ec_m);
        sqlite3_bind_int64(s, 10, ch->ec_index);
        sqlite3_bind_int64(s, 11, (sqlite3_int64)ch->ec_stripe);
        wh_status_t st = sq_exec_stmt(c, s, "chunk insert");
        if (st != WH_OK)
            return st;
    }
    return WH_OK;
}

wh_status_t sq_chunks_get(void *conn, data_ref_t *ref)
{
    sq_conn_t *c = conn;
    size_t cap = 0;
    int rc;
    wh_status_t st = WH_OK;
    sqlite3_stmt *s = c->stmt[S_CHUNK_GET];
    sq_bind_text(s, 1, ref->id);
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (!meta_grow((void **)&ref->chunks, &cap, ref->n_chunks + 1, sizeof *ref->chunks)) {
            st = WH_ERR_NOMEM;
            break;
        }
        data_chunk_t *ch = &ref->chunks[ref->n_chunks++];
        memset(ch, 0, sizeof *ch);
        sq_col_copy(s, 0, ch->id, sizeof ch->id);
        ch->offset = (uint64_t)sqlite3_column_int64(s, 1);
        ch->length = (uint64_t)sqlite3_column_int64(s, 2);
        ch->crc64nvme = (uint64_t)sqlite3_column_int64(s, 3);
        meta_replicas_parse((const char *)sqlite3_column_text(s, 4), ch);
        ch->ec_k = (uint32_t)sqlite3_column_int64(s, 5);
        ch->ec_m = (uint32_t)sqlite3_column_int64(s, 6);
        ch->ec_index = (uint32_t)sqlite3_column_int64(s, 7);
        ch->ec_stripe = (uint64_t)sqlite3_column_int64(s, 8);
    }
    if (st == WH_OK && rc != SQLITE_DONE)
        st = sq_fail(c, rc, "chunk list");
    sq_done(s);
    return st;
}

wh_status_t sq_chunks_drop(void *conn, const char *id)
{
    sq_conn_t *c = conn;
    if (!id[0])
        return WH_OK;
    sqlite3_stmt *s = c->stmt[S_CHUNK_DELETE];
    sq_bind_text(s, 1, id);
    return sq_exec_stmt(c, s, "chunk delete");
}

/* ---- objects ---- */

wh_status_t sq_obj_upsert(void *conn, const char *bucket, const char *key, size_t klen,
                          const data_obj_meta_t *meta, const data_ref_t *ref, int64_t seq)
{
    sq_conn_t *c = conn;
    sqlite3_stmt *s = c->stmt[S_OBJ_UPSERT];
    sq_bind_text(s, 1, bucket);
    sq_bind_key(s, 2, key, klen);
    sqlite3_bind_int64(s, 3, (sqlite3_int64)meta->size);
    sqlite3_bind_int64(s, 4, (sqlite3_int64)meta->mtime);
    sq_bind_text(s, 5, meta->etag);
    sq_bind_text(s, 6, meta->content_type);
    sq_bind_text_or_null(s, 7, meta->user_meta_json);
    sq_bind_text(s, 8, meta->crc32c);
    sq_bind_text(s, 9, meta->crc64nvme);
    sqlite3_bind_int64(s, 10, meta->parts);
    sq_bind_text(s, 11, ref->id);
    sq_bind_text(s, 12, meta->owner);
    sq_bind_text_or_null(s, 13, meta->acl);
    sq_bind_text(s, 14, meta->version_id[0] ? meta->version_id : "null");
    sqlite3_bind_int64(s, 15, (sqlite3_int64)seq);
    sqlite3_bind_int(s, 16, meta->delete_marker ? 1 : 0);
    sq_bind_text_or_null(s, 17, meta->tags);
    sq_bind_text_or_null(s, 18, meta->part_sizes);
    sq_bind_text_or_null(s, 19, meta->sse);
    sqlite3_bind_int(s, 20, meta->lock_mode);
    sqlite3_bind_int64(s, 21, (sqlite3_int64)meta->lock_until);
    sqlite3_bind_int(s, 22, meta->legal_hold ? 1 : 0);
    wh_status_t st = sq_exec_stmt(c, s, "object upsert");
    return st == WH_OK ? sq_chunks_put(c, ref) : st;
}

wh_status_t sq_obj_ref(sq_conn_t *c, const char *bucket, const char *key, size_t klen,
                       data_ref_t *ref)
{
    sqlite3_stmt *s = c->stmt[S_OBJ_FILE];
    sq_bind_text(s, 1, bucket);
    sq_bind_key(s, 2, key, klen);
    int rc = sqlite3_step(s);
    wh_status_t st = WH_OK;
    data_ref_clear(ref);
    if (rc == SQLITE_ROW)
        sq_col_copy(s, 0, ref->id, sizeof ref->id);
    else if (rc != SQLITE_DONE)
        st = sq_fail(c, rc, "object file lookup");
    sq_done(s);
    if (st == WH_OK && ref->id[0])
        st = sq_chunks_get(c, ref);
    return st;
}

wh_status_t sq_obj_row(sqlite3_stmt *s, data_obj_meta_t *meta, data_ref_t *ref)
{
    if (ref)
        sq_col_copy(s, 8, ref->id, sizeof ref->id);
    if (!meta)
        return WH_OK;
    meta->size = (uint64_t)sqlite3_column_int64(s, 0);
    meta->mtime = (time_t)sqlite3_column_int64(s, 1);
    sq_col_copy(s, 2, meta->etag, sizeof meta->etag);
    sq_col_copy(s, 3, meta->content_type, sizeof meta->content_type);
    meta->user_meta_json = sq_col_dup(s, 4);
    sq_col_copy(s, 5, meta->crc32c, sizeof meta->crc32c);
    sq_col_copy(s, 6, meta->crc64nvme, sizeof meta->crc64nvme);
    meta->parts = (uint32_t)sqlite3_column_int64(s, 7);
    sq_col_copy(s, 9, meta->owner, sizeof meta->owner);
    meta->acl = sq_col_dup(s, 10);
    sq_col_copy(s, 11, meta->version_id, sizeof meta->version_id);
    meta->delete_marker = sqlite3_column_int(s, 13) != 0;
    meta->tags = sq_col_dup(s, 14);
    meta->part_sizes = sq_col_dup(s, 15);
    meta->sse = sq_col_dup(s, 16);
    meta->lock_mode = sqlite3_column_int(s, 17);
    meta->lock_until = (int64_t)sqlite3_column_int64(s, 18);
    meta->legal_hold = sqlite3_column_int(s, 19) != 0;
    /* sq_col_dup answers NULL for SQL NULL and on allocation failure: tell them apart. */
    static const int cols[] = {4, 10, 14, 15, 16};
    char *const got[] = {meta->user_meta_json, meta->acl, meta->tags, meta->part_sizes, meta->sse};
    for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++)
        if (!got[i] && sqlite3_column_type(s, cols[i]) != SQLITE_NULL)
            return WH_ERR_NOMEM;
    return WH_OK;
}

wh_status_t sq_object_get(meta_t *mm, const char *bucket, const char *key, size_t klen,
                          data_obj_meta_t *meta, data_ref_t *ref)
{
    return sq_object_get_version(mm, bucket, key, klen, NULL, meta, ref);
}

wh_status_t sq_data_referenced(meta_t *mm, const char *id)
{
    sq_conn_t *c = &SQ(mm)->rd;
    pthread_mutex_lock(&c->lock);
    wh_status_t st = sq_row_exists(c, S_FILE_REF, id, "file reference lookup");
    pthread_mutex_unlock(&c->lock);
    return st;
}

wh_status_t sq_object_scan(meta_t *mm, const char *bucket, const void *from, size_t flen,
                           bool inclusive, meta_scan_fn fn, void *arg)
{
    sq_conn_t *c = &SQ(mm)->rd;
    wh_status_t st = WH_OK;
    int rc;
    pthread_mutex_lock(&c->lock);
    sqlite3_stmt *s = c->stmt[inclusive ? S_OBJ_LIST_GE : S_OBJ_LIST_GT];
    sq_bind_text(s, 1, bucket);
    sq_bind_key(s, 2, from, flen);
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        char etag[80], owner[65];
        sq_col_copy(s, 3, etag, sizeof etag);
        sq_col_copy(s, 4, owner, sizeof owner);
        int r = fn(arg, sqlite3_column_blob(s, 0), (size_t)sqlite3_column_bytes(s, 0),
                   (uint64_t)sqlite3_column_int64(s, 1), (time_t)sqlite3_column_int64(s, 2), etag,
                   owner);
        if (r < 0)
            st = (wh_status_t)r;
        if (r != 0)
            break;
    }
    if (st == WH_OK && rc != SQLITE_ROW && rc != SQLITE_DONE)
        st = sq_fail(c, rc, "object list");
    sq_done(s);
    pthread_mutex_unlock(&c->lock);
    return st;
}
