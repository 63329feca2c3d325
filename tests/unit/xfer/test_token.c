/* SPDX-License-Identifier: Apache-2.0 */
/* token.c: both dialects, every field's error, edge sizes, the 115-character cuobj form. */
#include "check.h"
#include "xfer/token.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static char g_err[256];

static wh_status_t parse(const char *s, xfer_token_t *t)
{
    return xfer_token_parse(s, strlen(s), t, g_err, sizeof g_err);
}

/* Expects a failure with status st whose message contains want. */
static void expect_fail(const char *s, wh_status_t st, const char *want)
{
    xfer_token_t t;
    memset(&t, 0x5a, sizeof t);
    xfer_token_t before = t;
    wh_status_t got = parse(s, &t);
    CHECK_EQ_U64((uint64_t)(int64_t)got, (uint64_t)(int64_t)st);
    if (!strstr(g_err, want)) {
        fprintf(stderr, "  token \"%.80s\": message \"%s\" lacks \"%s\"\n", s, g_err, want);
        CHECK(!"error message names the field");
    } else
        CHECK(1);
    CHECK(memcmp(&t, &before, sizeof t) == 0); /* out untouched on failure */
}

static void test_ofi1_roundtrip(void)
{
    uint8_t ep[] = {0x66, 0x69, 0x5f, 0x73, 0x68, 0x6d, 0x00, 0xff};
    char buf[XFER_TOKEN_MAX_LEN + 1];
    xfer_token_t t;
    CHECK(xfer_token_pack_ofi1(0x7f0012345000ULL, 0x1000, "shm", ep, sizeof ep, 0xdeadbeefcafeULL,
                               buf, sizeof buf) == WH_OK);
    CHECK_STR(buf, "7f0012345000:1000:ofi1:shm:66695f73686d00ff:deadbeefcafe");
    CHECK(parse(buf, &t) == WH_OK);
    CHECK(t.dialect == XFER_TOKEN_DIALECT_OFI1);
    CHECK_EQ_U64(t.base, 0x7f0012345000ULL);
    CHECK_EQ_U64(t.size, 0x1000);
    CHECK_EQ_U64(t.key, 0xdeadbeefcafeULL);
    CHECK_STR(t.provider, "shm");
    CHECK_EQ_U64(t.ep_name_len, sizeof ep);
    CHECK(memcmp(t.ep_name, ep, sizeof ep) == 0);

    /* provider with ';', zero size, zero base, max key */
    CHECK(xfer_token_pack_ofi1(0, 0, "tcp;ofi_rxm", ep, 1, UINT64_MAX, buf, sizeof buf) == WH_OK);
    CHECK_STR(buf, "0:0:ofi1:tcp;ofi_rxm:66:ffffffffffffffff");
    CHECK(parse(buf, &t) == WH_OK);
    CHECK_EQ_U64(t.size, 0);
    CHECK_EQ_U64(t.key, UINT64_MAX);
    CHECK_STR(t.provider, "tcp;ofi_rxm");

    /* the largest region that does not wrap, and the longest ep name */
    uint8_t big[XFER_TOKEN_MAX_EP_NAME];
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (uint8_t)i;
    CHECK(xfer_token_pack_ofi1(1, UINT64_MAX - 1, "verbs;ofi_rxm", big, sizeof big, 1, buf,
                               sizeof buf) == WH_OK);
    CHECK(strlen(buf) <= XFER_TOKEN_MAX_LEN);
    CHECK(parse(buf, &t) == WH_OK);
    CHECK_EQ_U64(t.size, UINT64_MAX - 1);
    CHECK_EQ_U64(t.ep_name_len, XFER_TOKEN_MAX_EP_NAME);
    CHECK(memcmp(t.ep_name, big, sizeof big) == 0);

    /* leading zeros are fine (still lowercase hex of <= 16 digits) */
    CHECK(parse("0000000000001000:0010:ofi1:efa:00:01", &t) == WH_OK);
    CHECK_EQ_U64(t.base, 0x1000);
    CHECK_EQ_U64(t.size, 0x10);
}

