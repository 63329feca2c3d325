/* SQLite metadata: see meta.h. */
#include "store/meta.h"

#include "base/log.h"
#include "base/util.h"
#include "store/store_int.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define META_SCHEMA_VERSION 1
#define META_BUSY_TIMEOUT_MS 10000

static const char META_SCHEMA[] =
    "CREATE TABLE IF NOT EXISTS buckets("
    "  name TEXT PRIMARY KEY COLLATE BINARY,"
    "  created INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS objects("
    "  bucket TEXT NOT NULL COLLATE BINARY,"
    "  key BLOB NOT NULL,"
    "  size INTEGER NOT NULL,"
    "  mtime INTEGER NOT NULL,"
    "  etag TEXT NOT NULL,"
    "  content_type TEXT NOT NULL,"
    "  user_meta TEXT,"
    "  crc32c TEXT NOT NULL,"
    "  crc64nvme TEXT NOT NULL,"
    "  parts INTEGER NOT NULL,"
    "  file_id TEXT NOT NULL,"
    "  PRIMARY KEY(bucket, key)) WITHOUT ROWID;"
    "CREATE UNIQUE INDEX IF NOT EXISTS objects_file ON objects(file_id);"
    "CREATE TABLE IF NOT EXISTS uploads("
    "  upload_id TEXT PRIMARY KEY,"
    "  bucket TEXT NOT NULL COLLATE BINARY,"
    "  key BLOB NOT NULL,"
    "  initiated INTEGER NOT NULL,"
    "  content_type TEXT NOT NULL,"
    "  user_meta TEXT);"
    "CREATE INDEX IF NOT EXISTS uploads_key ON uploads(bucket, key, initiated);"
    "CREATE TABLE IF NOT EXISTS parts("
    "  upload_id TEXT NOT NULL,"
    "  number INTEGER NOT NULL,"
    "  size INTEGER NOT NULL,"
    "  etag TEXT NOT NULL,"
    "  mtime INTEGER NOT NULL,"
    "  crc64nvme TEXT NOT NULL,"
    "  crc32c TEXT NOT NULL,"
    "  file_id TEXT NOT NULL,"
    "  PRIMARY KEY(upload_id, number)) WITHOUT ROWID;"
    "CREATE UNIQUE INDEX IF NOT EXISTS parts_file ON parts(file_id);";

enum {
    S_BEGIN,
    S_COMMIT,
    S_ROLLBACK,
    S_BUCKET_INSERT,
    S_BUCKET_DELETE,
    S_BUCKET_GET,
    S_BUCKET_LIST,
    S_BUCKET_HAS_OBJ,
    S_BUCKET_HAS_UPLOAD,
    S_OBJ_GET,
    S_OBJ_FILE,
    S_OBJ_UPSERT,
    S_OBJ_DELETE,
    S_OBJ_LIST_GT,
    S_OBJ_LIST_GE,
    S_FILE_REF,
    S_UPLOAD_INSERT,
    S_UPLOAD_GET,
    S_UPLOAD_DELETE,
    S_UPLOAD_LIST,
    S_PART_UPSERT,
    S_PART_FILE,
    S_PART_LIST,
    S_PART_DELETE_ALL,
    S_COUNT
};

static const char *const META_SQL[S_COUNT] = {
    [S_BEGIN] = "BEGIN IMMEDIATE",
    [S_COMMIT] = "COMMIT",
    [S_ROLLBACK] = "ROLLBACK",
    [S_BUCKET_INSERT] = "INSERT INTO buckets(name, created) VALUES(?1, ?2)",
    [S_BUCKET_DELETE] = "DELETE FROM buckets WHERE name = ?1",
    [S_BUCKET_GET] = "SELECT created FROM buckets WHERE name = ?1",
    [S_BUCKET_LIST] = "SELECT name, created FROM buckets ORDER BY name",
    [S_BUCKET_HAS_OBJ] = "SELECT 1 FROM objects WHERE bucket = ?1 LIMIT 1",
    [S_BUCKET_HAS_UPLOAD] = "SELECT 1 FROM uploads WHERE bucket = ?1 LIMIT 1",
    [S_OBJ_GET] = "SELECT size, mtime, etag, content_type, user_meta, crc32c, crc64nvme, parts,"
                  " file_id FROM objects WHERE bucket = ?1 AND key = ?2",
    [S_OBJ_FILE] = "SELECT file_id FROM objects WHERE bucket = ?1 AND key = ?2",
    [S_OBJ_UPSERT] = "INSERT OR REPLACE INTO objects(bucket, key, size, mtime, etag, content_type,"
                     " user_meta, crc32c, crc64nvme, parts, file_id)"
                     " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    [S_OBJ_DELETE] = "DELETE FROM objects WHERE bucket = ?1 AND key = ?2",
    [S_OBJ_LIST_GT] = "SELECT key, size, mtime, etag FROM objects"
                      " WHERE bucket = ?1 AND key > ?2 ORDER BY key",
    [S_OBJ_LIST_GE] = "SELECT key, size, mtime, etag FROM objects"
                      " WHERE bucket = ?1 AND key >= ?2 ORDER BY key",
    [S_FILE_REF] = "SELECT 1 FROM objects WHERE file_id = ?1"
                   " UNION ALL SELECT 1 FROM parts WHERE file_id = ?1 LIMIT 1",
    [S_UPLOAD_INSERT] = "INSERT INTO uploads(upload_id, bucket, key, initiated, content_type,"
                        " user_meta) VALUES(?1, ?2, ?3, ?4, ?5, ?6)",
    [S_UPLOAD_GET] = "SELECT initiated, content_type, user_meta FROM uploads"
                     " WHERE upload_id = ?1 AND bucket = ?2 AND key = ?3",
    [S_UPLOAD_DELETE] = "DELETE FROM uploads WHERE upload_id = ?1",
    [S_UPLOAD_LIST] = "SELECT key, upload_id, initiated FROM uploads"
                      " WHERE bucket = ?1 AND key >= ?2 ORDER BY key, initiated, upload_id",
    [S_PART_UPSERT] = "INSERT OR REPLACE INTO parts(upload_id, number, size, etag, mtime,"
                      " crc64nvme, crc32c, file_id) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    [S_PART_FILE] = "SELECT file_id FROM parts WHERE upload_id = ?1 AND number = ?2",
    [S_PART_LIST] = "SELECT number, size, etag, mtime, crc64nvme, crc32c, file_id FROM parts"
                    " WHERE upload_id = ?1 AND number > ?2 ORDER BY number",
    [S_PART_DELETE_ALL] = "DELETE FROM parts WHERE upload_id = ?1",
};

