/* SPDX-License-Identifier: Apache-2.0 */
/* bench/wharf_bench fetch|put|rdma-vs-http|limits: the fetch/put grid over libwharf (the B1
 * benchmark of docs/benchmarks.md), with paired arms. "The seed" in this code is the public
 * benchmark suite wharf's is a superset of (minio/rdma-training); its formats are kept.
 *
 * Method (docs/benchmarks.md has the long form):
 * - Objects are written over HTTP first (bucket bench-fetch, keys b1/<size>/<i:05d>.bin, object
 *   i filled with byte (i*37+11)&0xFF as in the seed).
 * - Client work runs in forked worker processes (--processes N, each with --concurrency streams
 *   on its own key slice); the parent only coordinates and reads the witness, so it adds no CPU
 *   to the client figure, and the same code measures 1 and N processes.
 * - Every transfer has its own destination slice, so every byte moved is still there after
 *   the timed window: the workers check each slice against the fill byte (GET; slices are
 *   poisoned before the window) or the server's crc64nvme of what it stored (PUT).
 * - Per cell the arms alternate A B A B ... for --repeats rounds over the same objects.
 * - Around each timed window: /metrics (witness counters, server CPU) and /proc/stat (host CPU);
 *   the workers report their own getrusage over the window (client CPU). An RDMA cell whose
 *   server counters moved less than --witness-min of the payload fails with the reason.
 * - Each measurement moves about --budget bytes (ops per stream = budget / (size * streams),
 *   at least 1), so small and large objects cost similar time; cells whose buffers would exceed
 *   --mem-cap are skipped and say so. */
#include "grid.h"

#include "base/defaults.h"
#include "base/env.h"
#include "base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- the run ---- */

static unsigned ops_per_stream_for(const g_cfg_t *cfg, uint64_t size, unsigned streams)
{
    uint64_t per = size * streams;
    uint64_t want = (cfg->budget + per - 1) / per;
    uint64_t cap = cfg->mem_cap / per;
    if (want > cap)
        want = cap;
    return (unsigned)(want < 1 ? 1 : want);
}

static void print_meas(const g_cfg_t *cfg, g_op_t op, const g_arm_t *arm, uint64_t size,
                       unsigned conc, unsigned procs, unsigned rep, const g_meas_t *m)
{
    double gb = (double)m->bytes / 1e9;
    fprintf(stderr,
            "%-3s %-8s %4" PRIu64 " MiB c%-2u p%u r%u  %7.3f GB/s %8.1f ops/s  cpu-s/GB client "
            "%6.3f server %6.3f host %6.3f  witness %.3f %s%s\n",
            op == G_GET ? "get" : "put", arm->name, size / WB_MIB, conc, procs, rep, m->gbps,
            m->ops_per_s, gb > 0 ? m->client_cpu_s / gb : 0, gb > 0 ? m->server_cpu_s / gb : 0,
            gb > 0 ? m->host_cpu_s / gb : 0, m->witness_ratio,
            m->ok ? "ok" : "FAILED: ", m->ok ? "" : m->err);
}

/* The file system under the server's data directory, by statfs magic: "tmpfs" means PUTs
 * land in memory and are not disk-bound. */
static json_t *data_fs_json(const char *dir)
{
    static const struct {
        long magic;
        const char *name;
    } fs[] = {{0x01021994, "tmpfs"}, {0xEF53, "ext4"},        {0x58465342, "xfs"},
              {0x9123683E, "btrfs"}, {0x794C7630, "overlay"}, {0x6969, "nfs"},
              {0x2FC12FC1, "zfs"},   {0x65735546, "fuse"},    {0x858458F6, "ramfs"}};
    struct statfs sf;
    if (!dir[0] || statfs(dir, &sf) != 0)
        return json_null();
    for (size_t i = 0; i < sizeof fs / sizeof fs[0]; i++)
        if ((long)sf.f_type == fs[i].magic)
            return json_string(fs[i].name);
    char b[32];
    snprintf(b, sizeof b, "magic 0x%lx", (long)sf.f_type);
    return json_string(b);
}

/* The page a large file of dir is kept in (st_blksize of a 4 MiB sparse probe: 2 MiB on a
 * tmpfs mounted huge=within_size or huge=always, else the base page), or null. */
static json_t *data_page_json(const char *dir)
{
    char path[4096];
    if (!dir[0] || snprintf(path, sizeof path, "%s/.bench-page-probe-%ld", dir, (long)getpid()) >=
                       (int)sizeof path)
        return json_null();
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return json_null();
    struct stat sb;
    json_t *j = ftruncate(fd, 4 << 20) == 0 && fstat(fd, &sb) == 0
                    ? json_integer((json_int_t)sb.st_blksize)
                    : json_null();
    close(fd);
    unlink(path);
    return j;
}

