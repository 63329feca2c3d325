/* SPDX-License-Identifier: Apache-2.0 */
/* libwharf internals: the client object, its HTTP engine (libcurl), worker pool, registration
 * cache and fork handling. Nothing here crosses the ABI; include/wharf/wharf.h is the contract.
 *
 * Files: client.c (create/destroy, config, errors, stats, fork), http.c (one signed request on
 * one curl handle), reply.c (what replies carry in their headers), pool.c (per-client worker
 * threads), mem.c (registrations, host and GPU memory), object_*.c (GET, PUT, multipart and
 * HEAD; client/object.h lists them), batch.c (RDMA batches), meta.c (delete, list, buckets),
 * safetensors.c (the wharf_st_* functions over src/client/safetensors' parser), endpoints.c (the
 * list of gateways, round robin, failover). */
#ifndef WH_CLIENT_CLIENT_INT_H
#define WH_CLIENT_CLIENT_INT_H

#include "wharf/wharf.h"

#include "base/status.h"
#include "base/tsa.h"
#include "base/util.h"
#include "xfer/xfer.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WC_ERR_LEN 1024
#define WC_MAX_HDRS 8
#define WC_POOL_MAX_THREADS 64
/* A request that moves no byte for this long fails (wharf_client_config_t.stall_timeout_ms). */
#define WC_DEFAULT_STALL_MS 60000u
/* Connecting to an endpoint (TCP or the Unix socket, and TLS). */
#define WC_CONNECT_MS 10000u
#define WC_MAX_ENDPOINTS 32 /* gateways in one client's list (a request's tried set is a u64) */

/* ---- errors (client.c) ----------------------------------------------------------------- */

/* Sets the calling thread's wharf_last_error() message. */
void wc_set_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void wc_clear_error(void);
/* The library's one-time setup (log level, curl, fork handlers); wharf_client_create runs it,
 * and so does an ABI call that may come first. */
void wc_global_init(void);
const char *wc_get_error(void);

/* ---- one HTTP connection (curl easy handle, reused) ------------------------------------ */

typedef struct wc_conn {
    CURL *easy;
    struct wc_conn *next; /* free list */
} wc_conn_t;

wc_conn_t *wc_conn_new(void);
void wc_conn_free(wc_conn_t *conn);

/* ---- worker pool (pool.c) --------------------------------------------------------------- */

typedef struct wc_task {
    void (*fn)(void *arg, wc_conn_t *conn);
    void *arg;
    struct wc_task *next;
} wc_task_t;

typedef struct wc_pool {
    wh_mutex_t mu; /* head, tail, nthreads, stop */
    pthread_cond_t cv;
    wc_task_t *head, *tail;
    pthread_t threads[WC_POOL_MAX_THREADS];
    unsigned nthreads;
    bool stop;
} wc_pool_t;

void wc_pool_init(wc_pool_t *p);
/* Grows the pool to at least n workers (capped at WC_POOL_MAX_THREADS). */
wh_status_t wc_pool_ensure(wc_pool_t *p, unsigned n);
/* Queues t; it runs on a worker with that worker's own connection. t must stay valid until
 * its fn has returned. */
void wc_pool_submit(wc_pool_t *p, wc_task_t *t);
/* Removes t from the queue if no worker has taken it yet; true when removed (it will not run). */
bool wc_pool_cancel(wc_pool_t *p, wc_task_t *t);
/* Stops and joins the workers. */
void wc_pool_fini(wc_pool_t *p);
/* In a fork child: the workers do not exist there. Forget them and their queue. */
void wc_pool_forget_after_fork(wc_pool_t *p);

/* A countdown the caller waits on while runners finish. */
typedef struct wc_group {
    wh_mutex_t mu; /* pending */
    pthread_cond_t cv;
    unsigned pending;
} wc_group_t;

void wc_group_init(wc_group_t *g, unsigned pending);
void wc_group_done(wc_group_t *g);
void wc_group_wait(wc_group_t *g);
void wc_group_fini(wc_group_t *g);

/* ---- gateways (endpoints.c) ------------------------------------------------------------ */

typedef struct wc_endpoint {
    char *url;                      /* "http://127.0.0.1:9000" without a trailing slash */
    char *host;                     /* "127.0.0.1:9000": the Host header, signed */
    _Atomic uint64_t down_until_ms; /* wh_now_s() in ms before which it is passed over */
} wc_endpoint_t;

/* Parses one endpoint URL or a comma-separated list of them (spaces around commas allowed;
 * at most WC_MAX_ENDPOINTS, no repeats). *out is owned by the caller (wc_endpoints_free). */
