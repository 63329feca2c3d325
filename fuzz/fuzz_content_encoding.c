/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer driver for s3api_content_encoding_kept (src/server/s3api/object_meta.c), which takes
 * aws-chunked out of a request's Content-Encoding list before the list is kept with the object.
 * Checks: nothing crashes; the result holds no aws-chunked entry (any case), no empty entry and
 * no entry with surrounding blanks; its entries are the input's other entries, in order; and
 * applying it again changes nothing. */
#include "s3api/s3api.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The next trimmed, non-empty entry of a comma list at *p: its start and length, or 0 at end. */
static size_t next_item(const char **p, const char **item)
{
    while (**p) {
        const char *s = *p, *e = strchr(s, ',');
        if (!e)
            e = s + strlen(s);
        *p = *e ? e + 1 : e;
        while (s < e && (*s == ' ' || *s == '\t'))
            s++;
        while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
            e--;
        if (e > s) {
            *item = s;
            return (size_t)(e - s);
        }
    }
    return 0;
}

static int is_chunked(const char *s, size_t n)
{
    return n == 11 && strncasecmp(s, "aws-chunked", 11) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096)
        return 0;
    char *in = malloc(size + 1);
    if (!in)
        return 0;
    memcpy(in, data, size);
    in[size] = '\0';
    char *out = s3api_content_encoding_kept(in);
    if (!out) {
        free(in);
        return 0;
    }
    /* Walk both lists side by side: the output is the input without aws-chunked. */
    const char *pi = in, *po = out, *a, *b;
    size_t na, nb;
    for (;;) {
        while ((na = next_item(&pi, &a)) && is_chunked(a, na))
            ;
        nb = next_item(&po, &b);
        if (!na || !nb) {
            if (na || nb)
                abort(); /* an entry lost or invented */
            break;
        }
        if (na != nb || memcmp(a, b, na) != 0 || is_chunked(b, nb))
            abort();
    }
    /* Entries are joined by ", " exactly: no blanks around, no empty ones. */
    for (const char *c = out; *c; c++)
        if (*c == ',' &&
            (c[1] != ' ' || c[2] == ' ' || c[2] == ',' || !c[2] || c == out || c[-1] == ' '))
            abort();
    char *again = s3api_content_encoding_kept(out);
    if (again && strcmp(again, out) != 0)
        abort();
    free(again);
    free(out);
    free(in);
    return 0;
}
