/* SPDX-License-Identifier: Apache-2.0 */
/* bench/soak: a long-running mixed load against one wharfd, with every byte checked and the
 * server's resources sampled every second (docs/soak.md).
 *
 *   soak --endpoint http://127.0.0.1:9000 --pid PID --unix-socket DIR/wharfd.sock \
 *        --duration 600 --clients 64 --bad-clients 10 --out results/soak.json
 *
 * Well-behaved clients (threads, one libwharf client each, transports round-robin over
 * --transports http,shm,tcp) run GET, ranged GET, PUT, multipart PUT, DELETE, HEAD and LIST.
 * Every key has one owner, the only thread that writes it; object bytes are a function of
 * (run seed, key, version), so any reader can check them. The owner publishes each version
 * before it starts writing it and marks it committed once acknowledged; a reader on another
 * thread accepts any version between the one committed when its GET started and the newest
 * one started when it ended. Misbehaving clients (threads, and for the stopped-RDMA case a
 * child process) stall mid-request, disconnect mid-body and mid-response, send garbage, hold
 * idle sockets, sign badly and abandon multipart uploads; they are expected to fail, and only
 * their effect on the server is judged (a cut-off PUT must store nothing).
 *
 * Every --interval seconds the sampler reads the server's RSS, threads, VmLck and VmPin from
 * /proc/PID/status, counts /proc/PID/fd, and scrapes /metrics for registered RDMA memory.
 * After the run it fits a line to each series past --warmup and reports the slopes.
 * Exit status: 0 when well-behaved clients saw no error and no byte was wrong, 1 otherwise,
 * 2 for bad usage. */
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

extern char **environ;

#define SK_MAX_CLIENTS 256
#define SK_MAX_BAD 64
#define SK_RING 16 /* versions of a key a reader can still check */
#define SK_MPU_THRESHOLD (8 * WB_MIB)
#define SK_PART (5 * WB_MIB)  /* S3's smallest part */
#define SK_MAX_SAMPLES_ERR 40 /* error and wrong-byte details kept in the result */

/* ---- parameters ------------------------------------------------------------------------- */

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

static sk_params_t P;

/* ---- the byte pattern: object (key, version) byte i, computable anywhere ----------------- */

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

static uint64_t sk_seed(unsigned key, uint64_t ver)
{
    return sk_mix(P.seed ^ ((uint64_t)key + 1) * 0xD6E8FEB86659FD93ull ^
                  ver * 0xA0761D6478BD642Full);
}

static void sk_fill(uint8_t *p, uint64_t n, uint64_t seed)
{
    uint64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t v = sk_word(seed, i >> 3);
        memcpy(p + i, &v, 8);
    }
    for (; i < n; i++)
        p[i] = sk_byte(seed, i);
}

/* Bytes of p[0..n) that differ from the pattern at object offsets [off, off+n). */
static uint64_t sk_wrong(const uint8_t *p, uint64_t n, uint64_t seed, uint64_t off)
{
    uint64_t bad = 0, i = 0;
    while (i < n && ((off + i) & 7)) {
        bad += p[i] != sk_byte(seed, off + i);
        i++;
    }
    for (; i + 8 <= n; i += 8) {
        uint64_t v = sk_word(seed, (off + i) >> 3), g;
        memcpy(&g, p + i, 8);
        if (g != v)
            for (unsigned k = 0; k < 8; k++)
                bad += p[i + k] != (uint8_t)(v >> (8 * k));
    }
    for (; i < n; i++)
        bad += p[i] != sk_byte(seed, off + i);
    return bad;
}

/* ---- random numbers (one state per thread) --------------------------------------------- */

static uint64_t sk_rand(uint64_t *s)
{
    *s += 0x9E3779B97F4A7C15ull;
    return sk_mix(*s);
}

static double sk_unit(uint64_t *s)
{
    return (double)(sk_rand(s) >> 11) / 9007199254740992.0;
}

static uint64_t sk_between(uint64_t *s, uint64_t lo, uint64_t hi) /* [lo, hi] */
{
    return hi <= lo ? lo : lo + sk_rand(s) % (hi - lo + 1);
}

/* Object sizes: skewed toward small, log-uniform inside each band, at most max. */
static uint64_t sk_size(uint64_t *s, uint64_t max)
{
    static const struct {
        double p;
        uint64_t lo, hi;
    } band[] = {{0.05, 0, 0},
                {0.55, 1, 4096},
                {0.80, 4097, 256 << 10},
                {0.94, (256 << 10) + 1, 4 * WB_MIB},
                {0.99, 4 * WB_MIB + 1, 16 * WB_MIB},
                {1.00, 16 * WB_MIB + 1, 64 * WB_MIB}};
    double u = sk_unit(s);
    unsigned b = 0;
    while (b + 1 < sizeof band / sizeof band[0] && u > band[b].p)
        b++;
    uint64_t n = band[b].lo;
    if (band[b].hi > band[b].lo) {
        double l0 = log((double)band[b].lo), l1 = log((double)band[b].hi);
        n = (uint64_t)exp(l0 + (l1 - l0) * sk_unit(s));
    }
    return n > max ? max : n;
}

/* ---- bounded memory ---------------------------------------------------------------------- */

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t used, peak;
} g_mem = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};

static uint64_t sk_mem_take(uint64_t n)
{
    n = (n + 4095) & ~4095ull;
    if (n == 0)
        n = 4096;
    if (n > P.mem_budget)
        n = P.mem_budget;
    pthread_mutex_lock(&g_mem.mu);
    while (g_mem.used + n > P.mem_budget)
        pthread_cond_wait(&g_mem.cv, &g_mem.mu);
    g_mem.used += n;
    if (g_mem.used > g_mem.peak)
        g_mem.peak = g_mem.used;
    pthread_mutex_unlock(&g_mem.mu);
    return n;
}

static void sk_mem_give(uint64_t n)
{
    pthread_mutex_lock(&g_mem.mu);
    g_mem.used -= n;
    pthread_cond_broadcast(&g_mem.cv);
    pthread_mutex_unlock(&g_mem.mu);
}

/* ---- keys and their versions ------------------------------------------------------------- */

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

static sk_key_t *g_keys;
static unsigned g_nkeys;

static void sk_keys_init(void)
{
    g_nkeys = P.clients * P.keys_per_client;
    g_keys = calloc(g_nkeys, sizeof *g_keys);
    /* names that make SigV4 and URL encoding work: spaces, '+', '=', UTF-8, deep paths */
    static const char *const shape[] = {"c%03u/k%03u", "c%03u/dir a/k%03u+plus",
                                        "c%03u/d=1/\xc3\xbc-k%03u", "c%03u/a/b/c/d/k%03u.bin"};
    for (unsigned i = 0; i < g_nkeys; i++) {
        pthread_mutex_init(&g_keys[i].mu, NULL);
        snprintf(g_keys[i].name, sizeof g_keys[i].name, shape[i % 4], i / P.keys_per_client,
                 i % P.keys_per_client);
        g_keys[i].ring[0] = (sk_ver_t){0, 0, 1};
    }
}

/* Candidates a read may legitimately return: versions [lo, hi] of the key. Returns the count
 * (0 when hi-lo is past the ring: too many writes during one read to check it). */
static unsigned sk_candidates(sk_key_t *k, uint64_t lo, sk_ver_t *out)
{
    pthread_mutex_lock(&k->mu);
    uint64_t hi = k->latest;
    unsigned n = 0;
    if (hi - lo < SK_RING)
        for (uint64_t v = lo; v <= hi; v++)
            out[n++] = k->ring[v % SK_RING];
    pthread_mutex_unlock(&k->mu);
    return n;
}

static uint64_t sk_committed(sk_key_t *k, uint64_t *latest)
{
    pthread_mutex_lock(&k->mu);
    uint64_t c = k->committed;
    if (latest)
        *latest = k->latest;
    pthread_mutex_unlock(&k->mu);
    return c;
}

static uint64_t sk_begin_write(sk_key_t *k, uint64_t size, int deleted)
{
    pthread_mutex_lock(&k->mu);
    uint64_t v = ++k->latest;
    k->ring[v % SK_RING] = (sk_ver_t){v, size, deleted};
    pthread_mutex_unlock(&k->mu);
    return v;
}

static void sk_commit(sk_key_t *k, uint64_t v)
{
    pthread_mutex_lock(&k->mu);
    if (v > k->committed)
        k->committed = v;
    pthread_mutex_unlock(&k->mu);
}

/* ---- results shared by all threads -------------------------------------------------------- */

enum { SK_PUT, SK_MPU, SK_GET, SK_GET_OTHER, SK_RANGE, SK_STAT, SK_DELETE, SK_LIST, SK_OP_N };
static const char *const sk_op_name[SK_OP_N] = {"put",       "multipart_put", "get",    "get_other",
                                                "range_get", "head",          "delete", "list"};
/* weights out of 100 */
static const unsigned sk_op_weight[SK_OP_N] = {26, 4, 20, 14, 10, 8, 9, 9};

static atomic_bool g_stop; /* well-behaved and bad loops end */
static double g_t0, g_t_end;

static pthread_mutex_t g_res_mu = PTHREAD_MUTEX_INITIALIZER;
static json_t *g_err_classes, *g_err_samples, *g_wrong_samples, *g_bad_outcomes;
static atomic_ullong g_ops_total, g_err_total, g_wrong_bytes, g_wrong_objects, g_bytes_put,
    g_bytes_got, g_busy_retries, g_unchecked_reads, g_bad_attempts;

