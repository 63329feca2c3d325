/* SPDX-License-Identifier: Apache-2.0 */
/* Authorization engine: policies parse as AWS documents them (and every fault is named),
 * evaluate with AWS's semantics (Deny wins, Not* inversions, condition operators on every key
 * wharf supplies, IfExists and missing keys), ACLs in all their forms round-trip, and the
 * decision follows AWS's order. */
#include "check.h"
#include "auth/authz.h"

#include <stdlib.h>

#define ACCT "000000000000"
#define ID_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define ID_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define ID_C "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"

static auth_principal_t user(const char *name, const char *id)
{
    auth_principal_t p;
    memset(&p, 0, sizeof p);
    p.kind = AUTH_PRINCIPAL_USER;
    snprintf(p.user, sizeof p.user, "%s", name);
    snprintf(p.canonical_id, sizeof p.canonical_id, "%s", id);
    snprintf(p.arn, sizeof p.arn, "arn:aws:iam::" ACCT ":user/%s", name);
    return p;
}

static auth_policy_t *parse(const char *j, char *msg)
{
    auth_policy_t *p = NULL;
    s3_err_t e = auth_policy_parse(j, strlen(j), &p, msg, 256);
    if (e != S3_OK) {
        fprintf(stderr, "parse failed: %s\n", msg);
        return NULL;
    }
    return p;
}

static bool parse_fails(const char *j, const char *want_in_msg)
{
    auth_policy_t *p = NULL;
    char msg[256] = "";
    s3_err_t e = auth_policy_parse(j, strlen(j), &p, msg, sizeof msg);
    auth_policy_free(p);
    if (e != S3_ERR_MALFORMED_POLICY || !strstr(msg, want_in_msg)) {
        fprintf(stderr, "  want MalformedPolicy with \"%s\", got %d \"%s\"\n", want_in_msg, e, msg);
        return false;
    }
    return true;
}

static auth_authz_ctx_t ctx(const auth_principal_t *who, const char *action, const char *res)
{
    auth_authz_ctx_t c;
    memset(&c, 0, sizeof c);
    c.who = who;
    c.account = ACCT;
    c.action = action;
    c.resource = res;
    auth_ip_parse("10.1.2.3", &c.source_ip);
    return c;
}

static void test_glob(void)
{
    CHECK(auth_glob("*", "", false));
    CHECK(auth_glob("s3:Get*", "s3:GetObject", false));
    CHECK(!auth_glob("s3:Get*", "s3:PutObject", false));
    CHECK(auth_glob("s3:get*", "s3:GetObject", true));
    CHECK(!auth_glob("s3:get*", "s3:GetObject", false));
    CHECK(auth_glob("a?c", "abc", false));
    CHECK(!auth_glob("a?c", "ac", false));
    CHECK(auth_glob("arn:aws:s3:::b/*/x*y", "arn:aws:s3:::b/p/q/xzzy", false));
    CHECK(!auth_glob("arn:aws:s3:::b/*/x*y", "arn:aws:s3:::b/p/q/xzzyz", false));
    CHECK(auth_glob("**a**", "bab", false));
    /* Backtracking stays bounded on the classic bad case. */
    char s[4001];
    memset(s, 'a', 4000);
    s[4000] = '\0';
    CHECK(!auth_glob("*a*a*a*a*a*a*a*a*b", s, false));
}

