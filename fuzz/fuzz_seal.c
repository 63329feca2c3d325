/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer driver for the sealed-secret text (base/seal.c): any text from a damaged or hostile
 * metadata row is refused without reading past it, never opens to anything but what was sealed,
 * and whatever is sealed opens to itself (and not with another context). */
#include "base/seal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const uint8_t key[WH_SEAL_KEY_LEN] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    char out[600];
    size_t n = 0;
    /* Random text practically never carries a valid tag under this key. */
    if (wh_unseal(key, "AKIAFUZZ", s, out, sizeof out, &n) == 0 && n >= sizeof out)
        abort();
    if (size <= 512) {
        char text[WH_SEAL_TEXT_LEN(512)];
        if (wh_seal(key, "AKIAFUZZ", data, size, text, sizeof text) != 0)
            abort();
        if (wh_unseal(key, "AKIAFUZZ", text, out, sizeof out, &n) != 0 || n != size ||
            memcmp(out, data, size) != 0)
            abort();
        if (wh_unseal(key, "AKIAOTHER", text, out, sizeof out, &n) == 0)
            abort();
    }
    free(s);
    return 0;
}
