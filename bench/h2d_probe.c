/* SPDX-License-Identifier: Apache-2.0 */
/* bench/h2d_probe: what bounds a load from the page cache into GPU memory, without wharf.
 *
 *   h2d_probe --file PATH [--gib N] [--threads T] [--repeats R] [--window-mib W]
 *
 * PATH is a data file of N GiB (made if missing or of another size) on the file system under
 * test: /dev/shm as mounted, a huge-page tmpfs, or a disk (page cache). The file is mapped
 * read-only and faulted in, then these arms run in turn, A B C ... A B C ..., T threads each,
 * every thread moving its share of the file in windows of W MiB:
 *   pinned     DMA from pinned buffers (no fill): the host-to-device limit
 *   staged     what wharfd's GPU path does: copy each 1 MiB block of the mapping into a pinned
 *              buffer with crc64nvme fused in, DMA of one buffer overlapping the fill of the
 *              other
 *   map_staged staged, from a mapping each thread makes of its share for the run and faults in
 *              window by window (MADV_POPULATE_READ), as wharfd's direct GET does: the
 *              page-table cost of a fresh mapping is inside the timing
 *   pread      staged, but each 1 MiB block is read with pread(2) into the pinned buffer and
 *              checksummed there: no mapping at all
 *   crc        crc64nvme over the mapping, no DMA: the CPU's read rate
 *   reg_dma    DMA straight from the mapping after cuMemHostRegister(READ_ONLY) of it
 *   reg_crc    the same with every window checksummed by the CPU before its DMA (the DMA of
 *              window k overlaps the crc of window k+1): one host read by the CPU and one by
 *              the copy engine, no host write
 * The registration of the whole mapping is timed (once in one call, once split among the
 * threads), and so is its release. After every arm three windows are read back and compared
 * with the mapping. libcuda is loaded at run time; without a driver the program says so and
 * exits 1. Output: one JSON object. */
#include "base/crc.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif

typedef int cr_t;
typedef unsigned long long dptr_t;
typedef void *stream_t;

static struct {
    cr_t (*Init)(unsigned);
    cr_t (*DeviceGet)(int *, int);
    cr_t (*PrimaryCtxRetain)(void **, int);
    cr_t (*CtxSetCurrent)(void *);
    cr_t (*MemAlloc)(dptr_t *, size_t);
    cr_t (*MemHostAlloc)(void **, size_t, unsigned);
    cr_t (*MemHostRegister)(void *, size_t, unsigned);
    cr_t (*MemHostUnregister)(void *);
    cr_t (*StreamCreate)(stream_t *, unsigned);
    cr_t (*StreamSynchronize)(stream_t);
    cr_t (*MemcpyHtoDAsync)(dptr_t, const void *, size_t, stream_t);
    cr_t (*MemcpyDtoH)(void *, dptr_t, size_t);
} cu;
static void *g_ctx;

static void *sym(void *h, const char *n)
{
    char v2[96];
    snprintf(v2, sizeof v2, "%s_v2", n);
    void *p = dlsym(h, v2);
    return p ? p : dlsym(h, n);
}

