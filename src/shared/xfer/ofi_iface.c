/* SPDX-License-Identifier: Apache-2.0 */
/* ofi family, the interface: fabric, domain, endpoint, CQ and AV; open, close and fork; the
 * client's progress thread; and the family's ops table. See ofi.h for the family's layout. */
#include "xfer/ofi.h"
#include "base/log.h"
#include "base/util.h"

#include <dirent.h>
#include <errno.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void ofi_sleep_us(unsigned us)
{
    struct timespec ts = {.tv_sec = us / 1000000, .tv_nsec = (long)(us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

/* ---- open / close -------------------------------------------------------------------------- */

/* The endpoint with its CQ and AV; the fabric, the domain and the memory registered there
 * stay. Closing a network endpoint closes its connections: nothing more arrives through it. */
static void ofi_close_ep(ofi_xfer_t *o)
{
    if (o->ep)
        fi_close(&o->ep->fid);
    if (o->av)
        fi_close(&o->av->fid);
    if (o->cq)
        fi_close(&o->cq->fid);
    o->ep = NULL;
    o->av = NULL;
    o->cq = NULL;
}

/* Opens the endpoint, its CQ and AV on o->domain (ofi_open, and ofi_quiesce again). libfabric
 * 1.17's shm installs its own SIGINT, SIGTERM, SIGSEGV and SIGBUS handlers when it opens its
 * first endpoint (they unlink its regions, even where the host's handler then carries on):
 * ofi_open_ep puts the host's back (ofi_dl.c). */
static wh_status_t ofi_open_ep_unguarded(ofi_xfer_t *o, const char *prov, char *err, size_t errlen)
{
    /* shm's blocking CQ read does not honour its timeout in 1.17: poll it instead. */
    struct fi_cq_attr cqa = {.format = FI_CQ_FORMAT_DATA,
                             .size = 1024,
                             .wait_obj = o->is_shm ? FI_WAIT_NONE : FI_WAIT_UNSPEC};
    int rc = fi_cq_open(o->domain, &cqa, &o->cq, NULL);
    if (rc && cqa.wait_obj != FI_WAIT_NONE) {
        cqa.wait_obj = FI_WAIT_NONE;
        rc = fi_cq_open(o->domain, &cqa, &o->cq, NULL);
    }
    if (rc) {
        o->cq = NULL;
        return wh_errf(WH_ERR_TRANSPORT, err, errlen, "libfabric %s: fi_cq_open failed: %s", prov,
                       fi_strerror(-rc));
    }
    o->use_sread = cqa.wait_obj != FI_WAIT_NONE;
    struct fi_av_attr ava = {.type = FI_AV_TABLE, .count = o->max_peers};
    if ((rc = fi_av_open(o->domain, &ava, &o->av, NULL)) ||
        (rc = fi_endpoint(o->domain, o->info, &o->ep, NULL)) ||
        (rc = fi_ep_bind(o->ep, &o->cq->fid, FI_TRANSMIT | FI_RECV)) ||
        (rc = fi_ep_bind(o->ep, &o->av->fid, 0)) || (rc = fi_enable(o->ep))) {
        ofi_close_ep(o);
        return wh_errf(WH_ERR_TRANSPORT, err, errlen, "libfabric %s: endpoint setup failed: %s",
                       prov, fi_strerror(-rc));
    }
    o->name_len = sizeof o->name;
    if ((rc = fi_getname(&o->ep->fid, o->name, &o->name_len))) {
        ofi_close_ep(o);
        return wh_errf(WH_ERR_TRANSPORT, err, errlen, "libfabric %s: fi_getname failed: %s", prov,
                       fi_strerror(-rc));
    }
    return WH_OK;
}

static wh_status_t ofi_open_ep(ofi_xfer_t *o, const char *prov, char *err, size_t errlen)
{
    ofi_sig_saved_t saved;
    ofi_sig_save(&saved);
    wh_status_t st = ofi_open_ep_unguarded(o, prov, err, errlen);
    ofi_sig_restore(&saved, "opening an endpoint");
    return st;
}

static void ofi_close_fids(ofi_xfer_t *o)
{
    ofi_close_ep(o);
    if (o->domain)
        fi_close(&o->domain->fid);
    if (o->fabric)
        fi_close(&o->fabric->fid);
    if (o->info)
        fi_freeinfo(o->info);
    o->domain = NULL;
    o->fabric = NULL;
    o->info = NULL;
}

/* libfabric 1.17 shm names an endpoint's region /dev/shm/<pid>:<domain>:<ep> and fails with
 * EBUSY when that name exists. A process that died without closing (kill -9, a crash) leaves
 * its regions behind, so a later process that gets the same pid could not open shm at all.
 * Files named after our own pid were left by a dead process (we are that pid now), so the first
 * shm open in each process (after fork too: the pid changes) removes them. Other pids' files
 * are never touched: their owners may be alive, possibly in another pid namespace. */
static void ofi_shm_remove_own_stale(void)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static pid_t done_for;
    pid_t me = getpid();
    pthread_mutex_lock(&lock);
    if (done_for != me) {
        done_for = me;
        char prefix[32];
        int pl = snprintf(prefix, sizeof prefix, "%d:", (int)me);
        DIR *d = opendir("/dev/shm");
        struct dirent *e;
        while (d && (e = readdir(d)) != NULL) {
            if (strncmp(e->d_name, prefix, (size_t)pl) != 0)
                continue;
            if (unlinkat(dirfd(d), e->d_name, 0) == 0)
                wh_info("xfer", "removed stale shm region name='/dev/shm/%s'", e->d_name);
        }
        if (d)
            closedir(d);
    }
    pthread_mutex_unlock(&lock);
}

static void ofi_free_lists(ofi_xfer_t *o)
{
    ofi_batches_free(o); /* first: it looks at the peers that batches refer to */
    ofi_peers_free(o);
}

static wh_status_t ofi_open_unguarded(const xfer_config_t *cfg, const xfer_provider_t *pv,
                                      xfer_t **out, char *err, size_t errlen)
{
    const char *prov = pv->fabric;
    const char *node = cfg->node ? cfg->node : getenv("WHARF_OFI_NODE");
    struct fi_info *hints = NULL, *info = NULL;
    wh_status_t st = WH_ERR_TRANSPORT;
    int rc;

    ofi_xfer_t *o = calloc(1, sizeof *o);
    if (!o)
        return WH_ERR_NOMEM;
    pthread_mutex_init(&o->lock, NULL);
    pthread_mutex_init(&o->plock, NULL);
    pthread_cond_init(&o->pcond, NULL);
    o->lru.lnext = o->lru.lprev = &o->lru;
    o->is_shm = (pv->caps & XFER_CAP_HOST_LOCAL) != 0;
    /* xfer_open applied the defaults (xfer.h) to every field left 0. */
    o->window = WH_MIN(cfg->window, OFI_MAX_WINDOW);
    o->chunk = cfg->chunk_size;
    o->max_peers = cfg->max_peers;
    o->timeout_ms = cfg->timeout_ms;
    o->reap_ms = cfg->reap_ms;
    o->want_pthr = cfg->progress_thread;
    if (o->is_shm)
        ofi_shm_remove_own_stale();

    hints = fi_allocinfo();
    if (!hints) {
        st = WH_ERR_NOMEM;
        goto err_free;
    }
    hints->caps = FI_RMA;
    hints->ep_attr->type = FI_EP_RDM;
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    /* Every mode bit we can honour; the provider keeps those it needs. */
    hints->domain_attr->mr_mode =
        FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT;
    hints->domain_attr->threading = FI_THREAD_SAFE;
    hints->fabric_attr->prov_name = strdup(prov);
    if (!hints->fabric_attr->prov_name) {
        st = WH_ERR_NOMEM;
        goto err_free;
    }
    /* A network provider's client asks for FI_HMEM first, so that GPU memory can be
     * registered with the NIC (verbs over dmabuf or peer memory, efa, cxi); without it the
     * same provider opens for host memory only and GPU buffers are staged, with the reason.
     * Same-host providers reach GPU memory through cuda+ipc instead (the server's CMA path
     * cannot read device memory). WHARF_OFI_HMEM=0 skips the attempt. */
    const char *hm = getenv("WHARF_OFI_HMEM");
    if (o->is_shm) {
        snprintf(o->hmem_why, sizeof o->hmem_why,
                 "%s is a same-host provider: GPU memory goes over cuda+ipc (the server on "
                 "this host, its Unix socket)",
                 pv->name);
    } else if (cfg->role != XFER_ROLE_CLIENT) {
        snprintf(o->hmem_why, sizeof o->hmem_why, "the server registers host memory only");
    } else if (hm && strcmp(hm, "0") == 0) {
        snprintf(o->hmem_why, sizeof o->hmem_why, "WHARF_OFI_HMEM=0");
    } else {
        hints->caps = FI_RMA | FI_HMEM;
        hints->domain_attr->mr_mode |= FI_MR_HMEM;
        rc = fi_getinfo(FI_VERSION(1, 17), node, NULL, node ? FI_SOURCE : 0, hints, &info);
        hints->caps = FI_RMA;
        hints->domain_attr->mr_mode &= ~(uint64_t)FI_MR_HMEM;
        if (rc == 0) {
            o->hmem = true;
        } else {
            info = NULL;
            snprintf(o->hmem_why, sizeof o->hmem_why,
                     "libfabric's %s provider offers no FI_HMEM here (fi_getinfo: %s); GPU "
                     "memory cannot be registered with it",
                     prov, fi_strerror(-rc));
        }
    }
    rc = o->hmem ? 0
                 : fi_getinfo(FI_VERSION(1, 17), o->is_shm ? NULL : node, NULL,
                              (node && !o->is_shm) ? FI_SOURCE : 0, hints, &info);
    if (rc) {
        wh_warn("xfer", "fi_getinfo failed provider=%s node=%s err='%s'", prov, node ? node : "-",
                fi_strerror(-rc));
        wh_errf(WH_OK, err, errlen,
                "libfabric provider '%s' is not available on this host (fi_getinfo: %s); "
                "check `fi_info -p \"%s\"`",
                prov, fi_strerror(-rc), prov);
        st = WH_ERR_UNSUPPORTED;
        goto err_free;
    }
    o->info = fi_dupinfo(info);
    fi_freeinfo(info);
    info = NULL;
    if (!o->info) {
        st = WH_ERR_NOMEM;
        goto err_free;
    }
    uint64_t mm = (uint64_t)o->info->domain_attr->mr_mode;
    o->virt_addr = mm & FI_MR_VIRT_ADDR;
    o->prov_key = mm & FI_MR_PROV_KEY;
    o->mr_local = mm & FI_MR_LOCAL;
    o->mr_endpoint = mm & FI_MR_ENDPOINT;
    o->max_msg = o->info->ep_attr->max_msg_size ? o->info->ep_attr->max_msg_size : UINT64_MAX;
    if (o->chunk > o->max_msg)
        o->chunk = o->max_msg;

    if ((rc = fi_fabric(o->info->fabric_attr, &o->fabric, NULL)) ||
        (rc = fi_domain(o->fabric, o->info, &o->domain, NULL))) {
        wh_errf(WH_OK, err, errlen, "libfabric %s: opening fabric/domain failed: %s", prov,
                fi_strerror(-rc));
        goto err_free;
    }
    if ((st = ofi_open_ep(o, prov, err, errlen)) != WH_OK)
        goto err_free;
    st = WH_ERR_TRANSPORT;
    o->nbuckets = 1;
    while (o->nbuckets < 2 * o->max_peers)
        o->nbuckets <<= 1;
    /* NOLINTNEXTLINE(bugprone-sizeof-expression): buckets holds pointers */
    o->buckets = calloc(o->nbuckets, sizeof *o->buckets);
    if (!o->buckets) {
        st = WH_ERR_NOMEM;
        goto err_free;
    }
    /* tcp;ofi_rxm moves the data in the target's progress calls; shm's command queue (RMA
     * notices, 1024 entries) fills if the target never reads its CQ. */
    o->base._needs_progress = (pv->caps & XFER_CAP_TARGET_PROGRESS) != 0;
    fi_freeinfo(hints);
    wh_info("xfer",
            "provider open provider=%s fabric='%s' domain='%s' mr_mode=0x%llx "
            "chunk=%llu window=%u max_peers=%u hmem=%d",
            prov, o->info->fabric_attr->name, o->info->domain_attr->name, (unsigned long long)mm,
            (unsigned long long)o->chunk, o->window, o->max_peers, o->hmem);
    *out = &o->base;
    return WH_OK;

err_free:
    wh_warn("xfer", "provider open failed provider=%s err='%s'", prov, err && errlen ? err : "");
    if (hints)
        fi_freeinfo(hints);
    if (info)
        fi_freeinfo(info);
    ofi_close_fids(o);
    ofi_free_lists(o);
    pthread_mutex_destroy(&o->lock);
    pthread_mutex_destroy(&o->plock);
    pthread_cond_destroy(&o->pcond);
    free(o);
    return st;
}

static wh_status_t ofi_open(const xfer_config_t *cfg, const xfer_provider_t *pv, xfer_t **out,
                            char *err, size_t errlen)
{
    ofi_sig_saved_t saved;
    ofi_sig_save(&saved);
    wh_status_t st = ofi_open_unguarded(cfg, pv, out, err, errlen);
    ofi_sig_restore(&saved, "opening a provider");
    return st;
}

static void ofi_close(xfer_t *x)
{
    ofi_xfer_t *o = ofi_x(x);
    if (x->_forgotten) {
        /* Child after fork: the provider's objects and our locks belong to the parent's
         * image; touch neither. */
        ofi_free_lists(o);
        free(o);
        return;
    }
    if (o->pthr_started) {
        pthread_mutex_lock(&o->plock);
        o->stopping = true;
        pthread_cond_broadcast(&o->pcond);
        pthread_mutex_unlock(&o->plock);
        pthread_join(o->pthr, NULL);
    }
    if (o->zombies)
        wh_warn("xfer", "closing with transfers still in flight provider=%s", x->_name);
    ofi_close_fids(o);
    ofi_zombies_release(o); /* the endpoint is closed: nothing touches their buffers now */
    ofi_free_lists(o);
    pthread_mutex_destroy(&o->lock);
    pthread_mutex_destroy(&o->plock);
    pthread_cond_destroy(&o->pcond);
    free(o);
}

static void ofi_forget_after_fork(xfer_t *x)
{
    ofi_xfer_t *o = ofi_x(x);
    o->pthr_started = false; /* the thread does not exist in the child */
}

/* ---- client progress ---------------------------------------------------------------------- */

/* One progress step on the client: reads the CQ, which is where rxm/tcp move incoming RMA
 * data and shm consumes its command queue. Blocks at most ~10 ms (sread) or sleeps with a
 * backoff that the caller manages. Returns true if anything happened. */
static bool ofi_client_poll(ofi_xfer_t *o)
{
    struct fi_cq_data_entry e[OFI_CQ_BATCH];
    uint64_t t0 = wh_now_ns();
    ssize_t n = o->use_sread ? fi_cq_sread(o->cq, e, OFI_CQ_BATCH, NULL, 10)
                             : fi_cq_read(o->cq, e, OFI_CQ_BATCH);
    if (wh_now_ns() - t0 > OFI_SLOW_CALL_NS) /* no byte moved into this client meanwhile */
        wh_warn("xfer", "client progress call blocked provider=%s ms=%.0f", o->base._name,
                (double)(wh_now_ns() - t0) / 1e6);
    if (n == -FI_EAVAIL) {
        struct fi_cq_err_entry ee = {0};
        fi_cq_readerr(o->cq, &ee, 0);
        wh_debug("xfer", "client cq error err='%s'", fi_strerror(ee.err));
        return true;
    }
    return n > 0;
}

static void *ofi_progress_main(void *arg)
{
    ofi_xfer_t *o = arg;
    unsigned idle = 0, nap_us = 0;
    pthread_mutex_lock(&o->plock);
    while (!o->stopping) {
        if (o->outstanding == 0) {
            idle = 0;
            pthread_cond_wait(&o->pcond, &o->plock); /* no request: no CPU */
            continue;
        }
        o->polling = true; /* o->cq is in use: ofi_quiesce waits */
        pthread_mutex_unlock(&o->plock);
        if (ofi_client_poll(o)) {
            idle = 0;
            nap_us = 0;
        } else if (!o->use_sread && ++idle > 64) {
            /* Back off exponentially when nothing arrives, up to OFI_POLL_MAX_NAP_US. With a
             * bound-shm server (the default) nothing ever arrives here: the server copies
             * into this process itself, so a fixed 1 ms nap cost ~1,000 wake-ups/s (about
             * 8% of a core per process, measured by the bench) for nothing. The longest nap
             * still drains shm's 1024-entry command queue often enough for libfabric's own
             * RMA path (--shm-trust-local). */
            nap_us = nap_us ? WH_MIN(nap_us * 2, OFI_POLL_MAX_NAP_US) : 50;
            ofi_sleep_us(nap_us);
        }
        pthread_mutex_lock(&o->plock);
        o->polling = false;
        if (o->quiescing)
            pthread_cond_broadcast(&o->pcond);
    }
    pthread_mutex_unlock(&o->plock);
    return NULL;
}

static void ofi_progress_begin(xfer_t *x)
{
    ofi_xfer_t *o = ofi_x(x);
    pthread_mutex_lock(&o->plock);
    while (o->quiescing) /* the endpoint is being replaced: the request uses the new one */
        pthread_cond_wait(&o->pcond, &o->plock);
    if (!o->want_pthr) {
        o->outstanding++;
        pthread_mutex_unlock(&o->plock);
        return;
    }
    if (!o->pthr_started && !o->stopping) {
        if (pthread_create(&o->pthr, NULL, ofi_progress_main, o) == 0)
            o->pthr_started = true;
        else
            wh_error("xfer", "cannot start progress thread err='%s'", strerror(errno));
    }
    if (o->outstanding++ == 0)
        pthread_cond_broadcast(&o->pcond);
    pthread_mutex_unlock(&o->plock);
}

static void ofi_progress_end(xfer_t *x)
{
    ofi_xfer_t *o = ofi_x(x);
    pthread_mutex_lock(&o->plock);
    if (o->outstanding > 0 && --o->outstanding == 0 && o->quiescing)
        pthread_cond_broadcast(&o->pcond);
    pthread_mutex_unlock(&o->plock);
}

/* Client role, after a request whose transfer the server did not report finished (it failed,
 * timed out, or its reply was lost): the server may still be sending its bytes. tcp;ofi_rxm
 * checks the key of a write once, when its header arrives, and then copies the payload in
 * whatever later progress call reads it from the socket. So a write whose header came in before
 * the request ended keeps landing at its address after the buffer was deregistered and handed
 * back to the caller, who may have freed it, or mapped it again for something else (in the
 * soak: another client thread's buffer, which then held bytes of an unrelated object).
 * Deregistering cannot stop that; closing the endpoint does (its sockets go, and what they held
 * is dropped). So: wait until no request of this client has a transfer open (new ones wait
 * here), then replace the endpoint with a fresh one on the same domain. Registrations are
 * the domain's and stay valid (providers that bind them to the endpoint are left as they are:
 * none of them moves data in target-side software); the new endpoint has a new address, which
 * the next token names, so the server connects afresh. */
static void ofi_quiesce(xfer_t *x)
{
    ofi_xfer_t *o = ofi_x(x);
    if (x->_role != XFER_ROLE_CLIENT || o->is_shm || o->mr_endpoint)
        return;
    pthread_mutex_lock(&o->plock);
    o->quiescing++;
    while (o->outstanding > 0 || o->polling)
        pthread_cond_wait(&o->pcond, &o->plock);
    char err[256] = "";
    pthread_mutex_lock(&o->lock);
    ofi_close_ep(o);
    wh_status_t st = ofi_open_ep(o, x->_fabric, err, sizeof err);
    pthread_mutex_unlock(&o->lock);
    o->quiesced++;
    o->quiescing--;
    pthread_cond_broadcast(&o->pcond);
    pthread_mutex_unlock(&o->plock);
    if (st != WH_OK)
        wh_error("xfer", "replacing the client endpoint failed provider=%s err='%s'", x->_name,
                 err);
    else
        wh_info("xfer", "client endpoint replaced after an unfinished transfer provider=%s",
                x->_name);
}

static void ofi_progress(xfer_t *x)
{
    ofi_xfer_t *o = ofi_x(x);
    if (x->_role == XFER_ROLE_CLIENT)
        ofi_client_poll(o);
    else
        ofi_drain(o);
}

const struct xfer_ops xfer_ofi_ops = {
    .family = "ofi",
    .open = ofi_open,
    .close = ofi_close,
    .forget_after_fork = ofi_forget_after_fork,
    .mr_reg = ofi_mr_reg,
    .mr_reg_device = ofi_mr_reg_device,
    .mr_dereg = ofi_mr_dereg,
    .token_pack = ofi_token_pack,
    .progress_begin = ofi_progress_begin,
    .progress_end = ofi_progress_end,
    .progress = ofi_progress,
    .batch_begin = ofi_batch_begin,
    .batch_post = ofi_batch_post,
    .batch_wait = ofi_batch_wait,
    .batch_end = ofi_batch_end,
    .stalled = ofi_stalled,
    .quiesce = ofi_quiesce,
};