/* One SQLite connection and its statements, used under its mutex. */
typedef struct meta_conn {
    sqlite3 *db;
    pthread_mutex_t lock;
    sqlite3_stmt *stmt[S_COUNT];
    uint64_t list_rows;
} meta_conn_t;

/* Two connections: every mutation goes through wr; lookups and listings through rd. In WAL
 * mode a reader never waits for a writer's commit (and its fsync), so a GET is not stuck
 * behind a PUT that is committing. */
struct meta {
    meta_conn_t wr, rd;
};

/* ---- small helpers ---- */

static wh_status_t meta_fail(meta_conn_t *m, int rc, const char *what)
{
    wh_error("store", "sqlite %s failed: %s (rc %d)", what, sqlite3_errmsg(m->db), rc);
    switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return WH_ERR_BUSY;
    case SQLITE_NOMEM:
        return WH_ERR_NOMEM;
    case SQLITE_FULL:
    case SQLITE_IOERR:
        return WH_ERR_IO;
    default:
        return WH_ERR_INTERNAL;
    }
}

/* Statement ready for binding. Every use ends with meta_done(). */
static sqlite3_stmt *meta_stmt(meta_conn_t *m, int which)
{
    return m->stmt[which];
}

static void meta_done(sqlite3_stmt *s)
{
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
}

static void bind_text(sqlite3_stmt *s, int i, const char *v)
{
    sqlite3_bind_text(s, i, v ? v : "", -1, SQLITE_STATIC);
}

/* Keys are always bound as BLOBs: a TEXT key would sort apart from BLOB keys. */
static void bind_key(sqlite3_stmt *s, int i, const void *p, size_t n)
{
    sqlite3_bind_blob(s, i, n ? p : "", (int)n, SQLITE_STATIC);
}

static void col_copy(sqlite3_stmt *s, int i, char *dst, size_t cap)
{
    const unsigned char *v = sqlite3_column_text(s, i);
    size_t n = v ? (size_t)sqlite3_column_bytes(s, i) : 0;
    if (n >= cap)
        n = cap - 1;
    if (n)
        memcpy(dst, v, n);
    dst[n] = '\0';
}

static char *col_dup(sqlite3_stmt *s, int i)
{
    if (sqlite3_column_type(s, i) == SQLITE_NULL)
        return NULL;
    const void *v = sqlite3_column_blob(s, i);
    size_t n = (size_t)sqlite3_column_bytes(s, i);
    char *d = malloc(n + 1);
    if (!d)
        return NULL;
    if (n)
        memcpy(d, v, n);
    d[n] = '\0';
    return d;
}

static bool grow(void **arr, size_t *cap, size_t want, size_t elem)
{
    if (want <= *cap)
        return true;
    size_t nc = *cap ? *cap * 2 : 16;
    while (nc < want)
        nc *= 2;
    void *p = realloc(*arr, nc * elem);
    if (!p)
        return false;
    *arr = p;
    *cap = nc;
    return true;
}

/* Runs a statement that returns no rows. */
static wh_status_t meta_exec_stmt(meta_conn_t *m, sqlite3_stmt *s, const char *what)
{
    int rc = sqlite3_step(s);
    wh_status_t st = (rc == SQLITE_DONE || rc == SQLITE_ROW) ? WH_OK : meta_fail(m, rc, what);
    meta_done(s);
    return st;
}

static wh_status_t meta_begin(meta_conn_t *m)
{
    return meta_exec_stmt(m, meta_stmt(m, S_BEGIN), "begin");
}

static wh_status_t meta_commit(meta_conn_t *m)
{
    wh_status_t st = meta_exec_stmt(m, meta_stmt(m, S_COMMIT), "commit");
    if (st != WH_OK && !sqlite3_get_autocommit(m->db))
        meta_exec_stmt(m, meta_stmt(m, S_ROLLBACK), "rollback");
    return st;
}

static void meta_rollback(meta_conn_t *m)
{
    if (!sqlite3_get_autocommit(m->db))
        meta_exec_stmt(m, meta_stmt(m, S_ROLLBACK), "rollback");
}

/* WH_OK if a row exists for a one-parameter-text query. */
static wh_status_t meta_row_exists(meta_conn_t *m, int which, const char *arg, const char *what)
{
    sqlite3_stmt *s = meta_stmt(m, which);
    bind_text(s, 1, arg);
    int rc = sqlite3_step(s);
    wh_status_t st = rc == SQLITE_ROW    ? WH_OK
                     : rc == SQLITE_DONE ? WH_ERR_NOT_FOUND
                                         : meta_fail(m, rc, what);
    meta_done(s);
    return st;
}

static wh_status_t meta_bucket_check(meta_conn_t *m, const char *bucket)
{
    return meta_row_exists(m, S_BUCKET_GET, bucket, "bucket lookup");
}

/* ---- open/close ---- */

/* Opens one connection. The writer (schema=true) switches the database to WAL and creates the
 * schema; the reader only sets its pragmas. */
