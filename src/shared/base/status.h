/* SPDX-License-Identifier: Apache-2.0 */
/* wh_status_t: one status type for every internal layer. 0 is OK, negatives are errors.
 * The numbering is the same as the public wharf_status_t (include/wharf/wharf.h); the
 * client layer asserts that at compile time. The last two (UNAVAILABLE: a backend such as the
 * metadata database is unreachable; NO_SPACE: the storage is full) are server-side only and
 * reach a client as HTTP 503 and 507. */
#ifndef WH_BASE_STATUS_H
#define WH_BASE_STATUS_H

#include <stddef.h>

/* X(name, value, text) */
#define WH_STATUS_LIST(X)                                                                          \
    X(WH_OK, 0, "success")                                                                         \
    X(WH_ERR_INVALID, -1, "invalid argument")                                                      \
    X(WH_ERR_NOMEM, -2, "out of memory")                                                           \
    X(WH_ERR_IO, -3, "I/O error")                                                                  \
    X(WH_ERR_NOT_FOUND, -4, "not found")                                                           \
    X(WH_ERR_EXISTS, -5, "already exists")                                                         \
    X(WH_ERR_UNSUPPORTED, -6, "operation not supported")                                           \
    X(WH_ERR_DECLINED, -7, "RDMA transfer declined by the server")                                 \
    X(WH_ERR_AUTH, -8, "authentication failed")                                                    \
    X(WH_ERR_TIMEOUT, -9, "timed out")                                                             \
    X(WH_ERR_TRANSPORT, -10, "transport error")                                                    \
    X(WH_ERR_CHECKSUM, -11, "checksum mismatch")                                                   \
    X(WH_ERR_PROTOCOL, -12, "protocol error")                                                      \
    X(WH_ERR_HTTP, -13, "HTTP error from server")                                                  \
    X(WH_ERR_BUSY, -14, "resource busy")                                                           \
    X(WH_ERR_RANGE, -15, "range not satisfiable")                                                  \
    X(WH_ERR_TOO_LARGE, -16, "too large")                                                          \
    X(WH_ERR_NOT_EMPTY, -17, "not empty")                                                          \
    X(WH_ERR_CANCELED, -18, "canceled")                                                            \
    X(WH_ERR_PRECONDITION, -19, "precondition failed")                                             \
    X(WH_ERR_INTERNAL, -20, "internal error")                                                      \
    X(WH_ERR_UNAVAILABLE, -21, "service unavailable")                                              \
    X(WH_ERR_NO_SPACE, -22, "storage is full")

typedef enum {
/* NOLINTNEXTLINE(bugprone-macro-parentheses): n is an enumerator's name */
#define WH_STATUS_ENUM_(n, v, t) n = v,
    WH_STATUS_LIST(WH_STATUS_ENUM_)
#undef WH_STATUS_ENUM_
} wh_status_t;

const char *wh_status_str(wh_status_t st);

/* The one error-formatting helper: formats the message into err[errlen] (nothing when err is
 * NULL or errlen 0, and always NUL-terminated, truncated to fit) and returns st, so a failure
 * reads `return wh_errf(WH_ERR_INVALID, err, errlen, "bad %s", what);`. */
wh_status_t wh_errf(wh_status_t st, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Map an errno value to a status (called where the system call failed). */
wh_status_t wh_status_from_errno(int err);

#endif
