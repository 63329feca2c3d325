/* RDMA PUT/UploadPart: reads the token's whole region in chunks and passes it, in order, to
 * the caller's sink. */
#include "engine/rdma_int.h"
#include "s3/errors.h"
#include "base/log.h"
#include "base/util.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* Bound shm (direct) PUT: posts are synchronous copies, so a reader thread pulls chunk k+1
 * from the client (process_vm_readv into a pool buffer) while the request thread checksums and
 * sinks chunk k into the store; without it the two alternated on one core. */
typedef struct put_direct {
    srv_rdma_t *r;
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
static wh_status_t put_direct_run(put_direct_t *d, srv_rdma_sink_cb sink, void *arg, uint64_t *crc,
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

wh_status_t srv_rdma_put_tok(srv_rdma_t *r, const token_arg_t *token, const wh_peer_t *peer,
                             srv_rdma_sink_cb sink, void *arg, srv_rdma_result_t *res)
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
    if (xfer_batch_direct(b) && nchunks > 1 && nslots > 1) {
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
        else
            rdma_fail_transfer(res, st == WH_OK ? WH_ERR_TRANSPORT : st, xfer_batch_error(b));
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
