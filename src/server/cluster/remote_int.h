/* SPDX-License-Identifier: Apache-2.0 */
/* Internals of the remote data table shared by remote.c (writers, readers, RDMA) and
 * members.c (membership cache, placement candidates, garbage collection). */
#ifndef WH_CLUSTER_REMOTE_INT_H
#define WH_CLUSTER_REMOTE_INT_H

#include "cluster/client.h"
#include "cluster/remote.h"
#include "xfer/token.h"

#include "base/tsa.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

/* The advisory lock one gateway holds to run garbage collection, repair and lifecycle. */
#define CL_LOCK_MAINTENANCE META_LOCK_MAINTENANCE

typedef struct cl_member {
    uint32_t id;
    char addr[256];
    uint64_t free;
    bool up;      /* heartbeat fresh */
    bool retired; /* its data directory was replaced: copies lost, nothing to delete */
    int state;    /* META_NODE_ACTIVE, _DRAINING (no new copies), _REMOVED (never
                   * dialed; copies lost, nothing to delete) */
    char zone[META_ZONE_MAX];
    int64_t age_s;          /* seconds since its last heartbeat (database clock) */
    uint64_t suspect_until; /* ms (wh_now_ns clock): failed a request, avoided until then */
} cl_member_t;

typedef struct cl_remote {
    data_table_t base;
    cl_remote_config_t cfg;
    cl_client_t *client;

    wh_mutex_t lock; /* members, n_members, known, stop, nudge */
    cl_member_t *members;
    size_t n_members;
    bool known; /* at least one membership read succeeded */

    pthread_t thread; /* membership refresh + maintenance */
    bool thread_started, stop, nudge;
    pthread_cond_t cond;

    _Atomic uint64_t chunks_put, chunks_got, bytes_put, bytes_got, unavailable;
    _Atomic uint64_t gc_deleted, gc_failed, meta_failures;
    _Atomic uint64_t repair_chunks, repair_bytes, repair_failures, repair_pending, repair_nodes;
    _Atomic uint64_t damage_repaired, damage_pending;
    _Atomic uint64_t repair_relayed; /* copies relayed through this gateway (a source that
                                      * cannot push: 501) */
    _Atomic uint64_t drain_chunks, drain_bytes, drain_pending, drain_nodes;
    _Atomic uint64_t ec_stripes, ec_decodes, ec_rebuilt; /* stripes written, degraded reads
                                                          * decoded, shards rebuilt */
    _Atomic uint64_t rebalance_chunks, rebalance_bytes, rebalance_walks;
    /* rebalance (members thread only): the membership its walk is for, where it is */
    uint64_t rb_sig;
    bool rb_active;
    char rb_after[DATA_ID_LEN + 1];
    double rb_budget;
    uint64_t rb_last_ms;
    double drain_budget;            /* bytes the drain may copy now (members thread only) */
    uint64_t drain_last_ms;         /* when the budget was last topped up */
    _Atomic uint64_t write_retries; /* chunk writes retried on another server (place_and_run) */
    /* repair: where each dead node's walk through its chunks is (resumed next pass, so
     * chunks that cannot be repaired now do not hold back the ones after them) */
    struct {
        uint32_t node;
        char after[DATA_ID_LEN + 1];
        uint64_t warned_ms; /* last summary of chunks it could not repair (one a minute) */
    } repair_cursor[64];
    size_t n_repair_cursor;
    _Atomic bool leader;
} cl_remote_t;

/* Candidates for writing a new chunk: job i of `replicas` gets its primary and spares
 * (distinct per job). Returns the number of up nodes (0: none). */
size_t cl_members_for_write(cl_remote_t *r, const char *chunk_id, unsigned replicas,
                            cl_job_t *jobs);
/* The up nodes in placement order for chunk_id (at most max, <= CL_PLACE_MAX). */
size_t cl_members_rank(cl_remote_t *r, const char *chunk_id, uint32_t *ids, char (*addrs)[256],
                       size_t max);