static void sk_count(json_t *obj, const char *cls)
{
    json_t *v = json_object_get(obj, cls);
    json_object_set_new(obj, cls, json_integer(v ? json_integer_value(v) + 1 : 1));
}

static void sk_error(const char *op, const char *key, wharf_status_t st, const char *msg)
{
    char cls[96];
    snprintf(cls, sizeof cls, "%s/%s", op, wharf_status_str(st));
    atomic_fetch_add(&g_err_total, 1);
    pthread_mutex_lock(&g_res_mu);
    sk_count(g_err_classes, cls);
    if (json_array_size(g_err_samples) < SK_MAX_SAMPLES_ERR)
        json_array_append_new(g_err_samples,
                              json_pack("{s:f,s:s,s:s,s:s}", "t_s", wb_now() - g_t0, "class", cls,
                                        "key", key, "message", msg ? msg : ""));
    pthread_mutex_unlock(&g_res_mu);
}

static void sk_wrong_record(const char *op, const char *key, const char *what, uint64_t bytes)
{
    atomic_fetch_add(&g_wrong_objects, 1);
    atomic_fetch_add(&g_wrong_bytes, bytes);
    pthread_mutex_lock(&g_res_mu);
    if (json_array_size(g_wrong_samples) < SK_MAX_SAMPLES_ERR)
        json_array_append_new(g_wrong_samples,
                              json_pack("{s:f,s:s,s:s,s:s,s:I}", "t_s", wb_now() - g_t0, "op", op,
                                        "key", key, "what", what, "bytes", (json_int_t)bytes));
    pthread_mutex_unlock(&g_res_mu);
}

static void sk_bad_outcome(const char *behaviour, const char *outcome)
{
    char cls[128];
    snprintf(cls, sizeof cls, "%s/%s", behaviour, outcome);
    pthread_mutex_lock(&g_res_mu);
    sk_count(g_bad_outcomes, cls);
    pthread_mutex_unlock(&g_res_mu);
}

/* ---- a well-behaved client ----------------------------------------------------------------- */

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

static void sk_lat_add(sk_lat_t *l, double s)
{
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 1024;
        double *nv = realloc(l->v, nc * sizeof *nv);
        if (!nv)
            return;
        l->v = nv;
        l->cap = nc;
    }
    l->v[l->n++] = s;
}

typedef struct sk_buf {
    uint8_t *p;
    uint64_t len, mapped, charged;
    wharf_mem_t *mr;
} sk_buf_t;

static int sk_buf_get(sk_client_t *cl, uint64_t len, sk_buf_t *b)
{
    memset(b, 0, sizeof *b);
    b->charged = sk_mem_take(len);
    b->len = len;
    b->mapped = len ? len : 1;
    /* Prefaulted, as registration pins (and so faults in) memory on an RDMA NIC. Without it,
     * tcp;ofi_rxm's recv faulted the pages in one by one inside the client's progress calls,
     * and with 64 threads mapping and unmapping buffers each fault waited for this process's
     * mmap lock behind their munmaps: on the loaded 2-core VM progress calls blocked for up to
     * 8.7 s (xfer's "client progress call blocked" log; 1,379 in a 10-minute run, 1 with this),
     * and one past wharfd's 10 s inactivity timeout failed its transfer (504). */
    b->p = mmap(NULL, b->mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
                -1, 0);
    if (b->p == MAP_FAILED) {
        sk_mem_give(b->charged);
        b->p = NULL;
        return -1;
    }
    if (cl->transport == WHARF_TRANSPORT_RDMA) {
        wharf_status_t st = wharf_mem_register(cl->c, b->p, b->mapped, WHARF_MEM_HOST, &b->mr);
        if (st != WHARF_OK) {
            sk_error("register", "-", st, wharf_last_error());
            munmap(b->p, b->mapped);
            sk_mem_give(b->charged);
            b->p = NULL;
            return -1;
        }
    }
    return 0;
}

static void sk_buf_put(sk_buf_t *b)
{
    if (!b->p)
        return;
    wharf_mem_deregister(b->mr);
    munmap(b->p, b->mapped);
    sk_mem_give(b->charged);
    b->p = NULL;
}

static wharf_xfer_opts_t sk_opts(const sk_client_t *cl)
{
    wharf_xfer_opts_t o;
    wharf_xfer_opts_init(&o, sizeof o);
    o.transport = cl->transport;
    return o;
}

/* 503 SlowDown is an answer a well-behaved S3 client retries with backoff, as the SDKs do;
 * it counts as an error only when it persists. */
#define SK_RETRY_BUSY(st, call)                                                                    \
    do {                                                                                           \
        for (unsigned a_ = 0;; a_++) {                                                             \
            (st) = (call);                                                                         \
            if ((st) != WHARF_ERR_BUSY || a_ >= 8 || atomic_load(&g_stop))                         \
                break;                                                                             \
            atomic_fetch_add(&g_busy_retries, 1);                                                  \
            usleep((useconds_t)(WB_MIN(1000u, 25u << a_) * 1000u));                                \
        }                                                                                          \
    } while (0)

/* The report of a transfer that succeeded must say the bytes moved the way asked for. */
static int sk_report_ok(const sk_client_t *cl, const wharf_report_t *r, uint64_t bytes,
                        const char *op, const char *key)
{
    char msg[512];
    if (r->bytes != bytes) {
        snprintf(msg, sizeof msg, "report bytes %" PRIu64 ", wanted %" PRIu64, r->bytes, bytes);
        sk_error(op, key, WHARF_ERR_PROTOCOL, msg);
        return 0;
    }
    if (bytes > 0 && cl->transport == WHARF_TRANSPORT_RDMA &&
        (r->transport != WHARF_TRANSPORT_RDMA || r->fell_back)) {
        snprintf(msg, sizeof msg, "asked for RDMA, report says transport %d fell_back %d (%s)",
                 (int)r->transport, r->fell_back, r->fallback_reason);
        sk_error(op, key, WHARF_ERR_PROTOCOL, msg);
        return 0;
    }
    return 1;
}

static unsigned sk_own_key(sk_client_t *cl)
{
    return cl->id * P.keys_per_client + (unsigned)(sk_rand(&cl->rng) % P.keys_per_client);
}

static void sk_do_put(sk_client_t *cl, unsigned ki, uint64_t size, const char *op)
{
    sk_key_t *k = &g_keys[ki];
    sk_buf_t b;
    if (sk_buf_get(cl, size, &b) != 0)
        return;
    uint64_t v = sk_begin_write(k, size, 0);
    sk_fill(b.p, size, sk_seed(ki, v));
    wharf_xfer_opts_t o = sk_opts(cl);
    wharf_report_t r;
    wharf_report_init(&r, sizeof r);
    wharf_status_t st;
    SK_RETRY_BUSY(st, wharf_object_put(cl->c, P.bucket, k->name, b.p, size, &o, &r));
    if (st != WHARF_OK)
        sk_error(op, k->name, st, wharf_last_error());
    else if (sk_report_ok(cl, &r, size, op, k->name)) {
        sk_commit(k, v);
        atomic_fetch_add(&g_bytes_put, size);
    }
    sk_buf_put(&b);
}

static void sk_do_delete(sk_client_t *cl, unsigned ki)
{
    sk_key_t *k = &g_keys[ki];
    uint64_t v = sk_begin_write(k, 0, 1);
    wharf_status_t st;
    SK_RETRY_BUSY(st, wharf_object_delete(cl->c, P.bucket, k->name));
    if (st == WHARF_OK || st == WHARF_ERR_NOT_FOUND)
        sk_commit(k, v);
    else
        sk_error("delete", k->name, st, wharf_last_error());
}

/* Judges the n bytes a read landed at offset off against the candidate versions; a range
 * read of want bytes returns min(want, size-off) bytes of the version it hit. */
static void sk_judge(const char *op, unsigned ki, const uint8_t *p, uint64_t n, uint64_t off,
                     uint64_t want, wharf_status_t st, const sk_ver_t *cand, unsigned nc)
{
    sk_key_t *k = &g_keys[ki];
    if (nc == 0) {
        atomic_fetch_add(&g_unchecked_reads, 1);
        return;
    }
    if (st == WHARF_ERR_NOT_FOUND) {
        for (unsigned i = 0; i < nc; i++)
            if (cand[i].deleted)
                return;
        sk_wrong_record(op, k->name, "404 for a key that exists", 0);
        return;
    }
    if (st == WHARF_ERR_RANGE) { /* a range at or past the end: only when a version is short */
        for (unsigned i = 0; i < nc; i++)
            if (!cand[i].deleted && cand[i].size <= off)
                return;
        sk_wrong_record(op, k->name, "416 for a range inside every version", 0);
        return;
    }
    uint64_t best = UINT64_MAX;
    for (unsigned i = 0; i < nc; i++) {
        if (cand[i].deleted || cand[i].size < off)
            continue;
        uint64_t expect = WB_MIN(want, cand[i].size - off);
        if (expect != n)
            continue;
        uint64_t bad = sk_wrong(p, n, sk_seed(ki, cand[i].ver), off);
        if (bad == 0)
            return;
        if (bad < best)
            best = bad;
    }
    char what[160];
    if (best == UINT64_MAX) {
        snprintf(what, sizeof what,
                 "%" PRIu64 " bytes at offset %" PRIu64
                 " match no valid version's length (versions %" PRIu64 "..%" PRIu64 ")",
                 n, off, cand[0].ver, cand[nc - 1].ver);
        sk_wrong_record(op, k->name, what, n ? n : 1);
    } else {
        snprintf(what, sizeof what,
                 "%" PRIu64 " of %" PRIu64 " bytes at offset %" PRIu64
                 " differ from every valid version",
                 best, n, off);
        sk_wrong_record(op, k->name, what, best);
    }
}

