/* SPDX-License-Identifier: Apache-2.0 */
/* The store's value types: what the store's API (store/store.h), its metadata table
 * (meta/meta.h) and its data table (data/data.h) pass between them: object and bucket rows,
 * listings, versions, parts and uploads, write conditions, and the peer and result of RDMA
 * delegated to a data table. The lowest of the store's three layers holds them, so that each
 * table sees them without seeing the layers above it. */
#ifndef WH_DATA_TYPES_H
#define WH_DATA_TYPES_H

#include "base/peer.h"
#include "base/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* What an acknowledged write survives (--durability). DISK, the default: the data file is
 * fdatasync'd and its directory fsync'd before the metadata commit, so the acknowledgement
 * means the bytes are on the disk. MEMORY: the data file is left to the kernel's writeback; an
 * acknowledged write survives a crash of wharfd (the page cache keeps it) but not a crash of
 * the host or a power loss. The metadata commit is unchanged either way. */
typedef enum data_durability {
    DATA_DURABLE_DISK = 0,
    DATA_DURABLE_MEMORY,
} data_durability_t;
const char *data_durability_name(data_durability_t d); /* "disk", "memory" */

/* A striped positional write (--put-stripes: one file per stripe) has at most
 * DATA_MAX_STRIPES stripes, each a multiple of DATA_STRIPE_ALIGN bytes (the RDMA engine's
 * window, so that one window lands in one stripe). */
#define DATA_STRIPE_ALIGN (8ULL << 20)
#define DATA_MAX_STRIPES 16

/* Space where bytes live, for /metrics and the high-water mark. */
typedef struct data_space {
    uint64_t total;   /* bytes of the file system (or cluster) */
    uint64_t free;    /* bytes available to new objects */
    uint64_t reserve; /* bytes held back for deletes (included in neither) */
    unsigned high_water_pct;
    data_durability_t durability; /* of the data table's writes */
    bool direct_writes;           /* --data-writes direct: positional writes by O_DIRECT */
    uint64_t direct_bytes;        /* bytes written that way so far */
    /* The page a large file of the data directory is kept in: the huge page's size on a
     * tmpfs mounted huge=always or huge=within_size, else the base page; 0: not known. */
    uint64_t page_bytes;
    /* Released large files still being removed (their bytes), and those removed so far. */
    uint64_t reclaim_pending, reclaimed_files, reclaimed_bytes;
    uint64_t reclaim_steps; /* of those, the durable steps they were given back in */
} data_space_t;

typedef struct data_bucket_info {
    char name[64];
    time_t created;
} data_bucket_info_t;

/* What authorization needs of a bucket. */
typedef struct data_bucket_auth {
    char owner[65];     /* canonical id; "" = root (buckets made before owners were kept) */
    char *acl;          /* serialised ACL, malloc'd, or NULL: the default (owner FULL_CONTROL) */
    char *policy;       /* bucket policy JSON, malloc'd, or NULL: none */
    unsigned pab;       /* PublicAccessBlock: S3's bits (s3/bucket_config.h), 0: none */
    unsigned ownership; /* ObjectOwnership (s3/bucket_config.h), 0: no OwnershipControls */
} data_bucket_auth_t;

/* Bucket configurations kept as documents or values beside the bucket's row (deleted with
 * it). TAGS: the TagSet (s3/tags.h's query form); CORS: the CORSConfiguration document
 * (s3/bucket_config.h); PAB and OWNERSHIP: decimals, opaque to the store. */
typedef enum {
    DATA_BATTR_TAGS = 0,
    DATA_BATTR_CORS,
    DATA_BATTR_PAB,
    DATA_BATTR_OWNERSHIP,
    DATA_BATTR_LIFECYCLE,   /* the LifecycleConfiguration document (s3/lifecycle.h) */
    DATA_BATTR_OBJECT_LOCK, /* the ObjectLockConfiguration document (s3/object_lock.h):
                             * set once, never removed (S3 cannot turn object lock off) */
    DATA_BATTR_ENCRYPTION,  /* the default encryption of new objects: "AES256" (SSE-S3) */
    DATA_BATTR__COUNT
} data_battr_t;

void data_bucket_auth_free(data_bucket_auth_t *a); /* frees acl and policy */

