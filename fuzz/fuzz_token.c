/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer driver for xfer_token_parse: never crashes, never reads past len, and whatever parses
 * re-packs to a token that parses to the same fields (ofi1, cuda1; cuobj: to the very same
 * bytes). */
#include "xfer/token.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256];
    xfer_token_t t, u;
    /* A private copy of exactly size bytes, so ASan catches any read past len. */
    char *s = malloc(size ? size : 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    wh_status_t st = xfer_token_parse(s, size, &t, err, sizeof err);
    if (st != WH_OK) {
        if (err[0] == '\0' || strlen(err) >= sizeof err)
            abort(); /* every failure says why */
        free(s);
        return 0;
    }
    if (t.base + t.size < t.base)
        abort();
    if (t.dialect == XFER_TOKEN_DIALECT_OFI1) {
        char buf[XFER_TOKEN_MAX_LEN + 1];
        if (xfer_token_pack_ofi1(t.base, t.size, t.provider, t.ep_name, t.ep_name_len, t.key, buf,
                                 sizeof buf) != WH_OK)
            abort();
        if (xfer_token_parse(buf, strlen(buf), &u, err, sizeof err) != WH_OK)
            abort();
        if (u.base != t.base || u.size != t.size || u.key != t.key ||
            u.ep_name_len != t.ep_name_len || memcmp(u.ep_name, t.ep_name, t.ep_name_len) ||
            strcmp(u.provider, t.provider))
            abort();
    } else if (t.dialect == XFER_TOKEN_DIALECT_CUOBJ) {
        char out[82];
        if (size != 81 || xfer_token_pack_cuobj(&t, out) != WH_OK || memcmp(out, s, 81) != 0)
            abort();
    } else if (t.dialect == XFER_TOKEN_DIALECT_CUDA1) {
        char buf[XFER_TOKEN_MAX_LEN + 1];
        if (xfer_token_pack_cuda1(t.base, t.size, t.cuda_uuid, t.cuda_ipc, t.cuda_off, buf,
                                  sizeof buf) != WH_OK)
            abort();
        if (xfer_token_parse(buf, strlen(buf), &u, err, sizeof err) != WH_OK)
            abort();
        if (u.dialect != XFER_TOKEN_DIALECT_CUDA1 || u.base != t.base || u.size != t.size ||
            u.cuda_off != t.cuda_off || memcmp(u.cuda_uuid, t.cuda_uuid, 16) ||
            memcmp(u.cuda_ipc, t.cuda_ipc, XFER_TOKEN_CUDA_IPC_LEN) || strcmp(u.provider, "cuda"))
            abort();
    } else {
        abort();
    }
    free(s);
    return 0;
}
