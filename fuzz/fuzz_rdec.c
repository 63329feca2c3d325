/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer driver for the parser of a degraded RDMA read's (and an EC RDMA PUT's) stripe
 * description (src/server/cluster/rdec.c): never crashes, never reads past len, every refusal says
 * why, and whatever parses formats back to a body that parses to the same description. */
#include "cluster/rdec.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool same(const cl_rdec_t *a, const cl_rdec_t *b)
{
    if (a->k != b->k || a->m != b->m || a->len != b->len)
        return false;
    for (unsigned i = 0; i < a->k + a->m; i++)
        if (strcmp(a->shard[i].chunk, b->shard[i].chunk) != 0 ||
            a->shard[i].crc != b->shard[i].crc || a->shard[i].node != b->shard[i].node ||
            strcmp(a->shard[i].addr, b->shard[i].addr) != 0)
            return false;
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256] = "";
    cl_rdec_t d, e;
    char *s = malloc(size ? size : 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    if (cl_rdec_parse(s, size, &d, err, sizeof err) != WH_OK) {
        if (err[0] == '\0')
            abort();
        free(s);
        return 0;
    }
    free(s);
    if (d.k < 1 || d.m < 1 || d.k + d.m > CL_EC_MAX || cl_rdec_readable(&d) > d.k + d.m)
        abort();
    static char body[CL_RDEC_BODY_MAX];
    size_t n = cl_rdec_format(&d, body, sizeof body, err, sizeof err);
    if (!n || cl_rdec_parse(body, n, &e, err, sizeof err) != WH_OK || !same(&d, &e))
        abort();
    return 0;
}
