/* SPDX-License-Identifier: Apache-2.0 */
/* SQLite metadata backend: connections, schema, the transaction helper, buckets. See
 * meta_sqlite_int.h; objects in meta_sqlite_obj.c, multipart in meta_sqlite_mpu.c. */
#include "meta_sqlite/meta_sqlite_int.h"
#include "meta/meta_rules.h"

#include "base/log.h"
#include "base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define META_BUSY_TIMEOUT_MS 10000

static const char *const META_SQL[S_COUNT] = {
    [S_BEGIN] = "BEGIN IMMEDIATE",
    [S_COMMIT] = "COMMIT",
    [S_ROLLBACK] = "ROLLBACK",
    [S_SAVEPOINT] = "SAVEPOINT wh_group",
    [S_SAVEPOINT_RELEASE] = "RELEASE wh_group",
    [S_SAVEPOINT_ROLLBACK] = "ROLLBACK TO wh_group",
    [S_BUCKET_INSERT] = "INSERT INTO buckets(name, created, owner, acl) VALUES(?1, ?2, ?3, ?4)",
    [S_BUCKET_DELETE] = "DELETE FROM buckets WHERE name = ?1",
    [S_BUCKET_GET] = "SELECT created FROM buckets WHERE name = ?1",
    [S_BUCKET_LIST] = "SELECT name, created FROM buckets ORDER BY name",
    [S_BUCKET_HAS_OBJ] = "SELECT 1 FROM objects WHERE bucket = ?1 LIMIT 1",
    [S_OBJ_GET] = "SELECT " SQ_OBJ_COLS " FROM objects WHERE bucket = ?1 AND key = ?2",
    [S_OBJ_FILE] = "SELECT data_id FROM objects WHERE bucket = ?1 AND key = ?2",
    [S_OBJ_CUR] = "SELECT version_id, seq, dm, etag, lock_mode, lock_until, legal_hold FROM objects"
                  " WHERE bucket = ?1 AND key = ?2",
    [S_OBJ_UPSERT] = "INSERT OR REPLACE INTO objects(bucket, key, " SQ_OBJ_COLS ")"
                     " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15,"
                     " ?16, ?17, ?18, ?19, ?20, ?21, ?22)",
    [S_OBJ_DELETE] = "DELETE FROM objects WHERE bucket = ?1 AND key = ?2",
    [S_OBJ_REKEY] = "UPDATE objects SET key = ?3 WHERE bucket = ?1 AND key = ?2",
    [S_OBJ_LIST_GT] = "SELECT key, size, mtime, etag, owner FROM objects"
                      " WHERE bucket = ?1 AND key > ?2 AND dm = 0 ORDER BY key",
    [S_OBJ_LIST_GE] = "SELECT key, size, mtime, etag, owner FROM objects"
                      " WHERE bucket = ?1 AND key >= ?2 AND dm = 0 ORDER BY key",
    [S_FILE_REF] = "SELECT 1 FROM objects WHERE data_id = ?1"
                   " UNION ALL SELECT 1 FROM versions WHERE data_id = ?1"
                   " UNION ALL SELECT 1 FROM parts WHERE data_id = ?1"
                   " UNION ALL SELECT 1 FROM chunks WHERE chunk_id = ?1 LIMIT 1",
    [S_VERSIONING_GET] = "SELECT versioning FROM buckets WHERE name = ?1",
    [S_VERSIONING_SET] = "UPDATE buckets SET versioning = ?2 WHERE name = ?1"
                         " AND (?2 = 1 OR object_lock IS NULL)",
    [S_OBJ_GET_VID] = "SELECT " SQ_OBJ_COLS " FROM objects"
                      " WHERE bucket = ?1 AND key = ?2 AND version_id = ?3",
    [S_VER_GET] = "SELECT " SQ_OBJ_COLS " FROM versions"
                  " WHERE bucket = ?1 AND key = ?2 AND version_id = ?3",
    [S_VER_ARCHIVE] =
        "INSERT INTO versions(bucket, key, " SQ_OBJ_COLS ") SELECT bucket, key, " SQ_OBJ_COLS
        " FROM objects WHERE bucket = ?1 AND key = ?2",
    [S_VER_PROMOTE] =
        "INSERT INTO objects(bucket, key, " SQ_OBJ_COLS ") SELECT bucket, key, " SQ_OBJ_COLS
        " FROM versions WHERE bucket = ?1 AND key = ?2"
        " ORDER BY seq DESC LIMIT 1",
    [S_VER_DROP_PROMOTED] = "DELETE FROM versions WHERE bucket = ?1 AND key = ?2 AND seq ="
                            " (SELECT seq FROM objects WHERE bucket = ?1 AND key = ?2)",
    [S_VER_FIND] = "SELECT data_id, dm, lock_mode, lock_until, legal_hold FROM versions"
                   " WHERE bucket = ?1 AND key = ?2 AND version_id = ?3",
    [S_VER_DELETE] = "DELETE FROM versions WHERE bucket = ?1 AND key = ?2 AND version_id = ?3",
    [S_VER_SCAN_GT] = "SELECT key, version_id, dm, size, mtime, etag FROM objects"
                      " WHERE bucket = ?1 AND key > ?2 ORDER BY key",
    [S_VER_SCAN_GE] = "SELECT key, version_id, dm, size, mtime, etag FROM objects"
                      " WHERE bucket = ?1 AND key >= ?2 ORDER BY key",
    [S_VER_OF_KEY] = "SELECT version_id, dm, size, mtime, etag FROM versions"
                     " WHERE bucket = ?1 AND key = ?2 ORDER BY seq DESC",
    [S_TAGS_CUR] = "UPDATE objects SET tags = ?3 WHERE bucket = ?1 AND key = ?2 AND dm = 0",
    [S_TAGS_VER] = "UPDATE versions SET tags = ?4"
                   " WHERE bucket = ?1 AND key = ?2 AND version_id = ?3 AND dm = 0",
    [S_CHUNK_INSERT] = "INSERT INTO chunks(data_id, idx, chunk_id, off, len, crc64nvme, replicas,"
                       " ec_k, ec_m, ec_index, ec_stripe)"
                       " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    [S_CHUNK_GET] = "SELECT chunk_id, off, len, crc64nvme, replicas, ec_k, ec_m, ec_index,"
                    " ec_stripe FROM chunks WHERE data_id = ?1 ORDER BY idx",
    [S_CHUNK_DELETE] = "DELETE FROM chunks WHERE data_id = ?1",
    [S_UPLOAD_INSERT] = "INSERT INTO uploads(upload_id, bucket, key, initiated, content_type,"
                        " user_meta, owner, acl, tags, sse, lock_mode, lock_until, legal_hold)"
                        " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
    [S_UPLOAD_GET] = "SELECT initiated, content_type, user_meta, owner, acl, tags, sse, lock_mode,"
                     " lock_until, legal_hold FROM uploads"
                     " WHERE upload_id = ?1 AND bucket = ?2 AND key = ?3",
    [S_UPLOAD_DELETE] = "DELETE FROM uploads WHERE upload_id = ?1",
    [S_UPLOAD_LIST] = "SELECT key, upload_id, initiated, owner FROM uploads"
                      " WHERE bucket = ?1 AND key >= ?2 AND (?3 IS NULL OR key > ?2 OR"
                      " initiated > ?4 OR (initiated = ?4 AND upload_id > ?3))"
                      " ORDER BY key, initiated, upload_id LIMIT ?5",
    [S_UPLOAD_COUNT] = "SELECT COUNT(*) FROM uploads WHERE bucket = ?1",
    [S_PART_UPSERT] = "INSERT OR REPLACE INTO parts(upload_id, number, size, etag, mtime,"
                      " crc64nvme, crc32c, data_id) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    [S_PART_FILE] = "SELECT data_id FROM parts WHERE upload_id = ?1 AND number = ?2",
    [S_PART_LIST] = "SELECT number, size, etag, mtime, crc64nvme, crc32c, data_id FROM parts"
                    " WHERE upload_id = ?1 AND number > ?2 ORDER BY number",
    [S_PART_DELETE_ALL] = "DELETE FROM parts WHERE upload_id = ?1",
    [S_BUCKET_AUTH] = "SELECT owner, acl, policy, pab, ownership FROM buckets WHERE name = ?1",
    [S_BUCKET_SET_TAGS] = "UPDATE buckets SET tags = ?2 WHERE name = ?1",
    [S_BUCKET_SET_CORS] = "UPDATE buckets SET cors = ?2 WHERE name = ?1",
    [S_BUCKET_SET_PAB] = "UPDATE buckets SET pab = CAST(?2 AS INTEGER) WHERE name = ?1",
    [S_BUCKET_SET_OWNERSHIP] = "UPDATE buckets SET ownership = CAST(?2 AS INTEGER) WHERE name = ?1",
    [S_BUCKET_SET_LIFECYCLE] = "UPDATE buckets SET lifecycle = ?2 WHERE name = ?1",
    /* Object lock only with versioning Enabled, and then never Suspended: both read in the
     * transaction that changes the other. */
    [S_BUCKET_SET_OBJECT_LOCK] = "UPDATE buckets SET object_lock = ?2 WHERE name = ?1"
                                 " AND versioning = 1",
    [S_BUCKET_SET_ENCRYPTION] = "UPDATE buckets SET encryption = ?2 WHERE name = ?1",
    [S_BUCKET_GET_ATTRS] = "SELECT tags, cors, pab, ownership, lifecycle, object_lock, encryption"
                           " FROM buckets WHERE name = ?1",
    [S_BUCKET_SET_ACL] = "UPDATE buckets SET acl = ?2 WHERE name = ?1",
    [S_BUCKET_SET_POLICY] = "UPDATE buckets SET policy = ?2 WHERE name = ?1",
    [S_LOCK_CUR_SET] = "UPDATE objects SET lock_mode = ?3, lock_until = ?4, legal_hold = ?5"
                       " WHERE bucket = ?1 AND key = ?2 AND dm = 0",
    [S_LOCK_VER_GET] = "SELECT dm, lock_mode, lock_until, legal_hold FROM versions"
                       " WHERE bucket = ?1 AND key = ?2 AND version_id = ?3",
    [S_LOCK_VER_SET] = "UPDATE versions SET lock_mode = ?4, lock_until = ?5, legal_hold = ?6"
                       " WHERE bucket = ?1 AND key = ?2 AND version_id = ?3 AND dm = 0",
    [S_OBJ_SET_ACL] = "UPDATE objects SET acl = ?3 WHERE bucket = ?1 AND key = ?2",
    [S_USER_INSERT] = "INSERT INTO users(name, user_id, canonical_id, created)"
                      " VALUES(?1, ?2, ?3, ?4)",
    [S_USER_GET] = "SELECT name, user_id, canonical_id, created FROM users WHERE name = ?1",
    [S_USER_LIST] = "SELECT name, user_id, canonical_id, created FROM users ORDER BY name",
    [S_USER_DELETE] = "DELETE FROM users WHERE name = ?1",
    [S_USER_HAS_KEY] = "SELECT 1 FROM access_keys WHERE user_name = ?1 LIMIT 1",
    [S_USER_HAS_POLICY] = "SELECT 1 FROM user_policies WHERE user_name = ?1 LIMIT 1",
    [S_KEY_INSERT] = "INSERT INTO access_keys(access_key, user_name, secret_sealed, active,"
                     " created) VALUES(?1, ?2, ?3, ?4, ?5)",
    /* The SigV4 lookup: the primary key, and the user by its primary key. */
    [S_KEY_GET] = "SELECT k.access_key, k.user_name, k.secret_sealed, k.active, k.created,"
                  " u.user_id, u.canonical_id FROM access_keys k"
                  " JOIN users u ON u.name = k.user_name WHERE k.access_key = ?1",
    [S_KEY_LIST] = "SELECT access_key, user_name, secret_sealed, active, created FROM access_keys"
                   " WHERE user_name = ?1 ORDER BY created, access_key",
    [S_KEY_DELETE] = "DELETE FROM access_keys WHERE access_key = ?1",
    [S_KEY_SET_ACTIVE] = "UPDATE access_keys SET active = ?2 WHERE access_key = ?1",
    [S_KEYS_DELETE_USER] = "DELETE FROM access_keys WHERE user_name = ?1",
    [S_POLICY_PUT] = "INSERT OR REPLACE INTO user_policies(user_name, policy_name, document)"
                     " VALUES(?1, ?2, ?3)",
    [S_POLICY_GET] = "SELECT document FROM user_policies WHERE user_name = ?1 AND policy_name = ?2",
    [S_POLICY_LIST] = "SELECT policy_name, document FROM user_policies WHERE user_name = ?1"
                      " ORDER BY policy_name",
    [S_POLICY_DELETE] = "DELETE FROM user_policies WHERE user_name = ?1 AND policy_name = ?2",
    [S_POLICIES_DELETE_USER] = "DELETE FROM user_policies WHERE user_name = ?1",
};

