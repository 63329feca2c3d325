/* SPDX-License-Identifier: Apache-2.0 */
/* Internals of the SQLite metadata backend (meta_sqlite*.c). Not for use outside src/store/meta.
 *
 * Two connections, each behind its mutex: mutations go through the writer (one BEGIN IMMEDIATE
 * transaction each, through meta_tx_run), lookups and listings through the reader, which WAL
 * never makes wait for a commit (and its fsync), so a GET is not stuck behind a committing PUT.
 * Keys are stored as BLOBs, so SQLite compares them with memcmp: listing order is S3's UTF-8
 * byte order. */
#ifndef WH_META_META_SQLITE_INT_H
#define WH_META_META_SQLITE_INT_H

#include "meta/meta.h"

#include <pthread.h>
#include <sqlite3.h>

enum {
    S_BEGIN,
    S_COMMIT,
    S_ROLLBACK,
    S_SAVEPOINT, /* group commit: one write of a batch */
    S_SAVEPOINT_RELEASE,
    S_SAVEPOINT_ROLLBACK,
    S_BUCKET_INSERT,
    S_BUCKET_DELETE,
    S_BUCKET_GET,
    S_BUCKET_LIST,
    S_BUCKET_HAS_OBJ,
    S_OBJ_GET,
    S_OBJ_FILE,
    S_OBJ_CUR,
    S_VERSIONING_GET,
    S_VERSIONING_SET,
    S_OBJ_GET_VID,
    S_VER_GET,
    S_VER_ARCHIVE,
    S_VER_PROMOTE,
    S_VER_DROP_PROMOTED,
    S_VER_FIND,
    S_VER_DELETE,
    S_VER_SCAN_GT,
    S_VER_SCAN_GE,
    S_VER_OF_KEY,
    S_TAGS_CUR,
    S_TAGS_VER,
    S_OBJ_UPSERT,
    S_OBJ_DELETE,
    S_OBJ_LIST_GT,
    S_OBJ_LIST_GE,
    S_FILE_REF,
    S_CHUNK_INSERT,
    S_CHUNK_GET,
    S_CHUNK_DELETE,
    S_UPLOAD_INSERT,
    S_UPLOAD_GET,
    S_UPLOAD_DELETE,
    S_UPLOAD_LIST,
    S_UPLOAD_COUNT,
    S_PART_UPSERT,
    S_PART_FILE,
    S_PART_LIST,
    S_PART_DELETE_ALL,
    S_BUCKET_AUTH,
    S_BUCKET_SET_ACL,
    S_BUCKET_SET_POLICY,
    S_BUCKET_SET_TAGS, /* in data_battr_t order */
    S_BUCKET_SET_CORS,
    S_BUCKET_SET_PAB,
    S_BUCKET_SET_OWNERSHIP,
    S_BUCKET_SET_LIFECYCLE,
    S_BUCKET_SET_OBJECT_LOCK,
    S_BUCKET_SET_ENCRYPTION,
    S_BUCKET_GET_ATTRS,
    S_OBJ_SET_ACL,
    S_USER_INSERT,
    S_USER_GET,
    S_USER_LIST,
    S_USER_DELETE,
    S_USER_HAS_KEY,
    S_USER_HAS_POLICY,
    S_KEY_INSERT,
    S_KEY_GET,
    S_KEY_LIST,
    S_KEY_DELETE,
    S_KEY_SET_ACTIVE,
    S_KEYS_DELETE_USER,
    S_POLICY_PUT,
    S_POLICY_GET,
    S_POLICY_LIST,
    S_POLICY_DELETE,
    S_POLICIES_DELETE_USER,
    S_LOCK_CUR_SET,
    S_LOCK_VER_GET,
    S_LOCK_VER_SET,
    S_OBJ_REKEY,
    S_REC_PUT,
    S_REC_GET,
    S_REC_LIST,
    S_REC_DELETE,
    S_COUNT
};

/* The columns of an object row, the same in objects (current versions) and versions (older
 * versions and delete markers); sq_obj_row reads them in this order. */
#define SQ_OBJ_COLS                                                                                \
    "size, mtime, etag, content_type, user_meta, crc32c, crc64nvme, parts, data_id, owner, "       \
    "acl, version_id, seq, dm, tags, part_sizes, sse, lock_mode, lock_until, legal_hold"

/* One SQLite connection and its statements, used under its mutex. */
typedef struct sq_conn {
    sqlite3 *db;
    pthread_mutex_t lock;
    sqlite3_stmt *stmt[S_COUNT];
} sq_conn_t;

