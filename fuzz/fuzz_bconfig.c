/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer driver for the bucket configuration parsers (src/shared/s3/bucket_config.c). The first
 * byte picks CORSConfiguration (0), PublicAccessBlockConfiguration (1) or OwnershipControls
 * (2); the rest of byte 0 and the input feed the CORS matcher. Checks the limits the parsers
 * promise and that a parsed document survives the round trip through its written form (the
 * stored form), with the same matching answers. */
#include "s3/bucket_config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void same_rules(const s3_cors_t *a, const s3_cors_t *b)
{
    if (a->n != b->n)
        abort();
    for (size_t i = 0; i < a->n; i++) {
        const s3_cors_rule_t *x = &a->rules[i], *y = &b->rules[i];
        if (x->methods != y->methods || x->norigins != y->norigins || x->nheaders != y->nheaders ||
            x->nexpose != y->nexpose || x->max_age != y->max_age)
            abort();
        for (size_t j = 0; j < x->norigins; j++)
            if (strcmp(x->origins[j], y->origins[j]))
                abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const char *in = (const char *)data + 1;
    size_t len = size - 1;
    char msg[256];
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    switch (data[0] % 3) {
    case 0: {
        s3_cors_t c, back;
        if (s3_cors_parse(in, len, &c, msg, sizeof msg) != S3_OK)
            break;
        if (c.n == 0 || c.n > S3_CORS_MAX_RULES)
            abort();
        for (size_t i = 0; i < c.n; i++)
            if (!c.rules[i].norigins || !c.rules[i].methods ||
                c.rules[i].norigins > S3_CORS_MAX_ITEMS)
                abort();
        s3_cors_format(&c, &b, "x");
        if (b.oom || s3_cors_parse(b.data, b.len, &back, msg, sizeof msg) != S3_OK)
            abort();
        same_rules(&c, &back);
        /* The matcher on the input's own origins and a header list made of the input. */
        unsigned m = 1u << ((data[0] >> 2) % 5);
        const char *origin = c.rules[0].origins[0];
        char hdrs[64];
        size_t hl = len < sizeof hdrs - 1 ? len : sizeof hdrs - 1;
        memcpy(hdrs, in, hl);
        hdrs[hl] = '\0';
        if ((s3_cors_match(&c, origin, m, hdrs) != NULL) !=
            (s3_cors_match(&back, origin, m, hdrs) != NULL))
            abort();
        s3_cors_free(&c);
        s3_cors_free(&back);
        break;
    }
    case 1: {
        unsigned bits, again;
        if (s3_pab_parse(in, len, &bits, msg, sizeof msg) != S3_OK)
            break;
        if (bits > 15)
            abort();
        s3_pab_format(bits, &b, "x");
        if (b.oom || s3_pab_parse(b.data, b.len, &again, msg, sizeof msg) != S3_OK || again != bits)
            abort();
        break;
    }
    default: {
        unsigned own, again;
        if (s3_ownership_parse(in, len, &own, msg, sizeof msg) != S3_OK)
            break;
        if (own < 1 || own > 3)
            abort();
        s3_ownership_format(own, &b, "x");
        if (b.oom || s3_ownership_parse(b.data, b.len, &again, msg, sizeof msg) != S3_OK ||
            again != own)
            abort();
        break;
    }
    }
    wh_sbuf_free(&b);
    return 0;
}
