/* SPDX-License-Identifier: Apache-2.0 */
/* The grid's client side: forked worker processes, each with its streams (threads) and its
 * own libwharf clients and registered buffer, driven by the parent over a SOCK_SEQPACKET pair
 * (grid.h's g_cmd_t / g_reply_t), and the parent's pool of them. */
#include "grid.h"

#include "base/crc.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- worker ---- */

static uint8_t *slice_ptr(g_worker_t *w, unsigned s, unsigned j)
{
    return w->buf + ((size_t)s * w->cmd.ops_per_stream + j) * w->cmd.size;
}

/* Global op index of stream s, op j of this worker: the seed's slot*iters+i. */
static uint64_t op_index(const g_worker_t *w, unsigned s, unsigned j)
{
    return (uint64_t)(w->cmd.worker_base + s) * w->cmd.ops_per_stream + j;
}

void grid_obj_key(const g_cfg_t *cfg, g_op_t op, uint64_t size, uint64_t idx, char *out, size_t n)
{
    snprintf(out, n,
             op == G_GET ? "b1/%" PRIu64 "/%05" PRIu64 ".bin"
                         : "b1put/%" PRIu64 "/%05" PRIu64 ".bin",
             size, idx);
}

static uint64_t obj_for_op(const g_worker_t *w, unsigned s, unsigned j)
{
    uint64_t k = op_index(w, s, j);
    return w->cmd.op == G_GET ? k % w->cmd.nobjects : k;
}

/* One transfer; records latency, TTFB and per-op checks. */
static void stream_op(g_stream_t *st, unsigned j, int timed)
{
    g_worker_t *w = st->w;
    const g_cfg_t *cfg = w->cfg;
    const g_arm_t *arm = &cfg->arms[w->cmd.arm];
    uint8_t *p = slice_ptr(w, st->s, j);
    uint64_t obj = obj_for_op(w, st->s, j);
    char key[128];
    grid_obj_key(cfg, (g_op_t)w->cmd.op, w->cmd.size, obj, key, sizeof key);
    wharf_xfer_opts_t o;
    wharf_xfer_opts_init(&o, sizeof o);
    o.transport = arm->rdma ? WHARF_TRANSPORT_RDMA : WHARF_TRANSPORT_HTTP;
    o.verify_checksum = cfg->client_crc;
    o.concurrency = cfg->op_conc;
    wharf_report_t r;
    wharf_report_init(&r, sizeof r);
    double t0 = wb_now();
    wharf_status_t rc;
    if (w->cmd.op == G_GET)
        rc = wharf_object_get(w->clients[w->cmd.arm], cfg->bucket_get, key, p, w->cmd.size, 0,
                              cfg->get_whole ? WHARF_WHOLE : w->cmd.size, &o, &r);
    else
        rc = wharf_object_put(w->clients[w->cmd.arm], cfg->bucket_put, key, p, w->cmd.size, &o, &r);
    double dt = wb_now() - t0;
    if (!timed)
        return;
    size_t li = (size_t)st->s * w->cmd.ops_per_stream + j;
    w->lat[li] = dt;
    w->ttfb[li] = r.first_byte_s;
    if (w->cmd.op == G_PUT)
        w->got_crc[li] = rc == WHARF_OK ? r.crc64nvme : 0;
    st->ops++;
    st->retries += r.retries;
    st->requests += r.requests;
    if (rc != WHARF_OK) {
        st->op_errors++;
        if (!st->err[0])
            snprintf(st->err, sizeof st->err, "%s %s: %s: %s", w->cmd.op == G_GET ? "GET" : "PUT",
                     key, wharf_status_str(rc), wharf_last_error());
        return;
    }
    st->bytes += r.bytes;
    if (r.fell_back)
        st->fallbacks++;
    wharf_transport_t want = arm->rdma ? WHARF_TRANSPORT_RDMA : WHARF_TRANSPORT_HTTP;
    if (r.transport != want || r.fell_back || r.bytes != w->cmd.size) {
        st->wrong_transport++;
        if (!st->err[0])
            snprintf(st->err, sizeof st->err,
                     "%s: report says transport %d, %" PRIu64 " of %" PRIu64
                     " bytes, fell_back %d (%s)",
                     key, (int)r.transport, r.bytes, w->cmd.size, r.fell_back, r.fallback_reason);
    }
}

