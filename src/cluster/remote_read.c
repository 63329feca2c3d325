/* The remote data table's readers (see remote.h): sequential HTTP reads with read-ahead of
 * whole chunks from one live replica each, ranged reads, and delegated RDMA GETs (a sub-token
 * per chunk, each written by a storage server, crcs combined in order). Split from remote.c,
 * which keeps the writers and the table. */
#include "base/crc.h"
#include "base/log.h"
#include "cluster/remote_int.h"
#include "xfer/token.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MOD "remote"

wh_status_t cl_rr_open(store_data_t *d, const store_data_ref_t *ref, uint64_t size,
                       store_reader_t **out)
{
    rr_t *q = calloc(1, sizeof *q);
    if (!q)
        return WH_ERR_NOMEM;
    q->base.data = d;
    q->base.size = size;
    q->r = (cl_remote_t *)d;
    q->last = -2;
    for (int i = 0; i < READ_AHEAD; i++)
        q->slot[i].idx = -1;
    wh_status_t st = store_data_ref_copy(&q->ref, ref);
    if (st != WH_OK) {
        free(q);
        return st;
    }
    *out = &q->base;
    return WH_OK;
}

void cl_rr_close(store_reader_t *br)
{
    rr_t *q = (rr_t *)br;
    if (!q)
        return;
    for (int i = 0; i < READ_AHEAD; i++)
        free(q->slot[i].buf);
    store_data_ref_clear(&q->ref);
    free(q);
}

/* Index of the chunk holding object offset off (chunks are in offset order). */
int64_t cl_chunk_at(const store_data_ref_t *ref, uint64_t off)
{
    size_t lo = 0, hi = ref->n_chunks;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const store_chunk_t *c = &ref->chunks[mid];
        if (off < c->offset)
            hi = mid;
        else if (off >= c->offset + c->length)
            lo = mid + 1;
        else
            return (int64_t)mid;
    }
    return -1;
}

static rr_slot_t *slot_of(rr_t *q, int64_t idx)
{
    for (int i = 0; i < READ_AHEAD; i++)
        if (q->slot[i].idx == idx)
            return &q->slot[i];
    return NULL;
}

/* Fetches chunks [k, k+n) that are not cached into free (least recently used) slots. */
static wh_status_t rr_fetch(rr_t *q, int64_t k, int n)
{
    cl_remote_t *r = q->r;
    cl_job_t jobs[READ_AHEAD];
    rr_slot_t *dst[READ_AHEAD];
    int64_t idx[READ_AHEAD];
    int nj = 0;
    memset(jobs, 0, sizeof jobs);
    for (int i = 0; i < n && k + i < (int64_t)q->ref.n_chunks; i++) {
        if (slot_of(q, k + i))
            continue;
        rr_slot_t *s = NULL;
        for (int j = 0; j < READ_AHEAD; j++) {
            rr_slot_t *c = &q->slot[j];
            bool busy = false;
            for (int t = 0; t < nj; t++)
                busy |= dst[t] == c;
            if (busy || (c->idx >= k && c->idx < k + n && c->idx >= 0))
                continue;
            if (!s || c->idx < 0 || (s->idx >= 0 && c->used < s->used))
                s = c;
        }
        if (!s)
            break;
        const store_chunk_t *c = &q->ref.chunks[k + i];
        if (s->len < c->length || !s->buf) {
            free(s->buf);
            s->buf = malloc(c->length ? c->length : 1);
            s->len = s->buf ? c->length : 0;
            if (!s->buf)
                return WH_ERR_NOMEM;
        }
        s->idx = -1;
        cl_job_t *j = &jobs[nj];
        j->op = CL_OP_GET;
        j->chunk = c->id;
        j->off = 0;
        j->len = c->length;
        j->dst = s->buf;
        j->check_crc = true;
        j->expect_crc = c->crc64nvme;
        j->hedge = true; /* a late replica costs its hedge deadline, not its whole bound */
        cl_members_for_read(r, c, j);
        idx[nj] = k + i;
        dst[nj++] = s;
    }
    if (!nj)
        return WH_OK;
    wh_peer_t peer = cl_peer_of(NULL);
    wh_status_t st = cl_client_run(r->client, jobs, (size_t)nj, r->cfg.parallel, &peer);
    for (int i = 0; i < nj; i++) {
        if (jobs[i].st == WH_OK) {
            dst[i]->idx = idx[i];
            atomic_fetch_add(&r->chunks_got, 1);
            atomic_fetch_add(&r->bytes_got, jobs[i].len);
        } else if (i == 0 || st == WH_OK) {
            wh_warn(MOD, "chunk unavailable chunk=%s reason='%s'", jobs[i].chunk, jobs[i].err);
        }
    }
    cl_jobs_free_cands(jobs, (size_t)nj);
    if (st != WH_OK) {
        atomic_fetch_add(&r->unavailable, 1);
        return WH_ERR_UNAVAILABLE;
    }
    return WH_OK;
}

