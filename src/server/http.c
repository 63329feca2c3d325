/* The HTTP front: libmicrohttpd daemons, the request object's life, SigV4, the body pipeline
 * and reply helpers. The S3 semantics live in s3api.c. */
#include "server/server.h"
#include "base/codec.h"
#include "base/log.h"
#include "s3/xml.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define MOD "http"

void srv_config_init(srv_config_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->listen_host = "127.0.0.1";
    cfg->listen_port = 9000;
    cfg->region = "us-east-1";
    cfg->shutdown_grace_s = 10;
    cfg->conn_timeout_s = 120;
    srv_rdma_config_init(&cfg->rdma);
}

/* ---- headers ----------------------------------------------------------------------------
 * The header section is collected once, in time linear in its size: each line is appended
 * (no lookups while collecting), the collection stops at the size and count limits, and the
 * array is then sorted by lowercase name (stable, so repeated headers keep their order) and
 * repeats are comma-joined. Lookups are binary searches. A linear duplicate search per line
 * made 10,000 header lines cost a fifth of a second of CPU before authentication. */

const char *srv_hdr(const srv_req_t *r, const char *lname)
{
    size_t lo = 0, hi = r->nhdrs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(r->hdrs[mid].lname, lname);
        if (c == 0)
            return r->hdrs[mid].value;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static enum MHD_Result collect_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                      const char *value)
{
    srv_req_t *r = cls;
    (void)kind;
    if (!key)
        return MHD_YES;
    if (!value)
        value = "";
    size_t kn = strlen(key), vn = strlen(value);
    r->hdr_bytes += kn + vn + 4; /* "name: value\r\n" */
    r->hdr_lines++;
    if (r->hdr_bytes > SRV_MAX_HEADER_BYTES || r->hdr_lines > SRV_MAX_HEADER_LINES)
        return MHD_NO; /* over a limit: the request is refused, the rest is not looked at */
    if (r->nhdrs == r->hdrs_cap) {
        size_t cap = r->hdrs_cap ? r->hdrs_cap * 2 : 32;
        srv_hdr_t *h = realloc(r->hdrs, cap * sizeof *h);
        if (!h)
            goto oom;
        r->hdrs = h;
        r->hdrs_cap = cap;
    }
    char *lname = malloc(kn + 1);
    char *v = malloc(vn + 1);
    if (!lname || !v) {
        free(lname);
        free(v);
        goto oom;
    }
    for (size_t i = 0; i <= kn; i++) {
        char c = key[i];
        lname[i] = (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
    }
    memcpy(v, value, vn + 1);
    r->hdrs[r->nhdrs].lname = lname;
    r->hdrs[r->nhdrs].value = v;
    r->nhdrs++;
    return MHD_YES;
oom:
    r->hdr_oom = true;
    return MHD_NO;
}

typedef struct hdr_sort {
    srv_hdr_t h;
    size_t seq;
} hdr_sort_t;

static int hdr_sort_cmp(const void *a, const void *b)
{
    const hdr_sort_t *x = a, *y = b;
    int c = strcmp(x->h.lname, y->h.lname);
    if (c)
        return c;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Sorts the collected headers by name and joins repeats with ",". Returns false on OOM. */
static bool hdrs_index(srv_req_t *r)
{
    if (r->nhdrs < 2)
        return true;
    hdr_sort_t *t = malloc(r->nhdrs * sizeof *t);
    if (!t)
        return false;
    for (size_t i = 0; i < r->nhdrs; i++)
        t[i] = (hdr_sort_t){r->hdrs[i], i};
    qsort(t, r->nhdrs, sizeof *t, hdr_sort_cmp);
    bool ok = true;
    size_t out = 0;
    for (size_t i = 0; i < r->nhdrs;) {
        size_t j = i + 1, len = strlen(t[i].h.value);
        while (j < r->nhdrs && strcmp(t[j].h.lname, t[i].h.lname) == 0)
            len += 1 + strlen(t[j++].h.value);
        srv_hdr_t h = t[i].h;
        if (j > i + 1) {
            char *joined = ok ? malloc(len + 1) : NULL;
            if (joined) {
                size_t k = 0;
                for (size_t m = i; m < j; m++) {
                    size_t n = strlen(t[m].h.value);
                    if (m > i)
                        joined[k++] = ',';
                    memcpy(joined + k, t[m].h.value, n);
                    k += n;
                }
                joined[k] = '\0';
            } else {
                ok = false;
            }
            for (size_t m = i + 1; m < j; m++) {
                free(t[m].h.lname);
                free(t[m].h.value);
            }
            if (joined) {
                free(h.value);
                h.value = joined;
            }
        }
        r->hdrs[out++] = h;
        i = j;
    }
    r->nhdrs = out;
    free(t);
    return ok;
}

static const char *sigv4_get_header(void *arg, const char *lname)
{
    return srv_hdr(arg, lname);
}

static const char *sigv4_header_at(void *arg, size_t i, const char **value)
{
    const srv_req_t *r = arg;
    if (i >= r->nhdrs)
        return NULL;
    *value = r->hdrs[i].value;
    return r->hdrs[i].lname;
}

static const char *secret_cb(void *arg, const char *access_key)
{
    srv_t *s = arg;
    return strcmp(access_key, s->cfg.access_key) == 0 ? s->cfg.secret_key : NULL;
}

/* ---- replies ---------------------------------------------------------------------------- */

bool srv_resp_header(struct MHD_Response *resp, const char *name, const char *value)
{
    if (MHD_add_response_header(resp, name, value) != MHD_YES) {
        wh_warn(MOD, "cannot add response header name=%s", name);
        return false;
    }
    return true;
}

struct MHD_Response *srv_resp_buffer(void *data, size_t len)
{
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(len, data, MHD_RESPMEM_MUST_FREE);
    if (!resp)
        free(data);
    return resp;
}

struct MHD_Response *srv_resp_empty(void)
{
    return MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
}

void srv_reply(srv_req_t *r, int status, struct MHD_Response *resp)
{
    if (r->responded) {
        if (resp)
            MHD_destroy_response(resp);
        return;
    }
    r->responded = true;
    if (!resp) {
        resp = srv_resp_empty();
        status = 500;
        if (!resp) {
            r->status = 500;
            srv_metrics_count(&r->srv->metrics, r->route.api, 500);
            return; /* MHD closes the connection */
        }
    }
    r->status = status;
    srv_metrics_count(&r->srv->metrics, r->route.api, status);
    srv_resp_header(resp, "x-amz-request-id", r->id);
    srv_resp_header(resp, "x-amz-id-2", r->id);
    srv_resp_header(resp, MHD_HTTP_HEADER_SERVER, SRV_SERVER_HEADER);
    if (MHD_queue_response(r->conn, (unsigned)status, resp) != MHD_YES)
        wh_warn(MOD, "cannot queue response id=%s status=%d", r->id, status);
    MHD_destroy_response(resp);
}

void srv_reply_empty(srv_req_t *r, int status)
{
    srv_reply(r, status, srv_resp_empty());
}

void srv_reply_xml(srv_req_t *r, int status, wh_sbuf_t *xml)
{
    if (xml->oom) {
        wh_sbuf_free(xml);
        srv_reply_err(r, S3_ERR_INTERNAL, "out of memory building the reply");
        return;
    }
    size_t len = xml->len;
    struct MHD_Response *resp = srv_resp_buffer(wh_sbuf_steal(xml), len);
    if (resp)
        srv_resp_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/xml");
    if (!r->head)
        r->tx_body = len;
    srv_reply(r, status, resp);
}

void srv_reply_err_raw(srv_req_t *r, int status, const char *code, const char *msg,
                       struct MHD_Response *resp)
{
    if (r->responded) {
        if (resp)
            MHD_destroy_response(resp);
        return;
    }
    wh_debug(MOD, "error reply id=%s status=%d code=%s message=%s", r->id, status, code, msg);
    if (r->head || r->token_req || status == 304) {
        /* No body: HEAD replies have none, and a token request is never answered with one. */
        if (!resp)
            resp = srv_resp_empty();
        if (resp && status != 304) {
            srv_resp_header(resp, "x-amz-error-code", code);
            /* Header values must not carry CR/LF; messages are ours, but keys can be echoed. */
            char clean[512];
            size_t i = 0;
            for (; msg[i] && i < sizeof clean - 1; i++)
                clean[i] = (msg[i] == '\r' || msg[i] == '\n') ? ' ' : msg[i];
            clean[i] = '\0';
            srv_resp_header(resp, "x-amz-error-message", clean);
        }
        srv_reply(r, status, resp);
        return;
    }
    if (resp)
        MHD_destroy_response(resp); /* only used for the bodiless form */
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    wh_sbuf_t res;
    wh_sbuf_init(&res);
    if (r->route.bucket) {
        wh_sbuf_printf(&res, "/%s", r->route.bucket);
        if (r->route.key)
            wh_sbuf_printf(&res, "/%s", r->route.key);
    } else {
        wh_sbuf_puts(&res, r->path ? r->path : "/");
    }
    s3_xml_error(&b, code, msg, res.data ? res.data : "", r->id);
    wh_sbuf_free(&res);
    r->body_err = S3_OK;
    srv_reply_xml(r, status, &b);
}

void srv_reply_err(srv_req_t *r, s3_err_t e, const char *msg)
{
    srv_reply_err_raw(r, s3_err_http_status(e), s3_err_code(e),
                      msg && *msg ? msg : s3_err_message(e), NULL);
}

/* ---- request life ----------------------------------------------------------------------- */

static void fill_peer(srv_req_t *r, bool is_unix, struct MHD_Connection *c)
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

static void *uri_log_cb(void *cls, const char *uri, struct MHD_Connection *c)
{
    srv_listener_t *l = cls;
    srv_t *s = l->srv;
    srv_req_t *r = calloc(1, sizeof *r);
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

static void req_free(srv_req_t *r)
{
    srv_route_free(&r->route);
    for (size_t i = 0; i < r->nhdrs; i++) {
        free(r->hdrs[i].lname);
        free(r->hdrs[i].value);
    }
    free(r->hdrs);
    s3_chunked_free(r->chunked);
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
    case MHD_REQUEST_TERMINATED_COMPLETED_OK: return "ok";
    case MHD_REQUEST_TERMINATED_WITH_ERROR: return "error";
    case MHD_REQUEST_TERMINATED_TIMEOUT_REACHED: return "timeout";
    case MHD_REQUEST_TERMINATED_DAEMON_SHUTDOWN: return "shutdown";
    case MHD_REQUEST_TERMINATED_READ_ERROR: return "read_error";
    case MHD_REQUEST_TERMINATED_CLIENT_ABORT: return "client_abort";
    default: return "other";
    }
}

static void completed_cb(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    srv_req_t *r = *con_cls;
    if (!r)
        return;
    *con_cls = NULL;
    srv_t *s = r->srv;
    srv_s3_cleanup(r); /* aborts an uncommitted writer: nothing is stored */
    uint64_t dur = wh_now_ns() - r->t0_ns;
    int status = r->responded ? r->status : 0;
    bool ok = toe == MHD_REQUEST_TERMINATED_COMPLETED_OK;
    if (!r->responded)
        srv_metrics_count(&s->metrics, r->route.api, 0); /* status "0": no reply was sent */
    srv_metrics_latency(&s->metrics, r->route.api, dur);
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
                    r->id, r->peer.addr, r->method ? r->method : "-",
                    r->path ? r->path : "-", srv_api_name(r->route.api), status,
                    (unsigned long long)r->rx, (unsigned long long)r->tx_body,
                    (double)dur / 1e6, toe_name(toe));
    }
    req_free(r);
}