static void *stream_main(void *arg)
{
    g_stream_t *st = arg;
    g_worker_t *w = st->w;
    /* untimed: warm-up (one transfer), then poison (GET) or fill (PUT) every slice */
    if (w->cmd.warmup)
        stream_op(st, 0, 0);
    for (unsigned j = 0; j < w->cmd.ops_per_stream; j++) {
        uint8_t b = wb_fill_byte(obj_for_op(w, st->s, j));
        uint8_t *p = slice_ptr(w, st->s, j);
        size_t li = (size_t)st->s * w->cmd.ops_per_stream + j;
        if (w->cmd.op == G_GET) {
            memset(p, b ^ 0xFF, w->cmd.size);
        } else {
            memset(p, b, w->cmd.size);
            w->put_crc[li] = wh_crc64nvme(0, p, w->cmd.size);
            w->got_crc[li] = 0;
        }
        w->lat[li] = w->ttfb[li] = -1;
    }
    pthread_barrier_wait(&w->bar); /* prepared */
    pthread_barrier_wait(&w->bar); /* go */
    for (unsigned j = 0; j < w->cmd.ops_per_stream; j++)
        stream_op(st, j, 1);
    return NULL;
}

static int worker_send(int fd, const g_reply_t *r)
{
    return send(fd, r, sizeof *r, MSG_NOSIGNAL) == (ssize_t)sizeof *r ? 0 : -1;
}

static int worker_clients(g_worker_t *w, char *err, size_t errlen)
{
    const g_cfg_t *cfg = w->cfg;
    for (unsigned a = 0; a < cfg->narms; a++) {
        wharf_client_config_t cc;
        wharf_client_config_init(&cc, sizeof cc);
        cc.endpoint = cfg->endpoint;
        cc.access_key = cfg->ak;
        cc.secret_key = cfg->sk;
        cc.region = cfg->region;
        cc.provider = cfg->arms[a].rdma ? cfg->arms[a].provider : "none";
        cc.unix_socket = cfg->arms[a].rdma && cfg->unix_socket[0] ? cfg->unix_socket : NULL;
        cc.concurrency = cfg->op_conc;
        if (cfg->chunk_size)
            cc.chunk_size = cfg->chunk_size;
        if (cfg->part_size)
            cc.part_size = cfg->part_size;
        if (cfg->mp_threshold)
            cc.multipart_threshold = cfg->mp_threshold;
        cc.fallback = WHARF_FALLBACK_FAIL;
        cc.verify_checksum = cfg->client_crc;
        wharf_status_t rc = wharf_client_create(&cc, &w->clients[a]);
        if (rc != WHARF_OK) {
            snprintf(err, errlen, "arm %s: client create failed: %s: %s", cfg->arms[a].name,
                     wharf_status_str(rc), wharf_last_error());
            return -1;
        }
        if (cfg->arms[a].rdma) {
            rc = wharf_mem_register(w->clients[a], w->buf, w->buf_len, WHARF_MEM_HOST, &w->mems[a]);
            if (rc != WHARF_OK) {
                snprintf(err, errlen, "arm %s: registering %zu bytes failed: %s: %s",
                         cfg->arms[a].name, w->buf_len, wharf_status_str(rc), wharf_last_error());
                return -1;
            }
        }
    }
    return 0;
}

/* PUT bytes the reply did not vouch for (no crc64nvme in it): ask the server. HEAD first (its
 * stored crc64nvme), else read the object back over HTTP into the slice and compare. */
