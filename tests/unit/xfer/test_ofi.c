/* SPDX-License-Identifier: Apache-2.0 */
/* The ofi family (ofi_*.c) and the cma family (cma.c), loopback, once per provider (ofi+shm,
 * ofi+tcp): a forked "client" registers memory and packs a token; this process, the "server",
 * writes and reads it in chunks with a window and compares bytes. Also: out-of-region posts
 * refused, a dead or stopped peer fails within a bounded time, the peer cache evicts, and
 * (shm) a token naming another process is refused while that process's memory stays
 * unchanged. */
#include "check.h"
#include "base/util.h"
#include "xfer/xfer.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define BUF_LEN (13u << 20) /* client buffer */
#define REG_OFF 4099u       /* token names [REG_OFF, REG_OFF + REG_LEN) */
#define REG_LEN ((9u << 20) + 7u)
#define TIMEOUT_MS 1500
#define REAP_MS 500

typedef struct child {
    pid_t pid;
    int to, from; /* pipes: commands to the child, replies from it */
    char token[XFER_TOKEN_MAX_LEN + 1];
} child_t;

static unsigned char pat(size_t i, unsigned seed)
{
    return (unsigned char)((i * 2654435761u) >> 13 ^ seed);
}

/* Reads exactly n bytes with a deadline; returns 0 or -1. */
static int read_full(int fd, void *p, size_t n, int timeout_ms)
{
    size_t got = 0;
    uint64_t end = wh_now_ns() + (uint64_t)timeout_ms * 1000000ULL;
    while (got < n) {
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        int left = (int)((end - wh_now_ns()) / 1000000ULL);
        if (wh_now_ns() >= end || poll(&pf, 1, left > 0 ? left : 1) <= 0)
            return -1;
        ssize_t r = read(fd, (char *)p + got, n - got);
        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    return 0;
}

/* The client: registers BUF_LEN bytes of pattern `seed`, sends a token, then serves commands:
 * 'V' verify [REG_OFF, +REG_LEN) holds pattern seed^0xff and the rest pattern seed;
 * 'U' verify all unchanged; 'Q' quit. */
static void child_main(const char *prov, unsigned seed, int in, int out)
{
    xfer_config_t cfg;
    xfer_t *x = NULL;
    xfer_mr_t *mr = NULL;
    char err[256], tok[XFER_TOKEN_MAX_LEN + 1];
    xfer_config_init(&cfg);
    cfg.provider = prov;
    cfg.role = XFER_ROLE_CLIENT;
    cfg.node = "127.0.0.1";
    unsigned char *buf = malloc(BUF_LEN);
    if (!buf || xfer_open(&cfg, &x, err, sizeof err) != WH_OK)
        _exit(2);
    for (size_t i = 0; i < BUF_LEN; i++)
        buf[i] = pat(i, seed);
    if (xfer_mr_reg(x, buf, BUF_LEN, &mr) != WH_OK ||
        xfer_token_pack(x, mr, buf + REG_OFF, REG_LEN, tok, sizeof tok) != WH_OK)
        _exit(3);
    xfer_progress_begin(x);
    uint32_t n = (uint32_t)strlen(tok);
    if (write(out, &n, 4) != 4 || write(out, tok, n) != (ssize_t)n)
        _exit(4);
    for (;;) {
        char c;
        if (read(in, &c, 1) != 1)
            break;
        if (c == 'Q')
            break;
        unsigned char ok = 1;
        for (size_t i = 0; i < BUF_LEN; i++) {
            bool inside = c == 'V' && i >= REG_OFF && i < REG_OFF + REG_LEN;
            unsigned char want = inside ? pat(i - REG_OFF, seed ^ 0xff) : pat(i, seed);
            if (buf[i] != want) {
                ok = 0;
                break;
            }
        }
        if (write(out, &ok, 1) != 1)
            break;
    }
    xfer_progress_end(x);
    xfer_mr_dereg(mr);
    xfer_close(x);
    free(buf);
    _exit(0);
}

static int child_start(child_t *c, const char *prov, unsigned seed)
{
    int a[2], b[2];
    if (pipe(a) || pipe(b))
        return -1;
    c->pid = fork();
    if (c->pid == 0) {
        /* Bounded: a child whose parent died (another child holding its pipe open) ends. */
        alarm(120);
        close(a[1]);
        close(b[0]);
        child_main(prov, seed, a[0], b[1]);
    }
    close(a[0]);
    close(b[1]);
    c->to = a[1];
    c->from = b[0];
    uint32_t n = 0;
    if (read_full(c->from, &n, 4, 10000) || n == 0 || n > XFER_TOKEN_MAX_LEN ||
        read_full(c->from, c->token, n, 2000))
        return -1;
    c->token[n] = '\0';
    return 0;
}

static int child_ask(child_t *c, char cmd)
{
    unsigned char ok = 0;
    if (write(c->to, &cmd, 1) != 1 || read_full(c->from, &ok, 1, 10000))
        return -1;
    return ok;
}

/* Stops a child and returns once it is stopped (SIGSTOP is delivered asynchronously: a
 * transfer started right after kill() could still complete). */
static void stop_child(pid_t pid)
{
    int ws;
    kill(pid, SIGSTOP);
    waitpid(pid, &ws, WUNTRACED);
}

static void child_stop(child_t *c)
{
    char q = 'Q';
    if (write(c->to, &q, 1) != 1)
        kill(c->pid, SIGKILL);
    for (int i = 0; i < 500; i++) {
        if (waitpid(c->pid, NULL, WNOHANG) == c->pid)
            goto closed;
        usleep(10000);
    }
    kill(c->pid, SIGKILL);
    waitpid(c->pid, NULL, 0);
closed:
    close(c->to);
    close(c->from);
}

static xfer_t *server_open(const char *prov, unsigned max_peers)
{
    xfer_config_t cfg;
    xfer_t *x = NULL;
    char err[256];
    xfer_config_init(&cfg);
    cfg.provider = prov;
    cfg.role = XFER_ROLE_SERVER;
    cfg.chunk_size = 1u << 20; /* many ops per post: exercises the window */
    cfg.window = 3;
    cfg.max_peers = max_peers;
    cfg.timeout_ms = TIMEOUT_MS;
    cfg.reap_ms = REAP_MS;
    cfg.node = "127.0.0.1";
    if (xfer_open(&cfg, &x, err, sizeof err) != WH_OK) {
        fprintf(stderr, "server open %s: %s\n", prov, err);
        return NULL;
    }
    return x;
}

static void target_init(xfer_target_t *t, const xfer_token_t *tok, pid_t pid)
{
    memset(t, 0, sizeof *t);
    t->token = tok;
    t->bind_pid = pid;
    t->bind_uid = pid ? getuid() : (uid_t)-1;
    t->bind_host = pid ? NULL : "127.0.0.1";
}

/* Writes pattern seed^0xff into the client's region with tagged posts, reads it back. */
static void roundtrip(xfer_t *s, child_t *c, unsigned seed, pid_t bind)
{
    xfer_token_t tok;
    char err[256];
    xfer_batch_t *b = NULL;
    xfer_target_t tgt;
    unsigned char *src = malloc(REG_LEN), *dst = calloc(1, REG_LEN);
    xfer_mr_t *ms = NULL, *md = NULL;
    CHECK(src && dst);
    for (size_t i = 0; i < REG_LEN; i++)
        src[i] = pat(i, seed ^ 0xff);
    CHECK(xfer_mr_reg(s, src, REG_LEN, &ms) == WH_OK);
    CHECK(xfer_mr_reg(s, dst, REG_LEN, &md) == WH_OK);
    CHECK(xfer_token_parse(c->token, strlen(c->token), &tok, err, sizeof err) == WH_OK);
    CHECK_EQ_U64(tok.size, REG_LEN);
    target_init(&tgt, &tok, bind);
    wh_status_t st = xfer_batch_begin(s, &tgt, &b, err, sizeof err);
    if (st != WH_OK)
        fprintf(stderr, "batch_begin: %s\n", err);
    CHECK(st == WH_OK);
    if (st != WH_OK)
        goto out;
    /* Three posts of uneven sizes in two tags; wait for tag 1 alone, then all. */
    size_t a = (3u << 20) + 5, bsz = (4u << 20) + 1;
    CHECK(xfer_batch_post(b, XFER_OP_WRITE, ms, src, a, 0, 1) == WH_OK);
    CHECK(xfer_batch_post(b, XFER_OP_WRITE, ms, src + a, bsz, a, 2) == WH_OK);
    CHECK(xfer_batch_wait(b, 1) == WH_OK);
    CHECK(xfer_batch_post(b, XFER_OP_WRITE, ms, src + a + bsz, REG_LEN - a - bsz, a + bsz, 1) ==
          WH_OK);
    CHECK(xfer_batch_wait(b, XFER_TAG_ALL) == WH_OK);
    CHECK_EQ_U64(xfer_batch_bytes(b), REG_LEN);
    /* Out of region: refused, nothing moves, batch still usable. */
    CHECK(xfer_batch_post(b, XFER_OP_WRITE, ms, src, 2, REG_LEN - 1, 0) == WH_ERR_INVALID);
    CHECK(xfer_batch_post(b, XFER_OP_WRITE, ms, src, 1, (uint64_t)-1, 0) == WH_ERR_INVALID);
    CHECK(child_ask(c, 'V') == 1);
    CHECK(xfer_batch_post(b, XFER_OP_READ, md, dst, REG_LEN, 0, 3) == WH_OK);
    CHECK(xfer_batch_wait(b, XFER_TAG_ALL) == WH_OK);
    CHECK(memcmp(src, dst, REG_LEN) == 0);
    CHECK_EQ_U64(xfer_batch_bytes(b), 2ull * REG_LEN);
    CHECK(xfer_batch_end(b) == WH_OK);
out:
    xfer_mr_dereg(ms);
    xfer_mr_dereg(md);
    free(src);
    free(dst);
}

static void on_idle(void *arg)
{
    *(volatile int *)arg = 1;
}

/* After the peer died (or stopped), a transfer fails within a bounded time. If ops are still
 * in flight the buffer is only freed once they drained (after `resume`, if given). */
static void expect_dead(xfer_t *s, const char *token, pid_t bind, const char *what, pid_t resume)
{
    static volatile int idle;
    bool busy = false;
    xfer_token_t tok;
    char err[256];
    xfer_batch_t *b = NULL;
    xfer_target_t tgt;
    size_t n = 8u << 20;
    unsigned char *src = calloc(1, n);
    xfer_mr_t *ms = NULL;
    CHECK(xfer_mr_reg(s, src, n, &ms) == WH_OK);
    CHECK(xfer_token_parse(token, strlen(token), &tok, err, sizeof err) == WH_OK);
    target_init(&tgt, &tok, bind);
    idle = 0;
    tgt.on_idle = on_idle;
    tgt.on_idle_arg = (void *)&idle;
    uint64_t t0 = wh_now_ns();
    wh_status_t st = xfer_batch_begin(s, &tgt, &b, err, sizeof err);
    if (st == WH_OK) {
        st = xfer_batch_post(b, XFER_OP_WRITE, ms, src, n, 0, 0);
        if (st == WH_OK)
            st = xfer_batch_wait(b, XFER_TAG_ALL);
        xfer_batch_error(b, err, sizeof err);
        busy = xfer_batch_end(b) == WH_ERR_BUSY; /* ops held until they drain */
    }
    double secs = (double)(wh_now_ns() - t0) / 1e9;
    fprintf(stderr, "  %s: status %s after %.2fs: %s\n", what, wh_status_str(st), secs, err);
    CHECK(st != WH_OK);
    CHECK(secs < TIMEOUT_MS / 1000.0 + 3.0);
    CHECK(err[0] != '\0');
    if (resume)
        kill(resume, SIGCONT);
    for (int i = 0; busy && !idle && i < 500; i++) {
        xfer_progress(s);
        usleep(10000);
    }
    fprintf(stderr, "  %s: ops in flight at end %d, drained %d\n", what, busy, idle);
    if (!busy || idle) {
        xfer_mr_dereg(ms);
        free(src);
    } /* else: never reuse memory a provider may still touch (deliberate leak) */
}

static void test_provider(const char *prov)
{
    fprintf(stderr, "== %s\n", prov);
    bool shm = strcmp(prov, "ofi+shm") == 0;
    xfer_t *s = server_open(prov, 1);
    CHECK(s != NULL);
    if (!s)
        return;
    CHECK_STR(xfer_name(s), prov);
    child_t c1, c2;
    CHECK(child_start(&c1, prov, 0x11) == 0);
    CHECK(child_start(&c2, prov, 0x22) == 0);
    if (shm) {
        roundtrip(s, &c1, 0x11, c1.pid); /* bound: kernel pid, CMA */
        CHECK(child_ask(&c2, 'U') == 1);
        roundtrip(s, &c2, 0x22, 0); /* trusted-host mode: libfabric's shm initiator */
    } else {
        /* max_peers 1: c2 evicts c1, c1 comes back. */
        roundtrip(s, &c1, 0x11, 0);
        roundtrip(s, &c2, 0x22, 0);
        roundtrip(s, &c1, 0x11, 0);
    }
    CHECK(child_ask(&c1, 'V') == 1);

    if (!shm) {
        /* A stopped peer: no progress, no TCP error; the inactivity timeout fails it. */
        stop_child(c2.pid);
        expect_dead(s, c2.token, 0, "stopped peer", c2.pid);
    }
    /* A killed peer. */
    char tok1[XFER_TOKEN_MAX_LEN + 1];
    snprintf(tok1, sizeof tok1, "%s", c1.token);
    pid_t p1 = c1.pid;
    kill(c1.pid, SIGKILL);
    waitpid(c1.pid, NULL, 0);
    close(c1.to);
    close(c1.from);
    expect_dead(s, tok1, shm ? p1 : 0, "killed peer", 0);
    if (shm)
        expect_dead(s, tok1, 0, "killed peer, trusted mode", 0);
    child_stop(&c2);
    xfer_close(s);
}

/* A tcp peer stopped for good mid-transfer: its ops never complete on this endpoint (the
 * connection stays open, nothing is acknowledged). Once the batch has ended, xfer_stalled
 * counts it after REAP_MS; a replacement transport serves another peer meanwhile; closing the
 * stalled transport hands the buffer back (on_idle) with the peer still stopped; and once
 * resumed, the peer is served by the replacement. */
static void test_tcp_stalled_replace(void)
{
    static volatile int idle;
    xfer_t *s = server_open("ofi+tcp", 8), *s2 = NULL;
    CHECK(s != NULL);
    if (!s)
        return;
    child_t a, c;
    CHECK(child_start(&a, "ofi+tcp", 0x44) == 0);
    CHECK(child_start(&c, "ofi+tcp", 0x55) == 0);
    roundtrip(s, &c, 0x55, 0); /* connected */
    stop_child(c.pid);

    size_t n = 8u << 20;
    unsigned char *src = calloc(1, n);
    xfer_mr_t *ms = NULL;
    xfer_token_t tok;
    char err[256];
    xfer_target_t tgt;
    xfer_batch_t *b = NULL;
    CHECK(src && xfer_mr_reg(s, src, n, &ms) == WH_OK);
    CHECK(xfer_token_parse(c.token, strlen(c.token), &tok, err, sizeof err) == WH_OK);
    target_init(&tgt, &tok, 0);
    idle = 0;
    tgt.on_idle = on_idle;
    tgt.on_idle_arg = (void *)&idle;
    CHECK(xfer_batch_begin(s, &tgt, &b, err, sizeof err) == WH_OK);
    wh_status_t st = xfer_batch_post(b, XFER_OP_WRITE, ms, src, n, 0, 0);
    if (st == WH_OK)
        st = xfer_batch_wait(b, XFER_TAG_ALL);
    CHECK(st == WH_ERR_TIMEOUT);
    CHECK(xfer_batch_end(b) == WH_ERR_BUSY); /* ops in flight, the peer never acknowledges */
    CHECK(xfer_stalled(s) == 0);             /* not yet: they may still drain */
    for (int i = 0; i < 100 && !xfer_stalled(s); i++)
        usleep(20000);
    CHECK(xfer_stalled(s) == 1);
    CHECK(!idle);

    s2 = server_open("ofi+tcp", 8);
    CHECK(s2 != NULL);
    if (s2)
        roundtrip(s2, &a, 0x44, 0); /* others are served meanwhile */
    uint64_t t0 = wh_now_ns();
    xfer_mr_dereg(ms);
    xfer_close(s); /* ends the stalled ops: the endpoint and its connections are gone */
    double secs = (double)(wh_now_ns() - t0) / 1e9;
    fprintf(stderr, "  stalled transport closed in %.3fs, buffer released %d\n", secs, idle);
    CHECK(idle);
    CHECK(secs < 2.0);
    kill(c.pid, SIGCONT);
    if (s2) {
        roundtrip(s2, &c, 0x55, 0); /* the resumed peer, over a fresh connection */
        CHECK(child_ask(&c, 'V') == 1);
    }
    child_stop(&a);
    child_stop(&c);
    xfer_close(s2);
    free(src);
}

/* shm: a requester whose token names another process's endpoint is refused, and that
 * process's memory is unchanged, even when the attacker forges a token with its own endpoint
 * but the victim's address (the copy goes to the requester's own pid). */
static void test_shm_attack(void)
{
    fprintf(stderr, "== shm cross-process attack\n");
    xfer_t *s = server_open("ofi+shm", 8);
    CHECK(s != NULL);
    if (!s)
        return;
    child_t victim, attacker;
    CHECK(child_start(&victim, "ofi+shm", 0x33) == 0);
    CHECK(child_start(&attacker, "ofi+shm", 0x44) == 0);
    xfer_token_t vt, at, forged;
    char err[256];
    xfer_batch_t *b = NULL;
    xfer_target_t tgt;
    CHECK(xfer_token_parse(victim.token, strlen(victim.token), &vt, err, sizeof err) == WH_OK);
    CHECK(xfer_token_parse(attacker.token, strlen(attacker.token), &at, err, sizeof err) == WH_OK);

    /* 1: the victim's token, sent by the attacker. */
    target_init(&tgt, &vt, attacker.pid);
    CHECK(xfer_batch_begin(s, &tgt, &b, err, sizeof err) == WH_ERR_AUTH);
    fprintf(stderr, "  refused: %s\n", err);
    CHECK(strstr(err, "process") != NULL);

    /* 2: the attacker's endpoint with the victim's address: allowed, but the bytes can only
     * land in the attacker (the kernel-named pid). */
    forged = at;
    forged.base = vt.base;
    forged.size = vt.size;
    target_init(&tgt, &forged, attacker.pid);
    unsigned char *src = malloc(REG_LEN);
    memset(src, 0xEE, REG_LEN);
    xfer_mr_t *ms = NULL;
    CHECK(xfer_mr_reg(s, src, REG_LEN, &ms) == WH_OK);
    if (xfer_batch_begin(s, &tgt, &b, err, sizeof err) == WH_OK) {
        xfer_batch_post(b, XFER_OP_WRITE, ms, src, REG_LEN, 0, 0);
        xfer_batch_wait(b, XFER_TAG_ALL);
        xfer_batch_end(b);
    }
    /* 3: the victim's token, with a wrong uid claimed for the requester. */
    target_init(&tgt, &vt, victim.pid);
    tgt.bind_uid = getuid() + 1;
    CHECK(xfer_batch_begin(s, &tgt, &b, err, sizeof err) == WH_ERR_AUTH);
    CHECK(child_ask(&victim, 'U') == 1); /* victim untouched */
    xfer_mr_dereg(ms);
    free(src);
    child_stop(&victim);
    child_stop(&attacker);
    xfer_close(s);
}

/* tcp: a loopback HTTP peer may name any address of this host, a remote peer only its own,
 * and nobody a third machine. */
static void test_tcp_host_binding(void)
{
    xfer_t *s = server_open("ofi+tcp", 4);
    CHECK(s != NULL);
    if (!s)
        return;
    struct ifaddrs *ifs = NULL, *i;
    char local[INET_ADDRSTRLEN] = "";
    if (getifaddrs(&ifs) == 0) {
        for (i = ifs; i; i = i->ifa_next)
            if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
                ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr != htonl(INADDR_LOOPBACK)) {
                inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, local,
                          sizeof local);
                break;
            }
        freeifaddrs(ifs);
    }
    const char *cases[][3] = {
        /* token address, HTTP peer, expect ok */
        {"127.0.0.1", "127.0.0.1:5000", "1"},     {"203.0.113.9", "127.0.0.1:5000", "0"},
        {"203.0.113.9", "203.0.113.9:5000", "1"}, {"127.0.0.1", "198.51.100.7:5000", "0"},
        {local, "127.0.0.1:5000", "1"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        if (!cases[k][0][0])
            continue; /* no non-loopback IPv4 interface here */
        struct sockaddr_in sa;
        memset(&sa, 0, sizeof sa);
        sa.sin_family = AF_INET;
        sa.sin_port = htons(9);
        inet_pton(AF_INET, cases[k][0], &sa.sin_addr);
        char tok[XFER_TOKEN_MAX_LEN], err[256];
        xfer_token_t t;
        CHECK(xfer_token_pack_ofi1(0, 16, "tcp;ofi_rxm", &sa, sizeof sa, 1, tok, sizeof tok) ==
              WH_OK);
        CHECK(xfer_token_parse(tok, strlen(tok), &t, err, sizeof err) == WH_OK);
        xfer_target_t tgt;
        target_init(&tgt, &t, 0);
        tgt.bind_host = cases[k][1];
        xfer_batch_t *b = NULL;
        wh_status_t st = xfer_batch_begin(s, &tgt, &b, err, sizeof err);
        if ((st == WH_OK) != (cases[k][2][0] == '1'))
            fprintf(stderr, "  host binding %s from %s: %s %s\n", cases[k][0], cases[k][1],
                    wh_status_str(st), err);
        CHECK((st == WH_OK) == (cases[k][2][0] == '1'));
        if (st == WH_OK)
            CHECK(xfer_batch_end(b) == WH_OK);
        else
            CHECK(st == WH_ERR_AUTH);
    }
    xfer_close(s);
}

