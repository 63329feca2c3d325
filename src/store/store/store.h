/* SPDX-License-Identifier: Apache-2.0 */
/* The storage engine: buckets, objects and multipart uploads. This is the API the S3 handlers
 * call; behind it are two ops tables.
 *
 * Two tables, each with its own implementations:
 * - the metadata table (meta/meta.h, meta_ops_t): buckets, object rows, uploads and parts,
 *   chunk maps, and for a cluster storage nodes, a GC queue and advisory locks. Implemented by
 *   SQLite (meta_sqlite*.c, the embedded default, DIR/meta.db) and PostgreSQL (meta_pg*.c,
 *   selected by a postgresql:// URL).
 * - the data table (data/data.h, data_ops_t): where an object's bytes live. Implemented
 *   by local files (data_local.c: DIR/objects/<2 hex>/<32 hex id>); a cluster's gateway
 *   implements it remotely over storage servers.
 * The metadata row of an object names its bytes by a data reference (data_ref_t: an id,
 * and for chunked objects a chunk map), never by a path, so a key never becomes a path.
 *
 * Write order (any data table): bytes go to the data table's writer and are made durable
 * (local: temp file, fsync, rename), and only then is the metadata committed, so readers never
 * see partial data. An overwrite replaces the row; the replaced bytes are released after the
 * commit, and a reader that already opened them keeps reading the old version (local: POSIX
 * unlink semantics). Anything left over from a crash is removed at open. A completed
 * multipart upload moves no bytes where the data table composes (local files): its parts'
 * files become the object's extents in the completing metadata transaction (mpu.c).
 *
 * Thread-safe: one store is shared by all request threads. */
#ifndef WH_STORE_STORE_H
#define WH_STORE_STORE_H

#include "base/status.h"
#include "data/types.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define STORE_MAX_KEY 1024
#define STORE_MAX_PARTS 10000
#define STORE_MIN_PART_SIZE (5ULL * 1024 * 1024)

typedef struct store store_t;
struct meta;
struct data_table;

/* How to open a store. Zeroed fields take the defaults. */
typedef struct store_config {
    const char *data_dir;    /* local object files, and SQLite's meta.db without meta_url */
    const char *meta_url;    /* NULL/"": SQLite in data_dir; "postgresql://USER@HOST:PORT/DB" */
    uint64_t reserve_bytes;  /* space held back for deletes on a full disk; 0: 8 MiB,
                              * UINT64_MAX: none */
    unsigned high_water_pct; /* refuse new writes above this fill of the data file system
                              * (1..100, default 99; 100: only when full) */
    data_durability_t durability;
    bool direct_writes; /* positional writes with O_DIRECT where the file system allows */
    bool map_writes;    /* positional writes through a mapping of the file (map_at) */
    /* Positional writes of put_stripe_min bytes or more go into put_stripes files
     * (data_local_config_t); 0: the defaults. */
    unsigned put_stripes;
    uint64_t put_stripe_min;
} store_config_t;
#define STORE_DEFAULT_RESERVE (8ULL << 20)
#define STORE_DEFAULT_HIGH_WATER 99

/* The metadata table a location names (backend.c): NULL, "" or a path: SQLite at that path (a
 * path is required); "postgresql://...": the PostgreSQL backend; another scheme: INVALID. */
struct meta;
wh_status_t store_meta_open(const char *url_or_path, struct meta **out);
/* A store as cfg says (cfg->data_dir alone: the embedded default, SQLite and local files under
 * it). */
wh_status_t store_open(const store_config_t *cfg, store_t **out);
/* A store over tables the caller opened (a cluster gateway: PostgreSQL and remote data).
 * Takes ownership of both, also on failure. */
wh_status_t store_open_tables(struct meta *meta, struct data_table *data, store_t **out);
void store_close(store_t *st); /* NULL-safe */
/* The tables behind a store (for /metrics, and for the cluster's GC and repair). */
struct meta *store_meta(store_t *st);
struct data_table *store_data(store_t *st);

wh_status_t store_space(store_t *st, data_space_t *out);
/* Metadata transactions retried, and retryable failures the backend met (meta_tx_stats). */
void store_meta_tx_stats(uint64_t *retries, uint64_t *retryable);

/* Validates an S3 bucket name (3-63, lowercase, digits, '.', '-', rules of AWS). */
bool store_bucket_name_valid(const char *name);
/* Validates a key: 1..1024 bytes of valid UTF-8 without NUL. */
bool store_key_valid(const char *key, size_t len);

