/* SPDX-License-Identifier: Apache-2.0 */
/* The server's RDMA engine over src/shared/xfer: configuration, the providers and their endpoints,
 * token vetting, starting and ending one request's transfer, and the counters /metrics shows.
 * The buffer pool is rdma_pool.c, the GET pipeline rdma_get.c, PUT rdma_put.c.
 *
 * Peer binding (the data path is a security boundary): providers marked XFER_CAP_BOUND_PEER
 * (shm) are served only to requests that came over the Unix socket, where the kernel reports
 * the peer's pid and uid (SO_PEERCRED); the bytes then move by process_vm_writev/readv into
 * exactly that pid, and a token whose shm endpoint belongs to another process is refused (see
 * src/shared/xfer/cma.c for why libfabric's own shm initiator cannot be bound safely).
 * --shm-trust-local lifts this for trusted hosts. Network providers (XFER_CAP_NET_ADDR) must
 * name an endpoint at the HTTP peer's address. Providers and their names come from the xfer
 * provider table.
 *
 * Stalled clients: a transfer whose client stops acknowledging (a stopped tcp client) fails by
 * xfer's inactivity timeout (timeout_ms, 10 s by default) and ends with its ops in flight; its
 * buffers stay held while the ops might still drain. When they have not drained within
 * reap_ms (2 s), the provider's endpoint is replaced (rdma_drive, run by a reaper thread every
 * reap_ms / 4 and by requests waiting for buffers): new requests go to a fresh endpoint, and
 * the old one is closed once its last request has ended, which ends the stalled ops and gives
 * their buffers back. The bound: a stalled client's buffers are back at most timeout_ms +
 * reap_ms + 0.5 s after it stalled, plus however long a request that was already running on
 * the old endpoint still takes (at most timeout_ms once it stops progressing). Until then the
 * client holds at most its share of the pool (rdma_pool.c), and the stalled client itself is
 * served again, over a fresh connection, once it resumes. */
#include "engine/rdma_int.h"
#include "xfer/cuda.h"
#include "xfer/cuda_regcache.h"
#include "base/log.h"
#include "base/util.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define RDMA_POOL_WAIT_MS 5000

static const char *const g_decl_names[DECL_MAX] = {"bad_token", "dialect", "provider",
                                                   "size",      "peer",    "busy"};

void rdma_config_init(rdma_config_t *cfg)
{
    xfer_config_t xc;
    xfer_config_init(&xc); /* the transport defaults live in xfer */
    memset(cfg, 0, sizeof *cfg);
    cfg->providers = XFER_DEFAULT_SERVER_PROVIDERS;
    cfg->mem_budget = 0; /* sized from the host (rdma_pool.c) */
    cfg->chunk_size = xc.chunk_size;
    cfg->window = xc.window;
    cfg->max_peers = xc.max_peers;
    cfg->timeout_ms = xc.timeout_ms;
    cfg->reap_ms = xc.reap_ms;
    cfg->pool_wait_ms = RDMA_POOL_WAIT_MS;
}

void rdma_sync_init(rdma_t *r, pthread_mutex_t *m, pthread_cond_t *c)
{
    pthread_mutex_init(m, NULL);
    pthread_cond_init(c, NULL);
    atomic_fetch_add(&r->pipelines, 1);
}

void rdma_sync_destroy(rdma_t *r, pthread_mutex_t *m, pthread_cond_t *c)
{
    pthread_mutex_destroy(m);
    pthread_cond_destroy(c);
    atomic_fetch_sub(&r->pipelines, 1);
}

/* ---- endpoints -------------------------------------------------------------------------- */

