/* SPDX-License-Identifier: Apache-2.0 */
/* Erasure coding of a cluster chunk over ISA-L (see ec.h). */
#include "cluster/ec.h"

#include <isa-l/erasure_code.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint64_t cl_ec_shard_len(uint64_t len, unsigned k)
{
    return k ? (len + k - 1) / k : 0;
}

wh_status_t cl_ec_parse(const char *s, unsigned *k, unsigned *m, char *err, size_t errlen)
{
    unsigned long a = 0, b = 0;
    const char *p = s;
    bool ok = s && *p >= '0' && *p <= '9';
    while (ok && *p >= '0' && *p <= '9' && a < 1000)
        a = a * 10 + (unsigned long)(*p++ - '0');
    ok = ok && *p++ == '+' && *p >= '0' && *p <= '9';
    while (ok && *p >= '0' && *p <= '9' && b < 1000)
        b = b * 10 + (unsigned long)(*p++ - '0');
    ok = ok && *p == '\0';
    if (!ok) {
        snprintf(err, errlen, "erasure coding '%s' is not K+M (e.g. 4+2)", s ? s : "");
        return WH_ERR_INVALID;
    }
    if (a < 1 || b < 1 || a + b > CL_EC_MAX) {
        snprintf(err, errlen,
                 "erasure coding %lu+%lu: K >= 1 data and M >= 1 parity shards, K+M <= %d", a, b,
                 CL_EC_MAX);
        return WH_ERR_INVALID;
    }
    *k = (unsigned)a;
    *m = (unsigned)b;
    return WH_OK;
}

/* The (k+m) x k Cauchy encoding matrix: identity on top, parity rows below. */
static void ec_matrix(unsigned k, unsigned m, uint8_t *a)
{
    gf_gen_cauchy1_matrix(a, (int)(k + m), (int)k);
}

wh_status_t cl_ec_encode(unsigned k, unsigned m, uint64_t slen, uint8_t *const *shards)
{
    if (k < 1 || m < 1 || k + m > CL_EC_MAX || slen > (uint64_t)INT32_MAX)
        return WH_ERR_INVALID;
    if (!slen)
        return WH_OK;
    uint8_t a[CL_EC_MAX * CL_EC_MAX], g[CL_EC_MAX * CL_EC_MAX * 32];
    ec_matrix(k, m, a);
    ec_init_tables((int)k, (int)m, a + k * k, g);
    ec_encode_data((int)slen, (int)k, (int)m, g, (uint8_t **)shards, (uint8_t **)shards + k);
    return WH_OK;
}

wh_status_t cl_ec_decode(unsigned k, unsigned m, uint64_t slen, uint8_t *const *shards,
                         const bool *present)
{
    if (k < 1 || m < 1 || k + m > CL_EC_MAX || slen > (uint64_t)INT32_MAX)
        return WH_ERR_INVALID;
    unsigned n = k + m, src[CL_EC_MAX], lost[CL_EC_MAX], ns = 0, nl = 0;
    for (unsigned i = 0; i < n; i++) {
        if (present[i] && ns < k)
            src[ns++] = i;
        else if (!present[i])
            lost[nl++] = i;
    }
    if (ns < k)
        return WH_ERR_UNAVAILABLE;
    if (!nl || !slen)
        return WH_OK;
    uint8_t a[CL_EC_MAX * CL_EC_MAX], b[CL_EC_MAX * CL_EC_MAX], inv[CL_EC_MAX * CL_EC_MAX];
    uint8_t d[CL_EC_MAX * CL_EC_MAX], g[CL_EC_MAX * CL_EC_MAX * 32];
    ec_matrix(k, m, a);
    /* b: the rows of the shards used; its inverse maps them back to the data shards */
    for (unsigned r = 0; r < k; r++)
        memcpy(b + r * k, a + src[r] * k, k);
    if (gf_invert_matrix(b, inv, (int)k) != 0)
        return WH_ERR_INTERNAL; /* a Cauchy matrix's square submatrices are invertible */
    /* d: row j rebuilds lost[j] from the k sources: a data shard is its row of the inverse,
     * a parity shard its encoding row times the inverse */
    for (unsigned j = 0; j < nl; j++) {
        if (lost[j] < k) {
            memcpy(d + j * k, inv + lost[j] * k, k);
            continue;
        }
        for (unsigned c = 0; c < k; c++) {
            uint8_t s = 0;
            for (unsigned t = 0; t < k; t++)
                s ^= gf_mul(a[lost[j] * k + t], inv[t * k + c]);
            d[j * k + c] = s;
        }
    }
    uint8_t *in[CL_EC_MAX], *out[CL_EC_MAX];
    for (unsigned r = 0; r < k; r++)
        in[r] = shards[src[r]];
    for (unsigned j = 0; j < nl; j++)
        out[j] = shards[lost[j]];
    ec_init_tables((int)k, (int)nl, d, g);
    ec_encode_data((int)slen, (int)k, (int)nl, g, in, out);
    return WH_OK;
}
