/* SPDX-License-Identifier: Apache-2.0 */
/* PostgreSQL metadata backend: the key service's master keys (kms_keys, schema step 13), one
 * row per key with an opaque document (ident/kms.c); a change replaces the document only while
 * it is still the one its writer read, so two gateways rotating at once never lose a version. */
#include "meta_pg/meta_pg_int.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *id, *old, *doc;
    meta_policy_t *arr;
    size_t n;
} pg_kms_arg_t;

static wh_status_t tx_kms_put(void *conn, void *arg)
{
    pg_kms_arg_t *a = arg;
    pg_params_t p = {0};
    pp_text(&p, a->id);
    pp_text(&p, a->doc);
    if (a->old)
        pp_text(&p, a->old);
    PGresult *r;
    wh_status_t st = pg_exec(conn,
                             a->old ? "UPDATE kms_keys SET doc = $2 WHERE key_id = $1 AND doc = $3"
                                    : "INSERT INTO kms_keys(key_id, doc) VALUES($1, $2)",
                             &p, &r, "kms key write");
    if (st != WH_OK)
        return st;
    if (strcmp(PQcmdTuples(r), "0") == 0)
        st = WH_ERR_NOT_FOUND;
    PQclear(r);
    return st;
}

wh_status_t pg_kms_key_put(meta_t *m, const char *id, const char *old, const char *doc)
{
    pg_kms_arg_t a = {id, old, doc, NULL, 0};
    return pg_write(PGM(m), tx_kms_put, &a);
}

static wh_status_t rd_kms_rows(void *conn, void *arg)
{
    pg_kms_arg_t *a = arg;
    pg_params_t p = {0};
    if (a->id)
        pp_text(&p, a->id);
    PGresult *r;
    wh_status_t st = pg_exec(conn,
                             a->id ? "SELECT key_id, doc FROM kms_keys WHERE key_id = $1"
                                   : "SELECT key_id, doc FROM kms_keys ORDER BY key_id",
                             &p, &r, "kms key read");
    if (st != WH_OK)
        return st;
    int n = PQntuples(r);
    meta_policies_free(a->arr, a->n);
    a->n = 0;
    a->arr = calloc(n ? (size_t)n : 1, sizeof *a->arr);
    if (!a->arr)
        st = WH_ERR_NOMEM;
    for (int i = 0; st == WH_OK && i < n; i++) {
        pg_copy(r, i, 0, a->arr[i].name, sizeof a->arr[i].name);
        if (!(a->arr[i].doc = pg_dup(r, i, 1)))
            st = WH_ERR_NOMEM;
        else
            a->n++;
    }
    PQclear(r);
    return st;
}

wh_status_t pg_kms_key_get(meta_t *m, const char *id, char **doc)
{
    *doc = NULL;
    pg_kms_arg_t a = {id, NULL, NULL, NULL, 0};
    wh_status_t st = pg_read(PGM(m), rd_kms_rows, &a);
    if (st == WH_OK && a.n == 0)
        st = WH_ERR_NOT_FOUND;
    if (st == WH_OK) {
        *doc = a.arr[0].doc;
        a.arr[0].doc = NULL;
    }
    meta_policies_free(a.arr, a.n);
    return st;
}

wh_status_t pg_kms_key_list(meta_t *m, meta_policy_t **out, size_t *n)
{
    pg_kms_arg_t a = {NULL, NULL, NULL, NULL, 0};
    wh_status_t st = pg_read(PGM(m), rd_kms_rows, &a);
    if (st != WH_OK) {
        meta_policies_free(a.arr, a.n);
        return st;
    }
    *out = a.arr;
    *n = a.n;
    return WH_OK;
}
