/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer driver for the LifecycleConfiguration parser (src/shared/s3/lifecycle.c). Checks the
 * limits the parser promises, that a parsed document survives the round trip through its
 * written form (the stored form) with the same rules, and that both answer the same for an
 * object made of the input. */
#include "s3/lifecycle.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool same_str(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static void same_rules(const s3_lc_t *a, const s3_lc_t *b)
{
    if (a->n != b->n)
        abort();
    for (size_t i = 0; i < a->n; i++) {
        const s3_lc_rule_t *x = &a->rules[i], *y = &b->rules[i];
        if (!same_str(x->id, y->id) || x->enabled != y->enabled ||
            x->legacy_prefix != y->legacy_prefix || !same_str(x->prefix, y->prefix) ||
            x->ntags != y->ntags || x->size_gt != y->size_gt || x->size_lt != y->size_lt ||
            x->exp_days != y->exp_days || x->exp_date != y->exp_date ||
            x->exp_marker != y->exp_marker || x->nc_days != y->nc_days ||
            x->nc_newer != y->nc_newer || x->abort_days != y->abort_days)
            abort();
        for (size_t j = 0; j < x->ntags; j++)
            if (strcmp(x->tags[j].key, y->tags[j].key) ||
                strcmp(x->tags[j].value, y->tags[j].value))
                abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    s3_lc_t c, back;
    char msg[256];
    if (s3_lc_parse((const char *)data, size, &c, msg, sizeof msg) != S3_OK)
        return 0;
    if (c.n == 0 || c.n > S3_LC_MAX_RULES)
        abort();
    for (size_t i = 0; i < c.n; i++) {
        const s3_lc_rule_t *r = &c.rules[i];
        if (r->ntags > S3_LC_MAX_TAGS ||
            (r->size_gt >= 0 && r->size_lt >= 0 && r->size_gt >= r->size_lt))
            abort();
        if (!r->exp_days && r->exp_date < 0 && !r->exp_marker && !r->nc_days && !r->abort_days)
            abort();
    }
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    s3_lc_format(&c, &b, "x");
    if (b.oom || s3_lc_parse(b.data, b.len, &back, msg, sizeof msg) != S3_OK)
        abort();
    same_rules(&c, &back);
    /* The matcher on a key made of the input and the first rule's tags as an object's. */
    char key[64];
    size_t kl = size < sizeof key ? size : sizeof key;
    memcpy(key, data, kl);
    const char *tags = c.rules[0].ntags ? "k=v&a=b" : NULL;
    for (size_t i = 0; i < c.n; i++)
        if (s3_lc_rule_matches(&c.rules[i], key, kl, size, tags) !=
            s3_lc_rule_matches(&back.rules[i], key, kl, size, tags))
            abort();
    s3_lc_free(&c);
    s3_lc_free(&back);
    wh_sbuf_free(&b);
    return 0;
}
