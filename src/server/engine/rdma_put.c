/* SPDX-License-Identifier: Apache-2.0 */
/* RDMA PUT/UploadPart: reads the token's whole region in chunks and passes it, in order, to
 * the caller's sink. */
#include "engine/rdma_int.h"
#include "s3/errors.h"
#include "base/log.h"
#include "base/util.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* Positional direct PUT: bytes per copy of the client's region into a thread's piece of a pool
 * buffer, then on to the sink. Small enough to stay in a core's L2 between the copy in, the
 * checksums and the copy out, so each byte crosses memory once (client -> destination); large
 * enough that the per-call cost of the cross-memory copy and the write stays small. */
#define PUT_PIECE (256u << 10)

/* Bound shm (direct) PUT: posts are synchronous copies, so a reader thread pulls chunk k+1
 * from the client (process_vm_readv into a pool buffer) while the request thread checksums and
 * sinks chunk k into the store; without it the two alternated on one core. */
typedef struct put_direct {
    rdma_t *r;
    xfer_mr_t *mr; /* the pool's registration on the request's endpoint */
    xfer_batch_t *b;
    const rdma_late_t *late;
    uint64_t len, chunk, nchunks;
    unsigned nslots;
    bool filled[RDMA_MAX_SLOTS];
    wh_status_t st; /* the reader's failure */
    bool abort;
    pthread_mutex_t lock;
    pthread_cond_t cond;
} put_direct_t;

static void *put_direct_reader(void *arg)
{
    put_direct_t *d = arg;
    for (uint64_t k = 0; k < d->nchunks; k++) {
        unsigned s = (unsigned)(k % d->nslots);
        pthread_mutex_lock(&d->lock);
        while (d->filled[s] && !d->abort)
            pthread_cond_wait(&d->cond, &d->lock);
        bool stop = d->abort;
        pthread_mutex_unlock(&d->lock);
        if (stop)
            break;
        size_t n = (size_t)WH_MIN(d->chunk, d->len - k * d->chunk);
        wh_status_t st = xfer_batch_post(d->b, XFER_OP_READ, d->mr,
                                         rdma_pool_buf(d->r, d->late->idx[s]), n, k * d->chunk, s);
        pthread_mutex_lock(&d->lock);
        if (st != WH_OK) {
            d->st = st;
            d->abort = true;
        } else {
            d->filled[s] = true;
        }
        pthread_cond_broadcast(&d->cond);
        pthread_mutex_unlock(&d->lock);
        if (st != WH_OK)
            break;
    }
    return NULL;
}

/* Returns the first failure; *crc and *sunk describe what reached the sink. */
static wh_status_t put_direct_run(put_direct_t *d, rdma_sink_cb sink, void *arg, uint64_t *crc,
                                  uint64_t *sunk, wh_status_t *sink_st)
{
    pthread_t th;
    wh_status_t st = WH_OK;
    rdma_sync_init(d->r, &d->lock, &d->cond);
    if (pthread_create(&th, NULL, put_direct_reader, d) != 0) {
        rdma_sync_destroy(d->r, &d->lock, &d->cond);
        return WH_ERR_NOMEM;
    }
    for (uint64_t k = 0; k < d->nchunks; k++) {
        unsigned s = (unsigned)(k % d->nslots);
        pthread_mutex_lock(&d->lock);
        while (!d->filled[s] && !d->abort)
            pthread_cond_wait(&d->cond, &d->lock);
        bool ok = d->filled[s];
        pthread_mutex_unlock(&d->lock);
        if (!ok)
            break;
        size_t n = (size_t)WH_MIN(d->chunk, d->len - k * d->chunk);
        const uint8_t *q = rdma_pool_buf(d->r, d->late->idx[s]);
        *crc = wh_crc64nvme(*crc, q, n);
        if ((*sink_st = sink(arg, q, n)) != WH_OK) {
            st = *sink_st;
            break;
        }
        *sunk += n;
        pthread_mutex_lock(&d->lock);
        d->filled[s] = false;
        pthread_cond_broadcast(&d->cond);
        pthread_mutex_unlock(&d->lock);
    }
    pthread_mutex_lock(&d->lock);
    d->abort = true;
    pthread_cond_broadcast(&d->cond);
    pthread_mutex_unlock(&d->lock);
    pthread_join(th, NULL);
    if (st == WH_OK)
        st = d->st;
    rdma_sync_destroy(d->r, &d->lock, &d->cond);
    return st;
}

