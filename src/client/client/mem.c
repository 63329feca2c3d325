/* SPDX-License-Identifier: Apache-2.0 */
/* libwharf: memory registrations and the cache that finds one from a pointer.
 *
 * The cache is an array sorted by address under a rwlock: lookups (every transfer) take it
 * shared, so any number of threads can transfer into disjoint ranges of one registration at
 * once. In a fork child the parent's registrations are dropped and re-made on first use. */
#include "client/client_int.h"

#include "base/log.h"

#include <stdlib.h>
#include <string.h>

#define MOD "client"

/* GPU memory. A network provider opened with FI_HMEM registers it with the NIC (ofi1
 * tokens, as for host memory). Otherwise the same-host CUDA IPC transport (cuda+ipc), opened
 * on first use: the server on this host writes into it over its Unix socket. Where neither
 * can, the error says why for both, and the caller stages through host memory. Caller holds
 * xfer_mu. */
static wh_status_t wc_mem_reg_cuda(wharf_client_t *c, void *addr, size_t len, xfer_mr_t **mr)
{
    char net[256] = "";
    if (c->xfer) {
        wh_status_t st = xfer_mr_reg_device(c->xfer, addr, len, mr, net, sizeof net);
        if (st == WH_OK)
            return WH_OK;
        if (st != WH_ERR_UNSUPPORTED) {
            wc_set_error("wharf_mem_register: GPU memory with %s: %s", c->provider, net);
            return st;
        }
    } else {
        snprintf(net, sizeof net, "no network provider");
    }
    if (!c->unix_socket) {
        wc_set_error("wharf_mem_register: GPU memory cannot be reached directly: %s; and "
                     "without unix_socket in the client config no server on this host can "
                     "reach it over cuda+ipc",
                     net);
        return WH_ERR_UNSUPPORTED;
    }
    char err[256] = "";
    if (!c->xfer_cuda) {
        xfer_config_t xc;
        xfer_config_init(&xc);
        xc.provider = "cuda+ipc";
        xc.role = XFER_ROLE_CLIENT;
        wh_status_t st = xfer_open(&xc, &c->xfer_cuda, err, sizeof err);
        if (st != WH_OK) {
            c->xfer_cuda = NULL;
            wc_set_error("wharf_mem_register: GPU memory needs the CUDA driver: %s", err);
            return st;
        }
    }
    wh_status_t st = xfer_mr_reg_device(c->xfer_cuda, addr, len, mr, err, sizeof err);
    if (st != WH_OK)
        wc_set_error("wharf_mem_register: %s", err);
    return st;
}

/* True when mr is GPU memory (its bytes cannot be read or written by the CPU). */
bool wc_mr_is_device(const xfer_mr_t *mr)
{
    return xfer_mr_is_device(mr);
}

