/* SPDX-License-Identifier: Apache-2.0 */
/* libwharf: one SigV4-signed S3 request on one reused curl handle.
 *
 * Bodies are streamed straight from the caller's memory (CURLOPT_READFUNCTION) and reply bodies
 * land straight in the caller's buffer (CURLOPT_WRITEFUNCTION), with no staging copy. Requests
 * go over cfg->unix_socket when set (the server identifies the peer there, which ofi+shm
 * needs); the Host header stays the endpoint's host:port either way and is what is signed. */
#include "client/client_int.h"

#include "base/log.h"
#include "auth/sigv4.h"
#include "s3/xml.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define MOD "client"
#define ERR_BODY_MAX (64u << 10)

void wc_req_header(wc_req_t *req, const char *name, const char *value)
{
    if (req->nhdr < WC_MAX_HDRS) {
        req->hdr_names[req->nhdr] = name;
        req->hdr_values[req->nhdr] = value;
        req->nhdr++;
    }
}

static void resp_reset(wc_resp_t *r, const wc_req_t *req)
{
    unsigned retries = r->retries;
    wh_sbuf_t eb = r->err_body;
    memset(r, 0, sizeof *r);
    r->retries = retries;
    r->err_body = eb;
    wh_sbuf_reset(&r->err_body);
    r->_req = req;
}

void wc_resp_fini(wc_resp_t *resp)
{
    if (resp)
        wh_sbuf_free(&resp->err_body);
}

/* ---- curl callbacks --------------------------------------------------------------------- */

static size_t header_cb(char *buf, size_t size, size_t nitems, void *arg)
{
    size_t n = size * nitems;
    wc_reply_header(arg, buf, n);
    return n;
}

static size_t write_cb(char *buf, size_t size, size_t nmemb, void *arg)
{
    wc_resp_t *r = arg;
    const wc_req_t *req = r->_req;
    size_t n = size * nmemb;
    if (r->status < 200 || r->status >= 300) {
        if (r->err_body.len < ERR_BODY_MAX)
            wh_sbuf_append(&r->err_body, buf, WH_MIN(n, ERR_BODY_MAX - r->err_body.len));
        return n;
    }
    if (req->dst) {
        if (n > req->dst_cap - r->body_len) {
            r->overflow = true;
            return 0; /* CURLE_WRITE_ERROR: never write past the caller's buffer */
        }
        memcpy((char *)req->dst + r->body_len, buf, n);
    } else if (req->body_out) {
        wh_sbuf_append(req->body_out, buf, n);
    }
    r->body_len += n;
    return n;
}

static size_t read_cb(char *buf, size_t size, size_t nitems, void *arg)
{
    wc_resp_t *r = arg;
    const wc_req_t *req = r->_req;
    size_t want = size * nitems;
    uint64_t left = req->body_len - r->_read_off;
    size_t n = left < want ? (size_t)left : want;
    if (n) {
        memcpy(buf, (const char *)req->body + r->_read_off, n);
        r->_read_off += n;
    }
    return n;
}

static int seek_cb(void *arg, curl_off_t off, int origin)
{
    wc_resp_t *r = arg;
    if (origin != SEEK_SET || off < 0 || (uint64_t)off > r->_req->body_len)
        return CURL_SEEKFUNC_FAIL;
    r->_read_off = (uint64_t)off;
    return CURL_SEEKFUNC_OK;
}

/* ---- error body ------------------------------------------------------------------------- */

static void err_walk_cb(void *arg, const char *path, const char *text, size_t len)
{
    wc_resp_t *r = arg;
    if (!strcmp(path, "Error/Code"))
        wc_trim_copy(r->s3_code, sizeof r->s3_code, text, len);
    else if (!strcmp(path, "Error/Message"))
        wc_trim_copy(r->s3_message, sizeof r->s3_message, text, len);
}

static void parse_error_body(wc_resp_t *r)
{
    if (r->err_body.len && r->err_body.data)
        (void)s3_xml_walk(r->err_body.data, r->err_body.len, err_walk_cb, r);
    if (!r->s3_code[0]) {
        const char *code = "";
        switch (r->status) {
        case 400:
            code = "BadRequest";
            break;
        case 403:
            code = "Forbidden";
            break;
        case 404:
            code = "NotFound";
            break;
        case 409:
            code = "Conflict";
            break;
        case 412:
            code = "PreconditionFailed";
            break;
        case 416:
            code = "InvalidRange";
            break;
        case 501:
            code = "NotImplemented";
            break;
        case 503:
            code = "ServiceUnavailable";
            break;
        default:
            code = "HttpError";
            break;
        }
        snprintf(r->s3_code, sizeof r->s3_code, "%s", code);
    }
}

