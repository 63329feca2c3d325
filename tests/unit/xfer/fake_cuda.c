/* SPDX-License-Identifier: Apache-2.0 */
/* A stand-in for the CUDA driver over host memory, loaded through WHARF_LIBCUDA by
 * test_cuda_staging.c, so that the server side of cuda+ipc (the IPC open and its size check, the
 * pinned staging with the crc fused in, reading the source from a file) runs on a host without a
 * GPU. It proves wharf's own code moves the right bytes with the right checksum; it says nothing
 * of a GPU's behaviour or speed (tests/python/test_cuda_direct.py and bench/ run on one).
 *
 * "Device memory" is a memfd mapping made by fakecuMemAlloc; its IPC handle carries the
 * creator's pid, the memfd's number and the size, and cuIpcOpenMemHandle maps
 * /proc/PID/fd/N again, so the opener sees the same pages at another address. Copies are
 * memcpy; streams do nothing (every copy is done when it returns). */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef unsigned long long dptr_t;
enum { MAX_MAPS = 64 };

static struct map {
    uintptr_t base;
    size_t size;
    int fd; /* the memfd (creator) or -1 (opened) */
    int used;
} g_maps[MAX_MAPS];
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static char g_ctx; /* what a context pointer points at */
static int crosses_registration(uintptr_t p, size_t n);

static struct map *find(uintptr_t p)
{
    for (int i = 0; i < MAX_MAPS; i++)
        if (g_maps[i].used && p >= g_maps[i].base && p < g_maps[i].base + g_maps[i].size)
            return &g_maps[i];
    return NULL;
}

static int add(uintptr_t base, size_t size, int fd)
{
    for (int i = 0; i < MAX_MAPS; i++)
        if (!g_maps[i].used) {
            g_maps[i] = (struct map){base, size, fd, 1};
            return 0;
        }
    return 1;
}

/* Not a driver entry point: the test's cudaMalloc. */
int fakecuMemAlloc(dptr_t *p, size_t size)
{
    int fd = memfd_create("fake-cuda", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, (off_t)size) != 0)
        return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
    void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED)
        return 2;
    pthread_mutex_lock(&g_mu);
    int r = add((uintptr_t)m, size, fd);
    pthread_mutex_unlock(&g_mu);
    *p = (dptr_t)(uintptr_t)m;
    return r ? 2 : 0;
}

int cuInit(unsigned f)
{
    (void)f;
    return 0;
}
int cuDeviceGetCount(int *n)
{
    *n = 1;
    return 0;
}
int cuDeviceGet(int *d, int ordinal)
{
    *d = ordinal;
    return ordinal == 0 ? 0 : 101; /* CUDA_ERROR_INVALID_DEVICE */
}
int cuDeviceGetUuid(uint8_t uuid[16], int d)
{
    (void)d;
    memset(uuid, 0x5a, 16);
    return 0;
}
int cuDevicePrimaryCtxRetain(void **ctx, int d)
{
    (void)d;
    *ctx = &g_ctx;
    return 0;
}
int cuDevicePrimaryCtxRelease(int d)
{
    (void)d;
    return 0;
}
int cuCtxSetCurrent(void *ctx)
{
    (void)ctx;
    return 0;
}
int cuCtxGetCurrent(void **ctx)
{
    *ctx = &g_ctx;
    return 0;
}
int cuPointerGetAttribute(void *data, int attr, dptr_t p)
{
    pthread_mutex_lock(&g_mu);
    struct map *m = find((uintptr_t)p);
    pthread_mutex_unlock(&g_mu);
    if (!m)
        return 1; /* CUDA_ERROR_INVALID_VALUE: not device memory */
    if (attr == 1)
        *(void **)data = &g_ctx;
    else if (attr == 2)
        *(unsigned *)data = 2; /* CU_MEMORYTYPE_DEVICE */
    else if (attr == 9)
        *(int *)data = 0;
    return 0;
}
int cuMemGetAddressRange(dptr_t *base, size_t *size, dptr_t p)
{
    pthread_mutex_lock(&g_mu);
    struct map *m = find((uintptr_t)p);
    if (m) {
        *base = m->base;
        *size = m->size;
    }
    pthread_mutex_unlock(&g_mu);
    return m ? 0 : 1;
}
int cuIpcGetMemHandle(char h[64], dptr_t p)
{
    pthread_mutex_lock(&g_mu);
    struct map *m = find((uintptr_t)p);
    int ok = m && m->base == (uintptr_t)p && m->fd >= 0;
    if (ok) {
        memset(h, 0, 64);
        snprintf(h, 64, "%d:%d:%zu", (int)getpid(), m->fd, m->size);
    }
    pthread_mutex_unlock(&g_mu);
    return ok ? 0 : 1;
}
struct ipc_handle {
    char reserved[64];
}; /* passed by value, as the driver's CUipcMemHandle */