/* First index whose addr is > p. */
static size_t reg_upper(wharf_client_t *c, uintptr_t p)
{
    size_t lo = 0, hi = c->nregs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if ((uintptr_t)c->regs[mid]->addr <= p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* A registration holding [p, p+n); caller holds reg_lock. Registrations may overlap, so walk
 * down from the last one starting at or before p. */
static wharf_mem_t *reg_lookup(wharf_client_t *c, uintptr_t p, uint64_t n)
{
    size_t i = reg_upper(c, p);
    while (i > 0) {
        wharf_mem_t *m = c->regs[--i];
        uintptr_t a = (uintptr_t)m->addr;
        if (p >= a && n <= m->len && p - a <= m->len - n)
            return m;
    }
    return NULL;
}

bool wc_mem_is_cuda(wharf_client_t *c, const void *p, uint64_t n)
{
    pthread_rwlock_rdlock(&c->reg_lock);
    wharf_mem_t *m = reg_lookup(c, (uintptr_t)p, n ? n : 1);
    bool cuda = m && m->kind == WHARF_MEM_CUDA;
    pthread_rwlock_unlock(&c->reg_lock);
    return cuda;
}

WHARF_API wharf_status_t wharf_mem_register(wharf_client_t *c, void *addr, size_t len,
                                            wharf_mem_kind_t kind, wharf_mem_t **out)
{
    wc_client_enter(c);
    if (!c || !out || !addr || len == 0) {
        wc_set_error("wharf_mem_register: client, a non-NULL addr, len > 0 and out are "
                     "required");
        return WHARF_ERR_INVALID;
    }
    if (kind != WHARF_MEM_HOST && kind != WHARF_MEM_CUDA) {
        wc_set_error("wharf_mem_register: unknown memory kind %d", (int)kind);
        return WHARF_ERR_INVALID;
    }
    if ((uintptr_t)addr + len < (uintptr_t)addr) {
        wc_set_error("wharf_mem_register: [addr, addr+len) wraps around");
        return WHARF_ERR_INVALID;
    }
    wharf_mem_t *m = calloc(1, sizeof *m);
    if (!m) {
        wc_set_error("wharf_mem_register: out of memory");
        return WHARF_ERR_NOMEM;
    }
    m->c = c;
    m->addr = addr;
    m->len = len;
    m->kind = kind;

    wh_status_t st = WH_OK;
    pthread_rwlock_wrlock(&c->reg_lock);
    if (c->nregs == c->regs_cap) {
        size_t cap = c->regs_cap ? c->regs_cap * 2 : 16;
        /* sizeof *r: r is an array of pointers, and a pointer is what each slot holds */
        /* NOLINTNEXTLINE(bugprone-sizeof-expression) */
        wharf_mem_t **r = realloc(c->regs, cap * sizeof *r);
        if (!r) {
            st = WH_ERR_NOMEM;
            wc_set_error("wharf_mem_register: out of memory");
            goto out_unlock;
        }
        c->regs = r;
        c->regs_cap = cap;
    }
    pthread_mutex_lock(&c->xfer_mu);
    if (kind == WHARF_MEM_CUDA) {
        st = wc_mem_reg_cuda(c, addr, len, &m->mr);
    } else if (c->xfer) {
        st = xfer_mr_reg(c->xfer, addr, len, &m->mr);
        if (st != WH_OK)
            wc_set_error("wharf_mem_register: registering %zu bytes at %p with %s failed "
                         "(%s); check the memory lock limit (ulimit -l) or register less",
                         len, addr, c->provider, wh_status_str(st));
    }
    pthread_mutex_unlock(&c->xfer_mu);
    if (st != WH_OK)
        goto out_unlock;
    size_t i = reg_upper(c, (uintptr_t)addr);
    /* NOLINTNEXTLINE(bugprone-sizeof-expression): regs holds pointers */
    memmove(&c->regs[i + 1], &c->regs[i], (c->nregs - i) * sizeof *c->regs);
    c->regs[i] = m;
    c->nregs++;
out_unlock:
    pthread_rwlock_unlock(&c->reg_lock);
    if (st != WH_OK) {
        free(m);
        return (wharf_status_t)st;
    }
    wh_debug(MOD, "registered addr=%p len=%zu provider=%s", addr, len, c->provider);
    *out = m;
    return WHARF_OK;
}

WHARF_API void wharf_mem_deregister(wharf_mem_t *m)
{
    if (!m)
        return;
    wharf_client_t *c = m->c;
    if (!c) { /* the client is gone; its mr went with it */
        free(m);
        return;
    }
    wc_client_enter(c);
    pthread_rwlock_wrlock(&c->reg_lock);
    for (size_t i = 0; i < c->nregs; i++) {
        if (c->regs[i] == m) {
            /* NOLINTNEXTLINE(bugprone-sizeof-expression): regs holds pointers */
            memmove(&c->regs[i], &c->regs[i + 1], (c->nregs - i - 1) * sizeof *c->regs);
            c->nregs--;
            break;
        }
    }
    pthread_rwlock_unlock(&c->reg_lock);
    xfer_mr_dereg(m->mr);
    free(m);
}

wh_status_t wc_mem_find(wharf_client_t *c, const void *p, uint64_t n, xfer_mr_t **mr_out)
{
    pthread_rwlock_rdlock(&c->reg_lock);
    wharf_mem_t *m = reg_lookup(c, (uintptr_t)p, n ? n : 1);
    if (!m) {
        pthread_rwlock_unlock(&c->reg_lock);
        wc_set_error("[%p, +%llu) is not inside memory registered with this client; call "
                     "wharf_mem_register on the buffer first (or use the HTTP transport)",
                     p, (unsigned long long)n);
        return WH_ERR_INVALID;
    }
    xfer_mr_t *mr = m->mr;
    pthread_rwlock_unlock(&c->reg_lock);
    if (mr) {
        *mr_out = mr;
        return WH_OK;
    }
    /* Not registered with the transport (fork child): register now, once. */
    wh_status_t st = WH_OK;
    pthread_rwlock_wrlock(&c->reg_lock);
    m = reg_lookup(c, (uintptr_t)p, n ? n : 1);
    if (m && !m->mr && m->kind == WHARF_MEM_CUDA) {
        st = WH_ERR_UNSUPPORTED;
        wc_set_error("GPU memory registered before fork() cannot be used in the child; "
                     "register it again there");
    } else if (m && !m->mr) {
        pthread_mutex_lock(&c->xfer_mu);
        if (!c->xfer)
            st = WH_ERR_UNSUPPORTED;
        else
            st = xfer_mr_reg(c->xfer, m->addr, m->len, &m->mr);
        pthread_mutex_unlock(&c->xfer_mu);
        if (st != WH_OK)
            wc_set_error("re-registering %zu bytes at %p after fork failed (%s): %s", m->len,
                         m->addr, wh_status_str(st),
                         c->xfer ? "check the memory lock limit" : c->no_rdma_reason);
    } else if (!m) {
        st = WH_ERR_INVALID;
        wc_set_error("[%p, +%llu) was deregistered during the call", p, (unsigned long long)n);
    }
    if (st == WH_OK)
        *mr_out = m->mr;
    pthread_rwlock_unlock(&c->reg_lock);
    return st;
}

void wc_mem_drop_mrs(wharf_client_t *c)
{
    pthread_rwlock_wrlock(&c->reg_lock);
    for (size_t i = 0; i < c->nregs; i++) {
        xfer_mr_dereg(c->regs[i]->mr); /* forgotten transport: wharf memory only */
        c->regs[i]->mr = NULL;
    }
    pthread_rwlock_unlock(&c->reg_lock);
}

void wc_mem_orphan_all(wharf_client_t *c)
{
    pthread_rwlock_wrlock(&c->reg_lock);
    for (size_t i = 0; i < c->nregs; i++) {
        xfer_mr_dereg(c->regs[i]->mr);
        c->regs[i]->mr = NULL;
        c->regs[i]->c = NULL;
    }
    c->nregs = 0;
    pthread_rwlock_unlock(&c->reg_lock);
}
