/* SPDX-License-Identifier: Apache-2.0 */
/* rdma.c against forked xfer clients, over shm and tcp: GET (whole, ranged, empty), PUT,
 * every decline with its status and message, the shm cross-process attack at the server
 * level, address binding for tcp, and the metrics. With WHARF_RDMA_PERF=1 it also measures
 * raw process_vm_writev against rdma_get over shm on a 256 MiB file in page cache.
 * Positional PUTs (rdma_put_at): bytes, checksums, the in-order fallback, failures. */
#include "check.h"
#include "base/crc.h"
#include "base/util.h"
#include "engine/rdma.h"
#include "engine/rdma_child.h"
#include "xfer/xfer.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

/* Stops a child and returns once it is stopped (SIGSTOP is delivered asynchronously: a
 * transfer started right after kill() could still complete). */
static void stop_child(pid_t pid)
{
    int ws;
    kill(pid, SIGSTOP);
    waitpid(pid, &ws, WUNTRACED);
}

static char g_dir[] = "/tmp/wharf-rdma-test-XXXXXX";

/* A file of n pseudo-random bytes; returns an open fd and its crc. */
static int make_file(const char *name, size_t n, uint64_t *crc)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    unsigned char *p = malloc(n ? n : 1);
    uint64_t s = 0x9e3779b97f4a7c15ull ^ n;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        p[i] = (unsigned char)s;
    }
    CHECK(wh_pwrite_all(fd, p, n, 0) == 0);
    *crc = wh_crc64nvme(0, p, n);
    free(p);
    return fd;
}

typedef struct sinkbuf {
    unsigned char *p;
    size_t len, cap;
    int fail_after; /* >0: fail the Nth call */
} sinkbuf_t;

static wh_status_t sink(void *arg, const void *p, size_t n)
{
    sinkbuf_t *s = arg;
    if (s->fail_after > 0 && --s->fail_after == 0)
        return WH_ERR_IO;
    if (s->len + n > s->cap)
        return WH_ERR_TOO_LARGE;
    memcpy(s->p + s->len, p, n);
    s->len += n;
    return WH_OK;
}

static rdma_t *open_rdma(const char *providers, bool trust)
{
    rdma_config_t cfg;
    rdma_t *r = NULL;
    rdma_config_init(&cfg);
    cfg.providers = providers;
    cfg.mem_budget = 48ull << 20;
    cfg.shm_trust_local = trust;
    CHECK(rdma_init(&cfg, &r) == WH_OK);
    return r;
}

static void peer_unix(wh_peer_t *p, pid_t pid)
{
    memset(p, 0, sizeof *p);
    p->is_unix = true;
    p->pid = pid;
    p->uid = getuid();
    snprintf(p->addr, sizeof p->addr, "unix");
}

static void peer_tcp(wh_peer_t *p, const char *addr)
{
    memset(p, 0, sizeof *p);
    snprintf(p->addr, sizeof p->addr, "%s", addr);
}

