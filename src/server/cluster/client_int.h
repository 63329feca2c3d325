/* SPDX-License-Identifier: Apache-2.0 */
/* The chunk client's internals shared by client.c (requests, runs) and client_est.c (latency
 * estimates per storage server, hedging, metrics). */
#ifndef WH_CLUSTER_CLIENT_INT_H
#define WH_CLUSTER_CLIENT_INT_H

#include "cluster/client.h"
#include "cluster/rtt.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* What one storage server's requests took lately (rtt.h), by request kind. */
typedef struct cl_node_est {
    uint32_t id;
    cl_rtt_t op[CL_OP_RPUT + 1];
    uint64_t timeouts;
    uint64_t last_timeout_ms; /* wh_now_ns clock; 0: never */
    bool answered;            /* a request succeeded after the last timeout */
} cl_node_est_t;

struct cl_client {
    char *secret;
    char *ca_file; /* NULL: storage servers speak plain HTTP; else HTTPS verified with it */
    size_t secret_len;
    CURLSH *share; /* the DNS cache only: libcurl does not support sharing connections
                    * between concurrent threads (CURLSHOPT_SHARE), and a 16-core gateway
                    * crashed in curl_multi_perform when it did */
    pthread_mutex_t locks[CURL_LOCK_DATA_LAST];
    /* Idle multi handles, each keeping the connections its last run opened: a run takes one
     * (or makes one), so a connection is only ever used by the thread that holds its multi. */
    pthread_mutex_t mpool_lock;
    CURLM **mpool;
    size_t n_mpool, cap_mpool;
    _Atomic uint64_t requests, failures, retries, timeouts;
    _Atomic uint64_t rx_bytes, tx_bytes; /* chunk bytes received from / sent to storage */
    _Atomic uint64_t hedges, hedge_wins;
    pthread_mutex_t est_lock; /* est, n_est, cap_est */
    cl_node_est_t *est;
    size_t n_est, cap_est;
    cl_node_fail_fn on_fail;
    void *on_fail_arg;
};

/* client_est.c: the wh_now_ns clock in ms; a job's total and stall time limits from its
 * server's estimates; when to hedge a GET (0: never); what an answer, a timeout or a late
 * answer (after the hedge won) teaches the estimates. */
uint64_t cl_now_ms(void);
void cl_est_bounds(cl_client_t *c, const cl_job_t *j, uint64_t *total_ms, uint64_t *stall_ms);
uint64_t cl_est_hedge_ms(cl_client_t *c, const cl_job_t *j);
void cl_est_answered(cl_client_t *c, const cl_job_t *j, double seconds);
void cl_est_timed_out(cl_client_t *c, const cl_job_t *j);
void cl_est_late(cl_client_t *c, const cl_job_t *j);

#endif
