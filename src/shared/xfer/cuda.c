/* SPDX-License-Identifier: Apache-2.0 */
/* The CUDA driver API, loaded at run time (see cuda.h for why). */
#include "xfer/cuda.h"
#include "base/log.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MOD "cuda"

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static cuda_api_t g_api;
static wh_status_t g_status = WH_ERR_UNSUPPORTED;
static char g_err[256];

/* Devices whose primary context this process retained, by UUID. */
#define CUDA_MAX_DEVICES 64
static pthread_mutex_t g_dev_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    uint8_t uuid[16];
    cu_context_t ctx;
} g_dev[CUDA_MAX_DEVICES];
static int g_ndev = -1;

/* The driver exports versioned names for the entry points whose types widened (cuMemcpy*_v2,
 * cuMemGetAddressRange_v2, cuIpcOpenMemHandle_v2, ...); cuda.h maps the plain names to them.
 * Prefer the _v2 symbol, fall back to the plain one. */
static void *cuda_sym(void *h, const char *name)
{
    char v2[96];
    snprintf(v2, sizeof v2, "%s_v2", name);
    void *p = dlsym(h, v2);
    return p ? p : dlsym(h, name);
}

static void cuda_do_load(void)
{
    const char *path = getenv("WHARF_LIBCUDA");
    if (!path || !*path)
        path = "libcuda.so.1";
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(g_err, sizeof g_err, "%s not found: no NVIDIA driver on this host (%.160s)", path,
                 e ? e : "dlopen failed");
        wh_info(MOD, "cuda unavailable reason=\"%s\"", g_err);
        return;
    }
    cuda_api_t a;
    memset(&a, 0, sizeof a);
    struct {
        const char *name;
        void **slot;
    } syms[] = {
#define SYM(n) {#n, (void **)&a.n}
        SYM(cuInit),
        SYM(cuDeviceGetCount),
        SYM(cuDeviceGet),
        SYM(cuDeviceGetUuid),
        SYM(cuDevicePrimaryCtxRetain),
        SYM(cuDevicePrimaryCtxRelease),
        SYM(cuCtxSetCurrent),
        SYM(cuCtxGetCurrent),
        SYM(cuPointerGetAttribute),
        SYM(cuMemGetAddressRange),
        SYM(cuIpcGetMemHandle),
        SYM(cuIpcOpenMemHandle),
        SYM(cuIpcCloseMemHandle),
        SYM(cuStreamCreate),
        SYM(cuStreamDestroy),
        SYM(cuStreamSynchronize),
        SYM(cuMemcpyHtoDAsync),
        SYM(cuMemcpyDtoHAsync),
        SYM(cuMemHostAlloc),
        SYM(cuMemFreeHost),
        SYM(cuMemHostRegister),
        SYM(cuMemHostUnregister),
        SYM(cuGetErrorString),
#undef SYM
    };
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        *syms[i].slot = cuda_sym(h, syms[i].name);
        if (!*syms[i].slot) {
            snprintf(g_err, sizeof g_err,
                     "%s has no symbol %s: the NVIDIA driver is too old or not a CUDA driver", path,
                     syms[i].name);
            wh_warn(MOD, "cuda unusable reason=\"%s\"", g_err);
            dlclose(h);
            return;
        }
    }
    cu_result_t r = a.cuInit(0);
    if (r != 0) {
        const char *s = NULL;
        if (a.cuGetErrorString(r, &s) != 0 || !s)
            s = "unknown error";
        snprintf(g_err, sizeof g_err, "cuInit failed: %.120s (CUresult %d): no usable GPU", s, r);
        wh_info(MOD, "cuda unavailable reason=\"%s\"", g_err);
        dlclose(h); /* keep nothing of a driver that cannot initialise */
        return;
    }
    g_api = a; /* the handle stays open for the life of the process */
    g_status = WH_OK;
    wh_info(MOD, "cuda loaded path=%s", path);
}

wh_status_t cuda_load(const cuda_api_t **api, char *err, size_t errlen)
{
    pthread_once(&g_once, cuda_do_load);
    if (g_status != WH_OK) {
        if (err && errlen)
            snprintf(err, errlen, "%s", g_err);
        return g_status;
    }
    if (api)
        *api = &g_api;
    return WH_OK;
}

