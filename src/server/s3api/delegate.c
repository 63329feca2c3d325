/* SPDX-License-Identifier: Apache-2.0 */
/* Delegated data paths (see delegate.h). */
#include "s3api/delegate.h"
#include "base/log.h"

#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MOD "delegate"
#define STREAM_BLOCK (256u << 10)

/* The HTTP reply for a delegated transfer that did not complete. */
static void map_failure(wh_status_t st, const data_rdma_result_t *d, rdma_result_t *res)
{
    switch (st) {
    case WH_ERR_UNAVAILABLE:
        res->http_status = 503;
        res->s3_code = "ServiceUnavailable";
        break;
    case WH_ERR_INVALID:
    case WH_ERR_RANGE:
        res->http_status = 400;
        res->s3_code = "InvalidArgument";
        break;
    case WH_ERR_DECLINED:
    case WH_ERR_UNSUPPORTED:
        res->http_status = 501;
        res->s3_code = "NotImplemented";
        break;
    case WH_ERR_AUTH:
        res->http_status = 403;
        res->s3_code = "AccessDenied";
        break;
    case WH_ERR_NO_SPACE:
        res->http_status = 507;
        res->s3_code = "InsufficientStorage";
        break;
    default:
        res->http_status = 500;
        res->s3_code = "InternalError";
        break;
    }
    snprintf(res->message, sizeof res->message, "%s",
             d->message[0] ? d->message : wh_status_str(st));
}

wh_status_t s3api_delegate_rdma_put(front_req_t *r, const xfer_token_arg_t *token,
                                    rdma_result_t *res, char etag[48])
{
    memset(res, 0, sizeof *res);
    etag[0] = '\0';
    if (!token->str || token->st != WH_OK)
        return WH_ERR_UNSUPPORTED; /* the server's own vetting reports it */
    data_rdma_result_t d;
    wh_status_t st = store_writer_rdma_put(r->w, token, &r->peer, token->tok.size, &d);
    if (st == WH_ERR_UNSUPPORTED)
        return st;
    if (st != WH_OK) {
        map_failure(st, &d, res);
        return st;
    }
    res->http_status = 200;
    res->bytes = d.bytes;
    res->crc64nvme = d.crc64nvme;
    res->provider = "cluster";
    atomic_fetch_add(&r->srv->metrics.rdma_delegated_write_bytes, d.bytes);
    atomic_fetch_add(&r->srv->metrics.rdma_delegated_write_ops, 1);
    snprintf(etag, 48, "%s", d.etag);
    return WH_OK;
}

wh_status_t s3api_delegate_rdma_get(front_req_t *r, data_reader_t *rd,
                                    const xfer_token_arg_t *token, uint64_t off, uint64_t len,
                                    rdma_result_t *res)
{
    memset(res, 0, sizeof *res);
    data_rdma_result_t d;
    wh_status_t st = store_reader_rdma_get(rd, token, &r->peer, off, len, &d);
    if (st != WH_OK) {
        map_failure(st, &d, res);
        return st;
    }
    res->http_status = 200;
    res->bytes = d.bytes;
    res->crc64nvme = d.crc64nvme;
    res->provider = "cluster";
    atomic_fetch_add(&r->srv->metrics.rdma_delegated_read_bytes, d.bytes);
    atomic_fetch_add(&r->srv->metrics.rdma_delegated_read_ops, 1);
    return WH_OK;
}

typedef struct reader_stream {
    data_reader_t *rd;
    uint64_t off;
} reader_stream_t;

static ssize_t stream_cb(void *cls, uint64_t pos, char *buf, size_t max)
{
    reader_stream_t *s = cls;
    uint64_t left = store_reader_size(s->rd) - (s->off + pos);
    size_t n = (size_t)(left < max ? left : max);
    if (n == 0)
        return MHD_CONTENT_READER_END_OF_STREAM;
    wh_status_t st = store_reader_pread(s->rd, buf, n, s->off + pos);
    if (st != WH_OK) {
        wh_warn(MOD, "streaming an object failed at=%llu: %s", (unsigned long long)(s->off + pos),
                wh_status_str(st));
        return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    return (ssize_t)n;
}

static void stream_free(void *cls)
{
    reader_stream_t *s = cls;
    store_reader_close(s->rd);
    free(s);
}

struct MHD_Response *s3api_reader_response(data_reader_t *rd, uint64_t off, uint64_t len)
{
    reader_stream_t *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->rd = rd;
    s->off = off;
    struct MHD_Response *resp =
        MHD_create_response_from_callback(len, STREAM_BLOCK, stream_cb, s, stream_free);
    if (!resp)
        free(s);
    return resp;
}
