/* SPDX-License-Identifier: Apache-2.0 */
/* SQLite metadata backend: bucket owners, ACLs and policies, object ACLs, and identity (IAM
 * users, access keys, inline user policies). See meta_sqlite_int.h. */
#include "meta_sqlite/meta_sqlite_int.h"
#include "meta/meta_rules.h"

#include <stdlib.h>
#include <string.h>

/* A write through one prepared statement with text parameters; NOT_FOUND when it changed no
 * row (the row to update or delete does not exist). */
typedef struct {
    int which;
    const char *v[3];
    int n;
    bool has_i;
    sqlite3_int64 i; /* bound at n+1 when has_i */
    bool null_last;  /* v[n-1] NULL binds SQL NULL */
    const char *what;
} sq_update_arg_t;

static wh_status_t tx_update(void *conn, void *arg)
{
    sq_conn_t *c = conn;
    sq_update_arg_t *a = arg;
    sqlite3_stmt *s = c->stmt[a->which];
    for (int i = 0; i < a->n; i++) {
        if (i == a->n - 1 && a->null_last)
            sq_bind_text_or_null(s, i + 1, a->v[i]);
        else
            sq_bind_text(s, i + 1, a->v[i]);
    }
    if (a->has_i)
        sqlite3_bind_int64(s, a->n + 1, a->i);
    wh_status_t st = sq_exec_stmt(c, s, a->what);
    if (st == WH_OK && sqlite3_changes(c->db) == 0)
        st = WH_ERR_NOT_FOUND;
    return st;
}

/* ---- buckets and objects ---- */

wh_status_t sq_bucket_auth_get(meta_t *mm, const char *name, data_bucket_auth_t *out)
{
    sq_conn_t *c = &SQ(mm)->rd;
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&c->lock);
    sqlite3_stmt *s = c->stmt[S_BUCKET_AUTH];
    sq_bind_text(s, 1, name);
    int rc = sqlite3_step(s);
    wh_status_t st = WH_OK;
    if (rc == SQLITE_ROW) {
        sq_col_copy(s, 0, out->owner, sizeof out->owner);
        out->pab = (unsigned)sqlite3_column_int(s, 3);
        out->ownership = (unsigned)sqlite3_column_int(s, 4);
        if ((sqlite3_column_type(s, 1) != SQLITE_NULL && !(out->acl = sq_col_dup(s, 1))) ||
            (sqlite3_column_type(s, 2) != SQLITE_NULL && !(out->policy = sq_col_dup(s, 2))))
            st = WH_ERR_NOMEM;
    } else {
        st = rc == SQLITE_DONE ? WH_ERR_NOT_FOUND : sq_fail(c, rc, "bucket auth lookup");
    }
    sq_done(s);
    pthread_mutex_unlock(&c->lock);
    if (st != WH_OK)
        data_bucket_auth_free(out);
    return st;
}

wh_status_t sq_bucket_set_acl(meta_t *m, const char *name, const char *acl)
{
    sq_update_arg_t a = {S_BUCKET_SET_ACL, {name, acl}, 2, false, 0, true, "bucket acl update"};
    return sq_write_auth(SQ(m), tx_update, &a);
}

wh_status_t sq_bucket_set_policy(meta_t *m, const char *name, const char *policy)
{
    sq_update_arg_t a = {S_BUCKET_SET_POLICY,   {name, policy}, 2, false, 0, true,
                         "bucket policy update"};
    return sq_write_auth(SQ(m), tx_update, &a);
}

wh_status_t sq_bucket_attr_set(meta_t *m, const char *name, data_battr_t which, const char *value)
{
    if ((unsigned)which >= DATA_BATTR__COUNT)
        return WH_ERR_INVALID;
    if (!value && (which == DATA_BATTR_PAB || which == DATA_BATTR_OWNERSHIP))
        value = "0";
    sq_update_arg_t a = {S_BUCKET_SET_TAGS + (int)which, {name, value}, 2, false, 0, true,
                         "bucket configuration update"};
    /* PAB and ownership are read with the bucket's ACL and policy: the same cache rule. */
    return sq_write_auth(SQ(m), tx_update, &a);
}