static json_t *params_json(const g_cfg_t *cfg)
{
    json_t *p = json_object();
    json_t *a = json_array();
    for (unsigned i = 0; i < cfg->nsizes; i++)
        json_array_append_new(a, json_integer((json_int_t)cfg->sizes[i]));
    json_object_set_new(p, "sizes_bytes", a);
    a = json_array();
    for (unsigned i = 0; i < cfg->nconcs; i++)
        json_array_append_new(a, json_integer(cfg->concs[i]));
    json_object_set_new(p, "concurrency", a);
    a = json_array();
    for (unsigned i = 0; i < cfg->nprocs; i++)
        json_array_append_new(a, json_integer(cfg->procs[i]));
    json_object_set_new(p, "processes", a);
    a = json_array();
    for (unsigned i = 0; i < cfg->narms; i++)
        json_array_append_new(a, json_pack("{s:s,s:s,s:s}", "name", cfg->arms[i].name, "transport",
                                           cfg->arms[i].rdma ? "rdma" : "http", "provider",
                                           cfg->arms[i].rdma ? cfg->arms[i].provider : "none"));
    json_object_set_new(p, "arms", a);
    a = json_array();
    for (unsigned i = 0; i < cfg->nops; i++)
        json_array_append_new(a, json_string(cfg->ops[i] == G_GET ? "get" : "put"));
    json_object_set_new(p, "ops", a);
    json_object_set_new(p, "endpoint", json_string(cfg->endpoint));
    json_object_set_new(p, "bucket_get", json_string(cfg->bucket_get));
    json_object_set_new(p, "bucket_put", json_string(cfg->bucket_put));
    json_object_set_new(p, "repeats", json_integer(cfg->repeats));
    json_object_set_new(p, "budget_bytes_per_measurement", json_integer((json_int_t)cfg->budget));
    json_object_set_new(p, "mem_cap_bytes", json_integer((json_int_t)cfg->mem_cap));
    json_object_set_new(p, "objects_per_size",
                        cfg->objects ? json_integer(cfg->objects)
                                     : json_string("min(64, max(4, 1 GiB / size))"));
    json_object_set_new(p, "op_concurrency", json_integer(cfg->op_conc));
    json_object_set_new(p, "chunk_size", json_integer((json_int_t)cfg->chunk_size));
    json_object_set_new(p, "part_size", json_integer((json_int_t)cfg->part_size));
    json_object_set_new(p, "multipart_threshold", json_integer((json_int_t)cfg->mp_threshold));
    json_object_set_new(p, "client_crc_check", json_boolean(cfg->client_crc));
    json_object_set_new(p, "get_length",
                        json_string(cfg->get_whole ? "WHARF_WHOLE (HEAD + GET)"
                                                   : "known size (one ranged GET per chunk)"));
    json_object_set_new(p, "witness_min", json_real(cfg->witness_min));
    json_object_set_new(p, "data_dir", cfg->data_dir[0] ? json_string(cfg->data_dir) : json_null());
    json_object_set_new(p, "data_fs", data_fs_json(cfg->data_dir));
    json_object_set_new(p, "data_page_bytes", data_page_json(cfg->data_dir));
    json_object_set_new(
        p, "method",
        json_string("paired arms A B A B per cell over the same objects; ops per stream = "
                    "ceil(budget / (size * streams)) capped by mem_cap (fixed byte budget per "
                    "measurement); one warm-up transfer per stream before the first repeat of "
                    "each cell and arm (untimed); every transfer lands in its own slice, "
                    "verified after the timed window; throughput = bytes / (last worker end - "
                    "first worker start); client CPU = getrusage of the worker processes over "
                    "the window; server CPU = process_cpu_seconds_total delta from /metrics; "
                    "host CPU = /proc/stat busy (total - idle - iowait) delta"));
    json_object_set_new(p, "fill_pattern", json_string("object i = byte (i*37+11)&0xFF"));
    return p;
}

