/* The storage engine: buckets, objects and multipart uploads on one node.
 *
 * Object bytes live in files named by random ids under DIR/objects/ (a key never becomes a
 * path); metadata lives in SQLite (WAL) at DIR/meta.db. A PUT goes to a temp file, is fsynced,
 * renamed into place, and only then committed to metadata, so readers never see partial data.
 * An overwrite replaces the metadata row; the old file is unlinked after the commit, and a GET
 * that already opened it keeps reading the old version (POSIX unlink semantics).
 * Anything left over from a crash (temp files, files without a row) is removed at open.
 *
 * Thread-safe: one store is shared by all request threads. */
#ifndef WH_STORE_STORE_H
#define WH_STORE_STORE_H

#include "base/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define STORE_MAX_KEY 1024
#define STORE_MAX_PARTS 10000
#define STORE_MIN_PART_SIZE (5ULL * 1024 * 1024)

typedef struct store store_t;

wh_status_t store_open(const char *dir, store_t **out);
void store_close(store_t *st); /* NULL-safe */

/* Validates an S3 bucket name (3-63, lowercase, digits, '.', '-', rules of AWS). */
bool store_bucket_name_valid(const char *name);
/* Validates a key: 1..1024 bytes of valid UTF-8 without NUL. */
bool store_key_valid(const char *key, size_t len);

/* ---- buckets ---- */
wh_status_t store_bucket_create(store_t *st, const char *bucket); /* WH_ERR_EXISTS if there */
wh_status_t store_bucket_delete(store_t *st, const char *bucket); /* WH_ERR_NOT_EMPTY, NOT_FOUND */
wh_status_t store_bucket_exists(store_t *st, const char *bucket); /* WH_OK or WH_ERR_NOT_FOUND */
typedef struct store_bucket_info {
    char name[64];
    time_t created;
} store_bucket_info_t;
/* *out malloc'd, caller frees. */
wh_status_t store_bucket_list(store_t *st, store_bucket_info_t **out, size_t *n);

/* ---- object metadata ---- */
typedef struct store_obj_meta {
    uint64_t size;
    time_t mtime;
    char etag[80];           /* without quotes: hex md5, or hex-N for multipart */
    char content_type[256];
    char *user_meta_json;    /* {"x-amz-meta-foo":"bar",...} malloc'd or NULL */
    char crc32c[16];         /* base64 S3 wire form, or "" */
    char crc64nvme[16];      /* base64, or "" (always set by the server for new objects) */
    uint32_t parts;          /* 0 for a single PUT */
} store_obj_meta_t;
void store_obj_meta_free(store_obj_meta_t *m); /* frees user_meta_json only */

/* ---- PUT: a writer feeds bytes to a temp file and computes md5/crc as it goes ---- */
typedef struct store_writer store_writer_t;
wh_status_t store_writer_open(store_t *st, store_writer_t **out);
/* Appends; also updates md5, crc32c and crc64nvme of everything written. */
wh_status_t store_writer_write(store_writer_t *w, const void *p, size_t n);
uint64_t store_writer_size(const store_writer_t *w);
/* Digests of what was written, valid after any write: md5 hex into out[33]. */
void store_writer_md5_hex(store_writer_t *w, char out[33]);   /* finalises md5: call once */
uint64_t store_writer_crc64nvme(const store_writer_t *w);
uint32_t store_writer_crc32c(const store_writer_t *w);
/* fsync, rename, commit metadata. meta->size/etag are filled by the store if zero/empty.
 * Consumes w on success and on failure. WH_ERR_NOT_FOUND if the bucket vanished. */
wh_status_t store_writer_commit(store_writer_t *w, const char *bucket, const char *key,
                                store_obj_meta_t *meta);
/* Discards the temp file. NULL-safe. */
void store_writer_abort(store_writer_t *w);

/* ---- GET/HEAD ---- */
/* Opens the object's current version. *fd is owned by the caller (close it); it keeps that
 * version readable even if the key is overwritten or deleted meanwhile. Pass fd NULL for HEAD.
 * *meta is filled on WH_OK only (free with store_obj_meta_free). WH_ERR_NOT_FOUND covers a
 * missing key and a missing bucket alike: call store_bucket_exists to tell them apart. */
