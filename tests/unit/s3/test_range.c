/* SPDX-License-Identifier: Apache-2.0 */
/* Range parsing: the single-range forms S3 serves, what it ignores, and what is a 416. */
#include "check.h"
#include "s3/range.h"

#include <stdint.h>

static int ok(const char *h, uint64_t size, uint64_t want_off, uint64_t want_len)
{
    uint64_t off = 0xdead, len = 0xbeef;
    s3_range_result_t r = s3_range_parse(h, size, &off, &len);
    if (r != S3_RANGE_OK || off != want_off || len != want_len) {
        fprintf(stderr, "  '%s' size %llu: r=%d off=%llu len=%llu\n", h, (unsigned long long)size,
                r, (unsigned long long)off, (unsigned long long)len);
        return 0;
    }
    return 1;
}

static int res(const char *h, uint64_t size, s3_range_result_t want)
{
    uint64_t off = 0xdead, len = 0xbeef;
    s3_range_result_t r = s3_range_parse(h, size, &off, &len);
    if (r != want)
        fprintf(stderr, "  '%s' size %llu: r=%d want %d\n", h ? h : "(null)",
                (unsigned long long)size, r, want);
    /* outputs are written only for OK */
    return r == want && (r == S3_RANGE_OK || (off == 0xdead && len == 0xbeef));
}

static void test_valid(void)
{
    CHECK(ok("bytes=0-9", 100, 0, 10));
    CHECK(ok("bytes=0-0", 100, 0, 1));
    CHECK(ok("bytes=99-99", 100, 99, 1));
    CHECK(ok("bytes=10-", 100, 10, 90));
    CHECK(ok("bytes=0-", 1, 0, 1));
    CHECK(ok("bytes=-10", 100, 90, 10));
    CHECK(ok("bytes=-100", 100, 0, 100));
    CHECK(ok("bytes=-1000", 100, 0, 100));   /* suffix longer than the object: all of it */
    CHECK(ok("bytes=50-1000", 100, 50, 50)); /* end clamped */
    CHECK(ok("bytes=0-18446744073709551615", 100, 0, 100));
    CHECK(ok("bytes=0-99999999999999999999999", 100, 0, 100)); /* saturates */
    CHECK(ok("Bytes=1-2", 100, 1, 2));
    CHECK(ok("  bytes = 1-2  ", 100, 1, 2));
    CHECK(ok("bytes=0-1073741823", 1ULL << 40, 0, 1ULL << 30));
    CHECK(ok("bytes=1099511627775-", 1ULL << 40, (1ULL << 40) - 1, 1));
    CHECK(ok("bytes=-1", UINT64_MAX, UINT64_MAX - 1, 1));
    CHECK(ok("bytes=0-", UINT64_MAX, 0, UINT64_MAX));
}

static void test_unsatisfiable(void)
{
    CHECK(res("bytes=100-", 100, S3_RANGE_UNSATISFIABLE));
    CHECK(res("bytes=100-200", 100, S3_RANGE_UNSATISFIABLE));
    CHECK(res("bytes=1000-2000", 100, S3_RANGE_UNSATISFIABLE));
    CHECK(res("bytes=-0", 100, S3_RANGE_UNSATISFIABLE));
    CHECK(res("bytes=0-0", 0, S3_RANGE_UNSATISFIABLE));
    CHECK(res("bytes=0-", 0, S3_RANGE_UNSATISFIABLE));
    CHECK(res("bytes=-5", 0, S3_RANGE_UNSATISFIABLE));
    CHECK(res("bytes=99999999999999999999999-", 100, S3_RANGE_UNSATISFIABLE));
}