static rdma_gen_t *rdma_gen_open(rdma_t *r, const xfer_provider_t *pv, char *err, size_t errlen)
{
    xfer_config_t xc;
    xfer_config_init(&xc);
    xc.provider = pv->name;
    xc.role = XFER_ROLE_SERVER;
    xc.chunk_size = r->cfg.chunk_size;
    xc.window = r->cfg.window;
    xc.max_peers = r->cfg.max_peers;
    xc.timeout_ms = r->cfg.timeout_ms;
    xc.reap_ms = r->cfg.reap_ms;
    xc.node = r->cfg.node;
    xc.pinned_budget = r->cfg.cuda_pinned;
    rdma_gen_t *g = calloc(1, sizeof *g);
    if (!g) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (xfer_open(&xc, &g->x, err, errlen) != WH_OK) {
        free(g);
        return NULL;
    }
    if (xfer_mr_reg(g->x, r->arena, r->arena_len, &g->mr) != WH_OK) {
        snprintf(err, errlen, "registering the buffer pool failed");
        xfer_close(g->x);
        free(g);
        return NULL;
    }
    return g;
}

/* Closing the transport ends whatever it still had in flight: the zombies' buffers come back
 * (their on_idle runs inside xfer_close). */
static void rdma_gen_close(rdma_gen_t *g)
{
    if (!g)
        return;
    xfer_mr_dereg(g->mr);
    xfer_close(g->x);
    free(g);
}

static rdma_gen_t *rdma_gen_acquire(rdma_prov_t *p)
{
    pthread_mutex_lock(&p->glock);
    rdma_gen_t *g = p->cur;
    if (g)
        g->active++;
    pthread_mutex_unlock(&p->glock);
    return g;
}

static void rdma_gen_release(rdma_prov_t *p, rdma_gen_t *g)
{
    if (!g)
        return;
    bool close = false;
    pthread_mutex_lock(&p->glock);
    g->active--;
    if (g->retired && g->active == 0) {
        rdma_gen_t **pp = &p->retired;
        while (*pp && *pp != g)
            pp = &(*pp)->next;
        if (*pp)
            *pp = g->next;
        p->nretired--;
        close = true;
    }
    pthread_mutex_unlock(&p->glock);
    if (close) {
        wh_info(MOD, "replaced rdma endpoint closed; stalled transfers ended provider=%s",
                p->short_name);
        rdma_gen_close(g);
    }
}

void rdma_drive(rdma_t *r, rdma_prov_t *p)
{
    rdma_gen_t *g = rdma_gen_acquire(p);
    if (!g)
        return;
    unsigned stalled = xfer_stalled(g->x); /* drives completions too */
    bool replace = false;
    if (stalled) {
        pthread_mutex_lock(&p->glock);
        replace = p->cur == g && p->nretired < RDMA_MAX_RETIRED;
        pthread_mutex_unlock(&p->glock);
    }
    rdma_gen_t *ng = NULL;
    char err[256] = "";
    if (replace && (ng = rdma_gen_open(r, p->info, err, sizeof err)) == NULL)
        wh_warn(MOD, "cannot open a replacement rdma endpoint provider=%s reason='%s'",
                p->short_name, err);
    if (ng) {
        pthread_mutex_lock(&p->glock);
        if (p->cur == g) {
            g->retired = true;
            g->next = p->retired;
            p->retired = g;
            p->nretired++;
            p->cur = ng;
            ng = NULL;
            atomic_fetch_add(&p->replacements, 1);
        }
        pthread_mutex_unlock(&p->glock);
        if (!ng)
            wh_warn(MOD,
                    "replacing rdma endpoint: %u ended transfers stalled with buffers held "
                    "(client stopped?); the old endpoint closes when its last request ends "
                    "provider=%s",
                    stalled, p->short_name);
        rdma_gen_close(ng); /* lost a race with another replacement */
    }
    rdma_gen_release(p, g); /* closes the old endpoint if nothing else uses it */
}

/* Every reap_ms / 4 (50..500 ms): stalled transfers' buffers come back in bounded time even
 * when no request arrives to notice them. */
static void *rdma_reaper_main(void *arg)
{
    rdma_t *r = arg;
    unsigned ms = WH_MIN(WH_MAX(r->cfg.reap_ms / 4, 50u), 500u);
    pthread_mutex_lock(&r->rlock);
    while (!r->stopping) {
        struct timespec ts;
        wh_deadline_ns(&ts, (uint64_t)ms * 1000000ULL);
        pthread_cond_timedwait(&r->rcond, &r->rlock, &ts);
        if (r->stopping)
            break;
        pthread_mutex_unlock(&r->rlock);
        for (unsigned i = 0; i < r->nprov; i++)
            rdma_drive(r, &r->prov[i]);
        pthread_mutex_lock(&r->rlock);
    }
    pthread_mutex_unlock(&r->rlock);
    return NULL;
}

