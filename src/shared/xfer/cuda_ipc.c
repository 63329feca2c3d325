/* SPDX-License-Identifier: Apache-2.0 */
/* The "cuda" transport family: same-host GPU memory through CUDA IPC ("cuda+ipc").
 *
 * Client role: a registration of device memory resolves the allocation that holds it
 * (cuMemGetAddressRange), exports it once (cuIpcGetMemHandle) and packs cuda1 tokens for its
 * sub-ranges. No progress thread: the client's CPU does nothing while bytes move.
 *
 * Server role: a batch opens the token's IPC handle (cached per handle and peer pid, LRU
 * bounded), then checks alloc-offset + size against the size of the allocation the driver
 * reports for the opened pointer, so a token cannot reach past its allocation whatever it
 * claims. Posts are synchronous and direct: any host address may be the source or the
 * destination (an mmap of the object in the page cache), and several threads may post into
 * one batch at once, each through its own staging slot: two pinned buffers and two streams,
 * so the copy of window k into pinned memory overlaps the DMA of window k-1.
 *
 * Security: the token is a capability the client exported on purpose; the server serves
 * cuda1 only to peers on its Unix socket (bind_pid > 0, checked here), so the process that
 * sent the request is one the kernel identified on this host. */
#include "xfer/cuda.h"
#include "xfer/cuda_regcache.h"
#include "base/crc.h"
#include "xfer/xfer.h"
#include "base/log.h"
#include "base/util.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#define MOD "xfer"

#define CUDA_STAGE_BYTES (8u << 20) /* per pinned buffer; two per slot */
#define CUDA_MAX_SLOTS 64
#define CUDA_IPC_CACHE 32

/* What cuda_staging_stats reports (one cuda+ipc server per process). */
static _Atomic uint64_t g_pin_budget, g_pin_alloc, g_pin_peak;
static unsigned g_pin_busy; /* slots in use, under the xfer's mu */

void cuda_staging_stats(uint64_t *budget, uint64_t *allocated, uint64_t *peak)
{
    *budget = atomic_load(&g_pin_budget);
    *allocated = atomic_load(&g_pin_alloc);
    *peak = atomic_load(&g_pin_peak);
}

typedef struct cuda_slot {
    void *pin[2];
    cu_stream_t stream[2];
    bool ready;
} cuda_slot_t;

typedef struct cuda_ipc_ent {
    uint8_t handle[XFER_TOKEN_CUDA_IPC_LEN];
    uint8_t uuid[16];
    pid_t pid;
    cu_deviceptr_t dptr;
    size_t alloc_size;
    unsigned refs;
    uint64_t last_use;
    bool used;
} cuda_ipc_ent_t;

typedef struct cuda_x {
    struct xfer base;
    const cuda_api_t *cu;
    /* server */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    cuda_slot_t slot[CUDA_MAX_SLOTS];
    unsigned nslots, free_mask_n;
    bool slot_busy[CUDA_MAX_SLOTS];
    cuda_ipc_ent_t ipc[CUDA_IPC_CACHE];
    uint64_t clock;
    enum { STAGE_PINNED = 0, STAGE_PAGEABLE, STAGE_REGISTER } stage;
    uint8_t read_fd; /* XFER_READS_FD_*: GET sources read from their files (WHARF_CUDA_SOURCE) */
    cuda_regcache_t *rc; /* page-cache registrations kept across GETs, or NULL */
} cuda_x_t;

typedef struct cuda_mr {
    struct xfer_mr base;
    cu_deviceptr_t alloc_base;
    size_t alloc_size;
    uint8_t handle[XFER_TOKEN_CUDA_IPC_LEN];
    uint8_t uuid[16];
} cuda_mr_t;

typedef struct cuda_batch {
    struct xfer_batch base;
    cuda_ipc_ent_t *ent;
    cu_deviceptr_t dst; /* device address of the token's base in this process */
    uint8_t uuid[16];
} cuda_batch_t;

