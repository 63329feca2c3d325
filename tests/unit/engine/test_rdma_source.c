/* SPDX-License-Identifier: Apache-2.0 */
/* rdma_get_source (rdma_get.c): a GET whose bytes come from a read callback instead of a
 * file (what an encrypted object's decrypting reader feeds), against forked xfer clients over
 * shm (bound: a direct batch, which a source still takes through the staged pool buffers) and
 * tcp. Whole, ranged and empty GETs land the source's bytes with their crc64nvme; the source is
 * called in order, in spans of at most one pool buffer, exactly over the range asked; a
 * source that fails (a segment that does not authenticate) fails the GET with the offset
 * named, its span never reaches the client, and each status maps to its S3 error. */
#include "check.h"
#include "base/crc.h"
#include "base/util.h"
#include "engine/rdma.h"
#include "engine/rdma_child.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHUNK (1u << 20) /* the engine's buffers here (chunk_size): spans are at most this */

/* The object a source stands for: byte i is a function of i alone, so any range of it can be
 * computed, like the plaintext a decrypting reader returns. */
static uint8_t obj_byte(uint64_t i)
{
    uint64_t s = (i >> 3) * 0x9e3779b97f4a7c15ull;
    s ^= s >> 29;
    return (uint8_t)(s >> (8 * (i & 7)));
}

static uint64_t obj_crc(uint64_t off, uint64_t len)
{
    uint8_t *p = malloc(len ? len : 1);
    for (uint64_t i = 0; i < len; i++)
        p[i] = obj_byte(off + i);
    uint64_t c = wh_crc64nvme(0, p, len);
    free(p);
    return c;
}

typedef struct src {
    uint64_t next; /* where the next read must start (in order, no gaps) */
    uint64_t calls, bytes, max_span;
    bool out_of_order;
    uint64_t fail_at; /* a read whose span holds this offset fails with fail_st */
    wh_status_t fail_st;
} src_t;

static wh_status_t src_read(void *arg, void *buf, size_t n, uint64_t at)
{
    src_t *s = arg;
    if (at != s->next)
        s->out_of_order = true;
    s->calls++;
    s->max_span = WH_MAX(s->max_span, (uint64_t)n);
    if (s->fail_st != WH_OK && s->fail_at >= at && s->fail_at < at + n) {
        memset(buf, 0xA5, n); /* what a failing source left in the buffer: must not be sent */
        return s->fail_st;
    }
    uint8_t *p = buf;
    for (size_t i = 0; i < n; i++)
        p[i] = obj_byte(at + i);
    s->next = at + n;
    s->bytes += n;
    return WH_OK;
}

static rdma_t *open_rdma(void)
{
    rdma_config_t cfg;
    rdma_t *r = NULL;
    rdma_config_init(&cfg);
    cfg.providers = "shm,tcp";
    cfg.mem_budget = 48ull << 20;
    cfg.chunk_size = CHUNK;
    CHECK(rdma_init(&cfg, &r) == WH_OK);
    return r;
}

