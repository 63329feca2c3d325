/* SPDX-License-Identifier: Apache-2.0 */
/* Per storage server latency estimates and the timeouts derived from them, in the manner of
 * TCP's retransmission timer (RFC 6298): a smoothed time and its mean deviation, folded in
 * from every request that completed, and a timeout of srtt + 4 * rttvar.
 *
 * The unit is seconds per MiB of the request, a request counting at least 1 MiB (so small
 * requests, whose cost is their fixed overhead, do not make large ones look slow); a request's
 * timeout scales the estimate by its size. The timeout is never below the fixed bound an idle
 * cluster had (CL_STALL_MS plus the bytes at CL_MIN_RATE, an 8 MiB chunk: 3.25 s) and never
 * above CL_RTO_CEIL_X times it; each timeout a request already had doubles it (backoff). */
#ifndef WH_CLUSTER_RTT_H
#define WH_CLUSTER_RTT_H

#include <stdint.h>

#define CL_STALL_MS 3000
#define CL_MIN_RATE (32ULL << 20) /* bytes/s of the floor: an idle cluster's bound */
#define CL_RTO_CEIL_X 8           /* the ceiling: this many times the floor */
#define CL_RTO_BACKOFF_MAX 3      /* timeouts that double a request's bound, at most */

typedef struct cl_rtt {
    double srtt;      /* seconds per MiB, smoothed */
    double rttvar;    /* its mean deviation */
    uint64_t samples; /* 0: nothing known, the floor applies */
} cl_rtt_t;

/* Folds in one completed request of len bytes that took seconds. */
void cl_rtt_sample(cl_rtt_t *e, uint64_t len, double seconds);
/* The fixed floor and the ceiling of a request of len bytes, ms. */
uint64_t cl_rtt_floor_ms(uint64_t len);
uint64_t cl_rtt_ceil_ms(uint64_t len);
/* The timeout of a request of len bytes that already timed out `backoff` times (e may be
 * NULL: nothing known), ms. */
uint64_t cl_rtt_timeout_ms(const cl_rtt_t *e, uint64_t len, unsigned backoff);

/* When a hedged read asks a second replica (ms after the first was sent): the estimate of
 * what a request of len bytes takes, srtt + 2 * rttvar (a late answer, not a lost one),
 * at least CL_HEDGE_MIN_MS and at most half the request's timeout; a quarter of the floor
 * while nothing is known. */
#define CL_HEDGE_MIN_MS 50
uint64_t cl_rtt_hedge_ms(const cl_rtt_t *e, uint64_t len);

#endif
