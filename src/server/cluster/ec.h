/* SPDX-License-Identifier: Apache-2.0 */
/* Erasure coding of a cluster chunk (ISA-L, Cauchy matrix): a stripe of `len` bytes is cut
 * into k data shards of cl_ec_shard_len(len, k) bytes (contiguous slices of the stripe, the
 * last one padded with zeros) and m parity shards of the same size. Any k of the k + m
 * shards give the stripe back. Shared by the gateway's writers, readers and repair
 * (remote.c, remote_read.c, members.c) and tested alone (tests/unit/cluster/test_ec.c). */
#ifndef WH_CLUSTER_EC_H
#define WH_CLUSTER_EC_H

#include "base/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CL_EC_MAX 16                /* k + m at most */
#define CL_EC_BUCKET_TAG "wharf-ec" /* a bucket tag: "K+M", or "replicas" */

/* Bytes of each shard of a stripe of len bytes (0 for the empty stripe). */
uint64_t cl_ec_shard_len(uint64_t len, unsigned k);

/* Parses "K+M" (k >= 1, m >= 1, k + m <= CL_EC_MAX). WH_ERR_INVALID with err naming why. */
wh_status_t cl_ec_parse(const char *s, unsigned *k, unsigned *m, char *err, size_t errlen);

/* shards[0..k) hold the data shards (slen bytes each); fills shards[k..k+m). */
wh_status_t cl_ec_encode(unsigned k, unsigned m, uint64_t slen, uint8_t *const *shards);

/* shards[0..k+m), present[i] says which hold good bytes (at least k must); rebuilds every
 * shard that is not present into its buffer (each slen bytes, allocated by the caller).
 * WH_ERR_UNAVAILABLE when fewer than k are present. */
wh_status_t cl_ec_decode(unsigned k, unsigned m, uint64_t slen, uint8_t *const *shards,
                         const bool *present);

#endif
