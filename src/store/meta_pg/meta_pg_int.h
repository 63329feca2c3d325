/* SPDX-License-Identifier: Apache-2.0 */
/* Internals of the PostgreSQL metadata backend (meta_pg*.c). Not for use outside src/store/meta.
 *
 * A small pool of connections, each used by one call at a time. Every mutation is one
 * SERIALIZABLE transaction through meta_tx_run, retried on a serialization failure, so
 * several gateways may share the database without any lock in the process. A connection that
 * broke (PostgreSQL restarted) is reset before its next use; while that fails, calls answer
 * WH_ERR_UNAVAILABLE. A commit whose outcome is unknown (the connection died during COMMIT)
 * is never retried.
 *
 * Keys are bytea (sent as binary parameters, read back hex-encoded): ordering is memcmp, S3's
 * UTF-8 byte order. Bucket names are text COLLATE "C". */
#ifndef WH_META_META_PG_INT_H
#define WH_META_META_PG_INT_H

#include "meta/meta.h"

#include "meta_pg/pq_load.h"
#include <pthread.h>

#define PG_POOL 8
#define PG_MAX_PARAMS 24
#define PG_MAX_LOCKS 16

typedef struct pg_conn {
    PGconn *c;
    struct pg_meta *m;
    bool in_tx;
    bool retryable;    /* the last failure may be retried from the start */
    bool stale;        /* open but on a server that refuses writes: reconnect before reuse */
    unsigned prepared; /* PG_PREP_* bits: statements prepared on this connection */
} pg_conn_t;
#define PG_PREP_KEY_GET 1u

typedef struct pg_meta {
    meta_t base;
    char *url;
    pg_conn_t pool[PG_POOL];
    bool busy[PG_POOL];
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool durable;
    /* Session-level advisory locks live on their own connection. */
    pthread_mutex_t lock_mu;
    pg_conn_t lockc;
    int64_t held[PG_MAX_LOCKS];
    size_t n_held;
} pg_meta_t;

#define PGM(m) ((pg_meta_t *)(m))

/* Parameters of one statement. Text unless added with pp_bytes. */
typedef struct pg_params {
    const char *v[PG_MAX_PARAMS];
    int len[PG_MAX_PARAMS];
    int fmt[PG_MAX_PARAMS];
    char num[PG_MAX_PARAMS][24];
    int n;
} pg_params_t;
void pp_text(pg_params_t *p, const char *s);
void pp_bytes(pg_params_t *p, const void *b, size_t n);
void pp_i64(pg_params_t *p, int64_t v);

/* A pooled connection for one call; pg_put gives it back. */
pg_conn_t *pg_get(pg_meta_t *m);
void pg_put(pg_conn_t *c);
/* Makes c usable: connects, or resets a broken connection (WH_ERR_UNAVAILABLE when it cannot). */
wh_status_t pg_ensure(pg_conn_t *c);
/* The status of a failed result (marks the connection retryable where that is safe). */
wh_status_t pg_fail(pg_conn_t *c, const PGresult *r, const char *what);
/* Runs one statement. *res (may be NULL) receives the result to PQclear. */
wh_status_t pg_exec(pg_conn_t *c, const char *sql, const pg_params_t *p, PGresult **res,
                    const char *what);
/* Runs fn in one transaction on a pooled connection (the one transaction helper). */
wh_status_t pg_write(pg_meta_t *m, meta_tx_fn fn, void *arg);
/* Runs fn outside a transaction on a pooled connection (single-statement reads). */
wh_status_t pg_read(pg_meta_t *m, meta_tx_fn fn, void *arg);

int64_t pg_i64(const PGresult *r, int row, int col);
void pg_copy(const PGresult *r, int row, int col, char *dst, size_t cap);
/* The result array of a read that may run again (a retried transaction): frees old and
 * allocates one element of elem bytes per row of r (at least one). NULL when out of
 * memory, with r cleared. */
void *pg_rows_alloc(PGresult *r, void *old, size_t elem);
char *pg_dup(const PGresult *r, int row, int col); /* NULL for SQL NULL (or no memory) */
/* A hex-encoded bytea column into malloc'd bytes (NUL-terminated); *n its length. */
char *pg_hexcol(const PGresult *r, int row, int col, size_t *n);

/* The chunk columns, in this order, as selected (from chunks c) by every query that returns
 * chunk maps; pg_chunk_add appends the chunk at column col of row (when not NULL) to ref. */
#define PG_CHUNK_COLS                                                                              \
    "c.chunk_id, c.off, c.len, c.crc64nvme, array_to_string(c.replicas, ','),"                     \
    " c.ec_k, c.ec_m, c.ec_index, c.ec_stripe"
wh_status_t pg_chunk_add(const PGresult *r, int row, int col, data_ref_t *ref);

/* Shared pieces (meta_pg.c, meta_pg_obj.c), on a connection inside a transaction (conn: a
 * pg_conn_t). */
