/* SPDX-License-Identifier: Apache-2.0 */
/* libwharf: the wharf S3-over-RDMA client. Stable C ABI.
 *
 * Rules of this ABI:
 * - Only opaque handles cross it. Config, option and report structs begin with a size field that
 *   the matching wharf_*_init(&x, sizeof x) sets; new fields are only ever added at the end.
 * - Every function returns a wharf_status_t (0 is OK, negatives are errors). On error, the calling
 *   thread's wharf_last_error() says what failed and what to do.
 * - A wharf_client_t is thread-safe: any number of threads may run transfers on one client, into
 *   disjoint ranges of one registered buffer.
 * - A client survives fork(): in the child it re-initialises its transport and connections on
 *   first use (registrations made in the parent are re-registered lazily).
 */
#ifndef WHARF_WHARF_H
#define WHARF_WHARF_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(WHARF_BUILD)
#define WHARF_API __attribute__((visibility("default")))
#else
#define WHARF_API
#endif

#define WHARF_ABI_VERSION 1

/* Status codes. Values match the library's internal status list one for one. */
typedef enum wharf_status {
    WHARF_OK = 0,
    WHARF_ERR_INVALID = -1, /* a bad argument; the message names it */
    WHARF_ERR_NOMEM = -2,
    WHARF_ERR_IO = -3,
    WHARF_ERR_NOT_FOUND = -4, /* no such bucket or key (404) */
    WHARF_ERR_EXISTS = -5,
    WHARF_ERR_UNSUPPORTED = -6,
    WHARF_ERR_DECLINED = -7, /* the server declined RDMA (501) and fallback is "fail" */
    WHARF_ERR_AUTH = -8,     /* 403: bad credentials, signature or clock */
    WHARF_ERR_TIMEOUT = -9,
    WHARF_ERR_TRANSPORT = -10, /* the data path failed (connection lost, fabric error) */
    WHARF_ERR_CHECKSUM = -11,  /* bytes landed do not match the server's checksum */
    WHARF_ERR_PROTOCOL = -12,  /* the server's reply broke the protocol */
    WHARF_ERR_HTTP = -13,      /* another HTTP error; the message has the S3 code */
    WHARF_ERR_BUSY = -14,
    WHARF_ERR_RANGE = -15,     /* 416, or a range outside the object */
    WHARF_ERR_TOO_LARGE = -16, /* destination smaller than the data */
    WHARF_ERR_NOT_EMPTY = -17,
    WHARF_ERR_CANCELED = -18,
    WHARF_ERR_PRECONDITION = -19,
    WHARF_ERR_INTERNAL = -20,
} wharf_status_t;

/* A static string for a status. */
WHARF_API const char *wharf_status_str(wharf_status_t st);
/* The calling thread's message for its last failed call. Valid until that thread's next call. */
WHARF_API const char *wharf_last_error(void);
/* libwharf's version, "MAJOR.MINOR.PATCH" (the project version it was built from). Static. */
WHARF_API const char *wharf_version(void);

typedef struct wharf_client wharf_client_t;
typedef struct wharf_mem wharf_mem_t;

typedef enum wharf_fallback {
    WHARF_FALLBACK_FAIL = 0, /* default: an RDMA decline or failure is an error */
    WHARF_FALLBACK_HTTP = 1, /* re-send over plain HTTP; the report says so and why */
} wharf_fallback_t;

typedef enum wharf_transport {
    WHARF_TRANSPORT_AUTO = 0, /* options: RDMA when the client has a provider, else HTTP */
    WHARF_TRANSPORT_RDMA = 1,
    WHARF_TRANSPORT_HTTP = 2,
    WHARF_TRANSPORT_NONE = 3, /* reports: no bytes moved */
} wharf_transport_t;

