/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer driver for the policy parser and evaluator. The first byte picks bucket or user
 * policy; the rest is the JSON. A parsed policy is evaluated against a few fixed requests (any
 * answer is fine; no crash, no leak, no read past the compiled form) and checked against a
 * bucket (MalformedPolicy or OK only). */
#include "auth/authz.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    bool user = data[0] & 1;
    const char *json = (const char *)data + 1;
    size_t len = size - 1;
    auth_policy_t *pol = NULL;
    char msg[256];
    s3_err_t e = user ? auth_policy_parse_user(json, len, &pol, msg, sizeof msg)
                      : auth_policy_parse(json, len, &pol, msg, sizeof msg);
    if (e != S3_OK) {
        if (pol || (e != S3_ERR_MALFORMED_POLICY && e != S3_ERR_INTERNAL) || !msg[0])
            abort();
        return 0;
    }
    if (!pol)
        abort();
    auth_principal_t who[3];
    auth_principal_anon(&who[0]);
    memset(&who[1], 0, sizeof who[1]);
    who[1].kind = AUTH_PRINCIPAL_USER;
    strcpy(who[1].user, "bob");
    strcpy(who[1].canonical_id, "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb");
    strcpy(who[1].arn, "arn:aws:iam::000000000000:user/bob");
    who[2] = who[1];
    who[2].kind = AUTH_PRINCIPAL_ROOT;
    strcpy(who[2].arn, "arn:aws:iam::000000000000:root");
    static const char *const actions[] = {"s3:GetObject", "s3:PutObject", "s3:ListBucket"};
    static const char *const res[] = {"arn:aws:s3:::b", "arn:aws:s3:::b/k/x", "*"};
    for (int i = 0; i < 3; i++) {
        auth_authz_ctx_t c;
        memset(&c, 0, sizeof c);
        c.who = &who[i];
        c.account = "000000000000";
        c.action = actions[i];
        c.resource = res[i];
        c.prefix = i ? "k/" : NULL;
        c.delimiter = "/";
        c.has_max_keys = i == 1;
        c.max_keys = 1000;
        auth_ip_parse(i == 2 ? "2001:db8::1" : "10.0.0.1", &c.source_ip);
        auth_policy_result_t r = auth_policy_eval(pol, &c);
        if (r != AUTH_POLICY_NO_MATCH && r != AUTH_POLICY_ALLOW && r != AUTH_POLICY_DENY)
            abort();
    }
    e = auth_policy_check_bucket(pol, "b", msg, sizeof msg);
    if (e != S3_OK && e != S3_ERR_MALFORMED_POLICY)
        abort();
    (void)auth_policy_is_public(pol);
    auth_policy_free(pol);
    return 0;
}
