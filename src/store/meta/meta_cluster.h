/* SPDX-License-Identifier: Apache-2.0 */
/* The metadata table of a cluster: storage servers, the garbage-collection queue, damaged
 * copies, chunk maps by chunk, the maintenance gateway's status and advisory locks. Optional:
 * a backend that is no cluster's (SQLite) has no such table (meta_ops_t.cluster NULL), and
 * these functions answer WH_ERR_UNSUPPORTED there. Included by meta.h. */
#ifndef WH_META_META_CLUSTER_H
#define WH_META_META_CLUSTER_H

#include "meta/meta.h"

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

typedef struct meta_cluster_ops meta_cluster_ops_t;
struct meta_cluster_ops {
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

static inline wh_status_t meta_node_register(meta_t *m, const char *addr, const char *uuid,
                                             bool adopt, uint64_t capacity, uint64_t free,
                                             uint32_t *id)
{
    return META_HAS(m, cluster, node_register)
               ? m->ops->cluster->node_register(m, addr, uuid, adopt, capacity, free, id)
               : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_node_heartbeat(meta_t *m, uint32_t id, uint64_t capacity,
                                              uint64_t free)
{
    return META_HAS(m, cluster, node_heartbeat)
               ? m->ops->cluster->node_heartbeat(m, id, capacity, free)
               : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_node_list(meta_t *m, meta_node_t **out, size_t *n)
{
    return META_HAS(m, cluster, node_list) ? m->ops->cluster->node_list(m, out, n)
                                           : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_node_set_zone(meta_t *m, uint32_t id, const char *zone)
{
    return META_HAS(m, cluster, node_set_zone) ? m->ops->cluster->node_set_zone(m, id, zone)
                                               : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_node_drain(meta_t *m, const char *addr, uint32_t *id)
{
    return META_HAS(m, cluster, node_drain) ? m->ops->cluster->node_drain(m, addr, id)
                                            : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_node_remove(meta_t *m, const char *addr, unsigned live_s,
                                           uint32_t *id, uint64_t *sole)
{
    return META_HAS(m, cluster, node_remove)
               ? m->ops->cluster->node_remove(m, addr, live_s, id, sole)
               : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_node_copies(meta_t *m, meta_node_copies_t **out, size_t *n)
{
    return META_HAS(m, cluster, node_copies) ? m->ops->cluster->node_copies(m, out, n)
                                             : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_node_report(meta_t *m, uint32_t id, double scrub_progress,
                                           uint64_t scrub_passes, uint64_t damaged)
{
    return META_HAS(m, cluster, node_report)
               ? m->ops->cluster->node_report(m, id, scrub_progress, scrub_passes, damaged)
               : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_cluster_status_put(meta_t *m, const meta_cluster_status_t *st)
{
    return META_HAS(m, cluster, cluster_status_put) ? m->ops->cluster->cluster_status_put(m, st)
                                                    : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_cluster_status_get(meta_t *m, meta_cluster_status_t *st)
{
    return META_HAS(m, cluster, cluster_status_get) ? m->ops->cluster->cluster_status_get(m, st)
                                                    : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_gc_take(meta_t *m, size_t max, unsigned live_s, meta_gc_item_t **out,
                                       size_t *n)
{
    return META_HAS(m, cluster, gc_take) ? m->ops->cluster->gc_take(m, max, live_s, out, n)
                                         : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_gc_done(meta_t *m, const meta_gc_item_t *items, size_t n)
{
    return META_HAS(m, cluster, gc_done) ? m->ops->cluster->gc_done(m, items, n)
                                         : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_gc_defer(meta_t *m, const meta_gc_item_t *items, size_t n,
                                        unsigned delay_s)
{
    return META_HAS(m, cluster, gc_defer) ? m->ops->cluster->gc_defer(m, items, n, delay_s)
                                          : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_chunks_on_node(meta_t *m, uint32_t node, const char *after,
                                              size_t max, data_chunk_t **out, size_t *n)
{
    return META_HAS(m, cluster, chunks_on_node)
               ? m->ops->cluster->chunks_on_node(m, node, after, max, out, n)
               : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_chunks_page(meta_t *m, const char *after, size_t max,
                                           data_chunk_t **out, size_t *n)
{
    return META_HAS(m, cluster, chunks_page) ? m->ops->cluster->chunks_page(m, after, max, out, n)
                                             : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_chunks_on_nodes_count(meta_t *m, const uint32_t *nodes, size_t n,
                                                     uint64_t *count)
{
    return META_HAS(m, cluster, chunks_on_nodes_count)
               ? m->ops->cluster->chunks_on_nodes_count(m, nodes, n, count)
               : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_chunk_move(meta_t *m, const char *chunk_id, uint32_t from,
                                          uint32_t to, unsigned gc_delay_s)
{
    return META_HAS(m, cluster, chunk_move)
               ? m->ops->cluster->chunk_move(m, chunk_id, from, to, gc_delay_s)
               : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_cluster_id(meta_t *m, char out[META_UUID_MAX])
{
    return META_HAS(m, cluster, cluster_id) ? m->ops->cluster->cluster_id(m, out)
                                            : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_damage_report(meta_t *m, uint32_t node, const char *chunk_id)
{
    return META_HAS(m, cluster, damage_report) ? m->ops->cluster->damage_report(m, node, chunk_id)
                                               : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_damage_take(meta_t *m, size_t max, meta_gc_item_t **out, size_t *n)
{
    return META_HAS(m, cluster, damage_take) ? m->ops->cluster->damage_take(m, max, out, n)
                                             : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_damage_done(meta_t *m, uint32_t node, const char *chunk_id)
{
    return META_HAS(m, cluster, damage_done) ? m->ops->cluster->damage_done(m, node, chunk_id)
                                             : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_chunk_find(meta_t *m, const char *chunk_id, data_chunk_t *out)
{
    return META_HAS(m, cluster, chunk_find) ? m->ops->cluster->chunk_find(m, chunk_id, out)
                                            : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_chunk_stripe(meta_t *m, const char *chunk_id, data_ref_t *out)
{
    return META_HAS(m, cluster, chunk_stripe) ? m->ops->cluster->chunk_stripe(m, chunk_id, out)
                                              : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_lock_try(meta_t *m, int64_t key)
{
    return META_HAS(m, cluster, lock_try) ? m->ops->cluster->lock_try(m, key) : WH_ERR_UNSUPPORTED;
}

static inline wh_status_t meta_lock_release(meta_t *m, int64_t key)
{
    return META_HAS(m, cluster, lock_release) ? m->ops->cluster->lock_release(m, key)
                                              : WH_ERR_UNSUPPORTED;
}

#endif
