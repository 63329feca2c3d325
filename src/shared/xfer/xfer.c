/* SPDX-License-Identifier: Apache-2.0 */
/* xfer core: defaults, opening a provider through its family (and the bound family beside
 * it), slot checks, and the dispatch wrappers that enforce what every provider must honour
 * (bounds of the token's region, fork inertness). The provider table is in provider.c. */
#include "xfer/xfer.h"
#include "base/log.h"

#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>

void xfer_config_init(xfer_config_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->chunk_size = XFER_DEFAULT_CHUNK;
    cfg->window = XFER_DEFAULT_WINDOW;
    cfg->max_peers = XFER_DEFAULT_MAX_PEERS;
    cfg->timeout_ms = XFER_DEFAULT_TIMEOUT_MS;
    cfg->reap_ms = XFER_DEFAULT_REAP_MS;
    cfg->progress_thread = true;
}

/* Fields left 0 take the defaults, so a family never re-decides them. */
static void xfer_config_fill(xfer_config_t *c)
{
    if (!c->chunk_size)
        c->chunk_size = XFER_DEFAULT_CHUNK;
    if (!c->window)
        c->window = XFER_DEFAULT_WINDOW;
    if (c->window > XFER_MAX_WINDOW)
        c->window = XFER_MAX_WINDOW;
    if (!c->max_peers)
        c->max_peers = XFER_DEFAULT_MAX_PEERS;
    if (!c->timeout_ms)
        c->timeout_ms = XFER_DEFAULT_TIMEOUT_MS;
    if (!c->reap_ms)
        c->reap_ms = XFER_DEFAULT_REAP_MS;
}

/* The required slots (xfer.h); an optional one is NULL where the provider lacks it, and its
 * dispatch wrapper below answers WH_ERR_UNSUPPORTED (or does nothing, for the progress and
 * quiesce hooks). */
static bool xfer_ops_complete(const struct xfer_ops *o)
{
    return o->family && o->open && o->close && o->forget_after_fork && o->mr_reg && o->mr_dereg &&
           o->batch_post && o->batch_wait && o->batch_end;
}

/* Opens one family's instance of prov and fills the core's fields. */
static wh_status_t xfer_open_family(const xfer_config_t *cfg, const xfer_provider_t *prov,
                                    const char *family, xfer_t **out, char *err, size_t errlen)
{
    const struct xfer_ops *o = xfer_family(family);
    if (!o) {
        return wh_errf(WH_ERR_UNSUPPORTED, err, errlen,
                       "no transport family '%s' in this build for '%s'", family, prov->name);
    }
    if (!xfer_ops_complete(o)) {
        wh_error("xfer", "provider table lacks a required slot family=%s", o->family);
        return wh_errf(WH_ERR_INTERNAL, err, errlen,
                       "xfer family '%s' is incomplete (a required slot is NULL)", o->family);
    }
    xfer_t *x = NULL;
    wh_status_t st = o->open(cfg, prov, &x, err, errlen);
    if (st != WH_OK)
        return st;
    x->_ops = o;
    x->_prov = prov;
    x->_bound = NULL;
    if (strcmp(family, prov->family) == 0)
        snprintf(x->_name, sizeof x->_name, "%s", prov->name);
    else
        snprintf(x->_name, sizeof x->_name, "%s+%s", family, prov->short_name);
    snprintf(x->_fabric, sizeof x->_fabric, "%s", prov->fabric);
    x->_role = cfg->role;
    /* out is &x->_bound or xfer_open's
     * checked out; the analyzer takes wh_errf (status.c) to return WH_OK, which it never does */
    /* NOLINTNEXTLINE(clang-analyzer-core.NullDereference) */
    *out = x;
    return WH_OK;
}