/* GET whole and ranged, then PUT, through one provider. */
static void get_put(rdma_t *r, const char *prov, const wh_peer_t *peer_tmpl, bool bind_pid)
{
    fprintf(stderr, "== %s\n", prov);
    size_t size = (21u << 20) + 123;
    uint64_t fcrc;
    int fd = make_file("obj", size, &fcrc);
    child_t c;
    CHECK(child_start(&c, prov, size) == 0);
    wh_peer_t peer = *peer_tmpl;
    if (bind_pid)
        peer.pid = c.pid;
    rdma_result_t res;

    CHECK(rdma_check(r, c.token, &peer, size, &res));
    wh_status_t st = rdma_get(r, c.token, &peer, fd, 0, size, &res);
    if (st != WH_OK)
        fprintf(stderr, "get: %d %s\n", res.http_status, res.message);
    CHECK(st == WH_OK);
    CHECK_EQ_U64(res.http_status, 200);
    CHECK_EQ_U64(res.bytes, size);
    CHECK_EQ_U64(res.crc64nvme, fcrc);
    CHECK_EQ_U64(child_crc(&c, 0, size), fcrc);

    /* A range from the middle of the file lands at the token's base. */
    uint64_t off = (5u << 20) + 1, len = (9u << 20) + 7;
    unsigned char *tmp = malloc(len);
    CHECK(wh_pread_all(fd, tmp, len, off) == 0);
    uint64_t rcrc = wh_crc64nvme(0, tmp, len);
    free(tmp);
    CHECK(rdma_get(r, c.token, &peer, fd, off, len, &res) == WH_OK);
    CHECK_EQ_U64(res.bytes, len);
    CHECK_EQ_U64(res.crc64nvme, rcrc);
    CHECK_EQ_U64(child_crc(&c, 0, len), rcrc);
    /* Empty range: 200, nothing moved. */
    CHECK(rdma_get(r, c.token, &peer, fd, 0, 0, &res) == WH_OK);
    CHECK_EQ_U64(res.bytes, 0);
    CHECK_EQ_U64(res.crc64nvme, 0);
    /* Region too small for the range: 400 with the exact message. */
    CHECK(rdma_get(r, c.token, &peer, fd, 0, (uint64_t)size + 1, &res) != WH_OK);
    CHECK_EQ_U64(res.http_status, 400);
    char want[160];
    snprintf(want, sizeof want, "token size 0x%zx is smaller than range length 0x%zx", size,
             size + 1);
    CHECK_STR(res.message, want);

    /* PUT: the client's memory, sunk in order. */
    child_fill(&c, 7);
    uint64_t ccrc = child_crc(&c, 0, size);
    sinkbuf_t sb = {.p = malloc(size), .cap = size};
    CHECK(rdma_put(r, c.token, &peer, sink, &sb, &res) == WH_OK);
    CHECK_EQ_U64(res.http_status, 200);
    CHECK_EQ_U64(res.bytes, size);
    CHECK_EQ_U64(sb.len, size);
    CHECK_EQ_U64(res.crc64nvme, ccrc);
    CHECK_EQ_U64(wh_crc64nvme(0, sb.p, sb.len), ccrc);
    /* A sink failure fails the PUT (the caller then stores nothing). */
    sb.len = 0;
    sb.fail_after = 3;
    CHECK(rdma_put(r, c.token, &peer, sink, &sb, &res) != WH_OK);
    CHECK(res.http_status >= 500);
    free(sb.p);

    /* A dead client: GET fails (bounded), never 200. */
    pid_t dead = c.pid;
    child_stop(&c);
    if (bind_pid)
        peer.pid = dead;
    uint64_t t0 = wh_now_ns();
    CHECK(rdma_get(r, c.token, &peer, fd, 0, size, &res) != WH_OK);
    CHECK(res.http_status >= 400);
    fprintf(stderr, "  dead client: %d %s (%.2fs)\n", res.http_status, res.message,
            (double)(wh_now_ns() - t0) / 1e9);
    CHECK(wh_now_ns() - t0 < 15000000000ull);
    close(fd);
}

static void test_declines(rdma_t *r)
{
    rdma_result_t res;
    wh_peer_t up, tp;
    peer_unix(&up, getpid());
    peer_tcp(&tp, "127.0.0.1:4000");
    char tok[XFER_TOKEN_MAX_LEN];

    CHECK(!rdma_check(r, "nonsense", &up, 1, &res));
    CHECK_EQ_U64(res.http_status, 400);
    CHECK_STR(res.s3_code, "InvalidArgument");
    CHECK(!rdma_check(r, "1000:1:ofi1:shm:0:1", &up, 1, &res));
    CHECK_EQ_U64(res.http_status, 400);
    CHECK(strstr(res.message, "'ep-name'") != NULL);
    CHECK(!rdma_check(r,
                      "00007f1234560000:00100000:0badcafe:0001:00abcd:1:"
                      "fe800000000000000211223344556677",
                      &up, 1, &res));
    CHECK_EQ_U64(res.http_status, 501);
    CHECK_STR(res.s3_code, "NotImplemented");
    CHECK_STR(res.message, "no DC-capable provider is enabled (cuobj dialect needs one)");
    CHECK(!rdma_check(r, "0:1:ofi9:shm:00:1", &up, 1, &res));
    CHECK_EQ_U64(res.http_status, 501);
    CHECK(strstr(res.message, "ofi9") != NULL);
    CHECK(!rdma_check(r, "1000:10:ofi1:verbs;ofi_rxm:0011:1", &up, 1, &res));
    CHECK_EQ_U64(res.http_status, 501);
    CHECK(strstr(res.message, "'ofi+verbs'") && strstr(res.message, "not enabled"));
    CHECK(!rdma_check(r, "1000:10:ofi1:foo:0011:1", &up, 1, &res));
    CHECK_EQ_U64(res.http_status, 501);
    CHECK(strstr(res.message, "unknown RDMA provider 'foo'") != NULL);
    /* shm only over the Unix socket */
    CHECK(xfer_token_pack_ofi1(0x1000, 0x10, "shm", "fi_shm://1:0:0", 15, 1, tok, sizeof tok) ==
          WH_OK);
    CHECK(!rdma_check(r, tok, &tp, 1, &res));
    CHECK_EQ_U64(res.http_status, 501);
    CHECK(strstr(res.message, "Unix socket") != NULL);
    CHECK(rdma_check(r, tok, &up, 0x10, &res));
    CHECK(!rdma_check(r, tok, &up, 0x11, &res));
    CHECK_STR(res.message, "token size 0x10 is smaller than range length 0x11");
}

