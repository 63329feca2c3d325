/* The server's RDMA engine over src/xfer: token vetting, a pool of registered buffers, the
 * GET pipeline (disk read of chunk k+1 overlaps the transfer of chunk k), PUT by chunked
 * reads, and the counters /metrics shows.
 *
 * Peer binding (the data path is a security boundary): providers marked XFER_CAP_BOUND_PEER
 * (shm) are served only to requests that came over the Unix socket, where the kernel reports
 * the peer's pid and uid (SO_PEERCRED); the bytes then move by process_vm_writev/readv into
 * exactly that pid, and a token whose shm endpoint belongs to another process is refused (see
 * src/xfer/cma.c for why libfabric's own shm initiator cannot be bound safely).
 * --shm-trust-local lifts this for trusted hosts. Network providers (XFER_CAP_NET_ADDR) must
 * name an endpoint at the HTTP peer's address. Providers and their names come from the xfer
 * provider table. */
#include "server/rdma.h"

#include "s3/errors.h"
#include "base/crc.h"
#include "base/log.h"
#include "base/util.h"
#include "xfer/token.h"
#include "xfer/xfer.h"

#include <unistd.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>

#define MOD "rdma"
#define RDMA_MAX_PROV 8
#define RDMA_MAX_SLOTS 64 /* xfer tags */
#define RDMA_POOL_WAIT_MS 5000
#define RDMA_DIRECT_WINDOW (8u << 20) /* bytes per mmap window on the direct path */
#define RDMA_DIRECT_MAX_THREADS 64    /* bound on copy threads per request */
#ifdef MADV_POPULATE_READ
#define RDMA_MADV_POPULATE_READ MADV_POPULATE_READ
#else
#define RDMA_MADV_POPULATE_READ 22 /* Linux 5.14; older kernels answer EINVAL: faults instead */
#endif