/* A GET of the whole object by its owner (no writer races it: it is the writer). */
static void sk_do_get_own(sk_client_t *cl, unsigned ki)
{
    sk_key_t *k = &g_keys[ki];
    uint64_t latest, c = sk_committed(k, &latest);
    sk_ver_t cand[SK_RING];
    unsigned nc = sk_candidates(k, c, cand);
    uint64_t cap = 0;
    for (unsigned i = 0; i < nc; i++)
        cap = WB_MAX(cap, cand[i].size);
    sk_buf_t b;
    if (sk_buf_get(cl, cap, &b) != 0)
        return;
    wharf_xfer_opts_t o = sk_opts(cl);
    wharf_report_t r;
    wharf_report_init(&r, sizeof r);
    wharf_status_t st;
    SK_RETRY_BUSY(st, wharf_object_get(cl->c, P.bucket, k->name, b.p, cap, 0, WHARF_WHOLE, &o, &r));
    if (st == WHARF_OK && !sk_report_ok(cl, &r, r.bytes, "get", k->name))
        goto out;
    if (st == WHARF_OK || st == WHARF_ERR_NOT_FOUND) {
        if (st == WHARF_OK)
            atomic_fetch_add(&g_bytes_got, r.bytes);
        sk_judge("get", ki, b.p, r.bytes, 0, UINT64_MAX, st, cand, nc);
    } else if (st == WHARF_ERR_TOO_LARGE) {
        sk_wrong_record("get", k->name, "object larger than every valid version", 1);
    } else {
        sk_error("get", k->name, st, wharf_last_error());
    }
out:
    sk_buf_put(&b);
}

/* A read of another client's key while its owner may be overwriting or deleting it: one
 * ranged GET of [0, cap) (atomic: one request sees one version), judged against every version
 * from the one committed at the start to the newest one started by the end. */
static void sk_do_get_other(sk_client_t *cl)
{
    unsigned ki = (unsigned)(sk_rand(&cl->rng) % g_nkeys);
    sk_key_t *k = &g_keys[ki];
    uint64_t latest, c = sk_committed(k, &latest);
    sk_ver_t cand0[SK_RING];
    unsigned nc0 = sk_candidates(k, c, cand0);
    uint64_t cap = 1;
    for (unsigned i = 0; i < nc0; i++)
        cap = WB_MAX(cap, cand0[i].size);
    sk_buf_t b;
    if (sk_buf_get(cl, cap, &b) != 0)
        return;
    wharf_xfer_opts_t o = sk_opts(cl);
    wharf_report_t r;
    wharf_report_init(&r, sizeof r);
    wharf_status_t st;
    SK_RETRY_BUSY(st, wharf_object_get(cl->c, P.bucket, k->name, b.p, cap, 0, cap, &o, &r));
    sk_ver_t cand[SK_RING];
    unsigned nc = sk_candidates(k, c, cand);
    if (st == WHARF_OK && !sk_report_ok(cl, &r, r.bytes, "get_other", k->name))
        goto out;
    if (st == WHARF_OK || st == WHARF_ERR_NOT_FOUND || st == WHARF_ERR_RANGE) {
        if (st == WHARF_OK)
            atomic_fetch_add(&g_bytes_got, r.bytes);
        sk_judge("get_other", ki, b.p, r.bytes, 0, cap, st, cand, nc);
    } else {
        sk_error("get_other", k->name, st, wharf_last_error());
    }
out:
    sk_buf_put(&b);
}

/* Returns 0 when the key had nothing to range over and was written instead. */
static int sk_do_range(sk_client_t *cl, unsigned ki)
{
    sk_key_t *k = &g_keys[ki];
    uint64_t latest, c = sk_committed(k, &latest);
    sk_ver_t cand[SK_RING];
    unsigned nc = sk_candidates(k, c, cand);
    if (nc != 1 || cand[0].deleted || cand[0].size == 0) { /* nothing to range: write it */
        sk_do_put(cl, ki, sk_size(&cl->rng, P.max_size), "put");
        return 0;
    }
    uint64_t size = cand[0].size;
    uint64_t off = sk_between(&cl->rng, 0, size - 1);
    uint64_t len = sk_between(&cl->rng, 1, WB_MIN(size - off + 4096, 4 * WB_MIB));
    sk_buf_t b;
    if (sk_buf_get(cl, len, &b) != 0)
        return 1;
    wharf_xfer_opts_t o = sk_opts(cl);
    wharf_report_t r;
    wharf_report_init(&r, sizeof r);
    wharf_status_t st;
    SK_RETRY_BUSY(st, wharf_object_get(cl->c, P.bucket, k->name, b.p, len, off, len, &o, &r));
    if (st == WHARF_OK && !sk_report_ok(cl, &r, r.bytes, "range_get", k->name))
        goto out;
    if (st == WHARF_OK) {
        atomic_fetch_add(&g_bytes_got, r.bytes);
        sk_judge("range_get", ki, b.p, r.bytes, off, len, st, cand, nc);
    } else if (st == WHARF_ERR_NOT_FOUND) {
        sk_judge("range_get", ki, b.p, 0, off, len, st, cand, nc);
    } else {
        sk_error("range_get", k->name, st, wharf_last_error());
    }
out:
    sk_buf_put(&b);
    return 1;
}

static void sk_do_stat(sk_client_t *cl, unsigned ki)
{
    sk_key_t *k = &g_keys[ki];
    uint64_t latest, c = sk_committed(k, &latest);
    sk_ver_t cand[SK_RING];
    unsigned nc = sk_candidates(k, c, cand);
    wharf_stat_t s;
    wharf_stat_init(&s, sizeof s);
    wharf_status_t st;
    SK_RETRY_BUSY(st, wharf_object_stat(cl->c, P.bucket, k->name, &s));
    if (st != WHARF_OK && st != WHARF_ERR_NOT_FOUND) {
        sk_error("head", k->name, st, wharf_last_error());
        return;
    }
    for (unsigned i = 0; i < nc; i++)
        if ((st == WHARF_ERR_NOT_FOUND && cand[i].deleted) ||
            (st == WHARF_OK && !cand[i].deleted && cand[i].size == s.length))
            return;
    char what[128];
    snprintf(what, sizeof what, "HEAD says %s, length %" PRIu64 ": no valid version",
             st == WHARF_OK ? "present" : "absent", s.length);
    sk_wrong_record("head", k->name, what, 0);
}

typedef struct sk_list_acc {
    const char *names[1024];
    uint64_t len[1024];
    unsigned n, overflow;
    char *store;
    size_t used, cap;
} sk_list_acc_t;

static int sk_list_cb(void *arg, const char *key, uint64_t length, int64_t mtime, const char *etag)
{
    sk_list_acc_t *a = arg;
    size_t kl = strlen(key) + 1;
    if (a->n >= 1024 || a->used + kl > a->cap) {
        a->overflow++;
        return 0;
    }
    memcpy(a->store + a->used, key, kl);
    a->names[a->n] = a->store + a->used;
    a->len[a->n++] = length;
    a->used += kl;
    return 0;
}

/* LIST of the client's own prefix: exactly its live keys, with their lengths. */
static void sk_do_list(sk_client_t *cl)
{
    char prefix[16];
    snprintf(prefix, sizeof prefix, "c%03u/", cl->id);
    sk_list_acc_t *a = calloc(1, sizeof *a);
    if (!a || !(a->store = malloc(a->cap = 100 << 10))) {
        free(a);
        return;
    }
    wharf_status_t st;
    SK_RETRY_BUSY(st, wharf_object_list(cl->c, P.bucket, prefix, sk_list_cb, a));
    if (st != WHARF_OK) {
        sk_error("list", prefix, st, wharf_last_error());
        free(a->store);
        free(a);
        return;
    }
    unsigned seen = 0;
    for (unsigned j = 0; j < P.keys_per_client; j++) {
        unsigned ki = cl->id * P.keys_per_client + j;
        sk_key_t *k = &g_keys[ki];
        uint64_t latest, c = sk_committed(k, &latest);
        sk_ver_t cand[SK_RING];
        unsigned nc = sk_candidates(k, c, cand);
        int found = -1;
        for (unsigned i = 0; i < a->n; i++)
            if (!strcmp(a->names[i], k->name)) {
                found = (int)i;
                break;
            }
        seen += found >= 0;
        int ok = 0;
        for (unsigned i = 0; i < nc && !ok; i++)
            ok = found < 0 ? cand[i].deleted : !cand[i].deleted && cand[i].size == a->len[found];
        if (!ok && nc) {
            char what[160];
            snprintf(what, sizeof what, "LIST %s: %s", prefix,
                     found < 0 ? "a live key is missing" : "wrong length or a deleted key listed");
            sk_wrong_record("list", k->name, what, 0);
        }
    }
    if (seen != a->n)
        sk_wrong_record("list", prefix, "LIST names keys that were never written", 0);
    free(a->store);
    free(a);
}