wh_status_t wc_endpoints_parse(const char *list, wc_endpoint_t **out, unsigned *n);
void wc_endpoints_free(wc_endpoint_t *eps, unsigned n);

/* ---- the client ------------------------------------------------------------------------- */

struct wharf_client {
    /* configuration (strings owned) */
    wc_endpoint_t *eps; /* the gateways, as listed; eps[0] also routes the data path */
    unsigned neps;
    char *access_key, *secret_key, *region;
    char *provider_req; /* as asked: "auto", "ofi+shm", ... or NULL */
    char *unix_socket;
    char *ca_bundle; /* NULL: the system's CA store (https endpoints) */
    unsigned concurrency;
    uint64_t chunk_size, multipart_threshold, part_size;
    bool multipart_threshold_default; /* not set by the caller: host RDMA PUTs use the RDMA one */
    wharf_fallback_t fallback;
    int verify_checksum;
    unsigned timeout_ms; /* whole request; 0: none */
    unsigned stall_ms;   /* no byte moved for this long: the request fails */
    unsigned max_retries;

    /* data path: NULL when HTTP only */
    pthread_mutex_t xfer_mu;
    xfer_t *xfer;
    xfer_t *xfer_cuda; /* "cuda+ipc", opened on the first CUDA registration (under xfer_mu) */
    char provider[32]; /* in use: "ofi+shm", ... or "none" */
    char no_rdma_reason[256]; /* why xfer is NULL (for messages) */

    /* connections for requests made on callers' threads */
    pthread_mutex_t conn_mu;
    wc_conn_t *free_conns;

    wc_pool_t pool;

    /* registration cache: sorted by address, under a rwlock */
    pthread_rwlock_t reg_lock;
    wharf_mem_t **regs;
    size_t nregs, regs_cap;

    /* counters */
    _Atomic uint64_t st_rdma_ops, st_rdma_bytes, st_http_ops, st_http_bytes;
    _Atomic uint64_t st_fallbacks, st_declines, st_retries, st_checksum_failures;

    /* fork: set in the child by the atfork handler; cleared on first use there */
    atomic_bool need_reinit;
    pthread_mutex_t fork_mu;
    struct wharf_client *all_next; /* global list, for the atfork handler */
};

struct wharf_mem {
    wharf_client_t *c; /* NULL once the client is destroyed */
    void *addr;
    size_t len;
    wharf_mem_kind_t kind;
    xfer_mr_t *mr; /* NULL when the client has no data path, or (child) not yet re-registered */
};

/* Called at the top of every public entry that takes a client: clears the thread's error and,
 * in a fork child, re-creates curl handles and the transport. */
void wc_client_enter(wharf_client_t *c);

/* The endpoint for a request's next attempt: the calling thread's next in the round that is up
 * and not in tried (bit i: eps[i] failed this request already). */
unsigned wc_endpoint_pick(wharf_client_t *c, uint64_t tried);
/* eps[i] refused a connection or dropped one: pass it over for a short while. */
void wc_endpoint_failed(wharf_client_t *c, unsigned i);
/* eps[i] answered: it is up again. */
void wc_endpoint_ok(wharf_client_t *c, unsigned i);
/* The server's Unix socket, as its /health names it to a peer on its own host, when this
 * process can connect to it: WH_OK with the path in out, else a status and why in err
 * (wharf_endpoint_unix_socket's contract, wharf.h). */
wh_status_t wc_unix_socket_find(const char *endpoint, const char *ca_bundle, char *out, size_t cap,
                                char *err, size_t errlen);

wc_conn_t *wc_client_conn_get(wharf_client_t *c);
void wc_client_conn_put(wharf_client_t *c, wc_conn_t *conn);

/* ---- registrations (mem.c) -------------------------------------------------------------- */

/* Finds the registration holding [p, p+n) and its (re-registered if needed) transport mr.
 * WH_ERR_INVALID with a message when none holds it. */
bool wc_mr_is_device(const xfer_mr_t *mr);
/* True when [p, p+n) lies in a GPU-memory registration of c. */
bool wc_mem_is_cuda(wharf_client_t *c, const void *p, uint64_t n);
wh_status_t wc_mem_find(wharf_client_t *c, const void *p, uint64_t n, xfer_mr_t **mr_out);
/* Child after fork: releases the parent's registrations (wharf memory only). Called with
 * the old xfer forgotten, before it is closed. */
void wc_mem_drop_mrs(wharf_client_t *c);
/* Client destroy: releases every mr, orphans the handles. */
void wc_mem_orphan_all(wharf_client_t *c);

/* ---- one signed HTTP request (http.c) --------------------------------------------------- */

