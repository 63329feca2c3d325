/* SPDX-License-Identifier: Apache-2.0 */
/* rdec: a degraded RDMA GET of an erasure-coded stripe, rebuilt here (see cluster/rdec.h).
 *
 * The project's rule is that a degraded read is reconstructed at a storage server, never at
 * the client, and never in the gateway on the RDMA path (the gateway moves none of an
 * object's bytes there). So the gateway picks one storage server of the stripe that is up and
 * hands it the stripe's description; this server reads K good shards (its own from disk, the
 * others from the servers named, with the internal read push and repair use), each checked
 * against the chunk map's crc64nvme (one that fails counts as missing and the next is read),
 * decodes the missing data shards, checks them against their crcs too, and writes the slice
 * the token names into the client's memory through its RDMA engine. The reply carries the
 * bytes moved and their crc64nvme, as rget's does. The request is authorised by the gateway's
 * internal token, whose MAC covers the body through its SHA-256. */
#include "base/codec.h"
#include "base/crc.h"
#include "base/digest.h"
#include "base/log.h"
#include "base/util.h"
#include "cluster/ec.h"
#include "cluster/rdec.h"
#include "roles/storage_int.h"
#include "xfer/token.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MOD "storage"

static void fail(role_rdec_result_t *res, int http, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void fail(role_rdec_result_t *res, int http, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(res->message, sizeof res->message, fmt, ap);
    va_end(ap);
    res->http = http;
}

/* Reads shard i from this server's disk into buf (slen bytes), if it is here. True when it
 * is, whole, and its crc is the chunk map's; a damaged copy is moved aside and reported. */
static bool read_local(role_storage_t *s, const cl_rdec_shard_t *sh, uint64_t slen, uint8_t *buf,
                       bool *here)
{
    int fd = -1;
    cl_chunk_info_t info;
    wh_status_t st = cl_chunk_open(s->chunks, sh->chunk, &fd, &info);
    *here = st != WH_ERR_NOT_FOUND;
    if (st != WH_OK) {
        if (st == WH_ERR_CHECKSUM)
            role_storage_damaged(s, sh->chunk, -1);
        return false;
    }
    uint64_t size = info.size, foot = info.crc;
    cl_chunk_info_free(&info);
    bool ok = size == slen && wh_pread_all(fd, buf, (size_t)slen, 0) == 0;
    uint64_t crc = ok ? wh_crc64nvme(0, buf, (size_t)slen) : 0;
    if (ok && crc != foot) {
        atomic_fetch_add(&s->read_errors, 1);
        role_storage_damaged(s, sh->chunk, fd);
        ok = false;
    } else if (ok && crc != sh->crc) {
        /* intact on disk but not the map's bytes (a stale copy): not used */
        wh_warn(MOD, "rdec: shard %s here has crc64nvme %016" PRIx64 ", the map %016" PRIx64,
                sh->chunk, crc, sh->crc);
        ok = false;
    } else if (!ok) {
        atomic_fetch_add(&s->read_errors, 1);
        wh_warn(MOD, "rdec: shard %s here has %" PRIu64 " bytes, a shard is %" PRIu64, sh->chunk,
                size, slen);
    }
    close(fd);
    return ok;
}

/* Reads shards from the other servers until k are good: each round asks for as many as are
 * still missing, in order; a shard whose read fails (or whose crc is not the map's) is
 * replaced by the next. Returns how many are good in all. */
static unsigned fetch_peers(role_storage_t *s, const cl_rdec_t *d, const unsigned *order,
                            unsigned n_order, const bool *tried_in, uint8_t *const *shards,
                            bool *good, unsigned have)
{
    uint64_t slen = cl_ec_shard_len(d->len, d->k);
    bool tried[CL_EC_MAX];
    memcpy(tried, tried_in, sizeof tried);
    while (have < d->k) {
        cl_job_t jobs[CL_EC_MAX];
        unsigned idx[CL_EC_MAX], nj = 0;
        memset(jobs, 0, sizeof jobs);
        for (unsigned t = 0; t < n_order && nj < d->k - have; t++) {
            unsigned i = order[t];
            if (tried[i])
                continue;
            tried[i] = true;
            if (strcmp(d->shard[i].addr, s->addr) == 0)
                continue; /* listed here, and not on this disk: nowhere else to read it */
            cl_job_t *j = &jobs[nj];
            j->op = CL_OP_GET;
            j->chunk = d->shard[i].chunk;
            j->len = slen;
            j->dst = shards[i];
            j->check_crc = true;
            j->expect_crc = d->shard[i].crc;
            j->cand[0] = d->shard[i].addr;
            j->cand_id[0] = d->shard[i].node;
            j->ncand = 1;
            idx[nj++] = i;
        }
        if (!nj)
            break;
        cl_client_run(s->client, jobs, nj, nj, NULL);
        for (unsigned t = 0; t < nj; t++) {
            if (jobs[t].st == WH_OK) {
                good[idx[t]] = true;
                have++;
                atomic_fetch_add(&s->rdec_shards_fetched, 1);
                continue;
            }
            wh_warn(MOD, "rdec: shard %u (%s) from %s unavailable: %s", idx[t], jobs[t].chunk,
                    d->shard[idx[t]].addr, jobs[t].err);
        }
    }
    return have;
}

typedef struct stripe_src {
    const uint8_t *p; /* the stripe: its data shards, contiguous */
} stripe_src_t;

static wh_status_t stripe_read(void *arg, void *buf, size_t n, uint64_t at)
{
    const stripe_src_t *src = arg;
    memcpy(buf, src->p + at, n);
    return WH_OK;
}

/* What rdec and renc share before their work: the token's body hash and memory token, the
 * body authenticated by that hash, a server able to reach the others (as for push: the
 * other servers serve HTTPS and one without --cluster-ca cannot verify them), and the
 * stripe's description parsed. False with res filled (op names the operation, reach what it
 * would do with the other servers). */
static bool stripe_request(role_storage_t *s, const cl_itoken_t *t, const char *op,
                           const char *reach, const char *body, size_t n, cl_rdec_t *d,
                           const char **mtok, role_rdec_result_t *res)
{
    char sha[65], got[65], err[256];
    *mtok = NULL;
    if (!cl_itoken_rdec_args(t, sha, mtok)) {
        fail(res, 400, "%s token without SHA256@TOKEN", op);
        return false;
    }
    wh_sha256_hex(body, n, got);
    if (strcmp(sha, got) != 0) {
        fail(res, 403, "%s body's SHA-256 %s is not the one its itoken signed (%s)", op, got, sha);
        return false;
    }
    if (s->tls && !s->cfg.cluster_ca) {
        fail(res, 501,
             "%s not implemented on a storage server that serves HTTPS without "
             "--cluster-ca (it cannot %s the other shards)",
             op, reach);
        return false;
    }
    if (cl_rdec_parse(body, n, d, err, sizeof err) != WH_OK) {
        fail(res, 400, "%s", err);
        return false;
    }
    return true;
}

void role_storage_rdec(role_storage_t *s, const cl_itoken_t *t, const char *body, size_t n,
                       role_rdec_result_t *res)
{
    memset(res, 0, sizeof *res);
    const char *mtok = NULL;
    cl_rdec_t d;
    if (!stripe_request(s, t, "rdec", "read", body, n, &d, &mtok, res))
        return;
    if (strcmp(d.shard[0].chunk, t->chunk) != 0) {
        fail(res, 400, "rdec itoken names stripe %s, its body's shard 0 is %s", t->chunk,
             d.shard[0].chunk);
        return;
    }
    if (t->len == 0 || t->off > d.len || t->len > d.len - t->off) {
        fail(res, 416,
             "rdec range %" PRIu64 "+%" PRIu64 " empty or beyond the stripe's %" PRIu64 " bytes",
             t->off, t->len, d.len);
        return;
    }
    unsigned k = d.k, total = d.k + d.m;
    uint64_t slen = cl_ec_shard_len(d.len, k);
    uint8_t *sh = malloc((size_t)(slen * total));
    if (!sh) {
        fail(res, 500, "rdec: out of memory for %u shards of %" PRIu64 " bytes", total, slen);
        return;
    }
    uint8_t *shards[CL_EC_MAX];
    bool good[CL_EC_MAX] = {0}, local[CL_EC_MAX] = {0}, tried[CL_EC_MAX] = {0};
    unsigned have = 0;
    for (unsigned i = 0; i < total; i++) {
        shards[i] = sh + (size_t)i * slen;
        /* this server's own shard(s): from disk, whatever the list says of their server */
        good[i] = read_local(s, &d.shard[i], slen, shards[i], &local[i]);
        tried[i] = local[i];
        have += good[i];
    }
    unsigned order[CL_EC_MAX];
    unsigned n_order = cl_rdec_order(&d, local, order);
    have = fetch_peers(s, &d, order, n_order, tried, shards, good, have);
    if (have < k) {
        atomic_fetch_add(&s->rdec_failures, 1);
        fail(res, 503,
             "rdec of stripe %s: %u of %u+%u shards readable (%u listed on servers that are "
             "up), %u needed",
             t->chunk, have, k, d.m, cl_rdec_readable(&d), k);
        free(sh);
        return;
    }
    bool whole = true;
    for (unsigned i = 0; i < k; i++)
        whole &= good[i];
    if (!whole) {
        bool rebuilt[CL_EC_MAX] = {0};
        for (unsigned i = 0; i < total; i++)
            rebuilt[i] = !good[i];
        if (cl_ec_decode(k, d.m, slen, shards, good) != WH_OK) {
            atomic_fetch_add(&s->rdec_failures, 1);
            fail(res, 500, "rdec of stripe %s: decode failed", t->chunk);
            free(sh);
            return;
        }
        /* the rebuilt data shards are the map's bytes, or nothing is sent */
        for (unsigned i = 0; i < k; i++)
            if (rebuilt[i] && wh_crc64nvme(0, shards[i], (size_t)slen) != d.shard[i].crc) {
                atomic_fetch_add(&s->rdec_failures, 1);
                fail(res, 500,
                     "rdec of stripe %s: rebuilt shard %u differs from the chunk map's crc",
                     t->chunk, i);
                free(sh);
                return;
            }
    }
    xfer_token_arg_t targ;
    xfer_token_arg_parse(&targ, mtok);
    rdma_result_t rr;
    memset(&rr, 0, sizeof rr);
    stripe_src_t src = {.p = sh};
    wh_status_t st =
        rdma_get_source(s->rdma, &targ, &t->peer, stripe_read, &src, t->off, t->len, &rr);
    free(sh);
    if (st != WH_OK || rr.bytes != t->len) {
        atomic_fetch_add(&s->rdec_failures, 1);
        fail(res, rr.http_status >= 400 ? rr.http_status : 502,
             "rdec of stripe %s: rdma write failed: %s", t->chunk,
             st != WH_OK ? rr.message : "short write");
        return;
    }
    atomic_fetch_add(&s->rdec_reads, 1);
    atomic_fetch_add(&s->rdec_bytes, rr.bytes);
    if (!whole)
        atomic_fetch_add(&s->rdec_decoded, 1);
    res->http = 200;
    res->bytes = rr.bytes;
    res->crc = rr.crc64nvme;
}

/* renc's sink: the stripe's bytes, in order, into a buffer of the stripe's length. */
typedef struct stripe_sink {
    uint8_t *p;
    uint64_t len, at;
    wh_md5_t md5;
} stripe_sink_t;

static wh_status_t stripe_write(void *arg, const void *p, size_t n)
{
    stripe_sink_t *k = arg;
    if (n > k->len - k->at)
        return WH_ERR_INVALID; /* more than the token named: the region is larger */
    memcpy(k->p + k->at, p, n);
    wh_md5_update(&k->md5, p, n);
    k->at += n;
    return WH_OK;
}

/* Stores shard i (slen bytes) on this server's disk; crc is what it must checksum to. */
static bool store_local(role_storage_t *s, const char *id, const uint8_t *p, uint64_t slen,
                        uint64_t crc, char *err, size_t errlen)
{
    cl_chunk_writer_t *w = NULL;
    uint64_t got = 0;
    wh_status_t st = cl_chunk_writer_open(s->chunks, id, false, &w);
    if (st == WH_OK && (st = cl_chunk_writer_write(w, p, (size_t)slen)) != WH_OK)
        cl_chunk_writer_abort(w);
    if (st == WH_OK)
        st = cl_chunk_writer_commit(w, &got, NULL);
    if (st != WH_OK || got != crc) {
        snprintf(err, errlen, "cannot store it here: %s",
                 st != WH_OK ? wh_status_str(st) : "crc differs");
        return false;
    }
    atomic_fetch_add(&s->chunks_written, 1);
    return true;
}

void role_storage_renc(role_storage_t *s, const cl_itoken_t *t, const char *body, size_t n,
                       role_rdec_result_t *res)
{
    memset(res, 0, sizeof *res);
    char err[256];
    const char *mtok = NULL;
    cl_rdec_t d;
    if (!stripe_request(s, t, "renc", "send", body, n, &d, &mtok, res))
        return;
    unsigned k = d.k, total = d.k + d.m;
    if (strcmp(d.shard[0].chunk, t->chunk) != 0 || t->off != 0 || t->len != d.len || !d.len) {
        fail(res, 400,
             "renc itoken (stripe %s, %" PRIu64 "+%" PRIu64 ") does not match its body "
             "(shard 0 %s, %" PRIu64 " bytes)",
             t->chunk, t->off, t->len, d.shard[0].chunk, d.len);
        return;
    }
    if (cl_rdec_readable(&d) != total) {
        fail(res, 400, "renc body places %u of its %u shards", cl_rdec_readable(&d), total);
        return;
    }
    uint64_t slen = cl_ec_shard_len(d.len, k);
    uint8_t *sh = calloc(total, (size_t)slen); /* zeros: the last data shard's padding */
    if (!sh) {
        fail(res, 500, "renc: out of memory for %u shards of %" PRIu64 " bytes", total, slen);
        return;
    }
    stripe_sink_t sink = {.p = sh, .len = d.len};
    if (wh_md5_init(&sink.md5) != 0) {
        free(sh);
        fail(res, 500, "renc: out of memory");
        return;
    }
    xfer_token_arg_t targ;
    xfer_token_arg_parse(&targ, mtok);
    rdma_result_t rr;
    memset(&rr, 0, sizeof rr);
    wh_status_t st = rdma_put_tok(s->rdma, &targ, &t->peer, stripe_write, &sink, &rr);
    wh_md5_final(&sink.md5, res->md5);
    if (st != WH_OK || sink.at != d.len) {
        atomic_fetch_add(&s->renc_failures, 1);
        free(sh);
        if (st == WH_OK)
            fail(res, 400, "renc: memory region holds %" PRIu64 " bytes, the stripe %" PRIu64,
                 sink.at, d.len);
        else
            fail(res, rr.http_status >= 400 ? rr.http_status : 502, "renc: rdma read failed: %s",
                 rr.message);
        return;
    }
    uint8_t *shards[CL_EC_MAX];
    uint64_t crc[CL_EC_MAX];
    for (unsigned i = 0; i < total; i++)
        shards[i] = sh + (size_t)i * slen;
    if (cl_ec_encode(k, d.m, slen, shards) != WH_OK) {
        atomic_fetch_add(&s->renc_failures, 1);
        free(sh);
        fail(res, 500, "renc of stripe %s: encode failed", t->chunk);
        return;
    }
    size_t at = 0;
    for (unsigned i = 0; i < total; i++) {
        crc[i] = wh_crc64nvme(0, shards[i], (size_t)slen);
        at += (size_t)snprintf(res->shard_crcs + at, sizeof res->shard_crcs - at, "%s%016" PRIx64,
                               i ? "," : "", crc[i]);
    }
    /* this server's shards to its disk, the others as cputs (checked by their receivers
     * against the crc computed here), all at once */
    cl_job_t jobs[CL_EC_MAX];
    unsigned idx[CL_EC_MAX], nj = 0;
    memset(jobs, 0, sizeof jobs);
    bool ok = true;
    for (unsigned i = 0; i < total && ok; i++) {
        if (strcmp(d.shard[i].addr, s->addr) == 0) {
            if (!(ok = store_local(s, d.shard[i].chunk, shards[i], slen, crc[i], err, sizeof err)))
                fail(res, 507, "renc of stripe %s: shard %u (%s): %s", t->chunk, i,
                     d.shard[i].chunk, err);
            continue;
        }
        cl_job_t *j = &jobs[nj];
        j->op = CL_OP_CPUT;
        j->chunk = d.shard[i].chunk;
        j->len = slen;
        j->body = shards[i];
        j->cand[0] = d.shard[i].addr;
        j->cand_id[0] = d.shard[i].node;
        j->ncand = 1;
        snprintf(j->mtok, sizeof j->mtok, "%016" PRIx64, crc[i]);
        idx[nj++] = i;
    }
    if (ok && nj)
        cl_client_run(s->client, jobs, nj, nj, NULL);
    for (unsigned q = 0; q < nj && ok; q++)
        if (jobs[q].st != WH_OK || jobs[q].crc != crc[idx[q]]) {
            ok = false;
            fail(res, 502, "renc of stripe %s: shard %u (%s) not stored by %s: %s", t->chunk,
                 idx[q], jobs[q].chunk, jobs[q].cand[0],
                 jobs[q].err[0] ? jobs[q].err : "crc differs");
        }
    free(sh);
    if (!ok) {
        /* what landed is deleted by the gateway (it queued every shard for GC first) */
        atomic_fetch_add(&s->renc_failures, 1);
        return;
    }
    atomic_fetch_add(&s->renc_stripes, 1);
    atomic_fetch_add(&s->renc_bytes, d.len);
    res->http = 200;
    res->bytes = d.len;
    res->crc = rr.crc64nvme;
}
