/* SPDX-License-Identifier: Apache-2.0 */
/* Weighted rendezvous hashing (see place.h). */
#include "cluster/place.h"
#include "base/digest.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

double cl_place_score(const char *chunk_id, const char *node_id, uint64_t free_bytes)
{
    uint8_t h[WH_SHA256_LEN];
    char buf[256];
    size_t a = strlen(chunk_id), b = strlen(node_id);
    if (a + b + 1 > sizeof buf) {
        a = a > 127 ? 127 : a;
        b = b > 127 ? 127 : b;
    }
    /* NOLINTBEGIN(bugprone-not-null-terminated-result): buf is hashed bytes, not a string */
    memcpy(buf, chunk_id, a);
    buf[a] = '/';
    memcpy(buf + a + 1, node_id, b);
    /* NOLINTEND(bugprone-not-null-terminated-result) */
    wh_sha256(buf, a + 1 + b, h);
    uint64_t x = 0;
    for (int i = 0; i < 8; i++)
        x = x << 8 | h[i];
    /* 53 random bits into (0, 1): never 0, never 1, so -ln(u) is finite and positive. */
    double u = ((double)(x >> 11) + 0.5) / 9007199254740992.0;
    /* The weight is the free space itself: a server with little room gets few chunks (the
     * caller leaves out the ones without room for a chunk above their reserve). */
    double w = (double)(free_bytes ? free_bytes : 1) / (double)(1ULL << 30);
    return w / -log(u);
}

size_t cl_place(const cl_place_node_t *nodes, size_t n, const char *chunk_id, unsigned replicas,
                size_t *out)
{
    double best[CL_PLACE_MAX];
    size_t k = 0;
    if (replicas > CL_PLACE_MAX)
        replicas = CL_PLACE_MAX;
    if (replicas == 0)
        return 0; /* best[replicas - 1] below needs one */
    for (size_t i = 0; i < n; i++) {
        double s = cl_place_score(chunk_id, nodes[i].id, nodes[i].free_bytes);
        size_t j = k < replicas ? k++ : replicas;
        if (j == replicas && s <= best[replicas - 1])
            continue;
        if (j == replicas)
            j = replicas - 1;
        while (j > 0 && best[j - 1] < s) { /* insertion into the sorted top list */
            best[j] = best[j - 1];
            out[j] = out[j - 1];
            j--;
        }
        best[j] = s;
        out[j] = i;
    }
    return k;
}

static bool same_zone(const cl_place_node_t *a, const cl_place_node_t *b)
{
    return strcmp(a->zone ? a->zone : "", b->zone ? b->zone : "") == 0;
}

size_t cl_place_zoned(const cl_place_node_t *nodes, size_t n, const char *chunk_id,
                      unsigned replicas, unsigned max, size_t *out)
{
    enum { N = 64 };
    size_t rank[N];
    double score[N];
    n = n > N ? N : n;
    if (max > CL_PLACE_MAX)
        max = CL_PLACE_MAX;
    if (replicas > max)
        replicas = max;
    /* every node ranked (the best node of a third zone may rank last overall) */
    for (size_t i = 0; i < n; i++) {
        double s = cl_place_score(chunk_id, nodes[i].id, nodes[i].free_bytes);
        size_t j = i;
        while (j > 0 && score[j - 1] < s) {
            score[j] = score[j - 1];
            rank[j] = rank[j - 1];
            j--;
        }
        score[j] = s;
        rank[j] = i;
    }
    bool taken[N] = {false};
    size_t k = 0;
    /* pass 0: the best of each zone not yet used; pass 1: the best of the rest */
    for (int pass = 0; pass < 2; pass++)
        for (size_t q = 0; q < n && k < replicas; q++) {
            if (taken[q])
                continue;
            bool dup = false;
            for (size_t j = 0; pass == 0 && j < k && !dup; j++)
                dup = same_zone(&nodes[out[j]], &nodes[rank[q]]);
            if (dup)
                continue;
            taken[q] = true;
            out[k++] = rank[q];
        }
    /* the spares: the others in rank order */
    for (size_t q = 0; q < n && k < max; q++)
        if (!taken[q])
            out[k++] = rank[q];
    return k;
}
