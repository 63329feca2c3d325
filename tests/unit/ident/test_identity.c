/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of ident/identity.c and base/seal.c: sealing secrets, the server key file, users and
 * keys made with their generated ids, the SigV4 lookup (Active, Inactive, deleted, a wrong
 * server key), and what that lookup costs per request (printed: the hot path of every request
 * a user signs). */
#include "base/codec.h"
#include "base/log.h"
#include "base/seal.h"
#include "base/util.h"
#include "check.h"
#include "ident/identity.h"

#include <ftw.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int rm_cb(const char *p, const struct stat *sb, int f, struct FTW *w)
{
    (void)sb, (void)f, (void)w;
    return remove(p);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void test_seal(void)
{
    uint8_t k1[32], k2[32];
    memset(k1, 7, sizeof k1);
    memset(k2, 8, sizeof k2);
    char text[WH_SEAL_TEXT_LEN(40)], out[64];
    const char *secret = "abcdefghijABCDEFGHIJ0123456789+/abcdefgh";
    CHECK(wh_seal(k1, "AKIA1", secret, 40, text, sizeof text) == 0);
    CHECK(strncmp(text, "g1:", 3) == 0);
    CHECK(strstr(text, "abcdefghij") == NULL);
    size_t n = 0;
    CHECK(wh_unseal(k1, "AKIA1", text, out, sizeof out, &n) == 0);
    CHECK_EQ_U64(n, 40);
    CHECK_STR(out, secret);
    CHECK(wh_unseal(k2, "AKIA1", text, out, sizeof out, &n) == -1); /* wrong key */
    CHECK(wh_unseal(k1, "AKIA2", text, out, sizeof out, &n) == -1); /* moved to another id */
    char bad[sizeof text];
    memcpy(bad, text, sizeof text);
    bad[10] = bad[10] == 'A' ? 'B' : 'A'; /* one flipped character */
    CHECK(wh_unseal(k1, "AKIA1", bad, out, sizeof out, &n) == -1);
    CHECK(wh_unseal(k1, "AKIA1", "plain", out, sizeof out, &n) == -1);
    CHECK(wh_unseal(k1, "AKIA1", "g1:", out, sizeof out, &n) == -1);
    CHECK(wh_unseal(k1, "AKIA1", text, out, 10, &n) == -1); /* short buffer */
    char text2[sizeof text];
    CHECK(wh_seal(k1, "AKIA1", secret, 40, text2, sizeof text2) == 0);
    CHECK(strcmp(text, text2) != 0); /* a fresh nonce each time */
    CHECK(wh_seal(k1, "AKIA1", secret, 40, text2, 10) == -1);
}

static void test_users_keys_lookup(void)
{
    char dir[] = "/tmp/wh-ident-test-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char db[256], kf[256];
    snprintf(db, sizeof db, "%s/meta.db", dir);
    snprintf(kf, sizeof kf, "%s/server.key", dir);
    meta_t *m = NULL;
    CHECK(meta_sqlite_open(db, &m) == WH_OK);
    meta_set_durable(m, false);
    ident_config_t cfg = {.meta = m,
                          .key_file = kf,
                          .create_key = true,
                          .account_id = "123456789012",
                          .root_access_key = "rootkey"};
    ident_t *id = NULL;
    CHECK(ident_open(&cfg, &id) == WH_OK);
    struct stat sb;
    CHECK(stat(kf, &sb) == 0 && (sb.st_mode & 0777) == 0600);

    meta_user_t u;
    CHECK(ident_user_create(id, "alice", &u) == WH_OK);
    CHECK(strncmp(u.user_id, "AIDA", 4) == 0 && strlen(u.user_id) == 21);
    CHECK(strlen(u.canonical_id) == 64);
    CHECK(ident_user_create(id, "alice", NULL) == WH_ERR_EXISTS);
    CHECK(ident_user_create(id, "bad name", NULL) == WH_ERR_INVALID);
    CHECK(ident_user_create(id, "", NULL) == WH_ERR_INVALID);

    meta_access_key_t k;
    char secret[IDENT_SECRET_MAX + 1], msg[200];
    CHECK(ident_key_create(id, "alice", NULL, NULL, &k, secret, msg, sizeof msg) == WH_OK);
    CHECK(strncmp(k.access_key, "AKIA", 4) == 0 && strlen(k.access_key) == 20);
    CHECK_EQ_U64(strlen(secret), 40);
    CHECK(strstr(k.secret_sealed, secret) == NULL);
    CHECK(ident_key_create(id, "nobody", NULL, NULL, &k, secret, msg, sizeof msg) ==
          WH_ERR_NOT_FOUND);
    CHECK(ident_key_create(id, "alice", "short", "longenoughsecret", &k, secret, msg, sizeof msg) ==
          WH_ERR_INVALID);
    CHECK(strstr(msg, "16 to 128") != NULL);
    CHECK(ident_key_create(id, "alice", "AKIAGIVEN0000000001", "has space", &k, secret, msg,
                           sizeof msg) == WH_ERR_INVALID);
    CHECK(ident_key_create(id, "alice", "rootkeyrootkeyroot", "secret-of-given", &k, secret, msg,
                           sizeof msg) == WH_OK);
    CHECK(ident_key_create(id, "alice", "AKIAGIVEN0000000001", "secret-of-given", &k, secret, msg,
                           sizeof msg) == WH_OK);
    CHECK(ident_key_create(id, "alice", "AKIAGIVEN0000000001", "secret-of-given", &k, secret, msg,
                           sizeof msg) == WH_ERR_EXISTS);

    auth_principal_t who;
    char got[IDENT_SECRET_MAX + 1];
    CHECK(ident_lookup(id, "AKIAGIVEN0000000001", got, sizeof got, &who) == WH_OK);
    CHECK_STR(got, "secret-of-given");
    CHECK(who.kind == AUTH_PRINCIPAL_USER);
    CHECK_STR(who.user, "alice");
    CHECK_STR(who.canonical_id, u.canonical_id);
    CHECK_STR(who.arn, "arn:aws:iam::123456789012:user/alice");
    CHECK_STR(who.access_key, "AKIAGIVEN0000000001");
    CHECK(ident_lookup(id, "AKIANOSUCHKEY000000", got, sizeof got, &who) == WH_ERR_NOT_FOUND);

    /* The lookup on every request a user signs: one indexed query and one AES-GCM open. */
    enum { N = 20000 };
    double t0 = now_s();
    int ok = 0;
    for (int i = 0; i < N; i++)
        ok += ident_lookup(id, "AKIAGIVEN0000000001", got, sizeof got, &who) == WH_OK;
    double per = (now_s() - t0) / N * 1e6;
    CHECK(ok == N);
    t0 = now_s();
    for (int i = 0; i < N; i++)
        ident_root(id, "rootkey", &who);
    double root_per = (now_s() - t0) / N * 1e6;
    CHECK(who.kind == AUTH_PRINCIPAL_ROOT);
    CHECK_STR(who.arn, "arn:aws:iam::123456789012:root");
    printf("measure: user key lookup %.2f us (SQLite, %d lookups), root %.3f us\n", per, N,
           root_per);

    /* Inactive and deleted keys fail at the next lookup. */
    CHECK(meta_key_set_active(m, "AKIAGIVEN0000000001", false) == WH_OK);
    CHECK(ident_lookup(id, "AKIAGIVEN0000000001", got, sizeof got, &who) == WH_ERR_NOT_FOUND);
    CHECK(meta_key_set_active(m, "AKIAGIVEN0000000001", true) == WH_OK);
    CHECK(ident_lookup(id, "AKIAGIVEN0000000001", got, sizeof got, &who) == WH_OK);
    CHECK(meta_key_delete(m, "AKIAGIVEN0000000001") == WH_OK);
    CHECK(ident_lookup(id, "AKIAGIVEN0000000001", got, sizeof got, &who) == WH_ERR_NOT_FOUND);
    ident_close(id);

    /* The key file is reused, not replaced; a different key cannot open the secrets. */
    id = NULL;
    CHECK(ident_open(&cfg, &id) == WH_OK);
    CHECK(ident_lookup(id, "rootkeyrootkeyroot", got, sizeof got, &who) == WH_OK);
    CHECK_STR(got, "secret-of-given");
    ident_close(id);
    FILE *f = fopen(kf, "w");
    fprintf(f, "%064d\n", 1);
    fclose(f);
    id = NULL;
    CHECK(ident_open(&cfg, &id) == WH_OK);
    CHECK(ident_lookup(id, "rootkeyrootkeyroot", got, sizeof got, &who) == WH_ERR_INTERNAL);
    ident_close(id);
    f = fopen(kf, "w");
    fprintf(f, "not hex\n");
    fclose(f);
    id = NULL;
    CHECK(ident_open(&cfg, &id) == WH_ERR_INVALID);
    /* No key file at all: users' keys are refused, root still works. */
    ident_config_t nokey = {.meta = m, .root_access_key = "rootkey"};
    id = NULL;
    CHECK(ident_open(&nokey, &id) == WH_OK);
    CHECK(!ident_has_key(id));
    CHECK(ident_lookup(id, "rootkeyrootkeyroot", got, sizeof got, &who) == WH_ERR_NOT_FOUND);
    CHECK(ident_key_create(id, "alice", NULL, NULL, &k, secret, msg, sizeof msg) ==
          WH_ERR_UNSUPPORTED);
    ident_close(id);
    /* An explicit key file that does not exist is an error (not made up silently). */
    ident_config_t missing = {.meta = m, .key_file = "/nonexistent/wharf.key"};
    id = NULL;
    CHECK(ident_open(&missing, &id) == WH_ERR_NOT_FOUND);
    meta_close(m);
    nftw(dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

static void test_names(void)
{
    CHECK(ident_name_valid("a", 64));
    CHECK(ident_name_valid("Alice+Ops=1,x.y@z_w-v", 64));
    CHECK(!ident_name_valid("with space", 64));
    CHECK(!ident_name_valid("slash/no", 64));
    char longname[70];
    memset(longname, 'a', 65);
    longname[65] = '\0';
    CHECK(!ident_name_valid(longname, 64));
    longname[64] = '\0';
    CHECK(ident_name_valid(longname, 64));
    CHECK(ident_ak_invalid("AKIA0123456789AB") == NULL);
    CHECK(ident_ak_invalid("AKIA-0123456789AB") != NULL);
    CHECK(ident_sk_invalid("12345678") == NULL);
    CHECK(ident_sk_invalid("1234567") != NULL);
    CHECK(ident_sk_invalid("tab\there!") != NULL);
}

/* User policies may grant the IAM API's actions on IAM user ARNs; bucket policies may not. */
static void test_iam_actions_in_policies(void)
{
    const char *doc = "{\"Statement\":[{\"Effect\":\"Allow\",\"Action\":\"iam:Create*\","
                      "\"Resource\":\"arn:aws:iam::123456789012:user/team-*\"}]}";
    auth_policy_t *pol = NULL;
    char msg[200] = "";
    CHECK(auth_policy_parse_user(doc, strlen(doc), &pol, msg, sizeof msg) == S3_OK);
    auth_principal_t who = {.kind = AUTH_PRINCIPAL_USER, .user = "boss"};
    auth_authz_ctx_t ctx = {.who = &who,
                            .account = "123456789012",
                            .action = "iam:CreateUser",
                            .resource = "arn:aws:iam::123456789012:user/team-a"};
    CHECK(pol && auth_policy_eval(pol, &ctx) == AUTH_POLICY_ALLOW);
    ctx.resource = "arn:aws:iam::123456789012:user/other";
    CHECK(pol && auth_policy_eval(pol, &ctx) == AUTH_POLICY_NO_MATCH);
    ctx.resource = "arn:aws:iam::123456789012:user/team-a";
    ctx.action = "iam:DeleteUser";
    CHECK(pol && auth_policy_eval(pol, &ctx) == AUTH_POLICY_NO_MATCH);
    auth_policy_free(pol);
    const char *bucket = "{\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":\"*\","
                         "\"Action\":\"iam:CreateUser\",\"Resource\":\"*\"}]}";
    pol = NULL;
    CHECK(auth_policy_parse(bucket, strlen(bucket), &pol, msg, sizeof msg) != S3_OK);
    CHECK(strstr(msg, "invalid action") != NULL);
    auth_policy_free(pol);
}

int main(void)
{
    wh_log_set_level(WH_LOG_ERROR + 0);
    RUN(test_seal);
    RUN(test_names);
    RUN(test_users_keys_lookup);
    RUN(test_iam_actions_in_policies);
    return check_done();
}