/* Splits the raw request target into path and query. */
static bool split_uri(srv_req_t *r)
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

static void serve_metrics(srv_req_t *r)
{
    wh_sbuf_t b;
    wh_sbuf_init(&b);
    srv_metrics_render(&r->srv->metrics, &b);
    srv_rdma_metrics(r->srv->rdma, &b);
    srv_metrics_storage(r->srv->store, &b);
    if (r->srv->cfg.metrics_extra)
        r->srv->cfg.metrics_extra(r->srv->cfg.metrics_extra_arg, &b);
    if (b.oom) {
        wh_sbuf_free(&b);
        srv_reply_err(r, S3_ERR_INTERNAL, "out of memory rendering metrics");
        return;
    }
    size_t len = b.len;
    struct MHD_Response *resp = srv_resp_buffer(wh_sbuf_steal(&b), len);
    if (resp)
        srv_resp_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; version=0.0.4");
    r->tx_body = len;
    srv_reply(r, 200, resp);
}

static void request_begin(srv_req_t *r)
{
    srv_t *s = r->srv;
    r->head = strcmp(r->method, "HEAD") == 0;
    if (!split_uri(r) ||
        MHD_get_connection_values(r->conn, MHD_HEADER_KIND, collect_header, r) < 0 ||
        r->hdr_oom) {
        srv_reply_err(r, S3_ERR_INTERNAL, "out of memory reading the request");
        return;
    }
    /* The header limits come before any other work (routing looks the bucket up). */
    if (r->hdr_bytes > SRV_MAX_HEADER_BYTES || r->hdr_lines > SRV_MAX_HEADER_LINES) {
        char msg[200];
        if (r->hdr_lines > SRV_MAX_HEADER_LINES)
            snprintf(msg, sizeof msg, "the request has more than %u header lines",
                     SRV_MAX_HEADER_LINES);
        else
            snprintf(msg, sizeof msg, "the request header section exceeds %u bytes",
                     SRV_MAX_HEADER_BYTES);
        srv_reply_err(r, S3_ERR_REQUEST_HEADER_TOO_LARGE, msg);
        return;
    }
    if (!hdrs_index(r)) {
        srv_reply_err(r, S3_ERR_INTERNAL, "out of memory reading the request");
        return;
    }
    r->token_req = srv_hdr(r, "x-amz-rdma-token") != NULL;
    srv_route_parse(r->method, r->path, r->query, srv_hdr(r, "host"), s->cfg.listen_host,
                    srv_hdr(r, "x-amz-copy-source") != NULL, &r->route);
    /* A dotted endpoint name (path-style clients of http://wharf.lan:9000/bucket/key) looks
     * like virtual-host style; when the would-be bucket does not exist and the path names one,
     * the path wins. A vhost request for "/" (CreateBucket, ListObjects) stays vhost. */
    if (r->route.vhost && strcmp(r->path, "/") != 0 &&
        store_bucket_exists(s->store, r->route.bucket) != WH_OK) {
        srv_route_free(&r->route);
        srv_route_parse(r->method, r->path, r->query, NULL, s->cfg.listen_host,
                        srv_hdr(r, "x-amz-copy-source") != NULL, &r->route);
    }
    switch (r->route.api) {
    case SRV_API_HEALTH: {
        static const char ok[] = "ok\n";
        struct MHD_Response *resp =
            MHD_create_response_from_buffer(sizeof ok - 1, (void *)ok, MHD_RESPMEM_PERSISTENT);
        if (resp)
            srv_resp_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain");
        r->tx_body = sizeof ok - 1;
        srv_reply(r, 200, resp);
        return;
    }
    case SRV_API_METRICS:
        serve_metrics(r);
        return;
    default:
        break;
    }

    /* Everything else is S3 and needs SigV4. */
    s3_http_req_t hr = {
        .method = r->method,
        .path = r->path,
        .query = r->query,
        .get_header = sigv4_get_header,
        .header_at = sigv4_header_at,
        .arg = r,
    };
    char msg[256] = "";
    s3_err_t e = s3_sigv4_verify(&hr, secret_cb, s, time(NULL), &r->auth, msg, sizeof msg);
    if (e != S3_OK) {
        srv_reply_err(r, e, msg);
        return;
    }
    if (r->token_req && !s3_auth_header_signed(&r->auth, "x-amz-rdma-token")) {
        srv_reply_err(r, S3_ERR_ACCESS_DENIED, "x-amz-rdma-token must be signed: list it in "
                                               "SignedHeaders");
        return;
    }
    const char *cl = srv_hdr(r, "content-length");
    bool wire_body = (cl && strcmp(cl, "0") != 0) || srv_hdr(r, "transfer-encoding");
    if (!wire_body && r->auth.mode == S3_PAYLOAD_SHA256 &&
        strcmp(r->auth.payload_hash, S3_EMPTY_SHA256) != 0) {
        srv_reply_err(r, S3_ERR_CONTENT_SHA256_MISMATCH,
                      "x-amz-content-sha256 names a body but the request has none");
        return;
    }
    if (r->route.api == SRV_API_BAD_REQUEST) {
        srv_reply_err(r, S3_ERR_INVALID_REQUEST, r->route.why);
        return;
    }
    if (r->route.api == SRV_API_NOT_IMPLEMENTED) {
        char m[160];
        snprintf(m, sizeof m, "the ?%s sub-resource is not implemented by wharfd",
                 r->route.unsupported ? r->route.unsupported : "?");
        srv_reply_err(r, S3_ERR_NOT_IMPLEMENTED, m);
        return;
    }
    if (r->route.api == SRV_API_METHOD_NOT_ALLOWED) {
        srv_reply_err(r, S3_ERR_METHOD_NOT_ALLOWED, NULL);
        return;
    }

    srv_s3_begin(r);
    if (r->responded)
        return;
    if (r->body == SRV_BODY_NONE) {
        srv_reply_err(r, S3_ERR_INTERNAL, "handler neither replied nor took the body");
        return;
    }
    /* Set up the payload pipeline for the body the handler wants. */
    switch (r->auth.mode) {
    case S3_PAYLOAD_SHA256:
        if (wh_sha256_init(&r->sha) != 0) {
            srv_reply_err(r, S3_ERR_INTERNAL, "cannot initialise sha256");
            return;
        }
        r->sha_on = true;
        break;
    case S3_PAYLOAD_STREAMING_SIGNED:
    case S3_PAYLOAD_STREAMING_UNSIGNED_TRAILER:
        r->chunked = s3_chunked_new(&r->auth);
        if (!r->chunked) {
            srv_reply_err(r, S3_ERR_INTERNAL, "cannot allocate the aws-chunked decoder");
            return;
        }
        break;
    default:
        break;
    }
}