/* A requester naming another process's shm memory is refused, the victim is unchanged. */
static void test_attack(rdma_t *r)
{
    fprintf(stderr, "== shm attack through rdma_engine\n");
    child_t victim, attacker;
    size_t size = 1u << 20;
    uint64_t fcrc;
    int fd = make_file("attack", size, &fcrc);
    CHECK(child_start(&victim, "ofi+shm", size) == 0);
    CHECK(child_start(&attacker, "ofi+shm", size) == 0);
    uint64_t before = child_crc(&victim, 0, size);
    wh_peer_t peer;
    peer_unix(&peer, attacker.pid);
    rdma_result_t res;
    CHECK(rdma_get(r, victim.token, &peer, fd, 0, size, &res) != WH_OK);
    fprintf(stderr, "  %d %s\n", res.http_status, res.message);
    CHECK_EQ_U64(res.http_status, 403);
    CHECK_STR(res.s3_code, "AccessDenied");
    sinkbuf_t sb = {.p = malloc(size), .cap = size};
    CHECK(rdma_put(r, victim.token, &peer, sink, &sb, &res) != WH_OK);
    CHECK_EQ_U64(res.http_status, 403);
    CHECK_EQ_U64(sb.len, 0); /* nothing read out of the victim either */
    free(sb.p);
    CHECK_EQ_U64(child_crc(&victim, 0, size), before);
    child_stop(&victim);
    child_stop(&attacker);
    close(fd);
}

static void test_tcp_binding(rdma_t *r)
{
    child_t c;
    size_t size = 1u << 20;
    uint64_t fcrc;
    int fd = make_file("bind", size, &fcrc);
    CHECK(child_start(&c, "ofi+tcp", size) == 0);
    wh_peer_t peer;
    peer_tcp(&peer, "10.9.8.7:5555");
    rdma_result_t res;
    CHECK(rdma_get(r, c.token, &peer, fd, 0, size, &res) != WH_OK);
    CHECK_EQ_U64(res.http_status, 403);
    CHECK(strstr(res.message, "not the requester's address") != NULL);
    child_stop(&c);
    close(fd);
}

static void test_metrics(rdma_t *r)
{
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    rdma_metrics(r, &b);
    CHECK(!b.oom && b.data);
    if (!b.data)
        return;
    CHECK(strstr(b.data, "wharf_rdma_read_bytes_total{provider=\"shm\"} ") != NULL);
    CHECK(strstr(b.data, "wharf_rdma_write_ops_total{provider=\"tcp\"} ") != NULL);
    CHECK(strstr(b.data, "wharf_rdma_declines_total{reason=\"peer\"} ") != NULL);
    /* Two successful GETs of the whole object + range per provider, and the MinIO name for
     * GET bytes is "read". */
    uint64_t shm_w = 0, tcp_w = 0, minio_r = 0;
    const char *p;
    if ((p = strstr(b.data, "wharf_rdma_read_bytes_total{provider=\"shm\"} ")))
        shm_w = strtoull(strchr(p, '}') + 2, NULL, 10);
    if ((p = strstr(b.data, "wharf_rdma_read_bytes_total{provider=\"tcp\"} ")))
        tcp_w = strtoull(strchr(p, '}') + 2, NULL, 10);
    if ((p = strstr(b.data, "\nminio_api_rdma_read_bytes_total ")))
        minio_r = strtoull(p + strlen("\nminio_api_rdma_read_bytes_total "), NULL, 10);
    uint64_t per = (21u << 20) + 123 + (9u << 20) + 7;
    CHECK_EQ_U64(shm_w, per);
    CHECK_EQ_U64(tcp_w, per);
    CHECK_EQ_U64(minio_r, 2 * per);
    wh_sbuf_free(&b);
}

static uint64_t metric(rdma_t *r, const char *series);

/* A positional sink: write_at copies into place from any thread; it can refuse to start
 * (in-order fallback) or fail at one offset. */
typedef struct atsink {
    unsigned char *p;
    uint64_t cap, began;
    bool refuse;
    uint64_t fail_at; /* ~0: never */
    unsigned calls;   /* atomic */
    unsigned maps;    /* map_at calls with n > 0 (atomic) */
    uint64_t stripe;  /* what stripe_len answers */
    uint64_t written; /* bytes through write_at (atomic) */
} atsink_t;

