/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of src/server/cluster/rtt.c: the floor with nothing known, RFC 6298's smoothing, timeouts
 * that follow a server that grows slow and scale with the request's size, the ceiling, and
 * the backoff of a request that already timed out. */
#include "check.h"
#include "cluster/rtt.h"

#include <math.h>

#define MIB (1ULL << 20)

static void test_floor_and_ceiling(void)
{
    CHECK_EQ_U64(cl_rtt_floor_ms(0), 3000);
    CHECK_EQ_U64(cl_rtt_floor_ms(8 * MIB), 3250); /* the old fixed bound of an 8 MiB chunk */
    CHECK_EQ_U64(cl_rtt_ceil_ms(8 * MIB), 8 * 3250);
    CHECK_EQ_U64(cl_rtt_timeout_ms(NULL, 8 * MIB, 0), 3250);
    cl_rtt_t e = {0};
    CHECK_EQ_U64(cl_rtt_timeout_ms(&e, 8 * MIB, 0), 3250);
    /* fast samples: the floor still holds (an idle cluster keeps its bound) */
    for (int i = 0; i < 50; i++)
        cl_rtt_sample(&e, 8 * MIB, 0.040);
    CHECK_EQ_U64(cl_rtt_timeout_ms(&e, 8 * MIB, 0), 3250);
    /* a server that takes a minute: the ceiling */
    for (int i = 0; i < 50; i++)
        cl_rtt_sample(&e, 8 * MIB, 60.0);
    CHECK_EQ_U64(cl_rtt_timeout_ms(&e, 8 * MIB, 0), 8 * 3250);
}

static void test_smoothing(void)
{
    cl_rtt_t e = {0};
    cl_rtt_sample(&e, 2 * MIB, 1.0); /* 0.5 s per MiB */
    CHECK(fabs(e.srtt - 0.5) < 1e-9 && fabs(e.rttvar - 0.25) < 1e-9 && e.samples == 1);
    cl_rtt_sample(&e, 2 * MIB, 2.0); /* 1.0 s per MiB */
    CHECK(fabs(e.rttvar - (0.75 * 0.25 + 0.25 * 0.5)) < 1e-9);
    CHECK(fabs(e.srtt - (0.875 * 0.5 + 0.125 * 1.0)) < 1e-9);
    /* small requests count as 1 MiB */
    cl_rtt_t s = {0};
    cl_rtt_sample(&s, 100, 0.2);
    CHECK(fabs(s.srtt - 0.2) < 1e-9);
    cl_rtt_sample(&s, 0, -1.0); /* a clock gone wrong is ignored */
    CHECK(s.samples == 1);
}

static void test_follows_a_slow_server(void)
{
    /* a healthy server under load: 8 MiB requests take 3 to 4 s, above the old fixed 3.25 s
     * bound; the timeout moves above what it does */
    cl_rtt_t e = {0};
    for (int i = 0; i < 40; i++)
        cl_rtt_sample(&e, 8 * MIB, i % 2 ? 3.0 : 4.0);
    uint64_t t = cl_rtt_timeout_ms(&e, 8 * MIB, 0);
    CHECK(t > 4000 && t < 8 * 3250);
    /* scaled by size: twice the bytes, about twice the time */
    uint64_t d = cl_rtt_timeout_ms(&e, 16 * MIB, 0);
    CHECK(d > t && d <= t * 2 + 2 && d + 2 >= t * 2);
    /* a small request of that server still gets the floor when the estimate is below it */
    CHECK_EQ_U64(cl_rtt_timeout_ms(&e, 1, 0), 3000);
}

static void test_backoff(void)
{
    CHECK_EQ_U64(cl_rtt_timeout_ms(NULL, 0, 1), 6000);
    CHECK_EQ_U64(cl_rtt_timeout_ms(NULL, 0, 2), 12000);
    CHECK_EQ_U64(cl_rtt_timeout_ms(NULL, 0, 3), 24000);
    CHECK_EQ_U64(cl_rtt_timeout_ms(NULL, 0, 9), 24000); /* capped, and under the ceiling */
    cl_rtt_t e = {0};
    for (int i = 0; i < 10; i++)
        cl_rtt_sample(&e, 0, 5.0);
    CHECK_EQ_U64(cl_rtt_timeout_ms(&e, 0, 3), cl_rtt_ceil_ms(0));
}

/* The hedge deadline: a quarter of the floor while nothing is known; then what requests took
 * (srtt + 2 rttvar), at least CL_HEDGE_MIN_MS, at most half the timeout. */
static void test_hedge(void)
{
    CHECK_EQ_U64(cl_rtt_hedge_ms(NULL, 8 * MIB), 3250 / 4);
    cl_rtt_t e = {0};
    for (int i = 0; i < 20; i++)
        cl_rtt_sample(&e, 8 * MIB, 0.080); /* 10 ms per MiB, steady */
    uint64_t h = cl_rtt_hedge_ms(&e, 8 * MIB);
    CHECK(h >= 80 && h <= 120);
    cl_rtt_t fast = {0};
    for (int i = 0; i < 20; i++)
        cl_rtt_sample(&fast, 1 * MIB, 0.001);
    CHECK_EQ_U64(cl_rtt_hedge_ms(&fast, 1 * MIB), CL_HEDGE_MIN_MS);
    cl_rtt_t slow = {0};
    for (int i = 0; i < 20; i++)
        cl_rtt_sample(&slow, 8 * MIB, 30.0);
    CHECK_EQ_U64(cl_rtt_hedge_ms(&slow, 8 * MIB), cl_rtt_timeout_ms(&slow, 8 * MIB, 0) / 2);
}

int main(void)
{
    test_floor_and_ceiling();
    test_smoothing();
    test_follows_a_slow_server();
    test_backoff();
    test_hedge();
    printf("%d passed, %d failed\n", g_check_pass, g_check_fail);
    return g_check_fail != 0;
}
