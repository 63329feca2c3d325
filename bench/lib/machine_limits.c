/* SPDX-License-Identifier: Apache-2.0 */
/* This machine's limits, measured in-process in the same run as every benchmark:
 * - memcpy into prefaulted memory (1 and N threads);
 * - raw process_vm_writev from this process into a prefaulted buffer of a forked child
 *   (what libfabric shm's CMA path does, without any protocol);
 * - raw TCP over 127.0.0.1 (real loopback sockets, not a socketpair) into a forked receiver;
 * - MD5 on one thread (an HTTP PUT computes the MD5 ETag over every byte).
 * GB/s are 1e9 bytes per second. Each kind runs reps times, interleaved with the others. */
#include "wbench.h"

#include "base/crc.h"
#include "base/digest.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#define LIM_CHUNK (4 * WB_MIB) /* bytes per send/recv call */

static void rate_add(wb_rate_t *r, double gbps)
{
    if (r->n < sizeof r->v / sizeof r->v[0])
        r->v[r->n++] = gbps;
}

double wb_rate_median(const wb_rate_t *r)
{
    double tmp[16];
    memcpy(tmp, r->v, r->n * sizeof(double));
    return wb_median(tmp, r->n);
}

/* ---- memcpy ---- */

typedef struct copy_job {
    uint8_t *dst;
    const uint8_t *src;
    size_t len;     /* of this thread's slice */
    uint64_t total; /* bytes to move */
    pid_t pid;      /* for process_vm_writev; 0 = memcpy */
    size_t chunk;   /* bytes per call; 0 = the whole slice */
    int err;
} copy_job_t;

static void *copy_thread(void *arg)
{
    copy_job_t *j = arg;
    uint64_t done = 0;
    size_t chunk = j->chunk ? j->chunk : j->len;
    while (done < j->total) {
        for (size_t off = 0; off < j->len && done < j->total; off += chunk) {
            size_t n = WB_MIN(chunk, j->len - off);
            if (j->pid == 0) {
                memcpy(j->dst + off, j->src + off, n);
            } else {
                struct iovec l = {(void *)(j->src + off), n}, r = {j->dst + off, n};
                ssize_t w = process_vm_writev(j->pid, &l, 1, &r, 1, 0);
                if (w != (ssize_t)n) {
                    j->err = w < 0 ? errno : EIO;
                    return NULL;
                }
            }
            done += n;
        }
    }
    return NULL;
}

/* Runs nthreads copy jobs over disjoint slices of [dst, dst+len); returns GB/s or -errno. */
static double copy_rate(uint8_t *dst, const uint8_t *src, size_t len, uint64_t bytes, pid_t pid,
                        unsigned nthreads)
{
    copy_job_t jobs[8];
    pthread_t th[8];
    size_t slice = len / nthreads / 4096 * 4096;
    double t0 = wb_now();
    for (unsigned i = 0; i < nthreads; i++) {
        jobs[i] =
            (copy_job_t){dst + i * slice, src + i * slice, slice, bytes / nthreads, pid, 0, 0};
        pthread_create(&th[i], NULL, copy_thread, &jobs[i]);
    }
    for (unsigned i = 0; i < nthreads; i++)
        pthread_join(th[i], NULL);
    double dt = wb_now() - t0;
    for (unsigned i = 0; i < nthreads; i++)
        if (jobs[i].err)
            return -(double)jobs[i].err;
    return (double)(bytes / nthreads * nthreads) / dt / 1e9;
}

/* ---- process_vm_writev target: a child holding a prefaulted buffer ---- */

typedef struct pvw_child {
    pid_t pid;
    uint8_t *addr; /* in the child */
    int ctl;       /* our end: closing it ends the child */
} pvw_child_t;

static int pvw_child_start(size_t len, pvw_child_t *c)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
        return -errno;
    pid_t pid = fork();
    if (pid < 0) {
        close(sv[0]);
        close(sv[1]);
        return -errno;
    }
    if (pid == 0) {
        close(sv[0]);
        uint8_t *p = wb_alloc_prefaulted(len);
        uintptr_t a = (uintptr_t)p;
        if (write(sv[1], &a, sizeof a) != sizeof a)
            _exit(1);
        char x;
        while (read(sv[1], &x, 1) > 0) {
        }
        _exit(0);
    }
    close(sv[1]);
    uintptr_t a = 0;
    if (read(sv[0], &a, sizeof a) != sizeof a || a == 0) {
        close(sv[0]);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        return -ENOMEM;
    }
    c->pid = pid;
    c->addr = (uint8_t *)a;
    c->ctl = sv[0];
    return 0;
}

static void pvw_child_stop(pvw_child_t *c)
{
    if (c->pid <= 0)
        return;
    close(c->ctl);
    waitpid(c->pid, NULL, 0);
    c->pid = 0;
}

/* ---- loopback TCP: a forked receiver reads nstreams connections into prefaulted memory ---- */

typedef struct tcp_rx {
    int fd;
    uint8_t *buf;
    size_t len;
    uint64_t total;
} tcp_rx_t;

