/* SPDX-License-Identifier: Apache-2.0 */
/* The maintenance gateway's repair (members.c runs it): copies lost with a node (retired,
 * removed or long silent) or on a draining node are made again on others, pushed by a
 * surviving holder (or relayed by the gateway), erasure-coded shards rebuilt from their
 * stripe; damaged copies a storage server reported are rewritten from a good one. */
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
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MOD "members"

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

/* A copy moved off a live server is deleted this long after the move: a GET that read the
 * chunk map before it may still ask that server (a lost copy goes at once: nobody reads it). */
#define MOVE_GC_DELAY_S 60
/* Moves the copy of cs[i] on from[i] (or from[0] when all share one) to want[i] (NULL: the
 * best-ranked server without a copy, zones first), n <= CL_REPAIR_GROUP. Returns the chunks that
 * could not be moved now; *bytes gets the bytes that were. */
size_t cl_repair_group(cl_remote_t *r, const data_chunk_t *cs, size_t n, const uint32_t *from,
                       bool one_from, const uint32_t *want, int why, uint64_t *bytes)
{
    bool from_ok = why != CL_MOVE_REPAIR;
    uint32_t to[CL_REPAIR_GROUP], skip[CL_REPAIR_GROUP];
    char(*to_addr)[256] = calloc(CL_REPAIR_GROUP, 256);
    data_chunk_t *sel = calloc(CL_REPAIR_GROUP, sizeof *sel);
    size_t slot[CL_REPAIR_GROUP], ns = 0;
    bool ok[CL_REPAIR_GROUP], done[CL_REPAIR_GROUP];
    memset(done, 0, sizeof done);
    for (size_t i = 0; to_addr && sel && i < n && i < CL_REPAIR_GROUP; i++) {
        const data_chunk_t *c = &cs[i];
        uint32_t dead = from[one_from ? 0 : i];
        if (c->ec_k) {
            /* a shard: rebuilt from its stripe, not copied (one copy only) */
            uint32_t t_id = 0;
            if (why != CL_MOVE_REBALANCE && ec_rebuild(r, c, dead, 0, &t_id))
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
            if (c->replicas[j] != dead && cl_member_zone(r, c->replicas[j], kept[nk]))
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
                cl_member_zone(r, ids[q], zq);
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
            atomic_fetch_add(why == CL_MOVE_DRAIN       ? &r->drain_chunks
                             : why == CL_MOVE_REBALANCE ? &r->rebalance_chunks
                                                        : &r->repair_chunks,
                             1);
            atomic_fetch_add(why == CL_MOVE_DRAIN       ? &r->drain_bytes
                             : why == CL_MOVE_REBALANCE ? &r->rebalance_bytes
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
    size_t cap = WH_MIN((size_t)WH_MAX(r->cfg.repair_parallel, 1u), (size_t)CL_REPAIR_GROUP), g = 0;
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
        if (r->members[m].id == id && cl_member_usable(&r->members[m], now)) {
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
void cl_repair_damage_pass(cl_remote_t *r)
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
        if (st == WH_OK && cl_member_retired(r, items[i].node)) {
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
void cl_repair_pass(cl_remote_t *r)
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
                failed +=
                    cl_repair_group(r, &cs[i], g, &dead[d], true, NULL,
                                    kind == REP_DRAIN ? CL_MOVE_DRAIN : CL_MOVE_REPAIR, &moved);
                if (drains)
                    r->drain_budget -= (double)moved;
                snprintf(after, DATA_ID_LEN + 1, "%s", cs[i + g - 1].id);
            }
            if (n < REPAIR_BATCH && i >= n) {
                after[0] = '\0'; /* the end: the next pass starts over (the skipped ones) */
                more = false;
            }
            free(cs);
            cl_members_refresh(r);
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
