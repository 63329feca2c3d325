/* SPDX-License-Identifier: Apache-2.0 */
/* wharfd's HTTP front: two libmicrohttpd daemons (TCP and a Unix-domain socket), one request
 * object per HTTP request, SigV4 on everything except /health, /metrics and /console, and the
 * application behind it, which the front knows only as a table of callbacks (front_app_ops_t;
 * the S3 API, src/server/s3api, registers one and the roles hand it to front_start; the browser
 * console, src/server/console, is a second one for /console, which checks its own sessions). A few
 * event threads (libmicrohttpd's epoll mode with a thread pool) serve every connection; the S3
 * handlers, which may block on disk and on RDMA transfers, run on handler threads while their
 * connection is suspended. */
#ifndef WH_FRONT_FRONT_H
#define WH_FRONT_FRONT_H

#include "base/digest.h"
#include "base/status.h"
#include "base/util.h"
#include "s3/checksum.h"
#include "auth/chunked.h"
#include "s3/errors.h"
#include "auth/sigv4.h"
#include "front/metrics.h"
#include "front/recent.h"
#include "auth/authz.h"
#include "ident/identity.h"
#include "engine/rdma.h"
#include "front/route.h"
#include "front/tls.h"
#include "store/store.h"
#include "xfer/token.h"

#include "wharf_version.h"

#include <stdbool.h>
#include <stdint.h>

struct MHD_Connection;
struct MHD_Daemon;
struct MHD_Response;

#define FRONT_VERSION WH_VERSION
#define FRONT_SERVER_HEADER "wharfd/" FRONT_VERSION
/* Request header section cap (names + values), as S3 refuses large header sections. */
#define FRONT_MAX_HEADER_BYTES (16 * 1024)
/* Request header line cap: no client sends more than a few dozen. */
#define FRONT_MAX_HEADER_LINES 500
/* Each connection's libmicrohttpd memory (the header section, its parsed lines, the body's
 * read buffer). libmicrohttpd zeroes all of it between the requests of a connection, so its
 * size is paid on every request: 1 MiB cost 20-25 us of server CPU per small GET on the
 * 2-vCPU VM (a quarter of a 4 KiB GET), 256 KiB about 4 us, for the same large-PUT speed.
 * A header section too big to fit (more than about 2,000 lines) is refused by libmicrohttpd
 * itself, with 431 Request Header Fields Too Large; one that fits but passes the caps above
 * gets S3's RequestHeaderSectionTooLarge. */
#define FRONT_CONN_MEMORY (256u << 10)
/* Smallest RDMA body that gets a digest ETag; smaller ones keep the plain MD5 (cheap). */
#define FRONT_DIGEST_ETAG_MIN (4ull << 20)
/* Largest XML request body (CompleteMultipartUpload with 10000 parts, DeleteObjects). */
#define FRONT_MAX_XML_BODY (8u << 20)
/* Largest body read and dropped to deliver a refusal sent before it (see front_req_t.drain). */
#define FRONT_DRAIN_MAX (8u << 20)
/* S3's single-PUT limit. */
#define FRONT_MAX_PUT_SIZE (5ULL << 30)

#define FRONT_LIFECYCLE_PERIOD_DEFAULT 3600 /* seconds between lifecycle passes */

