/* `wharf bench fetch|put|rdma3|limits`: the seed's B1 grid over libwharf, with paired arms.
 *
 * Method (docs/benchmarks.md has the long form):
 * - Objects are written over HTTP first (bucket bench-fetch, keys b1/<size>/<i:05d>.bin, object
 *   i filled with byte (i*37+11)&0xFF as in the seed).
 * - Client work runs in forked worker processes (--processes N, each with --concurrency streams
 *   on its own key slice); the parent only coordinates and reads the witness, so it adds no CPU
 *   to the client figure, and the same code measures 1 and N processes.
 * - Every transfer has its own destination slice, so every byte moved is still there after
 *   the timed window: the workers check each slice against the fill byte (GET; slices are
 *   poisoned before the window) or the server's crc64nvme of what it stored (PUT).
 * - Per cell the arms alternate A B A B ... for --repeats rounds over the same objects.
 * - Around each timed window: /metrics (witness counters, server CPU) and /proc/stat (host CPU);
 *   the workers report their own getrusage over the window (client CPU). An RDMA cell whose
 *   server counters moved less than --witness-min of the payload fails with the reason.
 * - Each measurement moves about --budget bytes (ops per stream = budget / (size * streams),
 *   at least 1), so small and large objects cost similar time; cells whose buffers would exceed
 *   --mem-cap are skipped and say so. */
#include "wbench.h"

#include "wharf/wharf.h"

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
    const char *benchmark; /* "b1-fetch", "put", "rdma3" */
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
    int get_whole; /* GET with WHARF_WHOLE (HEAD + GET) instead of the known length */
} g_cfg_t;

/* ---- parent <-> worker messages (SOCK_SEQPACKET) ---- */

enum { M_PREP = 1, M_GO, M_VERIFY, M_QUIT };

