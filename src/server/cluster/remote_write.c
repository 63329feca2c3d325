/* SPDX-License-Identifier: Apache-2.0 */
/* The remote data table's writers: chunks (replicated or erasure coded) written to storage
 * servers in placement order, by HTTP or by RDMA (the token handed on), with retries on spare
 * servers and the copies of a failed write deleted. */
#include "base/codec.h"
#include "base/crc.h"
#include "base/digest.h"
#include "base/log.h"
#include "cluster/ec.h"
#include "cluster/place.h"
#include "cluster/remote.h"
#include "cluster/remote_int.h"
#include "s3/tags.h"
#include "xfer/token.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MOD "remote"

/* ==== writers ============================================================================ */

typedef struct rw {
    data_writer_t base;
    cl_remote_t *r;
    char id[DATA_ID_LEN + 1];
    uint8_t *buf;
    size_t fill;
    uint64_t total;
    data_chunk_t *ch;
    size_t n, cap;
    unsigned k, m;    /* erasure coding of this writer's chunks (0, 0: replicas) */
    uint64_t stripes; /* EC stripes written (each stripe's ec_stripe) */
    wh_status_t failed;
    char err[256];
} rw_t;

static wh_status_t rw_push(rw_t *w, const data_chunk_t *c)
{
    if (w->n == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 16;
        data_chunk_t *v = realloc(w->ch, cap * sizeof *v);
        if (!v)
            return WH_ERR_NOMEM;
        w->ch = v;
        w->cap = cap;
    }
    w->ch[w->n++] = *c;
    return WH_OK;
}

/* Runs the writes of nchunks chunks, `per` replica jobs each (op, chunk, body or mtok set),
 * on distinct live servers in placement order. A replica that fails moves to a spare; after
 * the first round, a job still failing is retried (twice at most) on the best-ranked node that
 * neither it nor a sibling has used, so a dead server costs one retry, not the PUT. */
