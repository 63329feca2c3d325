/* SPDX-License-Identifier: Apache-2.0 */
/* Membership of the cluster as the gateway sees it (refreshed from the metadata database),
 * placement candidates, and the maintenance loop: one gateway at a time (an advisory lock)
 * deletes chunks that the garbage-collection queue hands out. */
#include "base/crc.h"
#include "base/log.h"
#include "cluster/ec.h"
#include "cluster/place.h"
#include "cluster/remote_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MOD "members"
#define GC_BATCH 256

static int member_cmp(const void *a, const void *b)
{
    const cl_member_t *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Reads the node table; keeps the old view when the database is unreachable. */
static void refresh(cl_remote_t *r)
{
    meta_node_t *nodes = NULL;
    size_t n = 0;
    wh_status_t st = meta_node_list(r->cfg.meta, &nodes, &n);
    if (st != WH_OK) {
        atomic_fetch_add(&r->meta_failures, 1);
        wh_debug(MOD, "membership refresh failed: %s", wh_status_str(st));
        return;
    }
    cl_member_t *v = calloc(n ? n : 1, sizeof *v);
    if (!v) {
        free(nodes);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        v[i].id = nodes[i].id;
        snprintf(v[i].addr, sizeof v[i].addr, "%s", nodes[i].addr);
        v[i].free = nodes[i].free;
        int64_t age_ms = ((int64_t)nodes[i].now - (int64_t)nodes[i].heartbeat) * 1000;
        v[i].retired = nodes[i].retired;
        v[i].state = nodes[i].state;
        snprintf(v[i].zone, sizeof v[i].zone, "%s", nodes[i].zone);
        v[i].up = !v[i].retired && v[i].state != META_NODE_REMOVED &&
                  age_ms <= (int64_t)r->cfg.down_after_ms;
        v[i].age_s = age_ms / 1000;
    }
    free(nodes);
    qsort(v, n, sizeof *v, member_cmp);
    wh_mutex_lock(&r->lock);
    for (size_t i = 0; i < n; i++) {
        bool was_up = false, found = false;
        int was_state = META_NODE_ACTIVE;
        for (size_t j = 0; j < r->n_members; j++)
            if (r->members[j].id == v[i].id) {
                found = true;
                was_up = r->members[j].up;
                was_state = r->members[j].state;
            }
        /* A removed node is said once, then never again (nor dialed). */
        if (v[i].state == META_NODE_REMOVED) {
            if (found && was_state != META_NODE_REMOVED)
                wh_info(MOD, "storage node removed id=%" PRIu32 " addr=%s: no longer dialed",
                        v[i].id, v[i].addr);
            continue;
        }
        if (!found || was_up != v[i].up)
            wh_info(MOD, "storage node %s id=%" PRIu32 " addr=%s%s%s", v[i].up ? "up" : "down",
                    v[i].id, v[i].addr, v[i].zone[0] ? " zone=" : "", v[i].zone);
        if (found && was_state != v[i].state && v[i].state == META_NODE_DRAINING)
            wh_info(MOD,
                    "storage node draining id=%" PRIu32 " addr=%s: no new copies, its copies "
                    "move off",
                    v[i].id, v[i].addr);
    }
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < r->n_members; j++)
            if (r->members[j].id == v[i].id)
                v[i].suspect_until = r->members[j].suspect_until;
    free(r->members);
    r->members = v;
    r->n_members = n;
    r->known = true;
    wh_mutex_unlock(&r->lock);
}

static bool usable(const cl_member_t *m, uint64_t now_ms)
{
    return m->up && now_ms >= m->suspect_until;
}

void cl_members_suspect(void *arg, uint32_t id)
{
    cl_remote_t *r = arg;
    uint64_t until = wh_now_ns() / 1000000 + r->cfg.down_after_ms;
    wh_mutex_lock(&r->lock);
    for (size_t i = 0; i < r->n_members; i++)
        if (r->members[i].id == id && r->members[i].suspect_until < until) {
            if (usable(&r->members[i], until - r->cfg.down_after_ms))
                wh_info(MOD, "storage node suspect id=%" PRIu32 " addr=%s: avoided for %u ms", id,
                        r->members[i].addr, r->cfg.down_after_ms);
            r->members[i].suspect_until = until;
        }
    wh_mutex_unlock(&r->lock);
}

/* A server that timed out a request and has not answered since (cl_client_node_slow) goes
 * behind the others, keeping their order: slow is not down, it is used when the others are
 * not enough. slow[i] says whether entry i is; perm gets the new order. */
static size_t slow_last(const bool *slow, size_t n, size_t *perm)
{
    size_t k = 0, moved = 0;
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < n; i++)
            if (slow[i] == (pass == 1))
                perm[k++] = i;
    for (size_t i = 0; i < n; i++)
        moved += perm[i] != i;
    return moved;
}

static size_t members_rank_spread(cl_remote_t *r, const char *chunk_id, unsigned spread,
                                  uint32_t *ids_out, char (*addrs_out)[256], size_t max);

size_t cl_members_rank(cl_remote_t *r, const char *chunk_id, uint32_t *ids_out,
                       char (*addrs_out)[256], size_t max)
{
    return members_rank_spread(r, chunk_id, r->cfg.replicas, ids_out, addrs_out, max);
}

/* spread: how many of the first ranks go to distinct zones (a chunk's replicas, or the
 * shards of an erasure-coded stripe). */
