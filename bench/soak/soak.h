/* SPDX-License-Identifier: Apache-2.0 */
/* bench/soak's parts shared by soak.c (parameters, the byte pattern, keys, results, main),
 * soak/client.c (the well-behaved clients), soak/bad.c (the misbehaving ones) and
 * soak/sampler.c (the server's resources over time). */
#ifndef WH_BENCH_SOAK_H
#define WH_BENCH_SOAK_H

#include "wbench.h"

#include "wharf/wharf.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SK_RING 16 /* versions of a key a reader can still check */
#define SK_MPU_THRESHOLD (8 * WB_MIB)
#define SK_PART (5 * WB_MIB)  /* S3's smallest part */
#define SK_MAX_SAMPLES_ERR 40 /* error and wrong-byte details kept in the result */

typedef struct sk_params {
    const char *endpoint, *ak, *sk, *region, *unix_socket, *out, *bucket, *transports;
    int pid;
    double duration, warmup, interval;
    unsigned clients, bad_clients, keys_per_client, think_ms, op_timeout_ms;
    int inject_wrong;      /* test of the checker itself: store one wrong byte at the end */
    int bad_sources;       /* misbehaving clients connect from 127.0.0.2.. */
    const char *bad_kinds; /* behaviours the misbehaving clients take round-robin (all) */
    uint64_t max_size, mem_budget, seed;
    char host[256];
    int port;
} sk_params_t;

static inline uint64_t sk_mix(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBull;
    x ^= x >> 31;
    return x;
}

static inline uint64_t sk_word(uint64_t seed, uint64_t w)
{
    return sk_mix(seed ^ (w + 1) * 0x9E3779B97F4A7C15ull);
}

static inline uint8_t sk_byte(uint64_t seed, uint64_t i)
{
    return (uint8_t)(sk_word(seed, i >> 3) >> (8 * (i & 7)));
}

typedef struct sk_ver {
    uint64_t ver, size;
    int deleted;
} sk_ver_t;

typedef struct sk_key {
    pthread_mutex_t mu;
    char name[96];
    uint64_t committed; /* newest acknowledged version (0: never written = absent) */
    uint64_t latest;    /* newest version started */
    sk_ver_t ring[SK_RING];
} sk_key_t;

enum { SK_PUT, SK_MPU, SK_GET, SK_GET_OTHER, SK_RANGE, SK_STAT, SK_DELETE, SK_LIST, SK_OP_N };

typedef struct sk_lat {
    double *v;
    size_t n, cap;
} sk_lat_t;

typedef struct sk_client {
    unsigned id;
    const char *transport_name; /* http, shm, tcp */
    wharf_transport_t transport;
    wharf_client_t *c;
    uint64_t rng;
    pthread_t th;
    uint64_t ops[SK_OP_N];
    sk_lat_t lat[SK_OP_N];
    char init_err[256];
} sk_client_t;

enum {
    SB_SLOW_HEADERS, /* a header line now and then, never finished */
    SB_STALL_BODY,   /* a signed PUT that sends part of its body, then goes quiet */
    SB_CUT_BODY,     /* a signed PUT that disconnects mid-body */
    SB_GARBAGE,      /* bytes that are not HTTP, or broken HTTP */
    SB_CUT_RESPONSE, /* a GET that hangs up after the first bytes */
    SB_STOPPED_RDMA, /* an ofi+tcp client process SIGSTOPped mid-GET, then killed */
    SB_IDLE,         /* idle sockets held open */
    SB_BAD_AUTH,     /* wrong secret, and multipart uploads left open */
    SB_N
};

typedef struct sk_bad {
    unsigned id, kind;
    uint64_t rng, n;
    pthread_t th;
    wharf_client_t *c; /* HTTP, for checking what a cut-off PUT left behind */
} sk_bad_t;

typedef struct sk_sample {
    double t;
    double rss, threads, fds, vm_lck, vm_pin, registered, inflight;
    double pool_total, pool_free, pipelines;
    int alive, metrics_ok, has_registered, has_pool, has_pipelines;
    uint64_t ops, errors, wrong_bytes;
} sk_sample_t;

/* soak.c: the parameters, the byte pattern, random numbers, bounded memory, the keys and
 * their versions, the shared results. */
extern sk_params_t P;
extern double g_t0, g_t_end;
uint64_t sk_seed(unsigned key, uint64_t ver);
void sk_fill(uint8_t *p, uint64_t n, uint64_t seed);
uint64_t sk_wrong(const uint8_t *p, uint64_t n, uint64_t seed, uint64_t off);
uint64_t sk_rand(uint64_t *s);
double sk_unit(uint64_t *s);
uint64_t sk_between(uint64_t *s, uint64_t lo, uint64_t hi);
uint64_t sk_size(uint64_t *s, uint64_t max);
uint64_t sk_mem_take(uint64_t n);
void sk_mem_give(uint64_t n);
extern sk_key_t *g_keys;
extern unsigned g_nkeys;
unsigned sk_candidates(sk_key_t *k, uint64_t lo, sk_ver_t *out);
uint64_t sk_committed(sk_key_t *k, uint64_t *latest);
uint64_t sk_begin_write(sk_key_t *k, uint64_t size, int deleted);
void sk_commit(sk_key_t *k, uint64_t v);
extern const unsigned sk_op_weight[SK_OP_N];
extern atomic_bool g_stop;
extern atomic_ullong g_ops_total, g_err_total, g_wrong_bytes, g_wrong_objects, g_bytes_put,
    g_bytes_got, g_busy_retries, g_unchecked_reads, g_bad_attempts;
void sk_error(const char *op, const char *key, wharf_status_t st, const char *msg);
void sk_wrong_record(const char *op, const char *key, const char *what, uint64_t bytes);
void sk_bad_outcome(const char *behaviour, const char *outcome);
/* soak/client.c */
void *sk_client_main(void *arg);
wharf_client_t *sk_new_client(const char *provider, char *err, size_t errlen);
/* soak/bad.c */
int sk_bad_kinds(const char *list, unsigned *kinds, unsigned *n);
extern const char *g_big_key;
extern uint64_t g_big_size;
void *sk_bad_main(void *arg);
int sk_rdma_child(const char *key, uint64_t size, double duration);
/* soak/sampler.c */
extern sk_sample_t *g_samples;
extern size_t g_nsamples, g_cap_samples;
extern char g_registered_metric[96];
void *sk_sampler_main(void *arg);
json_t *sk_fit(size_t off, double t_from, double scale);

#endif