/* ---- the transaction helper ---- */

static wh_status_t sq_tx_begin(void *conn)
{
    sq_conn_t *c = conn;
    return sq_exec_stmt(c, c->stmt[S_BEGIN], "begin");
}

static wh_status_t sq_tx_commit(void *conn)
{
    sq_conn_t *c = conn;
    wh_status_t st = sq_exec_stmt(c, c->stmt[S_COMMIT], "commit");
    if (st != WH_OK && !sqlite3_get_autocommit(c->db))
        sq_exec_stmt(c, c->stmt[S_ROLLBACK], "rollback");
    return st;
}

static void sq_tx_rollback(void *conn)
{
    sq_conn_t *c = conn;
    if (!sqlite3_get_autocommit(c->db))
        sq_exec_stmt(c, c->stmt[S_ROLLBACK], "rollback");
}

/* No retry: busy_timeout already waits for a competing writer (another process). */
static const meta_tx_ops_t SQ_TX = {
    .begin = sq_tx_begin,
    .commit = sq_tx_commit,
    .rollback = sq_tx_rollback,
    .retryable = NULL,
};

wh_status_t sq_write(sq_meta_t *m, meta_tx_fn fn, void *arg)
{
    pthread_mutex_lock(&m->wr.lock);
    wh_status_t st = meta_tx_run(&SQ_TX, &m->wr, fn, arg);
    pthread_mutex_unlock(&m->wr.lock);
    return st;
}

