/* SPDX-License-Identifier: Apache-2.0 */
/* Percent-encoding as SigV4 and S3 use it (uri.c). */
#ifndef WH_S3_URI_H
#define WH_S3_URI_H

#include "base/util.h"

#include <stddef.h>

/* Percent-encodes per SigV4 (unreserved A-Za-z0-9-._~ kept; '/' kept unless encode_slash). */
void s3_uri_encode(const char *s, size_t n, int encode_slash, wh_sbuf_t *out);
/* Percent-decodes; returns 0 or -1 on a bad escape. '+' is kept as '+'. */
int s3_uri_decode(const char *s, size_t n, wh_sbuf_t *out);
/* The same, reading '+' as ' ' (query strings and form values). */
int s3_uri_decode_form(const char *s, size_t n, wh_sbuf_t *out);

#endif
