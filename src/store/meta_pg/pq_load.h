/* SPDX-License-Identifier: Apache-2.0 */
/* libpq, loaded at run time (dlopen) the first time a postgresql:// metadata URL is opened, so
 * that a single-node server (SQLite metadata) needs neither libpq nor the LDAP, SASL and
 * Kerberos libraries it pulls in. The PostgreSQL backend includes this header instead of
 * calling libpq directly: each PQ* name it uses is a pointer of the table below (libpq-fe.h
 * still gives the types, at build time only). */
#ifndef WH_META_PQ_LOAD_H
#define WH_META_PQ_LOAD_H

#include "base/status.h"

#include <libpq-fe.h>
#include <stddef.h>

typedef struct wh_pq {
    PGconn *(*connectdbParams)(const char *const *keys, const char *const *vals, int expand);
    void (*finish)(PGconn *c);
    void (*reset)(PGconn *c);
    ConnStatusType (*status)(const PGconn *c);
    char *(*errorMessage)(const PGconn *c);
    int (*serverVersion)(const PGconn *c);
    PGresult *(*exec)(PGconn *c, const char *sql);
    PGresult *(*execParams)(PGconn *c, const char *sql, int n, const Oid *types,
                            const char *const *vals, const int *lens, const int *fmts, int rfmt);
    PGresult *(*prepare)(PGconn *c, const char *name, const char *sql, int n, const Oid *types);
    PGresult *(*execPrepared)(PGconn *c, const char *name, int n, const char *const *vals,
                              const int *lens, const int *fmts, int rfmt);
    ExecStatusType (*resultStatus)(const PGresult *r);
    char *(*resultErrorMessage)(const PGresult *r);
    char *(*resultErrorField)(const PGresult *r, int code);
    int (*ntuples)(const PGresult *r);
    char *(*getvalue)(const PGresult *r, int row, int col);
    int (*getisnull)(const PGresult *r, int row, int col);
    int (*getlength)(const PGresult *r, int row, int col);
    char *(*cmdTuples)(PGresult *r);
    void (*clear)(PGresult *r);
} wh_pq_t;

extern wh_pq_t wh_pq;

/* Loads libpq once (WHARF_LIBPQ names the file, default libpq.so.5). WH_ERR_UNSUPPORTED when
 * it cannot, with *err saying why and what to install. Thread-safe; later calls are cheap. */
wh_status_t wh_pq_load(char *err, size_t errlen);

#ifndef WH_PQ_NO_REDIRECT
#define PQconnectdbParams wh_pq.connectdbParams
#define PQfinish wh_pq.finish
#define PQreset wh_pq.reset
#define PQstatus wh_pq.status
#define PQerrorMessage wh_pq.errorMessage
#define PQserverVersion wh_pq.serverVersion
#define PQexec wh_pq.exec
#define PQexecParams wh_pq.execParams
#define PQprepare wh_pq.prepare
#define PQexecPrepared wh_pq.execPrepared
#define PQresultStatus wh_pq.resultStatus
#define PQresultErrorMessage wh_pq.resultErrorMessage
#define PQresultErrorField wh_pq.resultErrorField
#define PQntuples wh_pq.ntuples
#define PQgetvalue wh_pq.getvalue
#define PQgetisnull wh_pq.getisnull
#define PQgetlength wh_pq.getlength
#define PQcmdTuples wh_pq.cmdTuples
#define PQclear wh_pq.clear
#endif

#endif