static wh_status_t place_and_run(cl_remote_t *r, cl_job_t *jobs, size_t per, size_t nchunks,
                                 const wh_peer_t *peer, char *err, size_t errlen)
{
    size_t total = nchunks * per;
    for (size_t k = 0; k < nchunks; k++) {
        size_t up = cl_members_for_write(r, jobs[k * per].chunk, (unsigned)per, &jobs[k * per]);
        if (up < per) {
            size_t live = cl_members_up(r);
            bool full = live >= per; /* enough servers up, too few with room */
            atomic_fetch_add(&r->unavailable, 1);
            if (full)
                cl_msg(err, errlen,
                       "chunk %s: %zu of %zu storage servers up have room for it"
                       " (each keeps %" PRIu64 " bytes free), %zu replicas wanted",
                       jobs[k * per].chunk, up, live, r->cfg.reserve_bytes, per);
            else
                cl_msg(err, errlen, "chunk %s: %zu storage servers up, %zu replicas wanted",
                       jobs[k * per].chunk, live, per);
            cl_jobs_free_cands(jobs, total);
            for (size_t i = 0; i < total; i++)
                jobs[i].st = WH_ERR_UNAVAILABLE; /* none of them ran */
            return full ? WH_ERR_NO_SPACE : WH_ERR_UNAVAILABLE;
        }
    }
    wh_status_t st = cl_record_intents(r, jobs, total);
    if (st != WH_OK) {
        cl_msg(err, errlen, "cannot record the chunk writes in the metadata database: %s",
               wh_status_str(st));
        cl_jobs_free_cands(jobs, total);
        for (size_t i = 0; i < total; i++)
            jobs[i].st = WH_ERR_UNAVAILABLE;
        return WH_ERR_UNAVAILABLE;
    }
    st = cl_client_run(r->client, jobs, total, r->cfg.parallel, peer);
    for (int round = 0; round < 2 && st != WH_OK && st != WH_ERR_AUTH && st != WH_ERR_INVALID;
         round++) {
        /* total > 0 here (no chunks, no
         * failed run); calloc(0) would only end the retries */
        /* NOLINTNEXTLINE(clang-analyzer-optin.portability.UnixAPI) */
        cl_job_t *again = calloc(total, sizeof *again);
        size_t *from = calloc(total, sizeof *from), na = 0;
        if (!again || !from) {
            free(again);
            free(from);
            break;
        }
        for (size_t i = 0; i < total; i++) {
            if (jobs[i].st == WH_OK)
                continue;
            size_t k = i / per, na0 = na;
            uint32_t ids[CL_PLACE_MAX];
            char addrs[CL_PLACE_MAX][256];
            size_t n = cl_members_rank(r, jobs[i].chunk, ids, addrs, CL_PLACE_MAX);
            for (size_t q = 0; q < n; q++) {
                bool taken = false;
                for (size_t s2 = k * per; s2 < (k + 1) * per; s2++) {
                    if (jobs[s2].st == WH_OK && jobs[s2].used_id == ids[q])
                        taken = true;
                    for (size_t c = 0; c < jobs[s2].ncand; c++)
                        taken |= s2 == i && jobs[s2].cand_id[c] == ids[q];
                }
                for (size_t a = 0; a < na; a++) /* a sibling's retry this round */
                    taken |= from[a] / per == k && again[a].cand_id[0] == ids[q];
                if (taken)
                    continue;
                again[na] = jobs[i];
                again[na].ncand = 0;
                if ((again[na].cand[0] = strdup(addrs[q])) != NULL) {
                    again[na].cand_id[0] = ids[q];
                    again[na].ncand = 1;
                    from[na++] = i;
                }
                break;
            }
            /* No other server: an HTTP write that timed out goes once more to the server it
             * timed out on, with the doubled bound (slow is not dead; a late end of its first
             * attempt stores the same bytes). Not RDMA: a timed-out pull may still read the
             * client's memory after the reply. */
            if (na == na0 && round == 0 && jobs[i].op == CL_OP_PUT && jobs[i].timed_out &&
                jobs[i].ncand) {
                size_t last = jobs[i].ncand - 1;
                again[na] = jobs[i];
                again[na].ncand = 0;
                if ((again[na].cand[0] = strdup(jobs[i].cand[last])) != NULL) {
                    again[na].cand_id[0] = jobs[i].cand_id[last];
                    again[na].ncand = 1;
                    from[na++] = i;
                }
            }
        }
        if (na == 0) {
            free(again);
            free(from);
            break;
        }
        wh_info(MOD, "retrying %zu chunk writes on other storage servers", na);
        atomic_fetch_add(&r->write_retries, na);
        if (cl_record_intents(r, again, na) != WH_OK) {
            for (size_t a = 0; a < na; a++)
                cl_jobs_free_cands(&again[a], 1);
            free(again);
            free(from);
            break;
        }
        cl_client_run(r->client, again, na, r->cfg.parallel, peer);
        st = WH_OK;
        for (size_t a = 0; a < na; a++) {
            cl_job_t *j = &jobs[from[a]];
            if (again[a].st == WH_OK) {
                cl_jobs_free_cands(j, 1);
                *j = again[a]; /* takes its candidate list */
                j->used = 0;
            } else {
                snprintf(j->err, sizeof j->err, "%s", again[a].err);
                cl_jobs_free_cands(&again[a], 1);
            }
        }
        for (size_t i = 0; i < total; i++)
            if (jobs[i].st != WH_OK && st == WH_OK)
                st = jobs[i].st;
        free(again);
        free(from);
    }
    if (st != WH_OK) {
        for (size_t i = 0; i < total; i++)
            if (jobs[i].st != WH_OK) {
                cl_msg(err, errlen, "chunk %s: no storage server took it: %s", jobs[i].chunk,
                       jobs[i].err);
                break;
            }
        atomic_fetch_add(&r->unavailable, 1);
        bool full = false; /* a copy no server could store: 507 from the last one tried */
        for (size_t i = 0; i < total; i++)
            full |= jobs[i].st != WH_OK && jobs[i].http == 507;
        if (st != WH_ERR_AUTH && st != WH_ERR_INVALID)
            st = full ? WH_ERR_NO_SPACE : WH_ERR_UNAVAILABLE;
    }
    return st;
}

/* Best effort: removes the chunk copies a failed or aborted write left behind. Whatever this
 * misses is not referenced by any row. */