int cuIpcOpenMemHandle(dptr_t *p, struct ipc_handle h, unsigned flags)
{
    (void)flags;
    char copy[65], path[64];
    memcpy(copy, h.reserved, 64);
    copy[64] = 0;
    int pid, fdn;
    size_t size;
    if (sscanf(copy, "%d:%d:%zu", &pid, &fdn, &size) != 3)
        return 1;
    snprintf(path, sizeof path, "/proc/%d/fd/%d", pid, fdn);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return 1;
    void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return 1;
    pthread_mutex_lock(&g_mu);
    int r = add((uintptr_t)m, size, -1);
    pthread_mutex_unlock(&g_mu);
    *p = (dptr_t)(uintptr_t)m;
    return r;
}
int cuIpcCloseMemHandle(dptr_t p)
{
    pthread_mutex_lock(&g_mu);
    struct map *m = find((uintptr_t)p);
    if (m && m->fd < 0) {
        munmap((void *)m->base, m->size);
        m->used = 0;
    }
    pthread_mutex_unlock(&g_mu);
    return 0;
}
int cuStreamCreate(void **s, unsigned f)
{
    (void)f;
    *s = &g_ctx;
    return 0;
}
int cuStreamDestroy(void *s)
{
    (void)s;
    return 0;
}
int cuStreamSynchronize(void *s)
{
    (void)s;
    return 0;
}
int cuMemcpyHtoDAsync(dptr_t dst, const void *src, size_t n, void *s)
{
    (void)s;
    pthread_mutex_lock(&g_mu);
    struct map *m = find((uintptr_t)dst);
    int ok =
        m && n <= m->base + m->size - (uintptr_t)dst && !crosses_registration((uintptr_t)src, n);
    pthread_mutex_unlock(&g_mu);
    if (!ok)
        return 1; /* outside every allocation, or across a registration's end: refused */
    memcpy((void *)(uintptr_t)dst, src, n);
    return 0;
}
int cuMemcpyDtoHAsync(void *dst, dptr_t src, size_t n, void *s)
{
    (void)s;
    memcpy(dst, (const void *)(uintptr_t)src, n);
    return 0;
}
int cuMemHostAlloc(void **p, size_t n, unsigned f)
{
    (void)f;
    return posix_memalign(p, 4096, n) == 0 ? 0 : 2;
}
int cuMemFreeHost(void *p)
{
    free(p);
    return 0;
}
/* Host registrations, kept as the driver keeps them: an overlapping one is refused
 * (CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED), and a copy whose source starts in one must end
 * in it. fakecuRegisteredBytes and fakecuFailRegister are the test's view and lever. */
enum { MAX_REGS = 256 };
static struct reg {
    uintptr_t base;
    size_t size;
    int used;
} g_regs[MAX_REGS];
static size_t g_reg_bytes;
static int g_fail_register;

size_t fakecuRegisteredBytes(void)
{
    pthread_mutex_lock(&g_mu);
    size_t n = g_reg_bytes;
    pthread_mutex_unlock(&g_mu);
    return n;
}
void fakecuFailRegister(int on)
{
    pthread_mutex_lock(&g_mu);
    g_fail_register = on;
    pthread_mutex_unlock(&g_mu);
}
int cuMemHostRegister(void *p, size_t n, unsigned f)
{
    (void)f;
    uintptr_t a = (uintptr_t)p;
    int r = 0, slot = -1;
    pthread_mutex_lock(&g_mu);
    if (g_fail_register || !n || (a & 4095))
        r = g_fail_register ? 2 : 1;
    for (int i = 0; i < MAX_REGS && !r; i++) {
        if (!g_regs[i].used) {
            slot = slot < 0 ? i : slot;
            continue;
        }
        if (a < g_regs[i].base + g_regs[i].size && g_regs[i].base < a + n)
            r = 712; /* CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED */
    }
    if (!r && slot < 0)
        r = 2;
    if (!r) {
        g_regs[slot] = (struct reg){a, n, 1};
        g_reg_bytes += n;
    }
    pthread_mutex_unlock(&g_mu);
    return r;
}
int cuMemHostUnregister(void *p)
{
    int r = 713; /* CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED */
    pthread_mutex_lock(&g_mu);
    for (int i = 0; i < MAX_REGS; i++)
        if (g_regs[i].used && g_regs[i].base == (uintptr_t)p) {
            g_regs[i].used = 0;
            g_reg_bytes -= g_regs[i].size;
            r = 0;
        }
    pthread_mutex_unlock(&g_mu);
    return r;
}
/* Caller holds g_mu. Whether [p, p+n) starts in a registration and runs past its end. */
static int crosses_registration(uintptr_t p, size_t n)
{
    for (int i = 0; i < MAX_REGS; i++)
        if (g_regs[i].used && p >= g_regs[i].base && p < g_regs[i].base + g_regs[i].size)
            return n > g_regs[i].base + g_regs[i].size - p;
    return 0;
}
int cuGetErrorString(int r, const char **s)
{
    *s = r == 0 ? "CUDA_SUCCESS" : "CUDA_ERROR (fake driver)";
    return 0;
}
