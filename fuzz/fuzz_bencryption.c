/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer driver for the ServerSideEncryptionConfiguration parser (s3_encryption_parse,
 * src/shared/s3/bucket_config.c), the body of PutBucketEncryption. Checks that an accepted document
 * names a known algorithm and that its written form (what GetBucketEncryption answers)
 * parses back to the same algorithm. The first byte 0xff instead feeds the rest to the parser
 * of a row's encryption parameters (store_sse_parse, src/store/store/crypt.c), which must accept
 * its own formatted text back unchanged. */
#include "s3/bucket_config.h"
#include "store/crypt.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void sse_text(const uint8_t *data, size_t size)
{
    char *t = malloc(size + 1);
    if (!t)
        return;
    memcpy(t, data, size);
    t[size] = '\0';
    store_sse_t s;
    if (store_sse_parse(t, &s) == WH_OK && s.kind != STORE_SSE_NONE) {
        if (s.kind != STORE_SSE_S3 && s.kind != STORE_SSE_C && s.kind != STORE_SSE_KMS)
            abort();
        char *back = store_sse_format(&s);
        store_sse_t s2;
        if (!back || store_sse_parse(back, &s2) != WH_OK || s2.kind != s.kind ||
            memcmp(s2.salt, s.salt, sizeof s.salt) != 0 || strcmp(s2.secret, s.secret) != 0)
            abort();
        free(back);
    }
    free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size >= 1 && data[0] == 0xff) {
        sse_text(data + 1, size - 1);
        return 0;
    }
    char msg[256], kid[64], kid2[64];
    unsigned alg = 0;
    if (s3_encryption_parse_key((const char *)data, size, &alg, kid, sizeof kid, msg, sizeof msg) !=
        S3_OK)
        return 0;
    if (alg < S3_SSE_AES256 || alg > S3_SSE_KMS_DSSE)
        abort();
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    s3_encryption_format_key(alg, kid, &b, "x");
    unsigned back = 0;
    if (b.oom ||
        s3_encryption_parse_key(b.data, b.len, &back, kid2, sizeof kid2, msg, sizeof msg) !=
            S3_OK ||
        back != alg || strcmp(kid, kid2) != 0)
        abort();
    wh_sbuf_free(&b);
    return 0;
}