wh_status_t pg_bucket_check(pg_conn_t *c, const char *bucket);
wh_status_t pg_chunks_put(void *conn, const data_ref_t *ref);
wh_status_t pg_chunks_get(void *conn, data_ref_t *ref);
/* Queues the chunk map of id for garbage collection and drops it. */
wh_status_t pg_chunks_drop(void *conn, const char *id);
wh_status_t pg_obj_ref(pg_conn_t *c, const char *bucket, const char *key, size_t klen,
                       data_ref_t *ref);
/* The columns of an object row, the same in objects (current versions) and versions (older
 * versions and delete markers); pg_obj_row reads them in this order. */
#define PG_OBJ_COLS                                                                                \
    "size, mtime, etag, content_type, user_meta, crc32c, crc64nvme, parts,"                        \
    " data_id, owner, acl, version_id, seq, dm, tags, part_sizes, sse,"                            \
    " lock_mode, lock_until, legal_hold"
#define PG_OBJ_NCOLS 20
/* Reads the PG_OBJ_COLS of row from column col into meta (may be NULL) and ref's id. */
wh_status_t pg_obj_row(const PGresult *r, int row, int col, data_obj_meta_t *meta, data_ref_t *ref);
wh_status_t pg_obj_upsert(void *conn, const char *bucket, const char *key, size_t klen,
                          const data_obj_meta_t *meta, const data_ref_t *ref, int64_t seq);

/* Objects (meta_pg_obj.c). */
wh_status_t pg_object_get(meta_t *m, const char *bucket, const char *key, size_t klen,
                          data_obj_meta_t *meta, data_ref_t *ref);
wh_status_t pg_object_scan(meta_t *m, const char *bucket, const void *from, size_t flen,
                           bool inclusive, meta_scan_fn fn, void *arg);
wh_status_t pg_data_referenced(meta_t *m, const char *id);

/* Multipart (meta_pg_mpu.c). */
wh_status_t pg_upload_create(meta_t *m, const char *bucket, const char *key, const char *upload_id,
                             const data_obj_meta_t *meta, time_t initiated);
wh_status_t pg_upload_get(meta_t *m, const char *bucket, const char *key, const char *upload_id,
                          data_obj_meta_t *meta);
wh_status_t pg_part_list(meta_t *m, const char *bucket, const char *key, const char *upload_id,
                         uint32_t marker, uint32_t max, meta_part_t **out, size_t *n,
                         bool *truncated);
/* In a write transaction: drops the bucket's uploads, their parts appended to *parts. */
wh_status_t pg_bucket_uploads_drop(pg_conn_t *c, const char *bucket, meta_part_t **parts,
                                   size_t *n);
wh_status_t pg_upload_count(meta_t *m, const char *bucket, uint64_t *n);
wh_status_t pg_upload_count_owner(meta_t *m, const char *owner, uint64_t *n);
wh_status_t pg_upload_list(meta_t *m, const char *bucket, const char *prefix,
                           const data_upload_page_t *page, data_upload_info_t **out, size_t *n);

/* Cluster members, GC queue, advisory locks (meta_pg_cluster.c). */
wh_status_t pg_cluster_id(meta_t *m, char out[META_UUID_MAX]);
wh_status_t pg_damage_report(meta_t *m, uint32_t node, const char *chunk_id);
wh_status_t pg_damage_take(meta_t *m, size_t max, meta_gc_item_t **out, size_t *n);
wh_status_t pg_damage_done(meta_t *m, uint32_t node, const char *chunk_id);
wh_status_t pg_chunk_find(meta_t *m, const char *chunk_id, data_chunk_t *out);
wh_status_t pg_chunk_stripe(meta_t *m, const char *chunk_id, data_ref_t *out);
wh_status_t pg_node_register(meta_t *m, const char *addr, const char *uuid, bool adopt,
                             uint64_t capacity, uint64_t free, uint32_t *id);
wh_status_t pg_node_heartbeat(meta_t *m, uint32_t id, uint64_t capacity, uint64_t free);
wh_status_t pg_node_list(meta_t *m, meta_node_t **out, size_t *n);
wh_status_t pg_node_set_zone(meta_t *m, uint32_t id, const char *zone);
wh_status_t pg_node_drain(meta_t *m, const char *addr, uint32_t *id);
wh_status_t pg_node_remove(meta_t *m, const char *addr, unsigned live_s, uint32_t *id,
                           uint64_t *sole);
wh_status_t pg_node_copies(meta_t *m, meta_node_copies_t **out, size_t *n);
wh_status_t pg_node_report(meta_t *m, uint32_t id, double scrub_progress, uint64_t scrub_passes,
                           uint64_t damaged);