typedef struct rdma_prov {
    const xfer_provider_t *info; /* the xfer table's entry */
    const char *short_name;      /* "shm", "tcp" (metrics label, result->provider) */
    xfer_t *x;
    xfer_mr_t *mr; /* the whole pool arena */
    atomic_uint_fast64_t write_bytes, write_ops, read_bytes, read_ops, write_fail, read_fail;
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
static const char *const g_decl_names[DECL_MAX] = {"bad_token", "dialect",  "provider",
                                                   "size",      "peer",     "busy"};

struct srv_rdma {
    srv_rdma_config_t cfg;
    rdma_prov_t prov[RDMA_MAX_PROV];
    unsigned nprov;
    char enabled[96];

    /* pool: nbuf buffers of buf_len bytes in one prefaulted, registered arena */
    uint8_t *arena;
    size_t arena_len, buf_len;
    unsigned nbuf, nfree;
    unsigned *free_idx;
    pthread_mutex_t plock;
    pthread_cond_t pcond;

    atomic_uint_fast64_t declines[DECL_MAX];
    wh_crc64_shift_t direct_shift; /* combines per-window crcs of RDMA_DIRECT_WINDOW bytes */
    unsigned copy_threads;         /* direct-path copy threads shared by all requests */
    unsigned direct_active;        /* direct GETs in flight (atomic) */
};

void srv_rdma_config_init(srv_rdma_config_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    xfer_config_t xc;
    xfer_config_init(&xc); /* the transport defaults live in xfer */
    cfg->providers = XFER_DEFAULT_SERVER_PROVIDERS;
    cfg->mem_budget = 256ULL << 20;
    cfg->chunk_size = xc.chunk_size;
    cfg->window = xc.window;
    cfg->max_peers = xc.max_peers;
}

/* ---- pool ------------------------------------------------------------------------------ */

/* Takes between 1 and want buffers (all it can get up to want), waiting at most wait_ms for
 * at least one. Returns the count, 0 on timeout. */
static unsigned pool_take(srv_rdma_t *r, unsigned want, unsigned *idx, unsigned wait_ms)
{
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += wait_ms / 1000;
    dl.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
    if (dl.tv_nsec >= 1000000000L) {
        dl.tv_sec++;
        dl.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&r->plock);
    while (r->nfree == 0) {
        if (pthread_cond_timedwait(&r->pcond, &r->plock, &dl) == ETIMEDOUT && r->nfree == 0) {
            pthread_mutex_unlock(&r->plock);
            return 0;
        }
    }
    unsigned n = WH_MIN(want, r->nfree);
    for (unsigned i = 0; i < n; i++)
        idx[i] = r->free_idx[--r->nfree];
    pthread_mutex_unlock(&r->plock);
    return n;
}

static void pool_give(srv_rdma_t *r, const unsigned *idx, unsigned n)
{
    pthread_mutex_lock(&r->plock);
    for (unsigned i = 0; i < n; i++)
        r->free_idx[r->nfree++] = idx[i];
    pthread_cond_broadcast(&r->pcond);
    pthread_mutex_unlock(&r->plock);
}

static uint8_t *pool_buf(srv_rdma_t *r, unsigned i)
{
    return r->arena + (size_t)i * r->buf_len;
}

/* Buffers held by a batch that ended with ops in flight: released when they drain. */
typedef struct rdma_late {
    srv_rdma_t *r;
    unsigned n;
    unsigned idx[RDMA_MAX_SLOTS];
} rdma_late_t;

static void rdma_late_release(void *arg)
{
    rdma_late_t *l = arg;
    pool_give(l->r, l->idx, l->n);
    free(l);
}

/* ---- init / fini ----------------------------------------------------------------------- */

wh_status_t srv_rdma_init(const srv_rdma_config_t *cfg, srv_rdma_t **out)
{
    wh_status_t st = WH_OK;
    srv_rdma_t *r = calloc(1, sizeof *r);
    if (!r)
        return WH_ERR_NOMEM;
    r->cfg = *cfg;
    wh_crc64nvme_shift_init(&r->direct_shift, RDMA_DIRECT_WINDOW);
    xfer_config_t def;
    xfer_config_init(&def);
    /* Copy threads from the host: every online core (memory bandwidth, not one core's copy
     * rate, bounds the direct path), unless configured. */
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    r->copy_threads = cfg->copy_threads ? cfg->copy_threads : (unsigned)(ncpu > 0 ? ncpu : 2);
    if (r->copy_threads > RDMA_DIRECT_MAX_THREADS)
        r->copy_threads = RDMA_DIRECT_MAX_THREADS;
    if (!r->cfg.chunk_size)
        r->cfg.chunk_size = def.chunk_size;
    if (!r->cfg.window)
        r->cfg.window = def.window;
    if (r->cfg.window > RDMA_MAX_SLOTS - 2)
        r->cfg.window = RDMA_MAX_SLOTS - 2;
    if (!r->cfg.max_peers)
        r->cfg.max_peers = def.max_peers;
    pthread_mutex_init(&r->plock, NULL);
    pthread_cond_init(&r->pcond, NULL);
    const char *list = cfg->providers ? cfg->providers : XFER_DEFAULT_SERVER_PROVIDERS;

    if (strcmp(list, "none") == 0 || list[0] == '\0') {
        wh_info(MOD, "rdma disabled providers=none");
        *out = r;
        return WH_OK;
    }

    /* The pool: registered once, prefaulted (a fault costs ~12 us on these VMs). */
    r->buf_len = (size_t)r->cfg.chunk_size;
    r->nbuf = (unsigned)WH_MIN(r->cfg.mem_budget / r->buf_len, 4096);
    if (r->nbuf < 2) {
        wh_error(MOD, "rdma memory budget too small budget=%" PRIu64 " chunk=%zu",
                 r->cfg.mem_budget, r->buf_len);
        fprintf(stderr, "wharfd: --rdma-mem %" PRIu64 " is smaller than two chunks of %zu "
                        "bytes; raise it or use --providers none\n",
                r->cfg.mem_budget, r->buf_len);
        st = WH_ERR_INVALID;
        goto err;
    }
    r->arena_len = (size_t)r->nbuf * r->buf_len;
    r->arena = mmap(NULL, r->arena_len, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (r->arena == MAP_FAILED) {
        r->arena = NULL;
        wh_error(MOD, "cannot map rdma pool bytes=%zu err='%s'", r->arena_len, strerror(errno));
        st = WH_ERR_NOMEM;
        goto err;
    }
    for (size_t off = 0; off < r->arena_len; off += 4096)
        r->arena[off] = 0; /* MAP_POPULATE may be partial under pressure */
    r->free_idx = calloc(r->nbuf, sizeof *r->free_idx);
    if (!r->free_idx) {
        st = WH_ERR_NOMEM;
        goto err;
    }
    for (unsigned i = 0; i < r->nbuf; i++)
        r->free_idx[i] = r->nbuf - 1 - i;
    r->nfree = r->nbuf;

    /* Providers, in the configured order (which is logged). */
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        const xfer_provider_t *pv = xfer_provider_find(p, n);
        if (!pv) {
            char known[128];
            wh_error(MOD, "unknown rdma provider name='%.*s'", (int)n, p);
            fprintf(stderr, "wharfd: unknown RDMA provider '%.*s' in --providers; known: %s "
                            "(or none)\n",
                    (int)n, p, xfer_provider_list(known, sizeof known, XFER_NAME_SHORT));
            st = WH_ERR_INVALID;
            goto err;
        }
        bool dup = false;
        for (unsigned i = 0; i < r->nprov; i++)
            dup |= r->prov[i].info == pv;
        if (!dup && r->nprov < RDMA_MAX_PROV) {
            xfer_config_t xc;
            char err[256] = "";
            xfer_config_init(&xc);
            xc.provider = pv->name;
            xc.role = XFER_ROLE_SERVER;
            xc.chunk_size = r->cfg.chunk_size;
            xc.window = r->cfg.window;
            xc.max_peers = r->cfg.max_peers;
            xc.node = r->cfg.node;
            rdma_prov_t *rp = &r->prov[r->nprov];
            if (xfer_open(&xc, &rp->x, err, sizeof err) != WH_OK) {
                wh_warn(MOD, "rdma provider unavailable, not enabled provider=%s reason='%s'",
                        pv->name, err);
            } else if (xfer_mr_reg(rp->x, r->arena, r->arena_len, &rp->mr) != WH_OK) {
                wh_warn(MOD, "rdma pool registration failed, provider not enabled provider=%s",
                        pv->name);
                xfer_close(rp->x);
                rp->x = NULL;
            } else {
                rp->info = pv;
                rp->short_name = pv->short_name;
                size_t l = strlen(r->enabled);
                snprintf(r->enabled + l, sizeof r->enabled - l, "%s%s", l ? "," : "",
                         pv->short_name);
                r->nprov++;
            }
        }
        p = e ? e + 1 : p + n;
    }
    wh_info(MOD, "rdma ready providers=%s order=%s pool_buffers=%u chunk=%zu window=%u "
                 "shm_trust_local=%d",
            r->enabled[0] ? r->enabled : "none", list, r->nbuf, r->buf_len, r->cfg.window,
            (int)r->cfg.shm_trust_local);
    *out = r;
    return WH_OK;

err:
    srv_rdma_fini(r);
    return st;
}

void srv_rdma_fini(srv_rdma_t *r)
{
    if (!r)
        return;
    for (unsigned i = 0; i < r->nprov; i++) {
        xfer_mr_dereg(r->prov[i].mr);
        xfer_close(r->prov[i].x);
    }
    if (r->arena)
        munmap(r->arena, r->arena_len);
    free(r->free_idx);
    pthread_mutex_destroy(&r->plock);
    pthread_cond_destroy(&r->pcond);
    free(r);
}

/* ---- vetting --------------------------------------------------------------------------- */

static void res_set(srv_rdma_result_t *res, int http, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void res_set(srv_rdma_result_t *res, int http, const char *code, const char *fmt, ...)
{
    res->http_status = http;
    res->s3_code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(res->message, sizeof res->message, fmt, ap);
    va_end(ap);
}

static bool decline(srv_rdma_t *r, int reason, srv_rdma_result_t *res)
{
    atomic_fetch_add(&r->declines[reason], 1);
    return false;
}

/* Parses and vets; on success *tok and *prov are set. */
static bool rdma_vet(srv_rdma_t *r, const char *token, const srv_peer_t *peer, uint64_t need,
                     token_t *tok, rdma_prov_t **prov, srv_rdma_result_t *res)
{
    char err[200];
    memset(res, 0, sizeof *res);
    if (!token) {
        res_set(res, 400, "InvalidArgument", "x-amz-rdma-token: missing");
        return decline(r, DECL_TOKEN, res);
    }
    wh_status_t st = token_parse(token, strlen(token), tok, err, sizeof err);
    if (st == WH_ERR_UNSUPPORTED) {
        res_set(res, 501, "NotImplemented", "x-amz-rdma-token: %s", err);
        return decline(r, DECL_DIALECT, res);
    }
    if (st != WH_OK) {
        res_set(res, 400, "InvalidArgument", "x-amz-rdma-token: %s", err);
        return decline(r, DECL_TOKEN, res);
    }
    if (tok->dialect == TOKEN_DIALECT_CUOBJ) {
        res_set(res, 501, "NotImplemented",
                "no DC-capable provider is enabled (cuobj dialect needs one)");
        return decline(r, DECL_DIALECT, res);
    }
    rdma_prov_t *p = NULL;
    for (unsigned i = 0; i < r->nprov; i++)
        if (strcmp(xfer_fabric(r->prov[i].x), tok->provider) == 0)
            p = &r->prov[i];
    if (!p) {
        const char *w = xfer_wharf_name(tok->provider);
        char known[128];
        if (w)
            res_set(res, 501, "NotImplemented",
                    "RDMA provider '%s' (%s) is not enabled on this server (enabled: %s)", w,
                    tok->provider, r->enabled[0] ? r->enabled : "none");
        else
            res_set(res, 501, "NotImplemented",
                    "unknown RDMA provider '%s' (this server knows %s; enabled: %s)",
                    tok->provider, xfer_provider_list(known, sizeof known, XFER_NAME_FABRIC),
                    r->enabled[0] ? r->enabled : "none");
        return decline(r, DECL_PROVIDER, res);
    }
    if (tok->size < need) {
        res_set(res, 400, "InvalidArgument",
                "token size 0x%" PRIx64 " is smaller than range length 0x%" PRIx64, tok->size,
                need);
        return decline(r, DECL_SIZE, res);
    }
    if ((p->info->caps & XFER_CAP_BOUND_PEER) && !r->cfg.shm_trust_local &&
        (!peer || !peer->is_unix || peer->pid <= 0)) {
        res_set(res, 501, "NotImplemented",
                "shm is served only to requests over the server's Unix socket, where the "
                "kernel proves which process is asking; connect there, or start wharfd with "
                "--shm-trust-local on a trusted host");
        return decline(r, DECL_PEER, res);
    }
    if ((p->info->caps & XFER_CAP_PEER_PID) && (!peer || !peer->is_unix || peer->pid <= 0)) {
        res_set(res, 501, "NotImplemented",
                "GPU memory (cuda1 tokens) is served only to requests over the server's Unix "
                "socket, where the kernel proves which process is asking; connect there");
        return decline(r, DECL_PEER, res);
    }
    *prov = p;
    res->provider = p->short_name;
    return true;
}

bool srv_rdma_check(srv_rdma_t *r, const char *token, const srv_peer_t *peer, uint64_t need,
                    srv_rdma_result_t *res)
{
    token_t tok;
    rdma_prov_t *p;
    return rdma_vet(r, token, peer, need, &tok, &p, res);
}

/* Starts the xfer batch bound to the peer; maps failures to replies. */
static wh_status_t rdma_begin(srv_rdma_t *r, rdma_prov_t *p, const token_t *tok,
                              const srv_peer_t *peer, rdma_late_t *late, xfer_batch_t **b,
                              srv_rdma_result_t *res)
{
    xfer_target_t t;
    char err[200];
    memset(&t, 0, sizeof t);
    t.token = tok;
    bool bound = (p->info->caps & XFER_CAP_BOUND_PEER) != 0;
    bool pid_only = (p->info->caps & XFER_CAP_PEER_PID) != 0;
    if (((bound && !r->cfg.shm_trust_local) || pid_only) && peer && peer->is_unix &&
        peer->pid > 0) {
        t.bind_pid = peer->pid;
        t.bind_uid = peer->uid;
    } else {
        t.bind_uid = (uid_t)-1;
    }
    if ((p->info->caps & XFER_CAP_NET_ADDR) && peer && !peer->is_unix && peer->addr[0])
        t.bind_host = peer->addr;
    t.on_idle = rdma_late_release;
    t.on_idle_arg = late;
    wh_status_t st = xfer_batch_begin(p->x, &t, b, err, sizeof err);
    if (st == WH_OK)
        return WH_OK;
    if (st == WH_ERR_AUTH) {
        res_set(res, 403, "AccessDenied", "x-amz-rdma-token: %s", err);
        decline(r, DECL_PEER, res);
    } else if (st == WH_ERR_INVALID) {
        res_set(res, 400, "InvalidArgument", "x-amz-rdma-token: %s", err);
        decline(r, DECL_TOKEN, res);
    } else if (st == WH_ERR_BUSY) {
        res_set(res, 503, "SlowDown", "%s", err);
        decline(r, DECL_BUSY, res);
    } else {
        res_set(res, 500, "InternalError", "RDMA setup failed: %s", err);
    }
    return st;
}

/* Ends the batch; if ops are still in flight the buffers go back only when they drain. */
static void rdma_end(srv_rdma_t *r, xfer_batch_t *b, rdma_late_t *late)
{
    if (!b) {
        pool_give(r, late->idx, late->n);
        free(late);
        return;
    }
    if (xfer_batch_end(b) == WH_OK) {
        pool_give(r, late->idx, late->n);
        free(late);
    } /* else: rdma_late_release runs later and frees late */
}

static void rdma_fail_transfer(srv_rdma_result_t *res, wh_status_t st, const char *why)
{
    if (st == WH_ERR_AUTH)
        res_set(res, 403, "AccessDenied", "RDMA transfer refused: %s", why);
    else
        res_set(res, st == WH_ERR_TIMEOUT ? 504 : 502, "InternalError",
                "RDMA transfer failed: %s", why[0] ? why : wh_status_str(st));
}

/* ---- GET: disk reader thread + transfer on the request thread --------------------------- */

/* Fabric providers (staged): a reader thread preads chunk k+1 into a registered pool buffer
 * and computes the running crc64nvme while the bytes are cache-warm, so disk read and checksum
 * overlap the transfer of chunk k. Bound shm takes the direct path below instead (no staging
 * copy: an mmap of the object, copied straight from the page cache). */

enum { SLOT_EMPTY = 0, SLOT_FILLED, SLOT_SENT };

typedef struct get_pipe {
    int fd;
    uint64_t off, len, chunk;
    unsigned nslots;
    uint8_t *buf[RDMA_MAX_SLOTS];  /* pool buffers */
    int state[RDMA_MAX_SLOTS];
    size_t n[RDMA_MAX_SLOTS];
    uint64_t crc;  /* running crc64nvme of every chunk filled, in order */
    int read_err;  /* errno of a failed pread, or of the direct path's mmap */
    bool abort;
    pthread_mutex_t lock;
    pthread_cond_t cond;
} get_pipe_t;

/* Fills slot s with chunk k. Returns 0 or an errno. */
static int get_fill(get_pipe_t *g, unsigned s, uint64_t k)
{
    size_t n = (size_t)WH_MIN(g->chunk, g->len - k * g->chunk);
    uint64_t at = g->off + k * g->chunk;
    int rc = wh_pread_all(g->fd, g->buf[s], n, at);
    if (rc != 0)
        return -rc;
    g->crc = wh_crc64nvme(g->crc, g->buf[s], n);
    g->n[s] = n;
    return 0;
}

static void *get_reader(void *arg)
{
    get_pipe_t *g = arg;
    uint64_t nchunks = (g->len + g->chunk - 1) / g->chunk;
    for (uint64_t k = 0; k < nchunks; k++) {
        unsigned s = (unsigned)(k % g->nslots);
        pthread_mutex_lock(&g->lock);
        while (g->state[s] != SLOT_EMPTY && !g->abort)
            pthread_cond_wait(&g->cond, &g->lock);
        bool stop = g->abort;
        pthread_mutex_unlock(&g->lock);
        if (stop)
            break;
        int e = get_fill(g, s, k); /* g->crc is only touched by this thread while running */
        pthread_mutex_lock(&g->lock);
        if (e) {
            g->read_err = e;
            g->abort = true;
        } else {
            g->state[s] = SLOT_FILLED;
        }
        pthread_cond_broadcast(&g->cond);
        pthread_mutex_unlock(&g->lock);
        if (e)
            break;
    }
    return NULL;
}

/* Direct GET (bound shm, GPU memory): up to copy_threads workers, the request thread among
 * them, each take the next window of the object, map it (MAP_POPULATE), checksum it and copy
 * it into the client, so one request uses the cores the host gives it (a single stream was
 * capped by one thread's copy rate). The threads are shared out among the direct requests in
 * flight: a request gets copy_threads / active, at least one, at most one per window.
 * Per-window crcs are combined in order at the end with one precomputed shift operator. */
typedef struct get_direct {
    srv_rdma_t *r;
    xfer_batch_t *b;
    int fd;
    uint64_t off, len, nwin;
    uint64_t *crc;         /* per window */
    const uint8_t *map;    /* the whole range, mapped once (d->off is at map + delta) */
    uint64_t next;         /* next window to take (atomic) */
    int read_err;          /* first mmap errno (atomic, 0 = none) */
    wh_status_t st;        /* first transfer failure (atomic) */
} get_direct_t;

static void *get_direct_worker(void *arg)
{
    get_direct_t *d = arg;
    for (;;) {
        uint64_t k = __atomic_fetch_add(&d->next, 1, __ATOMIC_RELAXED);
        if (k >= d->nwin || __atomic_load_n(&d->read_err, __ATOMIC_RELAXED) ||
            __atomic_load_n(&d->st, __ATOMIC_RELAXED) != WH_OK)
            break;
        size_t n = (size_t)WH_MIN((uint64_t)RDMA_DIRECT_WINDOW, d->len - k * RDMA_DIRECT_WINDOW);
        const uint8_t *src = d->map + k * RDMA_DIRECT_WINDOW;
        /* Fault the window in here, in parallel with the other workers (one mapping for the
         * request: unmapping per window made every worker's munmap a TLB shootdown). */
        uintptr_t pa = (uintptr_t)src & ~(uintptr_t)4095;
        madvise((void *)pa, (uintptr_t)src + n - pa, RDMA_MADV_POPULATE_READ);
        /* A transport that checksums inside its copy saves a pass over memory (GPU memory:
         * the host's memory bandwidth, not a core, bounds the copy). */
        wh_status_t st = xfer_batch_post_crc(d->b, src, n, k * RDMA_DIRECT_WINDOW, &d->crc[k]);
        if (st == WH_ERR_UNSUPPORTED) {
            d->crc[k] = wh_crc64nvme(0, src, n);
            st = xfer_batch_post(d->b, XFER_OP_WRITE, NULL, (void *)(uintptr_t)src, n,
                                 k * RDMA_DIRECT_WINDOW, 0);
        }
        if (st != WH_OK) {
            wh_status_t ok = WH_OK;
            __atomic_compare_exchange_n(&d->st, &ok, st, false, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE);
            break;
        }
    }
    return NULL;
}

/* Runs the direct GET; fills *crc on success. Returns the first failure. */
static wh_status_t get_direct_run(srv_rdma_t *r, xfer_batch_t *b, int fd, uint64_t off,
                                  uint64_t len, uint64_t *crc, int *read_err)
{
    get_direct_t d = {.r = r, .b = b, .fd = fd, .off = off, .len = len};
    d.nwin = (len + RDMA_DIRECT_WINDOW - 1) / RDMA_DIRECT_WINDOW;
    struct stat sb;
    if (fstat(fd, &sb) != 0 || (uint64_t)sb.st_size < off + len) {
        *read_err = EIO;
        return WH_ERR_IO;
    }
    if (d.nwin == 0) {
        *crc = 0;
        return WH_OK;
    }
    d.crc = malloc(d.nwin * sizeof *d.crc);
    if (!d.crc)
        return WH_ERR_NOMEM;
    uint64_t aoff = off & ~(uint64_t)4095, delta = off - aoff;
    void *m = mmap(NULL, (size_t)(delta + len), PROT_READ, MAP_SHARED, fd, (off_t)aoff);
    if (m == MAP_FAILED) {
        *read_err = errno;
        free(d.crc);
        return WH_ERR_IO;
    }
    d.map = (const uint8_t *)m + delta;
    pthread_t th[RDMA_DIRECT_MAX_THREADS];
    unsigned nth = 0, active = __atomic_add_fetch(&r->direct_active, 1, __ATOMIC_ACQ_REL);
    unsigned want = r->copy_threads / active;
    if (want < 1)
        want = 1;
    for (unsigned i = 1; i < want && i < d.nwin; i++)
        if (pthread_create(&th[nth], NULL, get_direct_worker, &d) == 0)
            nth++;
    get_direct_worker(&d);
    for (unsigned i = 0; i < nth; i++)
        pthread_join(th[i], NULL);
    __atomic_sub_fetch(&r->direct_active, 1, __ATOMIC_ACQ_REL);
    munmap(m, (size_t)(delta + len));
    wh_status_t st = d.read_err ? WH_ERR_IO : d.st;
    *read_err = d.read_err;
    if (st == WH_OK) {
        uint64_t c = d.crc[0];
        for (uint64_t k = 1; k + 1 < d.nwin; k++)
            c = wh_crc64nvme_shift_combine(&r->direct_shift, c, d.crc[k]);
        if (d.nwin > 1)
            c = wh_crc64nvme_combine(c, d.crc[d.nwin - 1],
                                     len - (d.nwin - 1) * RDMA_DIRECT_WINDOW);
        *crc = c;
    }
    free(d.crc);
    return st;
}

wh_status_t srv_rdma_get(srv_rdma_t *r, const char *token, const srv_peer_t *peer, int fd,
                         uint64_t off, uint64_t len, srv_rdma_result_t *res)
{
    token_t tok;
    rdma_prov_t *p;
    xfer_batch_t *b = NULL;
    wh_status_t st = WH_OK;
    if (!rdma_vet(r, token, peer, len, &tok, &p, res))
        return res->http_status == 501 ? WH_ERR_DECLINED : WH_ERR_INVALID;

    rdma_late_t *late = calloc(1, sizeof *late);
    if (!late) {
        res_set(res, 500, "InternalError", "out of memory");
        return WH_ERR_NOMEM;
    }
    late->r = r;
    if ((st = rdma_begin(r, p, &tok, peer, late, &b, res)) != WH_OK) {
        rdma_end(r, NULL, late);
        return st;
    }

    get_pipe_t g;
    memset(&g, 0, sizeof g);
    g.fd = fd;
    g.off = off;
    g.len = len;
    pthread_mutex_init(&g.lock, NULL);
    pthread_cond_init(&g.cond, NULL);
    if (xfer_batch_direct(b)) {
        st = get_direct_run(r, b, fd, off, len, &g.crc, &g.read_err);
        goto done;
    }
    g.chunk = r->buf_len;
    uint64_t chunk = g.chunk, nchunks = (len + chunk - 1) / chunk;
    {
        unsigned want = (unsigned)WH_MIN(nchunks ? nchunks : 1, (uint64_t)r->cfg.window + 2);
        late->n = pool_take(r, want, late->idx, RDMA_POOL_WAIT_MS);
        if (late->n == 0) {
            rdma_end(r, b, late);
            res_set(res, 503, "SlowDown",
                    "all %u RDMA buffers are busy (--rdma-mem); retry later", r->nbuf);
            decline(r, DECL_BUSY, res);
            return WH_ERR_BUSY;
        }
        g.nslots = late->n;
        for (unsigned i = 0; i < g.nslots; i++)
            g.buf[i] = pool_buf(r, late->idx[i]);
    }

    pthread_t rd;
    bool threaded = nchunks > 1 && g.nslots > 1;
    if (threaded && pthread_create(&rd, NULL, get_reader, &g) != 0)
        threaded = false;
    if (!threaded)
        g.nslots = 1; /* fill, send, fill, send: correct, not overlapped */

    unsigned sent_q[RDMA_MAX_SLOTS], qh = 0, qn = 0; /* FIFO of SENT slots */
    for (uint64_t k = 0; k < nchunks && st == WH_OK; k++) {
        unsigned s = (unsigned)(k % g.nslots);
        if (!threaded) {
            int e = get_fill(&g, s, k);
            if (e) {
                g.read_err = e;
                st = WH_ERR_IO;
                break;
            }
        } else {
            pthread_mutex_lock(&g.lock);
            while (g.state[s] != SLOT_FILLED && !g.abort)
                pthread_cond_wait(&g.cond, &g.lock);
            bool ab = g.state[s] != SLOT_FILLED;
            pthread_mutex_unlock(&g.lock);
            if (ab) {
                st = WH_ERR_IO;
                break;
            }
        }
        st = xfer_batch_post(b, XFER_OP_WRITE, p->mr, g.buf[s], g.n[s], k * chunk, s);
        if (st != WH_OK)
            break;
        if (!threaded) {
            st = xfer_batch_wait(b, s); /* unthreaded: wait for this one */
            pthread_mutex_lock(&g.lock);
            g.state[s] = SLOT_EMPTY;
            pthread_cond_broadcast(&g.cond);
            pthread_mutex_unlock(&g.lock);
            continue;
        }
        pthread_mutex_lock(&g.lock);
        g.state[s] = SLOT_SENT;
        pthread_mutex_unlock(&g.lock);
        sent_q[(qh + qn++) % RDMA_MAX_SLOTS] = s;
        /* Keep one slot for the reader to fill while the others are in flight. */
        while (qn > 0 && qn + 1 >= g.nslots) {
            unsigned o = sent_q[qh];
            if ((st = xfer_batch_wait(b, o)) != WH_OK)
                break;
            qh = (qh + 1) % RDMA_MAX_SLOTS;
            qn--;
            pthread_mutex_lock(&g.lock);
            g.state[o] = SLOT_EMPTY;
            pthread_cond_broadcast(&g.cond);
            pthread_mutex_unlock(&g.lock);
        }
    }
    if (st == WH_OK)
        st = xfer_batch_wait(b, XFER_TAG_ALL);
    if (threaded) {
        pthread_mutex_lock(&g.lock);
        g.abort = true;
        pthread_cond_broadcast(&g.cond);
        pthread_mutex_unlock(&g.lock);
        pthread_join(rd, NULL);
    }
done:;
    uint64_t moved = xfer_batch_bytes(b);
    if (st == WH_OK && moved == len) {
        res->http_status = 200;
        res->bytes = moved;
        res->crc64nvme = g.crc;
        atomic_fetch_add(&p->write_bytes, moved);
        atomic_fetch_add(&p->write_ops, 1);
    } else {
        if (g.read_err) {
            res_set(res, 500, "InternalError", "reading the object failed: %s",
                    strerror(g.read_err));
            st = WH_ERR_IO;
        } else {
            rdma_fail_transfer(res, st == WH_OK ? WH_ERR_TRANSPORT : st, xfer_batch_error(b));
            if (st == WH_OK)
                st = WH_ERR_TRANSPORT;
        }
        res->bytes = moved;
        atomic_fetch_add(&p->write_fail, 1);
        wh_warn(MOD, "rdma get failed provider=%s moved=%" PRIu64 " of=%" PRIu64 " reason='%s'",
                p->short_name, moved, len, res->message);
    }
    rdma_end(r, b, late);
    pthread_mutex_destroy(&g.lock);
    pthread_cond_destroy(&g.cond);
    return st;
}

/* ---- PUT: chunked reads, sunk in order ------------------------------------------------- */

/* Bound shm (direct) PUT: posts are synchronous copies, so a reader thread pulls chunk k+1
 * from the client (process_vm_readv into a pool buffer) while the request thread checksums and
 * sinks chunk k into the store; without it the two alternated on one core. */
typedef struct put_direct {
    srv_rdma_t *r;
    rdma_prov_t *p;
    xfer_batch_t *b;
    const rdma_late_t *late;
    uint64_t len, chunk, nchunks;
    unsigned nslots;
    bool filled[RDMA_MAX_SLOTS];
    wh_status_t st; /* the reader's failure */
    bool abort;
    pthread_mutex_t lock;
    pthread_cond_t cond;
} put_direct_t;

static void *put_direct_reader(void *arg)
{
    put_direct_t *d = arg;
    for (uint64_t k = 0; k < d->nchunks; k++) {
        unsigned s = (unsigned)(k % d->nslots);
        pthread_mutex_lock(&d->lock);
        while (d->filled[s] && !d->abort)
            pthread_cond_wait(&d->cond, &d->lock);
        bool stop = d->abort;
        pthread_mutex_unlock(&d->lock);
        if (stop)
            break;
        size_t n = (size_t)WH_MIN(d->chunk, d->len - k * d->chunk);
        wh_status_t st = xfer_batch_post(d->b, XFER_OP_READ, d->p->mr,
                                         pool_buf(d->r, d->late->idx[s]), n, k * d->chunk, s);
        pthread_mutex_lock(&d->lock);
        if (st != WH_OK) {
            d->st = st;
            d->abort = true;
        } else {
            d->filled[s] = true;
        }
        pthread_cond_broadcast(&d->cond);
        pthread_mutex_unlock(&d->lock);
        if (st != WH_OK)
            break;
    }
    return NULL;
}

/* Returns the first failure; *crc and *sunk describe what reached the sink. */
static wh_status_t put_direct_run(put_direct_t *d, srv_rdma_sink_cb sink, void *arg,
                                  uint64_t *crc, uint64_t *sunk, wh_status_t *sink_st)
{
    pthread_t th;
    wh_status_t st = WH_OK;
    pthread_mutex_init(&d->lock, NULL);
    pthread_cond_init(&d->cond, NULL);
    if (pthread_create(&th, NULL, put_direct_reader, d) != 0) {
        pthread_mutex_destroy(&d->lock);
        pthread_cond_destroy(&d->cond);
        return WH_ERR_NOMEM;
    }
    for (uint64_t k = 0; k < d->nchunks; k++) {
        unsigned s = (unsigned)(k % d->nslots);
        pthread_mutex_lock(&d->lock);
        while (!d->filled[s] && !d->abort)
            pthread_cond_wait(&d->cond, &d->lock);
        bool ok = d->filled[s];
        pthread_mutex_unlock(&d->lock);
        if (!ok)
            break;
        size_t n = (size_t)WH_MIN(d->chunk, d->len - k * d->chunk);
        const uint8_t *q = pool_buf(d->r, d->late->idx[s]);
        *crc = wh_crc64nvme(*crc, q, n);
        if ((*sink_st = sink(arg, q, n)) != WH_OK) {
            st = *sink_st;
            break;
        }
        *sunk += n;
        pthread_mutex_lock(&d->lock);
        d->filled[s] = false;
        pthread_cond_broadcast(&d->cond);
        pthread_mutex_unlock(&d->lock);
    }
    pthread_mutex_lock(&d->lock);
    d->abort = true;
    pthread_cond_broadcast(&d->cond);
    pthread_mutex_unlock(&d->lock);
    pthread_join(th, NULL);
    if (st == WH_OK)
        st = d->st;
    pthread_mutex_destroy(&d->lock);
    pthread_cond_destroy(&d->cond);
    return st;
}

wh_status_t srv_rdma_put(srv_rdma_t *r, const char *token, const srv_peer_t *peer,
                         srv_rdma_sink_cb sink, void *arg, srv_rdma_result_t *res)
{
    token_t tok;
    rdma_prov_t *p;
    xfer_batch_t *b = NULL;
    wh_status_t st = WH_OK;
    if (!rdma_vet(r, token, peer, 0, &tok, &p, res))
        return res->http_status == 501 ? WH_ERR_DECLINED : WH_ERR_INVALID;

    uint64_t len = tok.size, chunk = r->buf_len;
    uint64_t nchunks = (len + chunk - 1) / chunk;
    unsigned want = (unsigned)WH_MIN(nchunks ? nchunks : 1, (uint64_t)r->cfg.window + 1);
    rdma_late_t *late = calloc(1, sizeof *late);
    if (!late) {
        res_set(res, 500, "InternalError", "out of memory");
        return WH_ERR_NOMEM;
    }
    late->r = r;
    late->n = pool_take(r, want, late->idx, RDMA_POOL_WAIT_MS);
    if (late->n == 0) {
        free(late);
        res_set(res, 503, "SlowDown",
                "all %u RDMA buffers are busy (--rdma-mem); retry later", r->nbuf);
        decline(r, DECL_BUSY, res);
        return WH_ERR_BUSY;
    }
    if ((st = rdma_begin(r, p, &tok, peer, late, &b, res)) != WH_OK) {
        rdma_end(r, NULL, late);
        return st;
    }
    unsigned nslots = late->n;
    uint64_t crc = 0, sunk = 0, next_sink = 0;
    wh_status_t sink_st = WH_OK;
    if (xfer_batch_direct(b) && nchunks > 1 && nslots > 1) {
        put_direct_t d = {.r = r, .p = p, .b = b, .late = late, .len = len, .chunk = chunk,
                          .nchunks = nchunks, .nslots = nslots};
        st = put_direct_run(&d, sink, arg, &crc, &sunk, &sink_st);
        next_sink = nchunks; /* skip the loop below */
        nchunks = 0;
    }
    /* Post reads for chunks [next_sink, next_sink + nslots) ahead; sink the oldest in order. */
    for (uint64_t k = 0; k < nchunks || next_sink < nchunks;) {
        if (k < nchunks && k - next_sink < nslots) {
            unsigned s = (unsigned)(k % nslots);
            size_t n = (size_t)WH_MIN(chunk, len - k * chunk);
            if ((st = xfer_batch_post(b, XFER_OP_READ, p->mr, pool_buf(r, late->idx[s]), n,
                                      k * chunk, s)) != WH_OK)
                break;
            k++;
            continue;
        }
        unsigned s = (unsigned)(next_sink % nslots);
        size_t n = (size_t)WH_MIN(chunk, len - next_sink * chunk);
        if ((st = xfer_batch_wait(b, s)) != WH_OK)
            break;
        const uint8_t *q = pool_buf(r, late->idx[s]);
        crc = wh_crc64nvme(crc, q, n);
        if ((sink_st = sink(arg, q, n)) != WH_OK) {
            st = sink_st;
            break;
        }
        sunk += n;
        next_sink++;
    }
    if (st == WH_OK && sunk == len) {
        res->http_status = 200;
        res->bytes = sunk;
        res->crc64nvme = crc;
        atomic_fetch_add(&p->read_bytes, sunk);
        atomic_fetch_add(&p->read_ops, 1);
    } else {
        if (sink_st != WH_OK)
            res_set(res, s3_err_http_status(s3_err_from_status(sink_st)),
                    s3_err_code(s3_err_from_status(sink_st)), "storing the object failed: %s",
                    wh_status_str(sink_st));
        else
            rdma_fail_transfer(res, st == WH_OK ? WH_ERR_TRANSPORT : st, xfer_batch_error(b));
        if (st == WH_OK)
            st = WH_ERR_TRANSPORT;
        res->bytes = sunk;
        atomic_fetch_add(&p->read_fail, 1);
        wh_warn(MOD, "rdma put failed provider=%s stored=%" PRIu64 " of=%" PRIu64 " reason='%s'",
                p->short_name, sunk, len, res->message);
    }
    rdma_end(r, b, late);
    return st;
}

/* ---- metrics --------------------------------------------------------------------------- */

void srv_rdma_metrics(srv_rdma_t *r, struct wh_sbuf *out)
{
    static const struct {
        const char *name, *help;
        size_t field;
    } m[] = {
        /* Direction as for HTTP and MinIO: read = served by GET, write = received by PUT. */
        {"wharf_rdma_read_bytes_total", "Bytes served by RDMA GET (written into client memory).",
         offsetof(rdma_prov_t, write_bytes)},
        {"wharf_rdma_read_ops_total", "RDMA GET requests served.",
         offsetof(rdma_prov_t, write_ops)},
        {"wharf_rdma_write_bytes_total",
         "Bytes received by RDMA PUT/UploadPart (read from client memory).",
         offsetof(rdma_prov_t, read_bytes)},
        {"wharf_rdma_write_ops_total", "RDMA PUT/UploadPart requests served.",
         offsetof(rdma_prov_t, read_ops)},
        {"wharf_rdma_read_failures_total", "RDMA GET transfers that failed after starting.",
         offsetof(rdma_prov_t, write_fail)},
        {"wharf_rdma_write_failures_total", "RDMA PUT transfers that failed after starting.",
         offsetof(rdma_prov_t, read_fail)},
    };
    uint64_t tot[WH_ARRAY_SIZE(m)];
    memset(tot, 0, sizeof tot);
    for (size_t i = 0; i < WH_ARRAY_SIZE(m); i++) {
        wh_sbuf_printf(out, "# HELP %s %s\n# TYPE %s counter\n", m[i].name, m[i].help,
                       m[i].name);
        for (unsigned j = 0; r && j < r->nprov; j++) {
            atomic_uint_fast64_t *a =
                (atomic_uint_fast64_t *)((char *)&r->prov[j] + m[i].field);
            uint64_t v = atomic_load(a);
            tot[i] += v;
            wh_sbuf_printf(out, "%s{provider=\"%s\"} %" PRIu64 "\n", m[i].name,
                           r->prov[j].short_name, v);
        }
    }
    /* MinIO's names, as its witness scripts read them: "read" = bytes served by GET. */
    static const struct {
        const char *name;
        size_t src;
    } mm[] = {
        {"minio_api_rdma_read_bytes_total", 0},
        {"minio_api_rdma_read_ops_total", 1},
        {"minio_api_rdma_write_bytes_total", 2},
        {"minio_api_rdma_write_ops_total", 3},
    };
    for (size_t i = 0; i < WH_ARRAY_SIZE(mm); i++)
        wh_sbuf_printf(out, "# TYPE %s counter\n%s %" PRIu64 "\n", mm[i].name, mm[i].name,
                       tot[mm[i].src]);
    wh_sbuf_printf(out, "# HELP wharf_rdma_declines_total RDMA token requests refused before "
                        "any byte moved, by reason.\n# TYPE wharf_rdma_declines_total counter\n");
    for (int i = 0; i < DECL_MAX; i++)
        wh_sbuf_printf(out, "wharf_rdma_declines_total{reason=\"%s\"} %" PRIu64 "\n",
                       g_decl_names[i], r ? (uint64_t)atomic_load(&r->declines[i]) : 0);
}