static size_t members_rank_spread(cl_remote_t *r, const char *chunk_id, unsigned spread,
                                  uint32_t *ids_out, char (*addrs_out)[256], size_t max)
{
    cl_place_node_t pn[64];
    uint32_t ids[64];
    char addrs[64][256], idstr[64][12], zones[64][META_ZONE_MAX];
    size_t n = 0;
    wh_mutex_lock(&r->lock);
    uint64_t now = wh_now_ns() / 1000000;
    /* Real free space above the reserve: a server without room for one more chunk there
     * takes no copy, the others weigh what they have above it. */
    uint64_t need = r->cfg.reserve_bytes + r->cfg.chunk_size;
    for (size_t i = 0; i < r->n_members && n < 64; i++) {
        if (!usable(&r->members[i], now) || r->members[i].free < need ||
            r->members[i].state != META_NODE_ACTIVE)
            continue; /* a draining server takes no new copy */
        snprintf(addrs[n], sizeof addrs[n], "%s", r->members[i].addr);
        ids[n] = r->members[i].id;
        snprintf(zones[n], sizeof zones[n], "%s", r->members[i].zone);
        pn[n].zone = zones[n];
        pn[n].free_bytes = r->members[i].free - r->cfg.reserve_bytes;
        n++;
    }
    wh_mutex_unlock(&r->lock);
    for (size_t i = 0; i < n; i++) {
        snprintf(idstr[i], sizeof idstr[i], "%" PRIu32, ids[i]);
        pn[i].id = idstr[i];
    }
    size_t rank[CL_PLACE_MAX];
    /* the first `replicas` on distinct zones where there are enough, then the spares */
    size_t k =
        cl_place_zoned(pn, n, chunk_id, spread, (unsigned)WH_MIN(max, (size_t)CL_PLACE_MAX), rank);
    /* a server that timed out lately goes after the others (it is slow, not down) */
    bool slow[CL_PLACE_MAX] = {0};
    size_t perm[CL_PLACE_MAX];
    for (size_t q = 0; q < k; q++)
        slow[q] = cl_client_node_slow(r->client, ids[rank[q]]);
    slow_last(slow, k, perm);
    for (size_t q = 0; q < k; q++) {
        ids_out[q] = ids[rank[perm[q]]];
        snprintf(addrs_out[q], 256, "%s", addrs[rank[perm[q]]]);
    }
    return k;
}

size_t cl_members_up(cl_remote_t *r)
{
    size_t n = 0;
    uint64_t now = wh_now_ns() / 1000000;
    wh_mutex_lock(&r->lock);
    for (size_t i = 0; i < r->n_members; i++)
        n += usable(&r->members[i], now);
    wh_mutex_unlock(&r->lock);
    return n;
}

size_t cl_members_for_write(cl_remote_t *r, const char *chunk_id, unsigned replicas, cl_job_t *jobs)
{
    uint32_t ids[CL_PLACE_MAX];
    char addrs[CL_PLACE_MAX][256];
    size_t k = members_rank_spread(r, chunk_id, replicas, ids, addrs, CL_PLACE_MAX);
    for (unsigned j = 0; j < replicas; j++) {
        jobs[j].ncand = 0;
        /* job j: rank j, then spares j+R, j+2R ... (distinct per job) */
        for (size_t q = j; q < k && jobs[j].ncand < CL_MAX_CANDIDATES; q += replicas) {
            char *a = strdup(addrs[q]);
            if (!a)
                break;
            jobs[j].cand[jobs[j].ncand] = a;
            jobs[j].cand_id[jobs[j].ncand++] = ids[q];
        }
    }
    return k;
}

void cl_members_for_read(cl_remote_t *r, const data_chunk_t *c, cl_job_t *j)
{
    j->ncand = 0;
    uint64_t now = wh_now_ns() / 1000000;
    wh_mutex_lock(&r->lock);
    /* Usable servers first, draining ones after the others (their copies are moving off, and
     * one may be collected under a reader that read the map before the move), then the rest;
     * a retired or removed server is never dialed. */
    for (int pass = 0; pass < 3; pass++) {
        for (uint32_t i = 0; i < c->n_replicas && j->ncand < CL_MAX_CANDIDATES; i++) {
            for (size_t m = 0; m < r->n_members; m++) {
                const cl_member_t *mb = &r->members[m];
                if (mb->id != c->replicas[i] || mb->retired || mb->state == META_NODE_REMOVED)
                    continue;
                int want = !usable(mb, now) ? 2 : mb->state == META_NODE_DRAINING ? 1 : 0;
                if (want != pass)
                    continue;
                char *a = strdup(mb->addr);
                if (a) {
                    j->cand[j->ncand] = a;
                    j->cand_id[j->ncand++] = mb->id;
                }
            }
        }
    }
    /* the usable ones lead: a slow one among them goes behind the others */
    size_t lead = 0;
    for (size_t q = 0; q < j->ncand; q++)
        for (size_t m = 0; m < r->n_members; m++)
            if (r->members[m].id == j->cand_id[q] && usable(&r->members[m], now) && lead == q)
                lead++;
    wh_mutex_unlock(&r->lock);
    bool slow[CL_MAX_CANDIDATES] = {0};
    size_t perm[CL_MAX_CANDIDATES];
    for (size_t q = 0; q < lead; q++)
        slow[q] = cl_client_node_slow(r->client, j->cand_id[q]);
    if (slow_last(slow, lead, perm)) {
        const char *cand[CL_MAX_CANDIDATES];
        uint32_t id[CL_MAX_CANDIDATES];
        for (size_t q = 0; q < lead; q++) {
            cand[q] = j->cand[perm[q]];
            id[q] = j->cand_id[perm[q]];
        }
        memcpy(j->cand, cand, lead * sizeof *cand);
        memcpy(j->cand_id, id, lead * sizeof *id);
    }
}

bool cl_members_can_read(cl_remote_t *r, const data_chunk_t *c)
{
    bool ok = false;
    wh_mutex_lock(&r->lock);
    for (uint32_t i = 0; i < c->n_replicas && !ok; i++)
        for (size_t m = 0; m < r->n_members && !ok; m++)
            ok = r->members[m].id == c->replicas[i] && r->members[m].up;
    wh_mutex_unlock(&r->lock);
    return ok;
}

bool cl_members_addr(cl_remote_t *r, uint32_t id, char addr[256])
{
    bool ok = false;
    wh_mutex_lock(&r->lock);
    for (size_t m = 0; m < r->n_members; m++)
        if (r->members[m].id == id) {
            snprintf(addr, 256, "%s", r->members[m].addr);
            ok = true;
        }
    wh_mutex_unlock(&r->lock);
    return ok;
}

/* The zone of member id into zone (false: not a member). */
static bool member_zone(cl_remote_t *r, uint32_t id, char zone[META_ZONE_MAX])
{
    bool ok = false;
    wh_mutex_lock(&r->lock);
    for (size_t m = 0; m < r->n_members; m++)
        if (r->members[m].id == id) {
            snprintf(zone, META_ZONE_MAX, "%s", r->members[m].zone);
            ok = true;
        }
    wh_mutex_unlock(&r->lock);
    return ok;
}

/* Retired (its directory was replaced) or removed: nothing on it to delete or dial. */
static bool member_retired(cl_remote_t *r, uint32_t id)
{
    bool ret = false;
    wh_mutex_lock(&r->lock);
    for (size_t m = 0; m < r->n_members; m++)
        if (r->members[m].id == id)
            ret = r->members[m].retired || r->members[m].state == META_NODE_REMOVED;
    wh_mutex_unlock(&r->lock);
    return ret;
}

