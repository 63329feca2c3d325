/* SPDX-License-Identifier: Apache-2.0 */
/* The x-amz-rdma-token data path of object writes (PutObject, UploadPart): the body is read
 * from the client's memory by the RDMA engine instead of arriving on the connection. Also how
 * any refused transfer is answered. */
#include "s3api/s3api.h"
#include "s3api/delegate.h"
#include "base/crc.h"
#include "engine/rdma_scatter.h"
#include "base/log.h"

#include <microhttpd.h>
#include <stdio.h>
#include <string.h>

#define MOD "s3"

int s3api_rdma_refuse(front_req_t *r, s3h_out_t *o, const rdma_result_t *res, wh_status_t st)
{
    int status = res->http_status >= 400 ? res->http_status : 500;
    const char *code = res->s3_code ? res->s3_code : "InternalError";
    char msg[300];
    if (res->message[0])
        snprintf(msg, sizeof msg, "%s", res->message);
    else
        snprintf(msg, sizeof msg, "RDMA transfer failed: %s", wh_status_str(st));
    wh_info(MOD, "rdma refused id=%s peer=%s status=%d code=%s reason=\"%s\"", r->id, r->peer.addr,
            status, code, msg);
    /* A decline tells the client to fall back to HTTP. */
    if (status == 501)
        s3h_out_header(o, "x-amz-rdma-reply", "501");
    return s3h_err_raw(o, status, code, msg);
}

static wh_status_t put_sink(void *arg, const void *p, size_t n)
{
    front_req_t *r = arg;
    s3api_body_digest(r, p, n);
    return store_writer_write(r->w, p, n);
}

/* Positional: the engine's copy threads write straight into the writer's file. Only for
 * writes whose digests are all CRCs the engine computes (no MD5, no SHA or CRC-32 of the
 * client's, no encryption); the writer refuses the rest and the in-order sink runs. */
static wh_status_t put_sink_begin(void *arg, uint64_t len)
{
    front_req_t *r = arg;
    for (int i = 0; i < S3_SUM__COUNT; i++)
        if (r->sums.on[i])
            return WH_ERR_UNSUPPORTED;
    return store_writer_begin_at(r->w, len);
}

static wh_status_t put_sink_at(void *arg, const void *p, size_t n, uint64_t off)
{
    front_req_t *r = arg;
    return store_writer_write_at(r->w, p, n, off);
}

static wh_status_t put_sink_map(void *arg, uint64_t off, size_t n, void **p)
{
    front_req_t *r = arg;
    return store_writer_map_at(r->w, off, n, p);
}

static uint64_t put_sink_stripe(void *arg)
{
    front_req_t *r = arg;
    return store_writer_stripe_len(r->w);
}

static uint64_t put_sink_unit(void *arg)
{
    front_req_t *r = arg;
    return store_writer_write_unit(r->w);
}

/* The writer holds exactly what the transport says it moved. */
static int moved_check(front_req_t *r, s3h_out_t *o, const rdma_result_t *res)
{
    uint64_t got = store_writer_size(r->w);
    if (res->bytes == got && res->crc64nvme == store_writer_crc64nvme(r->w))
        return 0;
    wh_error(MOD, "rdma put inconsistent id=%s moved=%llu stored=%llu", r->id,
             (unsigned long long)res->bytes, (unsigned long long)got);
    rdma_result_t bad = {.http_status = 500, .s3_code = "InternalError"};
    snprintf(bad.message, sizeof bad.message,
             "the transport reported %llu bytes but %llu reached the store",
             (unsigned long long)res->bytes, (unsigned long long)got);
    return s3api_rdma_refuse(r, o, &bad, WH_ERR_TRANSPORT);
}

/* The PUT once its size is known (the token's, or the gather's windows' gw[0..gn)). */
static int rdma_put_run(front_req_t *r, s3h_out_t *o, bool part, bool crc32c, uint64_t size,
                        const xfer_window_t *gw, size_t gn);

int s3api_rdma_put_object(front_req_t *r, s3h_out_t *o, bool part, bool crc32c)
{
    const char *cl = front_hdr(r, "content-length");
    if ((cl && strcmp(cl, "0") != 0) || front_hdr(r, "transfer-encoding"))
        return s3h_err(o, S3_ERR_INVALID_ARGUMENT,
                       "a PUT with x-amz-rdma-token carries no body: send Content-Length: 0");
    if (r->auth.mode != AUTH_PAYLOAD_UNSIGNED)
        return s3h_err(o, S3_ERR_INVALID_ARGUMENT,
                       "a PUT with x-amz-rdma-token must send "
                       "x-amz-content-sha256: UNSIGNED-PAYLOAD");
    /* The token's size is the body's size: it meets the limit Content-Length would, before
     * any byte moves. A token that does not parse is left to the engine, which names the bad
     * field. */
    const xfer_token_t *tok = r->token.st == WH_OK ? &r->token.tok : NULL;
    if (tok && tok->size > FRONT_MAX_PUT_SIZE)
        return s3h_errf(o, S3_ERR_ENTITY_TOO_LARGE,
                        "the x-amz-rdma-token names %llu bytes; a %s may carry at most 5 GiB%s",
                        (unsigned long long)tok->size, part ? "part" : "single PUT",
                        part ? "" : "; use a multipart upload");
    return rdma_put_run(r, o, part, crc32c, tok ? tok->size : 0, NULL, 0);
}

