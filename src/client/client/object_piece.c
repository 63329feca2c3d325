/* SPDX-License-Identifier: Apache-2.0 */
/* libwharf: a GET's pieces without I/O (client/object.h): how many, what a reply to one
 * carries, and how they stitch into the caller's range. Kept apart from the requests so that
 * tests/unit/client can drive every branch with made-up replies. */
#include "client/object.h"

#include "base/crc.h"
#include "base/util.h"
#include "s3/range.h"

#include <inttypes.h>
#include <stdio.h>

unsigned wc_get_piece_count(uint64_t length, uint64_t *chunk)
{
    uint64_t n = (length + *chunk - 1) / *chunk;
    if (n > UINT32_MAX) {
        *chunk = (length + UINT32_MAX - 1) / UINT32_MAX;
        n = (length + *chunk - 1) / *chunk;
    }
    return (unsigned)n;
}

bool wc_get_reply_extent(const wc_resp_t *r, uint64_t off, uint64_t len, uint64_t *n,
                         wc_get_piece_t *pc, char *why, size_t whylen)
{
    if (r->status == 206) {
        uint64_t a, b, total;
        bool ht;
        if (!s3_content_range_parse(r->content_range, &a, &b, &total, &ht)) {
            snprintf(why, whylen, "206 with a bad Content-Range \"%s\"", r->content_range);
            return false;
        }
        if (a != off || b - a + 1 > len) {
            snprintf(why, whylen, "asked for bytes %" PRIu64 "-%" PRIu64 " but got %s", off,
                     off + len - 1, r->content_range);
            return false;
        }
        *n = b - a + 1;
        pc->total = total;
        pc->has_total = ht;
        return true;
    }
    if (r->status == 200) {
        /* a server may ignore Range and send the whole object */
        if (off != 0) {
            snprintf(why, whylen, "asked for a range at %" PRIu64 " but got 200 (whole object)",
                     off);
            return false;
        }
        *n = UINT64_MAX; /* the body length decides */
        return true;
    }
    snprintf(why, whylen, "unexpected status %ld", r->status);
    return false;
}

void wc_get_piece_416(const wc_resp_t *r, wc_get_piece_t *pc)
{
    uint64_t total;
    bool ht;
    pc->r416 = true;
    if (s3_content_range_parse(r->content_range, NULL, NULL, &total, &ht) && ht) {
        pc->total = total;
        pc->has_total = true;
    }
}

bool wc_get_rdma_reply(const wc_resp_t *r, uint64_t off, uint64_t len, uint64_t *n,
                       wc_get_piece_t *pc, char *why, size_t whylen)
{
    if (!r->has_rdma_reply) {
        snprintf(why, whylen,
                 "the reply has no x-amz-rdma-reply header, so the server ignored "
                 "the token (is it an RDMA-capable wharfd?)");
        return false;
    }
    if (!wc_get_reply_extent(r, off, len, n, pc, why, whylen))
        return false;
    if (*n == UINT64_MAX)
        *n = len; /* 200 for the whole object: all of the range */
    if (!r->has_rdma_bytes || r->rdma_bytes != *n) {
        snprintf(why, whylen,
                 "x-amz-rdma-bytes-transferred is %s%" PRIu64 " but %" PRIu64 " bytes were due",
                 r->has_rdma_bytes ? "" : "missing, ", r->rdma_bytes, *n);
        return false;
    }
    if (r->body_len != 0 || (r->has_content_length && r->content_length != 0)) {
        snprintf(why, whylen, "an RDMA reply must carry no body, got %" PRIu64 " bytes",
                 r->has_content_length ? r->content_length : r->body_len);
        return false;
    }
    return true;
}

wh_status_t wc_get_stitch(const wc_get_piece_t *pieces, unsigned n, uint64_t chunk, uint64_t offset,
                          uint64_t length, uint64_t *bytes, uint64_t *crc, char *why, size_t whylen)
{
    uint64_t total = 0;
    bool has_total = false;
    for (unsigned i = 0; i < n; i++) {
        if (pieces[i].has_total) {
            total = pieces[i].total;
            has_total = true;
        }
    }
    *bytes = 0;
    *crc = 0;
    bool ended = false;
    for (unsigned i = 0; i < n; i++) {
        const wc_get_piece_t *pc = &pieces[i];
        uint64_t rel = (uint64_t)i * chunk;
        uint64_t len = WH_MIN(chunk, length - rel);
        if (ended) {
            if (pc->got != 0)
                return wh_errf(WH_ERR_PROTOCOL, why, whylen,
                               "data after the end of the object at piece %u", i);
            continue;
        }
        if (pc->got == len && !pc->r416) {
            if (pc->has_crc)
                *crc = wh_crc64nvme_combine(*crc, pc->crc, pc->got);
            *bytes += pc->got;
            continue;
        }
        /* short: fine only where the object ends */
        if (!has_total || offset + rel + pc->got != total)
            return wh_errf(WH_ERR_PROTOCOL, why, whylen,
                           "piece %u at %" PRIu64 " got %" PRIu64 " of %" PRIu64
                           " bytes and the object does not end there",
                           i, offset + rel, pc->got, len);
        if (pc->has_crc)
            *crc = wh_crc64nvme_combine(*crc, pc->crc, pc->got);
        *bytes += pc->got;
        ended = true;
    }
    return WH_OK;
}
