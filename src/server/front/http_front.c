/* SPDX-License-Identifier: Apache-2.0 */
/* The HTTP front, connection side: two libmicrohttpd daemons (TCP and a Unix-domain socket)
 * in epoll mode with a pool of event threads; limits on the connections overall and per
 * client address; an idle timeout and a deadline for each request's headers; the handler
 * threads that run S3 handlers off the event threads.
 *
 * Why: with a thread per connection, about a thousand idle or slowly dribbling connections
 * took every thread and locked every other client out. Now an idle connection costs a file
 * descriptor and a little memory, is closed after the idle timeout (no byte moved), and one
 * that has not finished its headers by the deadline is closed whatever it sends. A transfer
 * that moves bytes is never cut by either: the idle clock restarts with every byte, the
 * header deadline ends with the headers, and a handler's own time (an RDMA transfer, a disk
 * commit) passes with the connection suspended, outside both. */
#include "front/http_int.h"
#include "base/defaults.h"
#include "base/log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define MOD "http"

/* ---- configuration ---------------------------------------------------------------------- */

#define FRONT_IDLE_TIMEOUT_S 30
#define FRONT_HEADER_TIMEOUT_S 20
#define FRONT_HANDLER_THREADS 256
/* File descriptors kept for everything but client connections: the store, the RDMA engine,
 * and per running handler an object file or two. */
#define FRONT_FD_RESERVE(handlers) (256u + 2u * (handlers))

void front_config_init(front_config_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->listen_host = WH_DEFAULT_LISTEN_HOST;
    cfg->listen_port = WH_DEFAULT_LISTEN_PORT;
    cfg->region = WH_DEFAULT_REGION;
    cfg->shutdown_grace_s = 10;
    cfg->etag_part_size = STORE_ETAG_PART_DEFAULT;
    cfg->rdma_digest_etag = true;
    cfg->max_uploads = FRONT_MAX_UPLOADS_DEFAULT;
    cfg->max_buckets = FRONT_MAX_BUCKETS_DEFAULT;
    cfg->max_user_uploads = FRONT_MAX_USER_UPLOADS_DEFAULT;
    rdma_config_init(&cfg->rdma);
}

void front_config_resolve(front_config_t *cfg)
{
    if (!cfg->conn_timeout_s)
        cfg->conn_timeout_s = FRONT_IDLE_TIMEOUT_S;
    if (!cfg->header_timeout_s)
        cfg->header_timeout_s = FRONT_HEADER_TIMEOUT_S;
    if (!cfg->http_threads) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        cfg->http_threads = n < 1 ? 1 : n > 64 ? 64 : (unsigned)n;
    }
    if (!cfg->handler_threads)
        cfg->handler_threads = FRONT_HANDLER_THREADS;
    /* A server's connections are its file descriptors: take the hard limit, then size the
     * connection limits from it. */
    struct rlimit rl;
    uint64_t nofile = 1024;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        if (rl.rlim_cur < rl.rlim_max) {
            struct rlimit want = {rl.rlim_max, rl.rlim_max};
            if (setrlimit(RLIMIT_NOFILE, &want) == 0)
                rl.rlim_cur = rl.rlim_max;
        }
        nofile = rl.rlim_cur == RLIM_INFINITY ? 1u << 20 : (uint64_t)rl.rlim_cur;
    }
    uint64_t reserve = FRONT_FD_RESERVE(cfg->handler_threads);
    if (!cfg->max_conns) {
        uint64_t m = nofile > reserve + 64 ? nofile - reserve : 64;
        cfg->max_conns = m > 1000000 ? 1000000 : (unsigned)m;
    }
    if (!cfg->max_conns_per_ip) {
        /* A quarter: one address can never take every slot, and a benchmark host with a
         * few hundred connections fits under any host's default. */
        unsigned m = cfg->max_conns / 4;
        cfg->max_conns_per_ip = m < 16 ? (cfg->max_conns < 16 ? cfg->max_conns : 16) : m;
    }
    if (nofile < reserve + cfg->max_conns)
        wh_warn(MOD,
                "max_conns=%u with RLIMIT_NOFILE=%llu leaves fewer than %llu descriptors "
                "for files; raise ulimit -n or lower --max-conns",
                cfg->max_conns, (unsigned long long)nofile, (unsigned long long)reserve);
}

