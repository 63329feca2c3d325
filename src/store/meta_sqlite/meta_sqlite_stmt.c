/* SPDX-License-Identifier: Apache-2.0 */
/* The SQLite backend's statement helpers (meta_sqlite_int.h): errors mapped to statuses and
 * logged once, binding and reading columns, one-statement runs and existence checks. */
#include "meta_sqlite/meta_sqlite_int.h"
#include "base/log.h"
#include "base/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

wh_status_t sq_fail(sq_conn_t *c, int rc, const char *what)
{
    int sys = sqlite3_system_errno(c->db);
    wh_error("store", "sqlite %s failed: %s (rc %d)", what, sqlite3_errmsg(c->db), rc);
    switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return WH_ERR_BUSY;
    case SQLITE_NOMEM:
        return WH_ERR_NOMEM;
    case SQLITE_FULL:
        return WH_ERR_NO_SPACE;
    case SQLITE_IOERR:
        /* Growing the WAL or its index on a full disk fails as an I/O error with ENOSPC. */
        return sys == ENOSPC || sys == EDQUOT ? WH_ERR_NO_SPACE : WH_ERR_IO;
    default:
        return WH_ERR_INTERNAL;
    }
}

void sq_done(sqlite3_stmt *s)
{
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
}

void sq_bind_text(sqlite3_stmt *s, int i, const char *v)
{
    sqlite3_bind_text(s, i, v ? v : "", -1, SQLITE_STATIC);
}

void sq_bind_text_or_null(sqlite3_stmt *s, int i, const char *v)
{
    if (v)
        sqlite3_bind_text(s, i, v, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(s, i);
}

/* Keys are always bound as BLOBs: a TEXT key would sort apart from BLOB keys. */
void sq_bind_key(sqlite3_stmt *s, int i, const void *p, size_t n)
{
    sqlite3_bind_blob(s, i, n ? p : "", (int)n, SQLITE_STATIC);
}

void sq_col_copy(sqlite3_stmt *s, int i, char *dst, size_t cap)
{
    const unsigned char *v = sqlite3_column_text(s, i);
    size_t n = v ? (size_t)sqlite3_column_bytes(s, i) : 0;
    if (n >= cap)
        n = cap - 1;
    if (n && v) /* v NULL: no text, nothing to copy (said for the analyzer) */
        memcpy(dst, v, n);
    dst[n] = '\0';
}

char *sq_col_dup(sqlite3_stmt *s, int i)
{
    if (sqlite3_column_type(s, i) == SQLITE_NULL)
        return NULL;
    const void *v = sqlite3_column_blob(s, i);
    size_t n = (size_t)sqlite3_column_bytes(s, i);
    char *d = malloc(n + 1);
    if (!d)
        return NULL;
    if (n)
        memcpy(d, v, n);
    d[n] = '\0';
    return d;
}

/* Runs a statement that returns no rows. */
wh_status_t sq_exec_stmt(sq_conn_t *c, sqlite3_stmt *s, const char *what)
{
    int rc = sqlite3_step(s);
    wh_status_t st = (rc == SQLITE_DONE || rc == SQLITE_ROW) ? WH_OK : sq_fail(c, rc, what);
    sq_done(s);
    return st;
}

/* WH_OK if a row exists for a one-parameter-text query. */
wh_status_t sq_row_exists(sq_conn_t *c, int which, const char *arg, const char *what)
{
    sqlite3_stmt *s = c->stmt[which];
    sq_bind_text(s, 1, arg);
    int rc = sqlite3_step(s);
    wh_status_t st = rc == SQLITE_ROW    ? WH_OK
                     : rc == SQLITE_DONE ? WH_ERR_NOT_FOUND
                                         : sq_fail(c, rc, what);
    sq_done(s);
    return st;
}

wh_status_t sq_bucket_check(sq_conn_t *c, const char *bucket)
{
    return sq_row_exists(c, S_BUCKET_GET, bucket, "bucket lookup");
}
