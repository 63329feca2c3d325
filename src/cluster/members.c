/* Membership of the cluster as the gateway sees it (refreshed from the metadata database),
 * placement candidates, and the maintenance loop: one gateway at a time (an advisory lock)
 * deletes chunks that the garbage-collection queue hands out. */
#include "base/log.h"
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
        v[i].up = age_ms <= (int64_t)r->cfg.down_after_ms;
        v[i].age_s = age_ms / 1000;
    }
    free(nodes);
    qsort(v, n, sizeof *v, member_cmp);
    wh_mutex_lock(&r->lock);
    for (size_t i = 0; i < n; i++) {
        bool was_up = false, found = false;
        for (size_t j = 0; j < r->n_members; j++)
            if (r->members[j].id == v[i].id) {
                found = true;
                was_up = r->members[j].up;
            }
        if (!found || was_up != v[i].up)
            wh_info(MOD, "storage node %s id=%" PRIu32 " addr=%s", v[i].up ? "up" : "down",
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
                wh_info(MOD, "storage node suspect id=%" PRIu32 " addr=%s: avoided for %u ms",
                        id, r->members[i].addr, r->cfg.down_after_ms);
            r->members[i].suspect_until = until;
        }
    wh_mutex_unlock(&r->lock);
}

size_t cl_members_rank(cl_remote_t *r, const char *chunk_id, uint32_t *ids_out,
                       char (*addrs_out)[256], size_t max)
{
    cl_place_node_t pn[64];
    uint32_t ids[64];
    char addrs[64][256], idstr[64][12];
    size_t n = 0;
    wh_mutex_lock(&r->lock);
    uint64_t now = wh_now_ns() / 1000000;
    for (size_t i = 0; i < r->n_members && n < 64; i++) {
        if (!usable(&r->members[i], now))
            continue;
        snprintf(addrs[n], sizeof addrs[n], "%s", r->members[i].addr);
        ids[n] = r->members[i].id;
        pn[n].free_bytes = r->members[i].free;
        n++;
    }
    wh_mutex_unlock(&r->lock);
    for (size_t i = 0; i < n; i++) {
        snprintf(idstr[i], sizeof idstr[i], "%" PRIu32, ids[i]);
        pn[i].id = idstr[i];
    }
    size_t rank[CL_PLACE_MAX];
    size_t k = cl_place(pn, n, chunk_id, (unsigned)WH_MIN(max, (size_t)CL_PLACE_MAX), rank);
    for (size_t q = 0; q < k; q++) {
        ids_out[q] = ids[rank[q]];
        snprintf(addrs_out[q], 256, "%s", addrs[rank[q]]);
    }
    return k;
}

size_t cl_members_for_write(cl_remote_t *r, const char *chunk_id, unsigned replicas,
                            cl_job_t *jobs)
{
    uint32_t ids[CL_PLACE_MAX];
    char addrs[CL_PLACE_MAX][256];
    size_t k = cl_members_rank(r, chunk_id, ids, addrs, CL_PLACE_MAX);
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

void cl_members_for_read(cl_remote_t *r, const store_chunk_t *c, cl_job_t *j)
{
    j->ncand = 0;
    uint64_t now = wh_now_ns() / 1000000;
    wh_mutex_lock(&r->lock);
    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t i = 0; i < c->n_replicas && j->ncand < CL_MAX_CANDIDATES; i++) {
            for (size_t m = 0; m < r->n_members; m++) {
                const cl_member_t *mb = &r->members[m];
                if (mb->id != c->replicas[i] || usable(mb, now) != (pass == 0))
                    continue;
                char *a = strdup(mb->addr);
                if (a) {
                    j->cand[j->ncand] = a;
                    j->cand_id[j->ncand++] = mb->id;
                }
            }
        }
    }
    wh_mutex_unlock(&r->lock);
}

bool cl_members_can_read(cl_remote_t *r, const store_chunk_t *c)
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