/* ---- connections and the header deadline -------------------------------------------------
 * Every connection is tracked from accept to close. A connection waiting for a request's
 * headers (after accept, or after its previous request ended) is on a list in deadline order;
 * a sweeper thread shuts the socket of any still there at the deadline, and libmicrohttpd
 * then closes it as it would a client that hung up. libmicrohttpd's own timeout is an idle
 * timeout, which a client sending a header line every few seconds never trips. The socket
 * stays open until libmicrohttpd's close notification, which unlists it first, so the
 * sweeper never touches a reused descriptor. */

typedef struct front_conn {
    struct front_conn *prev, *next;
    int fd;
    uint64_t since_ns;
    bool listed;
} front_conn_t;

struct front_conns {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    front_conn_t *head, *tail; /* waiting for headers, oldest first */
    uint64_t timeout_ns;
    bool stop, thr_on;
    pthread_t thr;
    uint64_t open, header_timeouts;
};

static void conn_unlist(front_conns_t *cs, front_conn_t *k)
{
    if (!k->listed)
        return;
    if (k->prev)
        k->prev->next = k->next;
    else
        cs->head = k->next;
    if (k->next)
        k->next->prev = k->prev;
    else
        cs->tail = k->prev;
    k->prev = k->next = NULL;
    k->listed = false;
}

static void conn_list(front_conns_t *cs, front_conn_t *k)
{
    conn_unlist(cs, k);
    k->since_ns = wh_now_ns();
    k->prev = cs->tail;
    k->next = NULL;
    if (cs->tail)
        cs->tail->next = k;
    else
        cs->head = k;
    cs->tail = k;
    k->listed = true;
}

static void *conns_sweeper(void *arg)
{
    front_conns_t *cs = arg;
    pthread_mutex_lock(&cs->mu);
    while (!cs->stop) {
        uint64_t now = wh_now_ns();
        while (cs->head && cs->head->since_ns + cs->timeout_ns <= now) {
            front_conn_t *k = cs->head;
            conn_unlist(cs, k);
            cs->header_timeouts++;
            shutdown(k->fd, SHUT_RDWR);
            wh_debug(MOD, "request headers not complete within the deadline; closing fd=%d", k->fd);
        }
        /* Sleep until the oldest deadline (at most a second: new ones only come later). */
        uint64_t wake = now + 1000000000ULL;
        if (cs->head && cs->head->since_ns + cs->timeout_ns < wake)
            wake = cs->head->since_ns + cs->timeout_ns;
        struct timespec ts;
        wh_deadline_ns(&ts, wake > now ? wake - now : 0);
        pthread_cond_timedwait(&cs->cv, &cs->mu, &ts);
    }
    pthread_mutex_unlock(&cs->mu);
    return NULL;
}

static void conn_notify_cb(void *cls, struct MHD_Connection *c, void **socket_context,
                           enum MHD_ConnectionNotificationCode code)
{
    front_t *s = cls;
    front_conns_t *cs = s->conns;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        front_conn_t *k = calloc(1, sizeof *k);
        *socket_context = k;
        if (!k || !ci) {
            /* Untracked: only the idle timeout applies to it. */
            free(k);
            *socket_context = NULL;
            return;
        }
        k->fd = ci->connect_fd;
        pthread_mutex_lock(&cs->mu);
        cs->open++;
        conn_list(cs, k);
        pthread_mutex_unlock(&cs->mu);
        return;
    }
    front_conn_t *k = *socket_context;
    if (!k)
        return;
    pthread_mutex_lock(&cs->mu);
    conn_unlist(cs, k);
    cs->open--;
    pthread_mutex_unlock(&cs->mu);
    free(k);
    *socket_context = NULL;
}

static front_conn_t *conn_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

void front_conn_headers_done(front_t *s, struct MHD_Connection *c)
{
    front_conn_t *k = c ? conn_of(c) : NULL;
    if (!k)
        return;
    pthread_mutex_lock(&s->conns->mu);
    conn_unlist(s->conns, k);
    pthread_mutex_unlock(&s->conns->mu);
}