/* ---- versions ----
 * A bucket's versioning is off (never enabled), Enabled or Suspended (S3 cannot turn it off
 * again). The current version of each key lives in the objects table, older versions and delete
 * markers in a table of their own; bytes of a version stay until that version is deleted. A
 * version id is 32 lowercase hex characters, the first 16 the inverted commit time (so ids of a
 * key sort newest first), or "null". */
#define DATA_VERSION_ID_MAX 40
typedef enum {
    DATA_VERSIONING_OFF = 0,
    DATA_VERSIONING_ENABLED = 1,
    DATA_VERSIONING_SUSPENDED = 2,
} data_versioning_t;

/* ---- object metadata ---- */
typedef struct data_obj_meta {
    uint64_t size;
    time_t mtime;
    char etag[80]; /* without quotes: hex md5, or hex-N for multipart */
    char content_type[256];
    char *user_meta_json; /* {"x-amz-meta-foo":"bar",...} malloc'd or NULL */
    char crc32c[16];      /* base64 S3 wire form, or "" */
    char crc64nvme[16];   /* base64, or "" (always set by the server for new objects) */
    uint32_t parts;       /* 0 for a single PUT */
    char owner[65];       /* canonical id of the writer; "" = root (and rows made before
                           * owners were kept) */
    char *acl;            /* serialised ACL, malloc'd, or NULL: the default (private) */
    /* Versions (the store sets these on a commit; "null" for an object written while the
     * bucket's versioning was off or suspended, and for rows made before versions). */
    char version_id[DATA_VERSION_ID_MAX];
    bool delete_marker; /* this version is a delete marker: no bytes */
    char *tags;         /* the tag set as a query string "k=v&k2=v2" (encoded), or NULL */
    char *part_sizes;   /* a completed multipart object: "size1,size2,..." or NULL */
    char *sse;          /* encryption at rest (store/crypt.h, "S3;..." or "C;..."), or
                         * NULL: stored as sent. size stays the plaintext's. */
    /* Object Lock of this version (data_lock_mode_t below). */
    int lock_mode;      /* data_lock_mode_t */
    int64_t lock_until; /* retain-until, seconds since the epoch; 0 with DATA_LOCK_NONE */
    bool legal_hold;
} data_obj_meta_t;
/* frees user_meta_json, acl, tags, part_sizes and sse */
void data_obj_meta_free(data_obj_meta_t *m);

/* ---- Object Lock ----
 * A version under a retention (mode and retain-until date, while that date is ahead) or a
 * legal hold cannot be deleted, nor its retention shortened or removed: COMPLIANCE never,
 * GOVERNANCE only by a request that bypasses governance retention (its caller holds
 * s3:BypassGovernanceRetention). The metadata transaction that would delete or change the
 * version checks this, so no race with a concurrent PutObjectRetention lets a delete through. */
typedef enum {
    DATA_LOCK_NONE = 0,
    DATA_LOCK_GOVERNANCE = 1,
    DATA_LOCK_COMPLIANCE = 2,
} data_lock_mode_t;
/* What a version's lock forbids at now: 0 nothing; else what holds it (for the message). */
typedef enum {
    DATA_LOCK_FREE = 0,
    DATA_LOCK_BY_HOLD,      /* a legal hold */
    DATA_LOCK_BY_RETENTION, /* a retention that the request may not bypass */
} data_lock_why_t;
/* What a delete may pass over: nothing, a GOVERNANCE retention (the caller holds
 * s3:BypassGovernanceRetention and asked), or every lock (only to undo a write of the server's
 * own that was never acknowledged, such as a copy whose source changed under it). */
enum { DATA_BYPASS_NONE = 0, DATA_BYPASS_GOVERNANCE = 1, DATA_BYPASS_ALL = 2 };
data_lock_why_t data_lock_blocks(int mode, int64_t until, bool hold, int bypass, int64_t now);

/* A change of a version's lock (PutObjectRetention, PutObjectLegalHold). */
typedef struct data_lock_set {
    bool set_retention; /* mode/until replace the retention (mode NONE: remove it) */
    int mode;
    int64_t until;
    bool set_hold;
    bool hold;
    bool bypass; /* x-amz-bypass-governance-retention, and allowed */
    int64_t now;
} data_lock_set_t;
/* data_lock_set_check: may the version's retention (mode, until) become s's? WH_OK, or
 * WH_ERR_AUTH (COMPLIANCE shortened or removed or weakened, GOVERNANCE so without bypass). */