/* ---- init / fini ----------------------------------------------------------------------- */

wh_status_t rdma_init(const rdma_config_t *cfg, rdma_t **out)
{
    wh_status_t st = WH_OK;
    rdma_t *r = calloc(1, sizeof *r);
    if (!r)
        return WH_ERR_NOMEM;
    r->cfg = *cfg;
    wh_crc64nvme_shift_init(&r->direct_shift, RDMA_DIRECT_WINDOW);
    /* Copy threads from the host: every online core (memory bandwidth, not one core's copy
     * rate, bounds the direct path), unless configured. */
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    r->copy_threads = cfg->copy_threads ? cfg->copy_threads : (unsigned)(ncpu > 0 ? ncpu : 2);
    if (r->copy_threads > RDMA_DIRECT_MAX_THREADS)
        r->copy_threads = RDMA_DIRECT_MAX_THREADS;
    r->put_threads = cfg->put_threads ? cfg->put_threads : RDMA_PUT_THREADS_DEFAULT;
    if (r->put_threads > r->copy_threads)
        r->put_threads = r->copy_threads;
    rdma_config_t def;
    rdma_config_init(&def);
    if (!r->cfg.chunk_size)
        r->cfg.chunk_size = def.chunk_size;
    if (!r->cfg.window)
        r->cfg.window = def.window;
    if (r->cfg.window > RDMA_MAX_SLOTS - 2)
        r->cfg.window = RDMA_MAX_SLOTS - 2;
    if (!r->cfg.max_peers)
        r->cfg.max_peers = def.max_peers;
    if (!r->cfg.timeout_ms)
        r->cfg.timeout_ms = def.timeout_ms;
    if (!r->cfg.reap_ms)
        r->cfg.reap_ms = def.reap_ms;
    if (!r->cfg.pool_wait_ms)
        r->cfg.pool_wait_ms = def.pool_wait_ms;
    pthread_mutex_init(&r->plock, NULL);
    pthread_cond_init(&r->pcond, NULL);
    pthread_mutex_init(&r->rlock, NULL);
    pthread_cond_init(&r->rcond, NULL);
    for (unsigned i = 0; i < RDMA_MAX_PROV; i++)
        pthread_mutex_init(&r->prov[i].glock, NULL);
    const char *list = cfg->providers ? cfg->providers : XFER_DEFAULT_SERVER_PROVIDERS;

    if (strcmp(list, "none") == 0 || list[0] == '\0') {
        wh_info(MOD, "rdma disabled providers=none");
        *out = r;
        return WH_OK;
    }

    /* The providers asked for, in the configured order (which is logged). */
    const xfer_provider_t *want[RDMA_MAX_PROV];
    unsigned nwant = 0;
    bool pins = false;
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        const xfer_provider_t *pv = xfer_provider_find(p, n);
        if (!pv) {
            char known[128];
            wh_error(MOD, "unknown rdma provider name='%.*s'", (int)n, p);
            fprintf(stderr,
                    "wharfd: unknown RDMA provider '%.*s' in --providers; known: %s "
                    "(or none)\n",
                    (int)n, p, xfer_provider_list(known, sizeof known, XFER_NAME_SHORT));
            st = WH_ERR_INVALID;
            goto err;
        }
        bool dup = false;
        for (unsigned i = 0; i < nwant; i++)
            dup |= want[i] == pv;
        if (!dup && nwant < RDMA_MAX_PROV) {
            want[nwant++] = pv;
            pins |= (pv->caps & XFER_CAP_PINS_MEMORY) != 0;
        }
        p = e ? e + 1 : p + n;
    }
    if ((st = rdma_pool_init(r, pins)) != WH_OK)
        goto err;
    for (unsigned i = 0; i < nwant; i++) {
        char err[256] = "";
        rdma_prov_t *rp = &r->prov[r->nprov];
        rdma_gen_t *g = rdma_gen_open(r, want[i], err, sizeof err);
        if (!g) {
            wh_warn(MOD, "rdma provider unavailable, not enabled provider=%s reason='%s'",
                    want[i]->name, err);
            continue;
        }
        rp->cur = g;
        rp->info = want[i];
        rp->short_name = want[i]->short_name;
        size_t l = strlen(r->enabled);
        snprintf(r->enabled + l, sizeof r->enabled - l, "%s%s", l ? "," : "", want[i]->short_name);
        r->nprov++;
    }
    if (r->nprov > 0 && pthread_create(&r->reaper, NULL, rdma_reaper_main, r) == 0)
        r->reaper_started = true;
    wh_info(MOD,
            "rdma ready providers=%s order=%s pool_buffers=%u chunk=%zu window=%u "
            "client_share=%u timeout_ms=%u reap_ms=%u shm_trust_local=%d",
            r->enabled[0] ? r->enabled : "none", list, r->nbuf, r->buf_len, r->cfg.window,
            r->peer_cap, r->cfg.timeout_ms, r->cfg.reap_ms, (int)r->cfg.shm_trust_local);
    *out = r;
    return WH_OK;

