/* SPDX-License-Identifier: Apache-2.0 */
/* x-amz-rdma-token: the one parser (and packer) of every token dialect, shared by server and
 * client. All dialects put base and size first.
 *
 * ofi1  (Ceph OSD-direct RFC form):  <base>:<size>:ofi1:<provider>:<ep-name hex>:<key hex>
 *       base and size are lowercase hex without 0x (1..16 digits); provider is a libfabric
 *       provider name ("shm", "tcp;ofi_rxm", "verbs;ofi_rxm", "efa", "cxi": [a-z0-9_;]{1,31});
 *       ep-name is the endpoint's raw address (fi_getname) in hex (2..512 hex digits, even);
 *       key is the remote key in hex (1..16 digits).
 * cuda1 (same-host GPU memory): <base>:<size>:cuda1:<device-uuid>:<ipc-handle>:<alloc-offset>
 *       base and size as in ofi1 (base is the client's device address, informational); the
 *       device UUID is 32 hex digits (cuDeviceGetUuid), the ipc handle 128 hex digits (the 64
 *       bytes of cuIpcGetMemHandle for the allocation holding the region), alloc-offset the
 *       region's offset inside that allocation. The server opens the handle and checks
 *       alloc-offset + size against the allocation's real size before it moves a byte.
 * cuobj (NVIDIA DC descriptor): exactly 81 characters, 7 lowercase hex fields of widths
 *       16:8:8:4:6:1:32 (addr:size:rkey:lid:dctn:gid_present:gid). The 115-character form
 *       with a trailing ":addr:size" is rejected explicitly. */
#ifndef WH_XFER_TOKEN_H
#define WH_XFER_TOKEN_H

#include "base/status.h"

#include <stddef.h>
#include <stdint.h>

#define XFER_TOKEN_MAX_LEN 1200
#define XFER_TOKEN_MAX_EP_NAME 256
#define XFER_TOKEN_MAX_PROVIDER 32

typedef enum {
    XFER_TOKEN_DIALECT_OFI1 = 1,
    XFER_TOKEN_DIALECT_CUOBJ = 2,
    XFER_TOKEN_DIALECT_CUDA1 = 3
} xfer_token_dialect_t;

#define XFER_TOKEN_CUDA_IPC_LEN 64

typedef struct xfer_token {
    xfer_token_dialect_t dialect;
    uint64_t base;
    uint64_t size;
    uint64_t key; /* ofi1 key; cuobj rkey */
    /* ofi1 */
    char provider[XFER_TOKEN_MAX_PROVIDER];
    uint8_t ep_name[XFER_TOKEN_MAX_EP_NAME];
    size_t ep_name_len;
    /* cuobj */
    uint16_t lid;
    uint32_t dctn;
    uint8_t gid_present;
    uint8_t gid[16];
    /* cuda1 (provider is set to "cuda") */
    uint8_t cuda_uuid[16];
    uint8_t cuda_ipc[XFER_TOKEN_CUDA_IPC_LEN];
    uint64_t cuda_off;
} xfer_token_t;

/* Parses s (len bytes, need not be NUL-terminated). On failure returns WH_ERR_INVALID and
 * writes a message naming the bad field into err (e.g. "token field 'size': not hex");
 * an unknown dialect gives WH_ERR_UNSUPPORTED ("unknown token dialect 'xyz'"). */
wh_status_t xfer_token_parse(const char *s, size_t len, xfer_token_t *out, char *err,
                             size_t errlen);

/* An x-amz-rdma-token as a server received it, parsed once where it arrives (the S3 front, a
 * storage server's internal request): the string, and what xfer_token_parse made of it. */
typedef struct xfer_token_arg {
    const char *str;  /* the header's value; NULL: the request carries none */
    wh_status_t st;   /* xfer_token_parse's answer (WH_ERR_INVALID when str is NULL) */
    xfer_token_t tok; /* st == WH_OK: the token */
    char err[200];    /* st != WH_OK: the message naming the bad field */
} xfer_token_arg_t;
/* Parses str (NULL: none) into a. */
void xfer_token_arg_parse(xfer_token_arg_t *a, const char *str);

/* Packs an ofi1 token into out. Returns WH_ERR_INVALID if it does not fit or a field is bad. */
wh_status_t xfer_token_pack_ofi1(uint64_t base, uint64_t size, const char *provider,
                                 const void *ep_name, size_t ep_name_len, uint64_t key, char *out,
                                 size_t outlen);

/* Packs a cuda1 token into out (XFER_TOKEN_MAX_LEN always suffices). */
wh_status_t xfer_token_pack_cuda1(uint64_t base, uint64_t size, const uint8_t uuid[16],
                                  const uint8_t ipc[XFER_TOKEN_CUDA_IPC_LEN], uint64_t alloc_off,
                                  char *out, size_t outlen);

/* Packs a cuobj token (81 chars + NUL) - used by tests and clients of DC fabrics. */
wh_status_t xfer_token_pack_cuobj(const xfer_token_t *t, char out[82]);

#endif
