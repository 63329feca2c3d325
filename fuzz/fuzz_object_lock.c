/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer driver for the Object Lock documents (src/shared/s3/object_lock.c): the bucket's
 * ObjectLockConfiguration, a version's Retention and LegalHold, and the retain-until date.
 * The first byte picks the parser. Checks the limits the parsers promise and that a parsed
 * document survives the round trip through its written form with the same values. */
#include "s3/object_lock.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void config(const char *x, size_t n)
{
    s3_lock_config_t c, back;
    char msg[256];
    if (s3_lock_config_parse(x, n, &c, msg, sizeof msg) != S3_OK)
        return;
    if (c.mode != S3_LOCK_NONE && ((c.days > 0) == (c.years > 0) || c.days > S3_LOCK_MAX_DAYS ||
                                   c.years > S3_LOCK_MAX_YEARS || c.days < 0 || c.years < 0))
        abort();
    if (c.mode == S3_LOCK_NONE && (c.days || c.years))
        abort();
    if (c.mode != S3_LOCK_NONE && s3_lock_config_until(&c, 1000000000) <= 1000000000)
        abort();
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    s3_lock_config_format(&c, &b, "x");
    if (b.oom || s3_lock_config_parse(b.data, b.len, &back, msg, sizeof msg) != S3_OK)
        abort();
    if (back.mode != c.mode || back.days != c.days || back.years != c.years)
        abort();
    wh_sbuf_free(&b);
}

static void retention(const char *x, size_t n)
{
    s3_lock_retention_t r, back;
    char msg[256];
    if (s3_lock_retention_parse(x, n, &r, msg, sizeof msg) != S3_OK)
        return;
    if (r.mode == S3_LOCK_NONE && r.until != 0)
        abort();
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    s3_lock_retention_format(&r, &b, NULL);
    if (b.oom || s3_lock_retention_parse(b.data, b.len, &back, msg, sizeof msg) != S3_OK)
        abort();
    if (back.mode != r.mode || (r.mode != S3_LOCK_NONE && back.until != r.until))
        abort();
    wh_sbuf_free(&b);
}

static void hold(const char *x, size_t n)
{
    bool on, back;
    char msg[256];
    if (s3_lock_legal_hold_parse(x, n, &on, msg, sizeof msg) != S3_OK)
        return;
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    s3_lock_legal_hold_format(on, &b, "x");
    if (b.oom || s3_lock_legal_hold_parse(b.data, b.len, &back, msg, sizeof msg) != S3_OK ||
        back != on)
        abort();
    wh_sbuf_free(&b);
}

static void date(const char *x, size_t n)
{
    int64_t t, back;
    if (s3_lock_date_parse(x, n, &t) != 0)
        return;
    if (t < 0)
        abort();
    char d[32];
    s3_lock_date_format(t, d);
    if (s3_lock_date_parse(d, strlen(d), &back) != 0 || back != t)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const char *x = (const char *)data + 1;
    size_t n = size - 1;
    switch (data[0] % 4) {
    case 0:
        config(x, n);
        break;
    case 1:
        retention(x, n);
        break;
    case 2:
        hold(x, n);
        break;
    default:
        date(x, n);
        break;
    }
    return 0;
}
