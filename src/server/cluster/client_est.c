/* SPDX-License-Identifier: Apache-2.0 */
/* The chunk client's latency estimates per storage server (rtt.h): the time limits of a
 * request, when to hedge a GET, which servers are slow, and the client's metrics. */
#include "cluster/client_int.h"
#include "base/log.h"
#include "base/util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MOD "cclient"

/* ---- latency estimates per storage server ---- */

uint64_t cl_now_ms(void)
{
    return wh_now_ns() / 1000000;
}

/* The entry of node id, made when create (NULL without memory or when absent). est_lock
 * held. */
static cl_node_est_t *est_of(cl_client_t *c, uint32_t id, bool create)
{
    for (size_t i = 0; i < c->n_est; i++)
        if (c->est[i].id == id)
            return &c->est[i];
    if (!create)
        return NULL;
    if (c->n_est == c->cap_est) {
        size_t cap = c->cap_est ? c->cap_est * 2 : 8;
        cl_node_est_t *v = realloc(c->est, cap * sizeof *v);
        if (!v)
            return NULL;
        c->est = v;
        c->cap_est = cap;
    }
    cl_node_est_t *e = &c->est[c->n_est++];
    memset(e, 0, sizeof *e);
    e->id = id;
    return e;
}

/* j's bounds against its current candidate: the whole request and no progress, ms. */
void cl_est_bounds(cl_client_t *c, const cl_job_t *j, uint64_t *total_ms, uint64_t *stall_ms)
{
    cl_rtt_t r = {0};
    pthread_mutex_lock(&c->est_lock);
    const cl_node_est_t *e = est_of(c, j->cand_id[j->_try], false);
    if (e && j->op <= CL_OP_RPUT)
        r = e->op[j->op];
    pthread_mutex_unlock(&c->est_lock);
    *total_ms = cl_rtt_timeout_ms(&r, j->len, j->_backoff);
    /* an rdec reads its stripe's K shards (in up to two rounds of internal GETs, each with
     * its own bound, when one fails) before it writes len bytes: three such bounds */
    if (j->op == CL_OP_RDEC || j->op == CL_OP_RENC)
        *total_ms = 3 * cl_rtt_timeout_ms(&r, WH_MAX(j->len, j->work), j->_backoff);
    *stall_ms = cl_rtt_timeout_ms(&r, 0, j->_backoff); /* one MiB's worth */
}

uint64_t cl_est_hedge_ms(cl_client_t *c, const cl_job_t *j)
{
    cl_rtt_t r = {0};
    pthread_mutex_lock(&c->est_lock);
    const cl_node_est_t *e = est_of(c, j->cand_id[j->_try], false);
    if (e && j->op <= CL_OP_RPUT)
        r = e->op[j->op];
    pthread_mutex_unlock(&c->est_lock);
    return cl_rtt_hedge_ms(&r, j->len);
}

void cl_est_answered(cl_client_t *c, const cl_job_t *j, double seconds)
{
    pthread_mutex_lock(&c->est_lock);
    cl_node_est_t *e = est_of(c, j->cand_id[j->_try], true);
    if (e) {
        if (j->op <= CL_OP_RPUT)
            cl_rtt_sample(&e->op[j->op], j->len, seconds);
        e->answered = true;
    }
    pthread_mutex_unlock(&c->est_lock);
}

void cl_est_timed_out(cl_client_t *c, const cl_job_t *j)
{
    pthread_mutex_lock(&c->est_lock);
    cl_node_est_t *e = est_of(c, j->cand_id[j->_try], true);
    if (e) {
        e->timeouts++;
        e->last_timeout_ms = cl_now_ms();
        e->answered = false;
    }
    pthread_mutex_unlock(&c->est_lock);
}

/* j's candidate lost a hedged read: it had not answered while another replica sent the whole
 * chunk. Ranked behind the others like a server that timed out, until it answers again or
 * CL_SLOW_MS pass (not counted as a timeout: it was not one). */