static void *tcp_rx_thread(void *arg)
{
    tcp_rx_t *r = arg;
    uint64_t got = 0;
    size_t off = 0;
    while (got < r->total) {
        size_t want = WB_MIN(r->len - off, LIM_CHUNK);
        ssize_t n = recv(r->fd, r->buf + off, want, 0);
        if (n <= 0) {
            if (n < 0 && errno == EINTR)
                continue;
            break;
        }
        got += (uint64_t)n;
        off += (size_t)n;
        if (off >= r->len)
            off = 0;
    }
    char ack = got >= r->total ? 'k' : 'x';
    if (send(r->fd, &ack, 1, MSG_NOSIGNAL) != 1)
        return NULL;
    return NULL;
}

typedef struct tcp_tx {
    int fd;
    const uint8_t *buf;
    size_t len;
    uint64_t total;
    int err;
} tcp_tx_t;

static void *tcp_tx_thread(void *arg)
{
    tcp_tx_t *t = arg;
    uint64_t sent = 0;
    size_t off = 0;
    while (sent < t->total) {
        size_t want = WB_MIN(t->len - off, LIM_CHUNK);
        if (want > t->total - sent)
            want = (size_t)(t->total - sent);
        ssize_t n = send(t->fd, t->buf + off, want, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            t->err = errno;
            return NULL;
        }
        sent += (uint64_t)n;
        off += (size_t)n;
        if (off >= t->len)
            off = 0;
    }
    char ack;
    if (recv(t->fd, &ack, 1, MSG_WAITALL) != 1 || ack != 'k')
        t->err = EIO;
    return NULL;
}

/* One measurement: nstreams connections, bytes in total. Returns GB/s or -errno. */
static double tcp_rate(const uint8_t *src, size_t len, uint64_t bytes, unsigned nstreams)
{
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    if (lfd < 0)
        return -(double)errno;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = 0};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t sl = sizeof sa;
    if (bind(lfd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(lfd, 16) != 0 ||
        getsockname(lfd, (struct sockaddr *)&sa, &sl) != 0) {
        int e = errno;
        close(lfd);
        return -(double)e;
    }
    uint64_t per = bytes / nstreams;
    size_t rxlen = 16 * WB_MIB; /* per stream: a socket buffer's worth, reused */
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(lfd);
        return -(double)e;
    }
    if (pid == 0) {
        tcp_rx_t rx[8];
        pthread_t th[8];
        for (unsigned i = 0; i < nstreams; i++) {
            rx[i].fd = accept(lfd, NULL, NULL);
            if (rx[i].fd < 0)
                _exit(1);
            rx[i].buf = wb_alloc_prefaulted(rxlen);
            rx[i].len = rxlen;
            rx[i].total = per;
        }
        char go = 'g';
        for (unsigned i = 0; i < nstreams; i++)
            if (send(rx[i].fd, &go, 1, MSG_NOSIGNAL) != 1)
                _exit(1);
        for (unsigned i = 0; i < nstreams; i++)
            pthread_create(&th[i], NULL, tcp_rx_thread, &rx[i]);
        for (unsigned i = 0; i < nstreams; i++)
            pthread_join(th[i], NULL);
        _exit(0);
    }
    close(lfd);
    tcp_tx_t tx[8];
    pthread_t th[8];
    unsigned opened = 0;
    double r = 0;
    for (; opened < nstreams; opened++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
            r = -(double)errno;
            if (fd >= 0)
                close(fd);
            break;
        }
        tx[opened] = (tcp_tx_t){fd, src, len, per, 0};
    }
    if (opened == nstreams) {
        /* wait until the receiver has accepted every connection and allocated its buffers */
        for (unsigned i = 0; i < nstreams; i++) {
            char go;
            if (recv(tx[i].fd, &go, 1, MSG_WAITALL) != 1)
                r = -EIO;
        }
    }
    if (r == 0) {
        double t0 = wb_now();
        for (unsigned i = 0; i < nstreams; i++)
            pthread_create(&th[i], NULL, tcp_tx_thread, &tx[i]);
        for (unsigned i = 0; i < nstreams; i++)
            pthread_join(th[i], NULL);
        double dt = wb_now() - t0;
        r = (double)(per * nstreams) / dt / 1e9;
        for (unsigned i = 0; i < nstreams; i++)
            if (tx[i].err)
                r = -(double)tx[i].err;
    }
    for (unsigned i = 0; i < opened; i++)
        close(tx[i].fd);
    if (r <= 0)
        kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return r;
}

static double md5_rate(const uint8_t *src, size_t len, uint64_t bytes)
{
    wh_md5_t m;
    if (wh_md5_init(&m) != 0)
        return -ENOMEM;
    double t0 = wb_now();
    uint64_t done = 0;
    while (done < bytes) {
        size_t n = (size_t)WB_MIN(len, bytes - done);
        wh_md5_update(&m, src, n);
        done += n;
    }
    uint8_t out[WH_MD5_LEN];
    wh_md5_final(&m, out);
    return (double)bytes / (wb_now() - t0) / 1e9;
}

