/* SPDX-License-Identifier: Apache-2.0 */
/* The console's session table, its cookie parser and its Origin rule (console/session.c). */
#include "check.h"
#include "console/console.h"

#include <stdlib.h>
#include <string.h>

#define SID_A "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define SID_B "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"

static void test_cookie(void)
{
    char sid[CONSOLE_SID_LEN + 1];
    CHECK(console_cookie_sid("wharf_console=" SID_A, sid));
    CHECK_STR(sid, SID_A);
    CHECK(console_cookie_sid("a=b; wharf_console=" SID_A "; c=d", sid));
    CHECK_STR(sid, SID_A);
    CHECK(console_cookie_sid("  flag;wharf_console = " SID_B " ", sid));
    CHECK_STR(sid, SID_B);
    /* the first pair of the name decides, even when a later one is well formed */
    CHECK(!console_cookie_sid("wharf_console=short; wharf_console=" SID_A, sid));
    CHECK(console_cookie_sid("wharf_console=" SID_A "; wharf_console=" SID_B, sid));
    CHECK_STR(sid, SID_A);
    /* not the name (a prefix, a suffix, another case), not the length, not lowercase hex */
    CHECK(!console_cookie_sid("xwharf_console=" SID_A, sid));
    CHECK(!console_cookie_sid("wharf_console_x=" SID_A, sid));
    CHECK(!console_cookie_sid("WHARF_CONSOLE=" SID_A, sid));
    CHECK(!console_cookie_sid("wharf_console=" SID_A "0", sid));
    CHECK(!console_cookie_sid(
        "wharf_console=0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789"
        "abcdef",
        sid));
    CHECK(!console_cookie_sid(
        "wharf_console=0123456789abcdeg0123456789abcdef0123456789abcdef012345678"
        "9abcdef",
        sid));
    CHECK(!console_cookie_sid("", sid) && sid[0] == '\0');
    CHECK(!console_cookie_sid(NULL, sid));
    CHECK(!console_cookie_sid(";;;", sid));
    CHECK(!console_cookie_sid("wharf_console", sid));
    CHECK(!console_cookie_sid("=" SID_A, sid));
}

static void test_origin(void)
{
    CHECK(console_origin_ok("http://127.0.0.1:9000", "127.0.0.1:9000", false));
    CHECK(console_origin_ok("HTTP://Example.COM", "example.com", false));
    CHECK(console_origin_ok("https://example.com:443", "example.com", true));
    CHECK(console_origin_ok("https://example.com", "example.com:443", true));
    CHECK(!console_origin_ok("https://127.0.0.1:9000", "127.0.0.1:9000", false)); /* scheme */
    CHECK(!console_origin_ok("http://127.0.0.1:9000", "127.0.0.1:9000", true));
    CHECK(!console_origin_ok("http://127.0.0.1:9001", "127.0.0.1:9000", false)); /* port */
    CHECK(!console_origin_ok("http://127.0.0.1:90", "127.0.0.1:9000", false));
    CHECK(!console_origin_ok("http://evil.example", "127.0.0.1:9000", false));
    CHECK(!console_origin_ok("http://127.0.0.1:9000.evil", "127.0.0.1:9000", false));
    CHECK(!console_origin_ok("null", "127.0.0.1:9000", false));
    CHECK(!console_origin_ok(NULL, "127.0.0.1:9000", false));
    CHECK(!console_origin_ok("http://127.0.0.1:9000", NULL, false));
    CHECK(!console_origin_ok("http://", "", false));
}

static auth_principal_t user(const char *name)
{
    auth_principal_t p;
    memset(&p, 0, sizeof p);
    p.kind = AUTH_PRINCIPAL_USER;
    snprintf(p.user, sizeof p.user, "%s", name);
    snprintf(p.access_key, sizeof p.access_key, "AK%s", name);
    return p;
}