/* Commits the n writes of b[] in one transaction on the writer connection (its lock held). */
static void sq_group_commit(sq_meta_t *m, sq_gc_entry_t **b, size_t n)
{
    sq_conn_t *c = &m->wr;
    wh_status_t st = sq_tx_begin(c);
    size_t ran = 0;
    for (; st == WH_OK && ran < n; ran++) {
        sq_gc_entry_t *e = b[ran];
        if (sq_exec_stmt(c, c->stmt[S_SAVEPOINT], "savepoint") != WH_OK) {
            st = WH_ERR_IO;
            break;
        }
        e->st = e->fn(c, e->arg);
        if (sqlite3_get_autocommit(c->db)) {
            /* SQLite abandoned the whole transaction (SQLITE_FULL, an I/O error): the writes
             * before this one are gone with it. */
            st = e->st != WH_OK ? e->st : WH_ERR_IO;
            ran++;
            break;
        }
        if (e->st != WH_OK &&
            sq_exec_stmt(c, c->stmt[S_SAVEPOINT_ROLLBACK], "rollback to savepoint") != WH_OK) {
            st = WH_ERR_IO;
            ran++;
            break;
        }
        if (sq_exec_stmt(c, c->stmt[S_SAVEPOINT_RELEASE], "release savepoint") != WH_OK) {
            st = WH_ERR_IO;
            ran++;
            break;
        }
    }
    if (st == WH_OK)
        st = sq_tx_commit(c); /* a failed commit rolls back itself */
    else
        sq_tx_rollback(c);
    if (st != WH_OK) {
        for (size_t i = 0; i < ran; i++)
            if (b[i]->st == WH_OK)
                b[i]->st = st;
        /* Those not run yet go one at a time, as without grouping. */
        for (size_t i = ran; i < n; i++)
            b[i]->st = meta_tx_run(&SQ_TX, c, b[i]->fn, b[i]->arg);
    }
}

