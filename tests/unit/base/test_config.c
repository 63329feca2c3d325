/* SPDX-License-Identifier: Apache-2.0 */
/* base's one-of-each helpers: the size parser, the error formatter, the environment reader. */
#include "base/defaults.h"
#include "base/env.h"
#include "base/status.h"
#include "base/util.h"
#include "check.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t size_of(const char *s, int *rc)
{
    uint64_t v = 0xdeadbeef;
    *rc = wh_parse_size(s, &v);
    return v;
}

static void test_size(void)
{
    static const struct {
        const char *in;
        uint64_t want;
    } ok[] = {
        {"0", 0},
        {"64", 64}, /* a bare number is bytes, everywhere */
        {"4096B", 4096},
        {"1K", 1024},
        {"1k", 1024},
        {"1KiB", 1024},
        {"1kib", 1024},
        {"1KB", 1024},
        {"64M", 64ull << 20},
        {"64MiB", 64ull << 20},
        {"256m", 256ull << 20},
        {"1G", 1ull << 30},
        {"5GiB", 5ull << 30},
        {"2T", 2ull << 40},
        {"18446744073709551615", UINT64_MAX},
        {"16777215T", 16777215ull << 40},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        int rc;
        uint64_t v = size_of(ok[i].in, &rc);
        CHECK(rc == 0);
        CHECK_EQ_U64(v, ok[i].want);
    }
    static const char *const bad[] = {
        "",
        "M",
        "-1",
        "+1",
        " 1",
        "1 ",
        "1.5M",
        "1X",
        "1MM",
        "1Mi",
        "1MiBs",
        "0x10",
        "18446744073709551616", /* 2^64 */
        "16777216T",            /* 2^64 after the shift */
        "17179869184G",
        "1e6",
        "1,5",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc;
        uint64_t v = size_of(bad[i], &rc);
        CHECK(rc == -1);
        CHECK_EQ_U64(v, 0xdeadbeef); /* untouched on failure */
        if (rc != -1)
            fprintf(stderr, "  accepted \"%s\"\n", bad[i]);
    }
    uint64_t v;
    CHECK(wh_parse_size(NULL, &v) == -1);
}

static void test_errf(void)
{
    char err[16];
    CHECK(wh_errf(WH_ERR_INVALID, err, sizeof err, "bad %s", "token") == WH_ERR_INVALID);
    CHECK_STR(err, "bad token");
    /* truncated, still terminated */
    CHECK(wh_errf(WH_ERR_IO, err, sizeof err, "%s", "0123456789abcdefghij") == WH_ERR_IO);
    CHECK_STR(err, "0123456789abcde");
    /* no buffer: only the status */
    CHECK(wh_errf(WH_ERR_AUTH, NULL, 0, "x %d", 1) == WH_ERR_AUTH);
    err[0] = 'q';
    CHECK(wh_errf(WH_OK, err, 0, "x") == WH_OK);
    CHECK(err[0] == 'q');
}

/* A fake environment: NAME=VALUE pairs. */
static const char *const *g_fake;
static const char *fake_get(const char *name)
{
    for (size_t i = 0; g_fake[i]; i += 2)
        if (strcmp(g_fake[i], name) == 0)
            return g_fake[i + 1];
    return NULL;
}

