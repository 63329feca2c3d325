/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of src/server/cluster/itoken.c: sign/verify round trip, and every way a token is refused:
 * wrong key, a changed field, expiry, too long a life, malformed fields, op/mtok mismatch. */
#include "check.h"
#include "cluster/itoken.h"

#include <stdio.h>
#include <string.h>

static const char KEY[] = "cluster-secret";
#define K KEY, strlen(KEY)

#define SHA "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

static cl_itoken_t sample(cl_op_t op)
{
    cl_itoken_t t;
    memset(&t, 0, sizeof t);
    t.op = op;
    memcpy(t.chunk, "0123456789abcdef0123456789abcdef", 33);
    t.off = 0x1000;
    t.len = 0x800000;
    t.expires = 1700000060;
    snprintf(t.peer.addr, sizeof t.peer.addr, "127.0.0.1:40000");
    t.peer.uid = (uid_t)-1;
    snprintf(t.target, sizeof t.target, "10.0.0.5:9100");
    if (op == CL_OP_PUT) {
        t.has_crc = true;
        t.crc = 0x0123456789abcdefULL;
    }
    if (op == CL_OP_RGET || op == CL_OP_RPUT) {
        t.peer.is_unix = true;
        snprintf(t.peer.addr, sizeof t.peer.addr, "unix");
        t.peer.pid = 4242;
        t.peer.uid = 1000;
        snprintf(t.mtok, sizeof t.mtok, "7f0000001000:800000:ofi1:shm:0a0b0c:1f");
    }
    if (op == CL_OP_PUSH)
        snprintf(t.mtok, sizeof t.mtok, "00112233445566ff@10.0.0.7:9101");
    if (op == CL_OP_CPUT)
        snprintf(t.mtok, sizeof t.mtok, "00112233445566ff");
    if (op == CL_OP_RDEC || op == CL_OP_RENC)
        snprintf(t.mtok, sizeof t.mtok, "%s@%s", SHA, "7f0000001000:800000:ofi1:tcp:0a0b0c:1f");
    return t;
}

static void test_round_trip(void)
{
    for (int op = CL_OP_GET; op <= CL_OP_LAST; op++) {
        cl_itoken_t t = sample((cl_op_t)op), u;
        char s[CL_ITOKEN_MAX], err[256] = "";
        CHECK(cl_itoken_sign(K, &t, s, sizeof s, err, sizeof err) == WH_OK);
        CHECK(cl_itoken_verify(K, s, strlen(s), 1700000000, &u, err, sizeof err) == WH_OK);
        CHECK(u.op == t.op && u.off == t.off && u.len == t.len && u.expires == t.expires);
        CHECK_STR(u.chunk, t.chunk);
        CHECK_STR(u.peer.addr, t.peer.addr);
        CHECK_STR(u.mtok, t.mtok);
        CHECK(u.peer.is_unix == t.peer.is_unix && u.peer.pid == t.peer.pid &&
              u.peer.uid == t.peer.uid);
        CHECK_STR(u.target, "10.0.0.5:9100");
        CHECK(u.has_crc == t.has_crc && u.crc == t.crc);
        CHECK(strlen(u.nonce) == 16);
    }
}

/* Bound to a target, to the chunk's crc for a put, and admitted once: a replay of the same
 * token and one for another server are refused; two signings of one token differ. */