wh_status_t sq_write_group(sq_meta_t *m, meta_tx_fn fn, void *arg)
{
    sq_group_t *g = &m->group;
    sq_gc_entry_t e = {.fn = fn, .arg = arg, .st = WH_OK, .done = false, .next = NULL};
    pthread_mutex_lock(&g->mu);
    *g->tail = &e;
    g->tail = &e.next;
    while (!e.done) {
        if (g->leading) {
            pthread_cond_wait(&g->cv, &g->mu);
            continue;
        }
        /* Lead: take what is queued (this write among it), commit it, wake the waiters. */
        sq_gc_entry_t *b[SQ_GROUP_MAX];
        size_t n = 0;
        while (g->head && n < SQ_GROUP_MAX) {
            b[n++] = g->head;
            g->head = g->head->next;
        }
        if (!g->head)
            g->tail = &g->head;
        g->leading = true;
        pthread_mutex_unlock(&g->mu);

        pthread_mutex_lock(&m->wr.lock);
        if (n == 1)
            b[0]->st = meta_tx_run(&SQ_TX, &m->wr, b[0]->fn, b[0]->arg);
        else
            sq_group_commit(m, b, n);
        pthread_mutex_unlock(&m->wr.lock);

        pthread_mutex_lock(&g->mu);
        for (size_t i = 0; i < n; i++)
            b[i]->done = true;
        g->batches++;
        g->writes += n;
        g->leading = false;
        pthread_cond_broadcast(&g->cv);
    }
    pthread_mutex_unlock(&g->mu);
    return e.st;
}

