/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the metadata table's identity and access rows (users, access keys, inline user
 * policies; bucket owners, ACLs and policies; object owners and ACLs) and of the schema
 * migration from version 2, on SQLite and (run again under pgserver.py) PostgreSQL. */
#include "base/log.h"
#include "helpers.h"
#include "meta/meta.h"

#include <sqlite3.h>
#include <time.h>

static meta_t *open_meta(const char *dir)
{
    meta_t *m = NULL;
    CHECK(th_meta_open(dir, &m) == WH_OK);
    if (m)
        CHECK(meta_set_durable(m, false) == WH_OK);
    return m;
}

static meta_user_t mk_user(const char *name, int i)
{
    meta_user_t u;
    memset(&u, 0, sizeof u);
    snprintf(u.name, sizeof u.name, "%s", name);
    snprintf(u.user_id, sizeof u.user_id, "AIDATEST%013d", i);
    snprintf(u.canonical_id, sizeof u.canonical_id, "%064d", i);
    u.created = 1700000000 + i;
    return u;
}

static meta_access_key_t mk_key(const char *ak, const char *user, int t)
{
    meta_access_key_t k;
    memset(&k, 0, sizeof k);
    snprintf(k.access_key, sizeof k.access_key, "%s", ak);
    snprintf(k.user, sizeof k.user, "%s", user);
    snprintf(k.secret_sealed, sizeof k.secret_sealed, "v1:sealed-%s", ak);
    k.active = true;
    k.created = 1700000100 + t;
    return k;
}

