/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer driver for Content-Range (src/shared/s3/range.c), which the server formats and the
 * client parses. The input is parsed as a header value in both forms; a value that parses as a
 * range must satisfy first <= last < total, and formatting what was parsed must parse back to the
 * same numbers. The first 24 bytes, read as three little-endian numbers, also
 * drive the formatter, whose output must parse back to the same numbers. */
#include "s3/range.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *z = malloc(size + 1);
    if (!z)
        return 0;
    memcpy(z, data, size);
    z[size] = '\0';
    uint64_t a = 0, b = 0, t = 0;
    bool ht = false;
    if (s3_content_range_parse(z, &a, &b, &t, &ht)) {
        if (a > b || (ht && b >= t))
            abort();
        if (ht) {
            /* formatting what was parsed parses back to the same numbers */
            char out[S3_CONTENT_RANGE_MAX];
            uint64_t a2, b2, t2;
            bool ht2;
            if (s3_content_range_format(out, sizeof out, a, b - a + 1, t) == 0 ||
                !s3_content_range_parse(out, &a2, &b2, &t2, &ht2) || a2 != a || b2 != b ||
                t2 != t || !ht2)
                abort();
        }
    }
    if (s3_content_range_parse(z, NULL, NULL, &t, &ht) && strncmp(z, "bytes */", 8) != 0)
        abort();
    free(z);

    if (size >= 24) {
        uint64_t off = le64(data), len = le64(data + 8), total = le64(data + 16);
        if (len && off + len - 1 < total && off + len - 1 >= off) {
            char out[S3_CONTENT_RANGE_MAX];
            if (s3_content_range_format(out, sizeof out, off, len, total) == 0)
                abort();
            if (!s3_content_range_parse(out, &a, &b, &t, &ht) || !ht || a != off ||
                b != off + len - 1 || t != total)
                abort();
        }
        char out[S3_CONTENT_RANGE_MAX];
        if (s3_content_range_format(out, sizeof out, 0, 0, total) == 0 ||
            !s3_content_range_parse(out, NULL, NULL, &t, &ht) || !ht || t != total)
            abort();
    }
    return 0;
}