static void sk_client_op(sk_client_t *cl)
{
    unsigned w = (unsigned)(sk_rand(&cl->rng) % 100), op = 0, acc = 0;
    for (op = 0; op < SK_OP_N; op++) {
        acc += sk_op_weight[op];
        if (w < acc)
            break;
    }
    if (op >= SK_OP_N)
        op = SK_GET;
    double t = wb_now();
    switch (op) {
    case SK_PUT:
        sk_do_put(cl, sk_own_key(cl), sk_size(&cl->rng, P.max_size), "put");
        break;
    case SK_MPU:
        if (P.max_size < SK_MPU_THRESHOLD) {
            op = SK_PUT;
            sk_do_put(cl, sk_own_key(cl), sk_size(&cl->rng, P.max_size), "put");
        } else {
            sk_do_put(cl, sk_own_key(cl),
                      sk_between(&cl->rng, SK_MPU_THRESHOLD, WB_MIN(P.max_size, 3 * SK_PART)),
                      "multipart_put");
        }
        break;
    case SK_GET:
        sk_do_get_own(cl, sk_own_key(cl));
        break;
    case SK_GET_OTHER:
        sk_do_get_other(cl);
        break;
    case SK_RANGE:
        if (!sk_do_range(cl, sk_own_key(cl)))
            op = SK_PUT;
        break;
    case SK_STAT:
        sk_do_stat(cl, sk_own_key(cl));
        break;
    case SK_DELETE:
        sk_do_delete(cl, sk_own_key(cl));
        break;
    default:
        sk_do_list(cl);
        break;
    }
    cl->ops[op]++;
    sk_lat_add(&cl->lat[op], wb_now() - t);
    atomic_fetch_add(&g_ops_total, 1);
}

static void *sk_client_main(void *arg)
{
    sk_client_t *cl = arg;
    while (!atomic_load(&g_stop)) {
        sk_client_op(cl);
        if (P.think_ms)
            usleep((useconds_t)sk_between(&cl->rng, P.think_ms / 2, P.think_ms * 3 / 2) * 1000);
    }
    if (P.inject_wrong && cl->id == 0) { /* one byte off in a version published as valid */
        unsigned ki = 0;
        sk_key_t *k = &g_keys[ki];
        uint64_t v = sk_begin_write(k, 4096, 0);
        uint8_t *p = malloc(4096);
        sk_fill(p, 4096, sk_seed(ki, v));
        p[1234] ^= 0x20;
        wharf_xfer_opts_t o;
        wharf_xfer_opts_init(&o, sizeof o);
        o.transport = WHARF_TRANSPORT_HTTP;
        if (wharf_object_put(cl->c, P.bucket, k->name, p, 4096, &o, NULL) == WHARF_OK)
            sk_commit(k, v);
        free(p);
    }
    /* the last word: every key this client owns reads back as its committed version */
    for (unsigned j = 0; j < P.keys_per_client; j++)
        sk_do_get_own(cl, cl->id * P.keys_per_client + j);
    return NULL;
}

static wharf_client_t *sk_new_client(const char *provider, char *err, size_t errlen)
{
    wharf_client_config_t cfg;
    wharf_client_config_init(&cfg, sizeof cfg);
    cfg.endpoint = P.endpoint;
    cfg.access_key = P.ak;
    cfg.secret_key = P.sk;
    cfg.region = P.region;
    cfg.provider = provider;
    cfg.unix_socket = !strcmp(provider, "ofi+shm") ? P.unix_socket : NULL;
    cfg.multipart_threshold = SK_MPU_THRESHOLD;
    cfg.part_size = SK_PART;
    cfg.concurrency = 2;
    cfg.timeout_ms = P.op_timeout_ms;
    wharf_client_t *c = NULL;
    wharf_status_t st = wharf_client_create(&cfg, &c);
    if (st != WHARF_OK) {
        snprintf(err, errlen, "%s client: %s: %s", provider, wharf_status_str(st),
                 wharf_last_error());
        return NULL;
    }
    return c;
}

/* ---- misbehaving clients ------------------------------------------------------------------- */

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
static const char *const sb_name[SB_N] = {"slow_headers", "stall_body",   "cut_body", "garbage",
                                          "cut_response", "stopped_rdma", "idle",     "bad_auth"};

typedef struct sk_bad {
    unsigned id, kind;
    uint64_t rng, n;
    pthread_t th;
    wharf_client_t *c; /* HTTP, for checking what a cut-off PUT left behind */
} sk_bad_t;

/* --bad-kinds "a,b": the behaviours named, round-robin; NULL: all of them. */
static int sk_bad_kinds(const char *list, unsigned *kinds, unsigned *n)
{
    *n = 0;
    for (const char *p = list; p && *p;) {
        size_t l = strcspn(p, ",");
        unsigned k = 0;
        while (k < SB_N && (strlen(sb_name[k]) != l || strncmp(sb_name[k], p, l) != 0))
            k++;
        if (k == SB_N) {
            fprintf(stderr, "soak: --bad-kinds: unknown behaviour '%.*s'\n", (int)l, p);
            return -1;
        }
        if (*n < SB_N)
            kinds[(*n)++] = k;
        p += l + (p[l] == ',');
    }
    for (unsigned k = 0; *n == 0 && k < SB_N; k++)
        kinds[k] = k;
    if (*n == 0)
        *n = SB_N;
    return 0;
}

static const char *g_big_key = "bad/big-object";
static uint64_t g_big_size;

/* Sleeps up to s seconds, waking early when the run ends. */
static void sk_nap(double s)
{
    double until = wb_now() + s;
    while (!atomic_load(&g_stop) && wb_now() < until)
        usleep(20000);
}

/* Misbehaving client i connects from 127.0.0.(2+i) when --bad-sources is on: hostile clients are
 * other hosts, so a server's per-address connection limit may stop them without touching the
 * well-behaved clients on 127.0.0.1 (with it off, all share 127.0.0.1). */
static void sk_bad_source(const sk_bad_t *b, char *out, size_t outlen)
{
    out[0] = 0;
    if (P.bad_sources && !strncmp(P.host, "127.", 4))
        snprintf(out, outlen, "127.0.0.%u", 2 + b->id % 250);
}

static int sk_connect(const sk_bad_t *b)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    char src[32];
    sk_bad_source(b, src, sizeof src);
    if (src[0]) {
        struct sockaddr_in l = {.sin_family = AF_INET};
        inet_pton(AF_INET, src, &l.sin_addr);
        if (bind(fd, (struct sockaddr *)&l, sizeof l) != 0) {
            close(fd);
            return -1;
        }
    }
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)P.port)};
    inet_pton(AF_INET, P.host, &a.sin_addr);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Reads the answer for up to s seconds: "http_NNN", "closed" or "no_answer". */
static const char *sk_read_answer(int fd, double s, char *cls, size_t clslen)
{
    char buf[4096];
    size_t got = 0;
    double until = wb_now() + s;
    while (wb_now() < until && !atomic_load(&g_stop)) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        if (poll(&pfd, 1, 100) <= 0)
            continue;
        ssize_t n = recv(fd, buf + got, sizeof buf - 1 - got, 0);
        if (n <= 0)
            break;
        got += (size_t)n;
        buf[got] = 0;
        if (strstr(buf, "\r\n") || got >= sizeof buf - 1)
            break;
    }
    buf[got] = 0;
    int code;
    if (got && sscanf(buf, "HTTP/1.%*d %d", &code) == 1)
        snprintf(cls, clslen, "http_%d", code);
    else
        snprintf(cls, clslen, "%s", got ? "not_http" : wb_now() < until ? "closed" : "no_answer");
    return cls;
}

static void sb_slow_headers(sk_bad_t *b)
{
    int fd = sk_connect(b);
    if (fd < 0) {
        sk_bad_outcome(sb_name[b->kind], "connect_failed");
        return;
    }
    char line[512];
    snprintf(line, sizeof line, "GET /%s/%s HTTP/1.1\r\nHost: %s:%d\r\n", P.bucket, g_big_key,
             P.host, P.port);
    send(fd, line, strlen(line), MSG_NOSIGNAL);
    double t0 = wb_now();
    const char *out = "held_30s";
    for (unsigned i = 0; wb_now() - t0 < 30 && !atomic_load(&g_stop); i++) {
        snprintf(line, sizeof line, "X-Slow-%u: %u\r\n", i, i);
        if (send(fd, line, strlen(line), MSG_NOSIGNAL) < 0) {
            out = "server_closed";
            break;
        }
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        if (poll(&pfd, 1, 1000) > 0) {
            char c[512];
            ssize_t n = recv(fd, c, sizeof c, MSG_DONTWAIT);
            out = n > 0 ? "server_answered" : "server_closed";
            break;
        }
    }
    sk_bad_outcome(sb_name[b->kind], out);
    close(fd);
}

typedef struct sb_body {
    uint64_t sent, total, cut; /* cut: stop after this many bytes */
    double stall_s;            /* then sleep this long before hanging up */
    uint64_t seed;
} sb_body_t;

static size_t sb_read_cb(char *buf, size_t sz, size_t nm, void *arg)
{
    sb_body_t *s = arg;
    if (s->sent >= s->cut) {
        if (s->stall_s > 0)
            sk_nap(s->stall_s);
        return CURL_READFUNC_ABORT;
    }
    size_t n = WB_MIN(sz * nm, (size_t)(s->cut - s->sent));
    for (size_t i = 0; i < n; i++)
        buf[i] = (char)sk_byte(s->seed, s->sent + i);
    s->sent += n;
    return n;
}

static size_t sk_discard(char *p, size_t sz, size_t nm, void *arg)
{
    return sz * nm;
}

