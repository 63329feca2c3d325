/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer driver for the internal token parser: never crashes, never reads past len, every
 * refusal says why, and whatever parses re-signs to a token that verifies to the same
 * fields. */
#include "cluster/itoken.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256] = "";
    cl_itoken_t t, u;
    size_t mac_at;
    char *s = malloc(size ? size : 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    if (cl_itoken_parse(s, size, &t, &mac_at, err, sizeof err) != WH_OK) {
        if (err[0] == '\0')
            abort();
        if (cl_itoken_verify("k", 1, s, size, 0, &u, err, sizeof err) == WH_OK)
            abort();
        free(s);
        return 0;
    }
    if (mac_at + 64 != size || t.off + t.len < t.off)
        abort();
    /* Verifying with any key: a random MAC does not match (or the expiry is off). */
    if (cl_itoken_verify("k", 1, s, size, t.expires, &u, err, sizeof err) == WH_OK) {
        /* only if the fuzzer found the real HMAC: then the fields must agree */
        if (memcmp(&u, &t, sizeof t) != 0)
            abort();
    }
    char buf[CL_ITOKEN_MAX + 1];
    if (cl_itoken_sign("k", 1, &t, buf, sizeof buf, err, sizeof err) == WH_OK) {
        if (cl_itoken_verify("k", 1, buf, strlen(buf), t.expires, &u, err, sizeof err) != WH_OK)
            abort();
        if (u.op != t.op || u.off != t.off || u.len != t.len || strcmp(u.chunk, t.chunk) ||
            strcmp(u.mtok, t.mtok) || strcmp(u.peer.addr, t.peer.addr) ||
            u.peer.pid != t.peer.pid || u.peer.uid != t.peer.uid || u.has_crc != t.has_crc ||
            u.crc != t.crc || strcmp(u.target, t.target) || strcmp(u.nonce, t.nonce))
            abort();
    }
    free(s);
    return 0;
}