static int verify_put_slow(g_worker_t *w, unsigned s, unsigned j, uint64_t want_crc,
                           const char **method)
{
    const g_cmd_t *c = &w->cmd;
    wharf_client_t *cl = w->clients[c->arm];
    char key[128];
    grid_obj_key(w->cfg, G_PUT, c->size, obj_for_op(w, s, j), key, sizeof key);
    wharf_stat_t st;
    wharf_stat_init(&st, sizeof st);
    if (wharf_object_stat(cl, w->cfg->bucket_put, key, &st) != WHARF_OK || st.length != c->size)
        return -1;
    if (st.has_crc64nvme) {
        *method = "server-crc64nvme (HEAD)";
        return st.crc64nvme == want_crc ? 0 : -1;
    }
    uint8_t *p = slice_ptr(w, s, j);
    uint8_t b = wb_fill_byte(obj_for_op(w, s, j));
    memset(p, b ^ 0xFF, c->size);
    wharf_xfer_opts_t o;
    wharf_xfer_opts_init(&o, sizeof o);
    o.transport = WHARF_TRANSPORT_HTTP;
    wharf_report_t r;
    wharf_report_init(&r, sizeof r);
    if (wharf_object_get(cl, w->cfg->bucket_put, key, p, c->size, 0, c->size, &o, &r) != WHARF_OK ||
        r.bytes != c->size)
        return -1;
    *method = "read back over HTTP and compared";
    return wb_count_not(p, c->size, b) == 0 ? 0 : -1;
}

static void worker_verify(g_worker_t *w, g_reply_t *rep)
{
    const g_cmd_t *c = &w->cmd;
    const char *method = c->op == G_GET ? "compare-fill-byte" : "server-crc64nvme (reply)";
    for (unsigned s = 0; s < c->conc; s++)
        for (unsigned j = 0; j < c->ops_per_stream; j++) {
            size_t li = (size_t)s * c->ops_per_stream + j;
            if (w->lat[li] < 0) { /* never ran */
                rep->unverified_bytes += c->size;
                continue;
            }
            if (c->op == G_GET) {
                uint64_t bad =
                    wb_count_not(slice_ptr(w, s, j), c->size, wb_fill_byte(obj_for_op(w, s, j)));
                rep->bad_bytes += bad;
                rep->verified_bytes += c->size - bad;
            } else if (w->got_crc[li] == 0) {
                if (verify_put_slow(w, s, j, w->put_crc[li], &method) == 0)
                    rep->verified_bytes += c->size;
                else
                    rep->bad_bytes += c->size;
            } else if (w->got_crc[li] == w->put_crc[li]) {
                rep->verified_bytes += c->size;
            } else {
                rep->bad_bytes += c->size;
            }
        }
    snprintf(rep->verify_method, sizeof rep->verify_method, "%s", method);
    if (rep->unverified_bytes && !rep->err[0])
        snprintf(rep->err, sizeof rep->err, "%" PRIu64 " bytes unverified (failed transfers)",
                 rep->unverified_bytes);
    if (rep->bad_bytes && !rep->err[0])
        snprintf(rep->err, sizeof rep->err, "%" PRIu64 " bytes differ from what was sent",
                 rep->bad_bytes);
}

