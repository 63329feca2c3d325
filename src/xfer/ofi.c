/* The libfabric family of xfer: RDM endpoints with FI_RMA ("ofi+shm", "ofi+tcp", "ofi+verbs",
 * "ofi+efa", "ofi+cxi").
 *
 * Server role (initiator): one endpoint, one CQ, one AV. Peers are cached by fabric address
 * in a hash map bounded by max_peers with LRU eviction (fi_av_remove). A batch chunks its
 * transfers into ops of at most chunk_size with at most `window` outstanding; any thread that
 * waits drains the shared CQ and dispatches completions to their batches; a batch fails when
 * none of its ops completes within timeout_ms, and a batch that still has ops in flight when
 * it ends lives on as a zombie until they drain (its buffers must not be reused before).
 *
 * shm with a bound peer (bind_pid > 0) does not go through libfabric's shm initiator: in
 * libfabric 1.17 smr_rma_fast() calls process_vm_writev(peer_smr->pid, ...) with the pid read
 * from the peer's shared-memory region on every op, under a spinlock that also lives in that
 * region. The peer can rewrite both at any time, so a one-time check of the pid is racy (it
 * can be flipped to a victim's pid after the check) and the spinlock lets a peer hang a server
 * thread. Instead the server does the same cross-memory copy itself, with the pid the kernel
 * reported for the HTTP connection (SO_PEERCRED), bounds checked against the token. The
 * token's shm endpoint is still checked to belong to that pid (1.17 region layout, verified
 * against fi_version()), so a token naming another process's endpoint is refused up front.
 *
 * Client role (target): registers memory for remote access and drives progress from a thread
 * that runs only while xfer_progress_begin/end brackets are open. */
#include "xfer/xfer.h"
#include "base/digest.h"
#include "base/log.h"
#include "base/util.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <pthread.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define OFI_MAX_WINDOW 64
#define OFI_NAME_MAX TOKEN_MAX_EP_NAME
#define OFI_CQ_BATCH 16

typedef struct ofi_batch ofi_batch_t;

typedef struct ofi_op {
    struct fi_context2 ctx; /* first: libfabric hands it back as op_context */
    ofi_batch_t *b;
    size_t len;
    unsigned tag;
    bool busy;
} ofi_op_t;

typedef struct ofi_peer {
    struct ofi_peer *hnext;         /* hash chain */
    struct ofi_peer *lprev, *lnext; /* LRU list: head = most recent */
    uint8_t name[OFI_NAME_MAX];
    size_t name_len;
    uint64_t hash;
    fi_addr_t fi_addr;
    unsigned refs;
    bool bad; /* an op failed: drop the address once nobody uses it */
} ofi_peer_t;

struct ofi_batch {
    struct xfer_batch base; /* first */
    ofi_batch_t *next;      /* free list or zombie list */
    ofi_peer_t *peer;       /* libfabric path; NULL on the CMA path */
    pid_t cma_pid;          /* > 0: bound shm peer, process_vm_writev/readv */
    uint64_t key;
    unsigned outstanding;
    unsigned tag_out[XFER_TAG_ALL];
    uint64_t last_ns; /* last completion (or start): the inactivity timeout runs from here */
    bool zombie;
    xfer_idle_cb on_idle;
    void *on_idle_arg;
    ofi_op_t ops[OFI_MAX_WINDOW];
};

typedef struct ofi_mr {
    struct xfer_mr base; /* first */
    struct fid_mr *mr;
    void *desc;
    uint64_t key;
} ofi_mr_t;

typedef struct ofi_xfer {
    struct xfer base; /* first */
    struct fi_info *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_ep *ep;
    struct fid_cq *cq;
    struct fid_av *av;
    bool virt_addr, prov_key, mr_local, mr_endpoint, is_shm, use_sread;
    uint8_t name[OFI_NAME_MAX];
    size_t name_len;
    uint64_t chunk, max_msg;
    unsigned window, max_peers, timeout_ms;

    pthread_mutex_t lock; /* peers, batch counters, zombies, free list, CQ draining */
    ofi_peer_t **buckets;
    unsigned nbuckets, npeers;
    ofi_peer_t lru; /* sentinel */
    ofi_batch_t *free_batches, *zombies;

    /* client progress */
    bool want_pthr;
    pthread_mutex_t plock;
    pthread_cond_t pcond;
    pthread_t pthr;
    bool pthr_started, stopping;
    unsigned outstanding;
} ofi_xfer_t;

static inline ofi_xfer_t *ofi_x(xfer_t *x)
{
    return (ofi_xfer_t *)x;
}

