/* wharfd's HTTP front: two libmicrohttpd daemons (TCP and a Unix-domain socket), one request
 * object per HTTP request, SigV4 on everything except /health and /metrics, and the S3
 * handlers (s3api.c dispatches to one file per API family; s3api.h lists them). A few event
 * threads (libmicrohttpd's epoll mode with a thread pool) serve every connection; the S3
 * handlers, which may block on disk and on RDMA transfers, run on handler threads while their
 * connection is suspended. */
#ifndef WH_SERVER_SERVER_H
#define WH_SERVER_SERVER_H

#include "base/digest.h"
#include "base/status.h"
#include "base/util.h"
#include "s3/checksum.h"
#include "s3/chunked.h"
#include "s3/errors.h"
#include "s3/sigv4.h"
#include "server/metrics.h"
#include "s3/authz.h"
#include "server/identity.h"
#include "server/rdma.h"
#include "server/route.h"
#include "store/store.h"

#include <stdbool.h>
#include <stdint.h>

struct MHD_Connection;
struct MHD_Daemon;
struct MHD_Response;

#define SRV_VERSION "0.1.0"
#define SRV_SERVER_HEADER "wharfd/" SRV_VERSION
/* Request header section cap (names + values), as S3 refuses large header sections. */
#define SRV_MAX_HEADER_BYTES (16 * 1024)
/* Request header line cap: no client sends more than a few dozen. */
#define SRV_MAX_HEADER_LINES 500
/* Each connection's libmicrohttpd memory (the header section, its parsed lines, the body's
 * read buffer). libmicrohttpd zeroes all of it between the requests of a connection, so its
 * size is paid on every request: 1 MiB cost 20-25 us of server CPU per small GET on the
 * 2-vCPU VM (a quarter of a 4 KiB GET), 256 KiB about 4 us, for the same large-PUT speed.
 * A header section too big to fit (more than about 2,000 lines) is refused by libmicrohttpd
 * itself, with 431 Request Header Fields Too Large; one that fits but passes the caps above
 * gets S3's RequestHeaderSectionTooLarge. */
#define SRV_CONN_MEMORY (256u << 10)
/* Smallest RDMA body that gets a digest ETag; smaller ones keep the plain MD5 (cheap). */
#define SRV_DIGEST_ETAG_MIN (4ull << 20)
/* Largest XML request body (CompleteMultipartUpload with 10000 parts, DeleteObjects). */
#define SRV_MAX_XML_BODY (8u << 20)
/* Largest body read and dropped to deliver a refusal sent before it (see srv_req_t.drain). */
#define SRV_DRAIN_MAX (8u << 20)
/* S3's single-PUT limit. */
#define SRV_MAX_PUT_SIZE (5ULL << 30)