wh_status_t sq_bucket_attr_get(meta_t *mm, const char *name, data_battr_t which, char **out)
{
    *out = NULL;
    if ((unsigned)which >= DATA_BATTR__COUNT)
        return WH_ERR_INVALID;
    sq_conn_t *c = &SQ(mm)->rd;
    pthread_mutex_lock(&c->lock);
    sqlite3_stmt *s = c->stmt[S_BUCKET_GET_ATTRS];
    sq_bind_text(s, 1, name);
    int rc = sqlite3_step(s);
    wh_status_t st = WH_OK;
    if (rc == SQLITE_ROW) {
        if (sqlite3_column_type(s, (int)which) != SQLITE_NULL &&
            !(*out = sq_col_dup(s, (int)which)))
            st = WH_ERR_NOMEM;
    } else {
        st = rc == SQLITE_DONE ? WH_ERR_NOT_FOUND : sq_fail(c, rc, "bucket configuration lookup");
    }
    sq_done(s);
    pthread_mutex_unlock(&c->lock);
    return st;
}

typedef struct {
    const char *bucket, *key;
    size_t klen;
    const char *acl;
} sq_obj_acl_arg_t;

static wh_status_t tx_object_set_acl(void *conn, void *arg)
{
    sq_conn_t *c = conn;
    sq_obj_acl_arg_t *a = arg;
    sqlite3_stmt *s = c->stmt[S_OBJ_SET_ACL];
    sq_bind_text(s, 1, a->bucket);
    sq_bind_key(s, 2, a->key, a->klen);
    sq_bind_text_or_null(s, 3, a->acl);
    wh_status_t st = sq_exec_stmt(c, s, "object acl update");
    if (st == WH_OK && sqlite3_changes(c->db) == 0)
        st = WH_ERR_NOT_FOUND;
    return st;
}

wh_status_t sq_object_set_acl(meta_t *m, const char *bucket, const char *key, size_t klen,
                              const char *acl)
{
    sq_obj_acl_arg_t a = {bucket, key, klen, acl};
    return sq_write(SQ(m), tx_object_set_acl, &a);
}

/* ---- users ---- */

static void user_read(sqlite3_stmt *s, meta_user_t *u)
{
    memset(u, 0, sizeof *u);
    sq_col_copy(s, 0, u->name, sizeof u->name);
    sq_col_copy(s, 1, u->user_id, sizeof u->user_id);
    sq_col_copy(s, 2, u->canonical_id, sizeof u->canonical_id);
    u->created = (time_t)sqlite3_column_int64(s, 3);
}

static wh_status_t tx_user_create(void *conn, void *arg)
{
    sq_conn_t *c = conn;
    const meta_user_t *u = arg;
    sqlite3_stmt *s = c->stmt[S_USER_INSERT];
    sq_bind_text(s, 1, u->name);
    sq_bind_text(s, 2, u->user_id);
    sq_bind_text(s, 3, u->canonical_id);
    sqlite3_bind_int64(s, 4, (sqlite3_int64)u->created);
    int rc = sqlite3_step(s);
    wh_status_t st = WH_OK;
    if ((rc & 0xff) == SQLITE_CONSTRAINT)
        st = WH_ERR_EXISTS;
    else if (rc != SQLITE_DONE)
        st = sq_fail(c, rc, "user insert");
    sq_done(s);
    return st;
}

wh_status_t sq_user_create(meta_t *m, const meta_user_t *u)
{
    return sq_write_auth(SQ(m), tx_user_create, (void *)u);
}

static wh_status_t user_get_locked(sq_conn_t *c, const char *name, meta_user_t *out)
{
    sqlite3_stmt *s = c->stmt[S_USER_GET];
    sq_bind_text(s, 1, name);
    int rc = sqlite3_step(s);
    wh_status_t st = WH_OK;
    if (rc == SQLITE_ROW) {
        if (out)
            user_read(s, out);
    } else {
        st = rc == SQLITE_DONE ? WH_ERR_NOT_FOUND : sq_fail(c, rc, "user lookup");
    }
    sq_done(s);
    return st;
}

wh_status_t sq_user_get(meta_t *mm, const char *name, meta_user_t *out)
{
    sq_conn_t *c = &SQ(mm)->rd;
    pthread_mutex_lock(&c->lock);
    wh_status_t st = user_get_locked(c, name, out);
    pthread_mutex_unlock(&c->lock);
    return st;
}

wh_status_t sq_user_list(meta_t *mm, meta_user_t **out, size_t *n)
{
    sq_conn_t *c = &SQ(mm)->rd;
    meta_user_t *arr = NULL;
    size_t cnt = 0, cap = 0;
    wh_status_t st = WH_OK;
    int rc;
    pthread_mutex_lock(&c->lock);
    sqlite3_stmt *s = c->stmt[S_USER_LIST];
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (!meta_grow((void **)&arr, &cap, cnt + 1, sizeof *arr)) {
            st = WH_ERR_NOMEM;
            break;
        }
        user_read(s, &arr[cnt++]);
    }
    if (st == WH_OK && rc != SQLITE_DONE)
        st = sq_fail(c, rc, "user list");
    sq_done(s);
    pthread_mutex_unlock(&c->lock);
    if (st != WH_OK) {
        free(arr);
        return st;
    }
    *out = arr;
    *n = cnt;
    return WH_OK;
}

