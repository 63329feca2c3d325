/* SPDX-License-Identifier: Apache-2.0 */
/* Scatter GET (docs/protocol.md, "Scatter GET"): POST /<bucket>/<key>?x-wharf-scatter=1 with an
 * x-amz-rdma-token and, as its signed body, a list of windows (xfer/windows.h). Authorized
 * once, as GetObject of the object; every window is written to its offset of the token's
 * region by the RDMA engine (engine/rdma_scatter.h); the reply's body is one crc64nvme per
 * window. */
#include "s3api/s3api.h"
#include "base/crc.h"
#include "base/log.h"
#include "engine/rdma_scatter.h"
#include "s3/range.h"

#include <inttypes.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MOD "s3"

int s3api_scatter_begin(front_req_t *r, s3h_out_t *o)
{
    int ret = s3h_key_check(r, o);
    if (ret)
        return ret;
    const char *v = front_route_q(&r->route, "x-wharf-scatter");
    if (!v || strcmp(v, "1") != 0)
        return s3h_errf(o, S3_ERR_INVALID_ARGUMENT,
                        "x-wharf-scatter=%.16s: this server knows version 1 of the window list",
                        v ? v : "");
    if (!r->token_req)
        return s3h_err(o, S3_ERR_INVALID_REQUEST,
                       "a scatter GET needs an x-amz-rdma-token naming the region its windows "
                       "land in");
    if (r->auth.mode != AUTH_PAYLOAD_SHA256)
        return s3h_err(o, S3_ERR_INVALID_REQUEST,
                       "a scatter GET's window list must be signed: send its SHA-256 in "
                       "x-amz-content-sha256 (not UNSIGNED-PAYLOAD or a streaming payload)");
    const char *cl = front_hdr(r, "content-length");
    uint64_t n = 0;
    if (!cl || wh_parse_u64(cl, strlen(cl), &n) != 0 || n == 0)
        return s3h_err(o, S3_ERR_INVALID_REQUEST,
                       "a scatter GET carries its window list as a body with a Content-Length");
    if (n > XFER_WIN_MAX_BYTES)
        return s3h_errf(o, S3_ERR_INVALID_ARGUMENT,
                        "the window list is %" PRIu64 " bytes, more than the %u a request may "
                        "carry (x-wharf-scatter max list bytes)",
                        n, XFER_WIN_MAX_BYTES);
    if (front_hdr(r, "range"))
        return s3h_err(o, S3_ERR_INVALID_REQUEST,
                       "a scatter GET takes no Range header: its windows are the ranges");
    return 0; /* read the window list */
}

static wh_status_t scatter_read(void *arg, void *buf, size_t n, uint64_t at)
{
    return store_reader_pread(arg, buf, n, at);
}

/* The pieces of the windows: from fd (a plain object), from rd's local files (a composed one,
 * a window split where a part ends), or, with fd < 0 and no rd, object offsets for the
 * source. *out malloc'd. */
static wh_status_t scatter_pieces(data_reader_t *rd, int fd, const xfer_window_t *w, size_t n,
                                  rdma_scatter_piece_t **out, size_t *np)
{
    size_t cap = n ? n : 1, k = 0;
    rdma_scatter_piece_t *p = malloc(cap * sizeof *p);
    if (!p)
        return WH_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) {
        uint64_t off = w[i].off, left = w[i].len, dst = w[i].dst;
        do {
            rdma_scatter_piece_t e = {.fd = fd, .off = off, .len = left, .dst = dst, .win = i};
            if (rd && left) {
                uint64_t avail;
                wh_status_t st = store_reader_extent(rd, off, &e.fd, &e.off, &avail);
                if (st != WH_OK) {
                    free(p);
                    return st;
                }
                e.len = WH_MIN(avail, left);
            }
            if (k == cap) {
                rdma_scatter_piece_t *q = realloc(p, 2 * cap * sizeof *p);
                if (!q) {
                    free(p);
                    return WH_ERR_NOMEM;
                }
                p = q;
                cap *= 2;
            }
            p[k++] = e;
            off += e.len;
            dst += e.len;
            left -= e.len;
        } while (left);
    }
    *out = p;
    *np = k;
    return WH_OK;
}

