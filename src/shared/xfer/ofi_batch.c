/* SPDX-License-Identifier: Apache-2.0 */
/* ofi family, batches: one request's ops against one token, chunked into ops of at most
 * chunk_size with at most `window` outstanding. Completions come through the one shared CQ:
 * any thread that waits drains it and dispatches to the op's batch. A batch that ends with
 * ops in flight becomes a zombie; its buffers go back (on_idle) when they drain, or when the
 * transport is closed (see ofi_stalled for why that is sometimes the only way). */
#include "xfer/ofi.h"
#include "base/log.h"
#include "base/util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* ---- completions ------------------------------------------------------------------------ */

static void ofi_batch_recycle(ofi_xfer_t *o, ofi_batch_t *b)
{
    ofi_peer_put(o, b->peer);
    b->peer = NULL;
    b->next = o->free_batches;
    o->free_batches = b;
}

/* Marks op done; returns a zombie batch that just drained (caller calls on_idle unlocked). */
static ofi_batch_t *ofi_complete(ofi_xfer_t *o, ofi_op_t *op, int err, const char *msg)
{
    ofi_batch_t *b = op->b;
    if (!op->busy || !b)
        return NULL;
    op->busy = false;
    b->outstanding--;
    b->tag_out[op->tag]--;
    b->last_ns = wh_now_ns();
    if (!err) {
        __atomic_fetch_add(&b->base._bytes_done, op->len, __ATOMIC_RELEASE);
    } else {
        if (b->peer)
            b->peer->bad = true;
        xfer_batch_fail(&b->base, WH_ERR_TRANSPORT, "%s", msg);
    }
    if (b->zombie && b->outstanding == 0) {
        ofi_batch_t **pp = &o->zombies;
        while (*pp && *pp != b)
            pp = &(*pp)->next;
        if (*pp)
            *pp = b->next;
        return b;
    }
    return NULL;
}

unsigned ofi_drain(ofi_xfer_t *o)
{
    struct fi_cq_data_entry e[OFI_CQ_BATCH];
    ofi_batch_t *idle[OFI_CQ_BATCH + 1];
    unsigned nidle = 0, done = 0;

    if (pthread_mutex_trylock(&o->lock) != 0)
        return 0; /* someone else is draining */
    uint64_t t0 = wh_now_ns();
    ssize_t n = fi_cq_read(o->cq, e, OFI_CQ_BATCH);
    uint64_t took = wh_now_ns() - t0;
    uint64_t prev = o->drained_ns; /* the reaper drains every 500 ms even when idle */
    o->drained_ns = t0 + took;
    if (prev && t0 - prev > o->drain_gap_ns)
        o->drain_gap_ns = t0 - prev;
    if (took > OFI_SLOW_CALL_NS) /* every other transfer of this endpoint waited meanwhile */
        wh_warn("xfer", "provider progress call blocked provider=%s ms=%.0f", o->base._name,
                (double)took / 1e6);
    if (n > 0) {
        for (ssize_t i = 0; i < n; i++) {
            ofi_batch_t *z = ofi_complete(o, (ofi_op_t *)e[i].op_context, 0, NULL);
            if (z)
                idle[nidle++] = z;
        }
        done = (unsigned)n;
    } else if (n == -FI_EAVAIL) {
        struct fi_cq_err_entry ee;
        char pbuf[160], msg[256];
        memset(&ee, 0, sizeof ee);
        if (fi_cq_readerr(o->cq, &ee, 0) > 0) {
            const char *ps = fi_cq_strerror(o->cq, ee.prov_errno, ee.err_data, pbuf, sizeof pbuf);
            snprintf(msg, sizeof msg, "%s transfer failed: %s (provider: %s)", o->base._fabric,
                     fi_strerror(ee.err), ps ? ps : "-");
            wh_warn("xfer", "transfer op failed provider=%s err='%s' prov_err='%s'", o->base._name,
                    fi_strerror(ee.err), ps ? ps : "-");
            if (ee.op_context) {
                ofi_batch_t *z =
                    ofi_complete(o, (ofi_op_t *)ee.op_context, ee.err ? ee.err : 1, msg);
                if (z)
                    idle[nidle++] = z;
            }
            done = 1;
        }
    }
    xfer_idle_cb cbs[OFI_CQ_BATCH + 1];
    void *args[OFI_CQ_BATCH + 1];
    for (unsigned i = 0; i < nidle; i++) {
        cbs[i] = idle[i]->on_idle;
        args[i] = idle[i]->on_idle_arg;
        ofi_batch_recycle(o, idle[i]);
    }
    pthread_mutex_unlock(&o->lock);
    for (unsigned i = 0; i < nidle; i++) {
        wh_info("xfer", "late ops drained; buffers released provider=%s", o->base._name);
        if (cbs[i])
            cbs[i](args[i]);
    }
    return done;
}

