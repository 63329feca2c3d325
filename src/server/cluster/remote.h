/* SPDX-License-Identifier: Apache-2.0 */
/* The gateway's data table (data/data.h) over storage servers.
 *
 * An object's bytes are a list of chunks (chunk_size bytes, the last one shorter), each
 * written to `replicas` distinct live storage servers chosen by weighted rendezvous hashing
 * (place.h) and recorded in the object's chunk map, which the metadata commit stores. The
 * gateway keeps no state of its own: membership comes from the metadata database (storage
 * servers register and heartbeat there), refreshed once a second.
 *
 * Data paths:
 * - HTTP PUT: the gateway cuts the stream into chunks and sends each to its replicas in
 *   parallel (a replica that fails is replaced by the next node in placement order);
 * - HTTP GET: chunks are fetched from one live replica each (the next one on failure), with a
 *   read-ahead of a few chunks for sequential reads;
 * - RDMA PUT: each replica's storage server pulls its chunk from the client's region itself
 *   (the memory token narrowed to that chunk) and acks with crc64nvme and MD5;
 * - RDMA GET: one live replica per chunk writes its part into the client's region at the
 *   right offset, all chunks in parallel; the crcs are combined in order.
 * A chunk that no replica can serve fails the request with WH_ERR_UNAVAILABLE and a message
 * naming the chunk; nothing is ever reported as moved that did not land. */
#ifndef WH_CLUSTER_REMOTE_H
#define WH_CLUSTER_REMOTE_H

#include "base/util.h"
#include "data/data.h"
#include "meta/meta.h"

#define CL_DEFAULT_CHUNK (8ULL << 20)
#define CL_DEFAULT_REPLICAS 2

typedef struct cl_remote_config {
    meta_t *meta;        /* the store's metadata table (borrowed: outlives the table) */
    const char *secret;  /* WHARF_CLUSTER_SECRET */
    uint64_t chunk_size; /* default CL_DEFAULT_CHUNK */
    unsigned replicas;   /* 1..3, default 2 */
    /* Erasure coding instead of replicas (0, 0: replicas): each chunk becomes ec_k data and
     * ec_m parity shards on ec_k + ec_m distinct servers (ec.h). A bucket's tag wharf-ec
     * (K+M, or "replicas") overrides it for that bucket's PUTs. */
    unsigned ec_k, ec_m;
    unsigned parallel;      /* chunk requests in flight per S3 request; default 16 */
    unsigned down_after_ms; /* a node whose heartbeat is older is down; default 5000 */
    unsigned refresh_ms;    /* membership refresh period; default 1000 */
    unsigned gc_period_ms;  /* garbage-collection (and repair) pass period; default 2000 */
    /* Every chunk copy is queued for GC before it is written, deletable after this many
     * seconds unless a commit lists it: a PUT must commit within it. Default 3600. */
    unsigned orphan_grace_s;
    /* A storage server down (no heartbeat) this long has its chunks copied from the other
     * replicas to other servers, by the gateway holding the maintenance lock. Default 120. */
    unsigned repair_after_s;
    /* The storage servers serve HTTPS: PEM CAs their certificates chain to (NULL: HTTP). */
    const char *ca_file;
    /* Free bytes kept on every storage server: one with less than this plus a chunk free
     * takes no new copy; placement weighs the free space above it. Default 256 MiB. */
    uint64_t reserve_bytes;
    /* Bytes per second the maintenance gateway copies off draining servers (wharfd node
     * drain). Default 64 MiB. */
    uint64_t drain_rate;
    /* Bytes per second moved toward the placement of the current membership after it changed
     * (a join; a server back): copies go to the servers a chunk now ranks first on. 0: never.
     * Default 16 MiB. */
    uint64_t rebalance_rate;
    /* This gateway's S3 address, published as the leader's (wharfd node status). */
    const char *self_addr;
    /* Chunk copies (repair, drain, rebalance, damaged copies) in flight at once, each sent by
     * a storage server holding a good copy straight to its new server. Default 4 per CPU of
     * this host, at least 8, at most CL_REPAIR_PARALLEL_MAX. */
    unsigned repair_parallel;
} cl_remote_config_t;
#define CL_REPAIR_PARALLEL_MAX 64

void cl_remote_config_init(cl_remote_config_t *cfg);
wh_status_t cl_remote_open(const cl_remote_config_t *cfg, data_table_t **out);

/* For the gateway's /metrics: wharf_storage_nodes_up and the cluster's counters. */
void cl_remote_metrics(data_table_t *d, wh_sbuf_t *out);
/* Storage servers currently up (heartbeat fresh), -1 when membership is unknown (database
 * unreachable since start). */
int cl_remote_nodes_up(data_table_t *d);

#endif
