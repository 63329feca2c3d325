/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer driver for libwharf's reply parsing (src/client/client/reply.c): header lines as curl
 * hands them over (status line, x-amz-rdma-*, checksum, error and length headers, /health's
 * x-wharf-unix-socket) and Content-Range.
 * Input: lines separated by '\n'; each is given, unterminated and in an exact-size heap copy, to
 * wc_reply_header, and NUL-terminated to s3_content_range_parse in both forms. */
#include "client/client_int.h"
#include "s3/range.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    wc_resp_t r;
    memset(&r, 0, sizeof r);
    size_t i = 0;
    while (i < size) {
        const uint8_t *nl = memchr(data + i, '\n', size - i);
        size_t n = nl ? (size_t)(nl - (data + i)) + 1 : size - i;
        char *line = malloc(n ? n : 1);
        if (!line)
            return 0;
        memcpy(line, data + i, n);
        wc_reply_header(&r, line, n);
        if (r.status < 0 || r.status > 999)
            abort();
        free(line);

        char *z = malloc(n + 1);
        if (!z)
            return 0;
        memcpy(z, data + i, n);
        z[n] = '\0';
        uint64_t a = 0, b = 0, t = 0;
        bool ht = false;
        if (s3_content_range_parse(z, &a, &b, &t, &ht) && (a > b || (ht && b >= t)))
            abort();
        (void)s3_content_range_parse(z, NULL, NULL, &t, &ht);
        free(z);
        i += n;
    }
    /* every string field stays NUL-terminated inside its array */
    if (memchr(r.etag, 0, sizeof r.etag) == NULL ||
        memchr(r.s3_code, 0, sizeof r.s3_code) == NULL ||
        memchr(r.s3_message, 0, sizeof r.s3_message) == NULL ||
        memchr(r.content_range, 0, sizeof r.content_range) == NULL)
        abort();
    return 0;
}
