/* SPDX-License-Identifier: Apache-2.0 */
/* The gateway's data table over storage servers (see remote.h): the table and its metrics;
 * its writers are remote_write.c, its readers remote_read.c. */
#include "cluster/remote.h"
#include "base/codec.h"
#include "base/crc.h"
#include "base/digest.h"
#include "base/log.h"
#include "cluster/ec.h"
#include "cluster/place.h"
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

void cl_remote_config_init(cl_remote_config_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->chunk_size = CL_DEFAULT_CHUNK;
    cfg->replicas = CL_DEFAULT_REPLICAS;
    cfg->parallel = 16;
    cfg->down_after_ms = 5000;
    cfg->refresh_ms = 1000;
    cfg->gc_period_ms = 2000;
    cfg->orphan_grace_s = 3600;
    cfg->repair_after_s = 120;
    cfg->reserve_bytes = 256ULL << 20;
    cfg->drain_rate = 64ULL << 20;
    cfg->rebalance_rate = 16ULL << 20;
    /* Copies in flight at once: the gateway only sends instructions (the bytes go from
     * storage server to storage server), so this is sized from the host, within a cap. */
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    cfg->repair_parallel =
        (unsigned)WH_MIN(WH_MAX(4 * (ncpu > 0 ? ncpu : 1), 8), CL_REPAIR_PARALLEL_MAX);
}

/* Queues every candidate copy of jobs[0..n) for garbage collection after the orphan grace:
 * a commit that lists a copy makes its entry stale; a PUT that dies leaves entries that
 * remove what it wrote. */
wh_status_t cl_record_intents(cl_remote_t *r, const cl_job_t *jobs, size_t n)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += jobs[i].ncand;
    meta_gc_item_t *items = calloc(total ? total : 1, sizeof *items);
    if (!items)
        return WH_ERR_NOMEM;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t c = 0; c < jobs[i].ncand; c++) {
            snprintf(items[k].chunk_id, sizeof items[k].chunk_id, "%s", jobs[i].chunk);
            items[k++].node = jobs[i].cand_id[c];
        }
    wh_status_t st = meta_gc_defer(r->cfg.meta, items, k, r->cfg.orphan_grace_s);
    free(items);
    if (st != WH_OK)
        wh_warn(MOD, "cannot record chunk write intents: %s", wh_status_str(st));
    return st == WH_ERR_UNSUPPORTED ? WH_OK : st;
}

void cl_jobs_free_cands(cl_job_t *jobs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < jobs[i].ncand; k++)
            free((char *)jobs[i].cand[k]);
        jobs[i].ncand = 0;
        free(jobs[i].form);
        jobs[i].form = NULL;
    }
}

