/* SPDX-License-Identifier: Apache-2.0 */
/* SQLite metadata backend: multipart uploads and their parts. See meta_sqlite_int.h. */
#include "base/log.h"
#include "meta_sqlite/meta_sqlite_int.h"
#include "meta/meta_rules.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static wh_status_t sq_upload_check(sq_conn_t *c, const char *bucket, const char *key,
                                   const char *upload_id, data_obj_meta_t *meta)
{
    sqlite3_stmt *s = c->stmt[S_UPLOAD_GET];
    sq_bind_text(s, 1, upload_id);
    sq_bind_text(s, 2, bucket);
    sq_bind_key(s, 3, key, strlen(key));
    int rc = sqlite3_step(s);
    wh_status_t st = WH_OK;
    if (rc == SQLITE_DONE) {
        st = WH_ERR_NOT_FOUND;
    } else if (rc != SQLITE_ROW) {
        st = sq_fail(c, rc, "upload lookup");
    } else if (meta) {
        memset(meta, 0, sizeof *meta);
        meta->mtime = (time_t)sqlite3_column_int64(s, 0);
        sq_col_copy(s, 1, meta->content_type, sizeof meta->content_type);
        if (sqlite3_column_type(s, 2) != SQLITE_NULL && !(meta->user_meta_json = sq_col_dup(s, 2)))
            st = WH_ERR_NOMEM;
        sq_col_copy(s, 3, meta->owner, sizeof meta->owner);
        if (st == WH_OK && sqlite3_column_type(s, 4) != SQLITE_NULL &&
            !(meta->acl = sq_col_dup(s, 4)))
            st = WH_ERR_NOMEM;
        if (st == WH_OK && sqlite3_column_type(s, 5) != SQLITE_NULL &&
            !(meta->tags = sq_col_dup(s, 5)))
            st = WH_ERR_NOMEM;
        if (st == WH_OK && sqlite3_column_type(s, 6) != SQLITE_NULL &&
            !(meta->sse = sq_col_dup(s, 6)))
            st = WH_ERR_NOMEM;
        meta->lock_mode = sqlite3_column_int(s, 7);
        meta->lock_until = (int64_t)sqlite3_column_int64(s, 8);
        meta->legal_hold = sqlite3_column_int(s, 9) != 0;
    }
    sq_done(s);
    return st;
}

typedef struct {
    const char *bucket, *key, *upload_id;
    const data_obj_meta_t *meta;
    time_t initiated;
} sq_upload_arg_t;

static wh_status_t tx_upload_create(void *conn, void *arg)
{
    sq_conn_t *c = conn;
    sq_upload_arg_t *a = arg;
    wh_status_t st = sq_bucket_check(c, a->bucket);
    if (st != WH_OK)
        return st;
    sqlite3_stmt *s = c->stmt[S_UPLOAD_INSERT];
    sq_bind_text(s, 1, a->upload_id);
    sq_bind_text(s, 2, a->bucket);
    sq_bind_key(s, 3, a->key, strlen(a->key));
    sqlite3_bind_int64(s, 4, (sqlite3_int64)a->initiated);
    sq_bind_text(s, 5, a->meta ? a->meta->content_type : "");
    if (a->meta && a->meta->user_meta_json)
        sq_bind_text(s, 6, a->meta->user_meta_json);
    else
        sqlite3_bind_null(s, 6);
    sq_bind_text(s, 7, a->meta ? a->meta->owner : "");
    sq_bind_text_or_null(s, 8, a->meta ? a->meta->acl : NULL);
    sq_bind_text_or_null(s, 9, a->meta ? a->meta->tags : NULL);
    sq_bind_text_or_null(s, 10, a->meta ? a->meta->sse : NULL);
    sqlite3_bind_int(s, 11, a->meta ? a->meta->lock_mode : 0);
    sqlite3_bind_int64(s, 12, a->meta ? (sqlite3_int64)a->meta->lock_until : 0);
    sqlite3_bind_int(s, 13, a->meta && a->meta->legal_hold ? 1 : 0);
    return sq_exec_stmt(c, s, "upload insert");
}