void front_conn_request_done(front_t *s, struct MHD_Connection *c)
{
    front_conn_t *k = c ? conn_of(c) : NULL;
    if (!k)
        return;
    pthread_mutex_lock(&s->conns->mu);
    conn_list(s->conns, k);
    pthread_mutex_unlock(&s->conns->mu);
}

static wh_status_t conns_start(front_t *s)
{
    front_conns_t *cs = calloc(1, sizeof *cs);
    if (!cs)
        return WH_ERR_NOMEM;
    pthread_mutex_init(&cs->mu, NULL);
    pthread_cond_init(&cs->cv, NULL);
    cs->timeout_ns = (uint64_t)s->cfg.header_timeout_s * 1000000000ULL;
    s->conns = cs;
    if (pthread_create(&cs->thr, NULL, conns_sweeper, cs) != 0) {
        wh_error(MOD, "cannot start the header deadline thread: %s", strerror(errno));
        return WH_ERR_IO;
    }
    cs->thr_on = true;
    return WH_OK;
}

/* After the daemons stopped: every connection has been closed and unlisted. */
static void conns_stop(front_t *s)
{
    front_conns_t *cs = s->conns;
    if (!cs)
        return;
    if (cs->thr_on) {
        pthread_mutex_lock(&cs->mu);
        cs->stop = true;
        pthread_cond_signal(&cs->cv);
        pthread_mutex_unlock(&cs->mu);
        pthread_join(cs->thr, NULL);
    }
    pthread_cond_destroy(&cs->cv);
    pthread_mutex_destroy(&cs->mu);
    free(cs);
    s->conns = NULL;
}

/* ---- handler threads ---------------------------------------------------------------------
 * Started on demand up to handler_threads; one idle for longer than FRONT_HANDLER_IDLE_S exits
 * while more than http_threads remain. A job waits only when all of them are busy. */

#define FRONT_HANDLER_IDLE_S 10

struct front_jobs {
    pthread_mutex_t mu;
    pthread_cond_t cv, done_cv;
    front_job_t *head, *tail;
    unsigned nthreads, nidle, queued, running, min, max;
    bool stop;
};

static void *jobs_main(void *arg)
{
    front_jobs_t *j = arg;
    pthread_mutex_lock(&j->mu);
    for (;;) {
        if (!j->head) {
            if (j->stop)
                break;
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += FRONT_HANDLER_IDLE_S;
            j->nidle++;
            int rc = pthread_cond_timedwait(&j->cv, &j->mu, &ts);
            j->nidle--;
            if (rc == ETIMEDOUT && !j->head && j->nthreads > j->min)
                break;
            continue;
        }
        front_job_t *job = j->head;
        j->head = job->next;
        if (!j->head)
            j->tail = NULL;
        j->queued--;
        j->running++;
        pthread_mutex_unlock(&j->mu);
        job->fn(job->arg);
        pthread_mutex_lock(&j->mu);
        j->running--;
        if (!j->running && !j->head)
            pthread_cond_broadcast(&j->done_cv);
    }
    j->nthreads--;
    pthread_cond_broadcast(&j->done_cv);
    pthread_mutex_unlock(&j->mu);
    return NULL;
}

bool front_jobs_submit(front_t *s, front_job_t *job)
{
    front_jobs_t *j = s->jobs;
    if (!j)
        return false;
    pthread_mutex_lock(&j->mu);
    if (j->stop) {
        pthread_mutex_unlock(&j->mu);
        return false;
    }
    job->next = NULL;
    if (j->tail)
        j->tail->next = job;
    else
        j->head = job;
    j->tail = job;
    j->queued++;
    if (j->queued > j->nidle && j->nthreads < j->max) {
        pthread_t t;
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&t, &at, jobs_main, j) == 0)
            j->nthreads++;
        else
            wh_warn(MOD, "cannot start a handler thread (%u running): %s", j->nthreads,
                    strerror(errno));
        pthread_attr_destroy(&at);
    }
    if (!j->nthreads) {
        /* Nobody will ever take it: take it back. */
        j->head = j->tail = NULL;
        j->queued = 0;
        pthread_mutex_unlock(&j->mu);
        return false;
    }
    pthread_cond_signal(&j->cv);
    pthread_mutex_unlock(&j->mu);
    return true;
}

