/* The storage engine: buckets, objects and multipart uploads. This is the API the S3 handlers
 * call; behind it are two ops tables.
 *
 * Two tables, each with its own implementations:
 * - the metadata table (store/meta.h, meta_ops_t): buckets, object rows, uploads and parts,
 *   chunk maps, and for a cluster storage nodes, a GC queue and advisory locks. Implemented by
 *   SQLite (meta_sqlite*.c, the embedded default, DIR/meta.db) and PostgreSQL (meta_pg*.c,
 *   selected by a postgresql:// URL).
 * - the data table (store/data.h, store_data_ops_t): where an object's bytes live. Implemented
 *   by local files (data_local.c: DIR/objects/<2 hex>/<32 hex id>); a cluster's gateway
 *   implements it remotely over storage servers.
 * The metadata row of an object names its bytes by a data reference (store_data_ref_t: an id,
 * and for chunked objects a chunk map), never by a path, so a key never becomes a path.
 *
 * Write order (any data table): bytes go to the data table's writer and are made durable
 * (local: temp file, fsync, rename), and only then is the metadata committed, so readers never
 * see partial data. An overwrite replaces the row; the replaced bytes are released after the
 * commit, and a reader that already opened them keeps reading the old version (local: POSIX
 * unlink semantics). Anything left over from a crash is removed at open.
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
struct meta;
struct store_data;

/* How to open a store. Zeroed fields take the defaults. */
typedef struct store_config {
    const char *data_dir;     /* local object files, and SQLite's meta.db without meta_url */
    const char *meta_url;     /* NULL/"": SQLite in data_dir; "postgresql://USER@HOST:PORT/DB" */
    uint64_t reserve_bytes;   /* space held back for deletes on a full disk; 0: 8 MiB,
                               * UINT64_MAX: none */
    unsigned high_water_pct;  /* refuse new writes above this fill of the data file system
                               * (1..100, default 99; 100: only when full) */
} store_config_t;
#define STORE_DEFAULT_RESERVE (8ULL << 20)
#define STORE_DEFAULT_HIGH_WATER 99

/* The embedded default: SQLite and local files under dir. */
wh_status_t store_open(const char *dir, store_t **out);
wh_status_t store_open_config(const store_config_t *cfg, store_t **out);
/* A store over tables the caller opened (a cluster gateway: PostgreSQL and remote data).
 * Takes ownership of both, also on failure. */
wh_status_t store_open_tables(struct meta *meta, struct store_data *data, store_t **out);
void store_close(store_t *st); /* NULL-safe */
/* The tables behind a store (for /metrics, and for the cluster's GC and repair). */
struct meta *store_meta(store_t *st);
struct store_data *store_data(store_t *st);

/* Space where bytes live, for /metrics and the high-water mark. */
typedef struct store_space {
    uint64_t total;      /* bytes of the file system (or cluster) */
    uint64_t free;       /* bytes available to new objects */
    uint64_t reserve;    /* bytes held back for deletes (included in neither) */
    unsigned high_water_pct;
} store_space_t;
wh_status_t store_space(store_t *st, store_space_t *out);

/* Validates an S3 bucket name (3-63, lowercase, digits, '.', '-', rules of AWS). */
bool store_bucket_name_valid(const char *name);
/* Validates a key: 1..1024 bytes of valid UTF-8 without NUL. */
bool store_key_valid(const char *key, size_t len);

/* ---- buckets ---- */
wh_status_t store_bucket_create(store_t *st, const char *bucket); /* WH_ERR_EXISTS if there */
/* owner: the creator's canonical id ("" = root, as for buckets made before owners were kept);
 * acl: the serialised ACL (its format is the authorization engine's) or NULL for the default. */
wh_status_t store_bucket_create_owned(store_t *st, const char *bucket, const char *owner,
                                      const char *acl);
