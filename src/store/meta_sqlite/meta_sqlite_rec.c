/* SPDX-License-Identifier: Apache-2.0 */
/* SQLite metadata backend: IAM records (meta.h's rec_* slots), one table keyed by (kind, key).
 * Writes go through sq_write_auth: what they change is what authorization reads. */
#include "meta_sqlite/meta_sqlite_int.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *kind, *key, *doc;
    bool create;
} sq_rec_arg_t;

static wh_status_t tx_rec_put(void *conn, void *arg)
{
    sq_conn_t *c = conn;
    sq_rec_arg_t *a = arg;
    /* A create (a new group, policy, role or session: rare) prepares its own INSERT. */
    sqlite3_stmt *s = c->stmt[S_REC_PUT];
    if (a->create) {
        int rc = sqlite3_prepare_v2(
            c->db, "INSERT INTO iam_records(kind, key, doc) VALUES(?1, ?2, ?3)", -1, &s, NULL);
        if (rc != SQLITE_OK)
            return sq_fail(c, rc, "iam record insert prepare");
    }
    sq_bind_text(s, 1, a->kind);
    sq_bind_text(s, 2, a->key);
    sq_bind_text(s, 3, a->doc);
    int rc = sqlite3_step(s);
    wh_status_t st = WH_OK;
    if ((rc & 0xff) == SQLITE_CONSTRAINT)
        st = WH_ERR_EXISTS;
    else if (rc != SQLITE_DONE)
        st = sq_fail(c, rc, "iam record put");
    if (a->create)
        sqlite3_finalize(s);
    else
        sq_done(s);
    return st;
}

wh_status_t sq_rec_put(meta_t *m, const char *kind, const char *key, const char *doc, bool create)
{
    sq_rec_arg_t a = {kind, key, doc, create};
    return sq_write_auth(SQ(m), tx_rec_put, &a);
}

static wh_status_t tx_rec_delete(void *conn, void *arg)
{
    sq_conn_t *c = conn;
    sq_rec_arg_t *a = arg;
    sqlite3_stmt *s = c->stmt[S_REC_DELETE];
    sq_bind_text(s, 1, a->kind);
    sq_bind_text(s, 2, a->key);
    wh_status_t st = sq_exec_stmt(c, s, "iam record delete");
    if (st == WH_OK && sqlite3_changes(c->db) == 0)
        st = WH_ERR_NOT_FOUND;
    return st;
}

wh_status_t sq_rec_delete(meta_t *m, const char *kind, const char *key)
{
    sq_rec_arg_t a = {kind, key, NULL, false};
    return sq_write_auth(SQ(m), tx_rec_delete, &a);
}

wh_status_t sq_rec_get(meta_t *mm, const char *kind, const char *key, char **doc)
{
    sq_conn_t *c = &SQ(mm)->rd;
    *doc = NULL;
    pthread_mutex_lock(&c->lock);
    sqlite3_stmt *s = c->stmt[S_REC_GET];
    sq_bind_text(s, 1, kind);
    sq_bind_text(s, 2, key);
    int rc = sqlite3_step(s);
    wh_status_t st = WH_OK;
    if (rc == SQLITE_ROW) {
        if (!(*doc = sq_col_dup(s, 0)))
            st = WH_ERR_NOMEM;
    } else {
        st = rc == SQLITE_DONE ? WH_ERR_NOT_FOUND : sq_fail(c, rc, "iam record lookup");
    }
    sq_done(s);
    pthread_mutex_unlock(&c->lock);
    return st;
}

wh_status_t sq_rec_list(meta_t *mm, const char *kind, const char *prefix, meta_rec_t **out,
                        size_t *n)
{
    sq_conn_t *c = &SQ(mm)->rd;
    meta_rec_t *arr = NULL;
    size_t cnt = 0, cap = 0;
    wh_status_t st = WH_OK;
    int rc;
    pthread_mutex_lock(&c->lock);
    sqlite3_stmt *s = c->stmt[S_REC_LIST];
    sq_bind_text(s, 1, kind);
    sq_bind_text(s, 2, prefix ? prefix : "");
    size_t plen = prefix ? strlen(prefix) : 0;
    /* The keys from prefix on, in order: the first that does not start with it ends them. */
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        const char *k = (const char *)sqlite3_column_text(s, 0);
        if (plen && (!k || strncmp(k, prefix, plen) != 0)) {
            rc = SQLITE_DONE;
            break;
        }
        if (!meta_grow((void **)&arr, &cap, cnt + 1, sizeof *arr)) {
            st = WH_ERR_NOMEM;
            break;
        }
        meta_rec_t *r = &arr[cnt];
        r->key = sq_col_dup(s, 0);
        r->doc = sq_col_dup(s, 1);
        cnt++;
        if (!r->key || !r->doc) {
            st = WH_ERR_NOMEM;
            break;
        }
    }
    if (st == WH_OK && rc != SQLITE_DONE)
        st = sq_fail(c, rc, "iam record list");
    sq_done(s);
    pthread_mutex_unlock(&c->lock);
    if (st != WH_OK) {
        meta_recs_free(arr, cnt);
        return st;
    }
    *out = arr;
    *n = cnt;
    return WH_OK;
}

/* ---- renaming a user (rare: statements prepared for the call) ---- */

typedef struct {
    const char *from, *to;
} sq_rename_arg_t;

static wh_status_t tx_user_rename(void *conn, void *arg)
{
    sq_conn_t *c = conn;
    sq_rename_arg_t *a = arg;
    static const char *const sql[] = {
        "UPDATE users SET name = ?2 WHERE name = ?1",
        "UPDATE access_keys SET user_name = ?2 WHERE user_name = ?1",
        "UPDATE user_policies SET user_name = ?2 WHERE user_name = ?1",
    };
    for (size_t i = 0; i < sizeof sql / sizeof sql[0]; i++) {
        sqlite3_stmt *s = NULL;
        int rc = sqlite3_prepare_v2(c->db, sql[i], -1, &s, NULL);
        if (rc != SQLITE_OK)
            return sq_fail(c, rc, "user rename prepare");
        sq_bind_text(s, 1, a->from);
        sq_bind_text(s, 2, a->to);
        rc = sqlite3_step(s);
        sqlite3_finalize(s);
        if ((rc & 0xff) == SQLITE_CONSTRAINT)
            return WH_ERR_EXISTS;
        if (rc != SQLITE_DONE)
            return sq_fail(c, rc, "user rename");
        if (i == 0 && sqlite3_changes(c->db) == 0)
            return WH_ERR_NOT_FOUND;
    }
    return WH_OK;
}

wh_status_t sq_user_rename(meta_t *m, const char *from, const char *to)
{
    sq_rename_arg_t a = {from, to};
    return sq_write_auth(SQ(m), tx_user_rename, &a);
}