static void test_ofi1_pack_rejects(void)
{
    char buf[XFER_TOKEN_MAX_LEN + 1], small[16];
    uint8_t ep[4] = {1, 2, 3, 4};
    CHECK(xfer_token_pack_ofi1(0, 1, "SHM", ep, 4, 1, buf, sizeof buf) == WH_ERR_INVALID);
    CHECK(xfer_token_pack_ofi1(0, 1, "a:b", ep, 4, 1, buf, sizeof buf) == WH_ERR_INVALID);
    CHECK(xfer_token_pack_ofi1(0, 1, "", ep, 4, 1, buf, sizeof buf) == WH_ERR_INVALID);
    CHECK(xfer_token_pack_ofi1(0, 1, "shm", ep, 0, 1, buf, sizeof buf) == WH_ERR_INVALID);
    CHECK(xfer_token_pack_ofi1(0, 1, "shm", ep, XFER_TOKEN_MAX_EP_NAME + 1, 1, buf, sizeof buf) ==
          WH_ERR_INVALID);
    CHECK(xfer_token_pack_ofi1(2, UINT64_MAX, "shm", ep, 4, 1, buf, sizeof buf) == WH_ERR_INVALID);
    CHECK(xfer_token_pack_ofi1(0, 1, "shm", ep, 4, 1, small, sizeof small) == WH_ERR_INVALID);
    char p32[33];
    memset(p32, 'a', 32);
    p32[32] = 0;
    CHECK(xfer_token_pack_ofi1(0, 1, p32, ep, 4, 1, buf, sizeof buf) == WH_ERR_INVALID);
}

static void test_ofi1_field_errors(void)
{
    expect_fail("", WH_ERR_INVALID, "empty");
    expect_fail(":1:ofi1:shm:00:1", WH_ERR_INVALID, "'base': empty");
    expect_fail("1000X:1:ofi1:shm:00:1", WH_ERR_INVALID, "'base': not hex");
    expect_fail("0x1000:1:ofi1:shm:00:1", WH_ERR_INVALID, "'base': not hex");
    expect_fail("ABC:1:ofi1:shm:00:1", WH_ERR_INVALID, "'base': not lowercase hex");
    expect_fail("10000000000000000:1:ofi1:shm:00:1", WH_ERR_INVALID,
                "'base': more than 16 hex digits");
    expect_fail("0:-1:ofi1:shm:00:1", WH_ERR_INVALID, "'size': not hex");
    expect_fail("0::ofi1:shm:00:1", WH_ERR_INVALID, "'size': empty");
    expect_fail("0:1F:ofi1:shm:00:1", WH_ERR_INVALID, "'size': not lowercase hex");
    expect_fail("2:ffffffffffffffff:ofi1:shm:00:1", WH_ERR_INVALID, "'size': base 0x2");
    expect_fail("0:1:ofi1::00:1", WH_ERR_INVALID, "'provider'");
    expect_fail("0:1:ofi1:Shm:00:1", WH_ERR_INVALID, "'provider'");
    expect_fail("0:1:ofi1:s m:00:1", WH_ERR_INVALID, "'provider'");
    expect_fail("0:1:ofi1:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa:00:1", WH_ERR_INVALID, "'provider'");
    expect_fail("0:1:ofi1:shm::1", WH_ERR_INVALID, "'ep-name'");
    expect_fail("0:1:ofi1:shm:0:1", WH_ERR_INVALID, "'ep-name': must be an even");
    expect_fail("0:1:ofi1:shm:abc:1", WH_ERR_INVALID, "'ep-name': must be an even");
    expect_fail("0:1:ofi1:shm:0g:1", WH_ERR_INVALID, "'ep-name': not hex");
    expect_fail("0:1:ofi1:shm:AB:1", WH_ERR_INVALID, "'ep-name': not lowercase hex");
    expect_fail("0:1:ofi1:shm:00:", WH_ERR_INVALID, "'key': empty");
    expect_fail("0:1:ofi1:shm:00:z", WH_ERR_INVALID, "'key': not hex");
    expect_fail("0:1:ofi1:shm:00:12345678901234567", WH_ERR_INVALID,
                "'key': more than 16 hex digits");
    expect_fail("0:1:ofi1:shm:00", WH_ERR_INVALID, "ofi1 has 6 fields");
    expect_fail("0:1:ofi1:shm:00:1:2", WH_ERR_INVALID, "ofi1 has 6 fields");
    /* ep-name one byte over the limit */
    char buf[XFER_TOKEN_MAX_LEN + 64];
    int n = snprintf(buf, sizeof buf, "0:1:ofi1:shm:");
    for (int i = 0; i < 2 * XFER_TOKEN_MAX_EP_NAME + 2; i++)
        buf[n++] = 'a';
    snprintf(buf + n, sizeof buf - (size_t)n, ":1");
    expect_fail(buf, WH_ERR_INVALID, "'ep-name'");
    /* overall length */
    memset(buf, 'a', XFER_TOKEN_MAX_LEN + 1);
    buf[XFER_TOKEN_MAX_LEN + 1] = 0;
    expect_fail(buf, WH_ERR_INVALID, "longer than");
    /* not NUL-terminated: parse honours len */
    xfer_token_t t;
    const char *s = "10:20:ofi1:shm:00:1GARBAGE";
    CHECK(xfer_token_parse(s, strlen("10:20:ofi1:shm:00:1"), &t, g_err, sizeof g_err) == WH_OK);
    CHECK_EQ_U64(t.key, 1);
    /* embedded NUL */
    const char nul[] = "10:20:ofi1:shm:00:1\0";
    CHECK(xfer_token_parse(nul, sizeof nul - 1, &t, g_err, sizeof g_err) == WH_ERR_INVALID);
}

