/* SPDX-License-Identifier: Apache-2.0 */
/* The remote data table's readers (see remote.h): sequential HTTP reads with read-ahead of
 * whole chunks from one live replica each, ranged reads, and delegated RDMA GETs (a sub-token
 * per chunk, each written by a storage server, crcs combined in order). Split from remote.c,
 * which keeps the writers and the table. */
#include "base/crc.h"
#include "base/log.h"
#include "cluster/ec.h"
#include "cluster/remote_int.h"
#include "xfer/token.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MOD "remote"

wh_status_t cl_rr_open(data_table_t *d, const data_ref_t *ref, uint64_t size, data_reader_t **out)
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
    wh_status_t st = data_ref_copy(&q->ref, ref);
    if (st != WH_OK) {
        free(q);
        return st;
    }
    /* An erasure-coded stripe is k + m consecutive rows, shards 0.. in order, one range. */
    for (size_t i = 0; i < q->ref.n_chunks;) {
        const data_chunk_t *c = &q->ref.chunks[i];
        size_t n = c->ec_k ? c->ec_k + c->ec_m : 1;
        bool ok = !c->ec_k || (c->ec_m >= 1 && n <= CL_EC_MAX && i + n <= q->ref.n_chunks);
        for (size_t t = 0; ok && c->ec_k && t < n; t++) {
            const data_chunk_t *e = &q->ref.chunks[i + t];
            ok = e->ec_k == c->ec_k && e->ec_m == c->ec_m && e->ec_index == t &&
                 e->offset == c->offset && e->length == c->length;
        }
        if (!ok) {
            wh_error(MOD, "data %s: a malformed erasure-coded stripe at row %zu", ref->id, i);
            cl_rr_close(&q->base);
            return WH_ERR_INTERNAL;
        }
        i += n;
    }
    *out = &q->base;
    return WH_OK;
}

void cl_rr_close(data_reader_t *br)
{
    rr_t *q = (rr_t *)br;
    if (!q)
        return;
    for (int i = 0; i < READ_AHEAD; i++)
        free(q->slot[i].buf);
    data_ref_clear(&q->ref);
    free(q);
}

/* Index of the chunk holding object offset off (chunks are in offset order). */
int64_t cl_chunk_at(const data_ref_t *ref, uint64_t off)
{
    size_t lo = 0, hi = ref->n_chunks;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const data_chunk_t *c = &ref->chunks[mid];
        if (off < c->offset)
            hi = mid;
        else if (off >= c->offset + c->length)
            lo = mid + 1;
        else
            return (int64_t)(mid - (c->ec_k ? WH_MIN((size_t)c->ec_index, mid) : 0));
    }
    return -1;
}

size_t cl_unit_rows(const data_ref_t *ref, int64_t k)
{
    const data_chunk_t *c = &ref->chunks[k];
    return c->ec_k ? c->ec_k + c->ec_m : 1;
}

unsigned cl_ec_fetch(cl_remote_t *r, const data_chunk_t *rows, int skip, uint8_t *const *shards,
                     bool *good)
{
    unsigned k = rows[0].ec_k, n = k + rows[0].ec_m;
    uint64_t slen = cl_ec_shard_len(rows[0].length, k);
    bool tried[CL_EC_MAX] = {0};
    for (unsigned i = 0; i < n; i++)
        good[i] = false;
    if (skip >= 0 && skip < (int)n)
        tried[skip] = true;
    /* first round: the data shards whose servers are up, then parity for the ones that are
     * not; second round: every shard not tried yet */
    unsigned have = 0;
    wh_peer_t peer = cl_peer_of(NULL);
    for (int round = 0; round < 2 && have < k; round++) {
        cl_job_t jobs[CL_EC_MAX];
        unsigned idx[CL_EC_MAX], nj = 0, want = k - have;
        memset(jobs, 0, sizeof jobs);
        for (unsigned i = 0; i < n && (round == 1 || nj < want); i++) {
            if (tried[i] || (round == 0 && !cl_members_can_read(r, &rows[i])))
                continue;
            cl_job_t *j = &jobs[nj];
            j->op = CL_OP_GET;
            j->chunk = rows[i].id;
            j->len = slen;
            j->dst = shards[i];
            j->check_crc = true;
            j->expect_crc = rows[i].crc64nvme;
            cl_members_for_read(r, &rows[i], j);
            tried[i] = true;
            idx[nj++] = i;
        }
        if (!nj)
            continue;
        cl_client_run(r->client, jobs, nj, r->cfg.parallel, &peer);
        for (unsigned t = 0; t < nj; t++) {
            if (jobs[t].st == WH_OK) {
                good[idx[t]] = true;
                have++;
                continue;
            }
            wh_warn(MOD, "shard unavailable chunk=%s shard=%u of %u+%u reason='%s'", jobs[t].chunk,
                    idx[t], k, n - k, jobs[t].err);
            /* bytes that arrived but are not the map's: that copy is damaged (a copy that
             * failed its own check on the server was reported by that server) */
            if (strstr(jobs[t].err, "differs from the chunk map") && rows[idx[t]].n_replicas)
                meta_damage_report(r->cfg.meta, rows[idx[t]].replicas[0], rows[idx[t]].id);
        }
        cl_jobs_free_cands(jobs, nj);
    }
    return have;
}