/* ---- batches ------------------------------------------------------------------------------ */

wh_status_t ofi_batch_begin(xfer_t *x, const xfer_target_t *tgt, xfer_batch_t **out, char *err,
                            size_t errlen)
{
    ofi_xfer_t *o = ofi_x(x);
    const xfer_token_t *t = tgt->token;
    wh_status_t st;

    /* Bound shm peers (bind_pid) never come here: the core hands them to the cma family. */
    if (!o->is_shm && tgt->bind_host) {
        st = ofi_check_host(o, t, tgt->bind_host, err, errlen);
        if (st != WH_OK)
            return st;
    }
    if (!o->is_shm && o->info->addr_format == FI_SOCKADDR_IN &&
        (t->ep_name_len != sizeof(struct sockaddr_in) ||
         ((const struct sockaddr *)t->ep_name)->sa_family != AF_INET)) {
        return wh_errf(WH_ERR_INVALID, err, errlen, "token field 'ep-name': not an IPv4 %s address",
                       x->_fabric);
    }
    if (!o->is_shm && o->info->addr_format == FI_SOCKADDR_IN6 &&
        (t->ep_name_len != sizeof(struct sockaddr_in6) ||
         ((const struct sockaddr *)t->ep_name)->sa_family != AF_INET6)) {
        return wh_errf(WH_ERR_INVALID, err, errlen, "token field 'ep-name': not an IPv6 %s address",
                       x->_fabric);
    }
    if (o->is_shm && (t->ep_name_len < 2 || t->ep_name[t->ep_name_len - 1] != '\0' ||
                      strlen((const char *)t->ep_name) + 1 != t->ep_name_len)) {
        return wh_errf(WH_ERR_INVALID, err, errlen,
                       "token field 'ep-name': not an shm endpoint name");
    }

    pthread_mutex_lock(&o->lock);
    ofi_batch_t *b = o->free_batches;
    if (b)
        o->free_batches = b->next;
    else
        b = calloc(1, sizeof *b);
    if (!b) {
        pthread_mutex_unlock(&o->lock);
        return WH_ERR_NOMEM;
    }
    memset(b, 0, offsetof(ofi_batch_t, ops));
    for (unsigned i = 0; i < o->window; i++)
        b->ops[i].busy = false;
    st = ofi_peer_get(o, t->ep_name, t->ep_name_len, &b->peer, err, errlen);
    if (st != WH_OK) {
        b->next = o->free_batches;
        o->free_batches = b;
        pthread_mutex_unlock(&o->lock);
        return st;
    }
    pthread_mutex_unlock(&o->lock);
    b->base._direct = false;
    b->key = t->key;
    b->last_ns = wh_now_ns();
    b->on_idle = tgt->on_idle;
    b->on_idle_arg = tgt->on_idle_arg;
    *out = &b->base;
    return WH_OK;
}