static void test_dialects(void)
{
    expect_fail("0:1:ofi2:shm:00:1", WH_ERR_UNSUPPORTED, "unknown token dialect 'ofi2'");
    expect_fail("0:1:ucx1:whatever", WH_ERR_UNSUPPORTED, "unknown token dialect 'ucx1'");
    expect_fail("0:1:\r\nX-Evil: 1", WH_ERR_INVALID, "not a known dialect");
    expect_fail("garbage", WH_ERR_INVALID, "not a known dialect");
    expect_fail("a:b", WH_ERR_INVALID, "not a known dialect");
    expect_fail(":::::::::::", WH_ERR_INVALID, "fields");
    expect_fail("0:1:2:3:4:5:6", WH_ERR_INVALID, "'addr': wrong width");
    expect_fail("0:1:ofi1:shm:00:1:2:3:4", WH_ERR_INVALID, "ofi1 has 6 fields");
}

#define CU_ADDR "00007f1234560000"
#define CU_GID "fe800000000000000211223344556677"
#define CU_OK CU_ADDR ":00100000:0badcafe:0001:00abcd:1:" CU_GID

static void test_cuobj(void)
{
    xfer_token_t t, u;
    char out[82];
    CHECK_EQ_U64(strlen(CU_OK), 81);
    CHECK(parse(CU_OK, &t) == WH_OK);
    CHECK(t.dialect == XFER_TOKEN_DIALECT_CUOBJ);
    CHECK_EQ_U64(t.base, 0x7f1234560000ULL);
    CHECK_EQ_U64(t.size, 0x100000);
    CHECK_EQ_U64(t.key, 0x0badcafe);
    CHECK_EQ_U64(t.lid, 1);
    CHECK_EQ_U64(t.dctn, 0xabcd);
    CHECK_EQ_U64(t.gid_present, 1);
    CHECK_EQ_U64(t.gid[0], 0xfe);
    CHECK_EQ_U64(t.gid[15], 0x77);
    CHECK(xfer_token_pack_cuobj(&t, out) == WH_OK);
    CHECK_STR(out, CU_OK);
    CHECK(parse(out, &u) == WH_OK);
    CHECK(memcmp(&t, &u, sizeof t) == 0);

    /* edges: all-zero, all-max */
    CHECK(parse("0000000000000000:00000000:00000000:0000:000000:0:"
                "00000000000000000000000000000000",
                &t) == WH_OK);
    CHECK_EQ_U64(t.size, 0);
    CHECK(parse("0000000000000000:ffffffff:ffffffff:ffff:ffffff:1:"
                "ffffffffffffffffffffffffffffffff",
                &t) == WH_OK);
    CHECK_EQ_U64(t.size, 0xffffffff);
    CHECK_EQ_U64(t.dctn, 0xffffff);
    CHECK(xfer_token_pack_cuobj(&t, out) == WH_OK);

    /* pack rejects what cannot be represented */
    t.size = 1ULL << 32;
    CHECK(xfer_token_pack_cuobj(&t, out) == WH_ERR_INVALID);
    t.size = 1;
    t.dctn = 1u << 24;
    CHECK(xfer_token_pack_cuobj(&t, out) == WH_ERR_INVALID);
    t.dctn = 1;
    t.gid_present = 2;
    CHECK(xfer_token_pack_cuobj(&t, out) == WH_ERR_INVALID);
}