wh_status_t xfer_open(const xfer_config_t *cfg, xfer_t **out, char *err, size_t errlen)
{
    char order[128];
    xfer_provider_list(order, sizeof order, XFER_NAME);
    if (!cfg || !cfg->provider || !out ||
        (cfg->role != XFER_ROLE_CLIENT && cfg->role != XFER_ROLE_SERVER)) {
        return wh_errf(WH_ERR_INVALID, err, errlen,
                       "xfer: a provider name and a role are required");
    }
    const xfer_provider_t *prov = NULL;
    for (const xfer_provider_t *p = xfer_providers(); p->name; p++)
        if (strcmp(p->name, cfg->provider) == 0)
            prov = p;
    if (!prov) {
        return wh_errf(WH_ERR_UNSUPPORTED, err, errlen,
                       "unknown data-path provider '%.40s'; known providers in preference order: "
                       "%s",
                       cfg->provider, order);
    }
    xfer_config_t c = *cfg;
    xfer_config_fill(&c);
    wh_info("xfer", "opening data-path provider provider=%s role=%s order=%s", prov->name,
            c.role == XFER_ROLE_CLIENT ? "client" : "server", order);
    xfer_t *x = NULL;
    wh_status_t st = xfer_open_family(&c, prov, prov->family, &x, err, errlen);
    if (st != WH_OK)
        return st;
    /* A server serves kernel-identified peers of this provider through the bound family. */
    if (c.role == XFER_ROLE_SERVER && (prov->caps & XFER_CAP_BOUND_PEER) && prov->bound_family) {
        st = xfer_open_family(&c, prov, prov->bound_family, &x->_bound, err, errlen);
        if (st != WH_OK) {
            xfer_close(x);
            return st;
        }
    }
    *out = x;
    return WH_OK;
}

void xfer_close(xfer_t *x)
{
    if (!x)
        return;
    xfer_t *bound = x->_bound;
    x->_ops->close(x);
    if (bound)
        bound->_ops->close(bound);
}

const char *xfer_name(const xfer_t *x)
{
    return x->_name;
}

const char *xfer_fabric(const xfer_t *x)
{
    return x->_fabric;
}

void xfer_forget_after_fork(xfer_t *x)
{
    if (!x)
        return;
    x->_forgotten = true;
    x->_ops->forget_after_fork(x);
    if (x->_bound)
        xfer_forget_after_fork(x->_bound);
}

wh_status_t xfer_mr_reg(xfer_t *x, void *addr, size_t len, xfer_mr_t **out)
{
    if (!x || x->_forgotten || !addr || !len || !out)
        return WH_ERR_INVALID;
    return x->_ops->mr_reg(x, addr, len, out);
}

wh_status_t xfer_mr_reg_device(xfer_t *x, void *addr, size_t len, xfer_mr_t **out, char *err,
                               size_t errlen)
{
    if (!x || x->_forgotten || !addr || !len || !out)
        return wh_errf(WH_ERR_INVALID, err, errlen, "xfer_mr_reg_device: invalid arguments");
    if (x->_role != XFER_ROLE_CLIENT)
        return wh_errf(WH_ERR_INVALID, err, errlen, "device memory is registered by clients");
    if (!x->_ops->mr_reg_device)
        return wh_errf(WH_ERR_UNSUPPORTED, err, errlen,
                       "%s cannot register GPU memory (it serves host memory only)", x->_name);
    wh_status_t st = x->_ops->mr_reg_device(x, addr, len, out, err, errlen);
    if (st == WH_OK)
        (*out)->_device = true;
    return st;
}

bool xfer_mr_is_device(const xfer_mr_t *mr)
{
    return mr && mr->_device;
}

void xfer_mr_dereg(xfer_mr_t *mr)
{
    if (mr)
        mr->_x->_ops->mr_dereg(mr);
}

xfer_t *xfer_mr_owner(const xfer_mr_t *mr)
{
    return mr ? mr->_x : NULL;
}

void *xfer_mr_addr(const xfer_mr_t *mr)
{
    return mr->_addr;
}

size_t xfer_mr_len(const xfer_mr_t *mr)
{
    return mr->_len;
}

static bool xfer_inside(const xfer_mr_t *mr, const void *addr, uint64_t len)
{
    uintptr_t a = (uintptr_t)addr, b = (uintptr_t)mr->_addr;
    return a >= b && a - b <= mr->_len && len <= mr->_len - (a - b);
}

wh_status_t xfer_token_pack(xfer_t *x, const xfer_mr_t *mr, const void *addr, uint64_t len,
                            char *out, size_t outlen)
{
    if (!x || x->_forgotten || !mr || mr->_x != x || !out || !xfer_inside(mr, addr, len))
        return WH_ERR_INVALID;
    if (!x->_ops->token_pack)
        return WH_ERR_UNSUPPORTED;
    return x->_ops->token_pack(x, mr, addr, len, out, outlen);
}

void xfer_progress_begin(xfer_t *x)
{
    if (x && !x->_forgotten && x->_ops->progress_begin)
        x->_ops->progress_begin(x);
}

void xfer_progress_end(xfer_t *x)
{
    if (x && !x->_forgotten && x->_ops->progress_end)
        x->_ops->progress_end(x);
}