static int body_sink(void *arg, const void *p, size_t n)
{
    srv_req_t *r = arg;
    r->decoded += n;
    if (r->body == SRV_BODY_BUFFER) {
        if (r->buf.len + n > SRV_MAX_XML_BODY) {
            r->body_err = S3_ERR_MALFORMED_XML;
            snprintf(r->body_msg, sizeof r->body_msg, "the XML body exceeds %u bytes",
                     SRV_MAX_XML_BODY);
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
    if (r->body == SRV_BODY_WRITER) {
        if (r->decoded > SRV_MAX_PUT_SIZE) {
            r->body_err = S3_ERR_ENTITY_TOO_LARGE;
            snprintf(r->body_msg, sizeof r->body_msg,
                     "a single PUT may carry at most 5 GiB; use a multipart upload");
            return -1;
        }
        srv_s3_body_digest(r, p, n);
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

static void body_fail(srv_req_t *r)
{
    /* Stop storing; the rest of the body is read and dropped, the error is sent at the end. */
    r->body = SRV_BODY_DISCARD;
    srv_s3_cleanup(r);
}

static void body_feed(srv_req_t *r, const char *data, size_t n)
{
    if (r->body == SRV_BODY_DISCARD || r->body == SRV_BODY_NONE)
        return;
    if (r->sha_on)
        wh_sha256_update(&r->sha, data, n);
    if (r->chunked) {
        char msg[200] = "";
        s3_err_t e = s3_chunked_feed(r->chunked, data, n, body_sink, r, msg, sizeof msg);
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
static void request_finish(srv_req_t *r)
{
    if (r->body_err == S3_OK && r->chunked) {
        char msg[200] = "";
        s3_err_t e = s3_chunked_finish(r->chunked, msg, sizeof msg);
        if (e != S3_OK) {
            r->body_err = e;
            snprintf(r->body_msg, sizeof r->body_msg, "%s", msg);
        }
        const char *dcl = srv_hdr(r, "x-amz-decoded-content-length");
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
        srv_s3_cleanup(r);
        srv_reply_err(r, r->body_err, r->body_msg);
        return;
    }
    srv_s3_finish(r);
    if (!r->responded)
        srv_reply_err(r, S3_ERR_INTERNAL, "handler did not reply");
}

static enum MHD_Result access_cb(void *cls, struct MHD_Connection *c, const char *url,
                                 const char *method, const char *version,
                                 const char *upload_data, size_t *upload_data_size,
                                 void **con_cls)
{
    srv_req_t *r = *con_cls;
    if (!r)
        return MHD_NO; /* the request object could not be allocated: drop the connection */
    if (!r->started) {
        r->started = true;
        r->conn = c;
        r->method = method;
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
            snprintf(msg, sizeof msg, "Transfer-Encoding: %.64s is not implemented; request "
                                      "bodies may be chunked or have a Content-Length", te);
            srv_reply_err(r, S3_ERR_NOT_IMPLEMENTED, msg);
            return MHD_YES;
        }
        if ((cl && strcmp(cl, "0") != 0) || te)
            request_begin(r);
        else
            r->deferred = true;
        return MHD_YES;
    }
    if (r->deferred) {
        r->deferred = false;
        request_begin(r);
        if (r->responded)
            return MHD_YES;
    }
    if (*upload_data_size) {
        r->rx += *upload_data_size;
        if (!r->responded)
            body_feed(r, upload_data, *upload_data_size);
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (!r->responded)
        request_finish(r);
    return MHD_YES;
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    char line[512];
    vsnprintf(line, sizeof line, fmt, ap);
    size_t n = strlen(line);
    while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        line[--n] = '\0';
    wh_debug("mhd", "%s", line);
}

/* ---- start/stop ------------------------------------------------------------------------- */

static int unix_listen(const char *path)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof sa.sun_path) {
        wh_error(MOD, "unix socket path is too long (%zu bytes, max %zu): %s; pass a shorter "
                      "--unix PATH", strlen(path), sizeof sa.sun_path - 1, path);
        return -1;
    }
    strcpy(sa.sun_path, path);
    struct stat stt;
    if (lstat(path, &stt) == 0) {
        if (!S_ISSOCK(stt.st_mode)) {
            wh_error(MOD, "unix socket path exists and is not a socket: %s", path);
            return -1;
        }
        unlink(path); /* a stale socket from an earlier run */
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        wh_error(MOD, "socket(AF_UNIX) failed: %m");
        return -1;
    }
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        wh_error(MOD, "cannot bind unix socket %s: %m", path);
        close(fd);
        return -1;
    }
    if (listen(fd, 1024) != 0) {
        wh_error(MOD, "listen on unix socket %s failed: %m", path);
        close(fd);
        unlink(path);
        return -1;
    }
    return fd;
}

static struct MHD_Daemon *start_daemon(srv_t *s, srv_listener_t *l, int listen_fd,
                                       const struct sockaddr *bind_addr)
{
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
                     MHD_USE_POLL | MHD_USE_ITC | MHD_USE_ERROR_LOG;
    struct MHD_OptionItem opts[] = {
        {MHD_OPTION_CONNECTION_MEMORY_LIMIT, 1 << 20, NULL},
        {MHD_OPTION_CONNECTION_TIMEOUT, s->cfg.conn_timeout_s, NULL},
        {MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)uri_log_cb, l},
        {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)completed_cb, s},
        {MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)mhd_log, s},
        {MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024, NULL},
        {listen_fd >= 0 ? MHD_OPTION_LISTEN_SOCKET : MHD_OPTION_SOCK_ADDR,
         listen_fd >= 0 ? listen_fd : 0, (void *)bind_addr},
        {MHD_OPTION_END, 0, NULL},
    };
    return MHD_start_daemon(flags, 0, NULL, NULL, access_cb, l, MHD_OPTION_ARRAY, opts,
                            MHD_OPTION_END);
}

