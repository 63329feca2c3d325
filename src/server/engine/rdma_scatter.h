/* SPDX-License-Identifier: Apache-2.0 */
/* Scatter GET (docs/protocol.md, "Scatter GET"): many windows of one object, each written to
 * its own offset of one token's region, in one transfer, with one crc64nvme per window. */
#ifndef WH_ENGINE_RDMA_SCATTER_H
#define WH_ENGINE_RDMA_SCATTER_H

#include "engine/rdma.h"
#include "xfer/windows.h"

/* Writes every window w[i] ([off, off+len) of the object, from fd, or from read(arg, ...) when
 * fd < 0) to dst of the token's region, and sets crcs[i] to the crc64nvme of its bytes. The
 * caller has checked the windows (xfer_windows_check) against the object and the region.
 * res->bytes is the sum of the lengths on success. On failure nothing is to be trusted of the
 * region (some windows may have landed). */
wh_status_t rdma_scatter_get(rdma_t *r, const xfer_token_arg_t *token, const wh_peer_t *peer,
                             int fd, rdma_read_cb read, void *arg, const xfer_window_t *w, size_t n,
                             uint64_t *crcs, rdma_result_t *res);

#endif