void xfer_quiesce(xfer_t *x)
{
    if (x && !x->_forgotten && x->_role == XFER_ROLE_CLIENT && x->_ops->quiesce)
        x->_ops->quiesce(x);
}

bool xfer_needs_progress(const xfer_t *x)
{
    return x && x->_needs_progress;
}

void xfer_progress(xfer_t *x)
{
    if (!x || x->_forgotten)
        return;
    if (x->_ops->progress)
        x->_ops->progress(x);
    if (x->_bound && x->_bound->_ops->progress)
        x->_bound->_ops->progress(x->_bound);
}

wh_status_t xfer_batch_begin(xfer_t *x, const xfer_target_t *tgt, xfer_batch_t **out, char *err,
                             size_t errlen)
{
    if (!x || x->_forgotten || x->_role != XFER_ROLE_SERVER || !tgt || !tgt->token || !out) {
        return wh_errf(WH_ERR_INVALID, err, errlen,
                       "xfer: batches need an open server-role transport");
    }
    const xfer_token_t *t = tgt->token;
    if ((t->dialect != XFER_TOKEN_DIALECT_OFI1 && t->dialect != XFER_TOKEN_DIALECT_CUDA1) ||
        strcmp(t->provider, x->_fabric) != 0) {
        return wh_errf(
            WH_ERR_INVALID, err, errlen, "token provider '%s' is not this transport's '%s'",
            t->dialect != XFER_TOKEN_DIALECT_CUOBJ ? t->provider : "(cuobj)", x->_fabric);
    }
    /* A peer the kernel identified is served by the bound family (cma for shm). */
    if (tgt->bind_pid > 0 && x->_bound)
        x = x->_bound;
    if (!x->_ops->batch_begin)
        return wh_errf(WH_ERR_UNSUPPORTED, err, errlen, "provider %s cannot initiate transfers",
                       x->_name);
    xfer_batch_t *b = NULL;
    wh_status_t st = x->_ops->batch_begin(x, tgt, &b, err, errlen);
    if (st != WH_OK)
        return st;
    b->_x = x;
    b->_rbase = t->base;
    b->_rsize = t->size;
    b->_bytes_done = 0;
    b->_status = WH_OK;
    b->_err_lock = 0;
    b->_err[0] = '\0';
    *out = b;
    return WH_OK;
}

/* The error text of a batch is written by whichever thread fails it first (a poster, or a
 * thread draining completions for every batch of the transport), and read by the owner: it is
 * only touched under _err_lock, held for one snprintf. st = WH_OK writes a message without
 * failing the batch (a refused post), and only while the batch has not failed. */
static void batch_err_lock(xfer_batch_t *b)
{
    while (__atomic_exchange_n(&b->_err_lock, 1, __ATOMIC_ACQUIRE))
        sched_yield();
}

static void batch_err_unlock(xfer_batch_t *b)
{
    __atomic_store_n(&b->_err_lock, 0, __ATOMIC_RELEASE);
}

static wh_status_t batch_vnote(xfer_batch_t *b, wh_status_t st, const char *fmt, va_list ap)
{
    batch_err_lock(b);
    wh_status_t cur = __atomic_load_n(&b->_status, __ATOMIC_ACQUIRE);
    if (cur == WH_OK) {
        vsnprintf(b->_err, sizeof b->_err, fmt, ap);
        if (st != WH_OK)
            __atomic_store_n(&b->_status, st, __ATOMIC_RELEASE);
        cur = st;
    }
    batch_err_unlock(b);
    return cur;
}

__attribute__((format(printf, 3, 4))) static void batch_note(xfer_batch_t *b, wh_status_t st,
                                                             const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    batch_vnote(b, st, fmt, ap);
    va_end(ap);
}

wh_status_t xfer_batch_fail(xfer_batch_t *b, wh_status_t st, const char *fmt, ...)
{
    if (st == WH_OK)
        st = WH_ERR_TRANSPORT;
    va_list ap;
    va_start(ap, fmt);
    wh_status_t cur = batch_vnote(b, st, fmt, ap);
    va_end(ap);
    return cur;
}

wh_status_t xfer_batch_status(const xfer_batch_t *b)
{
    return __atomic_load_n(&b->_status, __ATOMIC_ACQUIRE);
}