typedef struct srv_config {
    const char *data_dir;
    const char *meta_url;     /* NULL: SQLite in data_dir; or postgresql://USER@HOST:PORT/DB */
    uint64_t store_reserve;   /* 0: default; UINT64_MAX: none (store_config_t) */
    unsigned high_water_pct;  /* 0: default (store_config_t) */
    const char *listen_host;  /* "127.0.0.1" */
    uint16_t listen_port;
    const char *unix_path;    /* NULL: DIR/wharfd.sock; "" disables the Unix socket */
    const char *region;
    const char *access_key;   /* root's key pair */
    const char *secret_key;
    /* Users' access keys: the server key that seals their secrets (NULL: WHARF_SERVER_KEY_FILE,
     * else DIR/server.key, created at first start) and the account id of ARNs (NULL:
     * WHARF_ACCOUNT_ID or 000000000000). identity.h. */
    const char *server_key_file;
    const char *account_id;
    srv_rdma_config_t rdma;
    unsigned shutdown_grace_s; /* bounded wait for in-flight requests at stop */
    /* The HTTP front (0: derived from the host by srv_config_resolve). */
    unsigned conn_timeout_s;   /* idle timeout: no byte moved for this long closes */
    unsigned header_timeout_s; /* a request's headers must be complete within this */
    unsigned http_threads;     /* event threads (libmicrohttpd's epoll thread pool) */
    unsigned handler_threads;  /* most handlers running at once (they may block) */
    unsigned max_conns;        /* connections open at once, all clients */
    unsigned max_conns_per_ip; /* connections open at once from one client address */
    unsigned max_uploads;      /* incomplete multipart uploads a bucket may hold (--max-uploads) */
    /* PutObject without Content-MD5: objects above this size get a part ETag (the md5 of
     * the md5s of its parts of this size, "-N", hashed in parallel; store_writer_use_part_etag)
     * instead of one MD5 at one core's speed. 0: always the whole-object MD5. */
    uint64_t etag_part_size;
    /* RDMA PutObject and UploadPart of SRV_DIGEST_ETAG_MIN or more without Content-MD5 get a
     * digest ETag (store_writer_use_digest_etag), made without an MD5 pass (--rdma-etag). */
    bool rdma_digest_etag;
    /* A cluster gateway: a store opened over its own tables (PostgreSQL, storage servers),
     * owned by the server from srv_start on (also on failure); data_dir is then unused.
     * metrics_extra appends the gateway's cluster metrics to /metrics. */
    store_t *store;
    void (*metrics_extra)(void *arg, wh_sbuf_t *out);
    void *metrics_extra_arg;
} srv_config_t;

#define SRV_MAX_UPLOADS_DEFAULT 10000
void srv_config_init(srv_config_t *cfg);
/* Fills the HTTP front's zero fields from the host: event threads from the CPU count, the
 * connection limits from RLIMIT_NOFILE. */
void srv_config_resolve(srv_config_t *cfg);

typedef struct srv srv_t;

/* Opens the store and the RDMA engine, starts both listeners. */
wh_status_t srv_start(const srv_config_t *cfg, srv_t **out);
/* Stops accepting, waits up to shutdown_grace_s for in-flight requests, stops the daemons,
 * closes the RDMA engine and the store. NULL-safe. */
void srv_stop(srv_t *s);

/* ------------------------------------------------------------------------------------------
 * Internal: shared by http.c (the MHD glue) and the S3 handlers (s3api.h). */

typedef struct srv_job {
    void (*fn)(void *arg);
    void *arg;
    struct srv_job *next;
} srv_job_t;

typedef struct srv_conns srv_conns_t;
typedef struct srv_jobs srv_jobs_t;

typedef struct srv_listener {
    struct srv *srv;
    bool is_unix;
} srv_listener_t;

struct srv {
    srv_config_t cfg;
    srv_listener_t tcp_l, unix_l;
    char *unix_path;
    int unix_fd;
    struct MHD_Daemon *tcp_d;
    struct MHD_Daemon *unix_d;
    store_t *store;
    srv_ident_t *ident; /* users and their keys (identity.h) */
    srv_rdma_t *rdma;
    srv_metrics_t metrics;
    _Atomic uint64_t req_seq;
    uint64_t id_salt;
    srv_conns_t *conns; /* open connections, header deadlines */
    srv_jobs_t *jobs;   /* handler threads */
};

typedef struct srv_hdr {
    char *lname; /* lowercase */
    char *value; /* repeated headers are joined with "," */
} srv_hdr_t;