static int run_grid(g_cfg_t *cfg)
{
    char err[G_ERR] = "";
    json_t *root = json_object(), *cells = json_array();
    wb_limits_t lim = {0};
    int failures = 0, rc = 1;
    unsigned n_cells = 0, n_skipped = 0;
    double t_run = wb_now();
    char ts[32];
    wb_timestamp(ts);
    const char *rdma_prov = "none";
    for (unsigned a = 0; a < cfg->narms; a++)
        if (cfg->arms[a].rdma)
            rdma_prov = cfg->arms[a].provider;

    if (!cfg->no_limits) {
        fprintf(stderr, "bench: measuring this machine's limits (%u x %" PRIu64 " MiB)...\n",
                cfg->limits_reps, cfg->limits_bytes / WB_MIB);
        if (wb_limits_measure(cfg->limits_bytes, cfg->limits_reps, &lim, err, sizeof err) != 0) {
            fprintf(stderr, "bench: limits: %s\n", err);
            goto out;
        }
        fprintf(stderr,
                "bench: limits GB/s: memcpy %.2f, process_vm_writev %.2f (x%u %.2f), "
                "loopback tcp %.2f (x%u %.2f), md5 %.2f\n",
                wb_rate_median(&lim.memcpy_1), wb_rate_median(&lim.pvw_1), lim.streams_n,
                wb_rate_median(&lim.pvw_n), wb_rate_median(&lim.tcp_1), lim.streams_n,
                wb_rate_median(&lim.tcp_n), wb_rate_median(&lim.md5_1));
    }
    g_lim_t lims[] = {{"memcpy_1", wb_rate_median(&lim.memcpy_1)},
                      {"memcpy_n", wb_rate_median(&lim.memcpy_n)},
                      {"process_vm_writev_1", wb_rate_median(&lim.pvw_1)},
                      {"process_vm_writev_n", wb_rate_median(&lim.pvw_n)},
                      {"tcp_loopback_1", wb_rate_median(&lim.tcp_1)},
                      {"tcp_loopback_n", wb_rate_median(&lim.tcp_n)},
                      {"md5_1", wb_rate_median(&lim.md5_1)}};

    if (grid_setup_objects(cfg, err, sizeof err) != 0) {
        fprintf(stderr, "bench: setup: %s\n", err);
        goto out;
    }

    for (unsigned pi = 0; pi < cfg->nprocs; pi++) {
        unsigned procs = cfg->procs[pi];
        /* worker buffers: the largest cell of this process count that fits mem_cap */
        size_t max_buf = 0, max_ops = 0;
        for (unsigned si = 0; si < cfg->nsizes; si++)
            for (unsigned ci = 0; ci < cfg->nconcs; ci++) {
                uint64_t size = cfg->sizes[si];
                unsigned conc = cfg->concs[ci];
                if (size * conc * procs > cfg->mem_cap || conc > 256)
                    continue;
                unsigned ops = ops_per_stream_for(cfg, size, conc * procs);
                max_buf = WB_MAX(max_buf, (size_t)(size * conc * ops));
                max_ops = WB_MAX(max_ops, (size_t)conc * ops);
            }
        /* max_buf 0: no cell of this process count fits; each is recorded as skipped below */
        g_pool_t pool = {0};
        for (unsigned oi = 0; oi < cfg->nops; oi++) {
            g_op_t op = cfg->ops[oi];
            for (unsigned si = 0; si < cfg->nsizes; si++)
                for (unsigned ci = 0; ci < cfg->nconcs; ci++) {
                    uint64_t size = cfg->sizes[si];
                    unsigned conc = cfg->concs[ci];
                    unsigned streams = conc * procs;
                    n_cells++;
                    if (size * streams > cfg->mem_cap || conc > 256) {
                        n_skipped++;
                        for (unsigned a = 0; a < cfg->narms; a++) {
                            char why[256];
                            snprintf(why, sizeof why,
                                     "skipped: %u streams x %" PRIu64
                                     " MiB exceed --mem-cap %" PRIu64 " MiB",
                                     streams, size / WB_MIB, cfg->mem_cap / WB_MIB);
                            json_array_append_new(
                                cells,
                                json_pack("{s:s,s:s,s:I,s:i,s:i,s:s,s:s}", "op",
                                          op == G_GET ? "get" : "put", "arm", cfg->arms[a].name,
                                          "size_bytes", (json_int_t)size, "concurrency", conc,
                                          "processes", procs, "status", "skipped", "error", why));
                        }
                        continue;
                    }
                    unsigned ops = ops_per_stream_for(cfg, size, streams);
                    unsigned nobj = op == G_GET ? grid_objects_for(cfg, size) : 0;
                    g_meas_t ms[G_MAX_ARMS][64];
                    unsigned nm[G_MAX_ARMS] = {0};
                    for (unsigned r = 0; r < cfg->repeats; r++)
                        for (unsigned a = 0; a < cfg->narms; a++) {
                            if (!pool.alive && grid_pool_start(&pool, cfg, procs, max_buf, max_ops,
                                                               err, sizeof err) != 0) {
                                fprintf(stderr, "bench: starting %u workers: %s\n", procs, err);
                                goto out;
                            }
                            g_meas_t *m = &ms[a][nm[a]];
                            if (grid_measure(cfg, &pool, op, a, size, conc, ops, nobj, r == 0, m) !=
                                0)
                                m->ok = 0; /* workers died or hung: restarted next time */
                            nm[a]++;
                            print_meas(cfg, op, &cfg->arms[a], size, conc, procs, r, m);
                        }
                    for (unsigned a = 0; a < cfg->narms; a++) {
                        json_t *c = grid_cell_json(
                            cfg, op, &cfg->arms[a], size, conc, procs, ops, nobj, ms[a], nm[a],
                            lims, cfg->no_limits ? 0 : (unsigned)(sizeof lims / sizeof lims[0]));
                        if (strcmp(json_string_value(json_object_get(c, "status")), "ok") != 0)
                            failures++;
                        json_array_append_new(cells, c);
                        for (unsigned k = 0; k < nm[a]; k++)
                            grid_meas_free(&ms[a][k]);
                    }
                }
        }
        if (pool.alive)
            grid_pool_stop(&pool, 0);
    }
    if (!cfg->keep_put_objects)
        for (unsigned oi = 0; oi < cfg->nops; oi++)
            if (cfg->ops[oi] == G_PUT)
                grid_cleanup_put_objects(cfg);

    /* summary, as the seed's results{cells[],peak_gbps_bytes,peak_cell,failures} */
    json_t *res = json_object();
    json_object_set_new(res, "cells", cells);
    json_t *peaks = json_object();
    size_t i;
    json_t *c;
    json_array_foreach(cells, i, c)
    {
        if (!json_object_get(c, "runs") || json_is_string(json_object_get(c, "error")))
            continue;
        char k[64];
        snprintf(k, sizeof k, "%s/%s", json_string_value(json_object_get(c, "op")),
                 json_string_value(json_object_get(c, "arm")));
        double v = grid_cell_med(c, "throughput_gbps_bytes", NULL);
        json_t *pk = json_object_get(peaks, k);
        if (!pk || v > json_number_value(json_object_get(pk, "peak_gbps_bytes")))
            json_object_set_new(
                peaks, k,
                json_pack("{s:f,s:I,s:I,s:I}", "peak_gbps_bytes", v, "size_bytes",
                          json_integer_value(json_object_get(c, "size_bytes")), "concurrency",
                          json_integer_value(json_object_get(c, "concurrency")), "processes",
                          json_integer_value(json_object_get(c, "processes"))));
    }
    json_object_set_new(res, "peaks", peaks);
    json_object_set_new(res, "failures", json_integer(failures));
    json_object_set_new(res, "goals", grid_goals_rdma_vs_http(cfg, cells, &lim));
    cells = NULL;

    json_object_set_new(root, "schema", json_string("wharf-bench/1"));
    json_object_set_new(root, "benchmark", json_string(cfg->benchmark));
    json_object_set_new(root, "backend", json_string("wharf"));
    json_object_set_new(root, "params", params_json(cfg));
    json_object_set_new(root, "environment", wb_env_json(rdma_prov));
    json_t *lj = cfg->no_limits ? NULL : wb_limits_json(&lim);
    if (cfg->durable_write_gbps > 0) { /* the disk's rate, for PUTs to a disk */
        if (!lj)
            lj = json_object();
        json_object_set_new(lj, "durable_write_gbps", json_real(cfg->durable_write_gbps));
        json_object_set_new(lj, "durable_write_how", json_string(cfg->durable_how));
    }
    json_object_set_new(root, "limits", lj ? lj : json_null());
    json_object_set_new(root, "results", res);
    json_object_set_new(root, "timestamp", json_string(ts));
    json_object_set_new(root, "wall_s", json_real(wb_now() - t_run));
    char path[1024];
    if (wb_write_result(cfg->results, cfg->benchmark, cfg->tag, "wharf", root, path, sizeof path,
                        err, sizeof err) != 0) {
        fprintf(stderr, "bench: %s\n", err);
        goto out;
    }
    /* goals, if any, on stdout */
    json_t *goals = json_object_get(res, "goals");
    json_array_foreach(goals, i, c)
    {
        json_t *pr = json_object_get(c, "paired");
        printf("goal %-4s %-70s %.3f", json_is_true(json_object_get(c, "met")) ? "MET" : "MISS",
               json_string_value(json_object_get(c, "goal")),
               json_number_value(json_object_get(c, "value")));
        if (json_is_object(pr))
            printf(" (paired %.3f..%.3f)", json_number_value(json_object_get(pr, "min")),
                   json_number_value(json_object_get(pr, "max")));
        if (json_object_get(c, "note"))
            printf(" [%s]", json_string_value(json_object_get(c, "note")));
        printf("\n");
    }
    printf("%s\n", path);
    fprintf(stderr, "bench: %d failed cells; %.0f s; results in %s\n", failures, wb_now() - t_run,
            path);
    rc = failures ? 1 : 0;
    if (n_cells && n_skipped == n_cells) { /* e.g. --mem-cap 8192: 8 KiB, not 8 GiB */
        fprintf(stderr,
                "bench: no cell was measured: all %u exceed --mem-cap %" PRIu64
                " bytes (sizes take K/M/G suffixes; a bare number is bytes)\n",
                n_cells, cfg->mem_cap);
        rc = 2;
    }
out:
    json_decref(cells);
    json_decref(root);
    return rc;
}