/* ---- the request ------------------------------------------------------------------------ */

static void build_uri(const wc_req_t *req, wh_sbuf_t *uri)
{
    wh_sbuf_puts(uri, "/");
    if (req->bucket) {
        s3_uri_encode(req->bucket, strlen(req->bucket), 1, uri);
        if (req->key) {
            wh_sbuf_puts(uri, "/");
            s3_uri_encode(req->key, strlen(req->key), 0, uri);
        }
    }
}

/* Fails the transfer once no byte has moved either way for the stall bound. curl calls this
 * at least once a second while a transfer waits, and on every move. (curl's own low-speed
 * check averages over its last 5 s: a stall would be noticed up to 6 s late.) */
static int progress_cb(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
    wc_resp_t *r = arg;
    uint64_t moved = (uint64_t)dlnow + (uint64_t)ulnow;
    double now = wh_now_s();
    if (moved != r->_moved) {
        r->_moved = moved;
        r->_moved_at = now;
        return 0;
    }
    if ((now - r->_moved_at) * 1000.0 < (double)r->_stall_ms)
        return 0;
    r->_stalled = true;
    return 1;
}

static bool retryable(CURLcode rc)
{
    switch (rc) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
        return true;
    default:
        return false;
    }
}

static wh_status_t http_once(wharf_client_t *c, CURL *h, const wc_req_t *req, wc_resp_t *resp,
                             const wc_endpoint_t *ep, const char *url, const char *uri)
{
    wh_status_t st = WH_OK;
    struct curl_slist *hl = NULL, *tmp;
    char date[17], auth[1024];
    const char *payload = req->payload_hash
                              ? req->payload_hash
                              : (req->has_body ? AUTH_UNSIGNED_PAYLOAD : AUTH_EMPTY_SHA256);
    time_t now = time(NULL);
    wh_amz_date(now, date);

    const char *names[WC_MAX_HDRS + 3], *values[WC_MAX_HDRS + 3];
    size_t nh = 0;
    names[nh] = "host", values[nh++] = ep->host;
    names[nh] = "x-amz-content-sha256", values[nh++] = payload;
    names[nh] = "x-amz-date", values[nh++] = date;
    for (size_t i = 0; i < req->nhdr; i++)
        names[nh] = req->hdr_names[i], values[nh++] = req->hdr_values[i];

    auth_sign_input_t in = {
        .method = req->method,
        .canonical_uri = uri,
        .query = req->query,
        .header_names = names,
        .header_values = values,
        .n_headers = nh,
        .payload_hash = payload,
        .access_key = c->access_key,
        .secret_key = c->secret_key,
        .region = c->region,
        .when = now,
    };
    if (auth_sigv4_sign(&in, auth, sizeof auth) != 0) {
        snprintf(resp->curl_err, sizeof resp->curl_err, "signing the request failed");
        return WH_ERR_INTERNAL;
    }

    wh_sbuf_t line;
    wh_sbuf_init(&line);
    for (size_t i = 0; i < nh; i++) {
        wh_sbuf_reset(&line);
        wh_sbuf_printf(&line, "%s: %s", names[i], values[i]);
        if (line.oom || !(tmp = curl_slist_append(hl, line.data)))
            goto err_nomem;
        hl = tmp;
    }
    wh_sbuf_reset(&line);
    wh_sbuf_printf(&line, "Authorization: %s", auth);
    if (line.oom || !(tmp = curl_slist_append(hl, line.data)))
        goto err_nomem;
    hl = tmp;
    if (!(tmp = curl_slist_append(hl, "Expect:")))
        goto err_nomem;
    hl = tmp;
    bool own_ct = false; /* the request names its own type (an RDMA batch's list) */
    for (size_t i = 0; i < req->nhdr; i++)
        own_ct = own_ct || !strcmp(req->hdr_names[i], "content-type");
    if (!strcmp(req->method, "POST") && !own_ct) {
        /* An XML body says so. A POST without one (CreateMultipartUpload) sends no type at
         * all: the server keeps an initiation's Content-Type as the object's, so a multipart
         * object gets the same default as a single PUT (curl's own default, a form type, is
         * removed by the empty header). */
        const char *ct = req->body_len ? "Content-Type: application/xml" : "Content-Type:";
        if (!(tmp = curl_slist_append(hl, ct)))
            goto err_nomem;
        hl = tmp;
    }
    if (!(tmp = curl_slist_append(hl, "Accept:")))
        goto err_nomem;
    hl = tmp;

    curl_easy_reset(h); /* keeps the live connection */
    curl_easy_setopt(h, CURLOPT_URL, url);
    if (c->unix_socket)
        curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, c->unix_socket);
    curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
    if (c->ca_bundle)
        curl_easy_setopt(h, CURLOPT_CAINFO, c->ca_bundle);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_PATH_AS_IS, 1L);
    curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
    /* No byte either way for stall_ms fails the request (progress_cb); a whole-request
     * bound only when the caller set one. */
    if (c->timeout_ms)
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)c->timeout_ms);
    resp->_moved = 0;
    resp->_moved_at = wh_now_s();
    resp->_stall_ms = c->stall_ms;
    resp->_stalled = false;
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, progress_cb);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, resp);
    unsigned conn_ms = WH_MIN(c->stall_ms, WC_CONNECT_MS);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
                     (long)(c->timeout_ms ? WH_MIN(c->timeout_ms, conn_ms) : conn_ms));
    curl_easy_setopt(h, CURLOPT_BUFFERSIZE, 512L * 1024);
    curl_easy_setopt(h, CURLOPT_UPLOAD_BUFFERSIZE, 512L * 1024);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, header_cb);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, resp);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, write_cb);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, resp);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, resp->curl_err);
    if (!strcmp(req->method, "HEAD")) {
        curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    } else if (!strcmp(req->method, "PUT")) {
        curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)req->body_len);
        curl_easy_setopt(h, CURLOPT_READFUNCTION, read_cb);
        curl_easy_setopt(h, CURLOPT_READDATA, resp);
        curl_easy_setopt(h, CURLOPT_SEEKFUNCTION, seek_cb);
        curl_easy_setopt(h, CURLOPT_SEEKDATA, resp);
    } else if (!strcmp(req->method, "POST")) {
        curl_easy_setopt(h, CURLOPT_POST, 1L);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
        curl_easy_setopt(h, CURLOPT_READFUNCTION, read_cb);
        curl_easy_setopt(h, CURLOPT_READDATA, resp);
        curl_easy_setopt(h, CURLOPT_SEEKFUNCTION, seek_cb);
        curl_easy_setopt(h, CURLOPT_SEEKDATA, resp);
    } else if (strcmp(req->method, "GET") != 0) {
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, req->method);
    }

    resp->curl_rc = curl_easy_perform(h);
    if (resp->curl_rc != CURLE_OK) {
        if (resp->overflow) {
            snprintf(resp->curl_err, sizeof resp->curl_err,
                     "the server sent more than the %llu bytes asked for",
                     (unsigned long long)req->dst_cap);
            st = WH_ERR_PROTOCOL;
        } else if (resp->curl_rc == CURLE_ABORTED_BY_CALLBACK && resp->_stalled) {
            snprintf(resp->curl_err, sizeof resp->curl_err, "no byte moved for %u ms", c->stall_ms);
            st = WH_ERR_TIMEOUT;
        } else if (resp->curl_rc == CURLE_OPERATION_TIMEDOUT) {
            st = WH_ERR_TIMEOUT;
        } else {
            st = WH_ERR_TRANSPORT;
        }
        if (!resp->curl_err[0])
            snprintf(resp->curl_err, sizeof resp->curl_err, "%s",
                     curl_easy_strerror(resp->curl_rc));
    } else {
        long code = 0;
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
        resp->status = code;
        if (code < 200 || code >= 300)
            parse_error_body(resp);
    }
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
    curl_slist_free_all(hl);
    wh_sbuf_free(&line);
    return st;

