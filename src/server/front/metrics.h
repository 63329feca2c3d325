/* SPDX-License-Identifier: Apache-2.0 */
/* Server metrics: lock-free counters rendered as Prometheus text on GET /metrics. */
#ifndef WH_FRONT_METRICS_H
#define WH_FRONT_METRICS_H

#include "base/util.h"
#include "front/route.h"
#include "store/store.h"

#include <stdatomic.h>
#include <stdint.h>

#define FRONT_METRICS_MAX_STATUS 600
#define FRONT_METRICS_NBUCKETS 15

typedef struct front_metrics {
    _Atomic uint64_t requests[FRONT_API__COUNT][FRONT_METRICS_MAX_STATUS];
    _Atomic uint64_t lat_bucket[FRONT_API__COUNT][FRONT_METRICS_NBUCKETS]; /* non-cumulative */
    _Atomic uint64_t lat_count[FRONT_API__COUNT];
    _Atomic uint64_t lat_sum_ns[FRONT_API__COUNT];
    _Atomic uint64_t http_rx_bytes;   /* request body bytes received */
    _Atomic uint64_t http_tx_bytes;   /* response body bytes sent (completed responses) */
    _Atomic uint64_t http_read_bytes; /* object bytes served by GET over HTTP */
    _Atomic uint64_t http_read_ops;
    _Atomic uint64_t http_write_bytes; /* object bytes received by PUT/UploadPart over HTTP */
    _Atomic uint64_t http_write_ops;
    /* A cluster gateway: object bytes the storage servers moved by RDMA for its requests
     * (the gateway's own RDMA engine moves none of them; s3api/delegate.c counts them). */
    _Atomic uint64_t rdma_delegated_read_bytes, rdma_delegated_read_ops;
    _Atomic uint64_t rdma_delegated_write_bytes, rdma_delegated_write_ops;
    _Atomic int64_t inflight;
    double start_time;
} front_metrics_t;

void front_metrics_init(front_metrics_t *m);
/* Counted when the reply is queued, so a client that has its reply also sees it counted. */
void front_metrics_count(front_metrics_t *m, front_api_t api, int status);
/* Recorded when the request ends (the reply sent, or the connection gone). */
void front_metrics_latency(front_metrics_t *m, front_api_t api, uint64_t dur_ns);
/* Appends the HTTP-side metrics (the RDMA engine appends its own). */
void front_metrics_render(front_metrics_t *m, wh_sbuf_t *out);
/* Gauges of the space where objects live (wharf_storage_*). */
void front_metrics_storage(store_t *st, wh_sbuf_t *out);

#endif
