/* HTTP Range for S3 GET: a single "bytes=" range, including suffix (-N) and open (N-) forms. */
#ifndef WH_S3_RANGE_H
#define WH_S3_RANGE_H

#include <stdint.h>

typedef enum {
    S3_RANGE_OK = 0,         /* serve [*off, *off+*len) as 206 */
    S3_RANGE_IGNORE,         /* syntactically invalid or multi-range: serve whole (200), as S3 does */
    S3_RANGE_UNSATISFIABLE,  /* 416 InvalidRange */
} s3_range_result_t;

s3_range_result_t s3_range_parse(const char *hdr, uint64_t size, uint64_t *off, uint64_t *len);

#endif