static wh_status_t cx_open(const xfer_config_t *cfg, const xfer_provider_t *prov, xfer_t **out,
                           char *err, size_t errlen)
{
    const cuda_api_t *cu;
    (void)prov;
    wh_status_t st = cuda_load(&cu, err, errlen);
    if (st != WH_OK)
        return st;
    cuda_x_t *x = calloc(1, sizeof *x);
    if (!x)
        return WH_ERR_NOMEM;
    x->cu = cu;
    pthread_mutex_init(&x->mu, NULL);
    pthread_cond_init(&x->cv, NULL);
    /* One staging slot (two pinned buffers) per copy thread that can run, within the
     * budget: by default one per core, at most 1/32 of RAM; never fewer than one. */
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    uint64_t ram = pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz : 0;
    uint64_t per = 2ull * CUDA_STAGE_BYTES;
    uint64_t budget = cfg->pinned_budget;
    if (!budget) {
        budget = (uint64_t)(n < 2 ? 2 : n) * per;
        if (ram && budget > ram / 32)
            budget = ram / 32;
    }
    uint64_t slots = budget / per;
    x->nslots = (unsigned)(slots < 1 ? 1 : slots > CUDA_MAX_SLOTS ? CUDA_MAX_SLOTS : slots);
    if (cfg->role == XFER_ROLE_SERVER) {
        atomic_store(&g_pin_budget, (uint64_t)x->nslots * per);
        wh_info(MOD, "cuda staging slots=%u pinned_budget=%llu", x->nslots,
                (unsigned long long)((uint64_t)x->nslots * per));
    }
    const char *sm = getenv("WHARF_CUDA_STAGING");
    if (sm && strcmp(sm, "pageable") == 0)
        x->stage = STAGE_PAGEABLE;
    else if (sm && strcmp(sm, "register") == 0)
        x->stage = STAGE_REGISTER;
    /* Where a GET's bytes come from:
     * - "auto", the default: the copy reads files on a tmpfs in 4 KiB pages with pread into its
     *   pinned buffers (no page table), and the engine maps files elsewhere;
     * - "read" or "map": one of those for every file;
     * - "register", a timing variant: DMA straight from the object's page-cache pages,
     *   registered with the driver and kept (cuda_regcache.h, budget WHARF_CUDA_REGCACHE,
     *   default RAM/8), the CPU checksumming the same pages; what the cache cannot take is read.
     * On the H100 machine (docs/scale-up.md): reading an 8 GiB restore from /dev/shm took
     * 0.40-0.45 s against 0.74-0.76 s mapped. Registered page-cache pages feed the copy engine
     * at its rate inside one process (54 GB/s), but wharfd's registered GETs into a client's
     * IPC-opened memory ran at 3-6 GB/s against 28-30 read: not the default. */
    const char *src = getenv("WHARF_CUDA_SOURCE");
    bool reg = false;
    x->read_fd = XFER_READS_FD_SMALL_TMPFS;
    if (src && strcmp(src, "read") == 0)
        x->read_fd = XFER_READS_FD_ALWAYS;
    else if (src && strcmp(src, "map") == 0)
        x->read_fd = XFER_READS_FD_NO;
    else if (src && strcmp(src, "register") == 0)
        reg = true;
    else if (src && *src && strcmp(src, "auto") != 0)
        wh_warn(MOD, "WHARF_CUDA_SOURCE=%s is not auto, read, map or register: auto", src);
    uint64_t rc_budget = ram / 8;
    const char *rcs = getenv("WHARF_CUDA_REGCACHE");
    if (rcs && *rcs && wh_parse_size(rcs, &rc_budget) != 0) {
        wh_warn(MOD, "WHARF_CUDA_REGCACHE=%s is not a size (" WH_SIZE_SYNTAX "): RAM/8", rcs);
        rc_budget = ram / 8;
    }
    if (x->stage != STAGE_PINNED) {
        x->read_fd = XFER_READS_FD_NO; /* the timing variants keep their own copy */
        reg = false;
    }
    if (reg && rc_budget && cfg->role == XFER_ROLE_SERVER) {
        /* Timing variants: the registrations' size and cuMemHostRegister's flags. */
        uint64_t rc_chunk = 0;
        const char *ck = getenv("WHARF_CUDA_REGCACHE_CHUNK");
        if (ck && *ck && wh_parse_size(ck, &rc_chunk) != 0)
            rc_chunk = 0;
        const char *fl = getenv("WHARF_CUDA_REGCACHE_FLAGS");
        unsigned flags = fl && *fl ? (unsigned)strtoul(fl, NULL, 0)
                                   : CU_MEMHOSTREGISTER_READ_ONLY | CU_MEMHOSTREGISTER_PORTABLE;
        x->rc = cuda_regcache_new(cu, rc_budget, rc_chunk, flags);
        if (x->rc)
            x->read_fd = XFER_READS_FD_ALWAYS; /* what the cache cannot take is read */
    }
    if (cfg->role == XFER_ROLE_SERVER)
        wh_info(MOD, "cuda get source=%s regcache_budget=%llu",
                x->rc                                ? "register (read past the budget)"
                : x->read_fd == XFER_READS_FD_ALWAYS ? "read"
                : x->read_fd                         ? "auto (read on a tmpfs in 4 KiB pages)"
                                                     : "map",
                (unsigned long long)(x->rc ? rc_budget : 0));
    x->base._needs_progress = false;
    *out = &x->base;
    return WH_OK;
}