void grid_worker_main(const g_cfg_t *cfg, unsigned index, int fd, size_t buf_len, double *lat,
                      double *ttfb, size_t max_ops)
{
    g_worker_t *w = calloc(1, sizeof *w);
    g_reply_t rep = {0};
    rep.type = M_PREP;
    if (!w)
        _exit(3);
    w->cfg = cfg;
    w->index = index;
    w->buf_len = buf_len;
    w->lat = lat;
    w->ttfb = ttfb;
    w->max_ops = max_ops;
    w->put_crc = calloc(max_ops, sizeof *w->put_crc);
    w->got_crc = calloc(max_ops, sizeof *w->got_crc);
    w->buf = wb_alloc_prefaulted(buf_len);
    if (!w->buf || !w->put_crc || !w->got_crc) {
        snprintf(rep.err, sizeof rep.err, "worker %u: cannot allocate %zu bytes", index, buf_len);
        worker_send(fd, &rep);
        _exit(3);
    }
    if (worker_clients(w, rep.err, sizeof rep.err) != 0) {
        worker_send(fd, &rep);
        _exit(3);
    }
    rep.ok = 1;
    worker_send(fd, &rep); /* started */
    for (;;) {
        g_cmd_t cmd;
        ssize_t n = recv(fd, &cmd, sizeof cmd, 0);
        if (n != (ssize_t)sizeof cmd || cmd.type == M_QUIT)
            break;
        memset(&rep, 0, sizeof rep);
        rep.type = cmd.type;
        if (cmd.type == M_PREP) {
            w->cmd = cmd;
            if ((size_t)cmd.conc * cmd.ops_per_stream > w->max_ops || cmd.conc > 256 ||
                (size_t)cmd.conc * cmd.ops_per_stream * cmd.size > w->buf_len) {
                snprintf(rep.err, sizeof rep.err, "worker %u: cell does not fit its buffers",
                         index);
                worker_send(fd, &rep);
                continue;
            }
            pthread_barrier_init(&w->bar, NULL, cmd.conc + 1);
            for (unsigned s = 0; s < cmd.conc; s++) {
                g_stream_t *st = &w->streams[s];
                memset(st, 0, sizeof *st);
                st->w = w;
                st->s = s;
                pthread_create(&st->th, NULL, stream_main, st);
            }
            pthread_barrier_wait(&w->bar);
            rep.ok = 1;
            snprintf(rep.provider, sizeof rep.provider, "%s",
                     wharf_client_provider(w->clients[cmd.arm]));
            worker_send(fd, &rep);
        } else if (cmd.type == M_GO) {
            double c0 = wb_self_cpu_s();
            rep.t_start = wb_now();
            pthread_barrier_wait(&w->bar);
            for (unsigned s = 0; s < w->cmd.conc; s++)
                pthread_join(w->streams[s].th, NULL);
            rep.t_end = wb_now();
            rep.cpu_s = wb_self_cpu_s() - c0;
            pthread_barrier_destroy(&w->bar);
            for (unsigned s = 0; s < w->cmd.conc; s++) {
                g_stream_t *st = &w->streams[s];
                rep.bytes += st->bytes;
                rep.ops += st->ops;
                rep.op_errors += st->op_errors;
                rep.fallbacks += st->fallbacks;
                rep.wrong_transport += st->wrong_transport;
                rep.retries += st->retries;
                rep.requests += st->requests;
                if (st->err[0] && !rep.err[0])
                    snprintf(rep.err, sizeof rep.err, "%s", st->err);
            }
            rep.ok = rep.op_errors == 0 && rep.wrong_transport == 0;
            worker_send(fd, &rep);
        } else if (cmd.type == M_VERIFY) {
            worker_verify(w, &rep);
            rep.ok = rep.bad_bytes == 0 && rep.unverified_bytes == 0;
            worker_send(fd, &rep);
        }
    }
    for (unsigned a = 0; a < cfg->narms; a++) {
        wharf_mem_deregister(w->mems[a]);
        wharf_client_destroy(w->clients[a]);
    }
    _exit(0);
}

/* ---- parent: the worker set of one process count ---- */

double *grid_pool_lat(g_pool_t *p, unsigned w)
{
    return p->shared + (size_t)w * 2 * p->max_ops;
}
double *grid_pool_ttfb(g_pool_t *p, unsigned w)
{
    return grid_pool_lat(p, w) + p->max_ops;
}

void grid_pool_stop(g_pool_t *p, int force)
{
    for (unsigned i = 0; i < p->n; i++) {
        if (p->pid[i] <= 0)
            continue;
        if (!force) {
            g_cmd_t q = {.type = M_QUIT};
            if (send(p->fd[i], &q, sizeof q, MSG_NOSIGNAL) < 0)
                force = 1;
        }
        if (force)
            kill(p->pid[i], SIGKILL);
    }
    for (unsigned i = 0; i < p->n; i++) {
        if (p->pid[i] <= 0)
            continue;
        /* bounded: a worker that does not quit within 30 s is killed */
        int status;
        for (int t = 0; t < 300; t++) {
            if (waitpid(p->pid[i], &status, WNOHANG) == p->pid[i])
                goto reaped;
            usleep(100000);
        }
        kill(p->pid[i], SIGKILL);
        waitpid(p->pid[i], &status, 0);
    reaped:
        close(p->fd[i]);
        p->pid[i] = 0;
    }
    if (p->shared)
        munmap(p->shared, p->shared_len);
    p->shared = NULL;
    p->alive = 0;
}