typedef struct front_config {
    const char *data_dir;    /* serve: the store's directory (the Unix socket's default
                              * place, and the server key's); NULL for a gateway */
    const char *listen_host; /* "127.0.0.1" */
    uint16_t listen_port;
    /* TLS on the TCP port (tls.h): PEM certificate chain and key; both or neither. The port
     * then serves only TLS; SIGHUP reloads them (front_reload_tls). */
    const char *tls_cert;
    const char *tls_key;
    const char *unix_path; /* NULL: DIR/wharfd.sock; "" disables the Unix socket */
    const char *region;
    bool sigv2_off;         /* --sigv2 off: Signature Version 2 requests are refused */
    const char *access_key; /* root's key pair */
    const char *secret_key;
    /* Users' access keys, for the roles that open the identities: the server key that seals
     * their secrets (NULL: WHARF_SERVER_KEY_FILE, else DIR/server.key, created at first start)
     * and the account id of ARNs (NULL: WHARF_ACCOUNT_ID or 000000000000). identity.h. */
    const char *server_key_file;
    const char *account_id;
    rdma_config_t rdma;        /* for the roles that open the RDMA engine */
    unsigned shutdown_grace_s; /* bounded wait for in-flight requests at stop (the roles': 30,
                                * --shutdown-grace; a SIGHUP may change it) */
    /* The HTTP front (0: derived from the host by front_config_resolve). */
    unsigned conn_timeout_s;   /* idle timeout: no byte moved for this long closes */
    unsigned header_timeout_s; /* a request's headers must be complete within this */
    unsigned http_threads;     /* event threads (libmicrohttpd's epoll thread pool) */
    unsigned handler_threads;  /* most handlers running at once (they may block) */
    unsigned max_conns;        /* connections open at once, all clients */
    unsigned max_conns_per_ip; /* connections open at once from one client address */
    /* Incomplete multipart uploads a bucket may hold (--max-uploads): atomic, as a SIGHUP
     * changes it while handlers read it. */
    _Atomic unsigned max_uploads;
    unsigned max_buckets; /* buckets one IAM user may own (--max-buckets); root unbound */
    /* PutObject without Content-MD5: objects above this size get a part ETag (the md5 of
     * the md5s of its parts of this size, "-N", hashed in parallel; store_writer_use_part_etag)
     * instead of one MD5 at one core's speed. 0: always the whole-object MD5. */
    uint64_t etag_part_size;
    /* RDMA PutObject and UploadPart of FRONT_DIGEST_ETAG_MIN or more without Content-MD5 get a
     * digest ETag (store_writer_use_digest_etag), made without an MD5 pass (--rdma-etag). */
    bool rdma_digest_etag;
    /* A cluster gateway: metrics_extra appends its cluster metrics to /metrics. */
    /* Seconds between the lifecycle worker's passes over the buckets' lifecycle rules
     * (s3ctl/lifecycle_run.c); 0: its default. */
    _Atomic unsigned lifecycle_period_s; /* a SIGHUP changes it while the worker reads it */
    void (*metrics_extra)(void *arg, wh_sbuf_t *out);
    void *metrics_extra_arg;
    /* A cluster gateway: its cluster's dashboard (GET /?x-wharf-cluster, root only; `wharf
     * admin cluster`), JSON or text appended to out; NULL elsewhere (the request is 501). */
    wh_status_t (*admin_cluster)(void *arg, bool json, wh_sbuf_t *out);
    void *admin_cluster_arg;
} front_config_t;

#define FRONT_MAX_UPLOADS_DEFAULT 10000
#define FRONT_MAX_BUCKETS_DEFAULT 100 /* AWS's default bucket quota of an account */
void front_config_init(front_config_t *cfg);
/* Fills the HTTP front's zero fields from the host: event threads from the CPU count, the
 * connection limits from RLIMIT_NOFILE. */
void front_config_resolve(front_config_t *cfg);

typedef struct front front_t;
struct front_req;

/* The application the front serves. The front calls it and never names it: begin runs on the
 * first call after auth; it replies at once or sets r->body to receive a body (the kind its
 * route's row names). finish runs after the whole body arrived (no pending body error).
 * cleanup runs when the request ends or its body fails (it aborts an uncommitted writer).
 * body_digest sees the object bytes on their way to the writer (the extra checksums).
 * Requests are routed over the application's table. */
