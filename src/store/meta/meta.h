/* SPDX-License-Identifier: Apache-2.0 */
/* The metadata table of the storage engine: buckets, objects, multipart uploads and parts,
 * chunk maps, and for a cluster storage nodes, a garbage-collection queue and advisory locks.
 *
 * An implementation is a meta_ops_t and an instance struct that starts with a meta_t:
 *   SQLite (src/store/meta_sqlite): the embedded default, DIR/meta.db in WAL mode;
 *   PostgreSQL (src/store/meta_pg): selected by a postgresql:// URL; several gateways may share one
 *     database, since no state that matters for correctness lives in the process.
 * store_meta_open (store.h) picks one by its argument. The meta_* functions below dispatch through
 * the table (typed static inline functions; a NULL slot answers WH_ERR_UNSUPPORTED, never a stub).
 *
 * The contract every implementation keeps:
 * - Every call is atomic (one transaction per mutation, through the backend's transaction
 *   helper, meta_tx_run) and thread-safe.
 * - Keys are bytes: listing order is S3's UTF-8 byte order (memcmp).
 * - A replaced or deleted object or part hands its data reference back in *old, for the data
 *   table to release after the commit. Where data is chunked (a cluster), the same transaction
 *   also queues the dropped chunks for garbage collection, and gc_take never hands out a chunk
 *   that a committed object or part still references.
 * - WH_ERR_UNAVAILABLE: the database cannot be reached (the server answers 503); nothing
 *   committed is lost, and the next call tries to reconnect. WH_ERR_NO_SPACE: the disk under
 *   the database is full. */
#ifndef WH_META_META_H
#define WH_META_META_H

#include "data/data.h"
#include "data/types.h"

#define META_ID_LEN DATA_ID_LEN

/* The metadata schema version this build writes. Both backends keep a list of migration steps
 * (step N takes version N-1 to N; meta_sqlite_schema.c, meta_pg_schema.c), applied in order in
 * one transaction at open; each list must have exactly this many steps. A database newer than
 * this build is refused. 1: buckets, objects, uploads, parts. 2: chunk maps (and, in
 * PostgreSQL, the deferred GC queue). 3: users, access keys, user policies; owners, ACLs and
 * bucket policies. 4: bucket versioning, older versions and delete markers, tags, part sizes. 5:
 * bucket configurations. 6: bucket lifecycle. 7: cluster identity (PostgreSQL), damaged copies. 8:
 * Object Lock (versions' retention and legal hold, the bucket's configuration). 9: encryption at
 * rest. 10: chunk maps indexed by chunk id (SQLite; local multipart objects made of their parts'
 * files). 11: node states and zones (PostgreSQL). 12: SQLite's file_id column renamed data_id,
 * PostgreSQL's name. */
#define META_SCHEMA_VERSION 12

/* The advisory lock (lock_try) of the one gateway that runs maintenance: garbage collection
 * and repair (cluster/members.c) and the lifecycle worker (s3ctl/lifecycle_run.c). */
#define META_LOCK_MAINTENANCE 0x7768617266310001LL

typedef struct meta meta_t;
typedef struct meta_ops meta_ops_t;

struct meta {
    const meta_ops_t *ops;
    uint64_t list_rows;       /* rows read by listings (atomic): shows a delimiter walk skips */
    struct meta_cache *cache; /* the authorization reads (meta_cache.c); NULL: none */
    const struct meta_rules *rules; /* the backend's reach for the shared rules (meta_rules.h) */
};

typedef struct meta_part {
    data_part_info_t info;
    data_ref_t ref;
} meta_part_t;
void meta_parts_free(meta_part_t *p, size_t n);

struct meta_ops {
    const char *name;
    void (*close)(meta_t *m);
    /* A number that changes after every committed change to access keys, users, user
     * policies or a bucket's owner, ACL or policy, made through any handle on the same data
     * (other processes included). NULL or an error: the backend cannot tell, and those rows
     * are not cached (meta_cache.c). */
    wh_status_t (*auth_gen)(meta_t *m, uint64_t *gen);
    /* false: no fsync at commit (tests, throw-away benchmark stores). */
    wh_status_t (*set_durable)(meta_t *m, bool durable);
    /* The operations by concern (meta_bucket.h, meta_version.h, meta_upload.h,
     * meta_identity.h, meta_cluster.h). cluster is NULL where the backend is no cluster's
     * (SQLite): its operations answer WH_ERR_UNSUPPORTED. */
    const struct meta_object_ops *objects;
    const struct meta_version_ops *versions;
    const struct meta_upload_ops *uploads;
    const struct meta_ident_ops *ident;
    const struct meta_cluster_ops *cluster;
};

/* The backends' constructors (meta_sqlite, meta_pg), each in its own library; the store picks
 * one by location (store_meta_open, store.h), meta itself calls neither. */
