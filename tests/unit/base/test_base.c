/* SPDX-License-Identifier: Apache-2.0 */
#include "base/codec.h"
#include "base/crc.h"
#include "base/digest.h"
#include "base/status.h"
#include "base/util.h"
#include "check.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_crc(void)
{
    const char *s = "123456789";
    CHECK_EQ_U64(wh_crc64nvme(0, s, 9), 0xae8b14860a799888ULL);
    CHECK_EQ_U64(wh_crc32c(0, s, 9), 0xe3069283U);
    /* incremental == one shot */
    uint64_t c = wh_crc64nvme(0, s, 4);
    c = wh_crc64nvme(c, s + 4, 5);
    CHECK_EQ_U64(c, 0xae8b14860a799888ULL);
    CHECK_EQ_U64(wh_crc32c(wh_crc32c(0, s, 3), s + 3, 6), 0xe3069283U);
    /* combine */
    uint64_t a = wh_crc64nvme(0, s, 2), b = wh_crc64nvme(0, s + 2, 7);
    CHECK_EQ_U64(wh_crc64nvme_combine(a, b, 7), 0xae8b14860a799888ULL);
    for (size_t cut = 0; cut <= 9; cut++)
        CHECK_EQ_U64(
            wh_crc32c_combine(wh_crc32c(0, s, cut), wh_crc32c(0, s + cut, 9 - cut), 9 - cut),
            0xe3069283U);
    {
        /* combine (multiplication mod P) against the shift operator (GF(2) matrices), an
         * independent way to the same value, over lengths up to 2^40 */
        static const uint64_t lens[] = {1,          2,
                                        3,          7,
                                        8,          255,
                                        4096,       65537,
                                        8u << 20,   (8u << 20) + 1,
                                        1ULL << 33, (1ULL << 40) - 3};
        int badk = 0;
        uint64_t x = 0x9e3779b97f4a7c15ULL;
        for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++)
            for (int t = 0; t < 4; t++) {
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                uint64_t ca = x, cb = x * 31 + 7;
                wh_crc64_shift_t opk;
                wh_crc64nvme_shift_init(&opk, lens[li]);
                if (wh_crc64nvme_combine(ca, cb, lens[li]) !=
                    wh_crc64nvme_shift_combine(&opk, ca, cb))
                    badk++;
            }
        CHECK(badk == 0);
        CHECK_EQ_U64(wh_crc64nvme_combine(0x1234, 0, 0), 0x1234);
    }
    /* the reusable shift operator agrees with combine */
    wh_crc64_shift_t op;
    wh_crc64nvme_shift_init(&op, 7);
    CHECK_EQ_U64(wh_crc64nvme_shift_combine(&op, a, b), 0xae8b14860a799888ULL);
    wh_crc64nvme_shift_init(&op, 0);
    CHECK_EQ_U64(wh_crc64nvme_shift_combine(&op, a, 0), a);
    /* large buffer, odd alignment, against byte-at-a-time */
    size_t n = 100003;
    unsigned char *buf = malloc(n + 8);
    for (size_t i = 0; i < n + 8; i++)
        buf[i] = (unsigned char)(i * 131 + 7);
    uint64_t ref = 0;
    for (size_t i = 0; i < n; i++)
        ref = wh_crc64nvme(ref, buf + 3 + i, 1);
    CHECK_EQ_U64(wh_crc64nvme(0, buf + 3, n), ref);
    free(buf);
    /* folding path against the table reference: every length 0..600 and random offsets */
    size_t big = 1 << 20;
    unsigned char *r = malloc(big + 64);
    for (size_t i = 0; i < big + 64; i++)
        r[i] = (unsigned char)((i * 2654435761u) >> 13);
    /* Each folding code this CPU has (sixteen lanes from 512 bytes: every length up to 1300
     * crosses its 256-byte rounds and every tail), and the wide one first where there is one. */
    static const char *const impls[] = {"vpclmulqdq-512", "pclmulqdq-128"};
    const char *chosen = wh_crc64nvme_impl();
    unsigned tried = 0;
    for (size_t ii = 0; ii < 2; ii++) {
        if (wh_crc64nvme_set_impl(impls[ii]) != 0)
            continue;
        CHECK_STR(wh_crc64nvme_impl(), impls[ii]);
        tried++;
        int bad = 0;
        for (size_t len = 0; len <= 1300; len++)
            for (size_t off = 0; off < 3; off++)
                if (wh_crc64nvme(0x1234, r + off, len) != wh_crc64nvme_ref(0x1234, r + off, len))
                    bad++;
        CHECK(bad == 0);
        CHECK_EQ_U64(wh_crc64nvme(0, r + 5, big), wh_crc64nvme_ref(0, r + 5, big));
        CHECK_EQ_U64(wh_crc64nvme(0, s, 9), 0xae8b14860a799888ULL);
        fprintf(stderr, "  crc64nvme %s: %u lengths x 3 offsets and 1 MiB match the table\n",
                impls[ii], 1301u);
    }
    CHECK(tried > 0 || !strcmp(chosen, "table"));
    CHECK(wh_crc64nvme_set_impl("no-such-code") == -1);
    CHECK(wh_crc64nvme_set_impl(chosen) == 0 || !strcmp(chosen, "table"));
    CHECK_STR(wh_crc64nvme_impl(), chosen);
    {
        /* pieces of 4096 + a short tail, combined with one operator */
        wh_crc64_shift_t op4k;
        wh_crc64nvme_shift_init(&op4k, 4096);
        uint64_t whole = wh_crc64nvme(0, r, 10 * 4096 + 100), acc = 0;
        for (int i = 0; i < 10; i++)
            acc = wh_crc64nvme_shift_combine(&op4k, acc, wh_crc64nvme(0, r + i * 4096, 4096));
        acc = wh_crc64nvme_combine(acc, wh_crc64nvme(0, r + 40960, 100), 100);
        CHECK_EQ_U64(acc, whole);
        /* CRC-32C: 5 MiB pieces and a short tail, as a multipart object's parts */
        uint32_t w32 = wh_crc32c(0, r, big), a32 = 0;
        for (size_t off = 0; off < big; off += 300000) {
            size_t len = WH_MIN((size_t)300000, big - off);
            a32 = wh_crc32c_combine(a32, wh_crc32c(0, r + off, len), len);
        }
        CHECK_EQ_U64(a32, w32);
    }
    uint64_t t0 = wh_now_ns();
    uint64_t acc = 0;
    for (int i = 0; i < 64; i++)
        acc ^= wh_crc64nvme(0, r, big);
    double s_fast = (double)(wh_now_ns() - t0) / 1e9;
    t0 = wh_now_ns();
    for (int i = 0; i < 8; i++)
        acc ^= wh_crc64nvme_ref(0, r, big);
    double s_ref = (double)(wh_now_ns() - t0) / 1e9;
    fprintf(stderr, "crc64nvme: fold %.2f GB/s, table %.2f GB/s (acc %llx)\n",
            64.0 * (double)big / s_fast / 1e9, 8.0 * (double)big / s_ref / 1e9,
            (unsigned long long)acc);
    free(r);
    char b64[13];
    wh_crc64nvme_b64(0xae8b14860a799888ULL, b64);
    uint64_t back;
    CHECK(wh_crc64nvme_from_b64(b64, &back) == 0);
    CHECK_EQ_U64(back, 0xae8b14860a799888ULL);
}

