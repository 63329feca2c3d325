/* SPDX-License-Identifier: Apache-2.0 */
/* The RDMA buffer pool: nbuf registered buffers of one chunk each in one prefaulted arena.
 *
 * Sizing: --rdma-mem when given; otherwise 1/64 of the host's RAM, between 64 MiB and 1 GiB,
 * and, when an enabled provider pins registered memory (verbs, efa, cxi), at most
 * RLIMIT_MEMLOCK.
 *
 * Fairness, so that clients that stall with transfers in flight cost others nothing beyond
 * their share until their buffers come back (rdma.c: rdma_drive):
 * - one client (a token endpoint: a process's fabric address, or its shm endpoint) holds at
 *   most peer_cap buffers (half the pool) at a time;
 * - a client's first buffer may come from anywhere, but more than one only while `reserve`
 *   buffers (a quarter of the pool) stay free: so a client that holds none finds a buffer as
 *   long as fewer than about `reserve` other clients hold buffers they cannot give back.
 * A request that finds no buffer it may take waits at most cfg.pool_wait_ms, and while it
 * waits it drives completions and endpoint replacement, so buffers held by ended transfers
 * come back even when no other request is moving bytes. */
#include "engine/rdma_int.h"
#include "base/log.h"
#include "base/util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define RDMA_POOL_MIN (64ULL << 20)
#define RDMA_POOL_MAX (1ULL << 30)
#define RDMA_POOL_SLICE_MS 20 /* how often a waiting request drives completions */

/* The default budget, from the host. */
static uint64_t rdma_pool_auto(bool pins_memory, uint64_t chunk)
{
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    uint64_t ram = pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz : 0;
    uint64_t b = ram / 64;
    b = WH_MAX(b, RDMA_POOL_MIN);
    b = WH_MIN(b, RDMA_POOL_MAX);
    struct rlimit rl;
    uint64_t lock = UINT64_MAX;
    if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        lock = (uint64_t)rl.rlim_cur;
    if (pins_memory && lock < b) {
        b = WH_MAX(lock, 2 * chunk);
        if (lock < 2 * chunk)
            wh_warn(MOD,
                    "RLIMIT_MEMLOCK is below two chunks; registration may fail "
                    "memlock=%" PRIu64 " chunk=%" PRIu64,
                    lock, chunk);
    }
    wh_info(MOD,
            "rdma pool sized from the host ram=%" PRIu64 " memlock=%s%" PRIu64
            " pins_memory=%d budget=%" PRIu64,
            ram, lock == UINT64_MAX ? "unlimited:" : "", lock == UINT64_MAX ? 0 : lock,
            (int)pins_memory, b);
    return b;
}

wh_status_t rdma_pool_init(rdma_t *r, bool pins_memory)
{
    r->buf_len = (size_t)r->cfg.chunk_size;
    uint64_t budget =
        r->cfg.mem_budget ? r->cfg.mem_budget : rdma_pool_auto(pins_memory, r->cfg.chunk_size);
    r->nbuf = (unsigned)WH_MIN(budget / r->buf_len, 4096);
    if (r->nbuf < 2) {
        wh_error(MOD, "rdma memory budget too small budget=%" PRIu64 " chunk=%zu", budget,
                 r->buf_len);
        fprintf(stderr,
                "wharfd: --rdma-mem %" PRIu64 " is smaller than two chunks of %zu "
                "bytes; raise it or use --providers none\n",
                budget, r->buf_len);
        return WH_ERR_INVALID;
    }
    /* A client's share: half the pool, and one request's worth where the pool allows; the
     * reserve: a quarter, at least one. */
    r->reserve = WH_MAX(r->nbuf / 4, 1u);
    r->peer_cap = WH_MAX(r->nbuf / 2, r->cfg.window + 2);
    r->peer_cap = WH_MIN(r->peer_cap, r->nbuf - r->reserve);
    r->arena_len = (size_t)r->nbuf * r->buf_len;
    /* Registered once, prefaulted (a fault costs ~12 us on these VMs). */
    r->arena = mmap(NULL, r->arena_len, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (r->arena == MAP_FAILED) {
        r->arena = NULL;
        wh_error(MOD, "cannot map rdma pool bytes=%zu err='%s'", r->arena_len, strerror(errno));
        return WH_ERR_NOMEM;
    }
    for (size_t off = 0; off < r->arena_len; off += 4096)
        r->arena[off] = 0; /* MAP_POPULATE may be partial under pressure */
    r->free_idx = calloc(r->nbuf, sizeof *r->free_idx);
    r->shares = calloc(r->nbuf, sizeof *r->shares);
    if (!r->free_idx || !r->shares)
        return WH_ERR_NOMEM;
    for (unsigned i = 0; i < r->nbuf; i++)
        r->free_idx[i] = r->nbuf - 1 - i;
    r->nfree = r->nbuf;
    return WH_OK;
}

void rdma_pool_fini(rdma_t *r)
{
    if (r->arena)
        munmap(r->arena, r->arena_len);
    r->arena = NULL;
    free(r->free_idx);
    free(r->shares);
    r->free_idx = NULL;
    r->shares = NULL;
}

uint8_t *rdma_pool_buf(rdma_t *r, unsigned i)
{
    return r->arena + (size_t)i * r->buf_len;
}

uint64_t rdma_peer_key(const xfer_token_t *tok)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (const char *c = tok->provider; *c; c++)
        h = (h ^ (uint8_t)*c) * 0x100000001b3ULL;
    for (size_t i = 0; i < tok->ep_name_len; i++)
        h = (h ^ tok->ep_name[i]) * 0x100000001b3ULL;
    return h;
}

