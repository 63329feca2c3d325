/* SPDX-License-Identifier: Apache-2.0 */
/* bench/soak's misbehaving clients: slow headers, stalled and cut bodies, garbage, cut
 * responses, a stopped RDMA client, idle sockets and bad signatures, each outcome judged. */
#include "soak.h"

extern char **environ;

/* ---- misbehaving clients ------------------------------------------------------------------- */

static const char *const sb_name[SB_N] = {"slow_headers", "stall_body",   "cut_body", "garbage",
                                          "cut_response", "stopped_rdma", "idle",     "bad_auth"};

/* --bad-kinds "a,b": the behaviours named, round-robin; NULL: all of them. */
int sk_bad_kinds(const char *list, unsigned *kinds, unsigned *n)
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

const char *g_big_key = "bad/big-object";

uint64_t g_big_size;

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

void *sk_bad_main(void *arg)
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
int sk_rdma_child(const char *key, uint64_t size, double duration)
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
