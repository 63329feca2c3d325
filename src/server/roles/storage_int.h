/* SPDX-License-Identifier: Apache-2.0 */
/* Internals of the storage role shared by storage.c (the chunk API) and storage_node.c
 * (membership: node id, registration and heartbeat in the metadata database; metrics). */
#ifndef WH_ROLES_STORAGE_INT_H
#define WH_ROLES_STORAGE_INT_H

#include "base/util.h"
#include "cluster/chunks.h"
#include "cluster/client.h"
#include "cluster/itoken.h"
#include "roles/storage.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

struct MHD_Daemon;
struct meta;

struct role_storage {
    role_storage_config_t cfg;
    const char *secret;
    size_t secret_len;
    cl_chunks_t *chunks;
    /* the internal tokens admitted, each once (itoken.h) */
    cl_replay_t *replay;
    rdma_t *rdma;
    struct MHD_Daemon *d;
    struct front_tls *tls;    /* NULL: plain HTTP */
    _Atomic int64_t inflight; /* requests begun and not completed (the drain at stop) */

    /* membership */
    char addr[96];    /* host:port of the internal API, as registered */
    uint32_t node_id; /* from the database: stable for the data directory's identity */
    bool registered;
    char cluster_id[64]; /* DIR/identity: the cluster this data directory belongs to */
    char node_uuid[64];  /* DIR/identity: this data directory's identity ("" not yet) */
    bool refused;        /* the database is another cluster's: never registers */
    bool reported;       /* what node_report last wrote (heartbeat thread only) */
    double rep_progress;
    uint64_t rep_passes, rep_damaged;
    bool identity_done; /* identity_check ran once (an empty directory is new only at start) */
    bool removed;       /* wharfd node remove took it out of the cluster: never registers */
    struct meta *meta;
    pthread_t hb_thread;
    bool hb_started;
    pthread_mutex_t hb_lock;
    pthread_cond_t hb_cond;
    bool hb_stop;
    _Atomic bool meta_up;
    _Atomic uint64_t heartbeats, heartbeat_failures;

    _Atomic uint64_t token_rejects, chunks_written, chunks_deleted, read_errors;
    _Atomic uint64_t checksum_failures; /* reads and scrubs that found a damaged copy */
    _Atomic bool damage_dirty;          /* DIR/damaged changed: report it */
    _Atomic uint64_t damage_reported;   /* damaged copies reported to the database */

    /* scrubber (storage_scrub.c) */
    pthread_t scrub_thread;
    bool scrub_started, scrub_stop;
    pthread_mutex_t scrub_lock;
    pthread_cond_t scrub_cond;
    _Atomic uint64_t scrub_bytes, scrub_chunks, scrub_damaged, scrub_passes;
    _Atomic uint32_t scrub_prefix; /* 0..256: where the current pass is */
    _Atomic uint64_t http_read_bytes, http_write_bytes;
    /* copies storage server to storage server (push: this one sends; cput: it receives) */
    cl_client_t *client; /* signs and sends the cputs of pushes */
    _Atomic uint64_t push_chunks, push_bytes, push_failures;
    _Atomic uint64_t copy_recv_chunks, copy_recv_bytes, copy_refused;
    /* rdec: degraded RDMA reads of erasure-coded stripes served here (storage_ec.c) */
    _Atomic uint64_t rdec_reads, rdec_decoded, rdec_bytes, rdec_shards_fetched, rdec_failures;
    /* renc: RDMA PUTs of erasure-coded stripes encoded here (storage_ec.c) */
    _Atomic uint64_t renc_stripes, renc_bytes, renc_failures;
};

/* What role_storage_rdec answers: http 200 with the bytes written and their crc64nvme, or the
 * status and a message naming what was wrong. */
typedef struct role_rdec_result {
    int http;
    char message[400];
    uint64_t bytes, crc;
    uint8_t md5[16];          /* renc: of the stripe's bytes */
    char shard_crcs[16 * 17]; /* renc: each shard's crc64nvme, 16 hex, comma-separated */
} role_rdec_result_t;
/* rdec (cluster/rdec.h): rebuilds the slice [t->off, t->off+t->len) of the stripe body
 * describes (n bytes, whose SHA-256 t carries) and writes it into t's memory token. */
void role_storage_rdec(role_storage_t *s, const cl_itoken_t *t, const char *body, size_t n,
                       role_rdec_result_t *res);
/* renc (cluster/rdec.h): pulls the stripe (t->len bytes) from t's memory token, encodes it,
 * stores the shards the body places on this server and cputs each other one to its server;
 * answers the stripe's crc64nvme and MD5 and every shard's crc. */
void role_storage_renc(role_storage_t *s, const cl_itoken_t *t, const char *body, size_t n,
                       role_rdec_result_t *res);

wh_status_t role_storage_membership_start(role_storage_t *s);
/* A read or a scrub found chunk id damaged (fd: the file it read, or -1): count it, move it
 * aside, report it. */
void role_storage_damaged(role_storage_t *s, const char *id, int fd);
/* Has the next heartbeat report DIR/damaged to the database. */
void role_storage_damage_flush(role_storage_t *s);
wh_status_t role_storage_scrub_start(role_storage_t *s);
void role_storage_scrub_stop(role_storage_t *s); /* safe if never started; before membership stop */
void role_storage_membership_stop(role_storage_t *s); /* safe if never started */
void role_storage_metrics(role_storage_t *s, wh_sbuf_t *out);

#endif
