/* SPDX-License-Identifier: Apache-2.0 */
/* Percent-encoding (src/shared/s3/uri.c), as SigV4's canonical forms and the S3 documents use it.
 */
#include "base/util.h"
#include "check.h"
#include "s3/uri.h"

#include <string.h>

static void test_uri(void)
{
    wh_sbuf_t b;
    wh_sbuf_init(&b);
#define ENC(in, slash, want)                                                                       \
    do {                                                                                           \
        wh_sbuf_reset(&b);                                                                         \
        s3_uri_encode(in, strlen(in), slash, &b);                                                  \
        CHECK_STR(b.data ? b.data : "", want);                                                     \
    } while (0)
    ENC("a b", 0, "a%20b");
    ENC("a+b", 0, "a%2Bb");
    ENC("100%", 0, "100%25");
    ENC("\xd0\xba\xd0\xbb\xd1\x8e\xd1\x87", 0, "%D0%BA%D0%BB%D1%8E%D1%87");
    ENC("a/b", 0, "a/b");
    ENC("a/b", 1, "a%2Fb");
    ENC("A-z_0.9~", 1, "A-z_0.9~");
    ENC("=&?#!*'()$", 1, "%3D%26%3F%23%21%2A%27%28%29%24");
    ENC("", 1, "");
    /* long input crosses the internal batch boundary */
    char big[1000];
    memset(big, ' ', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    wh_sbuf_reset(&b);
    s3_uri_encode(big, strlen(big), 1, &b);
    CHECK_EQ_U64(b.len, 3 * 999);
    CHECK(strncmp(b.data + 2994, "%20", 3) == 0);

    wh_sbuf_reset(&b);
    CHECK(s3_uri_decode("a%20b+c%2f%2F", 13, &b) == 0);
    CHECK_STR(b.data, "a b+c//");
    wh_sbuf_reset(&b);
    CHECK(s3_uri_decode("%", 1, &b) == -1);
    CHECK(s3_uri_decode("ab%4", 4, &b) == -1);
    CHECK(s3_uri_decode("%zz", 3, &b) == -1);
    CHECK(s3_uri_decode("%4g", 3, &b) == -1);
    wh_sbuf_reset(&b);
    CHECK(s3_uri_decode("%00x", 4, &b) == 0);
    CHECK(b.len == 2 && b.data[0] == '\0' && b.data[1] == 'x');

    wh_sbuf_free(&b);
}

/* s3_uri_decode_form: the same decoding, with '+' read as a space (query strings, forms). */
static void test_uri_decode_form(void)
{
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    CHECK(s3_uri_decode_form("a%20b+c%2B", 10, &b) == 0);
    CHECK_STR(b.data, "a b c+");
    wh_sbuf_reset(&b);
    CHECK(s3_uri_decode_form("x+%", 3, &b) == -1);
    CHECK(s3_uri_decode_form("%g0", 3, &b) == -1);
    wh_sbuf_free(&b);
}

int main(void)
{
    RUN(test_uri);
    RUN(test_uri_decode_form);
    return check_done();
}