wh_status_t sq_upload_create(meta_t *m, const char *bucket, const char *key, const char *upload_id,
                             const data_obj_meta_t *meta, time_t initiated)
{
    sq_upload_arg_t a = {bucket, key, upload_id, meta, initiated};
    return sq_write(SQ(m), tx_upload_create, &a);
}

wh_status_t sq_upload_get(meta_t *mm, const char *bucket, const char *key, const char *upload_id,
                          data_obj_meta_t *meta)
{
    sq_conn_t *c = &SQ(mm)->rd;
    pthread_mutex_lock(&c->lock);
    wh_status_t st = sq_upload_check(c, bucket, key, upload_id, meta);
    pthread_mutex_unlock(&c->lock);
    return st;
}

/* Reads parts with number > marker, at most max (0 = all), with their chunk maps. Lock held. */
static wh_status_t sq_parts_read(void *conn, const char *upload_id, uint32_t marker, uint32_t max,
                                 meta_part_t **out, size_t *n, bool *truncated)
{
    sq_conn_t *c = conn;
    meta_part_t *arr = NULL;
    size_t cnt = 0, cap = 0;
    bool trunc = false;
    wh_status_t st = WH_OK;
    int rc;
    sqlite3_stmt *s = c->stmt[S_PART_LIST];
    sq_bind_text(s, 1, upload_id);
    sqlite3_bind_int64(s, 2, marker);
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (max && cnt == max) {
            trunc = true;
            break;
        }
        if (!meta_grow((void **)&arr, &cap, cnt + 1, sizeof *arr)) {
            st = WH_ERR_NOMEM;
            break;
        }
        meta_part_t *pp = &arr[cnt++];
        memset(pp, 0, sizeof *pp);
        pp->info.number = (uint32_t)sqlite3_column_int64(s, 0);
        pp->info.size = (uint64_t)sqlite3_column_int64(s, 1);
        sq_col_copy(s, 2, pp->info.etag, sizeof pp->info.etag);
        pp->info.mtime = (time_t)sqlite3_column_int64(s, 3);
        sq_col_copy(s, 4, pp->info.crc64nvme, sizeof pp->info.crc64nvme);
        sq_col_copy(s, 5, pp->info.crc32c, sizeof pp->info.crc32c);
        sq_col_copy(s, 6, pp->ref.id, sizeof pp->ref.id);
    }
    if (st == WH_OK && rc != SQLITE_ROW && rc != SQLITE_DONE)
        st = sq_fail(c, rc, "part list");
    sq_done(s);
    for (size_t i = 0; st == WH_OK && i < cnt; i++)
        st = sq_chunks_get(c, &arr[i].ref);
    if (st != WH_OK) {
        meta_parts_free(arr, cnt);
        return st;
    }
    *out = arr;
    *n = cnt;
    if (truncated)
        *truncated = trunc;
    return WH_OK;
}

/* ---- the row operations of meta_mpu.h ---- */

static wh_status_t sq_upload_lock(void *conn, const char *bucket, const char *key,
                                  const char *upload_id)
{
    return sq_upload_check(conn, bucket, key, upload_id, NULL); /* the writer's lock holds it */
}

static wh_status_t sq_part_data(void *conn, const char *upload_id, uint32_t number,
                                char id[DATA_ID_LEN + 1])
{
    sq_conn_t *c = conn;
    sqlite3_stmt *s = c->stmt[S_PART_FILE];
    sq_bind_text(s, 1, upload_id);
    sqlite3_bind_int64(s, 2, number);
    int rc = sqlite3_step(s);
    wh_status_t st = WH_OK;
    id[0] = '\0';
    if (rc == SQLITE_ROW)
        sq_col_copy(s, 0, id, DATA_ID_LEN + 1);
    else if (rc != SQLITE_DONE)
        st = sq_fail(c, rc, "part lookup");
    sq_done(s);
    return st;
}