/* One garbage-collection pass: delete what the queue hands out, report what was done. */
static void gc_pass(cl_remote_t *r)
{
    meta_gc_item_t *items = NULL;
    size_t n = 0;
    /* Copies on servers that are down stay queued and are not handed out: the batch is the
     * live servers', so a dead one's backlog never stops collection on the others. */
    unsigned live_s = (r->cfg.down_after_ms + 999) / 1000;
    if (meta_gc_take(r->cfg.meta, GC_BATCH, live_s ? live_s : 1, &items, &n) != WH_OK || n == 0) {
        free(items);
        return;
    }
    cl_job_t *jobs = calloc(n, sizeof *jobs);
    meta_gc_item_t *done = calloc(n, sizeof *done);
    size_t nd = 0;
    if (!jobs || !done)
        goto out;
    for (size_t i = 0; i < n; i++) {
        jobs[i].op = CL_OP_DEL;
        jobs[i].chunk = items[i].chunk_id;
        char a[256];
        if (!member_retired(r, items[i].node) && cl_members_addr(r, items[i].node, a)) {
            jobs[i].cand[0] = strdup(a);
            jobs[i].cand_id[0] = items[i].node;
            jobs[i].ncand = jobs[i].cand[0] ? 1 : 0;
        }
    }
    cl_client_run(r->client, jobs, n, r->cfg.parallel, NULL);
    for (size_t i = 0; i < n; i++) {
        /* A node no longer in the table, or retired (its data directory was replaced), has
         * nothing left to delete. */
        bool gone =
            !cl_members_addr(r, items[i].node, (char[256]){0}) || member_retired(r, items[i].node);
        if (jobs[i].st == WH_OK || gone) {
            done[nd++] = items[i];
            atomic_fetch_add(&r->gc_deleted, 1);
        } else {
            atomic_fetch_add(&r->gc_failed, 1);
        }
        free((char *)jobs[i].cand[0]);
    }
    if (nd)
        meta_gc_done(r->cfg.meta, done, nd);
out:
    free(jobs);
    free(done);
    free(items);
}

/* Relays chunk c through this gateway: read from one of its replicas other than `skip`
 * (checked against its crc), written to node to_id at to_addr (its intent already recorded).
 * Only for a source that cannot push (it answered 501: see copy_chunks). */
static bool relay_chunk(cl_remote_t *r, const data_chunk_t *c, uint32_t skip, uint32_t to_id,
                        const char *to_addr)
{
    uint8_t *buf = malloc(c->length ? c->length : 1);
    if (!buf)
        return false;
    cl_job_t get;
    memset(&get, 0, sizeof get);
    get.op = CL_OP_GET;
    get.chunk = c->id;
    get.len = c->length;
    get.dst = buf;
    get.check_crc = true;
    get.expect_crc = c->crc64nvme;
    data_chunk_t others = *c;
    others.n_replicas = 0;
    for (uint32_t i = 0; i < c->n_replicas; i++)
        if (c->replicas[i] != skip && c->replicas[i] != to_id)
            others.replicas[others.n_replicas++] = c->replicas[i];
    cl_members_for_read(r, &others, &get);
    bool ok = cl_client_run(r->client, &get, 1, 1, NULL) == WH_OK;
    cl_jobs_free_cands(&get, 1);
    cl_job_t put;
    memset(&put, 0, sizeof put);
    put.op = CL_OP_PUT;
    put.chunk = c->id;
    put.len = c->length;
    put.body = buf;
    put.cand[0] = strdup(to_addr);
    put.cand_id[0] = to_id;
    put.ncand = put.cand[0] ? 1 : 0;
    if (ok)
        ok = cl_client_run(r->client, &put, 1, 1, NULL) == WH_OK && put.crc == c->crc64nvme;
    cl_jobs_free_cands(&put, 1);
    free(buf);
    return ok;
}

/* Copies cs[i] to node to[i] (address to_addr[i]) for i < n, storage server to storage
 * server: the gateway asks a server holding a copy (not skip[i]: a lost or damaged one; 0:
 * any) to push it (op push, itoken.h). The source verifies its copy against its block table
 * and the chunk map's crc before it sends a byte, and sends it as a checked put, which the
 * target stores only when the bytes' crc64nvme equals the chunk map's; the gateway checks the
 * crc the target acknowledged too. Up to repair_parallel copies in flight, the next source
 * tried when one fails. Each target copy is queued as an intent first (a copy no row ends up
 * listing is collected). A source that cannot push (501: a TLS storage server without
 * --cluster-ca) has its chunk relayed through the gateway instead, counted. ok[i] says which
 * landed. */
static void copy_chunks(cl_remote_t *r, const data_chunk_t *cs, size_t n, const uint32_t *skip,
                        const uint32_t *to, char (*to_addr)[256], bool *ok)
{
    for (size_t i = 0; i < n; i++)
        ok[i] = false;
    if (n == 0)
        return;
    cl_job_t *push = calloc(n, sizeof *push), *intent = calloc(n, sizeof *intent);
    if (!push || !intent)
        goto out;
    for (size_t i = 0; i < n; i++) {
        intent[i].chunk = cs[i].id;
        intent[i].cand_id[0] = to[i];
        intent[i].ncand = 1;
    }
    if (cl_record_intents(r, intent, n) != WH_OK)
        goto out;
    for (size_t i = 0; i < n; i++) {
        const data_chunk_t *c = &cs[i];
        cl_job_t *j = &push[i];
        j->op = CL_OP_PUSH;
        j->chunk = c->id;
        j->len = c->length;
        j->check_crc = true;
        j->expect_crc = c->crc64nvme;
        j->_backoff = 1; /* the source's own put to the target has the plain bound */
        snprintf(j->mtok, sizeof j->mtok, "%016" PRIx64 "@%s", c->crc64nvme, to_addr[i]);
        data_chunk_t others = *c;
        others.n_replicas = 0;
        for (uint32_t k = 0; k < c->n_replicas; k++)
            if (c->replicas[k] != skip[i] && c->replicas[k] != to[i])
                others.replicas[others.n_replicas++] = c->replicas[k];
        cl_members_for_read(r, &others, j);
    }
    cl_client_run(r->client, push, n, r->cfg.repair_parallel, NULL);
    for (size_t i = 0; i < n; i++) {
        ok[i] = push[i].st == WH_OK;
        if (!ok[i] && push[i].http == 501) {
            ok[i] = relay_chunk(r, &cs[i], skip[i], to[i], to_addr[i]);
            atomic_fetch_add(&r->repair_relayed, 1);
        }
    }
    cl_jobs_free_cands(push, n);
out:
    free(push);
    free(intent);
}

