/* SPDX-License-Identifier: Apache-2.0 */
/* Part ETags hashed in parallel: the MD5 of each part of a fixed size, computed by a few
 * helper threads that read the bytes back from the data table behind the writer, combined at
 * the end the way S3 combines a multipart upload's parts (md5 of the part md5s, "-N").
 *
 * Why: one MD5 runs at about 0.6 GB/s on one core, whatever the host has, and a plain PUT's
 * ETag is one MD5 over the whole object; with parts, the hashing spreads over cores and a
 * stream is no longer capped there. Objects of one part keep the plain MD5 ETag (the part's
 * MD5 is the object's), so small objects look exactly as before.
 *
 * Used by the store's writer (src/store/store/writer.c). Thread-safe between one feeder and its
 * helpers. */
#ifndef WH_DATA_ETAG_H
#define WH_DATA_ETAG_H

#include "base/status.h"
#include "data/data.h"

#include <stdint.h>

typedef struct data_etag data_etag_t;

/* Starts helpers hashing parts of part_size bytes of dw's bytes; nothing is available yet. */
wh_status_t data_etag_start(data_writer_t *dw, uint64_t part_size, data_etag_t **out);
/* The writer now holds bytes [0, avail). */
void data_etag_avail(data_etag_t *e, uint64_t avail);
/* Waits until every byte of [0, size) is hashed and writes the ETag into out ("hex" for one
 * part, "hex-N" for more). Returns the first read-back failure. Frees e. */
wh_status_t data_etag_finish(data_etag_t *e, uint64_t size, char out[48]);
/* Abandons the hashing and frees e. NULL-safe. */
void data_etag_abort(data_etag_t *e);

#endif