/* ---- buckets ---- */
/* A new bucket. WH_ERR_EXISTS if there, WH_ERR_INVALID for a bad name. Strings are borrowed
 * for the call. */
typedef struct store_bucket_args {
    const char *bucket;
    /* the creator's canonical id (NULL or "" = root, as for buckets made before owners were
     * kept) */
    const char *owner;
    const char *acl; /* the serialised ACL (the authorization engine's format); NULL: default */
} store_bucket_args_t;
wh_status_t store_bucket_create(store_t *st, const store_bucket_args_t *a);
/* WH_ERR_NOT_EMPTY while it holds objects, NOT_FOUND. Incomplete multipart uploads do not keep
 * a bucket: they are dropped with it and their parts' data released, as S3 does. */
wh_status_t store_bucket_delete(store_t *st, const char *bucket);
wh_status_t store_bucket_exists(store_t *st, const char *bucket); /* WH_OK or WH_ERR_NOT_FOUND */
/* *out malloc'd, caller frees. */
wh_status_t store_bucket_list(store_t *st, data_bucket_info_t **out, size_t *n);
wh_status_t store_bucket_auth_get(store_t *st, const char *bucket, data_bucket_auth_t *out);
/* NULL: back to the default ACL / no policy. WH_ERR_NOT_FOUND: no such bucket. */
wh_status_t store_bucket_set_acl(store_t *st, const char *bucket, const char *acl);
wh_status_t store_bucket_set_policy(store_t *st, const char *bucket, const char *policy);
/* A bucket configuration (data_battr_t, data/types.h): value NULL removes it; *out NULL when
 * unset. WH_ERR_NOT_FOUND: no such bucket (and for DATA_BATTR_OBJECT_LOCK: a bucket whose
 * versioning is not Enabled, checked in the same transaction). */
wh_status_t store_bucket_attr_set(store_t *st, const char *bucket, data_battr_t which,
                                  const char *value);
wh_status_t store_bucket_attr_get(store_t *st, const char *bucket, data_battr_t which, char **out);

/* "null" or a generated id: a well-formed version id. */
bool store_version_id_valid(const char *v);

/* ---- PUT: a writer feeds bytes to a temp file and computes md5/crc as it goes ---- */
typedef struct store_writer store_writer_t;
wh_status_t store_writer_open(store_t *st, store_writer_t **out);
/* Appends; also updates md5, crc32c and crc64nvme of everything written. */
wh_status_t store_writer_write(store_writer_t *w, const void *p, size_t n);
uint64_t store_writer_size(const store_writer_t *w);
/* Digests of what was written, valid after any write: md5 hex into out[33]. */
void store_writer_md5_hex(store_writer_t *w, char out[33]); /* finalises md5: call once */
/* Switches a fresh writer to part ETags: instead of one MD5 over the object, the MD5 of each
 * part_size part, hashed in parallel, combined as S3 combines a multipart upload's parts
 * ("hex-N"); an object of one part keeps its plain MD5. Call before the first write, and only
 * where no whole-object MD5 is needed (no Content-MD5 to check, not an UploadPart):
 * store_writer_md5_hex is then unavailable (it answers ""). */
void store_writer_use_part_etag(store_writer_t *w, uint64_t part_size);
/* Switches a fresh writer to digest ETags: no MD5 of the bytes is computed at all. The ETag
 * is 32 hex characters made from the CRC-64/NVME, CRC-32C and size of what was written
 * (for an UploadPart, store_writer_md5_hex answers them: its ETag); an object (part false)
 * adds "-N", N its size in part_size parts (at least 1), so that S3 clients read it as the
 * multipart form and never compare it with an MD5 of the bytes. For RDMA writes, where the
 * MD5 would be the server's largest cost per byte; see docs/protocol.md, "ETags". */
void store_writer_use_digest_etag(store_writer_t *w, uint64_t part_size, bool part);
/* The ETag of what was written (no quotes): the MD5, or the part form above. Finalises. */
wh_status_t store_writer_etag(store_writer_t *w, char out[48]);
/* Part size of part ETags unless configured (WHARF_ETAG_PART_SIZE): objects up to this size
 * keep the plain MD5 ETag. */
#define STORE_ETAG_PART_DEFAULT (64ULL << 20)
uint64_t store_writer_crc64nvme(const store_writer_t *w);
uint32_t store_writer_crc32c(const store_writer_t *w);
/* Where store_writer_commit commits, and on what condition. Strings and cond are borrowed for
 * the call. bucket and key set, the rest zero: an unconditional PUT. */