/* ---- arguments ---- */

/* Sizes are base's: a bare number is bytes, K/M/G/T (KiB...) multiply by 1024^n. Zero is no
 * size for the grid. */
static int parse_size(const char *s, uint64_t *out)
{
    uint64_t v;
    if (wh_parse_size(s, &v) != 0 || v == 0)
        return -1;
    *out = v;
    return 0;
}

static int parse_size_list(const char *s, uint64_t *out, unsigned *n)
{
    char tmp[512];
    snprintf(tmp, sizeof tmp, "%s", s);
    *n = 0;
    for (char *save, *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (*n >= G_MAX_LIST || parse_size(t, &out[*n]) != 0)
            return -1;
        (*n)++;
    }
    return *n ? 0 : -1;
}

static int parse_uint_list(const char *s, unsigned *out, unsigned *n, unsigned max)
{
    char tmp[512];
    snprintf(tmp, sizeof tmp, "%s", s);
    *n = 0;
    for (char *save, *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char *end;
        unsigned long v = strtoul(t, &end, 10);
        if (*n >= G_MAX_LIST || *end || v == 0 || v > max)
            return -1;
        out[(*n)++] = (unsigned)v;
    }
    return *n ? 0 : -1;
}

static int parse_arms(g_cfg_t *cfg, const char *s, const char *provider)
{
    char tmp[256];
    snprintf(tmp, sizeof tmp, "%s", s);
    cfg->narms = 0;
    for (char *save, *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (cfg->narms >= G_MAX_ARMS)
            return -1;
        g_arm_t *a = &cfg->arms[cfg->narms];
        memset(a, 0, sizeof *a);
        if (strcmp(t, "http") == 0) {
            snprintf(a->name, sizeof a->name, "http");
        } else if (strncmp(t, "rdma", 4) == 0 && (t[4] == 0 || t[4] == ':')) {
            a->rdma = 1;
            snprintf(a->provider, sizeof a->provider, "%s", t[4] ? t + 5 : provider);
            const char *short_name =
                strncmp(a->provider, "ofi+", 4) == 0 ? a->provider + 4 : a->provider;
            snprintf(a->name, sizeof a->name, "rdma-%.24s", short_name);
        } else {
            return -1;
        }
        for (unsigned k = 0; k < cfg->narms; k++)
            if (strcmp(cfg->arms[k].name, a->name) == 0)
                return -1;
        cfg->narms++;
    }
    return cfg->narms ? 0 : -1;
}

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: wharf_bench fetch|put|rdma-vs-http [options]   (B1 grid over libwharf, paired "
        "arms)\n"
        "       wharf_bench limits [--limits-bytes SIZE] [--limits-repeats N]\n"
        "       wharf_bench report RESULTS_DIR [--out DIR]\n"
        "SIZE: " WH_SIZE_SYNTAX "; a bare number is bytes (64M, not 64)\n"
        "server:\n"
        "  --endpoint URL        default $WHARF_ENDPOINT, $AWS_ENDPOINT_URL_S3, $AWS_ENDPOINT_URL\n"
        "                        or " WH_DEFAULT_ENDPOINT "\n"
        "  --access-key K        default $WHARF_ACCESS_KEY or $AWS_ACCESS_KEY_ID\n"
        "  --secret-key S        default $WHARF_SECRET_KEY or $AWS_SECRET_ACCESS_KEY\n"
        "  --region R            default $WHARF_REGION, $AWS_REGION, $AWS_DEFAULT_REGION "
        "or " WH_DEFAULT_REGION "\n"
        "  --unix-socket PATH    for ofi+shm (default $WHARF_UNIX_SOCKET)\n"
        "grid:\n"
        "  --sizes LIST          of SIZEs, default 1M,4M,16M,64M,256M\n"
        "  --concurrency LIST    streams per process, default 1,4,8,16,32\n"
        "  --processes LIST      client processes, default 1 (e.g. 1,2,4)\n"
        "  --arms LIST           default rdma,http; rdma:PROVIDER names one (rdma:ofi+tcp)\n"
        "  --provider P          provider of a bare 'rdma' arm: default $WHARF_PROVIDER or "
        "ofi+shm\n"
        "  --ops LIST            get,put (fetch: get; put: put; rdma-vs-http: get,put)\n"
        "  --repeats N           paired repeats per cell (default 3, at least 3 for a report)\n"
        "  --budget SIZE         bytes per measurement (default 512M)\n"
        "  --mem-cap SIZE        client buffer cap over all processes (default: RAM/8, at least "
        "4G)\n"
        "  --objects N           objects per size (default min(64, max(4, 1 GiB/size)))\n"
        "  --op-concurrency N    libwharf requests per transfer (default 1, both arms)\n"
        "  --chunk-size SIZE --part-size SIZE --multipart-threshold SIZE   client config\n"
        "  --client-crc 0|1      libwharf's crc check of landed bytes in the window (default 0;\n"
        "                        every byte is verified after the window anyway)\n"
        "  --witness-min F       gate on server counters (default 0.99)\n"
        "  --limits-bytes SIZE (default 1G) --limits-repeats N --no-limits\n"
        "  --data-dir DIR        the server's data directory (default $WHARF_DATA_DIR):\n"
        "                        params.data_fs names its file system (tmpfs, ext4, ...)\n"
        "  --durable-write-gbps X --durable-how TEXT   the disk's durable write rate,\n"
        "                        measured outside (bench/run_local.py --durable-limit):\n"
        "                        limits.durable_write_gbps\n"
        "  --results DIR         default results; --tag T adds -T to the file name\n"
        "  --timeout S           per phase of one measurement (default 300)\n"
        "  --skip-upload         trust objects already in the bucket\n"
        "  --keep-put-objects    do not delete b1put/ objects at the end\n"
        "  --get-whole           GET with length WHARF_WHOLE (libwharf HEADs first) instead of\n"
        "                        the known object size (the seed's get_object(size))\n"
        "presets:\n"
        "  rdma-vs-http = --sizes 256M --concurrency 1,4 --ops get,put\n"
        "                 --arms rdma:ofi+shm,rdma:ofi+tcp,http\n"
        "      RDMA against HTTP and against raw process_vm_writev at 256 MiB; the paired goals\n"
        "      are in the result file's results.goals\n");
}