static void test_names(void)
{
    CHECK_STR(xfer_fabric_name("ofi+tcp"), "tcp;ofi_rxm");
    CHECK_STR(xfer_fabric_name("ofi+verbs"), "verbs;ofi_rxm");
    CHECK_STR(xfer_wharf_name("shm"), "ofi+shm");
    CHECK(xfer_fabric_name("ofi+nope") == NULL);
    CHECK_STR(xfer_known_names()[0], "ofi+shm");
    xfer_config_t cfg;
    xfer_t *x = NULL;
    char err[256];
    xfer_config_init(&cfg);
    cfg.provider = "ucx+rc";
    cfg.role = XFER_ROLE_SERVER;
    CHECK(xfer_open(&cfg, &x, err, sizeof err) == WH_ERR_UNSUPPORTED);
    CHECK(strstr(err, "ucx+rc") != NULL);
    cfg.provider = "ofi+cxi"; /* known name, no such hardware here */
    wh_status_t st = xfer_open(&cfg, &x, err, sizeof err);
    CHECK(st == WH_ERR_UNSUPPORTED || st == WH_OK);
    if (st == WH_OK)
        xfer_close(x);
}

/* `unit_xfer_test_ofi victim`: the victim process of tests/func/test_rdma_shm_attack.py. It
 * registers 1 MiB of a known pattern over ofi+shm, prints its token and its pid, then answers
 * "check" with "unchanged" or "changed" and exits on "quit" or EOF. */