static void cx_close(xfer_t *xx)
{
    cuda_x_t *x = (cuda_x_t *)xx;
    cuda_regcache_free(x->rc);
    for (unsigned i = 0; i < CUDA_IPC_CACHE; i++)
        if (x->ipc[i].used && cuda_use_device_uuid(x->ipc[i].uuid, NULL, 0) == WH_OK)
            x->cu->cuIpcCloseMemHandle(x->ipc[i].dptr);
    for (unsigned i = 0; i < x->nslots; i++) {
        cuda_slot_t *s = &x->slot[i];
        for (int j = 0; j < 2; j++) {
            if (s->stream[j])
                x->cu->cuStreamDestroy(s->stream[j]);
            if (s->pin[j]) {
                x->cu->cuMemFreeHost(s->pin[j]);
                atomic_fetch_sub(&g_pin_alloc, CUDA_STAGE_BYTES);
            }
        }
    }
    pthread_mutex_destroy(&x->mu);
    pthread_cond_destroy(&x->cv);
    free(x);
}

static void cx_forget_after_fork(xfer_t *xx)
{
    (void)xx; /* CUDA state is unusable in a fork child: nothing of it is touched again */
}

/* ---- client: registration and tokens ------------------------------------------------------ */

static wh_status_t cx_mr_reg(xfer_t *xx, void *addr, size_t len, xfer_mr_t **out)
{
    cuda_x_t *x = (cuda_x_t *)xx;
    if (xx->_role == XFER_ROLE_SERVER) {
        /* The server's own buffers are host memory that its posts copy through staging. */
        cuda_mr_t *h = calloc(1, sizeof *h);
        if (!h)
            return WH_ERR_NOMEM;
        h->base._x = xx;
        h->base._addr = addr;
        h->base._len = len;
        *out = &h->base;
        return WH_OK;
    }
    const cuda_api_t *cu = x->cu;
    cu_deviceptr_t p = (cu_deviceptr_t)(uintptr_t)addr;
    unsigned mtype = 0;
    cu_context_t ctx = NULL, prev = NULL;
    cu_result_t r = cu->cuPointerGetAttribute(&mtype, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p);
    if (r != 0 || mtype != CU_MEMORYTYPE_DEVICE) {
        wh_error(MOD, "cuda registration refused: not device memory addr=%p res=%s", addr,
                 r ? cuda_strerror(r) : "host memory");
        return WH_ERR_INVALID;
    }
    if ((r = cu->cuPointerGetAttribute(&ctx, CU_POINTER_ATTRIBUTE_CONTEXT, p)) != 0) {
        wh_error(MOD, "cuda pointer has no context addr=%p res=%s", addr, cuda_strerror(r));
        return WH_ERR_INVALID;
    }
    int ordinal = -1;
    cu->cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p);
    cu->cuCtxGetCurrent(&prev);
    cu->cuCtxSetCurrent(ctx);
    cuda_mr_t *m = calloc(1, sizeof *m);
    wh_status_t st = WH_OK;
    if (!m) {
        st = WH_ERR_NOMEM;
        goto out;
    }
    if ((r = cu->cuMemGetAddressRange(&m->alloc_base, &m->alloc_size, p)) != 0) {
        wh_error(MOD, "cuMemGetAddressRange failed addr=%p res=%s", addr, cuda_strerror(r));
        st = WH_ERR_INVALID;
        goto out;
    }
    if (p - m->alloc_base > m->alloc_size || len > m->alloc_size - (p - m->alloc_base)) {
        wh_error(MOD,
                 "cuda registration spans more than one allocation addr=%p len=%zu "
                 "alloc_base=0x%llx alloc_size=%zu; register each allocation (tensor "
                 "storage) separately",
                 addr, len, m->alloc_base, m->alloc_size);
        st = WH_ERR_INVALID;
        goto out;
    }
    cu_ipc_mem_handle_t h;
    if ((r = cu->cuIpcGetMemHandle(&h, m->alloc_base)) != 0) {
        wh_error(MOD,
                 "cuIpcGetMemHandle failed addr=%p res=%s (memory from cudaMallocAsync "
                 "pools or VMM allocations cannot be exported this way)",
                 addr, cuda_strerror(r));
        st = WH_ERR_UNSUPPORTED;
        goto out;
    }
    memcpy(m->handle, h.reserved, XFER_TOKEN_CUDA_IPC_LEN);
    m->base._x = xx;
    m->base._addr = addr;
    m->base._len = len;
    m->base._device = true;
    cu_device_t dev;
    if (ordinal < 0 || cu->cuDeviceGet(&dev, ordinal) != 0 ||
        cu->cuDeviceGetUuid(m->uuid, dev) != 0) {
        wh_error(MOD, "cannot read the device UUID of addr=%p", addr);
        st = WH_ERR_TRANSPORT;
        goto out;
    }