/* The reply body: per window, its crc64nvme as 16 lowercase hex digits and a newline. */
static struct MHD_Response *scatter_body(const uint64_t *crcs, size_t n)
{
    char *b = malloc(n * 17 + 1);
    if (!b)
        return NULL;
    for (size_t i = 0; i < n; i++)
        snprintf(b + i * 17, 18, "%016" PRIx64 "\n", crcs[i]);
    struct MHD_Response *resp = MHD_create_response_from_buffer(n * 17, b, MHD_RESPMEM_MUST_FREE);
    if (!resp)
        free(b);
    return resp;
}

int s3api_scatter_finish(front_req_t *r, s3h_out_t *o)
{
    char msg[300];
    xfer_window_t *w = NULL;
    size_t n = 0;
    if (xfer_windows_parse(r->buf.data, r->buf.len, &w, &n, msg, sizeof msg) != WH_OK)
        return s3h_errf(o, S3_ERR_INVALID_ARGUMENT, "%s", msg);
    const char *vid;
    int ret = s3h_version_q(r, o, &vid);
    if (ret) {
        free(w);
        return ret;
    }
    data_obj_meta_t m;
    memset(&m, 0, sizeof m);
    int fd = -1;
    data_reader_t *rd = NULL;
    uint64_t *crcs = NULL;
    store_read_args_t ra = {.bucket = s3h_b(r), .key = s3h_k(r), .version_id = vid};
    wh_status_t st = store_object_open(s3h_st(r), &ra, &m, &fd);
    if (st == WH_ERR_UNSUPPORTED)
        st = store_object_reader(s3h_st(r), &ra, &m, &rd);
    if (st == WH_ERR_NOT_FOUND) {
        if (!(ret = s3h_authz_object(r, o, NULL)))
            ret = s3h_version_not_found(r, o, &m, vid);
        goto out;
    }
    if (st != WH_OK) {
        ret = s3h_err_status(r, o, st, "opening the object");
        goto out;
    }
    /* Authorized once, as a GetObject of the object, before anything else is looked at. */
    if ((ret = s3h_authz_object(r, o, &m)))
        goto out;
    s3h_sse_req_t sq;
    if ((ret = s3h_sse_request(r, o, false, false, &sq)))
        goto out;
    ret = s3h_sse_open(r, o, &m, &sq, rd);
    if (!ret)
        s3h_sse_headers(o, m.sse, &sq);
    s3h_sse_req_wipe(&sq);
    if (ret)
        goto out;
    s3h_out_version(o, m.version_id, vid != NULL);
    int pc = s3h_preconditions(r, &m, "");
    if (pc) {
        ret = s3h_err(o, S3_ERR_PRECONDITION_FAILED,
                      pc == 304 ? "the object matches If-None-Match or is not modified since "
                                  "If-Modified-Since: nothing to scatter"
                                : NULL);
        goto out;
    }
    if (rd && r->srv->cfg.admin_cluster && !store_reader_encrypted(rd)) {
        int efd;
        uint64_t foff, avail;
        if (store_reader_extent(rd, 0, &efd, &foff, &avail) == WH_ERR_UNSUPPORTED) {
            if (r->token_req)
                s3h_out_header(o, "x-amz-rdma-reply", "501");
            ret = s3h_err(o, S3_ERR_NOT_IMPLEMENTED,
                          "scatter GET is not served by a cluster gateway yet: send one ranged "
                          "GET per window");
            goto out;
        }
    }
    if (rd && r->srv->cfg.admin_cluster && store_reader_encrypted(rd)) {
        s3h_out_header(o, "x-amz-rdma-reply", "501");
        ret = s3h_err(o, S3_ERR_NOT_IMPLEMENTED,
                      "scatter GET is not served by a cluster gateway yet: send one ranged GET "
                      "per window");
        goto out;
    }
    uint64_t region = r->token.st == WH_OK ? r->token.tok.size : UINT64_MAX;
    switch (xfer_windows_check(w, n, m.size, region, msg, sizeof msg)) {
    case XFER_WIN_OK:
        break;
    case XFER_WIN_PAST_END: {
        char cr[S3_CONTENT_RANGE_MAX];
        s3_content_range_format(cr, sizeof cr, 0, 0, m.size);
        s3h_out_header(o, MHD_HTTP_HEADER_CONTENT_RANGE, cr);
        ret = s3h_errf(o, S3_ERR_INVALID_RANGE, "%s", msg);
        goto out;
    }
    case XFER_WIN_NOMEM:
        ret = s3h_err(o, S3_ERR_INTERNAL, msg);
        goto out;
    default:
        ret = s3h_errf(o, S3_ERR_INVALID_ARGUMENT, "%s", msg);
        goto out;
    }
    if (!(crcs = calloc(n, sizeof *crcs))) {
        ret = s3h_err(o, S3_ERR_INTERNAL, "out of memory");
        goto out;
    }
    rdma_result_t res;
    memset(&res, 0, sizeof res);
    uint64_t t0 = wh_now_ns(), total = 0;
    for (size_t i = 0; i < n; i++)
        total += w[i].len;
    /* The pieces: a plain object's file, or the files of a composed one (a window may span
     * two parts), read or mapped directly; an encrypted object through its reader, which
     * decrypts and verifies each segment it touches. */
    size_t np = 0;
    rdma_scatter_piece_t *pcs = NULL;
    bool by_reader = rd && store_reader_encrypted(rd);
    if ((st = scatter_pieces(rd && !by_reader ? rd : NULL, by_reader ? -1 : fd, w, n, &pcs, &np)) !=
        WH_OK) {
        ret = s3h_err_status(r, o, st, "locating the object's files");
        goto out;
    }
    st = rdma_scatter_get(r->srv->rdma, &r->token, &r->peer, pcs, np, n,
                          by_reader ? scatter_read : NULL, rd, crcs, &res);
    free(pcs);
    wh_debug(MOD, "rdma scatter id=%s windows=%zu bytes=%" PRIu64 " xfer_ms=%.3f st=%s", r->id, n,
             res.bytes, (double)(wh_now_ns() - t0) / 1e6, wh_status_str(st));
    if (st != WH_OK) {
        ret = s3api_rdma_refuse(r, o, &res, st);
        goto out;
    }
    if (res.bytes != total) {
        rdma_result_t bad = {.http_status = 500, .s3_code = "InternalError"};
        snprintf(bad.message, sizeof bad.message, "short RDMA transfer: %" PRIu64 " of %" PRIu64,
                 res.bytes, total);
        ret = s3api_rdma_refuse(r, o, &bad, WH_ERR_TRANSPORT);
        goto out;
    }
    struct MHD_Response *resp = scatter_body(crcs, n);
    if (!resp) {
        ret = s3h_err(o, S3_ERR_INTERNAL, "out of memory");
        goto out;
    }
    s3api_object_headers(r, o, &m, false);
    s3h_out_header(o, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain");
    s3h_out_header(o, "x-amz-rdma-reply", "200");
    s3h_out_header_u64(o, "x-amz-rdma-bytes-transferred", res.bytes);
    s3h_out_header_u64(o, "x-wharf-scatter-windows", n);
    ret = s3h_ok_resp(o, 200, resp, 0);
out:
    free(crcs);
    free(w);
    if (fd >= 0)
        close(fd);
    store_reader_close(rd);
    data_obj_meta_free(&m);
    return ret;
}