static void test_cuobj_errors(void)
{
    /* The older 115-character form, explicitly. */
    const char *old = CU_OK ":00007f1234560000:0000000000100000";
    CHECK_EQ_U64(strlen(old), 115);
    expect_fail(old, WH_ERR_INVALID, "115-character");
    expect_fail(old, WH_ERR_INVALID, "81-character form");

    expect_fail(CU_ADDR ":00100000:0badcafe:0001:00abcd:1", WH_ERR_INVALID, "7 fields");
    expect_fail(CU_ADDR ":00100000:0badcafe:001:00abcd:1:" CU_GID, WH_ERR_INVALID,
                "'lid': wrong width");
    expect_fail(CU_ADDR ":00100000:0badcafe:000g:00abcd:1:" CU_GID, WH_ERR_INVALID,
                "'lid': not hex");
    expect_fail(CU_ADDR ":00100000:0badcafe:0001:0abcd:1:" CU_GID, WH_ERR_INVALID,
                "'dctn': wrong width");
    expect_fail(CU_ADDR ":00100000:0badcafe:0001:00ABCD:1:" CU_GID, WH_ERR_INVALID,
                "'dctn': not lowercase hex");
    expect_fail(CU_ADDR ":00100000:0badcafe:0001:00abcd:2:" CU_GID, WH_ERR_INVALID,
                "'gid_present': must be 0 or 1");
    expect_fail(CU_ADDR ":00100000:0badcafe:0001:00abcd:01:" CU_GID, WH_ERR_INVALID,
                "'gid_present': wrong width");
    expect_fail(CU_ADDR ":00100000:0badcafe:0001:00abcd:1:" CU_GID "0", WH_ERR_INVALID,
                "'gid': wrong width");
    expect_fail(CU_ADDR ":00100000:0badcafe:0001:00abcd:1:FE800000000000000211223344556677",
                WH_ERR_INVALID, "'gid': not lowercase hex");
    expect_fail("00007F1234560000:00100000:0badcafe:0001:00abcd:1:" CU_GID, WH_ERR_INVALID,
                "'addr': not lowercase hex");
    expect_fail(CU_ADDR ":0010000G:0badcafe:0001:00abcd:1:" CU_GID, WH_ERR_INVALID,
                "'size': not hex");
    expect_fail(CU_ADDR ":00100000:0BADCAFE:0001:00abcd:1:" CU_GID, WH_ERR_INVALID,
                "'rkey': not lowercase hex");
    expect_fail("ffffffffffffffff:00100000:0badcafe:0001:00abcd:1:" CU_GID, WH_ERR_INVALID,
                "'size': addr + size wraps");
}

int main(void)
{
    RUN(test_ofi1_roundtrip);
    RUN(test_ofi1_pack_rejects);
    RUN(test_ofi1_field_errors);
    RUN(test_dialects);
    RUN(test_cuobj);
    RUN(test_cuobj_errors);
    return check_done();
}
