/* SPDX-License-Identifier: Apache-2.0 */
/* Byte ranges on the S3 wire, one family of strict parsers:
 * - Range on GET: a single "bytes=" range, including suffix (-N) and open (N-) forms;
 * - x-amz-copy-source-range on UploadPartCopy: "bytes=first-last", both given;
 * - Content-Range in replies: formatted by the server, parsed by the client. */
#ifndef WH_S3_RANGE_H
#define WH_S3_RANGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    S3_RANGE_OK = 0, /* serve [*off, *off+*len) as 206 */
    S3_RANGE_IGNORE, /* syntactically invalid or multi-range: serve whole (200), as S3 does */
    S3_RANGE_UNSATISFIABLE, /* 416 InvalidRange */
} s3_range_result_t;

s3_range_result_t s3_range_parse(const char *hdr, uint64_t size, uint64_t *off, uint64_t *len);

/* x-amz-copy-source-range against a source of size bytes. Unlike Range, both ends are required
 * and nothing is ignored: S3_RANGE_IGNORE here means malformed (the caller answers
 * InvalidArgument), S3_RANGE_UNSATISFIABLE a well-formed range not inside the source. */
s3_range_result_t s3_copy_range_parse(const char *hdr, uint64_t size, uint64_t *off, uint64_t *len);

/* Content-Range "bytes off-(off+len-1)/size" (len > 0), or with len == 0 the unsatisfied form
 * "bytes *\/size". Returns the length written, or 0 when out is too small. */
#define S3_CONTENT_RANGE_MAX 80 /* "bytes " and three 20-digit numbers */
size_t s3_content_range_format(char *out, size_t outlen, uint64_t off, uint64_t len, uint64_t size);

/* Parses a Content-Range value. With first != NULL: "bytes a-b/total" where total may be "*"
 * (*has_total false), checking a <= b < total. With first == NULL: only the unsatisfied form
 * "bytes *\/total" or "bytes *\/(star)" is accepted. No whitespace is
 * allowed (callers trim the header value). Returns true on a valid value. */
bool s3_content_range_parse(const char *s, uint64_t *first, uint64_t *last, uint64_t *total,
                            bool *has_total);

#endif