typedef struct front_app_ops {
    const front_op_t *ops; /* the routing table (route.h): its rows name the handlers */
    size_t n_ops;
    void (*begin)(struct front_req *r);
    void (*finish)(struct front_req *r);
    void (*cleanup)(struct front_req *r);
    void (*body_digest)(struct front_req *r, const void *p, size_t n);
    /* A piece of a form body (FRONT_BODY_FORM: POST Object); 0, or -1 with r->body_err and
     * r->body_msg set. */
    int (*form_feed)(struct front_req *r, const void *p, size_t n);
    /* The application's background work (the S3 API's lifecycle worker): start runs once
     * the front listens, stop before the store closes, metrics appends to /metrics; NULL
     * slots: none. */
    wh_status_t (*start)(struct front *s, void **state);
    void (*stop)(void *state);
    void (*metrics)(void *state, wh_sbuf_t *out);
} front_app_ops_t;

/* What the roles open and hand the front to serve; all required. */
typedef struct front_parts {
    const front_app_ops_t *app; /* the application (s3api.h: s3api_app) */
    store_t *store;
    ident_t *ident; /* users and their keys, over the store's metadata */
    rdma_t *rdma;   /* the RDMA engine */
    /* The browser console under /console (console/console.h), served without SigV4 (it
     * authenticates by its own session); NULL: /console is 501. Optional. */
    const front_app_ops_t *console;
} front_parts_t;

/* Starts both listeners serving parts->app over parts' store, identities and RDMA engine,
 * which the server owns from here on, also on failure. */
wh_status_t front_start(const front_config_t *cfg, const front_parts_t *parts, front_t **out);
/* Stops accepting, waits up to shutdown_grace_s for in-flight requests, stops the daemons,
 * closes the RDMA engine, the identities and the store. NULL-safe. */
void front_stop(front_t *s);
/* SIGHUP: reads the TLS certificate and key again (a server without TLS: WH_OK, nothing).
 * A bad pair keeps the old one in use and is logged. */
wh_status_t front_reload_tls(front_t *s);

/* ------------------------------------------------------------------------------------------
 * Internal: shared by http.c (the MHD glue) and the S3 handlers (s3api.h). */

typedef struct front_job {
    void (*fn)(void *arg);
    void *arg;
    struct front_job *next;
} front_job_t;

typedef struct front_conns front_conns_t;
typedef struct front_jobs front_jobs_t;

typedef struct front_listener {
    struct front *srv;
    bool is_unix;
} front_listener_t;

struct front {
    front_config_t cfg;
    const front_app_ops_t *app; /* the application behind the front */
    front_listener_t tcp_l, unix_l;
    char *unix_path;
    int unix_fd;
    struct MHD_Daemon *tcp_d;
    struct MHD_Daemon *unix_d;
    store_t *store;
    ident_t *ident; /* users and their keys (identity.h) */
    rdma_t *rdma;
    front_tls_t *tls; /* NULL: plain HTTP on the TCP port */
    front_metrics_t metrics;
    _Atomic uint64_t req_seq;
    uint64_t id_salt;
    front_conns_t *conns;           /* open connections, header deadlines */
    front_jobs_t *jobs;             /* handler threads */
    void *app_state;                /* the application's background work (front_app_ops_t.start) */
    const front_app_ops_t *console; /* front_parts_t.console, or NULL */
    void *console_state;            /* what its start made */
    front_recent_t recent;          /* recent error replies (recent.h) */
};

typedef struct front_hdr {
    char *lname; /* lowercase */
    char *value; /* repeated headers are joined with "," */
} front_hdr_t;