typedef enum wharf_mem_kind {
    WHARF_MEM_HOST = 0,
    /* CUDA device memory: registered with the NIC by a provider opened with FI_HMEM, else
     * moved by the same-host CUDA IPC transport (cuda+ipc: a server on this host, over its
     * Unix socket); where neither can, wharf_mem_register says why. */
    WHARF_MEM_CUDA = 1,
} wharf_mem_kind_t;

typedef struct wharf_client_config {
    size_t size; /* set by wharf_client_config_init */
    /* "http://127.0.0.1:9000" (required), or gateways of one cluster separated by commas
     * ("http://gw1:9000,http://gw2:9000", at most 32): each thread sends its requests to them
     * in turn; a refused connection fails over to the next, and so do GET, HEAD and
     * unconditional object/part PUTs that a gateway drops mid-request (docs/cluster.md). */
    const char *endpoint;
    const char *access_key; /* required */
    const char *secret_key; /* required */
    const char *region;     /* default "us-east-1" */
    /* Data-path provider: "ofi+shm", "ofi+tcp", "ofi+verbs", ... ; "none" or NULL = HTTP only;
     * "auto" tries shm (same host: over unix_socket, or, when that is NULL and there is one
     * endpoint, the socket the server names, see wharf_endpoint_unix_socket) then tcp. */
    const char *provider;
    /* For ofi+shm the HTTP requests go over this Unix socket, where the server can prove
     * who the peer is (SO_PEERCRED). NULL: "<endpoint's data dir>/wharfd.sock" is not guessed,
     * so shm needs it set (the wharf CLI reads WHARF_UNIX_SOCKET). */
    const char *unix_socket;
    unsigned concurrency; /* parallel requests per operation; default 4 */
    uint64_t chunk_size;  /* bytes per ranged request of a large GET; default 64 MiB */
    /* PUTs at or above this go multipart; default 256 MiB (an RDMA PUT from host memory
     * with the default: 1 GiB, where one request measured faster than four parts; that was
     * while the server's completion still copied the parts). */
    uint64_t multipart_threshold;
    uint64_t part_size;        /* multipart part size; default 64 MiB */
    wharf_fallback_t fallback; /* default WHARF_FALLBACK_FAIL */
    int verify_checksum;       /* check each reply's crc64nvme of landed bytes; default 1 */
    /* Per request, from its start to its end: 0 (the default) sets no such bound, since a
     * multi-GB part or range takes what the link gives it; stall_timeout_ms catches a server
     * or network that stops. Set it only for a deadline of the caller's own. */
    unsigned timeout_ms;
    /* on connection errors (once every endpoint has failed the request); default 2 */
    unsigned max_retries;
    /* PEM file of the CAs that an https:// endpoint's certificate must chain to. NULL: the
     * system's store. (Added after max_retries: a caller built against an older header has a
     * smaller size, and gets NULL.) */
    const char *ca_bundle;
    /* A request during which no byte moves either way for this long fails with
     * WHARF_ERR_TIMEOUT (not re-sent: the server may still carry it out), within about a
     * second after. 0: the default, 60000, as boto3's read timeout. Connecting has its own
     * 10 s bound. (Appended: an older caller gets the default.) */
    unsigned stall_timeout_ms;
} wharf_client_config_t;

WHARF_API void wharf_client_config_init(wharf_client_config_t *cfg, size_t size);
/* Creates a client. *out is owned by the caller; free with wharf_client_destroy. */
WHARF_API wharf_status_t wharf_client_create(const wharf_client_config_t *cfg,
                                             wharf_client_t **out);
/* Waits for nothing: the caller must have finished all operations. NULL-safe. */
WHARF_API void wharf_client_destroy(wharf_client_t *c);
/* The data-path provider actually in use ("ofi+shm", ...) or "none". Owned by the client. */
WHARF_API const char *wharf_client_provider(wharf_client_t *c);
/* The Unix socket of the server at endpoint (one URL), for ofi+shm: wharfd's GET /health names
 * its socket to a peer on its own host, and the path must accept a connection from this
 * process. WHARF_OK with the path in buf (cap bytes, NUL-terminated); WHARF_ERR_NOT_FOUND when
 * the server names none (another host, no socket) or it cannot be reached from here;
 * WHARF_ERR_TRANSPORT when the endpoint does not answer (within 3 s). wharf_last_error() says
 * which. ca_bundle as in wharf_client_config_t (NULL: the system's). A client created with
 * provider "auto" and no unix_socket asks this itself. */