wh_status_t cl_rr_pread(store_reader_t *br, void *buf, size_t n, uint64_t off)
{
    rr_t *q = (rr_t *)br;
    if (off > q->base.size || n > q->base.size - off)
        return WH_ERR_RANGE;
    uint8_t *p = buf;
    while (n) {
        int64_t k = cl_chunk_at(&q->ref, off);
        if (k < 0)
            return WH_ERR_INTERNAL; /* the chunk map does not cover the object */
        rr_slot_t *s = slot_of(q, k);
        if (!s) {
            /* Sequential reading fetches READ_AHEAD chunks at once; a jump fetches one. */
            bool seq = k == q->last + 1 || k == q->last;
            wh_status_t st = rr_fetch(q, k, seq ? READ_AHEAD : 1);
            if (st != WH_OK)
                return st;
            if (!(s = slot_of(q, k)))
                return WH_ERR_UNAVAILABLE;
        }
        const store_chunk_t *c = &q->ref.chunks[k];
        uint64_t in = off - c->offset;
        size_t m = (size_t)WH_MIN((uint64_t)n, c->length - in);
        memcpy(p, s->buf + in, m);
        s->used = ++q->stamp;
        q->last = k;
        p += m;
        off += m;
        n -= m;
    }
    return WH_OK;
}

/* Before a streamed reply's header (store_reader_prepare). A chunk of the range whose every
 * replica is on a storage server with a stale heartbeat cannot be read now: that is a 503
 * before the header, not a 200 whose body stops at that chunk. The first chunks are fetched
 * here (the first body read would fetch them anyway), so a reply whose first bytes cannot be
 * read is a 503 too. A replica that fails later, mid-stream, still cuts the body short: the
 * connection is then closed before Content-Length bytes (srv_reader_response). */
wh_status_t cl_rr_prepare(store_reader_t *br, uint64_t off, uint64_t len, char *msg, size_t msglen)
{
    rr_t *q = (rr_t *)br;
    int64_t k0 = cl_chunk_at(&q->ref, off), k1 = cl_chunk_at(&q->ref, off + len - 1);
    if (k0 < 0 || k1 < k0)
        return WH_ERR_INTERNAL; /* the chunk map does not cover the object */
    for (int64_t k = k0; k <= k1; k++) {
        const store_chunk_t *c = &q->ref.chunks[k];
        if (!cl_members_can_read(q->r, c)) {
            cl_msg(msg, msglen,
                   "chunk %s (object bytes %" PRIu64 "-%" PRIu64 ") has no replica on a "
                   "storage server that is up; retry later",
                   c->id, c->offset, c->offset + c->length - 1);
            atomic_fetch_add(&q->r->unavailable, 1);
            return WH_ERR_UNAVAILABLE;
        }
    }
    int n = (int)WH_MIN((int64_t)READ_AHEAD, k1 - k0 + 1);
    wh_status_t st = rr_fetch(q, k0, n);
    if (st != WH_OK) {
        cl_msg(msg, msglen,
               "the object's bytes from %" PRIu64 " could not be read from any replica; retry "
               "later",
               off);
        return st;
    }
    return WH_OK;
}