static void test_parse_errors(void)
{
    CHECK(parse_fails("", "empty"));
    CHECK(parse_fails("{", "not valid JSON"));
    CHECK(parse_fails("[]", "must be a JSON object"));
    CHECK(parse_fails("{\"Version\":\"2012-10-17\"}", "missing required field Statement"));
    CHECK(parse_fails("{\"Version\":\"2019\",\"Statement\":[]}", "Version must be"));
    CHECK(parse_fails("{\"Statement\":[]}", "Statement is an empty array"));
    CHECK(parse_fails("{\"Statement\":{},\"Foo\":1}", "unknown field \"Foo\""));
    CHECK(parse_fails("{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":"
                      "\"s3:GetObject\"}}",
                      "Statement 1: missing required field Resource"));
    CHECK(parse_fails("{\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":"
                      "\"s3:GetObject\",\"Resource\":\"*\"},{\"Effect\":\"Permit\"}]}",
                      "Statement 2: Effect must be"));
    CHECK(parse_fails("{\"Statement\":{\"Effect\":\"Allow\",\"Action\":\"s3:GetObject\","
                      "\"Resource\":\"*\"}}",
                      "missing required field Principal"));
    CHECK(parse_fails("{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"x\",\"Action\":"
                      "\"s3:GetObject\",\"Resource\":\"*\"}}",
                      "Invalid principal"));
    CHECK(parse_fails("{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":{\"AWS\":"
                      "\"arn:aws:iam::12:user/x\"},\"Action\":\"s3:GetObject\",\"Resource\":"
                      "\"*\"}}",
                      "Invalid principal"));
    CHECK(parse_fails("{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":{\"Federated\":"
                      "\"x\"},\"Action\":\"s3:GetObject\",\"Resource\":\"*\"}}",
                      "unsupported principal type \"Federated\""));
    CHECK(parse_fails("{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":{\"Service\":"
                      "\"Bad Name\"},\"Action\":\"s3:GetObject\",\"Resource\":\"*\"}}",
                      "Invalid principal in policy: Service"));
    CHECK(parse_fails("{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":"
                      "\"ec2:Run\",\"Resource\":\"*\"}}",
                      "invalid action \"ec2:Run\""));
    CHECK(parse_fails("{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":"
                      "[],\"Resource\":\"*\"}}",
                      "Action is an empty array"));
    CHECK(parse_fails("{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":"
                      "\"s3:*\",\"Resource\":\"arn:aws:iam::x\"}}",
                      "invalid resource"));
    CHECK(parse_fails("{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":"
                      "\"s3:*\",\"Resource\":\"*\",\"Condition\":{\"StringEqualz\":{\"s3:prefix\":"
                      "\"a\"}}}}",
                      "unknown condition operator \"StringEqualz\""));
    CHECK(parse_fails("{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":"
                      "\"s3:*\",\"Resource\":\"*\",\"Condition\":{\"IpAddress\":{"
                      "\"aws:SourceIp\":\"10.0.0.0/33\"}}}}",
                      "not an IP address or CIDR block"));
    CHECK(parse_fails("{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":"
                      "\"s3:*\",\"Resource\":\"*\",\"Condition\":{\"NumericLessThan\":{"
                      "\"s3:max-keys\":\"ten\"}}}}",
                      "\"ten\" is not a number"));
    CHECK(parse_fails("{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":"
                      "\"s3:*\",\"Resource\":\"*\",\"Condition\":{\"Bool\":{"
                      "\"aws:SecureTransport\":\"yes\"}}}}",
                      "not true or false"));
    CHECK(parse_fails("{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":"
                      "\"s3:*\",\"NotAction\":\"s3:x\",\"Resource\":\"*\"}}",
                      "Action and NotAction together"));
    CHECK(parse_fails("{\"Statement\":{},\"Statement\":{}}", "not valid JSON"));
    /* The 20 KiB cap. */
    size_t big = AUTH_POLICY_MAX_BYTES + 1;
    char *b = malloc(big + 1);
    memset(b, ' ', big);
    b[0] = '{', b[big - 1] = '}', b[big] = '\0';
    CHECK(parse_fails(b, "maximum allowed document size"));
    free(b);
    /* A user policy names no Principal. */
    auth_policy_t *p = NULL;
    char msg[256];
    const char *u = "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:*\","
                    "\"Resource\":\"*\"}}";
    CHECK(auth_policy_parse_user(u, strlen(u), &p, msg, sizeof msg) == S3_ERR_MALFORMED_POLICY);
    CHECK(strstr(msg, "cannot name a Principal") != NULL);
}

static void test_eval_basic(void)
{
    char msg[256];
    auth_policy_t *p = parse(
        "{\"Version\":\"2012-10-17\",\"Statement\":["
        "{\"Sid\":\"pub\",\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\","
        "\"Resource\":\"arn:aws:s3:::b/pub/*\"},"
        "{\"Effect\":\"Allow\",\"Principal\":{\"AWS\":[\"arn:aws:iam::" ACCT ":user/bob\"]},"
        "\"Action\":[\"s3:Get*\",\"s3:List*\"],\"Resource\":[\"arn:aws:s3:::b\","
        "\"arn:aws:s3:::b/*\"]},"
        "{\"Effect\":\"Deny\",\"Principal\":{\"AWS\":\"*\"},\"Action\":\"s3:*\","
        "\"Resource\":\"arn:aws:s3:::b/secret/*\"}]}",
        msg);
    CHECK(p != NULL);
    if (!p)
        return;
    auth_principal_t anon, bob = user("bob", ID_B), carol = user("carol", ID_C);
    auth_principal_anon(&anon);
    auth_authz_ctx_t c = ctx(&anon, "s3:GetObject", "arn:aws:s3:::b/pub/x");
    CHECK(auth_policy_eval(p, &c) == AUTH_POLICY_ALLOW);
    c.resource = "arn:aws:s3:::b/priv/x";
    CHECK(auth_policy_eval(p, &c) == AUTH_POLICY_NO_MATCH);
    c.who = &bob;
    CHECK(auth_policy_eval(p, &c) == AUTH_POLICY_ALLOW);
    c.action = "s3:PutObject";
    CHECK(auth_policy_eval(p, &c) == AUTH_POLICY_NO_MATCH);
    c.action = "s3:listbucket"; /* actions are case-insensitive */
    c.resource = "arn:aws:s3:::b";
    CHECK(auth_policy_eval(p, &c) == AUTH_POLICY_ALLOW);
    c.who = &carol;
    CHECK(auth_policy_eval(p, &c) == AUTH_POLICY_NO_MATCH);
    /* The Deny wins over both Allows. */
    c.who = &bob;
    c.action = "s3:GetObject";
    c.resource = "arn:aws:s3:::b/secret/k";
    CHECK(auth_policy_eval(p, &c) == AUTH_POLICY_DENY);
    c.who = &anon;
    CHECK(auth_policy_eval(p, &c) == AUTH_POLICY_DENY);
    CHECK(auth_policy_is_public(p));
    CHECK(auth_policy_check_bucket(p, "b", msg, sizeof msg) == S3_OK);
    CHECK(auth_policy_check_bucket(p, "other", msg, sizeof msg) == S3_ERR_MALFORMED_POLICY);
    CHECK(strstr(msg, "not in bucket other") != NULL);
    auth_policy_free(p);
}

static void test_eval_not(void)
{
    char msg[256];
    /* Deny everyone but alice everything except GetObject, outside b/open/. */
    auth_policy_t *p = parse(
        "{\"Statement\":{\"Effect\":\"Deny\",\"NotPrincipal\":{\"AWS\":\"arn:aws:iam::" ACCT
        ":user/alice\"},\"NotAction\":\"s3:GetObject\",\"NotResource\":\"arn:aws:s3:::b/open/*\"}}",
        msg);
    CHECK(p != NULL);
    if (!p)
        return;
    auth_principal_t alice = user("alice", ID_A), bob = user("bob", ID_B);
    auth_authz_ctx_t c = ctx(&bob, "s3:PutObject", "arn:aws:s3:::b/k");
    CHECK(auth_policy_eval(p, &c) == AUTH_POLICY_DENY);
    c.action = "s3:GetObject";
    CHECK(auth_policy_eval(p, &c) == AUTH_POLICY_NO_MATCH);
    c.action = "s3:PutObject";
    c.resource = "arn:aws:s3:::b/open/k";
    CHECK(auth_policy_eval(p, &c) == AUTH_POLICY_NO_MATCH);
    c.resource = "arn:aws:s3:::b/k";
    c.who = &alice;
    CHECK(auth_policy_eval(p, &c) == AUTH_POLICY_NO_MATCH);
    CHECK(!auth_policy_is_public(p));
    auth_policy_free(p);

    /* Account principals (the 12-digit form and the root ARN): an Allow delegates to the
     * account, so it grants its root, not its users directly (their own policies must); a
     * Deny covers every user of the account; never the anonymous one. CanonicalUser names
     * one id. */
    p = parse("{\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":{\"AWS\":\"" ACCT "\"},"
              "\"Action\":\"s3:GetObject\",\"Resource\":\"*\"},{\"Effect\":\"Allow\","
              "\"Principal\":{\"AWS\":\"arn:aws:iam::" ACCT ":root\"},\"Action\":\"s3:PutObject\","
              "\"Resource\":\"*\"},{\"Effect\":\"Allow\",\"Principal\":{\"CanonicalUser\":\"" ID_B
              "\"},\"Action\":\"s3:DeleteObject\",\"Resource\":\"*\"}]}",
              msg);
    CHECK(p != NULL);
    if (!p)
        return;
    auth_principal_t anon;
    auth_principal_anon(&anon);
    c = ctx(&alice, "s3:GetObject", "arn:aws:s3:::b/k");
    CHECK(auth_policy_eval(p, &c) == AUTH_POLICY_NO_MATCH);
    c.action = "s3:PutObject";
    CHECK(auth_policy_eval(p, &c) == AUTH_POLICY_NO_MATCH);
    auth_principal_t root;
    memset(&root, 0, sizeof root);
    root.kind = AUTH_PRINCIPAL_ROOT;
    c.who = &root;
    CHECK(auth_policy_eval(p, &c) == AUTH_POLICY_ALLOW);
    c.who = &alice;
    c.account = "111111111111";
    CHECK(auth_policy_eval(p, &c) == AUTH_POLICY_NO_MATCH);
    c.account = ACCT;
    c.who = &anon;
    CHECK(auth_policy_eval(p, &c) == AUTH_POLICY_NO_MATCH);
    c.action = "s3:DeleteObject";
    CHECK(auth_policy_eval(p, &c) == AUTH_POLICY_NO_MATCH);
    c.who = &bob;
    CHECK(auth_policy_eval(p, &c) == AUTH_POLICY_ALLOW);
    c.who = &alice;
    CHECK(auth_policy_eval(p, &c) == AUTH_POLICY_NO_MATCH);
    auth_policy_free(p);
    p = parse("{\"Statement\":{\"Effect\":\"Deny\",\"Principal\":{\"AWS\":\"arn:aws:iam::" ACCT
              ":root\"},\"Action\":\"s3:*\",\"Resource\":\"*\"}}",
              msg);
    CHECK(p != NULL);
    c = ctx(&alice, "s3:GetObject", "arn:aws:s3:::b/k");
    CHECK(p && auth_policy_eval(p, &c) == AUTH_POLICY_DENY);
    c.who = &anon;
    CHECK(p && auth_policy_eval(p, &c) == AUTH_POLICY_NO_MATCH);
    auth_policy_free(p);
}

static auth_policy_t *cond_policy(const char *cond)
{
    char j[1024], msg[256];
    snprintf(j, sizeof j,
             "{\"Version\":\"2012-10-17\",\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\","
             "\"Action\":\"s3:*\",\"Resource\":\"*\",\"Condition\":%s}}",
             cond);
    return parse(j, msg);
}

/* ALLOW when the condition holds for c, NO_MATCH when not. */
static int cond_eval(const char *cond, const auth_authz_ctx_t *c)
{
    auth_policy_t *p = cond_policy(cond);
    if (!p)
        return -1;
    int r = auth_policy_eval(p, c) == AUTH_POLICY_ALLOW;
    auth_policy_free(p);
    return r;
}

static void test_conditions(void)
{
    auth_principal_t bob = user("bob", ID_B), anon;
    auth_principal_anon(&anon);
    auth_authz_ctx_t c = ctx(&bob, "s3:ListBucket", "arn:aws:s3:::b");
    /* aws:SourceIp, v4 and v6, single addresses and blocks, negated. */
    CHECK(cond_eval("{\"IpAddress\":{\"aws:SourceIp\":\"10.0.0.0/8\"}}", &c) == 1);
    CHECK(cond_eval("{\"IpAddress\":{\"aws:SourceIp\":[\"192.168.0.0/16\",\"10.1.2.3\"]}}", &c) ==
          1);
    CHECK(cond_eval("{\"IpAddress\":{\"aws:SourceIp\":\"10.1.2.4/32\"}}", &c) == 0);
    CHECK(cond_eval("{\"NotIpAddress\":{\"aws:SourceIp\":\"10.1.0.0/16\"}}", &c) == 0);
    CHECK(cond_eval("{\"NotIpAddress\":{\"aws:SourceIp\":\"10.2.0.0/16\"}}", &c) == 1);
    CHECK(cond_eval("{\"IpAddress\":{\"aws:SourceIp\":\"2001:db8::/32\"}}", &c) == 0);
    auth_ip_parse("2001:db8::5", &c.source_ip);
    CHECK(cond_eval("{\"IpAddress\":{\"aws:SourceIp\":\"2001:db8::/32\"}}", &c) == 1);
    CHECK(cond_eval("{\"IpAddress\":{\"aws:SourceIp\":\"2001:db9::/32\"}}", &c) == 0);
    CHECK(cond_eval("{\"IpAddress\":{\"aws:SourceIp\":\"10.0.0.0/8\"}}", &c) == 0);
    auth_ip_parse("::ffff:10.9.9.9", &c.source_ip); /* a v4 client on a v6 socket */
    CHECK(c.source_ip.family == 4);
    CHECK(cond_eval("{\"IpAddress\":{\"aws:SourceIp\":\"10.0.0.0/8\"}}", &c) == 1);
    CHECK(cond_eval("{\"IpAddress\":{\"aws:SourceIp\":\"0.0.0.0/0\"}}", &c) == 1);
    memset(&c.source_ip, 0, sizeof c.source_ip); /* a Unix-socket client has no address */
    CHECK(cond_eval("{\"IpAddress\":{\"aws:SourceIp\":\"0.0.0.0/0\"}}", &c) == 0);
    CHECK(cond_eval("{\"IpAddressIfExists\":{\"aws:SourceIp\":\"10.0.0.0/8\"}}", &c) == 1);

    /* s3:prefix, s3:delimiter: string operators, missing keys. */
    CHECK(cond_eval("{\"StringEquals\":{\"s3:prefix\":\"home/\"}}", &c) == 0);
    CHECK(cond_eval("{\"StringNotEquals\":{\"s3:prefix\":\"home/\"}}", &c) == 1);
    CHECK(cond_eval("{\"StringEqualsIfExists\":{\"s3:prefix\":\"home/\"}}", &c) == 1);
    CHECK(cond_eval("{\"Null\":{\"s3:prefix\":\"true\"}}", &c) == 1);
    c.prefix = "home/bob/x";
    CHECK(cond_eval("{\"Null\":{\"s3:prefix\":\"true\"}}", &c) == 0);
    CHECK(cond_eval("{\"StringEquals\":{\"s3:prefix\":[\"a\",\"home/bob/x\"]}}", &c) == 1);
    CHECK(cond_eval("{\"StringLike\":{\"s3:prefix\":\"home/${aws:username}/*\"}}", &c) == 1);
    CHECK(cond_eval("{\"StringLike\":{\"s3:prefix\":\"home/al*\"}}", &c) == 0);
    CHECK(cond_eval("{\"StringNotLike\":{\"s3:prefix\":\"home/al*\"}}", &c) == 1);
    CHECK(cond_eval("{\"StringEqualsIgnoreCase\":{\"s3:prefix\":\"HOME/BOB/X\"}}", &c) == 1);
    c.delimiter = "/";
    CHECK(cond_eval("{\"StringEquals\":{\"s3:delimiter\":\"/\",\"s3:prefix\":\"home/bob/x\"}}",
                    &c) == 1);
    CHECK(cond_eval(
              "{\"StringEquals\":{\"s3:delimiter\":\"/\"},\"StringLike\":{\"s3:prefix\":\"x*\"}}",
              &c) == 0);

    /* s3:max-keys: numeric operators; the string form compares too. */
    CHECK(cond_eval("{\"NumericLessThanEquals\":{\"s3:max-keys\":\"100\"}}", &c) == 0);
    c.has_max_keys = true;
    c.max_keys = 100;
    CHECK(cond_eval("{\"NumericLessThanEquals\":{\"s3:max-keys\":\"100\"}}", &c) == 1);
    CHECK(cond_eval("{\"NumericLessThan\":{\"s3:max-keys\":100}}", &c) == 0);
    CHECK(cond_eval("{\"NumericGreaterThan\":{\"s3:max-keys\":99}}", &c) == 1);
    CHECK(cond_eval("{\"NumericGreaterThanEquals\":{\"s3:max-keys\":101}}", &c) == 0);
    CHECK(cond_eval("{\"NumericEquals\":{\"s3:max-keys\":\"100\"}}", &c) == 1);
    CHECK(cond_eval("{\"NumericNotEquals\":{\"s3:max-keys\":\"100\"}}", &c) == 0);
    CHECK(cond_eval("{\"StringEquals\":{\"s3:max-keys\":\"100\"}}", &c) == 1);

    /* aws:SecureTransport is always present: wharf serves plain HTTP and the Unix socket. */
    CHECK(cond_eval("{\"Bool\":{\"aws:SecureTransport\":\"false\"}}", &c) == 1);
    CHECK(cond_eval("{\"Bool\":{\"aws:SecureTransport\":true}}", &c) == 0);
    c.secure_transport = true;
    CHECK(cond_eval("{\"Bool\":{\"aws:SecureTransport\":true}}", &c) == 1);

    /* aws:username, aws:PrincipalArn: absent for the anonymous principal. */
    CHECK(cond_eval("{\"StringEquals\":{\"aws:username\":\"bob\"}}", &c) == 1);
    CHECK(cond_eval("{\"StringEquals\":{\"aws:username\":\"alice\"}}", &c) == 0);
    CHECK(cond_eval("{\"ArnLike\":{\"aws:PrincipalArn\":\"arn:aws:iam::*:user/b*\"}}", &c) == 1);
    CHECK(cond_eval("{\"ArnEquals\":{\"aws:PrincipalArn\":\"arn:aws:iam::" ACCT ":user/bob\"}}",
                    &c) == 1);
    CHECK(cond_eval("{\"ArnNotLike\":{\"aws:PrincipalArn\":\"arn:aws:iam::*:user/b*\"}}", &c) == 0);
    c.who = &anon;
    CHECK(cond_eval("{\"StringEquals\":{\"aws:username\":\"bob\"}}", &c) == 0);
    CHECK(cond_eval("{\"StringNotEquals\":{\"aws:username\":\"bob\"}}", &c) == 1);
    CHECK(cond_eval("{\"StringLike\":{\"aws:PrincipalArn\":\"*\"}}", &c) == 0);
    /* A key wharf cannot evaluate is refused at parse time (taken as absent, a Deny on it
     * would never fire); so is a policy variable it cannot expand. */
    static const char *const unknown[] = {"aws:Referer",         "s3:signatureAge",
                                          "s3:x-amz-grant-read", "s3:ExistingObjectTag/t",
                                          "aws:ResourceTag/t",   "s3:RequestObjectTagKeys"};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        char j[512], want[128];
        snprintf(j, sizeof j,
                 "{\"Statement\":{\"Effect\":\"Deny\",\"Principal\":\"*\","
                 "\"Action\":\"s3:*\",\"Resource\":\"*\",\"Condition\":{\"StringEquals\":"
                 "{\"%s\":\"x\"}}}}",
                 unknown[i]);
        snprintf(want, sizeof want, "cannot evaluate the condition key \"%s\"", unknown[i]);
        CHECK(parse_fails(j, want));
    }
    CHECK(parse_fails("{\"Version\":\"2012-10-17\",\"Statement\":{\"Effect\":\"Deny\","
                      "\"Principal\":\"*\",\"Action\":\"s3:*\",\"Resource\":"
                      "\"arn:aws:s3:::b/${aws:userid}/*\"}}",
                      "policy variables"));
    CHECK(parse_fails("{\"Version\":\"2012-10-17\",\"Statement\":{\"Effect\":\"Deny\","
                      "\"Principal\":\"*\",\"Action\":\"s3:*\",\"Resource\":\"*\",\"Condition\":"
                      "{\"StringLike\":{\"s3:prefix\":\"${aws:PrincipalTag/x}\"}}}}",
                      "policy variables"));
    /* s3:x-amz-acl, s3:authType, s3:signatureversion. */
    CHECK(cond_eval("{\"StringEquals\":{\"s3:x-amz-acl\":\"public-read\"}}", &c) == 0);
    CHECK(cond_eval("{\"Null\":{\"s3:x-amz-acl\":\"true\"}}", &c) == 1);
    c.x_amz_acl = "public-read";
    CHECK(cond_eval("{\"StringEquals\":{\"s3:x-amz-acl\":\"public-read\"}}", &c) == 1);
    CHECK(cond_eval("{\"StringEquals\":{\"s3:authType\":\"REST-HEADER\"}}", &c) == 0);
    c.auth_type = "REST-QUERY-STRING";
    CHECK(cond_eval("{\"StringEquals\":{\"s3:authType\":\"REST-HEADER\"}}", &c) == 0);
    CHECK(cond_eval("{\"StringEquals\":{\"s3:authType\":\"REST-QUERY-STRING\"}}", &c) == 1);
    CHECK(cond_eval("{\"StringEquals\":{\"s3:signatureversion\":\"AWS4-HMAC-SHA256\"}}", &c) == 1);
    c.auth_type = NULL;
    c.x_amz_acl = NULL;
    /* Every operator and key must hold (AND); values of one key are alternatives (OR). */
    c.who = &bob;
    CHECK(cond_eval("{\"StringEquals\":{\"aws:username\":[\"x\",\"bob\"]},\"Bool\":{"
                    "\"aws:SecureTransport\":\"false\"}}",
                    &c) == 0);
}

static void test_policy_vars(void)
{
    char msg[256];
    auth_policy_t *p = NULL;
    const char *j = "{\"Version\":\"2012-10-17\",\"Statement\":{\"Effect\":\"Allow\",\"Action\":"
                    "\"s3:*\",\"Resource\":\"arn:aws:s3:::home/${aws:username}/*\"}}";
    CHECK(auth_policy_parse_user(j, strlen(j), &p, msg, sizeof msg) == S3_OK);
    auth_principal_t bob = user("bob", ID_B), anon;
    auth_principal_anon(&anon);
    auth_authz_ctx_t c = ctx(&bob, "s3:PutObject", "arn:aws:s3:::home/bob/f");
    CHECK(auth_policy_eval(p, &c) == AUTH_POLICY_ALLOW);
    c.resource = "arn:aws:s3:::home/alice/f";
    CHECK(auth_policy_eval(p, &c) == AUTH_POLICY_NO_MATCH);
    c.who = &anon;
    c.resource = "arn:aws:s3:::home//f";
    CHECK(auth_policy_eval(p, &c) == AUTH_POLICY_NO_MATCH);
    auth_policy_free(p);
    /* Version 2008-10-17 has no variables: the text is literal. */
    j = "{\"Version\":\"2008-10-17\",\"Statement\":{\"Effect\":\"Allow\",\"Action\":"
        "\"s3:*\",\"Resource\":\"arn:aws:s3:::home/${aws:username}/*\"}}";
    CHECK(auth_policy_parse_user(j, strlen(j), &p, msg, sizeof msg) == S3_OK);
    c.who = &bob;
    c.resource = "arn:aws:s3:::home/bob/f";
    CHECK(auth_policy_eval(p, &c) == AUTH_POLICY_NO_MATCH);
    c.resource = "arn:aws:s3:::home/${aws:username}/f";
    CHECK(auth_policy_eval(p, &c) == AUTH_POLICY_ALLOW);
    auth_policy_free(p);
}

/* wharf:Console (the browser console) in a user policy: granted by itself or by "*", not by
 * s3:*; a bucket policy may not name it. */
static void test_policy_wharf_actions(void)
{
    char msg[256];
    auth_policy_t *p = NULL;
    auth_principal_t bob = user("bob", ID_B);
    const char *j = "{\"Version\":\"2012-10-17\",\"Statement\":{\"Effect\":\"Allow\",\"Action\":"
                    "[\"wharf:Console\",\"s3:GetObject\"],\"Resource\":\"*\"}}";
    CHECK(auth_policy_parse_user(j, strlen(j), &p, msg, sizeof msg) == S3_OK);
    auth_authz_ctx_t c = ctx(&bob, "wharf:Console", "*");
    CHECK(p && auth_policy_eval(p, &c) == AUTH_POLICY_ALLOW);
    auth_policy_free(p);
    j = "{\"Version\":\"2012-10-17\",\"Statement\":{\"Effect\":\"Allow\",\"Action\":"
        "\"s3:*\",\"Resource\":\"*\"}}";
    CHECK(auth_policy_parse_user(j, strlen(j), &p, msg, sizeof msg) == S3_OK);
    CHECK(p && auth_policy_eval(p, &c) == AUTH_POLICY_NO_MATCH);
    auth_policy_free(p);
    j = "{\"Version\":\"2012-10-17\",\"Statement\":{\"Effect\":\"Allow\",\"Action\":"
        "\"*\",\"Resource\":\"*\"}}";
    CHECK(auth_policy_parse_user(j, strlen(j), &p, msg, sizeof msg) == S3_OK);
    CHECK(p && auth_policy_eval(p, &c) == AUTH_POLICY_ALLOW);
    auth_policy_free(p);
    p = NULL;
    j = "{\"Version\":\"2012-10-17\",\"Statement\":{\"Effect\":\"Allow\",\"Principal\":"
        "\"*\",\"Action\":\"wharf:Console\",\"Resource\":\"arn:aws:s3:::b\"}}";
    CHECK(auth_policy_parse(j, strlen(j), &p, msg, sizeof msg) == S3_ERR_MALFORMED_POLICY);
    CHECK(p == NULL && strstr(msg, "wharf:Console") != NULL);
}

static void test_acl_forms(void)
{
    auth_acl_t a, b;
    char msg[256];
    CHECK(auth_acl_canned(&a, "public-read", ID_A, ID_A, msg, sizeof msg) == S3_OK);
    CHECK(a.n == 2 && a.g[1].kind == AUTH_GRANTEE_ALL_USERS && a.g[1].perm == AUTH_PERM_READ);
    CHECK(auth_acl_canned(&a, "bucket-owner-full-control", ID_B, ID_A, msg, sizeof msg) == S3_OK);
    CHECK(a.n == 2 && strcmp(a.g[1].id, ID_A) == 0 && a.g[1].perm == AUTH_PERM_FULL_CONTROL);
    CHECK(auth_acl_canned(&a, "bucket-owner-read", ID_A, ID_A, msg, sizeof msg) == S3_OK);
    CHECK(a.n == 1); /* the owner's FULL_CONTROL already covers it */
    CHECK(auth_acl_canned(&a, "log-delivery-write", ID_A, ID_A, msg, sizeof msg) == S3_OK);
    CHECK(a.n == 2 && a.g[1].kind == AUTH_GRANTEE_LOG_DELIVERY);
    CHECK(auth_acl_canned(&a, "authenticated-read", ID_A, ID_A, msg, sizeof msg) == S3_OK);
    CHECK(auth_acl_canned(&a, "public-read-write", ID_A, ID_A, msg, sizeof msg) == S3_OK);
    CHECK(auth_acl_canned(&a, "public", ID_A, ID_A, msg, sizeof msg) == S3_ERR_INVALID_ARGUMENT);
    CHECK(strstr(msg, "\"public\" is not a canned ACL") != NULL);

    /* x-amz-grant-*: several grantees, merged per grantee. */
    auth_acl_private(&a, ID_A);
    a.n = 0;
    CHECK(auth_acl_grant_header(&a, AUTH_PERM_READ,
                                "id=\"" ID_B "\", uri=\"" AUTH_GROUP_ALL_USERS "\"", msg,
                                sizeof msg) == S3_OK);
    CHECK(auth_acl_grant_header(&a, AUTH_PERM_WRITE_ACP, "id=" ID_B, msg, sizeof msg) == S3_OK);
    CHECK(a.n == 2 && a.g[0].perm == (AUTH_PERM_READ | AUTH_PERM_WRITE_ACP));
    CHECK(auth_acl_grant_header(&a, AUTH_PERM_READ, "emailAddress=\"x@y\"", msg, sizeof msg) ==
          S3_ERR_UNRESOLVABLE_EMAIL);
    CHECK(strstr(msg, "does not match any account") != NULL);
    CHECK(auth_acl_grant_header(&a, AUTH_PERM_READ, "id=\"zz\"", msg, sizeof msg) ==
          S3_ERR_INVALID_ARGUMENT);
    CHECK(auth_acl_grant_header(&a, AUTH_PERM_READ, "uri=\"http://x/\"", msg, sizeof msg) ==
          S3_ERR_INVALID_ARGUMENT);
    CHECK(auth_acl_grant_header(&a, AUTH_PERM_READ, "id=\"" ID_B, msg, sizeof msg) ==
          S3_ERR_INVALID_ARGUMENT);
    CHECK(auth_acl_grant_header(&a, AUTH_PERM_READ, "id=\"" ID_B "\" id=\"" ID_C "\"", msg,
                                sizeof msg) == S3_ERR_INVALID_ARGUMENT);
    CHECK(strstr(msg, "separated by commas") != NULL);
    CHECK_STR(auth_acl_grant_header_name(AUTH_PERM_FULL_CONTROL), "x-amz-grant-full-control");

    /* Storage text round trip, and refusal of damaged text. */
    CHECK(auth_acl_canned(&a, "public-read-write", ID_A, ID_A, msg, sizeof msg) == S3_OK);
    CHECK(auth_acl_grant_header(&a, AUTH_PERM_READ_ACP, "id=\"" ID_C "\"", msg, sizeof msg) ==
          S3_OK);
    wh_sbuf_t t;
    wh_sbuf_init(&t);
    auth_acl_serialize(&a, &t);
    CHECK_STR(t.data, "1;" ID_A ";uf:" ID_A ",a3,u4:" ID_C);
    CHECK(auth_acl_deserialize(t.data, "x", &b, msg, sizeof msg) == S3_OK);
    CHECK(b.n == 3 && strcmp(b.owner, ID_A) == 0 && b.g[1].perm == 3 &&
          strcmp(b.g[2].id, ID_C) == 0);
    wh_sbuf_free(&t);
    CHECK(auth_acl_deserialize(NULL, ID_B, &b, msg, sizeof msg) == S3_OK);
    CHECK(b.n == 1 && strcmp(b.g[0].id, ID_B) == 0 && b.g[0].perm == AUTH_PERM_FULL_CONTROL);
    CHECK(auth_acl_deserialize("2;x;", ID_B, &b, msg, sizeof msg) == S3_ERR_INTERNAL);
    CHECK(auth_acl_deserialize("1;" ID_A ";q1", ID_B, &b, msg, sizeof msg) == S3_ERR_INTERNAL);
    CHECK(auth_acl_deserialize("1;" ID_A ";u1", ID_B, &b, msg, sizeof msg) == S3_ERR_INTERNAL);
    CHECK(auth_acl_deserialize("1;" ID_A ";a0", ID_B, &b, msg, sizeof msg) == S3_ERR_INTERNAL);

    /* XML: format then parse gives the same ACL. */
    wh_sbuf_init(&t);
    auth_acl_format_xml(&a, "alice", &t);
    CHECK(strstr(t.data, "<Owner><ID>" ID_A "</ID><DisplayName>alice</DisplayName></Owner>") !=
          NULL);
    CHECK(strstr(t.data, "<Permission>FULL_CONTROL</Permission>") != NULL);
    CHECK(strstr(t.data, "<URI>" AUTH_GROUP_ALL_USERS "</URI></Grantee><Permission>WRITE") != NULL);
    CHECK(auth_acl_parse_xml(t.data, t.len, &b, msg, sizeof msg) == S3_OK);
    CHECK(b.n == 3 && b.g[0].perm == 15 && b.g[1].kind == AUTH_GRANTEE_ALL_USERS &&
          b.g[1].perm == 3 && b.g[2].perm == AUTH_PERM_READ_ACP);
    wh_sbuf_free(&t);
    const char *x = "<AccessControlPolicy><Owner><ID>" ID_A "</ID></Owner><AccessControlList>"
                    "<Grant><Grantee><EmailAddress>a@b</EmailAddress></Grantee><Permission>READ"
                    "</Permission></Grant></AccessControlList></AccessControlPolicy>";
    CHECK(auth_acl_parse_xml(x, strlen(x), &b, msg, sizeof msg) == S3_ERR_UNRESOLVABLE_EMAIL);
    x = "<AccessControlPolicy><AccessControlList/></AccessControlPolicy>";
    CHECK(auth_acl_parse_xml(x, strlen(x), &b, msg, sizeof msg) == S3_ERR_MALFORMED_ACL);
    CHECK(strstr(msg, "no Owner") != NULL);
    x = "<AccessControlPolicy><Owner><ID>" ID_A "</ID></Owner><AccessControlList><Grant>"
        "<Grantee><ID>" ID_B "</ID></Grantee><Permission>ALL</Permission></Grant>"
        "</AccessControlList></AccessControlPolicy>";
    CHECK(auth_acl_parse_xml(x, strlen(x), &b, msg, sizeof msg) == S3_ERR_MALFORMED_ACL);
    CHECK(strstr(msg, "Permission must be") != NULL);
    x = "<AccessControlPolicy><Owner><ID>" ID_A "</ID></Owner><AccessControlList><Grant>"
        "<Permission>READ</Permission></Grant></AccessControlList></AccessControlPolicy>";
    CHECK(auth_acl_parse_xml(x, strlen(x), &b, msg, sizeof msg) == S3_ERR_MALFORMED_ACL);
    x = "<AccessControlPolicy><Owner><ID>";
    CHECK(auth_acl_parse_xml(x, strlen(x), &b, msg, sizeof msg) == S3_ERR_MALFORMED_XML);
}

static void test_acl_allows(void)
{
    auth_acl_t a;
    char msg[64];
    auth_principal_t alice = user("alice", ID_A), bob = user("bob", ID_B), anon;
    auth_principal_anon(&anon);
    auth_acl_canned(&a, "private", ID_A, ID_A, msg, sizeof msg);
    CHECK(auth_acl_allows(&a, &alice, AUTH_PERM_FULL_CONTROL));
    CHECK(!auth_acl_allows(&a, &bob, AUTH_PERM_READ));
    CHECK(!auth_acl_allows(&a, &anon, AUTH_PERM_READ));
    CHECK(!auth_acl_is_public(&a));
    auth_acl_canned(&a, "public-read", ID_A, ID_A, msg, sizeof msg);
    CHECK(auth_acl_allows(&a, &anon, AUTH_PERM_READ));
    CHECK(!auth_acl_allows(&a, &anon, AUTH_PERM_WRITE));
    CHECK(auth_acl_allows(&a, &bob, AUTH_PERM_READ));
    CHECK(auth_acl_is_public(&a));
    auth_acl_canned(&a, "authenticated-read", ID_A, ID_A, msg, sizeof msg);
    CHECK(!auth_acl_allows(&a, &anon, AUTH_PERM_READ));
    CHECK(auth_acl_allows(&a, &bob, AUTH_PERM_READ));
    /* Grants that leave the owner out still let it read and write the ACL. */
    a.n = 0;
    CHECK(auth_acl_allows(&a, &alice, AUTH_PERM_READ_ACP | AUTH_PERM_WRITE_ACP));
    CHECK(!auth_acl_allows(&a, &alice, AUTH_PERM_READ));
    /* An anonymous principal never matches an empty canonical id. */
    a.n = 0;
    a.g[a.n].kind = AUTH_GRANTEE_USER;
    a.g[a.n].id[0] = '\0';
    a.g[a.n++].perm = AUTH_PERM_READ;
    CHECK(!auth_acl_allows(&a, &anon, AUTH_PERM_READ));
}

static void test_decide(void)
{
    char msg[256];
    auth_principal_t alice = user("alice", ID_A), bob = user("bob", ID_B), anon, root;
    auth_principal_anon(&anon);
    memset(&root, 0, sizeof root);
    root.kind = AUTH_PRINCIPAL_ROOT;
    auth_acl_t bacl, oacl;
    auth_acl_private(&bacl, ID_A);
    auth_acl_private(&oacl, ID_A);
    auth_authz_in_t in;
    memset(&in, 0, sizeof in);
    in.ctx = ctx(&bob, "s3:GetObject", "arn:aws:s3:::b/k");
    in.bucket_owner = ID_A;
    in.bucket_acl = &bacl;
    in.object_acl = &oacl;
    CHECK(auth_authz_decide(&in) == AUTH_AUTHZ_DENY_IMPLICIT);
    in.ctx.who = &alice;
    CHECK(auth_authz_decide(&in) == AUTH_AUTHZ_ALLOW);
    in.ctx.who = &root;
    CHECK(auth_authz_decide(&in) == AUTH_AUTHZ_ALLOW);
    /* READ on the object lets bob get it; WRITE on the bucket lets him put. */
    auth_acl_grant_header(&oacl, AUTH_PERM_READ, "id=\"" ID_B "\"", msg, sizeof msg);
    in.ctx.who = &bob;
    CHECK(auth_authz_decide(&in) == AUTH_AUTHZ_ALLOW);
    in.ctx.action = "s3:PutObject";
    CHECK(auth_authz_decide(&in) == AUTH_AUTHZ_DENY_IMPLICIT);
    auth_acl_grant_header(&bacl, AUTH_PERM_WRITE, "id=\"" ID_B "\"", msg, sizeof msg);
    CHECK(auth_authz_decide(&in) == AUTH_AUTHZ_ALLOW);
    /* A user policy's Deny beats the ACL; root ignores it. */
    auth_policy_t *deny = NULL;
    const char *dj = "{\"Statement\":{\"Effect\":\"Deny\",\"Action\":[\"s3:Put*\",\"s3:Delete*\"],"
                     "\"Resource\":\"*\"}}";
    CHECK(auth_policy_parse_user(dj, strlen(dj), &deny, msg, sizeof msg) == S3_OK);
    const auth_policy_t *ups[] = {deny};
    in.user_policies = ups;
    in.n_user_policies = 1;
    CHECK(auth_authz_decide(&in) == AUTH_AUTHZ_DENY_EXPLICIT);
    in.ctx.action = "s3:GetObject";
    CHECK(auth_authz_decide(&in) == AUTH_AUTHZ_ALLOW);
    /* Even the bucket owner is bound by its own user policy's Deny. */
    in.ctx.who = &alice;
    in.ctx.action = "s3:DeleteObject";
    CHECK(auth_authz_decide(&in) == AUTH_AUTHZ_DENY_EXPLICIT);
    in.ctx.who = &root;
    CHECK(auth_authz_decide(&in) == AUTH_AUTHZ_ALLOW);
    in.user_policies = NULL;
    in.n_user_policies = 0;
    auth_policy_free(deny);
    /* A bucket policy Allow to the anonymous principal, and its Deny over the owner. */
    auth_policy_t *bp =
        parse("{\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":"
              "\"s3:GetObject\",\"Resource\":\"arn:aws:s3:::b/*\"},{\"Effect\":"
              "\"Deny\",\"Principal\":\"*\",\"Action\":\"s3:DeleteBucket\","
              "\"Resource\":\"arn:aws:s3:::b\"}]}",
              msg);
    in.bucket_policy = bp;
    in.ctx.who = &anon;
    in.ctx.action = "s3:GetObject";
    CHECK(auth_authz_decide(&in) == AUTH_AUTHZ_ALLOW);
    in.ctx.action = "s3:PutObject";
    CHECK(auth_authz_decide(&in) == AUTH_AUTHZ_DENY_IMPLICIT);
    in.ctx.who = &alice;
    in.ctx.action = "s3:DeleteBucket";
    in.ctx.resource = "arn:aws:s3:::b";
    CHECK(auth_authz_decide(&in) == AUTH_AUTHZ_DENY_EXPLICIT);
    in.bucket_policy = NULL;
    CHECK(auth_authz_decide(&in) == AUTH_AUTHZ_ALLOW); /* owner-only action, owner */
    in.ctx.who = &bob;
    CHECK(auth_authz_decide(&in) == AUTH_AUTHZ_DENY_IMPLICIT);
    auth_policy_free(bp);
    /* A missing object: who may list the bucket is allowed (to learn 404), others not. */
    in.object_acl = NULL;
    in.ctx.action = "s3:GetObject";
    in.ctx.resource = "arn:aws:s3:::b/none";
    CHECK(auth_authz_decide(&in) == AUTH_AUTHZ_DENY_IMPLICIT);
    auth_acl_grant_header(&bacl, AUTH_PERM_READ, "id=\"" ID_B "\"", msg, sizeof msg);
    CHECK(auth_authz_decide(&in) == AUTH_AUTHZ_ALLOW);
    /* Service actions: any authenticated principal. */
    in.ctx.action = "s3:ListAllMyBuckets";
    in.ctx.resource = "*";
    in.bucket_owner = NULL;
    CHECK(auth_authz_decide(&in) == AUTH_AUTHZ_ALLOW);
    in.ctx.who = &anon;
    CHECK(auth_authz_decide(&in) == AUTH_AUTHZ_DENY_IMPLICIT);
    /* The ACL mapping. */
    CHECK(auth_action_acl("s3:ListBucketVersions").level == AUTH_ACL_BUCKET);
    CHECK(auth_action_acl("s3:GetObjectAcl").perm == AUTH_PERM_READ_ACP);
    CHECK(auth_action_acl("s3:PutBucketAcl").perm == AUTH_PERM_WRITE_ACP);
    CHECK(auth_action_acl("s3:PutBucketPolicy").level == AUTH_ACL_NONE);
    char arn[AUTH_ARN_MAX];
    CHECK(auth_resource_arn(arn, sizeof arn, "b", "k/x"));
    CHECK_STR(arn, "arn:aws:s3:::b/k/x");
    CHECK(!auth_resource_arn(arn, 10, "b", "k/x"));
}

int main(void)
{
    RUN(test_glob);
    RUN(test_parse_errors);
    RUN(test_eval_basic);
    RUN(test_eval_not);
    RUN(test_conditions);
    RUN(test_policy_vars);
    RUN(test_policy_wharf_actions);
    RUN(test_acl_forms);
    RUN(test_acl_allows);
    RUN(test_decide);
    return check_done();
}
