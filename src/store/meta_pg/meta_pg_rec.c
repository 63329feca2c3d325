/* SPDX-License-Identifier: Apache-2.0 */
/* PostgreSQL metadata backend: IAM records (meta.h's rec_* slots), one table keyed by
 * (kind, key). See meta_pg_int.h. */
#include "meta_pg/meta_pg_int.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *kind, *key, *doc;
    bool create;
    char **out;
    meta_rec_t *arr;
    size_t n;
} pg_rec_arg_t;

static wh_status_t tx_rec_put(void *conn, void *arg)
{
    pg_rec_arg_t *a = arg;
    pg_params_t p = {0};
    pp_text(&p, a->kind);
    pp_text(&p, a->key);
    pp_text(&p, a->doc);
    return pg_exec(conn,
                   a->create ? "INSERT INTO iam_records(kind, key, doc) VALUES($1, $2, $3)"
                             : "INSERT INTO iam_records(kind, key, doc) VALUES($1, $2, $3)"
                               " ON CONFLICT (kind, key) DO UPDATE SET doc = EXCLUDED.doc",
                   &p, NULL, "iam record put"); /* a taken key: 23505, EXISTS */
}

wh_status_t pg_rec_put(meta_t *m, const char *kind, const char *key, const char *doc, bool create)
{
    pg_rec_arg_t a = {.kind = kind, .key = key, .doc = doc, .create = create};
    return pg_write(PGM(m), tx_rec_put, &a);
}

static wh_status_t tx_rec_delete(void *conn, void *arg)
{
    pg_rec_arg_t *a = arg;
    pg_params_t p = {0};
    pp_text(&p, a->kind);
    pp_text(&p, a->key);
    PGresult *r;
    wh_status_t st = pg_exec(conn, "DELETE FROM iam_records WHERE kind = $1 AND key = $2", &p, &r,
                             "iam record delete");
    if (st == WH_OK && strcmp(PQcmdTuples(r), "0") == 0)
        st = WH_ERR_NOT_FOUND;
    PQclear(r);
    return st;
}

wh_status_t pg_rec_delete(meta_t *m, const char *kind, const char *key)
{
    pg_rec_arg_t a = {.kind = kind, .key = key};
    return pg_write(PGM(m), tx_rec_delete, &a);
}

static wh_status_t rd_rec_get(void *conn, void *arg)
{
    pg_rec_arg_t *a = arg;
    pg_params_t p = {0};
    pp_text(&p, a->kind);
    pp_text(&p, a->key);
    PGresult *r;
    wh_status_t st = pg_exec(conn, "SELECT doc FROM iam_records WHERE kind = $1 AND key = $2", &p,
                             &r, "iam record lookup");
    if (st != WH_OK)
        return st;
    free(*a->out);
    *a->out = NULL;
    if (PQntuples(r) == 0)
        st = WH_ERR_NOT_FOUND;
    else if (!(*a->out = pg_dup(r, 0, 0)))
        st = WH_ERR_NOMEM;
    PQclear(r);
    return st;
}

wh_status_t pg_rec_get(meta_t *m, const char *kind, const char *key, char **doc)
{
    *doc = NULL;
    pg_rec_arg_t a = {.kind = kind, .key = key, .out = doc};
    return pg_read(PGM(m), rd_rec_get, &a);
}

static wh_status_t rd_rec_list(void *conn, void *arg)
{
    pg_rec_arg_t *a = arg;
    pg_params_t p = {0};
    pp_text(&p, a->kind);
    pp_text(&p, a->key);
    PGresult *r;
    wh_status_t st = pg_exec(conn,
                             "SELECT key, doc FROM iam_records WHERE kind = $1"
                             " AND key >= $2 AND left(key, length($2)) = $2 ORDER BY key",
                             &p, &r, "iam record list");
    if (st != WH_OK)
        return st;
    meta_recs_free(a->arr, a->n);
    a->arr = NULL;
    a->n = 0;
    int rows = PQntuples(r);
    if (!(a->arr = calloc(rows ? (size_t)rows : 1, sizeof *a->arr)))
        st = WH_ERR_NOMEM;
    for (int i = 0; st == WH_OK && i < rows; i++) {
        meta_rec_t *e = &a->arr[a->n++];
        e->key = pg_dup(r, i, 0);
        e->doc = pg_dup(r, i, 1);
        if (!e->key || !e->doc)
            st = WH_ERR_NOMEM;
    }
    PQclear(r);
    return st;
}

wh_status_t pg_rec_list(meta_t *m, const char *kind, const char *prefix, meta_rec_t **out,
                        size_t *n)
{
    pg_rec_arg_t a = {.kind = kind, .key = prefix ? prefix : ""};
    wh_status_t st = pg_read(PGM(m), rd_rec_list, &a);
    if (st != WH_OK) {
        meta_recs_free(a.arr, a.n);
        return st;
    }
    *out = a.arr;
    *n = a.n;
    return WH_OK;
}

/* ---- renaming a user ---- */

static wh_status_t tx_user_rename(void *conn, void *arg)
{
    pg_rec_arg_t *a = arg;
    static const char *const sql[] = {
        "UPDATE users SET name = $2 WHERE name = $1",
        "UPDATE access_keys SET user_name = $2 WHERE user_name = $1",
        "UPDATE user_policies SET user_name = $2 WHERE user_name = $1",
    };
    for (size_t i = 0; i < sizeof sql / sizeof sql[0]; i++) {
        pg_params_t p = {0};
        pp_text(&p, a->kind);
        pp_text(&p, a->key);
        PGresult *r;
        wh_status_t st = pg_exec(conn, sql[i], &p, &r, "user rename");
        if (st != WH_OK)
            return st; /* a taken name: 23505, EXISTS */
        bool none = i == 0 && strcmp(PQcmdTuples(r), "0") == 0;
        PQclear(r);
        if (none)
            return WH_ERR_NOT_FOUND;
    }
    return WH_OK;
}

wh_status_t pg_user_rename(meta_t *m, const char *from, const char *to)
{
    pg_rec_arg_t a = {.kind = from, .key = to};
    return pg_write(PGM(m), tx_user_rename, &a);
}