static CURL *sk_curl(const sk_bad_t *b, const char *path, struct curl_slist **hdrs,
                     const char *secret)
{
    char userpwd[512], sigv4[128], url[1024], src[32], iface[48];
    CURL *h = curl_easy_init();
    if (!h)
        return NULL;
    sk_bad_source(b, src, sizeof src);
    if (src[0]) {
        snprintf(iface, sizeof iface, "host!%s", src);
        curl_easy_setopt(h, CURLOPT_INTERFACE, iface);
    }
    snprintf(url, sizeof url, "http://%s:%d%s", P.host, P.port, path);
    snprintf(userpwd, sizeof userpwd, "%s:%s", P.ak, secret ? secret : P.sk);
    snprintf(sigv4, sizeof sigv4, "aws:amz:%s:s3", P.region);
    *hdrs = curl_slist_append(NULL, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_AWS_SIGV4, sigv4);
    curl_easy_setopt(h, CURLOPT_USERPWD, userpwd);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, *hdrs);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 60L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sk_discard);
    return h;
}

static void sk_curl_outcome(const char *kind, CURL *h, CURLcode rc)
{
    char cls[64];
    long code = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    if (rc == CURLE_OK)
        snprintf(cls, sizeof cls, "http_%ld", code);
    else if (code)
        snprintf(cls, sizeof cls, "hung_up_after_http_%ld", code);
    else
        snprintf(cls, sizeof cls, "curl_%d", (int)rc);
    sk_bad_outcome(kind, cls);
}

/* A PUT cut off mid-body (or stalled, then cut) must leave no object behind. */
static void sb_put_cut(sk_bad_t *b, double stall_s)
{
    char key[96], path[256];
    snprintf(key, sizeof key, "bad/%u/cut-%" PRIu64, b->id, b->n);
    snprintf(path, sizeof path, "/%s/%s", P.bucket, key);
    struct curl_slist *hdrs;
    CURL *h = sk_curl(b, path, &hdrs, NULL);
    if (!h)
        return;
    sb_body_t s = {
        .total = sk_between(&b->rng, 64 << 10, 4 * WB_MIB), .stall_s = stall_s, .seed = b->rng};
    s.cut = sk_between(&b->rng, 0, s.total - 1);
    curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)s.total);
    curl_easy_setopt(h, CURLOPT_READFUNCTION, sb_read_cb);
    curl_easy_setopt(h, CURLOPT_READDATA, &s);
    CURLcode rc = curl_easy_perform(h);
    sk_curl_outcome(sb_name[b->kind], h, rc);
    curl_easy_cleanup(h);
    curl_slist_free_all(hdrs);
    /* the server may still be reading the dead connection: give it a moment, bounded */
    wharf_stat_t st;
    wharf_status_t r = WHARF_OK;
    for (unsigned i = 0; i < 50; i++) {
        wharf_stat_init(&st, sizeof st);
        r = wharf_object_stat(b->c, P.bucket, key, &st);
        if (r == WHARF_ERR_NOT_FOUND)
            return;
        if (r != WHARF_OK && r != WHARF_ERR_BUSY)
            break;
        usleep(100000);
    }
    if (r == WHARF_OK) {
        char what[128];
        snprintf(what, sizeof what,
                 "a PUT cut off after %" PRIu64 " of %" PRIu64 " bytes was stored (%" PRIu64
                 " bytes)",
                 s.cut, s.total, st.length);
        sk_wrong_record(sb_name[b->kind], key, what, st.length ? st.length : 1);
    } else {
        sk_bad_outcome(sb_name[b->kind], "check_failed");
    }
}

static void sb_garbage(sk_bad_t *b)
{
    int fd = sk_connect(b);
    if (fd < 0) {
        sk_bad_outcome(sb_name[b->kind], "connect_failed");
        return;
    }
    char *buf = malloc(128 << 10);
    size_t n = 0;
    unsigned form = (unsigned)(sk_rand(&b->rng) % 9);
    switch (form) {
    case 0: /* random bytes */
        n = sk_between(&b->rng, 1, 64 << 10);
        for (size_t i = 0; i < n; i++)
            buf[i] = (char)sk_rand(&b->rng);
        break;
    case 1:
        n = (size_t)snprintf(buf, 1024, "FROB /%s HTTP/1.1\r\nHost: x\r\n\r\n", P.bucket);
        break;
    case 2: /* a 100 KiB request line */
        n = (size_t)snprintf(buf, 64, "GET /");
        memset(buf + n, 'a', 100 << 10);
        n += 100 << 10;
        n += (size_t)snprintf(buf + n, 64, " HTTP/1.1\r\nHost: x\r\n\r\n");
        break;
    case 3:
        n = (size_t)snprintf(buf, 1024, "GET / HTTP/1.1\r\nno colon here\r\n\x01\x02\r\n\r\n");
        break;
    case 4:
        n = (size_t)snprintf(buf, 1024,
                             "PUT /%s/bad/te HTTP/1.1\r\nHost: x\r\n"
                             "Transfer-Encoding: gzip, chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
                             P.bucket);
        break;
    case 5:
        n = (size_t)snprintf(buf, 1024,
                             "PUT /%s/bad/ch HTTP/1.1\r\nHost: x\r\n"
                             "Transfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n",
                             P.bucket);
        break;
    case 6:
        n = (size_t)snprintf(buf, 1024,
                             "PUT /%s/bad/cl HTTP/1.1\r\nHost: x\r\n"
                             "Content-Length: 99999999999999999999999\r\n\r\nabc",
                             P.bucket);
        break;
    case 7: /* many empty headers (parsing cost before authentication) */
        n = (size_t)snprintf(buf, 64, "GET / HTTP/1.1\r\nHost: x\r\n");
        while (n + 8 < (120 << 10))
            memcpy(buf + n, "X:\r\n", 4), n += 4;
        memcpy(buf + n, "\r\n", 2), n += 2;
        break;
    default:
        n = (size_t)snprintf(buf, 1024, "GET /\r\n\r\n");
        break;
    }
    send(fd, buf, n, MSG_NOSIGNAL);
    char cls[64], full[96];
    sk_read_answer(fd, 5, cls, sizeof cls);
    snprintf(full, sizeof full, "form%u_%s", form, cls);
    sk_bad_outcome(sb_name[b->kind], full);
    free(buf);
    close(fd);
}

typedef struct sb_cut {
    uint64_t got, cut;
} sb_cut_t;

static size_t sb_cut_cb(char *p, size_t sz, size_t nm, void *arg)
{
    sb_cut_t *c = arg;
    c->got += sz * nm;
    return c->got >= c->cut ? 0 : sz * nm; /* 0 makes curl hang up */
}

static void sb_cut_response(sk_bad_t *b)
{
    char path[256];
    snprintf(path, sizeof path, "/%s/%s", P.bucket, g_big_key);
    struct curl_slist *hdrs;
    CURL *h = sk_curl(b, path, &hdrs, NULL);
    if (!h)
        return;
    sb_cut_t c = {0, sk_between(&b->rng, 1, g_big_size / 2)};
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sb_cut_cb);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &c);
    CURLcode rc = curl_easy_perform(h);
    sk_curl_outcome(sb_name[b->kind], h, rc);
    curl_easy_cleanup(h);
    curl_slist_free_all(hdrs);
}

static void sb_stopped_rdma(sk_bad_t *b)
{
    char size[32], interval[32];
    snprintf(size, sizeof size, "%" PRIu64, g_big_size);
    snprintf(interval, sizeof interval, "%d", 120);
    char *argv[] = {
        "soak",           "--role",     "rdma-child",     "--endpoint", (char *)P.endpoint,
        "--access-key",   (char *)P.ak, "--secret-key",   (char *)P.sk, "--region",
        (char *)P.region, "--bucket",   (char *)P.bucket, "--key",      (char *)g_big_key,
        "--size",         size,         "--duration",     interval,     NULL};
    pid_t pid;
    if (posix_spawn(&pid, "/proc/self/exe", NULL, NULL, argv, environ) != 0) {
        sk_bad_outcome(sb_name[b->kind], "spawn_failed");
        return;
    }
    sk_nap(0.05 + sk_unit(&b->rng) * 0.5);
    kill(pid, SIGSTOP);
    sk_nap(2 + sk_unit(&b->rng) * 3);
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    sk_bad_outcome(sb_name[b->kind], WIFSIGNALED(status) ? "stopped_then_killed" : "child_exited");
}

static void sb_idle(sk_bad_t *b)
{
    int fds[16];
    unsigned n = 0;
    for (; n < 16; n++)
        if ((fds[n] = sk_connect(b)) < 0)
            break;
    sk_nap(5 + sk_unit(&b->rng) * 15);
    unsigned closed = 0;
    for (unsigned i = 0; i < n; i++) {
        char c;
        closed += recv(fds[i], &c, 1, MSG_DONTWAIT) == 0;
        close(fds[i]);
    }
    sk_bad_outcome(sb_name[b->kind], closed == n ? "all_closed_by_server"
                                     : closed    ? "some_closed_by_server"
                                                 : "held");
}

static void sb_bad_auth(sk_bad_t *b)
{
    char path[256];
    struct curl_slist *hdrs;
    CURL *h;
    CURLcode rc;
    if (sk_rand(&b->rng) % 2) {
        snprintf(path, sizeof path, "/%s/%s", P.bucket, g_big_key);
        if (!(h = sk_curl(b, path, &hdrs, "not-the-secret")))
            return;
        rc = curl_easy_perform(h);
        sk_curl_outcome("bad_auth_get", h, rc);
    } else { /* a multipart upload begun, one part sent, never completed nor aborted */
        snprintf(path, sizeof path, "/%s/bad/%u/abandoned-%" PRIu64 "?uploads=", P.bucket, b->id,
                 b->n);
        if (!(h = sk_curl(b, path, &hdrs, NULL)))
            return;
        curl_easy_setopt(h, CURLOPT_POST, 1L);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, 0L);
        rc = curl_easy_perform(h);
        sk_curl_outcome("abandoned_multipart_create", h, rc);
    }
    curl_easy_cleanup(h);
    curl_slist_free_all(hdrs);
}