err:
    rdma_fini(r);
    return st;
}

void rdma_fini(rdma_t *r)
{
    if (!r)
        return;
    if (r->reaper_started) {
        pthread_mutex_lock(&r->rlock);
        r->stopping = true;
        pthread_cond_broadcast(&r->rcond);
        pthread_mutex_unlock(&r->rlock);
        pthread_join(r->reaper, NULL);
    }
    for (unsigned i = 0; i < r->nprov; i++) {
        rdma_prov_t *p = &r->prov[i];
        rdma_gen_close(p->cur);
        for (rdma_gen_t *g = p->retired, *n; g; g = n) {
            n = g->next;
            rdma_gen_close(g);
        }
    }
    for (unsigned i = 0; i < RDMA_MAX_PROV; i++)
        pthread_mutex_destroy(&r->prov[i].glock);
    rdma_pool_fini(r);
    pthread_mutex_destroy(&r->plock);
    pthread_cond_destroy(&r->pcond);
    pthread_mutex_destroy(&r->rlock);
    pthread_cond_destroy(&r->rcond);
    free(r);
}

/* ---- vetting --------------------------------------------------------------------------- */

void rdma_res_set(rdma_result_t *res, int http, const char *code, const char *fmt, ...)
{
    res->http_status = http;
    res->s3_code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(res->message, sizeof res->message, fmt, ap);
    va_end(ap);
}

bool rdma_decline(rdma_t *r, int reason, rdma_result_t *res)
{
    atomic_fetch_add(&r->declines[reason], 1);
    return false;
}