err_nomem:
    curl_slist_free_all(hl);
    wh_sbuf_free(&line);
    snprintf(resp->curl_err, sizeof resp->curl_err, "out of memory building the request");
    return WH_ERR_NOMEM;
}

/* Whether req may be sent again after a failure that came once it was (maybe) sent: the
 * first attempt may have been carried out, and only a request whose repeat has the same
 * effect and answer may go again. GET and HEAD; a PUT of an object or of a part (the same
 * bytes under the same key or part number), unless conditional (a repeat of an If-None-Match
 * PUT that did land is refused with 412). Not DELETE (on a versioned bucket a repeat adds a
 * second delete marker), not POST (a repeated CompleteMultipartUpload finds no upload), not a
 * bucket's PUT. A refused connection sent nothing: every request goes again. */
static bool idempotent(const wc_req_t *req)
{
    if (!strcmp(req->method, "GET") || !strcmp(req->method, "HEAD"))
        return true;
    if (strcmp(req->method, "PUT") != 0 || !req->key)
        return false;
    for (size_t i = 0; i < req->nhdr; i++)
        if (!strcasecmp(req->hdr_names[i], "if-none-match") ||
            !strcasecmp(req->hdr_names[i], "if-match") ||
            !strcasecmp(req->hdr_names[i], "x-amz-write-offset-bytes"))
            return false;
    return true;
}

