/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer driver for the erasure-coding layout parser (a bucket's wharf-ec tag value, the
 * gateway's --ec): never crashes, never reads past the string, every refusal says why, and
 * whatever parses is within the bounds and encodes and decodes a small stripe back. */
#include "cluster/ec.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 64)
        return 0;
    char s[65];
    memcpy(s, data, size);
    s[size] = '\0';
    char err[200] = "";
    unsigned k = 0, m = 0;
    if (cl_ec_parse(s, &k, &m, err, sizeof err) != WH_OK) {
        if (!strstr(err, "erasure coding"))
            abort();
        return 0;
    }
    if (k < 1 || m < 1 || k + m > CL_EC_MAX)
        abort();
    uint8_t buf[CL_EC_MAX][8], want[CL_EC_MAX][8], *sh[CL_EC_MAX];
    bool present[CL_EC_MAX];
    for (unsigned i = 0; i < k + m; i++) {
        for (unsigned b = 0; b < 8; b++)
            buf[i][b] = (uint8_t)(i * 31 + b * 7 + size);
        sh[i] = buf[i];
    }
    if (cl_ec_encode(k, m, 8, sh) != WH_OK)
        abort();
    memcpy(want, buf, sizeof buf);
    for (unsigned i = 0; i < k + m; i++)
        present[i] = i >= m; /* the first m shards lost */
    for (unsigned i = 0; i < m; i++)
        memset(buf[i], 0, 8);
    if (cl_ec_decode(k, m, 8, sh, present) != WH_OK || memcmp(buf, want, sizeof buf) != 0)
        abort();
    return 0;
}
