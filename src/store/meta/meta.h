/* SPDX-License-Identifier: Apache-2.0 */
/* The metadata table of the storage engine: buckets, objects, multipart uploads and parts,
 * chunk maps, and for a cluster storage nodes, a garbage-collection queue and advisory locks.
 *
 * An implementation is a meta_ops_t and an instance struct that starts with a meta_t:
 *   SQLite (src/store/meta_sqlite): the embedded default, DIR/meta.db in WAL mode;
 *   PostgreSQL (src/store/meta_pg): selected by a postgresql:// URL; several gateways may share one
 *     database, since no state that matters for correctness lives in the process.
 * meta_open picks one by its argument. The meta_* functions below dispatch through the table
 * (typed static inline functions; a NULL slot answers WH_ERR_UNSUPPORTED, never a stub).
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
 * PostgreSQL's name. 13: IAM records (groups, managed policies, attachments, user paths). */
#define META_SCHEMA_VERSION 13

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

/* One row of a listing scan. Return 0 to go on, 1 to stop, or a negative wh_status_t. */
typedef int (*meta_scan_fn)(void *arg, const void *key, size_t klen, uint64_t size, time_t mtime,
                            const char *etag, const char *owner);

/* One version row of a version scan. */
typedef struct meta_version_row {
    const void *key;
    size_t klen;
    const char *version_id;
    bool latest, delete_marker;
    uint64_t size;
    time_t mtime;
    const char *etag;
} meta_version_row_t;
/* Return 0 to go on, 1 to stop, or a negative wh_status_t. */
typedef int (*meta_version_fn)(void *arg, const meta_version_row_t *row);

/* A storage server of a cluster. */
#define META_ZONE_MAX 64
typedef struct meta_node {
    uint32_t id;
    char addr[256];    /* host:port of its internal API */
    uint64_t capacity; /* bytes */
    uint64_t free;
    time_t heartbeat;         /* last one, database clock */
    time_t now;               /* database clock when read (compare heartbeats with this) */
    bool retired;             /* its data directory was replaced or emptied: every copy it held is
                               * lost (repair them now), nothing is left on it to delete */
    int state;                /* META_NODE_ACTIVE, _DRAINING (no new copies; repair moves its copies
                               * off) or _REMOVED (never dialed again; its copies count as lost) */
    char zone[META_ZONE_MAX]; /* failure domain (wharfd storage --zone); "" none */
    double scrub_progress;    /* its scrubber's pass, 0..1 (node_report) */
    uint64_t scrub_passes;    /* scrub passes completed */
    uint64_t damaged;         /* copies it moved aside, not yet rewritten */
} meta_node_t;

/* What the maintenance gateway saw at its last pass (cluster_status_put), and how old. */
typedef struct meta_cluster_status {
    char leader[256]; /* the gateway's S3 address (host:port) */
    uint64_t repair_pending, repair_nodes, drain_pending, damage_pending;
    int64_t age_s; /* seconds since it was written (database clock); status_get only */
} meta_cluster_status_t;

enum { META_NODE_ACTIVE = 0, META_NODE_DRAINING = 1, META_NODE_REMOVED = 2 };

/* Chunk copies a node holds in the chunk map (distinct chunk ids). */
typedef struct meta_node_copies {
    uint32_t id;
    uint64_t copies;
} meta_node_copies_t;

/* The identity a storage server's data directory carries (written at its first start). */
#define META_UUID_MAX 64

/* A chunk whose bytes may be deleted from the listed nodes. */
typedef struct meta_gc_item {
    uint64_t seq;
    char chunk_id[DATA_ID_LEN + 1];
    uint32_t node;
} meta_gc_item_t;

/* ---- identity: IAM users, their access keys and inline policies ----
 * Names follow IAM: [A-Za-z0-9+=,.@_-]{1,64} (users and policies). The store keeps secrets
 * only sealed (ident/identity.c: AES-256-GCM under the server key); it never sees them. */
#define META_USER_MAX 64
#define META_AK_MAX 128
#define META_SEALED_MAX 256
typedef struct meta_user {
    char name[META_USER_MAX + 1];
    char user_id[32];      /* "AIDA" + 17 upper-case alnum */
    char canonical_id[65]; /* 64 hex */
    time_t created;
} meta_user_t;
typedef struct meta_access_key {
    char access_key[META_AK_MAX + 1];
    char user[META_USER_MAX + 1];
    char secret_sealed[META_SEALED_MAX]; /* text form of the sealed secret */
    bool active;                         /* false: Inactive, refused like an unknown key */
    time_t created;
    /* Filled by key_get (one indexed query joins the user): */
    char user_id[32];
    char canonical_id[65];
} meta_access_key_t;
typedef struct meta_policy {
    char name[129];
    char *doc; /* malloc'd JSON text */
} meta_policy_t;
void meta_policies_free(meta_policy_t *p, size_t n);
/* An IAM record (groups, memberships, managed policies, attachments, user paths): a text
 * document under (kind, key); the IAM layer gives each kind its meaning. */
