/* SPDX-License-Identifier: Apache-2.0 */
/* libwharf: the client object, configuration, errors, counters, and fork handling. */
#include "client/client_int.h"

#include "base/defaults.h"
#include "base/log.h"
#include "wharf_version.h"

#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* The public status enum is the internal one, value for value. */
_Static_assert((int)WHARF_OK == (int)WH_OK, "status OK");
_Static_assert((int)WHARF_ERR_INVALID == (int)WH_ERR_INVALID, "status INVALID");
_Static_assert((int)WHARF_ERR_NOMEM == (int)WH_ERR_NOMEM, "status NOMEM");
_Static_assert((int)WHARF_ERR_IO == (int)WH_ERR_IO, "status IO");
_Static_assert((int)WHARF_ERR_NOT_FOUND == (int)WH_ERR_NOT_FOUND, "status NOT_FOUND");
_Static_assert((int)WHARF_ERR_EXISTS == (int)WH_ERR_EXISTS, "status EXISTS");
_Static_assert((int)WHARF_ERR_UNSUPPORTED == (int)WH_ERR_UNSUPPORTED, "status UNSUPPORTED");
_Static_assert((int)WHARF_ERR_DECLINED == (int)WH_ERR_DECLINED, "status DECLINED");
_Static_assert((int)WHARF_ERR_AUTH == (int)WH_ERR_AUTH, "status AUTH");
_Static_assert((int)WHARF_ERR_TIMEOUT == (int)WH_ERR_TIMEOUT, "status TIMEOUT");
_Static_assert((int)WHARF_ERR_TRANSPORT == (int)WH_ERR_TRANSPORT, "status TRANSPORT");
_Static_assert((int)WHARF_ERR_CHECKSUM == (int)WH_ERR_CHECKSUM, "status CHECKSUM");
_Static_assert((int)WHARF_ERR_PROTOCOL == (int)WH_ERR_PROTOCOL, "status PROTOCOL");
_Static_assert((int)WHARF_ERR_HTTP == (int)WH_ERR_HTTP, "status HTTP");
_Static_assert((int)WHARF_ERR_BUSY == (int)WH_ERR_BUSY, "status BUSY");
_Static_assert((int)WHARF_ERR_RANGE == (int)WH_ERR_RANGE, "status RANGE");
_Static_assert((int)WHARF_ERR_TOO_LARGE == (int)WH_ERR_TOO_LARGE, "status TOO_LARGE");
_Static_assert((int)WHARF_ERR_NOT_EMPTY == (int)WH_ERR_NOT_EMPTY, "status NOT_EMPTY");
_Static_assert((int)WHARF_ERR_CANCELED == (int)WH_ERR_CANCELED, "status CANCELED");
_Static_assert((int)WHARF_ERR_PRECONDITION == (int)WH_ERR_PRECONDITION, "status PRECONDITION");
_Static_assert((int)WHARF_ERR_INTERNAL == (int)WH_ERR_INTERNAL, "status INTERNAL");

#define MOD "client"

/* ---- errors ----------------------------------------------------------------------------- */

static __thread char wc_errbuf[WC_ERR_LEN];

void wc_set_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(wc_errbuf, sizeof wc_errbuf, fmt, ap);
    va_end(ap);
    wh_debug(MOD, "error msg=\"%s\"", wc_errbuf);
}

void wc_clear_error(void)
{
    wc_errbuf[0] = '\0';
}

const char *wc_get_error(void)
{
    return wc_errbuf;
}

WHARF_API const char *wharf_status_str(wharf_status_t st)
{
    return wh_status_str((wh_status_t)st);
}

WHARF_API const char *wharf_last_error(void)
{
    return wc_errbuf;
}

WHARF_API const char *wharf_version(void)
{
    return WH_VERSION;
}

/* ---- struct helpers --------------------------------------------------------------------- */

void wc_copy_out(void *dst, const void *src, size_t full_size)
{
    size_t n;
    memcpy(&n, dst, sizeof n);
    if (n > full_size)
        n = full_size;
    if (n <= sizeof(size_t))
        return;
    memcpy((char *)dst + sizeof(size_t), (const char *)src + sizeof(size_t), n - sizeof(size_t));
}

/* Copies the caller's struct (of its own size) over defaults in full. */
static void copy_in(void *full, const void *src, size_t full_size)
{
    size_t n;
    memcpy(&n, src, sizeof n);
    if (n > full_size)
        n = full_size;
    if (n <= sizeof(size_t))
        return;
    memcpy((char *)full + sizeof(size_t), (const char *)src + sizeof(size_t), n - sizeof(size_t));
}

