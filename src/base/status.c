#include "base/status.h"

#include <errno.h>

const char *wh_status_str(wh_status_t st)
{
    switch (st) {
#define WH_STATUS_CASE_(n, v, t)                                                           \
    case n:                                                                                \
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
    default:
        return WH_ERR_IO;
    }
}