static wh_status_t jobs_start(front_t *s)
{
    front_jobs_t *j = calloc(1, sizeof *j);
    if (!j)
        return WH_ERR_NOMEM;
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cv, NULL);
    pthread_cond_init(&j->done_cv, NULL);
    j->max = s->cfg.handler_threads;
    j->min = s->cfg.http_threads < j->max ? s->cfg.http_threads : j->max;
    s->jobs = j;
    return WH_OK;
}

/* Waits up to wait_s for running and queued jobs, then stops the threads. Returns false
 * (and frees nothing) when some job is still running. */
static bool jobs_stop(front_t *s, unsigned wait_s)
{
    front_jobs_t *j = s->jobs;
    if (!j)
        return true;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += wait_s;
    pthread_mutex_lock(&j->mu);
    while ((j->running || j->head) &&
           pthread_cond_timedwait(&j->done_cv, &j->mu, &ts) != ETIMEDOUT) {
    }
    if (j->running || j->head) {
        pthread_mutex_unlock(&j->mu);
        return false;
    }
    j->stop = true;
    pthread_cond_broadcast(&j->cv);
    while (j->nthreads && pthread_cond_timedwait(&j->done_cv, &j->mu, &ts) != ETIMEDOUT) {
    }
    bool gone = j->nthreads == 0;
    pthread_mutex_unlock(&j->mu);
    if (!gone)
        return true; /* idle threads that did not wake in time: left, not freed */
    pthread_cond_destroy(&j->cv);
    pthread_cond_destroy(&j->done_cv);
    pthread_mutex_destroy(&j->mu);
    free(j);
    s->jobs = NULL;
    return true;
}

/* ---- metrics ---------------------------------------------------------------------------- */

void front_http_metrics(front_t *s, wh_sbuf_t *out)
{
    uint64_t open = 0, timeouts = 0;
    unsigned threads = 0, busy = 0, queued = 0;
    if (s->conns) {
        pthread_mutex_lock(&s->conns->mu);
        open = s->conns->open;
        timeouts = s->conns->header_timeouts;
        pthread_mutex_unlock(&s->conns->mu);
    }
    if (s->jobs) {
        pthread_mutex_lock(&s->jobs->mu);
        threads = s->jobs->nthreads;
        busy = s->jobs->running;
        queued = s->jobs->queued;
        pthread_mutex_unlock(&s->jobs->mu);
    }
    wh_sbuf_printf(out,
                   "# HELP wharf_http_connections HTTP connections open (TCP and Unix).\n"
                   "# TYPE wharf_http_connections gauge\nwharf_http_connections %llu\n"
                   "# HELP wharf_http_header_timeouts_total Connections closed for not "
                   "completing a request's headers within the deadline.\n"
                   "# TYPE wharf_http_header_timeouts_total counter\n"
                   "wharf_http_header_timeouts_total %llu\n"
                   "# HELP wharf_http_handler_threads Handler threads started.\n"
                   "# TYPE wharf_http_handler_threads gauge\nwharf_http_handler_threads %u\n"
                   "# HELP wharf_http_handlers_busy Handlers running.\n"
                   "# TYPE wharf_http_handlers_busy gauge\nwharf_http_handlers_busy %u\n"
                   "# HELP wharf_http_handlers_queued Handlers waiting for a thread.\n"
                   "# TYPE wharf_http_handlers_queued gauge\nwharf_http_handlers_queued %u\n",
                   (unsigned long long)open, (unsigned long long)timeouts, threads, busy, queued);
}

/* ---- libmicrohttpd ---------------------------------------------------------------------- */

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    char line[512];
    vsnprintf(line, sizeof line, fmt, ap);
    size_t n = strlen(line);
    while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        line[--n] = '\0';
    wh_debug("mhd", "%s", line);
}

/* ---- start/stop ------------------------------------------------------------------------- */