int64_t wc_parse_iso8601(const char *s)
{
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    int y, mo, d, h, mi, sec;
    if (!s || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d", &y, &mo, &d, &h, &mi, &sec) != 6)
        return 0;
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = sec;
    return (int64_t)timegm(&tm);
}

WHARF_API void wharf_client_config_init(wharf_client_config_t *cfg, size_t size)
{
    if (!cfg || size < sizeof(size_t))
        return;
    wharf_client_config_t d;
    memset(&d, 0, sizeof d);
    d.size = size;
    d.region = WH_DEFAULT_REGION;
    d.concurrency = WH_DEFAULT_CLIENT_CONCURRENCY;
    d.chunk_size = WH_DEFAULT_CLIENT_CHUNK;
    d.multipart_threshold = WH_DEFAULT_MULTIPART_THRESHOLD;
    d.part_size = WH_DEFAULT_PART_SIZE;
    d.fallback = WHARF_FALLBACK_FAIL;
    d.verify_checksum = 1;
    d.timeout_ms = 0; /* no bound on a whole request: the stall bound catches a dead peer */
    d.stall_timeout_ms = WC_DEFAULT_STALL_MS;
    d.max_retries = 2;
    memcpy(cfg, &d, WH_MIN(size, sizeof d));
    cfg->size = size;
}

WHARF_API void wharf_report_init(wharf_report_t *r, size_t size)
{
    if (!r || size < sizeof(size_t))
        return;
    memset(r, 0, size);
    r->size = size;
    if (size >= offsetof(wharf_report_t, transport) + sizeof r->transport)
        r->transport = WHARF_TRANSPORT_NONE;
}

WHARF_API void wharf_xfer_opts_init(wharf_xfer_opts_t *o, size_t size)
{
    if (!o || size < sizeof(size_t))
        return;
    wharf_xfer_opts_t d;
    memset(&d, 0, sizeof d);
    d.size = size;
    d.transport = WHARF_TRANSPORT_AUTO;
    d.verify_checksum = -1;
    d.concurrency = 0;
    memcpy(o, &d, WH_MIN(size, sizeof d));
    o->size = size;
}

WHARF_API void wharf_stat_init(wharf_stat_t *s, size_t size)
{
    if (!s || size < sizeof(size_t))
        return;
    memset(s, 0, size);
    s->size = size;
}

WHARF_API void wharf_stats_init(wharf_stats_t *s, size_t size)
{
    if (!s || size < sizeof(size_t))
        return;
    memset(s, 0, size);
    s->size = size;
}

/* ---- connections ------------------------------------------------------------------------ */

wc_conn_t *wc_conn_new(void)
{
    wc_conn_t *conn = calloc(1, sizeof *conn);
    if (!conn)
        return NULL;
    conn->easy = curl_easy_init();
    if (!conn->easy) {
        free(conn);
        return NULL;
    }
    return conn;
}

void wc_conn_free(wc_conn_t *conn)
{
    if (!conn)
        return;
    curl_easy_cleanup(conn->easy);
    free(conn);
}

wc_conn_t *wc_client_conn_get(wharf_client_t *c)
{
    pthread_mutex_lock(&c->conn_mu);
    wc_conn_t *conn = c->free_conns;
    if (conn)
        c->free_conns = conn->next;
    pthread_mutex_unlock(&c->conn_mu);
    if (!conn) {
        conn = wc_conn_new();
        if (!conn)
            wc_set_error("cannot create a libcurl handle (out of memory?)");
    }
    return conn;
}

void wc_client_conn_put(wharf_client_t *c, wc_conn_t *conn)
{
    if (!conn)
        return;
    pthread_mutex_lock(&c->conn_mu);
    conn->next = c->free_conns;
    c->free_conns = conn;
    pthread_mutex_unlock(&c->conn_mu);
}

/* ---- fork ------------------------------------------------------------------------------- */

static pthread_mutex_t g_clients_mu = PTHREAD_MUTEX_INITIALIZER;
static wharf_client_t *g_clients;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static bool g_curl_ok;

static void atfork_prepare(void)
{
    pthread_mutex_lock(&g_clients_mu);
}

static void atfork_parent(void)
{
    pthread_mutex_unlock(&g_clients_mu);
}

/* In the child only the forking thread exists. Locks other threads held stay held forever, so
 * every client lock is re-initialised; workers and curl handles (they share the parent's
 * sockets) are forgotten, and the transport is made inert without touching the provider. The
 * real re-initialisation happens on first use (wc_client_enter), outside this handler. */
static void atfork_child(void)
{
    pthread_mutex_init(&g_clients_mu, NULL);
    for (wharf_client_t *c = g_clients; c; c = c->all_next) {
        pthread_mutex_init(&c->conn_mu, NULL);
        pthread_mutex_init(&c->xfer_mu, NULL);
        pthread_mutex_init(&c->fork_mu, NULL);
        pthread_rwlock_init(&c->reg_lock, NULL);
        c->free_conns = NULL; /* leaked on purpose: their sockets are the parent's */
        wc_pool_forget_after_fork(&c->pool);
        if (c->xfer)
            xfer_forget_after_fork(c->xfer);
        atomic_store(&c->need_reinit, true);
    }
}

static void global_init(void)
{
    /* A library is quiet unless asked: warnings and errors only, WHARF_LOG_LEVEL for more.
     * (libwharf's copy of the base layer is private, so this does not touch a host program.) */
    wh_log_level_t lvl = WH_LOG_WARN;
    const char *env = getenv("WHARF_LOG_LEVEL");
    if (env && wh_log_parse_level(env, &lvl) != 0)
        lvl = WH_LOG_WARN;
    wh_log_set_level(lvl);
    g_curl_ok = curl_global_init(CURL_GLOBAL_ALL) == CURLE_OK;
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

void wc_global_init(void)
{
    pthread_once(&g_once, global_init);
}

/* The local address this host uses to reach the endpoint's host (what the server sees as the
 * HTTP peer): a network provider binds there, so the server can check that the token's
 * endpoint belongs to the requester. No packet is sent (UDP connect only routes). */
static bool local_addr_toward(const char *hostport, char *out, size_t outlen)
{
    char host[256], port[16] = "80";
    const char *h = hostport, *colon;
    size_t hl;
    if (*h == '[') {
        const char *e = strchr(h, ']');
        if (!e)
            return false;
        hl = (size_t)(e - h - 1);
        h++;
        colon = e[1] == ':' ? e + 1 : NULL;
    } else {
        colon = strrchr(h, ':');
        hl = colon ? (size_t)(colon - h) : strlen(h);
    }
    if (hl == 0 || hl >= sizeof host)
        return false;
    memcpy(host, h, hl);
    host[hl] = '\0';
    if (colon)
        snprintf(port, sizeof port, "%s", colon + 1);
    struct addrinfo hints, *ai = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_socktype = SOCK_DGRAM;
    if (getaddrinfo(host, port, &hints, &ai) != 0 || !ai)
        return false;
    bool ok = false;
    int fd = socket(ai->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
            ok = getnameinfo((struct sockaddr *)&ss, sl, out, (socklen_t)outlen, NULL, 0,
                             NI_NUMERICHOST) == 0;
    }
    if (fd >= 0)
        close(fd);
    freeaddrinfo(ai);
    return ok;
}

static wh_status_t open_xfer(wharf_client_t *c, const char *name, char *err, size_t errlen)
{
    xfer_config_t xc;
    xfer_config_init(&xc);
    xc.provider = name;
    xc.role = XFER_ROLE_CLIENT;
    char node[128];
    const xfer_provider_t *pv = xfer_provider_find(name, strlen(name));
    if (pv && (pv->caps & XFER_CAP_NET_ADDR) && !getenv("WHARF_OFI_NODE") &&
        local_addr_toward(c->eps[0].host, node, sizeof node)) {
        xc.node = node;
        wh_debug(MOD, "provider=%s binds node=%s (route to %s)", name, node, c->eps[0].host);
    }
    xfer_t *x = NULL;
    wh_status_t st = xfer_open(&xc, &x, err, errlen);
    if (st != WH_OK)
        return st;
    c->xfer = x;
    snprintf(c->provider, sizeof c->provider, "%s", name);
    return WH_OK;
}

/* Chooses and opens the data path from c->provider_req. */
static wh_status_t setup_provider(wharf_client_t *c)
{
    const char *req = c->provider_req;
    char err[256] = "";
    snprintf(c->provider, sizeof c->provider, "none");
    c->xfer = NULL;
    if (!req || !*req || !strcmp(req, "none")) {
        snprintf(c->no_rdma_reason, sizeof c->no_rdma_reason,
                 "the client was created with provider \"none\" (HTTP only)");
        return WH_OK;
    }
    if (!strcmp(req, "auto")) {
        /* The xfer table's XFER_CAP_AUTO providers, in its order. */
        wh_sbuf_t why;
        wh_sbuf_init(&why);
        for (const xfer_provider_t *p = xfer_providers(); p->name; p++) {
            if (!(p->caps & XFER_CAP_AUTO))
                continue;
            /* No unix_socket given: the server names its own to a peer on its host (a
             * socket found so is kept only if its provider opens). */
            bool found = false;
            if ((p->caps & XFER_CAP_BOUND_PEER) && !c->unix_socket && c->neps == 1) {
                char path[128];
                err[0] = '\0';
                if (wc_unix_socket_find(c->eps[0].url, c->ca_bundle, path, sizeof path, err,
                                        sizeof err) == WH_OK &&
                    (c->unix_socket = strdup(path)) != NULL) {
                    found = true;
                    wh_debug(MOD, "unix socket found=%s endpoint=%s", path, c->eps[0].url);
                }
            }
            if ((p->caps & XFER_CAP_BOUND_PEER) && !c->unix_socket) {
                wh_sbuf_printf(&why, "%s: no unix_socket set (%s); ", p->name,
                               err[0] ? err : "several endpoints");
                continue;
            }
            err[0] = '\0';
            if (open_xfer(c, p->name, err, sizeof err) == WH_OK) {
                wh_debug(MOD, "provider chosen=%s (auto)", p->name);
                wh_sbuf_free(&why);
                return WH_OK;
            }
            if (found) {
                free(c->unix_socket);
                c->unix_socket = NULL;
            }
            wh_sbuf_printf(&why, "%s: %s; ", p->name, err);
        }
        snprintf(c->no_rdma_reason, sizeof c->no_rdma_reason, "provider auto found none: %s",
                 why.data ? why.data : "");
        wh_debug(MOD, "provider chosen=none reason=\"%s\"", c->no_rdma_reason);
        wh_sbuf_free(&why);
        return WH_OK;
    }
    const xfer_provider_t *pv = NULL;
    for (const xfer_provider_t *p = xfer_providers(); p->name; p++)
        if (!strcmp(p->name, req))
            pv = p;
    if (!pv) {
        char known[128];
        wc_set_error("unknown provider \"%s\": use %s, auto or none", req,
                     xfer_provider_list(known, sizeof known, XFER_NAME));
        return WH_ERR_INVALID;
    }
    if ((pv->caps & XFER_CAP_BOUND_PEER) && !c->unix_socket) {
        wc_set_error("provider %s needs unix_socket (the server serves it only to peers it "
                     "identifies over its Unix socket): set unix_socket to "
                     "<wharfd data dir>/wharfd.sock, or use ofi+tcp",
                     req);
        return WH_ERR_INVALID;
    }
    wh_status_t st = open_xfer(c, req, err, sizeof err);
    if (st != WH_OK) {
        wc_set_error("cannot open provider %s: %s; pick another provider or \"none\" for "
                     "HTTP only",
                     req, err);
        return st;
    }
    return WH_OK;
}

/* Child after fork, first use: new transport, fresh registrations later (lazily). */
static void reinit_after_fork(wharf_client_t *c)
{
    pthread_mutex_lock(&c->fork_mu);
    if (atomic_load(&c->need_reinit)) {
        pthread_mutex_lock(&c->xfer_mu);
        c->xfer_cuda = NULL; /* CUDA is unusable in a fork child: leaked, never touched */
        if (c->xfer) {
            char name[32];
            snprintf(name, sizeof name, "%s", c->provider);
            wc_mem_drop_mrs(c);
            xfer_close(c->xfer); /* forgotten: frees wharf's memory only */
            c->xfer = NULL;
            char err[256] = "";
            if (open_xfer(c, name, err, sizeof err) != WH_OK) {
                snprintf(c->provider, sizeof c->provider, "none");
                snprintf(c->no_rdma_reason, sizeof c->no_rdma_reason,
                         "re-opening %s in the forked child failed: %.180s", name, err);
                wh_warn(MOD, "fork child lost rdma provider=%s err=\"%s\"", name, err);
            }
        }
        pthread_mutex_unlock(&c->xfer_mu);
        atomic_store(&c->need_reinit, false);
    }
    pthread_mutex_unlock(&c->fork_mu);
}

void wc_client_enter(wharf_client_t *c)
{
    wc_clear_error();
    if (c && atomic_load(&c->need_reinit))
        reinit_after_fork(c);
}

/* ---- create / destroy ------------------------------------------------------------------- */

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

WHARF_API wharf_status_t wharf_client_create(const wharf_client_config_t *ucfg,
                                             wharf_client_t **out)
{
    wc_clear_error();
    pthread_once(&g_once, global_init);
    if (!ucfg || !out) {
        wc_set_error("wharf_client_create: cfg and out must not be NULL");
        return WHARF_ERR_INVALID;
    }
    if (ucfg->size < sizeof(size_t) + sizeof(const char *) * 3) {
        wc_set_error("wharf_client_create: cfg->size %zu is too small; call "
                     "wharf_client_config_init(&cfg, sizeof cfg) first",
                     ucfg->size);
        return WHARF_ERR_INVALID;
    }
    if (!g_curl_ok) {
        wc_set_error("libcurl global initialisation failed");
        return WHARF_ERR_INTERNAL;
    }
    wharf_client_config_t cfg;
    wharf_client_config_init(&cfg, sizeof cfg);
    copy_in(&cfg, ucfg, sizeof cfg);
    if (!cfg.endpoint || !cfg.access_key || !cfg.secret_key) {
        wc_set_error("wharf_client_create: endpoint, access_key and secret_key are required");
        return WHARF_ERR_INVALID;
    }
    if (cfg.fallback != WHARF_FALLBACK_FAIL && cfg.fallback != WHARF_FALLBACK_HTTP) {
        wc_set_error("wharf_client_create: fallback %d is not FAIL (0) or HTTP (1)",
                     (int)cfg.fallback);
        return WHARF_ERR_INVALID;
    }
    wharf_client_t *c = calloc(1, sizeof *c);
    if (!c) {
        wc_set_error("wharf_client_create: out of memory");
        return WHARF_ERR_NOMEM;
    }
    wh_status_t st = wc_endpoints_parse(cfg.endpoint, &c->eps, &c->neps);
    if (st != WH_OK)
        goto err_free;
    if (c->neps > 1 && cfg.unix_socket && *cfg.unix_socket) {
        /* the socket is one server's: requests meant for the others would all reach it */
        wc_set_error("unix_socket %s reaches one server, but the endpoint lists %u gateways; "
                     "leave unix_socket unset with several endpoints (ofi+shm needs it: use "
                     "ofi+tcp)",
                     cfg.unix_socket, c->neps);
        st = WH_ERR_INVALID;
        goto err_free;
    }
    c->access_key = strdup(cfg.access_key);
    c->secret_key = strdup(cfg.secret_key);
    c->region = strdup(cfg.region && *cfg.region ? cfg.region : WH_DEFAULT_REGION);
    c->provider_req = dup_or_null(cfg.provider);
    c->unix_socket = cfg.unix_socket && *cfg.unix_socket ? strdup(cfg.unix_socket) : NULL;
    c->ca_bundle = cfg.ca_bundle && *cfg.ca_bundle ? strdup(cfg.ca_bundle) : NULL;
    if (!c->access_key || !c->secret_key || !c->region || (cfg.provider && !c->provider_req) ||
        (cfg.ca_bundle && *cfg.ca_bundle && !c->ca_bundle)) {
        st = WH_ERR_NOMEM;
        wc_set_error("wharf_client_create: out of memory");
        goto err_free;
    }
    c->concurrency = cfg.concurrency ? cfg.concurrency : WH_DEFAULT_CLIENT_CONCURRENCY;
    if (c->concurrency > WC_POOL_MAX_THREADS)
        c->concurrency = WC_POOL_MAX_THREADS;
    c->chunk_size = cfg.chunk_size ? cfg.chunk_size : WH_DEFAULT_CLIENT_CHUNK;
    c->multipart_threshold =
        cfg.multipart_threshold ? cfg.multipart_threshold : WH_DEFAULT_MULTIPART_THRESHOLD;
    c->multipart_threshold_default = c->multipart_threshold == WH_DEFAULT_MULTIPART_THRESHOLD;
    c->part_size = cfg.part_size ? cfg.part_size : WH_DEFAULT_PART_SIZE;
    if (c->part_size < WH_MIN_PART_SIZE) {
        wc_set_error("wharf_client_create: part_size %llu is below S3's 5 MiB minimum",
                     (unsigned long long)c->part_size);
        st = WH_ERR_INVALID;
        goto err_free;
    }
    c->fallback = cfg.fallback;
    c->verify_checksum = cfg.verify_checksum ? 1 : 0;
    c->timeout_ms = cfg.timeout_ms;
    c->stall_ms = cfg.stall_timeout_ms ? cfg.stall_timeout_ms : WC_DEFAULT_STALL_MS;
    c->max_retries = cfg.max_retries;
    pthread_mutex_init(&c->xfer_mu, NULL);
    pthread_mutex_init(&c->conn_mu, NULL);
    pthread_mutex_init(&c->fork_mu, NULL);
    pthread_rwlock_init(&c->reg_lock, NULL);
    wc_pool_init(&c->pool);

    st = setup_provider(c);
    if (st != WH_OK)
        goto err_locks;

    pthread_mutex_lock(&g_clients_mu);
    c->all_next = g_clients;
    g_clients = c;
    pthread_mutex_unlock(&g_clients_mu);
    wh_debug(MOD, "client created endpoint=%s endpoints=%u provider=%s unix_socket=%s",
             c->eps[0].url, c->neps, c->provider, c->unix_socket ? c->unix_socket : "-");
    *out = c;
    return WHARF_OK;

err_locks:
    wc_pool_fini(&c->pool);
    pthread_rwlock_destroy(&c->reg_lock);
    pthread_mutex_destroy(&c->fork_mu);
    pthread_mutex_destroy(&c->conn_mu);
    pthread_mutex_destroy(&c->xfer_mu);
err_free:
    wc_endpoints_free(c->eps, c->neps);
    free(c->access_key);
    free(c->secret_key);
    free(c->region);
    free(c->provider_req);
    free(c->unix_socket);
    free(c->ca_bundle);
    free(c);
    return (wharf_status_t)st;
}

WHARF_API void wharf_client_destroy(wharf_client_t *c)
{
    if (!c)
        return;
    /* No re-initialisation in a fork child: a forgotten transport and its registrations only
     * free wharf's own memory below, and the child has no workers to join. */
    wc_clear_error();
    pthread_mutex_lock(&g_clients_mu);
    for (wharf_client_t **pp = &g_clients; *pp; pp = &(*pp)->all_next) {
        if (*pp == c) {
            *pp = c->all_next;
            break;
        }
    }
    pthread_mutex_unlock(&g_clients_mu);
    wc_pool_fini(&c->pool);
    wc_mem_orphan_all(c);
    xfer_close(c->xfer);
    xfer_close(c->xfer_cuda);
    for (wc_conn_t *n = c->free_conns, *next; n; n = next) {
        next = n->next;
        wc_conn_free(n);
    }
    pthread_rwlock_destroy(&c->reg_lock);
    pthread_mutex_destroy(&c->fork_mu);
    pthread_mutex_destroy(&c->conn_mu);
    pthread_mutex_destroy(&c->xfer_mu);
    free(c->regs);
    wc_endpoints_free(c->eps, c->neps);
    /* the secret is not left behind in freed memory */
    if (c->secret_key)
        memset(c->secret_key, 0, strlen(c->secret_key));
    free(c->access_key);
    free(c->secret_key);
    free(c->region);
    free(c->provider_req);
    free(c->unix_socket);
    free(c->ca_bundle);
    free(c);
}

WHARF_API const char *wharf_client_provider(wharf_client_t *c)
{
    if (!c)
        return "none";
    wc_client_enter(c);
    return c->provider;
}

WHARF_API wharf_status_t wharf_client_stats(wharf_client_t *c, wharf_stats_t *out)
{
    wc_clear_error();
    if (!c || !out || out->size < sizeof(size_t)) {
        wc_set_error("wharf_client_stats: client and out (initialised with wharf_stats_init) "
                     "are required");
        return WHARF_ERR_INVALID;
    }
    wharf_stats_t s;
    memset(&s, 0, sizeof s);
    s.size = sizeof s;
    s.rdma_ops = atomic_load(&c->st_rdma_ops);
    s.rdma_bytes = atomic_load(&c->st_rdma_bytes);
    s.http_ops = atomic_load(&c->st_http_ops);
    s.http_bytes = atomic_load(&c->st_http_bytes);
    s.fallbacks = atomic_load(&c->st_fallbacks);
    s.declines = atomic_load(&c->st_declines);
    s.retries = atomic_load(&c->st_retries);
    s.checksum_failures = atomic_load(&c->st_checksum_failures);
    wc_copy_out(out, &s, sizeof s);
    return WHARF_OK;
}
