/* SPDX-License-Identifier: Apache-2.0 */
/* Bucket configuration documents of S3, parsed from request bodies and written back for GET:
 * CORSConfiguration (and the matching of a browser's request against its rules),
 * PublicAccessBlockConfiguration and OwnershipControls. Pure; shared with fuzz/fuzz_bconfig.c.
 * A stored CORS configuration is the canonical document s3_cors_format writes. */
#ifndef WH_S3_BUCKET_CONFIG_H
#define WH_S3_BUCKET_CONFIG_H

#include "base/util.h"
#include "s3/errors.h"

#include <stdbool.h>
#include <stddef.h>

#define S3_CORS_MAX_RULES 100
#define S3_CORS_MAX_ITEMS 64  /* origins, headers or expose headers of one rule */
#define S3_CORS_MAX_ITEM 1024 /* bytes of one of them */

enum { S3_CORS_GET = 1, S3_CORS_PUT = 2, S3_CORS_HEAD = 4, S3_CORS_POST = 8, S3_CORS_DELETE = 16 };

typedef struct s3_cors_rule {
    char *id;
    char **origins, **headers, **expose;
    size_t norigins, nheaders, nexpose;
    unsigned methods; /* S3_CORS_* bits */
    long max_age;     /* seconds, -1 when not given */
} s3_cors_rule_t;

typedef struct s3_cors {
    s3_cors_rule_t *rules;
    size_t n;
} s3_cors_t;

/* MalformedXML / InvalidRequest with msg naming the fault. out is freed on failure. */
s3_err_t s3_cors_parse(const char *xml, size_t len, s3_cors_t *out, char *msg, size_t msglen);
/* The CORSConfiguration document (no XML declaration). */
void s3_cors_format(const s3_cors_t *c, wh_sbuf_t *out, const char *xmlns);
void s3_cors_free(s3_cors_t *c); /* NULL-safe */
/* S3_CORS_* of an HTTP method, 0 for another. */
unsigned s3_cors_method_bit(const char *method);
/* The first rule that allows origin, method (an S3_CORS_* bit) and every header of
 * req_headers (the preflight's Access-Control-Request-Headers, a comma list, or NULL), as S3
 * matches them: origins and headers may hold one '*' wildcard; headers match without case. */
const s3_cors_rule_t *s3_cors_match(const s3_cors_t *c, const char *origin, unsigned method,
                                    const char *req_headers);

/* PublicAccessBlockConfiguration: the four switches as S3_PAB_* bits. */
enum {
    S3_PAB_BLOCK_PUBLIC_ACLS = 1,
    S3_PAB_IGNORE_PUBLIC_ACLS = 2,
    S3_PAB_BLOCK_PUBLIC_POLICY = 4,
    S3_PAB_RESTRICT_PUBLIC_BUCKETS = 8,
};
s3_err_t s3_pab_parse(const char *xml, size_t len, unsigned *bits, char *msg, size_t msglen);
void s3_pab_format(unsigned bits, wh_sbuf_t *out, const char *xmlns);

/* OwnershipControls' one rule. */
enum {
    S3_OWN_OBJECT_WRITER = 1,
    S3_OWN_BUCKET_OWNER_PREFERRED = 2,
    S3_OWN_BUCKET_OWNER_ENFORCED = 3
};
s3_err_t s3_ownership_parse(const char *xml, size_t len, unsigned *own, char *msg, size_t msglen);
void s3_ownership_format(unsigned own, wh_sbuf_t *out, const char *xmlns);

/* ServerSideEncryptionConfiguration: one Rule whose ApplyServerSideEncryptionByDefault names
 * an SSEAlgorithm (KMSMasterKeyID only with aws:kms), and an optional BucketKeyEnabled. */
enum { S3_SSE_AES256 = 1, S3_SSE_KMS = 2, S3_SSE_KMS_DSSE = 3 };
s3_err_t s3_encryption_parse(const char *xml, size_t len, unsigned *alg, char *msg, size_t msglen);
/* As s3_encryption_parse, with KMSMasterKeyID's text into key_id (cap bytes; "" when absent;
 * a longer one is InvalidArgument). */
s3_err_t s3_encryption_parse_key(const char *xml, size_t len, unsigned *alg, char *key_id,
                                 size_t cap, char *msg, size_t msglen);
/* The document of a default (key_id: aws:kms's KMSMasterKeyID, NULL or "" for none). */
void s3_encryption_format(unsigned alg, wh_sbuf_t *out, const char *xmlns);
void s3_encryption_format_key(unsigned alg, const char *key_id, wh_sbuf_t *out, const char *xmlns);

#endif
