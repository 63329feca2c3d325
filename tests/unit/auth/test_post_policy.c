/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of src/shared/auth/post_policy.c (the POST policy's expiration and conditions against a
 * form) and src/shared/auth/sigv4_post.c (the form's signature: the policy signed with the SigV4
 * key). */
#include "check.h"
#include "auth/post_policy.h"
#include "auth/sigv4.h"

#include <stdio.h>
#include <string.h>

static const auth_post_field_t g_fields[] = {
    {"key", "user/eric/photo.jpg"},
    {"Content-Type", "image/jpeg"},
    {"acl", "public-read"},
    {"x-amz-meta-tag", "1"},
    {"policy", "..."},
    {"x-amz-signature", "..."},
    {"x-ignore-note", "free"},
};
#define NF (sizeof g_fields / sizeof g_fields[0])

static const time_t NOW = 1700000000; /* 2023-11-14 */

static s3_err_t check(const char *conds, auth_post_range_t *range, char *msg)
{
    char doc[2048];
    snprintf(doc, sizeof doc,
             "{\"expiration\": \"2030-01-01T00:00:00.000Z\", "
             "\"conditions\": [%s]}",
             conds);
    return auth_post_policy_check(doc, strlen(doc), NOW, "johnsmith", g_fields, NF, range, msg,
                                  256);
}

#define ALL_BUT_META                                                                               \
    "{\"bucket\": \"johnsmith\"}, [\"starts-with\", \"$key\", \"user/eric/\"], "                   \
    "{\"acl\": \"public-read\"}, [\"eq\", \"$Content-Type\", \"image/jpeg\"]"

static void test_conditions(void)
{
    auth_post_range_t r;
    char msg[256];
    CHECK(check(ALL_BUT_META ", [\"starts-with\", \"$x-amz-meta-tag\", \"\"]", &r, msg) == S3_OK);
    CHECK(!r.set);
    /* A field no condition names. */
    CHECK(check(ALL_BUT_META, &r, msg) == S3_ERR_ACCESS_DENIED);
    CHECK(strstr(msg, "Extra input fields: x-amz-meta-tag") != NULL);
    /* Field names are case-insensitive; values are not. */
    CHECK(check(ALL_BUT_META ", {\"X-AMZ-META-TAG\": \"1\"}", &r, msg) == S3_OK);
    CHECK(check(ALL_BUT_META ", {\"x-amz-meta-tag\": \"2\"}", &r, msg) == S3_ERR_ACCESS_DENIED);
    CHECK(strstr(msg, "[\"eq\", \"$x-amz-meta-tag\", \"2\"]") != NULL);
    CHECK(check("{\"bucket\": \"other\"}", &r, msg) == S3_ERR_ACCESS_DENIED);
    CHECK(check("[\"starts-with\", \"$key\", \"user/bob/\"]", &r, msg) == S3_ERR_ACCESS_DENIED);
    CHECK(strstr(msg, "starts-with") != NULL);
    CHECK(check("[\"eq\", \"$Content-Type\", \"image/png\"]", &r, msg) == S3_ERR_ACCESS_DENIED);
    /* A condition on a field the form lacks sees "". */
    CHECK(check(ALL_BUT_META ", {\"x-amz-meta-tag\": \"1\"}, {\"success_action_status\": \"\"}", &r,
                msg) == S3_OK);
    CHECK(check(ALL_BUT_META ", {\"x-amz-meta-tag\": \"1\"}, {\"success_action_status\": \"201\"}",
                &r, msg) == S3_ERR_ACCESS_DENIED);
    /* content-length-range; two of them: both apply. */
    CHECK(check(ALL_BUT_META ", {\"x-amz-meta-tag\": \"1\"}, [\"content-length-range\", 1, 100]",
                &r, msg) == S3_OK);
    CHECK(r.set && r.min == 1 && r.max == 100);
    CHECK(check(ALL_BUT_META ", {\"x-amz-meta-tag\": \"1\"}, [\"content-length-range\", 1, 100],"
                             " [\"content-length-range\", \"5\", \"1000\"]",
                &r, msg) == S3_OK);
    CHECK(r.set && r.min == 5 && r.max == 100);
}

