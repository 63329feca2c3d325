/* SPDX-License-Identifier: Apache-2.0 */
/* Placement: which storage servers hold a chunk. Weighted rendezvous hashing (highest random
 * weight): every (chunk, node) pair gets a score weight / -ln(u), u a hash of both ids mapped
 * into (0, 1), and the chunk goes to the nodes with the highest scores. Deterministic for a
 * given membership, spreads chunks in proportion to the weights (free space), and when a node
 * joins or leaves only the chunks whose top set changes move. */
#ifndef WH_CLUSTER_PLACE_H
#define WH_CLUSTER_PLACE_H

#include <stddef.h>
#include <stdint.h>

#define CL_MAX_REPLICAS 3
#define CL_PLACE_MAX 20 /* most nodes one call ranks: an EC stripe (<= 16) and spares */

typedef struct cl_place_node {
    const char *id;      /* stable node id */
    uint64_t free_bytes; /* the weight: free bytes (above the reserve); 0 ranks last */
    const char *zone;    /* failure domain; NULL or "" (one zone of its own for all such) */
} cl_place_node_t;

/* Writes the indexes of the min(replicas, n) best nodes for chunk_id into out, best first;
 * returns how many. replicas is capped at CL_PLACE_MAX (a replica set plus its spares). */
size_t cl_place(const cl_place_node_t *nodes, size_t n, const char *chunk_id, unsigned replicas,
                size_t *out);

/* Zones first: the first min(replicas, n) of out are the best node of each zone in rank
 * order (distinct zones while there are zones left), then the best of the rest; after them the
 * other nodes in rank order, max in all (<= CL_PLACE_MAX). With every node in one zone (or
 * none) this is cl_place(nodes, n, chunk_id, max, out). n <= 64. */
size_t cl_place_zoned(const cl_place_node_t *nodes, size_t n, const char *chunk_id,
                      unsigned replicas, unsigned max, size_t *out);

/* The score itself (exposed for tests). */
double cl_place_score(const char *chunk_id, const char *node_id, uint64_t free_bytes);

#endif