static void test_ignored(void)
{
    const char *bad[] = {
        "",
        "bytes",
        "bytes=",
        "bytes=-",
        "bytes=a-b",
        "bytes=1-a",
        "bytes=5-4",
        "bytes=0-1,3-4",
        "bytes=0-1, 3-4",
        "bytes=0-1,",
        "items=0-1",
        "bytes:0-1",
        "0-1",
        "bytes=+1-2",
        "bytes=1--2",
        "bytes=- 5",
        "bytes=1 -2",
        "bytes=0x10-0x20",
        "bytes=1-2 junk",
        "bytesx=1-2",
        "bytes=-1-2",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(res(bad[i], 100, S3_RANGE_IGNORE));
    CHECK(res(NULL, 100, S3_RANGE_IGNORE));
    /* garbage is ignored even for an empty object: a 200 of nothing, never a 416 */
    CHECK(res("bytes=0-1,3-4", 0, S3_RANGE_IGNORE));
}

/* x-amz-copy-source-range: strict "bytes=first-last" inside the source; the forms a
 * scanf-style parser lets through (spaces, signs, trailing junk) are refused. */
static void test_copy_range(void)
{
    uint64_t off = 0, len = 0;
    CHECK(s3_copy_range_parse("bytes=0-99", 1000, &off, &len) == S3_RANGE_OK);
    CHECK_EQ_U64(off, 0);
    CHECK_EQ_U64(len, 100);
    CHECK(s3_copy_range_parse("bytes=999-999", 1000, &off, &len) == S3_RANGE_OK);
    CHECK_EQ_U64(off, 999);
    CHECK_EQ_U64(len, 1);
    CHECK(s3_copy_range_parse("bytes=0-1000", 1000, &off, &len) == S3_RANGE_UNSATISFIABLE);
    CHECK(s3_copy_range_parse("bytes=0-0", 0, &off, &len) == S3_RANGE_UNSATISFIABLE);
    const char *bad[] = {
        NULL,
        "",
        "bytes=",
        "bytes=5-",
        "bytes=-5",
        "bytes= 1-2",
        "bytes=+1-2",
        "bytes=1-+2",
        "bytes=1- 2",
        "bytes=1-2 ",
        "bytes=1-2x",
        "bytes=1-2,3-4",
        "bytes=2-1",
        "Bytes=1-2",
        "bytes=1--2",
        "bytes=0x1-0x2",
        "bytes=99999999999999999999999-1",
        "bytes=1-99999999999999999999999",
        "bytes 1-2",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        off = len = 7;
        CHECK(s3_copy_range_parse(bad[i], 1000, &off, &len) == S3_RANGE_IGNORE);
        CHECK(off == 7 && len == 7); /* outputs written only on success */
    }
}

static void test_content_range(void)
{
    char b[S3_CONTENT_RANGE_MAX];
    CHECK(s3_content_range_format(b, sizeof b, 5, 10, 100) == strlen("bytes 5-14/100"));
    CHECK_STR(b, "bytes 5-14/100");
    s3_content_range_format(b, sizeof b, 0, 0, 42);
    CHECK_STR(b, "bytes */42");
    /* the widest value fits the advertised buffer */
    CHECK(s3_content_range_format(b, sizeof b, UINT64_MAX - 1, 1, UINT64_MAX) > 0);
    CHECK_STR(b, "bytes 18446744073709551614-18446744073709551614/18446744073709551615");
    CHECK(s3_content_range_format(b, 8, 0, 10, 100) == 0 && b[0] == '\0');

    uint64_t a = 0, z = 0, t = 0;
    bool ht = false;
    CHECK(s3_content_range_parse("bytes 5-14/100", &a, &z, &t, &ht) && ht);
    CHECK(a == 5 && z == 14 && t == 100);
    CHECK(s3_content_range_parse("bytes 0-9/*", &a, &z, &t, &ht) && !ht);
    CHECK(s3_content_range_parse("bytes */42", NULL, NULL, &t, &ht) && ht && t == 42);
    CHECK(s3_content_range_parse("bytes */*", NULL, NULL, &t, &ht) && !ht);
    const char *bad[] = {
        "bytes 5-14/10",
        "bytes 14-5/100",
        "bytes 5-14",
        "bytes -14/100",
        "bytes 5-/100",
        "bytes=5-14/100",
        "bytes  5-14/100",
        "bytes 5-14/100 ",
        "bytes 5-14/1x",
        "bytes */42",
        "bytes 99999999999999999999-1/2",
        "",
        "bytes ",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(!s3_content_range_parse(bad[i], &a, &z, &t, &ht));
    /* the unsatisfied form is only taken when asked for */
    CHECK(!s3_content_range_parse("bytes 5-14/100", NULL, NULL, &t, &ht));
    /* what the server formats, the client parses back */
    s3_content_range_format(b, sizeof b, 1u << 30, 4096, 1ull << 40);
    CHECK(s3_content_range_parse(b, &a, &z, &t, &ht) && a == 1u << 30 && z == (1u << 30) + 4095 &&
          t == 1ull << 40);
}

int main(void)
{
    RUN(test_valid);
    RUN(test_unsatisfiable);
    RUN(test_ignored);
    RUN(test_copy_range);
    RUN(test_content_range);
    return check_done();
}
