/* SQLite metadata backend: object rows, chunk maps and the listing scan. See meta_sqlite.h. */
#include "base/log.h"
#include "store/meta_sqlite.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- chunk maps ---- */

wh_status_t sq_chunks_put(sq_conn_t *c, const store_data_ref_t *ref)
{
    for (size_t i = 0; i < ref->n_chunks; i++) {
        const store_chunk_t *ch = &ref->chunks[i];
        char reps[STORE_CHUNK_MAX_REPLICAS * 11 + 1];
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

wh_status_t sq_chunks_get(sq_conn_t *c, store_data_ref_t *ref)
{
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
        store_chunk_t *ch = &ref->chunks[ref->n_chunks++];
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

wh_status_t sq_chunks_drop(sq_conn_t *c, const char *id)
{
    if (!id[0])
        return WH_OK;
    sqlite3_stmt *s = c->stmt[S_CHUNK_DELETE];
    sq_bind_text(s, 1, id);
    return sq_exec_stmt(c, s, "chunk delete");
}

/* ---- objects ---- */

wh_status_t sq_obj_upsert(sq_conn_t *c, const char *bucket, const char *key, size_t klen,
                          const store_obj_meta_t *meta, const store_data_ref_t *ref)
{
    sqlite3_stmt *s = c->stmt[S_OBJ_UPSERT];
    sq_bind_text(s, 1, bucket);
    sq_bind_key(s, 2, key, klen);
    sqlite3_bind_int64(s, 3, (sqlite3_int64)meta->size);
    sqlite3_bind_int64(s, 4, (sqlite3_int64)meta->mtime);
    sq_bind_text(s, 5, meta->etag);
    sq_bind_text(s, 6, meta->content_type);
    if (meta->user_meta_json)
        sq_bind_text(s, 7, meta->user_meta_json);
    else
        sqlite3_bind_null(s, 7);
    sq_bind_text(s, 8, meta->crc32c);
    sq_bind_text(s, 9, meta->crc64nvme);
    sqlite3_bind_int64(s, 10, meta->parts);
    sq_bind_text(s, 11, ref->id);
    sq_bind_text(s, 12, meta->owner);
    sq_bind_text_or_null(s, 13, meta->acl);
    wh_status_t st = sq_exec_stmt(c, s, "object upsert");
    return st == WH_OK ? sq_chunks_put(c, ref) : st;
}

wh_status_t sq_obj_ref(sq_conn_t *c, const char *bucket, const char *key, size_t klen,
                       store_data_ref_t *ref)
{
    sqlite3_stmt *s = c->stmt[S_OBJ_FILE];
    sq_bind_text(s, 1, bucket);
    sq_bind_key(s, 2, key, klen);
    int rc = sqlite3_step(s);
    wh_status_t st = WH_OK;
    store_data_ref_clear(ref);
    if (rc == SQLITE_ROW)
        sq_col_copy(s, 0, ref->id, sizeof ref->id);
    else if (rc != SQLITE_DONE)
        st = sq_fail(c, rc, "object file lookup");
    sq_done(s);
    if (st == WH_OK && ref->id[0])
        st = sq_chunks_get(c, ref);
    return st;
}

wh_status_t sq_obj_cond(sq_conn_t *c, const char *bucket, const char *key, size_t klen,
                        store_cond_t *cond)
{
    if (!cond || cond->kind == STORE_COND_NONE)
        return WH_OK;
    sqlite3_stmt *s = c->stmt[S_OBJ_ETAG];
    sq_bind_text(s, 1, bucket);
    sq_bind_key(s, 2, key, klen);
    int rc = sqlite3_step(s);
    char etag[80] = "";
    wh_status_t st = WH_OK;
    if (rc == SQLITE_ROW)
        sq_col_copy(s, 0, etag, sizeof etag);
    else if (rc != SQLITE_DONE)
        st = sq_fail(c, rc, "object condition lookup");
    sq_done(s);
    return st == WH_OK ? meta_cond_check(cond, rc == SQLITE_ROW, etag) : st;
}

wh_status_t sq_object_get(meta_t *mm, const char *bucket, const char *key, size_t klen,
                          store_obj_meta_t *meta, store_data_ref_t *ref)
{
    sq_conn_t *c = &SQ(mm)->rd;
    wh_status_t st = WH_OK;
    if (meta)
        memset(meta, 0, sizeof *meta);
    if (ref)
        memset(ref, 0, sizeof *ref);
    pthread_mutex_lock(&c->lock);
    sqlite3_stmt *s = c->stmt[S_OBJ_GET];
    sq_bind_text(s, 1, bucket);
    sq_bind_key(s, 2, key, klen);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_DONE) {
        st = WH_ERR_NOT_FOUND;
        goto out;
    }
    if (rc != SQLITE_ROW) {
        st = sq_fail(c, rc, "object lookup");
        goto out;
    }
    if (meta) {
        meta->size = (uint64_t)sqlite3_column_int64(s, 0);
        meta->mtime = (time_t)sqlite3_column_int64(s, 1);
        sq_col_copy(s, 2, meta->etag, sizeof meta->etag);
        sq_col_copy(s, 3, meta->content_type, sizeof meta->content_type);
        if (sqlite3_column_type(s, 4) != SQLITE_NULL &&
            !(meta->user_meta_json = sq_col_dup(s, 4))) {
            st = WH_ERR_NOMEM;
            goto out;
        }
        sq_col_copy(s, 5, meta->crc32c, sizeof meta->crc32c);
        sq_col_copy(s, 6, meta->crc64nvme, sizeof meta->crc64nvme);
        meta->parts = (uint32_t)sqlite3_column_int64(s, 7);
        sq_col_copy(s, 9, meta->owner, sizeof meta->owner);
        if (sqlite3_column_type(s, 10) != SQLITE_NULL && !(meta->acl = sq_col_dup(s, 10))) {
            st = WH_ERR_NOMEM;
            goto out;
        }
    }
    if (ref)
        sq_col_copy(s, 8, ref->id, sizeof ref->id);
out:
    sq_done(s);
    /* The reader connection has no open transaction: read the chunk map in one statement of
     * its own. A concurrent replace may have dropped it meanwhile; the data table's open then
     * fails with NOT_FOUND and the store looks again. */
    if (st == WH_OK && ref)
        st = sq_chunks_get(c, ref);
    pthread_mutex_unlock(&c->lock);
    if (st != WH_OK && meta) {
        store_obj_meta_free(meta);
    }
    if (st != WH_OK && ref)
        store_data_ref_clear(ref);
    return st;
}

typedef struct {
    const char *bucket, *key;
    size_t klen;
    const store_obj_meta_t *meta;
    const store_data_ref_t *ref;
    store_data_ref_t *old;
    store_cond_t *cond;
} sq_obj_arg_t;

static wh_status_t tx_object_put(void *conn, void *arg)
{
    sq_conn_t *c = conn;
    sq_obj_arg_t *a = arg;
    wh_status_t st = sq_bucket_check(c, a->bucket);
    if (st == WH_OK)
        st = sq_obj_cond(c, a->bucket, a->key, a->klen, a->cond);
    if (st == WH_OK)
        st = sq_obj_ref(c, a->bucket, a->key, a->klen, a->old);
    if (st == WH_OK)
        st = sq_chunks_drop(c, a->old->id);
    if (st == WH_OK)
        st = sq_obj_upsert(c, a->bucket, a->key, a->klen, a->meta, a->ref);
    return st;
}

wh_status_t sq_object_put(meta_t *m, const char *bucket, const char *key, size_t klen,
                          const store_obj_meta_t *meta, const store_data_ref_t *ref,
                          store_data_ref_t *old, store_cond_t *cond)
{
    sq_obj_arg_t a = {bucket, key, klen, meta, ref, old, cond};
    memset(old, 0, sizeof *old);
    wh_status_t st = sq_write(SQ(m), tx_object_put, &a);
    if (st != WH_OK)
        store_data_ref_clear(old);
    return st;
}

static wh_status_t tx_object_delete(void *conn, void *arg)
{
    sq_conn_t *c = conn;
    sq_obj_arg_t *a = arg;
    wh_status_t st = sq_bucket_check(c, a->bucket);
    if (st == WH_OK)
        st = sq_obj_ref(c, a->bucket, a->key, a->klen, a->old);
    if (st != WH_OK || !a->old->id[0])
        return st; /* nothing to delete: WH_OK, idempotent */
    st = sq_chunks_drop(c, a->old->id);
    if (st != WH_OK)
        return st;
    sqlite3_stmt *s = c->stmt[S_OBJ_DELETE];
    sq_bind_text(s, 1, a->bucket);
    sq_bind_key(s, 2, a->key, a->klen);
    return sq_exec_stmt(c, s, "object delete");
}

wh_status_t sq_object_delete(meta_t *m, const char *bucket, const char *key, size_t klen,
                             store_data_ref_t *old)
{
    sq_obj_arg_t a = {bucket, key, klen, NULL, NULL, old, NULL};
    memset(old, 0, sizeof *old);
    wh_status_t st = sq_write(SQ(m), tx_object_delete, &a);
    if (st != WH_OK)
        store_data_ref_clear(old);
    return st;
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
                   (uint64_t)sqlite3_column_int64(s, 1), (time_t)sqlite3_column_int64(s, 2),
                   etag, owner);
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