static void test_users_and_keys(void)
{
    char *dir = th_mkdtemp();
    meta_t *m = open_meta(dir);
    meta_user_t alice = mk_user("alice", 1), bob = mk_user("bob@example.com", 2);
    CHECK(meta_user_create(m, &alice) == WH_OK);
    CHECK(meta_user_create(m, &bob) == WH_OK);
    CHECK(meta_user_create(m, &alice) == WH_ERR_EXISTS);
    meta_user_t dup = mk_user("alice2", 1); /* same ids as alice: unique */
    CHECK(meta_user_create(m, &dup) == WH_ERR_EXISTS);
    meta_user_t got;
    CHECK(meta_user_get(m, "alice", &got) == WH_OK);
    CHECK_STR(got.user_id, alice.user_id);
    CHECK_STR(got.canonical_id, alice.canonical_id);
    CHECK_EQ_U64(got.created, alice.created);
    CHECK(meta_user_get(m, "carol", &got) == WH_ERR_NOT_FOUND);
    CHECK(meta_user_get(m, "ALICE", &got) == WH_ERR_NOT_FOUND); /* names are exact */
    meta_user_t *all = NULL;
    size_t n = 0;
    CHECK(meta_user_list(m, &all, &n) == WH_OK);
    CHECK_EQ_U64(n, 2);
    if (n == 2) {
        CHECK_STR(all[0].name, "alice");
        CHECK_STR(all[1].name, "bob@example.com");
    }
    free(all);

    meta_access_key_t k1 = mk_key("AKIAALICE0000000001", "alice", 1);
    meta_access_key_t k2 = mk_key("AKIAALICE0000000002", "alice", 2);
    meta_access_key_t kb = mk_key("AKIABOB000000000001", "bob@example.com", 3);
    CHECK(meta_key_create(m, &k1) == WH_OK);
    CHECK(meta_key_create(m, &k2) == WH_OK);
    CHECK(meta_key_create(m, &kb) == WH_OK);
    CHECK(meta_key_create(m, &k1) == WH_ERR_EXISTS);
    meta_access_key_t orphan = mk_key("AKIANOBODY000000001", "nobody", 4);
    CHECK(meta_key_create(m, &orphan) == WH_ERR_NOT_FOUND);

    meta_access_key_t k;
    CHECK(meta_key_get(m, "AKIAALICE0000000002", &k) == WH_OK);
    CHECK_STR(k.user, "alice");
    CHECK_STR(k.secret_sealed, "v1:sealed-AKIAALICE0000000002");
    CHECK_STR(k.canonical_id, alice.canonical_id);
    CHECK_STR(k.user_id, alice.user_id);
    CHECK(k.active);
    CHECK(meta_key_get(m, "AKIAUNKNOWN00000000", &k) == WH_ERR_NOT_FOUND);

    /* The SigV4 lookup's cost on this backend (printed; PostgreSQL: a prepared statement). */
    {
        enum { N = 2000 };
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        int ok = 0;
        for (int i = 0; i < N; i++)
            ok += meta_key_get(m, "AKIAALICE0000000002", &k) == WH_OK;
        clock_gettime(CLOCK_MONOTONIC, &t1);
        CHECK(ok == N);
        double us =
            ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / N / 1e3;
        printf("measure: key_get %.1f us per lookup (%s, %d lookups)\n", us,
               th_meta_url(dir)[0] ? "PostgreSQL" : "SQLite", N);
    }
    CHECK(meta_key_set_active(m, "AKIAALICE0000000002", false) == WH_OK);
    CHECK(meta_key_get(m, "AKIAALICE0000000002", &k) == WH_OK);
    CHECK(!k.active);
    CHECK(meta_key_set_active(m, "AKIAALICE0000000002", true) == WH_OK);
    CHECK(meta_key_get(m, "AKIAALICE0000000002", &k) == WH_OK);
    CHECK(k.active);
    CHECK(meta_key_set_active(m, "AKIAUNKNOWN00000000", true) == WH_ERR_NOT_FOUND);

    meta_access_key_t *keys = NULL;
    CHECK(meta_key_list(m, "alice", &keys, &n) == WH_OK);
    CHECK_EQ_U64(n, 2);
    if (n == 2) {
        CHECK_STR(keys[0].access_key, "AKIAALICE0000000001");
        CHECK_STR(keys[1].access_key, "AKIAALICE0000000002");
    }
    free(keys);
    keys = NULL;
    CHECK(meta_key_list(m, "nobody", &keys, &n) == WH_ERR_NOT_FOUND);
    free(keys);

    CHECK(meta_key_delete(m, "AKIAALICE0000000001") == WH_OK);
    CHECK(meta_key_delete(m, "AKIAALICE0000000001") == WH_ERR_NOT_FOUND);
    CHECK(meta_key_get(m, "AKIAALICE0000000001", &k) == WH_ERR_NOT_FOUND);

    /* Policies. */
    const char *doc = "{\"Version\":\"2012-10-17\",\"Statement\":[]}";
    CHECK(meta_user_policy_put(m, "alice", "read", doc) == WH_OK);
    CHECK(meta_user_policy_put(m, "alice", "all", "{}") == WH_OK);
    CHECK(meta_user_policy_put(m, "alice", "all", "{\"v\":2}") == WH_OK); /* replaces */
    CHECK(meta_user_policy_put(m, "nobody", "x", "{}") == WH_ERR_NOT_FOUND);
    char *d = NULL;
    CHECK(meta_user_policy_get(m, "alice", "read", &d) == WH_OK);
    CHECK_STR(d, doc);
    free(d);
    CHECK(meta_user_policy_get(m, "alice", "none", &d) == WH_ERR_NOT_FOUND);
    meta_policy_t *pols = NULL;
    CHECK(meta_user_policy_list(m, "alice", &pols, &n) == WH_OK);
    CHECK_EQ_U64(n, 2);
    if (n == 2) {
        CHECK_STR(pols[0].name, "all");
        CHECK_STR(pols[0].doc, "{\"v\":2}");
        CHECK_STR(pols[1].name, "read");
    }
    meta_policies_free(pols, n);
    pols = NULL;
    CHECK(meta_user_policy_list(m, "bob@example.com", &pols, &n) == WH_OK);
    CHECK_EQ_U64(n, 0);
    meta_policies_free(pols, n);
    CHECK(meta_user_policy_delete(m, "alice", "read") == WH_OK);
    CHECK(meta_user_policy_delete(m, "alice", "read") == WH_ERR_NOT_FOUND);

    /* Delete: refused while keys or policies remain, unless forced (which drops them). */
    CHECK(meta_user_delete(m, "alice", false) == WH_ERR_NOT_EMPTY);
    CHECK(meta_user_delete(m, "alice", true) == WH_OK);
    CHECK(meta_user_get(m, "alice", &got) == WH_ERR_NOT_FOUND);
    CHECK(meta_key_get(m, "AKIAALICE0000000002", &k) == WH_ERR_NOT_FOUND);
    CHECK(meta_user_delete(m, "alice", true) == WH_ERR_NOT_FOUND);
    CHECK(meta_key_delete(m, "AKIABOB000000000001") == WH_OK);
    CHECK(meta_user_delete(m, "bob@example.com", false) == WH_OK);
    /* A re-created user starts with no keys or policies. */
    CHECK(meta_user_create(m, &alice) == WH_OK);
    pols = NULL;
    CHECK(meta_user_policy_list(m, "alice", &pols, &n) == WH_OK);
    CHECK_EQ_U64(n, 0);
    meta_policies_free(pols, n);
    meta_close(m);
    th_rmdir(dir);
}