typedef struct meta_rec {
    char *key;
    char *doc;
} meta_rec_t;
void meta_recs_free(meta_rec_t *r, size_t n);

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

    /* owner: canonical id ("" = root); acl: the serialised ACL text or NULL. EXISTS. */
    wh_status_t (*bucket_create)(meta_t *m, const char *name, time_t created, const char *owner,
                                 const char *acl);
    /* NOT_FOUND; NOT_EMPTY while it holds objects. Its incomplete uploads are dropped with
     * it, as S3 does: *parts gets their parts (data to release; free with meta_parts_free). */
    wh_status_t (*bucket_delete)(meta_t *m, const char *name, meta_part_t **parts, size_t *n);
    wh_status_t (*bucket_exists)(meta_t *m, const char *name);
    wh_status_t (*bucket_list)(meta_t *m, data_bucket_info_t **out, size_t *n);
    /* Owner, ACL and policy of a bucket (free with data_bucket_auth_free). NOT_FOUND. */
    wh_status_t (*bucket_auth_get)(meta_t *m, const char *name, data_bucket_auth_t *out);
    /* NULL acl or policy: none (the default ACL / no policy). NOT_FOUND: no such bucket. */
    wh_status_t (*bucket_set_acl)(meta_t *m, const char *name, const char *acl);
    wh_status_t (*bucket_set_policy)(meta_t *m, const char *name, const char *policy);
    /* A bucket configuration (data_battr_t): value NULL removes it (PAB and OWNERSHIP: back
     * to 0). NOT_FOUND: no such bucket. */
    wh_status_t (*bucket_attr_set)(meta_t *m, const char *name, data_battr_t which,
                                   const char *value);
    /* *out malloc'd, NULL when unset (PAB and OWNERSHIP: always set, "0" by default).
     * NOT_FOUND: no such bucket. */
    wh_status_t (*bucket_attr_get)(meta_t *m, const char *name, data_battr_t which, char **out);
    /* NOT_FOUND: no such bucket or key. */
    wh_status_t (*object_set_acl)(meta_t *m, const char *bucket, const char *key, size_t klen,
                                  const char *acl);

    /* meta and ref may be NULL. ref->chunks malloc'd. NOT_FOUND: no such bucket or key. */
    wh_status_t (*object_get)(meta_t *m, const char *bucket, const char *key, size_t klen,
                              data_obj_meta_t *meta, data_ref_t *ref);
    /* Inserts or replaces; *old gets the replaced reference ("" if none). NOT_FOUND: bucket.
     * cond (NULL: none) is checked in the same transaction (meta_cond_check). */
    wh_status_t (*object_put)(meta_t *m, const char *bucket, const char *key, size_t klen,
                              data_obj_meta_t *meta, const data_ref_t *ref, data_ref_t *old,
                              data_cond_t *cond);
    /* RenameObject: in one transaction the current object of src becomes the current object
     * of dst (same bucket), its bytes, metadata and ETag unmoved; dst's former object goes to
     * *old (data to release). Only in a bucket whose versioning is off (else UNSUPPORTED).
     * scond against the source, cond against the destination (meta_cond_check); *fail says
     * what refused it (data_rename_fail_t). src == dst: the checks, then nothing. */
    wh_status_t (*object_rename)(meta_t *m, const char *bucket, const char *src, size_t slen,
                                 const char *dst, size_t dlen, const data_rename_src_cond_t *scond,
                                 data_cond_t *cond, data_rename_fail_t *fail, data_ref_t *old);
    /* An append's commit (S3 Express's x-amz-write-offset-bytes): in one transaction, the key's
     * current object must still be the one whose data id is expect_id (else PRECONDITION: a
     * racing write got there first), not locked (AUTH), in a bucket whose versioning is off
     * (else UNSUPPORTED); it is then replaced by meta/ref, whose bytes reuse the old object's
     * extents: *old (its reference, chunk map dropped) is NOT to be released by the caller. */
    wh_status_t (*object_swap)(meta_t *m, const char *bucket, const char *key, size_t klen,
                               const char *expect_id, data_obj_meta_t *meta, const data_ref_t *ref,
                               data_ref_t *old);
    /* *old "" when there was no such key (WH_OK: idempotent). NOT_FOUND: bucket. */
    wh_status_t (*object_delete)(meta_t *m, const char *bucket, const char *key, size_t klen,
                                 data_ref_t *old);
    /* ---- versions (see store.h): object_put, upload_complete and object_delete follow the
     * bucket's versioning state, read in their transaction. An archived version keeps its
     * chunk map; only a removed version's data comes back in *old. ---- */
    wh_status_t (*bucket_versioning_get)(meta_t *m, const char *bucket, int *state);
    /* WH_ERR_PRECONDITION: Suspended asked of a bucket with object lock (read in the same
     * transaction; bucket_attr_set of DATA_BATTR_OBJECT_LOCK, for its part, changes only a
     * bucket whose versioning is Enabled, else answers NOT_FOUND). */
    wh_status_t (*bucket_versioning_set)(meta_t *m, const char *bucket, int state);
    /* version_id NULL: the current row, delete markers included (meta->delete_marker). */
    wh_status_t (*object_get_version)(meta_t *m, const char *bucket, const char *key, size_t klen,
                                      const char *version_id, data_obj_meta_t *meta,
                                      data_ref_t *ref);
    /* bypass: STORE_BYPASS_* (data/types.h): what lock the delete may pass over. A version that its
     * lock keeps (a retention or a legal hold, read in the delete's transaction): WH_ERR_AUTH, with
     * res->locked saying why. cond (NULL: none) is checked in the same transaction against the
     * version the delete would remove (data_del_cond_check): WH_ERR_PRECONDITION or NOT_FOUND
     * with cond->failed set, and nothing deleted. */
    wh_status_t (*object_delete_version)(meta_t *m, const char *bucket, const char *key,
                                         size_t klen, const char *version_id, int bypass,
                                         data_del_cond_t *cond, data_del_result_t *res,
                                         data_ref_t *old);
    /* Changes one version's retention and/or legal hold (version_id NULL: the current), in one
     * transaction that checks the change against the lock the version has
     * (data_lock_set_check): WH_ERR_AUTH when refused, NOT_FOUND for no such version or a
     * delete marker. out (may be NULL) gets the version's lock after the change (lock_mode,
     * lock_until, legal_hold, version_id only). */
    wh_status_t (*object_lock_set)(meta_t *m, const char *bucket, const char *key, size_t klen,
                                   const char *version_id, const data_lock_set_t *req,
                                   data_obj_meta_t *out);
    /* Keys from `from` in order (current rows, delete markers included), each followed by
     * its older versions newest first, until fn stops or keys end. */
    wh_status_t (*version_scan)(meta_t *m, const char *bucket, const void *from, size_t flen,
                                bool inclusive, meta_version_fn fn, void *arg);
    wh_status_t (*object_tags_set)(meta_t *m, const char *bucket, const char *key, size_t klen,
                                   const char *version_id, const char *tags);
    /* Rows of bucket in key order from `from` (inclusive or not) until fn stops or keys end.
     * Delete markers are not rows of this scan (ListObjects does not show them). */
    wh_status_t (*object_scan)(meta_t *m, const char *bucket, const void *from, size_t flen,
                               bool inclusive, meta_scan_fn fn, void *arg);
    /* WH_OK if an object or part row refers to data id, itself or as a chunk of its chunk
     * map (a composed multipart object's extents), WH_ERR_NOT_FOUND if none does. */
    wh_status_t (*data_referenced)(meta_t *m, const char *id);

    /* The upload row keeps the object's content type and user metadata until completion. */
    wh_status_t (*upload_create)(meta_t *m, const char *bucket, const char *key,
                                 const char *upload_id, const data_obj_meta_t *meta,
                                 time_t initiated);
    wh_status_t (*upload_get)(meta_t *m, const char *bucket, const char *key, const char *upload_id,
                              data_obj_meta_t *meta);
    wh_status_t (*part_put)(meta_t *m, const char *bucket, const char *key, const char *upload_id,
                            const data_part_info_t *info, const data_ref_t *ref, data_ref_t *old);
    /* Numbers > marker in order, at most max (0 = all); free with meta_parts_free. */
    wh_status_t (*part_list)(meta_t *m, const char *bucket, const char *key, const char *upload_id,
                             uint32_t marker, uint32_t max, meta_part_t **out, size_t *n,
                             bool *truncated);
    /* Drops the upload and its parts; *parts receives them (their data to release). */
    wh_status_t (*upload_delete)(meta_t *m, const char *bucket, const char *key,
                                 const char *upload_id, meta_part_t **parts, size_t *n);
    /* Atomically: the upload exists, each parts[i].info.number still maps to parts[i].ref.id
     * (else WH_ERR_PRECONDITION), the object row is upserted with ref, and the upload and its
     * parts are dropped. *all gets every part (data to release unless ref reuses it: a chunked
     * table that completes by reference shares chunk ids, which are then not released).
     * cond as object_put's, checked after the parts. */
    wh_status_t (*upload_complete)(meta_t *m, const char *bucket, const char *key,
                                   const char *upload_id, const meta_part_t *parts, size_t n,
                                   data_obj_meta_t *meta, const data_ref_t *ref, data_ref_t *old,
                                   meta_part_t **all, size_t *n_all, data_cond_t *cond);
    /* page NULL: every upload under prefix; else that page (a ListMultipartUploads page
     * reads only the rows it shows, and the one past them). */
    wh_status_t (*upload_list)(meta_t *m, const char *bucket, const char *prefix,
                               const data_upload_page_t *page, data_upload_info_t **out, size_t *n);
    /* The bucket's incomplete uploads (for the per-bucket cap). */
    wh_status_t (*upload_count)(meta_t *m, const char *bucket, uint64_t *n);

    /* ---- identity ---- */
    wh_status_t (*user_create)(meta_t *m, const meta_user_t *u);            /* EXISTS */
    wh_status_t (*user_get)(meta_t *m, const char *name, meta_user_t *out); /* NOT_FOUND */
    wh_status_t (*user_list)(meta_t *m, meta_user_t **out, size_t *n);      /* by name; free() */
    /* force: also drops the user's keys and policies; else NOT_EMPTY while any remain. */
    wh_status_t (*user_delete)(meta_t *m, const char *name, bool force);
    /* NOT_FOUND: no such user; EXISTS: the access key id is taken. */
    wh_status_t (*key_create)(meta_t *m, const meta_access_key_t *k);
    /* The key with its user's ids, in one indexed query (the SigV4 lookup). NOT_FOUND. */
    wh_status_t (*key_get)(meta_t *m, const char *access_key, meta_access_key_t *out);
    /* The user's keys, oldest first; free(). NOT_FOUND: no such user. */
    wh_status_t (*key_list)(meta_t *m, const char *user, meta_access_key_t **out, size_t *n);
    wh_status_t (*key_delete)(meta_t *m, const char *access_key); /* NOT_FOUND */
    wh_status_t (*key_set_active)(meta_t *m, const char *access_key, bool active);
    /* Inserts or replaces the user's inline policy. NOT_FOUND: no such user. */
    wh_status_t (*user_policy_put)(meta_t *m, const char *user, const char *name, const char *doc);
    wh_status_t (*user_policy_get)(meta_t *m, const char *user, const char *name,
                                   char **doc); /* NOT_FOUND */
    /* Every inline policy of the user with its document, by name (meta_policies_free).
     * NOT_FOUND: no such user. */
    wh_status_t (*user_policy_list)(meta_t *m, const char *user, meta_policy_t **out, size_t *n);
    wh_status_t (*user_policy_delete)(meta_t *m, const char *user, const char *name);
    /* Renames a user with its keys and inline policies, in one transaction (its ids stay).
     * NOT_FOUND: no user from; EXISTS: to is taken. */
    wh_status_t (*user_rename)(meta_t *m, const char *from, const char *to);
    /* IAM records. put: inserts or replaces; with create, EXISTS when the key is taken. */
    wh_status_t (*rec_put)(meta_t *m, const char *kind, const char *key, const char *doc,
                           bool create);
    wh_status_t (*rec_get)(meta_t *m, const char *kind, const char *key,
                           char **doc); /* NOT_FOUND */
    /* The records of kind whose key starts with prefix, by key (meta_recs_free). */
    wh_status_t (*rec_list)(meta_t *m, const char *kind, const char *prefix, meta_rec_t **out,
                            size_t *n);
    wh_status_t (*rec_delete)(meta_t *m, const char *kind, const char *key); /* NOT_FOUND */

    /* ---- cluster members: optional (NULL in SQLite: WH_ERR_UNSUPPORTED) ---- */
    /* Inserts or updates the node whose data directory has identity uuid; *id is stable for
     * that identity. A row at addr with another identity is retired (its copies are lost:
     * its data directory was replaced). A row at addr without one (written before identities
     * existed) is adopted when adopt (the directory holds chunks), else retired too. */
    wh_status_t (*node_register)(meta_t *m, const char *addr, const char *uuid, bool adopt,
                                 uint64_t capacity, uint64_t free, uint32_t *id);
    /* NOT_FOUND: no such node, or it was retired (re-register). */
    wh_status_t (*node_heartbeat)(meta_t *m, uint32_t id, uint64_t capacity, uint64_t free);
    /* The cluster's id, made with the schema (a storage server refuses another's database). */
    wh_status_t (*cluster_id)(meta_t *m, char out[META_UUID_MAX]);
    /* Damaged copies: a storage server reports a copy of chunk_id that failed its checksum
     * (idempotent); the maintenance gateway takes them (chunk_id, node; oldest first), rewrites
     * each from a good replica and marks it done. */
    wh_status_t (*damage_report)(meta_t *m, uint32_t node, const char *chunk_id);
    wh_status_t (*damage_take)(meta_t *m, size_t max, meta_gc_item_t **out, size_t *n);
    wh_status_t (*damage_done)(meta_t *m, uint32_t node, const char *chunk_id);
    /* The chunk map entry of chunk_id (length, crc, replicas; offset 0). NOT_FOUND: no
     * committed row lists it. */
    wh_status_t (*chunk_find)(meta_t *m, const char *chunk_id, data_chunk_t *out);
    /* The erasure-coded stripe a shard chunk_id belongs to: its k + m rows in shard order
     * (offset, length, crcs, servers) into *out (cleared first; the id is not set).
     * NOT_FOUND: no row lists it as a shard. */
    wh_status_t (*chunk_stripe)(meta_t *m, const char *chunk_id, data_ref_t *out);
    wh_status_t (*node_list)(meta_t *m, meta_node_t **out, size_t *n);
    /* The node's failure domain (wharfd storage --zone; "" none), set at every start. */
    wh_status_t (*node_set_zone)(meta_t *m, uint32_t id, const char *zone);
    /* Marks the node at addr draining (idempotent): placement takes it out, repair moves its
     * copies off. NOT_FOUND: no node there; PRECONDITION: it was removed. */
    wh_status_t (*node_drain)(meta_t *m, const char *addr, uint32_t *id);
    /* Removes the node at addr (never dialed again, its copies repaired from the others),
     * unless it holds the only live copy of some chunk: BUSY and *sole says how many (a
     * copy is live on a node not retired, not removed, with a heartbeat younger than live_s
     * seconds). NOT_FOUND: no node there. In one transaction with the node's row locked. */
    wh_status_t (*node_remove)(meta_t *m, const char *addr, unsigned live_s, uint32_t *id,
                               uint64_t *sole);
    /* Distinct chunks in the chunk map per node that holds any (free). */
    wh_status_t (*node_copies)(meta_t *m, meta_node_copies_t **out, size_t *n);
    /* A storage server's scrubber progress and damaged copies (written when they change). */
    wh_status_t (*node_report)(meta_t *m, uint32_t id, double scrub_progress, uint64_t scrub_passes,
                               uint64_t damaged);
    /* The maintenance gateway's view, written every pass; read by wharfd node status.
     * status_get: NOT_FOUND before any pass. */
    wh_status_t (*cluster_status_put)(meta_t *m, const meta_cluster_status_t *st);
    wh_status_t (*cluster_status_get)(meta_t *m, meta_cluster_status_t *st);
    /* Up to max queued chunk copies no committed row references any more, oldest first.
     * live_s > 0: only copies on nodes whose heartbeat is younger than live_s seconds, that
     * were retired, or that are not in the node table (a dead node's backlog does not stop
     * the others'); 0: every node. */
    wh_status_t (*gc_take)(meta_t *m, size_t max, unsigned live_s, meta_gc_item_t **out, size_t *n);
    wh_status_t (*gc_done)(meta_t *m, const meta_gc_item_t *items, size_t n);
    /* Queues chunk copies that become deletable only after delay_s seconds unless a committed
     * row lists the node among the chunk's replicas by then: a cluster gateway records every
     * copy it is about to write this way, so a PUT that dies before its commit leaves nothing
     * that outlives GC. (seq of items is ignored.) */
    wh_status_t (*gc_defer)(meta_t *m, const meta_gc_item_t *items, size_t n, unsigned delay_s);
    /* Repair: the distinct chunks with a copy on node, chunk ids > after ("" first), at most
     * max; offset is 0 in the results. */
    wh_status_t (*chunks_on_node)(meta_t *m, uint32_t node, const char *after, size_t max,
                                  data_chunk_t **out, size_t *n);
    /* Rebalance: the distinct chunks of the chunk map, chunk ids > after ("" first), at most
     * max; offset is 0 in the results. */
    wh_status_t (*chunks_page)(meta_t *m, const char *after, size_t max, data_chunk_t **out,
                               size_t *n);
    /* Repair's backlog: distinct chunks with a copy on any of nodes[0..n). */
    wh_status_t (*chunks_on_nodes_count)(meta_t *m, const uint32_t *nodes, size_t n,
                                         uint64_t *count);
    /* Repair: every row of chunk_id lists to instead of from, and from's copy is queued for
     * garbage collection (deletable after gc_delay_s: a reader that read the map before the
     * move may still ask from for it), in one transaction. */
    wh_status_t (*chunk_move)(meta_t *m, const char *chunk_id, uint32_t from, uint32_t to,
                              unsigned gc_delay_s);
    /* Session-level advisory lock (one-at-a-time repair): WH_OK if taken, WH_ERR_BUSY if
     * another process holds it. Released by lock_release or when the process dies. */
    wh_status_t (*lock_try)(meta_t *m, int64_t key);
    wh_status_t (*lock_release)(meta_t *m, int64_t key);
};