wh_status_t cl_ec_read_stripe(cl_remote_t *r, const data_chunk_t *rows, uint8_t *out, char *msg,
                              size_t msglen)
{
    unsigned k = rows[0].ec_k, n = k + rows[0].ec_m;
    uint64_t slen = cl_ec_shard_len(rows[0].length, k);
    if (!rows[0].length)
        return WH_OK;
    uint8_t *sh = malloc((size_t)(slen * n));
    if (!sh)
        return WH_ERR_NOMEM;
    uint8_t *shards[CL_EC_MAX];
    bool good[CL_EC_MAX];
    for (unsigned i = 0; i < n; i++)
        shards[i] = sh + (size_t)i * slen;
    unsigned have = cl_ec_fetch(r, rows, -1, shards, good);
    wh_status_t st = WH_OK;
    if (have < k) {
        cl_msg(msg, msglen,
               "erasure-coded chunk (object bytes %" PRIu64 "-%" PRIu64 "): %u of %u+%u "
               "shards readable, %u needed",
               rows[0].offset, rows[0].offset + rows[0].length - 1, have, k, n - k, k);
        st = WH_ERR_UNAVAILABLE;
    } else {
        bool whole = true;
        for (unsigned i = 0; i < k; i++)
            whole &= good[i];
        if (!whole) {
            st = cl_ec_decode(k, n - k, slen, shards, good);
            atomic_fetch_add(&r->ec_decodes, 1);
        }
        if (st == WH_OK)
            memcpy(out, sh, (size_t)rows[0].length); /* the data shards are contiguous */
    }
    free(sh);
    return st;
}

static rr_slot_t *slot_of(rr_t *q, int64_t idx)
{
    for (int i = 0; i < READ_AHEAD; i++)
        if (q->slot[i].idx == idx)
            return &q->slot[i];
    return NULL;
}

/* Fetches the n units (chunks or erasure-coded stripes) from row k on that are not cached
 * into free (least recently used) slots. */
