/* SPDX-License-Identifier: Apache-2.0 */
/* libpq at run time (pq_load.h). */
#define WH_PQ_NO_REDIRECT
#include "meta_pg/pq_load.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

wh_pq_t wh_pq;

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static wh_status_t g_st = WH_ERR_UNSUPPORTED;
static char g_err[512];

static void load(void)
{
    const char *file = getenv("WHARF_LIBPQ");
    if (!file || !*file)
        file = "libpq.so.5";
    void *h = dlopen(file, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(g_err, sizeof g_err,
                 "PostgreSQL metadata needs libpq, which could not be loaded (%s); install it "
                 "(Debian and Ubuntu: apt install libpq5), or use SQLite metadata (no --meta)",
                 dlerror());
        return;
    }
    static const struct {
        const char *name;
        size_t off;
    } syms[] = {
#define S(field, name) {#name, offsetof(wh_pq_t, field)}
        S(connectdbParams, PQconnectdbParams),
        S(finish, PQfinish),
        S(reset, PQreset),
        S(status, PQstatus),
        S(errorMessage, PQerrorMessage),
        S(serverVersion, PQserverVersion),
        S(exec, PQexec),
        S(execParams, PQexecParams),
        S(prepare, PQprepare),
        S(execPrepared, PQexecPrepared),
        S(resultStatus, PQresultStatus),
        S(resultErrorMessage, PQresultErrorMessage),
        S(resultErrorField, PQresultErrorField),
        S(ntuples, PQntuples),
        S(getvalue, PQgetvalue),
        S(getisnull, PQgetisnull),
        S(getlength, PQgetlength),
        S(cmdTuples, PQcmdTuples),
        S(clear, PQclear),
#undef S
    };
    wh_pq_t t;
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        void *p = dlsym(h, syms[i].name);
        if (!p) {
            snprintf(g_err, sizeof g_err, "%s has no %s: not a usable libpq", file, syms[i].name);
            dlclose(h);
            return;
        }
        *(void **)((char *)&t + syms[i].off) = p;
    }
    wh_pq = t; /* never unloaded: connections live until exit */
    g_st = WH_OK;
}

wh_status_t wh_pq_load(char *err, size_t errlen)
{
    pthread_once(&g_once, load);
    if (g_st != WH_OK && err && errlen)
        snprintf(err, errlen, "%s", g_err);
    return g_st;
}
