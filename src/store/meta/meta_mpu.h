/* SPDX-License-Identifier: Apache-2.0 */
/* The multipart rules of the metadata table, written once for every backend (meta_mpu.c): a
 * part's replacement, an upload's abort, a bucket delete's drop of its uploads, and the
 * completion (parts unchanged, the object committed through meta_ver.h, the upload dropped),
 * each in the caller's write transaction.
 *
 * A backend gives the rules a meta_mpu_dialect_t: the row operations they are made of, each
 * one statement of its own SQL dialect, run on the transaction's connection (conn); the
 * slots that run them are meta_rules.h's. */
#ifndef WH_META_META_MPU_H
#define WH_META_META_MPU_H

#include "meta/meta_ver.h"

typedef struct meta_mpu_dialect {
    /* The completion's commit of the object row. */
    const meta_ver_dialect_t *ver;
    /* NOT_FOUND unless the upload exists for that bucket and key. Its row is locked against
     * another write of the upload until the transaction ends (PostgreSQL: FOR UPDATE; SQLite:
     * the writer's lock already is). */
    wh_status_t (*upload_lock)(void *conn, const char *bucket, const char *key,
                               const char *upload_id);
    /* Parts with number > marker in order, at most max (0 = all), with their chunk maps;
     * *truncated (may be NULL) whether more were left. *out freed with meta_parts_free. */
    wh_status_t (*parts_read)(void *conn, const char *upload_id, uint32_t marker, uint32_t max,
                              meta_part_t **out, size_t *n, bool *truncated);
    /* The data id (id[0] '\0': none) of part number of the upload. */
    wh_status_t (*part_data)(void *conn, const char *upload_id, uint32_t number,
                             char id[DATA_ID_LEN + 1]);
    /* Inserts or replaces the part's row (its chunk map apart: chunks_put). */
    wh_status_t (*part_upsert)(void *conn, const char *upload_id, const data_part_info_t *info,
                               const char *data_id);
    /* Deletes the upload's part rows and its row (chunk maps apart: chunks_drop). */
    wh_status_t (*upload_rows_delete)(void *conn, const char *upload_id);
    /* The ids of every upload of the bucket, malloc'd (free()). */
    wh_status_t (*bucket_upload_ids)(void *conn, const char *bucket, char (**ids)[65], size_t *n);
    /* Chunk maps of a data id: appended to ref (ref->id's), inserted, dropped ("" : none). */
    wh_status_t (*chunks_get)(void *conn, data_ref_t *ref);
    wh_status_t (*chunks_put)(void *conn, const data_ref_t *ref);
    wh_status_t (*chunks_drop)(void *conn, const char *data_id);
} meta_mpu_dialect_t;

/* In a bucket delete's transaction: drops every upload of the bucket with its parts, appending
 * the parts (their data to release) to *parts, so no upload outlives its bucket. */
wh_status_t meta_mpu_bucket_drop(const meta_mpu_dialect_t *d, void *conn, const char *bucket,
                                 meta_part_t **parts, size_t *n);

#endif