void cl_msg(char *out, size_t outlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void cl_msg(char *out, size_t outlen, const char *fmt, ...)
{
    if (!out || !outlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out, outlen, fmt, ap);
    va_end(ap);
}

wh_peer_t cl_peer_of(const wh_peer_t *p)
{
    if (p)
        return *p;
    wh_peer_t c;
    memset(&c, 0, sizeof c);
    c.uid = (uid_t)-1;
    snprintf(c.addr, sizeof c.addr, "gateway");
    return c;
}

/* ==== the table ========================================================================== */

static void remote_close(data_table_t *d)
{
    cl_remote_t *r = (cl_remote_t *)d;
    if (!r)
        return;
    cl_members_stop(r);
    cl_client_free(r->client);
    free(r->members);
    wh_mutex_destroy(&r->lock);
    pthread_cond_destroy(&r->cond);
    free(r);
}

static wh_status_t remote_recover(data_table_t *d, data_referenced_fn fn, void *arg)
{
    return WH_OK; /* chunk copies are collected through the metadata's GC queue */
}

static wh_status_t remote_space(data_table_t *d, data_space_t *out)
{
    cl_remote_t *r = (cl_remote_t *)d;
    memset(out, 0, sizeof *out);
    wh_mutex_lock(&r->lock);
    for (size_t i = 0; i < r->n_members; i++)
        if (r->members[i].up)
            out->free += r->members[i].free;
    wh_mutex_unlock(&r->lock);
    out->total = out->free;
    out->high_water_pct = 100;
    return WH_OK;
}

static void remote_release(data_table_t *d, const data_ref_t *ref)
{
    cl_members_nudge((cl_remote_t *)d); /* the commit already queued the chunks */
}

static const data_ops_t g_remote_ops = {
    .name = "cluster",
    .close = remote_close,
    .recover = remote_recover,
    .space = remote_space,
    .writer_open = cl_rw_open,
    .write = cl_rw_write,
    .writer_bucket = cl_rw_bucket,
    .append = cl_rw_append,
    .rdma_put = cl_rw_rdma_put,
    .finish = cl_rw_finish,
    .writer_free = cl_rw_free,
    .writer_abort = cl_rw_abort,
    .reader_open = cl_rr_open,
    .reader_pread = cl_rr_pread,
    .rdma_get = cl_rr_rdma_get,
    .reader_prepare = cl_rr_prepare,
    .reader_close = cl_rr_close,
    .release = remote_release,
};

wh_status_t cl_remote_open(const cl_remote_config_t *cfg, data_table_t **out)
{
    cl_remote_t *r = calloc(1, sizeof *r);
    if (!r)
        return WH_ERR_NOMEM;
    r->base.ops = &g_remote_ops;
    r->cfg = *cfg;
    if (!r->cfg.chunk_size)
        r->cfg.chunk_size = CL_DEFAULT_CHUNK;
    if (!r->cfg.orphan_grace_s)
        r->cfg.orphan_grace_s = 3600;
    if (r->cfg.replicas < 1 || r->cfg.replicas > CL_MAX_REPLICAS)
        r->cfg.replicas = CL_DEFAULT_REPLICAS;
    if (!r->cfg.parallel)
        r->cfg.parallel = 16;
    if (r->cfg.ec_k < 1 || r->cfg.ec_m < 1 || r->cfg.ec_k + r->cfg.ec_m > CL_EC_MAX)
        r->cfg.ec_k = r->cfg.ec_m = 0;
    wh_mutex_init(&r->lock);
    pthread_cond_init(&r->cond, NULL);
    wh_status_t st = cl_client_new(cfg->secret, &r->client);
    if (st == WH_OK && cfg->ca_file)
        st = cl_client_set_ca(r->client, cfg->ca_file);
    if (st == WH_OK) {
        cl_client_on_node_fail(r->client, cl_members_suspect, r);
        st = cl_members_start(r);
    }
    if (st != WH_OK) {
        remote_close(&r->base);
        return st;
    }
    wh_info(MOD, "cluster data table ready chunk=%" PRIu64 " replicas=%u ec=%u+%u parallel=%u",
            r->cfg.chunk_size, r->cfg.replicas, r->cfg.ec_k, r->cfg.ec_m, r->cfg.parallel);
    *out = &r->base;
    return WH_OK;
}

int cl_remote_nodes_up(data_table_t *d)
{
    cl_remote_t *r = (cl_remote_t *)d;
    int n = 0;
    wh_mutex_lock(&r->lock);
    if (!r->known)
        n = -1;
    for (size_t i = 0; n >= 0 && i < r->n_members; i++)
        n += r->members[i].up;
    wh_mutex_unlock(&r->lock);
    return n;
}

void cl_remote_metrics(data_table_t *d, wh_sbuf_t *out)
{
    cl_remote_t *r = (cl_remote_t *)d;
    int up = cl_remote_nodes_up(d);
    size_t known;
    wh_mutex_lock(&r->lock);
    known = 0;
    for (size_t i = 0; i < r->n_members; i++)
        known += !r->members[i].retired && r->members[i].state != META_NODE_REMOVED;
    wh_mutex_unlock(&r->lock);
    cl_client_stats_t cs;
    cl_client_stats(r->client, &cs);
    wh_sbuf_printf(out,
                   "# HELP wharf_storage_nodes_up Storage servers with a fresh heartbeat.\n"
                   "# TYPE wharf_storage_nodes_up gauge\nwharf_storage_nodes_up %d\n"
                   "# TYPE wharf_storage_nodes gauge\nwharf_storage_nodes %zu\n"
                   "# TYPE wharf_cluster_leader gauge\nwharf_cluster_leader %d\n"
                   "# HELP wharf_cluster_repair_pending Chunks with a copy on a server down "
                   "longer than --repair-after, as of the last repair pass.\n"
                   "# TYPE wharf_cluster_repair_pending gauge\nwharf_cluster_repair_pending %llu\n"
                   "# TYPE wharf_cluster_repair_nodes gauge\nwharf_cluster_repair_nodes %llu\n"
                   "# HELP wharf_cluster_damage_pending Copies reported damaged (a checksum "
                   "failed), not yet rewritten from a good replica.\n"
                   "# TYPE wharf_cluster_damage_pending gauge\nwharf_cluster_damage_pending %llu\n"
                   "# HELP wharf_cluster_drain_pending Chunks with a copy on a draining server, "
                   "as of the last pass.\n"
                   "# TYPE wharf_cluster_drain_pending gauge\nwharf_cluster_drain_pending %llu\n"
                   "# TYPE wharf_cluster_drain_nodes gauge\nwharf_cluster_drain_nodes %llu\n",
                   up < 0 ? 0 : up, known, (int)atomic_load(&r->leader),
                   (unsigned long long)atomic_load(&r->repair_pending),
                   (unsigned long long)atomic_load(&r->repair_nodes),
                   (unsigned long long)atomic_load(&r->damage_pending),
                   (unsigned long long)atomic_load(&r->drain_pending),
                   (unsigned long long)atomic_load(&r->drain_nodes));
    const struct {
        const char *name;
        uint64_t v;
    } m[] = {
        {"wharf_cluster_chunk_requests_total", cs.requests},
        {"wharf_cluster_chunk_failures_total", cs.failures},
        {"wharf_cluster_chunk_retries_total", cs.retries},
        {"wharf_cluster_chunk_timeouts_total", cs.timeouts},
        {"wharf_cluster_chunk_hedges_total", cs.hedges},
        {"wharf_cluster_chunk_hedge_wins_total", cs.hedge_wins},
        {"wharf_cluster_chunk_rx_bytes_total", cs.rx_bytes},
        {"wharf_cluster_chunk_tx_bytes_total", cs.tx_bytes},
        {"wharf_cluster_repair_relayed_total", atomic_load(&r->repair_relayed)},
        {"wharf_cluster_write_retries_total", atomic_load(&r->write_retries)},
        {"wharf_cluster_chunks_written_total", atomic_load(&r->chunks_put)},
        {"wharf_cluster_chunks_read_total", atomic_load(&r->chunks_got)},
        {"wharf_cluster_unavailable_total", atomic_load(&r->unavailable)},
        {"wharf_cluster_gc_deleted_total", atomic_load(&r->gc_deleted)},
        {"wharf_cluster_gc_failed_total", atomic_load(&r->gc_failed)},
        {"wharf_cluster_meta_failures_total", atomic_load(&r->meta_failures)},
        {"wharf_cluster_repair_chunks_total", atomic_load(&r->repair_chunks)},
        {"wharf_cluster_repair_bytes_total", atomic_load(&r->repair_bytes)},
        {"wharf_cluster_repair_failures_total", atomic_load(&r->repair_failures)},
        {"wharf_cluster_damage_repaired_total", atomic_load(&r->damage_repaired)},
        {"wharf_cluster_drain_chunks_total", atomic_load(&r->drain_chunks)},
        {"wharf_cluster_drain_bytes_total", atomic_load(&r->drain_bytes)},
        {"wharf_cluster_ec_stripes_written_total", atomic_load(&r->ec_stripes)},
        {"wharf_cluster_ec_degraded_reads_total", atomic_load(&r->ec_decodes)},
        {"wharf_cluster_ec_shards_rebuilt_total", atomic_load(&r->ec_rebuilt)},
        {"wharf_cluster_rebalance_chunks_total", atomic_load(&r->rebalance_chunks)},
        {"wharf_cluster_rebalance_bytes_total", atomic_load(&r->rebalance_bytes)},
        {"wharf_cluster_rebalance_walks_total", atomic_load(&r->rebalance_walks)},
    };
    for (size_t i = 0; i < WH_ARRAY_SIZE(m); i++)
        wh_sbuf_printf(out, "# TYPE %s counter\n%s %" PRIu64 "\n", m[i].name, m[i].name, m[i].v);
    /* The default layout's storage overhead: bytes stored per byte of data. */
    wh_sbuf_printf(out,
                   "# HELP wharf_cluster_storage_overhead Bytes stored per object byte of this "
                   "gateway's default layout: replicas, or (K+M)/K with --ec K+M.\n"
                   "# TYPE wharf_cluster_storage_overhead gauge\n"
                   "wharf_cluster_storage_overhead %.4f\n"
                   "# TYPE wharf_cluster_ec_data_shards gauge\nwharf_cluster_ec_data_shards %u\n"
                   "# TYPE wharf_cluster_ec_parity_shards gauge\n"
                   "wharf_cluster_ec_parity_shards %u\n",
                   r->cfg.ec_k ? (double)(r->cfg.ec_k + r->cfg.ec_m) / r->cfg.ec_k
                               : (double)r->cfg.replicas,
                   r->cfg.ec_k, r->cfg.ec_m);
    cl_client_metrics(r->client, r->cfg.chunk_size, out);
}
