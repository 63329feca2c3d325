/* SPDX-License-Identifier: Apache-2.0 */
#include "base/status.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

const char *wh_status_str(wh_status_t st)
{
    switch (st) {
#define WH_STATUS_CASE_(n, v, t)                                                                   \
    case n:                                                                                        \
        return t;
        WH_STATUS_LIST(WH_STATUS_CASE_)
#undef WH_STATUS_CASE_
    }
    return "unknown status";
}

wh_status_t wh_status_from_errno(int err)
{
    switch (err) {
    case 0:
        return WH_OK;
    case ENOMEM:
        return WH_ERR_NOMEM;
    case ENOENT:
        return WH_ERR_NOT_FOUND;
    case EEXIST:
        return WH_ERR_EXISTS;
    case EINVAL:
        return WH_ERR_INVALID;
    case ETIMEDOUT:
        return WH_ERR_TIMEOUT;
    case ENOTEMPTY:
        return WH_ERR_NOT_EMPTY;
    case EAGAIN:
        return WH_ERR_BUSY;
    case ECANCELED:
        return WH_ERR_CANCELED;
    case ENOSYS:
    case EOPNOTSUPP:
        return WH_ERR_UNSUPPORTED;
    case EFBIG:
        return WH_ERR_TOO_LARGE;
    case ENOSPC:
    case EDQUOT:
        return WH_ERR_NO_SPACE;
    default:
        return WH_ERR_IO;
    }
}

wh_status_t wh_errf(wh_status_t st, char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return st;
}
