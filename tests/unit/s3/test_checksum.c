/* SPDX-License-Identifier: Apache-2.0 */
/* S3 checksums (src/shared/s3/checksum.c): negotiation through headers and x-amz-trailer, claimed
 * values, trailers that must arrive, running digests against known values, comparisons. */
#include "check.h"
#include "base/codec.h"
#include "s3/checksum.h"

#include <string.h>
#include <strings.h>

typedef struct kv {
    const char *const *pairs; /* name, value, ..., NULL */
} kv_t;

static const char *kv_get(void *arg, const char *lname)
{
    const kv_t *k = arg;
    for (size_t i = 0; k->pairs && k->pairs[i]; i += 2)
        if (strcasecmp(k->pairs[i], lname) == 0)
            return k->pairs[i + 1];
    return NULL;
}

/* Known digests of "hello" (the S3 wire form: base64 of the big-endian value). */
#define HELLO_CRC32 "NhCmhg=="
#define HELLO_CRC32C "mnG7TA=="
#define HELLO_SHA1 "qvTGHdzF6KLavt4PO0gs2a6pQ00="
#define HELLO_SHA256 "LPJNul+wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ="

static void test_names(void)
{
    CHECK_STR(s3_sum_header(S3_SUM_CRC64NVME), "x-amz-checksum-crc64nvme");
    CHECK_STR(s3_sum_name(S3_SUM_SHA256), "SHA256");
    CHECK_EQ_U64(s3_sum_len(S3_SUM_CRC32C), 4);
    CHECK_EQ_U64(s3_sum_len(S3_SUM_CRC64NVME), 8);
    CHECK_EQ_U64(s3_sum_len(S3_SUM_SHA1), 20);
    CHECK_STR(s3_sum_header((s3_sum_t)99), "");
}

static void test_negotiation(void)
{
    static const char *const h1[] = {"x-amz-checksum-sha1", HELLO_SHA1, "x-amz-trailer",
                                     " X-Amz-Checksum-CRC32 ,x-amz-checksum-sha256", NULL};
    kv_t k = {h1};
    CHECK(s3_sum_named(kv_get, &k, S3_SUM_SHA1));  /* by header */
    CHECK(s3_sum_named(kv_get, &k, S3_SUM_CRC32)); /* by trailer, any case, spaces */
    CHECK(s3_sum_named(kv_get, &k, S3_SUM_SHA256));
    CHECK(!s3_sum_named(kv_get, &k, S3_SUM_CRC32C));
    CHECK(!s3_trailer_lists("x-amz-checksum-crc32c", "x-amz-checksum-crc32"));
    CHECK(!s3_trailer_lists(NULL, "x-amz-checksum-crc32"));
    CHECK(s3_trailer_lists(",,x-amz-checksum-crc32,", "x-amz-checksum-crc32"));

    static const char *const t1[] = {"x-amz-checksum-crc32", HELLO_CRC32, NULL};
    kv_t tk = {t1};
    char msg[200] = "";
    CHECK(s3_trailers_check("x-amz-checksum-crc32", kv_get, &tk, msg, sizeof msg) == S3_OK);
    CHECK(s3_trailers_check(NULL, kv_get, &tk, msg, sizeof msg) == S3_OK);
    CHECK(s3_trailers_check("x-amz-checksum-crc32, X-Amz-Checksum-SHA256", kv_get, &tk, msg,
                            sizeof msg) == S3_ERR_INCOMPLETE_BODY);
    CHECK(strstr(msg, "x-amz-checksum-sha256") != NULL);
}

static void test_read(void)
{
    /* The trailer wins over a header of the same name. */
    static const char *const h[] = {
        "content-md5", "XUFAKrxLKna5cZ2REBfFkg==", "x-amz-checksum-crc32c",
        HELLO_CRC32C,  "x-amz-checksum-sha256",    "AAAA",
        NULL};
    kv_t hk = {h};
    s3_sums_t w;
    char msg[200] = "";
    /* without the trailer, the header's sha256 (3 bytes) is refused, naming it */
    CHECK(s3_sums_read(kv_get, NULL, &hk, &w, msg, sizeof msg) == S3_ERR_INVALID_REQUEST);
    CHECK(strstr(msg, "x-amz-checksum-sha256") && strstr(msg, "32 bytes"));

    static const char *const h2[] = {
        "content-md5", "XUFAKrxLKna5cZ2REBfFkg==", "x-amz-checksum-crc32c", HELLO_CRC32C, NULL};
    kv_t hk2 = {h2};
    CHECK(s3_sums_read(kv_get, NULL, &hk2, &w, msg, sizeof msg) == S3_OK);
    CHECK(w.md5_set && w.set[S3_SUM_CRC32C] && !w.set[S3_SUM_SHA256]);
    CHECK_STR(w.b64[S3_SUM_CRC32C], HELLO_CRC32C);

    static const char *const bad_md5[] = {"content-md5", "AAAA", NULL};
    kv_t bk = {bad_md5};
    CHECK(s3_sums_read(kv_get, NULL, &bk, &w, msg, sizeof msg) == S3_ERR_INVALID_DIGEST);
    static const char *const bad_b64[] = {"x-amz-checksum-crc32", "NhCmhg=", NULL};
    kv_t b2 = {bad_b64};
    CHECK(s3_sums_read(kv_get, NULL, &b2, &w, msg, sizeof msg) == S3_ERR_INVALID_REQUEST);
    CHECK(strstr(msg, "x-amz-checksum-crc32 ") && strstr(msg, "4 bytes"));
}

