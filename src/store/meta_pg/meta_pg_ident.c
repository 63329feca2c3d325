/* SPDX-License-Identifier: Apache-2.0 */
/* PostgreSQL metadata backend: bucket owners, ACLs and policies, object ACLs, and identity
 * (IAM users, access keys, inline user policies). See meta_pg_int.h. */
#include "meta_pg/meta_pg_int.h"
#include "meta/meta_rules.h"

#include <stdlib.h>
#include <string.h>

/* One statement whose parameters are text (NULL: SQL NULL); NOT_FOUND when it touched no row. */
static wh_status_t pg_change(pg_conn_t *c, const char *sql, const char *const *v, int n,
                             const char *what)
{
    pg_params_t p = {0};
    for (int i = 0; i < n; i++) {
        pp_text(&p, v[i]);
        p.v[i] = v[i];
    }
    PGresult *r;
    wh_status_t st = pg_exec(c, sql, &p, &r, what);
    if (st == WH_OK && strcmp(PQcmdTuples(r), "0") == 0)
        st = WH_ERR_NOT_FOUND;
    PQclear(r);
    return st;
}

typedef struct {
    const char *sql;
    const char *v[4];
    int n;
    const char *what;
} pg_change_arg_t;

static wh_status_t tx_change(void *conn, void *arg)
{
    pg_change_arg_t *a = arg;
    return pg_change(conn, a->sql, a->v, a->n, a->what);
}

/* ---- buckets and objects ---- */

typedef struct {
    const char *name;
    data_bucket_auth_t *out;
} pg_bauth_arg_t;

static wh_status_t rd_bucket_auth(void *conn, void *arg)
{
    pg_bauth_arg_t *a = arg;
    pg_params_t p = {0};
    pp_text(&p, a->name);
    PGresult *r;
    wh_status_t st = pg_exec(conn,
                             "SELECT owner, acl, policy, pab, ownership FROM buckets "
                             "WHERE name = $1",
                             &p, &r, "bucket auth lookup");
    if (st != WH_OK)
        return st;
    data_bucket_auth_free(a->out);
    memset(a->out, 0, sizeof *a->out);
    if (PQntuples(r) == 0) {
        st = WH_ERR_NOT_FOUND;
    } else {
        pg_copy(r, 0, 0, a->out->owner, sizeof a->out->owner);
        a->out->pab = (unsigned)strtoul(PQgetvalue(r, 0, 3), NULL, 10);
        a->out->ownership = (unsigned)strtoul(PQgetvalue(r, 0, 4), NULL, 10);
        if ((!PQgetisnull(r, 0, 1) && !(a->out->acl = pg_dup(r, 0, 1))) ||
            (!PQgetisnull(r, 0, 2) && !(a->out->policy = pg_dup(r, 0, 2))))
            st = WH_ERR_NOMEM;
    }
    PQclear(r);
    return st;
}

wh_status_t pg_bucket_auth_get(meta_t *m, const char *name, data_bucket_auth_t *out)
{
    memset(out, 0, sizeof *out);
    pg_bauth_arg_t a = {name, out};
    wh_status_t st = pg_read(PGM(m), rd_bucket_auth, &a);
    if (st != WH_OK)
        data_bucket_auth_free(out);
    return st;
}

wh_status_t pg_bucket_set_acl(meta_t *m, const char *name, const char *acl)
{
    pg_change_arg_t a = {
        "UPDATE buckets SET acl = $2 WHERE name = $1", {name, acl}, 2, "bucket acl update"};
    return pg_write(PGM(m), tx_change, &a);
}

wh_status_t pg_bucket_set_policy(meta_t *m, const char *name, const char *policy)
{
    pg_change_arg_t a = {"UPDATE buckets SET policy = $2 WHERE name = $1",
                         {name, policy},
                         2,
                         "bucket policy update"};
    return pg_write(PGM(m), tx_change, &a);
}

static const char *const g_battr_set_sql[DATA_BATTR__COUNT] = {
    "UPDATE buckets SET tags = $2 WHERE name = $1",
    "UPDATE buckets SET cors = $2 WHERE name = $1",
    "UPDATE buckets SET pab = CAST($2 AS integer) WHERE name = $1",
    "UPDATE buckets SET ownership = CAST($2 AS integer) WHERE name = $1",
    "UPDATE buckets SET lifecycle = $2 WHERE name = $1",
    "UPDATE buckets SET object_lock = $2 WHERE name = $1 AND versioning = 1",
    "UPDATE buckets SET encryption = $2 WHERE name = $1",
};