static wh_status_t sq_part_upsert(void *conn, const char *upload_id, const data_part_info_t *info,
                                  const char *data_id)
{
    sq_conn_t *c = conn;
    sqlite3_stmt *s = c->stmt[S_PART_UPSERT];
    sq_bind_text(s, 1, upload_id);
    sqlite3_bind_int64(s, 2, info->number);
    sqlite3_bind_int64(s, 3, (sqlite3_int64)info->size);
    sq_bind_text(s, 4, info->etag);
    sqlite3_bind_int64(s, 5, (sqlite3_int64)info->mtime);
    sq_bind_text(s, 6, info->crc64nvme);
    sq_bind_text(s, 7, info->crc32c);
    sq_bind_text(s, 8, data_id);
    return sq_exec_stmt(c, s, "part upsert");
}

static wh_status_t sq_upload_rows_delete(void *conn, const char *upload_id)
{
    sq_conn_t *c = conn;
    sqlite3_stmt *s = c->stmt[S_PART_DELETE_ALL];
    sq_bind_text(s, 1, upload_id);
    wh_status_t st = sq_exec_stmt(c, s, "part delete");
    if (st != WH_OK)
        return st;
    s = c->stmt[S_UPLOAD_DELETE];
    sq_bind_text(s, 1, upload_id);
    return sq_exec_stmt(c, s, "upload delete");
}

static wh_status_t sq_bucket_upload_ids(void *conn, const char *bucket, char (**out)[65], size_t *n)
{
    sq_conn_t *c = conn;
    char(*ids)[65] = NULL;
    size_t cnt = 0, cap = 0;
    wh_status_t st = WH_OK;
    int rc;
    sqlite3_stmt *s = c->stmt[S_UPLOAD_LIST];
    sq_bind_text(s, 1, bucket);
    sq_bind_key(s, 2, "", 0);
    sqlite3_bind_null(s, 3);
    sqlite3_bind_null(s, 4);
    sqlite3_bind_int64(s, 5, -1); /* every one */
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (!meta_grow((void **)&ids, &cap, cnt + 1, sizeof *ids)) {
            st = WH_ERR_NOMEM;
            break;
        }
        sq_col_copy(s, 1, ids[cnt++], sizeof *ids);
    }
    if (st == WH_OK && rc != SQLITE_ROW && rc != SQLITE_DONE)
        st = sq_fail(c, rc, "upload list");
    sq_done(s);
    if (st != WH_OK) {
        free(ids);
        return st;
    }
    *out = ids;
    *n = cnt;
    return WH_OK;
}

const meta_mpu_dialect_t SQ_MPU = {
    .ver = &SQ_VER,
    .upload_lock = sq_upload_lock,
    .parts_read = sq_parts_read,
    .part_data = sq_part_data,
    .part_upsert = sq_part_upsert,
    .upload_rows_delete = sq_upload_rows_delete,
    .bucket_upload_ids = sq_bucket_upload_ids,
    .chunks_get = sq_chunks_get,
    .chunks_put = sq_chunks_put,
    .chunks_drop = sq_chunks_drop,
};

wh_status_t sq_part_list(meta_t *mm, const char *bucket, const char *key, const char *upload_id,
                         uint32_t marker, uint32_t max, meta_part_t **out, size_t *n,
                         bool *truncated)
{
    sq_conn_t *c = &SQ(mm)->rd;
    pthread_mutex_lock(&c->lock);
    wh_status_t st = sq_upload_check(c, bucket, key, upload_id, NULL);
    if (st == WH_OK)
        st = sq_parts_read(c, upload_id, marker, max, out, n, truncated);
    pthread_mutex_unlock(&c->lock);
    return st;
}

wh_status_t sq_bucket_uploads_drop(sq_conn_t *c, const char *bucket, meta_part_t **parts, size_t *n)
{
    return meta_mpu_bucket_drop(&SQ_MPU, c, bucket, parts, n);
}