static const char *env_or(const wh_env_t *e, wh_env_key_t k, const char *dflt)
{
    return e->value[k] ? e->value[k] : dflt;
}

static int limits_only(int argc, char **argv)
{
    uint64_t bytes = WB_GIB;
    unsigned reps = 3;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--limits-bytes") == 0 && i + 1 < argc) {
            if (parse_size(argv[++i], &bytes) != 0)
                return 2;
        } else if (strcmp(argv[i], "--limits-repeats") == 0 && i + 1 < argc) {
            reps = (unsigned)atoi(argv[++i]);
        } else {
            usage(stderr);
            return 2;
        }
    }
    wb_limits_t l;
    char err[G_ERR];
    if (wb_limits_measure(bytes, reps ? reps : 1, &l, err, sizeof err) != 0) {
        fprintf(stderr, "wharf_bench limits: %s\n", err);
        return 1;
    }
    json_t *o = wb_limits_json(&l);
    json_dumpf(o, stdout, JSON_INDENT(1) | JSON_SORT_KEYS | JSON_REAL_PRECISION(6));
    printf("\n");
    json_decref(o);
    return 0;
}

int wb_bench_main(int argc, char **argv)
{
    if (argc < 1 || !argv[0]) {
        usage(stderr);
        return 2;
    }
    const char *mode = argv[0];
    if (strcmp(mode, "-h") == 0 || strcmp(mode, "--help") == 0 || strcmp(mode, "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(mode, "limits") == 0)
        return limits_only(argc, argv);
    if (strcmp(mode, "report") == 0)
        return wb_report_main(argc - 1, argv + 1);
    static g_cfg_t cfg;
    memset(&cfg, 0, sizeof cfg);
    const char *sizes = "1M,4M,16M,64M,256M", *concs = "1,4,8,16,32", *procs = "1";
    const char *arms = "rdma,http", *ops = NULL;
    /* A bare "rdma" arm uses --provider, else $WHARF_PROVIDER, else ofi+shm. auto would pick
     * shm here too, but an arm must name the provider it measures, so auto and none mean the
     * default. */
    wh_env_t env;
    wh_env_read(&env, NULL);
    const char *provider = env_or(&env, WH_ENV_PROVIDER, "ofi+shm");
    if (strcmp(provider, "auto") == 0 || strcmp(provider, "none") == 0)
        provider = "ofi+shm";
    if (strcmp(mode, "fetch") == 0) {
        cfg.benchmark = "b1-fetch";
        ops = "get";
    } else if (strcmp(mode, "put") == 0) {
        cfg.benchmark = "b1-put";
        ops = "put";
    } else if (strcmp(mode, "rdma-vs-http") == 0) {
        cfg.benchmark = "rdma-vs-http";
        ops = "get,put";
        sizes = "256M";
        concs = "1,4";
        arms = "rdma:ofi+shm,rdma:ofi+tcp,http";
    } else {
        fprintf(stderr, "wharf_bench: unknown benchmark '%s'\n", mode);
        usage(stderr);
        return 2;
    }
    snprintf(cfg.endpoint, sizeof cfg.endpoint, "%s",
             env_or(&env, WH_ENV_ENDPOINT, WH_DEFAULT_ENDPOINT));
    snprintf(cfg.ak, sizeof cfg.ak, "%s", env_or(&env, WH_ENV_ACCESS_KEY, ""));
    snprintf(cfg.sk, sizeof cfg.sk, "%s", env_or(&env, WH_ENV_SECRET_KEY, ""));
    snprintf(cfg.region, sizeof cfg.region, "%s", env_or(&env, WH_ENV_REGION, WH_DEFAULT_REGION));
    snprintf(cfg.unix_socket, sizeof cfg.unix_socket, "%s", env_or(&env, WH_ENV_UNIX_SOCKET, ""));
    snprintf(cfg.bucket_get, sizeof cfg.bucket_get, "bench-fetch");
    snprintf(cfg.bucket_put, sizeof cfg.bucket_put, "bench-put");
    snprintf(cfg.results, sizeof cfg.results, "results");
    const char *dd = getenv("WHARF_DATA_DIR");
    snprintf(cfg.data_dir, sizeof cfg.data_dir, "%s", dd ? dd : "");
    cfg.repeats = 3;
    cfg.budget = 512 * WB_MIB;
    /* Client buffers: an eighth of the host's memory, at least 4 GiB (16 GiB on a 128 GiB
     * host: 32 streams of 256 MiB objects fit; 4 GiB on the 24 GiB VM). */
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    uint64_t ram = pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz : 0;
    cfg.mem_cap = WB_MAX(4096 * WB_MIB, ram / 8);
    cfg.op_conc = 1;
    cfg.witness_min = 0.99;
    cfg.limits_bytes = WB_GIB;
    cfg.limits_reps = 3;
    cfg.timeout_s = 300;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int used = 1, bad = 0;
#define STR(opt, dst) else if (strcmp(a, opt) == 0 && v) snprintf(dst, sizeof dst, "%s", v)
#define SIZE(opt, dst) else if (strcmp(a, opt) == 0 && v) bad = parse_size(v, &dst)
        if (0) {
        }
        STR("--endpoint", cfg.endpoint);
        STR("--access-key", cfg.ak);
        STR("--secret-key", cfg.sk);
        STR("--region", cfg.region);
        STR("--unix-socket", cfg.unix_socket);
        STR("--results", cfg.results);
        STR("--tag", cfg.tag);
        STR("--bucket", cfg.bucket_get);
        STR("--put-bucket", cfg.bucket_put);
        STR("--data-dir", cfg.data_dir);
        STR("--durable-how", cfg.durable_how);
        SIZE("--budget", cfg.budget);
        SIZE("--mem-cap", cfg.mem_cap);
        SIZE("--chunk-size", cfg.chunk_size);
        SIZE("--part-size", cfg.part_size);
        SIZE("--multipart-threshold", cfg.mp_threshold);
        SIZE("--limits-bytes", cfg.limits_bytes);
        else if (strcmp(a, "--sizes") == 0 && v) sizes = v;
        else if (strcmp(a, "--concurrency") == 0 && v) concs = v;
        else if (strcmp(a, "--processes") == 0 && v) procs = v;
        else if (strcmp(a, "--arms") == 0 && v) arms = v;
        else if (strcmp(a, "--provider") == 0 && v) provider = v;
        else if (strcmp(a, "--ops") == 0 && v) ops = v;
        else if (strcmp(a, "--repeats") == 0 && v) cfg.repeats = (unsigned)atoi(v);
        else if (strcmp(a, "--objects") == 0 && v) cfg.objects = (unsigned)atoi(v);
        else if (strcmp(a, "--op-concurrency") == 0 && v) cfg.op_conc = (unsigned)atoi(v);
        else if (strcmp(a, "--client-crc") == 0 && v) cfg.client_crc = atoi(v) != 0;
        else if (strcmp(a, "--witness-min") == 0 && v) cfg.witness_min = atof(v);
        else if (strcmp(a, "--limits-repeats") == 0 && v) cfg.limits_reps = (unsigned)atoi(v);
        else if (strcmp(a, "--timeout") == 0 && v) cfg.timeout_s = (unsigned)atoi(v);
        else if (strcmp(a, "--durable-write-gbps") == 0 && v) cfg.durable_write_gbps = atof(v);
        else
        {
            used = 0;
            if (strcmp(a, "--no-limits") == 0)
                cfg.no_limits = 1;
            else if (strcmp(a, "--skip-upload") == 0)
                cfg.skip_upload = 1;
            else if (strcmp(a, "--keep-put-objects") == 0)
                cfg.keep_put_objects = 1;
            else if (strcmp(a, "--get-whole") == 0)
                cfg.get_whole = 1;
            else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
                usage(stdout);
                return 0;
            } else {
                fprintf(stderr, "wharf_bench: unknown or incomplete option '%s'\n", a);
                usage(stderr);
                return 2;
            }
        }
#undef STR
#undef SIZE
        if (bad) {
            fprintf(stderr, "wharf_bench: bad size '%s' for %s (" WH_SIZE_SYNTAX ")\n", v, a);
            return 2;
        }
        i += used;
    }
    if (parse_size_list(sizes, cfg.sizes, &cfg.nsizes) != 0 ||
        parse_uint_list(concs, cfg.concs, &cfg.nconcs, 256) != 0 ||
        parse_uint_list(procs, cfg.procs, &cfg.nprocs, G_MAX_PROCS) != 0 ||
        parse_arms(&cfg, arms, provider) != 0) {
        fprintf(stderr,
                "wharf_bench: bad --sizes, --concurrency (1..256), --processes (1..%d) "
                "or --arms (http, rdma, rdma:PROVIDER; no duplicates)\n",
                G_MAX_PROCS);
        return 2;
    }
    char otmp[64];
    snprintf(otmp, sizeof otmp, "%s", ops);
    for (char *save, *t = strtok_r(otmp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (cfg.nops >= 2 || (strcmp(t, "get") != 0 && strcmp(t, "put") != 0)) {
            fprintf(stderr, "wharf_bench: --ops takes get, put or get,put\n");
            return 2;
        }
        cfg.ops[cfg.nops++] = strcmp(t, "get") == 0 ? G_GET : G_PUT;
    }
    if (cfg.repeats < 1 || cfg.repeats > 64 || cfg.op_conc < 1 || cfg.timeout_s < 1 ||
        cfg.witness_min < 0 || cfg.witness_min > 1) {
        fprintf(stderr, "wharf_bench: --repeats 1..64, --op-concurrency >= 1, --timeout >= 1, "
                        "--witness-min 0..1\n");
        return 2;
    }
    if (!cfg.ak[0] || !cfg.sk[0]) {
        fprintf(stderr,
                "wharf_bench: no credentials: set %s, and %s (or give --access-key and "
                "--secret-key)\n",
                wh_env_vars(WH_ENV_ACCESS_KEY), wh_env_vars(WH_ENV_SECRET_KEY));
        return 2;
    }
    if (cfg.repeats < 3)
        fprintf(stderr, "bench: note: %u repeats; the suite's rule is at least 3\n", cfg.repeats);
    return run_grid(&cfg);
}

int wb_report_main(int argc, char **argv)
{
    if (argc < 1) {
        fprintf(stderr, "usage: wharf_bench report RESULTS_DIR [--out DIR]\n");
        return 2;
    }
    const char *script = getenv("WHARF_BENCH_REPORT");
    char path[1024];
    if (!script || !*script) {
        snprintf(path, sizeof path, "%s/bench/report.py", WB_SOURCE_DIR);
        script = path;
    }
    char **args = calloc((size_t)argc + 3, sizeof *args);
    if (!args)
        return 1;
    args[0] = "/usr/bin/python3";
    args[1] = (char *)script;
    for (int i = 0; i < argc; i++)
        args[2 + i] = argv[i];
    fflush(NULL);
    execv(args[0], args);
    fprintf(stderr, "wharf_bench report: cannot run /usr/bin/python3 %s: %s\n", script,
            strerror(errno));
    free(args);
    return 1;
}