static void *sk_bad_main(void *arg)
{
    sk_bad_t *b = arg;
    while (!atomic_load(&g_stop)) {
        atomic_fetch_add(&g_bad_attempts, 1);
        switch (b->kind) {
        case SB_SLOW_HEADERS:
            sb_slow_headers(b);
            break;
        case SB_STALL_BODY:
            sb_put_cut(b, 5 + sk_unit(&b->rng) * 10);
            break;
        case SB_CUT_BODY:
            sb_put_cut(b, 0);
            break;
        case SB_GARBAGE:
            sb_garbage(b);
            break;
        case SB_CUT_RESPONSE:
            sb_cut_response(b);
            break;
        case SB_STOPPED_RDMA:
            sb_stopped_rdma(b);
            break;
        case SB_IDLE:
            sb_idle(b);
            break;
        default:
            sb_bad_auth(b);
            break;
        }
        b->n++;
        sk_nap(0.1 + sk_unit(&b->rng) * 0.4);
    }
    return NULL;
}

/* The child of SB_STOPPED_RDMA: RDMA GETs over ofi+tcp in a loop until it is killed. */
static int sk_rdma_child(const char *key, uint64_t size, double duration)
{
    char err[256];
    wharf_client_t *c = sk_new_client("ofi+tcp", err, sizeof err);
    if (!c)
        return 1;
    uint8_t *p =
        mmap(NULL, size ? size : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    wharf_mem_t *mr = NULL;
    if (p == MAP_FAILED || wharf_mem_register(c, p, size ? size : 1, WHARF_MEM_HOST, &mr))
        return 1;
    wharf_xfer_opts_t o;
    wharf_xfer_opts_init(&o, sizeof o);
    o.transport = WHARF_TRANSPORT_RDMA;
    double until = wb_now() + duration;
    while (wb_now() < until) {
        wharf_report_t r;
        wharf_report_init(&r, sizeof r);
        wharf_object_get(c, P.bucket, key, p, size, 0, size, &o, &r);
    }
    return 0;
}

/* ---- the sampler -------------------------------------------------------------------------- */

typedef struct sk_sample {
    double t;
    double rss, threads, fds, vm_lck, vm_pin, registered, inflight;
    double pool_total, pool_free, pipelines;
    int alive, metrics_ok, has_registered, has_pool, has_pipelines;
    uint64_t ops, errors, wrong_bytes;
} sk_sample_t;

static sk_sample_t *g_samples;
static size_t g_nsamples, g_cap_samples;
static char g_registered_metric[96];

static void sk_proc_sample(sk_sample_t *s)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", P.pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    s->alive = 1;
    while (fgets(line, sizeof line, f)) {
        unsigned long long v;
        if (sscanf(line, "VmRSS: %llu kB", &v) == 1)
            s->rss = (double)v * 1024;
        else if (sscanf(line, "VmLck: %llu kB", &v) == 1)
            s->vm_lck = (double)v * 1024;
        else if (sscanf(line, "VmPin: %llu kB", &v) == 1)
            s->vm_pin = (double)v * 1024;
        else if (sscanf(line, "Threads: %llu", &v) == 1)
            s->threads = (double)v;
    }
    fclose(f);
    snprintf(path, sizeof path, "/proc/%d/fd", P.pid);
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        unsigned n = 0;
        while ((e = readdir(d)))
            n += e->d_name[0] != '.';
        closedir(d);
        s->fds = n;
    }
}

typedef struct sk_text {
    char *p;
    size_t n;
} sk_text_t;

static size_t sk_text_cb(char *d, size_t sz, size_t nm, void *arg)
{
    sk_text_t *t = arg;
    size_t n = sz * nm;
    char *np = realloc(t->p, t->n + n + 1);
    if (!np)
        return 0;
    memcpy(np + t->n, d, n);
    t->p = np;
    t->n += n;
    t->p[t->n] = 0;
    return n;
}

/* GET /metrics as text (signed when the server wants it); NULL when it cannot be had. */
static char *sk_metrics_text(void)
{
    char url[1024], userpwd[512], sigv4[128];
    snprintf(url, sizeof url, "%s/metrics", P.endpoint);
    for (int sign = 0; sign < 2; sign++) {
        CURL *h = curl_easy_init();
        if (!h)
            return NULL;
        sk_text_t t = {0};
        curl_easy_setopt(h, CURLOPT_URL, url);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sk_text_cb);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &t);
        curl_easy_setopt(h, CURLOPT_TIMEOUT, 10L);
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        if (sign) {
            snprintf(userpwd, sizeof userpwd, "%s:%s", P.ak, P.sk);
            snprintf(sigv4, sizeof sigv4, "aws:amz:%s:s3", P.region);
            curl_easy_setopt(h, CURLOPT_USERPWD, userpwd);
            curl_easy_setopt(h, CURLOPT_AWS_SIGV4, sigv4);
        }
        long code = 0;
        CURLcode rc = curl_easy_perform(h);
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
        curl_easy_cleanup(h);
        if (rc == CURLE_OK && code == 200 && t.p)
            return t.p;
        free(t.p);
        if (rc != CURLE_OK || (code != 401 && code != 403))
            return NULL;
    }
    return NULL;
}

/* From /metrics: requests in flight, the RDMA buffer pool (all and free buffers), live RDMA
 * pipelines, and registered memory if wharfd exposes a series whose name says so. Read per
 * label set (the pool's total and free are one series name). */
static void sk_metrics_sample(sk_sample_t *s)
{
    char *text = sk_metrics_text();
    if (!text)
        return;
    s->metrics_ok = 1;
    for (char *line = text, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = 0;
        if (line[0] == '#')
            continue;
        char *sp = strrchr(line, ' ');
        if (!sp)
            continue;
        double v = strtod(sp + 1, NULL);
        *sp = 0;
        if (!strcmp(line, "wharf_inflight_requests")) {
            s->inflight = v;
        } else if (!strcmp(line, "wharf_rdma_pool_buffers{state=\"total\"}")) {
            s->pool_total = v;
            s->has_pool = 1;
        } else if (!strcmp(line, "wharf_rdma_pool_buffers{state=\"free\"}")) {
            s->pool_free = v;
        } else if (!strcmp(line, "wharf_rdma_pipelines_active")) {
            s->pipelines = v;
            s->has_pipelines = 1;
        } else if (strstr(line, "registered") && strstr(line, "bytes")) {
            if (!g_registered_metric[0])
                snprintf(g_registered_metric, sizeof g_registered_metric, "%.*s",
                         (int)strcspn(line, "{"), line);
            s->registered += v;
            s->has_registered = 1;
        }
    }
    free(text);
}

static void *sk_sampler_main(void *arg)
{
    double next = g_t0;
    while (!atomic_load(&g_stop)) {
        sk_sample_t s = {.t = wb_now() - g_t0};
        if (P.pid > 0)
            sk_proc_sample(&s);
        sk_metrics_sample(&s);
        s.ops = atomic_load(&g_ops_total);
        s.errors = atomic_load(&g_err_total);
        s.wrong_bytes = atomic_load(&g_wrong_bytes);
        if (g_nsamples == g_cap_samples) {
            size_t nc = g_cap_samples ? g_cap_samples * 2 : 1024;
            sk_sample_t *ns = realloc(g_samples, nc * sizeof *ns);
            if (!ns)
                break;
            g_samples = ns;
            g_cap_samples = nc;
        }
        g_samples[g_nsamples++] = s;
        next += P.interval;
        while (!atomic_load(&g_stop) && wb_now() < next)
            usleep(10000);
    }
    return NULL;
}

/* Least-squares slope (per minute) of field f of the samples taken at or after t_from. */
static json_t *sk_fit(size_t off, double t_from, double scale)
{
    double sx = 0, sy = 0, sxx = 0, sxy = 0, lo = INFINITY, hi = -INFINITY, first = NAN, last = NAN;
    size_t n = 0;
    for (size_t i = 0; i < g_nsamples; i++) {
        const sk_sample_t *s = &g_samples[i];
        if (s->t < t_from || !s->alive)
            continue;
        double y = *(const double *)((const char *)s + off) / scale, x = s->t / 60.0;
        if (isnan(first))
            first = y;
        last = y;
        sx += x, sy += y, sxx += x * x, sxy += x * y, n++;
        lo = fmin(lo, y), hi = fmax(hi, y);
    }
    json_t *o = json_object();
    json_object_set_new(o, "samples", json_integer((json_int_t)n));
    if (n >= 3 && n * sxx - sx * sx > 0) {
        double slope = (n * sxy - sx * sy) / (n * sxx - sx * sx);
        json_object_set_new(o, "slope_per_min", json_real(slope));
        json_object_set_new(o, "first", json_real(first));
        json_object_set_new(o, "last", json_real(last));
        json_object_set_new(o, "min", json_real(lo));
        json_object_set_new(o, "max", json_real(hi));
    } else {
        json_object_set_new(o, "slope_per_min", json_null());
    }
    return o;
}

/* ---- main ------------------------------------------------------------------------------- */