wh_status_t srv_start(const srv_config_t *cfg, srv_t **out)
{
    wh_status_t st;
    srv_t *s = calloc(1, sizeof *s);
    if (!s)
        return WH_ERR_NOMEM;
    s->cfg = *cfg;
    s->unix_fd = -1;
    s->tcp_l = (srv_listener_t){s, false};
    s->unix_l = (srv_listener_t){s, true};
    srv_metrics_init(&s->metrics);
    uint64_t salt = 0;
    wh_random_bytes(&salt, sizeof salt);
    s->id_salt = salt;

    store_config_t scfg = {.data_dir = cfg->data_dir,
                           .meta_url = cfg->meta_url,
                           .reserve_bytes = cfg->store_reserve,
                           .high_water_pct = cfg->high_water_pct};
    if (cfg->store) {
        s->store = cfg->store;
        st = WH_OK;
    } else {
        st = store_open_config(&scfg, &s->store);
    }
    if (st != WH_OK) {
        wh_error(MOD, "cannot open the store dir=%s: %s", cfg->data_dir, wh_status_str(st));
        goto err_free;
    }
    srv_rdma_config_t rcfg = cfg->rdma;
    if (!rcfg.node && strcmp(cfg->listen_host, "0.0.0.0") != 0)
        rcfg.node = cfg->listen_host; /* fabric listeners only where HTTP listens */
    st = srv_rdma_init(&rcfg, &s->rdma);
    if (st != WH_OK) {
        wh_error(MOD, "cannot start the rdma engine providers=%s: %s", cfg->rdma.providers,
                 wh_status_str(st));
        goto err_store;
    }

    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(cfg->listen_port)};
    if (inet_pton(AF_INET, cfg->listen_host, &sin.sin_addr) != 1) {
        wh_error(MOD, "listen host must be an IPv4 address, got %s", cfg->listen_host);
        st = WH_ERR_INVALID;
        goto err_rdma;
    }
    s->tcp_d = start_daemon(s, &s->tcp_l, -1, (const struct sockaddr *)&sin);
    if (!s->tcp_d) {
        wh_error(MOD, "cannot listen on %s:%u (is the port in use?)", cfg->listen_host,
                 (unsigned)cfg->listen_port);
        st = WH_ERR_IO;
        goto err_rdma;
    }

    if (!cfg->unix_path || *cfg->unix_path) {
        wh_sbuf_t p;
        wh_sbuf_init(&p);
        if (cfg->unix_path)
            wh_sbuf_puts(&p, cfg->unix_path);
        else
            wh_sbuf_printf(&p, "%s/wharfd.sock", cfg->data_dir ? cfg->data_dir : ".");
        s->unix_path = wh_sbuf_steal(&p);
        s->unix_fd = s->unix_path ? unix_listen(s->unix_path) : -1;
        if (s->unix_fd < 0) {
            st = WH_ERR_IO;
            goto err_tcp;
        }
        s->unix_d = start_daemon(s, &s->unix_l, s->unix_fd, NULL);
        if (!s->unix_d) {
            wh_error(MOD, "cannot serve the unix socket %s", s->unix_path);
            st = WH_ERR_IO;
            goto err_unix;
        }
    }
    wh_info(MOD, "listening endpoint=http://%s:%u unix=%s region=%s data=%s", cfg->listen_host,
            (unsigned)cfg->listen_port, s->unix_path ? s->unix_path : "off", cfg->region,
            cfg->data_dir ? cfg->data_dir : "cluster");
    *out = s;
    return WH_OK;

