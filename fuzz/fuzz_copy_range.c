/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer driver for x-amz-copy-source-range (s3_copy_range_parse in src/shared/s3/range.c): the
 * first 8 bytes are the source size (little endian), the rest the header. An accepted range
 * lies inside the source and is exactly what the header names; a header not of the form
 * "bytes=<digits>-<digits>" is never accepted. */
#include "s3/range.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 8)
        return 0;
    uint64_t src = 0;
    for (int i = 7; i >= 0; i--)
        src = src << 8 | data[i];
    char *h = malloc(size - 8 + 1);
    if (!h)
        return 0;
    memcpy(h, data + 8, size - 8);
    h[size - 8] = '\0';
    uint64_t off = 0, len = 0;
    s3_range_result_t r = s3_copy_range_parse(h, src, &off, &len);
    if (r == S3_RANGE_OK) {
        if (len == 0 || off >= src || len > src - off)
            abort();
        /* the strict form: digits only around one dash */
        const char *p = h + 6;
        if (strncmp(h, "bytes=", 6) != 0 || !*p)
            abort();
        size_t dashes = 0;
        for (; *p; p++) {
            if (*p == '-')
                dashes++;
            else if (*p < '0' || *p > '9')
                abort();
        }
        if (dashes != 1)
            abort();
        uint64_t a = 0, z = 0;
        if (sscanf(h, "bytes=%" SCNu64 "-%" SCNu64, &a, &z) != 2 || a != off || z != off + len - 1)
            abort();
    } else if (r != S3_RANGE_IGNORE && r != S3_RANGE_UNSATISFIABLE) {
        abort();
    }
    free(h);
    return 0;
}
