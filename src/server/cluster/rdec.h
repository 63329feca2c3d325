/* SPDX-License-Identifier: Apache-2.0 */
/* A degraded RDMA read of an erasure-coded stripe, rebuilt at a storage server (op rdec,
 * itoken.h): the description the gateway sends as the request's body, and its parser.
 *
 * The gateway never decodes on the RDMA path (it would move the object's bytes): when a data
 * shard a GET needs is on a server that is down, or its read failed, it asks one storage
 * server of the stripe to read K good shards (its own from disk, the others from the servers
 * named here, each checked against the chunk map's crc), decode the missing data shards and
 * write the slice into the client's memory. The description carries every shard, so the
 * rebuilt ones are checked against their crcs too before a byte is sent.
 *
 * Wire form (text, one line each, '\n' ended):
 *   rdec1 K M LEN
 *   IDX CHUNK CRC NODE ADDR      (K+M lines, IDX 0.. in order)
 * K, M, LEN, IDX and NODE decimal; CHUNK 32 lowercase hex; CRC the shard's crc64nvme as 16
 * lowercase hex; NODE the storage node id and ADDR its host:port, or 0 and "-" for a shard
 * that is not to be read (its server is down, or its read failed). */
#ifndef WH_CLUSTER_RDEC_H
#define WH_CLUSTER_RDEC_H

#include "base/status.h"
#include "cluster/ec.h"
#include "cluster/itoken.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CL_RDEC_ADDR_MAX 256
#define CL_RDEC_BODY_MAX (32 + CL_EC_MAX * (64 + CL_RDEC_ADDR_MAX)) /* what a body may be */

typedef struct cl_rdec_shard {
    char chunk[CL_CHUNK_ID_LEN + 1];
    uint64_t crc;
    uint32_t node;               /* 0: not to be read */
    char addr[CL_RDEC_ADDR_MAX]; /* "" : not to be read */
} cl_rdec_shard_t;

typedef struct cl_rdec {
    unsigned k, m;
    uint64_t len;                     /* the stripe's bytes */
    cl_rdec_shard_t shard[CL_EC_MAX]; /* shard i at i */
} cl_rdec_t;

/* Writes d's wire form into out (NUL-terminated); returns its length, or 0 when it does not
 * fit or a field cannot be carried (err names it). */
size_t cl_rdec_format(const cl_rdec_t *d, char *out, size_t outlen, char *err, size_t errlen);

/* Parses s (n bytes). WH_ERR_INVALID with err naming the line and field that is wrong. */
wh_status_t cl_rdec_parse(const char *s, size_t n, cl_rdec_t *out, char *err, size_t errlen);

/* Shards of d that are to be read. */
unsigned cl_rdec_readable(const cl_rdec_t *d);

/* The order a rebuilding server reads d's shards in: local[i] says shard i is on this server
 * (read from disk, no network); those first, then the other data shards (the fewer missing
 * data shards, the less to decode), then parity. Shards not to be read are left out unless
 * local. Fills order, returns how many. */
unsigned cl_rdec_order(const cl_rdec_t *d, const bool *local, unsigned *order);

#endif
