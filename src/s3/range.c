/* HTTP Range (RFC 9110 section 14) as S3 applies it to GET: one "bytes=" range. A header that
 * is not a single syntactically valid byte range is ignored (the whole object is served), as
 * S3 does; a valid range that selects nothing is unsatisfiable (416 InvalidRange). */
#include "s3/range.h"

#include <stddef.h>
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
