/* SPDX-License-Identifier: Apache-2.0 */
/* The gateway's half of a degraded RDMA GET of an erasure-coded stripe (see rdec.h): the
 * rdec job that has one storage server of the stripe rebuild the slice and write it into
 * the client's memory. The gateway decides, from its membership view, which shards can be
 * read; it reads none itself (on the RDMA path it moves none of the object's bytes). */
#include "base/crc.h"
#include "base/digest.h"
#include "base/log.h"
#include "cluster/ec.h"
#include "cluster/rdec.h"
#include "cluster/remote_int.h"
#include "xfer/token.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MOD "remote"

wh_status_t cl_rdec_job(cl_remote_t *r, const data_chunk_t *rows, const bool *skip, uint64_t sa,
                        uint64_t sb, const xfer_token_t *tok, uint64_t base, cl_job_t *j, char *msg,
                        size_t msglen)
{
    unsigned k = rows[0].ec_k, n = k + rows[0].ec_m;
    cl_rdec_t d;
    memset(&d, 0, sizeof d);
    d.k = k;
    d.m = rows[0].ec_m;
    d.len = rows[0].length;
    unsigned live = 0;
    for (unsigned i = 0; i < n; i++) {
        cl_rdec_shard_t *sh = &d.shard[i];
        snprintf(sh->chunk, sizeof sh->chunk, "%s", rows[i].id);
        sh->crc = rows[i].crc64nvme;
        if ((skip && skip[i]) || !rows[i].n_replicas || !cl_members_can_read(r, &rows[i]) ||
            !cl_members_addr(r, rows[i].replicas[0], sh->addr))
            continue;
        sh->node = rows[i].replicas[0];
        live++;
    }
    if (live < k) {
        cl_msg(msg, msglen,
               "erasure-coded chunk (object bytes %" PRIu64 "-%" PRIu64 "): %u of %u+%u "
               "shards on storage servers that are up, %u needed; retry later",
               rows[0].offset, rows[0].offset + rows[0].length - 1, live, k, n - k, k);
        return WH_ERR_UNAVAILABLE;
    }
    char err[256];
    j->form = malloc(CL_RDEC_BODY_MAX);
    if (!j->form)
        return WH_ERR_NOMEM;
    if (!cl_rdec_format(&d, j->form, CL_RDEC_BODY_MAX, err, sizeof err)) {
        cl_msg(msg, msglen, "%s", err);
        return WH_ERR_INTERNAL;
    }
    char sha[65], mt[XFER_TOKEN_MAX_LEN + 1];
    wh_sha256_hex(j->form, strlen(j->form), sha);
    wh_status_t st = xfer_token_pack_ofi1(base, sb - sa, tok->provider, tok->ep_name,
                                          tok->ep_name_len, tok->key, mt, sizeof mt);
    if (st != WH_OK) {
        cl_msg(msg, msglen, "the client's memory token cannot be narrowed to the slice");
        return st;
    }
    int w = snprintf(j->mtok, sizeof j->mtok, "%s@%s", sha, mt);
    if (w < 0 || (size_t)w >= sizeof j->mtok) {
        cl_msg(msg, msglen, "the client's memory token is too long to carry with an rdec");
        return WH_ERR_INVALID;
    }
    uint64_t slen = cl_ec_shard_len(rows[0].length, k);
    j->op = CL_OP_RDEC;
    j->chunk = rows[0].id; /* names the stripe */
    j->off = sa;
    j->len = sb - sa;
    j->work = slen * k;
    j->check_crc = false; /* the server checks every shard it reads or rebuilds */
    /* Candidates: the servers of the readable shards (each reads its own shard from disk),
     * from the first data shard the slice touches on, so that the stripes of one GET do not
     * all land on the server of shard 0. */
    unsigned first = (unsigned)WH_MIN(sa / (slen ? slen : 1), (uint64_t)k - 1);
    j->ncand = 0;
    for (unsigned t = 0; t < n && j->ncand < CL_MAX_CANDIDATES; t++) {
        const cl_rdec_shard_t *sh = &d.shard[(first + t) % n];
        if (!sh->addr[0])
            continue;
        char *a = strdup(sh->addr);
        if (!a)
            break;
        j->cand[j->ncand] = a;
        j->cand_id[j->ncand++] = sh->node;
    }
    return j->ncand ? WH_OK : WH_ERR_NOMEM;
}