wh_status_t meta_sqlite_open(const char *path, meta_t **out);
wh_status_t meta_pg_open(const char *url, meta_t **out);
bool meta_url_is_pg(const char *url);
void meta_close(meta_t *m); /* NULL-safe */
uint64_t meta_list_rows(meta_t *m);

/* One transaction helper for every backend: begin, fn, commit; rollback on failure; retried
 * (a bounded number of times) while the backend calls the failure of that attempt retryable
 * (a serialization conflict, a connection lost before the commit); a failure it does not
 * call retryable (a precondition found false on the retry) is the answer. */
typedef struct meta_tx_ops {
    wh_status_t (*begin)(void *conn);
    wh_status_t (*commit)(void *conn);
    void (*rollback)(void *conn);
    bool (*retryable)(void *conn, wh_status_t st); /* NULL: never */
} meta_tx_ops_t;
typedef wh_status_t (*meta_tx_fn)(void *conn, void *arg);
wh_status_t meta_tx_run(const meta_tx_ops_t *ops, void *conn, meta_tx_fn fn, void *arg);
/* Process-wide counts for /metrics: attempts meta_tx_run retried, and failures a backend
 * reported as retryable (meta_tx_note_retryable, where it sees one). */
void meta_tx_note_retryable(void);
void meta_tx_stats(uint64_t *retries, uint64_t *retryable);

/* Helpers the backends share (meta.c). */
bool meta_grow(void **arr, size_t *cap, size_t want, size_t elem); /* doubling realloc */
/* Replica node ids as text "1,2,3" (how both backends hand them over). */
void meta_replicas_format(const data_chunk_t *c, char *out, size_t cap);
void meta_replicas_parse(const char *s, data_chunk_t *c);
/* Completion check: every listed part (ascending) still maps to the same data id among all of
 * the upload's parts (ascending). WH_ERR_PRECONDITION if one changed meanwhile. */
wh_status_t meta_parts_unchanged(const char *upload_id, const meta_part_t *listed, size_t n,
                                 const meta_part_t *all, size_t n_all);

/* A write's condition against the key's current object (exists: there is one, with etag):
 * WH_OK to go on; WH_ERR_PRECONDITION (or NOT_FOUND for If-Match on a missing key) with
 * cond->failed set. NULL cond passes. */
wh_status_t meta_cond_check(data_cond_t *cond, bool exists, const char *etag);
/* Object Lock, as both backends apply it in their transactions. meta_lock_refuse: WH_ERR_AUTH
 * (res, when not NULL, says why) when a version with this lock may not be destroyed by a
 * delete passing over bypass (STORE_BYPASS_*) at now, else WH_OK. meta_lock_change: checks
 * req against the version's lock (data_lock_set_check) and, when allowed, makes *mode,
 * *until and *hold what req asks: WH_OK or WH_ERR_AUTH. */
wh_status_t meta_lock_refuse(int bypass, int64_t now, data_del_result_t *res, int mode,
                             int64_t until, bool hold);
wh_status_t meta_lock_change(const data_lock_set_t *req, int *mode, int64_t *until, bool *hold);
/* A new version id for a commit at seq (microseconds, made monotonic per key by the caller). */
wh_status_t meta_version_id_new(uint64_t seq, char out[DATA_VERSION_ID_MAX]);
/* The seq of a new version of a key whose current version has cur_seq. */
uint64_t meta_version_seq_next(uint64_t cur_seq);

/* The authorization reads through the generation-checked cache (meta_cache.c). Each
 * backend's open sets the cache up; meta_close frees it. Its reads: meta_cached_* (meta_bucket.h,
 * meta_identity.h). */
wh_status_t meta_cache_init(meta_t *m);
void meta_cache_free(meta_t *m);
void meta_cache_stats(meta_t *m, uint64_t *hits, uint64_t *misses);

/* ---- dispatch: one typed function per slot ----
 * A slot that is NULL, or in a table that is NULL, is an operation the backend does not offer
 * (the cluster's in SQLite): its function answers WH_ERR_UNSUPPORTED. Callers that can do
 * without test the status; none tests the slot. The authorization reads go through the cache.
 * The functions of each concern are in its header, which meta.h includes at its end. */
#define META_HAS(m, table, slot) ((m)->ops->table && (m)->ops->table->slot)
static inline wh_status_t meta_set_durable(meta_t *m, bool durable)
{
    return m->ops->set_durable ? m->ops->set_durable(m, durable) : WH_ERR_UNSUPPORTED;
}

/* Each concern's table and its functions. */
#include "meta/meta_bucket.h"
#include "meta/meta_version.h"
#include "meta/meta_upload.h"
#include "meta/meta_identity.h"
#include "meta/meta_cluster.h"

#endif