static void test_single_use_and_target(void)
{
    cl_itoken_t t = sample(CL_OP_PUT), u;
    char s[CL_ITOKEN_MAX], s2[CL_ITOKEN_MAX], err[256] = "";
    CHECK(cl_itoken_sign(K, &t, s, sizeof s, err, sizeof err) == WH_OK);
    CHECK(cl_itoken_sign(K, &t, s2, sizeof s2, err, sizeof err) == WH_OK);
    CHECK(strcmp(s, s2) != 0); /* a fresh nonce each */
    CHECK(cl_itoken_verify(K, s, strlen(s), 1700000000, &u, err, sizeof err) == WH_OK);
    cl_replay_t *rc = cl_replay_new(4);
    CHECK(rc != NULL);
    CHECK(cl_itoken_admit(rc, &u, "10.0.0.6:9100", 1700000000, err, sizeof err) == WH_ERR_AUTH);
    CHECK(strstr(err, "not this one") != NULL);
    CHECK(cl_itoken_admit(rc, &u, "10.0.0.5:9100", 1700000000, err, sizeof err) == WH_OK);
    CHECK(cl_itoken_admit(rc, &u, "10.0.0.5:9100", 1700000001, err, sizeof err) == WH_ERR_AUTH);
    CHECK(strstr(err, "replay") != NULL);
    /* full of unexpired tokens: refused, not forgotten; expired ones make room */
    for (int i = 0; i < 3; i++) {
        CHECK(cl_itoken_sign(K, &t, s2, sizeof s2, err, sizeof err) == WH_OK);
        CHECK(cl_itoken_verify(K, s2, strlen(s2), 1700000000, &u, err, sizeof err) == WH_OK);
        CHECK(cl_itoken_admit(rc, &u, "10.0.0.5:9100", 1700000000, err, sizeof err) == WH_OK);
    }
    CHECK(cl_itoken_sign(K, &t, s2, sizeof s2, err, sizeof err) == WH_OK);
    CHECK(cl_itoken_verify(K, s2, strlen(s2), 1700000000, &u, err, sizeof err) == WH_OK);
    CHECK(cl_itoken_admit(rc, &u, "10.0.0.5:9100", 1700000000, err, sizeof err) == WH_ERR_BUSY);
    CHECK(cl_replay_count(rc) == 4);
    CHECK(cl_itoken_admit(rc, &u, "10.0.0.5:9100", 1700000061, err, sizeof err) == WH_OK);
    CHECK(cl_replay_count(rc) <= 4);
    cl_replay_free(rc);
    /* a put without the chunk's crc is refused by the signer */
    t.has_crc = false;
    CHECK(cl_itoken_sign(K, &t, s, sizeof s, err, sizeof err) == WH_ERR_INVALID);
    CHECK(strstr(err, "crc") != NULL);
    t = sample(CL_OP_GET);
    t.target[0] = '\0';
    CHECK(cl_itoken_sign(K, &t, s, sizeof s, err, sizeof err) == WH_ERR_INVALID);
    CHECK(strstr(err, "target") != NULL);
}

static void test_refusals(void)
{
    cl_itoken_t t = sample(CL_OP_RGET), u;
    char s[CL_ITOKEN_MAX], m[CL_ITOKEN_MAX], err[256];
    CHECK(cl_itoken_sign(K, &t, s, sizeof s, err, sizeof err) == WH_OK);
    /* another key */
    CHECK(cl_itoken_verify("other", 5, s, strlen(s), 1700000000, &u, err, sizeof err) ==
          WH_ERR_AUTH);
    CHECK(strstr(err, "signature") != NULL);
    /* expired, and valid too far ahead */
    CHECK(cl_itoken_verify(K, s, strlen(s), 1700000061, &u, err, sizeof err) == WH_ERR_AUTH);
    CHECK(strstr(err, "expired") != NULL);
    CHECK(cl_itoken_verify(K, s, strlen(s), 1700000060 - CL_ITOKEN_MAX_LIFE - 1, &u, err,
                           sizeof err) == WH_ERR_AUTH);
    /* every single-byte change of the signed part is caught */
    size_t n = strlen(s), caught = 0, tried = 0;
    for (size_t i = 0; i + 65 < n; i++) {
        memcpy(m, s, n + 1);
        m[i] = m[i] == '1' ? '2' : '1';
        tried++;
        caught += cl_itoken_verify(K, m, n, 1700000000, &u, err, sizeof err) != WH_OK;
    }
    CHECK_EQ_U64(caught, tried);
    /* a widened range with the old MAC */
    cl_itoken_t w = t;
    w.len = 0x1000000;
    char s2[CL_ITOKEN_MAX];
    CHECK(cl_itoken_sign(K, &w, s2, sizeof s2, err, sizeof err) == WH_OK);
    memcpy(m, s2, strlen(s2) - 64);
    memcpy(m + strlen(s2) - 64, s + strlen(s) - 64, 65);
    CHECK(cl_itoken_verify(K, m, strlen(m), 1700000000, &u, err, sizeof err) == WH_ERR_AUTH);
    /* truncated */
    CHECK(cl_itoken_verify(K, s, n - 1, 1700000000, &u, err, sizeof err) == WH_ERR_INVALID);
    CHECK(strstr(err, "mac") != NULL);
}