/* A write waiting for a group commit (sq_write_group). */
typedef struct sq_gc_entry {
    meta_tx_fn fn;
    void *arg;
    wh_status_t st;
    bool done;
    struct sq_gc_entry *next;
} sq_gc_entry_t;

/* The group-commit queue: writes that arrive while a commit is being made durable wait here,
 * and the next leader commits them together in one transaction (one WAL fsync). */
typedef struct sq_group {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    sq_gc_entry_t *head, **tail;
    bool leading;     /* a thread is committing a batch */
    uint64_t batches; /* commits made, and the writes they carried (for tests and /metrics) */
    uint64_t writes;
} sq_group_t;
#define SQ_GROUP_MAX 64 /* writes per group commit */

typedef struct sq_meta {
    meta_t base;
    sq_conn_t wr, rd;
    sq_group_t group;
    uint64_t *auth_gen; /* PATH-authgen mapped shared (every process on this data), or NULL */
} sq_meta_t;

#define SQ(m) ((sq_meta_t *)(m))

/* Runs fn inside one write transaction on the writer connection. */
wh_status_t sq_write(sq_meta_t *m, meta_tx_fn fn, void *arg);
/* sq_write, group-committed: a write that arrives while another commit is being made durable
 * joins the next batch, which commits in one transaction, each write inside its own savepoint
 * (a write that fails rolls back alone; the others commit). Its status is its own write's,
 * or the commit's when that fails. For writes whose fn may share a transaction with others
 * and whose caller treats every failure as "not committed" (object and part commits): an
 * error that makes SQLite abandon the whole transaction (a full disk, an I/O error) fails
 * every write of that batch that had run, which were then not committed either. */
wh_status_t sq_write_group(sq_meta_t *m, meta_tx_fn fn, void *arg);
/* sq_write for a change to what authorization reads (keys, users, user policies, a bucket's
 * owner, ACL or policy): bumps the auth generation once it has ended. */
wh_status_t sq_write_auth(sq_meta_t *m, meta_tx_fn fn, void *arg);
wh_status_t sq_fail(sq_conn_t *c, int rc, const char *what);
void sq_done(sqlite3_stmt *s);
void sq_bind_text(sqlite3_stmt *s, int i, const char *v);
void sq_bind_text_or_null(sqlite3_stmt *s, int i, const char *v); /* NULL stays SQL NULL */
void sq_bind_key(sqlite3_stmt *s, int i, const void *p, size_t n);
void sq_col_copy(sqlite3_stmt *s, int i, char *dst, size_t cap);
char *sq_col_dup(sqlite3_stmt *s, int i);
wh_status_t sq_exec_stmt(sq_conn_t *c, sqlite3_stmt *s, const char *what);
wh_status_t sq_row_exists(sq_conn_t *c, int which, const char *arg, const char *what);
wh_status_t sq_bucket_check(sq_conn_t *c, const char *bucket);
/* Creates or migrates the schema (meta_sqlite_schema.c); on the writer, at open. */
wh_status_t sq_migrate(sq_conn_t *c, const char *path);

/* Chunk maps (meta_sqlite_obj.c): rows of data id; lock held (conn: an sq_conn_t). */
wh_status_t sq_chunks_put(void *conn, const data_ref_t *ref);
wh_status_t sq_chunks_get(void *conn, data_ref_t *ref);
wh_status_t sq_chunks_drop(void *conn, const char *id);
/* The object row's data ref ("" when none), with its chunk map. Lock held. */
wh_status_t sq_obj_ref(sq_conn_t *c, const char *bucket, const char *key, size_t klen,
                       data_ref_t *ref);
/* Reads the SQ_OBJ_COLS of a row from column 0 into meta (may be NULL) and ref's id. */
wh_status_t sq_obj_row(sqlite3_stmt *s, data_obj_meta_t *meta, data_ref_t *ref);
wh_status_t sq_obj_upsert(void *conn, const char *bucket, const char *key, size_t klen,
                          const data_obj_meta_t *meta, const data_ref_t *ref, int64_t seq);

/* Operations (meta_sqlite_obj.c, meta_sqlite_mpu.c). */
wh_status_t sq_object_get(meta_t *m, const char *bucket, const char *key, size_t klen,
                          data_obj_meta_t *meta, data_ref_t *ref);
wh_status_t sq_object_scan(meta_t *m, const char *bucket, const void *from, size_t flen,
                           bool inclusive, meta_scan_fn fn, void *arg);
wh_status_t sq_data_referenced(meta_t *m, const char *id);
wh_status_t sq_upload_create(meta_t *m, const char *bucket, const char *key, const char *upload_id,
                             const data_obj_meta_t *meta, time_t initiated);