/* Vets the parsed token into t (t->tok, t->p); no endpoint reference yet. */
static bool rdma_vet_token(rdma_t *r, const xfer_token_arg_t *token, const wh_peer_t *peer,
                           uint64_t need, rdma_xfer_t *t, rdma_result_t *res)
{
    xfer_token_t *tok = &t->tok;
    memset(res, 0, sizeof *res);
    if (!token->str) {
        rdma_res_set(res, 400, "InvalidArgument", "x-amz-rdma-token: missing");
        return rdma_decline(r, DECL_TOKEN, res);
    }
    if (token->st == WH_ERR_UNSUPPORTED) {
        rdma_res_set(res, 501, "NotImplemented", "x-amz-rdma-token: %s", token->err);
        return rdma_decline(r, DECL_DIALECT, res);
    }
    if (token->st != WH_OK) {
        rdma_res_set(res, 400, "InvalidArgument", "x-amz-rdma-token: %s", token->err);
        return rdma_decline(r, DECL_TOKEN, res);
    }
    *tok = token->tok;
    if (tok->dialect == XFER_TOKEN_DIALECT_CUOBJ) {
        rdma_res_set(res, 501, "NotImplemented",
                     "no DC-capable provider is enabled (cuobj dialect needs one)");
        return rdma_decline(r, DECL_DIALECT, res);
    }
    rdma_prov_t *p = NULL;
    for (unsigned i = 0; i < r->nprov; i++)
        if (strcmp(r->prov[i].info->fabric, tok->provider) == 0)
            p = &r->prov[i];
    if (!p) {
        const char *w = xfer_wharf_name(tok->provider);
        char known[128];
        if (w)
            rdma_res_set(res, 501, "NotImplemented",
                         "RDMA provider '%s' (%s) is not enabled on this server (enabled: %s)", w,
                         tok->provider, r->enabled[0] ? r->enabled : "none");
        else
            rdma_res_set(res, 501, "NotImplemented",
                         "unknown RDMA provider '%s' (this server knows %s; enabled: %s)",
                         tok->provider, xfer_provider_list(known, sizeof known, XFER_NAME_FABRIC),
                         r->enabled[0] ? r->enabled : "none");
        return rdma_decline(r, DECL_PROVIDER, res);
    }
    if (tok->size < need) {
        rdma_res_set(res, 400, "InvalidArgument",
                     "token size 0x%" PRIx64 " is smaller than range length 0x%" PRIx64, tok->size,
                     need);
        return rdma_decline(r, DECL_SIZE, res);
    }
    if ((p->info->caps & XFER_CAP_BOUND_PEER) && !r->cfg.shm_trust_local &&
        (!peer || !peer->is_unix || peer->pid <= 0)) {
        rdma_res_set(res, 501, "NotImplemented",
                     "shm is served only to requests over the server's Unix socket, where the "
                     "kernel proves which process is asking; connect there, or start wharfd with "
                     "--shm-trust-local on a trusted host");
        return rdma_decline(r, DECL_PEER, res);
    }
    if ((p->info->caps & XFER_CAP_PEER_PID) && (!peer || !peer->is_unix || peer->pid <= 0)) {
        rdma_res_set(res, 501, "NotImplemented",
                     "GPU memory (cuda1 tokens) is served only to requests over the server's "
                     "Unix socket, where the kernel proves which process is asking; connect "
                     "there");
        return rdma_decline(r, DECL_PEER, res);
    }
    t->p = p;
    res->provider = p->short_name;
    return true;
}

bool rdma_check_tok(rdma_t *r, const xfer_token_arg_t *token, const wh_peer_t *peer, uint64_t need,
                    rdma_result_t *res)
{
    rdma_xfer_t t;
    memset(&t, 0, sizeof t);
    return rdma_vet_token(r, token, peer, need, &t, res);
}

bool rdma_check(rdma_t *r, const char *token, const wh_peer_t *peer, uint64_t need,
                rdma_result_t *res)
{
    xfer_token_arg_t a;
    xfer_token_arg_parse(&a, token);
    return rdma_check_tok(r, &a, peer, need, res);
}

wh_status_t rdma_get(rdma_t *r, const char *token, const wh_peer_t *peer, int fd, uint64_t off,
                     uint64_t len, rdma_result_t *res)
{
    xfer_token_arg_t a;
    xfer_token_arg_parse(&a, token);
    return rdma_get_tok(r, &a, peer, fd, off, len, res);
}

wh_status_t rdma_put(rdma_t *r, const char *token, const wh_peer_t *peer, rdma_sink_cb sink,
                     void *arg, rdma_result_t *res)
{
    xfer_token_arg_t a;
    xfer_token_arg_parse(&a, token);
    return rdma_put_tok(r, &a, peer, sink, arg, res);
}

bool rdma_vet(rdma_t *r, const xfer_token_arg_t *token, const wh_peer_t *peer, uint64_t need,
              rdma_xfer_t *t, rdma_result_t *res)
{
    memset(t, 0, sizeof *t);
    t->r = r;
    if (!rdma_vet_token(r, token, peer, need, t, res))
        return false;
    t->g = rdma_gen_acquire(t->p);
    if (!t->g) {
        rdma_res_set(res, 500, "InternalError", "RDMA provider %s has no endpoint",
                     t->p->short_name);
        return false;
    }
    return true;
}