/* The peer's share entry (created when create); caller holds plock. */
static rdma_share_t *rdma_share(rdma_t *r, uint64_t key, bool create)
{
    for (unsigned i = 0; i < r->nshares; i++)
        if (r->shares[i].key == key)
            return &r->shares[i];
    if (!create || r->nshares >= r->nbuf)
        return NULL;
    rdma_share_t *s = &r->shares[r->nshares++];
    s->key = key;
    s->held = 0;
    return s;
}

static void rdma_share_drop(rdma_t *r, rdma_share_t *s, unsigned n)
{
    s->held -= WH_MIN(n, s->held);
    if (s->held == 0)
        *s = r->shares[--r->nshares]; /* entries are only live while they hold buffers */
}

unsigned rdma_pool_take(rdma_t *r, rdma_late_t *l, unsigned want, rdma_result_t *res)
{
    uint64_t end = wh_now_ns() + (uint64_t)r->cfg.pool_wait_ms * 1000000ULL;
    bool at_share = false;
    want = WH_MIN(WH_MAX(want, 1u), (unsigned)RDMA_MAX_SLOTS);
    pthread_mutex_lock(&r->plock);
    for (;;) {
        rdma_share_t *s = rdma_share(r, l->peer_key, false);
        unsigned held = s ? s->held : 0;
        unsigned room = held < r->peer_cap ? r->peer_cap - held : 0;
        unsigned n = WH_MIN(WH_MIN(want, r->nfree), room);
        /* Beyond a client's first buffer, leave the reserve for clients that hold none. */
        unsigned extra = r->nfree > r->reserve ? r->nfree - r->reserve : 0;
        n = WH_MIN(n, WH_MAX(extra, held == 0 ? 1u : 0u));
        at_share = room == 0;
        if (n > 0 && (s || (s = rdma_share(r, l->peer_key, true)) != NULL)) {
            for (unsigned i = 0; i < n; i++)
                l->idx[i] = r->free_idx[--r->nfree];
            s->held += n;
            l->n = n;
            pthread_mutex_unlock(&r->plock);
            return n;
        }
        if (wh_now_ns() >= end)
            break;
        struct timespec dl;
        wh_deadline_ns(&dl, (uint64_t)RDMA_POOL_SLICE_MS * 1000000ULL);
        if (pthread_cond_timedwait(&r->pcond, &r->plock, &dl) != ETIMEDOUT)
            continue;
        /* Nothing came back for a slice: drive completions (and replace stalled endpoints),
         * which is how buffers of ended transfers return when nobody else is waiting. */
        pthread_mutex_unlock(&r->plock);
        for (unsigned i = 0; i < r->nprov; i++)
            rdma_drive(r, &r->prov[i]);
        pthread_mutex_lock(&r->plock);
    }
    pthread_mutex_unlock(&r->plock);
    l->n = 0;
    if (at_share)
        rdma_res_set(res, 503, "SlowDown",
                     "this client already holds its share of %u of the %u RDMA buffers "
                     "(--rdma-mem); retry later",
                     r->peer_cap, r->nbuf);
    else
        rdma_res_set(res, 503, "SlowDown", "all %u RDMA buffers are busy (--rdma-mem); retry later",
                     r->nbuf);
    rdma_decline(r, DECL_BUSY, res);
    return 0;
}

void rdma_pool_give(rdma_t *r, rdma_late_t *l)
{
    if (!l->n)
        return;
    pthread_mutex_lock(&r->plock);
    for (unsigned i = 0; i < l->n; i++)
        r->free_idx[r->nfree++] = l->idx[i];
    rdma_share_t *s = rdma_share(r, l->peer_key, false);
    if (s)
        rdma_share_drop(r, s, l->n);
    l->n = 0;
    pthread_cond_broadcast(&r->pcond);
    pthread_mutex_unlock(&r->plock);
}

void rdma_late_release(void *arg)
{
    rdma_late_t *l = arg;
    rdma_pool_give(l->r, l);
    free(l);
}
