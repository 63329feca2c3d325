/* SPDX-License-Identifier: Apache-2.0 */
/* Replies: each request gets exactly one, with the common headers; S3 errors as the XML error
 * document, or bodiless with the code in x-amz-error-code where S3 sends no body. */
#include "front/http_int.h"
#include "base/log.h"
#include "s3/xml.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MOD "http"

bool front_resp_header(struct MHD_Response *resp, const char *name, const char *value)
{
    /* libmicrohttpd refuses an empty value, but S3 keeps empty x-amz-meta-* values and sends
     * them back: a lone space is a field value of only optional whitespace, which every HTTP
     * parser reads as "". */
    if (!*value)
        value = " ";
    if (MHD_add_response_header(resp, name, value) != MHD_YES) {
        wh_warn(MOD, "cannot add response header name=%s", name);
        return false;
    }
    return true;
}

struct MHD_Response *front_resp_buffer(void *data, size_t len)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, data, MHD_RESPMEM_MUST_FREE);
    if (!resp)
        free(data);
    return resp;
}

struct MHD_Response *front_resp_empty(void)
{
    return MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
}

/* The recent errors ring (recent.h): what the log's request line has, and the code. */
static void recent_add(const front_req_t *r, int status)
{
    front_recent_err_t e;
    memset(&e, 0, sizeof e);
    e.t = time(NULL);
    e.status = status;
    snprintf(e.id, sizeof e.id, "%s", r->id);
    snprintf(e.method, sizeof e.method, "%s", r->method ? r->method : "-");
    snprintf(e.api, sizeof e.api, "%s", front_api_name(r->route.api));
    snprintf(e.code, sizeof e.code, "%s", r->err_code ? r->err_code : "");
    snprintf(e.path, sizeof e.path, "%s", r->path ? r->path : "-");
    snprintf(e.msg, sizeof e.msg, "%s", r->err_msg ? r->err_msg : "");
    snprintf(e.peer, sizeof e.peer, "%s", r->peer.is_unix ? "unix" : r->peer.addr);
    front_recent_add(&r->srv->recent, &e);
}

void front_reply(front_req_t *r, int status, struct MHD_Response *resp)
{
    if (r->responded) {
        if (resp)
            MHD_destroy_response(resp);
        return;
    }
    r->responded = true;
    if (!resp) {
        resp = front_resp_empty();
        status = 500;
        if (!resp) {
            r->status = 500;
            front_metrics_count(&r->srv->metrics, r->route.api, 500);
            return; /* MHD closes the connection */
        }
    }
    r->status = status;
    front_metrics_count(&r->srv->metrics, r->route.api, status);
    if (status >= 400)
        recent_add(r, status);
    front_resp_header(resp, "x-amz-request-id", r->id);
    front_resp_header(resp, "x-amz-id-2", r->id);
    front_resp_header(resp, MHD_HTTP_HEADER_SERVER, FRONT_SERVER_HEADER);
    if (r->in_job || r->drain) {
        /* On a handler thread, the connection suspended: libmicrohttpd takes responses from
         * its own thread only, so this one is queued when the connection resumes. Or a
         * refusal before a small body: the body is read and dropped first (see drain). */
        if (r->drain)
            r->body = FRONT_BODY_DISCARD;
        r->pending = resp;
        r->pending_status = status;
        return;
    }
    if (MHD_queue_response(r->conn, (unsigned)status, resp) != MHD_YES)
        wh_warn(MOD, "cannot queue response id=%s status=%d", r->id, status);
    MHD_destroy_response(resp);
}

void front_reply_empty(front_req_t *r, int status)
{
    front_reply(r, status, front_resp_empty());
}

void front_reply_xml(front_req_t *r, int status, wh_sbuf_t *xml)
{
    if (xml->oom) {
        wh_sbuf_free(xml);
        front_reply_err(r, S3_ERR_INTERNAL, "out of memory building the reply");
        return;
    }
    size_t len = xml->len;
    struct MHD_Response *resp = front_resp_buffer(wh_sbuf_steal(xml), len);
    if (resp)
        front_resp_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/xml");
    if (!r->head)
        r->tx_body = len;
    front_reply(r, status, resp);
}

void front_reply_err_raw(front_req_t *r, int status, const char *code, const char *msg,
                         struct MHD_Response *resp)
{
    if (r->responded) {
        if (resp)
            MHD_destroy_response(resp);
        return;
    }
    wh_debug(MOD, "error reply id=%s status=%d code=%s message=%s", r->id, status, code, msg);
    r->err_code = code;
    r->err_msg = msg;
    if (r->head || r->token_req || status == 304) {
        /* No body: HEAD replies have none, and a token request is never answered with one. */
        if (!resp)
            resp = front_resp_empty();
        if (resp && status != 304) {
            front_resp_header(resp, "x-amz-error-code", code);
            /* Header values must not carry CR/LF; messages are ours, but keys can be echoed. */
            char clean[512];
            size_t i = 0;
            for (; msg[i] && i < sizeof clean - 1; i++)
                clean[i] = (msg[i] == '\r' || msg[i] == '\n') ? ' ' : msg[i];
            clean[i] = '\0';
            front_resp_header(resp, "x-amz-error-message", clean);
        }
        front_reply(r, status, resp);
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
    front_reply_xml(r, status, &b);
}

void front_reply_err(front_req_t *r, s3_err_t e, const char *msg)
{
    front_reply_err_raw(r, s3_err_http_status(e), s3_err_code(e),
                        msg && *msg ? msg : s3_err_message(e), NULL);
}