/* ---- the row operations of meta_ident.h ---- */

static wh_status_t sq_user_check(void *conn, const char *name, meta_user_lock_t lock)
{
    (void)lock; /* the writer's lock holds every row */
    return user_get_locked(conn, name, NULL);
}

static wh_status_t sq_user_has_dependants(void *conn, const char *name, bool *has)
{
    static const int checks[] = {S_USER_HAS_KEY, S_USER_HAS_POLICY};
    *has = false;
    for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++) {
        wh_status_t st = sq_row_exists(conn, checks[i], name, "user dependants check");
        if (st == WH_OK) {
            *has = true;
            return WH_OK;
        }
        if (st != WH_ERR_NOT_FOUND)
            return st;
    }
    return WH_OK;
}

static wh_status_t sq_user_rows_delete(void *conn, const char *name)
{
    sq_conn_t *c = conn;
    static const int drops[] = {S_KEYS_DELETE_USER, S_POLICIES_DELETE_USER, S_USER_DELETE};
    for (size_t i = 0; i < sizeof drops / sizeof drops[0]; i++) {
        sqlite3_stmt *s = c->stmt[drops[i]];
        sq_bind_text(s, 1, name);
        wh_status_t st = sq_exec_stmt(c, s, "user delete");
        if (st != WH_OK)
            return st;
    }
    return WH_OK;
}

static wh_status_t sq_key_insert(void *conn, const meta_access_key_t *k)
{
    sq_conn_t *c = conn;
    sqlite3_stmt *s = c->stmt[S_KEY_INSERT];
    sq_bind_text(s, 1, k->access_key);
    sq_bind_text(s, 2, k->user);
    sq_bind_text(s, 3, k->secret_sealed);
    sqlite3_bind_int64(s, 4, k->active ? 1 : 0);
    sqlite3_bind_int64(s, 5, (sqlite3_int64)k->created);
    int rc = sqlite3_step(s);
    wh_status_t st = WH_OK;
    if ((rc & 0xff) == SQLITE_CONSTRAINT)
        st = WH_ERR_EXISTS;
    else if (rc != SQLITE_DONE)
        st = sq_fail(c, rc, "access key insert");
    sq_done(s);
    return st;
}

static wh_status_t sq_policy_upsert(void *conn, const char *user, const char *name, const char *doc)
{
    sq_conn_t *c = conn;
    sqlite3_stmt *s = c->stmt[S_POLICY_PUT];
    sq_bind_text(s, 1, user);
    sq_bind_text(s, 2, name);
    sq_bind_text(s, 3, doc);
    return sq_exec_stmt(c, s, "user policy put");
}

const meta_ident_dialect_t SQ_IDENT = {
    .user_check = sq_user_check,
    .user_has_dependants = sq_user_has_dependants,
    .user_rows_delete = sq_user_rows_delete,
    .key_insert = sq_key_insert,
    .policy_upsert = sq_policy_upsert,
};

/* ---- access keys ---- */

static void key_read(sqlite3_stmt *s, meta_access_key_t *k)
{
    memset(k, 0, sizeof *k);
    sq_col_copy(s, 0, k->access_key, sizeof k->access_key);
    sq_col_copy(s, 1, k->user, sizeof k->user);
    sq_col_copy(s, 2, k->secret_sealed, sizeof k->secret_sealed);
    k->active = sqlite3_column_int64(s, 3) != 0;
    k->created = (time_t)sqlite3_column_int64(s, 4);
}

wh_status_t sq_key_get(meta_t *mm, const char *access_key, meta_access_key_t *out)
{
    sq_conn_t *c = &SQ(mm)->rd;
    pthread_mutex_lock(&c->lock);
    sqlite3_stmt *s = c->stmt[S_KEY_GET];
    sq_bind_text(s, 1, access_key);
    int rc = sqlite3_step(s);
    wh_status_t st = WH_OK;
    if (rc == SQLITE_ROW) {
        key_read(s, out);
        sq_col_copy(s, 5, out->user_id, sizeof out->user_id);
        sq_col_copy(s, 6, out->canonical_id, sizeof out->canonical_id);
    } else {
        st = rc == SQLITE_DONE ? WH_ERR_NOT_FOUND : sq_fail(c, rc, "access key lookup");
    }
    sq_done(s);
    pthread_mutex_unlock(&c->lock);
    return st;
}