static uint64_t at_stripe(void *arg)
{
    return ((atsink_t *)arg)->stripe;
}

static wh_status_t at_begin(void *arg, uint64_t len)
{
    atsink_t *s = arg;
    if (s->refuse)
        return WH_ERR_UNSUPPORTED;
    s->began = len;
    return len <= s->cap ? WH_OK : WH_ERR_TOO_LARGE;
}

static wh_status_t at_write(void *arg, const void *p, size_t n, uint64_t off)
{
    atsink_t *s = arg;
    __atomic_fetch_add(&s->calls, 1, __ATOMIC_RELAXED);
    if (off <= s->fail_at && s->fail_at < off + n)
        return WH_ERR_NO_SPACE;
    if (off + n > s->cap || off + n > s->began)
        return WH_ERR_INVALID;
    memcpy(s->p + off, p, n);
    __atomic_fetch_add(&s->written, n, __ATOMIC_RELAXED);
    return WH_OK;
}

/* The mapped form: the destination buffer itself; fail_at fails the window holding it. */
static wh_status_t at_map(void *arg, uint64_t off, size_t n, void **p)
{
    atsink_t *s = arg;
    if (n)
        __atomic_fetch_add(&s->maps, 1, __ATOMIC_RELAXED);
    if (n && off <= s->fail_at && s->fail_at < off + n)
        return WH_ERR_NO_SPACE;
    if (off + n > s->cap || off + n > s->began)
        return WH_ERR_INVALID;
    *p = s->p + off;
    return WH_OK;
}

/* Sequential sink of the fallback: appends after what at_write would have placed. */
static wh_status_t at_seq(void *arg, const void *p, size_t n)
{
    atsink_t *s = arg;
    if (s->began + n > s->cap)
        return WH_ERR_TOO_LARGE;
    memcpy(s->p + s->began, p, n);
    s->began += n;
    return WH_OK;
}