wh_status_t sq_write_auth(sq_meta_t *m, meta_tx_fn fn, void *arg)
{
    wh_status_t st = sq_write(m, fn, arg);
    /* After the commit (or a failure, which may have committed): a cached read that began
     * before it carries the old number and is not used again (meta_cache.c). */
    if (m->auth_gen)
        __atomic_add_fetch(m->auth_gen, 1, __ATOMIC_SEQ_CST);
    return st;
}

static wh_status_t sq_auth_gen(meta_t *mm, uint64_t *gen)
{
    sq_meta_t *m = SQ(mm);
    if (!m->auth_gen)
        return WH_ERR_UNSUPPORTED;
    *gen = __atomic_load_n(m->auth_gen, __ATOMIC_SEQ_CST) + 1; /* never 0 */
    return WH_OK;
}

/* PATH-authgen: one page shared by every process that opens this database, holding the auth
 * generation. Its block is allocated before it is mapped, so that a store on a full disk
 * never faults on it; when it cannot be made (a full disk at the first start, a read-only
 * directory), nothing is cached. */
static void sq_auth_gen_map(sq_meta_t *m, const char *path)
{
    char gp[4096];
    if (snprintf(gp, sizeof gp, "%s-authgen", path) >= (int)sizeof gp)
        return;
    int fd = open(gp, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        wh_warn("store",
                "cannot open %s (%s): access keys, policies and ACLs are read from "
                "the database on every request",
                gp, strerror(errno));
        return;
    }
    long page = sysconf(_SC_PAGESIZE);
    int rc = posix_fallocate(fd, 0, page);
    if (rc != 0) {
        wh_warn("store",
                "cannot allocate %s (%s): access keys, policies and ACLs are read "
                "from the database on every request",
                gp, strerror(rc));
        close(fd);
        return;
    }
    void *p = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED)
        return;
    m->auth_gen = p;
}

/* ---- open/close ---- */

/* Opens one connection. The writer (schema=true) switches the database to WAL and creates or
 * migrates the schema; the reader only sets its pragmas. Opening an existing, current database
 * writes nothing, so a restart on a full disk works. */
/* meta.db holds sealed secrets, ACLs and every key name: owner-only (0600). SQLite gives its
 * -wal and -shm the database file's mode, so the file is made (or set) 0600 before it is
 * opened, and companions left by an older version are set too. */
static void sq_file_private(const char *path)
{
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return; /* sqlite3_open_v2 reports what is wrong with the path */
    struct stat sb;
    if (fstat(fd, &sb) == 0 && (sb.st_mode & 077) && fchmod(fd, 0600) != 0)
        wh_warn("store", "cannot make %s owner-only (chmod 600): %s", path, strerror(errno));
    close(fd);
    static const char *const sfx[] = {"-wal", "-shm"};
    for (size_t i = 0; i < sizeof sfx / sizeof sfx[0]; i++) {
        char p[PATH_MAX];
        if ((size_t)snprintf(p, sizeof p, "%s%s", path, sfx[i]) < sizeof p && stat(p, &sb) == 0 &&
            (sb.st_mode & 077) && chmod(p, 0600) != 0)
            wh_warn("store", "cannot make %s owner-only (chmod 600): %s", p, strerror(errno));
    }
}