static void usage(void)
{
    fprintf(stderr,
            "usage: soak --endpoint URL [--pid PID] [--unix-socket PATH] [--duration 600]\n"
            "            [--warmup S] [--clients 64] [--bad-clients 10]\n"
            "            [--transports http,shm,tcp]\n"
            "            [--max-size 64M] [--mem-budget 2G] [--keys-per-client 8] [--think-ms 0]\n"
            "            [--op-timeout-ms 120000] [--bad-sources 1] [--bad-kinds LIST]\n"
            "            [--interval 1] [--bucket NAME] [--seed N] [--out FILE.json]\n"
            "            [--inject-wrong-byte 1] (checks the checker: exits 1)\n"
            "credentials: --access-key/--secret-key or WHARF_ACCESS_KEY/WHARF_SECRET_KEY\n");
}

static uint64_t sk_parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    switch (*end) {
    case 'K':
    case 'k':
        v *= 1024;
        break;
    case 'M':
    case 'm':
        v *= WB_MIB;
        break;
    case 'G':
    case 'g':
        v *= WB_GIB;
        break;
    default:
        break;
    }
    return (uint64_t)v;
}

static const char *sk_env(const char *n, const char *def)
{
    const char *v = getenv(n);
    return v && *v ? v : def;
}

static json_t *sk_lat_merged(sk_client_t *cls, unsigned n, unsigned op)
{
    size_t tot = 0;
    for (unsigned i = 0; i < n; i++)
        tot += cls[i].lat[op].n;
    double *v = malloc((tot ? tot : 1) * sizeof *v);
    size_t k = 0;
    for (unsigned i = 0; i < n && v; i++) {
        if (cls[i].lat[op].n)
            memcpy(v + k, cls[i].lat[op].v, cls[i].lat[op].n * sizeof *v);
        k += cls[i].lat[op].n;
    }
    wb_lat_t l;
    wb_lat_stats(v, k, &l);
    free(v);
    return wb_lat_json(&l);
}

int main(int argc, char **argv)
{
    const char *role = NULL, *key = NULL;
    uint64_t child_size = 0;
    P = (sk_params_t){.region = "us-east-1",
                      .transports = "http,shm,tcp",
                      .duration = 600,
                      .warmup = -1,
                      .interval = 1,
                      .clients = 64,
                      .bad_clients = 10,
                      .keys_per_client = 8,
                      .op_timeout_ms = 120000,
                      .bad_sources = 1,
                      .max_size = 64 * WB_MIB,
                      .mem_budget = 2 * WB_GIB};
    P.ak = sk_env("WHARF_ACCESS_KEY", "wharfadmin");
    P.sk = sk_env("WHARF_SECRET_KEY", "wharfadmin-secret");
    P.unix_socket = sk_env("WHARF_UNIX_SOCKET", NULL);
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) {
            usage();
            return 2;
        }
#define OPT(name) (strcmp(a, name) == 0)
        if (OPT("--endpoint"))
            P.endpoint = v;
        else if (OPT("--access-key"))
            P.ak = v;
        else if (OPT("--secret-key"))
            P.sk = v;
        else if (OPT("--region"))
            P.region = v;
        else if (OPT("--unix-socket"))
            P.unix_socket = v;
        else if (OPT("--pid"))
            P.pid = atoi(v);
        else if (OPT("--duration"))
            P.duration = atof(v);
        else if (OPT("--warmup"))
            P.warmup = atof(v);
        else if (OPT("--interval"))
            P.interval = atof(v);
        else if (OPT("--clients"))
            P.clients = (unsigned)atoi(v);
        else if (OPT("--bad-clients"))
            P.bad_clients = (unsigned)atoi(v);
        else if (OPT("--transports"))
            P.transports = v;
        else if (OPT("--max-size"))
            P.max_size = sk_parse_size(v);
        else if (OPT("--mem-budget"))
            P.mem_budget = sk_parse_size(v);
        else if (OPT("--keys-per-client"))
            P.keys_per_client = (unsigned)atoi(v);
        else if (OPT("--think-ms"))
            P.think_ms = (unsigned)atoi(v);
        else if (OPT("--op-timeout-ms"))
            P.op_timeout_ms = (unsigned)atoi(v);
        else if (OPT("--bucket"))
            P.bucket = v;
        else if (OPT("--seed"))
            P.seed = strtoull(v, NULL, 0);
        else if (OPT("--out"))
            P.out = v;
        else if (OPT("--inject-wrong-byte"))
            P.inject_wrong = atoi(v);
        else if (OPT("--bad-sources"))
            P.bad_sources = atoi(v);
        else if (OPT("--bad-kinds"))
            P.bad_kinds = v;
        else if (OPT("--role"))
            role = v;
        else if (OPT("--key"))
            key = v;
        else if (OPT("--size"))
            child_size = strtoull(v, NULL, 0);
        else {
            usage();
            return 2;
        }