/* RDMA GET: one live replica per chunk writes its piece into the client's region. */
wh_status_t cl_rr_rdma_get(store_reader_t *br, const token_arg_t *token, const wh_peer_t *speer,
                           uint64_t off, uint64_t len, store_rdma_result_t *res)
{
    rr_t *q = (rr_t *)br;
    cl_remote_t *r = q->r;
    memset(res, 0, sizeof *res);
    wh_status_t st = token->st;
    if (st != WH_OK) {
        cl_msg(res->message, sizeof res->message, "x-amz-rdma-token: %s", token->err);
        return st;
    }
    const token_t *tok = &token->tok;
    if (tok->dialect != TOKEN_DIALECT_OFI1) {
        cl_msg(res->message, sizeof res->message,
               "the cluster's storage servers take ofi1 tokens only");
        return WH_ERR_DECLINED;
    }
    if (tok->size < len || off > q->base.size || len > q->base.size - off) {
        cl_msg(res->message, sizeof res->message, "range does not fit the token or the object");
        return WH_ERR_INVALID;
    }
    if (len == 0)
        return WH_OK;
    int64_t k0 = cl_chunk_at(&q->ref, off), k1 = cl_chunk_at(&q->ref, off + len - 1);
    if (k0 < 0 || k1 < k0)
        return WH_ERR_INTERNAL;
    size_t nj = (size_t)(k1 - k0 + 1);
    cl_job_t *jobs = calloc(nj, sizeof *jobs);
    if (!jobs)
        return WH_ERR_NOMEM;
    for (size_t i = 0; i < nj && st == WH_OK; i++) {
        const store_chunk_t *c = &q->ref.chunks[k0 + (int64_t)i];
        uint64_t a = WH_MAX(off, c->offset), b = WH_MIN(off + len, c->offset + c->length);
        cl_job_t *j = &jobs[i];
        j->op = CL_OP_RGET;
        j->chunk = c->id;
        j->off = a - c->offset;
        j->len = b - a;
        /* A whole chunk is checked against the map's crc (a damaged copy is retried). */
        j->check_crc = j->off == 0 && j->len == c->length;
        j->expect_crc = c->crc64nvme;
        st = token_pack_ofi1(tok->base + (a - off), b - a, tok->provider, tok->ep_name,
                             tok->ep_name_len, tok->key, j->mtok, sizeof j->mtok);
        cl_members_for_read(r, c, j);
    }
    wh_peer_t peer = cl_peer_of(speer);
    if (st == WH_OK)
        st = cl_client_run(r->client, jobs, nj, r->cfg.parallel, &peer);
    uint64_t crc = 0;
    if (st == WH_OK) {
        for (size_t i = 0; i < nj; i++)
            crc = i ? wh_crc64nvme_combine(crc, jobs[i].crc, jobs[i].len) : jobs[i].crc;
        res->bytes = len;
        res->crc64nvme = crc;
        atomic_fetch_add(&r->chunks_got, nj);
    } else {
        for (size_t i = 0; i < nj; i++)
            if (jobs[i].st != WH_OK) {
                cl_msg(res->message, sizeof res->message,
                       "chunk %s (object bytes %" PRIu64 "-%" PRIu64 ") is unavailable: %s",
                       jobs[i].chunk, q->ref.chunks[k0 + (int64_t)i].offset,
                       q->ref.chunks[k0 + (int64_t)i].offset +
                           q->ref.chunks[k0 + (int64_t)i].length - 1,
                       jobs[i].err[0] ? jobs[i].err : "no replica is up");
                break;
            }
        atomic_fetch_add(&r->unavailable, 1);
        if (st != WH_ERR_AUTH && st != WH_ERR_INVALID)
            st = WH_ERR_UNAVAILABLE;
    }
    cl_jobs_free_cands(jobs, nj);
    free(jobs);
    return st;
}