static wh_status_t meta_conn_open(meta_conn_t *c, const char *path, bool schema)
{
    wh_status_t st = WH_ERR_IO;
    int rc = sqlite3_open_v2(path, &c->db,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                             NULL);
    if (rc != SQLITE_OK) {
        wh_error("store", "cannot open metadata database path=%s: %s; check the data directory "
                 "is writable", path, c->db ? sqlite3_errmsg(c->db) : sqlite3_errstr(rc));
        goto err_close;
    }
    sqlite3_busy_timeout(c->db, META_BUSY_TIMEOUT_MS);
    sqlite3_extended_result_codes(c->db, 1);

    /* WAL: readers never block the writer. synchronous=FULL: a commit is durable once
     * store_writer_commit returns, as the S3 contract promises. */
    sqlite3_stmt *s = NULL;
    rc = sqlite3_prepare_v2(c->db, "PRAGMA journal_mode=WAL", -1, &s, NULL);
    if (rc == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW) {
        const char *mode = (const char *)sqlite3_column_text(s, 0);
        if (!mode || strcmp(mode, "wal") != 0) {
            wh_error("store", "metadata database path=%s refused WAL mode (got %s); put the data "
                     "directory on a local file system", path, mode ? mode : "?");
            sqlite3_finalize(s);
            goto err_close;
        }
    } else {
        wh_error("store", "cannot set WAL on path=%s: %s", path, sqlite3_errmsg(c->db));
        sqlite3_finalize(s);
        goto err_close;
    }
    sqlite3_finalize(s);

    char *err = NULL;
    char sql[4096];
    if (schema)
        snprintf(sql, sizeof sql,
                 "PRAGMA synchronous=FULL; PRAGMA foreign_keys=OFF; %s PRAGMA user_version=%d;",
                 META_SCHEMA, META_SCHEMA_VERSION);
    else
        snprintf(sql, sizeof sql, "PRAGMA synchronous=FULL; PRAGMA query_only=1;");
    rc = sqlite3_exec(c->db, sql, NULL, NULL, &err);
    if (rc != SQLITE_OK) {
        wh_error("store", "cannot set up metadata database path=%s: %s", path, err ? err : "?");
        sqlite3_free(err);
        goto err_close;
    }
    for (int i = 0; i < S_COUNT; i++) {
        rc = sqlite3_prepare_v3(c->db, META_SQL[i], -1, SQLITE_PREPARE_PERSISTENT, &c->stmt[i],
                                NULL);
        if (rc != SQLITE_OK) {
            wh_error("store", "cannot prepare statement %d (%s): %s", i, META_SQL[i],
                     sqlite3_errmsg(c->db));
            st = WH_ERR_INTERNAL;
            goto err_close;
        }
    }
    pthread_mutex_init(&c->lock, NULL);
    return WH_OK;

err_close:
    for (int i = 0; i < S_COUNT; i++)
        sqlite3_finalize(c->stmt[i]);
    sqlite3_close(c->db);
    memset(c, 0, sizeof *c);
    return st;
}

static void meta_conn_close(meta_conn_t *c)
{
    if (!c->db)
        return;
    for (int i = 0; i < S_COUNT; i++)
        sqlite3_finalize(c->stmt[i]);
    int rc = sqlite3_close(c->db);
    if (rc != SQLITE_OK)
        wh_error("store", "closing metadata database failed: %s", sqlite3_errstr(rc));
    pthread_mutex_destroy(&c->lock);
    memset(c, 0, sizeof *c);
}

wh_status_t meta_open(const char *path, meta_t **out)
{
    meta_t *m = calloc(1, sizeof *m);
    if (!m)
        return WH_ERR_NOMEM;
    wh_status_t st = meta_conn_open(&m->wr, path, true);
    if (st != WH_OK)
        goto err;
    st = meta_conn_open(&m->rd, path, false);
    if (st != WH_OK)
        goto err;
    *out = m;
    return WH_OK;
err:
    meta_close(m);
    return st;
}

void meta_close(meta_t *m)
{
    if (!m)
        return;
    meta_conn_close(&m->rd);
    meta_conn_close(&m->wr); /* last: the final close checkpoints the WAL */
    free(m);
}

wh_status_t meta_set_durable(meta_t *mm, bool durable)
{
    meta_conn_t *m = &mm->wr;
    pthread_mutex_lock(&m->lock);
    int rc = sqlite3_exec(m->db, durable ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=OFF",
                          NULL, NULL, NULL);
    wh_status_t st = rc == SQLITE_OK ? WH_OK : meta_fail(m, rc, "pragma synchronous");
    pthread_mutex_unlock(&m->lock);
    return st;
}

uint64_t meta_list_rows(meta_t *mm)
{
    meta_conn_t *m = &mm->rd;
    pthread_mutex_lock(&m->lock);
    uint64_t n = m->list_rows;
    pthread_mutex_unlock(&m->lock);
    return n;
}

/* ---- buckets ---- */

wh_status_t meta_bucket_create(meta_t *mm, const char *name, time_t created)
{
    meta_conn_t *m = &mm->wr;
    pthread_mutex_lock(&m->lock);
    sqlite3_stmt *s = meta_stmt(m, S_BUCKET_INSERT);
    bind_text(s, 1, name);
    sqlite3_bind_int64(s, 2, (sqlite3_int64)created);
    int rc = sqlite3_step(s);
    wh_status_t st = WH_OK;
    if (rc == SQLITE_CONSTRAINT_PRIMARYKEY || (rc & 0xff) == SQLITE_CONSTRAINT)
        st = WH_ERR_EXISTS;
    else if (rc != SQLITE_DONE)
        st = meta_fail(m, rc, "bucket insert");
    meta_done(s);
    pthread_mutex_unlock(&m->lock);
    return st;
}