static void test_put_at(void)
{
    fprintf(stderr, "== positional PUT\n");
    rdma_config_t cfg;
    rdma_t *r = NULL;
    rdma_config_init(&cfg);
    cfg.providers = "shm";
    cfg.mem_budget = 48ull << 20;
    cfg.copy_threads = 8; /* several workers whatever this host has */
    cfg.put_threads = 8;
    CHECK(rdma_init(&cfg, &r) == WH_OK);
    if (!r)
        return;
    /* Sizes around the positional threshold (two 8 MiB windows) and window edges. */
    const size_t sizes[] = {(16u << 20) - 1, 16u << 20, (21u << 20) + 123, (40u << 20) + 5};
    for (size_t i = 0; i < WH_ARRAY_SIZE(sizes); i++) {
        size_t size = sizes[i];
        bool positional = size >= (16u << 20);
        child_t c;
        CHECK(child_start(&c, "ofi+shm", size) == 0);
        wh_peer_t peer;
        peer_unix(&peer, c.pid);
        child_fill(&c, (unsigned char)(11 + i));
        uint64_t ccrc = child_crc(&c, 0, size);
        atsink_t s = {.p = calloc(1, size), .cap = size, .fail_at = ~0ull};
        rdma_sink_at_t at = {.begin = at_begin, .write_at = at_write, .want_crc32c = true};
        rdma_result_t res;
        memset(&res, 0, sizeof res);
        uint64_t ops0 = metric(r, "wharf_rdma_put_positional_total{unit=\"requests\"}");
        xfer_token_arg_t ta;
        xfer_token_arg_parse(&ta, c.token);
        CHECK(rdma_put_at(r, &ta, &peer, at_seq, &at, &s, &res) == WH_OK);
        CHECK_EQ_U64(res.http_status, 200);
        CHECK_EQ_U64(res.bytes, size);
        CHECK_EQ_U64(res.crc64nvme, ccrc);
        CHECK_EQ_U64(wh_crc64nvme(0, s.p, size), ccrc);
        CHECK(res.positional == positional);
        if (positional) {
            CHECK(res.crc32c_set);
            CHECK_EQ_U64(res.crc32c, wh_crc32c(0, s.p, size));
            CHECK(s.calls >= size / (256u << 10));
            CHECK_EQ_U64(metric(r, "wharf_rdma_put_positional_total{unit=\"requests\"}"), ops0 + 1);
        } else {
            CHECK(s.calls == 0);
        }
        if (positional) {
            /* begin refuses: the same bytes go in order through the other sink. */
            memset(s.p, 0, size);
            s.began = 0;
            s.refuse = true;
            memset(&res, 0, sizeof res);
            CHECK(rdma_put_at(r, &ta, &peer, at_seq, &at, &s, &res) == WH_OK);
            CHECK(!res.positional);
            CHECK_EQ_U64(res.crc64nvme, ccrc);
            CHECK_EQ_U64(wh_crc64nvme(0, s.p, size), ccrc);
            /* A write failing in the middle fails the PUT with the sink's status, bounded. */
            s.refuse = false;
            s.fail_at = size / 2;
            memset(&res, 0, sizeof res);
            uint64_t t0 = wh_now_ns();
            CHECK(rdma_put_at(r, &ta, &peer, at_seq, &at, &s, &res) != WH_OK);
            CHECK_EQ_U64(res.http_status, 507);
            CHECK(res.bytes < size);
            CHECK(wh_now_ns() - t0 < 10000000000ull);
            /* Mapped: the bytes land in place by map_at, write_at is never called, the
             * checksums are those of the bytes, and the server counts the mapped PUT. */
            rdma_sink_at_t atm = at;
            atm.map_at = at_map;
            memset(s.p, 0, size);
            s.fail_at = ~0ull;
            s.calls = s.maps = 0;
            uint64_t mb0 = metric(r, "wharf_rdma_put_mapped_bytes_total{unit=\"bytes\"}");
            memset(&res, 0, sizeof res);
            CHECK(rdma_put_at(r, &ta, &peer, at_seq, &atm, &s, &res) == WH_OK);
            CHECK(res.positional);
            CHECK_EQ_U64(res.bytes, size);
            CHECK_EQ_U64(res.crc64nvme, ccrc);
            CHECK(res.crc32c_set);
            CHECK_EQ_U64(res.crc32c, wh_crc32c(0, s.p, size));
            CHECK_EQ_U64(wh_crc64nvme(0, s.p, size), ccrc);
            CHECK(s.calls == 0);
            CHECK_EQ_U64(s.maps, (size + (8u << 20) - 1) / (8u << 20)); /* once a window */
            CHECK_EQ_U64(metric(r, "wharf_rdma_put_mapped_bytes_total{unit=\"bytes\"}"),
                         mb0 + size);
            /* A window that cannot be mapped fails the PUT with the sink's status. */
            s.fail_at = size - 1;
            memset(&res, 0, sizeof res);
            CHECK(rdma_put_at(r, &ta, &peer, at_seq, &atm, &s, &res) != WH_OK);
            CHECK_EQ_U64(res.http_status, 507);
            CHECK_EQ_U64(metric(r, "wharf_rdma_put_mapped_bytes_total{unit=\"bytes\"}"),
                         mb0 + size);
            /* Striped destinations (windows taken stripe by stripe in turn, slots past a
             * short last stripe skipped): every byte written once, the same checksums; a
             * stripe that is no whole number of windows, or the whole object, is one file. */
            const uint64_t stripes[] = {8u << 20, 16u << 20, 12u << 20, 64u << 20};
            for (size_t k = 0; k < WH_ARRAY_SIZE(stripes); k++) {
                rdma_sink_at_t ats = at;
                ats.stripe_len = at_stripe;
                uint64_t st = stripes[k];
                bool striped = st % (8u << 20) == 0 && st < size;
                memset(s.p, 0, size);
                s.fail_at = ~0ull;
                s.stripe = st;
                s.written = 0;
                uint64_t so0 = metric(r, "wharf_rdma_put_striped_total{unit=\"requests\"}");
                uint64_t sf0 = metric(r, "wharf_rdma_put_striped_total{unit=\"stripes\"}");
                memset(&res, 0, sizeof res);
                CHECK(rdma_put_at(r, &ta, &peer, at_seq, &ats, &s, &res) == WH_OK);
                CHECK(res.positional);
                CHECK_EQ_U64(res.bytes, size);
                CHECK_EQ_U64(s.written, size);
                CHECK_EQ_U64(res.crc64nvme, ccrc);
                CHECK_EQ_U64(res.crc32c, wh_crc32c(0, s.p, size));
                CHECK_EQ_U64(wh_crc64nvme(0, s.p, size), ccrc);
                CHECK_EQ_U64(metric(r, "wharf_rdma_put_striped_total{unit=\"requests\"}"),
                             so0 + (striped ? 1 : 0));
                CHECK_EQ_U64(metric(r, "wharf_rdma_put_striped_total{unit=\"stripes\"}"),
                             sf0 + (striped ? (size + st - 1) / st : 0));
            }
        }
        free(s.p);
        child_stop(&c);
    }
    rdma_fini(r);
}