/* WH_ERR_NOT_EMPTY while it holds objects, NOT_FOUND. Incomplete multipart uploads do not keep
 * a bucket: they are dropped with it and their parts' data released, as S3 does. */
wh_status_t store_bucket_delete(store_t *st, const char *bucket);
wh_status_t store_bucket_exists(store_t *st, const char *bucket); /* WH_OK or WH_ERR_NOT_FOUND */
typedef struct store_bucket_info {
    char name[64];
    time_t created;
} store_bucket_info_t;
/* *out malloc'd, caller frees. */
wh_status_t store_bucket_list(store_t *st, store_bucket_info_t **out, size_t *n);
/* What authorization needs of a bucket. */
typedef struct store_bucket_auth {
    char owner[65];  /* canonical id; "" = root (buckets made before owners were kept) */
    char *acl;       /* serialised ACL, malloc'd, or NULL: the default (owner FULL_CONTROL) */
    char *policy;    /* bucket policy JSON, malloc'd, or NULL: none */
} store_bucket_auth_t;
wh_status_t store_bucket_auth_get(store_t *st, const char *bucket, store_bucket_auth_t *out);
void store_bucket_auth_free(store_bucket_auth_t *a); /* frees acl and policy */
/* NULL: back to the default ACL / no policy. WH_ERR_NOT_FOUND: no such bucket. */
wh_status_t store_bucket_set_acl(store_t *st, const char *bucket, const char *acl);
wh_status_t store_bucket_set_policy(store_t *st, const char *bucket, const char *policy);

/* ---- versions ----
 * A bucket's versioning is off (never enabled), Enabled or Suspended (S3 cannot turn it off
 * again). The current version of each key lives in the objects table, older versions and delete
 * markers in a table of their own; bytes of a version stay until that version is deleted. A
 * version id is 32 lowercase hex characters, the first 16 the inverted commit time (so ids of a
 * key sort newest first), or "null". */
#define STORE_VERSION_ID_MAX 40
typedef enum {
    STORE_VERSIONING_OFF = 0,
    STORE_VERSIONING_ENABLED = 1,
    STORE_VERSIONING_SUSPENDED = 2,
} store_versioning_t;
/* "null" or a generated id: a well-formed version id. */
bool store_version_id_valid(const char *v);

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
    char owner[65];          /* canonical id of the writer; "" = root (and rows made before
                              * owners were kept) */
    char *acl;               /* serialised ACL, malloc'd, or NULL: the default (private) */
    /* Versions (the store sets these on a commit; "null" for an object written while the
     * bucket's versioning was off or suspended, and for rows made before versions). */
    char version_id[STORE_VERSION_ID_MAX];
    bool delete_marker;      /* this version is a delete marker: no bytes */
    char *tags;              /* the tag set as a query string "k=v&k2=v2" (encoded), or NULL */
    char *part_sizes;        /* a completed multipart object: "size1,size2,..." or NULL */
} store_obj_meta_t;
/* frees user_meta_json, acl, tags and part_sizes */
void store_obj_meta_free(store_obj_meta_t *m);

/* ---- PUT: a writer feeds bytes to a temp file and computes md5/crc as it goes ---- */
typedef struct store_writer store_writer_t;
wh_status_t store_writer_open(store_t *st, store_writer_t **out);
/* Appends; also updates md5, crc32c and crc64nvme of everything written. */
wh_status_t store_writer_write(store_writer_t *w, const void *p, size_t n);
uint64_t store_writer_size(const store_writer_t *w);
/* Digests of what was written, valid after any write: md5 hex into out[33]. */
void store_writer_md5_hex(store_writer_t *w, char out[33]);   /* finalises md5: call once */
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
 * MD5 would be the server's largest cost per byte; see docs/design.md, "ETags". */
