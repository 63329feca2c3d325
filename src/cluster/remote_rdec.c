/* The gateway's half of a degraded RDMA GET of an erasure-coded stripe (see rdec.h): the
 * rdec job that has one storage server of the stripe rebuild the slice and write it into
 * the client's memory. The gateway decides, from its membership view, which shards can be
 * read; it reads none itself (on the RDMA path it moves none of the object's bytes). */
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

wh_status_t cl_rdec_job(cl_remote_t *r, const store_chunk_t *rows, const bool *skip, uint64_t sa,
                        uint64_t sb, const token_t *tok, uint64_t base, cl_job_t *j, char *msg,
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
    char sha[65], mt[TOKEN_MAX_LEN + 1];
    wh_sha256_hex(j->form, strlen(j->form), sha);
    wh_status_t st = token_pack_ofi1(base, sb - sa, tok->provider, tok->ep_name, tok->ep_name_len,
                                     tok->key, mt, sizeof mt);
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