static int victim_main(void)
{
    xfer_config_t cfg;
    xfer_t *x = NULL;
    xfer_mr_t *mr = NULL;
    char err[256], tok[XFER_TOKEN_MAX_LEN + 1], line[64];
    size_t n = 1u << 20;
    unsigned char *buf = malloc(n);
    xfer_config_init(&cfg);
    cfg.provider = "ofi+shm";
    cfg.role = XFER_ROLE_CLIENT;
    if (!buf || xfer_open(&cfg, &x, err, sizeof err) != WH_OK)
        return 2;
    for (size_t i = 0; i < n; i++)
        buf[i] = pat(i, 0x77);
    if (xfer_mr_reg(x, buf, n, &mr) != WH_OK ||
        xfer_token_pack(x, mr, buf, n, tok, sizeof tok) != WH_OK)
        return 3;
    xfer_progress_begin(x);
    printf("token %s\npid %d\n", tok, (int)getpid());
    fflush(stdout);
    while (fgets(line, sizeof line, stdin) && strncmp(line, "quit", 4) != 0) {
        bool same = true;
        for (size_t i = 0; i < n && same; i++)
            same = buf[i] == pat(i, 0x77);
        printf("%s\n", same ? "unchanged" : "changed");
        fflush(stdout);
    }
    xfer_progress_end(x);
    xfer_mr_dereg(mr);
    xfer_close(x);
    free(buf);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "victim") == 0)
        return victim_main();
    signal(SIGPIPE, SIG_IGN);
    alarm(240); /* the whole test is bounded */
    RUN(test_names);
    test_provider("ofi+shm");
    test_provider("ofi+tcp");
    RUN(test_tcp_stalled_replace);
    RUN(test_shm_attack);
    RUN(test_tcp_host_binding);
    return check_done();
}