void store_writer_use_digest_etag(store_writer_t *w, uint64_t part_size, bool part);
/* The ETag of what was written (no quotes): the MD5, or the part form above. Finalises. */
wh_status_t store_writer_etag(store_writer_t *w, char out[48]);
/* Part size of part ETags unless configured (WHARF_ETAG_PART_SIZE): objects up to this size
 * keep the plain MD5 ETag. */
#define STORE_ETAG_PART_DEFAULT (64ULL << 20)
uint64_t store_writer_crc64nvme(const store_writer_t *w);
uint32_t store_writer_crc32c(const store_writer_t *w);
/* fsync, rename, commit metadata. meta->size/etag are filled by the store if zero/empty.
 * Consumes w on success and on failure. WH_ERR_NOT_FOUND if the bucket vanished. */
wh_status_t store_writer_commit(store_writer_t *w, const char *bucket, const char *key,
                                store_obj_meta_t *meta);
/* A write's condition (S3's conditional writes: If-None-Match: * and If-Match: ETAG). The
 * metadata transaction that commits the write checks it, so of writers racing on one key at
 * most one passes; a check before the write could not promise that. On a failed check the
 * commit answers WH_ERR_PRECONDITION with failed set (If-Match on a missing key: NOT_FOUND,
 * failed set), and nothing is stored. */
typedef enum {
    STORE_COND_NONE = 0,
    STORE_COND_ABSENT, /* If-None-Match: *: the key has no current object */
    STORE_COND_MATCH,  /* If-Match: the current object's ETag is etag */
} store_cond_kind_t;
typedef struct store_cond {
    store_cond_kind_t kind;
    char etag[80];     /* STORE_COND_MATCH: without quotes */
    bool failed;       /* out: the check failed (not a conflict or an error) */
} store_cond_t;
/* store_writer_commit under a condition (NULL: none). */
wh_status_t store_writer_commit_cond(store_writer_t *w, const char *bucket, const char *key,
                                     store_obj_meta_t *meta, store_cond_t *cond);
/* Discards the temp file. NULL-safe. */
void store_writer_abort(store_writer_t *w);

/* ---- RDMA delegated to the data table ----
 * Who sent the request, as the server verified it (over the Unix socket the kernel vouches for
 * pid and uid); a remote data table forwards it inside its signed internal token. */
typedef struct store_peer {
    bool is_unix;
    int pid;
    unsigned uid;
    char addr[64]; /* "127.0.0.1:54321" or "unix" */
} store_peer_t;
typedef struct store_rdma_result {
    uint64_t bytes;     /* moved */
    uint64_t crc64nvme; /* of the bytes moved */
    char md5_hex[33];   /* PUT: md5 of the whole object, or "" if the table cannot give it */
    char etag[48];      /* PUT without md5_hex: the ETag the table vouches for instead (a
                         * cluster: "<md5 of the chunks' MD5s>-<chunks>"), or "" */
    char message[256];  /* why it failed, naming what was wrong */
} store_rdma_result_t;
/* PUT: the data table pulls size bytes from the client's region itself (storage servers reading
 * client memory). WH_ERR_UNSUPPORTED: not offered (local files): the server runs its own RDMA
 * engine and feeds store_writer_write. On WH_OK the writer holds exactly those bytes, and
 * store_writer_size/crc64nvme/md5 report them. */
wh_status_t store_writer_rdma_put(store_writer_t *w, const char *token, const store_peer_t *peer,
                                  uint64_t size, store_rdma_result_t *res);

/* ---- GET/HEAD ---- */
/* An open object version. The bytes may be local (an fd the server can sendfile or hand to its
 * own RDMA engine) or remote (only pread into a buffer, and maybe delegated RDMA). It keeps its
 * version readable even if the key is overwritten or deleted meanwhile. */
typedef struct store_reader store_reader_t;
/* *meta filled on WH_OK (free with store_obj_meta_free); NOT_FOUND as store_object_open. */
wh_status_t store_object_reader(store_t *st, const char *bucket, const char *key,
                                store_obj_meta_t *meta, store_reader_t **out);