typedef struct store_commit_args {
    const char *bucket;
    const char *key;
    /* NULL (or kind DATA_COND_NONE): none. Else (data/types.h, data_cond_t) checked in the
     * committing metadata transaction: WH_ERR_PRECONDITION, or NOT_FOUND, with cond->failed
     * set when it fails, and nothing committed. */
    data_cond_t *cond;
} store_commit_args_t;
/* fsync, rename, commit metadata. meta (in and out) is the row: meta->size/etag are filled by
 * the store if zero/empty, and the version id it got is written back. Consumes w on success
 * and on failure. WH_ERR_NOT_FOUND if the bucket vanished. */
wh_status_t store_writer_commit(store_writer_t *w, const store_commit_args_t *a,
                                data_obj_meta_t *meta);
/* Discards the temp file. NULL-safe. */
void store_writer_abort(store_writer_t *w);

/* Positional writes, for a writer fed by several threads at once (the RDMA engine's direct
 * PUT): begin_at(total) on a fresh writer with digest ETags, then write_at from any threads
 * with disjoint ranges covering [0, total), then end_at with the checksums the feeder
 * computed (crc32c_set false: no CRC-32C is known). begin_at answers WH_ERR_UNSUPPORTED
 * where a sequential feed is needed (an MD5 or encryption to compute, or a data table
 * without positional writes), and WH_ERR_NO_SPACE when total does not fit. */
wh_status_t store_writer_begin_at(store_writer_t *w, uint64_t total);
wh_status_t store_writer_write_at(store_writer_t *w, const void *p, size_t n, uint64_t off);
/* Where the table maps the file (local files, not O_DIRECT), begin_at maps it: map_at gives
 * in *p the place of [off, off+n) for the feeder to copy into itself, from any threads
 * (disjoint ranges). WH_ERR_UNSUPPORTED when the writer is not mapped: use write_at. */
wh_status_t store_writer_map_at(store_writer_t *w, uint64_t off, size_t n, void **p);
/* After begin_at: where the bytes go into several files (a large write, --put-stripes), the
 * bytes of the object each holds, [k * len, (k + 1) * len): writes into different stripes
 * do not wait for one another. 0: one file. */
uint64_t store_writer_stripe_len(const store_writer_t *w);
/* After begin_at: the size and alignment of write_at calls the destination takes best (a
 * tmpfs in huge pages: 2 MiB), 0: any. */
uint64_t store_writer_write_unit(const store_writer_t *w);
void store_writer_end_at(store_writer_t *w, uint64_t crc64nvme, bool crc32c_set, uint32_t crc32c);

/* Names the bucket the writer's bytes are for, before the first write: a cluster data table
 * picks that bucket's layout (replicas or erasure coding). WH_ERR_INVALID with msg when the
 * bucket's setting is malformed; a table without layouts ignores it. */
wh_status_t store_writer_bucket(store_writer_t *w, const char *bucket, char *msg, size_t msglen);
/* PUT: the data table pulls size bytes from the client's region itself (storage servers reading
 * client memory). token: the request's x-amz-rdma-token as the front parsed it (xfer_token_arg_t,
 * xfer/token.h), borrowed for the call. WH_ERR_UNSUPPORTED: not offered (local files): the
 * server runs its own RDMA engine and feeds store_writer_write. On WH_OK the writer holds
 * exactly those bytes, and store_writer_size/crc64nvme/md5 report them. */
wh_status_t store_writer_rdma_put(store_writer_t *w, const struct xfer_token_arg *token,
                                  const wh_peer_t *peer, uint64_t size, data_rdma_result_t *res);

/* ---- GET/HEAD ---- */
/* What store_object_open and store_object_reader read. Strings are borrowed for the call.
 * bucket and key set, the rest zero: the current version. */
typedef struct store_read_args {
    const char *bucket;
    const char *key;
    /* NULL: the current version. Else that version; when it is a delete marker the answer is
     * WH_ERR_NOT_FOUND with meta->delete_marker set and meta->version_id naming it (the rest
     * of meta zero); a missing version is NOT_FOUND with delete_marker false. */
    const char *version_id;
} store_read_args_t;
/* A reader of the version a names. *meta filled on WH_OK (free with data_obj_meta_free);
 * NOT_FOUND as store_object_open. */
wh_status_t store_object_reader(store_t *st, const store_read_args_t *a, data_obj_meta_t *meta,
                                data_reader_t **out);