/* Waits for one reply from every worker; bounded by timeout_s. */
int grid_pool_collect(g_pool_t *p, g_reply_t *reps, unsigned timeout_s, char *err, size_t n)
{
    int got[G_MAX_PROCS] = {0};
    unsigned have = 0;
    double deadline = wb_now() + timeout_s;
    while (have < p->n) {
        struct pollfd pf[G_MAX_PROCS];
        for (unsigned i = 0; i < p->n; i++)
            pf[i] = (struct pollfd){.fd = got[i] ? -1 : p->fd[i], .events = POLLIN};
        double left = deadline - wb_now();
        if (left <= 0) {
            snprintf(err, n, "timed out after %u s waiting for %u of %u workers", timeout_s,
                     p->n - have, p->n);
            return -1;
        }
        int r = poll(pf, p->n, (int)(left * 1000) + 1);
        if (r < 0 && errno != EINTR) {
            snprintf(err, n, "poll: %s", strerror(errno));
            return -1;
        }
        for (unsigned i = 0; i < p->n && r > 0; i++) {
            if (got[i] || !(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            ssize_t k = recv(p->fd[i], &reps[i], sizeof reps[i], 0);
            if (k != (ssize_t)sizeof reps[i]) {
                snprintf(err, n, "worker %u (pid %d) died; see its stderr", i, (int)p->pid[i]);
                return -1;
            }
            got[i] = 1;
            have++;
        }
    }
    return 0;
}

int grid_pool_start(g_pool_t *p, const g_cfg_t *cfg, unsigned n, size_t buf_len, size_t max_ops,
                    char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    p->n = n;
    p->max_ops = max_ops ? max_ops : 1;
    p->shared_len = (size_t)n * 2 * p->max_ops * sizeof(double);
    p->shared =
        mmap(NULL, p->shared_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p->shared == MAP_FAILED) {
        p->shared = NULL;
        snprintf(err, errlen, "mmap of %zu shared bytes failed: %s", p->shared_len,
                 strerror(errno));
        return -1;
    }
    fflush(NULL);
    for (unsigned i = 0; i < n; i++) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) != 0) {
            snprintf(err, errlen, "socketpair: %s", strerror(errno));
            grid_pool_stop(p, 1);
            return -1;
        }
        pid_t pid = fork();
        if (pid < 0) {
            snprintf(err, errlen, "fork: %s", strerror(errno));
            close(sv[0]);
            close(sv[1]);
            grid_pool_stop(p, 1);
            return -1;
        }
        if (pid == 0) {
            close(sv[0]);
            for (unsigned k = 0; k < i; k++)
                close(p->fd[k]);
            grid_worker_main(cfg, i, sv[1], buf_len, grid_pool_lat(p, i), grid_pool_ttfb(p, i),
                             p->max_ops);
        }
        close(sv[1]);
        p->pid[i] = pid;
        p->fd[i] = sv[0];
    }
    g_reply_t reps[G_MAX_PROCS];
    /* client creation, registration and prefaulting of buf_len bytes: allow time */
    if (grid_pool_collect(p, reps, cfg->timeout_s, err, errlen) != 0) {
        grid_pool_stop(p, 1);
        return -1;
    }
    for (unsigned i = 0; i < n; i++)
        if (!reps[i].ok) {
            snprintf(err, errlen, "%s", reps[i].err);
            grid_pool_stop(p, 1);
            return -1;
        }
    p->alive = 1;
    return 0;
}

int grid_pool_send(g_pool_t *p, const g_cmd_t *base, unsigned conc, char *err, size_t n)
{
    for (unsigned i = 0; i < p->n; i++) {
        g_cmd_t c = *base;
        c.worker_base = i * conc;
        if (send(p->fd[i], &c, sizeof c, MSG_NOSIGNAL) != (ssize_t)sizeof c) {
            snprintf(err, n, "worker %u is gone: %s", i, strerror(errno));
            return -1;
        }
    }
    return 0;
}