uint64_t store_reader_size(const store_reader_t *r);
/* The local file, owned by the reader; -1 when the bytes are not local. */
int store_reader_fd(const store_reader_t *r);
/* Exactly n bytes at off (WH_ERR_RANGE past the end). */
wh_status_t store_reader_pread(store_reader_t *r, void *buf, size_t n, uint64_t off);
/* GET: the data table writes [off, off+len) into the client's region itself (storage servers
 * writing client memory); res->crc64nvme covers exactly what landed. WH_ERR_UNSUPPORTED: not
 * offered (local files): use the server's own engine with store_reader_fd. */
wh_status_t store_reader_rdma_get(store_reader_t *r, const char *token, const store_peer_t *peer,
                                  uint64_t off, uint64_t len, store_rdma_result_t *res);
/* Before the header of a reply that streams [off, off+len) by store_reader_pread: what can be
 * known now about whether those bytes can be read. WH_ERR_UNAVAILABLE (a 503), with a reason
 * in msg, when some of them are known to be unreadable now (a cluster: a chunk whose every
 * replica is on a storage server that is down, or the first chunks failing to read); WH_OK
 * otherwise (local files: always). A later read can still fail. */
wh_status_t store_reader_prepare(store_reader_t *r, uint64_t off, uint64_t len, char *msg,
                                 size_t msglen);
void store_reader_close(store_reader_t *r); /* NULL-safe */

/* Opens the object's current version. *fd is owned by the caller (close it); it keeps that
 * version readable even if the key is overwritten or deleted meanwhile. Pass fd NULL for HEAD.
 * *meta is filled on WH_OK only (free with store_obj_meta_free). WH_ERR_NOT_FOUND covers a
 * missing key and a missing bucket alike: call store_bucket_exists to tell them apart.
 * WH_ERR_UNSUPPORTED when the bytes are not local: use store_object_reader. */
wh_status_t store_object_open(store_t *st, const char *bucket, const char *key,
                              store_obj_meta_t *meta, int *fd);
wh_status_t store_object_delete(store_t *st, const char *bucket, const char *key); /* idempotent */

/* ---- versions (versions.c) ---- */
wh_status_t store_bucket_versioning_get(store_t *st, const char *bucket,
                                        store_versioning_t *out); /* NOT_FOUND: bucket */
/* ENABLED or SUSPENDED only (WH_ERR_INVALID otherwise). NOT_FOUND: bucket. */
wh_status_t store_bucket_versioning_set(store_t *st, const char *bucket, store_versioning_t v);
/* As store_object_open / store_object_reader, of one version (version_id NULL: the current).
 * When that version is a delete marker the answer is WH_ERR_NOT_FOUND with meta->delete_marker
 * set and meta->version_id naming it (the rest of meta zero); a missing version is NOT_FOUND
 * with delete_marker false. */
wh_status_t store_object_open_version(store_t *st, const char *bucket, const char *key,
                                      const char *version_id, store_obj_meta_t *meta, int *fd);
wh_status_t store_object_reader_version(store_t *st, const char *bucket, const char *key,
                                        const char *version_id, store_obj_meta_t *meta,
                                        store_reader_t **out);
/* What a delete did: the version it removed, or the delete marker it made. */
typedef struct store_del_result {
    char version_id[STORE_VERSION_ID_MAX]; /* "" when nothing was there (unversioned) */
    bool delete_marker;                    /* the removed version, or the new one, is a marker */
} store_del_result_t;
/* version_id NULL: S3's DELETE of the key (unversioned: removes it; Enabled: a new delete
 * marker becomes current; Suspended: a "null" delete marker replaces the null version). Else
 * removes exactly that version (the next newest becomes current). WH_OK when there was nothing
 * to delete. res may be NULL. */
wh_status_t store_object_delete_version(store_t *st, const char *bucket, const char *key,
                                        const char *version_id, store_del_result_t *res);