static void test_codec(void)
{
    char hex[9];
    wh_hex_encode("\x01\xab\xff\x00", 4, hex);
    CHECK_STR(hex, "01abff00");
    unsigned char out[4];
    CHECK(wh_hex_decode("01ABff00", 8, out, 4) == 0 && out[1] == 0xab);
    CHECK(wh_hex_decode("01Ag", 4, out, 2) == -1);
    uint64_t v;
    CHECK(wh_hex_u64("ffffffffffffffff", 16, &v) == 0 && v == UINT64_MAX);
    CHECK(wh_hex_u64("1ffffffffffffffff", 17, &v) == -1);
    char b[32];
    wh_base64_encode("hello", 5, b);
    CHECK_STR(b, "aGVsbG8=");
    char d[16];
    CHECK(wh_base64_decode("aGVsbG8=", 8, d, sizeof d) == 5 && memcmp(d, "hello", 5) == 0);
    CHECK(wh_base64_decode("aGVs=G8=", 8, d, sizeof d) == -1);
    CHECK(wh_parse_u64("18446744073709551615", 20, &v) == 0 && v == UINT64_MAX);
    CHECK(wh_parse_u64("18446744073709551616", 20, &v) == -1);
    CHECK(wh_parse_u64("12a", 3, &v) == -1);
}

static void test_digest(void)
{
    char hex[65];
    wh_sha256_hex("", 0, hex);
    CHECK_STR(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    unsigned char md[16];
    wh_md5("abc", 3, md);
    char mh[33];
    wh_hex_encode(md, 16, mh);
    CHECK_STR(mh, "900150983cd24fb0d6963f7d28e17f72");
}

/* RFC 4231 test cases 1, 2 and 6 (a key longer than the 64-byte block), and SigV4's
 * in-place derivation (the output buffer is the key). */
static void test_hmac(void)
{
    uint8_t mac[32], key[131];
    char hex[65];
    memset(key, 0x0b, 20);
    wh_hmac_sha256(key, 20, "Hi There", 8, mac);
    wh_hex_encode(mac, 32, hex);
    CHECK_STR(hex, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
    wh_hmac_sha256("Jefe", 4, "what do ya want for nothing?", 28, mac);
    wh_hex_encode(mac, 32, hex);
    CHECK_STR(hex, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    memset(key, 0xaa, sizeof key);
    const char *m6 = "Test Using Larger Than Block-Size Key - Hash Key First";
    wh_hmac_sha256(key, sizeof key, m6, strlen(m6), mac);
    wh_hex_encode(mac, 32, hex);
    CHECK_STR(hex, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
    memcpy(mac, "Jefe", 4);
    wh_hmac_sha256(mac, 4, "what do ya want for nothing?", 28, mac);
    wh_hex_encode(mac, 32, hex);
    CHECK_STR(hex, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    wh_hmac_sha256("", 0, "", 0, mac);
    wh_hex_encode(mac, 32, hex);
    CHECK_STR(hex, "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad");
}

static void test_dates(void)
{
    char s[30];
    wh_http_date(784111777, s);
    CHECK_STR(s, "Sun, 06 Nov 1994 08:49:37 GMT");
    time_t t;
    CHECK(wh_http_date_parse("Sun, 06 Nov 1994 08:49:37 GMT", &t) == 0 && t == 784111777);
    CHECK(wh_http_date_parse("garbage", &t) == -1);
    char a[17];
    wh_amz_date(1369353600, a);
    CHECK_STR(a, "20130524T000000Z");
    CHECK(wh_amz_date_parse("20130524T000000Z", &t) == 0 && t == 1369353600);
    CHECK_STR(wh_status_str(WH_ERR_DECLINED), "RDMA transfer declined by the server");
}

int main(void)
{
    RUN(test_crc);
    RUN(test_codec);
    RUN(test_digest);
    RUN(test_hmac);
    RUN(test_dates);
    return check_done();
}
