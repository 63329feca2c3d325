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
void cl_members_refresh(cl_remote_t *r)
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

bool cl_member_usable(const cl_member_t *m, uint64_t now_ms)
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
            if (cl_member_usable(&r->members[i], until - r->cfg.down_after_ms))
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
        if (!cl_member_usable(&r->members[i], now) || r->members[i].free < need ||
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
        n += cl_member_usable(&r->members[i], now);
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
                int want = !cl_member_usable(mb, now) ? 2 : mb->state == META_NODE_DRAINING ? 1 : 0;
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
            if (r->members[m].id == j->cand_id[q] && cl_member_usable(&r->members[m], now) &&
                lead == q)
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
bool cl_member_zone(cl_remote_t *r, uint32_t id, char zone[META_ZONE_MAX])
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
bool cl_member_retired(cl_remote_t *r, uint32_t id)
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
        if (!cl_member_retired(r, items[i].node) && cl_members_addr(r, items[i].node, a)) {
            jobs[i].cand[0] = strdup(a);
            jobs[i].cand_id[0] = items[i].node;
            jobs[i].ncand = jobs[i].cand[0] ? 1 : 0;
        }
    }
    cl_client_run(r->client, jobs, n, r->cfg.parallel, NULL);
    for (size_t i = 0; i < n; i++) {
        /* A node no longer in the table, or retired (its data directory was replaced), has
         * nothing left to delete. */
        bool gone = !cl_members_addr(r, items[i].node, (char[256]){0}) ||
                    cl_member_retired(r, items[i].node);
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
        if (r->members[m].id == id && cl_member_usable(&r->members[m], now) &&
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
            data_chunk_t grp[CL_REPAIR_GROUP];
            uint32_t from[CL_REPAIR_GROUP], to[CL_REPAIR_GROUP];
            size_t g = 0, cap = WH_MIN((size_t)r->cfg.repair_parallel, (size_t)CL_REPAIR_GROUP);
            double sum = 0;
            for (; i < n && g < cap && sum < r->rb_budget; i++)
                if (rebalance_move(r, &cs[i], &from[g], &to[g])) {
                    sum += (double)cs[i].length;
                    grp[g++] = cs[i];
                }
            if (g) {
                uint64_t moved = 0;
                cl_repair_group(r, grp, g, from, false, to, CL_MOVE_REBALANCE, &moved);
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
        cl_members_refresh(r);
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
                cl_repair_damage_pass(r);
                cl_repair_pass(r);
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
    cl_members_refresh(r);
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