wh_status_t meta_bucket_delete(meta_t *mm, const char *name)
{
    meta_conn_t *m = &mm->wr;
    pthread_mutex_lock(&m->lock);
    wh_status_t st = meta_begin(m);
    if (st != WH_OK)
        goto out;
    st = meta_bucket_check(m, name);
    if (st != WH_OK)
        goto rollback;
    st = meta_row_exists(m, S_BUCKET_HAS_OBJ, name, "bucket object check");
    if (st == WH_OK) {
        st = WH_ERR_NOT_EMPTY;
        goto rollback;
    }
    if (st != WH_ERR_NOT_FOUND)
        goto rollback;
    st = meta_row_exists(m, S_BUCKET_HAS_UPLOAD, name, "bucket upload check");
    if (st == WH_OK) {
        st = WH_ERR_NOT_EMPTY;
        goto rollback;
    }
    if (st != WH_ERR_NOT_FOUND)
        goto rollback;
    sqlite3_stmt *s = meta_stmt(m, S_BUCKET_DELETE);
    bind_text(s, 1, name);
    st = meta_exec_stmt(m, s, "bucket delete");
    if (st != WH_OK)
        goto rollback;
    st = meta_commit(m);
    goto out;
rollback:
    meta_rollback(m);
out:
    pthread_mutex_unlock(&m->lock);
    return st;
}

wh_status_t meta_bucket_exists(meta_t *mm, const char *name)
{
    meta_conn_t *m = &mm->rd;
    pthread_mutex_lock(&m->lock);
    wh_status_t st = meta_bucket_check(m, name);
    pthread_mutex_unlock(&m->lock);
    return st;
}

wh_status_t meta_bucket_list(meta_t *mm, store_bucket_info_t **out, size_t *n)
{
    meta_conn_t *m = &mm->rd;
    store_bucket_info_t *arr = NULL;
    size_t cnt = 0, cap = 0;
    wh_status_t st = WH_OK;
    int rc;
    pthread_mutex_lock(&m->lock);
    sqlite3_stmt *s = meta_stmt(m, S_BUCKET_LIST);
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (!grow((void **)&arr, &cap, cnt + 1, sizeof *arr)) {
            st = WH_ERR_NOMEM;
            break;
        }
        col_copy(s, 0, arr[cnt].name, sizeof arr[cnt].name);
        arr[cnt].created = (time_t)sqlite3_column_int64(s, 1);
        cnt++;
    }
    if (st == WH_OK && rc != SQLITE_DONE)
        st = meta_fail(m, rc, "bucket list");
    meta_done(s);
    pthread_mutex_unlock(&m->lock);
    if (st != WH_OK) {
        free(arr);
        return st;
    }
    *out = arr;
    *n = cnt;
    return WH_OK;
}

/* ---- objects ---- */

/* Inserts or replaces the object row of bucket/key (PUT, copy and multipart completion alike).
 * Write connection, transaction open. */
static wh_status_t meta_obj_upsert(meta_conn_t *m, const char *bucket, const char *key,
                                   size_t klen, const store_obj_meta_t *meta, const char *file_id)
{
    sqlite3_stmt *s = meta_stmt(m, S_OBJ_UPSERT);
    bind_text(s, 1, bucket);
    bind_key(s, 2, key, klen);
    sqlite3_bind_int64(s, 3, (sqlite3_int64)meta->size);
    sqlite3_bind_int64(s, 4, (sqlite3_int64)meta->mtime);
    bind_text(s, 5, meta->etag);
    bind_text(s, 6, meta->content_type);
    if (meta->user_meta_json)
        bind_text(s, 7, meta->user_meta_json);
    else
        sqlite3_bind_null(s, 7);
    bind_text(s, 8, meta->crc32c);
    bind_text(s, 9, meta->crc64nvme);
    sqlite3_bind_int64(s, 10, meta->parts);
    bind_text(s, 11, file_id);
    return meta_exec_stmt(m, s, "object upsert");
}

/* The current file id of bucket/key into id ("" when none). Lock held. */
static wh_status_t meta_obj_file(meta_conn_t *m, const char *bucket, const char *key, size_t klen,
                                 char id[META_ID_LEN + 1])
{
    sqlite3_stmt *s = meta_stmt(m, S_OBJ_FILE);
    bind_text(s, 1, bucket);
    bind_key(s, 2, key, klen);
    int rc = sqlite3_step(s);
    wh_status_t st = WH_OK;
    id[0] = '\0';
    if (rc == SQLITE_ROW)
        col_copy(s, 0, id, META_ID_LEN + 1);
    else if (rc != SQLITE_DONE)
        st = meta_fail(m, rc, "object file lookup");
    meta_done(s);
    return st;
}