WHARF_API wharf_status_t wharf_endpoint_unix_socket(const char *endpoint, const char *ca_bundle,
                                                    char *buf, size_t cap);

/* Registers [addr, addr+len) for RDMA. The memory must stay valid until deregistered; the
 * client keeps the registration in its cache, so get/put find it from the pointer alone. */
WHARF_API wharf_status_t wharf_mem_register(wharf_client_t *c, void *addr, size_t len,
                                            wharf_mem_kind_t kind, wharf_mem_t **out);
/* NULL-safe. No transfer into the region may be in flight. */
WHARF_API void wharf_mem_deregister(wharf_mem_t *m);

/* Per-operation report. */
typedef struct wharf_report {
    size_t size; /* set by wharf_report_init */
    wharf_status_t status;
    wharf_transport_t transport; /* which transport moved the bytes */
    uint64_t bytes;              /* payload bytes moved */
    uint32_t requests;           /* HTTP requests sent */
    uint32_t retries;
    int fell_back;             /* 1 if RDMA was attempted and HTTP moved the bytes */
    char fallback_reason[256]; /* why (server message or local reason) */
    double wall_s;
    double first_byte_s;  /* time to the first reply header */
    uint64_t crc64nvme;   /* of the bytes moved, when known */
    char etag[80];        /* quoted, as the server sent it */
    char provider[32];    /* "ofi+shm", ... when RDMA */
    char version_id[128]; /* appended: x-amz-version-id of the reply ("" without one) */
} wharf_report_t;

WHARF_API void wharf_report_init(wharf_report_t *r, size_t size);

/* Options for one transfer. NULL means defaults. */
typedef struct wharf_xfer_opts {
    size_t size;                 /* set by wharf_xfer_opts_init */
    wharf_transport_t transport; /* AUTO (default), RDMA or HTTP */
    int verify_checksum;         /* -1 = client default, 0 = off, 1 = on */
    unsigned concurrency;        /* 0 = client default */
    /* Appended (a caller built before them passes a smaller size: they are then unset).
     * Conditional writes: the server checks them in the transaction that commits the object
     * (a multipart PUT: its completion), so of two writers at most one succeeds; the loser
     * gets WHARF_ERR_PRECONDITION (412), or WHARF_ERR_NOT_FOUND for if_match on a missing
     * key, and nothing of its is stored. */
    int if_none_match;      /* PUT: 1 = store only if the key has no object (If-None-Match: *) */
    const char *if_match;   /* PUT: store only if the key's ETag is this (quoted or not) */
    const char *version_id; /* GET: read this version of the object (NULL: the current) */
    /* Appended. PUT with append set: S3 Express's append (x-amz-write-offset-bytes): the bytes
     * go after the object's first write_offset bytes, which must be all of it (else
     * WHARF_ERR_INVALID, InvalidWriteOffset; of appends racing at one offset one lands); no
     * object and write_offset 0 creates it. Always one request, never a multipart upload. */
    int append;
    uint64_t write_offset;
} wharf_xfer_opts_t;

WHARF_API void wharf_xfer_opts_init(wharf_xfer_opts_t *o, size_t size);

#define WHARF_WHOLE UINT64_MAX

/* GET [offset, offset+length) of an object into dst. length WHARF_WHOLE means to the end of the
 * object. dst_len must hold the bytes; the report's bytes say how many landed. Over RDMA, dst
 * must lie inside a registered region of this client. Large requests split into parallel ranged
 * requests of chunk_size. */