static void run(rdma_t *r, const char *prov, bool bound)
{
    fprintf(stderr, "== %s\n", prov);
    size_t size = (6u << 20) + 77;
    child_t c;
    CHECK(child_start(&c, prov, size) == 0);
    wh_peer_t peer;
    memset(&peer, 0, sizeof peer);
    if (bound) {
        peer.is_unix = true;
        peer.pid = c.pid;
        peer.uid = getuid();
        snprintf(peer.addr, sizeof peer.addr, "unix");
    } else {
        snprintf(peer.addr, sizeof peer.addr, "127.0.0.1:4242");
    }
    xfer_token_arg_t tok;
    xfer_token_arg_parse(&tok, c.token);
    struct {
        uint64_t off, len;
    } cases[] = {{0, size}, {65536, 65536}, {(1u << 20) - 5, (3u << 20) + 11}, {size - 1, 1}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        uint64_t off = cases[k].off, len = cases[k].len;
        src_t s = {.next = off};
        rdma_result_t res;
        memset(&res, 0, sizeof res);
        wh_status_t st = rdma_get_source(r, &tok, &peer, src_read, &s, off, len, &res);
        if (st != WH_OK)
            fprintf(stderr, "  get %llu+%llu: %d %s\n", (unsigned long long)off,
                    (unsigned long long)len, res.http_status, res.message);
        CHECK(st == WH_OK);
        CHECK_EQ_U64(res.http_status, 200);
        CHECK_EQ_U64(res.bytes, len);
        uint64_t want = obj_crc(off, len);
        CHECK_EQ_U64(res.crc64nvme, want);
        CHECK_EQ_U64(child_crc(&c, 0, len), want); /* landed from the token's base */
        CHECK(!s.out_of_order);
        CHECK_EQ_U64(s.bytes, len);
        CHECK_EQ_U64(s.next, off + len);
        CHECK(s.max_span <= CHUNK);
        CHECK(s.calls >= (len + CHUNK - 1) / CHUNK);
    }

    /* Empty: 200, the source never asked. */
    src_t e = {.next = 0};
    rdma_result_t res;
    CHECK(rdma_get_source(r, &tok, &peer, src_read, &e, 0, 0, &res) == WH_OK);
    CHECK_EQ_U64(res.bytes, 0);
    CHECK_EQ_U64(e.calls, 0);

    /* A span that fails authentication: the GET fails, names the offset, and the bytes of
     * that span never reach the client (its region there keeps what it held). */
    child_fill(&c, 9);
    uint64_t fail_chunk = 3;
    uint64_t before = child_crc(&c, fail_chunk * CHUNK, CHUNK);
    src_t f = {.next = 0, .fail_at = fail_chunk * CHUNK + 1000, .fail_st = WH_ERR_CHECKSUM};
    memset(&res, 0, sizeof res);
    wh_status_t st = rdma_get_source(r, &tok, &peer, src_read, &f, 0, size, &res);
    CHECK(st == WH_ERR_CHECKSUM);
    CHECK_EQ_U64(res.http_status, 500);
    CHECK_STR(res.s3_code, "InternalError");
    char want[160];
    snprintf(want, sizeof want, "offset %llu", (unsigned long long)(fail_chunk * CHUNK));
    CHECK(strstr(res.message, want) != NULL);
    CHECK(strstr(res.message, "not served") != NULL);
    fprintf(stderr, "  tampered: %d %s\n", res.http_status, res.message);
    CHECK(res.bytes <= fail_chunk * CHUNK);
    CHECK_EQ_U64(child_crc(&c, fail_chunk * CHUNK, CHUNK), before);

    /* Other statuses keep their S3 meaning: stored bytes out of reach (a cluster's) are 503. */
    src_t a = {.next = 0, .fail_at = 0, .fail_st = WH_ERR_UNAVAILABLE};
    memset(&res, 0, sizeof res);
    CHECK(rdma_get_source(r, &tok, &peer, src_read, &a, 0, size, &res) == WH_ERR_UNAVAILABLE);
    CHECK_EQ_U64(res.http_status, 503);
    CHECK_STR(res.s3_code, "ServiceUnavailable");
    CHECK_EQ_U64(res.bytes, 0);

    /* The engine still serves the same client after the failures. */
    src_t ok = {.next = 0};
    CHECK(rdma_get_source(r, &tok, &peer, src_read, &ok, 0, size, &res) == WH_OK);
    CHECK_EQ_U64(child_crc(&c, 0, size), obj_crc(0, size));

    /* The region too small: 400 before the source is asked. */
    src_t big = {.next = 0};
    CHECK(rdma_get_source(r, &tok, &peer, src_read, &big, 0, size + 1, &res) != WH_OK);
    CHECK_EQ_U64(res.http_status, 400);
    CHECK_EQ_U64(big.calls, 0);
    /* No source: refused, nothing moved. */
    CHECK(rdma_get_source(r, &tok, &peer, NULL, NULL, 0, size, &res) != WH_OK);
    CHECK_EQ_U64(res.http_status, 500);
    child_stop(&c);
}

/* `unit_engine_test_rdma_source peer <provider> <bytes>`: the client memory of
 * tests/func/test_sse_rdma.py, which sends the signed requests itself (with SSE-C headers over
 * TLS, which libwharf does not send). It registers <bytes> over the provider, prints
 * "token <token>", then answers "load <path>" (the file's bytes into the region from its base)
 * and "save <path> <n>" (the region's first n bytes into the file) with "ok" or "error", and
 * exits on "quit" or EOF. */
static int peer_main(const char *prov, const char *bytes)
{
    xfer_config_t cfg;
    xfer_t *x = NULL;
    xfer_mr_t *mr = NULL;
    char err[256], tok[XFER_TOKEN_MAX_LEN + 1], line[4200];
    size_t n = (size_t)strtoull(bytes, NULL, 0);
    uint8_t *buf = n ? malloc(n) : NULL;
    xfer_config_init(&cfg);
    cfg.provider = prov;
    cfg.role = XFER_ROLE_CLIENT;
    cfg.node = "127.0.0.1";
    if (!buf || xfer_open(&cfg, &x, err, sizeof err) != WH_OK) {
        fprintf(stderr, "peer: cannot open %s: %s\n", prov, err);
        return 2;
    }
    memset(buf, 0, n);
    if (xfer_mr_reg(x, buf, n, &mr) != WH_OK || xfer_token_pack(x, mr, buf, n, tok, sizeof tok))
        return 3;
    xfer_progress_begin(x);
    printf("token %s\n", tok);
    fflush(stdout);
    while (fgets(line, sizeof line, stdin)) {
        char path[4096];
        unsigned long long len = 0;
        bool ok = false;
        if (strncmp(line, "quit", 4) == 0)
            break;
        if (sscanf(line, "load %4095s", path) == 1) {
            FILE *f = fopen(path, "rb");
            if (f) {
                size_t got = fread(buf, 1, n, f);
                ok = ferror(f) == 0 && got <= n;
                fclose(f);
            }
        } else if (sscanf(line, "save %4095s %llu", path, &len) == 2 && len <= n) {
            FILE *f = fopen(path, "wb");
            if (f) {
                ok = fwrite(buf, 1, (size_t)len, f) == (size_t)len;
                ok = fclose(f) == 0 && ok;
            }
        }
        printf("%s\n", ok ? "ok" : "error");
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
    if (argc == 4 && strcmp(argv[1], "peer") == 0)
        return peer_main(argv[2], argv[3]);
    signal(SIGPIPE, SIG_IGN);
    alarm(200);
    rdma_t *r = open_rdma();
    if (r) {
        run(r, "ofi+shm", true);
        run(r, "ofi+tcp", false);
        rdma_fini(r);
    }
    return check_done();
}
