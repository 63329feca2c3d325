/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer driver for the browser console's request parsing (src/server/console/session.c): the
 * Cookie header's session id, and the Origin rule. The input is split at the first NUL into a
 * Cookie (and Origin) value and a Host value. A session id found must be exactly 64 lowercase
 * hex characters that occur in the input after the cookie's name; an Origin that passes has
 * the scheme and contains the Host's name (before any ':'). */
#include "console/console.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 2);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    buf[size] = buf[size + 1] = '\0';
    const char *a = buf;
    const char *host = buf + strlen(buf) + (strlen(buf) < size ? 1 : 0);

    char sid[CONSOLE_SID_LEN + 1];
    memset(sid, 'x', sizeof sid);
    if (console_cookie_sid(a, sid)) {
        if (strlen(sid) != CONSOLE_SID_LEN)
            abort();
        for (size_t i = 0; i < CONSOLE_SID_LEN; i++)
            if (!((sid[i] >= '0' && sid[i] <= '9') || (sid[i] >= 'a' && sid[i] <= 'f')))
                abort();
        const char *name = strstr(a, CONSOLE_COOKIE);
        if (!name || !strstr(name, sid))
            abort();
    } else if (sid[0] != '\0') {
        abort();
    }
    char hname[256];
    size_t hl = strcspn(host, ":");
    snprintf(hname, sizeof hname, "%.*s", (int)(hl < sizeof hname ? hl : sizeof hname - 1), host);
    for (int tls = 0; tls < 2; tls++)
        if (console_origin_ok(a, host, tls) &&
            (!*host || !strcasestr(a, hname) ||
             strncasecmp(a, tls ? "https://" : "http://", tls ? 8 : 7) != 0))
            abort();
    free(buf);
    return 0;
}
