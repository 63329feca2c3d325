/* SPDX-License-Identifier: Apache-2.0 */
/* libwharf's reply handling and piece stitching (src/client/client/object_piece.c, reply.c), driven
 * with replies built from header lines the way curl hands them over. */
#include "client/object.h"

#include "base/crc.h"
#include "check.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A reply from header lines (status line first), as wc_reply_header sees them. */
static void reply(wc_resp_t *r, uint64_t body_len, const char *const *lines)
{
    memset(r, 0, sizeof *r);
    for (size_t i = 0; lines[i]; i++)
        wc_reply_header(r, lines[i], strlen(lines[i]));
    r->body_len = body_len;
}

static void test_extent(void)
{
    wc_resp_t r;
    wc_get_piece_t pc;
    uint64_t n;
    char why[256];

    /* 206 for exactly the piece: its length and the object's size */
    reply(&r, 100,
          (const char *const[]){"HTTP/1.1 206 Partial Content\r\n",
                                "Content-Range: bytes 100-199/1000\r\n", NULL});
    memset(&pc, 0, sizeof pc);
    CHECK(wc_get_reply_extent(&r, 100, 100, &n, &pc, why, sizeof why));
    CHECK_EQ_U64(n, 100);
    CHECK(pc.has_total && pc.total == 1000);
    /* 206 shorter than asked (the object ends inside the piece) is an extent, not an error */
    reply(&r, 50,
          (const char *const[]){"HTTP/1.1 206 Partial Content\r\n",
                                "content-range:  bytes 950-999/1000 \r\n", NULL});
    memset(&pc, 0, sizeof pc);
    CHECK(wc_get_reply_extent(&r, 950, 100, &n, &pc, why, sizeof why));
    CHECK_EQ_U64(n, 50);
    /* 206 starting elsewhere, or longer than asked */
    reply(&r, 0,
          (const char *const[]){"HTTP/1.1 206 x\r\n", "Content-Range: bytes 0-99/1000\r\n", NULL});
    CHECK(!wc_get_reply_extent(&r, 100, 100, &n, &pc, why, sizeof why));
    CHECK(strstr(why, "asked for bytes 100-199 but got bytes 0-99/1000") != NULL);
    reply(
        &r, 0,
        (const char *const[]){"HTTP/1.1 206 x\r\n", "Content-Range: bytes 100-299/1000\r\n", NULL});
    CHECK(!wc_get_reply_extent(&r, 100, 100, &n, &pc, why, sizeof why));
    /* 206 with a missing or malformed Content-Range */
    reply(&r, 0, (const char *const[]){"HTTP/1.1 206 x\r\n", NULL});
    CHECK(!wc_get_reply_extent(&r, 0, 100, &n, &pc, why, sizeof why));
    CHECK(strstr(why, "bad Content-Range") != NULL);
    reply(&r, 0,
          (const char *const[]){"HTTP/1.1 206 x\r\n", "Content-Range: bytes 9-3/10\r\n", NULL});
    CHECK(!wc_get_reply_extent(&r, 9, 1, &n, &pc, why, sizeof why));
    /* 200 (Range ignored): fine at offset 0, the body decides; wrong anywhere else */
    reply(&r, 10, (const char *const[]){"HTTP/1.1 200 OK\r\n", NULL});
    CHECK(wc_get_reply_extent(&r, 0, 100, &n, &pc, why, sizeof why));
    CHECK_EQ_U64(n, UINT64_MAX);
    CHECK(!wc_get_reply_extent(&r, 64, 100, &n, &pc, why, sizeof why));
    CHECK(strstr(why, "got 200 (whole object)") != NULL);
    /* anything else */
    reply(&r, 0, (const char *const[]){"HTTP/1.1 204 No Content\r\n", NULL});
    CHECK(!wc_get_reply_extent(&r, 0, 100, &n, &pc, why, sizeof why));
    CHECK(strstr(why, "unexpected status 204") != NULL);
    /* 100 Continue, then the real status: the headers start over */
    reply(&r, 100,
          (const char *const[]){"HTTP/1.1 100 Continue\r\n", "Content-Range: bytes 0-0/1\r\n",
                                "HTTP/1.1 206 x\r\n", "Content-Range: bytes 0-99/100\r\n", NULL});
    CHECK(r.status == 206);
    CHECK(wc_get_reply_extent(&r, 0, 100, &n, &pc, why, sizeof why) && n == 100);
    /* 416 records the object's size when the reply gives it */
    reply(&r, 0,
          (const char *const[]){"HTTP/1.1 416 x\r\n", "Content-Range: bytes */500\r\n", NULL});
    memset(&pc, 0, sizeof pc);
    wc_get_piece_416(&r, &pc);
    CHECK(pc.r416 && pc.has_total && pc.total == 500);
    reply(&r, 0, (const char *const[]){"HTTP/1.1 416 x\r\n", NULL});
    memset(&pc, 0, sizeof pc);
    wc_get_piece_416(&r, &pc);
    CHECK(pc.r416 && !pc.has_total);
}