wh_status_t pg_bucket_attr_set(meta_t *m, const char *name, data_battr_t which, const char *value)
{
    if ((unsigned)which >= DATA_BATTR__COUNT)
        return WH_ERR_INVALID;
    if (!value && (which == DATA_BATTR_PAB || which == DATA_BATTR_OWNERSHIP))
        value = "0";
    pg_change_arg_t a = {g_battr_set_sql[which], {name, value}, 2, "bucket configuration update"};
    return pg_write(PGM(m), tx_change, &a);
}

typedef struct {
    const char *name;
    data_battr_t which;
    char **out;
} pg_battr_arg_t;

static wh_status_t rd_bucket_attr(void *conn, void *arg)
{
    pg_battr_arg_t *a = arg;
    pg_params_t p = {0};
    pp_text(&p, a->name);
    PGresult *r;
    wh_status_t st = pg_exec(conn,
                             "SELECT tags, cors, pab, ownership, lifecycle, object_lock,"
                             " encryption FROM buckets "
                             "WHERE name = $1",
                             &p, &r, "bucket configuration lookup");
    if (st != WH_OK)
        return st;
    free(*a->out);
    *a->out = NULL;
    if (PQntuples(r) == 0)
        st = WH_ERR_NOT_FOUND;
    else if (!PQgetisnull(r, 0, (int)a->which) && !(*a->out = pg_dup(r, 0, (int)a->which)))
        st = WH_ERR_NOMEM;
    PQclear(r);
    return st;
}

wh_status_t pg_bucket_attr_get(meta_t *m, const char *name, data_battr_t which, char **out)
{
    *out = NULL;
    if ((unsigned)which >= DATA_BATTR__COUNT)
        return WH_ERR_INVALID;
    pg_battr_arg_t a = {name, which, out};
    return pg_read(PGM(m), rd_bucket_attr, &a);
}

typedef struct {
    const char *bucket, *key;
    size_t klen;
    const char *acl;
} pg_oacl_arg_t;

static wh_status_t tx_object_acl(void *conn, void *arg)
{
    pg_oacl_arg_t *a = arg;
    pg_params_t p = {0};
    pp_text(&p, a->bucket);
    pp_bytes(&p, a->key, a->klen);
    pp_text(&p, NULL);
    p.v[2] = a->acl;
    PGresult *r;
    wh_status_t st = pg_exec(conn, "UPDATE objects SET acl = $3 WHERE bucket = $1 AND key = $2", &p,
                             &r, "object acl update");
    if (st == WH_OK && strcmp(PQcmdTuples(r), "0") == 0)
        st = WH_ERR_NOT_FOUND;
    PQclear(r);
    return st;
}

wh_status_t pg_object_set_acl(meta_t *m, const char *bucket, const char *key, size_t klen,
                              const char *acl)
{
    pg_oacl_arg_t a = {bucket, key, klen, acl};
    return pg_write(PGM(m), tx_object_acl, &a);
}

/* ---- users ---- */

static void user_read(const PGresult *r, int row, meta_user_t *u)
{
    memset(u, 0, sizeof *u);
    pg_copy(r, row, 0, u->name, sizeof u->name);
    pg_copy(r, row, 1, u->user_id, sizeof u->user_id);
    pg_copy(r, row, 2, u->canonical_id, sizeof u->canonical_id);
    u->created = (time_t)pg_i64(r, row, 3);
}

static wh_status_t tx_user_create(void *conn, void *arg)
{
    const meta_user_t *u = arg;
    pg_params_t p = {0};
    pp_text(&p, u->name);
    pp_text(&p, u->user_id);
    pp_text(&p, u->canonical_id);
    pp_i64(&p, (int64_t)u->created);
    PGresult *r;
    wh_status_t st = pg_exec(conn,
                             "INSERT INTO users(name, user_id, canonical_id, created)"
                             " VALUES($1, $2, $3, $4) ON CONFLICT DO NOTHING RETURNING 1",
                             &p, &r, "user insert");
    if (st == WH_OK && PQntuples(r) == 0)
        st = WH_ERR_EXISTS;
    PQclear(r);
    return st;
}

