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
    CHECK(ok("bytes=-1000", 100, 0, 100)); /* suffix longer than the object: all of it */
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
        "", "bytes", "bytes=", "bytes=-", "bytes=a-b", "bytes=1-a", "bytes=5-4",
        "bytes=0-1,3-4", "bytes=0-1, 3-4", "bytes=0-1,", "items=0-1", "bytes:0-1", "0-1",
        "bytes=+1-2", "bytes=1--2", "bytes=- 5", "bytes=1 -2", "bytes=0x10-0x20",
        "bytes=1-2 junk", "bytesx=1-2", "bytes=-1-2",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(res(bad[i], 100, S3_RANGE_IGNORE));
    CHECK(res(NULL, 100, S3_RANGE_IGNORE));
    /* garbage is ignored even for an empty object: a 200 of nothing, never a 416 */
    CHECK(res("bytes=0-1,3-4", 0, S3_RANGE_IGNORE));
}

int main(void)
{
    RUN(test_valid);
    RUN(test_unsatisfiable);
    RUN(test_ignored);
    return check_done();
}
