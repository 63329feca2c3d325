/* SPDX-License-Identifier: Apache-2.0 */
/* PostgreSQL metadata backend: multipart uploads and their parts. See meta_pg_int.h. */
#include "base/log.h"
#include "meta_pg/meta_pg_int.h"
#include "meta/meta_rules.h"

#include <stdlib.h>
#include <string.h>

static wh_status_t pg_upload_check(pg_conn_t *c, const char *bucket, const char *key,
                                   const char *upload_id, data_obj_meta_t *meta, bool lock)
{
    pg_params_t p = {0};
    pp_text(&p, upload_id);
    pp_text(&p, bucket);
    pp_bytes(&p, key, strlen(key));
    PGresult *r;
    wh_status_t st = pg_exec(c,
                             lock ? "SELECT initiated, content_type, user_meta, owner, acl, tags, "
                                    "sse, lock_mode, lock_until, legal_hold FROM uploads"
                                    " WHERE upload_id = $1 AND bucket = $2 AND key = $3"
                                    " FOR UPDATE"
                                  : "SELECT initiated, content_type, user_meta, owner, acl, tags, "
                                    "sse, lock_mode, lock_until, legal_hold FROM uploads"
                                    " WHERE upload_id = $1 AND bucket = $2 AND key = $3",
                             &p, &r, "upload lookup");
    if (st != WH_OK)
        return st;
    if (PQntuples(r) == 0) {
        st = WH_ERR_NOT_FOUND;
    } else if (meta) {
        data_obj_meta_free(meta);
        memset(meta, 0, sizeof *meta);
        meta->mtime = (time_t)pg_i64(r, 0, 0);
        pg_copy(r, 0, 1, meta->content_type, sizeof meta->content_type);
        if (!PQgetisnull(r, 0, 2) && !(meta->user_meta_json = pg_dup(r, 0, 2)))
            st = WH_ERR_NOMEM;
        pg_copy(r, 0, 3, meta->owner, sizeof meta->owner);
        if (st == WH_OK && !PQgetisnull(r, 0, 4) && !(meta->acl = pg_dup(r, 0, 4)))
            st = WH_ERR_NOMEM;
        if (st == WH_OK && !PQgetisnull(r, 0, 5) && !(meta->tags = pg_dup(r, 0, 5)))
            st = WH_ERR_NOMEM;
        if (st == WH_OK && !PQgetisnull(r, 0, 6) && !(meta->sse = pg_dup(r, 0, 6)))
            st = WH_ERR_NOMEM;
        meta->lock_mode = (int)pg_i64(r, 0, 7);
        meta->lock_until = pg_i64(r, 0, 8);
        meta->legal_hold = pg_i64(r, 0, 9) != 0;
    }
    PQclear(r);
    return st;
}

typedef struct {
    const char *bucket, *key, *upload_id;
    const data_obj_meta_t *meta;
    time_t initiated;
} pg_upload_arg_t;

static wh_status_t tx_upload_create(void *conn, void *arg)
{
    pg_upload_arg_t *a = arg;
    wh_status_t st = pg_bucket_check(conn, a->bucket);
    if (st != WH_OK)
        return st;
    pg_params_t p = {0};
    pp_text(&p, a->upload_id);
    pp_text(&p, a->bucket);
    pp_bytes(&p, a->key, strlen(a->key));
    pp_i64(&p, (int64_t)a->initiated);
    pp_text(&p, a->meta ? a->meta->content_type : "");
    pp_text(&p, NULL);
    p.v[p.n - 1] = a->meta ? a->meta->user_meta_json : NULL;
    pp_text(&p, a->meta ? a->meta->owner : "");
    pp_text(&p, NULL);
    p.v[p.n - 1] = a->meta ? a->meta->acl : NULL;
    pp_text(&p, NULL);
    p.v[p.n - 1] = a->meta ? a->meta->tags : NULL;
    pp_text(&p, NULL);
    p.v[p.n - 1] = a->meta ? a->meta->sse : NULL;
    pp_i64(&p, a->meta ? a->meta->lock_mode : 0);
    pp_i64(&p, a->meta ? a->meta->lock_until : 0);
    pp_i64(&p, a->meta && a->meta->legal_hold ? 1 : 0);
    return pg_exec(conn,
                   "INSERT INTO uploads(upload_id, bucket, key, initiated, content_type,"
                   " user_meta, owner, acl, tags, sse, lock_mode, lock_until, legal_hold)"
                   " VALUES($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
                   &p, NULL, "upload insert");
}

