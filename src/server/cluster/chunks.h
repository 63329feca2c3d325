/* SPDX-License-Identifier: Apache-2.0 */
/* A storage server's chunk files: DIR/chunks/<id[0:2]>/<id>, each the chunk's bytes, then a
 * block table (the crc64nvme of every CL_CHUNK_BLOCK bytes, the last block shorter, 8 bytes
 * each), then a 32-byte footer: "WHC2", the block size (u32), the chunk's size (u64), the
 * crc64nvme of all its bytes (u64) and of the block table (u64), little endian. A ranged read
 * verifies exactly the blocks it serves. Files of the first format ("WHC1": the bytes and a
 * 16-byte footer with the whole crc) are still read; they are verified whole.
 * A damaged chunk is moved to DIR/damaged/ (cl_chunk_quarantine) so that it is no longer
 * served, and kept there for the operator.
 * A write goes to DIR/tmp/<id>.<random>, is fsynced, linked into place (never over a
 * committed chunk of that id) and the directory
 * fsynced, so a chunk file is either absent or whole. Leftover temp files are removed at open.
 * Thread-safe: the functions keep no shared mutable state besides the directory fds. */
#ifndef WH_CLUSTER_CHUNKS_H
#define WH_CLUSTER_CHUNKS_H

#include "base/status.h"
#include "cluster/itoken.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CL_CHUNK_FOOTER_V1 16
#define CL_CHUNK_FOOTER 32
#define CL_CHUNK_BLOCK (1u << 20)

/* What cl_chunk_open learned from a chunk file's footer and block table. */
typedef struct cl_chunk_info {
    uint64_t size;  /* bytes of the chunk (without table and footer) */
    uint64_t crc;   /* crc64nvme of all of them */
    uint32_t block; /* block size; 0: a WHC1 file (no table: verified whole) */
    uint64_t nblocks;
    uint64_t *blocks; /* crc64nvme per block (malloc'd; cl_chunk_info_free) */
} cl_chunk_info_t;
void cl_chunk_info_free(cl_chunk_info_t *info);

typedef struct cl_chunks cl_chunks_t;
typedef struct cl_chunk_writer cl_chunk_writer_t;

wh_status_t cl_chunks_open(const char *dir, cl_chunks_t **out);
void cl_chunks_close(cl_chunks_t *cs); /* NULL-safe */

/* Bytes of the file system holding DIR: total and available to us. */
wh_status_t cl_chunks_space(cl_chunks_t *cs, uint64_t *capacity, uint64_t *avail);

/* ---- write ---- */
/* want_md5: also hash the bytes (an RDMA PUT's ETag is built from the chunks' MD5s, since the
 * gateway never sees the bytes). */
wh_status_t cl_chunk_writer_open(cl_chunks_t *cs, const char *id, bool want_md5,
                                 cl_chunk_writer_t **out);
wh_status_t cl_chunk_writer_write(cl_chunk_writer_t *w, const void *p, size_t n);
uint64_t cl_chunk_writer_size(const cl_chunk_writer_t *w);
/* crc64nvme of the bytes written so far (a checked put compares it before committing). */
uint64_t cl_chunk_writer_crc(const cl_chunk_writer_t *w);
/* Appends the footer, fsyncs, links into place and fsyncs the directory. Consumes w. A chunk
 * already committed under the id is never replaced: the same bytes again (size and crc) are
 * WH_OK (a retried put), other bytes WH_ERR_EXISTS. */
wh_status_t cl_chunk_writer_commit(cl_chunk_writer_t *w, uint64_t *crc, uint8_t md5[16]);
void cl_chunk_writer_abort(cl_chunk_writer_t *w); /* NULL-safe; removes the temp file */

/* ---- read ---- */
/* Opens a chunk: *fd (caller closes) and its footer and block table in *info (caller frees).
 * WH_ERR_NOT_FOUND when absent; WH_ERR_CHECKSUM when the footer or the table is damaged. */
wh_status_t cl_chunk_open(cl_chunks_t *cs, const char *id, int *fd, cl_chunk_info_t *info);
/* Reads the whole chunk's bytes and compares their crc with the footer's (WH_ERR_CHECKSUM). */
wh_status_t cl_chunk_verify(int fd, const cl_chunk_info_t *info);
/* Reads the blocks covering [off, off+len) and checks each against the block table (a WHC1
 * file: the whole chunk against its crc); *range_crc is the crc64nvme of exactly those bytes.
 * WH_ERR_CHECKSUM when a block is damaged, WH_ERR_RANGE when the range is outside. */
wh_status_t cl_chunk_verify_range(int fd, const cl_chunk_info_t *info, uint64_t off, uint64_t len,
                                  uint64_t *range_crc);
/* What a read of [off, off+len) must checksum to, for a reader that checks the bytes as it
 * sends them (RDMA): the partial blocks at either end are read and verified here, the blocks
 * the range covers whole contribute their table crcs (a WHC1 file: verified whole, the range's
 * crc computed). *expect: crc64nvme of exactly those bytes when they are intact. */
wh_status_t cl_chunk_range_expect(int fd, const cl_chunk_info_t *info, uint64_t off, uint64_t len,
                                  uint64_t *expect);
/* The open chunk is the one the chunk map has: its footer's crc is crc and its block table
 * makes up that crc (so verified blocks are that chunk's). WH_ERR_CHECKSUM otherwise. */
wh_status_t cl_chunk_matches(const cl_chunk_info_t *info, uint64_t crc);
/* Moves a damaged chunk out of the served set into DIR/damaged/<id>, if the file at its path
 * is still the one open as fd (a repaired copy written meanwhile stays). Absent is WH_OK. */
wh_status_t cl_chunk_quarantine(cl_chunks_t *cs, const char *id, int fd);
/* Number of files in DIR/damaged, and their ids (sorted; caller frees *ids). A damaged copy
 * goes when the chunk is written again (repaired) or deleted. */
uint64_t cl_chunks_damaged_count(cl_chunks_t *cs);
wh_status_t cl_chunks_list_damaged(cl_chunks_t *cs, char (**ids)[CL_CHUNK_ID_LEN + 1], size_t *n);
/* The chunk ids in DIR/chunks/<xx>, xx = the two hex digits of prefix (0..255), sorted
 * (caller frees *ids, one malloc). For the scrubber. */
wh_status_t cl_chunks_list_prefix(cl_chunks_t *cs, unsigned prefix,
                                  char (**ids)[CL_CHUNK_ID_LEN + 1], size_t *n);
/* Removes a chunk; absent is WH_OK. */
wh_status_t cl_chunk_delete(cl_chunks_t *cs, const char *id);
/* Number of chunk files (walks the directory: for metrics and tests). */
uint64_t cl_chunks_count(cl_chunks_t *cs);

#endif