wh_status_t sq_upload_list(meta_t *mm, const char *bucket, const char *prefix,
                           const data_upload_page_t *page, data_upload_info_t **out, size_t *n)
{
    sq_conn_t *c = &SQ(mm)->rd;
    data_upload_info_t *arr = NULL;
    size_t cnt = 0, cap = 0;
    const char *pfx = prefix ? prefix : "";
    size_t plen = strlen(pfx);
    int rc;
    pthread_mutex_lock(&c->lock);
    wh_status_t st = sq_bucket_check(c, bucket);
    if (st != WH_OK)
        goto out;
    sqlite3_stmt *s = c->stmt[S_UPLOAD_LIST];
    sq_bind_text(s, 1, bucket);
    const char *from =
        page && page->from_key && strcmp(page->from_key, pfx) > 0 ? page->from_key : pfx;
    sq_bind_key(s, 2, from, strlen(from));
    if (page && page->from_key && from == page->from_key && page->after_id) {
        sq_bind_text(s, 3, page->after_id);
        sqlite3_bind_int64(s, 4, (sqlite3_int64)page->after_initiated);
    } else { /* a cached statement keeps the last call's values */
        sqlite3_bind_null(s, 3);
        sqlite3_bind_null(s, 4);
    }
    sqlite3_bind_int64(s, 5, page && page->limit ? (sqlite3_int64)page->limit : -1);
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        const char *key = sqlite3_column_blob(s, 0);
        size_t klen = (size_t)sqlite3_column_bytes(s, 0);
        if (!key || klen < plen || memcmp(key, pfx, plen) != 0)
            break;
        if (!meta_grow((void **)&arr, &cap, cnt + 1, sizeof *arr)) {
            st = WH_ERR_NOMEM;
            break;
        }
        data_upload_info_t *u = &arr[cnt];
        memset(u, 0, sizeof *u);
        if (!(u->key = malloc(klen + 1))) {
            st = WH_ERR_NOMEM;
            break;
        }
        memcpy(u->key, key, klen);
        u->key[klen] = '\0';
        sq_col_copy(s, 1, u->upload_id, sizeof u->upload_id);
        u->initiated = (time_t)sqlite3_column_int64(s, 2);
        sq_col_copy(s, 3, u->owner, sizeof u->owner);
        cnt++;
    }
    if (st == WH_OK && rc != SQLITE_ROW && rc != SQLITE_DONE)
        st = sq_fail(c, rc, "upload list");
    sq_done(s);
out:
    pthread_mutex_unlock(&c->lock);
    if (st != WH_OK) {
        data_upload_info_free(arr, cnt);
        return st;
    }
    *out = arr;
    *n = cnt;
    return WH_OK;
}

wh_status_t sq_upload_count(meta_t *mm, const char *bucket, uint64_t *n)
{
    sq_conn_t *c = &SQ(mm)->rd;
    pthread_mutex_lock(&c->lock);
    sqlite3_stmt *s = c->stmt[S_UPLOAD_COUNT];
    sq_bind_text(s, 1, bucket);
    int rc = sqlite3_step(s);
    wh_status_t st = WH_OK;
    if (rc == SQLITE_ROW)
        *n = (uint64_t)sqlite3_column_int64(s, 0);
    else
        st = sq_fail(c, rc, "upload count");
    sq_done(s);
    pthread_mutex_unlock(&c->lock);
    return st;
}

wh_status_t sq_upload_count_owner(meta_t *mm, const char *owner, uint64_t *n)
{
    sq_conn_t *c = &SQ(mm)->rd;
    pthread_mutex_lock(&c->lock);
    sqlite3_stmt *s = NULL;
    int rc =
        sqlite3_prepare_v2(c->db, "SELECT count(*) FROM uploads WHERE owner = ?1", -1, &s, NULL);
    wh_status_t st = WH_OK;
    if (rc == SQLITE_OK) {
        sq_bind_text(s, 1, owner);
        rc = sqlite3_step(s);
    }
    if (rc == SQLITE_ROW)
        *n = (uint64_t)sqlite3_column_int64(s, 0);
    else
        st = sq_fail(c, rc, "upload count by owner");
    sqlite3_finalize(s);
    pthread_mutex_unlock(&c->lock);
    return st;
}