wh_status_t rdma_begin(rdma_xfer_t *x, const wh_peer_t *peer, rdma_result_t *res)
{
    rdma_t *r = x->r;
    rdma_prov_t *p = x->p;
    xfer_target_t t;
    char err[200];
    memset(&t, 0, sizeof t);
    t.token = &x->tok;
    bool bound = (p->info->caps & XFER_CAP_BOUND_PEER) != 0;
    bool pid_only = (p->info->caps & XFER_CAP_PEER_PID) != 0;
    if (((bound && !r->cfg.shm_trust_local) || pid_only) && peer && peer->is_unix &&
        peer->pid > 0) {
        t.bind_pid = peer->pid;
        t.bind_uid = peer->uid;
        t.bind_start = peer->start;
    } else {
        t.bind_uid = (uid_t)-1;
    }
    /* A network token's endpoint must be the requester's host: its HTTP peer's address, or,
     * for a requester on the Unix socket (itokens with ADDR=unix alike), this host (loopback
     * or one of its own addresses), never an arbitrary address the server would dial. */
    if ((p->info->caps & XFER_CAP_NET_ADDR) && peer && !peer->is_unix && peer->addr[0])
        t.bind_host = peer->addr;
    else if ((p->info->caps & XFER_CAP_NET_ADDR) && peer && peer->is_unix)
        t.bind_host = "127.0.0.1";
    t.on_idle = rdma_late_release;
    t.on_idle_arg = x->late;
    wh_status_t st = xfer_batch_begin(x->g->x, &t, &x->b, err, sizeof err);
    if (st == WH_OK)
        return WH_OK;
    if (st == WH_ERR_AUTH) {
        rdma_res_set(res, 403, "AccessDenied", "x-amz-rdma-token: %s", err);
        rdma_decline(r, DECL_PEER, res);
    } else if (st == WH_ERR_INVALID) {
        rdma_res_set(res, 400, "InvalidArgument", "x-amz-rdma-token: %s", err);
        rdma_decline(r, DECL_TOKEN, res);
    } else if (st == WH_ERR_BUSY) {
        rdma_res_set(res, 503, "SlowDown", "%s", err);
        rdma_decline(r, DECL_BUSY, res);
    } else {
        rdma_res_set(res, 500, "InternalError", "RDMA setup failed: %s", err);
    }
    return st;
}

void rdma_end(rdma_xfer_t *t)
{
    /* With ops still in flight the buffers go back only when they drain or the endpoint is
     * closed: rdma_late_release runs then and frees late. */
    if (t->late && (!t->b || xfer_batch_end(t->b) == WH_OK))
        rdma_late_release(t->late);
    t->late = NULL;
    t->b = NULL;
    if (t->g)
        rdma_gen_release(t->p, t->g);
    t->g = NULL;
}

void rdma_fail_transfer(rdma_result_t *res, wh_status_t st, const char *why)
{
    if (st == WH_ERR_AUTH)
        rdma_res_set(res, 403, "AccessDenied", "RDMA transfer refused: %s", why);
    else
        rdma_res_set(res, st == WH_ERR_TIMEOUT ? 504 : 502, "InternalError",
                     "RDMA transfer failed: %s", why[0] ? why : wh_status_str(st));
}

/* ---- metrics --------------------------------------------------------------------------- */