/* url NULL/"" or a path: SQLite at that path (a path is required). "postgresql://...": the
 * PostgreSQL backend. */
wh_status_t meta_open(const char *url_or_path, meta_t **out);
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
/* S3's listing of versions over version_scan (meta_list.c). */
wh_status_t meta_version_list(meta_t *m, const char *bucket, const data_version_params_t *p,
                              data_version_result_t *out);

/* S3 listing over object_scan (meta_list.c). */
wh_status_t meta_object_list(meta_t *m, const char *bucket, const data_list_params_t *p,
                             data_list_result_t *out);

/* The authorization reads through the generation-checked cache (meta_cache.c). meta_open
 * sets the cache up; meta_close frees it. */
wh_status_t meta_cache_init(meta_t *m);
void meta_cache_free(meta_t *m);
void meta_cache_stats(meta_t *m, uint64_t *hits, uint64_t *misses);
wh_status_t meta_cached_key_get(meta_t *m, const char *ak, meta_access_key_t *out);
wh_status_t meta_cached_user_policy_list(meta_t *m, const char *user, meta_policy_t **out,
                                         size_t *n);
wh_status_t meta_cached_bucket_auth_get(meta_t *m, const char *bucket, data_bucket_auth_t *out);
wh_status_t meta_cached_rec_get(meta_t *m, const char *kind, const char *key, char **doc);
wh_status_t meta_cached_rec_list(meta_t *m, const char *kind, const char *prefix, meta_rec_t **out,
                                 size_t *n);

