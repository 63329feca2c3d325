/* SPDX-License-Identifier: Apache-2.0 */
/* The cuda+ipc server's registration cache (xfer/cuda_regcache.h) over the CUDA driver
 * stand-in (fake_cuda.c, through WHARF_LIBCUDA), which keeps registrations as the driver does:
 * an overlapping one is refused, and a copy from registered memory must not run past the end
 * of its registration. Checked here: bytes and crc of windows that cross chunk ends, reuse of
 * registrations, a file that grows, an unlinked file's pages let go, the budget (eviction, then
 * the read path), and a driver that refuses to register. */
#include "base/crc.h"
#include "check.h"
#include "cuda_fake.h"
#include "xfer/cuda_regcache.h"
#include "xfer/token.h"
#include "xfer/xfer.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MiB (1u << 20)
#define DEV_BYTES (96u * MiB)
#define FILE_BYTES (72u * MiB + 123u)

static char g_err[256];
static size_t (*g_registered)(void);
static void (*g_fail_register)(int);
static uint8_t *g_dev;
static xfer_target_t g_tgt;

static xfer_t *open_server(const char *budget)
{
    setenv("WHARF_CUDA_SOURCE", "register", 1);
    setenv("WHARF_CUDA_REGCACHE", budget, 1);
    return fake_cuda_server();
}

/* Files keep their names (the cache lets go of unlinked files) until unlink_all. */
static char g_paths[8][64];
static int g_npaths;