/* Waits (driving the CQ) until pred holds, the batch fails, or it times out. */
static wh_status_t ofi_wait_until(ofi_batch_t *b, unsigned tag, bool for_slot)
{
    ofi_xfer_t *o = ofi_x(b->base._x);
    unsigned spins = 0;
    for (;;) {
        pthread_mutex_lock(&o->lock);
        bool ok;
        if (for_slot)
            ok = b->outstanding < o->window;
        else
            ok = tag == XFER_TAG_ALL ? b->outstanding == 0 : b->tag_out[tag] == 0;
        wh_status_t st = xfer_batch_status(&b->base);
        uint64_t last = b->last_ns;
        pthread_mutex_unlock(&o->lock);
        if (st != WH_OK)
            return st;
        if (ok)
            return WH_OK;
        if (ofi_drain(o)) {
            spins = 0;
            continue;
        }
        if (wh_now_ns() - last > (uint64_t)o->timeout_ms * 1000000ULL) {
            pthread_mutex_lock(&o->lock);
            /* Was this endpoint driven meanwhile? A long gap means the server itself stalled
             * (no thread of it got to the provider), not the client. */
            double gap_ms = (double)o->drain_gap_ns / 1e6;
            unsigned inflight = b->outstanding;
            o->drain_gap_ns = 0;
            if (xfer_batch_status(&b->base) == WH_OK) {
                xfer_batch_fail(&b->base, WH_ERR_TIMEOUT,
                                "%s transfer made no progress for %u ms (client dead or not "
                                "driving progress)",
                                o->base._fabric, o->timeout_ms);
                if (b->peer)
                    b->peer->bad = true;
            }
            pthread_mutex_unlock(&o->lock);
            wh_warn("xfer",
                    "transfer timed out provider=%s timeout_ms=%u ops_in_flight=%u "
                    "longest_gap_between_progress_calls_ms=%.0f",
                    o->base._name, o->timeout_ms, inflight, gap_ms);
            return WH_ERR_TIMEOUT;
        }
        if (++spins > 32)
            ofi_sleep_us(spins > 2048 ? 500 : 20);
        else
            sched_yield();
    }
}

/* libfabric 1.17 shm's fast RMA path completes inside fi_write/fi_read, and reports a failure
 * (dead peer) as a CQ error without op_context. Settle the op just posted right away,
 * attributing such an error to it, so a failed op never stays "in flight" forever. */
static void ofi_shm_settle(ofi_xfer_t *o, ofi_op_t *slot)
{
    struct fi_cq_data_entry e;
    xfer_idle_cb cbs[64];
    void *args[64];
    unsigned nz = 0;
    pthread_mutex_lock(&o->lock);
    for (int i = 0; i < 64 && slot->busy; i++) {
        ofi_batch_t *z = NULL;
        ssize_t n = fi_cq_read(o->cq, &e, 1);
        if (n == 1) {
            z = ofi_complete(o, (ofi_op_t *)e.op_context, 0, NULL);
        } else if (n == -FI_EAVAIL) {
            struct fi_cq_err_entry ee;
            memset(&ee, 0, sizeof ee);
            if (fi_cq_readerr(o->cq, &ee, 0) <= 0)
                break;
            char msg[200];
            snprintf(msg, sizeof msg, "shm transfer failed: %s (client process gone?)",
                     fi_strerror(ee.err ? ee.err : FI_EIO));
            ofi_op_t *op = ee.op_context ? (ofi_op_t *)ee.op_context : slot;
            z = ofi_complete(o, op, ee.err ? ee.err : FI_EIO, msg);
        } else {
            break; /* nothing there: the op went the slow path and completes later */
        }
        if (z) { /* another batch's late op drained it: release its buffers after unlock */
            cbs[nz] = z->on_idle;
            args[nz++] = z->on_idle_arg;
            ofi_batch_recycle(o, z);
        }
    }
    pthread_mutex_unlock(&o->lock);
    for (unsigned i = 0; i < nz; i++)
        if (cbs[i])
            cbs[i](args[i]);
}

