/* SPDX-License-Identifier: Apache-2.0 */
/* The server's RDMA engine, private to its files:
 * - rdma.c: configuration, providers and their endpoints (replaced when stalled transfers
 *   hold buffers), token vetting, starting and ending a transfer, metrics;
 * - rdma_pool.c: the pool of registered buffers, sized from the host, with a per-client share,
 *   driving completions while a request waits for buffers;
 * - rdma_get.c: GET (staged pipeline for fabric providers, direct copy for bound shm);
 * - rdma_put.c: PUT/UploadPart (chunked reads sunk in order);
 * - rdma_scatter.c: the scatter GET's windows and the gather UploadPart's (rdma_scatter.h). */
#ifndef WH_ENGINE_RDMA_INT_H
#define WH_ENGINE_RDMA_INT_H

#include "engine/rdma.h"
#include "base/crc.h"
#include "xfer/token.h"
#include "xfer/xfer.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define MOD "rdma"
#define RDMA_MAX_PROV 8
#define RDMA_MAX_SLOTS 64             /* xfer tags */
#define RDMA_DIRECT_WINDOW (8u << 20) /* bytes per mmap window on the direct path */
#define RDMA_MAX_RETIRED 4            /* replaced endpoints still draining, per provider */
#define RDMA_DIRECT_MAX_THREADS 64    /* bound on copy threads per request */
/* Copy threads of one positional PUT per destination file unless configured. Writes into one
 * file take its lock (i_rwsem) in turn, so past two threads they spin there: on the 16-core
 * H200 host one 256 MiB stream on tmpfs ran 1.4-1.6 GB/s with one thread, 2.4-2.6 with two
 * (0.7-0.8 server CPU-s/GB), 2.5-2.7 with eight at 2.3-2.5 CPU-s/GB (docs/scale-up.md,
 * "PUT"). A striped PUT (rdma_sink_at_t's stripe_len) has one file per stripe: up to
 * this many threads per stripe. */
#define RDMA_PUT_THREADS_DEFAULT 2u

/* One open transport of a provider with the pool registered on it. A provider's current one is
 * replaced when batches that ended with ops in flight have stalled (xfer_stalled): the old one
 * is closed, which ends those ops and releases their buffers, once no request uses it. */
typedef struct rdma_gen {
    xfer_t *x;
    xfer_mr_t *mr;   /* the whole pool arena */
    unsigned active; /* requests using it (prov->glock) */
    bool retired;
    struct rdma_gen *next; /* retired list */
} rdma_gen_t;

typedef struct rdma_prov {
    const xfer_provider_t *info; /* the xfer table's entry */
    const char *short_name;      /* "shm", "tcp" (metrics label, result->provider) */
    pthread_mutex_t glock;
    rdma_gen_t *cur;
    rdma_gen_t *retired;
    unsigned nretired;
    atomic_uint_fast64_t write_bytes, write_ops, read_bytes, read_ops, write_fail, read_fail;
    atomic_uint_fast64_t replacements;
} rdma_prov_t;

enum {
    DECL_TOKEN,    /* malformed (400) */
    DECL_DIALECT,  /* unknown dialect or cuobj (501) */
    DECL_PROVIDER, /* provider unknown or not enabled (501) */
    DECL_SIZE,     /* region too small (400) */
    DECL_PEER,     /* peer binding (403 / 501) */
    DECL_BUSY,     /* no buffers (503) */
    DECL_MAX
};

/* A client's share of the pool: buffers held per peer (token endpoint). */
typedef struct rdma_share {
    uint64_t key;
    unsigned held;
} rdma_share_t;

struct rdma_engine {
    rdma_config_t cfg;
    rdma_prov_t prov[RDMA_MAX_PROV];
    unsigned nprov;
    char enabled[96];

    /* pool: nbuf buffers of buf_len bytes in one prefaulted, registered arena */
    uint8_t *arena;
    size_t arena_len, buf_len;
    unsigned nbuf, nfree, peer_cap, reserve;
    unsigned *free_idx;
    rdma_share_t *shares; /* nshares entries in use, at most nbuf */
    unsigned nshares;
    pthread_mutex_t plock;
    pthread_cond_t pcond;