wh_status_t meta_object_get(meta_t *mm, const char *bucket, const char *key, size_t klen,
                            store_obj_meta_t *meta, char file_id[META_ID_LEN + 1],
                            int objdir_fd, int *fd)
{
    meta_conn_t *m = &mm->rd;
    wh_status_t st = WH_OK;
    int ofd = -1;
    pthread_mutex_lock(&m->lock);
    sqlite3_stmt *s = meta_stmt(m, S_OBJ_GET);
    /* The writer unlinks a replaced file right after its commit, without waiting for readers:
     * a lookup that read the old row just before may find the file gone. The row has then
     * changed, so look again (twice is plenty; a third miss is real damage). */
    for (int attempt = 0;; attempt++) {
        bind_text(s, 1, bucket);
        bind_key(s, 2, key, klen);
        int rc = sqlite3_step(s);
        if (rc == SQLITE_DONE) {
            st = WH_ERR_NOT_FOUND;
            goto out;
        }
        if (rc != SQLITE_ROW) {
            st = meta_fail(m, rc, "object lookup");
            goto out;
        }
        if (!fd)
            break;
        char rel[META_ID_LEN + 4];
        store_file_relpath((const char *)sqlite3_column_text(s, 8), rel);
        ofd = openat(objdir_fd, rel, O_RDONLY | O_CLOEXEC);
        if (ofd >= 0)
            break;
        if (errno == ENOENT && attempt < 2) {
            meta_done(s);
            continue;
        }
        st = errno == ENOENT ? WH_ERR_IO : wh_status_from_errno(errno);
        wh_error("store", "cannot open object file bucket=%s file=%s: %m", bucket, rel);
        goto out;
    }
    if (meta) {
        memset(meta, 0, sizeof *meta);
        meta->size = (uint64_t)sqlite3_column_int64(s, 0);
        meta->mtime = (time_t)sqlite3_column_int64(s, 1);
        col_copy(s, 2, meta->etag, sizeof meta->etag);
        col_copy(s, 3, meta->content_type, sizeof meta->content_type);
        if (sqlite3_column_type(s, 4) != SQLITE_NULL) {
            meta->user_meta_json = col_dup(s, 4);
            if (!meta->user_meta_json) {
                st = WH_ERR_NOMEM;
                goto out;
            }
        }
        col_copy(s, 5, meta->crc32c, sizeof meta->crc32c);
        col_copy(s, 6, meta->crc64nvme, sizeof meta->crc64nvme);
        meta->parts = (uint32_t)sqlite3_column_int64(s, 7);
    }
    if (file_id)
        col_copy(s, 8, file_id, META_ID_LEN + 1);
    if (fd) {
        *fd = ofd;
        ofd = -1;
    }
out:
    if (ofd >= 0)
        close(ofd);
    meta_done(s);
    pthread_mutex_unlock(&m->lock);
    return st;
}

wh_status_t meta_object_put(meta_t *mm, const char *bucket, const char *key, size_t klen,
                            const store_obj_meta_t *meta, const char *file_id,
                            char old_file_id[META_ID_LEN + 1])
{
    meta_conn_t *m = &mm->wr;
    pthread_mutex_lock(&m->lock);
    wh_status_t st = meta_begin(m);
    if (st != WH_OK)
        goto out;
    st = meta_bucket_check(m, bucket);
    if (st != WH_OK)
        goto rollback;
    st = meta_obj_file(m, bucket, key, klen, old_file_id);
    if (st != WH_OK)
        goto rollback;
    st = meta_obj_upsert(m, bucket, key, klen, meta, file_id);
    if (st != WH_OK)
        goto rollback;
    st = meta_commit(m);
    goto out;
rollback:
    meta_rollback(m);
out:
    pthread_mutex_unlock(&m->lock);
    return st;
}

wh_status_t meta_object_delete(meta_t *mm, const char *bucket, const char *key, size_t klen,
                               char old_file_id[META_ID_LEN + 1])
{
    meta_conn_t *m = &mm->wr;
    old_file_id[0] = '\0';
    pthread_mutex_lock(&m->lock);
    wh_status_t st = meta_begin(m);
    if (st != WH_OK)
        goto out;
    st = meta_bucket_check(m, bucket);
    if (st != WH_OK)
        goto rollback;
    st = meta_obj_file(m, bucket, key, klen, old_file_id);
    if (st != WH_OK || !old_file_id[0])
        goto rollback; /* nothing to delete: WH_OK, idempotent */
    sqlite3_stmt *s = meta_stmt(m, S_OBJ_DELETE);
    bind_text(s, 1, bucket);
    bind_key(s, 2, key, klen);
    st = meta_exec_stmt(m, s, "object delete");
    if (st != WH_OK)
        goto rollback;
    st = meta_commit(m);
    if (st != WH_OK)
        old_file_id[0] = '\0';
    goto out;
rollback:
    meta_rollback(m);
out:
    pthread_mutex_unlock(&m->lock);
    return st;
}

wh_status_t meta_file_referenced(meta_t *mm, const char *file_id)
{
    meta_conn_t *m = &mm->rd;
    pthread_mutex_lock(&m->lock);
    wh_status_t st = meta_row_exists(m, S_FILE_REF, file_id, "file reference lookup");
    pthread_mutex_unlock(&m->lock);
    return st;
}

/* ---- listing ---- */

/* A growable byte string: the listing cursor. */
typedef struct {
    unsigned char *p;
    size_t n, cap;
} meta_bytes_t;

static bool bytes_set(meta_bytes_t *b, const void *p, size_t n)
{
    if (!grow((void **)&b->p, &b->cap, n + 1, 1))
        return false;
    if (n)
        memcpy(b->p, p, n);
    b->n = n;
    return true;
}

/* The smallest byte string greater than every string that starts with b (in place).
 * false if there is none (b is empty or all 0xff). */
static bool bytes_prefix_end(meta_bytes_t *b)
{
    while (b->n > 0 && b->p[b->n - 1] == 0xff)
        b->n--;
    if (b->n == 0)
        return false;
    b->p[b->n - 1]++;
    return true;
}

static int bytes_cmp(const void *a, size_t an, const void *b, size_t bn)
{
    int c = memcmp(a, b, WH_MIN(an, bn));
    if (c)
        return c;
    return an < bn ? -1 : an > bn ? 1 : 0;
}

static char *strndup_bytes(const void *p, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, p, n);
        d[n] = '\0';
    }
    return d;
}

/* S3 listing. Walks keys in byte order from the cursor; a key that contains the delimiter
 * after the prefix rolls up into a common prefix, and the walk then jumps past every key
 * under that prefix with one range query (key >= prefix-end), so a directory of a million
 * keys costs one row, not a million. Entries and common prefixes both count toward max_keys. */