static void test_documents(void)
{
    auth_post_range_t r;
    char msg[256];
    static const char *const bad[] = {
        "not json",
        "[]",
        "{\"conditions\": []}",
        "{\"expiration\": \"tomorrow\", \"conditions\": []}",
        "{\"expiration\": \"2030-01-01T00:00:00\", \"conditions\": []}",
        "{\"expiration\": \"2030-01-01T00:00:00.Z\", \"conditions\": []}",
        "{\"expiration\": \"2030-01-01T00:00:00Z\"}",
        "{\"expiration\": \"2030-01-01T00:00:00Z\", \"conditions\": {}}",
        "{\"expiration\": \"2030-01-01T00:00:00Z\", \"conditions\": [[\"in\", \"$key\", \"a\"]]}",
        "{\"expiration\": \"2030-01-01T00:00:00Z\", \"conditions\": [[\"eq\", \"key\", \"a\"]]}",
        "{\"expiration\": \"2030-01-01T00:00:00Z\", \"conditions\": [[\"eq\", \"$key\"]]}",
        "{\"expiration\": \"2030-01-01T00:00:00Z\", \"conditions\": [{\"a\": \"1\", \"b\": "
        "\"2\"}]}",
        "{\"expiration\": \"2030-01-01T00:00:00Z\", \"conditions\": [{\"a\": 1}]}",
        "{\"expiration\": \"2030-01-01T00:00:00Z\", \"conditions\": [\"key\"]}",
        "{\"expiration\": \"2030-01-01T00:00:00Z\", \"conditions\": "
        "[[\"content-length-range\", 10, 1]]}",
        "{\"expiration\": \"2030-01-01T00:00:00Z\", \"conditions\": "
        "[[\"content-length-range\", -1, 1]]}",
        "{\"expiration\": \"2030-01-01T00:00:00Z\", \"expiration\": \"2030-01-01T00:00:00Z\", "
        "\"conditions\": []}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        msg[0] = '\0';
        s3_err_t e =
            auth_post_policy_check(bad[i], strlen(bad[i]), NOW, "b", NULL, 0, &r, msg, sizeof msg);
        CHECK(e == S3_ERR_INVALID_POLICY_DOCUMENT && msg[0]);
        if (e != S3_ERR_INVALID_POLICY_DOCUMENT)
            fprintf(stderr, "document %zu: %d %s\n", i, e, msg);
    }
    const char *old = "{\"expiration\": \"2020-01-01T00:00:00.000Z\", \"conditions\": []}";
    CHECK(auth_post_policy_check(old, strlen(old), NOW, "b", NULL, 0, &r, msg, sizeof msg) ==
          S3_ERR_ACCESS_DENIED);
    CHECK_STR(msg, "Invalid according to Policy: Policy expired.");
    const char *ok = "{\"expiration\": \"2030-01-01T00:00:00Z\", \"conditions\": []}";
    CHECK(auth_post_policy_check(ok, strlen(ok), NOW, "b", NULL, 0, &r, msg, sizeof msg) == S3_OK);
}

static const char *g_secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";

static const char *secret_cb(void *arg, const char *ak)
{
    (void)arg;
    return strcmp(ak, "AKIAIOSFODNN7EXAMPLE") == 0 ? g_secret : NULL;
}

static void test_signature(void)
{
    /* {"expiration": "2099-01-01T00:00:00Z", "conditions": []}, signed for 20151229 in
     * us-east-1; the value was computed with Python's hmac, independently of this code. */
    const char *pol =
        "eyJleHBpcmF0aW9uIjogIjIwOTktMDEtMDFUMDA6MDA6MDBaIiwgImNvbmRpdGlvbnMiOiBbXX0=";
    const char *want = "ce899a1bdfc8a6417a1ef2099dbbe6cb10bf103b2415454d27e67c2234bfe953";
    char sig[65];
    auth_sigv4_post_sign(g_secret, "20151229", "us-east-1", pol, sig);
    CHECK_STR(sig, want);
    auth_post_auth_t a = {"AWS4-HMAC-SHA256",
                          "AKIAIOSFODNN7EXAMPLE/20151229/us-east-1/s3/aws4_request",
                          "20151229T000000Z", want, pol};
    char ak[128], msg[256];
    CHECK(auth_sigv4_post_verify(&a, secret_cb, NULL, ak, msg, sizeof msg) == S3_OK);
    CHECK_STR(ak, "AKIAIOSFODNN7EXAMPLE");
    auth_post_auth_t t = a;
    t.policy_b64 = "eyJleHBpcmF0aW9uIjogIjIwOTktMDEtMDFUMDA6MDA6MDBaIn0=";
    CHECK(auth_sigv4_post_verify(&t, secret_cb, NULL, ak, msg, sizeof msg) ==
          S3_ERR_SIGNATURE_MISMATCH);
    t = a;
    t.signature = "ce899a";
    CHECK(auth_sigv4_post_verify(&t, secret_cb, NULL, ak, msg, sizeof msg) ==
          S3_ERR_SIGNATURE_MISMATCH);
    t = a;
    t.credential = "NOSUCH/20151229/us-east-1/s3/aws4_request";
    CHECK(auth_sigv4_post_verify(&t, secret_cb, NULL, ak, msg, sizeof msg) ==
          S3_ERR_INVALID_ACCESS_KEY);
    t = a;
    t.amz_date = "20151230T000000Z"; /* not the credential's day */
    CHECK(auth_sigv4_post_verify(&t, secret_cb, NULL, ak, msg, sizeof msg) ==
          S3_ERR_INVALID_ARGUMENT);
    t = a;
    t.credential = "AKIAIOSFODNN7EXAMPLE/20151229/us-east-1/iam/aws4_request";
    CHECK(auth_sigv4_post_verify(&t, secret_cb, NULL, ak, msg, sizeof msg) ==
          S3_ERR_INVALID_ARGUMENT);
    t = a;
    t.algorithm = "AWS4-HMAC-SHA512";
    CHECK(auth_sigv4_post_verify(&t, secret_cb, NULL, ak, msg, sizeof msg) ==
          S3_ERR_INVALID_ARGUMENT);
    t = a;
    t.signature = NULL;
    CHECK(auth_sigv4_post_verify(&t, secret_cb, NULL, ak, msg, sizeof msg) ==
          S3_ERR_INVALID_ARGUMENT);
}

int main(void)
{
    RUN(test_conditions);
    RUN(test_documents);
    RUN(test_signature);
    return check_done();
}
