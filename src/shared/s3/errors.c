/* SPDX-License-Identifier: Apache-2.0 */
#include "s3/errors.h"

#include <stdarg.h>
#include <stdio.h>

#include "base/status.h"

static const struct {
    const char *code;
    int http;
    const char *msg;
} g_errs[] = {
#define S3_ERR_ROW_(e, c, h, m) {c, h, m},
    S3_ERR_LIST(S3_ERR_ROW_)
#undef S3_ERR_ROW_
};

const char *s3_err_code(s3_err_t e)
{
    return (unsigned)e < S3_ERR__COUNT ? g_errs[e].code : "InternalError";
}

int s3_err_http_status(s3_err_t e)
{
    return (unsigned)e < S3_ERR__COUNT ? g_errs[e].http : 500;
}

const char *s3_err_message(s3_err_t e)
{
    return (unsigned)e < S3_ERR__COUNT ? g_errs[e].msg : "internal error";
}

s3_err_t s3_err_from_status(int wh_status)
{
    switch ((wh_status_t)wh_status) {
    case WH_ERR_NO_SPACE:
        return S3_ERR_INSUFFICIENT_STORAGE;
    case WH_ERR_UNAVAILABLE:
        return S3_ERR_SERVICE_UNAVAILABLE;
    case WH_ERR_NOMEM:
    case WH_ERR_BUSY:
        return S3_ERR_SLOW_DOWN;
    default:
        return S3_ERR_INTERNAL;
    }
}

s3_err_t s3_errf(s3_err_t e, char *msg, size_t msglen, const char *fmt, ...)
{
    if (msg && msglen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, msglen, fmt, ap);
        va_end(ap);
    }
    return e;
}
