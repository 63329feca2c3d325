/* Metadata of the storage engine in SQLite (WAL): buckets, objects, multipart uploads, parts.
 *
 * Private to src/store. Two connections, each behind its mutex: mutations go through the writer
 * (one BEGIN IMMEDIATE transaction each), lookups and listings through the reader, which WAL
 * never makes wait for a commit. Every meta_* call takes the mutex itself and is atomic.
 * Keys are stored as BLOBs, so SQLite compares them with memcmp: listing order is S3's UTF-8
 * byte order. Files are referred to by their 32-hex id; the meta layer never touches object
 * bytes except for opening an object's file (see meta_object_get). */
#ifndef WH_STORE_META_H
#define WH_STORE_META_H

#include "store/store.h"

#define META_ID_LEN 32 /* hex chars of a file or upload id */

typedef struct meta meta_t;

/* Opens (creating if needed) the database at path, WAL, synchronous=FULL, busy_timeout. */
wh_status_t meta_open(const char *path, meta_t **out);
void meta_close(meta_t *m); /* NULL-safe */
/* durable=false turns off SQLite's fsync at commit (PRAGMA synchronous=OFF): for tests and
 * throw-away benchmark stores only, never for data anyone wants back after a power cut. */
wh_status_t meta_set_durable(meta_t *m, bool durable);
/* Rows read by meta_object_list since open: shows that a delimiter listing skips past the
 * keys under each common prefix instead of reading them. */
uint64_t meta_list_rows(meta_t *m);

/* ---- buckets ---- */
wh_status_t meta_bucket_create(meta_t *m, const char *name, time_t created); /* EXISTS */
wh_status_t meta_bucket_delete(meta_t *m, const char *name); /* NOT_FOUND, NOT_EMPTY */
wh_status_t meta_bucket_exists(meta_t *m, const char *name);
wh_status_t meta_bucket_list(meta_t *m, store_bucket_info_t **out, size_t *n);

/* ---- objects ---- */
/* Reads an object's row into *meta (may be NULL) and its file id into file_id (may be NULL).
 * When fd is not NULL, also opens the file (objdir_fd-relative, read-only); if a concurrent
 * overwrite unlinked it between lookup and open, looks up again, so *fd always matches *meta.
 * WH_ERR_NOT_FOUND: no such bucket or key. */
wh_status_t meta_object_get(meta_t *m, const char *bucket, const char *key, size_t klen,
                            store_obj_meta_t *meta, char file_id[META_ID_LEN + 1],
                            int objdir_fd, int *fd);
/* Inserts or replaces the row. old_file_id receives the replaced row's file id, or "".
 * WH_ERR_NOT_FOUND if the bucket does not exist. */
wh_status_t meta_object_put(meta_t *m, const char *bucket, const char *key, size_t klen,
                            const store_obj_meta_t *meta, const char *file_id,
                            char old_file_id[META_ID_LEN + 1]);
/* Deletes the row; old_file_id receives its file id or "" when there was none.
 * WH_ERR_NOT_FOUND only if the bucket does not exist. */
wh_status_t meta_object_delete(meta_t *m, const char *bucket, const char *key, size_t klen,
                               char old_file_id[META_ID_LEN + 1]);
wh_status_t meta_object_list(meta_t *m, const char *bucket, const store_list_params_t *p,
                             store_list_result_t *out);
/* WH_OK if an object or a part row refers to file_id, WH_ERR_NOT_FOUND if none does. */
wh_status_t meta_file_referenced(meta_t *m, const char *file_id);

/* ---- multipart ---- */
typedef struct meta_part {
    store_part_info_t info;
    char file_id[META_ID_LEN + 1];
} meta_part_t;

/* The upload row keeps the object's content type and user metadata until completion. */
wh_status_t meta_upload_create(meta_t *m, const char *bucket, const char *key,
                               const char *upload_id, const store_obj_meta_t *meta,
                               time_t initiated); /* NOT_FOUND: bucket */
/* WH_OK if the upload exists for bucket/key; *meta (may be NULL) gets content type and user
 * metadata (user_meta_json malloc'd). */
wh_status_t meta_upload_get(meta_t *m, const char *bucket, const char *key,
                            const char *upload_id, store_obj_meta_t *meta);
/* Inserts or replaces part info->number; old_file_id gets the replaced part's file or "". */
wh_status_t meta_part_put(meta_t *m, const char *bucket, const char *key, const char *upload_id,
                          const store_part_info_t *info, const char *file_id,
                          char old_file_id[META_ID_LEN + 1]);
/* Parts with number > marker in order, at most max (0 = all); *out malloc'd. */
wh_status_t meta_part_list(meta_t *m, const char *bucket, const char *key, const char *upload_id,
                           uint32_t marker, uint32_t max, meta_part_t **out, size_t *n,
                           bool *truncated);
/* Deletes the upload and its parts; *files (malloc'd, n ids) are the part files to unlink. */
wh_status_t meta_upload_delete(meta_t *m, const char *bucket, const char *key,
                               const char *upload_id, meta_part_t **files, size_t *n);
/* Completion, atomically: checks the upload still exists and that parts[i].number still maps
 * to parts[i].file_id (WH_ERR_PRECONDITION if a part changed meanwhile), upserts the object
 * row, deletes the upload and all its part rows. *all_parts (malloc'd) receives every part
 * file of the upload to unlink; old_file_id the replaced object's file or "". */
wh_status_t meta_upload_complete(meta_t *m, const char *bucket, const char *key,
                                 const char *upload_id, const meta_part_t *parts, size_t n,
                                 const store_obj_meta_t *meta, const char *file_id,
                                 char old_file_id[META_ID_LEN + 1], meta_part_t **all_parts,
                                 size_t *n_all);
wh_status_t meta_upload_list(meta_t *m, const char *bucket, const char *prefix,
                             store_upload_info_t **out, size_t *n);

#endif