WHARF_API wharf_status_t wharf_object_get(wharf_client_t *c, const char *bucket, const char *key,
                                          void *dst, uint64_t dst_len, uint64_t offset,
                                          uint64_t length, const wharf_xfer_opts_t *opts,
                                          wharf_report_t *report);

/* PUT len bytes from src. Over RDMA, src must lie inside a registered region. At or above the
 * multipart threshold it uploads parts in parallel and completes them. */
WHARF_API wharf_status_t wharf_object_put(wharf_client_t *c, const char *bucket, const char *key,
                                          const void *src, uint64_t len,
                                          const wharf_xfer_opts_t *opts, wharf_report_t *report);

/* Scatter GET (docs/protocol.md, "Scatter GET"): n windows of one object in one call. Window i's
 * bytes [offset, offset+length) of the object land at dst + dst_off; destinations must lie
 * inside [dst, dst+dst_len) and must not overlap (each refused with WHARF_ERR_INVALID before
 * a request is sent), and a window past the object's end fails with WHARF_ERR_RANGE. Over RDMA
 * (dst inside a registered region, host or GPU memory) the windows go in at most
 * `concurrency` signed requests run in parallel (each of at least 64 windows, where there are
 * as many, and at most 16384), the server writes
 * every window and sends each one's crc64nvme, which is checked against the landed bytes
 * (verify_checksum; GPU memory: the server's is taken). Over HTTP, one ranged GET per window.
 * crcs (optional, n entries) gets each window's crc64nvme; the report's bytes is the sum of
 * the lengths. opts->version_id is not taken (WHARF_ERR_UNSUPPORTED). */
typedef struct wharf_window {
    uint64_t offset;  /* in the object */
    uint64_t length;  /* bytes */
    uint64_t dst_off; /* from dst */
} wharf_window_t;

WHARF_API wharf_status_t wharf_object_get_scatter(wharf_client_t *c, const char *bucket,
                                                  const char *key, void *dst, uint64_t dst_len,
                                                  const wharf_window_t *windows, size_t n,
                                                  uint64_t *crcs, const wharf_xfer_opts_t *opts,
                                                  wharf_report_t *report);

typedef struct wharf_stat {
    size_t size;     /* set by wharf_stat_init */
    uint64_t length; /* object size in bytes */
    int64_t mtime;   /* seconds since the epoch */
    char etag[80];
    char content_type[128];
    uint64_t crc64nvme; /* when has_crc64nvme */
    int has_crc64nvme;
} wharf_stat_t;

WHARF_API void wharf_stat_init(wharf_stat_t *s, size_t size);
WHARF_API wharf_status_t wharf_object_stat(wharf_client_t *c, const char *bucket, const char *key,
                                           wharf_stat_t *out);
/* HEAD of one version of an object (version_id NULL: the current one, as wharf_object_stat). */
WHARF_API wharf_status_t wharf_object_stat_version(wharf_client_t *c, const char *bucket,
                                                   const char *key, const char *version_id,
                                                   wharf_stat_t *out);
WHARF_API wharf_status_t wharf_object_delete(wharf_client_t *c, const char *bucket,
                                             const char *key);

/* Called once per entry; a non-zero return stops the listing (the call then returns
 * WHARF_ERR_CANCELED). key and etag are valid only during the call. */
typedef int (*wharf_list_cb)(void *arg, const char *key, uint64_t length, int64_t mtime,
                             const char *etag);
/* Lists keys under prefix (NULL = all), following continuation tokens. */
WHARF_API wharf_status_t wharf_object_list(wharf_client_t *c, const char *bucket,
                                           const char *prefix, wharf_list_cb cb, void *arg);

WHARF_API wharf_status_t wharf_bucket_create(wharf_client_t *c, const char *bucket);
WHARF_API wharf_status_t wharf_bucket_delete(wharf_client_t *c, const char *bucket);
/* Entries come with length 0 and etag "". */
WHARF_API wharf_status_t wharf_bucket_list(wharf_client_t *c, wharf_list_cb cb, void *arg);

