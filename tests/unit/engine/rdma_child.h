/* SPDX-License-Identifier: Apache-2.0 */
/* A forked xfer client for the engine's unit tests: it registers a region, hands its token
 * back, and answers checksum and refill commands over pipes, so the server side under test
 * runs in the test process and the client's memory is another process's. */
#ifndef WH_TEST_ENGINE_RDMA_CHILD_H
#define WH_TEST_ENGINE_RDMA_CHILD_H

#include "check.h"
#include "base/crc.h"
#include "base/util.h"
#include "xfer/xfer.h"

#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct child {
    pid_t pid;
    int to, from;
    char token[XFER_TOKEN_MAX_LEN + 1];
    uint64_t base, size;
} child_t;

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

/* Client: registers size bytes (pattern), sends a token for all of it, then serves
 * 'C' off len -> crc64nvme of that range; 'F' seed -> refill; 'Q'. */
static void child_main(const char *prov, size_t size, int in, int out)
{
    xfer_config_t cfg;
    xfer_t *x = NULL;
    xfer_mr_t *mr = NULL;
    char err[256], tok[XFER_TOKEN_MAX_LEN + 1];
    xfer_config_init(&cfg);
    cfg.provider = prov;
    cfg.role = XFER_ROLE_CLIENT;
    cfg.node = "127.0.0.1";
    unsigned char *buf = malloc(size ? size : 1);
    if (!buf || xfer_open(&cfg, &x, err, sizeof err) != WH_OK)
        _exit(2);
    memset(buf, 0x5c, size);
    if (xfer_mr_reg(x, buf, size ? size : 1, &mr) != WH_OK ||
        xfer_token_pack(x, mr, buf, size, tok, sizeof tok) != WH_OK)
        _exit(3);
    xfer_progress_begin(x);
    uint32_t n = (uint32_t)strlen(tok);
    if (write(out, &n, 4) != 4 || write(out, tok, n) != (ssize_t)n)
        _exit(4);
    for (;;) {
        char c;
        if (read(in, &c, 1) != 1 || c == 'Q')
            break;
        if (c == 'C') {
            uint64_t a[2], crc;
            if (read_full(in, a, sizeof a, 5000))
                break;
            crc = wh_crc64nvme(0, buf + a[0], a[1]);
            if (write(out, &crc, 8) != 8)
                break;
        } else if (c == 'F') {
            unsigned char seed;
            if (read(in, &seed, 1) != 1)
                break;
            for (size_t i = 0; i < size; i++)
                buf[i] = (unsigned char)(i * 31 + seed + (i >> 12));
            if (write(out, &seed, 1) != 1)
                break;
        }
    }
    xfer_progress_end(x);
    xfer_mr_dereg(mr);
    xfer_close(x);
    free(buf);
    _exit(0);
}

static int child_start(child_t *c, const char *prov, size_t size)
{
    int a[2], b[2];
    if (pipe(a) || pipe(b))
        return -1;
    c->pid = fork();
    if (c->pid == 0) {
        close(a[1]);
        close(b[0]);
        child_main(prov, size, a[0], b[1]);
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
    xfer_token_t t;
    char err[200];
    if (xfer_token_parse(c->token, n, &t, err, sizeof err) != WH_OK)
        return -1;
    c->base = t.base;
    c->size = t.size;
    return 0;
}

static uint64_t child_crc(child_t *c, uint64_t off, uint64_t len)
{
    char cmd = 'C';
    uint64_t a[2] = {off, len}, crc = ~0ull;
    if (write(c->to, &cmd, 1) != 1 || write(c->to, a, sizeof a) != sizeof a ||
        read_full(c->from, &crc, 8, 20000))
        return ~0ull;
    return crc;
}

static void child_fill(child_t *c, unsigned char seed)
{
    char cmd[2] = {'F', (char)seed};
    unsigned char ok;
    CHECK(write(c->to, cmd, 2) == 2 && read_full(c->from, &ok, 1, 20000) == 0);
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

#endif