static int make_file(const uint8_t *bytes, size_t n)
{
    char *path = g_paths[g_npaths++];
    snprintf(path, 64, "/var/tmp/wharf-regcache-XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0 || write(fd, bytes, n) != (ssize_t)n)
        return -1;
    return fd;
}

static void unlink_all(void)
{
    for (int i = 0; i < g_npaths; i++)
        if (g_paths[i][0])
            unlink(g_paths[i]);
}

/* One GET window of fd's file [off, off+len) into device offset 0; true when the bytes and
 * the crc are the file's. */
static bool get_ok(xfer_t *x, int fd, const uint8_t *want, uint64_t off, size_t len)
{
    xfer_batch_t *b = NULL;
    uint64_t crc = 0;
    if (xfer_batch_begin(x, &g_tgt, &b, g_err, sizeof g_err) != WH_OK)
        return false;
    bool ok = xfer_batch_reads_fd(b, fd);
    memset(g_dev, 0, len);
    ok = ok && xfer_batch_post_fd_crc(b, fd, off, len, 0, &crc) == WH_OK;
    if (!ok) {
        xfer_batch_error(b, g_err, sizeof g_err);
        fprintf(stderr, "  post: %s\n", g_err);
    }
    ok = ok && crc == wh_crc64nvme(0, want + off, len) && memcmp(g_dev, want + off, len) == 0;
    xfer_batch_end(b);
    return ok;
}

int main(void)
{
    const char *lib = getenv("WHARF_LIBCUDA");
    void *h = lib ? dlopen(lib, RTLD_NOW) : NULL;
    int (*dev_alloc)(unsigned long long *, size_t) = h ? dlsym(h, "fakecuMemAlloc") : NULL;
    g_registered = h ? (size_t(*)(void))dlsym(h, "fakecuRegisteredBytes") : NULL;
    g_fail_register = h ? (void (*)(int))dlsym(h, "fakecuFailRegister") : NULL;
    if (!dev_alloc || !g_registered || !g_fail_register) {
        fprintf(stderr, "WHARF_LIBCUDA must name the fake driver (fake_cuda.c)\n");
        return 1;
    }
    unsigned long long dptr = 0;
    CHECK(dev_alloc(&dptr, DEV_BYTES) == 0);
    g_dev = (uint8_t *)(uintptr_t)dptr;
    xfer_t *cx = NULL;
    xfer_mr_t *mr = NULL;
    xfer_token_t t;
    CHECK(fake_cuda_token(g_dev, DEV_BYTES, DEV_BYTES, &cx, &mr, &t));
    g_tgt = (xfer_target_t){.token = &t, .bind_pid = getpid()};

    size_t all = FILE_BYTES + 2 * 4096;
    uint8_t *src = malloc(all);
    for (size_t i = 0; i < all; i++)
        src[i] = (uint8_t)(rand() >> 7);
    int fa = make_file(src, FILE_BYTES);
    CHECK(fa >= 0);
    const uint64_t chunk = CUDA_REGCACHE_CHUNK;
    cuda_regcache_stats_t s0, s1;

    /* register with a budget: a window across the end of the first chunk lands whole and right,
     * through two registrations (the stand-in refuses a copy across one's end). */
    xfer_t *x = open_server("128M");
    CHECK(x != NULL);
    cuda_regcache_stats(&s0);
    CHECK_EQ_U64(s0.budget, 128u * MiB);
    CHECK(get_ok(x, fa, src, chunk - 2 * MiB, 8 * MiB));
    cuda_regcache_stats(&s1);
    CHECK_EQ_U64(s1.registers - s0.registers, 2);
    CHECK_EQ_U64(g_registered(), 2 * chunk);
    CHECK_EQ_U64(s1.registered, 2 * chunk);
    /* the same window again: no new registration, a hit */
    CHECK(get_ok(x, fa, src, chunk - 2 * MiB, 8 * MiB));
    cuda_regcache_stats(&s0);
    CHECK_EQ_U64(s0.registers, s1.registers);
    CHECK_EQ_U64(s0.hits - s1.hits, 1);
    /* the whole file: the last chunk, page-rounded, joins */
    CHECK(get_ok(x, fa, src, 0, FILE_BYTES));
    CHECK_EQ_U64(g_registered(), (FILE_BYTES + 4095) & ~4095ull);

    /* the file grows (an append): its registrations are let go and made anew, and the new
     * bytes are served */
    CHECK(pwrite(fa, src + FILE_BYTES, 8192, FILE_BYTES) == 8192);
    cuda_regcache_stats(&s1);
    CHECK(get_ok(x, fa, src, FILE_BYTES - 4096, 8192 + 4096));
    cuda_regcache_stats(&s0);
    CHECK_EQ_U64(s0.releases - s1.releases, 1);
    uint64_t last = ((FILE_BYTES + 8192 + 4095) & ~4095ull) - 2 * chunk;
    CHECK_EQ_U64(g_registered(), last); /* the one chunk that window needs */

    /* an unlinked file (deleted object) is let go when another file comes */
    int fb = make_file(src, 1 * MiB);
    CHECK(get_ok(x, fb, src, 0, 1 * MiB));
    CHECK_EQ_U64(g_registered(), last + MiB);
    unlink(g_paths[g_npaths - 1]); /* the object is deleted: only the cache holds the file */
    g_paths[g_npaths - 1][0] = 0;
    close(fb);
    int fc = make_file(src + 7, 2 * MiB);
    cuda_regcache_stats(&s1);
    CHECK(get_ok(x, fc, src + 7, 0, 2 * MiB));
    cuda_regcache_stats(&s0);
    CHECK(s0.releases - s1.releases >= 1);
    xfer_close(x);
    CHECK_EQ_U64(g_registered(), 0); /* closing the server lets everything go */
    close(fc);

    /* a budget of 40 MiB: a second file's chunk evicts the first file; a window that needs
     * two chunks (64 MiB) cannot be registered and is read instead, still right */
    x = open_server("40M");
    CHECK(x != NULL);
    int fd2 = make_file(src + 3, (size_t)chunk);
    CHECK(get_ok(x, fa, src, 0, 4 * MiB));
    CHECK_EQ_U64(g_registered(), chunk);
    cuda_regcache_stats(&s1);
    CHECK(get_ok(x, fd2, src + 3, 0, 4 * MiB));
    cuda_regcache_stats(&s0);
    CHECK_EQ_U64(s0.releases - s1.releases, 1);
    CHECK_EQ_U64(g_registered(), chunk);
    CHECK(get_ok(x, fa, src, chunk - MiB, 2 * MiB));
    cuda_regcache_stats(&s1);
    CHECK_EQ_U64(s1.fallbacks - s0.fallbacks, 1);
    /* a driver that refuses: the read path serves the bytes */
    g_fail_register(1);
    int fd3 = make_file(src + 11, 3 * MiB);
    CHECK(get_ok(x, fd3, src + 11, 0, 3 * MiB));
    cuda_regcache_stats(&s0);
    CHECK_EQ_U64(s0.fallbacks - s1.fallbacks, 1);
    g_fail_register(0);
    xfer_close(x);
    CHECK_EQ_U64(g_registered(), 0);

    /* a budget of 0, or the default source (auto): no cache */
    x = open_server("0");
    CHECK(x != NULL);
    cuda_regcache_stats(&s0);
    CHECK_EQ_U64(s0.budget, 0);
    xfer_close(x);
    unsetenv("WHARF_CUDA_REGCACHE");
    unsetenv("WHARF_CUDA_SOURCE");
    x = fake_cuda_server();
    CHECK(x != NULL);
    cuda_regcache_stats(&s0);
    CHECK_EQ_U64(s0.budget, 0);
    xfer_close(x);

    unlink_all();
    close(fa);
    close(fd2);
    close(fd3);
    xfer_mr_dereg(mr);
    xfer_close(cx);
    free(src);
    printf("%d passed, %d failed\n", g_check_pass, g_check_fail);
    return g_check_fail ? 1 : 0;
}