/* A write completes only once the bytes are in the client's memory (FI_DELIVERY_COMPLETE):
 * the HTTP reply that follows must never overtake the data. shm's fast path is a synchronous
 * cross-memory copy, already delivered when it completes, and the flag would force its slow
 * path. */
static ssize_t ofi_post_write(ofi_xfer_t *o, ofi_batch_t *b, ofi_mr_t *m, void *p, size_t n,
                              uint64_t raddr, ofi_op_t *slot)
{
    if (o->is_shm)
        return fi_write(o->ep, p, n, m->desc, b->peer->fi_addr, raddr, b->key, &slot->ctx);
    struct iovec iov = {p, n};
    void *desc = m->desc;
    struct fi_rma_iov riov = {.addr = raddr, .len = n, .key = b->key};
    struct fi_msg_rma msg = {.msg_iov = &iov,
                             .desc = &desc,
                             .iov_count = 1,
                             .addr = b->peer->fi_addr,
                             .rma_iov = &riov,
                             .rma_iov_count = 1,
                             .context = &slot->ctx};
    return fi_writemsg(o->ep, &msg, FI_COMPLETION | FI_DELIVERY_COMPLETE);
}

wh_status_t ofi_batch_post(xfer_batch_t *xb, xfer_op_t op, xfer_mr_t *mr, void *local, size_t len,
                           uint64_t roff, unsigned tag)
{
    ofi_batch_t *b = (ofi_batch_t *)xb;
    ofi_xfer_t *o = ofi_x(xb->_x);
    ofi_mr_t *m = (ofi_mr_t *)mr;
    uint64_t raddr = xb->_rbase + roff;
    wh_status_t st;

    size_t done = 0;
    while (done < len) {
        size_t n = WH_MIN(len - done, o->chunk);
        if ((st = ofi_wait_until(b, 0, true)) != WH_OK)
            return st;
        pthread_mutex_lock(&o->lock);
        ofi_op_t *slot = NULL;
        for (unsigned i = 0; i < o->window; i++)
            if (!b->ops[i].busy) {
                slot = &b->ops[i];
                break;
            }
        if (!slot) { /* cannot happen after the wait, but never post without a slot */
            pthread_mutex_unlock(&o->lock);
            continue;
        }
        slot->busy = true;
        slot->b = b;
        slot->len = n;
        slot->tag = tag;
        b->outstanding++;
        b->tag_out[tag]++;
        pthread_mutex_unlock(&o->lock);

        uint64_t t0 = wh_now_ns();
        for (;;) {
            uint64_t tp = wh_now_ns();
            ssize_t rc = op == XFER_OP_WRITE
                             ? ofi_post_write(o, b, m, (char *)local + done, n, raddr + done, slot)
                             : fi_read(o->ep, (char *)local + done, n, m->desc, b->peer->fi_addr,
                                       raddr + done, b->key, &slot->ctx);
            if (wh_now_ns() - tp > OFI_SLOW_CALL_NS)
                wh_warn("xfer", "provider post call blocked provider=%s ms=%.0f", o->base._name,
                        (double)(wh_now_ns() - tp) / 1e6);
            if (rc == 0)
                break;
            if (rc == -FI_EAGAIN && wh_now_ns() - t0 < (uint64_t)o->timeout_ms * 1000000ULL) {
                if (!ofi_drain(o))
                    ofi_sleep_us(20);
                continue;
            }
            pthread_mutex_lock(&o->lock);
            slot->busy = false;
            b->outstanding--;
            b->tag_out[tag]--;
            b->peer->bad = true;
            st = xfer_batch_fail(&b->base, rc == -FI_EAGAIN ? WH_ERR_TIMEOUT : WH_ERR_TRANSPORT,
                                 "%s %s could not be posted: %s", o->base._fabric,
                                 op == XFER_OP_WRITE ? "fi_write" : "fi_read",
                                 rc == -FI_EAGAIN ? "peer not accepting operations (timed out)"
                                                  : fi_strerror((int)-rc));
            pthread_mutex_unlock(&o->lock);
            wh_warn("xfer", "post failed provider=%s err='%s'", o->base._name,
                    fi_strerror((int)-rc));
            return st;
        }
        if (o->is_shm)
            ofi_shm_settle(o, slot);
        done += n;
    }
    return WH_OK;
}

