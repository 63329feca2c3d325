/* SPDX-License-Identifier: Apache-2.0 */
/* The SQLite metadata backend by itself: a new database gets the schema version this build
 * writes, one newer than the build is refused, the tables it offers answer through meta.h's
 * dispatch, and the cluster's table it does not offer answers WH_ERR_UNSUPPORTED. */
#include "check.h"
#include "meta/meta.h"
#include "meta_sqlite/meta_sqlite_int.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int user_version(const char *path)
{
    sqlite3 *db = NULL;
    int v = -1;
    sqlite3_stmt *s = NULL;
    if (sqlite3_open(path, &db) == SQLITE_OK &&
        sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &s, NULL) == SQLITE_OK &&
        sqlite3_step(s) == SQLITE_ROW)
        v = sqlite3_column_int(s, 0);
    sqlite3_finalize(s);
    sqlite3_close(db);
    return v;
}

static void rm_db(const char *dir, const char *path)
{
    char p[512];
    unlink(path);
    snprintf(p, sizeof p, "%s-wal", path);
    unlink(p);
    snprintf(p, sizeof p, "%s-shm", path);
    unlink(p);
    rmdir(dir);
}

static void test_open_rows_and_tables(void)
{
    char dir[] = "/tmp/wh-sq-test-XXXXXX", path[256];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/meta.db", dir);
    meta_t *m = NULL;
    CHECK(meta_sqlite_open(path, &m) == WH_OK);
    if (!m)
        return;
    CHECK_STR(m->ops->name, "sqlite");
    CHECK(m->ops->objects && m->ops->versions && m->ops->uploads && m->ops->ident);
    CHECK(m->ops->cluster == NULL); /* one process, one node */
    CHECK(meta_set_durable(m, false) == WH_OK);

    CHECK(meta_bucket_create(m, "bkt", 1700000000, "", NULL) == WH_OK);
    CHECK(meta_bucket_create(m, "bkt", 1700000000, "", NULL) == WH_ERR_EXISTS);
    data_obj_meta_t om;
    memset(&om, 0, sizeof om);
    om.size = 5;
    om.mtime = 1700000000;
    snprintf(om.etag, sizeof om.etag, "%032x", 5u);
    data_ref_t ref, old, got;
    memset(&ref, 0, sizeof ref);
    memset(&got, 0, sizeof got);
    snprintf(ref.id, sizeof ref.id, "%032x", 7u);
    CHECK(meta_object_put(m, "bkt", "k", 1, &om, &ref, &old, NULL) == WH_OK);
    CHECK(old.id[0] == '\0'); /* nothing replaced */
    data_ref_clear(&old);
    data_obj_meta_t back;
    memset(&back, 0, sizeof back);
    CHECK(meta_object_get(m, "bkt", "k", 1, &back, &got) == WH_OK);
    CHECK_EQ_U64(back.size, 5);
    CHECK_STR(got.id, ref.id);
    CHECK(meta_data_referenced(m, ref.id) == WH_OK);
    data_obj_meta_free(&back);
    data_ref_clear(&got);
    CHECK(meta_object_get(m, "bkt", "nope", 4, NULL, NULL) == WH_ERR_NOT_FOUND);

    /* The cluster's operations: not offered, never a stub. */
    meta_node_t *nodes = NULL;
    size_t n = 0;
    CHECK(meta_node_list(m, &nodes, &n) == WH_ERR_UNSUPPORTED);
    CHECK(meta_lock_try(m, META_LOCK_MAINTENANCE) == WH_ERR_UNSUPPORTED);
    meta_close(m);
    CHECK(user_version(path) == META_SCHEMA_VERSION);
    rm_db(dir, path);
}

static void test_newer_schema_refused(void)
{
    char dir[] = "/tmp/wh-sq-test-XXXXXX", path[256];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/meta.db", dir);
    sqlite3 *db = NULL;
    CHECK(sqlite3_open(path, &db) == SQLITE_OK);
    char sql[64];
    snprintf(sql, sizeof sql, "PRAGMA user_version=%d", META_SCHEMA_VERSION + 1);
    CHECK(sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(db);
    meta_t *m = NULL;
    CHECK(meta_sqlite_open(path, &m) == WH_ERR_UNSUPPORTED);
    CHECK(m == NULL);
    rm_db(dir, path);
}

int main(void)
{
    RUN(test_open_rows_and_tables);
    RUN(test_newer_schema_refused);
    return check_done();
}
