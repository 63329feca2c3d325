/* SPDX-License-Identifier: Apache-2.0 */
/* The paired goals of a run that has the cells for them: RDMA against HTTP and against the
 * machine's raw copy rate, at 256 MiB and concurrency 1 and 4 (the rdma-vs-http preset). */
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

/* ---- RDMA against HTTP and against the raw copy rate, where the run has the cells ---- */

static json_t *find_cell(json_t *cells, const char *op, const char *arm, uint64_t size,
                         unsigned conc, unsigned procs)
{
    size_t i;
    json_t *c;
    json_array_foreach(cells, i, c)
    {
        if (strcmp(json_string_value(json_object_get(c, "op")), op) == 0 &&
            strcmp(json_string_value(json_object_get(c, "arm")), arm) == 0 &&
            (uint64_t)json_integer_value(json_object_get(c, "size_bytes")) == size &&
            json_integer_value(json_object_get(c, "concurrency")) == conc &&
            json_integer_value(json_object_get(c, "processes")) == procs &&
            json_object_get(c, "runs"))
            return c;
    }
    return NULL;
}

double grid_cell_med(json_t *c, const char *a, const char *b)
{
    json_t *o = json_object_get(c, a);
    if (b)
        o = json_object_get(o, b);
    return json_number_value(json_object_get(o, "median"));
}

/* Median over repeats of the paired ratio x_r / y_r of a per-run field. */
static json_t *paired_ratio(json_t *x, json_t *y, const char *field)
{
    json_t *rx = json_object_get(x, "runs"), *ry = json_object_get(y, "runs");
    size_t n = WB_MIN(json_array_size(rx), json_array_size(ry));
    double v[64];
    size_t k = 0;
    for (size_t i = 0; i < n && k < 64; i++) {
        double a = json_number_value(json_object_get(json_array_get(rx, i), field));
        double b = json_number_value(json_object_get(json_array_get(ry, i), field));
        if (b > 0)
            v[k++] = a / b;
    }
    return wb_summary_json(v, k);
}

static void goal_add(json_t *goals, const char *name, json_t *ratio, double value, double target,
                     int higher_better, const char *status_err)
{
    json_t *g = json_object();
    json_object_set_new(g, "goal", json_string(name));
    json_object_set_new(g, "value", json_real(value));
    json_object_set_new(g, "target", json_real(target));
    json_object_set_new(g, "paired", ratio ? ratio : json_null());
    int met = higher_better ? value >= target : value <= target;
    json_object_set_new(g, "met", json_boolean(met && !status_err));
    if (status_err)
        json_object_set_new(g, "note", json_string(status_err));
    json_array_append_new(goals, g);
}

json_t *grid_goals_rdma_vs_http(const g_cfg_t *cfg, json_t *cells, const wb_limits_t *lim)
{
    json_t *goals = json_array();
    uint64_t size = 256 * WB_MIB;
    unsigned concs[2] = {1, 4};
    double pvw = wb_rate_median(&lim->pvw_1);
    for (unsigned k = 0; k < 2; k++) {
        unsigned conc = concs[k];
        json_t *http_get = find_cell(cells, "get", "http", size, conc, 1);
        json_t *http_put = find_cell(cells, "put", "http", size, conc, 1);
        for (unsigned a = 0; a < cfg->narms; a++) {
            if (!cfg->arms[a].rdma)
                continue;
            const char *an = cfg->arms[a].name;
            json_t *rg = find_cell(cells, "get", an, size, conc, 1);
            json_t *rp = find_cell(cells, "put", an, size, conc, 1);
            char name[160];
            const char *bad = NULL;
            if (rg && strcmp(an, "rdma-shm") == 0 && pvw > 0) {
                bad = json_is_string(json_object_get(rg, "error"))
                          ? json_string_value(json_object_get(rg, "error"))
                          : NULL;
                snprintf(name, sizeof name,
                         "GET 256 MiB c%u: %s / raw process_vm_writev (1 stream) >= 0.85", conc,
                         an);
                goal_add(goals, name, NULL, grid_cell_med(rg, "throughput_gbps_bytes", NULL) / pvw,
                         0.85, 1, bad);
            }
            if (rg && http_get) {
                bad = json_is_string(json_object_get(rg, "error"))
                          ? json_string_value(json_object_get(rg, "error"))
                      : json_is_string(json_object_get(http_get, "error"))
                          ? json_string_value(json_object_get(http_get, "error"))
                          : NULL;
                json_t *pr = paired_ratio(rg, http_get, "throughput_gbps_bytes");
                snprintf(name, sizeof name, "GET 256 MiB c%u: %s / http >= 1.8", conc, an);
                goal_add(goals, name, pr, json_number_value(json_object_get(pr, "median")), 1.8, 1,
                         bad);
                pr = paired_ratio(rg, http_get, "client_cpu_s_per_gb");
                snprintf(name, sizeof name, "GET 256 MiB c%u: client CPU-s/GB %s / http <= 0.1",
                         conc, an);
                goal_add(goals, name, pr, json_number_value(json_object_get(pr, "median")), 0.1, 0,
                         bad);
            }
            if (rp && http_put) {
                bad = json_is_string(json_object_get(rp, "error"))
                          ? json_string_value(json_object_get(rp, "error"))
                      : json_is_string(json_object_get(http_put, "error"))
                          ? json_string_value(json_object_get(http_put, "error"))
                          : NULL;
                json_t *pr = paired_ratio(rp, http_put, "throughput_gbps_bytes");
                snprintf(name, sizeof name, "PUT 256 MiB c%u: %s / http >= 1.5", conc, an);
                goal_add(goals, name, pr, json_number_value(json_object_get(pr, "median")), 1.5, 1,
                         bad);
            }
        }
    }
    return goals;
}