/* One garbage-collection pass: delete what the queue hands out, report what was done. */
static void gc_pass(cl_remote_t *r)
{
    meta_gc_item_t *items = NULL;
    size_t n = 0;
    if (meta_gc_take(r->cfg.meta, GC_BATCH, &items, &n) != WH_OK || n == 0) {
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
        if (cl_members_addr(r, items[i].node, a)) {
            jobs[i].cand[0] = strdup(a);
            jobs[i].cand_id[0] = items[i].node;
            jobs[i].ncand = jobs[i].cand[0] ? 1 : 0;
        }
    }
    cl_client_run(r->client, jobs, n, r->cfg.parallel, NULL);
    for (size_t i = 0; i < n; i++) {
        /* A node no longer in the table has nothing left to delete. */
        bool gone = !cl_members_addr(r, items[i].node, (char[256]){0});
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

/* Re-replicates one chunk that had a copy on `dead`: read it from a live replica (checked
 * against its crc), write it to the best-ranked live server that holds no copy, then move the
 * replica in the chunk map (which also queues the dead copy for GC). */
static bool repair_chunk(cl_remote_t *r, const store_chunk_t *c, uint32_t dead)
{
    uint32_t ids[CL_PLACE_MAX];
    char addrs[CL_PLACE_MAX][256];
    size_t k = cl_members_rank(r, c->id, ids, addrs, CL_PLACE_MAX);
    size_t t = k;
    for (size_t q = 0; q < k && t == k; q++) {
        bool has = false;
        for (uint32_t i = 0; i < c->n_replicas; i++)
            has |= c->replicas[i] == ids[q];
        if (!has)
            t = q;
    }
    if (t == k)
        return false; /* no server without a copy is up */
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
    store_chunk_t others = *c;
    others.n_replicas = 0;
    for (uint32_t i = 0; i < c->n_replicas; i++)
        if (c->replicas[i] != dead)
            others.replicas[others.n_replicas++] = c->replicas[i];
    cl_members_for_read(r, &others, &get);
    bool ok = cl_client_run(r->client, &get, 1, 1, NULL) == WH_OK;
    for (size_t i = 0; i < get.ncand; i++)
        free((char *)get.cand[i]);
    cl_job_t put;
    memset(&put, 0, sizeof put);
    put.op = CL_OP_PUT;
    put.chunk = c->id;
    put.len = c->length;
    put.body = buf;
    put.cand[0] = strdup(addrs[t]);
    put.cand_id[0] = ids[t];
    put.ncand = put.cand[0] ? 1 : 0;
    if (ok)
        ok = cl_record_intents(r, &put, 1) == WH_OK &&
             cl_client_run(r->client, &put, 1, 1, NULL) == WH_OK &&
             put.crc == c->crc64nvme &&
             meta_chunk_move(r->cfg.meta, c->id, dead, ids[t]) == WH_OK;
    free((char *)put.cand[0]);
    free(buf);
    if (ok) {
        atomic_fetch_add(&r->repair_chunks, 1);
        atomic_fetch_add(&r->repair_bytes, c->length);
    } else {
        atomic_fetch_add(&r->repair_failures, 1);
        wh_warn(MOD, "repair of chunk %s (copy on node %" PRIu32 ") failed; retried next pass",
                c->id, dead);
    }
    return ok;
}

/* One repair pass over the servers down longer than repair_after_s: at most REPAIR_BATCH
 * chunks each. */
static void repair_pass(cl_remote_t *r)
{
    enum { REPAIR_BATCH = 64 };
    uint32_t dead[64];
    size_t nd = 0;
    wh_mutex_lock(&r->lock);
    for (size_t i = 0; i < r->n_members && nd < 64; i++)
        if (!r->members[i].up && r->members[i].age_s >= (int64_t)r->cfg.repair_after_s)
            dead[nd++] = r->members[i].id;
    wh_mutex_unlock(&r->lock);
    uint64_t pending = 0;
    for (size_t d = 0; d < nd; d++) {
        store_chunk_t *cs = NULL;
        size_t n = 0;
        if (meta_chunks_on_node(r->cfg.meta, dead[d], "", REPAIR_BATCH, &cs, &n) != WH_OK)
            continue;
        if (n)
            wh_info(MOD, "repairing chunks of node %" PRIu32 " batch=%zu", dead[d], n);
        pending += n;
        for (size_t i = 0; i < n; i++)
            if (repair_chunk(r, &cs[i], dead[d]))
                pending--;
        free(cs);
    }
    atomic_store(&r->repair_nodes, nd);
    atomic_store(&r->repair_pending, pending);
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
            if (!atomic_load(&r->leader) &&
                meta_lock_try(r->cfg.meta, CL_LOCK_MAINTENANCE) == WH_OK) {
                atomic_store(&r->leader, true);
                wh_info(MOD, "this gateway now runs garbage collection and repair");
            }
            if (atomic_load(&r->leader)) {
                gc_pass(r);
                repair_pass(r);
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
