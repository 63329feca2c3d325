/* SPDX-License-Identifier: Apache-2.0 */
/* The fetch/put grid of bench/wharf_bench, shared between its files (bench/lib/grid*.c):
 *   grid.c          the run over the grid, the result file, the arguments
 *   grid_worker.c   the forked client workers and the parent's pool of them
 *   grid_measure.c  one timed measurement (one arm, one repeat of a cell) and a cell's JSON
 *   grid_setup.c    buckets and objects, written over HTTP before the timed runs
 *   grid_goals.c    the paired goals a run reports when it has the cells for them
 * grid.c's header comment has the method. */
#ifndef WBENCH_GRID_H
#define WBENCH_GRID_H

#include "wbench.h"

#include "wharf/wharf.h"

#include <jansson.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define G_MAX_LIST 16
#define G_MAX_ARMS 4
#define G_MAX_PROCS 64
#define G_ERR 512

/* ---- configuration ---- */

typedef enum { G_GET = 0, G_PUT = 1 } g_op_t;

typedef struct g_arm {
    char name[32];     /* "rdma-shm", "rdma-tcp", "http" */
    int rdma;          /* 1: transport RDMA with provider; 0: plain HTTP */
    char provider[32]; /* as asked: "ofi+shm", "auto", ... */
} g_arm_t;

typedef struct g_cfg {
    const char *benchmark; /* "b1-fetch", "b1-put", "rdma-vs-http" */
    char endpoint[512], ak[256], sk[256], region[64], unix_socket[512];
    char bucket_get[64], bucket_put[64];
    g_op_t ops[2];
    unsigned nops;
    uint64_t sizes[G_MAX_LIST];
    unsigned nsizes;
    unsigned concs[G_MAX_LIST], nconcs;
    unsigned procs[G_MAX_LIST], nprocs;
    g_arm_t arms[G_MAX_ARMS];
    unsigned narms;
    unsigned repeats;
    uint64_t budget, mem_cap;
    unsigned objects; /* per size; 0 = min(64, max(4, 1 GiB / size)) */
    unsigned op_conc;
    uint64_t chunk_size, part_size, mp_threshold;
    int client_crc;
    double witness_min;
    uint64_t limits_bytes;
    unsigned limits_reps;
    int no_limits;
    char results[512], tag[64];
    unsigned timeout_s;
    int skip_upload, keep_put_objects;
    int get_whole;             /* GET with WHARF_WHOLE (HEAD + GET) instead of the known length */
    char data_dir[512];        /* the server's data directory, where known ("" if not) */
    double durable_write_gbps; /* the disk's durable write rate, measured outside; 0: none */
    char durable_how[160];     /* how it was measured */
} g_cfg_t;

/* ---- parent <-> worker messages (SOCK_SEQPACKET) ---- */

enum { M_PREP = 1, M_GO, M_VERIFY, M_QUIT };

typedef struct g_cmd {
    int type;
    int op;  /* g_op_t */
    int arm; /* index into cfg arms */
    uint64_t size;
    unsigned conc, ops_per_stream, nobjects;
    unsigned worker_base; /* first global stream index of this worker */
    int warmup;
} g_cmd_t;

typedef struct g_reply {
    int type;
    int ok;
    char err[G_ERR];
    double t_start, t_end, cpu_s; /* monotonic clock (system-wide) */
    uint64_t bytes, ops, op_errors, fallbacks, wrong_transport, retries, requests;
    uint64_t verified_bytes, bad_bytes, unverified_bytes;
    char verify_method[64];
    char provider[32];
} g_reply_t;

/* ---- worker ---- */

typedef struct g_stream {
    struct g_worker *w;
    unsigned s;
    pthread_t th;
    char err[G_ERR];
    uint64_t bytes, ops, op_errors, fallbacks, wrong_transport, retries, requests;
} g_stream_t;

typedef struct g_worker {
    const g_cfg_t *cfg;
    unsigned index;
    wharf_client_t *clients[G_MAX_ARMS];
    wharf_mem_t *mems[G_MAX_ARMS];
    uint8_t *buf;
    size_t buf_len;
    double *lat, *ttfb; /* shared with the parent: max_ops entries each */
    uint64_t *put_crc;  /* expected crc per slice (PUT) */
    uint64_t *got_crc;  /* crc the server reported per slice (PUT; 0 = none) */
    size_t max_ops;
    g_cmd_t cmd;
    pthread_barrier_t bar;
    g_stream_t streams[256];
    int prep_failed;
} g_worker_t;

typedef struct g_pool {
    unsigned n;
    pid_t pid[G_MAX_PROCS];
    int fd[G_MAX_PROCS];
    double *shared; /* lat + ttfb for every worker */
    size_t shared_len, max_ops;
    int alive;
} g_pool_t;

typedef struct g_meas {
    int ok;
    char err[G_ERR];
    double wall_s; /* span: first worker start to last worker end */
    double worker_wall[G_MAX_PROCS];
    uint64_t bytes, ops;
    double gbps, ops_per_s;
    double client_cpu_s, server_cpu_s, host_cpu_s, host_busy_fraction;
    int server_cpu_known;
    double witness_bytes, witness_ops, witness_ratio; /* the arm's own counter */
    double other_rdma_bytes;                          /* the RDMA counter for http arms */
    double witness_settle_s; /* wait for the counter to reach the gate after the window */
    json_t *metrics_delta;
    uint64_t verified_bytes, bad_bytes, unverified_bytes;
    uint64_t fallbacks, retries, requests;
    char verify_method[64];
    char provider[32];
    double *lat, *ttfb;
    size_t nlat, nttfb;
} g_meas_t;

typedef struct g_lim {
    const char *name;
    double gbps;
} g_lim_t;

void grid_obj_key(const g_cfg_t *cfg, g_op_t op, uint64_t size, uint64_t idx, char *out, size_t n);
void grid_worker_main(const g_cfg_t *cfg, unsigned index, int fd, size_t buf_len, double *lat,
                      double *ttfb, size_t max_ops);
int grid_pool_start(g_pool_t *p, const g_cfg_t *cfg, unsigned n, size_t buf_len, size_t max_ops,
                    char *err, size_t errlen);
int grid_pool_send(g_pool_t *p, const g_cmd_t *base, unsigned conc, char *err, size_t n);
int grid_pool_collect(g_pool_t *p, g_reply_t *reps, unsigned timeout_s, char *err, size_t n);
void grid_pool_stop(g_pool_t *p, int force);
double *grid_pool_lat(g_pool_t *p, unsigned w);
double *grid_pool_ttfb(g_pool_t *p, unsigned w);
int grid_measure(const g_cfg_t *cfg, g_pool_t *pool, g_op_t op, unsigned arm, uint64_t size,
                 unsigned conc, unsigned ops_per_stream, unsigned nobjects, int warmup,
                 g_meas_t *m);
void grid_meas_free(g_meas_t *m);
json_t *grid_cell_json(const g_cfg_t *cfg, g_op_t op, const g_arm_t *arm, uint64_t size,
                       unsigned conc, unsigned procs, unsigned ops_per_stream, unsigned nobjects,
                       g_meas_t *ms, unsigned n, const g_lim_t *lims, unsigned nlims);
unsigned grid_objects_for(const g_cfg_t *cfg, uint64_t size);
int grid_setup_objects(const g_cfg_t *cfg, char *err, size_t n);
void grid_cleanup_put_objects(const g_cfg_t *cfg);
double grid_cell_med(json_t *c, const char *a, const char *b);
json_t *grid_goals_rdma_vs_http(const g_cfg_t *cfg, json_t *cells, const wb_limits_t *lim);

#endif