wh_status_t pg_upload_create(meta_t *m, const char *bucket, const char *key, const char *upload_id,
                             const data_obj_meta_t *meta, time_t initiated)
{
    pg_upload_arg_t a = {bucket, key, upload_id, meta, initiated};
    return pg_write(PGM(m), tx_upload_create, &a);
}

typedef struct {
    const char *bucket, *key, *upload_id;
    data_obj_meta_t *meta;
} pg_uget_arg_t;

static wh_status_t rd_upload_get(void *conn, void *arg)
{
    pg_uget_arg_t *a = arg;
    return pg_upload_check(conn, a->bucket, a->key, a->upload_id, a->meta, false);
}

wh_status_t pg_upload_get(meta_t *m, const char *bucket, const char *key, const char *upload_id,
                          data_obj_meta_t *meta)
{
    if (meta)
        memset(meta, 0, sizeof *meta);
    pg_uget_arg_t a = {bucket, key, upload_id, meta};
    return pg_read(PGM(m), rd_upload_get, &a);
}

/* Parts with number > marker in order, at most max (0 = all), with chunk maps: one statement. */
static wh_status_t pg_parts_read(void *c, const char *upload_id, uint32_t marker, uint32_t max,
                                 meta_part_t **out, size_t *n, bool *truncated)
{
    pg_params_t p = {0};
    pp_text(&p, upload_id);
    pp_i64(&p, marker);
    pp_i64(&p, max ? (int64_t)max + 1 : INT32_MAX);
    PGresult *r;
    wh_status_t st = pg_exec(c,
                             "WITH pp AS (SELECT * FROM parts WHERE upload_id = $1 AND number > $2"
                             " ORDER BY number LIMIT $3)"
                             " SELECT pp.number, pp.size, pp.etag, pp.mtime, pp.crc64nvme,"
                             " pp.crc32c, pp.data_id, " PG_CHUNK_COLS
                             " FROM pp LEFT JOIN chunks c ON c.data_id = pp.data_id"
                             " ORDER BY pp.number, c.idx",
                             &p, &r, "part list");
    if (st != WH_OK)
        return st;
    int rows = PQntuples(r);
    meta_part_t *arr = calloc(rows ? (size_t)rows : 1, sizeof *arr);
    size_t cnt = 0;
    bool trunc = false;
    if (!arr)
        st = WH_ERR_NOMEM;
    for (int i = 0; st == WH_OK && i < rows; i++) {
        uint32_t num = (uint32_t)pg_i64(r, i, 0);
        if (cnt == 0 || arr[cnt - 1].info.number != num) {
            if (max && cnt == max) {
                trunc = true;
                break;
            }
            meta_part_t *pp = &arr[cnt++];
            pp->info.number = num;
            pp->info.size = (uint64_t)pg_i64(r, i, 1);
            pg_copy(r, i, 2, pp->info.etag, sizeof pp->info.etag);
            pp->info.mtime = (time_t)pg_i64(r, i, 3);
            pg_copy(r, i, 4, pp->info.crc64nvme, sizeof pp->info.crc64nvme);
            pg_copy(r, i, 5, pp->info.crc32c, sizeof pp->info.crc32c);
            pg_copy(r, i, 6, pp->ref.id, sizeof pp->ref.id);
        }
        st = pg_chunk_add(r, i, 7, &arr[cnt - 1].ref);
    }
    PQclear(r);
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

typedef struct {
    const char *bucket, *key, *upload_id;
    uint32_t marker, max;
    meta_part_t *parts;
    size_t n;
    bool truncated;
} pg_plist_arg_t;

static wh_status_t rd_part_list(void *conn, void *arg)
{
    pg_plist_arg_t *a = arg;
    meta_parts_free(a->parts, a->n);
    a->parts = NULL;
    a->n = 0;
    wh_status_t st = pg_upload_check(conn, a->bucket, a->key, a->upload_id, NULL, false);
    if (st == WH_OK)
        st = pg_parts_read(conn, a->upload_id, a->marker, a->max, &a->parts, &a->n, &a->truncated);
    return st;
}

wh_status_t pg_part_list(meta_t *m, const char *bucket, const char *key, const char *upload_id,
                         uint32_t marker, uint32_t max, meta_part_t **out, size_t *n,
                         bool *truncated)
{
    pg_plist_arg_t a = {bucket, key, upload_id, marker, max, NULL, 0, false};
    wh_status_t st = pg_read(PGM(m), rd_part_list, &a);
    if (st != WH_OK) {
        meta_parts_free(a.parts, a.n);
        return st;
    }
    *out = a.parts;
    *n = a.n;
    if (truncated)
        *truncated = a.truncated;
    return WH_OK;
}

/* ---- the row operations of meta_mpu.h ---- */

static wh_status_t pg_upload_lock(void *conn, const char *bucket, const char *key,
                                  const char *upload_id)
{
    return pg_upload_check(conn, bucket, key, upload_id, NULL, true);
}

static wh_status_t pg_part_data(void *conn, const char *upload_id, uint32_t number,
                                char id[DATA_ID_LEN + 1])
{
    pg_params_t p = {0};
    pp_text(&p, upload_id);
    pp_i64(&p, number);
    PGresult *r;
    id[0] = '\0';
    wh_status_t st = pg_exec(conn, "SELECT data_id FROM parts WHERE upload_id = $1 AND number = $2",
                             &p, &r, "part lookup");
    if (st != WH_OK)
        return st;
    if (PQntuples(r) > 0)
        pg_copy(r, 0, 0, id, DATA_ID_LEN + 1);
    PQclear(r);
    return WH_OK;
}

static wh_status_t pg_part_upsert(void *conn, const char *upload_id, const data_part_info_t *info,
                                  const char *data_id)
{
    pg_params_t q = {0};
    pp_text(&q, upload_id);
    pp_i64(&q, info->number);
    pp_i64(&q, (int64_t)info->size);
    pp_text(&q, info->etag);
    pp_i64(&q, (int64_t)info->mtime);
    pp_text(&q, info->crc64nvme);
    pp_text(&q, info->crc32c);
    pp_text(&q, data_id);
    return pg_exec(conn,
                   "INSERT INTO parts(upload_id, number, size, etag, mtime, crc64nvme, crc32c,"
                   " data_id) VALUES($1, $2, $3, $4, $5, $6, $7, $8)"
                   " ON CONFLICT (upload_id, number) DO UPDATE SET size = EXCLUDED.size,"
                   " etag = EXCLUDED.etag, mtime = EXCLUDED.mtime,"
                   " crc64nvme = EXCLUDED.crc64nvme, crc32c = EXCLUDED.crc32c,"
                   " data_id = EXCLUDED.data_id",
                   &q, NULL, "part upsert");
}

static wh_status_t pg_upload_rows_delete(void *conn, const char *upload_id)
{
    pg_params_t p = {0};
    pp_text(&p, upload_id);
    wh_status_t st =
        pg_exec(conn, "DELETE FROM parts WHERE upload_id = $1", &p, NULL, "part delete");
    return st == WH_OK ? pg_exec(conn, "DELETE FROM uploads WHERE upload_id = $1", &p, NULL,
                                 "upload delete")
                       : st;
}

static wh_status_t pg_bucket_upload_ids(void *conn, const char *bucket, char (**out)[65], size_t *n)
{
    pg_params_t p = {0};
    pp_text(&p, bucket);
    PGresult *r;
    wh_status_t st =
        pg_exec(conn, "SELECT upload_id FROM uploads WHERE bucket = $1", &p, &r, "upload list");
    if (st != WH_OK)
        return st;
    int rows = PQntuples(r);
    char(*ids)[65] = calloc(rows ? (size_t)rows : 1, sizeof *ids);
    if (ids)
        for (int i = 0; i < rows; i++)
            pg_copy(r, i, 0, ids[i], sizeof *ids);
    PQclear(r);
    if (!ids)
        return WH_ERR_NOMEM;
    *out = ids;
    *n = (size_t)rows;
    return WH_OK;
}

const meta_mpu_dialect_t PG_MPU = {
    .ver = &PG_VER,
    .upload_lock = pg_upload_lock,
    .parts_read = pg_parts_read,
    .part_data = pg_part_data,
    .part_upsert = pg_part_upsert,
    .upload_rows_delete = pg_upload_rows_delete,
    .bucket_upload_ids = pg_bucket_upload_ids,
    .chunks_get = pg_chunks_get,
    .chunks_put = pg_chunks_put,
    .chunks_drop = pg_chunks_drop,
};

wh_status_t pg_bucket_uploads_drop(pg_conn_t *c, const char *bucket, meta_part_t **parts, size_t *n)
{
    return meta_mpu_bucket_drop(&PG_MPU, c, bucket, parts, n);
}

typedef struct {
    const char *bucket, *prefix;
    const data_upload_page_t *page;
    data_upload_info_t *arr;
    size_t n;
} pg_ulist_arg_t;

static wh_status_t rd_upload_list(void *conn, void *arg)
{
    pg_ulist_arg_t *a = arg;
    data_upload_info_free(a->arr, a->n);
    a->arr = NULL;
    a->n = 0;
    wh_status_t st = pg_bucket_check(conn, a->bucket);
    if (st != WH_OK)
        return st;
    size_t plen = strlen(a->prefix);
    const data_upload_page_t *pg = a->page;
    const char *from =
        pg && pg->from_key && strcmp(pg->from_key, a->prefix) > 0 ? pg->from_key : a->prefix;
    bool after = pg && pg->from_key && from == pg->from_key && pg->after_id;
    pg_params_t p = {0};
    pp_text(&p, a->bucket);
    pp_bytes(&p, a->prefix, plen);
    pp_bytes(&p, from, strlen(from));
    pp_text(&p, after ? pg->after_id : "");
    pp_i64(&p, after ? (int64_t)pg->after_initiated : 0);
    pp_i64(&p, pg && pg->limit ? (int64_t)pg->limit : 0);
    PGresult *r;
    /* $4 "": no position within the key; $6 0: no limit. */
    st = pg_exec(conn,
                 "SELECT encode(key, 'hex'), upload_id, initiated, owner FROM uploads"
                 " WHERE bucket = $1 AND key >= $3::bytea AND substring(key from 1 for"
                 " length($2::bytea)) = $2::bytea AND ($4 = '' OR key > $3::bytea OR"
                 " initiated > $5::bigint OR (initiated = $5::bigint AND"
                 " upload_id > $4))"
                 " ORDER BY key, initiated, upload_id"
                 " LIMIT NULLIF($6::bigint, 0)",
                 &p, &r, "upload list");
    if (st != WH_OK)
        return st;
    int rows = PQntuples(r);
    a->arr = calloc(rows ? (size_t)rows : 1, sizeof *a->arr);
    if (!a->arr)
        st = WH_ERR_NOMEM;
    for (int i = 0; st == WH_OK && i < rows; i++) {
        data_upload_info_t *u = &a->arr[i];
        size_t klen;
        if (!(u->key = pg_hexcol(r, i, 0, &klen))) {
            st = WH_ERR_NOMEM;
            break;
        }
        pg_copy(r, i, 1, u->upload_id, sizeof u->upload_id);
        u->initiated = (time_t)pg_i64(r, i, 2);
        pg_copy(r, i, 3, u->owner, sizeof u->owner);
        a->n++;
    }
    PQclear(r);
    return st;
}

wh_status_t pg_upload_list(meta_t *m, const char *bucket, const char *prefix,
                           const data_upload_page_t *page, data_upload_info_t **out, size_t *n)
{
    pg_ulist_arg_t a = {bucket, prefix ? prefix : "", page, NULL, 0};
    wh_status_t st = pg_read(PGM(m), rd_upload_list, &a);
    if (st != WH_OK) {
        data_upload_info_free(a.arr, a.n);
        return st;
    }
    *out = a.arr;
    *n = a.n;
    return WH_OK;
}

typedef struct pg_ucount_arg {
    const char *bucket;
    uint64_t n;
} pg_ucount_arg_t;

static wh_status_t rd_upload_count(void *conn, void *arg)
{
    pg_ucount_arg_t *a = arg;
    pg_params_t p = {0};
    pp_text(&p, a->bucket);
    PGresult *r;
    wh_status_t st =
        pg_exec(conn, "SELECT COUNT(*) FROM uploads WHERE bucket = $1", &p, &r, "upload count");
    if (st != WH_OK)
        return st;
    a->n = PQntuples(r) == 1 ? (uint64_t)pg_i64(r, 0, 0) : 0;
    PQclear(r);
    return WH_OK;
}

wh_status_t pg_upload_count(meta_t *m, const char *bucket, uint64_t *n)
{
    pg_ucount_arg_t a = {bucket, 0};
    wh_status_t st = pg_read(PGM(m), rd_upload_count, &a);
    if (st == WH_OK)
        *n = a.n;
    return st;
}

static wh_status_t rd_upload_count_owner(void *conn, void *arg)
{
    pg_ucount_arg_t *a = arg;
    pg_params_t p = {0};
    pp_text(&p, a->bucket);
    PGresult *r;
    wh_status_t st = pg_exec(conn, "SELECT COUNT(*) FROM uploads WHERE owner = $1", &p, &r,
                             "upload count by owner");
    if (st != WH_OK)
        return st;
    a->n = PQntuples(r) == 1 ? (uint64_t)pg_i64(r, 0, 0) : 0;
    PQclear(r);
    return WH_OK;
}

wh_status_t pg_upload_count_owner(meta_t *m, const char *owner, uint64_t *n)
{
    pg_ucount_arg_t a = {owner, 0};
    wh_status_t st = pg_read(PGM(m), rd_upload_count_owner, &a);
    if (st == WH_OK)
        *n = a.n;
    return st;
}
