/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer driver for x-amz-rename-source (s3_rename_source_parse in src/shared/s3/rename.c): the
 * first byte is the length of the request's bucket name (taken from the input after it), the
 * rest the header. An accepted header names that bucket, gives a non-empty key without a NUL
 * byte, and re-encoding the key and prefixing "bucket/" yields a header the parser reads back to
 * the same key. */
#include "s3/rename.h"
#include "s3/uri.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t blen = data[0] % 16;
    if (size < 1 + blen)
        return 0;
    char bucket[17];
    memcpy(bucket, data + 1, blen);
    bucket[blen] = '\0';
    if (strlen(bucket) != blen)
        return 0;
    size_t hl = size - 1 - blen;
    char *h = malloc(hl + 1);
    if (!h)
        return 0;
    memcpy(h, data + 1 + blen, hl);
    h[hl] = '\0';
    char *key = NULL;
    size_t klen = 0;
    const char *why = NULL;
    if (s3_rename_source_parse(h, bucket, &key, &klen, &why) == 0) {
        if (!key || klen == 0 || strlen(key) != klen || blen == 0)
            abort();
        wh_sbuf_t enc;
        wh_sbuf_init(&enc);
        wh_sbuf_append(&enc, bucket, blen);
        wh_sbuf_append(&enc, "/", 1);
        s3_uri_encode(key, klen, 0, &enc);
        wh_sbuf_append(&enc, "", 1);
        char *k2 = NULL;
        size_t k2len = 0;
        if (!enc.oom) {
            if (s3_rename_source_parse(enc.data, bucket, &k2, &k2len, &why) != 0 || k2len != klen ||
                memcmp(k2, key, klen) != 0)
                abort();
        }
        free(k2);
        wh_sbuf_free(&enc);
        free(key);
    } else if (!why || key) {
        abort();
    }
    free(h);
    return 0;
}