static int unix_listen(const char *path)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof sa.sun_path) {
        wh_error(MOD,
                 "unix socket path is too long (%zu bytes, max %zu): %s; pass a shorter "
                 "--unix PATH",
                 strlen(path), sizeof sa.sun_path - 1, path);
        return -1;
    }
    strcpy(sa.sun_path, path);
    struct stat stt;
    if (lstat(path, &stt) == 0) {
        if (!S_ISSOCK(stt.st_mode)) {
            wh_error(MOD, "unix socket path exists and is not a socket: %s", path);
            return -1;
        }
        unlink(path); /* a stale socket from an earlier run */
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        wh_error(MOD, "socket(AF_UNIX) failed: %m");
        return -1;
    }
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        wh_error(MOD, "cannot bind unix socket %s: %m", path);
        close(fd);
        return -1;
    }
    if (listen(fd, 1024) != 0) {
        wh_error(MOD, "listen on unix socket %s failed: %m", path);
        close(fd);
        unlink(path);
        return -1;
    }
    return fd;
}

static struct MHD_Daemon *start_daemon(front_t *s, front_listener_t *l, int listen_fd,
                                       const struct sockaddr *bind_addr)
{
    const front_config_t *cfg = &s->cfg;
    /* epoll with a pool of event threads; suspend/resume for the handler threads. */
    unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
    unsigned threads = l->is_unix ? (cfg->http_threads + 1) / 2 : cfg->http_threads;
    unsigned limit = l->is_unix ? cfg->max_conns_per_ip : cfg->max_conns;
    struct MHD_OptionItem opts[16];
    size_t n = 0;
    if (!l->is_unix && s->tls) {
        flags |= MHD_USE_TLS;
        opts[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_CERT_CALLBACK, 0,
                                            front_tls_cert_callback(s->tls)};
        /* GnuTLS's "NORMAL" less TLS 1.0/1.1 (refused by current clients anyway). */
        opts[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_PRIORITIES, 0,
                                            (void *)"NORMAL:-VERS-TLS1.0:-VERS-TLS1.1"};
    }
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)mhd_log, s};
    opts[n++] =
        (struct MHD_OptionItem){MHD_OPTION_CONNECTION_MEMORY_LIMIT, FRONT_CONN_MEMORY, NULL};
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_TIMEOUT, cfg->conn_timeout_s, NULL};
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_LIMIT, limit, NULL};
    if (!l->is_unix)
        opts[n++] = (struct MHD_OptionItem){MHD_OPTION_PER_IP_CONNECTION_LIMIT,
                                            cfg->max_conns_per_ip, NULL};
    if (threads > 1) /* libmicrohttpd ignores a pool of one, with a warning */
        opts[n++] = (struct MHD_OptionItem){MHD_OPTION_THREAD_POOL_SIZE, threads, NULL};
    opts[n++] =
        (struct MHD_OptionItem){MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)front_http_uri_cb, l};
    opts[n++] =
        (struct MHD_OptionItem){MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)front_http_completed_cb, s};
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)conn_notify_cb, s};
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_LISTEN_BACKLOG_SIZE, 4096, NULL};
    opts[n++] =
        (struct MHD_OptionItem){listen_fd >= 0 ? MHD_OPTION_LISTEN_SOCKET : MHD_OPTION_SOCK_ADDR,
                                listen_fd >= 0 ? listen_fd : 0, (void *)bind_addr};
    opts[n++] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    return MHD_start_daemon(flags, 0, NULL, NULL, front_http_access_cb, l, MHD_OPTION_ARRAY, opts,
                            MHD_OPTION_END);
}

/* Closes what the roles handed over, in the reverse of the order they opened it. */
static void parts_close(rdma_t *rdma, ident_t *ident, store_t *store)
{
    rdma_fini(rdma);
    ident_close(ident);
    store_close(store);
}