out:
    cu->cuCtxSetCurrent(prev);
    if (st != WH_OK) {
        free(m);
        return st;
    }
    *out = &m->base;
    return WH_OK;
}

static wh_status_t cx_mr_reg_device(xfer_t *xx, void *addr, size_t len, xfer_mr_t **out, char *err,
                                    size_t errlen)
{
    wh_status_t st = cx_mr_reg(xx, addr, len, out);
    if (st != WH_OK)
        wh_errf(WH_OK, err, errlen,
                "%p (+%zu) is not exportable GPU memory (%s): it must lie "
                "inside one cudaMalloc allocation (a tensor's storage); see the log",
                addr, len, wh_status_str(st));
    return st;
}

static void cx_mr_dereg(xfer_mr_t *mr)
{
    free(mr);
}

static wh_status_t cx_token_pack(xfer_t *xx, const xfer_mr_t *mr, const void *addr, uint64_t len,
                                 char *out, size_t outlen)
{
    const cuda_mr_t *m = (const cuda_mr_t *)mr;
    uint64_t off = (uint64_t)(uintptr_t)addr - m->alloc_base;
    return xfer_token_pack_cuda1((uint64_t)(uintptr_t)addr, len, m->uuid, m->handle, off, out,
                                 outlen);
}

/* ---- server: IPC cache, staging slots and batches ----------------------------------------- */