uint64_t store_reader_size(const data_reader_t *r);
/* The local file, owned by the reader; -1 when the bytes are not local. */
int store_reader_fd(const data_reader_t *r);
/* The local file that holds byte off (< size): its fd (owned by the reader), the offset of
 * off in it, and how many of the object's bytes follow there contiguously (sendfile or the
 * RDMA engine, one extent at a time, for an object composed of its multipart upload's parts,
 * where store_reader_fd is -1). WH_ERR_UNSUPPORTED when the bytes are not local. */
wh_status_t store_reader_extent(const data_reader_t *r, uint64_t off, int *fd, uint64_t *file_off,
                                uint64_t *len);
/* Exactly n bytes at off (WH_ERR_RANGE past the end). */
wh_status_t store_reader_pread(data_reader_t *r, void *buf, size_t n, uint64_t off);
/* GET: the data table writes [off, off+len) into the client's region itself (storage servers
 * writing client memory); res->crc64nvme covers exactly what landed. token as for
 * store_writer_rdma_put. WH_ERR_UNSUPPORTED: not offered (local files): use the server's own
 * engine with store_reader_fd. */
wh_status_t store_reader_rdma_get(data_reader_t *r, const struct xfer_token_arg *token,
                                  const wh_peer_t *peer, uint64_t off, uint64_t len,
                                  data_rdma_result_t *res);
/* Before the header of a reply that streams [off, off+len) by store_reader_pread: what can be
 * known now about whether those bytes can be read. WH_ERR_UNAVAILABLE (a 503), with a reason
 * in msg, when some of them are known to be unreadable now (a cluster: a chunk whose every
 * replica is on a storage server that is down, or the first chunks failing to read); WH_OK
 * otherwise (local files: always). A later read can still fail. */
wh_status_t store_reader_prepare(data_reader_t *r, uint64_t off, uint64_t len, char *msg,
                                 size_t msglen);
void store_reader_close(data_reader_t *r); /* NULL-safe */

/* Opens the version a names. *fd is owned by the caller (close it); it keeps that
 * version readable even if the key is overwritten or deleted meanwhile. Pass fd NULL for HEAD.
 * An object composed of several files (a completed multipart upload) has no one fd: it
 * answers WH_ERR_UNSUPPORTED too; use store_object_reader and store_reader_extent.
 * *meta is filled on WH_OK only (free with data_obj_meta_free). WH_ERR_NOT_FOUND covers a
 * missing key and a missing bucket alike: call store_bucket_exists to tell them apart.
 * WH_ERR_UNSUPPORTED when the bytes are not local: use store_object_reader. */
wh_status_t store_object_open(store_t *st, const store_read_args_t *a, data_obj_meta_t *meta,
                              int *fd);
/* What store_object_delete removes. Strings and cond are borrowed for the call. bucket and key
 * set, the rest zero: S3's DELETE of the key, no lock passed over, no condition. */
typedef struct store_delete_args {
    const char *bucket;
    const char *key;
    /* NULL: S3's DELETE of the key (unversioned: removes it; Enabled: a new delete marker
     * becomes current; Suspended: a "null" delete marker replaces the null version). Else
     * removes exactly that version (the next newest becomes current). */
    const char *version_id;
    /* The locks passed over (STORE_BYPASS_*; 0, DATA_BYPASS_NONE: none): a version that its
     * lock keeps answers WH_ERR_AUTH with res->locked saying why (the check is made in the
     * delete's metadata transaction). */
    int bypass;
    /* NULL: none. Else (data/types.h, data_del_cond_t) checked in the delete's metadata
     * transaction: WH_ERR_PRECONDITION, or NOT_FOUND, with cond->failed set when it fails,
     * and nothing deleted. */
    data_del_cond_t *cond;
} store_delete_args_t;
/* Idempotent: WH_OK when there was nothing to delete; NOT_FOUND: no such bucket. res (what was
 * removed or made) may be NULL. */
wh_status_t store_object_delete(store_t *st, const store_delete_args_t *a, data_del_result_t *res);

/* RenameObject (rename.c): the current object of src becomes that of dst in the same bucket, in
 * one metadata transaction, without moving a byte (meta/meta.h, object_rename, says what is
 * checked). scond and cond may be NULL; *fail (may be NULL) says what refused it:
 * NOT_FOUND (no source, or cond's If-Match found no destination), PRECONDITION, AUTH (a lock),
 * UNSUPPORTED (a versioned bucket), INVALID (a key S3 does not take). */