wh_status_t front_start(const front_config_t *cfg, const front_parts_t *parts, front_t **out)
{
    wh_status_t st;
    if (!parts || !parts->app || !parts->store || !parts->ident || !parts->rdma) {
        if (parts)
            parts_close(parts->rdma, parts->ident, parts->store);
        return WH_ERR_INVALID;
    }
    front_t *s = calloc(1, sizeof *s);
    if (!s) {
        parts_close(parts->rdma, parts->ident, parts->store);
        return WH_ERR_NOMEM;
    }
    s->cfg = *cfg;
    s->app = parts->app;
    s->console = parts->console;
    s->store = parts->store;
    s->ident = parts->ident;
    s->rdma = parts->rdma;
    s->unix_fd = -1;
    s->tcp_l = (front_listener_t){s, false};
    s->unix_l = (front_listener_t){s, true};
    front_metrics_init(&s->metrics);
    front_recent_init(&s->recent);
    uint64_t salt = 0;
    wh_random_bytes(&salt, sizeof salt);
    s->id_salt = salt;

    if (cfg->tls_cert || cfg->tls_key) {
        char err[512];
        if (!cfg->tls_cert || !cfg->tls_key) {
            wh_error(MOD, "TLS needs both --tls-cert and --tls-key");
            st = WH_ERR_INVALID;
            goto err_tls;
        }
        if ((st = front_tls_open(cfg->tls_cert, cfg->tls_key, &s->tls, err, sizeof err)) != WH_OK) {
            wh_error(MOD, "%s", err);
            goto err_tls;
        }
    }
    front_config_resolve(&s->cfg);
    if ((st = conns_start(s)) != WH_OK || (st = jobs_start(s)) != WH_OK)
        goto err_front;
    /* The application before the daemons: no request may reach it before it has started (a
     * /metrics served in between read its state while the start wrote it; TSan saw it). */
    if (s->app->start && (st = s->app->start(s, &s->app_state)) != WH_OK)
        goto err_front;
    if (s->console && s->console->start && (st = s->console->start(s, &s->console_state)) != WH_OK)
        goto err_app;

    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(cfg->listen_port)};
    if (inet_pton(AF_INET, cfg->listen_host, &sin.sin_addr) != 1) {
        wh_error(MOD, "listen host must be an IPv4 address, got %s", cfg->listen_host);
        st = WH_ERR_INVALID;
        goto err_app;
    }
    /* The Unix socket listens before the TCP port answers, so a client that has seen /health
     * over TCP finds the socket ready (connections wait in its backlog until its daemon runs). */
    if (!cfg->unix_path || *cfg->unix_path) {
        wh_sbuf_t p;
        wh_sbuf_init(&p);
        if (cfg->unix_path)
            wh_sbuf_puts(&p, cfg->unix_path);
        else
            wh_sbuf_printf(&p, "%s/wharfd.sock", cfg->data_dir ? cfg->data_dir : ".");
        s->unix_path = wh_sbuf_steal(&p);
        s->unix_fd = s->unix_path ? unix_listen(s->unix_path) : -1;
        if (s->unix_fd < 0) {
            st = WH_ERR_IO;
            goto err_unix_path;
        }
    }
    s->tcp_d = start_daemon(s, &s->tcp_l, -1, (const struct sockaddr *)&sin);
    if (!s->tcp_d) {
        wh_error(MOD, "cannot listen on %s:%u (is the port in use?)", cfg->listen_host,
                 (unsigned)cfg->listen_port);
        st = WH_ERR_IO;
        goto err_unix;
    }
    if (s->unix_fd >= 0) {
        s->unix_d = start_daemon(s, &s->unix_l, s->unix_fd, NULL);
        if (!s->unix_d) {
            wh_error(MOD, "cannot serve the unix socket %s", s->unix_path);
            st = WH_ERR_IO;
            goto err_tcp;
        }
    }
    wh_info(MOD, "listening endpoint=%s://%s:%u unix=%s region=%s data=%s",
            s->tls ? "https" : "http", cfg->listen_host, (unsigned)cfg->listen_port,
            s->unix_path ? s->unix_path : "off", cfg->region,
            cfg->data_dir ? cfg->data_dir : "cluster");
    wh_info(MOD,
            "http front event_threads=%u handler_threads=%u max_conns=%u "
            "max_conns_per_ip=%u idle_timeout_s=%u header_timeout_s=%u",
            s->cfg.http_threads, s->cfg.handler_threads, s->cfg.max_conns, s->cfg.max_conns_per_ip,
            s->cfg.conn_timeout_s, s->cfg.header_timeout_s);
    *out = s;
    return WH_OK;

err_tcp:
    MHD_stop_daemon(s->tcp_d);
err_unix:
    if (s->unix_fd >= 0) {
        close(s->unix_fd);
        unlink(s->unix_path);
    }
err_unix_path:
    free(s->unix_path);
err_app:
    if (s->console && s->console->stop)
        s->console->stop(s->console_state);
    if (s->app->stop)
        s->app->stop(s->app_state);
    s->app_state = NULL;
