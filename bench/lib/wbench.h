/* SPDX-License-Identifier: Apache-2.0 */
/* Shared code of the wharf benchmark suite: machine limits, statistics, CPU accounting,
 * /metrics scraping (the transport witness), environment capture and result files.
 *
 * Used by bench/limits.c, bench/loadgen.c and bench/wharf_bench.c. The grid benchmarks (B1
 * fetch, put) use only libwharf's public ABI for data movement. */
#ifndef WBENCH_H
#define WBENCH_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define WB_MIB ((uint64_t)1 << 20)
#define WB_GIB ((uint64_t)1 << 30)
#define WB_MIN(a, b) ((a) < (b) ? (a) : (b))
#define WB_MAX(a, b) ((a) > (b) ? (a) : (b))

/* ---- time and statistics ---- */
double wb_now(void); /* monotonic seconds */

typedef struct wb_lat {
    double min, p50, p90, p99, max, mean; /* seconds */
    size_t n;
} wb_lat_t;
/* Nearest-rank percentiles of v[0..n) (sorts v in place). */
void wb_lat_stats(double *v, size_t n, wb_lat_t *out);
/* Median (mean of the two middle values for even n) of v[0..n) (sorts v in place). */
double wb_median(double *v, size_t n);
/* {"median":..,"min":..,"max":..,"n":..,"values":[...]} of v (order kept in "values"). */
json_t *wb_summary_json(const double *v, size_t n);
/* Latency object in milliseconds, seed field names: min_ms, p50_ms, ... */
json_t *wb_lat_json(const wb_lat_t *l);

/* ---- CPU ---- */
typedef struct wb_hostcpu {
    uint64_t busy, total; /* jiffies from the first line of /proc/stat; busy = total-idle-iowait */
} wb_hostcpu_t;
int wb_hostcpu_read(wb_hostcpu_t *out);
/* CPU-seconds the whole host was busy between a and b. */
double wb_hostcpu_busy_s(const wb_hostcpu_t *a, const wb_hostcpu_t *b);
double wb_hostcpu_fraction(const wb_hostcpu_t *a, const wb_hostcpu_t *b);
/* user+sys CPU seconds of this process (all threads). */
double wb_self_cpu_s(void);

/* ---- /metrics (Prometheus text): every series summed over its label sets ---- */
typedef struct wb_metric {
    char name[96];
    double value;
} wb_metric_t;
typedef struct wb_metrics {
    wb_metric_t *m;
    size_t n, cap;
    int ok;        /* 1 when the scrape succeeded */
    char err[256]; /* why not */
} wb_metrics_t;
/* Scrapes <endpoint>/metrics. Signs with SigV4 (ak/sk, region) when the server wants it. */
int wb_metrics_scrape(const char *endpoint, const char *ak, const char *sk, const char *region,
                      wb_metrics_t *out);
int wb_metrics_parse(const char *text, wb_metrics_t *out);
/* Summed value of a metric name (without labels); 0 when absent. *found says whether it was. */
double wb_metrics_get(const wb_metrics_t *m, const char *name, int *found);
void wb_metrics_free(wb_metrics_t *m);
/* {name: after-before} for every series that moved, restricted to names starting with one of
 * the prefixes (NULL-terminated list). */
json_t *wb_metrics_delta_json(const wb_metrics_t *before, const wb_metrics_t *after,
                              const char *const *prefixes);

/* ---- limits of this machine (in-process; GB/s are 1e9 bytes per second) ---- */
typedef struct wb_rate {
    double v[16];
    size_t n;
} wb_rate_t;
typedef struct wb_limits {
    unsigned streams_n; /* the "N" streams measured besides 1 (= online CPUs, at most 8) */
    uint64_t bytes;     /* bytes moved per measurement */
    wb_rate_t memcpy_1, memcpy_n; /* memcpy into prefaulted memory */
    wb_rate_t pvw_1, pvw_n;       /* process_vm_writev into a prefaulted child */
    wb_rate_t tcp_1, tcp_n;       /* 127.0.0.1 TCP, one connection per stream */
    wb_rate_t md5_1;              /* MD5 single thread (caps HTTP PUT with MD5 ETags) */
    wb_rate_t crc64_1;            /* crc64nvme single thread, a cached 256 KiB piece */
    double wall_s;
} wb_limits_t;
/* Measures every limit reps times, interleaved (A B C .. A B C ..). bytes per measurement. */
int wb_limits_measure(uint64_t bytes, unsigned reps, wb_limits_t *out, char *err, size_t errlen);
json_t *wb_limits_json(const wb_limits_t *l);
double wb_rate_median(const wb_rate_t *r);

/* ---- memory ---- */
/* Anonymous memory, transparent huge pages advised, every page touched (prefaulted). */
void *wb_alloc_prefaulted(size_t len);
void wb_free(void *p, size_t len);

/* ---- environment and results ---- */
/* CPU model and cores, kernel, memory, libfabric version (fi_info --version), GPUs
 * (nvidia-smi when present), git commit of the working tree, hostname. */
json_t *wb_env_json(const char *provider);
/* Writes root to <dir>/<benchmark>[-tag]-<backend>-<YYYYmmdd-HHMMSS>.json (creates dir).
 * path_out (may be NULL) gets the path. Returns 0 or -1 with err. */
int wb_write_result(const char *dir, const char *benchmark, const char *tag, const char *backend,
                    json_t *root, char *path_out, size_t pathlen, char *err, size_t errlen);
/* Seconds since the epoch as ISO 8601 UTC. */
void wb_timestamp(char out[32]);

/* ---- object fill pattern of the seed: object i is filled with byte (i*37+11)&0xFF ---- */
static inline uint8_t wb_fill_byte(uint64_t i)
{
    return (uint8_t)((i * 37 + 11) & 0xFF);
}
/* Number of bytes in p[0..n) that differ from b. */
uint64_t wb_count_not(const uint8_t *p, size_t n, uint8_t b);

/* ---- grid benchmarks (bench/lib/grid*.c) ---- */
/* argv[0] is "fetch", "put", "rdma-vs-http" or "limits". Returns a process exit code. */
int wb_bench_main(int argc, char **argv);
/* Runs /usr/bin/python3 bench/report.py RESULTS_DIR [args]. */
int wb_report_main(int argc, char **argv);

#endif