typedef struct store_rename_args {
    const char *bucket, *src_key, *dst_key;
    const data_rename_src_cond_t *scond;
    data_cond_t *cond;
} store_rename_args_t;
wh_status_t store_object_rename(store_t *st, const store_rename_args_t *a,
                                data_rename_fail_t *fail);

/* An append (append.c; S3 Express's PutObject with x-amz-write-offset-bytes): commits the
 * writer's bytes after the key's current object, whose size must be offset. Nothing is
 * rewritten: the new object's reference lists the old one's extents and then the new bytes' (a
 * table that composes: local files; elsewhere UNSUPPORTED), and one metadata transaction
 * replaces the object only if it is still the one extended (object_swap), so of appends racing
 * at one offset one commits. No object and offset 0: a new object (If-None-Match: *), from
 * meta. The object's CRC-64/NVME (and CRC-32C, when it had a full-object one) are combined
 * from the stored and the new bytes' without a read; its ETag becomes
 * "<md5(old ETag, new bytes' MD5)>-<segments>", part_sizes lists its segments (GET
 * ?partNumber=N reads the Nth). Takes w. *meta: the committed object's. *fail says why not. */
typedef enum {
    STORE_APPEND_OK = 0,
    STORE_APPEND_OFFSET,     /* INVALID or PRECONDITION: offset is not the object's size */
    STORE_APPEND_EMPTY,      /* INVALID: no bytes */
    STORE_APPEND_ENCRYPTED,  /* UNSUPPORTED: the object or the new bytes are encrypted */
    STORE_APPEND_VERSIONED,  /* UNSUPPORTED: the bucket's versioning is not off */
    STORE_APPEND_LOCKED,     /* AUTH: a retention or legal hold */
    STORE_APPEND_TOO_MANY,   /* INVALID: the object has 10000 segments */
    STORE_APPEND_NO_COMPOSE, /* UNSUPPORTED: this data table cannot extend an object */
} store_append_fail_t;
wh_status_t store_writer_commit_append(store_writer_t *w, const char *bucket, const char *key,
                                       uint64_t offset, data_obj_meta_t *meta,
                                       store_append_fail_t *fail);

/* ---- versions (versions.c) ---- */
wh_status_t store_bucket_versioning_get(store_t *st, const char *bucket,
                                        data_versioning_t *out); /* NOT_FOUND: bucket */
/* ENABLED or SUSPENDED only (WH_ERR_INVALID otherwise). NOT_FOUND: bucket. PRECONDITION:
 * SUSPENDED on a bucket with object lock. */
wh_status_t store_bucket_versioning_set(store_t *st, const char *bucket, data_versioning_t v);
/* Changes one version's retention and legal hold (meta.h, object_lock_set). */
wh_status_t store_object_lock_set(store_t *st, const char *bucket, const char *key,
                                  const char *version_id, const data_lock_set_t *req,
                                  data_obj_meta_t *out);
/* Sets (tags non-NULL) or removes the tag set of one version (NULL: the current). NOT_FOUND:
 * no such key or version, or a delete marker. */
wh_status_t store_object_tags_set(store_t *st, const char *bucket, const char *key,
                                  const char *version_id, const char *tags);

wh_status_t store_version_list(store_t *st, const char *bucket, const data_version_params_t *p,
                               data_version_result_t *out);
/* Sets the ACL of the current object (NULL: the default). WH_ERR_NOT_FOUND: no such key. */
wh_status_t store_object_set_acl(store_t *st, const char *bucket, const char *key, const char *acl);
/* What store_object_copy copies, and where. Strings, replace_meta and sse are borrowed for the
 * call. The four names set, the rest zero: the current version, its metadata, plain to plain. */
struct store_copy_sse;
typedef struct store_copy_args {
    const char *src_bucket;
    const char *src_key;
    const char *src_version; /* NULL: the current version */
    const char *dst_bucket;
    const char *dst_key;
    /* NULL: copy the metadata (the source's owner, and the default ACL: S3 never copies an
     * ACL); else replace it, owner, acl and the lock (lock_mode, lock_until, legal_hold)
     * included. The source's lock is never copied. */
    const data_obj_meta_t *replace_meta;
    /* NULL: plain to plain. Else (store/crypt.h, store_copy_sse_t) the keys to decrypt the
     * source and encrypt the copy with, and out, what was copied. */
    struct store_copy_sse *sse;
} store_copy_args_t;
/* Server-side copy (new bytes, the same content). A copy that decrypts or encrypts moves the
 * plaintext through the writer: the copy keeps the source's ETag (checked against the bytes
 * read when it is a plain MD5) but not its part boundaries. WH_ERR_AUTH: the source is
 * encrypted and no key was given; WH_ERR_INVALID: a bad destination key. out_meta (NULL: not
 * wanted) is the copy's row, free with data_obj_meta_free. */
