/* SPDX-License-Identifier: Apache-2.0 */
/* The CUDA driver API, loaded at run time.
 *
 * wharf never links libcuda: the client and the server build and run on hosts without an
 * NVIDIA driver. cuda_load() dlopens libcuda.so.1 once (thread-safe) and resolves the few
 * entry points wharf uses; every caller checks its result and reports "no CUDA driver" as a
 * clean WH_ERR_UNSUPPORTED. The types below are the driver API's own, declared here so that no
 * CUDA header is needed to build (their layout is part of the driver's stable ABI).
 *
 * WHARF_LIBCUDA overrides the library path (tests use it to prove that a missing or broken
 * driver fails cleanly). */
#ifndef WH_XFER_CUDA_H
#define WH_XFER_CUDA_H

#include "base/status.h"

#include <stddef.h>
#include <stdint.h>

typedef int cu_result_t; /* CUresult: 0 = CUDA_SUCCESS */
typedef int cu_device_t; /* CUdevice */
typedef struct cu_ctx_st *cu_context_t;
typedef struct cu_stream_st *cu_stream_t;
typedef unsigned long long cu_deviceptr_t; /* CUdeviceptr (64-bit) */

#define CU_IPC_HANDLE_SIZE 64
typedef struct cu_ipc_mem_handle {
    char reserved[CU_IPC_HANDLE_SIZE];
} cu_ipc_mem_handle_t;

/* Values of the driver API enums wharf uses. */
enum {
    CU_POINTER_ATTRIBUTE_CONTEXT = 1,
    CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2,
    CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9,
    CU_MEMORYTYPE_HOST = 1,
    CU_MEMORYTYPE_DEVICE = 2,
    CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS = 1,
    CU_STREAM_NON_BLOCKING = 1,
    CU_MEMHOSTALLOC_PORTABLE = 1,
    CU_MEMHOSTREGISTER_PORTABLE = 1,
    CU_MEMHOSTREGISTER_READ_ONLY = 8,
};

typedef struct cuda_api {
    cu_result_t (*cuInit)(unsigned flags);
    cu_result_t (*cuDeviceGetCount)(int *n);
    cu_result_t (*cuDeviceGet)(cu_device_t *d, int ordinal);
    cu_result_t (*cuDeviceGetUuid)(uint8_t uuid[16], cu_device_t d);
    cu_result_t (*cuDevicePrimaryCtxRetain)(cu_context_t *ctx, cu_device_t d);
    cu_result_t (*cuDevicePrimaryCtxRelease)(cu_device_t d);
    cu_result_t (*cuCtxSetCurrent)(cu_context_t ctx);
    cu_result_t (*cuCtxGetCurrent)(cu_context_t *ctx);
    cu_result_t (*cuPointerGetAttribute)(void *data, int attribute, cu_deviceptr_t p);
    cu_result_t (*cuMemGetAddressRange)(cu_deviceptr_t *base, size_t *size, cu_deviceptr_t p);
    cu_result_t (*cuIpcGetMemHandle)(cu_ipc_mem_handle_t *h, cu_deviceptr_t p);
    cu_result_t (*cuIpcOpenMemHandle)(cu_deviceptr_t *p, cu_ipc_mem_handle_t h, unsigned flags);
    cu_result_t (*cuIpcCloseMemHandle)(cu_deviceptr_t p);
    cu_result_t (*cuStreamCreate)(cu_stream_t *s, unsigned flags);
    cu_result_t (*cuStreamDestroy)(cu_stream_t s);
    cu_result_t (*cuStreamSynchronize)(cu_stream_t s);
    cu_result_t (*cuMemcpyHtoDAsync)(cu_deviceptr_t dst, const void *src, size_t n, cu_stream_t s);
    cu_result_t (*cuMemcpyDtoHAsync)(void *dst, cu_deviceptr_t src, size_t n, cu_stream_t s);
    cu_result_t (*cuMemHostAlloc)(void **p, size_t n, unsigned flags);
    cu_result_t (*cuMemFreeHost)(void *p);
    cu_result_t (*cuMemHostRegister)(void *p, size_t n, unsigned flags);
    cu_result_t (*cuMemHostUnregister)(void *p);
    cu_result_t (*cuGetErrorString)(cu_result_t r, const char **s);
} cuda_api_t;

/* Loads libcuda and calls cuInit(0) once. On success *api points at the resolved table (valid
 * for the life of the process). On failure returns WH_ERR_UNSUPPORTED and a reason in err
 * ("libcuda.so.1 not found: no NVIDIA driver on this host (...)"); later calls return the same
 * answer without retrying. */
wh_status_t cuda_load(const cuda_api_t **api, char *err, size_t errlen);

/* The driver's name for r ("CUDA_ERROR_INVALID_VALUE ..."), or "CUresult N". Static string. */
const char *cuda_strerror(cu_result_t r);

/* Makes the primary context of the device whose UUID is uuid current on this thread (retained
 * once per device for the process). WH_ERR_NOT_FOUND when no device has that UUID. */
wh_status_t cuda_use_device_uuid(const uint8_t uuid[16], char *err, size_t errlen);

/* The pinned staging memory of this process's cuda+ipc server (0s when none is open): its
 * budget, what is allocated (slots are made on first use), and the most in use at once. */
void cuda_staging_stats(uint64_t *budget, uint64_t *allocated, uint64_t *peak);

/* The device ordinal of GPU memory [addr, addr+len), checked to be device memory inside one
 * allocation (a network provider registering it through FI_HMEM needs both). */
wh_status_t cuda_device_of(const void *addr, size_t len, int *ordinal, char *err, size_t errlen);

#endif