wh_status_t meta_object_list(meta_t *mm, const char *bucket, const store_list_params_t *p,
                             store_list_result_t *out)
{
    meta_conn_t *m = &mm->rd;
    memset(out, 0, sizeof *out);
    const char *prefix = p->prefix ? p->prefix : "";
    size_t plen = strlen(prefix);
    const char *delim = p->delimiter && p->delimiter[0] ? p->delimiter : NULL;
    size_t dlen = delim ? strlen(delim) : 0;
    const char *after = p->start_after && p->start_after[0] ? p->start_after : NULL;
    uint32_t max = WH_MIN(p->max_keys, 1000u);
    size_t cap_e = 0, cap_p = 0, count = 0;
    const char *last = NULL; /* last item returned: the next marker if truncated */
    meta_bytes_t cur = {0};
    bool inclusive = true;
    wh_status_t st = WH_OK;

    pthread_mutex_lock(&m->lock);
    st = meta_bucket_check(m, bucket);
    if (st != WH_OK || max == 0)
        goto out;

    /* The starting point: after start_after (past its whole group if it is a common prefix,
     * as returned in a previous page's marker), and never before the prefix. */
    if (!bytes_set(&cur, prefix, plen)) {
        st = WH_ERR_NOMEM;
        goto out;
    }
    if (after) {
        size_t alen = strlen(after);
        meta_bytes_t a = {0};
        bool a_incl = false;
        if (!bytes_set(&a, after, alen)) {
            st = WH_ERR_NOMEM;
            goto out;
        }
        if (delim && alen > plen && memcmp(after, prefix, plen) == 0) {
            const char *d = memmem(after + plen, alen - plen, delim, dlen);
            if (d && (size_t)(d - after) + dlen == alen) {
                if (!bytes_prefix_end(&a)) {
                    free(a.p);
                    goto out; /* nothing sorts after this group */
                }
                a_incl = true;
            }
        }
        if (bytes_cmp(a.p, a.n, cur.p, cur.n) >= 0) {
            free(cur.p);
            cur = a;
            inclusive = a_incl;
        } else {
            free(a.p);
        }
    }

    for (;;) {
        sqlite3_stmt *s = meta_stmt(m, inclusive ? S_OBJ_LIST_GE : S_OBJ_LIST_GT);
        bind_text(s, 1, bucket);
        bind_key(s, 2, cur.p, cur.n);
        bool jumped = false, finished = false;
        int rc;
        while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
            m->list_rows++;
            const char *key = sqlite3_column_blob(s, 0);
            size_t klen = (size_t)sqlite3_column_bytes(s, 0);
            if (!key || klen < plen || memcmp(key, prefix, plen) != 0) {
                finished = true;
                break;
            }
            const char *d = delim ? memmem(key + plen, klen - plen, delim, dlen) : NULL;
            if (count == max) {
                out->truncated = true;
                finished = true;
                break;
            }
            if (d) {
                size_t cplen = (size_t)(d - key) + dlen;
                if (!grow((void **)&out->prefixes, &cap_p, out->n_prefixes + 1, sizeof(char *)) ||
                    !(out->prefixes[out->n_prefixes] = strndup_bytes(key, cplen)) ||
                    !bytes_set(&cur, key, cplen)) {
                    st = WH_ERR_NOMEM;
                    break;
                }
                last = out->prefixes[out->n_prefixes++];
                count++;
                if (!bytes_prefix_end(&cur))
                    finished = true;
                else
                    jumped = true;
                inclusive = true;
                break;
            }
            if (!grow((void **)&out->entries, &cap_e, out->n_entries + 1, sizeof *out->entries)) {
                st = WH_ERR_NOMEM;
                break;
            }
            store_list_entry_t *e = &out->entries[out->n_entries];
            memset(e, 0, sizeof *e);
            if (!(e->key = strndup_bytes(key, klen))) {
                st = WH_ERR_NOMEM;
                break;
            }
            e->size = (uint64_t)sqlite3_column_int64(s, 1);
            e->mtime = (time_t)sqlite3_column_int64(s, 2);
            col_copy(s, 3, e->etag, sizeof e->etag);
            last = e->key;
            out->n_entries++;
            count++;
        }
        if (st == WH_OK && rc != SQLITE_ROW && rc != SQLITE_DONE)
            st = meta_fail(m, rc, "object list");
        meta_done(s);
        if (st != WH_OK || finished || !jumped)
            break;
    }
    if (st == WH_OK && out->truncated) {
        out->next_marker = strdup(last);
        if (!out->next_marker)
            st = WH_ERR_NOMEM;
    }
out:
    pthread_mutex_unlock(&m->lock);
    free(cur.p);
    if (st != WH_OK)
        store_list_result_free(out);
    return st;
}

/* ---- multipart ---- */

static wh_status_t meta_upload_check(meta_conn_t *m, const char *bucket, const char *key,
                                     const char *upload_id, store_obj_meta_t *meta)
{
    sqlite3_stmt *s = meta_stmt(m, S_UPLOAD_GET);
    bind_text(s, 1, upload_id);
    bind_text(s, 2, bucket);
    bind_key(s, 3, key, strlen(key));
    int rc = sqlite3_step(s);
    wh_status_t st = WH_OK;
    if (rc == SQLITE_DONE) {
        st = WH_ERR_NOT_FOUND;
    } else if (rc != SQLITE_ROW) {
        st = meta_fail(m, rc, "upload lookup");
    } else if (meta) {
        memset(meta, 0, sizeof *meta);
        meta->mtime = (time_t)sqlite3_column_int64(s, 0);
        col_copy(s, 1, meta->content_type, sizeof meta->content_type);
        if (sqlite3_column_type(s, 2) != SQLITE_NULL && !(meta->user_meta_json = col_dup(s, 2)))
            st = WH_ERR_NOMEM;
    }
    meta_done(s);
    return st;
}