static void test_owners_acls_policies(void)
{
    char *dir = th_mkdtemp();
    meta_t *m = open_meta(dir);
    CHECK(meta_bucket_create(m, "owned", 1, "abc123", "acl-text-1") == WH_OK);
    CHECK(meta_bucket_create(m, "legacy", 1, "", NULL) == WH_OK);
    data_bucket_auth_t a;
    CHECK(meta_bucket_auth_get(m, "owned", &a) == WH_OK);
    CHECK_STR(a.owner, "abc123");
    CHECK_STR(a.acl, "acl-text-1");
    CHECK(a.policy == NULL);
    data_bucket_auth_free(&a);
    CHECK(meta_bucket_auth_get(m, "legacy", &a) == WH_OK);
    CHECK_STR(a.owner, "");
    CHECK(a.acl == NULL && a.policy == NULL);
    data_bucket_auth_free(&a);
    CHECK(meta_bucket_auth_get(m, "none", &a) == WH_ERR_NOT_FOUND);
    CHECK(meta_bucket_set_policy(m, "owned", "{\"Statement\":[]}") == WH_OK);
    CHECK(meta_bucket_set_acl(m, "owned", "acl-text-2") == WH_OK);
    CHECK(meta_bucket_auth_get(m, "owned", &a) == WH_OK);
    CHECK_STR(a.acl, "acl-text-2");
    CHECK_STR(a.policy, "{\"Statement\":[]}");
    data_bucket_auth_free(&a);
    CHECK(meta_bucket_set_policy(m, "owned", NULL) == WH_OK);
    CHECK(meta_bucket_set_acl(m, "owned", NULL) == WH_OK);
    CHECK(meta_bucket_auth_get(m, "owned", &a) == WH_OK);
    CHECK(a.acl == NULL && a.policy == NULL);
    CHECK_STR(a.owner, "abc123");
    data_bucket_auth_free(&a);
    CHECK(meta_bucket_set_acl(m, "none", "x") == WH_ERR_NOT_FOUND);
    CHECK(meta_bucket_set_policy(m, "none", "{}") == WH_ERR_NOT_FOUND);

    /* Objects keep owner and ACL; a replace takes the new row's. */
    data_obj_meta_t om;
    memset(&om, 0, sizeof om);
    om.size = 3;
    snprintf(om.owner, sizeof om.owner, "writer1");
    om.acl = "obj-acl";
    data_ref_t ref, old;
    memset(&ref, 0, sizeof ref);
    snprintf(ref.id, sizeof ref.id, "%032x", 1);
    CHECK(meta_object_put(m, "owned", "k", 1, &om, &ref, &old, NULL) == WH_OK);
    data_ref_clear(&old);
    data_obj_meta_t g;
    CHECK(meta_object_get(m, "owned", "k", 1, &g, NULL) == WH_OK);
    CHECK_STR(g.owner, "writer1");
    CHECK_STR(g.acl, "obj-acl");
    data_obj_meta_free(&g);
    CHECK(meta_object_set_acl(m, "owned", "k", 1, "acl-2") == WH_OK);
    CHECK(meta_object_get(m, "owned", "k", 1, &g, NULL) == WH_OK);
    CHECK_STR(g.acl, "acl-2");
    CHECK_STR(g.owner, "writer1");
    data_obj_meta_free(&g);
    CHECK(meta_object_set_acl(m, "owned", "nokey", 5, "x") == WH_ERR_NOT_FOUND);
    om.acl = NULL;
    snprintf(om.owner, sizeof om.owner, "writer2");
    snprintf(ref.id, sizeof ref.id, "%032x", 2);
    CHECK(meta_object_put(m, "owned", "k", 1, &om, &ref, &old, NULL) == WH_OK);
    data_ref_clear(&old);
    CHECK(meta_object_get(m, "owned", "k", 1, &g, NULL) == WH_OK);
    CHECK_STR(g.owner, "writer2");
    CHECK(g.acl == NULL);
    data_obj_meta_free(&g);

    /* Uploads carry owner and ACL to the completed object. */
    memset(&om, 0, sizeof om);
    snprintf(om.owner, sizeof om.owner, "uploader");
    om.acl = "up-acl";
    const char *uid = "00000000000000000000000000000abc";
    CHECK(meta_upload_create(m, "owned", "mp", uid, &om, 1) == WH_OK);
    data_obj_meta_t um;
    memset(&um, 0, sizeof um);
    CHECK(meta_upload_get(m, "owned", "mp", uid, &um) == WH_OK);
    CHECK_STR(um.owner, "uploader");
    CHECK_STR(um.acl, "up-acl");
    data_obj_meta_free(&um);
    meta_close(m);
    th_rmdir(dir);
}