wh_status_t sq_key_list(meta_t *mm, const char *user, meta_access_key_t **out, size_t *n)
{
    sq_conn_t *c = &SQ(mm)->rd;
    meta_access_key_t *arr = NULL;
    size_t cnt = 0, cap = 0;
    int rc;
    pthread_mutex_lock(&c->lock);
    wh_status_t st = user_get_locked(c, user, NULL);
    sqlite3_stmt *s = c->stmt[S_KEY_LIST];
    sq_bind_text(s, 1, user);
    while (st == WH_OK && (rc = sqlite3_step(s)) != SQLITE_DONE) {
        if (rc != SQLITE_ROW) {
            st = sq_fail(c, rc, "access key list");
            break;
        }
        if (!meta_grow((void **)&arr, &cap, cnt + 1, sizeof *arr)) {
            st = WH_ERR_NOMEM;
            break;
        }
        key_read(s, &arr[cnt++]);
    }
    sq_done(s);
    pthread_mutex_unlock(&c->lock);
    if (st != WH_OK) {
        free(arr);
        return st;
    }
    *out = arr;
    *n = cnt;
    return WH_OK;
}

wh_status_t sq_key_delete(meta_t *m, const char *access_key)
{
    sq_update_arg_t a = {S_KEY_DELETE, {access_key}, 1, false, 0, false, "access key delete"};
    return sq_write_auth(SQ(m), tx_update, &a);
}

wh_status_t sq_key_set_active(meta_t *m, const char *access_key, bool active)
{
    sq_update_arg_t a = {S_KEY_SET_ACTIVE,          {access_key}, 1, true, active ? 1 : 0, false,
                         "access key status update"};
    return sq_write_auth(SQ(m), tx_update, &a);
}

/* ---- inline user policies ---- */

typedef struct {
    const char *user, *name, *doc;
} sq_pol_arg_t;

wh_status_t sq_user_policy_get(meta_t *mm, const char *user, const char *name, char **doc)
{
    sq_conn_t *c = &SQ(mm)->rd;
    *doc = NULL;
    pthread_mutex_lock(&c->lock);
    sqlite3_stmt *s = c->stmt[S_POLICY_GET];
    sq_bind_text(s, 1, user);
    sq_bind_text(s, 2, name);
    int rc = sqlite3_step(s);
    wh_status_t st = WH_OK;
    if (rc == SQLITE_ROW) {
        if (!(*doc = sq_col_dup(s, 0)))
            st = WH_ERR_NOMEM;
    } else {
        st = rc == SQLITE_DONE ? WH_ERR_NOT_FOUND : sq_fail(c, rc, "user policy lookup");
    }
    sq_done(s);
    pthread_mutex_unlock(&c->lock);
    return st;
}

wh_status_t sq_user_policy_list(meta_t *mm, const char *user, meta_policy_t **out, size_t *n)
{
    sq_conn_t *c = &SQ(mm)->rd;
    meta_policy_t *arr = NULL;
    size_t cnt = 0, cap = 0;
    int rc;
    pthread_mutex_lock(&c->lock);
    wh_status_t st = user_get_locked(c, user, NULL);
    sqlite3_stmt *s = c->stmt[S_POLICY_LIST];
    sq_bind_text(s, 1, user);
    while (st == WH_OK && (rc = sqlite3_step(s)) != SQLITE_DONE) {
        if (rc != SQLITE_ROW) {
            st = sq_fail(c, rc, "user policy list");
            break;
        }
        if (!meta_grow((void **)&arr, &cap, cnt + 1, sizeof *arr)) {
            st = WH_ERR_NOMEM;
            break;
        }
        meta_policy_t *p = &arr[cnt];
        sq_col_copy(s, 0, p->name, sizeof p->name);
        if (!(p->doc = sq_col_dup(s, 1))) {
            st = WH_ERR_NOMEM;
            break;
        }
        cnt++;
    }
    sq_done(s);
    pthread_mutex_unlock(&c->lock);
    if (st != WH_OK) {
        meta_policies_free(arr, cnt);
        return st;
    }
    *out = arr;
    *n = cnt;
    return WH_OK;
}

wh_status_t sq_user_policy_delete(meta_t *m, const char *user, const char *name)
{
    sq_update_arg_t a = {S_POLICY_DELETE, {user, name}, 2, false, 0, false, "user policy delete"};
    return sq_write_auth(SQ(m), tx_update, &a);
}
