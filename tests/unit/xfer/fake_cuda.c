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
    int ok = m && n <= m->base + m->size - (uintptr_t)dst;
    pthread_mutex_unlock(&g_mu);
    if (!ok)
        return 1; /* outside every allocation: what the driver would refuse */
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
int cuMemHostRegister(void *p, size_t n, unsigned f)
{
    (void)p;
    (void)n;
    (void)f;
    return 0;
}
int cuMemHostUnregister(void *p)
{
    (void)p;
    return 0;
}
int cuGetErrorString(int r, const char **s)
{
    *s = r == 0 ? "CUDA_SUCCESS" : "CUDA_ERROR (fake driver)";
    return 0;
}
