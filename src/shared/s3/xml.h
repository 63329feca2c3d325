/* SPDX-License-Identifier: Apache-2.0 */
/* S3 XML: a small writer for replies, and expat-based parsers for request bodies (server) and
 * reply bodies (client). All parsers reject malformed XML with S3_ERR_MALFORMED_XML and cap
 * sizes (1000 keys per delete, 10000 parts). */
#ifndef WH_S3_XML_H
#define WH_S3_XML_H

#include "base/util.h"
#include "s3/errors.h"

#include <stddef.h>
#include <stdint.h>

/* Request bodies larger than this are rejected (check Content-Length before reading). */
#define S3_XML_MAX_BYTES (4u << 20)
#define S3_XML_MAX_DELETE_KEYS 1000
#define S3_XML_MAX_PARTS 10000

/* Appends s with &, <, >, ", ' escaped (and control characters as &#xN;). */
void s3_xml_escape(wh_sbuf_t *b, const char *s);
/* <name>escaped text</name> */
void s3_xml_elem(wh_sbuf_t *b, const char *name, const char *text);
void s3_xml_elem_u64(wh_sbuf_t *b, const char *name, uint64_t v);
/* <?xml version="1.0" encoding="UTF-8"?> and a newline. */
void s3_xml_decl(wh_sbuf_t *b);
/* The S3 error document (with the declaration); resource and request_id may be NULL. */
void s3_xml_error(wh_sbuf_t *b, const char *code, const char *message, const char *resource,
                  const char *request_id);

/* CompleteMultipartUpload request body. */
typedef struct s3_part_ref {
    uint32_t number;
    char etag[80];      /* as sent, quotes stripped */
    char crc32c[16];    /* ChecksumCRC32C if given */
    char crc64nvme[16]; /* ChecksumCRC64NVME if given */
} s3_part_ref_t;
/* *parts is malloc'd; caller frees. Order is kept as sent (the caller checks it). */
s3_err_t s3_xml_parse_complete(const char *xml, size_t len, s3_part_ref_t **parts, size_t *n);

/* DeleteObjects request body. */
typedef struct s3_delete_req {
    char **keys;
    char **version_ids; /* parallel to keys: the Object's VersionId, or NULL where none */
    char **etags;       /* parallel to keys: the Object's ETag (a condition), or NULL */
    size_t n;
    int quiet;
} s3_delete_req_t;
s3_err_t s3_xml_parse_delete(const char *xml, size_t len, s3_delete_req_t *out);
void s3_delete_req_free(s3_delete_req_t *d);

/* CreateBucketConfiguration: LocationConstraint text into out (empty when absent). An empty
 * body is fine. */
s3_err_t s3_xml_parse_create_bucket(const char *xml, size_t len, char *out, size_t outlen);

/* PutBucketVersioning's VersioningConfiguration: Status Enabled (*status 1) or Suspended (2).
 * A missing or other Status is MalformedXML. */
s3_err_t s3_xml_parse_versioning(const char *xml, size_t len, int *status);

/* Client side: generic flat extraction. Calls cb at the end of every element with its path
 * ("ListBucketResult/Contents/Key") and its text (len 0 for none), so a caller can group fields
 * of a repeated element when its own path ends. Returns 0, or -1 when malformed. */
typedef void (*s3_xml_text_cb)(void *arg, const char *path, const char *text, size_t len);
int s3_xml_walk(const char *xml, size_t len, s3_xml_text_cb cb, void *arg);

#endif
