/* SPDX-License-Identifier: Apache-2.0 */
/* The identity rules of the metadata table, written once for every backend (meta_ident.c):
 * an access key or an inline policy belongs to a user that exists, and a user is deleted only
 * without keys and policies unless forced (then with them), each in the caller's write
 * transaction.
 *
 * A backend gives the rules a meta_ident_dialect_t: the row operations they are made of, each
 * one statement of its own SQL dialect, run on the transaction's connection (conn); the
 * slots that run them are meta_rules.h's. */
#ifndef WH_META_META_IDENT_H
#define WH_META_META_IDENT_H

#include "meta/meta.h"

/* How user_check holds the user's row until the transaction ends. */
typedef enum {
    META_USER_READ,   /* not at all: a read */
    META_USER_SHARE,  /* against its delete: a key or policy is being added to it */
    META_USER_UPDATE, /* against any other write: it is being deleted */
} meta_user_lock_t;

typedef struct meta_ident_dialect {
    /* NOT_FOUND unless the user exists. (SQLite's writer lock already holds every row.) */
    wh_status_t (*user_check)(void *conn, const char *name, meta_user_lock_t lock);
    /* *has whether the user has an access key or an inline policy. */
    wh_status_t (*user_has_dependants)(void *conn, const char *name, bool *has);
    /* Deletes the user's access keys, its inline policies and its row. */
    wh_status_t (*user_rows_delete)(void *conn, const char *name);
    /* Inserts the key; EXISTS when its id is taken. */
    wh_status_t (*key_insert)(void *conn, const meta_access_key_t *k);
    /* Inserts or replaces the user's inline policy. */
    wh_status_t (*policy_upsert)(void *conn, const char *user, const char *name, const char *doc);
} meta_ident_dialect_t;

#endif
