/* SPDX-License-Identifier: Apache-2.0 */
/* Shared helpers of the metadata table's unit tests (and, through store/helpers.h, of the
 * store's): a temporary data directory and the metadata backend under test.
 *
 * The backend: SQLite in the data directory, or PostgreSQL when WHARF_TEST_PG_URL is set (ctest
 * runs every meta and store test a second time that way, under tests/lib/pgserver.py, which
 * starts a private server). Each data directory then gets a database of its own, named after
 * it, so a test that reopens a directory reopens its database too. */
#ifndef WH_TEST_META_HELPERS_H
#define WH_TEST_META_HELPERS_H

#include "check.h"
#include "meta/meta.h"

#include <libpq-fe.h>

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static inline int th_rm_cb(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* mkdtemp under /tmp; the caller removes it with th_rmdir. */
static inline char *th_mkdtemp(void)
{
    static char buf[64];
    snprintf(buf, sizeof buf, "/tmp/wh-store-test-XXXXXX");
    char *d = mkdtemp(buf);
    if (!d) {
        perror("mkdtemp");
        exit(2);
    }
    return d;
}

static inline void th_rmdir(const char *dir)
{
    nftw(dir, th_rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

/* The metadata URL for dir: "" for SQLite, else a PostgreSQL database of its own (created). */
static inline const char *th_meta_url(const char *dir)
{
    static char url[512];
    const char *base = getenv("WHARF_TEST_PG_URL");
    if (!base || !*base)
        return "";
    const char *b = strrchr(dir, '/');
    b = b ? b + 1 : dir;
    char db[64] = "";
    size_t n = strlen(db);
    for (; *b && n + 1 < sizeof db; b++)
        db[n++] = (*b >= 'A' && *b <= 'Z')                                 ? (char)(*b - 'A' + 'a')
                  : ((*b >= 'a' && *b <= 'z') || (*b >= '0' && *b <= '9')) ? *b
                                                                           : '_';
    db[n] = '\0';
    const char *slash = strrchr(base, '/');
    snprintf(url, sizeof url, "%.*s/%s", (int)(slash - base), base, db);
    PGconn *c = PQconnectdb(base);
    if (PQstatus(c) != CONNECTION_OK) {
        fprintf(stderr, "cannot reach the test PostgreSQL at %s: %s", base, PQerrorMessage(c));
        exit(2);
    }
    char sql[128];
    snprintf(sql, sizeof sql, "CREATE DATABASE %s", db);
    PGresult *r = PQexec(c, sql);
    const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    if (PQresultStatus(r) != PGRES_COMMAND_OK && !(state && strcmp(state, "42P04") == 0)) {
        fprintf(stderr, "cannot create test database %s: %s", db, PQerrorMessage(c));
        exit(2);
    }
    PQclear(r);
    PQfinish(c);
    return url;
}

static inline wh_status_t th_meta_open(const char *dir, meta_t **out)
{
    const char *url = th_meta_url(dir);
    char path[512];
    snprintf(path, sizeof path, "%s/meta.db", dir);
    return url[0] ? meta_pg_open(url, out) : meta_sqlite_open(path, out);
}

#endif