/* ---- migration from schema version 2 ----
 * The SQL of the release at version 2, verbatim, so the test does not depend on how the step
 * list spells steps 1 and 2 now. */
static const char SQ_V2[] =
    "CREATE TABLE buckets(name TEXT PRIMARY KEY COLLATE BINARY, created INTEGER NOT NULL);"
    "CREATE TABLE objects(bucket TEXT NOT NULL COLLATE BINARY, key BLOB NOT NULL,"
    "  size INTEGER NOT NULL, mtime INTEGER NOT NULL, etag TEXT NOT NULL,"
    "  content_type TEXT NOT NULL, user_meta TEXT, crc32c TEXT NOT NULL,"
    "  crc64nvme TEXT NOT NULL, parts INTEGER NOT NULL, file_id TEXT NOT NULL,"
    "  PRIMARY KEY(bucket, key)) WITHOUT ROWID;"
    "CREATE UNIQUE INDEX objects_file ON objects(file_id);"
    "CREATE TABLE uploads(upload_id TEXT PRIMARY KEY, bucket TEXT NOT NULL COLLATE BINARY,"
    "  key BLOB NOT NULL, initiated INTEGER NOT NULL, content_type TEXT NOT NULL,"
    "  user_meta TEXT);"
    "CREATE INDEX uploads_key ON uploads(bucket, key, initiated);"
    "CREATE TABLE parts(upload_id TEXT NOT NULL, number INTEGER NOT NULL,"
    "  size INTEGER NOT NULL, etag TEXT NOT NULL, mtime INTEGER NOT NULL,"
    "  crc64nvme TEXT NOT NULL, crc32c TEXT NOT NULL, file_id TEXT NOT NULL,"
    "  PRIMARY KEY(upload_id, number)) WITHOUT ROWID;"
    "CREATE UNIQUE INDEX parts_file ON parts(file_id);"
    "CREATE TABLE chunks(data_id TEXT NOT NULL, idx INTEGER NOT NULL, chunk_id TEXT NOT NULL,"
    "  off INTEGER NOT NULL, len INTEGER NOT NULL, crc64nvme INTEGER NOT NULL,"
    "  replicas TEXT NOT NULL, ec_k INTEGER NOT NULL, ec_m INTEGER NOT NULL,"
    "  ec_index INTEGER NOT NULL, ec_stripe INTEGER NOT NULL,"
    "  PRIMARY KEY(data_id, idx)) WITHOUT ROWID;"
    "INSERT INTO buckets VALUES('old', 1600000000);"
    "INSERT INTO objects VALUES('old', X'6b6579', 5, 1600000001, 'etag5', 'text/plain',"
    "  '{\"x-amz-meta-a\":\"b\"}', '', 'crc', 0, '0000000000000000000000000000000a');"
    "INSERT INTO uploads VALUES('00000000000000000000000000000def', 'old', X'6d70',"
    "  1600000002, 'x/y', NULL);"
    "PRAGMA user_version=2;";

