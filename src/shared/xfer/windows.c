/* SPDX-License-Identifier: Apache-2.0 */
/* The scatter GET's window list (windows.h): strict text, bounded, every error naming the line
 * and the field. */
#include "xfer/windows.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const g_field[3] = {"object offset", "length", "destination offset"};

/* A decimal u64 at s[*i..len) up to the terminator term; advances *i past it. */
static const char *win_u64(const char *s, size_t len, size_t *i, char term, uint64_t *out)
{
    size_t start = *i;
    uint64_t v = 0;
    while (*i < len && s[*i] >= '0' && s[*i] <= '9') {
        unsigned d = (unsigned)(s[*i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return "larger than 2^64-1";
        v = v * 10 + d;
        (*i)++;
    }
    size_t nd = *i - start;
    if (nd == 0)
        return "not a decimal number";
    if (nd > 1 && s[start] == '0')
        return "has a leading zero";
    if (*i == len)
        return term == '\n' ? "the line does not end in a newline" : "the line ends early";
    if (s[*i] != term)
        return term == '\n' ? "followed by something other than a newline"
                            : "followed by something other than one space";
    (*i)++;
    *out = v;
    return NULL;
}

wh_status_t xfer_windows_parse(const char *s, size_t len, xfer_window_t **out, size_t *n, char *err,
                               size_t errlen)
{
    if (err && errlen)
        err[0] = '\0';
    *out = NULL;
    *n = 0;
    if (!s || len == 0)
        return wh_errf(WH_ERR_INVALID, err, errlen, "window list: empty (at least one window)");
    if (len > XFER_WIN_MAX_BYTES)
        return wh_errf(WH_ERR_INVALID, err, errlen,
                       "window list: %zu bytes, more than the %u a request may carry", len,
                       XFER_WIN_MAX_BYTES);
    size_t lines = 0;
    for (size_t i = 0; i < len; i++)
        lines += s[i] == '\n';
    if (lines > XFER_WIN_MAX)
        return wh_errf(WH_ERR_INVALID, err, errlen,
                       "window list: %zu windows, more than the %u a request may carry", lines,
                       (unsigned)XFER_WIN_MAX);
    xfer_window_t *w = calloc(lines ? lines : 1, sizeof *w);
    if (!w)
        return wh_errf(WH_ERR_NOMEM, err, errlen, "window list: out of memory");
    size_t i = 0, k = 0;
    while (i < len) {
        uint64_t v[3];
        for (int f = 0; f < 3; f++) {
            const char *why = win_u64(s, len, &i, f == 2 ? '\n' : ' ', &v[f]);
            if (why) {
                free(w);
                return wh_errf(WH_ERR_INVALID, err, errlen, "window list line %zu, %s: %s", k + 1,
                               g_field[f], why);
            }
        }
        if (v[0] + v[1] < v[0] || v[2] + v[1] < v[2]) {
            free(w);
            return wh_errf(WH_ERR_INVALID, err, errlen,
                           "window list line %zu: offset + length wraps past 2^64", k + 1);
        }
        w[k++] = (xfer_window_t){.off = v[0], .len = v[1], .dst = v[2]};
    }
    *out = w;
    *n = k;
    return WH_OK;
}

static int win_by_dst(const void *a, const void *b, void *arg)
{
    const xfer_window_t *w = arg;
    uint64_t x = w[*(const size_t *)a].dst, y = w[*(const size_t *)b].dst;
    return x < y ? -1 : x > y;
}

xfer_win_check_t xfer_windows_check(const xfer_window_t *w, size_t n, uint64_t obj_size,
                                    uint64_t region, char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = '\0';
    for (size_t i = 0; i < n; i++)
        if (w[i].off > obj_size || w[i].len > obj_size - w[i].off) {
            snprintf(err, errlen,
                     "window %zu: bytes %" PRIu64 "+%" PRIu64
                     " reach past the object's end (%" PRIu64 " bytes)",
                     i, w[i].off, w[i].len, obj_size);
            return XFER_WIN_PAST_END;
        }
    for (size_t i = 0; i < n; i++)
        if (w[i].dst > region || w[i].len > region - w[i].dst) {
            snprintf(err, errlen,
                     "window %zu: destination %" PRIu64 "+%" PRIu64
                     " lies outside the x-amz-rdma-token region (%" PRIu64 " bytes)",
                     i, w[i].dst, w[i].len, region);
            return XFER_WIN_OUTSIDE;
        }
    size_t *ix = malloc((n ? n : 1) * sizeof *ix), m = 0;
    if (!ix) {
        snprintf(err, errlen, "window list: out of memory");
        return XFER_WIN_NOMEM;
    }
    for (size_t i = 0; i < n; i++)
        if (w[i].len)
            ix[m++] = i;
    qsort_r(ix, m, sizeof *ix, win_by_dst, (void *)w);
    for (size_t j = 1; j < m; j++) {
        const xfer_window_t *a = &w[ix[j - 1]], *b = &w[ix[j]];
        if (a->dst + a->len > b->dst) {
            snprintf(err, errlen,
                     "windows %zu and %zu: destinations %" PRIu64 "+%" PRIu64 " and %" PRIu64
                     "+%" PRIu64 " overlap",
                     ix[j - 1], ix[j], a->dst, a->len, b->dst, b->len);
            free(ix);
            return XFER_WIN_OVERLAP;
        }
    }
    free(ix);
    return XFER_WIN_OK;
}

size_t xfer_window_format(const xfer_window_t *w, char *out)
{
    int k = snprintf(out, XFER_WIN_LINE_MAX, "%" PRIu64 " %" PRIu64 " %" PRIu64 "\n", w->off,
                     w->len, w->dst);
    return k > 0 ? (size_t)k : 0;
}
