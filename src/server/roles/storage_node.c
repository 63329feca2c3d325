/* SPDX-License-Identifier: Apache-2.0 */
/* Storage role membership and metrics: registration in the metadata database (address,
 * capacity, free space) and a heartbeat thread. A database outage does not stop serving
 * chunks: the heartbeat retries every period, reconnecting through the metadata table, and
 * gateways see the node down only while no heartbeat lands. */
#include "base/codec.h"
#include "base/digest.h"
#include "base/log.h"
#include "roles/storage_int.h"
#include "meta/meta.h"
#include "store/store.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MOD "storage"

/* DIR/identity: "wharf-node-1 <cluster id> <node uuid>", written at the first start (or the
 * first start that reached the database) and fsynced. */
static bool identity_load(role_storage_t *s)
{
    char p[4096], cid[META_UUID_MAX], nid[META_UUID_MAX];
    snprintf(p, sizeof p, "%s/identity", s->cfg.data_dir);
    FILE *f = fopen(p, "r");
    if (!f)
        return false;
    bool ok = fscanf(f, "wharf-node-1 %63s %63s", cid, nid) == 2;
    fclose(f);
    if (ok) {
        snprintf(s->cluster_id, sizeof s->cluster_id, "%s", cid);
        snprintf(s->node_uuid, sizeof s->node_uuid, "%s", nid);
    }
    return ok;
}