/* Storage servers up (heartbeat fresh, not suspect), whatever their free space. */
size_t cl_members_up(cl_remote_t *r);
/* Candidates for reading a chunk: its replicas that are up first, then the others (a
 * heartbeat may lag); unknown nodes are skipped. */
void cl_members_for_read(cl_remote_t *r, const data_chunk_t *c, cl_job_t *j);
/* Is some replica of c on a storage server whose heartbeat is fresh? */
bool cl_members_can_read(cl_remote_t *r, const data_chunk_t *c);
/* Address of node id (false if not a member). */
bool cl_members_addr(cl_remote_t *r, uint32_t id, char addr[256]);

/* A request to node id failed at the transport level: avoid it for down_after_ms (by then
 * its heartbeat, or its absence, tells). */
void cl_members_suspect(void *r, uint32_t id);

/* Queues every candidate copy of jobs for GC after the orphan grace (see remote.h). */
wh_status_t cl_record_intents(cl_remote_t *r, const cl_job_t *jobs, size_t n);

/* members.c, for repair.c: the node table read again (the old view kept when the database is
 * unreachable); a member that may be asked now; a member's zone (false: not a member);
 * whether it was retired. */
void cl_members_refresh(cl_remote_t *r);
bool cl_member_usable(const cl_member_t *m, uint64_t now_ms);
bool cl_member_zone(cl_remote_t *r, uint32_t id, char zone[META_ZONE_MAX]);
bool cl_member_retired(cl_remote_t *r, uint32_t id);
/* repair.c, run by the maintenance loop (members.c): lost and draining copies made again, and
 * damaged copies rewritten; cl_repair_group moves the copies of cs[i] from from[i] (or from[0]
 * when one_from) to want[i] (NULL: the best-ranked server without a copy), and returns how
 * many could not be moved now (*bytes: the bytes that were). */
/* Re-replicates chunks that had a copy on `dead`: each is copied from a live replica to the
 * best-ranked live server that holds no copy, storage server to storage server, all at once
 * (copy_chunks), then each replica is moved in the chunk map (which also queues the dead copy
 * for GC). */
enum { CL_REPAIR_GROUP = CL_REPAIR_PARALLEL_MAX };
/* Why copies move (cl_repair_group's why): re-replication of lost copies (read from the other
 * replicas only), a drain or a rebalance (the copy that moves may be read too). */
enum { CL_MOVE_REPAIR, CL_MOVE_DRAIN, CL_MOVE_REBALANCE };
void cl_repair_pass(cl_remote_t *r);
void cl_repair_damage_pass(cl_remote_t *r);
size_t cl_repair_group(cl_remote_t *r, const data_chunk_t *cs, size_t n, const uint32_t *from,
                       bool one_from, const uint32_t *want, int why, uint64_t *bytes);
wh_status_t cl_members_start(cl_remote_t *r);
void cl_members_stop(cl_remote_t *r);
void cl_members_nudge(cl_remote_t *r);

/* ---- remote_write.c: the writers (data_ops_t's writer slots) ---- */
wh_status_t cl_rw_open(data_table_t *d, data_writer_t **out);
wh_status_t cl_rw_bucket(data_writer_t *bw, const char *bucket, char *msg, size_t msglen);
wh_status_t cl_rw_write(data_writer_t *bw, const void *p, size_t n);
wh_status_t cl_rw_finish(data_writer_t *bw, data_ref_t *ref);
void cl_rw_free(data_writer_t *bw);
void cl_rw_abort(data_writer_t *bw);
wh_status_t cl_rw_append(data_writer_t *bw, data_reader_t *br, uint64_t off, uint64_t len);
wh_status_t cl_rw_rdma_put(data_writer_t *bw, const xfer_token_arg_t *token, const wh_peer_t *speer,
                           uint64_t size, data_rdma_result_t *res);

/* ---- shared by remote.c (the table), remote_write.c (writers) and remote_read.c (readers) ---- */