#undef OPT
    }
    if (!P.endpoint || sscanf(P.endpoint, "http://%255[^:/]:%d", P.host, &P.port) != 2) {
        usage();
        return 2;
    }
    unsigned kinds[SB_N], nkinds = 0;
    if (sk_bad_kinds(P.bad_kinds, kinds, &nkinds) != 0)
        return 2;
    if (role && !strcmp(role, "rdma-child"))
        return P.bucket && key ? sk_rdma_child(key, child_size, WB_MIN(P.duration, 600)) : 2;
    if (P.clients == 0 || P.clients > SK_MAX_CLIENTS || P.bad_clients > SK_MAX_BAD ||
        P.duration <= 0 || P.interval <= 0 || P.keys_per_client == 0 || P.keys_per_client > 64 ||
        P.mem_budget < 2 * P.max_size || P.max_size > 1 * WB_GIB) {
        fprintf(stderr,
                "soak: bad parameters (clients 1..%d, bad clients <= %d, keys per "
                "client 1..64, mem-budget >= 2 x max-size)\n",
                SK_MAX_CLIENTS, SK_MAX_BAD);
        usage();
        return 2;
    }
    if (P.warmup < 0)
        P.warmup = WB_MIN(60.0, P.duration / 5);
    if (!P.seed)
        P.seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    char bucket[32];
    if (!P.bucket) {
        snprintf(bucket, sizeof bucket, "soak-%08x", (unsigned)sk_mix(P.seed));
        P.bucket = bucket;
    }
    signal(SIGPIPE, SIG_IGN);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    g_err_classes = json_object();
    g_err_samples = json_array();
    g_wrong_samples = json_array();
    g_bad_outcomes = json_object();
    sk_keys_init();

    /* transports, round-robin over the well-behaved clients */
    const char *tnames[3];
    unsigned nt = 0;
    char tbuf[64];
    snprintf(tbuf, sizeof tbuf, "%s", P.transports);
    for (char *save = NULL, *t = strtok_r(tbuf, ",", &save); t && nt < 3;
         t = strtok_r(NULL, ",", &save))
        if (!strcmp(t, "http") || !strcmp(t, "shm") || !strcmp(t, "tcp"))
            tnames[nt++] = !strcmp(t, "http") ? "http" : !strcmp(t, "shm") ? "shm" : "tcp";
        else {
            fprintf(stderr, "soak: unknown transport '%s' (http, shm, tcp)\n", t);
            return 2;
        }
    if (nt == 0)
        return 2;
    sk_client_t *cls = calloc(P.clients, sizeof *cls);
    int setup_failed = 0;
    for (unsigned i = 0; i < P.clients && !setup_failed; i++) {
        sk_client_t *cl = &cls[i];
        cl->id = i;
        cl->rng = sk_mix(P.seed + i * 7919 + 1);
        cl->transport_name = tnames[i % nt];
        const char *prov = !strcmp(cl->transport_name, "shm")   ? "ofi+shm"
                           : !strcmp(cl->transport_name, "tcp") ? "ofi+tcp"
                                                                : "none";
        cl->transport = strcmp(prov, "none") ? WHARF_TRANSPORT_RDMA : WHARF_TRANSPORT_HTTP;
        if (!(cl->c = sk_new_client(prov, cl->init_err, sizeof cl->init_err))) {
            fprintf(stderr, "soak: %s\n", cl->init_err);
            setup_failed = 1;
        }
    }
    wharf_client_t *admin = NULL;
    char err[256] = "";
    if (!setup_failed && (admin = sk_new_client("none", err, sizeof err))) {
        wharf_status_t st = wharf_bucket_create(admin, P.bucket);
        if (st != WHARF_OK && st != WHARF_ERR_EXISTS) {
            fprintf(stderr, "soak: creating bucket %s: %s\n", P.bucket, wharf_last_error());
            setup_failed = 1;
        }
        /* the object the misbehaving readers pull on */
        g_big_size = WB_MIN(32 * WB_MIB, P.max_size);
        uint8_t *big = malloc(g_big_size);
        sk_fill(big, g_big_size, 42);
        if (!setup_failed &&
            wharf_object_put(admin, P.bucket, g_big_key, big, g_big_size, NULL, NULL)) {
            fprintf(stderr, "soak: PUT %s: %s\n", g_big_key, wharf_last_error());
            setup_failed = 1;
        }
        free(big);
    } else if (!setup_failed) {
        fprintf(stderr, "soak: %s\n", err);
        setup_failed = 1;
    }
    if (setup_failed)
        return 1;

    sk_bad_t *bads = calloc(P.bad_clients ? P.bad_clients : 1, sizeof *bads);
    g_t0 = wb_now();
    char started[32];
    wb_timestamp(started);
    pthread_t sampler;
    pthread_create(&sampler, NULL, sk_sampler_main, NULL);
    for (unsigned i = 0; i < P.clients; i++)
        pthread_create(&cls[i].th, NULL, sk_client_main, &cls[i]);
    for (unsigned i = 0; i < P.bad_clients; i++) {
        bads[i] =
            (sk_bad_t){.id = i, .kind = kinds[i % nkinds], .rng = sk_mix(P.seed ^ (i + 1000))};
        bads[i].c = sk_new_client("none", err, sizeof err);
        if (bads[i].c)
            pthread_create(&bads[i].th, NULL, sk_bad_main, &bads[i]);
    }
    while (wb_now() - g_t0 < P.duration)
        usleep(100000);
    atomic_store(&g_stop, 1);
    for (unsigned i = 0; i < P.bad_clients; i++)
        if (bads[i].c)
            pthread_join(bads[i].th, NULL);
    for (unsigned i = 0; i < P.clients; i++)
        pthread_join(cls[i].th, NULL);
    pthread_join(sampler, NULL);
    g_t_end = wb_now();

    /* the server must still be alive and healthy */
    int alive = 1;
    if (P.pid > 0)
        alive = kill(P.pid, 0) == 0;
    wharf_stat_t bs;
    wharf_stat_init(&bs, sizeof bs);
    int healthy = alive && wharf_object_stat(admin, P.bucket, g_big_key, &bs) == WHARF_OK &&
                  bs.length == g_big_size;

    json_t *root = json_object();
    json_object_set_new(root, "benchmark", json_string("soak"));
    json_object_set_new(root, "started", json_string(started));
    json_object_set_new(root, "environment", wb_env_json(P.transports));
    json_object_set_new(
        root, "parameters",
        json_pack("{s:s,s:f,s:f,s:f,s:i,s:i,s:s,s:I,s:I,s:i,s:i,s:i,s:b,s:s,s:I,s:i}", "endpoint",
                  P.endpoint, "duration_s", P.duration, "warmup_s", P.warmup, "interval_s",
                  P.interval, "clients", (int)P.clients, "bad_clients", (int)P.bad_clients,
                  "transports", P.transports, "max_object_bytes", (json_int_t)P.max_size,
                  "mem_budget_bytes", (json_int_t)P.mem_budget, "keys_per_client",
                  (int)P.keys_per_client, "think_ms", (int)P.think_ms, "op_timeout_ms",
                  (int)P.op_timeout_ms, "bad_sources", P.bad_sources, "bucket", P.bucket, "seed",
                  (json_int_t)P.seed, "server_pid", P.pid));
    json_object_set_new(json_object_get(root, "parameters"), "bad_kinds",
                        json_string(P.bad_kinds ? P.bad_kinds : "all"));
    json_t *ops = json_object(), *lat = json_object();
    uint64_t total_ops = 0;
    for (unsigned op = 0; op < SK_OP_N; op++) {
        uint64_t n = 0;
        for (unsigned i = 0; i < P.clients; i++)
            n += cls[i].ops[op];
        total_ops += n;
        json_object_set_new(ops, sk_op_name[op], json_integer((json_int_t)n));
        json_object_set_new(lat, sk_op_name[op], sk_lat_merged(cls, P.clients, op));
    }
    json_t *by_transport = json_object();
    for (unsigned t = 0; t < nt; t++) {
        uint64_t n = 0;
        for (unsigned i = 0; i < P.clients; i++)
            if (cls[i].transport_name == tnames[t])
                for (unsigned op = 0; op < SK_OP_N; op++)
                    n += cls[i].ops[op];
        json_object_set_new(by_transport, tnames[t], json_integer((json_int_t)n));
    }
    double wall = g_t_end - g_t0;
    uint64_t errors = atomic_load(&g_err_total), wrong = atomic_load(&g_wrong_bytes),
             wrong_obj = atomic_load(&g_wrong_objects);
    json_object_set_new(root, "ops", ops);
    json_object_set_new(root, "ops_by_transport", by_transport);
    json_object_set_new(root, "ops_total", json_integer((json_int_t)total_ops));
    json_object_set_new(root, "ops_per_s", json_real(wall > 0 ? (double)total_ops / wall : 0));
    json_object_set_new(root, "latency", lat);
    json_object_set_new(root, "wall_s", json_real(wall));
    json_object_set_new(root, "bytes_put", json_integer((json_int_t)atomic_load(&g_bytes_put)));
    json_object_set_new(root, "bytes_got", json_integer((json_int_t)atomic_load(&g_bytes_got)));
    json_object_set_new(root, "errors", json_integer((json_int_t)errors));
    json_object_set_new(root, "errors_by_class", g_err_classes);
    json_object_set_new(root, "error_samples", g_err_samples);
    json_object_set_new(root, "wrong_bytes", json_integer((json_int_t)wrong));
    json_object_set_new(root, "wrong_objects", json_integer((json_int_t)wrong_obj));
    json_object_set_new(root, "wrong_samples", g_wrong_samples);
    json_object_set_new(root, "busy_retries",
                        json_integer((json_int_t)atomic_load(&g_busy_retries)));
    json_object_set_new(root, "unchecked_reads",
                        json_integer((json_int_t)atomic_load(&g_unchecked_reads)));
    json_object_set_new(root, "bad_client_attempts",
                        json_integer((json_int_t)atomic_load(&g_bad_attempts)));
    json_object_set_new(root, "bad_client_outcomes", g_bad_outcomes);
    json_object_set_new(root, "client_mem_peak_bytes", json_integer((json_int_t)g_mem.peak));
    json_object_set_new(root, "server_alive_at_end", json_boolean(alive));
    json_object_set_new(root, "server_healthy_at_end", json_boolean(healthy));
    json_object_set_new(root, "registered_metric",
                        g_registered_metric[0] ? json_string(g_registered_metric) : json_null());
    json_t *samples = json_array();
    for (size_t i = 0; i < g_nsamples; i++) {
        const sk_sample_t *s = &g_samples[i];
        json_t *o = json_pack("{s:f,s:b,s:I,s:I,s:I}", "t_s", s->t, "alive", s->alive, "ops",
                              (json_int_t)s->ops, "errors", (json_int_t)s->errors, "wrong_bytes",
                              (json_int_t)s->wrong_bytes);
        if (s->alive) {
            json_object_set_new(o, "rss_bytes", json_integer((json_int_t)s->rss));
            json_object_set_new(o, "threads", json_integer((json_int_t)s->threads));
            json_object_set_new(o, "fds", json_integer((json_int_t)s->fds));
            json_object_set_new(o, "vm_lck_bytes", json_integer((json_int_t)s->vm_lck));
            json_object_set_new(o, "vm_pin_bytes", json_integer((json_int_t)s->vm_pin));
        }
        if (s->has_registered)
            json_object_set_new(o, "registered_bytes", json_integer((json_int_t)s->registered));
        if (s->metrics_ok)
            json_object_set_new(o, "inflight_requests", json_integer((json_int_t)s->inflight));
        if (s->has_pool)
            json_object_set_new(o, "rdma_pool_busy",
                                json_integer((json_int_t)(s->pool_total - s->pool_free)));
        if (s->has_pipelines)
            json_object_set_new(o, "rdma_pipelines_active", json_integer((json_int_t)s->pipelines));
        json_array_append_new(samples, o);
    }
    json_object_set_new(root, "samples", samples);
    json_t *trend = json_object();
    json_object_set_new(trend, "from_s", json_real(P.warmup));
    json_object_set_new(trend, "rss_mib", sk_fit(offsetof(sk_sample_t, rss), P.warmup, WB_MIB));
    json_object_set_new(trend, "fds", sk_fit(offsetof(sk_sample_t, fds), P.warmup, 1));
    json_object_set_new(trend, "threads", sk_fit(offsetof(sk_sample_t, threads), P.warmup, 1));
    json_object_set_new(trend, "vm_lck_mib",
                        sk_fit(offsetof(sk_sample_t, vm_lck), P.warmup, WB_MIB));
    json_object_set_new(root, "after_warmup", trend);
    int ok = errors == 0 && wrong == 0 && wrong_obj == 0 && alive && healthy;
    json_object_set_new(root, "ok", json_boolean(ok));
    if (P.out) {
        if (json_dump_file(root, P.out,
                           JSON_INDENT(1) | JSON_SORT_KEYS | JSON_REAL_PRECISION(10)) != 0)
            fprintf(stderr, "soak: cannot write %s\n", P.out);
    }
    fprintf(stderr,
            "soak: %.0f s, %" PRIu64 " ops (%.1f/s), errors %" PRIu64 ", wrong bytes %" PRIu64
            " in %" PRIu64 " objects, busy retries %llu, bad-client attempts %llu, server %s\n",
            wall, total_ops, wall > 0 ? (double)total_ops / wall : 0, errors, wrong, wrong_obj,
            (unsigned long long)atomic_load(&g_busy_retries),
            (unsigned long long)atomic_load(&g_bad_attempts),
            healthy ? "healthy"
            : alive ? "alive but not answering"
                    : "gone");
    json_decref(root);
    for (unsigned i = 0; i < P.clients; i++) {
        wharf_client_destroy(cls[i].c);
        for (unsigned op = 0; op < SK_OP_N; op++)
            free(cls[i].lat[op].v);
    }
    for (unsigned i = 0; i < P.bad_clients; i++)
        wharf_client_destroy(bads[i].c);
    wharf_client_destroy(admin);
    free(cls);
    free(bads);
    free(g_samples);
    curl_global_cleanup();
    return ok ? 0 : 1;
}
