/* SPDX-License-Identifier: Apache-2.0 */
/* Latency estimates and timeouts of chunk requests (see rtt.h). */
#include "cluster/rtt.h"

#include <math.h>

#define MIB (1024.0 * 1024.0)

static double units(uint64_t len)
{
    return len < (1u << 20) ? 1.0 : (double)len / MIB;
}

void cl_rtt_sample(cl_rtt_t *e, uint64_t len, double seconds)
{
    double r = seconds / units(len);
    if (!(r >= 0)) /* NaN or negative: a clock that went wrong */
        return;
    if (e->samples == 0) {
        e->srtt = r;
        e->rttvar = r / 2;
    } else {
        e->rttvar = 0.75 * e->rttvar + 0.25 * fabs(e->srtt - r);
        e->srtt = 0.875 * e->srtt + 0.125 * r;
    }
    e->samples++;
}

uint64_t cl_rtt_floor_ms(uint64_t len)
{
    return CL_STALL_MS + len * 1000 / CL_MIN_RATE;
}

uint64_t cl_rtt_ceil_ms(uint64_t len)
{
    return CL_RTO_CEIL_X * cl_rtt_floor_ms(len);
}

uint64_t cl_rtt_timeout_ms(const cl_rtt_t *e, uint64_t len, unsigned backoff)
{
    uint64_t lo = cl_rtt_floor_ms(len), hi = cl_rtt_ceil_ms(len), t = lo;
    if (e && e->samples) {
        double ms = (e->srtt + 4 * e->rttvar) * units(len) * 1000.0;
        if (ms > (double)hi)
            t = hi;
        else if (ms > (double)lo)
            t = (uint64_t)ms;
    }
    if (backoff > CL_RTO_BACKOFF_MAX)
        backoff = CL_RTO_BACKOFF_MAX;
    t <<= backoff;
    return t < hi ? t : hi;
}

uint64_t cl_rtt_hedge_ms(const cl_rtt_t *e, uint64_t len)
{
    uint64_t hi = cl_rtt_timeout_ms(e, len, 0) / 2, t = cl_rtt_floor_ms(len) / 4;
    if (e && e->samples)
        t = (uint64_t)((e->srtt + 2 * e->rttvar) * units(len) * 1000.0);
    if (t < CL_HEDGE_MIN_MS)
        t = CL_HEDGE_MIN_MS;
    return t < hi ? t : hi;
}