static wh_status_t sq_conn_open(sq_conn_t *c, const char *path, bool schema)
{
    wh_status_t st = WH_ERR_IO;
    sq_file_private(path);
    int rc = sqlite3_open_v2(
        path, &c->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        wh_error("store",
                 "cannot open metadata database path=%s: %s; check the data directory "
                 "is writable",
                 path, c->db ? sqlite3_errmsg(c->db) : sqlite3_errstr(rc));
        goto err_close;
    }
    sqlite3_busy_timeout(c->db, META_BUSY_TIMEOUT_MS);
    sqlite3_extended_result_codes(c->db, 1);
    /* Keep the WAL file (and the space it holds) across close: a restart then needs no new
     * space for it, and a delete's commit on a full disk reuses its pages. */
    int persist = 1;
    sqlite3_file_control(c->db, "main", SQLITE_FCNTL_PERSIST_WAL, &persist);

    /* WAL: readers never block the writer. synchronous=FULL: a commit is durable once
     * store_writer_commit returns, as the S3 contract promises. */
    sqlite3_stmt *s = NULL;
    rc = sqlite3_prepare_v2(c->db, "PRAGMA journal_mode=WAL", -1, &s, NULL);
    if (rc == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW) {
        const char *mode = (const char *)sqlite3_column_text(s, 0);
        if (!mode || strcmp(mode, "wal") != 0) {
            wh_error("store",
                     "metadata database path=%s refused WAL mode (got %s); put the data "
                     "directory on a local file system",
                     path, mode ? mode : "?");
            sqlite3_finalize(s);
            goto err_close;
        }
    } else {
        wh_error("store", "cannot set WAL on path=%s: %s", path, sqlite3_errmsg(c->db));
        st = sq_fail(c, rc == SQLITE_OK ? sqlite3_errcode(c->db) : rc, "journal_mode");
        sqlite3_finalize(s);
        goto err_close;
    }
    sqlite3_finalize(s);

    char *err = NULL;
    rc = sqlite3_exec(c->db,
                      schema ? "PRAGMA synchronous=FULL; PRAGMA foreign_keys=OFF;"
                             : "PRAGMA synchronous=FULL; PRAGMA query_only=1;",
                      NULL, NULL, &err);
    if (rc != SQLITE_OK) {
        wh_error("store", "cannot set up metadata database path=%s: %s", path, err ? err : "?");
        sqlite3_free(err);
        st = sq_fail(c, rc, "pragmas");
        goto err_close;
    }
    if (schema && (st = sq_migrate(c, path)) != WH_OK)
        goto err_close;
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

static void sq_conn_close(sq_conn_t *c)
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

static void sq_close(meta_t *mm)
{
    sq_meta_t *m = SQ(mm);
    if (m->auth_gen)
        munmap(m->auth_gen, (size_t)sysconf(_SC_PAGESIZE));
    sq_conn_close(&m->rd);
    sq_conn_close(&m->wr); /* last: the final close checkpoints the WAL */
    pthread_cond_destroy(&m->group.cv);
    pthread_mutex_destroy(&m->group.mu);
    free(m);
}

static wh_status_t sq_set_durable(meta_t *mm, bool durable)
{
    sq_conn_t *c = &SQ(mm)->wr;
    pthread_mutex_lock(&c->lock);
    int rc = sqlite3_exec(c->db, durable ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=OFF",
                          NULL, NULL, NULL);
    wh_status_t st = rc == SQLITE_OK ? WH_OK : sq_fail(c, rc, "pragma synchronous");
    pthread_mutex_unlock(&c->lock);
    return st;
}

/* ---- buckets ---- */

typedef struct {
    const char *name;
    time_t created;
    const char *owner, *acl;
} sq_bucket_arg_t;

static wh_status_t tx_bucket_create(void *conn, void *arg)
{
    sq_conn_t *c = conn;
    sq_bucket_arg_t *a = arg;
    sqlite3_stmt *s = c->stmt[S_BUCKET_INSERT];
    sq_bind_text(s, 1, a->name);
    sqlite3_bind_int64(s, 2, (sqlite3_int64)a->created);
    sq_bind_text(s, 3, a->owner);
    sq_bind_text_or_null(s, 4, a->acl);
    int rc = sqlite3_step(s);
    wh_status_t st = WH_OK;
    if ((rc & 0xff) == SQLITE_CONSTRAINT)
        st = WH_ERR_EXISTS;
    else if (rc != SQLITE_DONE)
        st = sq_fail(c, rc, "bucket insert");
    sq_done(s);
    return st;
}

static wh_status_t sq_bucket_create(meta_t *m, const char *name, time_t created, const char *owner,
                                    const char *acl)
{
    sq_bucket_arg_t a = {name, created, owner, acl};
    return sq_write_auth(SQ(m), tx_bucket_create, &a);
}

typedef struct {
    const char *name;
    meta_part_t *parts;
    size_t n;
} sq_bdel_arg_t;

/* Objects make the bucket not empty; incomplete uploads do not (S3 drops them with it). */
static wh_status_t tx_bucket_delete(void *conn, void *arg)
{
    sq_conn_t *c = conn;
    sq_bdel_arg_t *a = arg;
    meta_parts_free(a->parts, a->n); /* a retried attempt starts afresh */
    a->parts = NULL;
    a->n = 0;
    wh_status_t st = sq_bucket_check(c, a->name);
    if (st != WH_OK)
        return st;
    st = sq_row_exists(c, S_BUCKET_HAS_OBJ, a->name, "bucket emptiness check");
    if (st == WH_OK)
        return WH_ERR_NOT_EMPTY;
    if (st != WH_ERR_NOT_FOUND)
        return st;
    if ((st = sq_bucket_uploads_drop(c, a->name, &a->parts, &a->n)) != WH_OK)
        return st;
    sqlite3_stmt *s = c->stmt[S_BUCKET_DELETE];
    sq_bind_text(s, 1, a->name);
    return sq_exec_stmt(c, s, "bucket delete");
}

static wh_status_t sq_bucket_delete(meta_t *m, const char *name, meta_part_t **parts, size_t *n)
{
    sq_bdel_arg_t a = {name, NULL, 0};
    wh_status_t st = sq_write_auth(SQ(m), tx_bucket_delete, &a);
    if (st != WH_OK) {
        meta_parts_free(a.parts, a.n);
        a.parts = NULL;
        a.n = 0;
    }
    *parts = a.parts;
    *n = a.n;
    return st;
}

static wh_status_t sq_bucket_exists(meta_t *mm, const char *name)
{
    sq_conn_t *c = &SQ(mm)->rd;
    pthread_mutex_lock(&c->lock);
    wh_status_t st = sq_bucket_check(c, name);
    pthread_mutex_unlock(&c->lock);
    return st;
}

static wh_status_t sq_bucket_list(meta_t *mm, data_bucket_info_t **out, size_t *n)
{
    sq_conn_t *c = &SQ(mm)->rd;
    data_bucket_info_t *arr = NULL;
    size_t cnt = 0, cap = 0;
    wh_status_t st = WH_OK;
    int rc;
    pthread_mutex_lock(&c->lock);
    sqlite3_stmt *s = c->stmt[S_BUCKET_LIST];
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (!meta_grow((void **)&arr, &cap, cnt + 1, sizeof *arr)) {
            st = WH_ERR_NOMEM;
            break;
        }
        sq_col_copy(s, 0, arr[cnt].name, sizeof arr[cnt].name);
        arr[cnt].created = (time_t)sqlite3_column_int64(s, 1);
        cnt++;
    }
    if (st == WH_OK && rc != SQLITE_DONE)
        st = sq_fail(c, rc, "bucket list");
    sq_done(s);
    pthread_mutex_unlock(&c->lock);
    if (st != WH_OK) {
        free(arr);
        return st;
    }
    *out = arr;
    *n = cnt;
    return WH_OK;
}