typedef struct g_cmd {
    int type;
    int op;       /* g_op_t */
    int arm;      /* index into cfg arms */
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

static uint8_t *slice_ptr(g_worker_t *w, unsigned s, unsigned j)
{
    return w->buf + ((size_t)s * w->cmd.ops_per_stream + j) * w->cmd.size;
}

/* Global op index of stream s, op j of this worker: the seed's slot*iters+i. */
static uint64_t op_index(const g_worker_t *w, unsigned s, unsigned j)
{
    return (uint64_t)(w->cmd.worker_base + s) * w->cmd.ops_per_stream + j;
}

static void obj_key(const g_cfg_t *cfg, g_op_t op, uint64_t size, uint64_t idx, char *out,
                    size_t n)
{
    snprintf(out, n, op == G_GET ? "b1/%" PRIu64 "/%05" PRIu64 ".bin"
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
    obj_key(cfg, (g_op_t)w->cmd.op, w->cmd.size, obj, key, sizeof key);
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
        rc = wharf_object_put(w->clients[w->cmd.arm], cfg->bucket_put, key, p, w->cmd.size, &o,
                              &r);
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
            rc = wharf_mem_register(w->clients[a], w->buf, w->buf_len, WHARF_MEM_HOST,
                                    &w->mems[a]);
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
    obj_key(w->cfg, G_PUT, c->size, obj_for_op(w, s, j), key, sizeof key);
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
    if (wharf_object_get(cl, w->cfg->bucket_put, key, p, c->size, 0, c->size, &o, &r) !=
            WHARF_OK ||
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
                uint64_t bad = wb_count_not(slice_ptr(w, s, j), c->size,
                                            wb_fill_byte(obj_for_op(w, s, j)));
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

static void worker_main(const g_cfg_t *cfg, unsigned index, int fd, size_t buf_len, double *lat,
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

typedef struct g_pool {
    unsigned n;
    pid_t pid[G_MAX_PROCS];
    int fd[G_MAX_PROCS];
    double *shared; /* lat + ttfb for every worker */
    size_t shared_len, max_ops;
    int alive;
} g_pool_t;

static double *pool_lat(g_pool_t *p, unsigned w)
{
    return p->shared + (size_t)w * 2 * p->max_ops;
}
static double *pool_ttfb(g_pool_t *p, unsigned w)
{
    return pool_lat(p, w) + p->max_ops;
}

static void pool_stop(g_pool_t *p, int force)
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
static int pool_collect(g_pool_t *p, g_reply_t *reps, unsigned timeout_s, char *err, size_t n)
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

static int pool_start(g_pool_t *p, const g_cfg_t *cfg, unsigned n, size_t buf_len, size_t max_ops,
                      char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    p->n = n;
    p->max_ops = max_ops ? max_ops : 1;
    p->shared_len = (size_t)n * 2 * p->max_ops * sizeof(double);
    p->shared = mmap(NULL, p->shared_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1,
                     0);
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
            pool_stop(p, 1);
            return -1;
        }
        pid_t pid = fork();
        if (pid < 0) {
            snprintf(err, errlen, "fork: %s", strerror(errno));
            close(sv[0]);
            close(sv[1]);
            pool_stop(p, 1);
            return -1;
        }
        if (pid == 0) {
            close(sv[0]);
            for (unsigned k = 0; k < i; k++)
                close(p->fd[k]);
            worker_main(cfg, i, sv[1], buf_len, pool_lat(p, i), pool_ttfb(p, i), p->max_ops);
        }
        close(sv[1]);
        p->pid[i] = pid;
        p->fd[i] = sv[0];
    }
    g_reply_t reps[G_MAX_PROCS];
    /* client creation, registration and prefaulting of buf_len bytes: allow time */
    if (pool_collect(p, reps, cfg->timeout_s, err, errlen) != 0) {
        pool_stop(p, 1);
        return -1;
    }
    for (unsigned i = 0; i < n; i++)
        if (!reps[i].ok) {
            snprintf(err, errlen, "%s", reps[i].err);
            pool_stop(p, 1);
            return -1;
        }
    p->alive = 1;
    return 0;
}

static int pool_send(g_pool_t *p, const g_cmd_t *base, unsigned conc, char *err, size_t n)
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

/* ---- one measurement (one arm, one repeat of a cell) ---- */

typedef struct g_meas {
    int ok;
    char err[G_ERR];
    double wall_s;      /* span: first worker start to last worker end */
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

static const char *const g_metric_prefixes[] = {"wharf_rdma_", "minio_api_rdma_", "wharf_http_",
                                                "process_cpu_seconds_total", "wharf_xfer_",
                                                "wharf_decline", NULL};

static void meas_free(g_meas_t *m)
{
    json_decref(m->metrics_delta);
    free(m->lat);
    free(m->ttfb);
    memset(m, 0, sizeof *m);
}

static int measure(const g_cfg_t *cfg, g_pool_t *pool, g_op_t op, unsigned arm, uint64_t size,
                   unsigned conc, unsigned ops_per_stream, unsigned nobjects, int warmup,
                   g_meas_t *m)
{
    memset(m, 0, sizeof *m);
    g_reply_t reps[G_MAX_PROCS];
    g_cmd_t c = {.type = M_PREP, .op = op, .arm = (int)arm, .size = size, .conc = conc,
                 .ops_per_stream = ops_per_stream, .nobjects = nobjects, .warmup = warmup};
    wb_metrics_t before = {0}, after = {0};
    wb_hostcpu_t h0, h1;
    /* prepare: warm-up, poison/fill (untimed) */
    if (pool_send(pool, &c, conc, m->err, sizeof m->err) != 0 ||
        pool_collect(pool, reps, cfg->timeout_s, m->err, sizeof m->err) != 0)
        goto dead;
    for (unsigned i = 0; i < pool->n; i++)
        if (!reps[i].ok) {
            snprintf(m->err, sizeof m->err, "prepare: %.400s", reps[i].err);
            goto dead;
        }
    snprintf(m->provider, sizeof m->provider, "%s", reps[0].provider);
    /* timed window, bracketed by the witness and the host CPU */
    if (wb_metrics_scrape(cfg->endpoint, cfg->ak, cfg->sk, cfg->region, &before) != 0) {
        snprintf(m->err, sizeof m->err, "metrics-unreachable: %s", before.err);
    }
    wb_hostcpu_read(&h0);
    c.type = M_GO;
    if (pool_send(pool, &c, conc, m->err, sizeof m->err) != 0 ||
        pool_collect(pool, reps, cfg->timeout_s, m->err, sizeof m->err) != 0)
        goto dead;
    wb_hostcpu_read(&h1);
    if (wb_metrics_scrape(cfg->endpoint, cfg->ak, cfg->sk, cfg->region, &after) != 0 &&
        !m->err[0])
        snprintf(m->err, sizeof m->err, "metrics-unreachable: %s", after.err);
    /* The server may count a transfer when its request completes, a moment after the client
     * has every byte. Let the witness counter settle (bounded: 2 s), outside the timing. */
    {
        const g_arm_t *a0 = &cfg->arms[arm];
        const char *wname = a0->rdma ? (op == G_GET ? "wharf_rdma_read_bytes_total"
                                                    : "wharf_rdma_write_bytes_total")
                                     : (op == G_GET ? "wharf_http_read_bytes_total"
                                                    : "wharf_http_write_bytes_total");
        double want = (double)pool->n * conc * ops_per_stream * size * cfg->witness_min;
        double t_settle = wb_now();
        while (before.ok && after.ok && wb_now() - t_settle < 2.0 &&
               wb_metrics_get(&after, wname, NULL) - wb_metrics_get(&before, wname, NULL) <
                   want) {
            usleep(20000);
            wb_metrics_t again = {0};
            if (wb_metrics_scrape(cfg->endpoint, cfg->ak, cfg->sk, cfg->region, &again) != 0) {
                wb_metrics_free(&again);
                break;
            }
            wb_metrics_free(&after);
            after = again;
        }
        m->witness_settle_s = wb_now() - t_settle;
    }
    double t0 = 1e300, t1 = 0;
    for (unsigned i = 0; i < pool->n; i++) {
        g_reply_t *r = &reps[i];
        t0 = fmin(t0, r->t_start);
        t1 = fmax(t1, r->t_end);
        m->worker_wall[i] = r->t_end - r->t_start;
        m->bytes += r->bytes;
        m->ops += r->ops;
        m->client_cpu_s += r->cpu_s;
        m->fallbacks += r->fallbacks;
        m->retries += r->retries;
        m->requests += r->requests;
        if (!r->ok && !m->err[0])
            snprintf(m->err, sizeof m->err, "%" PRIu64 " failed ops, %" PRIu64
                     " on the wrong transport; first: %.400s", r->op_errors, r->wrong_transport,
                     r->err);
    }
    m->wall_s = t1 - t0;
    m->gbps = m->wall_s > 0 ? (double)m->bytes / m->wall_s / 1e9 : 0;
    m->ops_per_s = m->wall_s > 0 ? (double)m->ops / m->wall_s : 0;
    m->host_cpu_s = wb_hostcpu_busy_s(&h0, &h1);
    m->host_busy_fraction = wb_hostcpu_fraction(&h0, &h1);
    /* latencies out of shared memory (before the next PREP overwrites them) */
    size_t per = (size_t)conc * ops_per_stream;
    m->lat = malloc(per * pool->n * sizeof(double));
    m->ttfb = malloc(per * pool->n * sizeof(double));
    for (unsigned i = 0; i < pool->n && m->lat && m->ttfb; i++)
        for (size_t k = 0; k < per; k++) {
            double l = pool_lat(pool, i)[k], f = pool_ttfb(pool, i)[k];
            if (l >= 0)
                m->lat[m->nlat++] = l;
            if (l >= 0 && f > 0)
                m->ttfb[m->nttfb++] = f;
        }
    /* witness */
    uint64_t payload = (uint64_t)pool->n * per * size;
    if (before.ok && after.ok) {
        int f1 = 0, f2 = 0;
        double cpu0 = wb_metrics_get(&before, "process_cpu_seconds_total", &f1);
        double cpu1 = wb_metrics_get(&after, "process_cpu_seconds_total", &f2);
        m->server_cpu_known = f1 && f2;
        m->server_cpu_s = cpu1 - cpu0;
        m->metrics_delta = wb_metrics_delta_json(&before, &after, g_metric_prefixes);
        const g_arm_t *a = &cfg->arms[arm];
        const char *rdma_b = op == G_GET ? "wharf_rdma_read_bytes_total"
                                         : "wharf_rdma_write_bytes_total";
        const char *rdma_o = op == G_GET ? "wharf_rdma_read_ops_total"
                                         : "wharf_rdma_write_ops_total";
        const char *http_b = op == G_GET ? "wharf_http_read_bytes_total"
                                         : "wharf_http_write_bytes_total";
        const char *http_o = op == G_GET ? "wharf_http_read_ops_total"
                                         : "wharf_http_write_ops_total";
        const char *wb = a->rdma ? rdma_b : http_b, *wo = a->rdma ? rdma_o : http_o;
        int fb = 0;
        m->witness_bytes = wb_metrics_get(&after, wb, &fb) - wb_metrics_get(&before, wb, NULL);
        m->witness_ops = wb_metrics_get(&after, wo, NULL) - wb_metrics_get(&before, wo, NULL);
        m->other_rdma_bytes = a->rdma ? 0
                                      : wb_metrics_get(&after, rdma_b, NULL) -
                                            wb_metrics_get(&before, rdma_b, NULL);
        m->witness_ratio = payload ? m->witness_bytes / (double)payload : 0;
        if (!fb && !m->err[0])
            snprintf(m->err, sizeof m->err, "witness: /metrics has no %s; nothing proves the "
                     "transport", wb);
        else if (m->witness_ratio < cfg->witness_min && !m->err[0])
            snprintf(m->err, sizeof m->err, "%s: the server counted %.0f of %" PRIu64
                     " payload bytes in %s (%.3f < %.2f)",
                     a->rdma ? "rdma-not-used" : "http-witness-short", m->witness_bytes, payload,
                     wb, m->witness_ratio, cfg->witness_min);
        else if (!a->rdma && m->other_rdma_bytes > 0.01 * (double)payload && !m->err[0])
            snprintf(m->err, sizeof m->err, "http arm moved %.0f bytes over RDMA",
                     m->other_rdma_bytes);
    }
    wb_metrics_free(&before);
    wb_metrics_free(&after);
    /* verify outside the timed window */
    c.type = M_VERIFY;
    if (pool_send(pool, &c, conc, m->err, sizeof m->err) != 0 ||
        pool_collect(pool, reps, cfg->timeout_s, m->err, sizeof m->err) != 0)
        goto dead;
    for (unsigned i = 0; i < pool->n; i++) {
        m->verified_bytes += reps[i].verified_bytes;
        m->bad_bytes += reps[i].bad_bytes;
        m->unverified_bytes += reps[i].unverified_bytes;
        snprintf(m->verify_method, sizeof m->verify_method, "%s", reps[i].verify_method);
        if (!reps[i].ok && !m->err[0])
            snprintf(m->err, sizeof m->err, "verification: %" PRIu64 " bad bytes; %.400s",
                     reps[i].bad_bytes, reps[i].err);
    }
    if (m->bytes != payload && !m->err[0])
        snprintf(m->err, sizeof m->err, "moved %" PRIu64 " of %" PRIu64 " payload bytes", m->bytes,
                 payload);
    m->ok = m->err[0] == 0;
    return 0;
dead:
    wb_metrics_free(&before);
    wb_metrics_free(&after);
    pool_stop(pool, 1);
    return -1;
}

/* ---- cell results ---- */

typedef struct g_lim {
    const char *name;
    double gbps;
} g_lim_t;

static json_t *meas_list_json(g_meas_t *ms, unsigned n, size_t off)
{
    double v[64];
    for (unsigned i = 0; i < n && i < 64; i++)
        v[i] = *(double *)((char *)&ms[i] + off);
    return wb_summary_json(v, n < 64 ? n : 64);
}

#define MEAS_SUMMARY(ms, n, field) meas_list_json((ms), (n), offsetof(g_meas_t, field))

static double meas_median(g_meas_t *ms, unsigned n, size_t off)
{
    double v[64];
    for (unsigned i = 0; i < n && i < 64; i++)
        v[i] = *(double *)((char *)&ms[i] + off);
    return wb_median(v, n < 64 ? n : 64);
}

static json_t *cell_json(const g_cfg_t *cfg, g_op_t op, const g_arm_t *arm, uint64_t size,
                         unsigned conc, unsigned procs, unsigned ops_per_stream,
                         unsigned nobjects, g_meas_t *ms, unsigned n, const g_lim_t *lims,
                         unsigned nlims)
{
    json_t *c = json_object();
    json_object_set_new(c, "op", json_string(op == G_GET ? "get" : "put"));
    json_object_set_new(c, "arm", json_string(arm->name));
    json_object_set_new(c, "transport", json_string(arm->rdma ? "rdma" : "http"));
    json_object_set_new(c, "provider", json_string(n ? ms[0].provider : ""));
    json_object_set_new(c, "size_bytes", json_integer((json_int_t)size));
    json_object_set_new(c, "concurrency", json_integer(conc));
    json_object_set_new(c, "processes", json_integer(procs));
    json_object_set_new(c, "streams_total", json_integer(conc * procs));
    json_object_set_new(c, "ops_per_stream", json_integer(ops_per_stream));
    json_object_set_new(c, "objects", json_integer(nobjects));
    json_object_set_new(c, "repeats", json_integer(n));
    /* per-repeat figures */
    json_t *runs = json_array();
    const char *err = NULL;
    uint64_t vb = 0, bad = 0, unv = 0;
    size_t nl = 0, nf = 0;
    for (unsigned i = 0; i < n; i++) {
        g_meas_t *m = &ms[i];
        double gb = (double)m->bytes / 1e9;
        json_t *ww = json_array();
        for (unsigned k = 0; k < procs; k++)
            json_array_append_new(ww, json_real(m->worker_wall[k]));
        json_t *r = json_pack(
            "{s:I,s:I,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:o,s:o,s:I,s:I,s:I,s:b,s:s?}", "bytes",
            (json_int_t)m->bytes, "ops", (json_int_t)m->ops, "wall_s", m->wall_s,
            "throughput_gbps_bytes", m->gbps, "ops_per_s", m->ops_per_s, "client_cpu_s",
            m->client_cpu_s, "server_cpu_s", m->server_cpu_s, "host_cpu_s", m->host_cpu_s,
            "host_busy_fraction", m->host_busy_fraction, "witness_ratio", m->witness_ratio,
            "worker_wall_s", ww, "metrics_delta",
            m->metrics_delta ? json_incref(m->metrics_delta) : json_object(), "fallbacks",
            (json_int_t)m->fallbacks, "retries", (json_int_t)m->retries, "requests",
            (json_int_t)m->requests, "ok", m->ok, "error", m->ok ? NULL : m->err);
        json_object_set_new(r, "client_cpu_s_per_gb", json_real(gb > 0 ? m->client_cpu_s / gb : 0));
        json_object_set_new(r, "server_cpu_s_per_gb",
                            m->server_cpu_known && gb > 0 ? json_real(m->server_cpu_s / gb)
                                                          : json_null());
        json_object_set_new(r, "host_cpu_s_per_gb", json_real(gb > 0 ? m->host_cpu_s / gb : 0));
        json_object_set_new(r, "witness",
                            json_pack("{s:f,s:f,s:f,s:f}", "bytes", m->witness_bytes, "ops",
                                      m->witness_ops, "other_rdma_bytes", m->other_rdma_bytes,
                                      "settle_s", m->witness_settle_s));
        json_array_append_new(runs, r);
        if (!m->ok && !err)
            err = m->err;
        vb += m->verified_bytes;
        bad += m->bad_bytes;
        unv += m->unverified_bytes;
        nl += m->nlat;
        nf += m->nttfb;
    }
    json_object_set_new(c, "runs", runs);
    /* derived per-repeat series for medians */
    double gbps[64], cpuc[64], cpus[64], cpuh[64], cores[64];
    unsigned nk = n < 64 ? n : 64;
    int srv_known = 1;
    for (unsigned i = 0; i < nk; i++) {
        double gb = (double)ms[i].bytes / 1e9;
        gbps[i] = ms[i].gbps;
        cpuc[i] = gb > 0 ? ms[i].client_cpu_s / gb : 0;
        cpus[i] = gb > 0 ? ms[i].server_cpu_s / gb : 0;
        cpuh[i] = gb > 0 ? ms[i].host_cpu_s / gb : 0;
        cores[i] = ms[i].wall_s > 0 ? ms[i].host_cpu_s / ms[i].wall_s : 0;
        srv_known &= ms[i].server_cpu_known;
    }
    json_object_set_new(c, "throughput_gbps_bytes", wb_summary_json(gbps, nk));
    json_object_set_new(c, "throughput_gib_s",
                        json_real(meas_median(ms, n, offsetof(g_meas_t, gbps)) * 1e9 / WB_GIB));
    json_object_set_new(c, "ops_per_s", MEAS_SUMMARY(ms, n, ops_per_s));
    json_object_set_new(c, "wall_s", MEAS_SUMMARY(ms, n, wall_s));
    json_t *cpu = json_object();
    json_object_set_new(cpu, "client_cpu_s_per_gb", wb_summary_json(cpuc, nk));
    json_object_set_new(cpu, "server_cpu_s_per_gb",
                        srv_known ? wb_summary_json(cpus, nk) : json_null());
    json_object_set_new(cpu, "host_cpu_s_per_gb", wb_summary_json(cpuh, nk));
    json_object_set_new(cpu, "host_cores_used", wb_summary_json(cores, nk));
    double med_cores = wb_median(cores, nk);
    double med_gbps = meas_median(ms, n, offsetof(g_meas_t, gbps));
    json_object_set_new(cpu, "gb_per_cpu_core",
                        med_cores >= 0.1 ? json_real(med_gbps / med_cores) : json_null());
    json_object_set_new(c, "cpu", cpu);
    /* latency over every op of every repeat */
    double *lat = malloc((nl + 1) * sizeof *lat), *tt = malloc((nf + 1) * sizeof *tt);
    size_t il = 0, it = 0;
    for (unsigned i = 0; i < n && lat && tt; i++) {
        memcpy(lat + il, ms[i].lat, ms[i].nlat * sizeof *lat);
        il += ms[i].nlat;
        memcpy(tt + it, ms[i].ttfb, ms[i].nttfb * sizeof *tt);
        it += ms[i].nttfb;
    }
    wb_lat_t ls, ts;
    wb_lat_stats(lat, il, &ls);
    wb_lat_stats(tt, it, &ts);
    json_object_set_new(c, "latency", wb_lat_json(&ls));
    /* time to first byte means something only for http: an RDMA reply's header comes after
     * the bytes have landed */
    json_object_set_new(c, "ttfb", it && !arm->rdma ? wb_lat_json(&ts) : json_null());
    free(lat);
    free(tt);
    /* witness and verification */
    double wr[64];
    for (unsigned i = 0; i < nk; i++)
        wr[i] = ms[i].witness_ratio;
    json_t *wit = wb_summary_json(wr, nk);
    json_object_set_new(wit, "counter",
                        json_string(arm->rdma ? (op == G_GET ? "wharf_rdma_read_bytes_total"
                                                             : "wharf_rdma_write_bytes_total")
                                              : (op == G_GET ? "wharf_http_read_bytes_total"
                                                             : "wharf_http_write_bytes_total")));
    json_object_set_new(wit, "gate", json_real(cfg->witness_min));
    json_object_set_new(c, "witness", wit);
    json_object_set_new(c, "verification",
                        json_pack("{s:s,s:I,s:I,s:I,s:b}", "method",
                                  n ? ms[0].verify_method : "", "bytes_verified",
                                  (json_int_t)vb, "bytes_mismatched", (json_int_t)bad,
                                  "bytes_unverified", (json_int_t)unv, "ok",
                                  n > 0 && bad == 0 && unv == 0));
    json_t *fr = json_object();
    for (unsigned i = 0; i < nlims; i++)
        if (lims[i].gbps > 0)
            json_object_set_new(fr, lims[i].name, json_real(med_gbps / lims[i].gbps));
    json_object_set_new(c, "fraction_of_limits", fr);
    json_object_set_new(c, "status", json_string(err ? "failed" : "ok"));
    json_object_set_new(c, "error", err ? json_string(err) : json_null());
    return c;
}

/* ---- setup: buckets and objects over HTTP ---- */

static unsigned objects_for(const g_cfg_t *cfg, uint64_t size)
{
    if (cfg->objects)
        return cfg->objects;
    uint64_t n = WB_GIB / size;
    return (unsigned)(n < 4 ? 4 : n > 64 ? 64 : n);
}

static wharf_client_t *http_client(const g_cfg_t *cfg, char *err, size_t n)
{
    wharf_client_config_t cc;
    wharf_client_config_init(&cc, sizeof cc);
    cc.endpoint = cfg->endpoint;
    cc.access_key = cfg->ak;
    cc.secret_key = cfg->sk;
    cc.region = cfg->region;
    cc.provider = "none";
    wharf_client_t *c = NULL;
    wharf_status_t rc = wharf_client_create(&cc, &c);
    if (rc != WHARF_OK) {
        snprintf(err, n, "client create: %s: %s", wharf_status_str(rc), wharf_last_error());
        return NULL;
    }
    return c;
}

static int setup_bucket(wharf_client_t *c, const char *bucket, char *err, size_t n)
{
    wharf_status_t rc = wharf_bucket_create(c, bucket);
    if (rc != WHARF_OK && rc != WHARF_ERR_EXISTS) {
        snprintf(err, n, "create bucket %s: %s: %s", bucket, wharf_status_str(rc),
                 wharf_last_error());
        return -1;
    }
    return 0;
}

static int setup_objects(const g_cfg_t *cfg, char *err, size_t n)
{
    wharf_client_t *c = http_client(cfg, err, n);
    if (!c)
        return -1;
    int rc = -1;
    uint8_t *buf = NULL;
    size_t blen = 0;
    double t0 = wb_now();
    uint64_t uploaded = 0;
    if (setup_bucket(c, cfg->bucket_get, err, n) != 0 ||
        setup_bucket(c, cfg->bucket_put, err, n) != 0)
        goto cleanup;
    int need_get = 0;
    for (unsigned k = 0; k < cfg->nops; k++)
        need_get |= cfg->ops[k] == G_GET;
    for (unsigned si = 0; si < cfg->nsizes && need_get; si++) {
        uint64_t size = cfg->sizes[si];
        if (size > blen) {
            wb_free(buf, blen);
            blen = (size_t)size;
            buf = wb_alloc_prefaulted(blen);
            if (!buf) {
                snprintf(err, n, "cannot allocate %zu bytes", blen);
                goto cleanup;
            }
        }
        unsigned nobj = objects_for(cfg, size);
        for (unsigned i = 0; i < nobj; i++) {
            char key[128];
            obj_key(cfg, G_GET, size, i, key, sizeof key);
            wharf_stat_t st;
            wharf_stat_init(&st, sizeof st);
            int have = wharf_object_stat(c, cfg->bucket_get, key, &st) == WHARF_OK &&
                       st.length == size;
            if (have && cfg->skip_upload)
                continue;
            memset(buf, wb_fill_byte(i), size);
            if (have && st.has_crc64nvme && st.crc64nvme == wh_crc64nvme(0, buf, size))
                continue; /* already there with the right bytes */
            wharf_report_t r;
            wharf_report_init(&r, sizeof r);
            wharf_xfer_opts_t o;
            wharf_xfer_opts_init(&o, sizeof o);
            o.transport = WHARF_TRANSPORT_HTTP;
            wharf_status_t prc = wharf_object_put(c, cfg->bucket_get, key, buf, size, &o, &r);
            if (prc != WHARF_OK) {
                snprintf(err, n, "upload %s/%s: %s: %s", cfg->bucket_get, key,
                         wharf_status_str(prc), wharf_last_error());
                goto cleanup;
            }
            uploaded += size;
        }
    }
    if (uploaded)
        fprintf(stderr, "bench: wrote %.2f GB of test objects over HTTP in %.1f s\n",
                (double)uploaded / 1e9, wb_now() - t0);
    rc = 0;
cleanup:
    wb_free(buf, blen);
    wharf_client_destroy(c);
    return rc;
}

static int delete_cb(void *arg, const char *key, uint64_t length, int64_t mtime,
                     const char *etag)
{
    void **a = arg;
    wharf_object_delete(a[0], a[1], key);
    return 0;
}

static void cleanup_put_objects(const g_cfg_t *cfg)
{
    char err[G_ERR];
    wharf_client_t *c = http_client(cfg, err, sizeof err);
    if (!c)
        return;
    void *a[2] = {c, (void *)cfg->bucket_put};
    wharf_object_list(c, cfg->bucket_put, "b1put/", delete_cb, a);
    wharf_client_destroy(c);
}

/* ---- goals of issue 3 (RDMA data path), where the run has the cells ---- */

static json_t *find_cell(json_t *cells, const char *op, const char *arm, uint64_t size,
                         unsigned conc, unsigned procs)
{
    size_t i;
    json_t *c;
    json_array_foreach(cells, i, c)
    {
        if (strcmp(json_string_value(json_object_get(c, "op")), op) == 0 &&
            strcmp(json_string_value(json_object_get(c, "arm")), arm) == 0 &&
            (uint64_t)json_integer_value(json_object_get(c, "size_bytes")) == size &&
            json_integer_value(json_object_get(c, "concurrency")) == conc &&
            json_integer_value(json_object_get(c, "processes")) == procs &&
            json_object_get(c, "runs"))
            return c;
    }
    return NULL;
}

static double cell_med(json_t *c, const char *a, const char *b)
{
    json_t *o = json_object_get(c, a);
    if (b)
        o = json_object_get(o, b);
    return json_number_value(json_object_get(o, "median"));
}

/* Median over repeats of the paired ratio x_r / y_r of a per-run field. */
static json_t *paired_ratio(json_t *x, json_t *y, const char *field)
{
    json_t *rx = json_object_get(x, "runs"), *ry = json_object_get(y, "runs");
    size_t n = WB_MIN(json_array_size(rx), json_array_size(ry));
    double v[64];
    size_t k = 0;
    for (size_t i = 0; i < n && k < 64; i++) {
        double a = json_number_value(json_object_get(json_array_get(rx, i), field));
        double b = json_number_value(json_object_get(json_array_get(ry, i), field));
        if (b > 0)
            v[k++] = a / b;
    }
    return wb_summary_json(v, k);
}

static void goal_add(json_t *goals, const char *name, json_t *ratio, double value, double target,
                     int higher_better, const char *status_err)
{
    json_t *g = json_object();
    json_object_set_new(g, "goal", json_string(name));
    json_object_set_new(g, "value", json_real(value));
    json_object_set_new(g, "target", json_real(target));
    json_object_set_new(g, "paired", ratio ? ratio : json_null());
    int met = higher_better ? value >= target : value <= target;
    json_object_set_new(g, "met", json_boolean(met && !status_err));
    if (status_err)
        json_object_set_new(g, "note", json_string(status_err));
    json_array_append_new(goals, g);
}

static json_t *issue3_goals(const g_cfg_t *cfg, json_t *cells, const wb_limits_t *lim)
{
    json_t *goals = json_array();
    uint64_t size = 256 * WB_MIB;
    unsigned concs[2] = {1, 4};
    double pvw = wb_rate_median(&lim->pvw_1);
    for (unsigned k = 0; k < 2; k++) {
        unsigned conc = concs[k];
        json_t *http_get = find_cell(cells, "get", "http", size, conc, 1);
        json_t *http_put = find_cell(cells, "put", "http", size, conc, 1);
        for (unsigned a = 0; a < cfg->narms; a++) {
            if (!cfg->arms[a].rdma)
                continue;
            const char *an = cfg->arms[a].name;
            json_t *rg = find_cell(cells, "get", an, size, conc, 1);
            json_t *rp = find_cell(cells, "put", an, size, conc, 1);
            char name[160];
            const char *bad = NULL;
            if (rg && strcmp(an, "rdma-shm") == 0 && pvw > 0) {
                bad = json_is_string(json_object_get(rg, "error"))
                          ? json_string_value(json_object_get(rg, "error"))
                          : NULL;
                snprintf(name, sizeof name,
                         "GET 256 MiB c%u: %s / raw process_vm_writev (1 stream) >= 0.85", conc,
                         an);
                goal_add(goals, name, NULL, cell_med(rg, "throughput_gbps_bytes", NULL) / pvw,
                         0.85, 1, bad);
            }
            if (rg && http_get) {
                bad = json_is_string(json_object_get(rg, "error"))
                          ? json_string_value(json_object_get(rg, "error"))
                      : json_is_string(json_object_get(http_get, "error"))
                          ? json_string_value(json_object_get(http_get, "error"))
                          : NULL;
                json_t *pr = paired_ratio(rg, http_get, "throughput_gbps_bytes");
                snprintf(name, sizeof name, "GET 256 MiB c%u: %s / http >= 1.8", conc, an);
                goal_add(goals, name, pr, json_number_value(json_object_get(pr, "median")), 1.8,
                         1, bad);
                pr = paired_ratio(rg, http_get, "client_cpu_s_per_gb");
                snprintf(name, sizeof name,
                         "GET 256 MiB c%u: client CPU-s/GB %s / http <= 0.1", conc, an);
                goal_add(goals, name, pr, json_number_value(json_object_get(pr, "median")), 0.1,
                         0, bad);
            }
            if (rp && http_put) {
                bad = json_is_string(json_object_get(rp, "error"))
                          ? json_string_value(json_object_get(rp, "error"))
                      : json_is_string(json_object_get(http_put, "error"))
                          ? json_string_value(json_object_get(http_put, "error"))
                          : NULL;
                json_t *pr = paired_ratio(rp, http_put, "throughput_gbps_bytes");
                snprintf(name, sizeof name, "PUT 256 MiB c%u: %s / http >= 1.5", conc, an);
                goal_add(goals, name, pr, json_number_value(json_object_get(pr, "median")), 1.5,
                         1, bad);
            }
        }
    }
    return goals;
}

/* ---- the run ---- */

static unsigned ops_per_stream_for(const g_cfg_t *cfg, uint64_t size, unsigned streams)
{
    uint64_t per = size * streams;
    uint64_t want = (cfg->budget + per - 1) / per;
    uint64_t cap = cfg->mem_cap / per;
    if (want > cap)
        want = cap;
    return (unsigned)(want < 1 ? 1 : want);
}

static void print_meas(const g_cfg_t *cfg, g_op_t op, const g_arm_t *arm, uint64_t size,
                       unsigned conc, unsigned procs, unsigned rep, const g_meas_t *m)
{
    double gb = (double)m->bytes / 1e9;
    fprintf(stderr,
            "%-3s %-8s %4" PRIu64 " MiB c%-2u p%u r%u  %7.3f GB/s %8.1f ops/s  cpu-s/GB client "
            "%6.3f server %6.3f host %6.3f  witness %.3f %s%s\n",
            op == G_GET ? "get" : "put", arm->name, size / WB_MIB, conc, procs, rep, m->gbps,
            m->ops_per_s, gb > 0 ? m->client_cpu_s / gb : 0, gb > 0 ? m->server_cpu_s / gb : 0,
            gb > 0 ? m->host_cpu_s / gb : 0, m->witness_ratio, m->ok ? "ok" : "FAILED: ",
            m->ok ? "" : m->err);
}

static json_t *params_json(const g_cfg_t *cfg)
{
    json_t *p = json_object();
    json_t *a = json_array();
    for (unsigned i = 0; i < cfg->nsizes; i++)
        json_array_append_new(a, json_integer((json_int_t)cfg->sizes[i]));
    json_object_set_new(p, "sizes_bytes", a);
    a = json_array();
    for (unsigned i = 0; i < cfg->nconcs; i++)
        json_array_append_new(a, json_integer(cfg->concs[i]));
    json_object_set_new(p, "concurrency", a);
    a = json_array();
    for (unsigned i = 0; i < cfg->nprocs; i++)
        json_array_append_new(a, json_integer(cfg->procs[i]));
    json_object_set_new(p, "processes", a);
    a = json_array();
    for (unsigned i = 0; i < cfg->narms; i++)
        json_array_append_new(a, json_pack("{s:s,s:s,s:s}", "name", cfg->arms[i].name,
                                           "transport", cfg->arms[i].rdma ? "rdma" : "http",
                                           "provider",
                                           cfg->arms[i].rdma ? cfg->arms[i].provider : "none"));
    json_object_set_new(p, "arms", a);
    a = json_array();
    for (unsigned i = 0; i < cfg->nops; i++)
        json_array_append_new(a, json_string(cfg->ops[i] == G_GET ? "get" : "put"));
    json_object_set_new(p, "ops", a);
    json_object_set_new(p, "endpoint", json_string(cfg->endpoint));
    json_object_set_new(p, "bucket_get", json_string(cfg->bucket_get));
    json_object_set_new(p, "bucket_put", json_string(cfg->bucket_put));
    json_object_set_new(p, "repeats", json_integer(cfg->repeats));
    json_object_set_new(p, "budget_bytes_per_measurement", json_integer((json_int_t)cfg->budget));
    json_object_set_new(p, "mem_cap_bytes", json_integer((json_int_t)cfg->mem_cap));
    json_object_set_new(p, "objects_per_size",
                        cfg->objects ? json_integer(cfg->objects)
                                     : json_string("min(64, max(4, 1 GiB / size))"));
    json_object_set_new(p, "op_concurrency", json_integer(cfg->op_conc));
    json_object_set_new(p, "chunk_size", json_integer((json_int_t)cfg->chunk_size));
    json_object_set_new(p, "part_size", json_integer((json_int_t)cfg->part_size));
    json_object_set_new(p, "multipart_threshold", json_integer((json_int_t)cfg->mp_threshold));
    json_object_set_new(p, "client_crc_check", json_boolean(cfg->client_crc));
    json_object_set_new(p, "get_length",
                        json_string(cfg->get_whole ? "WHARF_WHOLE (HEAD + GET)"
                                                   : "known size (one ranged GET per chunk)"));
    json_object_set_new(p, "witness_min", json_real(cfg->witness_min));
    json_object_set_new(
        p, "method",
        json_string("paired arms A B A B per cell over the same objects; ops per stream = "
                    "ceil(budget / (size * streams)) capped by mem_cap (fixed byte budget per "
                    "measurement); one warm-up transfer per stream before the first repeat of "
                    "each cell and arm (untimed); every transfer lands in its own slice, "
                    "verified after the timed window; throughput = bytes / (last worker end - "
                    "first worker start); client CPU = getrusage of the worker processes over "
                    "the window; server CPU = process_cpu_seconds_total delta from /metrics; "
                    "host CPU = /proc/stat busy (total - idle - iowait) delta"));
    json_object_set_new(p, "fill_pattern", json_string("object i = byte (i*37+11)&0xFF"));
    return p;
}

static int run_grid(g_cfg_t *cfg)
{
    char err[G_ERR] = "";
    json_t *root = json_object(), *cells = json_array();
    wb_limits_t lim = {0};
    int failures = 0, rc = 1;
    double t_run = wb_now();
    char ts[32];
    wb_timestamp(ts);
    const char *rdma_prov = "none";
    for (unsigned a = 0; a < cfg->narms; a++)
        if (cfg->arms[a].rdma)
            rdma_prov = cfg->arms[a].provider;

    if (!cfg->no_limits) {
        fprintf(stderr, "bench: measuring this machine's limits (%u x %" PRIu64 " MiB)...\n",
                cfg->limits_reps, cfg->limits_bytes / WB_MIB);
        if (wb_limits_measure(cfg->limits_bytes, cfg->limits_reps, &lim, err, sizeof err) != 0) {
            fprintf(stderr, "bench: limits: %s\n", err);
            goto out;
        }
        fprintf(stderr,
                "bench: limits GB/s: memcpy %.2f, process_vm_writev %.2f (x%u %.2f), "
                "loopback tcp %.2f (x%u %.2f), md5 %.2f\n",
                wb_rate_median(&lim.memcpy_1), wb_rate_median(&lim.pvw_1), lim.streams_n,
                wb_rate_median(&lim.pvw_n), wb_rate_median(&lim.tcp_1), lim.streams_n,
                wb_rate_median(&lim.tcp_n), wb_rate_median(&lim.md5_1));
    }
    g_lim_t lims[] = {{"memcpy_1", wb_rate_median(&lim.memcpy_1)},
                      {"memcpy_n", wb_rate_median(&lim.memcpy_n)},
                      {"process_vm_writev_1", wb_rate_median(&lim.pvw_1)},
                      {"process_vm_writev_n", wb_rate_median(&lim.pvw_n)},
                      {"tcp_loopback_1", wb_rate_median(&lim.tcp_1)},
                      {"tcp_loopback_n", wb_rate_median(&lim.tcp_n)},
                      {"md5_1", wb_rate_median(&lim.md5_1)}};

    if (setup_objects(cfg, err, sizeof err) != 0) {
        fprintf(stderr, "bench: setup: %s\n", err);
        goto out;
    }

    for (unsigned pi = 0; pi < cfg->nprocs; pi++) {
        unsigned procs = cfg->procs[pi];
        /* worker buffers: the largest cell of this process count that fits mem_cap */
        size_t max_buf = 0, max_ops = 0;
        for (unsigned si = 0; si < cfg->nsizes; si++)
            for (unsigned ci = 0; ci < cfg->nconcs; ci++) {
                uint64_t size = cfg->sizes[si];
                unsigned conc = cfg->concs[ci];
                if (size * conc * procs > cfg->mem_cap || conc > 256)
                    continue;
                unsigned ops = ops_per_stream_for(cfg, size, conc * procs);
                max_buf = WB_MAX(max_buf, (size_t)(size * conc * ops));
                max_ops = WB_MAX(max_ops, (size_t)conc * ops);
            }
        if (max_buf == 0)
            continue;
        g_pool_t pool = {0};
        for (unsigned oi = 0; oi < cfg->nops; oi++) {
            g_op_t op = cfg->ops[oi];
            for (unsigned si = 0; si < cfg->nsizes; si++)
                for (unsigned ci = 0; ci < cfg->nconcs; ci++) {
                    uint64_t size = cfg->sizes[si];
                    unsigned conc = cfg->concs[ci];
                    unsigned streams = conc * procs;
                    if (size * streams > cfg->mem_cap || conc > 256) {
                        for (unsigned a = 0; a < cfg->narms; a++) {
                            char why[256];
                            snprintf(why, sizeof why,
                                     "skipped: %u streams x %" PRIu64
                                     " MiB exceed --mem-cap %" PRIu64 " MiB",
                                     streams, size / WB_MIB, cfg->mem_cap / WB_MIB);
                            json_array_append_new(
                                cells, json_pack("{s:s,s:s,s:I,s:i,s:i,s:s,s:s}", "op",
                                                 op == G_GET ? "get" : "put", "arm",
                                                 cfg->arms[a].name, "size_bytes",
                                                 (json_int_t)size, "concurrency", conc,
                                                 "processes", procs, "status", "skipped",
                                                 "error", why));
                        }
                        continue;
                    }
                    unsigned ops = ops_per_stream_for(cfg, size, streams);
                    unsigned nobj = op == G_GET ? objects_for(cfg, size) : 0;
                    g_meas_t ms[G_MAX_ARMS][64];
                    unsigned nm[G_MAX_ARMS] = {0};
                    for (unsigned r = 0; r < cfg->repeats; r++)
                        for (unsigned a = 0; a < cfg->narms; a++) {
                            if (!pool.alive &&
                                pool_start(&pool, cfg, procs, max_buf, max_ops, err,
                                           sizeof err) != 0) {
                                fprintf(stderr, "bench: starting %u workers: %s\n", procs, err);
                                goto out;
                            }
                            g_meas_t *m = &ms[a][nm[a]];
                            if (measure(cfg, &pool, op, a, size, conc, ops, nobj, r == 0, m) !=
                                0)
                                m->ok = 0; /* workers died or hung: restarted next time */
                            nm[a]++;
                            print_meas(cfg, op, &cfg->arms[a], size, conc, procs, r, m);
                        }
                    for (unsigned a = 0; a < cfg->narms; a++) {
                        json_t *c = cell_json(cfg, op, &cfg->arms[a], size, conc, procs, ops,
                                              nobj, ms[a], nm[a], lims,
                                              cfg->no_limits ? 0 : (unsigned)(sizeof lims / sizeof lims[0]));
                        if (strcmp(json_string_value(json_object_get(c, "status")), "ok") != 0)
                            failures++;
                        json_array_append_new(cells, c);
                        for (unsigned k = 0; k < nm[a]; k++)
                            meas_free(&ms[a][k]);
                    }
                }
        }
        if (pool.alive)
            pool_stop(&pool, 0);
    }
    if (!cfg->keep_put_objects)
        for (unsigned oi = 0; oi < cfg->nops; oi++)
            if (cfg->ops[oi] == G_PUT)
                cleanup_put_objects(cfg);

    /* summary, as the seed's results{cells[],peak_gbps_bytes,peak_cell,failures} */
    json_t *res = json_object();
    json_object_set_new(res, "cells", cells);
    json_t *peaks = json_object();
    size_t i;
    json_t *c;
    json_array_foreach(cells, i, c)
    {
        if (!json_object_get(c, "runs") || json_is_string(json_object_get(c, "error")))
            continue;
        char k[64];
        snprintf(k, sizeof k, "%s/%s", json_string_value(json_object_get(c, "op")),
                 json_string_value(json_object_get(c, "arm")));
        double v = cell_med(c, "throughput_gbps_bytes", NULL);
        json_t *pk = json_object_get(peaks, k);
        if (!pk || v > json_number_value(json_object_get(pk, "peak_gbps_bytes")))
            json_object_set_new(
                peaks, k,
                json_pack("{s:f,s:I,s:I,s:I}", "peak_gbps_bytes", v, "size_bytes",
                          json_integer_value(json_object_get(c, "size_bytes")), "concurrency",
                          json_integer_value(json_object_get(c, "concurrency")), "processes",
                          json_integer_value(json_object_get(c, "processes"))));
    }
    json_object_set_new(res, "peaks", peaks);
    json_object_set_new(res, "failures", json_integer(failures));
    json_object_set_new(res, "goals_issue3", issue3_goals(cfg, cells, &lim));
    cells = NULL;

    json_object_set_new(root, "schema", json_string("wharf-bench/1"));
    json_object_set_new(root, "benchmark", json_string(cfg->benchmark));
    json_object_set_new(root, "backend", json_string("wharf"));
    json_object_set_new(root, "params", params_json(cfg));
    json_object_set_new(root, "environment", wb_env_json(rdma_prov));
    json_object_set_new(root, "limits", cfg->no_limits ? json_null() : wb_limits_json(&lim));
    json_object_set_new(root, "results", res);
    json_object_set_new(root, "timestamp", json_string(ts));
    json_object_set_new(root, "wall_s", json_real(wb_now() - t_run));
    char path[1024];
    if (wb_write_result(cfg->results, cfg->benchmark, cfg->tag, "wharf", root, path, sizeof path,
                        err, sizeof err) != 0) {
        fprintf(stderr, "bench: %s\n", err);
        goto out;
    }
    /* goals, if any, on stdout */
    json_t *goals = json_object_get(res, "goals_issue3");
    json_array_foreach(goals, i, c)
    {
        json_t *pr = json_object_get(c, "paired");
        printf("goal %-4s %-70s %.3f", json_is_true(json_object_get(c, "met")) ? "MET" : "MISS",
               json_string_value(json_object_get(c, "goal")),
               json_number_value(json_object_get(c, "value")));
        if (json_is_object(pr))
            printf(" (paired %.3f..%.3f)", json_number_value(json_object_get(pr, "min")),
                   json_number_value(json_object_get(pr, "max")));
        if (json_object_get(c, "note"))
            printf(" [%s]", json_string_value(json_object_get(c, "note")));
        printf("\n");
    }
    printf("%s\n", path);
    fprintf(stderr, "bench: %d failed cells; %.0f s; results in %s\n", failures,
            wb_now() - t_run, path);
    rc = failures ? 1 : 0;
out:
    json_decref(cells);
    json_decref(root);
    return rc;
}

/* ---- arguments ---- */

static int parse_size(const char *s, uint64_t *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || v <= 0)
        return -1;
    uint64_t mul = WB_MIB;
    if (*end == 'K' || *end == 'k')
        mul = 1024, end++;
    else if (*end == 'M' || *end == 'm')
        mul = WB_MIB, end++;
    else if (*end == 'G' || *end == 'g')
        mul = WB_GIB, end++;
    if (*end == 'i' || *end == 'B')
        end++;
    if (*end == 'B')
        end++;
    if (*end)
        return -1;
    *out = (uint64_t)(v * (double)mul);
    return *out ? 0 : -1;
}

static int parse_size_list(const char *s, uint64_t *out, unsigned *n)
{
    char tmp[512];
    snprintf(tmp, sizeof tmp, "%s", s);
    *n = 0;
    for (char *save, *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (*n >= G_MAX_LIST || parse_size(t, &out[*n]) != 0)
            return -1;
        (*n)++;
    }
    return *n ? 0 : -1;
}

static int parse_uint_list(const char *s, unsigned *out, unsigned *n, unsigned max)
{
    char tmp[512];
    snprintf(tmp, sizeof tmp, "%s", s);
    *n = 0;
    for (char *save, *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char *end;
        unsigned long v = strtoul(t, &end, 10);
        if (*n >= G_MAX_LIST || *end || v == 0 || v > max)
            return -1;
        out[(*n)++] = (unsigned)v;
    }
    return *n ? 0 : -1;
}

static int parse_arms(g_cfg_t *cfg, const char *s, const char *provider)
{
    char tmp[256];
    snprintf(tmp, sizeof tmp, "%s", s);
    cfg->narms = 0;
    for (char *save, *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (cfg->narms >= G_MAX_ARMS)
            return -1;
        g_arm_t *a = &cfg->arms[cfg->narms];
        memset(a, 0, sizeof *a);
        if (strcmp(t, "http") == 0) {
            snprintf(a->name, sizeof a->name, "http");
        } else if (strncmp(t, "rdma", 4) == 0 && (t[4] == 0 || t[4] == ':')) {
            a->rdma = 1;
            snprintf(a->provider, sizeof a->provider, "%s", t[4] ? t + 5 : provider);
            const char *short_name = strncmp(a->provider, "ofi+", 4) == 0 ? a->provider + 4
                                                                          : a->provider;
            snprintf(a->name, sizeof a->name, "rdma-%.24s", short_name);
        } else {
            return -1;
        }
        for (unsigned k = 0; k < cfg->narms; k++)
            if (strcmp(cfg->arms[k].name, a->name) == 0)
                return -1;
        cfg->narms++;
    }
    return cfg->narms ? 0 : -1;
}

static void usage(FILE *f)
{
    fprintf(f,
        "usage: wharf bench fetch|put|rdma3 [options]    (B1 grid over libwharf, paired arms)\n"
        "       wharf bench limits [--limits-bytes MIB] [--limits-repeats N]\n"
        "       wharf report RESULTS_DIR [--out DIR]\n"
        "server:\n"
        "  --endpoint URL        default $WHARF_ENDPOINT or http://127.0.0.1:9000\n"
        "  --access-key K --secret-key S   default $WHARF_ACCESS_KEY / $WHARF_SECRET_KEY\n"
        "  --region R            default us-east-1\n"
        "  --unix-socket PATH    for ofi+shm (default $WHARF_UNIX_SOCKET)\n"
        "grid:\n"
        "  --sizes LIST          default 1,4,16,64,256 (MiB; K/M/G suffixes)\n"
        "  --concurrency LIST    streams per process, default 1,4,8,16,32\n"
        "  --processes LIST      client processes, default 1 (e.g. 1,2,4)\n"
        "  --arms LIST           default rdma,http; rdma:PROVIDER names one (rdma:ofi+tcp)\n"
        "  --provider P          provider of a bare 'rdma' arm: default $WHARF_PROVIDER or ofi+shm\n"
        "  --ops LIST            get,put (fetch: get; put: put; rdma3: get,put)\n"
        "  --repeats N           paired repeats per cell (default 3, at least 3 for a report)\n"
        "  --budget MIB          bytes per measurement (default 512)\n"
        "  --mem-cap MIB         client buffer cap over all processes (default 4096)\n"
        "  --objects N           objects per size (default min(64, max(4, 1 GiB/size)))\n"
        "  --op-concurrency N    libwharf requests per transfer (default 1, both arms)\n"
        "  --chunk-size MIB --part-size MIB --multipart-threshold MIB   client config\n"
        "  --client-crc 0|1      libwharf's crc check of landed bytes in the window (default 0;\n"
        "                        every byte is verified after the window anyway)\n"
        "  --witness-min F       gate on server counters (default 0.99)\n"
        "  --limits-bytes MIB --limits-repeats N --no-limits\n"
        "  --results DIR         default results; --tag T adds -T to the file name\n"
        "  --timeout S           per phase of one measurement (default 300)\n"
        "  --skip-upload         trust objects already in the bucket\n"
        "  --keep-put-objects    do not delete b1put/ objects at the end\n"
        "  --get-whole           GET with length WHARF_WHOLE (libwharf HEADs first) instead of\n"
        "                        the known object size (the seed's get_object(size))\n"
        "presets:\n"
        "  rdma3 = --sizes 256 --concurrency 1,4 --ops get,put --arms rdma:ofi+shm,rdma:ofi+tcp,http\n"
        "          (issue 3's goals; the run's JSON has results.goals_issue3)\n");
}

static const char *env_or(const char *a, const char *b, const char *dflt)
{
    const char *v = a ? getenv(a) : NULL;
    if (v && *v)
        return v;
    v = b ? getenv(b) : NULL;
    return v && *v ? v : dflt;
}

static int limits_only(int argc, char **argv)
{
    uint64_t bytes = WB_GIB;
    unsigned reps = 3;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--limits-bytes") == 0 && i + 1 < argc) {
            if (parse_size(argv[++i], &bytes) != 0)
                return 2;
        } else if (strcmp(argv[i], "--limits-repeats") == 0 && i + 1 < argc) {
            reps = (unsigned)atoi(argv[++i]);
        } else {
            usage(stderr);
            return 2;
        }
    }
    wb_limits_t l;
    char err[G_ERR];
    if (wb_limits_measure(bytes, reps ? reps : 1, &l, err, sizeof err) != 0) {
        fprintf(stderr, "wharf bench limits: %s\n", err);
        return 1;
    }
    json_t *o = wb_limits_json(&l);
    json_dumpf(o, stdout, JSON_INDENT(1) | JSON_SORT_KEYS | JSON_REAL_PRECISION(6));
    printf("\n");
    json_decref(o);
    return 0;
}

int wb_bench_main(int argc, char **argv)
{
    if (argc < 1 || !argv[0]) {
        usage(stderr);
        return 2;
    }
    const char *mode = argv[0];
    if (strcmp(mode, "-h") == 0 || strcmp(mode, "--help") == 0 || strcmp(mode, "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(mode, "limits") == 0)
        return limits_only(argc, argv);
    if (strcmp(mode, "report") == 0)
        return wb_report_main(argc - 1, argv + 1);
    static g_cfg_t cfg;
    memset(&cfg, 0, sizeof cfg);
    const char *sizes = "1,4,16,64,256", *concs = "1,4,8,16,32", *procs = "1";
    const char *arms = "rdma,http", *ops = NULL;
    /* A bare "rdma" arm uses --provider, else $WHARF_PROVIDER, else ofi+shm. The CLI exports
     * WHARF_PROVIDER=auto by default; auto would pick shm here too, but an arm must name the
     * provider it measures, so auto and none mean the default. */
    const char *provider = env_or("WHARF_PROVIDER", NULL, "ofi+shm");
    if (strcmp(provider, "auto") == 0 || strcmp(provider, "none") == 0)
        provider = "ofi+shm";
    if (strcmp(mode, "fetch") == 0) {
        cfg.benchmark = "b1-fetch";
        ops = "get";
    } else if (strcmp(mode, "put") == 0) {
        cfg.benchmark = "b1-put";
        ops = "put";
    } else if (strcmp(mode, "rdma3") == 0) {
        cfg.benchmark = "rdma3";
        ops = "get,put";
        sizes = "256";
        concs = "1,4";
        arms = "rdma:ofi+shm,rdma:ofi+tcp,http";
    } else {
        fprintf(stderr, "wharf bench: unknown benchmark '%s'\n", mode);
        usage(stderr);
        return 2;
    }
    snprintf(cfg.endpoint, sizeof cfg.endpoint, "%s",
             env_or("WHARF_ENDPOINT", NULL, "http://127.0.0.1:9000"));
    snprintf(cfg.ak, sizeof cfg.ak, "%s", env_or("WHARF_ACCESS_KEY", "AWS_ACCESS_KEY_ID", ""));
    snprintf(cfg.sk, sizeof cfg.sk, "%s",
             env_or("WHARF_SECRET_KEY", "AWS_SECRET_ACCESS_KEY", ""));
    snprintf(cfg.region, sizeof cfg.region, "%s", env_or("WHARF_REGION", NULL, "us-east-1"));
    snprintf(cfg.unix_socket, sizeof cfg.unix_socket, "%s",
             env_or("WHARF_UNIX_SOCKET", NULL, ""));
    snprintf(cfg.bucket_get, sizeof cfg.bucket_get, "bench-fetch");
    snprintf(cfg.bucket_put, sizeof cfg.bucket_put, "bench-put");
    snprintf(cfg.results, sizeof cfg.results, "results");
    cfg.repeats = 3;
    cfg.budget = 512 * WB_MIB;
    cfg.mem_cap = 4096 * WB_MIB;
    cfg.op_conc = 1;
    cfg.witness_min = 0.99;
    cfg.limits_bytes = WB_GIB;
    cfg.limits_reps = 3;
    cfg.timeout_s = 300;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int used = 1, bad = 0;
#define STR(opt, dst)                                                                          \
    else if (strcmp(a, opt) == 0 && v) snprintf(dst, sizeof dst, "%s", v)
#define SIZE(opt, dst)                                                                         \
    else if (strcmp(a, opt) == 0 && v) bad = parse_size(v, &dst)
        if (0) {
        }
        STR("--endpoint", cfg.endpoint);
        STR("--access-key", cfg.ak);
        STR("--secret-key", cfg.sk);
        STR("--region", cfg.region);
        STR("--unix-socket", cfg.unix_socket);
        STR("--results", cfg.results);
        STR("--tag", cfg.tag);
        STR("--bucket", cfg.bucket_get);
        STR("--put-bucket", cfg.bucket_put);
        SIZE("--budget", cfg.budget);
        SIZE("--mem-cap", cfg.mem_cap);
        SIZE("--chunk-size", cfg.chunk_size);
        SIZE("--part-size", cfg.part_size);
        SIZE("--multipart-threshold", cfg.mp_threshold);
        SIZE("--limits-bytes", cfg.limits_bytes);
        else if (strcmp(a, "--sizes") == 0 && v) sizes = v;
        else if (strcmp(a, "--concurrency") == 0 && v) concs = v;
        else if (strcmp(a, "--processes") == 0 && v) procs = v;
        else if (strcmp(a, "--arms") == 0 && v) arms = v;
        else if (strcmp(a, "--provider") == 0 && v) provider = v;
        else if (strcmp(a, "--ops") == 0 && v) ops = v;
        else if (strcmp(a, "--repeats") == 0 && v) cfg.repeats = (unsigned)atoi(v);
        else if (strcmp(a, "--objects") == 0 && v) cfg.objects = (unsigned)atoi(v);
        else if (strcmp(a, "--op-concurrency") == 0 && v) cfg.op_conc = (unsigned)atoi(v);
        else if (strcmp(a, "--client-crc") == 0 && v) cfg.client_crc = atoi(v) != 0;
        else if (strcmp(a, "--witness-min") == 0 && v) cfg.witness_min = atof(v);
        else if (strcmp(a, "--limits-repeats") == 0 && v) cfg.limits_reps = (unsigned)atoi(v);
        else if (strcmp(a, "--timeout") == 0 && v) cfg.timeout_s = (unsigned)atoi(v);
        else {
            used = 0;
            if (strcmp(a, "--no-limits") == 0)
                cfg.no_limits = 1;
            else if (strcmp(a, "--skip-upload") == 0)
                cfg.skip_upload = 1;
            else if (strcmp(a, "--keep-put-objects") == 0)
                cfg.keep_put_objects = 1;
            else if (strcmp(a, "--get-whole") == 0)
                cfg.get_whole = 1;
            else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
                usage(stdout);
                return 0;
            } else {
                fprintf(stderr, "wharf bench: unknown or incomplete option '%s'\n", a);
                usage(stderr);
                return 2;
            }
        }
#undef STR
#undef SIZE
        if (bad) {
            fprintf(stderr, "wharf bench: bad size '%s' for %s (a number of MiB, or with "
                            "K/M/G)\n", v, a);
            return 2;
        }
        i += used;
    }
    if (parse_size_list(sizes, cfg.sizes, &cfg.nsizes) != 0 ||
        parse_uint_list(concs, cfg.concs, &cfg.nconcs, 256) != 0 ||
        parse_uint_list(procs, cfg.procs, &cfg.nprocs, G_MAX_PROCS) != 0 ||
        parse_arms(&cfg, arms, provider) != 0) {
        fprintf(stderr, "wharf bench: bad --sizes, --concurrency (1..256), --processes (1..%d) "
                        "or --arms (http, rdma, rdma:PROVIDER; no duplicates)\n", G_MAX_PROCS);
        return 2;
    }
    char otmp[64];
    snprintf(otmp, sizeof otmp, "%s", ops);
    for (char *save, *t = strtok_r(otmp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (cfg.nops >= 2 || (strcmp(t, "get") != 0 && strcmp(t, "put") != 0)) {
            fprintf(stderr, "wharf bench: --ops takes get, put or get,put\n");
            return 2;
        }
        cfg.ops[cfg.nops++] = strcmp(t, "get") == 0 ? G_GET : G_PUT;
    }
    if (cfg.repeats < 1 || cfg.repeats > 64 || cfg.op_conc < 1 || cfg.timeout_s < 1 ||
        cfg.witness_min < 0 || cfg.witness_min > 1) {
        fprintf(stderr, "wharf bench: --repeats 1..64, --op-concurrency >= 1, --timeout >= 1, "
                        "--witness-min 0..1\n");
        return 2;
    }
    if (!cfg.ak[0] || !cfg.sk[0]) {
        fprintf(stderr, "wharf bench: no credentials: set WHARF_ACCESS_KEY and WHARF_SECRET_KEY "
                        "(or --access-key/--secret-key)\n");
        return 2;
    }
    if (cfg.repeats < 3)
        fprintf(stderr, "bench: note: %u repeats; the suite's rule is at least 3\n",
                cfg.repeats);
    return run_grid(&cfg);
}

int wb_report_main(int argc, char **argv)
{
    if (argc < 1) {
        fprintf(stderr, "usage: wharf report RESULTS_DIR [--out DIR]\n");
        return 2;
    }
    const char *script = getenv("WHARF_BENCH_REPORT");
    char path[1024];
    if (!script || !*script) {
        snprintf(path, sizeof path, "%s/bench/report.py", WB_SOURCE_DIR);
        script = path;
    }
    char **args = calloc((size_t)argc + 3, sizeof *args);
    if (!args)
        return 1;
    args[0] = "/usr/bin/python3";
    args[1] = (char *)script;
    for (int i = 0; i < argc; i++)
        args[2 + i] = argv[i];
    fflush(NULL);
    execv(args[0], args);
    fprintf(stderr, "wharf report: cannot run /usr/bin/python3 %s: %s\n", script,
            strerror(errno));
    free(args);
    return 1;
}