/* A cluster gateway's dashboard (GET /?x-wharf-cluster, root's credentials only): storage
 * servers with address, id, zone, state, capacity and free bytes, the repair, drain, damage
 * and scrub backlogs, the maintenance (GC and repair) leader. json non-zero: JSON, else the
 * text `wharfd node status` prints. Writes at most cap bytes into buf, NUL-terminated;
 * *len (optional) gets the whole length without the NUL: WHARF_ERR_TOO_LARGE when it does
 * not fit (call again with a larger buf). A server that is not a gateway: WHARF_ERR_HTTP
 * (NotImplemented). */
WHARF_API wharf_status_t wharf_admin_cluster(wharf_client_t *c, int json, char *buf, size_t cap,
                                             size_t *len);

/* Client-wide counters since creation. */
typedef struct wharf_stats {
    size_t size; /* set by wharf_stats_init */
    uint64_t rdma_ops, rdma_bytes;
    uint64_t http_ops, http_bytes;
    uint64_t fallbacks; /* RDMA attempts that HTTP finished */
    uint64_t declines;  /* 501 answers from the server */
    uint64_t retries;
    uint64_t checksum_failures;
} wharf_stats_t;

WHARF_API void wharf_stats_init(wharf_stats_t *s, size_t size);
WHARF_API wharf_status_t wharf_client_stats(wharf_client_t *c, wharf_stats_t *out);

/* ==== RDMA batches: many small objects of one bucket in one request ====
 *
 * KV-cache blocks and dataset samples are small: one request each spends more on HTTP, SigV4
 * and authorization than on the bytes. A batch GETs many objects of one bucket into, or PUTs
 * them from, slots of one registered region in one signed request (POST /bucket?rdma-batch,
 * docs/protocol.md "Batches"). The server authorizes every key as if it were requested alone
 * and answers each on its own: a key that is missing, refused or fails its condition does not
 * fail the others. Slots never overlap and lie inside [base, base+base_len), which must lie in
 * one registration of the client (host or GPU memory). */
typedef struct wharf_batch_entry {
    size_t size;     /* set by wharf_batch_entry_init; the same in every entry of a call */
    const char *key; /* borrowed for the call */
    uint64_t offset; /* the slot's offset from base */
    /* GET: the slot's size (an object larger than its slot is that key's InvalidArgument);
     * PUT: the object's size. 1 to WHARF_BATCH_MAX_OBJECT. */
    uint64_t length;
    int if_none_match; /* PUT: store only if the key has no object (If-None-Match: *) */
    /* Out, for every entry once the call returns WHARF_OK: */
    wharf_status_t status; /* WHARF_OK, or NOT_FOUND, AUTH, PRECONDITION, INVALID, ... */
    uint64_t bytes;        /* GET: the object's size, landed at base+offset; PUT: stored */
    uint64_t crc64nvme;    /* of exactly those bytes, as the server computed it */
    char code[48];         /* "OK", or the S3 error code ("NoSuchKey", "AccessDenied", ...) */
    char etag[80];         /* the object's ETag, without quotes */
    char message[208];     /* the server's message for a failed key */
} wharf_batch_entry_t;

/* Keys in one request; a call with more sends several requests (in parallel, up to the
 * concurrency). */
#define WHARF_BATCH_MAX_KEYS 1000
/* Bytes of one entry. */
#define WHARF_BATCH_MAX_OBJECT (64ull << 20)

WHARF_API void wharf_batch_entry_init(wharf_batch_entry_t *e, size_t size);
/* GETs entries[0..n) into their slots. WHARF_OK when every request was answered: each entry's
 * status then says how its key fared (report->bytes is the bytes landed). An error return is
 * the batch's own (bad arguments, a 400 naming a bound, a decline under fallback "fail", a
 * transfer that failed): the entries' statuses are then not set. Over RDMA only, unless the
 * client's fallback is http (or opts ask for HTTP): then each key is one plain request. */
