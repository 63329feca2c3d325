/* SPDX-License-Identifier: Apache-2.0 */
/* The libfabric family of xfer, private to its files: RDM endpoints with FI_RMA ("ofi+shm",
 * "ofi+tcp", "ofi+verbs", "ofi+efa", "ofi+cxi").
 *
 * Split by object, as UCX splits a transport:
 * - ofi_iface.c: the interface (fabric, domain, endpoint, CQ, AV), open/close/fork, the
 *   client's progress thread, and the ops table;
 * - ofi_mr.c: memory registration and packing tokens;
 * - ofi_peer.c: the server's peer cache (fabric address -> AV entry, LRU bounded) and the
 *   check that a network token names the requester's host;
 * - ofi_batch.c: batches (chunked posts with a bounded window), completions, zombies (batches
 *   that ended with ops in flight) and the count of stalled ones (xfer_stalled).
 *
 * Server role (initiator): one endpoint, one CQ, one AV. Any thread that waits drains the
 * shared CQ and dispatches completions to their batches; a batch fails when none of its ops
 * completes within timeout_ms, and a batch that still has ops in flight when it ends lives on
 * as a zombie until they drain or are cancelled (its buffers must not be reused before).
 *
 * shm peers that the kernel identified are not served here but by the cma family (cma.c);
 * this family's shm initiator serves only --shm-trust-local requests.
 *
 * Client role (target): registers memory for remote access and drives progress from a thread
 * that runs only while xfer_progress_begin/end brackets are open. */
#ifndef WH_XFER_OFI_H
#define WH_XFER_OFI_H

#include "xfer/ofi_dl.h"
#include "xfer/xfer.h"

#include <pthread.h>
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <stdbool.h>
#include <stdint.h>

#define OFI_MAX_WINDOW XFER_MAX_WINDOW
#define OFI_NAME_MAX XFER_TOKEN_MAX_EP_NAME
#define OFI_CQ_BATCH 16
#define OFI_POLL_MAX_NAP_US 20000u
/* A provider call that takes longer is logged: nothing else moves on that endpoint meanwhile. */
#define OFI_SLOW_CALL_NS (500ull * 1000000ull)

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
    ofi_peer_t *peer;
    uint64_t key;
    unsigned outstanding;
    unsigned tag_out[XFER_TAG_ALL];
    uint64_t last_ns;   /* last completion (or start): the inactivity timeout runs from here */
    uint64_t zombie_ns; /* when it became a zombie: xfer_stalled counts from here */
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
    bool hmem;          /* opened with FI_HMEM: GPU memory registers with the NIC */
    char hmem_why[200]; /* why not, when !hmem */
    uint8_t name[OFI_NAME_MAX];
    size_t name_len;
    uint64_t chunk, max_msg;
    unsigned window, max_peers, timeout_ms, reap_ms;

    pthread_mutex_t lock; /* peers, batch counters, zombies, free list, CQ draining */
    ofi_peer_t **buckets;
    unsigned nbuckets, npeers;
    ofi_peer_t lru; /* sentinel */
    ofi_batch_t *free_batches, *zombies;
    uint64_t drained_ns, drain_gap_ns; /* last CQ read's end; longest gap between reads since
                                          the last timeout (diagnostics, under lock) */

    /* client progress */
    bool want_pthr;
    pthread_mutex_t plock;
    pthread_cond_t pcond;
    pthread_t pthr;
    bool pthr_started, stopping;
    bool polling;         /* the progress thread is reading the CQ (plock) */
    unsigned outstanding; /* open progress brackets (plock) */
    unsigned quiescing;   /* ofi_quiesce calls waiting or replacing the endpoint (plock) */
    unsigned quiesced;    /* endpoints replaced (plock) */
} ofi_xfer_t;

static inline ofi_xfer_t *ofi_x(xfer_t *x)
{
    return (ofi_xfer_t *)x;
}

void ofi_sleep_us(unsigned us);

/* ofi_mr.c */
wh_status_t ofi_mr_reg(xfer_t *x, void *addr, size_t len, xfer_mr_t **out);
wh_status_t ofi_mr_reg_device(xfer_t *x, void *addr, size_t len, xfer_mr_t **out, char *err,
                              size_t errlen);
void ofi_mr_dereg(xfer_mr_t *mr);
wh_status_t ofi_token_pack(xfer_t *x, const xfer_mr_t *mr, const void *addr, uint64_t len,
                           char *out, size_t outlen);

/* ofi_peer.c; callers hold o->lock for get/put/remove. */
wh_status_t ofi_peer_get(ofi_xfer_t *o, const uint8_t *name, size_t len, ofi_peer_t **out,
                         char *err, size_t errlen);
void ofi_peer_put(ofi_xfer_t *o, ofi_peer_t *p);
void ofi_peers_free(ofi_xfer_t *o);
wh_status_t ofi_check_host(ofi_xfer_t *o, const xfer_token_t *t, const char *host, char *err,
                           size_t errlen);

/* ofi_batch.c */
wh_status_t ofi_batch_begin(xfer_t *x, const xfer_target_t *tgt, xfer_batch_t **out, char *err,
                            size_t errlen);
wh_status_t ofi_batch_post(xfer_batch_t *xb, xfer_op_t op, xfer_mr_t *mr, void *local, size_t len,
                           uint64_t roff, unsigned tag);
wh_status_t ofi_batch_wait(xfer_batch_t *xb, unsigned tag);
wh_status_t ofi_batch_end(xfer_batch_t *xb);
/* Drains the CQ once. Caller must not hold o->lock. Returns the number of completions
 * handled. */
unsigned ofi_drain(ofi_xfer_t *o);
unsigned ofi_stalled(xfer_t *x);
void ofi_batches_free(ofi_xfer_t *o);
/* Hands every zombie's buffers back (the endpoint is closed: nothing touches them now). */
void ofi_zombies_release(ofi_xfer_t *o);

#endif
