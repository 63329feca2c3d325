/* SPDX-License-Identifier: Apache-2.0 */
/* multipart/form-data request bodies (RFC 7578), parsed as they stream in: the S3 POST Object
 * form. Pure: no I/O; the caller feeds the body in any pieces and gets each part's headers
 * and bytes through callbacks, the bytes as they arrive (a file part may be gigabytes). */
#ifndef WH_S3_FORM_H
#define WH_S3_FORM_H

#include "s3/errors.h"

#include <stdbool.h>
#include <stddef.h>

#define S3_FORM_BOUNDARY_MAX 70      /* RFC 2046 */
#define S3_FORM_PART_HEADER_MAX 8192 /* a part's header section */

typedef struct s3_form s3_form_t;

/* A part's headers: name from Content-Disposition (never NULL), filename when it names one
 * (else NULL), content_type when given (else NULL). Borrowed for the call only. */
typedef struct s3_form_part {
    const char *name;
    const char *filename;
    const char *content_type;
} s3_form_part_t;

/* Each returns S3_OK to go on; any other value stops the parser, and feed returns it as is
 * (the callback keeps its own message). */
typedef struct s3_form_cb {
    s3_err_t (*part_begin)(void *arg, const s3_form_part_t *part);
    s3_err_t (*part_data)(void *arg, const void *p, size_t n);
    s3_err_t (*part_end)(void *arg);
} s3_form_cb_t;

/* The boundary parameter of a Content-Type "multipart/form-data; boundary=..." (quoted or
 * not) into out. S3_OK, or S3_ERR_MALFORMED_POST_REQUEST naming what is wrong in msg. */
s3_err_t s3_form_boundary(const char *content_type, char out[S3_FORM_BOUNDARY_MAX + 1], char *msg,
                          size_t msglen);
/* boundary as returned by s3_form_boundary; cb is copied, arg borrowed. NULL: no memory. */
s3_form_t *s3_form_new(const char *boundary, const s3_form_cb_t *cb, void *arg);
void s3_form_free(s3_form_t *f);
/* Malformed input: S3_ERR_MALFORMED_POST_REQUEST with the reason in msg. After an error the
 * parser refuses further input. */
s3_err_t s3_form_feed(s3_form_t *f, const void *p, size_t n, char *msg, size_t msglen);
/* At the end of the body: S3_OK only when the closing boundary was seen. */
s3_err_t s3_form_finish(s3_form_t *f, char *msg, size_t msglen);

#endif