typedef struct wc_req {
    const char *method; /* GET, PUT, HEAD, DELETE, POST */
    const char *bucket; /* NULL: the service (ListBuckets) */
    const char *key;    /* NULL: the bucket */
    const char *query;  /* already URI-encoded "a=b&c=d", or NULL */
    const char *hdr_names[WC_MAX_HDRS];
    const char *hdr_values[WC_MAX_HDRS];
    size_t nhdr; /* extra headers; all are signed */
    /* request body (PUT/POST); has_body with body_len 0 sends Content-Length: 0 */
    bool has_body;
    const void *body;
    uint64_t body_len;
    const char *payload_hash; /* NULL: UNSIGNED-PAYLOAD with a body, empty-hash without */
    /* 2xx response body: into dst (at most dst_cap bytes; more is an error), else appended
     * to body_out, else counted and dropped. */
    void *dst;
    uint64_t dst_cap;
    wh_sbuf_t *body_out;
} wc_req_t;

typedef struct wc_resp {
    long status;
    uint64_t body_len; /* 2xx body bytes received */
    bool overflow;     /* the body was longer than dst_cap */
    bool has_content_length;
    uint64_t content_length;
    char etag[80];
    char version_id[128]; /* x-amz-version-id */
    char content_type[128];
    char last_modified[64];
    char content_range[96];
    bool has_rdma_reply;
    char rdma_reply[16];
    bool has_rdma_bytes;
    uint64_t rdma_bytes;
    bool has_crc64;
    uint64_t crc64;
    bool bad_crc64; /* header present but not a valid base64 crc64 */
    char request_id[64];
    char unix_socket[108]; /* x-wharf-unix-socket: the server's socket (/health, same host) */
    char s3_code[64];      /* from the error body, or derived from the status */
    char s3_message[384];
    double t_first; /* wh_now_s() at the first status line */
    unsigned retries;
    unsigned ep;        /* index in c->eps of the endpoint of the last attempt */
    unsigned eps_tried; /* distinct endpoints that failed this request */
    CURLcode curl_rc;
    char curl_err[CURL_ERROR_SIZE];
    /* internal */
    wh_sbuf_t err_body;
    const wc_req_t *_req;
    uint64_t _read_off;
    bool _in_headers;
    /* the stall bound (http.c's progress callback): bytes moved either way, and when that
     * last changed */
    uint64_t _moved;
    double _moved_at;
    unsigned _stall_ms;
    bool _stalled;
} wc_resp_t;

/* Sends req (retrying connection failures up to max_retries). WH_OK means a reply arrived
 * (any status, see resp->status); otherwise a connection-level failure (WH_ERR_TIMEOUT,
 * WH_ERR_TRANSPORT, WH_ERR_PROTOCOL on overflow, WH_ERR_NOMEM) with resp->curl_err. resp is
 * initialised here; release it with wc_resp_fini. */
wh_status_t wc_http_do(wharf_client_t *c, wc_conn_t *conn, const wc_req_t *req, wc_resp_t *resp);
void wc_resp_fini(wc_resp_t *resp);
/* ---- reply parsing (reply.c; fuzzed by fuzz/fuzz_client_reply.c) ------------------------ */

/* One header line as curl hands it over (status line included, not NUL-terminated): a status
 * line resets the headers (100 Continue) and sets status; known headers fill resp fields. */
void wc_reply_header(wc_resp_t *resp, const char *buf, size_t n);
/* Copies v[0..n) without surrounding whitespace into dst (truncating, NUL-terminated). */
void wc_trim_copy(char *dst, size_t dstlen, const char *v, size_t n);

/* Maps a non-2xx reply to a status. */
wh_status_t wc_http_status_map(const wc_resp_t *resp);
/* Writes "what failed and what to do" for a failed call (connection failure or non-2xx) into
 * out. what is e.g. "GET bench/k". */
void wc_http_describe(const wharf_client_t *c, const char *what, wh_status_t st,
                      const wc_resp_t *resp, char *out, size_t outlen);
/* Adds a name/value header to req (the value must outlive the request). */
void wc_req_header(wc_req_t *req, const char *name, const char *value);

/* ---- report / struct helpers (client.c) ------------------------------------------------- */

/* Copies src into a caller struct of size dst_size (the caller's sizeof), keeping its size
 * field: only fields the caller knows about are written. */
void wc_copy_out(void *dst, const void *src, size_t full_size);
/* ISO 8601 "2009-10-12T17:50:30.000Z" to seconds; 0 when unparseable. */
int64_t wc_parse_iso8601(const char *s);

#endif