wh_status_t meta_upload_create(meta_t *mm, const char *bucket, const char *key,
                               const char *upload_id, const store_obj_meta_t *meta,
                               time_t initiated)
{
    meta_conn_t *m = &mm->wr;
    pthread_mutex_lock(&m->lock);
    wh_status_t st = meta_begin(m);
    if (st != WH_OK)
        goto out;
    st = meta_bucket_check(m, bucket);
    if (st != WH_OK)
        goto rollback;
    sqlite3_stmt *s = meta_stmt(m, S_UPLOAD_INSERT);
    bind_text(s, 1, upload_id);
    bind_text(s, 2, bucket);
    bind_key(s, 3, key, strlen(key));
    sqlite3_bind_int64(s, 4, (sqlite3_int64)initiated);
    bind_text(s, 5, meta ? meta->content_type : "");
    if (meta && meta->user_meta_json)
        bind_text(s, 6, meta->user_meta_json);
    else
        sqlite3_bind_null(s, 6);
    st = meta_exec_stmt(m, s, "upload insert");
    if (st != WH_OK)
        goto rollback;
    st = meta_commit(m);
    goto out;
rollback:
    meta_rollback(m);
out:
    pthread_mutex_unlock(&m->lock);
    return st;
}

wh_status_t meta_upload_get(meta_t *mm, const char *bucket, const char *key,
                            const char *upload_id, store_obj_meta_t *meta)
{
    meta_conn_t *m = &mm->rd;
    pthread_mutex_lock(&m->lock);
    wh_status_t st = meta_upload_check(m, bucket, key, upload_id, meta);
    pthread_mutex_unlock(&m->lock);
    return st;
}

wh_status_t meta_part_put(meta_t *mm, const char *bucket, const char *key, const char *upload_id,
                          const store_part_info_t *info, const char *file_id,
                          char old_file_id[META_ID_LEN + 1])
{
    meta_conn_t *m = &mm->wr;
    old_file_id[0] = '\0';
    pthread_mutex_lock(&m->lock);
    wh_status_t st = meta_begin(m);
    if (st != WH_OK)
        goto out;
    st = meta_upload_check(m, bucket, key, upload_id, NULL);
    if (st != WH_OK)
        goto rollback;
    sqlite3_stmt *s = meta_stmt(m, S_PART_FILE);
    bind_text(s, 1, upload_id);
    sqlite3_bind_int64(s, 2, info->number);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW)
        col_copy(s, 0, old_file_id, META_ID_LEN + 1);
    else if (rc != SQLITE_DONE)
        st = meta_fail(m, rc, "part lookup");
    meta_done(s);
    if (st != WH_OK)
        goto rollback;
    s = meta_stmt(m, S_PART_UPSERT);
    bind_text(s, 1, upload_id);
    sqlite3_bind_int64(s, 2, info->number);
    sqlite3_bind_int64(s, 3, (sqlite3_int64)info->size);
    bind_text(s, 4, info->etag);
    sqlite3_bind_int64(s, 5, (sqlite3_int64)info->mtime);
    bind_text(s, 6, info->crc64nvme);
    bind_text(s, 7, info->crc32c);
    bind_text(s, 8, file_id);
    st = meta_exec_stmt(m, s, "part upsert");
    if (st != WH_OK)
        goto rollback;
    st = meta_commit(m);
    if (st != WH_OK)
        old_file_id[0] = '\0';
    goto out;
rollback:
    old_file_id[0] = '\0';
    meta_rollback(m);
out:
    pthread_mutex_unlock(&m->lock);
    return st;
}

/* Reads parts with number > marker, at most max (0 = all). Lock held. */
static wh_status_t meta_parts_read(meta_conn_t *m, const char *upload_id, uint32_t marker,
                                   uint32_t max, meta_part_t **out, size_t *n, bool *truncated)
{
    meta_part_t *arr = NULL;
    size_t cnt = 0, cap = 0;
    bool trunc = false;
    wh_status_t st = WH_OK;
    int rc;
    sqlite3_stmt *s = meta_stmt(m, S_PART_LIST);
    bind_text(s, 1, upload_id);
    sqlite3_bind_int64(s, 2, marker);
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (max && cnt == max) {
            trunc = true;
            break;
        }
        if (!grow((void **)&arr, &cap, cnt + 1, sizeof *arr)) {
            st = WH_ERR_NOMEM;
            break;
        }
        meta_part_t *pp = &arr[cnt++];
        memset(pp, 0, sizeof *pp);
        pp->info.number = (uint32_t)sqlite3_column_int64(s, 0);
        pp->info.size = (uint64_t)sqlite3_column_int64(s, 1);
        col_copy(s, 2, pp->info.etag, sizeof pp->info.etag);
        pp->info.mtime = (time_t)sqlite3_column_int64(s, 3);
        col_copy(s, 4, pp->info.crc64nvme, sizeof pp->info.crc64nvme);
        col_copy(s, 5, pp->info.crc32c, sizeof pp->info.crc32c);
        col_copy(s, 6, pp->file_id, sizeof pp->file_id);
    }
    if (st == WH_OK && rc != SQLITE_ROW && rc != SQLITE_DONE)
        st = meta_fail(m, rc, "part list");
    meta_done(s);
    if (st != WH_OK) {
        free(arr);
        return st;
    }
    *out = arr;
    *n = cnt;
    if (truncated)
        *truncated = trunc;
    return WH_OK;
}

wh_status_t meta_part_list(meta_t *mm, const char *bucket, const char *key, const char *upload_id,
                           uint32_t marker, uint32_t max, meta_part_t **out, size_t *n,
                           bool *truncated)
{
    meta_conn_t *m = &mm->rd;
    pthread_mutex_lock(&m->lock);
    wh_status_t st = meta_upload_check(m, bucket, key, upload_id, NULL);
    if (st == WH_OK)
        st = meta_parts_read(m, upload_id, marker, max, out, n, truncated);
    pthread_mutex_unlock(&m->lock);
    return st;
}