static wh_status_t sq_rules_write(meta_t *m, meta_tx_fn fn, void *arg)
{
    return sq_write(SQ(m), fn, arg);
}

static wh_status_t sq_rules_write_group(meta_t *m, meta_tx_fn fn, void *arg)
{
    return sq_write_group(SQ(m), fn, arg);
}

static wh_status_t sq_rules_write_auth(meta_t *m, meta_tx_fn fn, void *arg)
{
    return sq_write_auth(SQ(m), fn, arg);
}

static const meta_rules_t SQ_RULES = {
    .write = sq_rules_write,
    .write_group = sq_rules_write_group,
    .write_auth = sq_rules_write_auth,
    .ver = &SQ_VER,
    .mpu = &SQ_MPU,
    .ident = &SQ_IDENT,
};

static const meta_object_ops_t SQ_OBJECTS = {
    .bucket_create = sq_bucket_create,
    .bucket_delete = sq_bucket_delete,
    .bucket_exists = sq_bucket_exists,
    .bucket_list = sq_bucket_list,
    .bucket_auth_get = sq_bucket_auth_get,
    .bucket_set_acl = sq_bucket_set_acl,
    .bucket_set_policy = sq_bucket_set_policy,
    .bucket_attr_set = sq_bucket_attr_set,
    .bucket_attr_get = sq_bucket_attr_get,
    .object_set_acl = sq_object_set_acl,
    .object_get = sq_object_get,
    .object_put = meta_rules_object_put,
    .object_delete = meta_rules_object_delete,
    .object_scan = sq_object_scan,
    .object_rename = meta_rules_object_rename,
    .object_swap = meta_rules_object_swap,
    .data_referenced = sq_data_referenced,
};

