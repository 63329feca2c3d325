/* SPDX-License-Identifier: Apache-2.0 */
/* Internals shared by the store's files (store.c, writer.c, mpu.c): the store and writer
 * structs. Not for use outside src/store/store. */
#ifndef WH_STORE_STORE_INT_H
#define WH_STORE_STORE_INT_H

#include "base/digest.h"
#include "data/data.h"
#include "meta/meta.h"
#include "store/store.h"

#include <pthread.h>
#include <stdio.h>

struct store {
    meta_t *meta;
    data_table_t *data;
};

/* A PUT in progress: the data table's writer plus the digests of what went through it. */
struct store_writer {
    store_t *st;
    data_writer_t *dw;
    uint64_t size;
    wh_md5_t md5;
    bool md5_done;
    char md5_hex[33];
    uint64_t crc64;
    uint32_t crc32c;
    bool crc32c_unknown; /* the bytes went by a table's own RDMA: no CRC-32C of them */
    bool broken;         /* a write failed: the bytes are not what the digests say (atomic) */
    uint64_t at_total;   /* positional writes (store_writer_begin_at): the size, else 0 */
    bool at;
    /* Large PUTs hash MD5 on a helper thread that reads the bytes back from the data table
     * (local: the page cache) behind the writer (MD5 runs at about 0.6 GB/s per core, the
     * slowest step of a PUT). Only where the table offers writer_pread. */
    bool md5_threaded;
    pthread_t md5_thread;
    pthread_mutex_t md5_lock;
    pthread_cond_t md5_cond;
    uint64_t md5_avail;  /* bytes written that the helper may hash */
    uint64_t md5_hashed; /* bytes the helper has hashed */
    int md5_stop;        /* 1: finish what is written, then exit; 2: exit now */
    int md5_err;         /* status of a failed read-back */
    /* Part ETags (store_writer_use_part_etag): no whole-object MD5 at all; parts of
     * part_size are hashed in parallel by `etag` once the object outgrows the inline size. */
    uint64_t part_size; /* 0: whole-object MD5 (the default) */
    struct data_etag *etag;
    /* Digest ETags (store_writer_use_digest_etag): no MD5 pass at all; the ETag is made from
     * the CRC-64/NVME, CRC-32C and size the writer computes anyway. */
    bool digest_etag, digest_part;
    uint64_t digest_part_size;
    /* Encryption at rest (crypt.c, store_writer_encrypt): NULL for bytes stored as sent. */
    struct store_crypt_w *crypt;
};

/* crypt.c: an encrypted writer's bytes in AES-256-GCM segments; flush writes the last, short
 * one before finish. */
wh_status_t store_crypt_write(store_writer_t *w, const void *p, size_t n);
wh_status_t store_crypt_flush(store_writer_t *w);
const char *store_crypt_sse(const store_writer_t *w); /* NULL: not encrypted */
/* An SSE-C writer: etag (an MD5, 32 hex) becomes store_sse_c_etag's; else unchanged. */
void store_crypt_etag_seal(const store_writer_t *w, char etag[33]);
void store_crypt_free(store_writer_t *w);
/* Wraps the raw reader of an encrypted row (m->sse set) in a decrypting one, still without
 * its key. Takes raw, also on failure. */
wh_status_t store_crypt_wrap(data_reader_t *raw, const data_obj_meta_t *m, data_reader_t **out);

/* 32 random lowercase hex chars (upload ids). */
wh_status_t store_random_id(char out[META_ID_LEN + 1]);
/* Makes the writer's bytes durable; *ref then names them for the metadata commit. */
wh_status_t store_writer_finish(store_writer_t *w, data_ref_t *ref);
/* Frees a writer and keeps its bytes (after the commit). NULL-safe. */
void store_writer_free(store_writer_t *w);
/* After a failed commit: aborts (removes the bytes), except when the commit's outcome is
 * unknown (WH_ERR_UNAVAILABLE), where the bytes are kept. NULL-safe. */
void store_writer_fail(store_writer_t *w, wh_status_t why);
/* Appends [off, off+len) of an open reader (copy, multipart completion); the digests are not
 * updated: the caller derives them. */
wh_status_t store_writer_append(store_writer_t *w, data_reader_t *r, uint64_t off, uint64_t len);
/* After a commit that dropped ref: frees its bytes. "" is a no-op. */
void store_release(store_t *st, const data_ref_t *ref);
/* Opens the bytes of a committed reference. */
wh_status_t store_reader_open_ref(store_t *st, const data_ref_t *ref, uint64_t size,
                                  data_reader_t **out);
/* Runs a metadata mutation that frees space (delete, abort). On a full disk the data table's
 * reserve is released and the mutation retried once; afterwards the reserve is taken again
 * if there is room. */
typedef wh_status_t (*store_freeing_fn)(store_t *st, void *arg);
wh_status_t store_run_freeing(store_t *st, store_freeing_fn fn, void *arg);

#endif