static void test_rdma_reply(void)
{
    wc_resp_t r;
    wc_get_piece_t pc;
    uint64_t n = 0;
    char why[256];
    memset(&pc, 0, sizeof pc);
    /* a good one: rdma reply, the extent, the bytes moved, no body */
    reply(&r, 0,
          (const char *const[]){"HTTP/1.1 206 x\r\n", "Content-Range: bytes 0-4095/8192\r\n",
                                "x-amz-rdma-reply: 206\r\n",
                                "x-amz-rdma-bytes-transferred: 4096\r\n", "Content-Length: 0\r\n",
                                NULL});
    CHECK(wc_get_rdma_reply(&r, 0, 4096, &n, &pc, why, sizeof why));
    CHECK_EQ_U64(n, 4096);
    /* 200 for the whole object: the whole range is due */
    reply(&r, 0,
          (const char *const[]){"HTTP/1.1 200 OK\r\n", "x-amz-rdma-reply: 200\r\n",
                                "x-amz-rdma-bytes-transferred: 4096\r\n", NULL});
    CHECK(wc_get_rdma_reply(&r, 0, 4096, &n, &pc, why, sizeof why) && n == 4096);
    /* a server that ignored the token */
    reply(
        &r, 4096,
        (const char *const[]){"HTTP/1.1 206 x\r\n", "Content-Range: bytes 0-4095/8192\r\n", NULL});
    CHECK(!wc_get_rdma_reply(&r, 0, 4096, &n, &pc, why, sizeof why));
    CHECK(strstr(why, "no x-amz-rdma-reply") != NULL);
    /* bytes moved missing, malformed, or not what was due */
    static const char *const counts[] = {NULL, "x-amz-rdma-bytes-transferred: 12ab\r\n",
                                         "x-amz-rdma-bytes-transferred: 4095\r\n"};
    for (size_t k = 0; k < 3; k++) {
        reply(&r, 0,
              (const char *const[]){"HTTP/1.1 206 x\r\n", "Content-Range: bytes 0-4095/8192\r\n",
                                    "x-amz-rdma-reply: 206\r\n",
                                    counts[k] ? counts[k] : "X-Other: 1\r\n", NULL});
        CHECK(!wc_get_rdma_reply(&r, 0, 4096, &n, &pc, why, sizeof why));
        CHECK(strstr(why, "x-amz-rdma-bytes-transferred") != NULL);
    }
    /* a body beside RDMA */
    reply(&r, 10,
          (const char *const[]){"HTTP/1.1 206 x\r\n", "Content-Range: bytes 0-4095/8192\r\n",
                                "x-amz-rdma-reply: 206\r\n",
                                "x-amz-rdma-bytes-transferred: 4096\r\n", NULL});
    CHECK(!wc_get_rdma_reply(&r, 0, 4096, &n, &pc, why, sizeof why));
    CHECK(strstr(why, "must carry no body") != NULL);
    reply(&r, 0,
          (const char *const[]){"HTTP/1.1 206 x\r\n", "Content-Range: bytes 0-4095/8192\r\n",
                                "x-amz-rdma-reply: 206\r\n",
                                "x-amz-rdma-bytes-transferred: 4096\r\n",
                                "Content-Length: 4096\r\n", NULL});
    CHECK(!wc_get_rdma_reply(&r, 0, 4096, &n, &pc, why, sizeof why));
}

/* Pieces of chunk over data[offset, offset+length) where the object has size bytes: what a
 * correct server delivers (full pieces, one short piece at the end, 416 past it). */
static unsigned honest_pieces(const uint8_t *data, uint64_t size, uint64_t offset, uint64_t length,
                              uint64_t chunk, wc_get_piece_t *pcs)
{
    unsigned n = wc_get_piece_count(length, &chunk);
    for (unsigned i = 0; i < n; i++) {
        uint64_t off = offset + (uint64_t)i * chunk;
        uint64_t want = WH_MIN(chunk, length - (uint64_t)i * chunk);
        memset(&pcs[i], 0, sizeof pcs[i]);
        if (off >= size) {
            pcs[i].r416 = true;
            pcs[i].total = size;
            pcs[i].has_total = true;
            continue;
        }
        pcs[i].got = WH_MIN(want, size - off);
        pcs[i].crc = wh_crc64nvme(0, data + off, pcs[i].got);
        pcs[i].has_crc = true;
        pcs[i].total = size;
        pcs[i].has_total = true;
    }
    return n;
}