/* Rebuilds the shard c (a row of an erasure-coded stripe, its copy on `lost` gone, damaged or
 * moving off) from k other shards of its stripe, in this gateway: the shards are read and
 * checked against their crcs, the missing one decoded and checked against its own crc from
 * the chunk map, then written (a PUT the receiver checks too) to `to` when to != 0 (a damaged
 * copy rewritten in place), else to the best-ranked server that holds no shard of the stripe
 * (zones as placement ranks them). The gateway and not a storage server: a rebuild needs k
 * sources and the decode, which a storage server's push (one source, one target) does not
 * do. *to_out gets the server written. */
static bool ec_rebuild(cl_remote_t *r, const data_chunk_t *c, uint32_t lost, uint32_t to,
                       uint32_t *to_out)
{
    data_ref_t st_ref = {{0}, NULL, 0};
    if (meta_chunk_stripe(r->cfg.meta, c->id, &st_ref) != WH_OK)
        return false;
    const data_chunk_t *rows = st_ref.chunks;
    unsigned k = rows[0].ec_k, n = k + rows[0].ec_m, ix = c->ec_index;
    bool ok = st_ref.n_chunks == n && ix < n && strcmp(rows[ix].id, c->id) == 0;
    for (unsigned i = 0; ok && i < n; i++)
        ok = rows[i].ec_index == i && rows[i].n_replicas == 1;
    if (!ok) {
        wh_warn(MOD, "shard %s: its stripe's rows are not k + m shards in order; not rebuilt",
                c->id);
        data_ref_clear(&st_ref);
        return false;
    }
    uint64_t slen = cl_ec_shard_len(rows[0].length, k);
    uint8_t *sh = malloc((size_t)(slen * n) + 1), *shards[CL_EC_MAX];
    bool good[CL_EC_MAX];
    char addr[256] = "";
    if (!sh) {
        data_ref_clear(&st_ref);
        return false;
    }
    for (unsigned i = 0; i < n; i++)
        shards[i] = sh + (size_t)i * slen;
    ok = cl_ec_fetch(r, rows, (int)ix, shards, good) >= k;
    if (ok) {
        good[ix] = false;
        ok = cl_ec_decode(k, n - k, slen, shards, good) == WH_OK &&
             wh_crc64nvme(0, shards[ix], (size_t)slen) == rows[ix].crc64nvme;
        if (!ok)
            wh_warn(MOD, "shard %s: decoded bytes do not have the chunk map's crc", c->id);
    }
    if (ok && to) {
        char a[256];
        ok = cl_members_addr(r, to, a);
        snprintf(addr, sizeof addr, "%s", a);
    } else if (ok) {
        uint32_t ids[CL_PLACE_MAX];
        char addrs[CL_PLACE_MAX][256];
        size_t nr = cl_members_rank(r, c->id, ids, addrs, CL_PLACE_MAX);
        for (size_t q = 0; q < nr && !to; q++) {
            bool has = ids[q] == lost;
            for (unsigned i = 0; i < n; i++)
                has |= rows[i].replicas[0] == ids[q];
            if (!has) {
                to = ids[q];
                snprintf(addr, sizeof addr, "%s", addrs[q]);
            }
        }
        ok = to != 0;
    }
    if (ok) {
        cl_job_t put;
        memset(&put, 0, sizeof put);
        put.chunk = c->id;
        put.cand_id[0] = to;
        put.ncand = 1;
        ok = cl_record_intents(r, &put, 1) == WH_OK;
        put.op = CL_OP_PUT;
        put.len = slen;
        put.body = shards[ix];
        put.cand[0] = strdup(addr);
        put.ncand = put.cand[0] ? 1 : 0;
        if (ok)
            ok = cl_client_run(r->client, &put, 1, 1, NULL) == WH_OK &&
                 put.crc == rows[ix].crc64nvme;
        cl_jobs_free_cands(&put, 1);
    }
    if (ok) {
        *to_out = to;
        atomic_fetch_add(&r->ec_rebuilt, 1);
        wh_info(MOD, "shard rebuilt chunk=%s shard=%u of %u+%u node=%" PRIu32 " (was %" PRIu32 ")",
                c->id, ix, k, n - k, to, lost);
    }
    free(sh);
    data_ref_clear(&st_ref);
    return ok;
}

/* Re-replicates chunks that had a copy on `dead`: each is copied from a live replica to the
 * best-ranked live server that holds no copy, storage server to storage server, all at once
 * (copy_chunks), then each replica is moved in the chunk map (which also queues the dead copy
 * for GC). */
enum { REPAIR_GROUP = CL_REPAIR_PARALLEL_MAX };
/* Why copies move: re-replication of lost copies (read from the other replicas only), a
 * drain or a rebalance (the copy that moves may be read too). */
enum { MV_REPAIR, MV_DRAIN, MV_REBALANCE };
/* A copy moved off a live server is deleted this long after the move: a GET that read the
 * chunk map before it may still ask that server (a lost copy goes at once: nobody reads it). */
#define MOVE_GC_DELAY_S 60
/* Moves the copy of cs[i] on from[i] (or from[0] when all share one) to want[i] (NULL: the
 * best-ranked server without a copy, zones first), n <= REPAIR_GROUP. Returns the chunks that
 * could not be moved now; *bytes gets the bytes that were. */
