/* SPDX-License-Identifier: Apache-2.0 */
/* The RDMA batch (POST /bucket?rdma-batch, docs/protocol.md "Batches"): many small objects of
 * one bucket GET into or PUT from one registered client region in one signed request. This is
 * the one parser and formatter of its list (the request body) and of its answer (the reply
 * body), shared by wharfd and libwharf, and fuzzed (fuzz/fuzz_batch.c).
 *
 * Request body (signed: x-amz-content-sha256 is its SHA-256):
 *     wharf-rdma-batch 1 GET|PUT\n
 *     <offset> <length> <flags> <key>\n        (one line per key, at least one)
 * offset and length are decimal (no sign, no leading zero), the bytes [offset, offset+length)
 * of the token's region; flags is "-" or "n" (PUT only: If-None-Match: *, store only if the
 * key has no object); key is percent-encoded (%XX; bytes 0x21..0x7e other than '%' as they
 * are), 1 to 1024 bytes once decoded. Entries never overlap and all lie inside the region;
 * a PUT names each key once.
 *
 * Reply body (200, x-amz-rdma-reply: 200):
 *     wharf-rdma-batch 1 <n>\n
 *     <index> <code> <size> <crc64nvme> <etag> <message>\n    (n lines, in request order)
 * code is "OK" or an S3 error code (NoSuchKey, AccessDenied, PreconditionFailed ...); size is
 * the bytes landed (GET) or stored (PUT); crc64nvme is 16 lowercase hex digits of exactly
 * those bytes, etag the object's ETag without quotes, message percent-encoded; "-" where a
 * field has no value. */
#ifndef WH_S3_BATCH_H
#define WH_S3_BATCH_H

#include "base/util.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define S3_BATCH_MAGIC "wharf-rdma-batch 1"
#define S3_BATCH_MAX_KEYS 1000u           /* entries in one batch */
#define S3_BATCH_MAX_LIST (1u << 20)      /* bytes of the request body */
#define S3_BATCH_MAX_OBJECT (64ull << 20) /* bytes of one entry */
#define S3_BATCH_MAX_KEY 1024u            /* bytes of one decoded key */
#define S3_BATCH_MAX_REPLY_MSG 200u       /* bytes of one decoded reply message */

typedef enum { S3_BATCH_GET = 1, S3_BATCH_PUT = 2 } s3_batch_op_t;

typedef struct s3_batch_entry {
    char *key; /* decoded, NUL-terminated */
    uint64_t off, len;
    bool if_none_match;
} s3_batch_entry_t;

typedef struct s3_batch {
    s3_batch_op_t op;
    size_t n;
    s3_batch_entry_t *e;
} s3_batch_t;

/* Parses a request body of n bytes against a region of region bytes (UINT64_MAX: not known
 * yet). 0, or -1 with err naming what is wrong (the line, the field, the bound) and out
 * empty. out is the caller's to free (s3_batch_free) on success. */
int s3_batch_parse(const char *p, size_t n, uint64_t region, s3_batch_t *out, char *err,
                   size_t errlen);
void s3_batch_free(s3_batch_t *b);

/* Appends the request body of the given entries to out (the client's side). */
void s3_batch_format(s3_batch_op_t op, const s3_batch_entry_t *e, size_t n, wh_sbuf_t *out);

/* One line of the reply. */
typedef struct s3_batch_status {
    char code[48]; /* "OK" or the S3 error code */
    uint64_t size;
    uint64_t crc64nvme;
    bool has_crc;
    char etag[80];
    char message[S3_BATCH_MAX_REPLY_MSG + 1];
} s3_batch_status_t;

/* Appends the reply's first line, then one line per status. */
void s3_batch_reply_head(size_t n, wh_sbuf_t *out);
void s3_batch_reply_line(size_t index, const s3_batch_status_t *s, wh_sbuf_t *out);
/* Parses a reply body that must answer exactly n entries into out[0..n). 0, or -1 with err. */
int s3_batch_reply_parse(const char *p, size_t len, size_t n, s3_batch_status_t *out, char *err,
                         size_t errlen);

#endif
