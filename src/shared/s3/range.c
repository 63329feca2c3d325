/* SPDX-License-Identifier: Apache-2.0 */
/* Byte ranges (RFC 9110 section 14) as S3 uses them.
 * GET Range: one "bytes=" range. A header that is not a single syntactically valid byte range
 * is ignored (the whole object is served), as S3 does; a valid range that selects nothing is
 * unsatisfiable (416 InvalidRange).
 * x-amz-copy-source-range: "bytes=first-last" exactly, within the source.
 * Content-Range: the reply form of a served range, and its parser for the client. */
#include "s3/range.h"
#include "base/util.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Decimal digits at *p, saturating at UINT64_MAX. Returns the number of digits read. */
static size_t range_num(const char *p, uint64_t *out)
{
    uint64_t v = 0;
    size_t n = 0;
    while (p[n] >= '0' && p[n] <= '9') {
        uint64_t d = (uint64_t)(p[n] - '0');
        v = v > (UINT64_MAX - d) / 10 ? UINT64_MAX : v * 10 + d;
        n++;
    }
    *out = v;
    return n;
}

s3_range_result_t s3_range_parse(const char *hdr, uint64_t size, uint64_t *off, uint64_t *len)
{
    if (!hdr)
        return S3_RANGE_IGNORE;
    const char *p = hdr;
    while (*p == ' ' || *p == '\t')
        p++;
    if (strncasecmp(p, "bytes", 5) != 0)
        return S3_RANGE_IGNORE;
    p += 5;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p++ != '=')
        return S3_RANGE_IGNORE;
    while (*p == ' ' || *p == '\t')
        p++;

    uint64_t first = 0, last = 0;
    int suffix = 0, open = 0;
    size_t n = range_num(p, &first);
    p += n;
    if (*p++ != '-')
        return S3_RANGE_IGNORE;
    if (n == 0)
        suffix = 1;
    size_t m = range_num(p, &last);
    p += m;
    if (m == 0) {
        if (suffix)
            return S3_RANGE_IGNORE; /* "bytes=-" */
        open = 1;
    }
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p != '\0')
        return S3_RANGE_IGNORE; /* trailing garbage or a second range */

    if (suffix) {
        /* bytes=-N: the last N bytes. N = 0 selects nothing. */
        if (last == 0 || size == 0)
            return S3_RANGE_UNSATISFIABLE;
        uint64_t l = last < size ? last : size;
        *off = size - l;
        *len = l;
        return S3_RANGE_OK;
    }
    if (!open && last < first)
        return S3_RANGE_IGNORE; /* invalid byte-range-spec */
    if (first >= size)
        return S3_RANGE_UNSATISFIABLE;
    if (open || last >= size)
        last = size - 1;
    *off = first;
    *len = last - first + 1;
    return S3_RANGE_OK;
}

s3_range_result_t s3_copy_range_parse(const char *hdr, uint64_t size, uint64_t *off, uint64_t *len)
{
    if (!hdr || strncmp(hdr, "bytes=", 6) != 0)
        return S3_RANGE_IGNORE;
    const char *p = hdr + 6;
    const char *dash = strchr(p, '-');
    uint64_t first, last;
    if (!dash || wh_parse_u64(p, (size_t)(dash - p), &first) != 0 ||
        wh_parse_u64(dash + 1, strlen(dash + 1), &last) != 0 || last < first)
        return S3_RANGE_IGNORE;
    if (last >= size)
        return S3_RANGE_UNSATISFIABLE;
    *off = first;
    *len = last - first + 1;
    return S3_RANGE_OK;
}

size_t s3_content_range_format(char *out, size_t outlen, uint64_t off, uint64_t len, uint64_t size)
{
    int n;
    if (len == 0)
        n = snprintf(out, outlen, "bytes */%" PRIu64, size);
    else
        n = snprintf(out, outlen, "bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64, off, off + len - 1,
                     size);
    if (n < 0 || (size_t)n >= outlen) {
        if (outlen)
            out[0] = '\0';
        return 0;
    }
    return (size_t)n;
}

bool s3_content_range_parse(const char *s, uint64_t *first, uint64_t *last, uint64_t *total,
                            bool *has_total)
{
    *has_total = false;
    if (strncmp(s, "bytes ", 6) != 0)
        return false;
    s += 6;
    const char *slash = strchr(s, '/');
    if (!slash)
        return false;
    if (strcmp(slash + 1, "*") != 0) {
        if (wh_parse_u64(slash + 1, strlen(slash + 1), total) != 0)
            return false;
        *has_total = true;
    }
    if (*s == '*')
        return first == NULL && slash == s + 1;
    const char *dash = memchr(s, '-', (size_t)(slash - s));
    if (!dash || !first)
        return false;
    if (wh_parse_u64(s, (size_t)(dash - s), first) != 0 ||
        wh_parse_u64(dash + 1, (size_t)(slash - dash - 1), last) != 0 || *first > *last)
        return false;
    return !*has_total || *last < *total;
}