static void test_env(void)
{
    wh_env_t e;
    /* nothing set: every setting NULL, no source */
    static const char *const none[] = {NULL};
    g_fake = none;
    wh_env_read(&e, fake_get);
    for (int k = 0; k < WH_ENV_COUNT; k++) {
        CHECK(e.value[k] == NULL);
        CHECK(e.source[k] == NULL);
    }
    /* AWS only: the standard variables are used, the S3-specific endpoint first */
    static const char *const aws[] = {"AWS_ENDPOINT_URL",
                                      "http://generic:1",
                                      "AWS_ENDPOINT_URL_S3",
                                      "http://s3:2",
                                      "AWS_ACCESS_KEY_ID",
                                      "AKID",
                                      "AWS_SECRET_ACCESS_KEY",
                                      "SECRET",
                                      "AWS_DEFAULT_REGION",
                                      "eu-west-1",
                                      "AWS_REGION",
                                      "eu-central-1",
                                      NULL};
    g_fake = aws;
    wh_env_read(&e, fake_get);
    CHECK_STR(e.value[WH_ENV_ENDPOINT], "http://s3:2");
    CHECK_STR(e.source[WH_ENV_ENDPOINT], "AWS_ENDPOINT_URL_S3");
    CHECK_STR(e.value[WH_ENV_ACCESS_KEY], "AKID");
    CHECK_STR(e.value[WH_ENV_SECRET_KEY], "SECRET");
    CHECK_STR(e.value[WH_ENV_REGION], "eu-central-1"); /* AWS_REGION before the default one */
    CHECK_STR(e.source[WH_ENV_REGION], "AWS_REGION");
    /* WHARF_* win over AWS_*; an empty WHARF_* counts as unset */
    static const char *const both[] = {"WHARF_ENDPOINT",
                                       "http://wharf:9",
                                       "AWS_ENDPOINT_URL",
                                       "http://aws:1",
                                       "WHARF_ACCESS_KEY",
                                       "wk",
                                       "AWS_ACCESS_KEY_ID",
                                       "ak",
                                       "WHARF_SECRET_KEY",
                                       "",
                                       "AWS_SECRET_ACCESS_KEY",
                                       "as",
                                       "WHARF_REGION",
                                       "r1",
                                       "AWS_DEFAULT_REGION",
                                       "r2",
                                       "WHARF_PROVIDER",
                                       "ofi+tcp",
                                       "WHARF_UNIX_SOCKET",
                                       "/tmp/s.sock",
                                       NULL};
    g_fake = both;
    wh_env_read(&e, fake_get);
    CHECK_STR(e.value[WH_ENV_ENDPOINT], "http://wharf:9");
    CHECK_STR(e.source[WH_ENV_ENDPOINT], "WHARF_ENDPOINT");
    CHECK_STR(e.value[WH_ENV_ACCESS_KEY], "wk");
    CHECK_STR(e.value[WH_ENV_SECRET_KEY], "as");
    CHECK_STR(e.source[WH_ENV_SECRET_KEY], "AWS_SECRET_ACCESS_KEY");
    CHECK_STR(e.value[WH_ENV_REGION], "r1");
    CHECK_STR(e.value[WH_ENV_PROVIDER], "ofi+tcp");
    CHECK_STR(e.value[WH_ENV_UNIX_SOCKET], "/tmp/s.sock");
    CHECK_STR(wh_env_vars(WH_ENV_ACCESS_KEY), "WHARF_ACCESS_KEY or AWS_ACCESS_KEY_ID");
    /* the real environment goes through getenv */
    setenv("WHARF_REGION", "from-getenv", 1);
    wh_env_read(&e, NULL);
    CHECK_STR(e.value[WH_ENV_REGION], "from-getenv");
    unsetenv("WHARF_REGION");
}

static void test_defaults(void)
{
    /* the endpoint default is the listen default, spelled as a URL */
    char want[64];
    snprintf(want, sizeof want, "http://%s:%d", WH_DEFAULT_LISTEN_HOST, WH_DEFAULT_LISTEN_PORT);
    CHECK_STR(WH_DEFAULT_ENDPOINT, want);
    CHECK(WH_DEFAULT_PART_SIZE >= WH_MIN_PART_SIZE);
    CHECK(WH_DEFAULT_MULTIPART_THRESHOLD >= WH_DEFAULT_PART_SIZE);
}

int main(void)
{
    RUN(test_size);
    RUN(test_errf);
    RUN(test_env);
    RUN(test_defaults);
    return check_done();
}
