/* Building a handler's answer (srv_out_t): an S3 error with its message, or a success with
 * its headers and body. srv_s3_send (s3api/s3api.c) turns it into the one reply. */
#include "s3ctl/s3ctl.h"

#include <inttypes.h>
#include <microhttpd.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- building an answer ----------------------------------------------------------------- */

int srv_err_raw(srv_out_t *o, int status, const char *code, const char *msg)
{
    o->status = status;
    o->code = code;
    snprintf(o->msg, sizeof o->msg, "%s", msg ? msg : "");
    return status;
}

int srv_err(srv_out_t *o, s3_err_t e, const char *msg)
{
    return srv_err_raw(o, s3_err_http_status(e), s3_err_code(e),
                       msg && *msg ? msg : s3_err_message(e));
}

int srv_errf(srv_out_t *o, s3_err_t e, const char *fmt, ...)
{
    char msg[sizeof o->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return srv_err(o, e, msg);
}

int srv_ok(srv_out_t *o, int status)
{
    o->status = status;
    o->code = NULL;
    return status;
}

int srv_ok_xml(srv_out_t *o, int status, wh_sbuf_t *xml)
{
    wh_sbuf_free(&o->xml);
    o->xml = *xml;
    wh_sbuf_init(xml);
    o->has_xml = true;
    return srv_ok(o, status);
}

int srv_ok_resp(srv_out_t *o, int status, struct MHD_Response *resp, uint64_t tx_body)
{
    if (o->resp)
        MHD_destroy_response(o->resp);
    o->resp = resp;
    o->tx_body = tx_body;
    if (!resp) /* could not be built: srv_reply answers 500 */
        return srv_err(o, S3_ERR_INTERNAL, "out of memory building the reply");
    return srv_ok(o, status);
}

void srv_out_header(srv_out_t *o, const char *name, const char *value)
{
    wh_sbuf_append(&o->hdrs, name, strlen(name) + 1);
    wh_sbuf_append(&o->hdrs, value, strlen(value) + 1);
}

void srv_out_header_u64(srv_out_t *o, const char *name, uint64_t v)
{
    char b[24];
    snprintf(b, sizeof b, "%" PRIu64, v);
    srv_out_header(o, name, b);
}