wh_status_t data_lock_set_check(int mode, int64_t until, const data_lock_set_t *s);

/* A write's condition (S3's conditional writes: If-None-Match: * and If-Match: ETAG). The
 * metadata transaction that commits the write checks it, so of writers racing on one key at
 * most one passes; a check before the write could not promise that. On a failed check the
 * commit answers WH_ERR_PRECONDITION with failed set (If-Match on a missing key: NOT_FOUND,
 * failed set), and nothing is stored. */
typedef enum {
    DATA_COND_NONE = 0,
    DATA_COND_ABSENT, /* If-None-Match: *: the key has no current object */
    DATA_COND_MATCH,  /* If-Match: the current object's ETag is etag */
} data_cond_kind_t;
typedef struct data_cond {
    data_cond_kind_t kind;
    char etag[80]; /* DATA_COND_MATCH: without quotes */
    bool failed;   /* out: the check failed (not a conflict or an error) */
} data_cond_t;

/* RenameObject (S3 Express's, metadata only): the source's conditions
 * (x-amz-rename-source-if-match, -if-none-match, -if-modified-since, -if-unmodified-since),
 * checked in the rename's own transaction against the source's current row, and what made a
 * refused rename fail. */
typedef struct data_rename_src_cond {
    const char *if_match;      /* NULL, or an ETag list ("*" allowed) */
    const char *if_none_match; /* NULL, or an ETag list ("*" allowed) */
    bool has_ims, has_ius;
    time_t ims, ius; /* if-modified-since, if-unmodified-since */
} data_rename_src_cond_t;
typedef enum {
    DATA_RENAME_OK = 0,
    DATA_RENAME_SRC_MISSING, /* NOT_FOUND: no source object (or a delete marker) */
    DATA_RENAME_SRC_COND,    /* PRECONDITION: a source condition failed */
    DATA_RENAME_DST_COND,    /* PRECONDITION or NOT_FOUND: the destination's (cond->failed) */
    DATA_RENAME_VERSIONED,   /* UNSUPPORTED: the bucket's versioning is not off */
    DATA_RENAME_LOCKED,      /* AUTH: the source (or the destination it would replace) is
                              * under a retention or legal hold */
} data_rename_fail_t;
/* Does m (the source's current row) pass c? (NULL c passes.) */
bool data_rename_src_cond_ok(const data_rename_src_cond_t *c, const data_obj_meta_t *m);

/* A delete's condition (S3's conditional deletes: If-Match, x-amz-if-match-last-modified-time
 * and x-amz-if-match-size, or a DeleteObjects Object's ETag). The metadata transaction of the
 * delete checks it against the version it would remove (the current one when no version id is
 * named), so an overwrite racing the delete is never removed in place of the object the
 * condition named. data_del_cond_check: WH_OK to go on; WH_ERR_PRECONDITION with failed set
 * (and the version's etag, size and mtime, for the message); If-Match on no object (a missing
 * key or version, or a delete marker) WH_ERR_NOT_FOUND with failed DATA_DCOND_MISSING. The time
 * and size conditions hold for no object. NULL cond passes. */
typedef enum {
    DATA_DCOND_OK = 0,
    DATA_DCOND_MISSING, /* If-Match, and no object */
    DATA_DCOND_ETAG,
    DATA_DCOND_MTIME,
    DATA_DCOND_SIZE,
} data_dcond_fail_t;
typedef struct data_del_cond {
    const char *if_match; /* NULL, or an If-Match list: "*" or ETags, quoted or not, by commas */
    bool has_mtime;
    time_t mtime;
    bool has_size;
    uint64_t size;
    /* out, when the check failed: */
    data_dcond_fail_t failed;
    bool delete_marker; /* DATA_DCOND_MISSING: the version is a delete marker */
    char etag[80];      /* the version's */
    uint64_t got_size;
} data_del_cond_t;
/* m: the version (NULL: none; a delete marker counts as none). */
wh_status_t data_del_cond_check(data_del_cond_t *c, const data_obj_meta_t *m);
/* Does an If-Match or If-None-Match list ("*", or ETags, W/ and quotes allowed, by commas) name
 * etag (without quotes)? */
bool data_etag_list_match(const char *list, const char *etag);

