/* SPDX-License-Identifier: Apache-2.0 */
/* The description of a degraded RDMA read (see rdec.h): format, parse, read order. */
#include "cluster/rdec.h"
#include "base/codec.h"
#include "base/util.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* An address carries printable ASCII without spaces; "-" is reserved for none. */
static bool addr_ok(const char *a, size_t n)
{
    if (n == 0 || n >= CL_RDEC_ADDR_MAX || (n == 1 && a[0] == '-'))
        return false;
    for (size_t i = 0; i < n; i++)
        if (a[i] < 0x21 || a[i] > 0x7e)
            return false;
    return true;
}

size_t cl_rdec_format(const cl_rdec_t *d, char *out, size_t outlen, char *err, size_t errlen)
{
    if (d->k < 1 || d->m < 1 || d->k + d->m > CL_EC_MAX) {
        wh_errf(WH_ERR_INVALID, err, errlen, "rdec: %u+%u is not an erasure-coding layout", d->k,
                d->m);
        return 0;
    }
    size_t at = 0;
    int n = snprintf(out, outlen, "rdec1 %u %u %" PRIu64 "\n", d->k, d->m, d->len);
    if (n < 0 || (size_t)n >= outlen)
        goto full;
    at = (size_t)n;
    for (unsigned i = 0; i < d->k + d->m; i++) {
        const cl_rdec_shard_t *s = &d->shard[i];
        bool none = !s->addr[0];
        if (!cl_chunk_id_valid(s->chunk, strlen(s->chunk)) ||
            (!none && !addr_ok(s->addr, strlen(s->addr)))) {
            wh_errf(WH_ERR_INVALID, err, errlen, "rdec: shard %u: %s", i,
                    none || addr_ok(s->addr, strlen(s->addr)) ? "chunk id not 32 hex digits"
                                                              : "address empty or not printable");
            return 0;
        }
        n = snprintf(out + at, outlen - at, "%u %s %016" PRIx64 " %" PRIu32 " %s\n", i, s->chunk,
                     s->crc, none ? 0 : s->node, none ? "-" : s->addr);
        if (n < 0 || (size_t)n >= outlen - at)
            goto full;
        at += (size_t)n;
    }
    return at;
full:
    wh_errf(WH_ERR_INVALID, err, errlen, "rdec: the description does not fit in %zu bytes", outlen);
    return 0;
}

/* Splits the next line of s[*at, n) into up to max space-separated fields; false at the end
 * of s or on a line without its '\n'. */
static bool next_line(const char *s, size_t n, size_t *at, const char **f, size_t *fl, size_t max,
                      size_t *nf)
{
    if (*at >= n)
        return false;
    const char *nl = memchr(s + *at, '\n', n - *at);
    if (!nl)
        return false;
    size_t end = (size_t)(nl - s), i = *at;
    *nf = 0;
    while (i < end) {
        size_t j = i;
        while (j < end && s[j] != ' ')
            j++;
        if (*nf == max) {
            *nf = max + 1; /* too many */
            break;
        }
        f[*nf] = s + i;
        fl[(*nf)++] = j - i;
        i = j + 1;
    }
    *at = end + 1;
    return true;
}

static int dec(const char *s, size_t n, uint64_t *v)
{
    return n == 0 || n > 20 ? -1 : wh_parse_u64(s, n, v);
}

wh_status_t cl_rdec_parse(const char *s, size_t n, cl_rdec_t *out, char *err, size_t errlen)
{
    cl_rdec_t d;
    memset(&d, 0, sizeof d);
    const char *f[6];
    size_t fl[6], nf = 0, at = 0;
    uint64_t k, m;
    if (!next_line(s, n, &at, f, fl, 4, &nf) || nf != 4 || fl[0] != 5 ||
        memcmp(f[0], "rdec1", 5) != 0)
        return wh_errf(WH_ERR_INVALID, err, errlen,
                       "rdec body line 1: not 'rdec1 K M LEN' (an unknown version, or a "
                       "truncated body)");
    if (dec(f[1], fl[1], &k) != 0 || dec(f[2], fl[2], &m) != 0 || k < 1 || m < 1 ||
        k + m > CL_EC_MAX)
        return wh_errf(WH_ERR_INVALID, err, errlen,
                       "rdec body line 1: K+M must be >= 1, >= 1, at most %d in all", CL_EC_MAX);
    if (dec(f[3], fl[3], &d.len) != 0)
        return wh_errf(WH_ERR_INVALID, err, errlen, "rdec body line 1: LEN is not a number");
    d.k = (unsigned)k;
    d.m = (unsigned)m;
    for (unsigned i = 0; i < d.k + d.m; i++) {
        unsigned line = i + 2;
        uint64_t idx, node;
        cl_rdec_shard_t *sh = &d.shard[i];
        if (!next_line(s, n, &at, f, fl, 5, &nf) || nf != 5)
            return wh_errf(WH_ERR_INVALID, err, errlen,
                           "rdec body line %u: not 'IDX CHUNK CRC NODE ADDR' (%u shard lines "
                           "wanted)",
                           line, d.k + d.m);
        if (dec(f[0], fl[0], &idx) != 0 || idx != i)
            return wh_errf(WH_ERR_INVALID, err, errlen, "rdec body line %u: IDX is not %u", line,
                           i);
        if (!cl_chunk_id_valid(f[1], fl[1]))
            return wh_errf(WH_ERR_INVALID, err, errlen,
                           "rdec body line %u: CHUNK is not 32 lowercase hex digits", line);
        memcpy(sh->chunk, f[1], CL_CHUNK_ID_LEN);
        if (fl[2] != 16 || wh_hex_u64(f[2], 16, &sh->crc) != 0)
            return wh_errf(WH_ERR_INVALID, err, errlen, "rdec body line %u: CRC is not 16 hex",
                           line);
        if (dec(f[3], fl[3], &node) != 0 || node > UINT32_MAX)
            return wh_errf(WH_ERR_INVALID, err, errlen, "rdec body line %u: NODE is not a node id",
                           line);
        bool none = fl[4] == 1 && f[4][0] == '-';
        if (!none && !addr_ok(f[4], fl[4]))
            return wh_errf(WH_ERR_INVALID, err, errlen,
                           "rdec body line %u: ADDR is empty, too long or not printable", line);
        if (!none) {
            memcpy(sh->addr, f[4], fl[4]);
            sh->node = (uint32_t)node;
        }
    }
    if (at != n)
        return wh_errf(WH_ERR_INVALID, err, errlen, "rdec body: %zu bytes after the %u shard lines",
                       n - at, d.k + d.m);
    *out = d;
    return WH_OK;
}

unsigned cl_rdec_readable(const cl_rdec_t *d)
{
    unsigned n = 0;
    for (unsigned i = 0; i < d->k + d->m; i++)
        n += d->shard[i].addr[0] != '\0';
    return n;
}

unsigned cl_rdec_order(const cl_rdec_t *d, const bool *local, unsigned *order)
{
    unsigned n = 0, total = d->k + d->m;
    for (unsigned i = 0; i < total; i++)
        if (local[i])
            order[n++] = i;
    for (unsigned i = 0; i < total; i++)
        if (!local[i] && d->shard[i].addr[0])
            order[n++] = i; /* data shards come first: they are the lower indexes */
    return n;
}