wh_status_t pg_user_create(meta_t *m, const meta_user_t *u)
{
    return pg_write(PGM(m), tx_user_create, (void *)u);
}

typedef struct {
    const char *name;
    meta_user_t *one;
    meta_user_t *arr;
    size_t n;
} pg_user_arg_t;

static wh_status_t rd_users(void *conn, void *arg)
{
    pg_user_arg_t *a = arg;
    pg_params_t p = {0};
    PGresult *r;
    wh_status_t st;
    if (a->name) {
        pp_text(&p, a->name);
        st = pg_exec(conn,
                     "SELECT name, user_id, canonical_id, created FROM users"
                     " WHERE name = $1",
                     &p, &r, "user lookup");
    } else {
        st = pg_exec(conn,
                     "SELECT name, user_id, canonical_id, created FROM users"
                     " ORDER BY name",
                     NULL, &r, "user list");
    }
    if (st != WH_OK)
        return st;
    int n = PQntuples(r);
    if (a->name) {
        if (n == 0)
            st = WH_ERR_NOT_FOUND;
        else if (a->one)
            user_read(r, 0, a->one);
    } else {
        free(a->arr);
        a->arr = calloc(n ? (size_t)n : 1, sizeof *a->arr);
        if (!a->arr)
            st = WH_ERR_NOMEM;
        for (int i = 0; st == WH_OK && i < n; i++)
            user_read(r, i, &a->arr[i]);
        a->n = st == WH_OK ? (size_t)n : 0;
    }
    PQclear(r);
    return st;
}

wh_status_t pg_user_get(meta_t *m, const char *name, meta_user_t *out)
{
    pg_user_arg_t a = {name, out, NULL, 0};
    return pg_read(PGM(m), rd_users, &a);
}

wh_status_t pg_user_list(meta_t *m, meta_user_t **out, size_t *n)
{
    pg_user_arg_t a = {NULL, NULL, NULL, 0};
    wh_status_t st = pg_read(PGM(m), rd_users, &a);
    if (st != WH_OK) {
        free(a.arr);
        return st;
    }
    *out = a.arr;
    *n = a.n;
    return WH_OK;
}

/* ---- the row operations of meta_ident.h ---- */

static wh_status_t pg_user_lock(void *conn, const char *name, meta_user_lock_t lock)
{
    pg_params_t p = {0};
    pp_text(&p, name);
    PGresult *r;
    wh_status_t st = pg_exec(conn,
                             lock == META_USER_UPDATE  ? "SELECT 1 FROM users WHERE name = $1"
                                                         " FOR UPDATE"
                             : lock == META_USER_SHARE ? "SELECT 1 FROM users WHERE name = $1"
                                                         " FOR SHARE"
                                                       : "SELECT 1 FROM users WHERE name = $1",
                             &p, &r, "user lookup");
    if (st == WH_OK && PQntuples(r) == 0)
        st = WH_ERR_NOT_FOUND;
    PQclear(r);
    return st;
}

static wh_status_t pg_user_has_dependants(void *conn, const char *name, bool *has)
{
    pg_params_t p = {0};
    pp_text(&p, name);
    PGresult *r;
    wh_status_t st = pg_exec(conn,
                             "SELECT 1 FROM access_keys WHERE user_name = $1"
                             " UNION ALL SELECT 1 FROM user_policies WHERE user_name = $1 LIMIT 1",
                             &p, &r, "user dependants check");
    if (st != WH_OK)
        return st;
    *has = PQntuples(r) > 0;
    PQclear(r);
    return WH_OK;
}

static wh_status_t pg_user_rows_delete(void *conn, const char *name)
{
    static const char *const drops[] = {"DELETE FROM access_keys WHERE user_name = $1",
                                        "DELETE FROM user_policies WHERE user_name = $1",
                                        "DELETE FROM users WHERE name = $1"};
    pg_params_t p = {0};
    pp_text(&p, name);
    wh_status_t st = WH_OK;
    for (size_t i = 0; st == WH_OK && i < sizeof drops / sizeof drops[0]; i++)
        st = pg_exec(conn, drops[i], &p, NULL, "user delete");
    return st;
}