/* store_object_copy from one version of the source (NULL: the current). */
wh_status_t store_object_copy_version(store_t *st, const char *sbucket, const char *skey,
                                      const char *sversion, const char *dbucket,
                                      const char *dkey, const store_obj_meta_t *replace_meta,
                                      store_obj_meta_t *out_meta);
/* Sets (tags non-NULL) or removes the tag set of one version (NULL: the current). NOT_FOUND:
 * no such key or version, or a delete marker. */
wh_status_t store_object_tags_set(store_t *st, const char *bucket, const char *key,
                                  const char *version_id, const char *tags);

/* ListObjectVersions: every version of every key, keys in byte order and each key's versions
 * newest first; delimiter roll-up as store_object_list. Paging: key_marker alone starts after
 * that key; with version_id_marker, after that version of key_marker. */
typedef struct store_version_params {
    const char *prefix, *delimiter, *key_marker, *version_id_marker;
    uint32_t max_keys; /* 0..1000 */
} store_version_params_t;
typedef struct store_version_entry {
    char *key;
    char version_id[STORE_VERSION_ID_MAX];
    bool latest, delete_marker;
    uint64_t size;
    time_t mtime;
    char etag[80];
} store_version_entry_t;
typedef struct store_version_result {
    store_version_entry_t *entries;
    size_t n_entries;
    char **prefixes;
    size_t n_prefixes;
    bool truncated;
    char *next_key_marker;                      /* when truncated */
    char next_version_id_marker[STORE_VERSION_ID_MAX]; /* "" after a common prefix */
} store_version_result_t;
wh_status_t store_version_list(store_t *st, const char *bucket, const store_version_params_t *p,
                               store_version_result_t *out);
void store_version_result_free(store_version_result_t *r);
/* Sets the ACL of the current object (NULL: the default). WH_ERR_NOT_FOUND: no such key. */
wh_status_t store_object_set_acl(store_t *st, const char *bucket, const char *key,
                                 const char *acl);
/* Server-side copy (new file, same bytes). meta: NULL = copy metadata (the source's owner, and
 * the default ACL: S3 never copies an ACL); else replace it, owner and acl included. */
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
    char owner[65]; /* canonical id of the writer; "" = root */
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
/* The upload's metadata as CreateMultipartUpload kept it (content type, metadata JSON). */
wh_status_t store_mpu_meta(store_t *st, const char *bucket, const char *key,
                           const char *upload_id, store_obj_meta_t *meta);
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
    char owner[65]; /* who created it: canonical id, "" = root */
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
/* *bad = 5: a listed part's checksum, or the whole object's the client expects, differs from
 * the stored one (S3 answers InvalidPart and BadDigest). */
enum { STORE_MPU_BAD_PART_SUM = 5, STORE_MPU_BAD_SUM = 6 };
wh_status_t store_mpu_complete(store_t *st, const char *bucket, const char *key,
                               const char *upload_id, const store_complete_part_t *parts,
                               size_t n, store_obj_meta_t *out_meta, int *bad);
/* store_mpu_complete under a condition (NULL: none), checked in the completing transaction.
 * WH_ERR_PRECONDITION without cond->failed: a listed part changed meanwhile (a conflict). */
wh_status_t store_mpu_complete_cond(store_t *st, const char *bucket, const char *key,
                                    const char *upload_id, const store_complete_part_t *parts,
                                    size_t n, store_obj_meta_t *out_meta, int *bad,
                                    store_cond_t *cond);
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
/* store_mpu_complete_cond with the object's checksums (sums NULL: none asked). */
wh_status_t store_mpu_complete_sums(store_t *st, const char *bucket, const char *key,
                                    const char *upload_id, const store_complete_part_t *parts,
                                    size_t n, const store_mpu_sums_t *sums,
                                    store_obj_meta_t *out_meta, int *bad, store_cond_t *cond);

#endif