static const char PG_V2[] =
    "CREATE TABLE buckets(name text COLLATE \"C\" PRIMARY KEY, created bigint NOT NULL);"
    "CREATE TABLE objects(bucket text COLLATE \"C\" NOT NULL, key bytea NOT NULL,"
    "  size bigint NOT NULL, mtime bigint NOT NULL, etag text NOT NULL,"
    "  content_type text NOT NULL, user_meta text, crc32c text NOT NULL,"
    "  crc64nvme text NOT NULL, parts integer NOT NULL, data_id text NOT NULL,"
    "  PRIMARY KEY(bucket, key));"
    "CREATE INDEX objects_data ON objects(data_id);"
    "CREATE TABLE uploads(upload_id text PRIMARY KEY, bucket text COLLATE \"C\" NOT NULL,"
    "  key bytea NOT NULL, initiated bigint NOT NULL, content_type text NOT NULL,"
    "  user_meta text);"
    "CREATE INDEX uploads_key ON uploads(bucket, key, initiated);"
    "CREATE TABLE parts(upload_id text NOT NULL, number integer NOT NULL, size bigint NOT NULL,"
    "  etag text NOT NULL, mtime bigint NOT NULL, crc64nvme text NOT NULL,"
    "  crc32c text NOT NULL, data_id text NOT NULL, PRIMARY KEY(upload_id, number));"
    "CREATE INDEX parts_data ON parts(data_id);"
    "CREATE TABLE chunks(data_id text NOT NULL, idx integer NOT NULL, chunk_id text NOT NULL,"
    "  off bigint NOT NULL, len bigint NOT NULL, crc64nvme bigint NOT NULL,"
    "  replicas integer[] NOT NULL, ec_k integer NOT NULL DEFAULT 0,"
    "  ec_m integer NOT NULL DEFAULT 0, ec_index integer NOT NULL DEFAULT 0,"
    "  ec_stripe bigint NOT NULL DEFAULT 0, PRIMARY KEY(data_id, idx));"
    "CREATE INDEX chunks_chunk ON chunks(chunk_id);"
    "CREATE TABLE nodes(id serial PRIMARY KEY, addr text NOT NULL UNIQUE,"
    "  capacity bigint NOT NULL, free bigint NOT NULL,"
    "  heartbeat timestamptz NOT NULL DEFAULT now(),"
    "  registered timestamptz NOT NULL DEFAULT now());"
    "CREATE TABLE gc_queue(seq bigserial PRIMARY KEY, chunk_id text NOT NULL,"
    "  node integer NOT NULL, queued timestamptz NOT NULL DEFAULT now());"
    "ALTER TABLE gc_queue ADD COLUMN not_before timestamptz NOT NULL DEFAULT now();"
    "CREATE INDEX gc_queue_chunk ON gc_queue(chunk_id);"
    "CREATE INDEX chunks_replicas ON chunks USING gin(replicas);"
    "CREATE TABLE wharf_schema(version integer NOT NULL,"
    "  applied timestamptz NOT NULL DEFAULT now());"
    "INSERT INTO wharf_schema(version) VALUES(1), (2);"
    "INSERT INTO buckets VALUES('old', 1600000000);"
    "INSERT INTO objects VALUES('old', '\\x6b6579', 5, 1600000001, 'etag5', 'text/plain',"
    "  '{\"x-amz-meta-a\":\"b\"}', '', 'crc', 0, '0000000000000000000000000000000a');"
    "INSERT INTO uploads VALUES('00000000000000000000000000000def', 'old', '\\x6d70',"
    "  1600000002, 'x/y', NULL);";