static void delete_copies(cl_remote_t *r, const data_chunk_t *ch, size_t n)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += ch[i].n_replicas;
    if (!total)
        return;
    cl_job_t *jobs = calloc(total, sizeof *jobs);
    if (!jobs)
        return;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        for (uint32_t q = 0; q < ch[i].n_replicas; q++) {
            char a[256];
            jobs[k].op = CL_OP_DEL;
            jobs[k].chunk = ch[i].id;
            if (cl_members_addr(r, ch[i].replicas[q], a) && (jobs[k].cand[0] = strdup(a))) {
                jobs[k].cand_id[0] = ch[i].replicas[q];
                jobs[k].ncand = 1;
            }
            k++;
        }
    cl_client_run(r->client, jobs, k, r->cfg.parallel, NULL);
    cl_jobs_free_cands(jobs, k);
    free(jobs);
}

/* An erasure-coded chunk: w->buf cut into k data shards (the last padded with zeros) and m
 * parity shards, each its own chunk on its own server (placement ranks the servers once for
 * the stripe; a shard whose server fails moves to one that holds no shard of it yet), with
 * the crc64nvme of its bytes checked by the server that stores it. The chunk map gets k + m
 * rows for the stripe, one per shard, each with the stripe's offset and length. */
static wh_status_t rw_flush_ec(rw_t *w)
{
    cl_remote_t *r = w->r;
    unsigned k = w->k, m = w->m, n = k + m;
    uint64_t slen = cl_ec_shard_len(w->fill, k);
    size_t live = cl_members_up(r);
    if (live < n) {
        atomic_fetch_add(&r->unavailable, 1);
        cl_msg(w->err, sizeof w->err,
               "erasure coding %u+%u needs %u storage servers up for a stripe's shards, %zu are", k,
               m, n, live);
        w->failed = WH_ERR_UNAVAILABLE;
        wh_warn(MOD, "chunk write failed: %s", w->err);
        return w->failed;
    }
    uint8_t *sh = calloc(n, (size_t)slen);
    if (!sh)
        return WH_ERR_NOMEM;
    uint8_t *shards[CL_EC_MAX];
    for (unsigned i = 0; i < n; i++)
        shards[i] = sh + (size_t)i * slen;
    memcpy(sh, w->buf, w->fill); /* the data shards are contiguous slices; padding is zero */
    wh_status_t st = cl_ec_encode(k, m, slen, shards);
    data_chunk_t c[CL_EC_MAX];
    cl_job_t jobs[CL_EC_MAX];
    memset(c, 0, sizeof c);
    memset(jobs, 0, sizeof jobs);
    for (unsigned i = 0; i < n && st == WH_OK; i++) {
        st = cl_chunk_id_new(c[i].id);
        c[i].offset = w->total;
        c[i].length = w->fill;
        c[i].crc64nvme = wh_crc64nvme(0, shards[i], (size_t)slen);
        c[i].ec_k = k;
        c[i].ec_m = m;
        c[i].ec_index = i;
        c[i].ec_stripe = w->stripes;
        jobs[i].op = CL_OP_PUT;
        jobs[i].chunk = c[i].id;
        jobs[i].len = slen;
        jobs[i].body = shards[i];
        jobs[i].has_chunk_crc = true;
        jobs[i].chunk_crc = c[i].crc64nvme;
    }
    if (st != WH_OK) {
        free(sh);
        return st;
    }
    wh_peer_t peer = cl_peer_of(NULL);
    /* placement of the stripe: the ranking of its first shard's id, one server per shard */
    st = place_and_run(r, jobs, n, 1, &peer, w->err, sizeof w->err);
    for (unsigned i = 0; i < n; i++) {
        if (jobs[i].st != WH_OK)
            continue;
        c[i].replicas[c[i].n_replicas++] = jobs[i].used_id;
        if (st == WH_OK && jobs[i].crc != c[i].crc64nvme) {
            cl_msg(w->err, sizeof w->err,
                   "shard %s: storage server stored crc %016" PRIx64 ", sent %016" PRIx64, c[i].id,
                   jobs[i].crc, c[i].crc64nvme);
            st = WH_ERR_CHECKSUM;
        }
    }
    cl_jobs_free_cands(jobs, n);
    free(sh);
    for (unsigned i = 0; i < n && st == WH_OK; i++)
        st = rw_push(w, &c[i]);
    if (st != WH_OK) {
        delete_copies(r, c, n);
        w->failed = st;
        wh_warn(MOD, "chunk write failed: %s", w->err);
        return st;
    }
    atomic_fetch_add(&r->chunks_put, n);
    atomic_fetch_add(&r->bytes_put, slen * n);
    atomic_fetch_add(&r->ec_stripes, 1);
    w->stripes++;
    w->total += w->fill;
    w->fill = 0;
    return WH_OK;
}