static void test_stitch(void)
{
    enum { SIZE = 10000 };
    uint8_t *data = malloc(SIZE);
    for (size_t i = 0; i < SIZE; i++)
        data[i] = (uint8_t)(i * 131 + 7);
    wc_get_piece_t pcs[64];
    uint64_t bytes, crc;
    char why[256];

    /* piece geometry */
    uint64_t chunk = 1000;
    CHECK(wc_get_piece_count(10000, &chunk) == 10 && chunk == 1000);
    CHECK(wc_get_piece_count(10001, &chunk) == 11);
    chunk = 1;
    unsigned big = wc_get_piece_count(UINT64_MAX / 2, &chunk);
    CHECK(chunk > 1);
    CHECK((uint64_t)big * chunk >= UINT64_MAX / 2);

    /* whole object, ranges inside it, ranges past its end: bytes and crc match the data */
    static const struct {
        uint64_t off, len, chunk, want;
    } cases[] = {
        {0, SIZE, 1000, SIZE},        {0, SIZE, 3000, SIZE}, {123, 4567, 1000, 4567},
        {9000, 5000, 1000, 1000}, /* ends early: one full piece, then 416s */
        {9500, 5000, 1000, 500},  /* ends inside the first piece */
        {0, SIZE + 4000, 4096, SIZE}, {9999, 1, 1000, 1},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        unsigned n = honest_pieces(data, SIZE, cases[k].off, cases[k].len, cases[k].chunk, pcs);
        wh_status_t st = wc_get_stitch(pcs, n, cases[k].chunk, cases[k].off, cases[k].len, &bytes,
                                       &crc, why, sizeof why);
        CHECK(st == WH_OK);
        CHECK_EQ_U64(bytes, cases[k].want);
        CHECK_EQ_U64(crc, wh_crc64nvme(0, data + cases[k].off, cases[k].want));
    }

    /* a short piece where the object does not end */
    unsigned n = honest_pieces(data, SIZE, 0, SIZE, 1000, pcs);
    pcs[3].got = 999;
    CHECK(wc_get_stitch(pcs, n, 1000, 0, SIZE, &bytes, &crc, why, sizeof why) == WH_ERR_PROTOCOL);
    CHECK(strstr(why, "piece 3 at 3000 got 999 of 1000") != NULL);
    /* a short piece and no size known */
    n = honest_pieces(data, SIZE, 9500, 1000, 1000, pcs);
    pcs[0].has_total = false;
    CHECK(wc_get_stitch(pcs, n, 1000, 9500, 1000, &bytes, &crc, why, sizeof why) ==
          WH_ERR_PROTOCOL);
    /* data after the end: a piece past the short one carries bytes */
    n = honest_pieces(data, SIZE, 9500, 3000, 1000, pcs);
    CHECK(n == 3);
    pcs[2].got = 10;
    CHECK(wc_get_stitch(pcs, n, 1000, 9500, 3000, &bytes, &crc, why, sizeof why) ==
          WH_ERR_PROTOCOL);
    CHECK(strstr(why, "data after the end of the object at piece 2") != NULL);
    /* a 416 in the middle of a range inside the object */
    n = honest_pieces(data, SIZE, 0, SIZE, 1000, pcs);
    memset(&pcs[4], 0, sizeof pcs[4]);
    pcs[4].r416 = true;
    pcs[4].total = SIZE;
    pcs[4].has_total = true;
    CHECK(wc_get_stitch(pcs, n, 1000, 0, SIZE, &bytes, &crc, why, sizeof why) == WH_ERR_PROTOCOL);
    /* a piece that claims more than its share never passes as full */
    n = honest_pieces(data, SIZE, 0, SIZE, 1000, pcs);
    pcs[9].got = 1001;
    CHECK(wc_get_stitch(pcs, n, 1000, 0, SIZE, &bytes, &crc, why, sizeof why) == WH_ERR_PROTOCOL);
    free(data);
}

int main(void)
{
    RUN(test_extent);
    RUN(test_rdma_reply);
    RUN(test_stitch);
    return check_done();
}
