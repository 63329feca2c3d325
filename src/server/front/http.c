/* SPDX-License-Identifier: Apache-2.0 */
/* The HTTP front, request side: the request object's life, the body pipeline and the hand-off
 * of S3 handlers to handler threads. The header collection and SigV4 are in http_headers.c, the
 * daemons and their limits in http_front.c, the replies in http_reply.c; the application (the
 * S3 API) behind front_app_ops_t. */
#include "front/http_int.h"
#include "auth/sigv2.h"
#include "base/codec.h"
#include "base/defaults.h"
#include "base/log.h"
#include "xfer/xfer.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#define MOD "http"

/* The application a request goes to: the console's under /console, else the S3 API. */
static const front_app_ops_t *front_req_app(const front_req_t *r)
{
    return r->route.api == FRONT_API_CONSOLE && r->srv->console ? r->srv->console : r->srv->app;
}

/* ---- request life ----------------------------------------------------------------------- */

static void fill_peer(front_req_t *r, bool is_unix, struct MHD_Connection *c)
{
    r->peer.is_unix = is_unix;
    if (is_unix) {
        snprintf(r->peer.addr, sizeof r->peer.addr, "unix");
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        struct ucred cred;
        socklen_t len = sizeof cred;
        r->peer.pid = 0;
        r->peer.uid = (uid_t)-1;
        if (ci && getsockopt(ci->connect_fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
            r->peer.pid = cred.pid;
            r->peer.uid = cred.uid;
            r->peer.start = xfer_proc_start_time(cred.pid); /* pins the process (cma.c) */
        }
        return;
    }
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    char host[INET6_ADDRSTRLEN] = "?";
    unsigned port = 0;
    if (ci && ci->client_addr) {
        const struct sockaddr *sa = ci->client_addr;
        if (sa->sa_family == AF_INET) {
            const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
            inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
            port = ntohs(in->sin_port);
        } else if (sa->sa_family == AF_INET6) {
            const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
            inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
            port = ntohs(in6->sin6_port);
        }
    }
    snprintf(r->peer.addr, sizeof r->peer.addr, "%s:%u", host, port);
}

void *front_http_uri_cb(void *cls, const char *uri, struct MHD_Connection *c)
{
    front_listener_t *l = cls;
    front_t *s = l->srv;
    front_req_t *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->srv = s;
    r->conn = c;
    r->t0_ns = wh_now_ns();
    uint64_t seq = atomic_fetch_add(&s->req_seq, 1);
    snprintf(r->id, sizeof r->id, "%016llX", (unsigned long long)(s->id_salt ^ seq));
    r->raw_uri = strdup(uri ? uri : "/");
    wh_sbuf_init(&r->buf);
    fill_peer(r, l->is_unix, c);
    atomic_fetch_add(&s->metrics.inflight, 1);
    return r;
}

void front_req_free(front_req_t *r)
{
    /* A reply held for a body (drain) or for the connection's resume (a handler job) is
     * never queued when the connection ends first: it goes with the request. */
    if (r->pending)
        MHD_destroy_response(r->pending);
    front_route_free(&r->route);
    for (size_t i = 0; i < r->nhdrs; i++) {
        free(r->hdrs[i].lname);
        free(r->hdrs[i].value);
    }
    free(r->hdrs);
    auth_chunked_free(r->chunked);
    if (r->sha_on)
        wh_sha256_free(&r->sha);
    wh_sbuf_free(&r->buf);
    free(r->raw_uri);
    free(r->path);
    free(r->upload_id);
    free(r);
}

static const char *toe_name(enum MHD_RequestTerminationCode toe)
{
    switch (toe) {
    case MHD_REQUEST_TERMINATED_COMPLETED_OK:
        return "ok";
    case MHD_REQUEST_TERMINATED_WITH_ERROR:
        return "error";
    case MHD_REQUEST_TERMINATED_TIMEOUT_REACHED:
        return "timeout";
    case MHD_REQUEST_TERMINATED_DAEMON_SHUTDOWN:
        return "shutdown";
    case MHD_REQUEST_TERMINATED_READ_ERROR:
        return "read_error";
    case MHD_REQUEST_TERMINATED_CLIENT_ABORT:
        return "client_abort";
    default:
        return "other";
    }
}

void front_http_completed_cb(void *cls, struct MHD_Connection *c, void **con_cls,
                             enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    front_req_t *r = *con_cls;
    front_conn_request_done(r ? r->srv : cls, c);
    if (!r)
        return;
    *con_cls = NULL;
    front_t *s = r->srv;
    front_req_app(r)->cleanup(r); /* aborts an uncommitted writer: nothing is stored */
    uint64_t dur = wh_now_ns() - r->t0_ns;
    int status = r->responded ? r->status : 0;
    bool ok = toe == MHD_REQUEST_TERMINATED_COMPLETED_OK;
    if (!r->responded)
        front_metrics_count(&s->metrics, r->route.api, 0); /* status "0": no reply was sent */
    front_metrics_latency(&s->metrics, r->route.api, dur);
    atomic_fetch_add(&s->metrics.http_rx_bytes, r->rx);
    if (ok && r->tx_body) {
        atomic_fetch_add(&s->metrics.http_tx_bytes, r->tx_body);
        if (r->http_read) {
            atomic_fetch_add(&s->metrics.http_read_bytes, r->tx_body);
            atomic_fetch_add(&s->metrics.http_read_ops, 1);
        }
    }
    atomic_fetch_sub(&s->metrics.inflight, 1);
    if (wh_log_get_level() >= WH_LOG_INFO || !ok) {
        /* The path is logged raw (percent-encoded), so it cannot break the line format. */
        wh_log_emit(ok ? WH_LOG_INFO : WH_LOG_WARN, MOD,
                    "request id=%s peer=%s method=%s path=%.512s api=%s status=%d rx=%llu "
                    "tx=%llu dur_ms=%.3f end=%s",
                    r->id, r->peer.addr, r->method ? r->method : "-", r->path ? r->path : "-",
                    front_api_name(r->route.api), status, (unsigned long long)r->rx,
                    (unsigned long long)r->tx_body, (double)dur / 1e6, toe_name(toe));
    }
    front_req_free(r);
}

/* Splits the raw request target into path and query. */
bool front_req_split_uri(front_req_t *r)
{
    const char *u = r->raw_uri;
    if (strncmp(u, "http://", 7) == 0 || strncmp(u, "https://", 8) == 0) {
        u = strchr(strstr(u, "//") + 2, '/');
        if (!u)
            u = "/";
    }
    r->path = strdup(u);
    if (!r->path)
        return false;
    char *q = strchr(r->path, '?');
    if (q) {
        *q = '\0';
        r->query = q + 1;
    }
    return true;
}

void front_metrics_text(front_t *s, wh_sbuf_t *b)
{
    front_metrics_render(&s->metrics, b);
    rdma_metrics(s->rdma, b);
    front_metrics_storage(s->store, b);
    if (s->app->metrics)
        s->app->metrics(s->app_state, b);
    if (s->cfg.metrics_extra)
        s->cfg.metrics_extra(s->cfg.metrics_extra_arg, b);
    front_http_metrics(s, b);
}

static void serve_metrics(front_req_t *r)
{
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    front_metrics_text(r->srv, &b);
    if (b.oom) {
        wh_sbuf_free(&b);
        front_reply_err(r, S3_ERR_INTERNAL, "out of memory rendering metrics");
        return;
    }
    size_t len = b.len;
    struct MHD_Response *resp = front_resp_buffer(wh_sbuf_steal(&b), len);
    if (resp)
        front_resp_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; version=0.0.4");
    r->tx_body = len;
    front_reply(r, 200, resp);
}

/* Everything before the S3 handler, all of it CPU work: the header limits, routing, /health
 * and /metrics, SigV4, the checks every API shares. Replies when the request goes no further. */
static void request_front(front_req_t *r)
{
    front_t *s = r->srv;
    r->head = strcmp(r->method, "HEAD") == 0;
    if (!front_req_split_uri(r) ||
        MHD_get_connection_values(r->conn, MHD_HEADER_KIND, front_req_collect_header, r) < 0 ||
        r->hdr_oom) {
        front_reply_err(r, S3_ERR_INTERNAL, "out of memory reading the request");
        return;
    }
    /* The header limits come before any other work (routing looks the bucket up). */
    if (r->hdr_bytes > FRONT_MAX_HEADER_BYTES || r->hdr_lines > FRONT_MAX_HEADER_LINES) {
        char msg[200];
        if (r->hdr_lines > FRONT_MAX_HEADER_LINES)
            snprintf(msg, sizeof msg, "the request has more than %u header lines",
                     FRONT_MAX_HEADER_LINES);
        else
            snprintf(msg, sizeof msg, "the request header section exceeds %u bytes",
                     FRONT_MAX_HEADER_BYTES);
        front_reply_err(r, S3_ERR_REQUEST_HEADER_TOO_LARGE, msg);
        return;
    }
    if (!front_req_index_headers(r)) {
        front_reply_err(r, S3_ERR_INTERNAL, "out of memory reading the request");
        return;
    }
    const char *token = front_hdr(r, "x-amz-rdma-token");
    r->token_req = token != NULL;
    if (token)
        xfer_token_arg_parse(&r->token, token);
    front_route_parse_in(s->app->ops, s->app->n_ops, r->method, r->path, r->query,
                         front_hdr(r, "host"), s->cfg.listen_host,
                         front_hdr(r, "x-amz-copy-source") != NULL, &r->route);
    /* A dotted endpoint name (path-style clients of http://wharf.lan:9000/bucket/key) looks
     * like virtual-host style; when the would-be bucket does not exist and the path names one,
     * the path wins. A vhost request for "/" (CreateBucket, ListObjects) stays vhost. */
    if (r->route.vhost && strcmp(r->path, "/") != 0 &&
        store_bucket_exists(s->store, r->route.bucket) != WH_OK) {
        front_route_free(&r->route);
        front_route_parse_in(s->app->ops, s->app->n_ops, r->method, r->path, r->query, NULL,
                             s->cfg.listen_host, front_hdr(r, "x-amz-copy-source") != NULL,
                             &r->route);
    }
    switch (r->route.api) {
    case FRONT_API_HEALTH: {
        static const char ok[] = "ok\n";
        struct MHD_Response *resp =
            MHD_create_response_from_buffer(sizeof ok - 1, (void *)ok, MHD_RESPMEM_PERSISTENT);
        char sock[512];
        const char *sp = front_unix_path_for_local_peer(r, sock, sizeof sock);
        if (resp)
            front_resp_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain");
        if (resp && sp)
            front_resp_header(resp, "x-wharf-unix-socket", sp);
        r->tx_body = sizeof ok - 1;
        front_reply(r, 200, resp);
        return;
    }
    case FRONT_API_METRICS:
        serve_metrics(r);
        return;
    case FRONT_API_CONSOLE:
        /* The console authenticates by its own session cookie, not SigV4: its bodies (the
         * login form) take no payload hash. */
        r->auth.mode = AUTH_PAYLOAD_UNSIGNED;
        if (!s->console)
            front_reply_err(r, S3_ERR_NOT_IMPLEMENTED, "this server has no console");
        return;
    default:
        break;
    }

    /* The IAM API (POST / with a form body): its signature covers the body's hash, which
     * its clients do not send, so it is verified once the body is read (iam.c). */
    if (r->route.api == FRONT_API_IAM)
        return;
    /* A CORS preflight is never signed (browsers send OPTIONS without credentials, also for a
     * presigned URL, whose query it carries): the bucket's CORS rules alone answer it. */
    if (r->route.api == FRONT_API_CORS_PREFLIGHT) {
        memset(&r->auth, 0, sizeof r->auth);
        r->auth.mode = AUTH_PAYLOAD_UNSIGNED;
        auth_principal_anon(&r->who);
        return;
    }
    /* Everything else is S3 and needs a signature. */
    char msg[256] = "";
    s3_err_t e = front_req_verify(r, time(NULL), msg, sizeof msg);
    if (e != S3_OK) {
        front_reply_err(r, e, msg);
        return;
    }
    if (r->token_req && r->who.kind == AUTH_PRINCIPAL_ANON) {
        front_reply_err(r, S3_ERR_ACCESS_DENIED,
                        "x-amz-rdma-token needs a signed request: an "
                        "anonymous request cannot name client memory");
        return;
    }
    if (r->token_req && !auth_auth_header_signed(&r->auth, "x-amz-rdma-token")) {
        front_reply_err(r, S3_ERR_ACCESS_DENIED,
                        "x-amz-rdma-token must be signed: list it in "
                        "SignedHeaders");
        return;
    }
    const char *cl = front_hdr(r, "content-length");
    bool wire_body = (cl && strcmp(cl, "0") != 0) || front_hdr(r, "transfer-encoding");
    if (!wire_body && r->auth.mode == AUTH_PAYLOAD_SHA256 &&
        strcmp(r->auth.payload_hash, AUTH_EMPTY_SHA256) != 0) {
        front_reply_err(r, S3_ERR_CONTENT_SHA256_MISMATCH,
                        "x-amz-content-sha256 names a body but the request has none");
        return;
    }
    if (r->route.api == FRONT_API_BAD_REQUEST) {
        front_reply_err(r, S3_ERR_INVALID_REQUEST, r->route.why);
        return;
    }
    if (r->route.api == FRONT_API_NOT_IMPLEMENTED) {
        const char *u = r->route.unsupported ? r->route.unsupported : "?";
        if (strcmp(u, "torrent") == 0 && r->route.key && strcmp(r->method, "GET") == 0) {
            /* S3 keeps no torrent for most objects either: NoSuchKey, as it answers. */
            front_reply_err(r, S3_ERR_NO_SUCH_KEY,
                            "no torrent file exists for this object: wharfd does not "
                            "serve objects over BitTorrent (GetObjectTorrent)");
            return;
        }
        char m[200];
        if (strcmp(u, "select") == 0)
            snprintf(m, sizeof m,
                     "S3 Select (SelectObjectContent) is not implemented by wharfd; AWS closed "
                     "it to new customers in 2024: read the object and filter it client-side");
        else
            snprintf(m, sizeof m, "the ?%s sub-resource is not implemented by wharfd", u);
        front_reply_err(r, S3_ERR_NOT_IMPLEMENTED, m);
        return;
    }
    if (r->route.api == FRONT_API_METHOD_NOT_ALLOWED) {
        front_reply_err(r, S3_ERR_METHOD_NOT_ALLOWED, NULL);
        return;
    }
}

/* The S3 handler's first step, then the payload pipeline for the body it wants. */
static void request_s3_begin(front_req_t *r)
{
    front_req_app(r)->begin(r);
    if (r->responded)
        return;
    if (r->body == FRONT_BODY_NONE) {
        front_reply_err(r, S3_ERR_INTERNAL, "handler neither replied nor took the body");
        return;
    }
    /* Set up the payload pipeline for the body the handler wants. */
    switch (r->auth.mode) {
    case AUTH_PAYLOAD_SHA256:
        if (wh_sha256_init(&r->sha) != 0) {
            front_reply_err(r, S3_ERR_INTERNAL, "cannot initialise sha256");
            return;
        }
        r->sha_on = true;
        break;
    case AUTH_PAYLOAD_STREAMING_SIGNED:
    case AUTH_PAYLOAD_STREAMING_UNSIGNED_TRAILER:
        r->chunked = auth_chunked_new(&r->auth);
        if (!r->chunked) {
            front_reply_err(r, S3_ERR_INTERNAL, "cannot allocate the aws-chunked decoder");
            return;
        }
        break;
    default:
        break;
    }
}

static int body_sink(void *arg, const void *p, size_t n)
{
    front_req_t *r = arg;
    r->decoded += n;
    if (r->body == FRONT_BODY_BUFFER) {
        if (r->buf.len + n > FRONT_MAX_XML_BODY) {
            r->body_err = S3_ERR_MALFORMED_XML;
            snprintf(r->body_msg, sizeof r->body_msg, "the XML body exceeds %u bytes",
                     FRONT_MAX_XML_BODY);
            return -1;
        }
        wh_sbuf_append(&r->buf, p, n);
        if (r->buf.oom) {
            r->body_err = S3_ERR_INTERNAL;
            snprintf(r->body_msg, sizeof r->body_msg, "out of memory buffering the body");
            return -1;
        }
        return 0;
    }
    if (r->body == FRONT_BODY_FORM)
        return front_req_app(r)->form_feed ? front_req_app(r)->form_feed(r, p, n) : -1;
    if (r->body == FRONT_BODY_WRITER) {
        if (r->decoded > FRONT_MAX_PUT_SIZE) {
            r->body_err = S3_ERR_ENTITY_TOO_LARGE;
            snprintf(r->body_msg, sizeof r->body_msg,
                     "a single PUT may carry at most 5 GiB; use a multipart upload");
            return -1;
        }
        front_req_app(r)->body_digest(r, p, n);
        wh_status_t st = store_writer_write(r->w, p, n);
        if (st != WH_OK) {
            r->body_err = s3_err_from_status(st);
            snprintf(r->body_msg, sizeof r->body_msg, "writing the object failed: %s",
                     wh_status_str(st));
            return -1;
        }
    }
    return 0;
}

static void body_fail(front_req_t *r)
{
    /* Stop storing; the rest of the body is read and dropped, the error is sent at the end. */
    r->body = FRONT_BODY_DISCARD;
    front_req_app(r)->cleanup(r);
}

static void body_feed(front_req_t *r, const char *data, size_t n)
{
    if (r->body == FRONT_BODY_DISCARD || r->body == FRONT_BODY_NONE)
        return;
    if (r->sha_on)
        wh_sha256_update(&r->sha, data, n);
    if (r->chunked) {
        char msg[200] = "";
        s3_err_t e = auth_chunked_feed(r->chunked, data, n, body_sink, r, msg, sizeof msg);
        if (e != S3_OK) {
            if (r->body_err == S3_OK) {
                r->body_err = e;
                snprintf(r->body_msg, sizeof r->body_msg, "%s", msg);
            }
            body_fail(r);
        }
        return;
    }
    if (body_sink(r, data, n) != 0)
        body_fail(r);
}

/* Checks that close the payload: the aws-chunked end and trailers, the signed sha256, the
 * decoded length. */
static void request_finish(front_req_t *r)
{
    if (r->body_err == S3_OK && r->chunked) {
        char msg[200] = "";
        s3_err_t e = auth_chunked_finish(r->chunked, msg, sizeof msg);
        if (e != S3_OK) {
            r->body_err = e;
            snprintf(r->body_msg, sizeof r->body_msg, "%s", msg);
        }
        const char *dcl = front_hdr(r, "x-amz-decoded-content-length");
        uint64_t want;
        if (r->body_err == S3_OK && dcl && wh_parse_u64(dcl, strlen(dcl), &want) == 0 &&
            want != r->decoded) {
            r->body_err = S3_ERR_INCOMPLETE_BODY;
            snprintf(r->body_msg, sizeof r->body_msg,
                     "x-amz-decoded-content-length says %llu bytes but the body decoded to %llu",
                     (unsigned long long)want, (unsigned long long)r->decoded);
        }
    }
    if (r->body_err == S3_OK && r->sha_on) {
        uint8_t d[WH_SHA256_LEN];
        char hex[65];
        wh_sha256_final(&r->sha, d);
        r->sha_on = false;
        wh_hex_encode(d, sizeof d, hex);
        if (strcmp(hex, r->auth.payload_hash) != 0) {
            r->body_err = S3_ERR_CONTENT_SHA256_MISMATCH;
            snprintf(r->body_msg, sizeof r->body_msg,
                     "x-amz-content-sha256 is %.64s but the body hashes to %s",
                     r->auth.payload_hash, hex);
        }
    }
    if (r->body_err != S3_OK) {
        front_req_app(r)->cleanup(r);
        front_reply_err(r, r->body_err, r->body_msg);
        return;
    }
    front_req_app(r)->finish(r);
    if (!r->responded)
        front_reply_err(r, S3_ERR_INTERNAL, "handler did not reply");
}

/* True when the client closed its side with a Content-Length body still short: the request
 * can never complete, so the connection is closed now (and an uncommitted object dropped).
 * libmicrohttpd's epoll mode can miss such a close: it takes a short read as "socket
 * drained", so a FIN that came with the last bytes raises no further event and would only be
 * noticed at the idle timeout. A peek at the socket sees it. */
static bool body_abandoned(front_req_t *r)
{
    if (!r->body_len || r->rx >= r->body_len)
        return false;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    char b;
    if (!ci || recv(ci->connect_fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) != 0)
        return false;
    wh_debug(MOD, "client closed with the body incomplete id=%s rx=%llu of %llu", r->id,
             (unsigned long long)r->rx, (unsigned long long)r->body_len);
    return true;
}

/* ---- handler threads ---------------------------------------------------------------------
 * S3 handlers block: on disk and SQLite commits, and on RDMA transfers that take as long as
 * the client's memory takes. An event thread serves many connections, so a handler must not
 * run on it: the connection is suspended, the handler runs on a handler thread, and its reply
 * is queued when libmicrohttpd resumes the connection and calls access again. */

static void job_run(void *arg)
{
    front_req_t *r = arg;
    if (r->job_begin)
        request_s3_begin(r);
    if (!r->responded)
        request_finish(r);
    struct MHD_Connection *c = r->conn;
    r->in_job = false;
    r->job_done = true;
    MHD_resume_connection(c); /* r may be gone once this returns */
}

static void job_start(front_req_t *r, bool begin)
{
    r->job_begin = begin;
    r->job = (front_job_t){.fn = job_run, .arg = r};
    r->in_job = true;
    MHD_suspend_connection(r->conn);
    if (!front_jobs_submit(r->srv, &r->job))
        job_run(r); /* no handler thread: run here, as a thread per connection would */
}

static enum MHD_Result queue_pending(front_req_t *r)
{
    r->job_done = false;
    struct MHD_Response *resp = r->pending;
    r->pending = NULL;
    if (!resp)
        return MHD_NO; /* no reply could be built: close the connection */
    enum MHD_Result ok = MHD_queue_response(r->conn, (unsigned)r->pending_status, resp);
    if (ok != MHD_YES)
        wh_warn(MOD, "cannot queue response id=%s status=%d", r->id, r->pending_status);
    MHD_destroy_response(resp);
    return ok;
}

enum MHD_Result front_http_access_cb(void *cls, struct MHD_Connection *c, const char *url,
                                     const char *method, const char *version,
                                     const char *upload_data, size_t *upload_data_size,
                                     void **con_cls)
{
    (void)cls, (void)url, (void)version;
    front_req_t *r = *con_cls;
    if (!r)
        return MHD_NO; /* the request object could not be allocated: drop the connection */
    if (r->job_done)
        return queue_pending(r);
    if (r->pending && !*upload_data_size)
        return queue_pending(r); /* a refusal held until its body was read */
    if (!r->started) {
        r->started = true;
        r->conn = c;
        r->method = method;
        front_conn_headers_done(r->srv, c);
        /* libmicrohttpd closes the connection after a response queued on this first call
         * (it cannot know the body was read), so a request without a body is handled on the
         * next call. One with a body is vetted now, so a refusal is sent before the body. */
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
        const char *te = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Transfer-Encoding");
        if (te && strcasecmp(te, "chunked") != 0) {
            /* libmicrohttpd frames only "chunked"; any other coding would be read as a body
             * that ends when the client closes, and the client would wait for a reply that
             * never comes. Refuse it before reading on; the connection closes after this. */
            char msg[200];
            snprintf(msg, sizeof msg,
                     "Transfer-Encoding: %.64s is not implemented; request "
                     "bodies may be chunked or have a Content-Length",
                     te);
            front_reply_err(r, S3_ERR_NOT_IMPLEMENTED, msg);
            return MHD_YES;
        }
        if ((cl && strcmp(cl, "0") != 0) || te) {
            uint64_t n;
            if (cl && !te && wh_parse_u64(cl, strlen(cl), &n) == 0)
                r->body_len = n;
            if (body_abandoned(r))
                return MHD_NO;
            /* A client that waits for 100-continue sends no body after a refusal. */
            const char *expect = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Expect");
            r->drain = r->body_len && r->body_len <= FRONT_DRAIN_MAX &&
                       !(expect && strcasecmp(expect, "100-continue") == 0);
            request_front(r);
            if (!r->responded)
                request_s3_begin(r);
            r->drain = false;
        } else {
            r->deferred = true;
        }
        return MHD_YES;
    }
    if (r->deferred) {
        r->deferred = false;
        request_front(r);
        if (!r->responded)
            job_start(r, true);
        return MHD_YES;
    }
    if (*upload_data_size) {
        r->rx += *upload_data_size;
        if (!r->responded)
            body_feed(r, upload_data, *upload_data_size);
        *upload_data_size = 0;
        if (body_abandoned(r)) {
            body_fail(r);
            return MHD_NO;
        }
        return MHD_YES;
    }
    if (!r->responded)
        job_start(r, false);
    return MHD_YES;
}
