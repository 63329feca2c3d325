/* SPDX-License-Identifier: Apache-2.0 */
/* The x-amz-expiration header of PutObject, GetObject and HeadObject: when the bucket's
 * lifecycle configuration will expire the current version, as S3 announces it:
 *   x-amz-expiration: expiry-date="Fri, 23 Dec 2012 00:00:00 GMT", rule-id="rule1"
 * The earliest of the enabled rules whose filter takes the object and that expire current
 * versions (Expiration Days, rounded up to midnight UTC by s3_lc_due as the worker does, or
 * Date). Costs one read of the bucket's lifecycle document per request. */
#include "s3ctl/s3ctl.h"
#include "base/log.h"
#include "s3/lifecycle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int64_t day_seconds(void)
{
    const char *d = getenv("WHARF_LIFECYCLE_DAY_SECONDS"); /* the worker's test setting */
    uint64_t v;
    if (d && *d && wh_parse_u64(d, strlen(d), &v) == 0 && v >= 1 && v <= 86400)
        return (int64_t)v;
    return 86400;
}

void s3h_lc_expiration_header(front_req_t *r, s3h_out_t *o, const char *key, uint64_t size,
                              time_t mtime, const char *tags)
{
    char *doc = NULL;
    if (!key || store_bucket_attr_get(s3h_st(r), s3h_b(r), DATA_BATTR_LIFECYCLE, &doc) != WH_OK ||
        !doc)
        return;
    s3_lc_t c;
    char msg[128];
    if (s3_lc_parse(doc, strlen(doc), &c, msg, sizeof msg) != S3_OK) {
        free(doc);
        return; /* GetBucketLifecycleConfiguration reports the damage */
    }
    free(doc);
    const s3_lc_rule_t *best = NULL;
    int64_t due = 0, day_s = day_seconds();
    size_t kl = strlen(key);
    for (size_t i = 0; i < c.n; i++) {
        const s3_lc_rule_t *rule = &c.rules[i];
        if (!rule->enabled || !(rule->exp_days > 0 || rule->exp_date >= 0) ||
            !s3_lc_rule_matches(rule, key, kl, size, tags))
            continue;
        int64_t t =
            rule->exp_days > 0 ? s3_lc_due((int64_t)mtime, rule->exp_days, day_s) : rule->exp_date;
        if (!best || t < due) {
            best = rule;
            due = t;
        }
    }
    if (best) {
        char date[30], v[400];
        wh_http_date((time_t)due, date);
        snprintf(v, sizeof v, "expiry-date=\"%s\", rule-id=\"%.300s\"", date,
                 best->id ? best->id : "");
        s3h_out_header(o, "x-amz-expiration", v);
    }
    s3_lc_free(&c);
}