static int cu_load(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    if (!h) {
        fprintf(stderr, "h2d_probe: no CUDA driver (%s)\n", dlerror());
        return -1;
    }
    struct {
        const char *n;
        void **p;
    } s[] = {
        {"cuInit", (void **)&cu.Init},
        {"cuDeviceGet", (void **)&cu.DeviceGet},
        {"cuDevicePrimaryCtxRetain", (void **)&cu.PrimaryCtxRetain},
        {"cuCtxSetCurrent", (void **)&cu.CtxSetCurrent},
        {"cuMemAlloc", (void **)&cu.MemAlloc},
        {"cuMemHostAlloc", (void **)&cu.MemHostAlloc},
        {"cuMemHostRegister", (void **)&cu.MemHostRegister},
        {"cuMemHostUnregister", (void **)&cu.MemHostUnregister},
        {"cuStreamCreate", (void **)&cu.StreamCreate},
        {"cuStreamSynchronize", (void **)&cu.StreamSynchronize},
        {"cuMemcpyHtoDAsync", (void **)&cu.MemcpyHtoDAsync},
        {"cuMemcpyDtoH", (void **)&cu.MemcpyDtoH},
    };
    for (size_t i = 0; i < sizeof s / sizeof s[0]; i++)
        if (!(*s[i].p = sym(h, s[i].n))) {
            fprintf(stderr, "h2d_probe: libcuda has no %s\n", s[i].n);
            return -1;
        }
    int dev = 0;
    cr_t r;
    if ((r = cu.Init(0)) || (r = cu.DeviceGet(&dev, 0)) || (r = cu.PrimaryCtxRetain(&g_ctx, dev)) ||
        (r = cu.CtxSetCurrent(g_ctx))) {
        fprintf(stderr, "h2d_probe: CUDA start failed (CUresult %d)\n", r);
        return -1;
    }
    return 0;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

enum arm { A_PINNED, A_STAGED, A_MAP_STAGED, A_PREAD, A_CRC, A_REG_DMA, A_REG_CRC, A_N };
static const char *arm_name[A_N] = {"pinned", "staged",  "map_staged", "pread",
                                    "crc",    "reg_dma", "reg_crc"};

static uint8_t *g_map;
static int g_fd;
static size_t g_len, g_win;
static dptr_t g_dev;
static unsigned g_threads;

typedef struct thr {
    unsigned id;
    enum arm arm;
    void *pin[2];
    stream_t st[2];
    uint64_t crc;
    int rc;
    pthread_t t;
    /* the split registration */
    int reg_mode; /* 0 = move bytes, 1 = register share, 2 = unregister share */
    double reg_s;
} thr_t;

static pthread_barrier_t g_bar;

static void share(unsigned id, size_t *off, size_t *len)
{
    size_t nw = (g_len + g_win - 1) / g_win;
    size_t a = nw * id / g_threads, b = nw * (id + 1) / g_threads;
    *off = a * g_win;
    *len = (b * g_win < g_len ? b * g_win : g_len) - *off;
}

#define BLK (1u << 20)

/* Registered arms: the size of each registration (0: a thread's whole share) and the flags
 * (--reg-chunk-mib, --reg-flags; READ_ONLY by default). */
static size_t g_reg_chunk;
static unsigned g_reg_flags = 8;

static void *run(void *arg)
{
    thr_t *t = arg;
    cu.CtxSetCurrent(g_ctx);
    size_t off, len;
    share(t->id, &off, &len);
    pthread_barrier_wait(&g_bar);
    if (t->reg_mode) { /* this thread's share, in g_reg_chunk pieces (0: one piece) */
        double t0 = now();
        cr_t r = 0;
        size_t step = g_reg_chunk ? g_reg_chunk : len;
        for (size_t d = 0; d < len && !r; d += step) {
            size_t n = len - d < step ? len - d : step;
            r = t->reg_mode == 1 ? cu.MemHostRegister(g_map + off + d, n, g_reg_flags)
                                 : cu.MemHostUnregister(g_map + off + d);
        }
        t->reg_s = now() - t0;
        t->rc = r;
        return NULL;
    }
    cr_t r = 0;
    uint64_t crc = 0;
    bool pend[2] = {false, false};
    uint8_t *mine = NULL;
    if (t->arm == A_MAP_STAGED) {
        mine = mmap(NULL, len, PROT_READ, MAP_SHARED, g_fd, (off_t)off);
        if (mine == MAP_FAILED) {
            t->rc = -1;
            return NULL;
        }
    }
    unsigned j = 0;
    for (size_t d = 0; d < len && !r; d += g_win, j ^= 1) {
        size_t n = len - d < g_win ? len - d : g_win;
        const uint8_t *src = g_map + off + d;
        if (t->arm == A_CRC) {
            crc ^= wh_crc64nvme(0, src, n);
            continue;
        }
        if (pend[j]) {
            r = cu.StreamSynchronize(t->st[j]);
            pend[j] = false;
            if (r)
                break;
        }
        const void *from = src;
        if (t->arm == A_PINNED) {
            from = t->pin[j];
        } else if (t->arm == A_STAGED) {
            uint8_t *p = t->pin[j];
            for (size_t k = 0; k < n; k += BLK) {
                size_t m = n - k < BLK ? n - k : BLK;
                memcpy(p + k, src + k, m);
                crc ^= wh_crc64nvme(0, p + k, m);
            }
            from = p;
        } else if (t->arm == A_MAP_STAGED || t->arm == A_PREAD) {
            uint8_t *p = t->pin[j];
            if (mine)
                madvise(mine + d, n, MADV_POPULATE_READ);
            for (size_t k = 0; k < n; k += BLK) {
                size_t m = n - k < BLK ? n - k : BLK;
                if (mine)
                    memcpy(p + k, mine + d + k, m);
                else if (pread(g_fd, p + k, m, (off_t)(off + d + k)) != (ssize_t)m)
                    r = -1;
                crc ^= wh_crc64nvme(0, p + k, m);
            }
            from = p;
        } else if (t->arm == A_REG_CRC) {
            crc ^= wh_crc64nvme(0, src, n);
        }
        r = cu.MemcpyHtoDAsync(g_dev + off + d, from, n, t->st[j]);
        pend[j] = r == 0;
    }
    for (j = 0; j < 2; j++)
        if (pend[j]) {
            cr_t r2 = cu.StreamSynchronize(t->st[j]);
            if (!r)
                r = r2;
        }
    if (mine)
        munmap(mine, len);
    t->crc = crc;
    t->rc = r;
    return NULL;
}

static thr_t *g_t;

/* Runs every thread once in the given mode; returns the wall time, or -1 on a CUDA error. */
static double go(enum arm arm, int reg_mode)
{
    pthread_barrier_init(&g_bar, NULL, g_threads + 1);
    for (unsigned i = 0; i < g_threads; i++) {
        g_t[i].arm = arm;
        g_t[i].reg_mode = reg_mode;
        pthread_create(&g_t[i].t, NULL, run, &g_t[i]);
    }
    pthread_barrier_wait(&g_bar);
    double t0 = now();
    int bad = 0;
    for (unsigned i = 0; i < g_threads; i++) {
        pthread_join(g_t[i].t, NULL);
        if (g_t[i].rc) {
            fprintf(stderr, "h2d_probe: %s thread %u: CUresult %d\n",
                    reg_mode ? "registration" : arm_name[arm], i, g_t[i].rc);
            bad = 1;
        }
    }
    double dt = now() - t0;
    pthread_barrier_destroy(&g_bar);
    return bad ? -1 : dt;
}

/* Reads three windows of GPU memory back and compares them with the mapping. */
static int verify(void)
{
    static uint8_t *buf;
    if (!buf && !(buf = malloc(g_win)))
        return -1;
    size_t offs[3] = {0, (g_len / 2) & ~(size_t)4095, g_len - g_win};
    for (int i = 0; i < 3; i++) {
        if (cu.MemcpyDtoH(buf, g_dev + offs[i], g_win) || memcmp(buf, g_map + offs[i], g_win))
            return -1;
    }
    return 0;
}

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int make_file(const char *path, size_t len)
{
    struct stat sb;
    if (stat(path, &sb) == 0 && (size_t)sb.st_size == len)
        return 0;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        return -1;
    size_t bs = 64u << 20;
    uint64_t *b = malloc(bs), x = 0x9e3779b97f4a7c15ull;
    if (!b) {
        close(fd);
        return -1;
    }
    for (size_t off = 0; off < len; off += bs) {
        for (size_t i = 0; i < bs / 8; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            b[i] = x;
        }
        size_t n = len - off < bs ? len - off : bs;
        if (pwrite(fd, b, n, (off_t)off) != (ssize_t)n) {
            free(b);
            close(fd);
            return -1;
        }
    }
    free(b);
    return close(fd);
}

int main(int argc, char **argv)
{
    const char *path = NULL;
    unsigned gib = 8, reps = 3, win_mib = 8;
    long nc = sysconf(_SC_NPROCESSORS_ONLN);
    g_threads = nc > 0 ? (unsigned)nc : 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--file") && i + 1 < argc)
            path = argv[++i];
        else if (!strcmp(argv[i], "--gib") && i + 1 < argc)
            gib = (unsigned)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            g_threads = (unsigned)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--repeats") && i + 1 < argc)
            reps = (unsigned)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--window-mib") && i + 1 < argc)
            win_mib = (unsigned)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reg-chunk-mib") && i + 1 < argc)
            g_reg_chunk = (size_t)atoi(argv[++i]) << 20;
        else if (!strcmp(argv[i], "--reg-flags") && i + 1 < argc)
            g_reg_flags = (unsigned)strtoul(argv[++i], NULL, 0);
        else {
            fprintf(stderr,
                    "usage: %s --file PATH [--gib N] [--threads T] [--repeats R] "
                    "[--window-mib W] [--reg-chunk-mib C] [--reg-flags F]\n",
                    argv[0]);
            return 2;
        }
    }
    if (!path || gib < 1 || g_threads < 1 || g_threads > 256 || reps < 1 || reps > 20 ||
        win_mib < 1 || win_mib > 256) {
        fprintf(stderr, "h2d_probe: --file is required; --gib >= 1, --threads 1..256, "
                        "--repeats 1..20, --window-mib 1..256\n");
        return 2;
    }
    g_len = (size_t)gib << 30;
    g_win = (size_t)win_mib << 20;
    if (cu_load())
        return 1;
    if (make_file(path, g_len)) {
        fprintf(stderr, "h2d_probe: cannot write %s: %s\n", path, strerror(errno));
        return 1;
    }
    int fd = open(path, O_RDONLY);
    g_fd = fd;
    g_map = fd < 0 ? MAP_FAILED : mmap(NULL, g_len, PROT_READ, MAP_SHARED, fd, 0);
    if (g_map == MAP_FAILED) {
        fprintf(stderr, "h2d_probe: cannot map %s: %s\n", path, strerror(errno));
        return 1;
    }
    double t0 = now();
    madvise(g_map, g_len, MADV_POPULATE_READ);
    double populate_s = now() - t0;
    cr_t r = cu.MemAlloc(&g_dev, g_len);
    if (r) {
        fprintf(stderr, "h2d_probe: cuMemAlloc(%zu): CUresult %d\n", g_len, r);
        return 1;
    }
    g_t = calloc(g_threads, sizeof *g_t);
    for (unsigned i = 0; i < g_threads; i++) {
        g_t[i].id = i;
        for (int j = 0; j < 2; j++)
            if (cu.MemHostAlloc(&g_t[i].pin[j], g_win, 1) || cu.StreamCreate(&g_t[i].st[j], 1)) {
                fprintf(stderr, "h2d_probe: pinned buffers or streams refused\n");
                return 1;
            }
    }
    double rates[A_N][20];
    int ok[A_N];
    for (int a = 0; a < A_N; a++)
        ok[a] = 1;
    double reg_one = -1, reg_split = -1, unreg_one = -1, unreg_split = -1;
    double gb = (double)g_len / 1e9;
    for (unsigned rep = 0; rep < reps; rep++) {
        for (int a = 0; a < A_N; a++) {
            if (a == A_REG_DMA) { /* register the mapping for the two registered arms */
                if (rep == 0) {
                    double s = now();
                    r = cu.MemHostRegister(g_map, g_len, 8);
                    reg_one = r ? -1 : now() - s;
                    if (!r) {
                        s = now();
                        cu.MemHostUnregister(g_map);
                        unreg_one = now() - s;
                    } else {
                        fprintf(stderr, "h2d_probe: cuMemHostRegister(READ_ONLY): CUresult %d\n",
                                r);
                    }
                }
                reg_split = go(A_PINNED, 1);
                if (reg_split < 0) {
                    ok[A_REG_DMA] = ok[A_REG_CRC] = 0;
                    rates[A_REG_DMA][rep] = rates[A_REG_CRC][rep] = 0;
                    a = A_REG_CRC;
                    continue;
                }
            }
            double dt = go((enum arm)a, 0);
            rates[a][rep] = dt > 0 ? gb / dt : 0;
            if (dt < 0 || (a != A_CRC && verify() != 0)) {
                fprintf(stderr, "h2d_probe: arm %s failed or read back wrong bytes\n", arm_name[a]);
                ok[a] = 0;
            }
            if (a == A_REG_CRC)
                unreg_split = go(A_PINNED, 2);
            fprintf(stderr, "rep %u %-8s %.2f GB/s\n", rep, arm_name[a], rates[a][rep]);
        }
    }
    printf("{\"file\": \"%s\", \"gib\": %u, \"threads\": %u, \"window_mib\": %u, "
           "\"reg_chunk_mib\": %zu, \"reg_flags\": %u, \"crc_impl\": \"%s\", "
           "\"populate_s\": %.4f,\n",
           path, gib, g_threads, win_mib, g_reg_chunk >> 20, g_reg_flags, wh_crc64nvme_impl(),
           populate_s);
    printf(" \"register_whole_s\": %.4f, \"unregister_whole_s\": %.4f, \"register_split_s\": %.4f, "
           "\"unregister_split_s\": %.4f,\n",
           reg_one, unreg_one, reg_split, unreg_split);
    printf(" \"gbps\": {");
    for (int a = 0; a < A_N; a++) {
        double s[20];
        memcpy(s, rates[a], reps * sizeof(double));
        qsort(s, reps, sizeof(double), cmpd);
        printf("%s\"%s\": {\"ok\": %s, \"median\": %.3f, \"runs\": [", a ? ", " : "", arm_name[a],
               ok[a] ? "true" : "false", s[reps / 2]);
        for (unsigned i = 0; i < reps; i++)
            printf("%s%.3f", i ? ", " : "", rates[a][i]);
        printf("]}");
    }
    printf("}}\n");
    return 0;
}