static wh_status_t identity_write(role_storage_t *s)
{
    char p[4096], t[4100];
    snprintf(p, sizeof p, "%s/identity", s->cfg.data_dir);
    snprintf(t, sizeof t, "%s.tmp", p);
    int fd = open(t, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return WH_ERR_IO;
    char line[200];
    int n = snprintf(line, sizeof line, "wharf-node-1 %s %s\n", s->cluster_id, s->node_uuid);
    bool ok = wh_write_all(fd, line, (size_t)n) == 0 && fsync(fd) == 0;
    close(fd);
    if (!ok || rename(t, p) != 0)
        return WH_ERR_IO;
    int dfd = open(s->cfg.data_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    return WH_OK;
}

/* Before the first registration: the data directory's identity against the database's
 * cluster. Another cluster's database is refused. A directory without an identity, or one
 * that holds no chunk (emptied or replaced), gets a new node identity: it registers as a new
 * node, and the row it replaces at this address is retired, so the copies that row held are
 * repaired instead of trusted. */
static wh_status_t identity_check(role_storage_t *s)
{
    char cid[META_UUID_MAX];
    wh_status_t st = meta_cluster_id(s->meta, cid);
    if (st != WH_OK)
        return st;
    bool have = identity_load(s);
    if (have && strcmp(s->cluster_id, cid) != 0) {
        if (!s->refused)
            wh_error(MOD,
                     "data directory %s belongs to cluster %s, the database --meta is "
                     "cluster %s's: refusing to join it",
                     s->cfg.data_dir, s->cluster_id, cid);
        s->refused = true;
        return WH_ERR_PRECONDITION;
    }
    /* Once per process: a directory that this process emptied itself (GC took every copy of
     * a drained server) keeps its identity, so a removed server does not come back as a new
     * node when its row stops taking heartbeats. */
    bool empty = !s->identity_done && cl_chunks_count(s->chunks) == 0 &&
                 cl_chunks_damaged_count(s->chunks) == 0;
    s->identity_done = true;
    if (!have || empty) {
        uint8_t rnd[16];
        wh_random_bytes(rnd, sizeof rnd);
        snprintf(s->cluster_id, sizeof s->cluster_id, "%s", cid);
        wh_hex_encode(rnd, sizeof rnd, s->node_uuid);
        s->node_uuid[32] = '\0';
        if ((st = identity_write(s)) != WH_OK) {
            wh_error(MOD, "cannot write %s/identity", s->cfg.data_dir);
            return st;
        }
        wh_info(MOD, "data directory identity cluster=%s node=%s (%s)", cid, s->node_uuid,
                have ? "empty directory: a new node" : "first start");
    }
    return WH_OK;
}

/* Reports every damaged copy in DIR/damaged (idempotent on the database's side). */
static void damage_report(role_storage_t *s)
{
    if (!atomic_exchange(&s->damage_dirty, false))
        return;
    char(*ids)[CL_CHUNK_ID_LEN + 1] = NULL;
    size_t n = 0;
    bool ok = cl_chunks_list_damaged(s->chunks, &ids, &n) == WH_OK;
    for (size_t i = 0; ok && i < n; i++) {
        if (meta_damage_report(s->meta, s->node_id, ids[i]) != WH_OK) {
            ok = false;
            break;
        }
        atomic_fetch_add(&s->damage_reported, 1);
        wh_info(MOD, "damaged copy reported chunk=%s node=%" PRIu32, ids[i], s->node_id);
    }
    free(ids);
    if (!ok)
        atomic_store(&s->damage_dirty, true);
}

/* Only a flag (the next heartbeat, within heartbeat_ms, reports it): request threads call
 * this, and may still run while the heartbeat thread and its lock are torn down at stop. */
void role_storage_damage_flush(role_storage_t *s)
{
    atomic_store(&s->damage_dirty, true);
}

static void beat(role_storage_t *s)
{
    if (!s->meta) { /* the database was down at start: keep trying */
        if (store_meta_open(s->cfg.meta_url, &s->meta) != WH_OK) {
            s->meta = NULL;
            atomic_fetch_add(&s->heartbeat_failures, 1);
            return;
        }
    }
    uint64_t cap = 0, avail = 0;
    cl_chunks_space(s->chunks, &cap, &avail);
    wh_status_t st;
    if (!s->registered) {
        st = identity_check(s);
        if (st == WH_OK) {
            st = meta_node_register(s->meta, s->addr, s->node_uuid, cl_chunks_count(s->chunks) > 0,
                                    cap, avail, &s->node_id);
            if (st == WH_ERR_PRECONDITION) {
                if (!s->removed)
                    wh_error(MOD,
                             "this storage server (%s, data directory %s) was removed from the "
                             "cluster (wharfd node remove): it does not register again; empty "
                             "its data directory to join as a new node",
                             s->addr, s->cfg.data_dir);
                s->removed = true;
                return;
            }
        }
        if (st == WH_OK) /* every registration: the command line says the zone */
            st = meta_node_set_zone(s->meta, s->node_id, s->cfg.zone ? s->cfg.zone : "");
        if (st == WH_OK) {
            s->registered = true;
            atomic_store(&s->damage_dirty, true); /* what an earlier run moved aside */
            wh_info(MOD,
                    "registered in the metadata database node=%" PRIu32 " addr=%s zone=%s "
                    "capacity=%" PRIu64 " free=%" PRIu64,
                    s->node_id, s->addr, s->cfg.zone && s->cfg.zone[0] ? s->cfg.zone : "-", cap,
                    avail);
        }
    } else {
        st = meta_node_heartbeat(s->meta, s->node_id, cap, avail);
        if (st == WH_ERR_NOT_FOUND) /* retired meanwhile (another directory took the address) */
            s->registered = false;
    }
    if (st == WH_OK && s->registered) {
        damage_report(s);
        /* the scrubber's progress and the damaged copies, for wharfd node status (written
         * when they change); whether there is a scrubber is the configuration's (this thread
         * starts before the scrubber, so its scrub_started is not this thread's to read) */
        double prog = s->cfg.scrub_rate ? atomic_load(&s->scrub_prefix) / 256.0 : 0.0;
        uint64_t passes = atomic_load(&s->scrub_passes);
        uint64_t dmg = cl_chunks_damaged_count(s->chunks);
        if (!s->reported || prog != s->rep_progress || passes != s->rep_passes ||
            dmg != s->rep_damaged) {
            if (meta_node_report(s->meta, s->node_id, prog, passes, dmg) == WH_OK) {
                s->reported = true;
                s->rep_progress = prog;
                s->rep_passes = passes;
                s->rep_damaged = dmg;
            }
        }
    }
    if (st == WH_OK) {
        atomic_fetch_add(&s->heartbeats, 1);
        if (!atomic_exchange(&s->meta_up, true))
            wh_info(MOD, "metadata database reachable");
    } else {
        atomic_fetch_add(&s->heartbeat_failures, 1);
        if (atomic_exchange(&s->meta_up, false))
            wh_warn(MOD, "heartbeat failed, retrying every %u ms: %s", s->cfg.heartbeat_ms,
                    wh_status_str(st));
    }
}

static void *hb_main(void *arg)
{
    role_storage_t *s = arg;
    pthread_mutex_lock(&s->hb_lock);
    while (!s->hb_stop) {
        pthread_mutex_unlock(&s->hb_lock);
        beat(s);
        pthread_mutex_lock(&s->hb_lock);
        if (s->hb_stop)
            break;
        struct timespec dl;
        clock_gettime(CLOCK_REALTIME, &dl);
        uint64_t ns = (uint64_t)dl.tv_nsec + (uint64_t)s->cfg.heartbeat_ms * 1000000ULL;
        dl.tv_sec += (time_t)(ns / 1000000000ULL);
        dl.tv_nsec = (long)(ns % 1000000000ULL);
        pthread_cond_timedwait(&s->hb_cond, &s->hb_lock, &dl);
    }
    pthread_mutex_unlock(&s->hb_lock);
    return NULL;
}

wh_status_t role_storage_membership_start(role_storage_t *s)
{
    snprintf(s->addr, sizeof s->addr, "%s:%u", s->cfg.listen_host, (unsigned)s->cfg.listen_port);
    wh_status_t st = store_meta_open(s->cfg.meta_url, &s->meta);
    if (st == WH_ERR_UNAVAILABLE) {
        s->meta = NULL; /* serve chunks anyway; the heartbeat thread connects when it can */
        wh_warn(MOD, "metadata database unreachable at start; retrying every %u ms",
                s->cfg.heartbeat_ms);
    } else if (st != WH_OK) {
        wh_error(MOD, "cannot open the metadata database: %s", wh_status_str(st));
        return st;
    } else {
        beat(s);
        if (s->refused)
            return WH_ERR_PRECONDITION;
    }
    pthread_mutex_init(&s->hb_lock, NULL);
    pthread_cond_init(&s->hb_cond, NULL);
    if (pthread_create(&s->hb_thread, NULL, hb_main, s) != 0)
        return WH_ERR_NOMEM;
    s->hb_started = true;
    return WH_OK;
}

void role_storage_membership_stop(role_storage_t *s)
{
    if (s->hb_started) {
        pthread_mutex_lock(&s->hb_lock);
        s->hb_stop = true;
        pthread_cond_broadcast(&s->hb_cond);
        pthread_mutex_unlock(&s->hb_lock);
        pthread_join(s->hb_thread, NULL);
        pthread_mutex_destroy(&s->hb_lock);
        pthread_cond_destroy(&s->hb_cond);
        s->hb_started = false;
    }
    if (s->meta)
        meta_close(s->meta);
    s->meta = NULL;
}

void role_storage_metrics(role_storage_t *s, wh_sbuf_t *out)
{
    static const struct {
        const char *name, *help;
        size_t off;
    } m[] = {
        {"wharf_storage_token_rejects_total", "Internal requests refused (403) by the token check.",
         offsetof(role_storage_t, token_rejects)},
        {"wharf_storage_chunks_written_total", "Chunks written durably.",
         offsetof(role_storage_t, chunks_written)},
        {"wharf_storage_chunks_deleted_total", "Chunks deleted by garbage collection.",
         offsetof(role_storage_t, chunks_deleted)},
        {"wharf_storage_read_errors_total", "Chunk reads refused: missing, damaged or failed.",
         offsetof(role_storage_t, read_errors)},
        {"wharf_http_read_bytes_total", "Chunk bytes served over HTTP to gateways.",
         offsetof(role_storage_t, http_read_bytes)},
        {"wharf_http_write_bytes_total", "Chunk bytes received over HTTP from gateways.",
         offsetof(role_storage_t, http_write_bytes)},
        {"wharf_storage_push_chunks_total",
         "Chunk copies this server sent to another storage server (repair, drain, rebalance).",
         offsetof(role_storage_t, push_chunks)},
        {"wharf_storage_push_bytes_total", "Bytes of the chunk copies this server sent.",
         offsetof(role_storage_t, push_bytes)},
        {"wharf_storage_push_failures_total", "Pushes that did not land (refused, unreachable).",
         offsetof(role_storage_t, push_failures)},
        {"wharf_storage_copy_received_chunks_total",
         "Chunk copies received from another storage server, checked and stored.",
         offsetof(role_storage_t, copy_recv_chunks)},
        {"wharf_storage_copy_received_bytes_total",
         "Bytes of the chunk copies received from other storage servers and stored.",
         offsetof(role_storage_t, copy_recv_bytes)},
        {"wharf_storage_copy_refused_total",
         "Chunk copies received whose crc64nvme differed from the chunk map's: not stored.",
         offsetof(role_storage_t, copy_refused)},
        {"wharf_ec_rdma_reads_total",
         "Degraded RDMA GETs of erasure-coded stripes this server served (rdec).",
         offsetof(role_storage_t, rdec_reads)},
        {"wharf_ec_rdma_decoded_reads_total",
         "Of those, the ones that decoded missing data shards here.",
         offsetof(role_storage_t, rdec_decoded)},
        {"wharf_ec_rdma_decoded_bytes_total",
         "Bytes those degraded RDMA GETs wrote into client memory.",
         offsetof(role_storage_t, rdec_bytes)},
        {"wharf_ec_rdma_shards_fetched_total",
         "Shards read from other storage servers to serve degraded RDMA GETs.",
         offsetof(role_storage_t, rdec_shards_fetched)},
        {"wharf_ec_rdma_decode_failures_total",
         "Degraded RDMA GETs refused: too few good shards, a decode or RDMA write failure.",
         offsetof(role_storage_t, rdec_failures)},
        {"wharf_ec_rdma_encoded_stripes_total",
         "Erasure-coded stripes of RDMA PUTs this server pulled, encoded and spread (renc).",
         offsetof(role_storage_t, renc_stripes)},
        {"wharf_ec_rdma_encoded_bytes_total", "Bytes of those stripes.",
         offsetof(role_storage_t, renc_bytes)},
        {"wharf_ec_rdma_encode_failures_total",
         "Stripes of RDMA PUTs not stored: a pull, the encode or a shard's store failed.",
         offsetof(role_storage_t, renc_failures)},
        {"wharf_storage_heartbeats_total", "Heartbeats written to the metadata database.",
         offsetof(role_storage_t, heartbeats)},
        {"wharf_storage_heartbeat_failures_total", "Heartbeats that failed.",
         offsetof(role_storage_t, heartbeat_failures)},
        {"wharf_storage_checksum_failures_total", "Copies found damaged (reads and scrubs).",
         offsetof(role_storage_t, checksum_failures)},
        {"wharf_storage_damage_reported_total", "Damaged copies reported for repair.",
         offsetof(role_storage_t, damage_reported)},
        {"wharf_storage_scrub_bytes_total", "Bytes the scrubber verified.",
         offsetof(role_storage_t, scrub_bytes)},
        {"wharf_storage_scrub_chunks_total", "Chunks the scrubber verified.",
         offsetof(role_storage_t, scrub_chunks)},
        {"wharf_storage_scrub_damaged_total", "Damaged copies the scrubber found.",
         offsetof(role_storage_t, scrub_damaged)},
        {"wharf_storage_scrub_passes_total", "Scrub passes completed.",
         offsetof(role_storage_t, scrub_passes)},
    };
    for (size_t i = 0; i < WH_ARRAY_SIZE(m); i++)
        wh_sbuf_printf(out, "# HELP %s %s\n# TYPE %s counter\n%s %" PRIu64 "\n", m[i].name,
                       m[i].help, m[i].name, m[i].name,
                       (uint64_t)atomic_load((_Atomic uint64_t *)((char *)s + m[i].off)));
    wh_sbuf_printf(out,
                   "# TYPE wharf_storage_meta_up gauge\nwharf_storage_meta_up %d\n"
                   "# TYPE wharf_storage_chunks gauge\nwharf_storage_chunks %" PRIu64 "\n"
                   "# HELP wharf_storage_damaged_chunks Damaged copies moved aside, not yet"
                   " rewritten from a good replica.\n"
                   "# TYPE wharf_storage_damaged_chunks gauge\n"
                   "wharf_storage_damaged_chunks %" PRIu64 "\n"
                   "# HELP wharf_storage_scrub_progress Where the scrubber's pass is (0..1;"
                   " 1 between passes).\n"
                   "# TYPE wharf_storage_scrub_progress gauge\n"
                   "wharf_storage_scrub_progress %.4f\n",
                   (int)atomic_load(&s->meta_up), cl_chunks_count(s->chunks),
                   cl_chunks_damaged_count(s->chunks),
                   s->cfg.scrub_rate ? atomic_load(&s->scrub_prefix) / 256.0 : 0.0);
}