typedef struct front_req {
    front_t *srv;
    struct MHD_Connection *conn;
    char id[17];
    uint64_t t0_ns;
    char *raw_uri;
    char *path;  /* raw path, percent-encoded */
    char *query; /* raw query or NULL */
    const char *method;
    front_hdr_t *hdrs;
    size_t nhdrs, hdrs_cap, hdr_bytes, hdr_lines; /* sorted by lname, repeats joined */
    bool hdr_oom;
    wh_peer_t peer;
    front_route_t route;
    auth_auth_t auth;
    /* Who signed the request (identity.h), filled by the SigV4 step. */
    auth_principal_t who;
    char secret_buf[IDENT_SECRET_MAX + 1]; /* a user's secret while SigV4 runs, then wiped */
    wh_status_t ident_err;                 /* why the key lookup failed (503 vs 403) */
    struct front_authz *az; /* what s3h_authorize loaded (authorize.c); NULL for root */
    bool started, responded, head;
    bool deferred; /* no body: request_begin runs on the second call */
    /* The handler runs on a handler thread while libmicrohttpd holds the connection
     * suspended; its reply is kept here and queued when the connection resumes. */
    front_job_t job;
    bool in_job, job_done, job_begin;
    /* A reply before the body is held until the body is read (at most FRONT_DRAIN_MAX bytes):
     * answering at once and closing would reset the connection under a client still
     * sending, which then never reads the answer. */
    bool drain;
    struct MHD_Response *pending;
    int pending_status;
    bool token_req;         /* carries x-amz-rdma-token: error replies have no body */
    xfer_token_arg_t token; /* token_req: x-amz-rdma-token, parsed once here for every user */
    int status;
    /* An error reply's S3 code and message, set just before front_reply (the recent errors). */
    const char *err_code, *err_msg;
    uint64_t tx_body;
    bool http_read; /* counts tx_body as GET bytes served over HTTP */

    /* Request body pipeline: raw -> (sha256 | aws-chunked decoder) -> sink. */
    front_body_kind_t body;
    uint64_t rx, decoded;
    uint64_t body_len; /* Content-Length of a body without Transfer-Encoding, else 0 */
    wh_sbuf_t buf;
    store_writer_t *w;
    auth_chunked_t *chunked;
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
    struct front_post *post; /* POST Object's form state (post_object.c) */
    /* Encryption at rest of a PUT or UploadPart, for its reply's headers (sse.c):
     * 0 none, 1 SSE-S3, 2 SSE-C with the key's MD5 as sent. */
    int sse_reply;
    char sse_key_md5[32];
} front_req_t;

/* SigV4 of an IAM API request (credential scope service "iam") whose body hashes to
 * payload_hash (hex); fills r->auth and r->who (http.c). */
s3_err_t front_req_verify_iam(front_req_t *r, time_t now, const char *payload_hash, char *msg,
                              size_t msglen);

/* The secret of access_key (NULL: unknown), r->who set to its principal, as the SigV4 step
 * looks it up; the secret stays valid until front_req_secret_wipe. arg is the front_req_t. */
const char *front_req_secret(void *arg, const char *access_key);
void front_req_secret_wipe(front_req_t *r);
/* Replaces the request's headers: those drop says true of go, the n given pairs (names any
 * case) come in, repeats joined as on arrival. POST Object turns its form fields into the
 * headers PutObject reads. False: out of memory, or the headers exceed the request limits. */
bool front_req_swap_headers(front_req_t *r, bool (*drop)(const char *lname),
                            const char *const *names, const char *const *values, size_t n);

/* The /metrics text (every counter and gauge GET /metrics shows) appended to b. */
void front_metrics_text(front_t *s, wh_sbuf_t *b);

/* Header value by lowercase name, or NULL. */
const char *front_hdr(const front_req_t *r, const char *lname);

/* Replies. Each queues exactly one response (later calls are ignored) and records the status.
 * Common headers (x-amz-request-id, Server) are added here. resp is consumed. */
void front_reply(front_req_t *r, int status, struct MHD_Response *resp);
void front_reply_empty(front_req_t *r, int status);
/* Takes the XML document out of xml. */
void front_reply_xml(front_req_t *r, int status, wh_sbuf_t *xml);
/* S3 error: the XML error document, or for HEAD and RDMA-token requests no body and the code
 * and message in x-amz-error-code / x-amz-error-message. msg NULL: the default message. */
void front_reply_err(front_req_t *r, s3_err_t e, const char *msg);
void front_reply_err_raw(front_req_t *r, int status, const char *code, const char *msg,
                         struct MHD_Response *resp);
/* Adds a header; returns false on failure (logged). */
bool front_resp_header(struct MHD_Response *resp, const char *name, const char *value);
struct MHD_Response *front_resp_buffer(void *data, size_t len); /* takes malloc'd data */
struct MHD_Response *front_resp_empty(void);

#endif