static size_t repair_group(cl_remote_t *r, const data_chunk_t *cs, size_t n, const uint32_t *from,
                           bool one_from, const uint32_t *want, int why, uint64_t *bytes)
{
    bool from_ok = why != MV_REPAIR;
    uint32_t to[REPAIR_GROUP], skip[REPAIR_GROUP];
    char(*to_addr)[256] = calloc(REPAIR_GROUP, 256);
    data_chunk_t *sel = calloc(REPAIR_GROUP, sizeof *sel);
    size_t slot[REPAIR_GROUP], ns = 0;
    bool ok[REPAIR_GROUP], done[REPAIR_GROUP];
    memset(done, 0, sizeof done);
    for (size_t i = 0; to_addr && sel && i < n && i < REPAIR_GROUP; i++) {
        const data_chunk_t *c = &cs[i];
        uint32_t dead = from[one_from ? 0 : i];
        if (c->ec_k) {
            /* a shard: rebuilt from its stripe, not copied (one copy only) */
            uint32_t t_id = 0;
            if (why != MV_REBALANCE && ec_rebuild(r, c, dead, 0, &t_id))
                done[i] = meta_chunk_move(r->cfg.meta, c->id, dead, t_id,
                                          from_ok ? MOVE_GC_DELAY_S : 0) == WH_OK;
            continue;
        }
        uint32_t ids[CL_PLACE_MAX];
        char addrs[CL_PLACE_MAX][256];
        size_t k = cl_members_rank(r, c->id, ids, addrs, CL_PLACE_MAX), t = k;
        /* the best-ranked server without a copy, in a zone none of the copies kept is in
         * where there is one (zones first, as placement) */
        char kept[CL_MAX_CANDIDATES][META_ZONE_MAX];
        size_t nk = 0;
        for (uint32_t j = 0; j < c->n_replicas && nk < CL_MAX_CANDIDATES; j++)
            if (c->replicas[j] != dead && member_zone(r, c->replicas[j], kept[nk]))
                nk++;
        for (size_t q = 0; want && q < k && t == k; q++)
            if (ids[q] == want[i])
                t = q;
        for (int pass = 0; !want && pass < 2 && t == k; pass++)
            for (size_t q = 0; q < k && t == k; q++) {
                bool has = false;
                for (uint32_t j = 0; j < c->n_replicas; j++)
                    has |= c->replicas[j] == ids[q];
                char zq[META_ZONE_MAX] = "";
                member_zone(r, ids[q], zq);
                for (size_t j = 0; pass == 0 && j < nk && !has; j++)
                    has = strcmp(kept[j], zq) == 0;
                if (!has)
                    t = q;
            }
        if (t == k)
            continue; /* no server without a copy is up: skipped */
        sel[ns] = *c;
        to[ns] = ids[t];
        skip[ns] = from_ok ? 0 : dead;
        snprintf(to_addr[ns], 256, "%s", addrs[t]);
        slot[ns++] = i;
    }
    copy_chunks(r, sel, ns, skip, to, to_addr, ok);
    for (size_t a = 0; a < ns; a++) {
        size_t i = slot[a];
        done[i] = ok[a] && meta_chunk_move(r->cfg.meta, cs[i].id, from[one_from ? 0 : i], to[a],
                                           from_ok ? MOVE_GC_DELAY_S : 0) == WH_OK;
    }
    size_t failed = 0;
    for (size_t i = 0; i < n; i++) {
        if (done[i]) {
            atomic_fetch_add(why == MV_DRAIN       ? &r->drain_chunks
                             : why == MV_REBALANCE ? &r->rebalance_chunks
                                                   : &r->repair_chunks,
                             1);
            atomic_fetch_add(why == MV_DRAIN       ? &r->drain_bytes
                             : why == MV_REBALANCE ? &r->rebalance_bytes
                                                   : &r->repair_bytes,
                             cs[i].length);
            *bytes += cs[i].length;
        } else {
            /* counted, and summed up once a minute per server by repair_pass (a line per
             * chunk every pass flooded the log when nothing could be done) */
            atomic_fetch_add(&r->repair_failures, 1);
            wh_debug(MOD, "moving chunk %s (copy on node %" PRIu32 ") failed or cannot be done now",
                     cs[i].id, from[one_from ? 0 : i]);
            failed++;
        }
    }
    free(to_addr);
    free(sel);
    return failed;
}

/* How many of the n chunks at cs go in one group: repair_parallel at most, and where a rate
 * applies (budget >= 0) no more bytes than the budget holds (at least one chunk). */
static size_t group_size(const cl_remote_t *r, const data_chunk_t *cs, size_t n, double budget)
{
    size_t cap = WH_MIN((size_t)WH_MAX(r->cfg.repair_parallel, 1u), (size_t)REPAIR_GROUP), g = 0;
    double sum = 0;
    while (g < n && g < cap && (budget < 0 || g == 0 || sum + (double)cs[g].length <= budget))
        sum += (double)cs[g++].length;
    return g;
}

static bool member_usable_now(cl_remote_t *r, uint32_t id, char addr[256])
{
    bool ok = false;
    uint64_t now = wh_now_ns() / 1000000;
    wh_mutex_lock(&r->lock);
    for (size_t m = 0; m < r->n_members; m++)
        if (r->members[m].id == id && usable(&r->members[m], now)) {
            snprintf(addr, 256, "%s", r->members[m].addr);
            ok = true;
        }
    wh_mutex_unlock(&r->lock);
    return ok;
}

/* Damaged copies (a read or a scrub failed a checksum and moved the copy aside): each is
 * rewritten on its own server from a good replica. A copy the chunk map no longer lists is
 * dropped; one on a server that is down waits (repair of the server covers it if it stays
 * down). */
static void damage_pass(cl_remote_t *r)
{
    enum { DAMAGE_BATCH = 64 };
    meta_gc_item_t *items = NULL;
    size_t n = 0;
    if (meta_damage_take(r->cfg.meta, DAMAGE_BATCH, &items, &n) != WH_OK) {
        free(items);
        return;
    }
    uint64_t pending = n;
    for (size_t i = 0; i < n; i++) {
        data_chunk_t c;
        wh_status_t st = meta_chunk_find(r->cfg.meta, items[i].chunk_id, &c);
        bool listed = false;
        for (uint32_t k = 0; st == WH_OK && k < c.n_replicas; k++)
            listed |= c.replicas[k] == items[i].node;
        if (st == WH_ERR_NOT_FOUND || (st == WH_OK && !listed)) {
            if (meta_damage_done(r->cfg.meta, items[i].node, items[i].chunk_id) == WH_OK)
                pending--;
            continue;
        }
        if (st == WH_OK && member_retired(r, items[i].node)) {
            /* retired or removed: repair re-replicates its copies; nothing to rewrite there */
            if (meta_damage_done(r->cfg.meta, items[i].node, items[i].chunk_id) == WH_OK)
                pending--;
            continue;
        }
        char addr[256];
        if (st != WH_OK || !member_usable_now(r, items[i].node, addr))
            continue;
        bool ok = false;
        uint32_t t_id = 0;
        if (c.ec_k) /* a shard: decoded from its stripe, rewritten on its server */
            ok = ec_rebuild(r, &c, items[i].node, items[i].node, &t_id);
        else
            copy_chunks(r, &c, 1, &items[i].node, &items[i].node, &addr, &ok);
        if (ok && meta_damage_done(r->cfg.meta, items[i].node, items[i].chunk_id) == WH_OK) {
            pending--;
            atomic_fetch_add(&r->damage_repaired, 1);
            atomic_fetch_add(&r->repair_bytes, c.length);
            wh_info(MOD, "damaged copy rewritten chunk=%s node=%" PRIu32, c.id, items[i].node);
        } else {
            atomic_fetch_add(&r->repair_failures, 1);
            wh_warn(MOD,
                    "rewriting damaged chunk %s on node %" PRIu32 " failed; retried next "
                    "pass",
                    items[i].chunk_id, items[i].node);
        }
    }
    atomic_store(&r->damage_pending, pending);
    free(items);
}

