/* SPDX-License-Identifier: Apache-2.0 */
/* The gateway's chunk client: internal requests to storage servers over libcurl, many at once
 * (one curl multi per call), each with its own internal token, retried on the next replica.
 *
 * Bounds (documented in docs/cluster.md): connect 1 s; a request's time bound comes from
 * what that storage server's requests of that kind took lately (rtt.h: srtt + 4 * rttvar per
 * MiB, scaled by the request's size, never below CL_STALL_MS plus its bytes at CL_MIN_RATE,
 * never above 8 times that), and an HTTP request that makes no progress for CL_STALL_MS (or
 * the estimate of one MiB, if longer) fails too. A request that timed out doubles the bound of
 * its next attempt; an HTTP read or delete whose last candidate timed out is tried there once
 * more (a write is retried by its caller, on another server first: remote.c). A timeout does
 * not make a server suspect (it is slow, not dead: only a refused, reset or unconnectable
 * server does); it ranks the server behind the others until it answers
 * again or CL_SLOW_MS pass (cl_client_node_slow). Connections are reused through one shared
 * connection cache. A hedged read (cl_job_t.hedge, HTTP gets) asks the next candidate too
 * once the first is later than its hedge deadline (rtt.h); the first good answer wins, and a
 * server that lost so ranks last like one that timed out. */
#ifndef WH_CLUSTER_CLIENT_H
#define WH_CLUSTER_CLIENT_H

#include "base/peer.h"
#include "base/status.h"
#include "base/util.h"
#include "cluster/itoken.h"
#include "cluster/rtt.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CL_CONNECT_MS 1000
#define CL_SLOW_MS 5000 /* a server that timed out ranks last this long, or until it answers */
#define CL_MAX_CANDIDATES 8

typedef struct cl_client cl_client_t;

/* What the gateway verified about the S3 client (a wh_peer_t, base/peer.h) goes into every
 * token. */

typedef struct cl_job {
    /* in */
    cl_op_t op;
    const char *chunk;
    uint64_t off, len;                   /* range in the chunk (put/rput: off 0, len the chunk) */
    const char *cand[CL_MAX_CANDIDATES]; /* storage addresses "host:port", tried in order */
    uint32_t cand_id[CL_MAX_CANDIDATES]; /* their node ids (reported back in used_id) */
    size_t ncand;
    const void *body;    /* put: len bytes */
    void *dst;           /* get: len bytes */
    char mtok[1201];     /* rget/rput: the memory token narrowed to this chunk; push, cput:
                          * what itoken.h says (the crc, and push's target) */
    bool check_crc;      /* get/rget/push: the reply's crc must equal expect_crc, else the */
    uint64_t expect_crc; /* next replica is tried (a damaged copy never lands as good) */
    /* The chunk map's crc64nvme of the whole chunk, carried in the token (itoken.h CRC): a put
     * is stored only with it, a read served only from a chunk whose footer has it. Without
     * it, check_crc's expect_crc (a whole-chunk read) is carried; a put without either
     * carries the crc of its body. */
    bool has_chunk_crc;
    uint64_t chunk_crc;
    /* get only: a hedged read. When the candidate asked has not answered within its hedge
     * deadline (cl_rtt_hedge_ms of that server's estimate), the next candidate is asked too,
     * into a buffer of its own; the first good answer wins and the other is dropped. */
    bool hedge;
    /* rdec and renc: the stripe's description (cluster/rdec.h), the request's body (malloc'd,
     * freed with the candidates: cl_jobs_free_cands), and the bytes the server reads to
     * rebuild the slice (its K shards), which bound the request's time instead of len */
    char *form;
    uint64_t work;
    /* out */
    wh_status_t st;
    int http;    /* last HTTP status (0: no reply) */
    size_t used; /* index of the candidate that served it */
    uint32_t used_id;
    uint64_t bytes, crc; /* x-wharf-bytes / x-wharf-crc64nvme (get: computed here) */
    uint8_t md5[16];     /* rput, renc: x-wharf-md5 */
    bool has_md5;
    uint64_t shard_crc[16]; /* renc: x-wharf-shard-crcs, the crc64nvme of each shard stored */
    unsigned n_shard_crc;
    unsigned attempts;
    bool timed_out; /* the last attempt was sent and got no answer within its bound */
    char err[256];
    /* private (zero before the first cl_client_run; a retry that copies the job keeps them) */
    unsigned _backoff;    /* timeouts this job had: each doubles the next attempt's bound */
    uint64_t _timeout_ms; /* the current attempt's bound */
    bool _again;          /* the last candidate got its one more attempt after a timeout */
    size_t _pos;
    size_t _try;
    void *_easy;
    void *_hdrs;
    struct cl_client *_client;
    uint64_t _start_ms, _hedge_ms; /* the current attempt: sent at, hedge after */
    struct cl_job *_hedge;         /* the hedge in flight (its own job), or NULL */
    struct cl_job *_hedge_of;      /* this job is the hedge of that one */
    bool _hedged;                  /* a hedge was sent (one per job) */
    bool _waiting;                 /* failed; waits for its hedge's answer */
} cl_job_t;

wh_status_t cl_client_new(const char *secret, cl_client_t **out);
void cl_client_free(cl_client_t *c); /* NULL-safe */
/* Storage servers serve HTTPS (wharfd storage --tls-cert): dial them so, verifying their
 * certificates against the PEM CAs in ca_file (NULL: plain HTTP again). */
wh_status_t cl_client_set_ca(cl_client_t *c, const char *ca_file);

/* Runs every job, at most parallel at a time, each against its candidates in order until one
 * succeeds. Returns WH_OK when all succeeded, else the first failure (each job has its own
 * st and err). peer is put into every token. */
wh_status_t cl_client_run(cl_client_t *c, cl_job_t *jobs, size_t n, unsigned parallel,
                          const wh_peer_t *peer);

/* Called (from the thread running cl_client_run) when a storage server failed to answer a
 * request: refused, reset, or never connected within the connect bound. Not for HTTP errors,
 * and not for a request that was sent and timed out (a slow server is not a dead one). */
typedef void (*cl_node_fail_fn)(void *arg, uint32_t node_id);
void cl_client_on_node_fail(cl_client_t *c, cl_node_fail_fn fn, void *arg);

/* Counters for /metrics. */
typedef struct cl_client_stats {
    uint64_t requests, failures, retries, timeouts;
    uint64_t hedges, hedge_wins; /* second replicas asked by hedged reads; answers they won */
    uint64_t rx_bytes, tx_bytes; /* chunk bytes this client received from / sent to storage */
} cl_client_stats_t;
void cl_client_stats(cl_client_t *c, cl_client_stats_t *out);

/* Did node id time out a request within the last CL_SLOW_MS, with no answer since? Readers
 * and placement rank such a server behind the others (it stays up, and is used when the
 * others are not enough). */
bool cl_client_node_slow(cl_client_t *c, uint32_t id);

/* Appends the per-server estimates to a /metrics page: seconds per MiB (srtt, rttvar) and
 * the timeout of a request of ref_len bytes, by server and request kind, and the timeouts
 * per server. */
void cl_client_metrics(cl_client_t *c, uint64_t ref_len, wh_sbuf_t *out);

#endif