typedef struct srv_req {
    srv_t *srv;
    struct MHD_Connection *conn;
    char id[17];
    uint64_t t0_ns;
    char *raw_uri;
    char *path;  /* raw path, percent-encoded */
    char *query; /* raw query or NULL */
    const char *method;
    srv_hdr_t *hdrs;
    size_t nhdrs, hdrs_cap, hdr_bytes, hdr_lines; /* sorted by lname, repeats joined */
    bool hdr_oom;
    srv_peer_t peer;
    srv_route_t route;
    s3_auth_t auth;
    /* Who signed the request (identity.h), filled by the SigV4 step. */
    s3_principal_t who;
    char secret_buf[SRV_SECRET_MAX + 1]; /* a user's secret while SigV4 runs, then wiped */
    wh_status_t ident_err;               /* why the key lookup failed (503 vs 403) */
    struct srv_authz *az; /* what srv_authorize loaded (s3_authz.c); NULL for root */
    bool started, responded, head;
    bool deferred; /* no body: request_begin runs on the second call */
    /* The handler runs on a handler thread while libmicrohttpd holds the connection
     * suspended; its reply is kept here and queued when the connection resumes. */
    srv_job_t job;
    bool in_job, job_done, job_begin;
    /* A reply before the body is held until the body is read (at most SRV_DRAIN_MAX bytes):
     * answering at once and closing would reset the connection under a client still
     * sending, which then never reads the answer. */
    bool drain;
    struct MHD_Response *pending;
    int pending_status;
    bool token_req; /* carries x-amz-rdma-token: error replies have no body */
    int status;
    uint64_t tx_body;
    bool http_read; /* counts tx_body as GET bytes served over HTTP */

    /* Request body pipeline: raw -> (sha256 | aws-chunked decoder) -> sink. */
    srv_body_kind_t body;
    uint64_t rx, decoded;
    uint64_t body_len; /* Content-Length of a body without Transfer-Encoding, else 0 */
    wh_sbuf_t buf;
    store_writer_t *w;
    s3_chunked_t *chunked;
    wh_sha256_t sha;
    bool sha_on;
    s3_err_t body_err;
    char body_msg[256];

    /* S3 checksums beyond crc32c/crc64nvme (which the store computes), computed over the body
     * only when the client names them in a header or in x-amz-trailer. */
    s3_sum_ctx_t sums;

    /* Per-API state set at begin, used at finish. */
    uint8_t content_md5[WH_MD5_LEN];
    bool has_md5;
    uint32_t part_number;
    char *upload_id;
} srv_req_t;

/* SigV4 of an IAM API request (credential scope service "iam") whose body hashes to
 * payload_hash (hex); fills r->auth and r->who (http.c). */
s3_err_t srv_req_verify_iam(srv_req_t *r, time_t now, const char *payload_hash, char *msg,
                            size_t msglen);

/* Header value by lowercase name, or NULL. */
const char *srv_hdr(const srv_req_t *r, const char *lname);

/* Replies. Each queues exactly one response (later calls are ignored) and records the status.
 * Common headers (x-amz-request-id, Server) are added here. resp is consumed. */
void srv_reply(srv_req_t *r, int status, struct MHD_Response *resp);
void srv_reply_empty(srv_req_t *r, int status);
/* Takes the XML document out of xml. */
void srv_reply_xml(srv_req_t *r, int status, wh_sbuf_t *xml);
/* S3 error: the XML error document, or for HEAD and RDMA-token requests no body and the code
 * and message in x-amz-error-code / x-amz-error-message. msg NULL: the default message. */
void srv_reply_err(srv_req_t *r, s3_err_t e, const char *msg);
void srv_reply_err_raw(srv_req_t *r, int status, const char *code, const char *msg,
                       struct MHD_Response *resp);
/* Adds a header; returns false on failure (logged). */
bool srv_resp_header(struct MHD_Response *resp, const char *name, const char *value);
struct MHD_Response *srv_resp_buffer(void *data, size_t len); /* takes malloc'd data */
struct MHD_Response *srv_resp_empty(void);

/* s3api.c: begin runs on the first call after auth; it replies at once or sets r->body to
 * receive a body (the kind its srv_ops row names). finish runs after the whole body arrived
 * (no pending body error). */
void srv_s3_begin(srv_req_t *r);
void srv_s3_finish(srv_req_t *r);
/* Called when the request ends; aborts an uncommitted writer. */
void srv_s3_cleanup(srv_req_t *r);
/* Object bytes on their way to the writer (HTTP body or RDMA): the extra checksums. */
void srv_s3_body_digest(srv_req_t *r, const void *p, size_t n);

#endif