void rdma_metrics(rdma_t *r, struct wh_sbuf *out)
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
        wh_sbuf_printf(out, "# HELP %s %s\n# TYPE %s counter\n", m[i].name, m[i].help, m[i].name);
        for (unsigned j = 0; r && j < r->nprov; j++) {
            atomic_uint_fast64_t *a = (atomic_uint_fast64_t *)((char *)&r->prov[j] + m[i].field);
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
    wh_sbuf_printf(out, "# HELP wharf_rdma_endpoint_replacements_total Endpoints replaced because "
                        "transfers of stalled clients held buffers.\n# TYPE "
                        "wharf_rdma_endpoint_replacements_total counter\n");
    for (unsigned j = 0; r && j < r->nprov; j++)
        wh_sbuf_printf(out, "wharf_rdma_endpoint_replacements_total{provider=\"%s\"} %" PRIu64 "\n",
                       r->prov[j].short_name, (uint64_t)atomic_load(&r->prov[j].replacements));
    unsigned total = 0, nfree = 0;
    if (r) {
        pthread_mutex_lock(&r->plock);
        total = r->nbuf;
        nfree = r->nfree;
        pthread_mutex_unlock(&r->plock);
    }
    wh_sbuf_printf(out,
                   "# HELP wharf_rdma_pool_buffers Registered RDMA buffers, all and free.\n"
                   "# TYPE wharf_rdma_pool_buffers gauge\n"
                   "wharf_rdma_pool_buffers{state=\"total\"} %u\n"
                   "wharf_rdma_pool_buffers{state=\"free\"} %u\n",
                   total, nfree);
    wh_sbuf_printf(out,
                   "# HELP wharf_rdma_get_read_bytes_total Bytes staged GETs read into "
                   "registered buffers, by source: the page cache, direct I/O (cold data, "
                   "O_DIRECT), or buffered reads.\n"
                   "# TYPE wharf_rdma_get_read_bytes_total counter\n"
                   "wharf_rdma_get_read_bytes_total{source=\"page_cache\"} %" PRIu64 "\n"
                   "wharf_rdma_get_read_bytes_total{source=\"direct_io\"} %" PRIu64 "\n"
                   "wharf_rdma_get_read_bytes_total{source=\"buffered\"} %" PRIu64 "\n",
                   r ? (uint64_t)atomic_load(&r->read_cached) : 0,
                   r ? (uint64_t)atomic_load(&r->read_direct_io) : 0,
                   r ? (uint64_t)atomic_load(&r->read_buffered) : 0);
    wh_sbuf_printf(out,
                   "# HELP wharf_rdma_put_positional_total RDMA PUTs whose bytes the direct "
                   "path's copy threads wrote at their offsets (the rest went in order).\n"
                   "# TYPE wharf_rdma_put_positional_total counter\n"
                   "wharf_rdma_put_positional_total{unit=\"requests\"} %" PRIu64 "\n"
                   "wharf_rdma_put_positional_total{unit=\"bytes\"} %" PRIu64 "\n"
                   "# HELP wharf_rdma_put_mapped_bytes_total Of those, RDMA PUTs whose bytes "
                   "the copy threads read straight into the mapped destination file.\n"
                   "# TYPE wharf_rdma_put_mapped_bytes_total counter\n"
                   "wharf_rdma_put_mapped_bytes_total{unit=\"requests\"} %" PRIu64 "\n"
                   "wharf_rdma_put_mapped_bytes_total{unit=\"bytes\"} %" PRIu64 "\n"
                   "# HELP wharf_rdma_put_threads Most copy threads one positional PUT uses "
                   "when it writes (a mapped one takes its share of the copy threads).\n"
                   "# TYPE wharf_rdma_put_threads gauge\nwharf_rdma_put_threads %u\n",
                   r ? (uint64_t)atomic_load(&r->put_at_ops) : 0,
                   r ? (uint64_t)atomic_load(&r->put_at_bytes) : 0,
                   r ? (uint64_t)atomic_load(&r->put_mapped_ops) : 0,
                   r ? (uint64_t)atomic_load(&r->put_mapped_bytes) : 0, r ? r->put_threads : 0);
    wh_sbuf_printf(out,
                   "# HELP wharf_rdma_put_striped_total Of the positional RDMA PUTs, those whose "
                   "bytes went into several files at once (--put-stripes), and their files.\n"
                   "# TYPE wharf_rdma_put_striped_total counter\n"
                   "wharf_rdma_put_striped_total{unit=\"requests\"} %" PRIu64 "\n"
                   "wharf_rdma_put_striped_total{unit=\"bytes\"} %" PRIu64 "\n"
                   "wharf_rdma_put_striped_total{unit=\"stripes\"} %" PRIu64 "\n"
                   "# HELP wharf_rdma_put_page_grouped_total Of the positional RDMA PUTs, those "
                   "written in whole large pages (a data directory on a tmpfs with huge pages).\n"
                   "# TYPE wharf_rdma_put_page_grouped_total counter\n"
                   "wharf_rdma_put_page_grouped_total{unit=\"requests\"} %" PRIu64 "\n"
                   "wharf_rdma_put_page_grouped_total{unit=\"bytes\"} %" PRIu64 "\n",
                   r ? (uint64_t)atomic_load(&r->put_striped_ops) : 0,
                   r ? (uint64_t)atomic_load(&r->put_striped_bytes) : 0,
                   r ? (uint64_t)atomic_load(&r->put_striped_files) : 0,
                   r ? (uint64_t)atomic_load(&r->put_paged_ops) : 0,
                   r ? (uint64_t)atomic_load(&r->put_paged_bytes) : 0);
    uint64_t pb = 0, pa = 0, pp = 0;
    cuda_staging_stats(&pb, &pa, &pp);
    wh_sbuf_printf(out,
                   "# HELP wharf_cuda_pinned_bytes Pinned host memory staging GPU copies "
                   "(cuda+ipc): the budget, what is allocated, the most in use at once.\n"
                   "# TYPE wharf_cuda_pinned_bytes gauge\n"
                   "wharf_cuda_pinned_bytes{state=\"budget\"} %" PRIu64 "\n"
                   "wharf_cuda_pinned_bytes{state=\"allocated\"} %" PRIu64 "\n"
                   "wharf_cuda_pinned_bytes{state=\"peak\"} %" PRIu64 "\n",
                   pb, pa, pp);
    cuda_regcache_stats_t rs;
    cuda_regcache_stats(&rs);
    wh_sbuf_printf(out,
                   "# HELP wharf_cuda_regcache_bytes Page-cache pages registered with the CUDA "
                   "driver for GETs into GPU memory: the budget, what is registered now.\n"
                   "# TYPE wharf_cuda_regcache_bytes gauge\n"
                   "wharf_cuda_regcache_bytes{state=\"budget\"} %" PRIu64 "\n"
                   "wharf_cuda_regcache_bytes{state=\"registered\"} %" PRIu64 "\n"
                   "# HELP wharf_cuda_regcache_files Data files whose pages are registered.\n"
                   "# TYPE wharf_cuda_regcache_files gauge\n"
                   "wharf_cuda_regcache_files %" PRIu64 "\n"
                   "# HELP wharf_cuda_regcache_events_total Windows served from registrations "
                   "already made (hit), chunks registered, files released, windows the cache "
                   "could not serve (fallback: read through the staging buffers).\n"
                   "# TYPE wharf_cuda_regcache_events_total counter\n"
                   "wharf_cuda_regcache_events_total{event=\"hit\"} %" PRIu64 "\n"
                   "wharf_cuda_regcache_events_total{event=\"register\"} %" PRIu64 "\n"
                   "wharf_cuda_regcache_events_total{event=\"release\"} %" PRIu64 "\n"
                   "wharf_cuda_regcache_events_total{event=\"fallback\"} %" PRIu64 "\n",
                   rs.budget, rs.registered, rs.files, rs.hits, rs.registers, rs.releases,
                   rs.fallbacks);
    wh_sbuf_printf(out,
                   "# HELP wharf_rdma_pipelines_active RDMA GET/PUT pipelines alive (0 when "
                   "no RDMA request is running).\n# TYPE wharf_rdma_pipelines_active gauge\n"
                   "wharf_rdma_pipelines_active %" PRIu64 "\n",
                   r ? (uint64_t)atomic_load(&r->pipelines) : 0);
    wh_sbuf_printf(out, "# HELP wharf_rdma_declines_total RDMA token requests refused before "
                        "any byte moved, by reason.\n# TYPE wharf_rdma_declines_total counter\n");
    for (int i = 0; i < DECL_MAX; i++)
        wh_sbuf_printf(out, "wharf_rdma_declines_total{reason=\"%s\"} %" PRIu64 "\n",
                       g_decl_names[i], r ? (uint64_t)atomic_load(&r->declines[i]) : 0);
}