static void write_v2(const char *dir)
{
    const char *url = th_meta_url(dir);
    if (url[0]) {
        PGconn *c = PQconnectdb(url);
        CHECK(PQstatus(c) == CONNECTION_OK);
        PGresult *r = PQexec(c, PG_V2);
        CHECK(PQresultStatus(r) == PGRES_COMMAND_OK);
        if (PQresultStatus(r) != PGRES_COMMAND_OK)
            fprintf(stderr, "v2 schema: %s\n", PQerrorMessage(c));
        PQclear(r);
        PQfinish(c);
        return;
    }
    char path[512];
    snprintf(path, sizeof path, "%s/meta.db", dir);
    sqlite3 *db = NULL;
    CHECK(sqlite3_open(path, &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db, "PRAGMA journal_mode=WAL;", NULL, NULL, NULL) == SQLITE_OK);
    CHECK(sqlite3_exec(db, SQ_V2, NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(db);
}

static void test_migrate_from_v2(void)
{
    char *dir = th_mkdtemp();
    write_v2(dir);
    meta_t *m = open_meta(dir);
    if (!m) {
        th_rmdir(dir);
        return;
    }
    /* The old rows, whole; owner "" (root) and no ACL. */
    data_obj_meta_t g;
    data_ref_t ref;
    CHECK(meta_object_get(m, "old", "key", 3, &g, &ref) == WH_OK);
    CHECK_EQ_U64(g.size, 5);
    CHECK_EQ_U64(g.mtime, 1600000001);
    CHECK_STR(g.etag, "etag5");
    CHECK_STR(g.content_type, "text/plain");
    CHECK_STR(g.user_meta_json, "{\"x-amz-meta-a\":\"b\"}");
    CHECK_STR(ref.id, "0000000000000000000000000000000a");
    CHECK_STR(g.owner, "");
    CHECK(g.acl == NULL);
    data_obj_meta_free(&g);
    data_ref_clear(&ref);
    data_obj_meta_t um;
    memset(&um, 0, sizeof um);
    CHECK(meta_upload_get(m, "old", "mp", "00000000000000000000000000000def", &um) == WH_OK);
    CHECK_STR(um.content_type, "x/y");
    CHECK_STR(um.owner, "");
    data_obj_meta_free(&um);
    data_bucket_auth_t a;
    CHECK(meta_bucket_auth_get(m, "old", &a) == WH_OK);
    CHECK_STR(a.owner, "");
    data_bucket_auth_free(&a);
    /* The new tables work. */
    meta_user_t u = mk_user("after-migration", 9);
    CHECK(meta_user_create(m, &u) == WH_OK);
    meta_close(m);
    /* Reopening a current database migrates nothing and keeps everything. */
    m = open_meta(dir);
    if (m) {
        CHECK(meta_user_get(m, "after-migration", &u) == WH_OK);
        CHECK(meta_object_get(m, "old", "key", 3, NULL, NULL) == WH_OK);
        meta_close(m);
    }
    /* The recorded version is the current one. */
    const char *url = th_meta_url(dir);
    if (url[0]) {
        PGconn *c = PQconnectdb(url);
        PGresult *r = PQexec(c, "SELECT max(version) FROM wharf_schema");
        CHECK(PQresultStatus(r) == PGRES_TUPLES_OK &&
              atoi(PQgetvalue(r, 0, 0)) == META_SCHEMA_VERSION);
        PQclear(r);
        PQfinish(c);
    } else {
        char path[512];
        snprintf(path, sizeof path, "%s/meta.db", dir);
        sqlite3 *db = NULL;
        sqlite3_stmt *s = NULL;
        CHECK(sqlite3_open(path, &db) == SQLITE_OK);
        CHECK(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &s, NULL) == SQLITE_OK);
        CHECK(sqlite3_step(s) == SQLITE_ROW && sqlite3_column_int(s, 0) == META_SCHEMA_VERSION);
        sqlite3_finalize(s);
        sqlite3_close(db);
    }
    th_rmdir(dir);
}

/* A database newer than this build is refused, and left as it was. */
static void test_newer_refused(void)
{
    if (th_meta_url("x")[0])
        return; /* the PostgreSQL path of the same check is pg_migrate's; SQLite is enough */
    char *dir = th_mkdtemp();
    char path[512];
    snprintf(path, sizeof path, "%s/meta.db", dir);
    sqlite3 *db = NULL;
    CHECK(sqlite3_open(path, &db) == SQLITE_OK);
    char sql[64];
    snprintf(sql, sizeof sql, "PRAGMA user_version=%d", META_SCHEMA_VERSION + 1);
    CHECK(sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(db);
    meta_t *m = NULL;
    CHECK(store_meta_open(path, &m) == WH_ERR_UNSUPPORTED);
    CHECK(m == NULL);
    th_rmdir(dir);
}

/* The authorization reads are cached per handle, and every change made through another
 * handle on the same data (another process: `wharfd key delete` beside a running server) is
 * seen by the next read. Two handles on one SQLite file stand for the two processes. */
static void test_cache_sees_other_handles(void)
{
    char *dir = th_mkdtemp();
    meta_t *srv = open_meta(dir), *cli = open_meta(dir);
    meta_user_t u = mk_user("carol", 7);
    CHECK(meta_user_create(cli, &u) == WH_OK);
    meta_access_key_t k = mk_key("AKIACAROL0000000001", "carol", 7), got;
    CHECK(meta_key_create(cli, &k) == WH_OK);
    CHECK(meta_bucket_create(cli, "cached-bucket", 1700000000, u.canonical_id, NULL) == WH_OK);
    uint64_t h0, m0, h1, m1;
    meta_cache_stats(srv, &h0, &m0);
    for (int i = 0; i < 3; i++) { /* the first read fills, the next two hit */
        CHECK(meta_key_get(srv, k.access_key, &got) == WH_OK);
        CHECK(got.active);
    }
    meta_policy_t *ps = NULL;
    size_t n = 9;
    CHECK(meta_user_policy_list(srv, "carol", &ps, &n) == WH_OK);
    CHECK_EQ_U64(n, 0);
    meta_policies_free(ps, n); /* PostgreSQL's answer may be an empty array */
    ps = NULL;
    data_bucket_auth_t a;
    memset(&a, 0, sizeof a);
    CHECK(meta_bucket_auth_get(srv, "cached-bucket", &a) == WH_OK);
    CHECK(a.policy == NULL);
    data_bucket_auth_free(&a);
    meta_cache_stats(srv, &h1, &m1);
    bool cached = th_meta_url(dir)[0] == '\0'; /* PostgreSQL is not cached */
    if (cached)
        CHECK_EQ_U64(h1 - h0, 2);

    /* Disabled, then deleted, through the other handle: refused at the next read. */
    CHECK(meta_key_set_active(cli, k.access_key, false) == WH_OK);
    CHECK(meta_key_get(srv, k.access_key, &got) == WH_OK);
    CHECK(!got.active);
    CHECK(meta_key_delete(cli, k.access_key) == WH_OK);
    CHECK(meta_key_get(srv, k.access_key, &got) == WH_ERR_NOT_FOUND);
    /* A policy put and a bucket policy set elsewhere are read at once. */
    CHECK(meta_user_policy_put(cli, "carol", "p1", "{\"Version\":\"2012-10-17\"}") == WH_OK);
    CHECK(meta_user_policy_list(srv, "carol", &ps, &n) == WH_OK);
    CHECK_EQ_U64(n, 1);
    if (n == 1)
        CHECK_STR(ps[0].name, "p1");
    meta_policies_free(ps, n);
    CHECK(meta_bucket_set_policy(cli, "cached-bucket", "{\"Statement\":[]}") == WH_OK);
    memset(&a, 0, sizeof a);
    CHECK(meta_bucket_auth_get(srv, "cached-bucket", &a) == WH_OK);
    CHECK(a.policy && strcmp(a.policy, "{\"Statement\":[]}") == 0);
    data_bucket_auth_free(&a);
    /* The user deleted with its policies; the bucket deleted: gone for the cached handle. */
    CHECK(meta_user_delete(cli, "carol", true) == WH_OK);
    CHECK(meta_user_policy_list(srv, "carol", &ps, &n) == WH_ERR_NOT_FOUND);
    meta_part_t *parts = NULL;
    size_t np = 0;
    CHECK(meta_bucket_delete(cli, "cached-bucket", &parts, &np) == WH_OK);
    meta_parts_free(parts, np);
    memset(&a, 0, sizeof a);
    CHECK(meta_bucket_auth_get(srv, "cached-bucket", &a) == WH_ERR_NOT_FOUND);
    meta_close(cli);
    meta_close(srv);
    th_rmdir(dir);
}

int main(void)
{
    wh_log_set_level(WH_LOG_ERROR);
    RUN(test_users_and_keys);
    RUN(test_owners_acls_policies);
    RUN(test_migrate_from_v2);
    RUN(test_newer_refused);
    RUN(test_cache_sees_other_handles);
    return check_done();
}