WHARF_API wharf_status_t wharf_batch_get(wharf_client_t *c, const char *bucket, void *base,
                                         uint64_t base_len, wharf_batch_entry_t *entries, size_t n,
                                         const wharf_xfer_opts_t *opts, wharf_report_t *report);
/* PUTs entries[0..n) from their slots, each committed as a PutObject (durable before it is
 * answered, with its ETag and crc64nvme); as wharf_batch_get otherwise. A PUT batch names
 * each key once. */
WHARF_API wharf_status_t wharf_batch_put(wharf_client_t *c, const char *bucket, const void *base,
                                         uint64_t base_len, wharf_batch_entry_t *entries, size_t n,
                                         const wharf_xfer_opts_t *opts, wharf_report_t *report);

/* ==== safetensors headers (python/wharf and the loaders plan ranged GETs from these) ====
 *
 * A safetensors file is: u64 little-endian N, N bytes of JSON header, then the data section.
 * Reading one takes two steps: wharf_st_header_len() on the first 8 bytes gives N, then
 * wharf_st_parse() on the first 8+N bytes validates the whole header strictly (dtype names,
 * shapes, offsets consistent with the data section, no overlaps or holes, no duplicates) and
 * returns the table. Errors name the tensor and the field. */
typedef struct wharf_st wharf_st_t;

/* The reference implementation's limit on N; larger is refused as a "header bomb". */
#define WHARF_ST_MAX_HEADER 100000000ull
/* Most dimensions a tensor may have. */
#define WHARF_ST_MAX_DIMS 64

/* Reads N from prefix8 (8 bytes). file_size is the object's size (WHARF_WHOLE if unknown).
 * Refuses N > WHARF_ST_MAX_HEADER, N < 2 and 8+N > file_size. */
WHARF_API wharf_status_t wharf_st_header_len(const void *prefix8, uint64_t file_size, uint64_t *n);
/* Parses the header in buf[0..len) (len >= 8+N; bytes past 8+N are ignored). file_size is the
 * object's size, so the data section is [8+N, file_size); with WHARF_WHOLE the data section is
 * taken to end where the last tensor ends. *out is owned by the caller (wharf_st_free). */
WHARF_API wharf_status_t wharf_st_parse(const void *buf, size_t len, uint64_t file_size,
                                        wharf_st_t **out);
/* Number of tensors (the __metadata__ entry is not one). */
WHARF_API size_t wharf_st_count(const wharf_st_t *st);
/* 8+N: where the data section starts in the file. */
WHARF_API uint64_t wharf_st_data_offset(const wharf_st_t *st);
/* Bytes in the data section. */
WHARF_API uint64_t wharf_st_data_len(const wharf_st_t *st);
/* Tensor i (0..count-1, in order of data offset). name and dtype ("BF16", ...) are owned by
 * st. shape must hold shape_cap entries; *ndim is always set, and WHARF_ERR_TOO_LARGE is
 * returned when shape_cap < *ndim. begin/end are relative to the data section. Any output
 * pointer may be NULL. */
WHARF_API wharf_status_t wharf_st_tensor(const wharf_st_t *st, size_t i, const char **name,
                                         const char **dtype, uint32_t *ndim, uint64_t *shape,
                                         uint32_t shape_cap, uint64_t *begin, uint64_t *end);
/* The __metadata__ object re-serialised as compact JSON (a string-to-string map), or NULL when
 * the header has none. Owned by st. */
WHARF_API const char *wharf_st_metadata_json(const wharf_st_t *st);
/* Bits per element of a safetensors dtype name ("F4": 4, "BF16": 16), 0 if unknown. */
WHARF_API unsigned wharf_st_dtype_bits(const char *dtype);
/* NULL-safe. */
WHARF_API void wharf_st_free(wharf_st_t *st);

#ifdef __cplusplus
}
#endif
#endif
