/* SPDX-License-Identifier: Apache-2.0 */
/* The body of a KMS JSON API request (X-Amz-Target: TrentService.<Action>), untrusted input:
 * a JSON object of the fields the served actions take; every other field is refused by name,
 * never ignored. fuzz/fuzz_kms_req.c drives it. */
#include "ident/kms.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static wh_status_t fail(wh_status_t st, char *msg, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static wh_status_t fail(wh_status_t st, char *msg, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (msg && cap)
        vsnprintf(msg, cap, fmt, ap);
    va_end(ap);
    return st;
}

/* A string field: copied into out (cap bytes), or INVALID. */
static wh_status_t str_field(json_t *v, const char *name, char *out, size_t cap, char *msg,
                             size_t mcap)
{
    if (!json_is_string(v))
        return fail(WH_ERR_INVALID, msg, mcap, "%s must be a string", name);
    size_t n = json_string_length(v);
    const char *s = json_string_value(v);
    if (n == 0 || n >= cap || strlen(s) != n)
        return fail(WH_ERR_INVALID, msg, mcap, "%s must be 1 to %zu characters, without NUL", name,
                    cap - 1);
    memcpy(out, s, n + 1);
    return WH_OK;
}

static wh_status_t int_field(json_t *v, const char *name, long lo, long hi, unsigned *out,
                             char *msg, size_t mcap)
{
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return fail(WH_ERR_INVALID, msg, mcap, "%s must be an integer from %ld to %ld", name, lo,
                    hi);
    *out = (unsigned)json_integer_value(v);
    return WH_OK;
}

/* A field whose one served value is want (a symmetric key made by wharf). */
static wh_status_t fixed_field(json_t *v, const char *name, const char *want, char *msg,
                               size_t mcap)
{
    if (json_is_string(v) && strcmp(json_string_value(v), want) == 0)
        return WH_OK;
    return fail(WH_ERR_UNSUPPORTED, msg, mcap,
                "%s: wharf's key service serves %s only (symmetric keys it makes itself)", name,
                want);
}

wh_status_t ident_kms_req_parse(const char *body, size_t len, ident_kms_req_t *out, char *msg,
                                size_t cap)
{
    memset(out, 0, sizeof *out);
    if (msg && cap)
        msg[0] = '\0';
    if (len == 0)
        return WH_OK;
    json_error_t je;
    json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return fail(WH_ERR_INVALID, msg, cap, "the body is not JSON: %s (at %d)", je.text,
                    je.position);
    wh_status_t st = WH_OK;
    if (!json_is_object(root)) {
        st = fail(WH_ERR_INVALID, msg, cap, "the body must be a JSON object");
        goto out;
    }
    const char *k;
    json_t *v;
    json_object_foreach(root, k, v)
    {
        if (strcmp(k, "KeyId") == 0)
            st = str_field(v, k, out->key_id, sizeof out->key_id, msg, cap);
        else if (strcmp(k, "Marker") == 0)
            st = str_field(v, k, out->marker, sizeof out->marker, msg, cap);
        else if (strcmp(k, "Limit") == 0)
            st = int_field(v, k, 1, 1000, &out->limit, msg, cap), out->has_limit = true;
        else if (strcmp(k, "PendingWindowInDays") == 0)
            st = int_field(v, k, 7, 30, &out->window_days, msg, cap), out->has_window = true;
        else if (strcmp(k, "KeyUsage") == 0)
            st = fixed_field(v, k, "ENCRYPT_DECRYPT", msg, cap);
        else if (strcmp(k, "KeySpec") == 0 || strcmp(k, "CustomerMasterKeySpec") == 0)
            st = fixed_field(v, k, "SYMMETRIC_DEFAULT", msg, cap);
        else if (strcmp(k, "Origin") == 0)
            st = fixed_field(v, k, "AWS_KMS", msg, cap);
        else if (strcmp(k, "MultiRegion") == 0 && json_is_false(v))
            st = WH_OK;
        else if (strcmp(k, "Description") == 0 && json_is_string(v) && json_string_length(v) == 0)
            st = WH_OK;
        else
            st = fail(WH_ERR_UNSUPPORTED, msg, cap,
                      "the field %.64s (with this value) is not served by wharf's key service", k);
        if (st != WH_OK)
            break;
    }
out:
    json_decref(root);
    return st;
}
