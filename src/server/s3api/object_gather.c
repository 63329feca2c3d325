/* SPDX-License-Identifier: Apache-2.0 */
/* Gather UploadPart (docs/protocol.md, "Gather UploadPart"): POST /<bucket>/<key>
 * ?x-wharf-gather=1&uploadId=U&partNumber=N with an x-amz-rdma-token and, as its signed body, a
 * window list (xfer/windows.h) whose lines are "<region offset> <length> <part offset>": the
 * part is the windows' bytes, pulled from the token's region by the RDMA engine and stored in
 * part order, as an RDMA UploadPart of the same bytes would store them. */
#include "s3api/s3api.h"
#include "base/log.h"
#include "engine/rdma_scatter.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MOD "s3"

int s3api_gather_begin(front_req_t *r, s3h_out_t *o)
{
    int ret;
    if ((ret = s3h_key_check(r, o)) || (ret = s3api_mpu_part_query(r, o)))
        return ret;
    const char *v = front_route_q(&r->route, "x-wharf-gather");
    if (!v || strcmp(v, "1") != 0)
        return s3h_errf(o, S3_ERR_INVALID_ARGUMENT,
                        "x-wharf-gather=%.16s: this server knows version 1 of the window list",
                        v ? v : "");
    if (!r->token_req)
        return s3h_err(o, S3_ERR_INVALID_REQUEST,
                       "a gather UploadPart needs an x-amz-rdma-token naming the region its "
                       "windows are read from");
    if (r->auth.mode != AUTH_PAYLOAD_SHA256)
        return s3h_err(o, S3_ERR_INVALID_REQUEST,
                       "a gather UploadPart's window list must be signed: send its SHA-256 in "
                       "x-amz-content-sha256 (not UNSIGNED-PAYLOAD or a streaming payload)");
    const char *cl = front_hdr(r, "content-length");
    uint64_t n = 0;
    if (!cl || wh_parse_u64(cl, strlen(cl), &n) != 0 || n == 0)
        return s3h_err(o, S3_ERR_INVALID_REQUEST,
                       "a gather UploadPart carries its window list as a body with a "
                       "Content-Length");
    if (n > XFER_WIN_MAX_BYTES)
        return s3h_errf(o, S3_ERR_INVALID_ARGUMENT,
                        "the window list is %" PRIu64 " bytes, more than the %u a request may "
                        "carry (x-wharf-gather max list bytes)",
                        n, XFER_WIN_MAX_BYTES);
    if (r->srv->cfg.admin_cluster) {
        s3h_out_header(o, "x-amz-rdma-reply", "501");
        return s3h_err(o, S3_ERR_NOT_IMPLEMENTED,
                       "gather UploadPart is not served by a cluster gateway yet: send the part "
                       "from one contiguous region");
    }
    return 0; /* read the window list */
}

static int gather_by_dst(const void *a, const void *b)
{
    const xfer_window_t *x = a, *y = b;
    return x->dst < y->dst ? -1 : x->dst > y->dst;
}

int s3api_gather_finish(front_req_t *r, s3h_out_t *o)
{
    char msg[300];
    xfer_window_t *w = NULL;
    size_t n = 0;
    if (xfer_windows_parse(r->buf.data, r->buf.len, &w, &n, msg, sizeof msg) != WH_OK)
        return s3h_errf(o, S3_ERR_INVALID_ARGUMENT, "%s", msg);
    uint64_t region = r->token.st == WH_OK ? r->token.tok.size : UINT64_MAX, size = 0;
    int ret = 0;
    for (size_t i = 0; i < n && !ret; i++)
        if (w[i].off > region || w[i].len > region - w[i].off)
            ret = s3h_errf(o, S3_ERR_INVALID_ARGUMENT,
                           "window %zu: bytes %" PRIu64 "+%" PRIu64
                           " lie outside the x-amz-rdma-token region (%" PRIu64 " bytes)",
                           i, w[i].off, w[i].len, region);
    /* The part offsets must tile the part: sorted, each window starts where the last ended. */
    if (!ret)
        qsort(w, n, sizeof *w, gather_by_dst);
    for (size_t i = 0; i < n && !ret; i++) {
        if (w[i].dst != size)
            ret = s3h_errf(o, S3_ERR_INVALID_ARGUMENT,
                           "the windows' part offsets must cover the part exactly once: "
                           "bytes %" PRIu64 " of the part are %s",
                           w[i].dst < size ? w[i].dst : size,
                           w[i].dst < size ? "given twice (overlapping windows)"
                                           : "in no window (a gap)");
        size += w[i].len;
    }
    if (!ret && size > FRONT_MAX_PUT_SIZE)
        ret = s3h_errf(o, S3_ERR_ENTITY_TOO_LARGE,
                       "the windows hold %" PRIu64 " bytes; a part may carry at most 5 GiB", size);
    if (!ret) {
        bool crc32c = false;
        data_obj_meta_t um;
        memset(&um, 0, sizeof um);
        if (store_mpu_meta(s3h_st(r), s3h_b(r), s3h_k(r), r->upload_id, &um) == WH_OK)
            crc32c = s3api_mpu_names_crc32c(&um);
        data_obj_meta_free(&um);
        ret = s3api_rdma_put_gather(r, o, crc32c, w, n, size);
    }
    free(w);
    return ret;
}