/* Positional direct PUT (see rdma_sink_at_t): up to copy_threads workers, the request
 * thread among them, take the next window of RDMA_DIRECT_WINDOW bytes (of a striped
 * destination: the next stripe's next window) and move it piece by piece. Mapped
 * (at->map_at): read from the client straight into the destination's mapping, then checksum
 * the piece while it is in cache: one copy. Else: read into the worker's piece of a pool
 * buffer, checksum, write_at (at most put_threads of them per destination file: those writes
 * serialise on the file's lock). The threads are shared with the direct GETs in flight
 * (direct_active), as rdma_get.c does; the per-window crcs are combined in order at the end. */
typedef struct put_par {
    xfer_batch_t *b;
    const rdma_sink_at_t *at;
    void *arg;
    uint64_t len, nwin;
    /* Striped destination: windows are taken stripe by stripe in turn (slot j is window
     * wps * (j % nstripes) + j / nstripes), so threads running together write into
     * different files; nslots counts the slots, some past the end of a short last stripe. */
    unsigned nstripes;
    uint64_t wps, nslots;
    uint64_t *crc;
    uint32_t *crc32c;    /* NULL unless at->want_crc32c */
    bool mapped;         /* windows through at->map_at, no pool piece */
    size_t group;        /* bytes per write_at: PUT_PIECE, or the sink's write_unit */
    uint64_t next;       /* next window to take (atomic) */
    uint64_t moved;      /* bytes through write_at (atomic) */
    wh_status_t st;      /* first transfer failure (atomic) */
    wh_status_t sink_st; /* first write_at failure (atomic) */
} put_par_t;

typedef struct put_worker {
    put_par_t *d;
    uint8_t *piece;
} put_worker_t;