void cl_jobs_free_cands(cl_job_t *jobs, size_t n);
void cl_msg(char *out, size_t outlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
wh_peer_t cl_peer_of(const wh_peer_t *p);

#define READ_AHEAD 4 /* chunks fetched at once by a sequential HTTP reader */
typedef struct rr_slot {
    int64_t idx; /* chunk index, -1 empty */
    uint8_t *buf;
    uint64_t len;
    uint64_t used; /* LRU stamp */
} rr_slot_t;

typedef struct rr {
    data_reader_t base;
    cl_remote_t *r;
    data_ref_t ref;
    rr_slot_t slot[READ_AHEAD];
    int64_t last;
    uint64_t stamp;
} rr_t;

wh_status_t cl_rr_open(data_table_t *d, const data_ref_t *ref, uint64_t size, data_reader_t **out);
void cl_rr_close(data_reader_t *br);
/* The index of the chunk holding byte off of ref, or -1; for an erasure-coded stripe, its
 * first row (shard 0). */
int64_t cl_chunk_at(const data_ref_t *ref, uint64_t off);
/* Rows of the unit starting at row k: 1 for a replicated chunk, k + m for a stripe. */
size_t cl_unit_rows(const data_ref_t *ref, int64_t k);
/* Reads an erasure-coded stripe (rows[0..k+m), shard order) into out (its length bytes):
 * the data shards when they answer, else any k shards and a decode; every shard is checked
 * against its crc, one that fails counts as missing (and, a crc mismatch, reported damaged).
 * WH_ERR_UNAVAILABLE with msg when fewer than k shards can be read. */
/* Reads at least k good shards of the stripe rows[0..k+m) (not shard skip; -1: any) into
 * shards[i] (each the shard length), data shards first; good[i] says which arrived and
 * passed their crc. Returns how many. */
unsigned cl_ec_fetch(cl_remote_t *r, const data_chunk_t *rows, int skip, uint8_t *const *shards,
                     bool *good);
wh_status_t cl_ec_read_stripe(cl_remote_t *r, const data_chunk_t *rows, uint8_t *out, char *msg,
                              size_t msglen);
/* Makes j an rdec job (rdec.h): [sa, sb) of the stripe rows[0..k+m) (offsets in the
 * stripe) rebuilt by a storage server of the stripe that is up and written into the client's
 * memory token tok narrowed to base, sb - sa bytes. skip[i] (NULL: none): shard i is not to
 * be read (its read just failed). WH_ERR_UNAVAILABLE with msg when fewer than k shards are
 * on servers that are up. j->form and the candidates are freed by cl_jobs_free_cands. */
wh_status_t cl_rdec_job(cl_remote_t *r, const data_chunk_t *rows, const bool *skip, uint64_t sa,
                        uint64_t sb, const xfer_token_t *tok, uint64_t base, cl_job_t *j, char *msg,
                        size_t msglen);
/* RDMA PUT of size bytes into an erasure-coded layout k+m: each stripe (chunk_size bytes,
 * the last shorter) is pulled from the client's memory by one storage server, which encodes
 * it, keeps its shard and sends each other one to its server (renc, rdec.h); the gateway
 * moves none of the bytes. *rows_out (malloc'd, *n_rows rows, freed by the caller, also on
 * failure: the shards placed, for deleting) gets the stripes' shard rows with their servers
 * and crcs; *crc_out the object's crc64nvme, md5s the MD5 of the stripes' MD5s (S3's
 * multipart ETag form, *n_stripes parts). msg names what failed. */
wh_status_t cl_renc_put(cl_remote_t *r, unsigned k, unsigned m, const xfer_token_t *tok,
                        const wh_peer_t *peer, uint64_t size, data_chunk_t **rows_out,
                        size_t *n_rows, uint64_t *crc_out, uint8_t md5s[16], size_t *n_stripes,
                        char *msg, size_t msglen);
wh_status_t cl_rr_pread(data_reader_t *br, void *buf, size_t n, uint64_t off);
wh_status_t cl_rr_rdma_get(data_reader_t *br, const xfer_token_arg_t *token, const wh_peer_t *speer,
                           uint64_t off, uint64_t len, data_rdma_result_t *res);
wh_status_t cl_rr_prepare(data_reader_t *br, uint64_t off, uint64_t len, char *msg, size_t msglen);

#endif
