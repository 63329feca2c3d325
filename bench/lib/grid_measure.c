/* SPDX-License-Identifier: Apache-2.0 */
/* One timed measurement of the grid (one arm, one repeat of a cell): the witness and CPU
 * around the window, the workers' replies, and a cell's JSON over its repeats. */
#include "grid.h"

#include "base/crc.h"

#include <errno.h>
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
#include <sys/wait.h>
#include <unistd.h>

/* ---- one measurement (one arm, one repeat of a cell) ---- */

static const char *const g_metric_prefixes[] = {
    "wharf_rdma_", "minio_api_rdma_", "wharf_http_", "process_cpu_seconds_total",
    "wharf_xfer_", "wharf_decline",   NULL};

void grid_meas_free(g_meas_t *m)
{
    json_decref(m->metrics_delta);
    free(m->lat);
    free(m->ttfb);
    memset(m, 0, sizeof *m);
}

int grid_measure(const g_cfg_t *cfg, g_pool_t *pool, g_op_t op, unsigned arm, uint64_t size,
                 unsigned conc, unsigned ops_per_stream, unsigned nobjects, int warmup, g_meas_t *m)
{
    memset(m, 0, sizeof *m);
    g_reply_t reps[G_MAX_PROCS];
    g_cmd_t c = {.type = M_PREP,
                 .op = op,
                 .arm = (int)arm,
                 .size = size,
                 .conc = conc,
                 .ops_per_stream = ops_per_stream,
                 .nobjects = nobjects,
                 .warmup = warmup};
    wb_metrics_t before = {0}, after = {0};
    wb_hostcpu_t h0, h1;
    /* prepare: warm-up, poison/fill (untimed) */
    if (grid_pool_send(pool, &c, conc, m->err, sizeof m->err) != 0 ||
        grid_pool_collect(pool, reps, cfg->timeout_s, m->err, sizeof m->err) != 0)
        goto dead;
    for (unsigned i = 0; i < pool->n; i++)
        if (!reps[i].ok) {
            snprintf(m->err, sizeof m->err, "prepare: %.400s", reps[i].err);
            goto dead;
        }
    snprintf(m->provider, sizeof m->provider, "%s", reps[0].provider);
    /* timed window, bracketed by the witness and the host CPU */
    if (wb_metrics_scrape(cfg->endpoint, cfg->ak, cfg->sk, cfg->region, &before) != 0) {
        snprintf(m->err, sizeof m->err, "metrics-unreachable: %s", before.err);
    }
    wb_hostcpu_read(&h0);
    c.type = M_GO;
    if (grid_pool_send(pool, &c, conc, m->err, sizeof m->err) != 0 ||
        grid_pool_collect(pool, reps, cfg->timeout_s, m->err, sizeof m->err) != 0)
        goto dead;
    wb_hostcpu_read(&h1);
    if (wb_metrics_scrape(cfg->endpoint, cfg->ak, cfg->sk, cfg->region, &after) != 0 && !m->err[0])
        snprintf(m->err, sizeof m->err, "metrics-unreachable: %s", after.err);
    /* The server may count a transfer when its request completes, a moment after the client
     * has every byte. Let the witness counter settle (bounded: 2 s), outside the timing. */
    {
        const g_arm_t *a0 = &cfg->arms[arm];
        const char *wname =
            a0->rdma
                ? (op == G_GET ? "wharf_rdma_read_bytes_total" : "wharf_rdma_write_bytes_total")
                : (op == G_GET ? "wharf_http_read_bytes_total" : "wharf_http_write_bytes_total");
        double want = (double)pool->n * conc * ops_per_stream * size * cfg->witness_min;
        double t_settle = wb_now();
        while (before.ok && after.ok && wb_now() - t_settle < 2.0 &&
               wb_metrics_get(&after, wname, NULL) - wb_metrics_get(&before, wname, NULL) < want) {
            usleep(20000);
            wb_metrics_t again = {0};
            if (wb_metrics_scrape(cfg->endpoint, cfg->ak, cfg->sk, cfg->region, &again) != 0) {
                wb_metrics_free(&again);
                break;
            }
            wb_metrics_free(&after);
            after = again;
        }
        m->witness_settle_s = wb_now() - t_settle;
    }
    double t0 = 1e300, t1 = 0;
    for (unsigned i = 0; i < pool->n; i++) {
        g_reply_t *r = &reps[i];
        t0 = fmin(t0, r->t_start);
        t1 = fmax(t1, r->t_end);
        m->worker_wall[i] = r->t_end - r->t_start;
        m->bytes += r->bytes;
        m->ops += r->ops;
        m->client_cpu_s += r->cpu_s;
        m->fallbacks += r->fallbacks;
        m->retries += r->retries;
        m->requests += r->requests;
        if (!r->ok && !m->err[0])
            snprintf(m->err, sizeof m->err,
                     "%" PRIu64 " failed ops, %" PRIu64 " on the wrong transport; first: %.400s",
                     r->op_errors, r->wrong_transport, r->err);
    }
    m->wall_s = t1 - t0;
    m->gbps = m->wall_s > 0 ? (double)m->bytes / m->wall_s / 1e9 : 0;
    m->ops_per_s = m->wall_s > 0 ? (double)m->ops / m->wall_s : 0;
    m->host_cpu_s = wb_hostcpu_busy_s(&h0, &h1);
    m->host_busy_fraction = wb_hostcpu_fraction(&h0, &h1);
    /* latencies out of shared memory (before the next PREP overwrites them) */
    size_t per = (size_t)conc * ops_per_stream;
    m->lat = malloc(per * pool->n * sizeof(double));
    m->ttfb = malloc(per * pool->n * sizeof(double));
    for (unsigned i = 0; i < pool->n && m->lat && m->ttfb; i++)
        for (size_t k = 0; k < per; k++) {
            double l = grid_pool_lat(pool, i)[k], f = grid_pool_ttfb(pool, i)[k];
            if (l >= 0)
                m->lat[m->nlat++] = l;
            if (l >= 0 && f > 0)
                m->ttfb[m->nttfb++] = f;
        }
    /* witness */
    uint64_t payload = (uint64_t)pool->n * per * size;
    if (before.ok && after.ok) {
        int f1 = 0, f2 = 0;
        double cpu0 = wb_metrics_get(&before, "process_cpu_seconds_total", &f1);
        double cpu1 = wb_metrics_get(&after, "process_cpu_seconds_total", &f2);
        m->server_cpu_known = f1 && f2;
        m->server_cpu_s = cpu1 - cpu0;
        m->metrics_delta = wb_metrics_delta_json(&before, &after, g_metric_prefixes);
        const g_arm_t *a = &cfg->arms[arm];
        const char *rdma_b =
            op == G_GET ? "wharf_rdma_read_bytes_total" : "wharf_rdma_write_bytes_total";
        const char *rdma_o =
            op == G_GET ? "wharf_rdma_read_ops_total" : "wharf_rdma_write_ops_total";
        const char *http_b =
            op == G_GET ? "wharf_http_read_bytes_total" : "wharf_http_write_bytes_total";
        const char *http_o =
            op == G_GET ? "wharf_http_read_ops_total" : "wharf_http_write_ops_total";
        const char *wb = a->rdma ? rdma_b : http_b, *wo = a->rdma ? rdma_o : http_o;
        int fb = 0;
        m->witness_bytes = wb_metrics_get(&after, wb, &fb) - wb_metrics_get(&before, wb, NULL);
        m->witness_ops = wb_metrics_get(&after, wo, NULL) - wb_metrics_get(&before, wo, NULL);
        m->other_rdma_bytes =
            a->rdma ? 0
                    : wb_metrics_get(&after, rdma_b, NULL) - wb_metrics_get(&before, rdma_b, NULL);
        m->witness_ratio = payload ? m->witness_bytes / (double)payload : 0;
        if (!fb && !m->err[0])
            snprintf(m->err, sizeof m->err,
                     "witness: /metrics has no %s; nothing proves the "
                     "transport",
                     wb);
        else if (m->witness_ratio < cfg->witness_min && !m->err[0])
            snprintf(m->err, sizeof m->err,
                     "%s: the server counted %.0f of %" PRIu64 " payload bytes in %s (%.3f < %.2f)",
                     a->rdma ? "rdma-not-used" : "http-witness-short", m->witness_bytes, payload,
                     wb, m->witness_ratio, cfg->witness_min);
        else if (!a->rdma && m->other_rdma_bytes > 0.01 * (double)payload && !m->err[0])
            snprintf(m->err, sizeof m->err, "http arm moved %.0f bytes over RDMA",
                     m->other_rdma_bytes);
    }
    wb_metrics_free(&before);
    wb_metrics_free(&after);
    /* verify outside the timed window */
    c.type = M_VERIFY;
    if (grid_pool_send(pool, &c, conc, m->err, sizeof m->err) != 0 ||
        grid_pool_collect(pool, reps, cfg->timeout_s, m->err, sizeof m->err) != 0)
        goto dead;
    for (unsigned i = 0; i < pool->n; i++) {
        m->verified_bytes += reps[i].verified_bytes;
        m->bad_bytes += reps[i].bad_bytes;
        m->unverified_bytes += reps[i].unverified_bytes;
        snprintf(m->verify_method, sizeof m->verify_method, "%s", reps[i].verify_method);
        if (!reps[i].ok && !m->err[0])
            snprintf(m->err, sizeof m->err, "verification: %" PRIu64 " bad bytes; %.400s",
                     reps[i].bad_bytes, reps[i].err);
    }
    if (m->bytes != payload && !m->err[0])
        snprintf(m->err, sizeof m->err, "moved %" PRIu64 " of %" PRIu64 " payload bytes", m->bytes,
                 payload);
    m->ok = m->err[0] == 0;
    return 0;
dead:
    wb_metrics_free(&before);
    wb_metrics_free(&after);
    grid_pool_stop(pool, 1);
    return -1;
}

