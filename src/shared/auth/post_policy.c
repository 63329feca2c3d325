/* SPDX-License-Identifier: Apache-2.0 */
/* POST policy conditions (post_policy.h). */
#include "auth/post_policy.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ISO 8601 UTC: 2013-08-01T12:00:00Z or with .sss fractions. */
static int parse_expiration(const char *s, time_t *out)
{
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    const char *end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
    if (!end)
        return -1;
    if (*end == '.') {
        end++;
        if (*end < '0' || *end > '9')
            return -1;
        while (*end >= '0' && *end <= '9')
            end++;
    }
    if (strcmp(end, "Z") != 0)
        return -1;
    *out = timegm(&tm);
    return 0;
}

/* As AWS lists them; AWSAccessKeyId and signature are the Signature Version 2 form's. */
static bool exempt(const char *name)
{
    return strcasecmp(name, "policy") == 0 || strcasecmp(name, "x-amz-signature") == 0 ||
           strcasecmp(name, "awsaccesskeyid") == 0 || strcasecmp(name, "signature") == 0 ||
           strcasecmp(name, "file") == 0 || strncasecmp(name, "x-ignore-", 9) == 0;
}

/* A field's value: the URL's bucket for "bucket", else the form's ("" when absent). */
static const char *field_value(const char *name, const char *bucket,
                               const auth_post_field_t *fields, size_t n)
{
    if (strcasecmp(name, "bucket") == 0)
        return bucket;
    for (size_t i = 0; i < n; i++)
        if (strcasecmp(fields[i].name, name) == 0)
            return fields[i].value;
    return "";
}

static bool json_u64(json_t *v, uint64_t *out)
{
    if (json_is_integer(v) && json_integer_value(v) >= 0) {
        *out = (uint64_t)json_integer_value(v);
        return true;
    }
    if (json_is_string(v)) { /* some SDKs send the bounds as strings */
        const char *s = json_string_value(v);
        char *end;
        if (!*s || *s == '-')
            return false;
        unsigned long long x = strtoull(s, &end, 10);
        if (*end)
            return false;
        *out = x;
        return true;
    }
    return false;
}