/* The value of one metrics line ("name{labels} value"), or ~0 if absent. */
static uint64_t metric(rdma_t *r, const char *series)
{
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    rdma_metrics(r, &b);
    uint64_t v = ~0ull;
    char want[160];
    snprintf(want, sizeof want, "\n%s ", series);
    const char *p = b.data ? strstr(b.data, want) : NULL;
    if (p)
        v = strtoull(p + strlen(want), NULL, 10);
    wh_sbuf_free(&b);
    return v;
}

/* A sink that blocks until released: a PUT parked in it holds its pool buffers. */
typedef struct parked {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool entered, release;
    rdma_t *r;
    const char *token;
    wh_peer_t peer;
    wh_status_t st;
} parked_t;

static wh_status_t park_sink(void *arg, const void *p, size_t n)
{
    parked_t *k = arg;
    pthread_mutex_lock(&k->mu);
    k->entered = true;
    pthread_cond_broadcast(&k->cv);
    while (!k->release)
        pthread_cond_wait(&k->cv, &k->mu);
    pthread_mutex_unlock(&k->mu);
    return WH_OK;
}

static void *park_put(void *arg)
{
    parked_t *k = arg;
    rdma_result_t res;
    k->st = rdma_put(k->r, k->token, &k->peer, park_sink, k, &res);
    return NULL;
}

/* With every pool buffer held (two clients' PUTs parked in their sinks, one buffer each: a
 * client's share of a two-buffer pool), GETs answer 503 SlowDown, many times over, and each
 * leaves nothing behind: no pipeline (mutex + condvar) stays alive, and once the holders are
 * done the whole pool is free again. A client at its share hears so. */
static void test_busy(void)
{
    fprintf(stderr, "== busy pool\n");
    rdma_config_t cfg;
    rdma_t *r = NULL;
    rdma_config_init(&cfg);
    cfg.providers = "tcp";
    cfg.mem_budget = 8ull << 20; /* two 4 MiB buffers */
    cfg.pool_wait_ms = 20;
    CHECK(rdma_init(&cfg, &r) == WH_OK);
    if (!r)
        return;
    CHECK_EQ_U64(metric(r, "wharf_rdma_pool_buffers{state=\"total\"}"), 2);
    uint64_t fcrc;
    int fd = make_file("busy", 4u << 20, &fcrc);
    child_t a, a2, b;
    CHECK(child_start(&a, "ofi+tcp", 12u << 20) == 0);
    CHECK(child_start(&a2, "ofi+tcp", 12u << 20) == 0);
    CHECK(child_start(&b, "ofi+tcp", 4u << 20) == 0);
    parked_t ks[2] = {
        {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER, .r = r, .token = a.token},
        {.mu = PTHREAD_MUTEX_INITIALIZER,
         .cv = PTHREAD_COND_INITIALIZER,
         .r = r,
         .token = a2.token},
    };
    parked_t *kp = &ks[0];
    pthread_t th[2];
    for (int j = 0; j < 2; j++) {
        parked_t *k = &ks[j];
        peer_tcp(&k->peer, "127.0.0.1:4242");
        CHECK(pthread_create(&th[j], NULL, park_put, k) == 0);
        pthread_mutex_lock(&k->mu);
        for (int i = 0; i < 200 && !k->entered; i++) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 50000000;
            if (ts.tv_nsec >= 1000000000) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000;
            }
            pthread_cond_timedwait(&k->cv, &k->mu, &ts);
        }
        bool parked = k->entered;
        pthread_mutex_unlock(&k->mu);
        CHECK(parked);
    }
    CHECK_EQ_U64(metric(r, "wharf_rdma_pool_buffers{state=\"free\"}"), 0);

    rdma_result_t res;
    int busy = 0;
    for (int i = 0; i < 200; i++) {
        wh_status_t st = rdma_get(r, b.token, &kp->peer, fd, 0, 4u << 20, &res);
        busy += st == WH_ERR_BUSY && res.http_status == 503 &&
                strcmp(res.s3_code, "SlowDown") == 0 && strstr(res.message, "all 2 RDMA");
    }
    CHECK_EQ_U64(busy, 200);
    /* No GET left a pipeline (its mutex and condvar) behind. */
    CHECK_EQ_U64(metric(r, "wharf_rdma_pipelines_active"), 0);
    /* The holder itself is at its share. */
    CHECK(rdma_get(r, a.token, &kp->peer, fd, 0, 4u << 20, &res) == WH_ERR_BUSY);
    CHECK(strstr(res.message, "its share") != NULL);

    for (int j = 0; j < 2; j++) {
        parked_t *k = &ks[j];
        pthread_mutex_lock(&k->mu);
        k->release = true;
        pthread_cond_broadcast(&k->cv);
        pthread_mutex_unlock(&k->mu);
        pthread_join(th[j], NULL);
        CHECK(k->st == WH_OK);
    }
    CHECK_EQ_U64(metric(r, "wharf_rdma_pool_buffers{state=\"free\"}"), 2);
    CHECK_EQ_U64(metric(r, "wharf_rdma_pipelines_active"), 0);
    CHECK(rdma_get(r, b.token, &kp->peer, fd, 0, 4u << 20, &res) == WH_OK);
    CHECK_EQ_U64(child_crc(&b, 0, 4u << 20), fcrc);
    CHECK(metric(r, "wharf_rdma_declines_total{reason=\"busy\"}") == 201);
    child_stop(&a2);
    child_stop(&a);
    child_stop(&b);
    close(fd);
    rdma_fini(r);
}

