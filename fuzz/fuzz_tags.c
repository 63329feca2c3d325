/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer driver for the object tag parsers (src/shared/s3/tags.c): the x-amz-tagging query form
 * (first byte even) and the Tagging document (odd). Checks the limits the parsers promise, and
 * that a parsed set survives the round trip through the stored form and the XML form. */
#include "s3/tags.h"
#include "s3/xml.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void same(const s3_tagset_t *a, const s3_tagset_t *b)
{
    if (a->n != b->n)
        abort();
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->tags[i].key, b->tags[i].key) || strcmp(a->tags[i].value, b->tags[i].value))
            abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const char *in = (const char *)data + 1;
    size_t len = size - 1;
    s3_tagset_t t, back;
    char msg[200];
    s3_err_t e = data[0] % 2 ? s3_tags_parse_xml(in, len, S3_TAGS_MAX, &t, msg, sizeof msg)
                             : s3_tags_parse_query(in, len, S3_TAGS_MAX, &t, msg, sizeof msg);
    if (e != S3_OK) {
        if (!msg[0] && e != S3_ERR_MALFORMED_XML)
            abort(); /* every refusal names its fault */
        return 0;
    }
    if (t.n > S3_TAGS_MAX)
        abort();
    for (size_t i = 0; i < t.n; i++)
        if (!t.tags[i].key[0])
            abort();
    wh_sbuf_t q;
    wh_sbuf_init(&q);
    s3_tags_format_query(&t, &q);
    if (!q.oom) {
        if (s3_tags_parse_query(q.data ? q.data : "", q.len, S3_TAGS_MAX, &back, msg, sizeof msg) !=
            S3_OK)
            abort();
        same(&t, &back);
    }
    wh_sbuf_free(&q);
    wh_sbuf_t x;
    wh_sbuf_init(&x);
    s3_tags_format_xml(&t, &x, "urn:x");
    if (!x.oom) {
        if (s3_tags_parse_xml(x.data, x.len, S3_TAGS_MAX, &back, msg, sizeof msg) != S3_OK)
            abort();
        same(&t, &back);
    }
    wh_sbuf_free(&x);
    return 0;
}
