/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer driver for the aws-chunked decoder. Byte 0: bits 0-1 the mode (signed, signed with
 * trailer, unsigned trailer), bit 2 round trip, bits 3-7 the feed piece size (fz_piece).
 * Decoding arbitrary bodies must not crash and must account for every byte it hands out; a
 * body encoded with auth_chunk_signature from the input must decode back to the input. */
#include "auth/chunked.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int count_sink(void *arg, const void *p, size_t n)
{
    uint64_t *total = arg;
    (void)p;
    *total += n;
    return 0;
}

typedef struct cmp_sink {
    const uint8_t *want;
    size_t want_len, got;
} cmp_sink_t;

static int cmp_cb(void *arg, const void *p, size_t n)
{
    cmp_sink_t *s = arg;
    if (s->got + n > s->want_len || memcmp(s->want + s->got, p, n) != 0)
        abort();
    s->got += n;
    return 0;
}

static void doc_auth(auth_auth_t *a, int mode)
{
    memset(a, 0, sizeof *a);
    auth_sigv4_signing_key("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "20130524", "us-east-1",
                           a->signing_key);
    memcpy(a->amz_date, "20130524T000000Z", 17);
    strcpy(a->scope, "20130524/us-east-1/s3/aws4_request");
    strcpy(a->signature, "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9");
    a->mode = mode == 2 ? AUTH_PAYLOAD_STREAMING_UNSIGNED_TRAILER : AUTH_PAYLOAD_STREAMING_SIGNED;
    a->signed_trailer = mode == 1;
}

/* Half the sizes split the body byte by byte up to 16 bytes a piece, every state boundary at
 * every offset; the rest grow to the whole body in one call, as libmicrohttpd hands over a
 * large upload. (Pieces of 1 to 32 bytes only made each 4 KiB input thousands of calls, the
 * driver's main cost, and never fed a piece larger than 32 bytes.) */
static size_t fz_piece(unsigned idx)
{
    static const size_t big[16] = {24,   32,   48,   64,   96,    128,   256,   512,
                                   1024, 2048, 4096, 8192, 16384, 32768, 65536, 1 << 20};
    return idx < 16 ? idx + 1 : big[idx - 16];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 262144)
        return 0;
    int mode = (data[0] & 3) % 3, round_trip = data[0] & 4;
    size_t piece = fz_piece(data[0] >> 3);
    const uint8_t *body = data + 1;
    size_t len = size - 1;
    auth_auth_t a;
    doc_auth(&a, mode);
    char msg[256];
    if (!round_trip) {
        auth_chunked_t *c = auth_chunked_new(&a);
        if (!c)
            abort();
        uint64_t total = 0;
        s3_err_t e = S3_OK;
        for (size_t off = 0; off < len && e == S3_OK; off += piece) {
            msg[0] = '\0';
            e = auth_chunked_feed(c, body + off, len - off < piece ? len - off : piece, count_sink,
                                  &total, msg, sizeof msg);
            if (e != S3_OK && msg[0] == '\0')
                abort();
        }
        if (e == S3_OK) {
            msg[0] = '\0';
            e = auth_chunked_finish(c, msg, sizeof msg);
            if (e != S3_OK && msg[0] == '\0')
                abort();
        }
        if (auth_chunked_decoded(c) != total || total > len)
            abort();
        auth_chunked_free(c);
        return 0;
    }

    /* Round trip: chunk the input (sizes from its own bytes), sign, frame, decode. */
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    char prev[65], sig[65];
    memcpy(prev, a.signature, 65);
    int sign = mode != 2;
    for (size_t off = 0;;) {
        size_t n = off < len ? 1 + (size_t)(body[off] % 97) * piece : 0;
        if (n > len - off)
            n = len - off;
        if (sign) {
            auth_chunk_signature(a.signing_key, a.amz_date, a.scope, prev, body + off, n, sig);
            wh_sbuf_printf(&b, "%zx;chunk-signature=%s\r\n", n, sig);
            memcpy(prev, sig, 65);
        } else {
            wh_sbuf_printf(&b, "%zx\r\n", n);
        }
        if (n == 0)
            break;
        wh_sbuf_append(&b, body + off, n);
        wh_sbuf_puts(&b, "\r\n");
        off += n;
    }
    if (mode == 1) {
        const char *canon = "x-amz-checksum-crc32c:AAAAAA==\n";
        auth_trailer_signature(a.signing_key, a.amz_date, a.scope, prev, canon, strlen(canon), sig);
        wh_sbuf_printf(&b, "x-amz-checksum-crc32c:AAAAAA==\r\nx-amz-trailer-signature:%s\r\n", sig);
    } else if (mode == 2) {
        wh_sbuf_puts(&b, "x-amz-checksum-crc32c:AAAAAA==\r\n");
    }
    wh_sbuf_puts(&b, "\r\n");
    if (b.oom)
        abort();
    auth_chunked_t *c = auth_chunked_new(&a);
    cmp_sink_t s = {body, len, 0};
    for (size_t off = 0; off < b.len; off += piece)
        if (auth_chunked_feed(c, b.data + off, b.len - off < piece ? b.len - off : piece, cmp_cb,
                              &s, msg, sizeof msg) != S3_OK)
            abort();
    if (auth_chunked_finish(c, msg, sizeof msg) != S3_OK || s.got != len)
        abort();
    if (mode != 0 && strcmp(auth_chunked_trailer(c, "x-amz-checksum-crc32c"), "AAAAAA==") != 0)
        abort();
    auth_chunked_free(c);
    wh_sbuf_free(&b);
    return 0;
}