void cl_est_late(cl_client_t *c, const cl_job_t *j)
{
    pthread_mutex_lock(&c->est_lock);
    cl_node_est_t *e = est_of(c, j->cand_id[j->_try], true);
    if (e) {
        e->last_timeout_ms = cl_now_ms();
        e->answered = false;
    }
    pthread_mutex_unlock(&c->est_lock);
}

bool cl_client_node_slow(cl_client_t *c, uint32_t id)
{
    uint64_t now = cl_now_ms();
    pthread_mutex_lock(&c->est_lock);
    const cl_node_est_t *e = est_of(c, id, false);
    bool slow = e && e->last_timeout_ms && !e->answered && now - e->last_timeout_ms < CL_SLOW_MS;
    pthread_mutex_unlock(&c->est_lock);
    return slow;
}

void cl_client_metrics(cl_client_t *c, uint64_t ref_len, wh_sbuf_t *out)
{
    pthread_mutex_lock(&c->est_lock);
    size_t n = c->n_est;
    cl_node_est_t *v = malloc((n ? n : 1) * sizeof *v);
    if (v && n)
        memcpy(v, c->est, n * sizeof *v);
    pthread_mutex_unlock(&c->est_lock);
    if (!v)
        return;
    uint64_t now = cl_now_ms();
    static const char *const stat[] = {"srtt", "rttvar", "timeout"};
    for (int s = 0; s < 3; s++) {
        if (s == 0)
            wh_sbuf_printf(out, "# HELP wharf_cluster_node_srtt_seconds Smoothed time of a chunk "
                                "request per MiB (a request counts at least 1 MiB), by storage "
                                "server and request kind.\n");
        else if (s == 1)
            wh_sbuf_printf(out, "# HELP wharf_cluster_node_rttvar_seconds Mean deviation of "
                                "wharf_cluster_node_srtt_seconds.\n");
        else
            wh_sbuf_printf(out, "# HELP wharf_cluster_node_timeout_seconds Time bound of a chunk "
                                "request of --chunk-size bytes now (srtt + 4 rttvar, within its "
                                "floor and ceiling).\n");
        wh_sbuf_printf(out, "# TYPE wharf_cluster_node_%s_seconds gauge\n", stat[s]);
        for (size_t i = 0; i < n; i++)
            for (int op = CL_OP_GET; op <= CL_OP_RPUT; op++) {
                const cl_rtt_t *r = &v[i].op[op];
                if (!r->samples)
                    continue;
                double x = s == 0   ? r->srtt
                           : s == 1 ? r->rttvar
                                    : (double)cl_rtt_timeout_ms(r, ref_len, 0) / 1000.0;
                wh_sbuf_printf(out,
                               "wharf_cluster_node_%s_seconds{node=\"%" PRIu32 "\",op=\"%s\"} "
                               "%.6f\n",
                               stat[s], v[i].id, cl_op_name((cl_op_t)op), x);
            }
    }
    wh_sbuf_printf(out, "# HELP wharf_cluster_node_timeouts_total Chunk requests to a storage "
                        "server that were sent and timed out (it is slow: not marked down).\n"
                        "# TYPE wharf_cluster_node_timeouts_total counter\n");
    for (size_t i = 0; i < n; i++)
        wh_sbuf_printf(out, "wharf_cluster_node_timeouts_total{node=\"%" PRIu32 "\"} %" PRIu64 "\n",
                       v[i].id, v[i].timeouts);
    wh_sbuf_printf(out, "# HELP wharf_cluster_node_slow Storage servers ranked last for a "
                        "timeout they have not answered since (1).\n"
                        "# TYPE wharf_cluster_node_slow gauge\n");
    for (size_t i = 0; i < n; i++)
        wh_sbuf_printf(out, "wharf_cluster_node_slow{node=\"%" PRIu32 "\"} %d\n", v[i].id,
                       v[i].last_timeout_ms && !v[i].answered &&
                           now - v[i].last_timeout_ms < CL_SLOW_MS);
    free(v);
}
