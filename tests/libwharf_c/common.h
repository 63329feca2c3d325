/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers for the libwharf C test programs (tests/libwharf_c/). They use only the public ABI.
 * A pytest driver (tests/func/test_libwharf.py) starts a real wharfd and runs each program with
 * WHARF_ENDPOINT, WHARF_ACCESS_KEY, WHARF_SECRET_KEY, and for RDMA WHARF_PROVIDER (ofi+shm,
 * ofi+tcp, none) and WHARF_UNIX_SOCKET. A program exits 0 when every check passed; a failed
 * check prints file:line, what was expected and wharf_last_error(), and exits 1. */
#ifndef WHARF_TESTS_CLIENT_COMMON_H
#define WHARF_TESTS_CLIENT_COMMON_H

#include "wharf/wharf.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define TC_CHECK(cond, ...)                                                                        \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond);               \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, " (last error: %s)\n", wharf_last_error());                            \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* A call that must succeed. */
#define TC_OK(call)                                                                                \
    do {                                                                                           \
        wharf_status_t st_ = (call);                                                               \
        TC_CHECK(st_ == WHARF_OK, "%s returned %s", #call, wharf_status_str(st_));                 \
    } while (0)

/* A call that must fail with a given status. */
#define TC_ERR(call, want)                                                                         \
    do {                                                                                           \
        wharf_status_t st_ = (call);                                                               \
        TC_CHECK(st_ == (want), "%s returned %s, wanted %s", #call, wharf_status_str(st_),         \
                 wharf_status_str(want));                                                          \
    } while (0)

static inline const char *tc_env(const char *name, const char *def)
{
    const char *v = getenv(name);
    return v && *v ? v : def;
}

static inline double tc_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Client settings for a test; zero fields keep libwharf's defaults. */
typedef struct tc_opts {
    const char *provider; /* NULL: $WHARF_PROVIDER, else "none" */
    wharf_fallback_t fallback;
    unsigned concurrency;
    uint64_t chunk_size, multipart_threshold, part_size;
    unsigned timeout_ms;
    int max_retries; /* -1: default */
} tc_opts_t;

static inline wharf_client_t *tc_client(const tc_opts_t *o)
{
    wharf_client_config_t cfg;
    wharf_client_config_init(&cfg, sizeof cfg);
    cfg.endpoint = tc_env("WHARF_ENDPOINT", "http://127.0.0.1:9000");
    cfg.access_key = tc_env("WHARF_ACCESS_KEY", "wharfadmin");
    cfg.secret_key = tc_env("WHARF_SECRET_KEY", "wharfadmin-secret");
    cfg.provider = o && o->provider ? o->provider : tc_env("WHARF_PROVIDER", "none");
    cfg.unix_socket = tc_env("WHARF_UNIX_SOCKET", NULL);
    if (o) {
        cfg.fallback = o->fallback;
        if (o->concurrency)
            cfg.concurrency = o->concurrency;
        if (o->chunk_size)
            cfg.chunk_size = o->chunk_size;
        if (o->multipart_threshold)
            cfg.multipart_threshold = o->multipart_threshold;
        if (o->part_size)
            cfg.part_size = o->part_size;
        if (o->timeout_ms)
            cfg.timeout_ms = o->timeout_ms;
        if (o->max_retries >= 0)
            cfg.max_retries = (unsigned)o->max_retries;
    }
    wharf_client_t *c = NULL;
    TC_OK(wharf_client_create(&cfg, &c));
    return c;
}

/* The transport a test asks for: argv word "rdma" / "http" / "auto". */
static inline wharf_transport_t tc_transport(const char *s)
{
    if (!strcmp(s, "rdma"))
        return WHARF_TRANSPORT_RDMA;
    if (!strcmp(s, "http"))
        return WHARF_TRANSPORT_HTTP;
    return WHARF_TRANSPORT_AUTO;
}

/* Anonymous memory, prefaulted unless noreserve. */
static inline uint8_t *tc_alloc(uint64_t n, bool noreserve)
{
    void *p = mmap(NULL, n ? n : 1, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | (noreserve ? MAP_NORESERVE : 0), -1, 0);
    TC_CHECK(p != MAP_FAILED, "mmap of %" PRIu64 " bytes failed", n);
    return p;
}

static inline void tc_free(void *p, uint64_t n)
{
    munmap(p, n ? n : 1);
}

/* The byte at object offset i of pattern seed: position-dependent, so a misplaced range is
 * caught, and computable without keeping a copy. */
static inline uint64_t tc_word(uint64_t seed, uint64_t w)
{
    uint64_t x = (w + 1) * 0x9E3779B97F4A7C15ull ^ seed * 0xC2B2AE3D27D4EB4Full;
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 29;
    return x;
}

static inline uint8_t tc_byte(uint64_t seed, uint64_t i)
{
    return (uint8_t)(tc_word(seed, i >> 3) >> (8 * (i & 7)));
}

/* Fills p[0..n) with the pattern bytes for object offsets [off, off+n). */
static inline void tc_fill(uint8_t *p, uint64_t n, uint64_t seed, uint64_t off)
{
    uint64_t i = 0;
    while (i < n && ((off + i) & 7))
        p[i] = tc_byte(seed, off + i), i++;
    for (; i + 8 <= n; i += 8) {
        uint64_t v = tc_word(seed, (off + i) >> 3);
        memcpy(p + i, &v, 8);
    }
    for (; i < n; i++)
        p[i] = tc_byte(seed, off + i);
}

/* Returns the first index where p differs from the pattern, or -1. */
static inline int64_t tc_verify(const uint8_t *p, uint64_t n, uint64_t seed, uint64_t off)
{
    uint64_t i = 0;
    while (i < n && ((off + i) & 7)) {
        if (p[i] != tc_byte(seed, off + i))
            return (int64_t)i;
        i++;
    }
    for (; i + 8 <= n; i += 8) {
        uint64_t v = tc_word(seed, (off + i) >> 3), got;
        memcpy(&got, p + i, 8);
        if (got != v) {
            for (unsigned k = 0; k < 8; k++)
                if (p[i + k] != tc_byte(seed, off + i + k))
                    return (int64_t)(i + k);
        }
    }
    for (; i < n; i++)
        if (p[i] != tc_byte(seed, off + i))
            return (int64_t)i;
    return -1;
}

/* Every byte of p[0..n) equals v. */
static inline bool tc_all(const uint8_t *p, uint64_t n, uint8_t v)
{
    for (uint64_t i = 0; i < n; i++)
        if (p[i] != v)
            return false;
    return true;
}

static inline void tc_bucket(wharf_client_t *c, const char *bucket)
{
    wharf_status_t st = wharf_bucket_create(c, bucket);
    TC_CHECK(st == WHARF_OK || st == WHARF_ERR_EXISTS, "creating bucket %s: %s", bucket,
             wharf_status_str(st));
}

static inline wharf_xfer_opts_t tc_xopts(wharf_transport_t t)
{
    wharf_xfer_opts_t o;
    wharf_xfer_opts_init(&o, sizeof o);
    o.transport = t;
    return o;
}

/* The transport a report must name when bytes moved over t (RDMA or HTTP) without fallback. */
static inline void tc_check_report(const wharf_report_t *r, wharf_transport_t t, uint64_t bytes,
                                   const char *what)
{
    TC_CHECK(r->status == WHARF_OK, "%s: report status %d", what, (int)r->status);
    TC_CHECK(r->bytes == bytes, "%s: report bytes %" PRIu64 ", wanted %" PRIu64, what, r->bytes,
             bytes);
    TC_CHECK(!r->fell_back, "%s: fell back: %s", what, r->fallback_reason);
    if (bytes == 0) {
        TC_CHECK(r->transport == WHARF_TRANSPORT_NONE, "%s: transport %d for 0 bytes", what,
                 (int)r->transport);
        return;
    }
    TC_CHECK(r->transport == t, "%s: report transport %d, wanted %d", what, (int)r->transport,
             (int)t);
    TC_CHECK(r->requests >= 1, "%s: report requests %u", what, r->requests);
    TC_CHECK(r->wall_s > 0, "%s: wall_s %f", what, r->wall_s);
    if (t == WHARF_TRANSPORT_RDMA)
        TC_CHECK(r->provider[0] != '\0', "%s: RDMA report without a provider", what);
}

#endif