/* ---- RDMA delegated to the data table ----
 * Who sent the request is a wh_peer_t (base/peer.h); a remote data table forwards it inside its
 * signed internal token. The client's x-amz-rdma-token comes as the S3 front parsed it, once per
 * request: a xfer_token_arg_t (xfer/token.h: the string and its parse), which the store passes
 * through untouched and only a data table that moves bytes by RDMA itself reads. */
struct xfer_token_arg;
typedef struct data_rdma_result {
    uint64_t bytes;     /* moved */
    uint64_t crc64nvme; /* of the bytes moved */
    char md5_hex[33];   /* PUT: md5 of the whole object, or "" if the table cannot give it */
    char etag[48];      /* PUT without md5_hex: the ETag the table vouches for instead (a
                         * cluster: "<md5 of the chunks' MD5s>-<chunks>"), or "" */
    char message[256];  /* why it failed, naming what was wrong */
} data_rdma_result_t;

/* An open object version. The bytes may be local (an fd the server can sendfile or hand to its
 * own RDMA engine) or remote (only pread into a buffer, and maybe delegated RDMA). It keeps its
 * version readable even if the key is overwritten or deleted meanwhile. */
typedef struct data_reader data_reader_t;

/* What a delete did: the version it removed, or the delete marker it made. */
typedef struct data_del_result {
    char version_id[DATA_VERSION_ID_MAX]; /* "" when nothing was there (unversioned) */
    bool delete_marker;                   /* the removed version, or the new one, is a marker */
    /* WH_ERR_AUTH: the version is locked (data_lock_why_t), with its lock: */
    int locked;
    int lock_mode;
    int64_t lock_until;
} data_del_result_t;

/* ListObjectVersions: every version of every key, keys in byte order and each key's versions
 * newest first; delimiter roll-up as store_object_list. Paging: key_marker alone starts after
 * that key; with version_id_marker, after that version of key_marker. */
typedef struct data_version_params {
    const char *prefix, *delimiter, *key_marker, *version_id_marker;
    uint32_t max_keys; /* 0..1000 */
} data_version_params_t;
typedef struct data_version_entry {
    char *key;
    char version_id[DATA_VERSION_ID_MAX];
    bool latest, delete_marker;
    uint64_t size;
    time_t mtime;
    char etag[80];
} data_version_entry_t;
typedef struct data_version_result {
    data_version_entry_t *entries;
    size_t n_entries;
    char **prefixes;
    size_t n_prefixes;
    bool truncated;
    char *next_key_marker;                            /* when truncated */
    char next_version_id_marker[DATA_VERSION_ID_MAX]; /* "" after a common prefix */
} data_version_result_t;
void data_version_result_free(data_version_result_t *r);

typedef struct data_list_params {
    const char *prefix;      /* may be NULL */
    const char *delimiter;   /* may be NULL */
    const char *start_after; /* exclusive; continuation token or marker decoded */
    uint32_t max_keys;       /* 0..1000 */
} data_list_params_t;
typedef struct data_list_entry {
    char *key;
    uint64_t size;
    time_t mtime;
    char etag[80];
    char owner[65]; /* canonical id of the writer; "" = root */
} data_list_entry_t;
typedef struct data_list_result {
    data_list_entry_t *entries;
    size_t n_entries;
    char **prefixes; /* common prefixes */
    size_t n_prefixes;
    bool truncated;
    char *next_marker; /* last key or prefix returned, when truncated */
} data_list_result_t;
void data_list_result_free(data_list_result_t *r);

typedef struct data_part_info {
    uint32_t number;
    uint64_t size;
    char etag[33];
    time_t mtime;
    char crc64nvme[16];
    char crc32c[16];
} data_part_info_t;

typedef struct data_upload_info {
    char *key;
    char upload_id[65];
    time_t initiated;
    char owner[65]; /* who created it: canonical id, "" = root */
} data_upload_info_t;

void data_upload_info_free(data_upload_info_t *u, size_t n);

/* A page of a bucket's uploads, in (key, initiated, upload id) order. from_key NULL: from the
 * first key of the prefix; else from keys >= from_key, and with after_id, only the uploads
 * after (from_key, after_initiated, after_id). limit 0: all of them. */
typedef struct data_upload_page {
    const char *from_key;
    const char *after_id;
    time_t after_initiated;
    size_t limit;
} data_upload_page_t;

#endif
