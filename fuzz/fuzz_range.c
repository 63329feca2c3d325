/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer driver for s3_range_parse: the first 8 bytes are the object size (little endian),
 * the rest the Range header. A served range always lies inside the object. */
#include "s3/range.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 8)
        return 0;
    uint64_t osize = 0;
    for (int i = 7; i >= 0; i--)
        osize = osize << 8 | data[i];
    char *h = malloc(size - 8 + 1);
    if (!h)
        return 0;
    memcpy(h, data + 8, size - 8);
    h[size - 8] = '\0';
    uint64_t off = 0, len = 0;
    s3_range_result_t r = s3_range_parse(h, osize, &off, &len);
    if (r == S3_RANGE_OK && (len == 0 || off >= osize || len > osize - off))
        abort();
    if (r != S3_RANGE_OK && r != S3_RANGE_IGNORE && r != S3_RANGE_UNSATISFIABLE)
        abort();
    if (osize == 0 && r == S3_RANGE_OK)
        abort();
    free(h);
    return 0;
}