wh_status_t pg_cluster_status_put(meta_t *m, const meta_cluster_status_t *st);
wh_status_t pg_cluster_status_get(meta_t *m, meta_cluster_status_t *st);
wh_status_t pg_gc_take(meta_t *m, size_t max, unsigned live_s, meta_gc_item_t **out, size_t *n);
wh_status_t pg_gc_done(meta_t *m, const meta_gc_item_t *items, size_t n);
wh_status_t pg_gc_defer(meta_t *m, const meta_gc_item_t *items, size_t n, unsigned delay_s);
wh_status_t pg_chunks_on_node(meta_t *m, uint32_t node, const char *after, size_t max,
                              data_chunk_t **out, size_t *n);
wh_status_t pg_chunks_page(meta_t *m, const char *after, size_t max, data_chunk_t **out, size_t *n);
wh_status_t pg_chunks_on_nodes_count(meta_t *m, const uint32_t *nodes, size_t n, uint64_t *count);
wh_status_t pg_chunk_move(meta_t *m, const char *chunk_id, uint32_t from, uint32_t to,
                          unsigned gc_delay_s);
wh_status_t pg_lock_try(meta_t *m, int64_t key);
wh_status_t pg_lock_release(meta_t *m, int64_t key);
/* The schema's migration steps, META_SCHEMA_VERSION of them (meta_pg_schema.c). */
extern const char *const pg_schema_steps[];

/* Owners, ACLs, policies and identity (meta_pg_ident.c). */
wh_status_t pg_bucket_auth_get(meta_t *m, const char *name, data_bucket_auth_t *out);
wh_status_t pg_bucket_set_acl(meta_t *m, const char *name, const char *acl);
wh_status_t pg_bucket_set_policy(meta_t *m, const char *name, const char *policy);
wh_status_t pg_bucket_attr_set(meta_t *m, const char *name, data_battr_t which, const char *value);
wh_status_t pg_bucket_attr_get(meta_t *m, const char *name, data_battr_t which, char **out);
wh_status_t pg_object_set_acl(meta_t *m, const char *bucket, const char *key, size_t klen,
                              const char *acl);
wh_status_t pg_user_create(meta_t *m, const meta_user_t *u);
wh_status_t pg_user_get(meta_t *m, const char *name, meta_user_t *out);
wh_status_t pg_user_list(meta_t *m, meta_user_t **out, size_t *n);
wh_status_t pg_key_get(meta_t *m, const char *access_key, meta_access_key_t *out);
wh_status_t pg_key_list(meta_t *m, const char *user, meta_access_key_t **out, size_t *n);
wh_status_t pg_key_delete(meta_t *m, const char *access_key);
wh_status_t pg_key_set_active(meta_t *m, const char *access_key, bool active);
wh_status_t pg_user_policy_get(meta_t *m, const char *user, const char *name, char **doc);
wh_status_t pg_user_policy_list(meta_t *m, const char *user, meta_policy_t **out, size_t *n);
wh_status_t pg_user_policy_delete(meta_t *m, const char *user, const char *name);
/* meta_pg_kms.c */
wh_status_t pg_kms_key_put(meta_t *m, const char *id, const char *old, const char *doc);
wh_status_t pg_kms_key_get(meta_t *m, const char *id, char **doc);
wh_status_t pg_kms_key_list(meta_t *m, meta_policy_t **out, size_t *n);
/* IAM records (meta_pg_rec.c). */
wh_status_t pg_rec_put(meta_t *m, const char *kind, const char *key, const char *doc, bool create);
wh_status_t pg_rec_get(meta_t *m, const char *kind, const char *key, char **doc);
wh_status_t pg_rec_list(meta_t *m, const char *kind, const char *prefix, meta_rec_t **out,
                        size_t *n);
wh_status_t pg_rec_delete(meta_t *m, const char *kind, const char *key);
wh_status_t pg_user_rename(meta_t *m, const char *from, const char *to);

/* Drops the advisory-lock connection's state (meta_pg_cluster.c). */
void pg_locks_close(pg_meta_t *m);

/* The row operations of the rules written once (meta_rules.h), in a write transaction:
 * meta_pg_ver.c, meta_pg_mpu.c, meta_pg_ident.c. */
struct meta_ver_dialect;
struct meta_mpu_dialect;
struct meta_ident_dialect;
extern const struct meta_ver_dialect PG_VER;
extern const struct meta_mpu_dialect PG_MPU;
extern const struct meta_ident_dialect PG_IDENT;

/* Versions (meta_pg_ver.c). */
wh_status_t pg_bucket_versioning_get(meta_t *m, const char *bucket, int *state);
wh_status_t pg_bucket_versioning_set(meta_t *m, const char *bucket, int state);
wh_status_t pg_object_get_version(meta_t *m, const char *bucket, const char *key, size_t klen,
                                  const char *version_id, data_obj_meta_t *meta, data_ref_t *ref);
wh_status_t pg_version_scan(meta_t *m, const char *bucket, const void *from, size_t flen,
                            bool inclusive, meta_version_fn fn, void *arg);

#endif
