/* SPDX-License-Identifier: Apache-2.0 */
/* SQLite metadata backend: the key service's master keys (kms_keys, schema step 13). Each row
 * is one key and an opaque document (ident/kms.c writes it: the key's state and its versions,
 * each sealed under the server key); a change replaces the document only while it is still
 * the one its writer read, so two rotations never lose a version. */
#include "meta_sqlite/meta_sqlite_int.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *id, *old, *doc;
} sq_kms_arg_t;

static wh_status_t tx_kms_put(void *conn, void *arg)
{
    sq_conn_t *c = conn;
    sq_kms_arg_t *a = arg;
    const char *sql = a->old ? "UPDATE kms_keys SET doc = ?3 WHERE key_id = ?1 AND doc = ?2"
                             : "INSERT INTO kms_keys(key_id, doc) VALUES(?1, ?3)";
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(c->db, sql, -1, &s, NULL);
    if (rc != SQLITE_OK)
        return sq_fail(c, rc, "kms key statement");
    sq_bind_text(s, 1, a->id);
    if (a->old)
        sq_bind_text(s, 2, a->old);
    sq_bind_text(s, 3, a->doc);
    rc = sqlite3_step(s);
    wh_status_t st = WH_OK;
    if ((rc & 0xff) == SQLITE_CONSTRAINT)
        st = WH_ERR_EXISTS;
    else if (rc != SQLITE_DONE)
        st = sq_fail(c, rc, "kms key write");
    else if (sqlite3_changes(c->db) == 0)
        st = WH_ERR_NOT_FOUND;
    sqlite3_finalize(s);
    return st;
}

wh_status_t sq_kms_key_put(meta_t *m, const char *id, const char *old, const char *doc)
{
    sq_kms_arg_t a = {id, old, doc};
    return sq_write(SQ(m), tx_kms_put, &a);
}

/* Rows of sql (key_id, doc), id bound at 1 when given. */
static wh_status_t kms_rows(meta_t *mm, const char *sql, const char *id, meta_policy_t **out,
                            size_t *n)
{
    sq_conn_t *c = &SQ(mm)->rd;
    meta_policy_t *arr = NULL;
    size_t cnt = 0, cap = 0;
    pthread_mutex_lock(&c->lock);
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(c->db, sql, -1, &s, NULL);
    wh_status_t st = rc == SQLITE_OK ? WH_OK : sq_fail(c, rc, "kms key statement");
    if (st == WH_OK && id)
        sq_bind_text(s, 1, id);
    while (st == WH_OK && (rc = sqlite3_step(s)) != SQLITE_DONE) {
        if (rc != SQLITE_ROW) {
            st = sq_fail(c, rc, "kms key read");
            break;
        }
        if (!meta_grow((void **)&arr, &cap, cnt + 1, sizeof *arr)) {
            st = WH_ERR_NOMEM;
            break;
        }
        sq_col_copy(s, 0, arr[cnt].name, sizeof arr[cnt].name);
        if (!(arr[cnt].doc = sq_col_dup(s, 1))) {
            st = WH_ERR_NOMEM;
            break;
        }
        cnt++;
    }
    sqlite3_finalize(s);
    pthread_mutex_unlock(&c->lock);
    if (st != WH_OK) {
        meta_policies_free(arr, cnt);
        return st;
    }
    *out = arr;
    *n = cnt;
    return WH_OK;
}

wh_status_t sq_kms_key_get(meta_t *m, const char *id, char **doc)
{
    meta_policy_t *p = NULL;
    size_t n = 0;
    *doc = NULL;
    wh_status_t st = kms_rows(m, "SELECT key_id, doc FROM kms_keys WHERE key_id = ?1", id, &p, &n);
    if (st == WH_OK && n == 0)
        st = WH_ERR_NOT_FOUND;
    if (st == WH_OK) {
        *doc = p[0].doc;
        p[0].doc = NULL;
    }
    meta_policies_free(p, n);
    return st;
}

wh_status_t sq_kms_key_list(meta_t *m, meta_policy_t **out, size_t *n)
{
    return kms_rows(m, "SELECT key_id, doc FROM kms_keys ORDER BY key_id", NULL, out, n);
}
