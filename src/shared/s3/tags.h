/* SPDX-License-Identifier: Apache-2.0 */
/* S3 object tags: the tag set of an object, parsed from the x-amz-tagging header (a URL query
 * string, "k1=v1&k2=v2") or a Tagging XML document, checked against S3's limits, and kept in
 * one canonical text form (the query string, each key and value URI-encoded, in the order
 * given). Shared by the server (PUT, CreateMultipartUpload, CopyObject, PutObjectTagging) and
 * fuzzed by fuzz/fuzz_tags.c. */
#ifndef WH_S3_TAGS_H
#define WH_S3_TAGS_H

#include "base/util.h"
#include "s3/errors.h"

#include <stddef.h>

#define S3_TAGS_MAX 10        /* tags per object */
#define S3_BUCKET_TAGS_MAX 50 /* tags per bucket */
#define S3_TAG_KEY_MAX 128    /* characters (UTF-8 code points) */
#define S3_TAG_VALUE_MAX 256

typedef struct s3_tag {
    char key[S3_TAG_KEY_MAX * 4 + 1];
    char value[S3_TAG_VALUE_MAX * 4 + 1];
} s3_tag_t;

typedef struct s3_tagset {
    size_t n;
    size_t limit; /* the parse's: S3_TAGS_MAX or S3_BUCKET_TAGS_MAX */
    s3_tag_t tags[S3_BUCKET_TAGS_MAX];
} s3_tagset_t;

/* limit: S3_TAGS_MAX (an object's) or S3_BUCKET_TAGS_MAX (a bucket's; larger ones are
 * clamped to it). The header's or the stored form. S3_ERR_INVALID_TAG (or INVALID_ARGUMENT for a
 * bad encoding) with msg naming the fault. An empty string is the empty set. */
s3_err_t s3_tags_parse_query(const char *q, size_t len, size_t limit, s3_tagset_t *out, char *msg,
                             size_t msglen);
/* A Tagging document (PutObjectTagging). MalformedXML, InvalidTag with msg. */
s3_err_t s3_tags_parse_xml(const char *xml, size_t len, size_t limit, s3_tagset_t *out, char *msg,
                           size_t msglen);
/* The canonical stored form into out ("" for the empty set). */
void s3_tags_format_query(const s3_tagset_t *t, wh_sbuf_t *out);
/* The Tagging document of a set (GetObjectTagging's body, without the XML declaration). */
void s3_tags_format_xml(const s3_tagset_t *t, wh_sbuf_t *out, const char *xmlns);

#endif