/* What repair does with a server's copies: nothing (REP_NONE), re-replicate them from the
 * other replicas (REP_LOST: retired, removed, or down longer than repair_after_s; a draining
 * server that is down too), or move them off, reading them from it as well (REP_DRAIN: a
 * draining server that is up; rate-limited by drain_rate). */
enum { REP_NONE, REP_LOST, REP_DRAIN };
static int repair_kind(const cl_remote_t *r, const cl_member_t *m)
{
    if (m->retired || m->state == META_NODE_REMOVED)
        return REP_LOST;
    if (m->state == META_NODE_DRAINING)
        return m->up ? REP_DRAIN : REP_LOST;
    return !m->up && m->age_s >= (int64_t)r->cfg.repair_after_s ? REP_LOST : REP_NONE;
}

static bool member_draining(cl_remote_t *r, uint32_t id)
{
    bool dr = false;
    wh_mutex_lock(&r->lock);
    for (size_t m = 0; m < r->n_members; m++)
        if (r->members[m].id == id)
            dr = r->members[m].state == META_NODE_DRAINING;
    wh_mutex_unlock(&r->lock);
    return dr;
}

static int member_repair_kind(cl_remote_t *r, uint32_t id)
{
    int k = REP_NONE;
    wh_mutex_lock(&r->lock);
    for (size_t m = 0; m < r->n_members; m++)
        if (r->members[m].id == id)
            k = repair_kind(r, &r->members[m]);
    wh_mutex_unlock(&r->lock);
    return k;
}

static char *repair_cursor(cl_remote_t *r, uint32_t node)
{
    for (size_t i = 0; i < r->n_repair_cursor; i++)
        if (r->repair_cursor[i].node == node)
            return r->repair_cursor[i].after;
    size_t i =
        r->n_repair_cursor < WH_ARRAY_SIZE(r->repair_cursor) ? r->n_repair_cursor++ : node % 64;
    r->repair_cursor[i].node = node;
    r->repair_cursor[i].after[0] = '\0';
    r->repair_cursor[i].warned_ms = 0;
    return r->repair_cursor[i].after;
}

static uint64_t *repair_warned(cl_remote_t *r, uint32_t node)
{
    for (size_t i = 0; i < r->n_repair_cursor; i++)
        if (r->repair_cursor[i].node == node)
            return &r->repair_cursor[i].warned_ms;
    return NULL;
}

/* One repair pass over the servers down longer than repair_after_s, retired, removed or
 * draining: batches of REPAIR_BATCH chunks each, walked from where the last pass stopped (a
 * chunk that cannot be repaired now, its every copy on dead servers or no server with room, is
 * skipped, not retried before the others), for at most PASS_MS, the membership refreshed after
 * every batch (a server back stops its repair; one more down joins the next pass). A draining
 * server's copies move at drain_rate bytes/s at most (a budget topped up every pass; the state
 * lives in the node table, so a restarted or new leader goes on). The backlogs are counted in
 * the database. */
static void repair_pass(cl_remote_t *r)
{
    enum { REPAIR_BATCH = 64, PASS_MS = 5000, WARN_MS = 60000 };
    uint32_t dead[64], drain[64], lost[64];
    size_t nd = 0, ndr = 0, nl = 0;
    wh_mutex_lock(&r->lock);
    for (size_t i = 0; i < r->n_members; i++) {
        int k = repair_kind(r, &r->members[i]);
        if (k != REP_NONE && nd < 64)
            dead[nd++] = r->members[i].id;
        if (k == REP_LOST && nl < 64)
            lost[nl++] = r->members[i].id;
        if (r->members[i].state == META_NODE_DRAINING && !r->members[i].retired && ndr < 64)
            drain[ndr++] = r->members[i].id;
    }
    wh_mutex_unlock(&r->lock);
    uint64_t t0 = wh_now_ns() / 1000000;
    double rate = (double)r->cfg.drain_rate;
    if (ndr == 0 || atomic_load(&r->drain_nodes) == 0) {
        r->drain_last_ms = t0; /* no credit saved up while nothing drained */
        r->drain_budget = 0;
    }
    r->drain_budget += rate * (double)(t0 - r->drain_last_ms) / 1000.0;
    r->drain_last_ms = t0;
    if (r->drain_budget > rate * PASS_MS / 1000.0)
        r->drain_budget = rate * PASS_MS / 1000.0; /* no burst bigger than one pass's worth */
    for (size_t d = 0; d < nd; d++) {
        char *after = repair_cursor(r, dead[d]);
        bool more = true;
        size_t failed = 0;
        int kind = REP_NONE;
        while (more && wh_now_ns() / 1000000 - t0 < PASS_MS &&
               (kind = member_repair_kind(r, dead[d])) != REP_NONE) {
            bool drains = kind == REP_DRAIN || member_draining(r, dead[d]);
            if (drains && r->drain_budget <= 0)
                break; /* rate: the next pass goes on from here */
            data_chunk_t *cs = NULL;
            size_t n = 0;
            if (meta_chunks_on_node(r->cfg.meta, dead[d], after, REPAIR_BATCH, &cs, &n) != WH_OK)
                break;
            if (n)
                wh_debug(MOD, "%s chunks of node %" PRIu32 " batch=%zu after=%s",
                         drains ? "draining" : "repairing", dead[d], n, after[0] ? after : "-");
            size_t i = 0, g = 0;
            for (; i < n && member_repair_kind(r, dead[d]) == kind; i += g) {
                if (drains && r->drain_budget <= 0)
                    break;
                g = group_size(r, &cs[i], n - i, drains ? r->drain_budget : -1);
                uint64_t moved = 0;
                failed += repair_group(r, &cs[i], g, &dead[d], true, NULL,
                                       kind == REP_DRAIN ? MV_DRAIN : MV_REPAIR, &moved);
                if (drains)
                    r->drain_budget -= (double)moved;
                snprintf(after, DATA_ID_LEN + 1, "%s", cs[i + g - 1].id);
            }
            if (n < REPAIR_BATCH && i >= n) {
                after[0] = '\0'; /* the end: the next pass starts over (the skipped ones) */
                more = false;
            }
            free(cs);
            refresh(r);
            /* the backlog as it stands after every batch, not only at the end of a pass */
            uint64_t left = 0;
            if (kind == REP_LOST &&
                meta_chunks_on_nodes_count(r->cfg.meta, lost, nl, &left) == WH_OK)
                atomic_store(&r->repair_pending, left);
        }
        uint64_t *w = repair_warned(r, dead[d]);
        if (failed && w && (t0 - *w >= WARN_MS || !*w)) {
            *w = t0;
            wh_warn(MOD,
                    "%zu chunks with a copy on node %" PRIu32 " could not be %s this pass (no "
                    "live source, or no server without a copy has room); retried every pass, "
                    "said at most once a minute",
                    failed, dead[d], kind == REP_DRAIN ? "moved off" : "repaired");
        }
    }
    uint64_t pending = 0;
    if (meta_chunks_on_nodes_count(r->cfg.meta, lost, nl, &pending) == WH_OK)
        atomic_store(&r->repair_pending, pending);
    atomic_store(&r->repair_nodes, nl);
    if (meta_chunks_on_nodes_count(r->cfg.meta, drain, ndr, &pending) == WH_OK)
        atomic_store(&r->drain_pending, pending);
    atomic_store(&r->drain_nodes, ndr);
}