err_front:
    jobs_stop(s, 0);
    conns_stop(s);
err_tls:
    front_tls_close(s->tls);
    parts_close(s->rdma, s->ident, s->store);
    front_recent_free(&s->recent);
    free(s);
    return st;
}

void front_stop(front_t *s)
{
    if (!s)
        return;
    /* Stop accepting; in-flight requests go on. The listening sockets close now, so that a
     * new connection is refused at once rather than left waiting in the backlog. */
    MHD_socket tcp_ls = s->tcp_d ? MHD_quiesce_daemon(s->tcp_d) : MHD_INVALID_SOCKET;
    if (s->unix_d)
        MHD_quiesce_daemon(s->unix_d);
    if (tcp_ls != MHD_INVALID_SOCKET)
        close(tcp_ls);
    tcp_ls = MHD_INVALID_SOCKET;
    /* s->unix_fd keeps its value (handlers read it, /health's socket header): closed once,
     * here. */
    if (s->unix_fd >= 0)
        close(s->unix_fd);
    uint64_t deadline = wh_now_ns() + (uint64_t)s->cfg.shutdown_grace_s * 1000000000ULL;
    int64_t n;
    while ((n = atomic_load(&s->metrics.inflight)) > 0 && wh_now_ns() < deadline) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (n > 0)
        wh_warn(MOD, "stopping with requests still in flight count=%lld", (long long)n);
    /* libmicrohttpd aborts when stopped with a connection suspended, which a handler still
     * running holds; such a handler also still uses the store. Then leave both as they are:
     * the process is about to exit. */
    if (s->console && s->console->stop)
        s->console->stop(s->console_state);
    s->console_state = NULL;
    if (s->app->stop)
        s->app->stop(s->app_state); /* before the store it uses */
    s->app_state = NULL;
    if (!jobs_stop(s, 5)) {
        wh_warn(MOD, "handlers still running after the grace period; exiting without "
                     "closing the HTTP daemons and the store");
        return;
    }
    if (s->unix_d)
        MHD_stop_daemon(s->unix_d);
    if (s->tcp_d)
        MHD_stop_daemon(s->tcp_d);
    conns_stop(s);
    if (tcp_ls != MHD_INVALID_SOCKET)
        close(tcp_ls);
    if (s->unix_path) {
        unlink(s->unix_path);
        free(s->unix_path);
    }
    front_tls_close(s->tls);
    parts_close(s->rdma, s->ident, s->store);
    wh_info(MOD, "stopped");
    front_recent_free(&s->recent);
    free(s);
}

wh_status_t front_reload_tls(front_t *s)
{
    if (!s->tls) {
        wh_info(MOD, "SIGHUP: no TLS certificate to reload");
        return WH_OK;
    }
    char err[512];
    wh_status_t st = front_tls_reload(s->tls, err, sizeof err);
    if (st != WH_OK)
        wh_error(MOD, "SIGHUP: TLS reload failed, keeping the certificate in use: %s", err);
    return st;
}

static bool same_addr(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
    if (a->ss_family != b->ss_family)
        return false;
    if (a->ss_family == AF_INET)
        return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
               ((const struct sockaddr_in *)b)->sin_addr.s_addr;
    if (a->ss_family == AF_INET6)
        return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
                       &((const struct sockaddr_in6 *)b)->sin6_addr, sizeof(struct in6_addr));
    return false;
}

const char *front_unix_path_for_local_peer(front_req_t *r, char *buf, size_t len)
{
    if (!r->srv->unix_path || r->srv->unix_fd < 0 || r->peer.is_unix)
        return NULL;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    struct sockaddr_storage here = {.ss_family = AF_UNSPEC}, there = {.ss_family = AF_UNSPEC};
    socklen_t hl = sizeof here, tl = sizeof there;
    if (!ci || getsockname(ci->connect_fd, (struct sockaddr *)&here, &hl) != 0 ||
        getpeername(ci->connect_fd, (struct sockaddr *)&there, &tl) != 0 ||
        !same_addr(&here, &there))
        return NULL;
    char abs[PATH_MAX];
    if (!realpath(r->srv->unix_path, abs) || strlen(abs) >= len)
        return NULL;
    memcpy(buf, abs, strlen(abs) + 1);
    return buf;
}