wh_status_t store_object_open(store_t *st, const char *bucket, const char *key,
                              store_obj_meta_t *meta, int *fd);
wh_status_t store_object_delete(store_t *st, const char *bucket, const char *key); /* idempotent */
/* Server-side copy (new file, same bytes). meta: NULL = copy metadata; else replace it. */
wh_status_t store_object_copy(store_t *st, const char *sbucket, const char *skey,
                              const char *dbucket, const char *dkey,
                              const store_obj_meta_t *replace_meta, store_obj_meta_t *out_meta);

/* ---- LIST ---- */
typedef struct store_list_params {
    const char *prefix;      /* may be NULL */
    const char *delimiter;   /* may be NULL */
    const char *start_after; /* exclusive; continuation token or marker decoded */
    uint32_t max_keys;       /* 0..1000 */
} store_list_params_t;
typedef struct store_list_entry {
    char *key;
    uint64_t size;
    time_t mtime;
    char etag[80];
} store_list_entry_t;
typedef struct store_list_result {
    store_list_entry_t *entries;
    size_t n_entries;
    char **prefixes; /* common prefixes */
    size_t n_prefixes;
    bool truncated;
    char *next_marker; /* last key or prefix returned, when truncated */
} store_list_result_t;
wh_status_t store_object_list(store_t *st, const char *bucket, const store_list_params_t *p,
                              store_list_result_t *out);
void store_list_result_free(store_list_result_t *r);

/* ---- multipart ---- */
wh_status_t store_mpu_create(store_t *st, const char *bucket, const char *key,
                             const store_obj_meta_t *meta, char upload_id[65]);
/* Checks the upload exists for bucket/key: WH_ERR_NOT_FOUND otherwise. */
wh_status_t store_mpu_check(store_t *st, const char *bucket, const char *key,
                            const char *upload_id);
/* Commits a writer as part N (1..10000), replacing any earlier part N. etag_out: hex md5 [33].
 * Consumes w on success and on failure, like store_writer_commit. */
wh_status_t store_mpu_part_commit(store_t *st, const char *bucket, const char *key,
                                  const char *upload_id, uint32_t part, store_writer_t *w,
                                  char etag_out[33]);
typedef struct store_part_info {
    uint32_t number;
    uint64_t size;
    char etag[33];
    time_t mtime;
    char crc64nvme[16];
    char crc32c[16];
} store_part_info_t;
/* Parts in order, numbers > marker, at most max (0 = all). *out malloc'd. */
wh_status_t store_mpu_list_parts(store_t *st, const char *bucket, const char *key,
                                 const char *upload_id, uint32_t marker, uint32_t max,
                                 store_part_info_t **out, size_t *n, bool *truncated);
typedef struct store_upload_info {
    char *key;
    char upload_id[65];
    time_t initiated;
} store_upload_info_t;
wh_status_t store_mpu_list_uploads(store_t *st, const char *bucket, const char *prefix,
                                   store_upload_info_t **out, size_t *n);
void store_upload_info_free(store_upload_info_t *u, size_t n);
wh_status_t store_mpu_abort(store_t *st, const char *bucket, const char *key,
                            const char *upload_id);
/* Completes with the listed parts (numbers strictly ascending; etags must match).
 * Errors: WH_ERR_NOT_FOUND (upload), and via *s3err-like codes:
 *   WH_ERR_INVALID + *bad = 1 InvalidPart, 2 InvalidPartOrder, 3 EntityTooSmall.
 * The final object's etag is md5-of-md5s "-N"; its crc64nvme covers the whole object.
 * WH_ERR_PRECONDITION: a listed part was replaced by a concurrent UploadPart meanwhile; retry.
 * Unlisted parts are discarded with the upload. */
typedef struct store_complete_part {
    uint32_t number;
    const char *etag; /* without quotes */
} store_complete_part_t;
enum { STORE_MPU_BAD_PART = 1, STORE_MPU_BAD_ORDER = 2, STORE_MPU_TOO_SMALL = 3 };
/* *bad = 4: the list named no parts (S3 answers MalformedXML). */
enum { STORE_MPU_NO_PARTS = 4 };
wh_status_t store_mpu_complete(store_t *st, const char *bucket, const char *key,
                               const char *upload_id, const store_complete_part_t *parts,
                               size_t n, store_obj_meta_t *out_meta, int *bad);

#endif
