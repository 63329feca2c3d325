/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer driver for the scatter GET's window list (xfer_windows_parse, xfer_windows_check):
 * never crashes, never reads past len, every failure says why, whatever parses is within the
 * bounds and re-formats to exactly the input, and the checker's verdict matches a brute-force
 * one on small lists. */
#include "xfer/windows.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[300];
    char *s = malloc(size ? size : 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    xfer_window_t *w = NULL;
    size_t n = 0;
    wh_status_t st = xfer_windows_parse(s, size, &w, &n, err, sizeof err);
    if (st != WH_OK) {
        if (err[0] == '\0' || w || n)
            abort();
        free(s);
        return 0;
    }
    if (n == 0 || n > XFER_WIN_MAX || size > XFER_WIN_MAX_BYTES)
        abort();
    /* The canonical form: formatting the windows gives back the very bytes. */
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        char line[XFER_WIN_LINE_MAX];
        size_t k = xfer_window_format(&w[i], line);
        if (at + k > size || memcmp(s + at, line, k) != 0)
            abort();
        at += k;
    }
    if (at != size)
        abort();
    /* The checker against brute force, for small lists. */
    uint64_t obj = 1000, region = 1000;
    xfer_win_check_t ck = xfer_windows_check(w, n, obj, region, err, sizeof err);
    if (n <= 64) {
        xfer_win_check_t want = XFER_WIN_OK;
        for (size_t i = 0; i < n && want == XFER_WIN_OK; i++)
            if (w[i].off > obj || w[i].len > obj - w[i].off)
                want = XFER_WIN_PAST_END;
        for (size_t i = 0; i < n && want == XFER_WIN_OK; i++)
            if (w[i].dst > region || w[i].len > region - w[i].dst)
                want = XFER_WIN_OUTSIDE;
        for (size_t i = 0; i < n && want == XFER_WIN_OK; i++)
            for (size_t j = i + 1; j < n && want == XFER_WIN_OK; j++)
                if (w[i].len && w[j].len && w[i].dst < w[j].dst + w[j].len &&
                    w[j].dst < w[i].dst + w[i].len)
                    want = XFER_WIN_OVERLAP;
        if (ck != want)
            abort();
    }
    if (ck != XFER_WIN_OK && err[0] == '\0')
        abort();
    free(w);
    free(s);
    return 0;
}
