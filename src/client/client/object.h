/* SPDX-License-Identifier: Apache-2.0 */
/* libwharf's object operations, shared between their files (private to src/client/client):
 *   object_op.c     per-operation state: errors, runners over the pieces, the report
 *   object_piece.c  a GET's pieces: geometry, what a reply carries, stitching (no I/O)
 *   object_get.c    GET (over RDMA or HTTP) and HEAD/stat
 *   object_put.c    PUT, single or multipart
 *
 * A GET of [offset, offset+length) is split into chunk_size pieces run by up to `concurrency`
 * runners: the calling thread plus workers of the client's pool. Each piece is one ranged GET:
 * over RDMA with a token naming exactly its sub-range of dst, over HTTP with curl writing the
 * body straight into dst+off. A PUT is one request, or multipart with parallel parts at or
 * above multipart_threshold.
 *
 * No silent fallback: a 501 decline is an error (WH_ERR_DECLINED) unless the fallback policy
 * is http; then the request is re-sent without the token, the report says fell_back and why,
 * and the counters record it. */
#ifndef WH_CLIENT_OBJECT_H
#define WH_CLIENT_OBJECT_H

#include "client/client_int.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- shared per-operation state (object_op.c) ------------------------------------------- */

typedef struct wc_op {
    wharf_client_t *c;
    const char *bucket, *key;
    bool rdma; /* try RDMA first */
    bool verify;
    unsigned conc;
    double t0;

    pthread_mutex_t mu;
    wh_status_t st; /* first error */
    char err[WC_ERR_LEN];
    atomic_bool failed;
    atomic_bool force_http; /* after a decline under fallback=http */
    bool fell_back;
    bool device;              /* the caller's buffer is GPU memory */
    const char *dev_provider; /* with device: the provider that reached it ("cuda+ipc", or a
                                 network provider through FI_HMEM) */
    char reason[256];
    bool any_rdma, any_http;
    double first_byte; /* seconds from t0, 0 = none yet */
    char etag[80];
    char version_id[128]; /* the last reply's x-amz-version-id */
    char query[320];      /* GET/HEAD of one version: "versionId=..." ("": the current) */
    _Atomic uint32_t requests, retries;
    xfer_t *unsettled; /* an RDMA request ended with its transfer maybe under way (mu) */

    /* pieces */
    unsigned n;
    atomic_uint next;
    void (*run)(struct wc_op *op, unsigned i, wc_conn_t *conn);
    wc_group_t group;
    wc_task_t tasks[WC_POOL_MAX_THREADS];
} wc_op_t;

void wc_op_init(wc_op_t *op, wharf_client_t *c, const char *bucket, const char *key);
void wc_op_fini(wc_op_t *op);
void wc_op_fail(wc_op_t *op, wh_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void wc_op_note_reply(wc_op_t *op, const wc_resp_t *r);
bool wc_op_declined(wc_op_t *op, const char *what, const wc_resp_t *r);
void wc_op_execute(wc_op_t *op);
/* An RDMA piece's request ended (http_st: wc_http_do's result; r: its reply). Unless the
 * server's transfer finished (finished) or it refused before moving a byte (4xx, 501, 503),
 * the server may still be moving bytes for it: wc_op_execute then quiesces x before the
 * caller gets its buffer back (xfer_quiesce). */
void wc_op_rdma_ended(wc_op_t *op, xfer_t *x, wh_status_t http_st, const wc_resp_t *r,
                      bool finished);
void wc_op_report(wc_op_t *op, wh_status_t st, uint64_t bytes, uint64_t crc,
                  wharf_report_t *report);
wh_status_t wc_op_choose(wc_op_t *op, const wharf_xfer_opts_t *o);
wh_status_t wc_opts_resolve(wharf_client_t *c, const wharf_xfer_opts_t *uo, wharf_xfer_opts_t *o);
bool wc_name_ok(const char *bucket, const char *key);

/* ---- a GET's pieces (object_piece.c): pure functions, unit-tested ------------------------ */

typedef struct wc_get_piece {
    uint64_t got; /* bytes landed */
    uint64_t crc; /* of the landed bytes (when computed) */
    bool has_crc;
    bool r416;      /* the piece starts at or past the end of the object */
    uint64_t total; /* object size from Content-Range, 0 = unknown */
    bool has_total;
} wc_get_piece_t;

/* Pieces of chunk bytes that cover length bytes; *chunk grows when length / *chunk would not
 * fit the piece counter (an absurdly small chunk for a huge range). length > 0, *chunk > 0. */
unsigned wc_get_piece_count(uint64_t length, uint64_t *chunk);
/* How many bytes a 2xx reply to "bytes=off-(off+len-1)" carries: from Content-Range (206), or
 * the whole object (200, only valid when off == 0; *n = UINT64_MAX: the body decides). Records
 * the object's size from Content-Range in pc. False with why when the reply does not fit. */
bool wc_get_reply_extent(const wc_resp_t *r, uint64_t off, uint64_t len, uint64_t *n,
                         wc_get_piece_t *pc, char *why, size_t whylen);
/* A 416 reply to a piece: the piece starts past the end; the size, when given, is recorded. */
void wc_get_piece_416(const wc_resp_t *r, wc_get_piece_t *pc);
/* The checks of a 2xx reply to an RDMA piece of [off, off+len): x-amz-rdma-reply present, the
 * extent as wc_get_reply_extent, x-amz-rdma-bytes-transferred equal to it, and no body. Sets
 * *n to the bytes that landed. False with why otherwise. */
bool wc_get_rdma_reply(const wc_resp_t *r, uint64_t off, uint64_t len, uint64_t *n,
                       wc_get_piece_t *pc, char *why, size_t whylen);
/* Stitches n pieces of chunk bytes that cover [offset, offset+length): each piece is full,
 * except that a range past the object's end ends early (one short piece exactly where the
 * object ends, then pieces that start past the end and carry nothing). *bytes gets the total
 * landed and *crc the crc64nvme of it, combined from the pieces' (meaningful when each piece
 * has one). WH_ERR_PROTOCOL with why when the pieces do not stitch. */
wh_status_t wc_get_stitch(const wc_get_piece_t *pieces, unsigned n, uint64_t chunk, uint64_t offset,
                          uint64_t length, uint64_t *bytes, uint64_t *crc, char *why,
                          size_t whylen);

/* ---- HEAD (object_get.c) ---------------------------------------------------------------- */

/* HEAD bucket/key into out; op (may be NULL) accounts the request. */
wh_status_t wc_head_object(wharf_client_t *c, const char *bucket, const char *key,
                           wharf_stat_t *out, wc_op_t *op, const char *query);

#endif