/* crc64nvme over a 256 KiB piece that stays in cache, as the PUT's copy threads run it. */
static double crc64_rate(const uint8_t *src, size_t len, uint64_t bytes)
{
    size_t piece = WB_MIN(len, (size_t)256 << 10);
    uint64_t c = 0, done = 0;
    double t0 = wb_now();
    while (done < bytes) {
        size_t n = (size_t)WB_MIN((uint64_t)piece, bytes - done);
        c = wh_crc64nvme(c, src, n);
        done += n;
    }
    double t = wb_now() - t0;
    __asm__ volatile("" : : "r"(c));
    return (double)bytes / t / 1e9;
}

int wb_limits_measure(uint64_t bytes, unsigned reps, wb_limits_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned nstreams = ncpu < 1 ? 1 : ncpu > 8 ? 8 : (unsigned)ncpu;
    size_t len = 256 * WB_MIB;
    if (bytes < len)
        len = (size_t)bytes;
    if (reps > 16)
        reps = 16;
    out->streams_n = nstreams;
    out->bytes = bytes;
    double t0 = wb_now();
    int rc = -1;
    pvw_child_t child = {0};
    uint8_t *src = wb_alloc_prefaulted(len), *dst = wb_alloc_prefaulted(len);
    if (!src || !dst) {
        snprintf(err, errlen, "cannot allocate 2 x %zu bytes for the limits", len);
        goto cleanup;
    }
    int e = pvw_child_start(len, &child);
    if (e != 0) {
        snprintf(err, errlen, "cannot start the process_vm_writev target child: %s", strerror(-e));
        goto cleanup;
    }
    for (unsigned r = 0; r < reps; r++) {
        struct {
            wb_rate_t *rate;
            double v;
            const char *what;
        } m[8];
        m[0].rate = &out->memcpy_1, m[0].what = "memcpy";
        m[0].v = copy_rate(dst, src, len, bytes, 0, 1);
        m[1].rate = &out->pvw_1, m[1].what = "process_vm_writev";
        m[1].v = copy_rate(child.addr, src, len, bytes, child.pid, 1);
        m[2].rate = &out->tcp_1, m[2].what = "loopback tcp";
        m[2].v = tcp_rate(src, len, bytes, 1);
        m[3].rate = &out->md5_1, m[3].what = "md5";
        m[3].v = md5_rate(src, len, bytes / 4);
        m[4].rate = &out->memcpy_n, m[4].what = "memcpy (N threads)";
        m[4].v = copy_rate(dst, src, len, bytes, 0, nstreams);
        m[5].rate = &out->pvw_n, m[5].what = "process_vm_writev (N threads)";
        m[5].v = copy_rate(child.addr, src, len, bytes, child.pid, nstreams);
        m[6].rate = &out->tcp_n, m[6].what = "loopback tcp (N streams)";
        m[6].v = tcp_rate(src, len, bytes, nstreams);
        m[7].rate = &out->crc64_1, m[7].what = "crc64nvme";
        m[7].v = crc64_rate(src, len, bytes);
        for (int i = 0; i < 8; i++) {
            if (m[i].v <= 0) {
                snprintf(err, errlen, "limit %s failed: %s", m[i].what, strerror((int)-m[i].v));
                goto cleanup;
            }
            rate_add(m[i].rate, m[i].v);
        }
    }
    rc = 0;
cleanup:
    pvw_child_stop(&child);
    wb_free(src, len);
    wb_free(dst, len);
    out->wall_s = wb_now() - t0;
    return rc;
}

static json_t *rate_json(const wb_rate_t *r)
{
    json_t *o = wb_summary_json(r->v, r->n);
    return o;
}

json_t *wb_limits_json(const wb_limits_t *l)
{
    json_t *o = json_object();
    json_object_set_new(o, "unit", json_string("GB/s (1e9 bytes/s)"));
    json_object_set_new(o, "bytes_per_measurement", json_integer((json_int_t)l->bytes));
    json_object_set_new(o, "streams_n", json_integer(l->streams_n));
    json_object_set_new(o, "wall_s", json_real(l->wall_s));
    json_object_set_new(o, "memcpy_1", rate_json(&l->memcpy_1));
    json_object_set_new(o, "memcpy_n", rate_json(&l->memcpy_n));
    json_object_set_new(o, "process_vm_writev_1", rate_json(&l->pvw_1));
    json_object_set_new(o, "process_vm_writev_n", rate_json(&l->pvw_n));
    json_object_set_new(o, "tcp_loopback_1", rate_json(&l->tcp_1));
    json_object_set_new(o, "tcp_loopback_n", rate_json(&l->tcp_n));
    json_object_set_new(o, "md5_1", rate_json(&l->md5_1));
    json_object_set_new(o, "crc64nvme_1", rate_json(&l->crc64_1));
    json_object_set_new(o, "crc64nvme_impl", json_string(wh_crc64nvme_impl()));
    json_object_set_new(
        o, "method",
        json_string("memcpy and process_vm_writev, one call per thread slice, "
                    "between prefaulted 256 MiB buffers (the target a forked child); "
                    "tcp over 127.0.0.1 into a forked receiver; md5 on one "
                    "thread; crc64nvme on one thread over a 256 KiB piece in cache; kinds "
                    "interleaved per repeat"));
    return o;
}