    /* the reaper: drives completions and endpoint replacement even when no request comes */
    pthread_t reaper;
    bool reaper_started, stopping;
    pthread_mutex_t rlock;
    pthread_cond_t rcond;

    atomic_uint_fast64_t declines[DECL_MAX];
    atomic_uint_fast64_t pipelines; /* GET/PUT pipelines alive (their mutex+condvar) */
    wh_crc64_shift_t direct_shift;  /* combines per-window crcs of RDMA_DIRECT_WINDOW bytes */
    unsigned copy_threads;          /* direct-path copy threads shared by all requests */
    unsigned put_threads;           /* at most this many for one positional PUT */
    /* positional PUTs (rdma_put.c) */
    atomic_uint_fast64_t put_at_ops, put_at_bytes;
    atomic_uint_fast64_t put_mapped_ops, put_mapped_bytes; /* of those, through map_at */
    unsigned direct_active;                                /* direct GETs in flight (atomic) */
    /* of the positional PUTs, those into several files (rdma_sink_at_t's stripe_len) */
    atomic_uint_fast64_t put_striped_ops, put_striped_bytes, put_striped_files;
    atomic_uint_fast64_t put_paged_ops, put_paged_bytes; /* writes grouped to write_unit */
    /* staged GETs' reads into the pool, by where the bytes came from (rdma_get.c) */
    atomic_uint_fast64_t read_cached, read_direct_io, read_buffered;
};

/* Buffers one request holds; when its batch ended with ops in flight they are released only
 * once those drain or the endpoint is closed (rdma_late_release). */
typedef struct rdma_late {
    rdma_t *r;
    uint64_t peer_key;
    unsigned n;
    unsigned idx[RDMA_MAX_SLOTS];
} rdma_late_t;

/* One request's transfer: what rdma_begin set up and rdma_end takes down. */
typedef struct rdma_xfer {
    rdma_t *r;
    rdma_prov_t *p;
    rdma_gen_t *g;
    xfer_token_t tok;
    rdma_late_t *late;
    xfer_batch_t *b;
} rdma_xfer_t;

/* rdma.c */
void rdma_res_set(rdma_result_t *res, int http, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
bool rdma_decline(rdma_t *r, int reason, rdma_result_t *res);
/* Vets the token and takes a reference on the provider's current endpoint; on failure fills
 * res and returns false. */
bool rdma_vet(rdma_t *r, const xfer_token_arg_t *token, const wh_peer_t *peer, uint64_t need,
              rdma_xfer_t *t, rdma_result_t *res);
/* Starts the batch bound to the peer (maps failures to res). t->late must be set. */
wh_status_t rdma_begin(rdma_xfer_t *t, const wh_peer_t *peer, rdma_result_t *res);
/* Ends the batch (if any), gives the buffers back (now or once they drain), drops the
 * endpoint reference. */
void rdma_end(rdma_xfer_t *t);
void rdma_fail_transfer(rdma_result_t *res, wh_status_t st, const char *why);
/* Drives the provider's completions, and replaces its endpoint when ended batches have
 * stalled there (the reaper thread and requests waiting for buffers call it). */
void rdma_drive(rdma_t *r, rdma_prov_t *p);
void rdma_sync_init(rdma_t *r, pthread_mutex_t *m, pthread_cond_t *c);
void rdma_sync_destroy(rdma_t *r, pthread_mutex_t *m, pthread_cond_t *c);

/* rdma_pool.c */
wh_status_t rdma_pool_init(rdma_t *r, bool pins_memory);
void rdma_pool_fini(rdma_t *r);
/* Takes between 1 and want buffers for the peer into l (l->n), waiting at most
 * cfg.pool_wait_ms for at least one while driving completions; 0 on timeout, with res set
 * to the 503. */
unsigned rdma_pool_take(rdma_t *r, rdma_late_t *l, unsigned want, rdma_result_t *res);
void rdma_pool_give(rdma_t *r, rdma_late_t *l);
void rdma_late_release(void *arg); /* xfer_idle_cb: gives l's buffers back and frees l */
uint8_t *rdma_pool_buf(rdma_t *r, unsigned i);
uint64_t rdma_peer_key(const xfer_token_t *tok);

#endif