/* A tcp client stopped mid-GET: the GET fails by the inactivity timeout with its ops still in
 * flight (the client never acknowledges), holding its buffers. A later request finds the
 * transfers stalled, the endpoint is replaced, the old one closes, and every buffer is back
 * while the client is still stopped; other clients are served meanwhile; and once resumed,
 * the stalled client is served again. */
static void test_stalled_client(void)
{
    fprintf(stderr, "== stalled tcp client\n");
    rdma_config_t cfg;
    rdma_t *r = NULL;
    rdma_config_init(&cfg);
    cfg.providers = "tcp";
    cfg.mem_budget = 64ull << 20;
    cfg.timeout_ms = 3000; /* short, but no false timeouts of the others on a loaded machine */
    cfg.reap_ms = 500;
    cfg.pool_wait_ms = 200;
    CHECK(rdma_init(&cfg, &r) == WH_OK);
    if (!r)
        return;
    size_t size = 48u << 20;
    uint64_t fcrc;
    int fd = make_file("stall", size, &fcrc);
    child_t a, c;
    CHECK(child_start(&a, "ofi+tcp", size) == 0);
    CHECK(child_start(&c, "ofi+tcp", size) == 0);
    wh_peer_t peer;
    peer_tcp(&peer, "127.0.0.1:4242");
    rdma_result_t res;
    CHECK(rdma_get(r, c.token, &peer, fd, 0, 1u << 20, &res) == WH_OK); /* connected */
    CHECK(rdma_get(r, a.token, &peer, fd, 0, 1u << 20, &res) == WH_OK);
    uint64_t total = metric(r, "wharf_rdma_pool_buffers{state=\"total\"}");
    CHECK_EQ_U64(total, 16);

    stop_child(c.pid);
    uint64_t t0 = wh_now_ns();
    CHECK(rdma_get(r, c.token, &peer, fd, 0, size, &res) == WH_ERR_TIMEOUT);
    CHECK_EQ_U64(res.http_status, 504);
    fprintf(stderr, "  stopped client: %d %s (%.2fs)\n", res.http_status, res.message,
            (double)(wh_now_ns() - t0) / 1e9);
    uint64_t held = total - metric(r, "wharf_rdma_pool_buffers{state=\"free\"}");
    CHECK(held > 0); /* ops still in flight: the buffers must not be reused yet */

    /* Another client is served at once (the stalled one holds only its share)... */
    CHECK(rdma_get(r, a.token, &peer, fd, 0, size, &res) == WH_OK);
    CHECK_EQ_U64(child_crc(&a, 0, size), fcrc);
    /* ...and within the reap time plus a little, the buffers come back, client still stopped. */
    uint64_t t1 = wh_now_ns();
    for (int i = 0; i < 100 && metric(r, "wharf_rdma_pool_buffers{state=\"free\"}") != total; i++) {
        CHECK(rdma_get(r, a.token, &peer, fd, 0, 1u << 20, &res) == WH_OK);
        usleep(50000);
    }
    double back = (double)(wh_now_ns() - t1) / 1e9;
    fprintf(stderr, "  %llu buffers back %.2fs after the failure\n", (unsigned long long)held,
            back);
    CHECK_EQ_U64(metric(r, "wharf_rdma_pool_buffers{state=\"free\"}"), total);
    CHECK(back < 5.0);
    CHECK_EQ_U64(metric(r, "wharf_rdma_endpoint_replacements_total{provider=\"tcp\"}"), 1);
    CHECK_EQ_U64(metric(r, "wharf_rdma_pipelines_active"), 0);

    kill(c.pid, SIGCONT);
    CHECK(rdma_get(r, c.token, &peer, fd, 0, size, &res) == WH_OK);
    CHECK_EQ_U64(child_crc(&c, 0, size), fcrc);
    child_stop(&a);
    child_stop(&c);
    close(fd);
    rdma_fini(r);
}

