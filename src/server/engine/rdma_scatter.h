/* SPDX-License-Identifier: Apache-2.0 */
/* Scatter GET (docs/protocol.md, "Scatter GET"): many windows of one object, each written to
 * its own offset of one token's region, in one transfer, with one crc64nvme per window. */
#ifndef WH_ENGINE_RDMA_SCATTER_H
#define WH_ENGINE_RDMA_SCATTER_H

#include "engine/rdma.h"
#include "xfer/windows.h"

/* A window, or the part of one that one file holds (a window of a composed object may span
 * the files of two parts): [off, off+len) of fd lands at dst of the token's region. fd < 0:
 * read from the source callback at off, an object offset (an encrypted object, decrypted by
 * its reader). The pieces of a window are consecutive and in order. */
typedef struct rdma_scatter_piece {
    int fd;
    uint64_t off, len, dst;
    size_t win;
} rdma_scatter_piece_t;

/* Moves every piece and sets crcs[w] (nwin entries) to the crc64nvme of window w's bytes. The
 * caller has checked the windows (xfer_windows_check) against the object and the region.
 * res->bytes is the sum of the lengths on success. On failure nothing is to be trusted of the
 * region (some windows may have landed). */
wh_status_t rdma_scatter_get(rdma_t *r, const xfer_token_arg_t *token, const wh_peer_t *peer,
                             const rdma_scatter_piece_t *p, size_t np, size_t nwin,
                             rdma_read_cb read, void *arg, uint64_t *crcs, rdma_result_t *res);

/* Gather (docs/protocol.md, "Gather UploadPart"): the reverse, for a part. Reads window w[i]
 * ([off, off+len) of the token's region, with w sorted by dst, the dsts tiling the part from
 * 0) and hands the bytes to sink in part order. res->bytes and res->crc64nvme are those of the
 * whole part on success. */
wh_status_t rdma_gather_put(rdma_t *r, const xfer_token_arg_t *token, const wh_peer_t *peer,
                            const xfer_window_t *w, size_t n, rdma_sink_cb sink, void *arg,
                            rdma_result_t *res);

#endif