static const meta_version_ops_t SQ_VERSIONS = {
    .bucket_versioning_get = sq_bucket_versioning_get,
    .bucket_versioning_set = sq_bucket_versioning_set,
    .object_get_version = sq_object_get_version,
    .object_delete_version = meta_rules_object_delete_version,
    .object_lock_set = meta_rules_object_lock_set,
    .version_scan = sq_version_scan,
    .object_tags_set = meta_rules_object_tags_set,
};

static const meta_upload_ops_t SQ_UPLOADS = {
    .upload_create = sq_upload_create,
    .upload_get = sq_upload_get,
    .part_put = meta_rules_part_put,
    .part_list = sq_part_list,
    .upload_delete = meta_rules_upload_delete,
    .upload_complete = meta_rules_upload_complete,
    .upload_list = sq_upload_list,
    .upload_count = sq_upload_count,
};

static const meta_ident_ops_t SQ_IDENTITY = {
    .user_create = sq_user_create,
    .user_get = sq_user_get,
    .user_list = sq_user_list,
    .user_delete = meta_rules_user_delete,
    .key_create = meta_rules_key_create,
    .key_get = sq_key_get,
    .key_list = sq_key_list,
    .key_delete = sq_key_delete,
    .key_set_active = sq_key_set_active,
    .user_policy_put = meta_rules_user_policy_put,
    .user_policy_get = sq_user_policy_get,
    .user_policy_list = sq_user_policy_list,
    .user_policy_delete = sq_user_policy_delete,
};

static const meta_ops_t SQ_OPS = {
    .name = "sqlite",
    .close = sq_close,
    .set_durable = sq_set_durable,
    .auth_gen = sq_auth_gen,
    .objects = &SQ_OBJECTS,
    .versions = &SQ_VERSIONS,
    .uploads = &SQ_UPLOADS,
    .ident = &SQ_IDENTITY,
    /* One process, one node: no cluster members, GC queue or locks. */
};

wh_status_t meta_sqlite_open(const char *path, meta_t **out)
{
    sq_meta_t *m = calloc(1, sizeof *m);
    if (!m)
        return WH_ERR_NOMEM;
    m->base.ops = &SQ_OPS;
    m->base.rules = &SQ_RULES;
    pthread_mutex_init(&m->group.mu, NULL);
    pthread_cond_init(&m->group.cv, NULL);
    m->group.tail = &m->group.head;
    wh_status_t st = sq_conn_open(&m->wr, path, true);
    if (st != WH_OK)
        goto err;
    st = sq_conn_open(&m->rd, path, false);
    if (st != WH_OK)
        goto err;
    sq_auth_gen_map(m, path);
    st = meta_cache_init(&m->base);
    if (st != WH_OK)
        goto err;
    *out = &m->base;
    return WH_OK;
err:
    sq_close(&m->base);
    return st;
}