const char *cuda_strerror(cu_result_t r)
{
    static __thread char buf[64];
    const char *s = NULL;
    if (g_status == WH_OK && g_api.cuGetErrorString(r, &s) == 0 && s)
        return s;
    snprintf(buf, sizeof buf, "CUresult %d", r);
    return buf;
}

/* Caller holds g_dev_mu. Retains every device's primary context once. */
static wh_status_t cuda_enum_devices(char *err, size_t errlen)
{
    if (g_ndev >= 0)
        return WH_OK;
    int n = 0;
    cu_result_t r = g_api.cuDeviceGetCount(&n);
    if (r != 0) {
        return wh_errf(WH_ERR_TRANSPORT, err, errlen, "cuDeviceGetCount: %s", cuda_strerror(r));
    }
    if (n > CUDA_MAX_DEVICES)
        n = CUDA_MAX_DEVICES;
    int k = 0;
    for (int i = 0; i < n; i++) {
        cu_device_t d;
        if (g_api.cuDeviceGet(&d, i) != 0 || g_api.cuDeviceGetUuid(g_dev[k].uuid, d) != 0)
            continue;
        if (g_api.cuDevicePrimaryCtxRetain(&g_dev[k].ctx, d) != 0)
            continue;
        k++;
    }
    g_ndev = k;
    return WH_OK;
}

wh_status_t cuda_use_device_uuid(const uint8_t uuid[16], char *err, size_t errlen)
{
    wh_status_t st = cuda_load(NULL, err, errlen);
    if (st != WH_OK)
        return st;
    pthread_mutex_lock(&g_dev_mu);
    st = cuda_enum_devices(err, errlen);
    cu_context_t ctx = NULL;
    if (st == WH_OK)
        for (int i = 0; i < g_ndev; i++)
            if (memcmp(g_dev[i].uuid, uuid, 16) == 0)
                ctx = g_dev[i].ctx;
    pthread_mutex_unlock(&g_dev_mu);
    if (st != WH_OK)
        return st;
    if (!ctx) {
        return wh_errf(WH_ERR_NOT_FOUND, err, errlen,
                       "no GPU on this host has the token's device UUID; the client's "
                       "GPU must be on the server's host");
    }
    cu_result_t r = g_api.cuCtxSetCurrent(ctx);
    if (r != 0) {
        return wh_errf(WH_ERR_TRANSPORT, err, errlen, "cuCtxSetCurrent: %s", cuda_strerror(r));
    }
    return WH_OK;
}

wh_status_t cuda_device_of(const void *addr, size_t len, int *ordinal, char *err, size_t errlen)
{
    const cuda_api_t *cu;
    wh_status_t st = cuda_load(&cu, err, errlen);
    if (st != WH_OK)
        return st;
    cu_deviceptr_t p = (cu_deviceptr_t)(uintptr_t)addr;
    unsigned mtype = 0;
    cu_result_t r = cu->cuPointerGetAttribute(&mtype, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p);
    if (r != 0 || mtype != CU_MEMORYTYPE_DEVICE) {
        return wh_errf(WH_ERR_INVALID, err, errlen, "%p is not GPU memory (%s)", addr,
                       r ? cuda_strerror(r) : "the driver says host memory");
    }
    int dev = -1;
    if ((r = cu->cuPointerGetAttribute(&dev, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p)) != 0 ||
        dev < 0) {
        return wh_errf(WH_ERR_INVALID, err, errlen, "%p: no device ordinal (%s)", addr,
                       cuda_strerror(r));
    }
    cu_deviceptr_t base = 0;
    size_t size = 0;
    if ((r = cu->cuMemGetAddressRange(&base, &size, p)) != 0) {
        return wh_errf(WH_ERR_INVALID, err, errlen, "cuMemGetAddressRange(%p): %s", addr,
                       cuda_strerror(r));
    }
    if (p - base > size || len > size - (p - base)) {
        return wh_errf(WH_ERR_INVALID, err, errlen,
                       "[%p, +%zu) runs past its allocation (%zu bytes at 0x%llx); register "
                       "each allocation (tensor storage) separately",
                       addr, len, size, base);
    }
    *ordinal = dev;
    return WH_OK;
}
