/* SPDX-License-Identifier: Apache-2.0 */
/* The window list of a scatter GET (docs/protocol.md, "Scatter GET"): the one parser, checker
 * and packer, shared by server and client.
 *
 * The list is the signed body of POST /<bucket>/<key>?x-wharf-scatter=1: one window per line,
 * "<object offset> <length> <destination offset>\n", each a decimal number without sign or
 * leading zeros (0 itself is "0"), single spaces, every line ending in '\n'. The destination
 * offset is relative to the base of the request's x-amz-rdma-token region. */
#ifndef WH_XFER_WINDOWS_H
#define WH_XFER_WINDOWS_H

#include "base/status.h"

#include <stddef.h>
#include <stdint.h>

#define XFER_WIN_MAX 16384            /* windows in one request */
#define XFER_WIN_MAX_BYTES (1u << 20) /* bytes of one list */
#define XFER_WIN_LINE_MAX 64          /* longest line the packer writes (3 x 20 digits + 3) */

typedef struct xfer_window {
    uint64_t off; /* in the object */
    uint64_t len;
    uint64_t dst; /* in the token's region */
} xfer_window_t;

/* Parses s[0..len) into *out (malloc'd, the caller frees) and *n. WH_ERR_INVALID with a
 * message naming the line and what broke (or the bound exceeded) otherwise. */
wh_status_t xfer_windows_parse(const char *s, size_t len, xfer_window_t **out, size_t *n, char *err,
                               size_t errlen);

typedef enum {
    XFER_WIN_OK = 0,
    XFER_WIN_PAST_END, /* a window reaches past the object's end (416) */
    XFER_WIN_OUTSIDE,  /* a window's destination is outside the region (400) */
    XFER_WIN_OVERLAP,  /* two destinations overlap (400) */
    XFER_WIN_NOMEM,
} xfer_win_check_t;

/* Checks the windows against the object's size and the region's: every [off, off+len) inside
 * the object, every [dst, dst+len) inside [0, region), no two destinations overlapping
 * (zero-length windows overlap nothing). The message names the window(s) by index. */
xfer_win_check_t xfer_windows_check(const xfer_window_t *w, size_t n, uint64_t obj_size,
                                    uint64_t region, char *err, size_t errlen);

/* Appends window w's line to out (at least XFER_WIN_LINE_MAX bytes free); returns its length. */
size_t xfer_window_format(const xfer_window_t *w, char *out);

#endif