/* Best-of-n GB/s of rdma_get (whole file) and rdma_put (whole region) for one
 * provider against child c. */
static void perf_arm(const char *providers, child_t *c, const wh_peer_t *peer, int fd, size_t size,
                     uint64_t fcrc, double *get, double *put)
{
    rdma_t *r = open_rdma(providers, false);
    rdma_result_t res;
    *get = *put = 0;
    if (!r)
        return;
    for (int rep = 0; rep < 4; rep++) {
        uint64_t t0 = wh_now_ns();
        CHECK(rdma_get(r, c->token, peer, fd, 0, size, &res) == WH_OK);
        double gbs = (double)size / (double)(wh_now_ns() - t0);
        *get = gbs > *get ? gbs : *get;
        CHECK_EQ_U64(res.crc64nvme, fcrc);
    }
    sinkbuf_t sb = {.p = malloc(size), .cap = size};
    for (int rep = 0; rep < 4; rep++) {
        sb.len = 0;
        uint64_t t0 = wh_now_ns();
        CHECK(rdma_put(r, c->token, peer, sink, &sb, &res) == WH_OK);
        double gbs = (double)size / (double)(wh_now_ns() - t0);
        *put = gbs > *put ? gbs : *put;
    }
    free(sb.p);
    rdma_fini(r);
}

static void perf(void)
{
    size_t size = 256u << 20;
    uint64_t fcrc;
    fprintf(stderr, "== perf: 256 MiB, page cache\n");
    int fd = make_file("perf", size, &fcrc);
    child_t c, ct;
    CHECK(child_start(&c, "ofi+shm", size) == 0);
    CHECK(child_start(&ct, "ofi+tcp", size) == 0);
    unsigned char *src = malloc(size);
    CHECK(wh_pread_all(fd, src, size, 0) == 0); /* file is now in page cache too */
    double raw = 0, sg, sp, tg, tp;
    for (int rep = 0; rep < 5; rep++) {
        uint64_t t0 = wh_now_ns();
        for (size_t off = 0; off < size; off += 4u << 20) {
            struct iovec l = {src + off, 4u << 20},
                         rr = {(void *)(uintptr_t)(c.base + off), 4u << 20};
            CHECK(process_vm_writev(c.pid, &l, 1, &rr, 1, 0) == (ssize_t)(4u << 20));
        }
        double gbs = (double)size / (double)(wh_now_ns() - t0);
        raw = gbs > raw ? gbs : raw;
    }
    wh_peer_t up, tpeer;
    peer_unix(&up, c.pid);
    peer_tcp(&tpeer, "127.0.0.1:1");
    perf_arm("shm", &c, &up, fd, size, fcrc, &sg, &sp);
    perf_arm("tcp", &ct, &tpeer, fd, size, fcrc, &tg, &tp);
    fprintf(stderr,
            "  raw process_vm_writev %.2f GB/s; shm GET %.2f GB/s (%.2fx raw), PUT %.2f "
            "GB/s; tcp GET %.2f GB/s, PUT %.2f GB/s\n",
            raw, sg, sg / raw, sp, tg, tp);
    printf("perf raw_cma_gbs=%.3f shm_get_gbs=%.3f ratio=%.3f shm_put_gbs=%.3f tcp_get_gbs=%.3f "
           "tcp_put_gbs=%.3f\n",
           raw, sg, sg / raw, sp, tg, tp);
    child_stop(&c);
    child_stop(&ct);
    free(src);
    close(fd);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    alarm(280);
    if (!mkdtemp(g_dir))
        return 1;
    if (getenv("WHARF_RDMA_PERF")) {
        perf();
    } else {
        rdma_t *r = open_rdma("shm,tcp", false);
        if (r) {
            wh_peer_t up, tp;
            peer_unix(&up, 0);
            peer_tcp(&tp, "127.0.0.1:4242");
            get_put(r, "ofi+shm", &up, true);
            get_put(r, "ofi+tcp", &tp, false);
            test_declines(r);
            test_attack(r);
            test_tcp_binding(r);
            test_metrics(r);
            rdma_fini(r);
        }
        test_put_at();
        test_busy();
        test_stalled_client();
        /* providers none: everything declines, metrics still render. */
        rdma_t *n = open_rdma("none", false);
        rdma_result_t res;
        wh_peer_t up;
        peer_unix(&up, getpid());
        CHECK(!rdma_check(n, "1000:10:ofi1:shm:0011:1", &up, 1, &res));
        CHECK_EQ_U64(res.http_status, 501);
        rdma_fini(n);
    }
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", g_dir);
    return check_done();
}
