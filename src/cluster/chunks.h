/* A storage server's chunk files: DIR/chunks/<id[0:2]>/<id>, each the chunk's bytes followed
 * by a 16-byte footer ("WHC1", 4 zero bytes, the crc64nvme of the bytes, little endian).
 * A write goes to DIR/tmp/<id>.<random>, is fsynced, renamed into place and the directory
 * fsynced, so a chunk file is either absent or whole. Leftover temp files are removed at open.
 * Thread-safe: the functions keep no shared mutable state besides the directory fds. */
#ifndef WH_CLUSTER_CHUNKS_H
#define WH_CLUSTER_CHUNKS_H

#include "base/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CL_CHUNK_FOOTER 16

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
/* Appends the footer, fsyncs, renames into place (replacing an earlier copy of the same id:
 * ids are never reused for different bytes), fsyncs the directory. Consumes w. */
wh_status_t cl_chunk_writer_commit(cl_chunk_writer_t *w, uint64_t *crc, uint8_t md5[16]);
void cl_chunk_writer_abort(cl_chunk_writer_t *w); /* NULL-safe; removes the temp file */

/* ---- read ---- */
/* Opens a chunk: *fd (caller closes), *size (bytes without the footer), *crc (the footer's).
 * WH_ERR_NOT_FOUND when absent; WH_ERR_CHECKSUM when the footer is damaged. */
wh_status_t cl_chunk_open(cl_chunks_t *cs, const char *id, int *fd, uint64_t *size,
                          uint64_t *crc);
/* Reads the whole chunk's bytes and compares their crc with the footer's (WH_ERR_CHECKSUM). */
wh_status_t cl_chunk_verify(int fd, uint64_t size, uint64_t crc);
/* Removes a chunk; absent is WH_OK. */
wh_status_t cl_chunk_delete(cl_chunks_t *cs, const char *id);
/* Number of chunk files (walks the directory: for metrics and tests). */
uint64_t cl_chunks_count(cl_chunks_t *cs);

#endif
