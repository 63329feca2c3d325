/* SPDX-License-Identifier: Apache-2.0 */
/* Building a handler's answer (s3h_out_t): an S3 error with its message, or a success with
 * its headers and body. s3api_send (s3api/s3api.c) turns it into the one reply. */
#include "s3ctl/s3ctl.h"

#include <inttypes.h>
#include <microhttpd.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- building an answer ----------------------------------------------------------------- */

int s3h_err_raw(s3h_out_t *o, int status, const char *code, const char *msg)
{
    o->status = status;
    o->code = code;
    snprintf(o->msg, sizeof o->msg, "%s", msg ? msg : "");
    return status;
}

int s3h_err(s3h_out_t *o, s3_err_t e, const char *msg)
{
    return s3h_err_raw(o, s3_err_http_status(e), s3_err_code(e),
                       msg && *msg ? msg : s3_err_message(e));
}

int s3h_errf(s3h_out_t *o, s3_err_t e, const char *fmt, ...)
{
    char msg[sizeof o->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return s3h_err(o, e, msg);
}

int s3h_ok(s3h_out_t *o, int status)
{
    o->status = status;
    o->code = NULL;
    return status;
}

int s3h_ok_xml(s3h_out_t *o, int status, wh_sbuf_t *xml)
{
    wh_sbuf_free(&o->xml);
    o->xml = *xml;
    wh_sbuf_init(xml);
    o->has_xml = true;
    return s3h_ok(o, status);
}

int s3h_ok_resp(s3h_out_t *o, int status, struct MHD_Response *resp, uint64_t tx_body)
{
    if (o->resp)
        MHD_destroy_response(o->resp);
    o->resp = resp;
    o->tx_body = tx_body;
    if (!resp) /* could not be built: front_reply answers 500 */
        return s3h_err(o, S3_ERR_INTERNAL, "out of memory building the reply");
    return s3h_ok(o, status);
}

void s3h_out_header(s3h_out_t *o, const char *name, const char *value)
{
    wh_sbuf_append(&o->hdrs, name, strlen(name) + 1);
    wh_sbuf_append(&o->hdrs, value, strlen(value) + 1);
}

void s3h_out_header_u64(s3h_out_t *o, const char *name, uint64_t v)
{
    char b[24];
    snprintf(b, sizeof b, "%" PRIu64, v);
    s3h_out_header(o, name, b);
}