/* The membership placement ranks over (usable active servers, their zones): a rebalance
 * walk runs once after it changes (a server filling up is not a change: that is placement's
 * business, not a reason to move copies around). */
static uint64_t placement_sig(cl_remote_t *r)
{
    uint64_t h = 1469598103934665603ULL;
    wh_mutex_lock(&r->lock);
    for (size_t i = 0; i < r->n_members; i++) {
        const cl_member_t *m = &r->members[i];
        if (!m->up || m->state != META_NODE_ACTIVE)
            continue; /* (a suspect server is not a change either: it is avoided 5 s) */
        h = (h ^ m->id) * 1099511628211ULL;
        for (const char *z = m->zone; *z; z++)
            h = (h ^ (uint8_t)*z) * 1099511628211ULL;
        h = (h ^ 0xff) * 1099511628211ULL;
    }
    wh_mutex_unlock(&r->lock);
    return h;
}

/* Score of (chunk, node) as placement weighs it now, and whether the node is a usable active
 * server (false: leave the chunk alone). */
static bool member_score(cl_remote_t *r, const char *chunk_id, uint32_t id, double *score,
                         char zone[META_ZONE_MAX])
{
    bool ok = false;
    uint64_t free_b = 0, now = wh_now_ns() / 1000000;
    wh_mutex_lock(&r->lock);
    for (size_t m = 0; m < r->n_members; m++)
        if (r->members[m].id == id && usable(&r->members[m], now) &&
            r->members[m].state == META_NODE_ACTIVE) {
            ok = true;
            free_b = r->members[m].free > r->cfg.reserve_bytes
                         ? r->members[m].free - r->cfg.reserve_bytes
                         : 0;
            snprintf(zone, META_ZONE_MAX, "%s", r->members[m].zone);
        }
    wh_mutex_unlock(&r->lock);
    char idstr[12];
    snprintf(idstr, sizeof idstr, "%" PRIu32, id);
    *score = cl_place_score(chunk_id, idstr, free_b);
    return ok;
}

static size_t zones_distinct(char (*z)[META_ZONE_MAX], size_t n)
{
    size_t d = 0;
    for (size_t i = 0; i < n; i++) {
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++)
            seen = strcmp(z[i], z[j]) == 0;
        d += !seen;
    }
    return d;
}

/* Where a chunk whose copies are all on usable active servers should move one copy: to the
 * first of its placement's top `replicas` without a copy, from a copy outside them (one in
 * that server's zone first), when that spreads the copies over more zones or the new server
 * outranks the old one clearly (REBALANCE_GAIN: free-space drift alone moves nothing).
 * False: it stays. */
#define REBALANCE_GAIN 1.25
static bool rebalance_move(cl_remote_t *r, const data_chunk_t *c, uint32_t *from, uint32_t *to)
{
    unsigned R = r->cfg.replicas;
    if (c->ec_k)
        return false; /* a shard of an erasure-coded stripe: placed with its stripe */
    if (c->n_replicas != R || R > CL_MAX_REPLICAS)
        return false; /* repair's or nobody's business */
    double sc[CL_MAX_REPLICAS];
    char zc[CL_MAX_REPLICAS][META_ZONE_MAX];
    for (uint32_t j = 0; j < R; j++)
        if (!member_score(r, c->id, c->replicas[j], &sc[j], zc[j]))
            return false; /* a copy on a server down, draining or removed: not now */
    uint32_t ids[CL_PLACE_MAX];
    char addrs[CL_PLACE_MAX][256];
    size_t k = cl_members_rank(r, c->id, ids, addrs, CL_PLACE_MAX);
    if (k < R)
        return false;
    size_t t = R;
    for (size_t q = 0; q < R && t == R; q++) {
        bool has = false;
        for (uint32_t j = 0; j < R; j++)
            has |= c->replicas[j] == ids[q];
        if (!has)
            t = q;
    }
    if (t == R)
        return false; /* on its placement already */
    double st;
    char zt[META_ZONE_MAX];
    if (!member_score(r, c->id, ids[t], &st, zt))
        return false;
    int f = -1;
    for (int pass = 0; pass < 2 && f < 0; pass++)
        for (uint32_t j = 0; j < R && f < 0; j++) {
            bool ideal = false;
            for (size_t q = 0; q < R; q++)
                ideal |= c->replicas[j] == ids[q];
            if (!ideal && (pass == 1 || strcmp(zc[j], zt) == 0))
                f = (int)j;
        }
    if (f < 0)
        return false;
    size_t before = zones_distinct(zc, R);
    memcpy(zc[f], zt, sizeof zt);
    size_t after = zones_distinct(zc, R);
    if (after < before || (after == before && st < sc[f] * REBALANCE_GAIN))
        return false;
    *from = c->replicas[f];
    *to = ids[t];
    return true;
}