static wh_status_t rr_fetch(rr_t *q, int64_t k, int n)
{
    cl_remote_t *r = q->r;
    cl_job_t jobs[READ_AHEAD];
    rr_slot_t *dst[READ_AHEAD];
    int64_t idx[READ_AHEAD], units[READ_AHEAD];
    int nj = 0, nu = 0;
    memset(jobs, 0, sizeof jobs);
    for (int64_t u = k; nu < n && u < (int64_t)q->ref.n_chunks;
         u += (int64_t)cl_unit_rows(&q->ref, u))
        units[nu++] = u;
    wh_status_t est = WH_OK;
    for (int i = 0; i < nu; i++) {
        if (slot_of(q, units[i]))
            continue;
        rr_slot_t *s = NULL;
        for (int j = 0; j < READ_AHEAD; j++) {
            rr_slot_t *c = &q->slot[j];
            bool busy = false;
            for (int t = 0; t < nj; t++)
                busy |= dst[t] == c;
            for (int t = 0; t < nu && c->idx >= 0; t++)
                busy |= c->idx == units[t];
            if (busy)
                continue;
            if (!s || c->idx < 0 || (s->idx >= 0 && c->used < s->used))
                s = c;
        }
        if (!s)
            break;
        const data_chunk_t *c = &q->ref.chunks[units[i]];
        if (s->len < c->length || !s->buf) {
            free(s->buf);
            s->buf = malloc(c->length ? c->length : 1);
            s->len = s->buf ? c->length : 0;
            if (!s->buf)
                return WH_ERR_NOMEM;
        }
        s->idx = -1;
        if (c->ec_k) {
            /* a stripe: its shards (decoded if need be), read here */
            char msg[256];
            wh_status_t st = cl_ec_read_stripe(r, c, s->buf, msg, sizeof msg);
            if (st == WH_OK) {
                s->idx = units[i];
                s->used = ++q->stamp;
                atomic_fetch_add(&r->chunks_got, 1);
                atomic_fetch_add(&r->bytes_got, c->length);
            } else {
                wh_warn(MOD, "stripe unavailable: %s", msg);
                if (i == 0 && est == WH_OK)
                    est = st;
            }
            continue;
        }
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
        idx[nj] = units[i];
        dst[nj++] = s;
    }
    if (est != WH_OK) {
        cl_jobs_free_cands(jobs, (size_t)nj);
        atomic_fetch_add(&r->unavailable, 1);
        return WH_ERR_UNAVAILABLE;
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

wh_status_t cl_rr_pread(data_reader_t *br, void *buf, size_t n, uint64_t off)
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
            bool seq = k == q->last ||
                       (q->last >= 0 && k == q->last + (int64_t)cl_unit_rows(&q->ref, q->last));
            wh_status_t st = rr_fetch(q, k, seq ? READ_AHEAD : 1);
            if (st != WH_OK)
                return st;
            if (!(s = slot_of(q, k)))
                return WH_ERR_UNAVAILABLE;
        }
        const data_chunk_t *c = &q->ref.chunks[k];
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
 * connection is then closed before Content-Length bytes (s3api_reader_response). */
wh_status_t cl_rr_prepare(data_reader_t *br, uint64_t off, uint64_t len, char *msg, size_t msglen)
{
    rr_t *q = (rr_t *)br;
    int64_t k0 = cl_chunk_at(&q->ref, off), k1 = cl_chunk_at(&q->ref, off + len - 1);
    if (k0 < 0 || k1 < k0)
        return WH_ERR_INTERNAL; /* the chunk map does not cover the object */
    int units = 0;
    for (int64_t k = k0; k <= k1; k += (int64_t)cl_unit_rows(&q->ref, k), units++) {
        const data_chunk_t *c = &q->ref.chunks[k];
        if (c->ec_k) {
            unsigned up = 0;
            for (unsigned t = 0; t < c->ec_k + c->ec_m; t++)
                up += cl_members_can_read(q->r, &c[t]);
            if (up < c->ec_k) {
                cl_msg(msg, msglen,
                       "erasure-coded chunk (object bytes %" PRIu64 "-%" PRIu64 "): %u of "
                       "%u+%u shards on storage servers that are up, %u needed; retry later",
                       c->offset, c->offset + c->length - 1, up, c->ec_k, c->ec_m, c->ec_k);
                atomic_fetch_add(&q->r->unavailable, 1);
                return WH_ERR_UNAVAILABLE;
            }
            continue;
        }
        if (!cl_members_can_read(q->r, c)) {
            cl_msg(msg, msglen,
                   "chunk %s (object bytes %" PRIu64 "-%" PRIu64 ") has no replica on a "
                   "storage server that is up; retry later",
                   c->id, c->offset, c->offset + c->length - 1);
            atomic_fetch_add(&q->r->unavailable, 1);
            return WH_ERR_UNAVAILABLE;
        }
    }
    int n = WH_MIN(READ_AHEAD, units);
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

/* A healthy RDMA GET's jobs for the data shards of stripes that failed (a server that
 * refused or vanished, a copy found damaged as it was sent): each slice is done again as an
 * rdec, rebuilt by another storage server of its stripe without the shards whose reads
 * failed; it overwrites whatever the failed write left in the client's memory. The rdec
 * takes the failed job's place (same slice, same length), so the crcs still combine in
 * order. Returns WH_OK when every job is now done. */
static wh_status_t retry_rdec_rdma(cl_remote_t *r, cl_job_t *jobs, const data_chunk_t **of,
                                   const uint64_t *at, size_t nj, const xfer_token_t *tok,
                                   uint64_t off, const wh_peer_t *peer, char *msg, size_t msglen)
{
    size_t nf = 0;
    for (size_t i = 0; i < nj; i++)
        nf += jobs[i].st != WH_OK && of[i]->ec_k && jobs[i].op == CL_OP_RGET &&
              jobs[i].st != WH_ERR_AUTH && jobs[i].st != WH_ERR_INVALID;
    if (!nf)
        return WH_ERR_UNAVAILABLE;
    cl_job_t *fb = calloc(nf, sizeof *fb);
    size_t *pos = calloc(nf, sizeof *pos);
    if (!fb || !pos) {
        free(fb);
        free(pos);
        return WH_ERR_NOMEM;
    }
    wh_status_t st = WH_OK;
    size_t m = 0;
    for (size_t i = 0; i < nj && st == WH_OK; i++) {
        const data_chunk_t *c = of[i];
        if (jobs[i].st == WH_OK || !c->ec_k || jobs[i].op != CL_OP_RGET ||
            jobs[i].st == WH_ERR_AUTH || jobs[i].st == WH_ERR_INVALID)
            continue;
        bool skip[CL_EC_MAX] = {0};
        for (size_t t = 0; t < nj; t++)
            for (unsigned x = 0; of[t] == c && jobs[t].st != WH_OK && x < c->ec_k; x++)
                skip[x] |= jobs[t].chunk == c[x].id;
        wh_warn(MOD,
                "rdma: shard %s (object bytes %" PRIu64 "-%" PRIu64 ") failed (%s): its slice "
                "is rebuilt at another storage server of the stripe",
                jobs[i].chunk, c->offset, c->offset + c->length - 1, jobs[i].err);
        uint64_t sa = at[i] - c->offset;
        st = cl_rdec_job(r, c, skip, sa, sa + jobs[i].len, tok, tok->base + (at[i] - off), &fb[m],
                         msg, msglen);
        pos[m++] = i;
    }
    if (st == WH_OK)
        cl_client_run(r->client, fb, m, r->cfg.parallel, peer);
    for (size_t t = 0; t < m; t++) {
        if (st != WH_OK) {
            cl_jobs_free_cands(&fb[t], 1);
            continue;
        }
        /* the rdec takes the failed job's place (its outcome, its message) */
        cl_jobs_free_cands(&jobs[pos[t]], 1);
        jobs[pos[t]] = fb[t];
    }
    free(fb);
    free(pos);
    if (st != WH_OK)
        return st;
    for (size_t i = 0; i < nj; i++)
        if (jobs[i].st != WH_OK)
            return WH_ERR_UNAVAILABLE;
    return WH_OK;
}

/* RDMA GET: one live replica per chunk writes its piece into the client's region; a stripe's
 * data shards each write their slice, or, when a data shard the range needs is on a server
 * that is down (or its write fails), one storage server of the stripe rebuilds the stripe's
 * slice and writes it (rdec: the gateway moves none of the bytes). */
wh_status_t cl_rr_rdma_get(data_reader_t *br, const xfer_token_arg_t *token, const wh_peer_t *speer,
                           uint64_t off, uint64_t len, data_rdma_result_t *res)
{
    rr_t *q = (rr_t *)br;
    cl_remote_t *r = q->r;
    memset(res, 0, sizeof *res);
    wh_status_t st = token->st;
    if (st != WH_OK) {
        cl_msg(res->message, sizeof res->message, "x-amz-rdma-token: %s", token->err);
        return st;
    }
    const xfer_token_t *tok = &token->tok;
    if (tok->dialect != XFER_TOKEN_DIALECT_OFI1) {
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
    size_t rows = (size_t)(k1 - k0) + cl_unit_rows(&q->ref, k1), nj = 0;
    cl_job_t *jobs = calloc(rows, sizeof *jobs);
    const data_chunk_t **of = calloc(rows, sizeof(const data_chunk_t *)); /* each job's unit */
    uint64_t *at = calloc(rows, sizeof *at); /* each job's first byte in the object */
    if (!jobs || !of || !at) {
        free(jobs);
        free(of);
        free(at);
        return WH_ERR_NOMEM;
    }
    for (int64_t u = k0; u <= k1 && st == WH_OK; u += (int64_t)cl_unit_rows(&q->ref, u)) {
        const data_chunk_t *c = &q->ref.chunks[u];
        uint64_t a = WH_MAX(off, c->offset), b = WH_MIN(off + len, c->offset + c->length);
        if (c->ec_k) {
            /* A stripe: each data shard's server writes its slice of [a, b) itself, while
             * every data shard it needs is on a server that is up; otherwise the slice is
             * rebuilt at one storage server of the stripe (never here: the gateway would
             * move the bytes). */
            uint64_t slen = cl_ec_shard_len(c->length, c->ec_k);
            bool degraded = false;
            for (unsigned i = 0; i < c->ec_k && !degraded; i++) {
                uint64_t sa = WH_MAX(a, c->offset + i * slen),
                         sb = WH_MIN(b, c->offset + (i + 1) * slen);
                degraded = sa < sb && !cl_members_can_read(r, &c[i]);
            }
            if (degraded) {
                of[nj] = c;
                at[nj] = a;
                st = cl_rdec_job(r, c, NULL, a - c->offset, b - c->offset, tok,
                                 tok->base + (a - off), &jobs[nj++], res->message,
                                 sizeof res->message);
                continue;
            }
            for (unsigned i = 0; i < c->ec_k && st == WH_OK; i++) {
                uint64_t sa = WH_MAX(a, c->offset + i * slen),
                         sb = WH_MIN(b, c->offset + (i + 1) * slen);
                if (sa >= sb)
                    continue;
                cl_job_t *j = &jobs[nj];
                of[nj] = c;
                at[nj++] = sa;
                j->op = CL_OP_RGET;
                j->chunk = c[i].id;
                j->off = sa - c->offset - i * slen;
                j->len = sb - sa;
                j->check_crc = false;    /* the server verifies its blocks as it sends them */
                j->has_chunk_crc = true; /* and serves only the shard the map has */
                j->chunk_crc = c[i].crc64nvme;
                st = xfer_token_pack_ofi1(tok->base + (sa - off), sb - sa, tok->provider,
                                          tok->ep_name, tok->ep_name_len, tok->key, j->mtok,
                                          sizeof j->mtok);
                cl_members_for_read(r, &c[i], j);
            }
            continue;
        }
        cl_job_t *j = &jobs[nj];
        of[nj] = c;
        at[nj++] = a;
        j->op = CL_OP_RGET;
        j->chunk = c->id;
        j->off = a - c->offset;
        j->len = b - a;
        /* A whole chunk is checked against the map's crc (a damaged copy is retried). */
        j->check_crc = j->off == 0 && j->len == c->length;
        j->expect_crc = c->crc64nvme;
        j->has_chunk_crc = true; /* a range too: served only from the chunk the map has */
        j->chunk_crc = c->crc64nvme;
        st = xfer_token_pack_ofi1(tok->base + (a - off), b - a, tok->provider, tok->ep_name,
                                  tok->ep_name_len, tok->key, j->mtok, sizeof j->mtok);
        cl_members_for_read(r, c, j);
    }
    wh_peer_t peer = cl_peer_of(speer);
    if (st != WH_OK) {
        /* fewer than K shards of a stripe up (503, as over HTTP), or a token that cannot be
         * narrowed: nothing was sent */
        if (!res->message[0])
            cl_msg(res->message, sizeof res->message,
                   "the memory token cannot be narrowed to the object's pieces");
        atomic_fetch_add(&r->unavailable, 1);
    } else {
        st = cl_client_run(r->client, jobs, nj, r->cfg.parallel, &peer);
        if (st != WH_OK && st != WH_ERR_AUTH)
            st = retry_rdec_rdma(r, jobs, of, at, nj, tok, off, &peer, res->message,
                                 sizeof res->message);
        for (size_t i = 0; i < nj; i++)
            if (jobs[i].op == CL_OP_RDEC && jobs[i].st == WH_OK)
                atomic_fetch_add(&r->ec_decodes, 1);
        if (st == WH_OK) {
            uint64_t crc = 0;
            for (size_t i = 0; i < nj; i++)
                crc = i ? wh_crc64nvme_combine(crc, jobs[i].crc, jobs[i].len) : jobs[i].crc;
            res->bytes = len;
            res->crc64nvme = crc;
            atomic_fetch_add(&r->chunks_got, nj);
        } else {
            /* the retry's own reason (fewer than K shards up) stands; else the first job's */
            for (size_t i = 0; i < nj && !res->message[0]; i++)
                if (jobs[i].st != WH_OK) {
                    const char *what = jobs[i].op == CL_OP_RDEC ? "stripe"
                                       : of[i]->ec_k            ? "shard"
                                                                : "chunk";
                    cl_msg(res->message, sizeof res->message,
                           "%s %s (object bytes %" PRIu64 "-%" PRIu64 ") is unavailable: %s", what,
                           jobs[i].chunk, of[i]->offset, of[i]->offset + of[i]->length - 1,
                           jobs[i].err[0] ? jobs[i].err : "no replica is up");
                    if (jobs[i].st == WH_ERR_AUTH || jobs[i].st == WH_ERR_INVALID)
                        st = jobs[i].st;
                    break;
                }
            atomic_fetch_add(&r->unavailable, 1);
            if (st != WH_ERR_AUTH && st != WH_ERR_INVALID)
                st = WH_ERR_UNAVAILABLE;
        }
    }
    cl_jobs_free_cands(jobs, nj);
    free(jobs);
    free(of);
    free(at);
    return st;
}