/* Deletes an upload's part rows and its row. Lock held, inside a transaction. */
static wh_status_t meta_upload_drop(meta_conn_t *m, const char *upload_id)
{
    sqlite3_stmt *s = meta_stmt(m, S_PART_DELETE_ALL);
    bind_text(s, 1, upload_id);
    wh_status_t st = meta_exec_stmt(m, s, "part delete");
    if (st != WH_OK)
        return st;
    s = meta_stmt(m, S_UPLOAD_DELETE);
    bind_text(s, 1, upload_id);
    return meta_exec_stmt(m, s, "upload delete");
}

wh_status_t meta_upload_delete(meta_t *mm, const char *bucket, const char *key,
                               const char *upload_id, meta_part_t **files, size_t *n)
{
    meta_conn_t *m = &mm->wr;
    meta_part_t *parts = NULL;
    size_t np = 0;
    pthread_mutex_lock(&m->lock);
    wh_status_t st = meta_begin(m);
    if (st != WH_OK)
        goto out;
    st = meta_upload_check(m, bucket, key, upload_id, NULL);
    if (st != WH_OK)
        goto rollback;
    st = meta_parts_read(m, upload_id, 0, 0, &parts, &np, NULL);
    if (st != WH_OK)
        goto rollback;
    st = meta_upload_drop(m, upload_id);
    if (st != WH_OK)
        goto rollback;
    st = meta_commit(m);
    if (st != WH_OK)
        goto out;
    *files = parts;
    *n = np;
    parts = NULL;
    goto out;
rollback:
    meta_rollback(m);
out:
    pthread_mutex_unlock(&m->lock);
    free(parts);
    return st;
}

wh_status_t meta_upload_complete(meta_t *mm, const char *bucket, const char *key,
                                 const char *upload_id, const meta_part_t *parts, size_t n,
                                 const store_obj_meta_t *meta, const char *file_id,
                                 char old_file_id[META_ID_LEN + 1], meta_part_t **all_parts,
                                 size_t *n_all)
{
    meta_conn_t *m = &mm->wr;
    meta_part_t *all = NULL;
    size_t na = 0;
    size_t klen = strlen(key);
    old_file_id[0] = '\0';
    pthread_mutex_lock(&m->lock);
    wh_status_t st = meta_begin(m);
    if (st != WH_OK)
        goto out;
    st = meta_upload_check(m, bucket, key, upload_id, NULL);
    if (st != WH_OK)
        goto rollback;
    st = meta_parts_read(m, upload_id, 0, 0, &all, &na, NULL);
    if (st != WH_OK)
        goto rollback;
    /* Both lists ascend by number: a merge walk checks nothing moved under us. */
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        while (j < na && all[j].info.number < parts[i].info.number)
            j++;
        if (j == na || all[j].info.number != parts[i].info.number ||
            strcmp(all[j].file_id, parts[i].file_id) != 0) {
            wh_warn("store", "upload=%s part=%u changed during completion; retry", upload_id,
                    parts[i].info.number);
            st = WH_ERR_PRECONDITION;
            goto rollback;
        }
    }
    st = meta_obj_file(m, bucket, key, klen, old_file_id);
    if (st != WH_OK)
        goto rollback;
    st = meta_obj_upsert(m, bucket, key, klen, meta, file_id);
    if (st != WH_OK)
        goto rollback;
    st = meta_upload_drop(m, upload_id);
    if (st != WH_OK)
        goto rollback;
    st = meta_commit(m);
    if (st != WH_OK) {
        old_file_id[0] = '\0';
        goto out;
    }
    *all_parts = all;
    *n_all = na;
    all = NULL;
    goto out;
rollback:
    old_file_id[0] = '\0';
    meta_rollback(m);
out:
    pthread_mutex_unlock(&m->lock);
    free(all);
    return st;
}

wh_status_t meta_upload_list(meta_t *mm, const char *bucket, const char *prefix,
                             store_upload_info_t **out, size_t *n)
{
    meta_conn_t *m = &mm->rd;
    store_upload_info_t *arr = NULL;
    size_t cnt = 0, cap = 0;
    const char *pfx = prefix ? prefix : "";
    size_t plen = strlen(pfx);
    int rc;
    pthread_mutex_lock(&m->lock);
    wh_status_t st = meta_bucket_check(m, bucket);
    if (st != WH_OK)
        goto out;
    sqlite3_stmt *s = meta_stmt(m, S_UPLOAD_LIST);
    bind_text(s, 1, bucket);
    bind_key(s, 2, pfx, plen);
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        const char *key = sqlite3_column_blob(s, 0);
        size_t klen = (size_t)sqlite3_column_bytes(s, 0);
        if (!key || klen < plen || memcmp(key, pfx, plen) != 0)
            break;
        if (!grow((void **)&arr, &cap, cnt + 1, sizeof *arr)) {
            st = WH_ERR_NOMEM;
            break;
        }
        store_upload_info_t *u = &arr[cnt];
        memset(u, 0, sizeof *u);
        if (!(u->key = strndup_bytes(key, klen))) {
            st = WH_ERR_NOMEM;
            break;
        }
        col_copy(s, 1, u->upload_id, sizeof u->upload_id);
        u->initiated = (time_t)sqlite3_column_int64(s, 2);
        cnt++;
    }
    if (st == WH_OK && rc != SQLITE_ROW && rc != SQLITE_DONE)
        st = meta_fail(m, rc, "upload list");
    meta_done(s);
out:
    pthread_mutex_unlock(&m->lock);
    if (st != WH_OK) {
        store_upload_info_free(arr, cnt);
        return st;
    }
    *out = arr;
    *n = cnt;
    return WH_OK;
}
