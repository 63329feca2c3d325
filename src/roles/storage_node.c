/* Storage role membership and metrics: registration in the metadata database (address,
 * capacity, free space) and a heartbeat thread. A database outage does not stop serving
 * chunks: the heartbeat retries every period, reconnecting through the metadata table, and
 * gateways see the node down only while no heartbeat lands. */
#include "base/log.h"
#include "roles/storage_int.h"
#include "meta/meta.h"

#include <inttypes.h>
#include <stdio.h>
#include <time.h>

#define MOD "storage"

static void beat(srv_storage_t *s)
{
    if (!s->meta) { /* the database was down at start: keep trying */
        if (meta_open(s->cfg.meta_url, &s->meta) != WH_OK) {
            s->meta = NULL;
            atomic_fetch_add(&s->heartbeat_failures, 1);
            return;
        }
    }
    uint64_t cap = 0, avail = 0;
    cl_chunks_space(s->chunks, &cap, &avail);
    wh_status_t st;
    if (!s->registered) {
        st = meta_node_register(s->meta, s->addr, cap, avail, &s->node_id);
        if (st == WH_OK) {
            s->registered = true;
            wh_info(MOD, "registered in the metadata database node=%" PRIu32 " addr=%s "
                         "capacity=%" PRIu64 " free=%" PRIu64, s->node_id, s->addr, cap, avail);
        }
    } else {
        st = meta_node_heartbeat(s->meta, s->node_id, cap, avail);
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
    srv_storage_t *s = arg;
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

wh_status_t srv_storage_membership_start(srv_storage_t *s)
{
    snprintf(s->addr, sizeof s->addr, "%s:%u", s->cfg.listen_host,
             (unsigned)s->cfg.listen_port);
    wh_status_t st = meta_open(s->cfg.meta_url, &s->meta);
    if (st == WH_ERR_UNAVAILABLE) {
        s->meta = NULL; /* serve chunks anyway; the heartbeat thread connects when it can */
        wh_warn(MOD, "metadata database unreachable at start; retrying every %u ms",
                s->cfg.heartbeat_ms);
    } else if (st != WH_OK) {
        wh_error(MOD, "cannot open the metadata database: %s", wh_status_str(st));
        return st;
    } else {
        beat(s);
    }
    pthread_mutex_init(&s->hb_lock, NULL);
    pthread_cond_init(&s->hb_cond, NULL);
    if (pthread_create(&s->hb_thread, NULL, hb_main, s) != 0)
        return WH_ERR_NOMEM;
    s->hb_started = true;
    return WH_OK;
}

void srv_storage_membership_stop(srv_storage_t *s)
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

void srv_storage_metrics(srv_storage_t *s, wh_sbuf_t *out)
{
    static const struct {
        const char *name, *help;
        size_t off;
    } m[] = {
        {"wharf_storage_token_rejects_total", "Internal requests refused (403) by the token check.",
         offsetof(srv_storage_t, token_rejects)},
        {"wharf_storage_chunks_written_total", "Chunks written durably.",
         offsetof(srv_storage_t, chunks_written)},
        {"wharf_storage_chunks_deleted_total", "Chunks deleted by garbage collection.",
         offsetof(srv_storage_t, chunks_deleted)},
        {"wharf_storage_read_errors_total", "Chunk reads refused: missing, damaged or failed.",
         offsetof(srv_storage_t, read_errors)},
        {"wharf_http_read_bytes_total", "Chunk bytes served over HTTP to gateways.",
         offsetof(srv_storage_t, http_read_bytes)},
        {"wharf_http_write_bytes_total", "Chunk bytes received over HTTP from gateways.",
         offsetof(srv_storage_t, http_write_bytes)},
        {"wharf_storage_heartbeats_total", "Heartbeats written to the metadata database.",
         offsetof(srv_storage_t, heartbeats)},
        {"wharf_storage_heartbeat_failures_total", "Heartbeats that failed.",
         offsetof(srv_storage_t, heartbeat_failures)},
    };
    for (size_t i = 0; i < WH_ARRAY_SIZE(m); i++)
        wh_sbuf_printf(out, "# HELP %s %s\n# TYPE %s counter\n%s %" PRIu64 "\n", m[i].name,
                       m[i].help, m[i].name, m[i].name,
                       (uint64_t)atomic_load((_Atomic uint64_t *)((char *)s + m[i].off)));
    wh_sbuf_printf(out, "# TYPE wharf_storage_meta_up gauge\nwharf_storage_meta_up %d\n"
                        "# TYPE wharf_storage_chunks gauge\nwharf_storage_chunks %" PRIu64 "\n",
                   (int)atomic_load(&s->meta_up), cl_chunks_count(s->chunks));
}
