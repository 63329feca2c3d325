/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer driver for wharfd's configuration file parser (src/server/roles/config.c over libinih).
 * The first byte picks the role (serve, gateway, storage); the rest is the file. Checks that
 * a file the parser takes stops being taken once an unknown key is added after it (every
 * key is checked, whatever came before). */
#include "roles/config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 64 * 1024)
        return 0;
    static const char *const roles[] = {"serve", "gateway", "storage"};
    const char *role = roles[data[0] % 3];
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    if (role_conf_parse_text(role, text, len) != 0)
        return 0;
    static const char tail[] = "\nno_such_key = 1\n";
    char *more = malloc(len + sizeof tail);
    if (!more)
        return 0;
    memcpy(more, text, len);
    memcpy(more + len, tail, sizeof tail);
    if (role_conf_parse_text(role, more, len + sizeof tail - 1) == 0)
        abort();
    free(more);
    return 0;
}
