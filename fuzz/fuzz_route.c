/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer driver for wharfd's request routing (src/server/front/route.c). The input is split at
 * NUL bytes into method, raw path, raw query and Host; routing must not crash, must always
 * name an API (and a front_ops row for that API when it names one), and a key it decodes must be
 * exactly key_len bytes long. */
#include "s3api/s3api.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 4);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    memset(buf + size, 0, 4);
    const char *parts[4] = {"", "", "", ""};
    size_t np = 0, start = 0;
    for (size_t i = 0; i <= size && np < 4; i++) {
        if (i == size || buf[i] == '\0') {
            parts[np++] = buf + start;
            start = i + 1;
        }
    }
    static const char *const methods[] = {"GET", "PUT", "POST", "DELETE", "HEAD", "PATCH"};
    const char *method = parts[0];
    if (*method && (unsigned char)*method < 8)
        method = methods[(unsigned char)*method % 6];
    front_route_t r;
    s3api_route_parse(method, parts[1], np > 2 && *parts[2] ? parts[2] : NULL,
                      np > 3 ? parts[3] : NULL, "127.0.0.1", size & 1, &r);
    if ((unsigned)r.api >= FRONT_API__COUNT)
        abort();
    if (r.key && r.key_len < strlen(r.key))
        abort();
    if (r.api == FRONT_API_BAD_REQUEST && !r.why)
        abort();
    /* the front_ops row the router picked is for the API it named, and has a handler */
    if (r.op && (r.op->api != r.api || !r.op->begin))
        abort();
    for (size_t i = 0; i < r.nq; i++)
        if (!r.q[i].name || !r.q[i].value)
            abort();
    (void)front_route_q(&r, "uploadId");
    front_route_free(&r);
    free(buf);
    return 0;
}