wh_status_t xfer_batch_post(xfer_batch_t *b, xfer_op_t op, xfer_mr_t *mr, void *local, size_t len,
                            uint64_t roff, unsigned tag)
{
    wh_status_t bst = xfer_batch_status(b);
    if (bst != WH_OK)
        return bst;
    /* The security boundary: never outside [base, base+size) of the token. */
    bool local_ok = mr ? xfer_inside(mr, local, len) : (b->_direct && local != NULL);
    if (roff > b->_rsize || len > b->_rsize - roff || tag >= XFER_TAG_ALL || !local_ok ||
        (op != XFER_OP_WRITE && op != XFER_OP_READ)) {
        batch_note(b, WH_OK,
                   "transfer of 0x%zx bytes at offset 0x%llx is outside the token's region of "
                   "0x%llx bytes (or outside the local buffer)",
                   len, (unsigned long long)roff, (unsigned long long)b->_rsize);
        wh_error("xfer", "refused out-of-region post len=%zu roff=%llu size=%llu", len,
                 (unsigned long long)roff, (unsigned long long)b->_rsize);
        return WH_ERR_INVALID;
    }
    if (len == 0)
        return WH_OK;
    return b->_x->_ops->batch_post(b, op, mr, local, len, roff, tag);
}

wh_status_t xfer_batch_post_crc(xfer_batch_t *b, const void *local, size_t len, uint64_t roff,
                                uint64_t *crc)
{
    wh_status_t bst = xfer_batch_status(b);
    if (bst != WH_OK)
        return bst;
    if (!b->_direct || !local || roff > b->_rsize || len > b->_rsize - roff) {
        batch_note(b, WH_OK,
                   "transfer of 0x%zx bytes at offset 0x%llx is outside the token's region of "
                   "0x%llx bytes",
                   len, (unsigned long long)roff, (unsigned long long)b->_rsize);
        return WH_ERR_INVALID;
    }
    if (!b->_x->_ops->batch_post_crc)
        return WH_ERR_UNSUPPORTED;
    return b->_x->_ops->batch_post_crc(b, local, len, roff, crc);
}

bool xfer_batch_reads_fd(const xfer_batch_t *b, int fd)
{
    if (!b->_direct || !b->_reads_fd || !b->_x->_ops->batch_post_fd_crc || fd < 0)
        return false;
    if (b->_reads_fd == XFER_READS_FD_ALWAYS)
        return true;
    struct statfs sf;
    struct stat sb;
    return fstatfs(fd, &sf) == 0 && sf.f_type == TMPFS_MAGIC && fstat(fd, &sb) == 0 &&
           sb.st_blksize < (2 << 20);
}

wh_status_t xfer_batch_post_fd_crc(xfer_batch_t *b, int fd, uint64_t off, size_t len, uint64_t roff,
                                   uint64_t *crc)
{
    wh_status_t bst = xfer_batch_status(b);
    if (bst != WH_OK)
        return bst;
    if (!b->_direct || !b->_reads_fd || !b->_x->_ops->batch_post_fd_crc)
        return WH_ERR_UNSUPPORTED;
    if (fd < 0 || roff > b->_rsize || len > b->_rsize - roff) {
        batch_note(b, WH_OK,
                   "transfer of 0x%zx bytes at offset 0x%llx is outside the token's region of "
                   "0x%llx bytes",
                   len, (unsigned long long)roff, (unsigned long long)b->_rsize);
        return WH_ERR_INVALID;
    }
    return b->_x->_ops->batch_post_fd_crc(b, fd, off, len, roff, crc);
}

wh_status_t xfer_batch_wait(xfer_batch_t *b, unsigned tag)
{
    if (tag > XFER_TAG_ALL)
        return WH_ERR_INVALID;
    return b->_x->_ops->batch_wait(b, tag);
}

bool xfer_batch_direct(const xfer_batch_t *b)
{
    return b->_direct;
}

const char *xfer_batch_error(xfer_batch_t *b, char *buf, size_t len)
{
    if (!len)
        return buf;
    batch_err_lock(b);
    snprintf(buf, len, "%s", b->_err);
    batch_err_unlock(b);
    return buf;
}

uint64_t xfer_batch_bytes(const xfer_batch_t *b)
{
    return __atomic_load_n(&b->_bytes_done, __ATOMIC_ACQUIRE);
}

wh_status_t xfer_batch_end(xfer_batch_t *b)
{
    if (!b)
        return WH_OK;
    return b->_x->_ops->batch_end(b);
}

unsigned xfer_stalled(xfer_t *x)
{
    if (!x || x->_forgotten || x->_role != XFER_ROLE_SERVER)
        return 0;
    unsigned n = x->_ops->stalled ? x->_ops->stalled(x) : 0;
    if (x->_bound && x->_bound->_ops->stalled)
        n += x->_bound->_ops->stalled(x->_bound);
    return n;
}