static bool nothing_sent(CURLcode rc)
{
    return rc == CURLE_COULDNT_CONNECT;
}

/* The URL of req on ep. */
static bool build_url(const wharf_client_t *c, const wc_endpoint_t *ep, const wc_req_t *req,
                      const wh_sbuf_t *uri, wh_sbuf_t *url)
{
    wh_sbuf_reset(url);
    /* wharfd's Unix socket is plain HTTP whatever the TCP port serves: the kernel proves its
     * peer (SO_PEERCRED), and no byte leaves the host. */
    if (c->unix_socket && !strncmp(ep->url, "https://", 8))
        wh_sbuf_printf(url, "http://%s", ep->host);
    else
        wh_sbuf_puts(url, ep->url);
    wh_sbuf_printf(url, "%s%s%s", uri->data ? uri->data : "/", req->query ? "?" : "",
                   req->query ? req->query : "");
    return !url->oom;
}

wh_status_t wc_http_do(wharf_client_t *c, wc_conn_t *conn, const wc_req_t *req, wc_resp_t *resp)
{
    memset(resp, 0, sizeof *resp);
    wh_sbuf_init(&resp->err_body);
    if (!conn || !conn->easy) {
        snprintf(resp->curl_err, sizeof resp->curl_err, "no libcurl handle (out of memory)");
        return WH_ERR_NOMEM;
    }
    wh_sbuf_t uri, url;
    wh_sbuf_init(&uri);
    wh_sbuf_init(&url);
    build_uri(req, &uri);
    if (uri.oom) {
        wh_sbuf_free(&uri);
        snprintf(resp->curl_err, sizeof resp->curl_err, "out of memory building the URL");
        return WH_ERR_NOMEM;
    }
    wh_status_t st = WH_OK;
    size_t body_out_len = req->body_out ? req->body_out->len : 0;
    const uint64_t all = c->neps >= 64 ? UINT64_MAX : (1ull << c->neps) - 1;
    uint64_t tried = 0, failed = 0;
    unsigned backoffs = 0;
    for (;;) {
        unsigned i = wc_endpoint_pick(c, tried);
        const wc_endpoint_t *ep = &c->eps[i];
        resp_reset(resp, req);
        resp->ep = i;
        if (req->body_out) { /* a retry starts the body over */
            req->body_out->len = body_out_len;
            if (req->body_out->data)
                req->body_out->data[body_out_len] = '\0';
        }
        if (!build_url(c, ep, req, &uri, &url)) {
            snprintf(resp->curl_err, sizeof resp->curl_err, "out of memory building the URL");
            st = WH_ERR_NOMEM;
            break;
        }
        st = http_once(c, conn->easy, req, resp, ep, url.data, uri.data);
        if (st == WH_OK) {
            wc_endpoint_ok(c, i);
            break;
        }
        if (!retryable(resp->curl_rc))
            break;
        wc_endpoint_failed(c, i);
        failed |= 1ull << i;
        if (!nothing_sent(resp->curl_rc) && !idempotent(req))
            break;
        /* Another gateway is tried at once; once every one has failed this request, the round
         * starts over after a backoff, max_retries times. */
        tried |= 1ull << i;
        if ((tried & all) == all) {
            if (backoffs >= c->max_retries)
                break;
            usleep(50000u << WH_MIN(backoffs, 4u));
            backoffs++;
            tried = 0;
        }
        wh_debug(MOD, "retry method=%s uri=%s endpoint=%s err=\"%s\"", req->method, uri.data,
                 ep->url, resp->curl_err);
        resp->retries++;
        atomic_fetch_add(&c->st_retries, 1);
    }
    resp->eps_tried = (unsigned)__builtin_popcountll(failed);
    wh_sbuf_free(&uri);
    wh_sbuf_free(&url);
    return st;
}