s3_err_t auth_post_policy_check(const char *json, size_t len, time_t now, const char *bucket,
                                const auth_post_field_t *fields, size_t n, auth_post_range_t *range,
                                char *msg, size_t msglen)
{
    memset(range, 0, sizeof *range);
    json_error_t je;
    json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
    s3_err_t e = S3_OK;
    bool *named = NULL;
    if (!root || !json_is_object(root)) {
        e = s3_errf(S3_ERR_INVALID_POLICY_DOCUMENT, msg, msglen,
                    "Invalid Policy: the policy is not a JSON object (%s)",
                    root ? "another JSON value" : je.text);
        goto out;
    }
    json_t *exp = json_object_get(root, "expiration");
    time_t t;
    if (!json_is_string(exp) || parse_expiration(json_string_value(exp), &t) != 0) {
        e = s3_errf(S3_ERR_INVALID_POLICY_DOCUMENT, msg, msglen,
                    "Invalid Policy: the expiration must be an ISO 8601 UTC time "
                    "(2013-08-01T12:00:00.000Z)");
        goto out;
    }
    json_t *conds = json_object_get(root, "conditions");
    if (!json_is_array(conds)) {
        e = s3_errf(S3_ERR_INVALID_POLICY_DOCUMENT, msg, msglen,
                    "Invalid Policy: the policy needs a conditions array");
        goto out;
    }
    if (n && !(named = calloc(n, sizeof *named))) {
        e = s3_errf(S3_ERR_INTERNAL, msg, msglen, "out of memory checking the policy");
        goto out;
    }
    if (now > t) {
        e = s3_errf(S3_ERR_ACCESS_DENIED, msg, msglen,
                    "Invalid according to Policy: Policy expired.");
        goto out;
    }
    size_t ci;
    json_t *c;
    json_array_foreach(conds, ci, c)
    {
        const char *field = NULL, *want = NULL, *op = "eq";
        if (json_is_object(c)) {
            /* {"field": "value"}: an exact match */
            if (json_object_size(c) != 1) {
                e = s3_errf(S3_ERR_INVALID_POLICY_DOCUMENT, msg, msglen,
                            "Invalid Policy: condition %zu: an exact-match object holds one field",
                            ci);
                goto out;
            }
            void *it = json_object_iter(c);
            field = json_object_iter_key(it);
            json_t *v = json_object_iter_value(it);
            if (!json_is_string(v)) {
                e = s3_errf(
                    S3_ERR_INVALID_POLICY_DOCUMENT, msg, msglen,
                    "Invalid Policy: condition %zu: the value of \"%.64s\" must be a string", ci,
                    field);
                goto out;
            }
            want = json_string_value(v);
        } else if (json_is_array(c) && json_array_size(c) == 3 &&
                   json_is_string(json_array_get(c, 0))) {
            op = json_string_value(json_array_get(c, 0));
            if (strcasecmp(op, "content-length-range") == 0) {
                uint64_t lo, hi;
                if (!json_u64(json_array_get(c, 1), &lo) || !json_u64(json_array_get(c, 2), &hi) ||
                    lo > hi) {
                    e = s3_errf(S3_ERR_INVALID_POLICY_DOCUMENT, msg, msglen,
                                "Invalid Policy: condition %zu: content-length-range needs two "
                                "non-negative integers, min <= max",
                                ci);
                    goto out;
                }
                if (range->set) { /* several ranges: all of them apply */
                    range->min = lo > range->min ? lo : range->min;
                    range->max = hi < range->max ? hi : range->max;
                } else {
                    *range = (auth_post_range_t){true, lo, hi};
                }
                continue;
            }
            if (strcasecmp(op, "eq") != 0 && strcasecmp(op, "starts-with") != 0) {
                e = s3_errf(S3_ERR_INVALID_POLICY_DOCUMENT, msg, msglen,
                            "Invalid Policy: condition %zu: unknown operation \"%.64s\" (eq, "
                            "starts-with and content-length-range are served)",
                            ci, op);
                goto out;
            }
            json_t *f = json_array_get(c, 1), *v = json_array_get(c, 2);
            if (!json_is_string(f) || json_string_value(f)[0] != '$' || !json_is_string(v)) {
                e = s3_errf(S3_ERR_INVALID_POLICY_DOCUMENT, msg, msglen,
                            "Invalid Policy: condition %zu: [\"%s\", \"$field\", \"value\"] "
                            "expected",
                            ci, op);
                goto out;
            }
            field = json_string_value(f) + 1;
            want = json_string_value(v);
        } else {
            e = s3_errf(S3_ERR_INVALID_POLICY_DOCUMENT, msg, msglen,
                        "Invalid Policy: condition %zu is neither {\"field\": \"value\"} nor a "
                        "three-element array",
                        ci);
            goto out;
        }
        for (size_t i = 0; i < n; i++)
            if (strcasecmp(fields[i].name, field) == 0)
                named[i] = true;
        const char *have = field_value(field, bucket, fields, n);
        bool ok = strcasecmp(op, "eq") == 0 ? strcmp(have, want) == 0
                                            : strncmp(have, want, strlen(want)) == 0;
        if (!ok) {
            e = s3_errf(
                S3_ERR_ACCESS_DENIED, msg, msglen,
                "Invalid according to Policy: Policy Condition failed: [\"%s\", \"$%.64s\", "
                "\"%.100s\"]",
                strcasecmp(op, "eq") == 0 ? "eq" : "starts-with", field, want);
            goto out;
        }
    }
    for (size_t i = 0; i < n; i++)
        if (!named[i] && !exempt(fields[i].name)) {
            e = s3_errf(S3_ERR_ACCESS_DENIED, msg, msglen,
                        "Invalid according to Policy: Extra input fields: %.100s", fields[i].name);
            goto out;
        }
out:
    free(named);
    json_decref(root);
    return e;
}