static wh_status_t rw_flush(rw_t *w)
{
    cl_remote_t *r = w->r;
    if (w->k)
        return rw_flush_ec(w);
    unsigned R = r->cfg.replicas;
    data_chunk_t c;
    memset(&c, 0, sizeof c);
    wh_status_t st = cl_chunk_id_new(c.id);
    if (st != WH_OK)
        return st;
    c.offset = w->total;
    c.length = w->fill;
    c.crc64nvme = wh_crc64nvme(0, w->buf, w->fill);
    cl_job_t jobs[CL_MAX_REPLICAS];
    memset(jobs, 0, sizeof jobs);
    for (unsigned i = 0; i < R; i++) {
        jobs[i].op = CL_OP_PUT;
        jobs[i].chunk = c.id;
        jobs[i].len = w->fill;
        jobs[i].body = w->buf;
        jobs[i].has_chunk_crc = true;
        jobs[i].chunk_crc = c.crc64nvme;
    }
    wh_peer_t peer = cl_peer_of(NULL);
    st = place_and_run(r, jobs, R, 1, &peer, w->err, sizeof w->err);
    for (unsigned i = 0; i < R; i++) {
        if (jobs[i].st != WH_OK)
            continue;
        c.replicas[c.n_replicas++] = jobs[i].used_id; /* also to delete it on failure */
        if (st == WH_OK && jobs[i].crc != c.crc64nvme) {
            cl_msg(w->err, sizeof w->err,
                   "chunk %s: storage server stored crc %016" PRIx64 ", sent %016" PRIx64, c.id,
                   jobs[i].crc, c.crc64nvme);
            st = WH_ERR_CHECKSUM;
        }
    }
    cl_jobs_free_cands(jobs, R);
    if (st == WH_OK)
        st = rw_push(w, &c);
    if (st != WH_OK) {
        delete_copies(r, &c, 1);
        w->failed = st;
        wh_warn(MOD, "chunk write failed: %s", w->err);
        return st;
    }
    atomic_fetch_add(&r->chunks_put, 1);
    atomic_fetch_add(&r->bytes_put, w->fill);
    w->total += w->fill;
    w->fill = 0;
    return WH_OK;
}

wh_status_t cl_rw_open(data_table_t *d, data_writer_t **out)
{
    cl_remote_t *r = (cl_remote_t *)d;
    rw_t *w = calloc(1, sizeof *w);
    if (!w)
        return WH_ERR_NOMEM;
    w->base.data = d;
    w->r = r;
    w->k = r->cfg.ec_k;
    w->m = r->cfg.ec_m;
    if (cl_chunk_id_new(w->id) != WH_OK) {
        free(w);
        return WH_ERR_IO;
    }
    *out = &w->base;
    return WH_OK;
}

static wh_status_t rw_bucket_layout(rw_t *w, const char *bucket, char *msg, size_t msglen);

/* The bucket's layout: its tag wharf-ec, "K+M" or "replicas", overrides the gateway's. An
 * erasure-coded layout with fewer than K+M servers up is refused here, before the body
 * (UNAVAILABLE, msg naming why; a server lost during the PUT fails its stripe later). */
wh_status_t cl_rw_bucket(data_writer_t *bw, const char *bucket, char *msg, size_t msglen)
{
    rw_t *w = (rw_t *)bw;
    wh_status_t st = rw_bucket_layout(w, bucket, msg, msglen);
    size_t live = w->k ? cl_members_up(w->r) : 0;
    if (st == WH_OK && w->k && live < w->k + w->m) {
        atomic_fetch_add(&w->r->unavailable, 1);
        cl_msg(msg, msglen,
               "erasure coding %u+%u needs %u storage servers up for a stripe's shards, %zu are",
               w->k, w->m, w->k + w->m, live);
        st = WH_ERR_UNAVAILABLE;
    }
    return st;
}