/* ---- mapping and messages --------------------------------------------------------------- */

wh_status_t wc_http_status_map(const wc_resp_t *r)
{
    const char *code = r->s3_code;
    switch (r->status) {
    case 400:
        if (!strcmp(code, "BadDigest") || !strcmp(code, "XAmzContentSHA256Mismatch"))
            return WH_ERR_CHECKSUM;
        if (!strcmp(code, "EntityTooLarge"))
            return WH_ERR_TOO_LARGE;
        return WH_ERR_INVALID;
    case 401:
    case 403:
        return WH_ERR_AUTH;
    case 404:
        return WH_ERR_NOT_FOUND;
    case 405:
    case 501:
        return WH_ERR_UNSUPPORTED;
    case 409:
        if (!strcmp(code, "BucketNotEmpty"))
            return WH_ERR_NOT_EMPTY;
        return WH_ERR_EXISTS;
    case 411:
        return WH_ERR_INVALID;
    case 412:
        return WH_ERR_PRECONDITION;
    case 416:
        return WH_ERR_RANGE;
    case 503:
        return WH_ERR_BUSY;
    default:
        return WH_ERR_HTTP;
    }
}

static const char *hint_for(const wc_resp_t *r)
{
    const char *code = r->s3_code;
    if (r->status == 403) {
        if (!strcmp(code, "RequestTimeTooSkewed"))
            return "; fix this host's clock";
        return "; check the access key and secret key";
    }
    if (!strcmp(code, "NoSuchBucket"))
        return "; create the bucket first (wharf mb)";
    if (!strcmp(code, "NoSuchKey") || r->status == 404)
        return "; check the bucket and key";
    if (!strcmp(code, "BucketNotEmpty"))
        return "; delete its objects first";
    if (r->status == 503)
        return "; the server is busy, retry later";
    if (r->status >= 500)
        return "; see the server's log";
    return "";
}

void wc_http_describe(const wharf_client_t *c, const char *what, wh_status_t st, const wc_resp_t *r,
                      char *out, size_t outlen)
{
    if (r->status == 0 || r->curl_rc != CURLE_OK) {
        if (st == WH_ERR_TIMEOUT)
            snprintf(out, outlen,
                     "%s: %s timed out (%s); the bounds are stall_timeout_ms %u (no byte "
                     "moved) and timeout_ms %u (whole request, 0: none): check that wharfd "
                     "is alive, or raise the one that fired",
                     what, c->eps[r->ep].url, r->curl_err, c->stall_ms, c->timeout_ms);
        else if (st == WH_ERR_PROTOCOL || st == WH_ERR_NOMEM || st == WH_ERR_INTERNAL)
            snprintf(out, outlen, "%s: %s", what, r->curl_err);
        else if (r->eps_tried > 1)
            snprintf(out, outlen,
                     "%s: connection to %s failed (%s), and to %u of the %u gateways "
                     "listed; check that wharfd is running there",
                     what, c->eps[r->ep].url, r->curl_err, r->eps_tried, c->neps);
        else
            snprintf(out, outlen,
                     "%s: connection to %s%s%s failed (%s); check that wharfd "
                     "is running there",
                     what, c->eps[r->ep].url, c->unix_socket ? " via " : "",
                     c->unix_socket ? c->unix_socket : "", r->curl_err);
        return;
    }
    snprintf(out, outlen, "%s: %ld %s%s%s%s", what, r->status, r->s3_code,
             r->s3_message[0] ? ": " : "", r->s3_message, hint_for(r));
}