/* ---- dispatch: one typed function per slot ----
 * A slot that is NULL is an operation the backend does not offer (the cluster members' slots
 * in SQLite): its function answers WH_ERR_UNSUPPORTED. Callers that can do without test the
 * status; none tests the slot. The authorization reads go through the cache. */
static inline wh_status_t meta_set_durable(meta_t *m, bool durable)
{
    return m->ops->set_durable ? m->ops->set_durable(m, durable) : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_bucket_create(meta_t *m, const char *name, time_t created,
                                             const char *owner, const char *acl)
{
    return m->ops->bucket_create ? m->ops->bucket_create(m, name, created, owner, acl)
                                 : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_bucket_delete(meta_t *m, const char *name, meta_part_t **parts,
                                             size_t *n)
{
    return m->ops->bucket_delete ? m->ops->bucket_delete(m, name, parts, n) : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_bucket_exists(meta_t *m, const char *name)
{
    return m->ops->bucket_exists ? m->ops->bucket_exists(m, name) : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_bucket_list(meta_t *m, data_bucket_info_t **out, size_t *n)
{
    return m->ops->bucket_list ? m->ops->bucket_list(m, out, n) : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_bucket_auth_get(meta_t *m, const char *name, data_bucket_auth_t *out)
{
    return meta_cached_bucket_auth_get(m, name, out);
}

static inline wh_status_t meta_bucket_set_acl(meta_t *m, const char *name, const char *acl)
{
    return m->ops->bucket_set_acl ? m->ops->bucket_set_acl(m, name, acl) : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_bucket_set_policy(meta_t *m, const char *name, const char *policy)
{
    return m->ops->bucket_set_policy ? m->ops->bucket_set_policy(m, name, policy)
                                     : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_bucket_attr_set(meta_t *m, const char *name, data_battr_t which,
                                               const char *value)
{
    return m->ops->bucket_attr_set ? m->ops->bucket_attr_set(m, name, which, value)
                                   : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_bucket_attr_get(meta_t *m, const char *name, data_battr_t which,
                                               char **out)
{
    return m->ops->bucket_attr_get ? m->ops->bucket_attr_get(m, name, which, out)
                                   : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_object_set_acl(meta_t *m, const char *bucket, const char *key,
                                              size_t klen, const char *acl)
{
    return m->ops->object_set_acl ? m->ops->object_set_acl(m, bucket, key, klen, acl)
                                  : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_user_create(meta_t *m, const meta_user_t *u)
{
    return m->ops->user_create ? m->ops->user_create(m, u) : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_user_get(meta_t *m, const char *name, meta_user_t *out)
{
    return m->ops->user_get ? m->ops->user_get(m, name, out) : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_user_list(meta_t *m, meta_user_t **out, size_t *n)
{
    return m->ops->user_list ? m->ops->user_list(m, out, n) : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_user_delete(meta_t *m, const char *name, bool force)
{
    return m->ops->user_delete ? m->ops->user_delete(m, name, force) : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_key_create(meta_t *m, const meta_access_key_t *k)
{
    return m->ops->key_create ? m->ops->key_create(m, k) : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_key_get(meta_t *m, const char *access_key, meta_access_key_t *out)
{
    return meta_cached_key_get(m, access_key, out);
}

static inline wh_status_t meta_key_list(meta_t *m, const char *user, meta_access_key_t **out,
                                        size_t *n)
{
    return m->ops->key_list ? m->ops->key_list(m, user, out, n) : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_key_delete(meta_t *m, const char *access_key)
{
    return m->ops->key_delete ? m->ops->key_delete(m, access_key) : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_key_set_active(meta_t *m, const char *access_key, bool active)
{
    return m->ops->key_set_active ? m->ops->key_set_active(m, access_key, active)
                                  : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_user_policy_put(meta_t *m, const char *user, const char *name,
                                               const char *doc)
{
    return m->ops->user_policy_put ? m->ops->user_policy_put(m, user, name, doc)
                                   : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_user_policy_get(meta_t *m, const char *user, const char *name,
                                               char **doc)
{
    return m->ops->user_policy_get ? m->ops->user_policy_get(m, user, name, doc)
                                   : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_user_policy_list(meta_t *m, const char *user, meta_policy_t **out,
                                                size_t *n)
{
    return meta_cached_user_policy_list(m, user, out, n);
}

static inline wh_status_t meta_user_policy_delete(meta_t *m, const char *user, const char *name)
{
    return m->ops->user_policy_delete ? m->ops->user_policy_delete(m, user, name)
                                      : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_user_rename(meta_t *m, const char *from, const char *to)
{
    return m->ops->user_rename ? m->ops->user_rename(m, from, to) : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_rec_put(meta_t *m, const char *kind, const char *key,
                                       const char *doc, bool create)
{
    return m->ops->rec_put ? m->ops->rec_put(m, kind, key, doc, create) : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_rec_get(meta_t *m, const char *kind, const char *key, char **doc)
{
    return meta_cached_rec_get(m, kind, key, doc);
}

static inline wh_status_t meta_rec_list(meta_t *m, const char *kind, const char *prefix,
                                        meta_rec_t **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    return meta_cached_rec_list(m, kind, prefix, out, n);
}

static inline wh_status_t meta_rec_delete(meta_t *m, const char *kind, const char *key)
{
    return m->ops->rec_delete ? m->ops->rec_delete(m, kind, key) : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_object_get(meta_t *m, const char *bucket, const char *key,
                                          size_t klen, data_obj_meta_t *meta, data_ref_t *ref)
{
    return m->ops->object_get ? m->ops->object_get(m, bucket, key, klen, meta, ref)
                              : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_bucket_versioning_get(meta_t *m, const char *bucket, int *state)
{
    return m->ops->bucket_versioning_get ? m->ops->bucket_versioning_get(m, bucket, state)
                                         : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_bucket_versioning_set(meta_t *m, const char *bucket, int state)
{
    return m->ops->bucket_versioning_set ? m->ops->bucket_versioning_set(m, bucket, state)
                                         : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_object_get_version(meta_t *m, const char *bucket, const char *key,
                                                  size_t klen, const char *version_id,
                                                  data_obj_meta_t *meta, data_ref_t *ref)
{
    return m->ops->object_get_version
               ? m->ops->object_get_version(m, bucket, key, klen, version_id, meta, ref)
               : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_object_delete_version(meta_t *m, const char *bucket, const char *key,
                                                     size_t klen, const char *version_id,
                                                     int bypass, data_del_cond_t *cond,
                                                     data_del_result_t *res, data_ref_t *old)
{
    return m->ops->object_delete_version
               ? m->ops->object_delete_version(m, bucket, key, klen, version_id, bypass, cond, res,
                                               old)
               : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_version_scan(meta_t *m, const char *bucket, const void *from,
                                            size_t flen, bool inclusive, meta_version_fn fn,
                                            void *arg)
{
    return m->ops->version_scan ? m->ops->version_scan(m, bucket, from, flen, inclusive, fn, arg)
                                : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_object_lock_set(meta_t *m, const char *bucket, const char *key,
                                               size_t klen, const char *version_id,
                                               const data_lock_set_t *req, data_obj_meta_t *out)
{
    return m->ops->object_lock_set
               ? m->ops->object_lock_set(m, bucket, key, klen, version_id, req, out)
               : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_object_tags_set(meta_t *m, const char *bucket, const char *key,
                                               size_t klen, const char *version_id,
                                               const char *tags)
{
    return m->ops->object_tags_set ? m->ops->object_tags_set(m, bucket, key, klen, version_id, tags)
                                   : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_object_put(meta_t *m, const char *bucket, const char *key,
                                          size_t klen, data_obj_meta_t *meta, const data_ref_t *ref,
                                          data_ref_t *old, data_cond_t *cond)
{
    return m->ops->object_put ? m->ops->object_put(m, bucket, key, klen, meta, ref, old, cond)
                              : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_object_rename(meta_t *m, const char *bucket, const char *src,
                                             size_t slen, const char *dst, size_t dlen,
                                             const data_rename_src_cond_t *scond, data_cond_t *cond,
                                             data_rename_fail_t *fail, data_ref_t *old)
{
    return m->ops->object_rename
               ? m->ops->object_rename(m, bucket, src, slen, dst, dlen, scond, cond, fail, old)
               : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_object_swap(meta_t *m, const char *bucket, const char *key,
                                           size_t klen, const char *expect_id,
                                           data_obj_meta_t *meta, const data_ref_t *ref,
                                           data_ref_t *old)
{
    return m->ops->object_swap
               ? m->ops->object_swap(m, bucket, key, klen, expect_id, meta, ref, old)
               : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_object_delete(meta_t *m, const char *bucket, const char *key,
                                             size_t klen, data_ref_t *old)
{
    return m->ops->object_delete ? m->ops->object_delete(m, bucket, key, klen, old)
                                 : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_object_scan(meta_t *m, const char *bucket, const void *from,
                                           size_t flen, bool inclusive, meta_scan_fn fn, void *arg)
{
    return m->ops->object_scan ? m->ops->object_scan(m, bucket, from, flen, inclusive, fn, arg)
                               : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_data_referenced(meta_t *m, const char *id)
{
    return m->ops->data_referenced ? m->ops->data_referenced(m, id) : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_upload_create(meta_t *m, const char *bucket, const char *key,
                                             const char *upload_id, const data_obj_meta_t *meta,
                                             time_t initiated)
{
    return m->ops->upload_create ? m->ops->upload_create(m, bucket, key, upload_id, meta, initiated)
                                 : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_upload_get(meta_t *m, const char *bucket, const char *key,
                                          const char *upload_id, data_obj_meta_t *meta)
{
    return m->ops->upload_get ? m->ops->upload_get(m, bucket, key, upload_id, meta)
                              : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_part_put(meta_t *m, const char *bucket, const char *key,
                                        const char *upload_id, const data_part_info_t *info,
                                        const data_ref_t *ref, data_ref_t *old)
{
    return m->ops->part_put ? m->ops->part_put(m, bucket, key, upload_id, info, ref, old)
                            : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_part_list(meta_t *m, const char *bucket, const char *key,
                                         const char *upload_id, uint32_t marker, uint32_t max,
                                         meta_part_t **out, size_t *n, bool *truncated)
{
    return m->ops->part_list
               ? m->ops->part_list(m, bucket, key, upload_id, marker, max, out, n, truncated)
               : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_upload_delete(meta_t *m, const char *bucket, const char *key,
                                             const char *upload_id, meta_part_t **parts, size_t *n)
{
    return m->ops->upload_delete ? m->ops->upload_delete(m, bucket, key, upload_id, parts, n)
                                 : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_upload_complete(meta_t *m, const char *bucket, const char *key,
                                               const char *upload_id, const meta_part_t *parts,
                                               size_t n, data_obj_meta_t *meta,
                                               const data_ref_t *ref, data_ref_t *old,
                                               meta_part_t **all, size_t *n_all, data_cond_t *cond)
{
    return m->ops->upload_complete ? m->ops->upload_complete(m, bucket, key, upload_id, parts, n,
                                                             meta, ref, old, all, n_all, cond)
                                   : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_upload_list(meta_t *m, const char *bucket, const char *prefix,
                                           const data_upload_page_t *page, data_upload_info_t **out,
                                           size_t *n)
{
    return m->ops->upload_list ? m->ops->upload_list(m, bucket, prefix, page, out, n)
                               : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_upload_count(meta_t *m, const char *bucket, uint64_t *n)
{
    return m->ops->upload_count ? m->ops->upload_count(m, bucket, n) : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_node_register(meta_t *m, const char *addr, const char *uuid,
                                             bool adopt, uint64_t capacity, uint64_t free,
                                             uint32_t *id)
{
    return m->ops->node_register ? m->ops->node_register(m, addr, uuid, adopt, capacity, free, id)
                                 : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_node_heartbeat(meta_t *m, uint32_t id, uint64_t capacity,
                                              uint64_t free)
{
    return m->ops->node_heartbeat ? m->ops->node_heartbeat(m, id, capacity, free)
                                  : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_node_list(meta_t *m, meta_node_t **out, size_t *n)
{
    return m->ops->node_list ? m->ops->node_list(m, out, n) : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_node_set_zone(meta_t *m, uint32_t id, const char *zone)
{
    return m->ops->node_set_zone ? m->ops->node_set_zone(m, id, zone) : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_node_drain(meta_t *m, const char *addr, uint32_t *id)
{
    return m->ops->node_drain ? m->ops->node_drain(m, addr, id) : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_node_remove(meta_t *m, const char *addr, unsigned live_s,
                                           uint32_t *id, uint64_t *sole)
{
    return m->ops->node_remove ? m->ops->node_remove(m, addr, live_s, id, sole)
                               : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_node_copies(meta_t *m, meta_node_copies_t **out, size_t *n)
{
    return m->ops->node_copies ? m->ops->node_copies(m, out, n) : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_node_report(meta_t *m, uint32_t id, double scrub_progress,
                                           uint64_t scrub_passes, uint64_t damaged)
{
    return m->ops->node_report ? m->ops->node_report(m, id, scrub_progress, scrub_passes, damaged)
                               : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_cluster_status_put(meta_t *m, const meta_cluster_status_t *st)
{
    return m->ops->cluster_status_put ? m->ops->cluster_status_put(m, st) : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_cluster_status_get(meta_t *m, meta_cluster_status_t *st)
{
    return m->ops->cluster_status_get ? m->ops->cluster_status_get(m, st) : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_gc_take(meta_t *m, size_t max, unsigned live_s, meta_gc_item_t **out,
                                       size_t *n)
{
    return m->ops->gc_take ? m->ops->gc_take(m, max, live_s, out, n) : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_gc_done(meta_t *m, const meta_gc_item_t *items, size_t n)
{
    return m->ops->gc_done ? m->ops->gc_done(m, items, n) : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_gc_defer(meta_t *m, const meta_gc_item_t *items, size_t n,
                                        unsigned delay_s)
{
    return m->ops->gc_defer ? m->ops->gc_defer(m, items, n, delay_s) : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_chunks_on_node(meta_t *m, uint32_t node, const char *after,
                                              size_t max, data_chunk_t **out, size_t *n)
{
    return m->ops->chunks_on_node ? m->ops->chunks_on_node(m, node, after, max, out, n)
                                  : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_chunks_page(meta_t *m, const char *after, size_t max,
                                           data_chunk_t **out, size_t *n)
{
    return m->ops->chunks_page ? m->ops->chunks_page(m, after, max, out, n) : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_chunks_on_nodes_count(meta_t *m, const uint32_t *nodes, size_t n,
                                                     uint64_t *count)
{
    return m->ops->chunks_on_nodes_count ? m->ops->chunks_on_nodes_count(m, nodes, n, count)
                                         : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_chunk_move(meta_t *m, const char *chunk_id, uint32_t from,
                                          uint32_t to, unsigned gc_delay_s)
{
    return m->ops->chunk_move ? m->ops->chunk_move(m, chunk_id, from, to, gc_delay_s)
                              : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_cluster_id(meta_t *m, char out[META_UUID_MAX])
{
    return m->ops->cluster_id ? m->ops->cluster_id(m, out) : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_damage_report(meta_t *m, uint32_t node, const char *chunk_id)
{
    return m->ops->damage_report ? m->ops->damage_report(m, node, chunk_id) : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_damage_take(meta_t *m, size_t max, meta_gc_item_t **out, size_t *n)
{
    return m->ops->damage_take ? m->ops->damage_take(m, max, out, n) : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_damage_done(meta_t *m, uint32_t node, const char *chunk_id)
{
    return m->ops->damage_done ? m->ops->damage_done(m, node, chunk_id) : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_chunk_find(meta_t *m, const char *chunk_id, data_chunk_t *out)
{
    return m->ops->chunk_find ? m->ops->chunk_find(m, chunk_id, out) : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_chunk_stripe(meta_t *m, const char *chunk_id, data_ref_t *out)
{
    return m->ops->chunk_stripe ? m->ops->chunk_stripe(m, chunk_id, out) : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_lock_try(meta_t *m, int64_t key)
{
    return m->ops->lock_try ? m->ops->lock_try(m, key) : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_lock_release(meta_t *m, int64_t key)
{
    return m->ops->lock_release ? m->ops->lock_release(m, key) : WH_ERR_UNSUPPORTED;
}

#endif