/* Caller holds x->mu. Finds or opens the handle for pid; takes a reference. */
static wh_status_t cx_ipc_get(cuda_x_t *x, const xfer_token_t *t, pid_t pid, cuda_ipc_ent_t **out,
                              char *err, size_t errlen)
{
    cuda_ipc_ent_t *free_e = NULL, *lru = NULL;
    for (unsigned i = 0; i < CUDA_IPC_CACHE; i++) {
        cuda_ipc_ent_t *e = &x->ipc[i];
        if (!e->used) {
            free_e = free_e ? free_e : e;
            continue;
        }
        if (e->pid == pid && memcmp(e->handle, t->cuda_ipc, XFER_TOKEN_CUDA_IPC_LEN) == 0) {
            e->refs++;
            e->last_use = ++x->clock;
            *out = e;
            return WH_OK;
        }
        /* A mapping of a process that is gone only pins its GPU memory: drop it. */
        if (e->refs == 0 && kill(e->pid, 0) != 0 && errno == ESRCH) {
            if (cuda_use_device_uuid(e->uuid, NULL, 0) == WH_OK)
                x->cu->cuIpcCloseMemHandle(e->dptr);
            e->used = false;
            free_e = free_e ? free_e : e;
            continue;
        }
        if (e->refs == 0 && (!lru || e->last_use < lru->last_use))
            lru = e;
    }
    if (!free_e && lru) {
        if (cuda_use_device_uuid(lru->uuid, NULL, 0) == WH_OK)
            x->cu->cuIpcCloseMemHandle(lru->dptr);
        lru->used = false;
        free_e = lru;
    }
    if (!free_e) {
        return wh_errf(WH_ERR_BUSY, err, errlen, "all %d CUDA IPC mappings are in use; retry",
                       CUDA_IPC_CACHE);
    }
    wh_status_t st = cuda_use_device_uuid(t->cuda_uuid, err, errlen);
    if (st != WH_OK)
        return st == WH_ERR_NOT_FOUND ? WH_ERR_INVALID : st;
    cu_ipc_mem_handle_t h;
    memcpy(h.reserved, t->cuda_ipc, XFER_TOKEN_CUDA_IPC_LEN);
    cu_deviceptr_t d = 0;
    cu_result_t r = x->cu->cuIpcOpenMemHandle(&d, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    if (r != 0) {
        return wh_errf(WH_ERR_INVALID, err, errlen,
                       "the token's CUDA IPC handle does not open (%s): the "
                       "allocation is gone or the handle is not one",
                       cuda_strerror(r));
    }
    cu_deviceptr_t b = 0;
    size_t sz = 0;
    if ((r = x->cu->cuMemGetAddressRange(&b, &sz, d)) != 0 || b != d) {
        x->cu->cuIpcCloseMemHandle(d);
        return wh_errf(WH_ERR_INVALID, err, errlen, "cannot size the token's CUDA allocation (%s)",
                       r ? cuda_strerror(r) : "base mismatch");
    }
    memcpy(free_e->handle, t->cuda_ipc, XFER_TOKEN_CUDA_IPC_LEN);
    memcpy(free_e->uuid, t->cuda_uuid, 16);
    free_e->pid = pid;
    free_e->dptr = d;
    free_e->alloc_size = sz;
    free_e->refs = 1;
    free_e->last_use = ++x->clock;
    free_e->used = true;
    *out = free_e;
    return WH_OK;
}

static wh_status_t cx_batch_begin(xfer_t *xx, const xfer_target_t *tgt, xfer_batch_t **out,
                                  char *err, size_t errlen)
{
    cuda_x_t *x = (cuda_x_t *)xx;
    const xfer_token_t *t = tgt->token;
    if (tgt->bind_pid <= 0) {
        return wh_errf(WH_ERR_AUTH, err, errlen,
                       "GPU memory (cuda1) is served only to requests over the "
                       "server's Unix socket, where the kernel identifies the peer");
    }
    cuda_batch_t *b = calloc(1, sizeof *b);
    if (!b)
        return WH_ERR_NOMEM;
    pthread_mutex_lock(&x->mu);
    wh_status_t st = cx_ipc_get(x, t, tgt->bind_pid, &b->ent, err, errlen);
    pthread_mutex_unlock(&x->mu);
    if (st != WH_OK) {
        free(b);
        return st;
    }
    if (t->cuda_off > b->ent->alloc_size || t->size > b->ent->alloc_size - t->cuda_off) {
        wh_errf(WH_OK, err, errlen,
                "token region (offset 0x%llx + size 0x%llx) runs past its CUDA allocation "
                "of 0x%zx bytes",
                (unsigned long long)t->cuda_off, (unsigned long long)t->size, b->ent->alloc_size);
        pthread_mutex_lock(&x->mu);
        b->ent->refs--;
        pthread_mutex_unlock(&x->mu);
        free(b);
        return WH_ERR_INVALID;
    }
    b->dst = b->ent->dptr + t->cuda_off;
    memcpy(b->uuid, t->cuda_uuid, 16);
    b->base._direct = true;
    b->base._reads_fd = x->read_fd;
    *out = &b->base;
    return WH_OK;
}

/* Creates what slot s still lacks: its streams and (pinned staging) its buffers, each
 * buffer counted in g_pin_alloc once it exists. A failure leaves what was made for the next
 * try. */
static bool cx_slot_make(cuda_x_t *x, cuda_slot_t *s)
{
    for (int j = 0; j < 2; j++) {
        if (!s->stream[j] && x->cu->cuStreamCreate(&s->stream[j], CU_STREAM_NON_BLOCKING) != 0) {
            s->stream[j] = NULL;
            return false;
        }
        if (!s->pin[j] && x->stage == STAGE_PINNED) {
            if (x->cu->cuMemHostAlloc(&s->pin[j], CUDA_STAGE_BYTES, CU_MEMHOSTALLOC_PORTABLE) !=
                0) {
                s->pin[j] = NULL;
                return false;
            }
            atomic_fetch_add(&g_pin_alloc, CUDA_STAGE_BYTES);
        }
    }
    return true;
}

static void cx_slot_give(cuda_x_t *x, unsigned i);

/* Takes a free staging slot (waiting if all are busy), creating its buffers on first use. */
static wh_status_t cx_slot_take(cuda_x_t *x, unsigned *idx)
{
    pthread_mutex_lock(&x->mu);
    for (;;) {
        for (unsigned i = 0; i < x->nslots; i++)
            if (!x->slot_busy[i]) {
                x->slot_busy[i] = true;
                g_pin_busy++;
                if (x->stage == STAGE_PINNED &&
                    (uint64_t)g_pin_busy * 2 * CUDA_STAGE_BYTES > atomic_load(&g_pin_peak))
                    atomic_store(&g_pin_peak, (uint64_t)g_pin_busy * 2 * CUDA_STAGE_BYTES);
                pthread_mutex_unlock(&x->mu);
                *idx = i;
                cuda_slot_t *s = &x->slot[i];
                if (s->ready)
                    return WH_OK;
                if (!cx_slot_make(x, s)) {
                    cx_slot_give(x, i);
                    wh_error(MOD, "cannot create cuda staging slot");
                    return WH_ERR_NOMEM;
                }
                s->ready = true;
                return WH_OK;
            }
        pthread_cond_wait(&x->cv, &x->mu);
    }
}

static void cx_slot_give(cuda_x_t *x, unsigned i)
{
    pthread_mutex_lock(&x->mu);
    x->slot_busy[i] = false;
    g_pin_busy--;
    pthread_cond_signal(&x->cv);
    pthread_mutex_unlock(&x->mu);
}

static wh_status_t cx_copy(cuda_x_t *x, cuda_slot_t *s, xfer_op_t op, cu_deviceptr_t dev,
                           uint8_t *host, size_t len, char *err, size_t errlen)
{
    const cuda_api_t *cu = x->cu;
    cu_result_t r = 0;
    if (x->stage == STAGE_PAGEABLE || x->stage == STAGE_REGISTER) {
        void *reg = NULL;
        size_t reglen = 0;
        if (x->stage == STAGE_REGISTER) {
            uintptr_t a = (uintptr_t)host & ~(uintptr_t)4095;
            reglen = (((uintptr_t)host + len + 4095) & ~(uintptr_t)4095) - a;
            reg = (void *)a;
            if (cu->cuMemHostRegister(reg, reglen,
                                      op == XFER_OP_WRITE ? CU_MEMHOSTREGISTER_READ_ONLY : 0))
                reg = NULL; /* fall back to a pageable copy */
        }
        r = op == XFER_OP_WRITE ? cu->cuMemcpyHtoDAsync(dev, host, len, s->stream[0])
                                : cu->cuMemcpyDtoHAsync(host, dev, len, s->stream[0]);
        if (!r)
            r = cu->cuStreamSynchronize(s->stream[0]);
        if (reg)
            cu->cuMemHostUnregister(reg);
        goto done;
    }
    /* Pinned staging, double-buffered: fill buffer j while the DMA of the other runs. */
    size_t pend[2] = {0, 0};
    uint8_t *pend_host[2] = {NULL, NULL};
    unsigned j = 0;
    for (size_t done = 0; done < len && !r; j ^= 1) {
        size_t n = len - done < CUDA_STAGE_BYTES ? len - done : CUDA_STAGE_BYTES;
        if (pend[j] || pend_host[j]) { /* buffer j's earlier DMA must be finished */
            if ((r = cu->cuStreamSynchronize(s->stream[j])))
                break;
            if (op == XFER_OP_READ)
                memcpy(pend_host[j], s->pin[j], pend[j]);
            pend[j] = 0;
            pend_host[j] = NULL;
        }
        if (op == XFER_OP_WRITE) {
            memcpy(s->pin[j], host + done, n);
            r = cu->cuMemcpyHtoDAsync(dev + done, s->pin[j], n, s->stream[j]);
        } else {
            r = cu->cuMemcpyDtoHAsync(s->pin[j], dev + done, n, s->stream[j]);
            pend_host[j] = host + done;
        }
        pend[j] = n;
        done += n;
    }
    for (j = 0; j < 2; j++) {
        if (!pend[j])
            continue;
        cu_result_t r2 = cu->cuStreamSynchronize(s->stream[j]);
        if (!r && !r2 && op == XFER_OP_READ)
            memcpy(pend_host[j], s->pin[j], pend[j]);
        if (!r)
            r = r2;
    }
done:
    if (r) {
        return wh_errf(WH_ERR_TRANSPORT, err, errlen, "CUDA copy of %zu bytes failed: %s", len,
                       cuda_strerror(r));
    }
    return WH_OK;
}

static wh_status_t cx_batch_post(xfer_batch_t *bb, xfer_op_t op, xfer_mr_t *mr, void *local,
                                 size_t len, uint64_t roff, unsigned tag)
{
    cuda_batch_t *b = (cuda_batch_t *)bb;
    cuda_x_t *x = (cuda_x_t *)bb->_x;
    char err[200] = "";
    (void)mr;
    (void)tag;
    wh_status_t st = cuda_use_device_uuid(b->uuid, err, sizeof err);
    unsigned si = 0;
    if (st == WH_OK)
        st = cx_slot_take(x, &si);
    if (st == WH_OK) {
        st = cx_copy(x, &x->slot[si], op, b->dst + roff, local, len, err, sizeof err);
        cx_slot_give(x, si);
    }
    if (st != WH_OK) {
        xfer_batch_fail(bb, st, "%s", err);
        wh_error(MOD, "cuda post failed len=%zu roff=%llu err='%s'", len, (unsigned long long)roff,
                 err);
        return st;
    }
    __atomic_add_fetch(&bb->_bytes_done, len, __ATOMIC_ACQ_REL);
    return WH_OK;
}

/* Host to device with the crc fused in: each 1 MiB block is copied into pinned memory and
 * checksummed there while it is still in the cache, so the source is read from memory once
 * (the crc would otherwise be a pass of its own). DMA of one 8 MiB buffer overlaps the fill
 * of the other. */
#define CUDA_CRC_BLOCK (1u << 20)

/* The source of a host-to-device copy with the crc: a mapping, or a file read block by block
 * into the pinned buffer (pread: the kernel copies from the page cache, no page table). */
typedef struct cx_src {
    const uint8_t *p;
    int fd;
    uint64_t off;
} cx_src_t;

static wh_status_t cx_post_crc(xfer_batch_t *bb, const cx_src_t *from, size_t len, uint64_t roff,
                               uint64_t *crc_out)
{
    cuda_batch_t *b = (cuda_batch_t *)bb;
    cuda_x_t *x = (cuda_x_t *)bb->_x;
    if (x->stage != STAGE_PINNED)
        return WH_ERR_UNSUPPORTED; /* the timing variants keep their own copy */
    const cuda_api_t *cu = x->cu;
    char err[200] = "";
    wh_status_t st = cuda_use_device_uuid(b->uuid, err, sizeof err);
    unsigned si = 0;
    if (st == WH_OK)
        st = cx_slot_take(x, &si);
    if (st != WH_OK)
        goto fail;
    cuda_slot_t *s = &x->slot[si];
    uint64_t crc = 0;
    bool pend[2] = {false, false};
    cu_result_t r = 0;
    int rerr = 0;
    unsigned j = 0;
    for (size_t done = 0; done < len && !r && !rerr; j ^= 1) {
        size_t n = len - done < CUDA_STAGE_BYTES ? len - done : CUDA_STAGE_BYTES;
        if (pend[j]) {
            if ((r = cu->cuStreamSynchronize(s->stream[j])))
                break;
            pend[j] = false;
        }
        uint8_t *pin = s->pin[j];
        for (size_t k = 0; k < n && !rerr; k += CUDA_CRC_BLOCK) {
            size_t m = n - k < CUDA_CRC_BLOCK ? n - k : CUDA_CRC_BLOCK;
            if (from->p)
                memcpy(pin + k, from->p + done + k, m);
            else
                rerr = -wh_pread_all(from->fd, pin + k, m, from->off + done + k);
            if (!rerr)
                crc = wh_crc64nvme(crc, pin + k, m);
        }
        if (rerr)
            break;
        r = cu->cuMemcpyHtoDAsync(b->dst + roff + done, pin, n, s->stream[j]);
        pend[j] = r == 0;
        done += n;
    }
    for (j = 0; j < 2; j++) {
        cu_result_t r2 = pend[j] ? cu->cuStreamSynchronize(s->stream[j]) : 0;
        if (!r)
            r = r2;
    }
    cx_slot_give(x, si);
    if (rerr) {
        snprintf(err, sizeof err, "read of %zu bytes at %llu of the object's file failed: %s", len,
                 (unsigned long long)from->off, strerror(rerr));
        st = WH_ERR_IO;
        goto fail;
    }
    if (r) {
        snprintf(err, sizeof err, "CUDA copy of %zu bytes failed: %s", len, cuda_strerror(r));
        st = WH_ERR_TRANSPORT;
        goto fail;
    }
    __atomic_add_fetch(&bb->_bytes_done, len, __ATOMIC_ACQ_REL);
    *crc_out = crc;
    return WH_OK;
fail:
    xfer_batch_fail(bb, st, "%s", err);
    wh_error(MOD, "cuda post failed len=%zu roff=%llu err='%s'", len, (unsigned long long)roff,
             err);
    return st;
}

static wh_status_t cx_batch_post_crc(xfer_batch_t *bb, const void *local, size_t len, uint64_t roff,
                                     uint64_t *crc_out)
{
    cx_src_t from = {.p = local, .fd = -1};
    return cx_post_crc(bb, &from, len, roff, crc_out);
}

/* Host to device from registered page-cache pages: the DMA reads the file's pages, no staging
 * copy, while the CPU checksums the same pages (read-only: both only read them). Each copy
 * stays inside one registration (chunk). WH_ERR_UNSUPPORTED when the cache cannot serve the
 * range: the caller reads it into the staging buffers instead. */
static wh_status_t cx_post_reg(xfer_batch_t *bb, int fd, uint64_t off, size_t len, uint64_t roff,
                               uint64_t *crc_out)
{
    cuda_batch_t *b = (cuda_batch_t *)bb;
    cuda_x_t *x = (cuda_x_t *)bb->_x;
    const cuda_api_t *cu = x->cu;
    char err[200] = "";
    wh_status_t st = cuda_use_device_uuid(b->uuid, err, sizeof err);
    if (st != WH_OK) {
        xfer_batch_fail(bb, st, "%s", err);
        return st;
    }
    void *ref = NULL;
    const uint8_t *p = cuda_regcache_get(x->rc, fd, off, len, &ref);
    if (!p)
        return WH_ERR_UNSUPPORTED;
    unsigned si = 0;
    if ((st = cx_slot_take(x, &si)) != WH_OK) {
        cuda_regcache_put(x->rc, ref);
        xfer_batch_fail(bb, st, "no CUDA stream for the copy");
        return st;
    }
    cu_stream_t stream = x->slot[si].stream[0];
    uint64_t crc = 0;
    cu_result_t r = 0;
    for (size_t done = 0; done < len && !r;) {
        uint64_t ck = cuda_regcache_chunk(x->rc);
        uint64_t at = off + done, chunk_end = (at / ck + 1) * ck;
        size_t n = (size_t)WH_MIN((uint64_t)(len - done), chunk_end - at);
        r = cu->cuMemcpyHtoDAsync(b->dst + roff + done, p + done, n, stream);
        if (!r) /* the checksum runs while the copy engine reads the same pages */
            crc = wh_crc64nvme(crc, p + done, n);
        done += n;
    }
    cu_result_t r2 = cu->cuStreamSynchronize(stream);
    if (!r)
        r = r2;
    cx_slot_give(x, si);
    cuda_regcache_put(x->rc, ref);
    if (r) {
        st = WH_ERR_TRANSPORT;
        xfer_batch_fail(bb, st, "CUDA copy of %zu bytes from registered pages failed: %s", len,
                        cuda_strerror(r));
        wh_error(MOD, "cuda post failed len=%zu roff=%llu: %s", len, (unsigned long long)roff,
                 cuda_strerror(r));
        return st;
    }
    __atomic_add_fetch(&bb->_bytes_done, len, __ATOMIC_ACQ_REL);
    *crc_out = crc;
    return WH_OK;
}

static wh_status_t cx_batch_post_fd_crc(xfer_batch_t *bb, int fd, uint64_t off, size_t len,
                                        uint64_t roff, uint64_t *crc_out)
{
    cuda_x_t *x = (cuda_x_t *)bb->_x;
    if (x->rc && x->stage == STAGE_PINNED) {
        wh_status_t st = cx_post_reg(bb, fd, off, len, roff, crc_out);
        if (st != WH_ERR_UNSUPPORTED)
            return st;
    }
    cx_src_t from = {.p = NULL, .fd = fd, .off = off};
    return cx_post_crc(bb, &from, len, roff, crc_out);
}

static wh_status_t cx_batch_wait(xfer_batch_t *bb, unsigned tag)
{
    (void)tag; /* posts are synchronous */
    return xfer_batch_status(bb);
}

static wh_status_t cx_batch_end(xfer_batch_t *bb)
{
    cuda_batch_t *b = (cuda_batch_t *)bb;
    cuda_x_t *x = (cuda_x_t *)bb->_x;
    pthread_mutex_lock(&x->mu);
    b->ent->refs--;
    pthread_mutex_unlock(&x->mu);
    free(b);
    return WH_OK;
}

/* No progress hooks, stalled or quiesce (NULL): the copies are synchronous, so nothing is
 * ever left in flight and nothing arrives after a request ends. */
const struct xfer_ops xfer_cuda_ops = {
    .family = "cuda",
    .open = cx_open,
    .close = cx_close,
    .forget_after_fork = cx_forget_after_fork,
    .mr_reg = cx_mr_reg,
    .mr_reg_device = cx_mr_reg_device,
    .mr_dereg = cx_mr_dereg,
    .token_pack = cx_token_pack,
    .batch_begin = cx_batch_begin,
    .batch_post = cx_batch_post,
    .batch_wait = cx_batch_wait,
    .batch_end = cx_batch_end,
    .batch_post_crc = cx_batch_post_crc,
    .batch_post_fd_crc = cx_batch_post_fd_crc,
};
