/* SPDX-License-Identifier: Apache-2.0 */
#include "front/metrics.h"
#include "base/crc.h"

#include <string.h>
#include <sys/resource.h>
#include <time.h>

/* Upper bounds of the latency histogram, in seconds. */
static const double g_bounds[FRONT_METRICS_NBUCKETS - 1] = {
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
};

void front_metrics_init(front_metrics_t *m)
{
    memset(m, 0, sizeof *m);
    m->start_time = (double)time(NULL);
}

void front_metrics_count(front_metrics_t *m, front_api_t api, int status)
{
    if ((unsigned)api >= FRONT_API__COUNT)
        api = FRONT_API_UNKNOWN;
    if (status < 0 || status >= FRONT_METRICS_MAX_STATUS)
        status = 0;
    atomic_fetch_add_explicit(&m->requests[api][status], 1, memory_order_relaxed);
}

void front_metrics_latency(front_metrics_t *m, front_api_t api, uint64_t dur_ns)
{
    if ((unsigned)api >= FRONT_API__COUNT)
        api = FRONT_API_UNKNOWN;
    double s = (double)dur_ns / 1e9;
    size_t b = 0;
    while (b < FRONT_METRICS_NBUCKETS - 1 && s > g_bounds[b])
        b++;
    atomic_fetch_add_explicit(&m->lat_bucket[api][b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&m->lat_count[api], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&m->lat_sum_ns[api], dur_ns, memory_order_relaxed);
}

static uint64_t ld(_Atomic uint64_t *p)
{
    return atomic_load_explicit(p, memory_order_relaxed);
}

static void counter(wh_sbuf_t *o, const char *name, const char *help, uint64_t v)
{
    wh_sbuf_printf(o, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", name, help, name, name,
                   (unsigned long long)v);
}

void front_metrics_render(front_metrics_t *m, wh_sbuf_t *o)
{
    wh_sbuf_puts(o, "# HELP wharf_requests_total S3 requests by API and HTTP status.\n"
                    "# TYPE wharf_requests_total counter\n");
    for (int a = 0; a < FRONT_API__COUNT; a++) {
        for (int s = 0; s < FRONT_METRICS_MAX_STATUS; s++) {
            uint64_t v = ld(&m->requests[a][s]);
            if (v)
                wh_sbuf_printf(o, "wharf_requests_total{api=\"%s\",status=\"%d\"} %llu\n",
                               front_api_name((front_api_t)a), s, (unsigned long long)v);
        }
    }
    wh_sbuf_puts(o, "# HELP wharf_request_duration_seconds Request latency, first byte of the "
                    "request to the response queued and sent.\n"
                    "# TYPE wharf_request_duration_seconds histogram\n");
    for (int a = 0; a < FRONT_API__COUNT; a++) {
        uint64_t cnt = ld(&m->lat_count[a]);
        if (!cnt)
            continue;
        const char *api = front_api_name((front_api_t)a);
        uint64_t cum = 0;
        for (int b = 0; b < FRONT_METRICS_NBUCKETS; b++) {
            cum += ld(&m->lat_bucket[a][b]);
            if (b < FRONT_METRICS_NBUCKETS - 1)
                wh_sbuf_printf(o,
                               "wharf_request_duration_seconds_bucket{api=\"%s\",le=\"%g\"} %llu\n",
                               api, g_bounds[b], (unsigned long long)cum);
            else
                wh_sbuf_printf(
                    o, "wharf_request_duration_seconds_bucket{api=\"%s\",le=\"+Inf\"} %llu\n", api,
                    (unsigned long long)cum);
        }
        wh_sbuf_printf(o, "wharf_request_duration_seconds_sum{api=\"%s\"} %.9f\n", api,
                       (double)ld(&m->lat_sum_ns[a]) / 1e9);
        wh_sbuf_printf(o, "wharf_request_duration_seconds_count{api=\"%s\"} %llu\n", api,
                       (unsigned long long)cnt);
    }
    counter(o, "wharf_http_rx_bytes_total", "HTTP request body bytes received.",
            ld(&m->http_rx_bytes));
    counter(o, "wharf_http_tx_bytes_total", "HTTP response body bytes sent.",
            ld(&m->http_tx_bytes));
    counter(o, "wharf_http_read_bytes_total", "Object bytes served by GET over HTTP.",
            ld(&m->http_read_bytes));
    counter(o, "wharf_http_read_ops_total", "GETs that served object bytes over HTTP.",
            ld(&m->http_read_ops));
    counter(o, "wharf_http_write_bytes_total", "Object bytes received by PUT over HTTP.",
            ld(&m->http_write_bytes));
    counter(o, "wharf_http_write_ops_total", "PUTs and parts that received bytes over HTTP.",
            ld(&m->http_write_ops));
    counter(o, "wharf_rdma_delegated_read_bytes_total",
            "Object bytes storage servers wrote into clients' memory for GETs (a gateway).",
            ld(&m->rdma_delegated_read_bytes));
    counter(o, "wharf_rdma_delegated_read_ops_total", "Those GETs.",
            ld(&m->rdma_delegated_read_ops));
    counter(o, "wharf_rdma_delegated_write_bytes_total",
            "Object bytes storage servers read from clients' memory for PUTs (a gateway; "
            "once, whatever the replicas).",
            ld(&m->rdma_delegated_write_bytes));
    counter(o, "wharf_rdma_delegated_write_ops_total", "Those PUTs and parts.",
            ld(&m->rdma_delegated_write_ops));
    wh_sbuf_printf(o,
                   "# HELP wharf_inflight_requests Requests being served.\n"
                   "# TYPE wharf_inflight_requests gauge\nwharf_inflight_requests %lld\n",
                   (long long)atomic_load(&m->inflight));

    wh_sbuf_printf(o,
                   "# HELP wharf_crc64nvme_info The CRC-64/NVME code this CPU runs (every byte "
                   "stored or served is checksummed by it).\n"
                   "# TYPE wharf_crc64nvme_info gauge\nwharf_crc64nvme_info{impl=\"%s\"} 1\n",
                   wh_crc64nvme_impl());
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0) {
        double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
                     (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
        wh_sbuf_printf(o,
                       "# HELP process_cpu_seconds_total User and system CPU time.\n"
                       "# TYPE process_cpu_seconds_total counter\n"
                       "process_cpu_seconds_total %.6f\n",
                       cpu);
        wh_sbuf_printf(o,
                       "# HELP process_max_resident_memory_bytes Peak RSS.\n"
                       "# TYPE process_max_resident_memory_bytes gauge\n"
                       "process_max_resident_memory_bytes %lld\n",
                       (long long)ru.ru_maxrss * 1024);
    }
    wh_sbuf_printf(o,
                   "# HELP process_start_time_seconds Start time, Unix epoch.\n"
                   "# TYPE process_start_time_seconds gauge\n"
                   "process_start_time_seconds %.3f\n",
                   m->start_time);
}

void front_metrics_storage(store_t *st, wh_sbuf_t *o)
{
    uint64_t retries, retryable;
    store_meta_tx_stats(&retries, &retryable);
    counter(o, "wharf_meta_tx_retries_total",
            "Metadata transactions attempted again (PostgreSQL: after a serialization conflict "
            "or a lost connection).",
            retries);
    counter(o, "wharf_meta_tx_retryable_failures_total",
            "Failures the metadata backend reported as worth another attempt.", retryable);
    data_space_t sp;
    if (store_space(st, &sp) != WH_OK)
        return;
    wh_sbuf_printf(o,
                   "# HELP wharf_storage_total_bytes Size of the file system holding objects.\n"
                   "# TYPE wharf_storage_total_bytes gauge\nwharf_storage_total_bytes %llu\n"
                   "# HELP wharf_storage_free_bytes Bytes free for new objects.\n"
                   "# TYPE wharf_storage_free_bytes gauge\nwharf_storage_free_bytes %llu\n"
                   "# HELP wharf_storage_reserve_bytes Space held back so deletes work on a "
                   "full disk (0 while it is in use).\n"
                   "# TYPE wharf_storage_reserve_bytes gauge\n"
                   "wharf_storage_reserve_bytes %llu\n"
                   "# HELP wharf_storage_high_water_ratio Fill above which new writes get "
                   "507.\n# TYPE wharf_storage_high_water_ratio gauge\n"
                   "wharf_storage_high_water_ratio %.2f\n",
                   (unsigned long long)sp.total, (unsigned long long)sp.free,
                   (unsigned long long)sp.reserve, sp.high_water_pct / 100.0);
    wh_sbuf_printf(o,
                   "# HELP wharf_storage_durability What an acknowledged write survives "
                   "(--durability): disk (synced before the acknowledgement) or memory "
                   "(the page cache: a crash of wharfd, not of the host).\n"
                   "# TYPE wharf_storage_durability gauge\n"
                   "wharf_storage_durability{mode=\"disk\"} %d\n"
                   "wharf_storage_durability{mode=\"memory\"} %d\n",
                   sp.durability == DATA_DURABLE_DISK, sp.durability == DATA_DURABLE_MEMORY);
    wh_sbuf_printf(o,
                   "# HELP wharf_storage_direct_writes Large RDMA PUTs written past the page "
                   "cache with O_DIRECT (--data-writes direct, where the file system allows).\n"
                   "# TYPE wharf_storage_direct_writes gauge\nwharf_storage_direct_writes %d\n"
                   "# HELP wharf_storage_direct_write_bytes_total Bytes written that way.\n"
                   "# TYPE wharf_storage_direct_write_bytes_total counter\n"
                   "wharf_storage_direct_write_bytes_total %llu\n"
                   "# HELP wharf_storage_page_bytes The page a large file of the data "
                   "directory is kept in (a tmpfs mounted huge=within_size: 2 MiB).\n"
                   "# TYPE wharf_storage_page_bytes gauge\nwharf_storage_page_bytes %llu\n",
                   sp.direct_writes, (unsigned long long)sp.direct_bytes,
                   (unsigned long long)sp.page_bytes);
    wh_sbuf_printf(o,
                   "# HELP wharf_storage_reclaim_pending_bytes Bytes of released large files "
                   "(deleted or overwritten objects) not yet given back to the file system: "
                   "they are removed off the request.\n"
                   "# TYPE wharf_storage_reclaim_pending_bytes gauge\n"
                   "wharf_storage_reclaim_pending_bytes %llu\n"
                   "# HELP wharf_storage_reclaimed_files_total Released large files removed "
                   "that way.\n# TYPE wharf_storage_reclaimed_files_total counter\n"
                   "wharf_storage_reclaimed_files_total %llu\n"
                   "# HELP wharf_storage_reclaimed_bytes_total Their bytes.\n"
                   "# TYPE wharf_storage_reclaimed_bytes_total counter\n"
                   "wharf_storage_reclaimed_bytes_total %llu\n"
                   "# HELP wharf_storage_reclaim_steps_total Durable steps they were given back "
                   "in (a hole of at most 256 MiB punched and synced, or a directory sync "
                   "after 256 MiB of smaller files), so that no one step frees (and, mounted "
                   "discard, discards) more.\n"
                   "# TYPE wharf_storage_reclaim_steps_total counter\n"
                   "wharf_storage_reclaim_steps_total %llu\n",
                   (unsigned long long)sp.reclaim_pending, (unsigned long long)sp.reclaimed_files,
                   (unsigned long long)sp.reclaimed_bytes, (unsigned long long)sp.reclaim_steps);
}