static wh_status_t rw_bucket_layout(rw_t *w, const char *bucket, char *msg, size_t msglen)
{
    char *v = NULL;
    wh_status_t st = meta_bucket_attr_get(w->r->cfg.meta, bucket, DATA_BATTR_TAGS, &v);
    if (st == WH_ERR_NOT_FOUND || (st == WH_OK && !v)) {
        free(v);
        return WH_OK; /* no tags (or no bucket: the PUT itself says so) */
    }
    if (st != WH_OK)
        return st;
    s3_tagset_t *t = malloc(sizeof *t);
    if (!t) {
        free(v);
        return WH_ERR_NOMEM;
    }
    char why[160];
    if (s3_tags_parse_query(v, strlen(v), S3_BUCKET_TAGS_MAX, t, why, sizeof why) == S3_OK) {
        for (size_t i = 0; i < t->n; i++) {
            if (strcmp(t->tags[i].key, CL_EC_BUCKET_TAG) != 0)
                continue;
            if (strcmp(t->tags[i].value, "replicas") == 0) {
                w->k = w->m = 0;
            } else if (cl_ec_parse(t->tags[i].value, &w->k, &w->m, why, sizeof why) != WH_OK) {
                cl_msg(msg, msglen, "bucket %s: tag " CL_EC_BUCKET_TAG ": %s (or 'replicas')",
                       bucket, why);
                st = WH_ERR_INVALID;
            }
        }
    }
    free(t);
    free(v);
    return st;
}

wh_status_t cl_rw_write(data_writer_t *bw, const void *p, size_t n)
{
    rw_t *w = (rw_t *)bw;
    cl_remote_t *r = w->r;
    if (w->failed)
        return w->failed;
    if (!w->buf && !(w->buf = malloc(r->cfg.chunk_size)))
        return WH_ERR_NOMEM;
    const uint8_t *q = p;
    while (n) {
        size_t k = WH_MIN(n, (size_t)r->cfg.chunk_size - w->fill);
        memcpy(w->buf + w->fill, q, k);
        w->fill += k;
        q += k;
        n -= k;
        if (w->fill == r->cfg.chunk_size) {
            wh_status_t st = rw_flush(w);
            if (st != WH_OK)
                return st;
        }
    }
    return WH_OK;
}

wh_status_t cl_rw_finish(data_writer_t *bw, data_ref_t *ref)
{
    rw_t *w = (rw_t *)bw;
    if (w->failed)
        return w->failed;
    if (w->fill) {
        wh_status_t st = rw_flush(w);
        if (st != WH_OK)
            return st;
    }
    data_ref_clear(ref);
    snprintf(ref->id, sizeof ref->id, "%s", w->id);
    if (w->n) {
        ref->chunks = malloc(w->n * sizeof *ref->chunks);
        if (!ref->chunks)
            return WH_ERR_NOMEM;
        memcpy(ref->chunks, w->ch, w->n * sizeof *ref->chunks);
    }
    ref->n_chunks = w->n;
    return WH_OK;
}

void cl_rw_free(data_writer_t *bw)
{
    rw_t *w = (rw_t *)bw;
    if (!w)
        return;
    free(w->buf);
    free(w->ch);
    free(w);
}

void cl_rw_abort(data_writer_t *bw)
{
    rw_t *w = (rw_t *)bw;
    if (!w)
        return;
    delete_copies(w->r, w->ch, w->n);
    cl_rw_free(bw);
}

/* RDMA PUT: every replica pulls its chunk from the client's region. */
/* An RDMA PUT into an erasure-coded layout: each stripe pulled, encoded and spread by a
 * storage server (cl_renc_put), then its shard rows recorded as the HTTP writer's are. */