/* One stripe's renc job: its k + m shard rows get ids and their servers (placement ranks the
 * servers once for the stripe, as the HTTP writer does), which are queued for GC before a
 * byte is written; shard 0's server pulls the stripe and spreads it. */
static wh_status_t renc_job(cl_remote_t *r, data_chunk_t *rows, const xfer_token_t *tok,
                            cl_job_t *j, char *msg, size_t msglen)
{
    unsigned k = rows[0].ec_k, n = k + rows[0].ec_m;
    cl_job_t place[CL_EC_MAX];
    memset(place, 0, sizeof place);
    for (unsigned i = 0; i < n; i++)
        place[i].chunk = rows[i].id;
    size_t up = cl_members_for_write(r, rows[0].id, n, place);
    if (up < n) {
        cl_jobs_free_cands(place, n);
        cl_msg(msg, msglen,
               "erasure coding %u+%u needs %u storage servers up (with room) for a stripe's "
               "shards, %zu are",
               k, n - k, n, up);
        return WH_ERR_UNAVAILABLE;
    }
    cl_rdec_t d;
    memset(&d, 0, sizeof d);
    d.k = k;
    d.m = n - k;
    d.len = rows[0].length;
    size_t nc[CL_EC_MAX];
    for (unsigned i = 0; i < n; i++) {
        nc[i] = place[i].ncand;
        place[i].ncand = 1; /* the primary only (intents too): no spare takes part */
        snprintf(d.shard[i].chunk, sizeof d.shard[i].chunk, "%s", rows[i].id);
        snprintf(d.shard[i].addr, sizeof d.shard[i].addr, "%s", place[i].cand[0]);
        d.shard[i].node = place[i].cand_id[0];
        rows[i].replicas[0] = place[i].cand_id[0];
        rows[i].n_replicas = 1;
    }
    wh_status_t st = cl_record_intents(r, place, n);
    char *enc = strdup(place[0].cand[0]);
    for (unsigned i = 0; i < n; i++)
        place[i].ncand = nc[i]; /* the spares are freed too */
    cl_jobs_free_cands(place, n);
    if (st != WH_OK || !enc) {
        free(enc);
        cl_msg(msg, msglen, "cannot record the stripe's shards for garbage collection");
        return st != WH_OK ? st : WH_ERR_NOMEM;
    }
    j->cand[0] = enc;
    j->cand_id[0] = d.shard[0].node;
    j->ncand = 1;
    char err[256], sha[65], mt[XFER_TOKEN_MAX_LEN + 1];
    if (!(j->form = malloc(CL_RDEC_BODY_MAX)))
        return WH_ERR_NOMEM;
    if (!cl_rdec_format(&d, j->form, CL_RDEC_BODY_MAX, err, sizeof err)) {
        cl_msg(msg, msglen, "%s", err);
        return WH_ERR_INTERNAL;
    }
    wh_sha256_hex(j->form, strlen(j->form), sha);
    st = xfer_token_pack_ofi1(tok->base + rows[0].offset, rows[0].length, tok->provider,
                              tok->ep_name, tok->ep_name_len, tok->key, mt, sizeof mt);
    int w = st == WH_OK ? snprintf(j->mtok, sizeof j->mtok, "%s@%s", sha, mt) : -1;
    if (w < 0 || (size_t)w >= sizeof j->mtok) {
        cl_msg(msg, msglen, "the client's memory token cannot be narrowed to a stripe");
        return WH_ERR_INVALID;
    }
    j->op = CL_OP_RENC;
    j->chunk = rows[0].id;
    j->off = 0;
    j->len = rows[0].length;
    j->work = 2 * rows[0].length; /* pulled, then sent on as shards */
    return WH_OK;
}