static wh_status_t pg_key_insert(void *conn, const meta_access_key_t *k)
{
    pg_params_t q = {0};
    pp_text(&q, k->access_key);
    pp_text(&q, k->user);
    pp_text(&q, k->secret_sealed);
    pp_text(&q, k->active ? "true" : "false");
    pp_i64(&q, (int64_t)k->created);
    PGresult *r;
    wh_status_t st = pg_exec(conn,
                             "INSERT INTO access_keys(access_key, user_name, secret_sealed, active,"
                             " created) VALUES($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING"
                             " RETURNING 1",
                             &q, &r, "access key insert");
    if (st != WH_OK)
        return st;
    st = PQntuples(r) == 0 ? WH_ERR_EXISTS : WH_OK;
    PQclear(r);
    return st;
}

static wh_status_t pg_policy_upsert(void *conn, const char *user, const char *name, const char *doc)
{
    pg_params_t p = {0};
    pp_text(&p, user);
    pp_text(&p, name);
    pp_text(&p, doc);
    return pg_exec(conn,
                   "INSERT INTO user_policies(user_name, policy_name, document)"
                   " VALUES($1, $2, $3) ON CONFLICT (user_name, policy_name)"
                   " DO UPDATE SET document = EXCLUDED.document",
                   &p, NULL, "user policy put");
}

const meta_ident_dialect_t PG_IDENT = {
    .user_check = pg_user_lock,
    .user_has_dependants = pg_user_has_dependants,
    .user_rows_delete = pg_user_rows_delete,
    .key_insert = pg_key_insert,
    .policy_upsert = pg_policy_upsert,
};

/* ---- access keys ---- */

#define PG_KEY_COLS "k.access_key, k.user_name, k.secret_sealed, k.active, k.created"

static void key_read(const PGresult *r, int row, meta_access_key_t *k)
{
    memset(k, 0, sizeof *k);
    pg_copy(r, row, 0, k->access_key, sizeof k->access_key);
    pg_copy(r, row, 1, k->user, sizeof k->user);
    pg_copy(r, row, 2, k->secret_sealed, sizeof k->secret_sealed);
    k->active = strcmp(PQgetvalue(r, row, 3), "t") == 0;
    k->created = (time_t)pg_i64(r, row, 4);
}

typedef struct {
    const char *access_key;
    meta_access_key_t *out;
} pg_key_arg_t;

/* The SigV4 lookup, on every request signed by a user's key: a statement prepared once per
 * session (no parse or plan per request), by primary key, with the user by primary key. */
static wh_status_t rd_key_get(void *conn, void *arg)
{
    pg_conn_t *c = conn;
    pg_key_arg_t *a = arg;
    wh_status_t st = pg_ensure(c);
    if (st != WH_OK)
        return st;
    if (!(c->prepared & PG_PREP_KEY_GET)) {
        PGresult *pr = PQprepare(c->c, "wharf_key_get",
                                 "SELECT " PG_KEY_COLS ", u.user_id, u.canonical_id"
                                 " FROM access_keys k JOIN users u ON u.name = k.user_name"
                                 " WHERE k.access_key = $1",
                                 1, NULL);
        if (PQresultStatus(pr) != PGRES_COMMAND_OK) {
            st = pg_fail(c, pr, "access key lookup (prepare)");
            PQclear(pr);
            return st;
        }
        PQclear(pr);
        c->prepared |= PG_PREP_KEY_GET;
    }
    const char *v[1] = {a->access_key};
    PGresult *r = PQexecPrepared(c->c, "wharf_key_get", 1, v, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        st = pg_fail(c, r, "access key lookup");
        PQclear(r);
        return st;
    }
    if (PQntuples(r) == 0) {
        st = WH_ERR_NOT_FOUND;
    } else {
        key_read(r, 0, a->out);
        pg_copy(r, 0, 5, a->out->user_id, sizeof a->out->user_id);
        pg_copy(r, 0, 6, a->out->canonical_id, sizeof a->out->canonical_id);
    }
    PQclear(r);
    return st;
}

wh_status_t pg_key_get(meta_t *m, const char *access_key, meta_access_key_t *out)
{
    pg_key_arg_t a = {access_key, out};
    return pg_read(PGM(m), rd_key_get, &a);
}

typedef struct {
    const char *user;
    meta_access_key_t *arr;
    size_t n;
} pg_keys_arg_t;