wh_status_t sq_upload_get(meta_t *m, const char *bucket, const char *key, const char *upload_id,
                          data_obj_meta_t *meta);
wh_status_t sq_part_list(meta_t *m, const char *bucket, const char *key, const char *upload_id,
                         uint32_t marker, uint32_t max, meta_part_t **out, size_t *n,
                         bool *truncated);
/* In a write transaction: drops the bucket's uploads, their parts appended to *parts. */
wh_status_t sq_bucket_uploads_drop(sq_conn_t *c, const char *bucket, meta_part_t **parts,
                                   size_t *n);
wh_status_t sq_upload_count(meta_t *m, const char *bucket, uint64_t *n);
wh_status_t sq_upload_count_owner(meta_t *m, const char *owner, uint64_t *n);
wh_status_t sq_upload_list(meta_t *m, const char *bucket, const char *prefix,
                           const data_upload_page_t *page, data_upload_info_t **out, size_t *n);

/* Owners, ACLs, policies and identity (meta_sqlite_ident.c). */
wh_status_t sq_bucket_auth_get(meta_t *m, const char *name, data_bucket_auth_t *out);
wh_status_t sq_bucket_set_acl(meta_t *m, const char *name, const char *acl);
wh_status_t sq_bucket_set_policy(meta_t *m, const char *name, const char *policy);
wh_status_t sq_bucket_attr_set(meta_t *m, const char *name, data_battr_t which, const char *value);
wh_status_t sq_bucket_attr_get(meta_t *m, const char *name, data_battr_t which, char **out);
wh_status_t sq_object_set_acl(meta_t *m, const char *bucket, const char *key, size_t klen,
                              const char *acl);
wh_status_t sq_user_create(meta_t *m, const meta_user_t *u);
wh_status_t sq_user_get(meta_t *m, const char *name, meta_user_t *out);
wh_status_t sq_user_list(meta_t *m, meta_user_t **out, size_t *n);
wh_status_t sq_key_get(meta_t *m, const char *access_key, meta_access_key_t *out);
wh_status_t sq_key_list(meta_t *m, const char *user, meta_access_key_t **out, size_t *n);
wh_status_t sq_key_delete(meta_t *m, const char *access_key);
wh_status_t sq_key_set_active(meta_t *m, const char *access_key, bool active);
wh_status_t sq_user_policy_get(meta_t *m, const char *user, const char *name, char **doc);
wh_status_t sq_user_policy_list(meta_t *m, const char *user, meta_policy_t **out, size_t *n);
wh_status_t sq_user_policy_delete(meta_t *m, const char *user, const char *name);
/* meta_sqlite_kms.c */
wh_status_t sq_kms_key_put(meta_t *m, const char *id, const char *old, const char *doc);
wh_status_t sq_kms_key_get(meta_t *m, const char *id, char **doc);
wh_status_t sq_kms_key_list(meta_t *m, meta_policy_t **out, size_t *n);
/* IAM records (meta_sqlite_rec.c). */
wh_status_t sq_rec_put(meta_t *m, const char *kind, const char *key, const char *doc, bool create);
wh_status_t sq_rec_get(meta_t *m, const char *kind, const char *key, char **doc);
wh_status_t sq_rec_list(meta_t *m, const char *kind, const char *prefix, meta_rec_t **out,
                        size_t *n);
wh_status_t sq_rec_delete(meta_t *m, const char *kind, const char *key);
wh_status_t sq_user_rename(meta_t *m, const char *from, const char *to);

/* The row operations of the rules written once (meta_rules.h), on the writer in its
 * transaction: meta_sqlite_ver.c, meta_sqlite_mpu.c, meta_sqlite_ident.c. */
struct meta_ver_dialect;
struct meta_mpu_dialect;
struct meta_ident_dialect;
extern const struct meta_ver_dialect SQ_VER;
extern const struct meta_mpu_dialect SQ_MPU;
extern const struct meta_ident_dialect SQ_IDENT;

/* Versions (meta_sqlite_ver.c). */

wh_status_t sq_bucket_versioning_get(meta_t *m, const char *bucket, int *state);
wh_status_t sq_bucket_versioning_set(meta_t *m, const char *bucket, int state);
wh_status_t sq_object_get_version(meta_t *m, const char *bucket, const char *key, size_t klen,
                                  const char *version_id, data_obj_meta_t *meta, data_ref_t *ref);
wh_status_t sq_version_scan(meta_t *m, const char *bucket, const void *from, size_t flen,
                            bool inclusive, meta_version_fn fn, void *arg);

#endif