wh_status_t ofi_batch_wait(xfer_batch_t *xb, unsigned tag)
{
    return ofi_wait_until((ofi_batch_t *)xb, tag, false);
}

wh_status_t ofi_batch_end(xfer_batch_t *xb)
{
    ofi_batch_t *b = (ofi_batch_t *)xb;
    ofi_xfer_t *o = ofi_x(xb->_x);
    /* outstanding changes under o->lock (ofi_complete, from any thread that drains: the
     * reaper's ofi_stalled among them), so it is read under it; the status is atomic. */
    pthread_mutex_lock(&o->lock);
    bool finish = b->outstanding > 0 && xfer_batch_status(xb) == WH_OK;
    pthread_mutex_unlock(&o->lock);
    if (finish)
        ofi_wait_until(b, XFER_TAG_ALL, false); /* normal end: let the last ops finish */
    pthread_mutex_lock(&o->lock);
    if (b->outstanding > 0) {
        unsigned ops = b->outstanding;
        b->zombie = true;
        b->zombie_ns = wh_now_ns();
        b->next = o->zombies;
        o->zombies = b;
        pthread_mutex_unlock(&o->lock);
        wh_warn("xfer",
                "batch ended with ops in flight; buffers held until they drain "
                "provider=%s ops=%u",
                o->base._name, ops);
        return WH_ERR_BUSY;
    }
    ofi_batch_recycle(o, b);
    pthread_mutex_unlock(&o->lock);
    return WH_OK;
}

/* ---- stalled zombies --------------------------------------------------------------------- */

/* A zombie's ops may never complete by themselves: a stopped (SIGSTOP) or wedged tcp peer keeps
 * its connection open and never acknowledges, so the ops, and the server buffers they hold,
 * would stay in flight for good. libfabric 1.17's rxm cancels them neither on fi_cancel nor on
 * fi_av_remove, and once its connection to an address has failed it never reconnects to that
 * address on this endpoint. Closing the endpoint is what ends them: xfer_stalled tells the
 * owner when that is needed. */
unsigned ofi_stalled(xfer_t *x)
{
    ofi_xfer_t *o = ofi_x(x);
    ofi_drain(o); /* settle what has completed meanwhile */
    uint64_t now = wh_now_ns(), grace = (uint64_t)o->reap_ms * 1000000ULL;
    unsigned n = 0;
    pthread_mutex_lock(&o->lock);
    for (ofi_batch_t *z = o->zombies; z; z = z->next)
        n += now - z->zombie_ns >= grace;
    pthread_mutex_unlock(&o->lock);
    return n;
}

/* ---- close ------------------------------------------------------------------------------ */

void ofi_zombies_release(ofi_xfer_t *o)
{
    for (ofi_batch_t *b = o->zombies; b; b = b->next)
        if (b->on_idle)
            b->on_idle(b->on_idle_arg);
}

/* Frees the batch structs (their peers are ofi_peers_free's). No provider call: this also runs
 * in a forked child. */
static void ofi_batch_list_free(ofi_batch_t *b)
{
    while (b) {
        ofi_batch_t *n = b->next;
        free(b);
        b = n;
    }
}

void ofi_batches_free(ofi_xfer_t *o)
{
    ofi_batch_list_free(o->free_batches);
    ofi_batch_list_free(o->zombies);
    o->free_batches = o->zombies = NULL;
}