wh_status_t cl_renc_put(cl_remote_t *r, unsigned k, unsigned m, const xfer_token_t *tok,
                        const wh_peer_t *peer, uint64_t size, data_chunk_t **rows_out,
                        size_t *n_rows, uint64_t *crc_out, uint8_t md5s[16], size_t *n_stripes,
                        char *msg, size_t msglen)
{
    unsigned n = k + m;
    uint64_t cs = r->cfg.chunk_size, nch = (size + cs - 1) / cs;
    data_chunk_t *rows = calloc(nch * n + 1, sizeof *rows);
    cl_job_t *jobs = calloc(nch + 1, sizeof *jobs);
    *rows_out = rows;
    *n_rows = 0;
    *n_stripes = nch;
    if (!rows || !jobs) {
        free(jobs);
        return WH_ERR_NOMEM;
    }
    wh_status_t st = WH_OK;
    size_t nj = 0;
    for (uint64_t s = 0; s < nch && st == WH_OK; s++) {
        data_chunk_t *c = &rows[s * n];
        for (unsigned i = 0; i < n && st == WH_OK; i++) {
            st = cl_chunk_id_new(c[i].id);
            c[i].offset = s * cs;
            c[i].length = WH_MIN(cs, size - s * cs);
            c[i].ec_k = k;
            c[i].ec_m = m;
            c[i].ec_index = i;
            c[i].ec_stripe = s;
        }
        *n_rows = (size_t)(s + 1) * n;
        if (st == WH_OK)
            st = renc_job(r, c, tok, &jobs[nj++], msg, msglen);
    }
    if (st == WH_OK)
        st = cl_client_run(r->client, jobs, nj, r->cfg.parallel, peer);
    wh_md5_t md5;
    bool md5_ok = st == WH_OK && wh_md5_init(&md5) == 0;
    uint64_t crc = 0;
    for (size_t s = 0; s < nj && st == WH_OK; s++) {
        cl_job_t *j = &jobs[s];
        if (j->n_shard_crc != n || !j->has_md5) {
            cl_msg(msg, msglen, "stripe %s: storage %s sent no shard crcs or MD5", j->chunk,
                   j->cand[0]);
            st = WH_ERR_PROTOCOL;
            break;
        }
        for (unsigned i = 0; i < n; i++)
            rows[s * n + i].crc64nvme = j->shard_crc[i];
        crc = s ? wh_crc64nvme_combine(crc, j->crc, j->len) : j->crc;
        if (md5_ok)
            wh_md5_update(&md5, j->md5, 16);
    }
    if (md5_ok && st == WH_OK)
        wh_md5_final(&md5, md5s);
    else if (md5_ok)
        wh_md5_free(&md5);
    if (st != WH_OK && !msg[0])
        for (size_t s = 0; s < nj; s++)
            if (jobs[s].st != WH_OK) {
                cl_msg(msg, msglen, "stripe %s (object bytes %" PRIu64 "-%" PRIu64 "): %s",
                       jobs[s].chunk, rows[s * n].offset,
                       rows[s * n].offset + rows[s * n].length - 1,
                       jobs[s].err[0] ? jobs[s].err : "not stored");
                if (jobs[s].st == WH_ERR_AUTH || jobs[s].st == WH_ERR_INVALID)
                    st = jobs[s].st;
                break;
            }
    *crc_out = crc;
    cl_jobs_free_cands(jobs, nj);
    free(jobs);
    if (st == WH_OK) {
        atomic_fetch_add(&r->ec_stripes, nch);
        atomic_fetch_add(&r->chunks_put, nch * n);
    }
    return st;
}