static wh_status_t tx_key_list(void *conn, void *arg)
{
    pg_keys_arg_t *a = arg;
    wh_status_t st = pg_user_lock(conn, a->user, META_USER_READ);
    if (st != WH_OK)
        return st;
    pg_params_t p = {0};
    pp_text(&p, a->user);
    PGresult *r;
    st = pg_exec(conn,
                 "SELECT " PG_KEY_COLS " FROM access_keys k WHERE k.user_name = $1"
                 " ORDER BY k.created, k.access_key",
                 &p, &r, "access key list");
    if (st != WH_OK)
        return st;
    int n = PQntuples(r);
    free(a->arr);
    a->arr = calloc(n ? (size_t)n : 1, sizeof *a->arr);
    if (!a->arr)
        st = WH_ERR_NOMEM;
    for (int i = 0; st == WH_OK && i < n; i++)
        key_read(r, i, &a->arr[i]);
    a->n = st == WH_OK ? (size_t)n : 0;
    PQclear(r);
    return st;
}

wh_status_t pg_key_list(meta_t *m, const char *user, meta_access_key_t **out, size_t *n)
{
    pg_keys_arg_t a = {user, NULL, 0};
    /* Two statements that must agree (the user exists, its keys): one transaction. */
    wh_status_t st = pg_write(PGM(m), tx_key_list, &a);
    if (st != WH_OK) {
        free(a.arr);
        return st;
    }
    *out = a.arr;
    *n = a.n;
    return WH_OK;
}

wh_status_t pg_key_delete(meta_t *m, const char *access_key)
{
    pg_change_arg_t a = {
        "DELETE FROM access_keys WHERE access_key = $1", {access_key}, 1, "access key delete"};
    return pg_write(PGM(m), tx_change, &a);
}

wh_status_t pg_key_set_active(meta_t *m, const char *access_key, bool active)
{
    pg_change_arg_t a = {"UPDATE access_keys SET active = $2 WHERE access_key = $1",
                         {access_key, active ? "true" : "false"},
                         2,
                         "access key status update"};
    return pg_write(PGM(m), tx_change, &a);
}

/* ---- inline user policies ---- */

typedef struct {
    const char *user, *name, *doc;
    char **out;
    meta_policy_t *arr;
    size_t n;
} pg_pol_arg_t;

static wh_status_t rd_policy_get(void *conn, void *arg)
{
    pg_pol_arg_t *a = arg;
    pg_params_t p = {0};
    pp_text(&p, a->user);
    pp_text(&p, a->name);
    PGresult *r;
    wh_status_t st = pg_exec(conn,
                             "SELECT document FROM user_policies"
                             " WHERE user_name = $1 AND policy_name = $2",
                             &p, &r, "user policy lookup");
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

wh_status_t pg_user_policy_get(meta_t *m, const char *user, const char *name, char **doc)
{
    *doc = NULL;
    pg_pol_arg_t a = {user, name, NULL, doc, NULL, 0};
    return pg_read(PGM(m), rd_policy_get, &a);
}

static wh_status_t tx_policy_list(void *conn, void *arg)
{
    pg_pol_arg_t *a = arg;
    wh_status_t st = pg_user_lock(conn, a->user, META_USER_READ);
    if (st != WH_OK)
        return st;
    pg_params_t p = {0};
    pp_text(&p, a->user);
    PGresult *r;
    st = pg_exec(conn,
                 "SELECT policy_name, document FROM user_policies WHERE user_name = $1"
                 " ORDER BY policy_name",
                 &p, &r, "user policy list");
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

wh_status_t pg_user_policy_list(meta_t *m, const char *user, meta_policy_t **out, size_t *n)
{
    pg_pol_arg_t a = {user, NULL, NULL, NULL, NULL, 0};
    wh_status_t st = pg_write(PGM(m), tx_policy_list, &a);
    if (st != WH_OK) {
        meta_policies_free(a.arr, a.n);
        return st;
    }
    *out = a.arr;
    *n = a.n;
    return WH_OK;
}

wh_status_t pg_user_policy_delete(meta_t *m, const char *user, const char *name)
{
    pg_change_arg_t a = {"DELETE FROM user_policies WHERE user_name = $1 AND policy_name = $2",
                         {user, name},
                         2,
                         "user policy delete"};
    return pg_write(PGM(m), tx_change, &a);
}