static void ofi_seterr(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void ofi_seterr(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

#define OFI_POLL_MAX_NAP_US 20000u

static void ofi_sleep_us(unsigned us)
{
    struct timespec ts = {.tv_sec = us / 1000000, .tv_nsec = (long)(us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

/* ---- open / close -------------------------------------------------------------------------- */

static void ofi_close_fids(ofi_xfer_t *o)
{
    if (o->ep)
        fi_close(&o->ep->fid);
    if (o->av)
        fi_close(&o->av->fid);
    if (o->cq)
        fi_close(&o->cq->fid);
    if (o->domain)
        fi_close(&o->domain->fid);
    if (o->fabric)
        fi_close(&o->fabric->fid);
    if (o->info)
        fi_freeinfo(o->info);
    o->ep = NULL;
    o->av = NULL;
    o->cq = NULL;
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

static wh_status_t ofi_open(const xfer_config_t *cfg, const char *sub, xfer_t **out, char *err,
                            size_t errlen)
{
    const char *prov = xfer_fabric_name(cfg->provider);
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
    o->is_shm = strcmp(sub, "shm") == 0;
    o->window = cfg->window ? WH_MIN(cfg->window, OFI_MAX_WINDOW) : 4;
    o->chunk = cfg->chunk_size ? cfg->chunk_size : 4ULL << 20;
    o->max_peers = cfg->max_peers ? cfg->max_peers : 256;
    o->timeout_ms = cfg->timeout_ms ? cfg->timeout_ms : 10000;
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
    hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
                                  FI_MR_PROV_KEY | FI_MR_ENDPOINT;
    hints->domain_attr->threading = FI_THREAD_SAFE;
    hints->fabric_attr->prov_name = strdup(prov);
    if (!hints->fabric_attr->prov_name) {
        st = WH_ERR_NOMEM;
        goto err_free;
    }
    rc = fi_getinfo(FI_VERSION(1, 17), o->is_shm ? NULL : node, NULL,
                    (node && !o->is_shm) ? FI_SOURCE : 0, hints, &info);
    if (rc) {
        wh_warn("xfer", "fi_getinfo failed provider=%s node=%s err='%s'", prov,
                node ? node : "-", fi_strerror(-rc));
        ofi_seterr(err, errlen,
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
        ofi_seterr(err, errlen, "libfabric %s: opening fabric/domain failed: %s", prov,
                   fi_strerror(-rc));
        goto err_free;
    }
    /* shm's blocking CQ read does not honour its timeout in 1.17: poll it instead. */
    struct fi_cq_attr cqa = {.format = FI_CQ_FORMAT_DATA, .size = 1024,
                             .wait_obj = o->is_shm ? FI_WAIT_NONE : FI_WAIT_UNSPEC};
    rc = fi_cq_open(o->domain, &cqa, &o->cq, NULL);
    if (rc && cqa.wait_obj != FI_WAIT_NONE) {
        cqa.wait_obj = FI_WAIT_NONE;
        rc = fi_cq_open(o->domain, &cqa, &o->cq, NULL);
    }
    if (rc) {
        ofi_seterr(err, errlen, "libfabric %s: fi_cq_open failed: %s", prov, fi_strerror(-rc));
        goto err_free;
    }
    o->use_sread = cqa.wait_obj != FI_WAIT_NONE;
    struct fi_av_attr ava = {.type = FI_AV_TABLE, .count = o->max_peers};
    if ((rc = fi_av_open(o->domain, &ava, &o->av, NULL)) ||
        (rc = fi_endpoint(o->domain, o->info, &o->ep, NULL)) ||
        (rc = fi_ep_bind(o->ep, &o->cq->fid, FI_TRANSMIT | FI_RECV)) ||
        (rc = fi_ep_bind(o->ep, &o->av->fid, 0)) || (rc = fi_enable(o->ep))) {
        ofi_seterr(err, errlen, "libfabric %s: endpoint setup failed: %s", prov,
                   fi_strerror(-rc));
        goto err_free;
    }
    o->name_len = sizeof o->name;
    if ((rc = fi_getname(&o->ep->fid, o->name, &o->name_len))) {
        ofi_seterr(err, errlen, "libfabric %s: fi_getname failed: %s", prov, fi_strerror(-rc));
        goto err_free;
    }
    o->nbuckets = 1;
    while (o->nbuckets < 2 * o->max_peers)
        o->nbuckets <<= 1;
    o->buckets = calloc(o->nbuckets, sizeof *o->buckets);
    if (!o->buckets) {
        st = WH_ERR_NOMEM;
        goto err_free;
    }
    /* Both need target-side progress: tcp;ofi_rxm moves the data in the target's progress
     * calls; shm's command queue (RMA notices, 1024 entries) fills if the target never reads
     * its CQ. */
    o->base._needs_progress = true;
    fi_freeinfo(hints);
    wh_info("xfer",
            "provider open provider=%s fabric='%s' domain='%s' mr_mode=0x%llx "
            "chunk=%llu window=%u max_peers=%u",
            prov, o->info->fabric_attr->name, o->info->domain_attr->name,
            (unsigned long long)mm, (unsigned long long)o->chunk, o->window, o->max_peers);
    *out = &o->base;
    return WH_OK;

err_free:
    wh_warn("xfer", "provider open failed provider=%s err='%s'", prov,
            err && errlen ? err : "");
    if (hints)
        fi_freeinfo(hints);
    if (info)
        fi_freeinfo(info);
    ofi_close_fids(o);
    free(o->buckets);
    pthread_mutex_destroy(&o->lock);
    pthread_mutex_destroy(&o->plock);
    pthread_cond_destroy(&o->pcond);
    free(o);
    return st;
}

static void ofi_free_lists(ofi_xfer_t *o)
{
    for (unsigned i = 0; i < o->nbuckets; i++) {
        ofi_peer_t *p = o->buckets[i];
        while (p) {
            ofi_peer_t *n = p->hnext;
            free(p);
            p = n;
        }
    }
    free(o->buckets);
    for (ofi_batch_t *b = o->free_batches, *n; b; b = n) {
        n = b->next;
        free(b);
    }
    for (ofi_batch_t *b = o->zombies, *n; b; b = n) {
        n = b->next;
        free(b);
    }
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
        wh_warn("xfer", "closing with transfers still in flight provider=%s",
                x->_name);
    ofi_close_fids(o);
    /* The endpoint is closed: nothing touches the zombies' buffers any more. */
    for (ofi_batch_t *b = o->zombies; b; b = b->next)
        if (b->on_idle)
            b->on_idle(b->on_idle_arg);
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

/* ---- memory registration ------------------------------------------------------------------ */

static wh_status_t ofi_mr_reg(xfer_t *x, void *addr, size_t len, xfer_mr_t **out)
{
    ofi_xfer_t *o = ofi_x(x);
    uint64_t access = x->_role == XFER_ROLE_CLIENT ? FI_REMOTE_READ | FI_REMOTE_WRITE
                                                   : FI_READ | FI_WRITE;
    ofi_mr_t *m = calloc(1, sizeof *m);
    if (!m)
        return WH_ERR_NOMEM;
    int rc = -FI_ENOKEY;
    for (int attempt = 0; attempt < 8 && rc == -FI_ENOKEY; attempt++) {
        uint64_t key = 0;
        /* Keys the caller chooses are random, so one registration's key says nothing about
         * another's. */
        if (!o->prov_key && wh_random_bytes(&key, sizeof key) != 0) {
            free(m);
            return WH_ERR_INTERNAL;
        }
        rc = fi_mr_reg(o->domain, addr, len, access, 0, key, 0, &m->mr, NULL);
    }
    if (rc) {
        wh_error("xfer", "fi_mr_reg failed provider=%s len=%zu err='%s'", x->_name,
                 len, fi_strerror(-rc));
        free(m);
        return rc == -FI_ENOMEM ? WH_ERR_NOMEM : WH_ERR_TRANSPORT;
    }
    if (o->mr_endpoint) {
        if ((rc = fi_mr_bind(m->mr, &o->ep->fid, 0)) || (rc = fi_mr_enable(m->mr))) {
            wh_error("xfer", "fi_mr_bind failed provider=%s err='%s'", x->_name,
                     fi_strerror(-rc));
            fi_close(&m->mr->fid);
            free(m);
            return WH_ERR_TRANSPORT;
        }
    }
    m->key = fi_mr_key(m->mr);
    m->desc = fi_mr_desc(m->mr);
    m->base._x = x;
    m->base._addr = addr;
    m->base._len = len;
    *out = &m->base;
    return WH_OK;
}

static void ofi_mr_dereg(xfer_mr_t *mr)
{
    ofi_mr_t *m = (ofi_mr_t *)mr;
    if (!mr->_x->_forgotten && m->mr)
        fi_close(&m->mr->fid);
    free(m);
}

static wh_status_t ofi_token_pack(xfer_t *x, const xfer_mr_t *mr, const void *addr, uint64_t len,
                                  char *out, size_t outlen)
{
    ofi_xfer_t *o = ofi_x(x);
    const ofi_mr_t *m = (const ofi_mr_t *)mr;
    /* Without FI_MR_VIRT_ADDR the target address is an offset into the registration. */
    uint64_t base = o->virt_addr ? (uint64_t)(uintptr_t)addr
                                 : (uint64_t)((uintptr_t)addr - (uintptr_t)mr->_addr);
    return token_pack_ofi1(base, len, x->_fabric, o->name, o->name_len, m->key, out, outlen);
}

/* ---- client progress ---------------------------------------------------------------------- */

/* One progress step on the client: reads the CQ, which is where rxm/tcp move incoming RMA
 * data and shm consumes its command queue. Blocks at most ~10 ms (sread) or sleeps with a
 * backoff that the caller manages. Returns true if anything happened. */
static bool ofi_client_poll(ofi_xfer_t *o)
{
    struct fi_cq_data_entry e[OFI_CQ_BATCH];
    ssize_t n = o->use_sread ? fi_cq_sread(o->cq, e, OFI_CQ_BATCH, NULL, 10)
                             : fi_cq_read(o->cq, e, OFI_CQ_BATCH);
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
    }
    pthread_mutex_unlock(&o->plock);
    return NULL;
}

static void ofi_progress_begin(xfer_t *x)
{
    ofi_xfer_t *o = ofi_x(x);
    if (!o->want_pthr)
        return;
    pthread_mutex_lock(&o->plock);
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
    if (!o->want_pthr)
        return;
    pthread_mutex_lock(&o->plock);
    if (o->outstanding > 0)
        o->outstanding--;
    pthread_mutex_unlock(&o->plock);
}

/* ---- server: peer cache ------------------------------------------------------------------- */

static uint64_t ofi_hash(const uint8_t *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}

static void ofi_lru_unlink(ofi_peer_t *p)
{
    p->lprev->lnext = p->lnext;
    p->lnext->lprev = p->lprev;
}

static void ofi_lru_push(ofi_xfer_t *o, ofi_peer_t *p)
{
    p->lnext = o->lru.lnext;
    p->lprev = &o->lru;
    o->lru.lnext->lprev = p;
    o->lru.lnext = p;
}

/* Removes p from the map and the AV. Caller holds o->lock; p->refs == 0. */
static void ofi_peer_drop(ofi_xfer_t *o, ofi_peer_t *p)
{
    ofi_peer_t **pp = &o->buckets[p->hash & (o->nbuckets - 1)];
    while (*pp && *pp != p)
        pp = &(*pp)->hnext;
    if (*pp)
        *pp = p->hnext;
    ofi_lru_unlink(p);
    fi_av_remove(o->av, &p->fi_addr, 1, 0);
    o->npeers--;
    free(p);
}

/* Finds or inserts the peer; takes a reference. Caller holds o->lock. */
static wh_status_t ofi_peer_get(ofi_xfer_t *o, const uint8_t *name, size_t len, ofi_peer_t **out,
                                char *err, size_t errlen)
{
    uint64_t h = ofi_hash(name, len);
    for (ofi_peer_t *p = o->buckets[h & (o->nbuckets - 1)]; p; p = p->hnext) {
        if (p->hash == h && p->name_len == len && memcmp(p->name, name, len) == 0 && !p->bad) {
            p->refs++;
            ofi_lru_unlink(p);
            ofi_lru_push(o, p);
            *out = p;
            return WH_OK;
        }
    }
    if (o->npeers >= o->max_peers) {
        ofi_peer_t *victim = NULL;
        for (ofi_peer_t *p = o->lru.lprev; p != &o->lru; p = p->lprev)
            if (p->refs == 0) {
                victim = p;
                break;
            }
        if (!victim) {
            ofi_seterr(err, errlen,
                       "endpoint cache full: %u peers, all with transfers in flight; retry "
                       "later or raise max_peers",
                       o->max_peers);
            return WH_ERR_BUSY;
        }
        wh_debug("xfer", "evicting peer provider=%s", o->base._name);
        ofi_peer_drop(o, victim);
    }
    ofi_peer_t *p = calloc(1, sizeof *p);
    if (!p)
        return WH_ERR_NOMEM;
    memcpy(p->name, name, len);
    p->name_len = len;
    p->hash = h;
    int rc = fi_av_insert(o->av, name, 1, &p->fi_addr, 0, NULL);
    if (rc != 1) {
        free(p);
        ofi_seterr(err, errlen,
                   "token field 'ep-name': libfabric %s cannot use this address (fi_av_insert: "
                   "%s)",
                   o->base._fabric, rc < 0 ? fi_strerror(-rc) : "not inserted");
        return WH_ERR_INVALID;
    }
    p->refs = 1;
    p->hnext = o->buckets[h & (o->nbuckets - 1)];
    o->buckets[h & (o->nbuckets - 1)] = p;
    ofi_lru_push(o, p);
    o->npeers++;
    *out = p;
    return WH_OK;
}

static void ofi_peer_put(ofi_xfer_t *o, ofi_peer_t *p)
{
    if (!p)
        return;
    if (--p->refs == 0 && p->bad)
        ofi_peer_drop(o, p);
}

/* ---- server: completions ------------------------------------------------------------------ */

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
        b->base._bytes_done += op->len;
    } else {
        if (b->peer)
            b->peer->bad = true;
        if (b->base._status == WH_OK) {
            b->base._status = WH_ERR_TRANSPORT;
            snprintf(b->base._err, sizeof b->base._err, "%s", msg);
        }
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

/* Drains the CQ once. Caller must not hold o->lock. */
static unsigned ofi_drain(ofi_xfer_t *o)
{
    struct fi_cq_data_entry e[OFI_CQ_BATCH];
    ofi_batch_t *idle[OFI_CQ_BATCH + 1];
    unsigned nidle = 0, done = 0;

    if (pthread_mutex_trylock(&o->lock) != 0)
        return 0; /* someone else is draining */
    ssize_t n = fi_cq_read(o->cq, e, OFI_CQ_BATCH);
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
            wh_warn("xfer", "transfer op failed provider=%s err='%s' prov_err='%s'",
                    o->base._name, fi_strerror(ee.err), ps ? ps : "-");
            if (ee.op_context) {
                ofi_batch_t *z = ofi_complete(o, (ofi_op_t *)ee.op_context, ee.err ? ee.err : 1,
                                              msg);
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

static void ofi_progress(xfer_t *x)
{
    ofi_xfer_t *o = ofi_x(x);
    if (x->_role == XFER_ROLE_CLIENT)
        ofi_client_poll(o);
    else
        ofi_drain(o);
}

/* ---- server: shm peer binding ------------------------------------------------------------- */

/* The 1.17 shm region header: version byte 4, then resv, flags (u16), pid (int) at offset 4.
 * Checked against the running libfabric's version; another version skips this consistency
 * check (the data path stays bound to the kernel's pid either way). */
#define SMR117_VERSION 4
#define SMR117_PID_OFF 4

static wh_status_t ofi_shm_check_owner(ofi_xfer_t *o, const token_t *t, pid_t pid, uid_t uid,
                                       char *err, size_t errlen)
{
    char name[OFI_NAME_MAX + 1], path[OFI_NAME_MAX + 16];
    size_t n = t->ep_name_len;
    memcpy(name, t->ep_name, n);
    name[n] = '\0';
    if (n > 0 && strlen(name) != n && strlen(name) + 1 != n) {
        ofi_seterr(err, errlen, "token field 'ep-name': not an shm endpoint name");
        return WH_ERR_INVALID;
    }
    const char *s = strstr(name, "://");
    s = s ? s + 3 : name;
    if (!*s || strchr(s, '/') || strcmp(s, ".") == 0 || strcmp(s, "..") == 0) {
        ofi_seterr(err, errlen, "token field 'ep-name': not an shm endpoint name");
        return WH_ERR_INVALID;
    }
    for (const char *c = s; *c; c++)
        if (*c < 0x21 || *c > 0x7e) {
            ofi_seterr(err, errlen, "token field 'ep-name': not an shm endpoint name");
            return WH_ERR_INVALID;
        }

    /* The process the kernel named must still have the requester's uid (narrows pid reuse). */
    if (uid != (uid_t)-1) {
        char sp[64], line[256];
        snprintf(sp, sizeof sp, "/proc/%d/status", (int)pid);
        FILE *f = fopen(sp, "re");
        bool ok = false;
        if (f) {
            while (fgets(line, sizeof line, f)) {
                unsigned r, e;
                if (sscanf(line, "Uid: %u %u", &r, &e) == 2) {
                    ok = r == (unsigned)uid;
                    break;
                }
            }
            fclose(f);
        }
        if (!ok) {
            ofi_seterr(err, errlen, "requesting process %d is gone or no longer has uid %u",
                       (int)pid, (unsigned)uid);
            return WH_ERR_AUTH;
        }
    }

    if (fi_version() != FI_VERSION(1, 17)) {
        wh_debug("xfer", "shm region layout not verified for this libfabric, skipping "
                         "endpoint owner check");
        return WH_OK;
    }
    snprintf(path, sizeof path, "/dev/shm/%s", s);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        ofi_seterr(err, errlen,
                   "token field 'ep-name': shm endpoint '%.64s' does not exist on this host", s);
        return WH_ERR_INVALID;
    }
    struct stat stt;
    unsigned char hdr[8];
    wh_status_t st = WH_OK;
    if (fstat(fd, &stt) != 0 || !S_ISREG(stt.st_mode) ||
        pread(fd, hdr, sizeof hdr, 0) != (ssize_t)sizeof hdr) {
        ofi_seterr(err, errlen, "token field 'ep-name': shm endpoint '%.64s' is not readable",
                   s);
        st = WH_ERR_INVALID;
    } else if (uid != (uid_t)-1 && stt.st_uid != uid) {
        ofi_seterr(err, errlen,
                   "token's shm endpoint belongs to uid %u, but the request came from uid %u",
                   (unsigned)stt.st_uid, (unsigned)uid);
        st = WH_ERR_AUTH;
    } else if (hdr[0] != SMR117_VERSION) {
        wh_debug("xfer", "unknown shm region version, owner check skipped version=%u",
                 hdr[0]);
    } else {
        int rpid;
        memcpy(&rpid, hdr + SMR117_PID_OFF, sizeof rpid);
        if (rpid != (int)pid) {
            ofi_seterr(err, errlen,
                       "token names the shm endpoint of process %d, but the request came from "
                       "process %d; a client may only name its own memory",
                       rpid, (int)pid);
            st = WH_ERR_AUTH;
        }
    }
    close(fd);
    return st;
}

/* ---- server: tcp-like peer binding -------------------------------------------------------- */

/* Is numeric address a (from inet_ntop) one of this host's interface addresses? */
static bool ofi_host_local(const char *a)
{
    struct ifaddrs *ifs = NULL;
    bool found = false;
    if (getifaddrs(&ifs) != 0)
        return false;
    for (struct ifaddrs *i = ifs; i && !found; i = i->ifa_next) {
        char buf[INET6_ADDRSTRLEN];
        if (!i->ifa_addr)
            continue;
        if (i->ifa_addr->sa_family == AF_INET)
            inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, buf, sizeof buf);
        else if (i->ifa_addr->sa_family == AF_INET6)
            inet_ntop(AF_INET6, &((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr, buf,
                      sizeof buf);
        else
            continue;
        found = strcmp(buf, a) == 0;
    }
    freeifaddrs(ifs);
    return found;
}

static wh_status_t ofi_check_host(ofi_xfer_t *o, const token_t *t, const char *host, char *err,
                                  size_t errlen)
{
    char want[INET6_ADDRSTRLEN + 8], got[INET6_ADDRSTRLEN];
    /* host is "1.2.3.4", "1.2.3.4:port", "[::1]:port" or "::1". */
    snprintf(want, sizeof want, "%s", host);
    char *p = want;
    if (*p == '[') {
        p++;
        char *e = strchr(p, ']');
        if (e)
            *e = '\0';
    } else if (strchr(p, ':') == strrchr(p, ':') && strchr(p, ':')) {
        *strchr(p, ':') = '\0';
    }
    const struct sockaddr *sa = (const struct sockaddr *)t->ep_name;
    if (t->ep_name_len >= sizeof(struct sockaddr_in) && sa->sa_family == AF_INET) {
        inet_ntop(AF_INET, &((const struct sockaddr_in *)t->ep_name)->sin_addr, got, sizeof got);
    } else if (t->ep_name_len >= sizeof(struct sockaddr_in6) && sa->sa_family == AF_INET6) {
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)t->ep_name)->sin6_addr, got,
                  sizeof got);
    } else {
        return WH_OK; /* not an IP address (verbs GIDs, efa, cxi): the fabric binds it */
    }
    /* A loopback HTTP peer is on this host: it may name any address of this host. */
    bool loop = strncmp(p, "127.", 4) == 0 || strcmp(p, "::1") == 0;
    if (strcmp(got, p) == 0 ||
        (loop && (strncmp(got, "127.", 4) == 0 || !strcmp(got, "::1") || ofi_host_local(got))))
        return WH_OK;
    ofi_seterr(err, errlen,
               "token field 'ep-name': endpoint address %s is not the requester's address %s",
               got, p);
    return WH_ERR_AUTH;
}

/* ---- server: batches ---------------------------------------------------------------------- */

static wh_status_t ofi_batch_begin(xfer_t *x, const xfer_target_t *tgt, xfer_batch_t **out,
                                   char *err, size_t errlen)
{
    ofi_xfer_t *o = ofi_x(x);
    const token_t *t = tgt->token;
    wh_status_t st;
    bool cma = o->is_shm && tgt->bind_pid > 0;

    if (cma) {
        st = ofi_shm_check_owner(o, t, tgt->bind_pid, tgt->bind_uid, err, errlen);
        if (st != WH_OK)
            return st;
    } else if (!o->is_shm && tgt->bind_host) {
        st = ofi_check_host(o, t, tgt->bind_host, err, errlen);
        if (st != WH_OK)
            return st;
    }
    if (!o->is_shm && o->info->addr_format == FI_SOCKADDR_IN &&
        (t->ep_name_len != sizeof(struct sockaddr_in) ||
         ((const struct sockaddr *)t->ep_name)->sa_family != AF_INET)) {
        ofi_seterr(err, errlen, "token field 'ep-name': not an IPv4 %s address", x->_fabric);
        return WH_ERR_INVALID;
    }
    if (!o->is_shm && o->info->addr_format == FI_SOCKADDR_IN6 &&
        (t->ep_name_len != sizeof(struct sockaddr_in6) ||
         ((const struct sockaddr *)t->ep_name)->sa_family != AF_INET6)) {
        ofi_seterr(err, errlen, "token field 'ep-name': not an IPv6 %s address", x->_fabric);
        return WH_ERR_INVALID;
    }
    if (o->is_shm && !cma && (t->ep_name_len < 2 || t->ep_name[t->ep_name_len - 1] != '\0' ||
                              strlen((const char *)t->ep_name) + 1 != t->ep_name_len)) {
        ofi_seterr(err, errlen, "token field 'ep-name': not an shm endpoint name");
        return WH_ERR_INVALID;
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
    if (!cma) {
        st = ofi_peer_get(o, t->ep_name, t->ep_name_len, &b->peer, err, errlen);
        if (st != WH_OK) {
            b->next = o->free_batches;
            o->free_batches = b;
            pthread_mutex_unlock(&o->lock);
            return st;
        }
    }
    pthread_mutex_unlock(&o->lock);
    b->cma_pid = cma ? tgt->bind_pid : 0;
    b->base._direct = cma;
    b->key = t->key;
    b->last_ns = wh_now_ns();
    b->on_idle = tgt->on_idle;
    b->on_idle_arg = tgt->on_idle_arg;
    *out = &b->base;
    return WH_OK;
}

/* The bound-shm data path: the kernel-named pid, chunked, synchronous. */
static wh_status_t ofi_cma_post(ofi_batch_t *b, xfer_op_t op, void *local, size_t len,
                                uint64_t raddr)
{
    ofi_xfer_t *o = ofi_x(b->base._x);
    size_t done = 0;
    while (done < len) {
        size_t n = WH_MIN(len - done, o->chunk);
        struct iovec l = {(char *)local + done, n};
        struct iovec r = {(void *)(uintptr_t)(raddr + done), n};
        ssize_t got = op == XFER_OP_WRITE ? process_vm_writev(b->cma_pid, &l, 1, &r, 1, 0)
                                          : process_vm_readv(b->cma_pid, &l, 1, &r, 1, 0);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            int e = got < 0 ? errno : EFAULT;
            /* Direct batches take posts from several threads: the first failure reports. */
            wh_status_t fail = e == EPERM ? WH_ERR_AUTH : WH_ERR_TRANSPORT, ok = WH_OK;
            if (!__atomic_compare_exchange_n(&b->base._status, &ok, fail, false,
                                             __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
                return b->base._status;
            const char *what = e == ESRCH    ? "the client process is gone"
                               : e == EFAULT ? "the token's region is not mapped in the client"
                               : e == EPERM  ? "no permission to access the client process"
                                             : "cross-memory copy failed";
            snprintf(b->base._err, sizeof b->base._err, "shm %s failed at offset 0x%llx: %s (%s)",
                     op == XFER_OP_WRITE ? "write" : "read",
                     (unsigned long long)(raddr - b->base._rbase + done), what, strerror(e));
            wh_warn("xfer", "cma transfer failed pid=%d err='%s'", (int)b->cma_pid,
                    strerror(e));
            return fail;
        }
        done += (size_t)got;
        __atomic_fetch_add(&b->base._bytes_done, (uint64_t)got, __ATOMIC_RELAXED);
    }
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
        wh_status_t st = b->base._status;
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
            if (b->base._status == WH_OK) {
                b->base._status = WH_ERR_TIMEOUT;
                snprintf(b->base._err, sizeof b->base._err,
                         "%s transfer made no progress for %u ms (client dead or not driving "
                         "progress)",
                         o->base._fabric, o->timeout_ms);
                if (b->peer)
                    b->peer->bad = true;
            }
            pthread_mutex_unlock(&o->lock);
            wh_warn("xfer", "transfer timed out provider=%s timeout_ms=%u",
                    o->base._name, o->timeout_ms);
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
    struct fi_msg_rma msg = {.msg_iov = &iov, .desc = &desc, .iov_count = 1,
                             .addr = b->peer->fi_addr, .rma_iov = &riov, .rma_iov_count = 1,
                             .context = &slot->ctx};
    return fi_writemsg(o->ep, &msg, FI_COMPLETION | FI_DELIVERY_COMPLETE);
}

static wh_status_t ofi_batch_post(xfer_batch_t *xb, xfer_op_t op, xfer_mr_t *mr, void *local,
                                  size_t len, uint64_t roff, unsigned tag)
{
    ofi_batch_t *b = (ofi_batch_t *)xb;
    ofi_xfer_t *o = ofi_x(xb->_x);
    ofi_mr_t *m = (ofi_mr_t *)mr;
    uint64_t raddr = xb->_rbase + roff;
    wh_status_t st;

    if (b->cma_pid > 0)
        return ofi_cma_post(b, op, local, len, raddr);

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
            ssize_t rc = op == XFER_OP_WRITE ? ofi_post_write(o, b, m, (char *)local + done, n,
                                                              raddr + done, slot)
                                             : fi_read(o->ep, (char *)local + done, n, m->desc,
                                                       b->peer->fi_addr, raddr + done, b->key,
                                                       &slot->ctx);
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
            if (b->base._status == WH_OK) {
                b->base._status = rc == -FI_EAGAIN ? WH_ERR_TIMEOUT : WH_ERR_TRANSPORT;
                snprintf(b->base._err, sizeof b->base._err, "%s %s could not be posted: %s",
                         o->base._fabric, op == XFER_OP_WRITE ? "fi_write" : "fi_read",
                         rc == -FI_EAGAIN ? "peer not accepting operations (timed out)"
                                          : fi_strerror((int)-rc));
            }
            st = b->base._status;
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

static wh_status_t ofi_batch_wait(xfer_batch_t *xb, unsigned tag)
{
    ofi_batch_t *b = (ofi_batch_t *)xb;
    if (b->cma_pid > 0)
        return xb->_status;
    return ofi_wait_until(b, tag, false);
}

static wh_status_t ofi_batch_end(xfer_batch_t *xb)
{
    ofi_batch_t *b = (ofi_batch_t *)xb;
    ofi_xfer_t *o = ofi_x(xb->_x);
    if (b->cma_pid == 0 && b->outstanding > 0 && xb->_status == WH_OK)
        ofi_wait_until(b, XFER_TAG_ALL, false); /* normal end: let the last ops finish */
    pthread_mutex_lock(&o->lock);
    if (b->outstanding > 0) {
        b->zombie = true;
        b->next = o->zombies;
        o->zombies = b;
        pthread_mutex_unlock(&o->lock);
        wh_warn("xfer", "batch ended with ops in flight; buffers held until they drain "
                        "provider=%s ops=%u",
                o->base._name, b->outstanding);
        return WH_ERR_BUSY;
    }
    ofi_batch_recycle(o, b);
    pthread_mutex_unlock(&o->lock);
    return WH_OK;
}

const struct xfer_ops xfer_ofi_ops = {
    .family = "ofi",
    .open = ofi_open,
    .close = ofi_close,
    .forget_after_fork = ofi_forget_after_fork,
    .mr_reg = ofi_mr_reg,
    .mr_dereg = ofi_mr_dereg,
    .token_pack = ofi_token_pack,
    .progress_begin = ofi_progress_begin,
    .progress_end = ofi_progress_end,
    .progress = ofi_progress,
    .batch_begin = ofi_batch_begin,
    .batch_post = ofi_batch_post,
    .batch_wait = ofi_batch_wait,
    .batch_end = ofi_batch_end,
};
