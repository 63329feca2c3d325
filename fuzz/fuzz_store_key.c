/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer driver for the store's validators of untrusted names: store_key_valid (object keys)
 * and store_bucket_name_valid. The key check is differential: an independent decoder that
 * builds each code point and then asks "shortest form? surrogate? above U+10FFFF? NUL?" must
 * agree with the store's table-driven check on every input. */
#include "store/store.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int ref_key_valid(const uint8_t *s, size_t n)
{
    if (n == 0 || n > STORE_MAX_KEY)
        return 0;
    size_t i = 0;
    while (i < n) {
        uint32_t c = s[i];
        size_t len;
        uint32_t min;
        if (c < 0x80) {
            len = 1, min = 0;
        } else if ((c & 0xe0) == 0xc0) {
            len = 2, min = 0x80, c &= 0x1f;
        } else if ((c & 0xf0) == 0xe0) {
            len = 3, min = 0x800, c &= 0x0f;
        } else if ((c & 0xf8) == 0xf0) {
            len = 4, min = 0x10000, c &= 0x07;
        } else {
            return 0;
        }
        if (i + len > n)
            return 0;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xc0) != 0x80)
                return 0;
            c = (c << 6) | (s[i + k] & 0x3f);
        }
        if (c < min || c == 0 || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
            return 0;
        i += len;
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* Exact-size copy so ASan catches any read past the key. */
    char *key = malloc(size ? size : 1);
    if (!key)
        return 0;
    memcpy(key, data, size);
    if (store_key_valid(key, size) != (ref_key_valid(data, size) == 1))
        abort();
    free(key);

    char name[80];
    size_t n = size < sizeof name - 1 ? size : sizeof name - 1;
    memcpy(name, data, n);
    name[n] = '\0';
    if (store_bucket_name_valid(name)) {
        /* Whatever passes is DNS-safe: 3..63 of [a-z0-9.-], alnum at both ends, no "..". */
        size_t l = strlen(name);
        if (l < 3 || l > 63 || strstr(name, ".."))
            abort();
        for (size_t i = 0; i < l; i++) {
            char c = name[i];
            int alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
            if (!alnum && c != '.' && c != '-')
                abort();
            if ((i == 0 || i == l - 1) && !alnum)
                abort();
        }
    }
    return 0;
}