static wh_status_t rw_rdma_put_ec(rw_t *w, const xfer_token_t *tok, const wh_peer_t *speer,
                                  uint64_t size, data_rdma_result_t *res)
{
    cl_remote_t *r = w->r;
    data_chunk_t *rows = NULL;
    size_t n_rows = 0, nch = 0;
    uint64_t crc = 0;
    uint8_t digest[16];
    wh_peer_t peer = cl_peer_of(speer);
    wh_status_t st = cl_renc_put(r, w->k, w->m, tok, &peer, size, &rows, &n_rows, &crc, digest,
                                 &nch, res->message, sizeof res->message);
    for (size_t i = 0; i < n_rows && st == WH_OK; i++)
        st = rw_push(w, &rows[i]);
    if (st != WH_OK) {
        if (rows)
            delete_copies(r, rows, n_rows);
        free(rows);
        w->n = 0;
        w->failed = st;
        atomic_fetch_add(&r->unavailable, 1);
        wh_warn(MOD, "rdma put (erasure-coded) failed: %s", res->message);
        if (st != WH_ERR_INVALID && st != WH_ERR_AUTH && st != WH_ERR_PROTOCOL &&
            st != WH_ERR_NOMEM)
            st = WH_ERR_UNAVAILABLE;
        return st;
    }
    free(rows);
    w->total = size;
    w->stripes = nch;
    res->bytes = size;
    res->crc64nvme = size ? crc : 0;
    if (nch == 0) { /* the empty object: its MD5 is known without a byte */
        snprintf(res->md5_hex, sizeof res->md5_hex, "d41d8cd98f00b204e9800998ecf8427e");
        return WH_OK;
    }
    /* as for replicas: the gateway never sees the bytes, the ETag is S3's multipart form
     * over the stripes' MD5s */
    char hex[33];
    wh_hex_encode(digest, 16, hex);
    snprintf(res->etag, sizeof res->etag, "%s-%u", hex, (unsigned)nch);
    memcpy(res->md5_hex, hex, sizeof res->md5_hex);
    return WH_OK;
}

wh_status_t cl_rw_rdma_put(data_writer_t *bw, const xfer_token_arg_t *token, const wh_peer_t *speer,
                           uint64_t size, data_rdma_result_t *res)
{
    rw_t *w = (rw_t *)bw;
    cl_remote_t *r = w->r;
    memset(res, 0, sizeof *res);
    if (w->total || w->fill)
        return WH_ERR_INVALID;
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
    if (tok->size < size) {
        cl_msg(res->message, sizeof res->message,
               "token size 0x%" PRIx64 " is smaller than the object's 0x%" PRIx64, tok->size, size);
        return WH_ERR_INVALID;
    }
    if (w->k)
        return rw_rdma_put_ec(w, tok, speer, size, res);
    unsigned R = r->cfg.replicas;
    uint64_t cs = r->cfg.chunk_size, nch = (size + cs - 1) / cs;
    cl_job_t *jobs = calloc(nch * R + 1, sizeof *jobs);
    data_chunk_t *ch = calloc(nch + 1, sizeof *ch);
    if (!jobs || !ch) {
        free(jobs);
        free(ch);
        return WH_ERR_NOMEM;
    }
    for (uint64_t k = 0; k < nch && st == WH_OK; k++) {
        ch[k].offset = k * cs;
        ch[k].length = WH_MIN(cs, size - k * cs);
        st = cl_chunk_id_new(ch[k].id);
        for (unsigned i = 0; i < R && st == WH_OK; i++) {
            cl_job_t *j = &jobs[k * R + i];
            j->op = CL_OP_RPUT;
            j->chunk = ch[k].id;
            j->len = ch[k].length;
            st = xfer_token_pack_ofi1(tok->base + ch[k].offset, ch[k].length, tok->provider,
                                      tok->ep_name, tok->ep_name_len, tok->key, j->mtok,
                                      sizeof j->mtok);
        }
    }
    wh_peer_t peer = cl_peer_of(speer);
    if (st == WH_OK)
        st = place_and_run(r, jobs, R, nch, &peer, res->message, sizeof res->message);
    /* Every replica of a chunk must hold the same bytes (the client's memory must not change
     * during the PUT). */
    wh_md5_t md5;
    bool md5_ok = wh_md5_init(&md5) == 0;
    uint64_t crc = 0;
    for (uint64_t k = 0; k < nch; k++) {
        for (unsigned i = 0; i < R; i++) {
            cl_job_t *j = &jobs[k * R + i];
            if (j->st != WH_OK)
                continue;
            ch[k].replicas[ch[k].n_replicas++] = j->used_id;
            if (i == 0) {
                ch[k].crc64nvme = j->crc;
            } else if (st == WH_OK &&
                       (j->crc != jobs[k * R].crc || memcmp(j->md5, jobs[k * R].md5, 16) != 0)) {
                cl_msg(res->message, sizeof res->message,
                       "chunk %s: replicas read different bytes (did the client's memory change "
                       "during the PUT?)",
                       ch[k].id);
                st = WH_ERR_CHECKSUM;
            }
            if (st == WH_OK && !j->has_md5) {
                cl_msg(res->message, sizeof res->message, "chunk %s: storage sent no MD5",
                       ch[k].id);
                st = WH_ERR_PROTOCOL;
            }
        }
        if (st == WH_OK) {
            crc = k ? wh_crc64nvme_combine(crc, ch[k].crc64nvme, ch[k].length) : ch[k].crc64nvme;
            if (md5_ok)
                wh_md5_update(&md5, jobs[k * R].md5, 16);
        }
    }
    uint8_t digest[16];
    if (md5_ok)
        wh_md5_final(&md5, digest);
    cl_jobs_free_cands(jobs, nch * R);
    free(jobs);
    if (st == WH_OK) {
        for (uint64_t k = 0; k < nch && st == WH_OK; k++)
            st = rw_push(w, &ch[k]);
    }
    if (st != WH_OK) {
        delete_copies(r, ch, nch);
        free(ch);
        w->n = 0;
        w->failed = st;
        if (st != WH_ERR_INVALID && st != WH_ERR_AUTH && st != WH_ERR_CHECKSUM &&
            st != WH_ERR_PROTOCOL && st != WH_ERR_NOMEM)
            st = WH_ERR_UNAVAILABLE;
        return st;
    }
    free(ch);
    w->total = size;
    atomic_fetch_add(&r->chunks_put, nch);
    res->bytes = size;
    res->crc64nvme = size ? crc : 0;
    /* The gateway never sees the bytes: the ETag is S3's multipart form over the chunks'
     * MD5s, "<md5 of the chunk MD5s>-<chunks>". */
    if (nch == 0) /* the empty object: its MD5 is known without a byte */
        snprintf(res->md5_hex, sizeof res->md5_hex, "d41d8cd98f00b204e9800998ecf8427e");
    if (md5_ok && nch) {
        char hex[33];
        wh_hex_encode(digest, 16, hex);
        snprintf(res->etag, sizeof res->etag, "%s-%u", hex, (unsigned)nch);
        /* Also the writer's digest: an UploadPart's ETag is this hex, so completion's
         * md5-of-part-ETags works as for any part. */
        memcpy(res->md5_hex, hex, sizeof res->md5_hex);
    }
    return WH_OK;
}