int s3api_rdma_put_gather(front_req_t *r, s3h_out_t *o, bool crc32c, const xfer_window_t *w,
                          size_t n, uint64_t size)
{
    return rdma_put_run(r, o, true, crc32c, size, w, n);
}

static int rdma_put_run(front_req_t *r, s3h_out_t *o, bool part, bool crc32c, uint64_t size,
                        const xfer_window_t *gw, size_t gn)
{
    s3_sums_t want;
    int ret;
    if ((ret = s3h_sums_read(r, o, &want)) || (ret = s3h_sums_start(r, o)))
        return ret;
    wh_status_t st = store_writer_open(s3h_st(r), &r->w);
    if (st != WH_OK)
        return s3h_err_status(r, o, st, "opening a temp file");
    /* The bucket's layout first, as over HTTP (its tag may ask for erasure coding). */
    if ((ret = s3api_put_layout(r, o))) {
        store_writer_abort(r->w); /* now, before the reply: a refused PUT leaves no temp file */
        r->w = NULL;
        return ret;
    }
    /* The bytes come straight from the client's memory: no MD5 pass where none is asked for
     * (a Content-MD5 needs one) and the body is large enough for it to cost. */
    if (r->srv->cfg.rdma_digest_etag && !front_hdr(r, "content-md5") &&
        size >= FRONT_DIGEST_ETAG_MIN)
        store_writer_use_digest_etag(
            r->w, r->srv->cfg.etag_part_size ? r->srv->cfg.etag_part_size : STORE_ETAG_PART_DEFAULT,
            part);
    else
        s3api_put_etag_mode(r, part);
    /* An encrypted target (SSE-C or SSE-S3 headers, the bucket's default, the upload's
     * encryption) takes the bytes through the writer's cipher: the positional sink is then
     * refused (store_writer_begin_at) and the in-order one runs; size, CRCs and ETag stay
     * those of the plaintext, as over HTTP. */
    if ((ret = s3h_sse_writer(r, o, part))) {
        store_writer_abort(r->w); /* now, before the reply: a refused PUT leaves no temp file */
        r->w = NULL;
        return ret;
    }
    rdma_result_t res;
    memset(&res, 0, sizeof res);
    uint64_t t0 = wh_now_ns();
    /* A cluster's storage servers pull the bytes themselves; else this server's engine. */
    char table_etag[48] = "";
    st = gw ? WH_ERR_UNSUPPORTED : s3api_delegate_rdma_put(r, &r->token, &res, table_etag);
    if (st == WH_ERR_UNSUPPORTED && gw) {
        /* A gather: the windows in part order, through the in-order sink. */
        st = rdma_gather_put(r->srv->rdma, &r->token, &r->peer, gw, gn, put_sink, r, &res);
    } else if (st == WH_ERR_UNSUPPORTED) {
        /* CRC-32C only where the client names it (the object's or, for a part, the upload's
         * checksum); else the digest ETag and the part record go without one. */
        rdma_sink_at_t at = {.begin = put_sink_begin,
                             .write_at = put_sink_at,
                             .map_at = put_sink_map,
                             .stripe_len = put_sink_stripe,
                             .write_unit = put_sink_unit,
                             .want_crc32c = crc32c || want.set[S3_SUM_CRC32C] ||
                                            s3h_sum_named(r, S3_SUM_CRC32C)};
        st = rdma_put_at(r->srv->rdma, &r->token, &r->peer, put_sink, &at, r, &res);
        if (st == WH_OK && res.positional)
            store_writer_end_at(r->w, res.crc64nvme, res.crc32c_set, res.crc32c);
    }
    uint64_t t1 = wh_now_ns();
    if (st != WH_OK)
        return s3api_rdma_refuse(r, o, &res, st); /* cleanup aborts the writer */
    char md5[33];
    if ((ret = moved_check(r, o, &res)) || (ret = s3h_sums_check(r, o, &want, r->w, md5)))
        return ret;
    if ((ret = s3api_put_commit(r, o, part, &want, table_etag[0] ? table_etag : md5, NULL)))
        return ret;
    char c64[13];
    wh_crc64nvme_b64(res.crc64nvme, c64);
    s3h_out_header(o, "x-amz-checksum-crc64nvme", c64);
    s3h_out_header(o, "x-amz-rdma-reply", "200");
    s3h_out_header_u64(o, "x-amz-rdma-bytes-transferred", res.bytes);
    s3h_sse_reply(r, o);
    wh_debug(MOD, "rdma put id=%s bytes=%llu provider=%s xfer_ms=%.3f commit_ms=%.3f", r->id,
             (unsigned long long)res.bytes, res.provider ? res.provider : "-",
             (double)(t1 - t0) / 1e6, (double)(wh_now_ns() - t1) / 1e6);
    return s3h_ok(o, 200);
}
