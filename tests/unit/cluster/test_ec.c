/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of src/server/cluster/ec.c: K+M parsing and its bounds, shard sizes, and for several K+M
 * every pattern of up to M lost shards rebuilt byte for byte (data and parity shards), with
 * M+1 lost refused. */
#include "check.h"
#include "cluster/ec.h"

#include <stdlib.h>
#include <string.h>

static void test_parse(void)
{
    unsigned k = 0, m = 0;
    char err[160];
    CHECK(cl_ec_parse("4+2", &k, &m, err, sizeof err) == WH_OK && k == 4 && m == 2);
    CHECK(cl_ec_parse("1+1", &k, &m, err, sizeof err) == WH_OK && k == 1 && m == 1);
    CHECK(cl_ec_parse("12+4", &k, &m, err, sizeof err) == WH_OK && k == 12 && m == 4);
    const char *bad[] = {"",     "4",    "4+",  "+2",   "4+0",  "0+2",
                         "15+2", "4+2x", "a+b", "4 +2", "-1+2", "99999999999+1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        CHECK(cl_ec_parse(bad[i], &k, &m, err, sizeof err) == WH_ERR_INVALID);
        CHECK(strstr(err, "erasure coding") != NULL);
    }
    CHECK(cl_ec_parse(NULL, &k, &m, err, sizeof err) == WH_ERR_INVALID);
    CHECK_EQ_U64(cl_ec_shard_len(0, 4), 0);
    CHECK_EQ_U64(cl_ec_shard_len(1, 4), 1);
    CHECK_EQ_U64(cl_ec_shard_len(8, 4), 2);
    CHECK_EQ_U64(cl_ec_shard_len(9, 4), 3);
}

/* Every subset of lost shards of size <= m (bit masks over k + m shards). */
static void run(unsigned k, unsigned m, uint64_t slen)
{
    unsigned n = k + m;
    uint8_t *good[CL_EC_MAX], *work[CL_EC_MAX];
    for (unsigned i = 0; i < n; i++) {
        good[i] = malloc(slen);
        work[i] = malloc(slen);
    }
    for (unsigned i = 0; i < k; i++)
        for (uint64_t b = 0; b < slen; b++)
            good[i][b] = (uint8_t)(rand() & 0xff);
    CHECK(cl_ec_encode(k, m, slen, good) == WH_OK);
    /* parity is not all zeros for random data (it would hide a skipped encode) */
    bool nonzero = false;
    for (uint64_t b = 0; b < slen; b++)
        nonzero |= good[k][b] != 0;
    CHECK(nonzero);
    unsigned patterns = 0, refused = 0;
    for (uint32_t mask = 0; mask < (1u << n); mask++) {
        unsigned lost = (unsigned)__builtin_popcount(mask);
        if (lost > m + 1)
            continue;
        bool present[CL_EC_MAX];
        for (unsigned i = 0; i < n; i++) {
            present[i] = !(mask & (1u << i));
            if (present[i])
                memcpy(work[i], good[i], slen);
            else
                memset(work[i], 0xa5, slen);
        }
        wh_status_t st = cl_ec_decode(k, m, slen, work, present);
        if (lost > m) {
            CHECK(st == WH_ERR_UNAVAILABLE);
            refused++;
            continue;
        }
        CHECK(st == WH_OK);
        bool same = true;
        for (unsigned i = 0; i < n; i++)
            same &= memcmp(work[i], good[i], slen) == 0;
        CHECK(same);
        patterns++;
    }
    CHECK(patterns > 0 && refused > 0);
    for (unsigned i = 0; i < n; i++) {
        free(good[i]);
        free(work[i]);
    }
}

int main(void)
{
    srand(7);
    test_parse();
    run(1, 1, 33);
    run(2, 1, 100);
    run(3, 2, 1);
    run(4, 2, 4099);
    run(6, 3, 517);
    run(8, 4, 64);
    run(10, 4, 31);
    CHECK(cl_ec_encode(0, 2, 8, NULL) == WH_ERR_INVALID);
    CHECK(cl_ec_encode(15, 2, 8, NULL) == WH_ERR_INVALID);
    printf("%d passed, %d failed\n", g_check_pass, g_check_fail);
    return g_check_fail != 0;
}