err_unix:
    close(s->unix_fd);
    unlink(s->unix_path);
err_tcp:
    free(s->unix_path);
    MHD_stop_daemon(s->tcp_d);
err_rdma:
    srv_rdma_fini(s->rdma);
err_store:
    store_close(s->store);
err_free:
    free(s);
    return st;
}

void srv_stop(srv_t *s)
{
    if (!s)
        return;
    /* Stop accepting; in-flight requests go on. */
    MHD_socket tcp_ls = s->tcp_d ? MHD_quiesce_daemon(s->tcp_d) : MHD_INVALID_SOCKET;
    if (s->unix_d)
        MHD_quiesce_daemon(s->unix_d);
    uint64_t deadline = wh_now_ns() + (uint64_t)s->cfg.shutdown_grace_s * 1000000000ULL;
    int64_t n;
    while ((n = atomic_load(&s->metrics.inflight)) > 0 && wh_now_ns() < deadline) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (n > 0)
        wh_warn(MOD, "stopping with requests still in flight count=%lld", (long long)n);
    if (s->unix_d)
        MHD_stop_daemon(s->unix_d);
    if (s->tcp_d)
        MHD_stop_daemon(s->tcp_d);
    if (tcp_ls != MHD_INVALID_SOCKET)
        close(tcp_ls);
    if (s->unix_fd >= 0)
        close(s->unix_fd);
    if (s->unix_path) {
        unlink(s->unix_path);
        free(s->unix_path);
    }
    srv_rdma_fini(s->rdma);
    store_close(s->store);
    wh_info(MOD, "stopped");
    free(s);
}