static const char *trailer_only(void *arg, const char *lname)
{
    return strcmp(lname, "x-amz-checksum-sha256") == 0 ? HELLO_SHA256 : NULL;
}

static const char *header_bad_sha(void *arg, const char *lname)
{
    return strcmp(lname, "x-amz-checksum-sha256") == 0 ? "AAAA" : NULL;
}

static void test_trailer_first(void)
{
    s3_sums_t w;
    char msg[200] = "";
    CHECK(s3_sums_read(header_bad_sha, trailer_only, NULL, &w, msg, sizeof msg) == S3_OK);
    CHECK(w.set[S3_SUM_SHA256]);
    CHECK_STR(w.b64[S3_SUM_SHA256], HELLO_SHA256);
}

static void test_digests(void)
{
    bool on[S3_SUM__COUNT] = {true, true, true, true, true};
    s3_sum_ctx_t c;
    CHECK(s3_sum_ctx_init(&c, on) == 0);
    s3_sum_ctx_update(&c, "he", 2);
    s3_sum_ctx_update(&c, "llo", 3);
    uint8_t got[S3_SUM__COUNT][S3_SUM_MAX_LEN];
    s3_sum_ctx_final(&c, got);
    s3_sum_ctx_free(&c); /* after final: harmless */
    char b[S3_SUM_B64_LEN];
    wh_base64_encode(got[S3_SUM_CRC32], 4, b);
    CHECK_STR(b, HELLO_CRC32);
    wh_base64_encode(got[S3_SUM_CRC32C], 4, b);
    CHECK_STR(b, HELLO_CRC32C);
    wh_base64_encode(got[S3_SUM_SHA1], 20, b);
    CHECK_STR(b, HELLO_SHA1);
    wh_base64_encode(got[S3_SUM_SHA256], 32, b);
    CHECK_STR(b, HELLO_SHA256);

    /* compare: a match, a mismatch naming both values, nothing claimed */
    static const char *const h[] = {"x-amz-checksum-sha1", HELLO_SHA1, "x-amz-checksum-crc32",
                                    "AAAAAA==", NULL};
    kv_t k = {h};
    s3_sums_t w;
    char msg[240] = "";
    CHECK(s3_sums_read(kv_get, NULL, &k, &w, msg, sizeof msg) == S3_OK);
    CHECK(s3_sums_compare(&w, S3_SUM_SHA1, got[S3_SUM_SHA1], msg, sizeof msg) == S3_OK);
    CHECK(s3_sums_compare(&w, S3_SUM_SHA256, got[S3_SUM_SHA256], msg, sizeof msg) == S3_OK);
    CHECK(s3_sums_compare(&w, S3_SUM_CRC32, got[S3_SUM_CRC32], msg, sizeof msg) ==
          S3_ERR_BAD_DIGEST);
    CHECK(strstr(msg, "CRC32") && strstr(msg, "AAAAAA==") && strstr(msg, HELLO_CRC32));

    uint8_t md5[WH_MD5_LEN];
    wh_hex_decode("5d41402abc4b2a76b9719d911017c592", 32, md5, sizeof md5); /* md5("hello") */
    static const char *const hm[] = {"content-md5", "XUFAKrxLKna5cZ2REBfFkg==", NULL};
    kv_t km = {hm};
    CHECK(s3_sums_read(kv_get, NULL, &km, &w, msg, sizeof msg) == S3_OK);
    CHECK(s3_sums_compare_md5(&w, md5, msg, sizeof msg) == S3_OK);
    md5[0] ^= 1;
    CHECK(s3_sums_compare_md5(&w, md5, msg, sizeof msg) == S3_ERR_BAD_DIGEST);
    CHECK(strstr(msg, "5d41402abc4b2a76b9719d911017c592") != NULL);

    /* only what is switched on is computed */
    bool only[S3_SUM__COUNT] = {false};
    only[S3_SUM_CRC32] = true;
    CHECK(s3_sum_ctx_init(&c, only) == 0);
    s3_sum_ctx_update(&c, "hello", 5);
    s3_sum_ctx_final(&c, got);
    static const uint8_t zero[S3_SUM_MAX_LEN];
    CHECK(memcmp(got[S3_SUM_SHA256], zero, 32) == 0);
    wh_base64_encode(got[S3_SUM_CRC32], 4, b);
    CHECK_STR(b, HELLO_CRC32);

    uint8_t be[8];
    s3_sum_u64(0x0102030405060708ull, be);
    CHECK(be[0] == 1 && be[7] == 8);
}

int main(void)
{
    RUN(test_names);
    RUN(test_negotiation);
    RUN(test_read);
    RUN(test_trailer_first);
    RUN(test_digests);
    return check_done();
}