static void test_malformed(void)
{
    static const struct {
        const char *s, *field;
    } bad[] = {
        {"", "fields"},
        {"wit2|get|0123456789abcdef0123456789abcdef|0|10|1700000060|tcp|a|0|0|-", "fields"},
        {"wit2|get|0123456789abcdef0123456789abcdef|0|10|1700000060|tcp|a|0|0|-|x|y", "fields"},
        {"wit9|get|0123456789abcdef0123456789abcdef|0|10|1700000060|tcp|a|0|0|-|-|t|"
         "0123456789abcdef|"
         "0000000000000000000000000000000000000000000000000000000000000000",
         "version"},
        {"wit2|cat|0123456789abcdef0123456789abcdef|0|10|1700000060|tcp|a|0|0|-|-|t|"
         "0123456789abcdef|"
         "0000000000000000000000000000000000000000000000000000000000000000",
         "op"},
        {"wit2|get|0123456789ABCDEF0123456789abcdef|0|10|1700000060|tcp|a|0|0|-|-|t|"
         "0123456789abcdef|"
         "0000000000000000000000000000000000000000000000000000000000000000",
         "chunk"},
        {"wit2|get|0123456789abcdef0123456789abcdef|x|10|1700000060|tcp|a|0|0|-|-|t|"
         "0123456789abcdef|"
         "0000000000000000000000000000000000000000000000000000000000000000",
         "off"},
        {"wit2|get|0123456789abcdef0123456789abcdef|ffffffffffffffff|10|1700000060|tcp|a|0|"
         "0|-|-|t|0123456789abcdef|"
         "0000000000000000000000000000000000000000000000000000000000000000",
         "overflow"},
        {"wit2|get|0123456789abcdef0123456789abcdef|0|10|-5|tcp|a|0|0|-|-|t|0123456789abcdef|"
         "0000000000000000000000000000000000000000000000000000000000000000",
         "exp"},
        {"wit2|get|0123456789abcdef0123456789abcdef|0|10|1700000060|udp|a|0|0|-|-|t|"
         "0123456789abcdef|"
         "0000000000000000000000000000000000000000000000000000000000000000",
         "peer"},
        {"wit2|get|0123456789abcdef0123456789abcdef|0|10|1700000060|tcp||0|0|-|-|t|"
         "0123456789abcdef|"
         "0000000000000000000000000000000000000000000000000000000000000000",
         "addr"},
        {"wit2|get|0123456789abcdef0123456789abcdef|0|10|1700000060|tcp|a|0|0|1:2:ofi1|-|t|"
         "0123456789abcdef|"
         "0000000000000000000000000000000000000000000000000000000000000000",
         "mtok"},
        {"wit2|rget|0123456789abcdef0123456789abcdef|0|10|1700000060|tcp|a|0|0|-|-|t|"
         "0123456789abcdef|"
         "0000000000000000000000000000000000000000000000000000000000000000",
         "mtok"},
        {"wit2|get|0123456789abcdef0123456789abcdef|0|10|1700000060|tcp|a|0|0|-|-|t|"
         "0123456789abcdef|"
         "000000000000000000000000000000000000000000000000000000000000000g",
         "mac"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cl_itoken_t u;
        char err[256] = "";
        wh_status_t st =
            cl_itoken_verify(K, bad[i].s, strlen(bad[i].s), 1700000000, &u, err, sizeof err);
        CHECK(st == WH_ERR_INVALID);
        if (!strstr(err, bad[i].field))
            fprintf(stderr, "case %zu: '%s' does not name '%s'\n", i, err, bad[i].field);
        CHECK(strstr(err, bad[i].field) != NULL);
    }
}

/* push and cput carry the chunk map's crc (and push its target): both parsed, and a token
 * without them, or with a malformed one, is refused by the signer and the parser alike. */
static void test_copy_args(void)
{
    char s[CL_ITOKEN_MAX], err[256], addr[256];
    uint64_t crc = 0;
    cl_itoken_t t = sample(CL_OP_PUSH), u;
    CHECK(cl_itoken_sign(K, &t, s, sizeof s, err, sizeof err) == WH_OK);
    CHECK(cl_itoken_verify(K, s, strlen(s), 1700000000, &u, err, sizeof err) == WH_OK);
    CHECK(cl_itoken_copy_args(&u, &crc, addr, sizeof addr));
    CHECK(crc == 0x00112233445566ffULL);
    CHECK_STR(addr, "10.0.0.7:9101");
    t = sample(CL_OP_CPUT);
    CHECK(cl_itoken_sign(K, &t, s, sizeof s, err, sizeof err) == WH_OK);
    CHECK(cl_itoken_verify(K, s, strlen(s), 1700000000, &u, err, sizeof err) == WH_OK);
    CHECK(cl_itoken_copy_args(&u, &crc, NULL, 0) && crc == 0x00112233445566ffULL);
    CHECK(!cl_itoken_copy_args(&(cl_itoken_t){.op = CL_OP_GET}, &crc, NULL, 0));
    static const char *const bad_push[] = {"",
                                           "00112233445566ff",
                                           "00112233445566ff@",
                                           "0011223344556@10.0.0.7:9101",
                                           "00112233445566FF@10.0.0.7:9101",
                                           "00112233445566ffx10.0.0.7:9101"};
    for (size_t i = 0; i < sizeof bad_push / sizeof bad_push[0]; i++) {
        t = sample(CL_OP_PUSH);
        snprintf(t.mtok, sizeof t.mtok, "%s", bad_push[i]);
        CHECK(cl_itoken_sign(K, &t, s, sizeof s, err, sizeof err) == WH_ERR_INVALID);
        CHECK(strstr(err, "mtok") != NULL);
        /* the same text signed by hand reaches the parser, which refuses it too */
        char raw[CL_ITOKEN_MAX];
        snprintf(raw, sizeof raw,
                 "wit2|push|0123456789abcdef0123456789abcdef|0|10|1700000060|tcp|a|0|0|%s|-|t|"
                 "0123456789abcdef|"
                 "0000000000000000000000000000000000000000000000000000000000000000",
                 bad_push[i][0] ? bad_push[i] : "-");
        CHECK(cl_itoken_verify(K, raw, strlen(raw), 1700000000, &u, err, sizeof err) ==
              WH_ERR_INVALID);
        CHECK(strstr(err, "mtok") != NULL);
    }
    t = sample(CL_OP_CPUT);
    snprintf(t.mtok, sizeof t.mtok, "00112233445566ff@10.0.0.7:9101");
    CHECK(cl_itoken_sign(K, &t, s, sizeof s, err, sizeof err) == WH_ERR_INVALID);
}

/* rdec (and renc) carries the SHA-256 of its body and the memory token: both parsed; a token
 * without them, or malformed, is refused by the signer and the parser alike, naming mtok. */
static void test_rdec_args(void)
{
    char s[CL_ITOKEN_MAX], err[256], sha[65];
    const char *mtok = NULL;
    cl_itoken_t t = sample(CL_OP_RDEC), u;
    CHECK(cl_itoken_sign(K, &t, s, sizeof s, err, sizeof err) == WH_OK);
    CHECK(strncmp(s, "wit2|rdec|", 10) == 0);
    CHECK(cl_itoken_verify(K, s, strlen(s), 1700000000, &u, err, sizeof err) == WH_OK);
    CHECK(cl_itoken_rdec_args(&u, sha, &mtok));
    CHECK_STR(sha, SHA);
    CHECK_STR(mtok, "7f0000001000:800000:ofi1:tcp:0a0b0c:1f");
    CHECK(!cl_itoken_rdec_args(&(cl_itoken_t){.op = CL_OP_RGET}, sha, &mtok));
    t = sample(CL_OP_RENC); /* renc carries the same */
    CHECK(cl_itoken_sign(K, &t, s, sizeof s, err, sizeof err) == WH_OK);
    CHECK(strncmp(s, "wit2|renc|", 10) == 0);
    CHECK(cl_itoken_verify(K, s, strlen(s), 1700000000, &u, err, sizeof err) == WH_OK);
    CHECK(cl_itoken_rdec_args(&u, sha, &mtok) && strcmp(sha, SHA) == 0);
    static const char *const bad[] = {
        "",
        "7f0000001000:800000:ofi1:tcp:0a0b0c:1f",
        SHA,
        SHA "@",
        "E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855@1:2:ofi1:tcp:0a:1f",
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b85@1:2:ofi1:tcp:0a:1f"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        t = sample(CL_OP_RDEC);
        snprintf(t.mtok, sizeof t.mtok, "%s", bad[i]);
        err[0] = '\0';
        CHECK(cl_itoken_sign(K, &t, s, sizeof s, err, sizeof err) == WH_ERR_INVALID);
        CHECK(strstr(err, "mtok") != NULL);
        char raw[CL_ITOKEN_MAX];
        snprintf(raw, sizeof raw,
                 "wit2|rdec|0123456789abcdef0123456789abcdef|0|10|1700000060|tcp|a|0|0|%s|-|t|"
                 "0123456789abcdef|"
                 "0000000000000000000000000000000000000000000000000000000000000000",
                 bad[i][0] ? bad[i] : "-");
        err[0] = '\0';
        CHECK(cl_itoken_verify(K, raw, strlen(raw), 1700000000, &u, err, sizeof err) ==
              WH_ERR_INVALID);
        CHECK(strstr(err, "mtok") != NULL);
    }
}

static void test_sign_refuses(void)
{
    char s[CL_ITOKEN_MAX], err[256];
    cl_itoken_t t = sample(CL_OP_GET);
    snprintf(t.peer.addr, sizeof t.peer.addr, "a|b");
    CHECK(cl_itoken_sign(K, &t, s, sizeof s, err, sizeof err) == WH_ERR_INVALID);
    t = sample(CL_OP_RPUT);
    t.mtok[0] = '\0';
    CHECK(cl_itoken_sign(K, &t, s, sizeof s, err, sizeof err) == WH_ERR_INVALID);
    t = sample(CL_OP_GET);
    CHECK(cl_itoken_sign(K, &t, s, 40, err, sizeof err) == WH_ERR_INVALID);
    char id[33];
    CHECK(cl_chunk_id_new(id) == WH_OK && cl_chunk_id_valid(id, strlen(id)));
}

int main(void)
{
    RUN(test_round_trip);
    RUN(test_refusals);
    RUN(test_malformed);
    RUN(test_copy_args);
    RUN(test_rdec_args);
    RUN(test_sign_refuses);
    RUN(test_single_use_and_target);
    return check_done();
}