/* After the membership changes (a server joins, or one comes back), one walk over every chunk
 * moves copies toward where placement now puts them (rebalance_move), at rebalance_rate
 * bytes/s at most, after repair and drain are done (they come first), from where the last
 * pass stopped. A walk that ends is not repeated until the membership changes again. */
static void rebalance_pass(cl_remote_t *r)
{
    enum { BATCH = 64, PASS_MS = 3000 };
    if (!r->cfg.rebalance_rate || r->cfg.replicas == 0)
        return;
    uint64_t sig = placement_sig(r), t0 = wh_now_ns() / 1000000;
    if (sig != r->rb_sig) {
        r->rb_sig = sig;
        r->rb_active = true;
        r->rb_after[0] = '\0';
        r->rb_budget = 0;
        r->rb_last_ms = t0;
    }
    if (!r->rb_active)
        return;
    if (atomic_load(&r->repair_pending) || atomic_load(&r->drain_pending) ||
        atomic_load(&r->damage_pending)) {
        r->rb_last_ms = t0; /* no credit while waiting */
        return;
    }
    double rate = (double)r->cfg.rebalance_rate;
    r->rb_budget += rate * (double)(t0 - r->rb_last_ms) / 1000.0;
    r->rb_last_ms = t0;
    if (r->rb_budget > rate * PASS_MS / 1000.0)
        r->rb_budget = rate * PASS_MS / 1000.0;
    while (r->rb_budget > 0 && wh_now_ns() / 1000000 - t0 < PASS_MS) {
        data_chunk_t *cs = NULL;
        size_t n = 0;
        if (meta_chunks_page(r->cfg.meta, r->rb_after, BATCH, &cs, &n) != WH_OK)
            return;
        size_t i = 0;
        while (i < n && r->rb_budget > 0) {
            data_chunk_t grp[REPAIR_GROUP];
            uint32_t from[REPAIR_GROUP], to[REPAIR_GROUP];
            size_t g = 0, cap = WH_MIN((size_t)r->cfg.repair_parallel, (size_t)REPAIR_GROUP);
            double sum = 0;
            for (; i < n && g < cap && sum < r->rb_budget; i++)
                if (rebalance_move(r, &cs[i], &from[g], &to[g])) {
                    sum += (double)cs[i].length;
                    grp[g++] = cs[i];
                }
            if (g) {
                uint64_t moved = 0;
                repair_group(r, grp, g, from, false, to, MV_REBALANCE, &moved);
                r->rb_budget -= (double)moved;
            }
            snprintf(r->rb_after, sizeof r->rb_after, "%s", cs[i - 1].id);
        }
        bool end = n < BATCH && i >= n;
        free(cs);
        if (end) {
            r->rb_active = false;
            atomic_fetch_add(&r->rebalance_walks, 1);
            wh_info(MOD, "rebalance walk done: %" PRIu64 " chunks moved in all",
                    (uint64_t)atomic_load(&r->rebalance_chunks));
            return;
        }
    }
}

static void *members_main(void *arg)
{
    cl_remote_t *r = arg;
    uint64_t last_gc = 0;
    wh_mutex_lock(&r->lock);
    while (!r->stop) {
        /* nudge is set under the lock (cl_members_nudge): read and clear it under it too */
        bool nudged = r->nudge;
        r->nudge = false;
        wh_mutex_unlock(&r->lock);
        refresh(r);
        uint64_t now = wh_now_ns() / 1000000;
        if (now - last_gc >= r->cfg.gc_period_ms || nudged) {
            last_gc = now;
            /* Every pass: the lock lives in a PostgreSQL session, and a restart of the
             * database ends it; whoever takes it then leads, and a gateway whose session
             * was lost and that lost the race stops. */
            bool lead = meta_lock_try(r->cfg.meta, CL_LOCK_MAINTENANCE) == WH_OK;
            if (lead != atomic_exchange(&r->leader, lead))
                wh_info(MOD, "%s",
                        lead ? "this gateway now runs garbage collection and repair"
                             : "this gateway no longer holds the maintenance lock");
            if (atomic_load(&r->leader)) {
                gc_pass(r);
                damage_pass(r);
                repair_pass(r);
                rebalance_pass(r);
                meta_cluster_status_t cs = {
                    .repair_pending = atomic_load(&r->repair_pending),
                    .repair_nodes = atomic_load(&r->repair_nodes),
                    .drain_pending = atomic_load(&r->drain_pending),
                    .damage_pending = atomic_load(&r->damage_pending),
                };
                snprintf(cs.leader, sizeof cs.leader, "%s",
                         r->cfg.self_addr ? r->cfg.self_addr : "");
                meta_cluster_status_put(r->cfg.meta, &cs); /* best effort: a view */
            }
        }
        wh_mutex_lock(&r->lock);
        if (r->stop)
            break;
        if (r->nudge)
            continue; /* nudged meanwhile: its broadcast came before this wait */
        struct timespec dl;
        clock_gettime(CLOCK_REALTIME, &dl);
        uint64_t ns = (uint64_t)dl.tv_nsec + (uint64_t)r->cfg.refresh_ms * 1000000ULL;
        dl.tv_sec += (time_t)(ns / 1000000000ULL);
        dl.tv_nsec = (long)(ns % 1000000000ULL);
        wh_cond_timedwait(&r->cond, &r->lock, &dl);
    }
    wh_mutex_unlock(&r->lock);
    return NULL;
}

wh_status_t cl_members_start(cl_remote_t *r)
{
    refresh(r);
    if (pthread_create(&r->thread, NULL, members_main, r) != 0)
        return WH_ERR_NOMEM;
    r->thread_started = true;
    return WH_OK;
}

void cl_members_stop(cl_remote_t *r)
{
    if (!r->thread_started)
        return;
    wh_mutex_lock(&r->lock);
    r->stop = true;
    pthread_cond_broadcast(&r->cond);
    wh_mutex_unlock(&r->lock);
    pthread_join(r->thread, NULL);
    r->thread_started = false;
    if (atomic_load(&r->leader))
        meta_lock_release(r->cfg.meta, CL_LOCK_MAINTENANCE);
}

void cl_members_nudge(cl_remote_t *r)
{
    wh_mutex_lock(&r->lock);
    r->nudge = true;
    pthread_cond_broadcast(&r->cond);
    wh_mutex_unlock(&r->lock);
}
