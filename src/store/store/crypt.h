/* SPDX-License-Identifier: Apache-2.0 */
/* Encryption at rest: the stored form of an encrypted object, and its parameters.
 *
 * Bytes: each blob (a single PUT's object, or one multipart part) is
 *   header  "WSE1" | IV (12 random bytes)
 *   then segments of STORE_SSE_SEG plaintext bytes (the last one shorter), each AES-256-GCM
 *   ciphertext followed by its 16-byte tag.
 * Segment i of a blob uses the nonce IV with its last 8 bytes XORed with i (big-endian), and
 * authenticates "WSE1" | the object's salt | the part number | i, so a segment cannot be moved
 * within a blob, to another part or to another object without its tag failing. A completed
 * multipart object is its parts' blobs one after another (local files: the parts' own files,
 * composed; no re-encryption): its row keeps the part sizes (plaintext) and part numbers, from
 * which a reader locates every segment. A ranged read decrypts only the segments it touches, and
 * every byte it returns was authenticated first: a damaged segment answers WH_ERR_CHECKSUM, never
 * bytes.
 *
 * Parameters (the sse text of the metadata row, never a key in clear):
 *   "S3;<salt hex>;<data key sealed under the server key (base/seal.h)>[;n=P1,P2,...]"
 *   "C;<salt hex>;<HMAC-SHA256(customer key, "wharf-sse-c-verify" | salt), hex>[;n=...]"
 *   "K;<salt hex>;<KMS key id>:<key version>[;n=...]" (the data key is derived from that
 *   version and the salt by the key service, ident/kms.h)
 * SSE-S3's data key is random per object (per upload for multipart); SSE-C's is
 * HMAC-SHA256(customer key, "wharf-sse-c-data" | salt). The key itself is never stored. */
#ifndef WH_STORE_CRYPT_H
#define WH_STORE_CRYPT_H

#include "base/status.h"
#include "store/store.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define STORE_SSE_SEG (64U * 1024)
#define STORE_SSE_TAG 16
#define STORE_SSE_HDR 16
#define STORE_SSE_KEY_LEN 32
#define STORE_SSE_SALT_LEN 16
#define STORE_SSE_SECRET_MAX 128

typedef enum {
    STORE_SSE_NONE = 0,
    STORE_SSE_S3,  /* x-amz-server-side-encryption: AES256 */
    STORE_SSE_C,   /* customer-provided key */
    STORE_SSE_KMS, /* aws:kms: a key of the key service (ident/kms.h) */
} store_sse_kind_t;

typedef struct store_sse {
    store_sse_kind_t kind;
    uint8_t salt[STORE_SSE_SALT_LEN];
    char secret[STORE_SSE_SECRET_MAX]; /* S3: the sealed data key; C: the verifier, hex;
                                        * KMS: "<key id>:<key version>" */
    const char *parts;                 /* borrowed from the parsed text: "P1,P2,..." or NULL */
} store_sse_t;

/* Parses an sse text (NULL or "": kind NONE). WH_ERR_INVALID when malformed. */
wh_status_t store_sse_parse(const char *text, store_sse_t *out);
/* Formats kind, salt and secret (no part numbers) as a malloc'd text; NULL on OOM. */
char *store_sse_format(const store_sse_t *s);
/* SSE-C: the data key and the verifier (64 hex + NUL) of a customer key under salt. */
void store_sse_c_derive(const uint8_t ckey[STORE_SSE_KEY_LEN],
                        const uint8_t salt[STORE_SSE_SALT_LEN], uint8_t key[STORE_SSE_KEY_LEN],
                        char verifier[65]);
/* The ETag of an SSE-C object or part whose plaintext has this MD5 (32 hex): the first 16 bytes
 * of HMAC-SHA256(HMAC-SHA256(data key, "wharf-sse-c-etag"), MD5), hex. S3 does not reveal an
 * SSE-C object's MD5; this is opaque without the customer key, differs per object (the data
 * key is salted per object), and with the key lets a copy check the bytes it read. */
void store_sse_c_etag(const uint8_t key[STORE_SSE_KEY_LEN], const char md5_hex[33], char out[33]);
/* Stored size of a blob of n plaintext bytes. */
uint64_t store_sse_blob_size(uint64_t n);
/* Stored size of an object with this meta (its sse set): the sum over its parts' blobs. */
wh_status_t store_sse_stored_size(const data_obj_meta_t *m, uint64_t *out);

/* Encrypts everything written from now on under key (the data key of the parameters sse, whose
 * salt the segments authenticate): call on a fresh writer, before any write. part: the part
 * number (0 for a single PUT or a copy). store_writer_commit stores sse in the row (a part's
 * row needs none: its upload has it). The writer's size, MD5 and CRCs stay those of the
 * plaintext; part and digest ETags fall back to the plain MD5 (they read stored bytes). Under
 * SSE-C the ETag that the commit (or a part's commit) stores is store_sse_c_etag's, never
 * the MD5 (store_writer_md5_hex still gives the MD5, for Content-MD5). */
wh_status_t store_writer_encrypt(store_writer_t *w, const uint8_t key[STORE_SSE_KEY_LEN],
                                 const char *sse, uint32_t part);

/* An encrypted copy (store_copy_args_t.sse, store_object_copy). src_key is called with the source's
 * row once it is open (so the key is checked against the version actually copied) and fills the
 * source's data key; any other status ends the copy with it. dst_sse/dst_key: the destination's
 * parameters and data key, or NULL to store it plain. */
typedef wh_status_t (*store_sse_key_fn)(void *arg, const data_obj_meta_t *src,
                                        uint8_t key[STORE_SSE_KEY_LEN]);
typedef struct store_copy_sse {
    store_sse_key_fn src_key;
    void *arg;
    const char *dst_sse;
    const uint8_t *dst_key;
    /* out: the ETag and size of the source version copied (the copy's own ETag differs where
     * either side is SSE-C), for a caller that checks it copied what it authorized */
    char src_etag[80];
    uint64_t src_size;
} store_copy_sse_t;
/* A reader of an encrypted object (store_object_reader opens one when the row has sse set)
 * serves nothing (WH_ERR_AUTH) until its key is given; it has no fd and no delegated RDMA.
 * WH_ERR_INVALID when r is not such a reader. */
wh_status_t store_reader_set_key(data_reader_t *r, const uint8_t key[STORE_SSE_KEY_LEN]);
/* True for a reader of an encrypted object. */
bool store_reader_encrypted(const data_reader_t *r);

#endif