/* Appends [off, off+len) of a reader: whole chunks of another remote object by reference
 * (copy and multipart completion move no bytes), anything else by reading and writing. */
wh_status_t cl_rw_append(data_writer_t *bw, data_reader_t *br, uint64_t off, uint64_t len)
{
    rw_t *w = (rw_t *)bw;
    if (w->failed)
        return w->failed;
    if (br->data == bw->data && len) {
        rr_t *q = (rr_t *)br;
        int64_t k0 = cl_chunk_at(&q->ref, off), k1 = cl_chunk_at(&q->ref, off + len - 1);
        if (k0 >= 0 && k1 >= k0 && q->ref.chunks[k0].offset == off &&
            q->ref.chunks[k1].offset + q->ref.chunks[k1].length == off + len) {
            wh_status_t st = w->fill ? rw_flush(w) : WH_OK;
            /* an erasure-coded stripe's rows share the stripe's offset */
            int64_t end = k1 + (int64_t)cl_unit_rows(&q->ref, k1);
            uint64_t base = w->total;
            for (int64_t k = k0; k < end && st == WH_OK; k++) {
                data_chunk_t c = q->ref.chunks[k];
                c.offset = base + (c.offset - off);
                c.shared = true;
                st = rw_push(w, &c);
                w->total = c.offset + c.length;
            }
            return st;
        }
    }
    uint64_t piece = w->r->cfg.chunk_size;
    uint8_t *tmp = malloc((size_t)piece);
    if (!tmp)
        return WH_ERR_NOMEM;
    wh_status_t st = WH_OK;
    for (uint64_t done = 0; done < len && st == WH_OK;) {
        size_t n = (size_t)WH_MIN(piece, len - done);
        st = data_reader_pread(br, tmp, n, off + done);
        if (st == WH_OK)
            st = cl_rw_write(bw, tmp, n);
        done += n;
    }
    free(tmp);
    return st;
}