static void test_sessions(void)
{
    console_sessions_t *t = console_sessions_new(3, 100, 10);
    CHECK(t != NULL);
    if (!t)
        return;
    auth_principal_t a = user("alice"), got;
    char sid[CONSOLE_SID_LEN + 1], csrf[CONSOLE_SID_LEN + 1], c2[CONSOLE_SID_LEN + 1];
    CHECK(console_session_create(t, &a, 1000, sid, csrf));
    CHECK(strlen(sid) == CONSOLE_SID_LEN && strlen(csrf) == CONSOLE_SID_LEN &&
          strcmp(sid, csrf) != 0);
    /* the id parses back from a cookie */
    char cookie[100], parsed[CONSOLE_SID_LEN + 1];
    snprintf(cookie, sizeof cookie, "%s=%s", CONSOLE_COOKIE, sid);
    CHECK(console_cookie_sid(cookie, parsed) && strcmp(parsed, sid) == 0);
    time_t exp = 0;
    memset(&got, 0, sizeof got);
    CHECK(console_session_get(t, sid, 1005, &got, c2, &exp));
    CHECK_STR(got.user, "alice");
    CHECK_STR(c2, csrf);
    CHECK(exp == 1100);
    /* an unknown id, a wrong-length one, NULL */
    CHECK(!console_session_get(t, SID_A, 1005, NULL, NULL, NULL));
    CHECK(!console_session_get(t, "abc", 1005, NULL, NULL, NULL));
    CHECK(!console_session_get(t, NULL, 1005, NULL, NULL, NULL));
    /* idle: 10 s after its last use (1005) it has ended, and is dropped */
    CHECK(console_session_get(t, sid, 1014, NULL, NULL, NULL));
    CHECK(!console_session_get(t, sid, 1024, NULL, NULL, NULL));
    CHECK(!console_session_get(t, sid, 1015, NULL, NULL, NULL));
    CHECK_EQ_U64(console_session_count(t), 0);
    /* lifetime: used every 5 s, it still ends 100 s after its creation */
    CHECK(console_session_create(t, &a, 2000, sid, csrf));
    bool alive = true;
    time_t now = 2000;
    for (; now < 2200 && alive; now += 5)
        alive = console_session_get(t, sid, now, NULL, NULL, NULL);
    CHECK(now - 5 == 2100);
    /* a clock that went back does not extend anything */
    CHECK(console_session_create(t, &a, 3000, sid, csrf));
    CHECK(!console_session_get(t, sid, 2990, NULL, NULL, NULL));
    /* bounded: a 4th session drops the least recently used */
    char s1[CONSOLE_SID_LEN + 1], s2[CONSOLE_SID_LEN + 1], s3[CONSOLE_SID_LEN + 1],
        s4[CONSOLE_SID_LEN + 1];
    CHECK(console_session_create(t, &a, 4000, s1, csrf));
    CHECK(console_session_create(t, &a, 4001, s2, csrf));
    CHECK(console_session_create(t, &a, 4002, s3, csrf));
    CHECK(console_session_get(t, s1, 4003, NULL, NULL, NULL)); /* s2 is now the least recent */
    CHECK(console_session_create(t, &a, 4004, s4, csrf));
    CHECK_EQ_U64(console_session_count(t), 3);
    CHECK(!console_session_get(t, s2, 4005, NULL, NULL, NULL));
    CHECK(console_session_get(t, s1, 4005, NULL, NULL, NULL));
    CHECK(console_session_get(t, s3, 4005, NULL, NULL, NULL));
    CHECK(console_session_get(t, s4, 4005, NULL, NULL, NULL));
    /* logout */
    CHECK(console_session_drop(t, s3));
    CHECK(!console_session_drop(t, s3));
    CHECK(!console_session_get(t, s3, 4006, NULL, NULL, NULL));
    CHECK_EQ_U64(console_session_count(t), 2);
    /* fresh ids each time */
    CHECK(strcmp(s1, s4) != 0 && strcmp(s1, s2) != 0);
    console_sessions_free(t);
    CHECK(console_sessions_new(0, 1, 1) == NULL);
}

static void test_str_eq(void)
{
    CHECK(console_str_eq("abc", "abc"));
    CHECK(console_str_eq("", ""));
    CHECK(!console_str_eq("abc", "abd"));
    CHECK(!console_str_eq("abc", "ab"));
    CHECK(!console_str_eq("", "a"));
}

int main(void)
{
    RUN(test_cookie);
    RUN(test_origin);
    RUN(test_sessions);
    RUN(test_str_eq);
    return check_done();
}