wh_status_t store_object_copy(store_t *st, const store_copy_args_t *a, data_obj_meta_t *out_meta);

/* ---- LIST ---- */
wh_status_t store_object_list(store_t *st, const char *bucket, const data_list_params_t *p,
                              data_list_result_t *out);

/* ---- multipart ---- */
wh_status_t store_mpu_create(store_t *st, const char *bucket, const char *key,
                             const data_obj_meta_t *meta, char upload_id[65]);
/* Checks the upload exists for bucket/key: WH_ERR_NOT_FOUND otherwise. */
wh_status_t store_mpu_check(store_t *st, const char *bucket, const char *key,
                            const char *upload_id);
/* The upload's metadata as CreateMultipartUpload kept it (content type, metadata JSON). */
wh_status_t store_mpu_meta(store_t *st, const char *bucket, const char *key, const char *upload_id,
                           data_obj_meta_t *meta);
/* Commits a writer as part N (1..10000), replacing any earlier part N. etag_out: hex md5 [33].
 * Consumes w on success and on failure, like store_writer_commit. */
wh_status_t store_mpu_part_commit(store_t *st, const char *bucket, const char *key,
                                  const char *upload_id, uint32_t part, store_writer_t *w,
                                  char etag_out[33]);
/* Parts in order, numbers > marker, at most max (0 = all). *out malloc'd. */
wh_status_t store_mpu_list_parts(store_t *st, const char *bucket, const char *key,
                                 const char *upload_id, uint32_t marker, uint32_t max,
                                 data_part_info_t **out, size_t *n, bool *truncated);
/* Incomplete uploads of bucket under prefix (NULL: all): one page of them (data_upload_page_t,
 * data/types.h: reads only the rows of that page), or every one (page NULL). *out malloc'd. */
wh_status_t store_mpu_list_uploads(store_t *st, const char *bucket, const char *prefix,
                                   const data_upload_page_t *page, data_upload_info_t **out,
                                   size_t *n);
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
/* *bad = 5: a listed part's checksum, or the whole object's the client expects, differs from
 * the stored one (S3 answers InvalidPart and BadDigest). */
enum { STORE_MPU_BAD_PART_SUM = 5, STORE_MPU_BAD_SUM = 6 };
/* The object's CRC-32C after completion, as S3's x-amz-checksum-type names it: none (S3's
 * multipart default), COMPOSITE (the CRC-32C of the parts' CRC-32Cs, "<base64>-<parts>") or
 * FULL_OBJECT (the CRC-32C of the whole object, combined from the parts' without re-reading).
 * Its CRC-64/NVME is always the whole object's. */
typedef enum { STORE_SUM_NONE, STORE_SUM_COMPOSITE, STORE_SUM_FULL_OBJECT } store_sum_type_t;
typedef struct store_mpu_sums {
    store_sum_type_t crc32c;
    const char *want_crc32c;    /* NULL, or what the client expects of the object (base64;
                                 * a "-N" suffix is tolerated) */
    const char *want_crc64nvme; /* NULL, or the object's expected CRC-64/NVME */
    /* NULL, or one entry per listed part: NULL or the part's checksum as the client lists it
     * (base64), which must be the stored one. */
    const char *const *part_crc32c;
    const char *const *part_crc64nvme;
} store_mpu_sums_t;
/* What store_mpu_complete completes. Strings and arrays are borrowed for the call. */
typedef struct store_mpu_complete_args {
    const char *bucket;
    const char *key;
    const char *upload_id;
    const store_complete_part_t *parts; /* the listed parts, n of them */
    size_t n;
    const store_mpu_sums_t *sums; /* NULL: no checksum asked */
    /* NULL: none; else checked in the completing transaction. WH_ERR_PRECONDITION without
     * cond->failed: a listed part changed meanwhile (a conflict). */
    data_cond_t *cond;
} store_mpu_complete_args_t;
wh_status_t store_mpu_complete(store_t *st, const store_mpu_complete_args_t *a,
                               data_obj_meta_t *out_meta, int *bad);

#endif