/* ---- cell results ---- */

static json_t *meas_list_json(g_meas_t *ms, unsigned n, size_t off)
{
    double v[64];
    for (unsigned i = 0; i < n && i < 64; i++)
        v[i] = *(double *)((char *)&ms[i] + off);
    return wb_summary_json(v, n < 64 ? n : 64);
}

#define MEAS_SUMMARY(ms, n, field) meas_list_json((ms), (n), offsetof(g_meas_t, field))

static double meas_median(g_meas_t *ms, unsigned n, size_t off)
{
    double v[64];
    for (unsigned i = 0; i < n && i < 64; i++)
        v[i] = *(double *)((char *)&ms[i] + off);
    return wb_median(v, n < 64 ? n : 64);
}

json_t *grid_cell_json(const g_cfg_t *cfg, g_op_t op, const g_arm_t *arm, uint64_t size,
                       unsigned conc, unsigned procs, unsigned ops_per_stream, unsigned nobjects,
                       g_meas_t *ms, unsigned n, const g_lim_t *lims, unsigned nlims)
{
    json_t *c = json_object();
    json_object_set_new(c, "op", json_string(op == G_GET ? "get" : "put"));
    json_object_set_new(c, "arm", json_string(arm->name));
    json_object_set_new(c, "transport", json_string(arm->rdma ? "rdma" : "http"));
    json_object_set_new(c, "provider", json_string(n ? ms[0].provider : ""));
    json_object_set_new(c, "size_bytes", json_integer((json_int_t)size));
    json_object_set_new(c, "concurrency", json_integer(conc));
    json_object_set_new(c, "processes", json_integer(procs));
    json_object_set_new(c, "streams_total", json_integer(conc * procs));
    json_object_set_new(c, "ops_per_stream", json_integer(ops_per_stream));
    json_object_set_new(c, "objects", json_integer(nobjects));
    json_object_set_new(c, "repeats", json_integer(n));
    /* per-repeat figures */
    json_t *runs = json_array();
    const char *err = NULL;
    uint64_t vb = 0, bad = 0, unv = 0;
    size_t nl = 0, nf = 0;
    for (unsigned i = 0; i < n; i++) {
        g_meas_t *m = &ms[i];
        double gb = (double)m->bytes / 1e9;
        json_t *ww = json_array();
        for (unsigned k = 0; k < procs; k++)
            json_array_append_new(ww, json_real(m->worker_wall[k]));
        json_t *r =
            json_pack("{s:I,s:I,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:o,s:o,s:I,s:I,s:I,s:b,s:s?}",
                      "bytes", (json_int_t)m->bytes, "ops", (json_int_t)m->ops, "wall_s", m->wall_s,
                      "throughput_gbps_bytes", m->gbps, "ops_per_s", m->ops_per_s, "client_cpu_s",
                      m->client_cpu_s, "server_cpu_s", m->server_cpu_s, "host_cpu_s", m->host_cpu_s,
                      "host_busy_fraction", m->host_busy_fraction, "witness_ratio",
                      m->witness_ratio, "worker_wall_s", ww, "metrics_delta",
                      m->metrics_delta ? json_incref(m->metrics_delta) : json_object(), "fallbacks",
                      (json_int_t)m->fallbacks, "retries", (json_int_t)m->retries, "requests",
                      (json_int_t)m->requests, "ok", m->ok, "error", m->ok ? NULL : m->err);
        json_object_set_new(r, "client_cpu_s_per_gb", json_real(gb > 0 ? m->client_cpu_s / gb : 0));
        json_object_set_new(r, "server_cpu_s_per_gb",
                            m->server_cpu_known && gb > 0 ? json_real(m->server_cpu_s / gb)
                                                          : json_null());
        json_object_set_new(r, "host_cpu_s_per_gb", json_real(gb > 0 ? m->host_cpu_s / gb : 0));
        json_object_set_new(r, "witness",
                            json_pack("{s:f,s:f,s:f,s:f}", "bytes", m->witness_bytes, "ops",
                                      m->witness_ops, "other_rdma_bytes", m->other_rdma_bytes,
                                      "settle_s", m->witness_settle_s));
        json_array_append_new(runs, r);
        if (!m->ok && !err)
            err = m->err;
        vb += m->verified_bytes;
        bad += m->bad_bytes;
        unv += m->unverified_bytes;
        nl += m->nlat;
        nf += m->nttfb;
    }
    json_object_set_new(c, "runs", runs);
    /* derived per-repeat series for medians */
    double gbps[64], cpuc[64], cpus[64], cpuh[64], cores[64];
    unsigned nk = n < 64 ? n : 64;
    int srv_known = 1;
    for (unsigned i = 0; i < nk; i++) {
        double gb = (double)ms[i].bytes / 1e9;
        gbps[i] = ms[i].gbps;
        cpuc[i] = gb > 0 ? ms[i].client_cpu_s / gb : 0;
        cpus[i] = gb > 0 ? ms[i].server_cpu_s / gb : 0;
        cpuh[i] = gb > 0 ? ms[i].host_cpu_s / gb : 0;
        cores[i] = ms[i].wall_s > 0 ? ms[i].host_cpu_s / ms[i].wall_s : 0;
        srv_known &= ms[i].server_cpu_known;
    }
    json_object_set_new(c, "throughput_gbps_bytes", wb_summary_json(gbps, nk));
    json_object_set_new(c, "throughput_gib_s",
                        json_real(meas_median(ms, n, offsetof(g_meas_t, gbps)) * 1e9 / WB_GIB));
    json_object_set_new(c, "ops_per_s", MEAS_SUMMARY(ms, n, ops_per_s));
    json_object_set_new(c, "wall_s", MEAS_SUMMARY(ms, n, wall_s));
    json_t *cpu = json_object();
    json_object_set_new(cpu, "client_cpu_s_per_gb", wb_summary_json(cpuc, nk));
    json_object_set_new(cpu, "server_cpu_s_per_gb",
                        srv_known ? wb_summary_json(cpus, nk) : json_null());
    json_object_set_new(cpu, "host_cpu_s_per_gb", wb_summary_json(cpuh, nk));
    json_object_set_new(cpu, "host_cores_used", wb_summary_json(cores, nk));
    double med_cores = wb_median(cores, nk);
    double med_gbps = meas_median(ms, n, offsetof(g_meas_t, gbps));
    json_object_set_new(cpu, "gb_per_cpu_core",
                        med_cores >= 0.1 ? json_real(med_gbps / med_cores) : json_null());
    json_object_set_new(c, "cpu", cpu);
    /* latency over every op of every repeat */
    double *lat = malloc((nl + 1) * sizeof *lat), *tt = malloc((nf + 1) * sizeof *tt);
    size_t il = 0, it = 0;
    for (unsigned i = 0; i < n && lat && tt; i++) {
        memcpy(lat + il, ms[i].lat, ms[i].nlat * sizeof *lat);
        il += ms[i].nlat;
        memcpy(tt + it, ms[i].ttfb, ms[i].nttfb * sizeof *tt);
        it += ms[i].nttfb;
    }
    wb_lat_t ls, ts;
    wb_lat_stats(lat, il, &ls);
    wb_lat_stats(tt, it, &ts);
    json_object_set_new(c, "latency", wb_lat_json(&ls));
    /* time to first byte means something only for http: an RDMA reply's header comes after
     * the bytes have landed */
    json_object_set_new(c, "ttfb", it && !arm->rdma ? wb_lat_json(&ts) : json_null());
    free(lat);
    free(tt);
    /* witness and verification */
    double wr[64];
    for (unsigned i = 0; i < nk; i++)
        wr[i] = ms[i].witness_ratio;
    json_t *wit = wb_summary_json(wr, nk);
    json_object_set_new(wit, "counter",
                        json_string(arm->rdma ? (op == G_GET ? "wharf_rdma_read_bytes_total"
                                                             : "wharf_rdma_write_bytes_total")
                                              : (op == G_GET ? "wharf_http_read_bytes_total"
                                                             : "wharf_http_write_bytes_total")));
    json_object_set_new(wit, "gate", json_real(cfg->witness_min));
    json_object_set_new(c, "witness", wit);
    json_object_set_new(c, "verification",
                        json_pack("{s:s,s:I,s:I,s:I,s:b}", "method", n ? ms[0].verify_method : "",
                                  "bytes_verified", (json_int_t)vb, "bytes_mismatched",
                                  (json_int_t)bad, "bytes_unverified", (json_int_t)unv, "ok",
                                  n > 0 && bad == 0 && unv == 0));
    json_t *fr = json_object();
    for (unsigned i = 0; i < nlims; i++)
        if (lims[i].gbps > 0)
            json_object_set_new(fr, lims[i].name, json_real(med_gbps / lims[i].gbps));
    json_object_set_new(c, "fraction_of_limits", fr);
    json_object_set_new(c, "status", json_string(err ? "failed" : "ok"));
    json_object_set_new(c, "error", err ? json_string(err) : json_null());
    return c;
}
