/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of src/server/cluster/rdec.c: the description of a degraded RDMA read round-trips (shards
 * to be read and not), every malformed body is refused naming the line and field, and the
 * order a rebuilding server reads shards in (its own, then data, then parity). */
#include "check.h"
#include "cluster/rdec.h"

#include <stdio.h>
#include <string.h>

static cl_rdec_t sample(void)
{
    cl_rdec_t d;
    memset(&d, 0, sizeof d);
    d.k = 4;
    d.m = 2;
    d.len = 262151;
    for (unsigned i = 0; i < 6; i++) {
        snprintf(d.shard[i].chunk, sizeof d.shard[i].chunk, "%031x%x", 0xabcdefu, i);
        d.shard[i].crc = 0x0123456789abcdefULL + i;
        if (i != 1) {
            d.shard[i].node = 10 + i;
            snprintf(d.shard[i].addr, sizeof d.shard[i].addr, "127.0.0.1:91%02u", i);
        }
    }
    return d;
}

static void test_round_trip(void)
{
    cl_rdec_t d = sample(), e;
    char body[CL_RDEC_BODY_MAX], err[256] = "";
    size_t n = cl_rdec_format(&d, body, sizeof body, err, sizeof err);
    CHECK(n > 0 && n == strlen(body));
    CHECK(strncmp(body, "rdec1 4 2 262151\n", 17) == 0);
    CHECK(strstr(body, "\n1 ") && strstr(body, " 0 -\n"));
    CHECK(cl_rdec_parse(body, n, &e, err, sizeof err) == WH_OK);
    CHECK(e.k == 4 && e.m == 2 && e.len == d.len);
    for (unsigned i = 0; i < 6; i++) {
        CHECK_STR(e.shard[i].chunk, d.shard[i].chunk);
        CHECK(e.shard[i].crc == d.shard[i].crc && e.shard[i].node == d.shard[i].node);
        CHECK_STR(e.shard[i].addr, d.shard[i].addr);
    }
    CHECK_EQ_U64(cl_rdec_readable(&e), 5);
    /* too small a buffer, a bad layout, a bad address: refused, named */
    CHECK(cl_rdec_format(&d, body, 40, err, sizeof err) == 0 && strstr(err, "fit"));
    cl_rdec_t b = d;
    b.m = 0;
    CHECK(cl_rdec_format(&b, body, sizeof body, err, sizeof err) == 0 && strstr(err, "4+0"));
    b = d;
    snprintf(b.shard[2].addr, sizeof b.shard[2].addr, "a b");
    CHECK(cl_rdec_format(&b, body, sizeof body, err, sizeof err) == 0 &&
          strstr(err, "shard 2: address"));
}

static void test_malformed(void)
{
    static const char *const C = "0123456789abcdef0123456789abcdef";
    char ok2[512];
    snprintf(ok2, sizeof ok2,
             "rdec1 1 1 10\n0 %s 0000000000000001 3 h:1\n1 %s 0000000000000002 0 -\n", C, C);
    cl_rdec_t d;
    char err[256];
    CHECK(cl_rdec_parse(ok2, strlen(ok2), &d, err, sizeof err) == WH_OK);
    CHECK(d.k == 1 && d.m == 1 && d.shard[0].node == 3 && !d.shard[1].addr[0]);
    static const struct {
        const char *s, *what;
    } bad[] = {
        {"", "line 1"},
        {"rdec2 1 1 10\n", "line 1"},
        {"rdec1 1 1 10", "line 1"},
        {"rdec1 0 1 10\n", "K+M"},
        {"rdec1 12 5 10\n", "K+M"},
        {"rdec1 1 1 x\n", "LEN"},
        {"rdec1 1 1 10\n", "line 2"},
        {"rdec1 1 1 10\n1 0123456789abcdef0123456789abcdef 0000000000000001 3 h:1\n",
         "line 2: IDX"},
        {"rdec1 1 1 10\n0 0123456789ABCDEF0123456789abcdef 0000000000000001 3 h:1\n",
         "line 2: CHUNK"},
        {"rdec1 1 1 10\n0 0123456789abcdef0123456789abcdef 00000001 3 h:1\n", "line 2: CRC"},
        {"rdec1 1 1 10\n0 0123456789abcdef0123456789abcdef 0000000000000001 x h:1\n",
         "line 2: NODE"},
        {"rdec1 1 1 10\n0 0123456789abcdef0123456789abcdef 0000000000000001 3 h:1 z\n", "line 2"},
        {"rdec1 1 1 10\n0 0123456789abcdef0123456789abcdef 0000000000000001 3 h:1\n", "line 3"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        CHECK(cl_rdec_parse(bad[i].s, strlen(bad[i].s), &d, err, sizeof err) == WH_ERR_INVALID);
        if (!strstr(err, bad[i].what))
            fprintf(stderr, "case %zu: '%s' does not name '%s'\n", i, err, bad[i].what);
        CHECK(strstr(err, bad[i].what) != NULL);
    }
    /* bytes after the last shard line */
    char extra[600];
    snprintf(extra, sizeof extra, "%sjunk\n", ok2);
    CHECK(cl_rdec_parse(extra, strlen(extra), &d, err, sizeof err) == WH_ERR_INVALID &&
          strstr(err, "after"));
}

static void test_order(void)
{
    cl_rdec_t d = sample(); /* shard 1 not to be read */
    bool local[CL_EC_MAX] = {0};
    unsigned o[CL_EC_MAX];
    local[4] = true; /* this server holds parity shard 4 */
    CHECK_EQ_U64(cl_rdec_order(&d, local, o), 5);
    CHECK(o[0] == 4 && o[1] == 0 && o[2] == 2 && o[3] == 3 && o[4] == 5);
    /* a shard on this disk is read even when the list has no server for it */
    memset(local, 0, sizeof local);
    local[1] = true;
    CHECK_EQ_U64(cl_rdec_order(&d, local, o), 6);
    CHECK(o[0] == 1 && o[1] == 0);
}

int main(void)
{
    RUN(test_round_trip);
    RUN(test_malformed);
    RUN(test_order);
    return check_done();
}