static void put_par_fail(wh_status_t *at, wh_status_t st)
{
    wh_status_t ok = WH_OK;
    __atomic_compare_exchange_n(at, &ok, st, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

static void *put_par_worker(void *arg)
{
    put_worker_t *pw = arg;
    put_par_t *d = pw->d;
    for (;;) {
        uint64_t j = __atomic_fetch_add(&d->next, 1, __ATOMIC_RELAXED);
        if (j >= d->nslots || __atomic_load_n(&d->st, __ATOMIC_RELAXED) != WH_OK ||
            __atomic_load_n(&d->sink_st, __ATOMIC_RELAXED) != WH_OK)
            break;
        uint64_t k = d->nstripes > 1 ? d->wps * (j % d->nstripes) + j / d->nstripes : j;
        if (k >= d->nwin)
            continue; /* past the end of the last stripe */
        uint64_t off = k * RDMA_DIRECT_WINDOW;
        uint64_t n = WH_MIN((uint64_t)RDMA_DIRECT_WINDOW, d->len - off);
        uint64_t c = 0;
        uint32_t c32 = 0;
        uint8_t *dst = NULL;
        if (d->mapped) {
            void *m;
            wh_status_t st = d->at->map_at(d->arg, off, (size_t)n, &m);
            if (st != WH_OK) {
                put_par_fail(&d->sink_st, st);
                return NULL;
            }
            dst = m;
        }
        for (uint64_t p = 0; p < n;) {
            /* One group: read and checksummed piece by piece, then one write (mapped: the
             * pieces land in place and nothing is written). */
            size_t g = (size_t)WH_MIN((uint64_t)d->group, n - p);
            uint8_t *land = dst ? dst + p : pw->piece;
            for (size_t q = 0; q < g;) {
                size_t m = WH_MIN((size_t)PUT_PIECE, g - q);
                wh_status_t st =
                    xfer_batch_post(d->b, XFER_OP_READ, NULL, land + q, m, off + p + q, 0);
                if (st != WH_OK) {
                    put_par_fail(&d->st, st);
                    return NULL;
                }
                c = wh_crc64nvme(c, land + q, m);
                if (d->crc32c)
                    c32 = wh_crc32c(c32, land + q, m);
                q += m;
            }
            wh_status_t st;
            if (!dst && (st = d->at->write_at(d->arg, land, g, off + p)) != WH_OK) {
                put_par_fail(&d->sink_st, st);
                return NULL;
            }
            __atomic_fetch_add(&d->moved, g, __ATOMIC_RELAXED);
            p += g;
        }
        d->crc[k] = c;
        if (d->crc32c)
            d->crc32c[k] = c32;
    }
    return NULL;
}

/* Runs the positional PUT over the pool slots the request holds (their buffers cut into
 * pieces, one per worker). Fills res's bytes and checksums on success. */
static wh_status_t put_par_run(rdma_xfer_t *t, const rdma_sink_at_t *at, void *arg, uint64_t *moved,
                               wh_status_t *sink_st, rdma_result_t *res)
{
    rdma_t *r = t->r;
    put_par_t d = {.b = t->b, .at = at, .arg = arg, .len = t->tok.size};
    d.nwin = (d.len + RDMA_DIRECT_WINDOW - 1) / RDMA_DIRECT_WINDOW;
    d.crc = malloc(d.nwin * sizeof *d.crc);
    if (at->want_crc32c)
        d.crc32c = malloc(d.nwin * sizeof *d.crc32c);
    if (!d.crc || (at->want_crc32c && !d.crc32c)) {
        free(d.crc);
        free(d.crc32c);
        return WH_ERR_NOMEM;
    }
    void *probe;
    d.mapped = at->map_at && at->map_at(arg, 0, 0, &probe) == WH_OK;
    uint64_t stripe = !d.mapped && at->stripe_len ? at->stripe_len(arg) : 0;
    if (stripe && stripe % RDMA_DIRECT_WINDOW == 0 && stripe < d.len) {
        d.wps = stripe / RDMA_DIRECT_WINDOW;
        d.nstripes = (unsigned)((d.len + stripe - 1) / stripe);
    }
    d.nslots = d.nstripes > 1 ? d.nstripes * d.wps : d.nwin;
    /* A destination that takes whole large pages best (a huge-page tmpfs zeroes the rest of
     * a page a write covers only part of) gets writes of that size from buffers as large. */
    uint64_t unit = !d.mapped && at->write_unit ? at->write_unit(arg) : 0;
    d.group = PUT_PIECE;
    if (unit > PUT_PIECE && unit <= r->buf_len && (unit & (unit - 1)) == 0 &&
        RDMA_DIRECT_WINDOW % unit == 0)
        d.group = (size_t)unit;
    unsigned per_slot = (unsigned)WH_MAX(r->buf_len / d.group, (uint64_t)1);
    /* Mapped: no pieces to share out, no write lock to meet: the request's share of the copy
     * threads, as a direct GET gets. */
    unsigned cap = d.mapped ? RDMA_DIRECT_MAX_THREADS : t->late->n * per_slot;
    unsigned active = __atomic_add_fetch(&r->direct_active, 1, __ATOMIC_ACQ_REL);
    unsigned want = WH_MAX(r->copy_threads / active, 1u);
    if (!d.mapped) /* the writes of one file take its lock in turn */
        want = WH_MIN(want, r->put_threads * WH_MAX(d.nstripes, 1u));
    want = (unsigned)WH_MIN(WH_MIN((uint64_t)want, (uint64_t)cap),
                            WH_MIN(d.nwin, (uint64_t)RDMA_DIRECT_MAX_THREADS));
    if (want == 0) /* the request holds at least one slot and two windows: never, but bound it */
        want = 1;
    put_worker_t pw[RDMA_DIRECT_MAX_THREADS];
    for (unsigned i = 0; i < want; i++) {
        pw[i].d = &d;
        pw[i].piece = d.mapped ? NULL
                               : rdma_pool_buf(r, t->late->idx[i / per_slot]) +
                                     (size_t)(i % per_slot) * d.group;
    }
    pthread_t th[RDMA_DIRECT_MAX_THREADS];
    unsigned nth = 0;
    for (unsigned i = 1; i < want; i++)
        if (pthread_create(&th[nth], NULL, put_par_worker, &pw[i]) == 0)
            nth++;
    put_par_worker(&pw[0]);
    for (unsigned i = 0; i < nth; i++)
        pthread_join(th[i], NULL);
    __atomic_sub_fetch(&r->direct_active, 1, __ATOMIC_ACQ_REL);
    *moved = d.moved;
    *sink_st = d.sink_st;
    wh_status_t st = d.sink_st != WH_OK ? d.sink_st : d.st;
    if (st == WH_OK && d.moved != d.len)
        st = WH_ERR_TRANSPORT;
    if (st == WH_OK) {
        uint64_t c = d.nwin ? d.crc[0] : 0;
        uint32_t c32 = d.crc32c && d.nwin ? d.crc32c[0] : 0;
        for (uint64_t k = 1; k < d.nwin; k++) {
            uint64_t n = WH_MIN((uint64_t)RDMA_DIRECT_WINDOW, d.len - k * RDMA_DIRECT_WINDOW);
            c = n == RDMA_DIRECT_WINDOW ? wh_crc64nvme_shift_combine(&r->direct_shift, c, d.crc[k])
                                        : wh_crc64nvme_combine(c, d.crc[k], n);
            if (d.crc32c)
                c32 = wh_crc32c_combine(c32, d.crc32c[k], n);
        }
        res->crc64nvme = c;
        res->crc32c = c32;
        res->crc32c_set = d.crc32c != NULL;
        res->positional = true;
        atomic_fetch_add(&r->put_at_ops, 1);
        atomic_fetch_add(&r->put_at_bytes, d.len);
        if (d.mapped) {
            atomic_fetch_add(&r->put_mapped_ops, 1);
            atomic_fetch_add(&r->put_mapped_bytes, d.len);
        }
        if (d.group > PUT_PIECE) {
            atomic_fetch_add(&r->put_paged_ops, 1);
            atomic_fetch_add(&r->put_paged_bytes, d.len);
        }
        if (d.nstripes > 1) {
            atomic_fetch_add(&r->put_striped_ops, 1);
            atomic_fetch_add(&r->put_striped_bytes, d.len);
            atomic_fetch_add(&r->put_striped_files, d.nstripes);
        }
    }
    free(d.crc);
    free(d.crc32c);
    return st;
}

wh_status_t rdma_put_tok(rdma_t *r, const xfer_token_arg_t *token, const wh_peer_t *peer,
                         rdma_sink_cb sink, void *arg, rdma_result_t *res)
{
    return rdma_put_at(r, token, peer, sink, NULL, arg, res);
}

wh_status_t rdma_put_at(rdma_t *r, const xfer_token_arg_t *token, const wh_peer_t *peer,
                        rdma_sink_cb sink, const rdma_sink_at_t *at, void *arg, rdma_result_t *res)
{
    rdma_xfer_t t;
    wh_status_t st = WH_OK;
    if (!rdma_vet(r, token, peer, 0, &t, res)) {
        rdma_end(&t);
        return res->http_status == 501 ? WH_ERR_DECLINED : WH_ERR_INVALID;
    }
    rdma_prov_t *p = t.p;
    uint64_t len = t.tok.size, chunk = r->buf_len;
    uint64_t nchunks = (len + chunk - 1) / chunk;
    unsigned want = (unsigned)WH_MIN(nchunks ? nchunks : 1, (uint64_t)r->cfg.window + 1);
    if (!(t.late = calloc(1, sizeof *t.late))) {
        rdma_end(&t);
        rdma_res_set(res, 500, "InternalError", "out of memory");
        return WH_ERR_NOMEM;
    }
    t.late->r = r;
    t.late->peer_key = rdma_peer_key(&t.tok);
    if (rdma_pool_take(r, t.late, want, res) == 0) {
        rdma_end(&t);
        return WH_ERR_BUSY;
    }
    if ((st = rdma_begin(&t, peer, res)) != WH_OK) {
        rdma_end(&t);
        return st;
    }
    xfer_batch_t *b = t.b;
    rdma_late_t *late = t.late;
    unsigned nslots = late->n;
    uint64_t crc = 0, sunk = 0, next_sink = 0;
    wh_status_t sink_st = WH_OK;
    bool positional = false;
    if (at && xfer_batch_direct(b) && len >= 2 * (uint64_t)RDMA_DIRECT_WINDOW) {
        sink_st = at->begin(arg, len);
        if (sink_st == WH_OK) {
            positional = true;
            st = put_par_run(&t, at, arg, &sunk, &sink_st, res);
            if (st == WH_OK)
                crc = res->crc64nvme;
            next_sink = nchunks;
            nchunks = 0;
        } else if (sink_st == WH_ERR_UNSUPPORTED) {
            sink_st = WH_OK;
        } else {
            st = sink_st;
            next_sink = nchunks;
            nchunks = 0;
        }
    }
    if (positional || st != WH_OK) {
        /* done above */
    } else if (xfer_batch_direct(b) && nchunks > 1 && nslots > 1) {
        put_direct_t d = {.r = r,
                          .mr = t.g->mr,
                          .b = b,
                          .late = late,
                          .len = len,
                          .chunk = chunk,
                          .nchunks = nchunks,
                          .nslots = nslots};
        st = put_direct_run(&d, sink, arg, &crc, &sunk, &sink_st);
        next_sink = nchunks; /* skip the loop below */
        nchunks = 0;
    }
    /* Post reads for chunks [next_sink, next_sink + nslots) ahead; sink the oldest in order. */
    for (uint64_t k = 0; k < nchunks || next_sink < nchunks;) {
        if (k < nchunks && k - next_sink < nslots) {
            unsigned s = (unsigned)(k % nslots);
            size_t n = (size_t)WH_MIN(chunk, len - k * chunk);
            if ((st = xfer_batch_post(b, XFER_OP_READ, t.g->mr, rdma_pool_buf(r, late->idx[s]), n,
                                      k * chunk, s)) != WH_OK)
                break;
            k++;
            continue;
        }
        /* nslots >= 1: when rdma_pool_take gives 0 slots this returns BUSY above */
        /* NOLINTNEXTLINE(clang-analyzer-core.DivideZero) */
        unsigned s = (unsigned)(next_sink % nslots);
        size_t n = (size_t)WH_MIN(chunk, len - next_sink * chunk);
        if ((st = xfer_batch_wait(b, s)) != WH_OK)
            break;
        const uint8_t *q = rdma_pool_buf(r, late->idx[s]);
        crc = wh_crc64nvme(crc, q, n);
        if ((sink_st = sink(arg, q, n)) != WH_OK) {
            st = sink_st;
            break;
        }
        sunk += n;
        next_sink++;
    }
    if (st == WH_OK && sunk == len) {
        res->http_status = 200;
        res->bytes = sunk;
        res->crc64nvme = crc;
        atomic_fetch_add(&p->read_bytes, sunk);
        atomic_fetch_add(&p->read_ops, 1);
    } else {
        if (sink_st != WH_OK)
            rdma_res_set(res, s3_err_http_status(s3_err_from_status(sink_st)),
                         s3_err_code(s3_err_from_status(sink_st)), "storing the object failed: %s",
                         wh_status_str(sink_st));
        else {
            char why[256];
            rdma_fail_transfer(res, st == WH_OK ? WH_ERR_TRANSPORT : st,
                               xfer_batch_error(b, why, sizeof why));
        }
        if (st == WH_OK)
            st = WH_ERR_TRANSPORT;
        res->bytes = sunk;
        atomic_fetch_add(&p->read_fail, 1);
        wh_warn(MOD, "rdma put failed provider=%s stored=%" PRIu64 " of=%" PRIu64 " reason='%s'",
                p->short_name, sunk, len, res->message);
    }
    rdma_end(&t);
    return st;
}
