/* SPDX-License-Identifier: Apache-2.0 */
/* SQLite metadata backend: the schema as a list of migration steps. PRAGMA user_version records
 * the version; step N takes it from N-1 to N. At open, the writer applies the missing steps in
 * order inside one transaction, so a crash during a migration leaves the old version intact.
 * A new step is appended here (and in meta_pg_schema.c) and META_SCHEMA_VERSION raised. */
#include "base/log.h"
#include "base/util.h"
#include "meta_sqlite/meta_sqlite_int.h"

#include <stdio.h>
#include <stdlib.h>

static const char *const SQ_STEPS[] = {
    /* 1: buckets, objects, uploads, parts. (IF NOT EXISTS: releases before the step list
     * created the whole schema this way, whatever the recorded version.) */
    "CREATE TABLE IF NOT EXISTS buckets("
    "  name TEXT PRIMARY KEY COLLATE BINARY,"
    "  created INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS objects("
    "  bucket TEXT NOT NULL COLLATE BINARY,"
    "  key BLOB NOT NULL,"
    "  size INTEGER NOT NULL,"
    "  mtime INTEGER NOT NULL,"
    "  etag TEXT NOT NULL,"
    "  content_type TEXT NOT NULL,"
    "  user_meta TEXT,"
    "  crc32c TEXT NOT NULL,"
    "  crc64nvme TEXT NOT NULL,"
    "  parts INTEGER NOT NULL,"
    "  file_id TEXT NOT NULL,"
    "  PRIMARY KEY(bucket, key)) WITHOUT ROWID;"
    "CREATE UNIQUE INDEX IF NOT EXISTS objects_file ON objects(file_id);"
    "CREATE TABLE IF NOT EXISTS uploads("
    "  upload_id TEXT PRIMARY KEY,"
    "  bucket TEXT NOT NULL COLLATE BINARY,"
    "  key BLOB NOT NULL,"
    "  initiated INTEGER NOT NULL,"
    "  content_type TEXT NOT NULL,"
    "  user_meta TEXT);"
    "CREATE INDEX IF NOT EXISTS uploads_key ON uploads(bucket, key, initiated);"
    "CREATE TABLE IF NOT EXISTS parts("
    "  upload_id TEXT NOT NULL,"
    "  number INTEGER NOT NULL,"
    "  size INTEGER NOT NULL,"
    "  etag TEXT NOT NULL,"
    "  mtime INTEGER NOT NULL,"
    "  crc64nvme TEXT NOT NULL,"
    "  crc32c TEXT NOT NULL,"
    "  file_id TEXT NOT NULL,"
    "  PRIMARY KEY(upload_id, number)) WITHOUT ROWID;"
    "CREATE UNIQUE INDEX IF NOT EXISTS parts_file ON parts(file_id);",
    /* 2: the chunk map of a data id (an object's or a part's bytes), in object order. */
    "CREATE TABLE IF NOT EXISTS chunks("
    "  data_id TEXT NOT NULL,"
    "  idx INTEGER NOT NULL,"
    "  chunk_id TEXT NOT NULL,"
    "  off INTEGER NOT NULL,"
    "  len INTEGER NOT NULL,"
    "  crc64nvme INTEGER NOT NULL,"
    "  replicas TEXT NOT NULL,"
    "  ec_k INTEGER NOT NULL, ec_m INTEGER NOT NULL, ec_index INTEGER NOT NULL,"
    "  ec_stripe INTEGER NOT NULL,"
    "  PRIMARY KEY(data_id, idx)) WITHOUT ROWID;",
    /* 3: identity and access. Owners are canonical ids ("" = root: every row written before
     * this step was written by root); ACLs are the authorization engine's text form (NULL:
     * the default); policies are JSON text. Secrets are stored sealed only. */
    "ALTER TABLE buckets ADD COLUMN owner TEXT NOT NULL DEFAULT '';"
    "ALTER TABLE buckets ADD COLUMN acl TEXT;"
    "ALTER TABLE buckets ADD COLUMN policy TEXT;"
    "ALTER TABLE objects ADD COLUMN owner TEXT NOT NULL DEFAULT '';"
    "ALTER TABLE objects ADD COLUMN acl TEXT;"
    "ALTER TABLE uploads ADD COLUMN owner TEXT NOT NULL DEFAULT '';"
    "ALTER TABLE uploads ADD COLUMN acl TEXT;"
    "CREATE TABLE users("
    "  name TEXT PRIMARY KEY COLLATE BINARY,"
    "  user_id TEXT NOT NULL UNIQUE,"
    "  canonical_id TEXT NOT NULL UNIQUE,"
    "  created INTEGER NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE access_keys("
    "  access_key TEXT PRIMARY KEY COLLATE BINARY,"
    "  user_name TEXT NOT NULL,"
    "  secret_sealed TEXT NOT NULL,"
    "  active INTEGER NOT NULL,"
    "  created INTEGER NOT NULL) WITHOUT ROWID;"
    "CREATE INDEX access_keys_user ON access_keys(user_name, created);"
    "CREATE TABLE user_policies("
    "  user_name TEXT NOT NULL,"
    "  policy_name TEXT NOT NULL,"
    "  document TEXT NOT NULL,"
    "  PRIMARY KEY(user_name, policy_name)) WITHOUT ROWID;",
    /* 4: versions, tags, part sizes. buckets.versioning: 0 never enabled, 1 Enabled, 2
     * Suspended. objects keeps each key's current version (a delete marker too: dm, no
     * file); versions keeps the older ones, same columns, newest first by seq (microseconds,
     * monotonic per key). Rows written before this step are the "null" version. A delete
     * marker has no file, so the file id's uniqueness covers only rows with one. */
    "ALTER TABLE buckets ADD COLUMN versioning INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE objects ADD COLUMN version_id TEXT NOT NULL DEFAULT 'null';"
    "ALTER TABLE objects ADD COLUMN seq INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE objects ADD COLUMN dm INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE objects ADD COLUMN tags TEXT;"
    "ALTER TABLE objects ADD COLUMN part_sizes TEXT;"
    "ALTER TABLE uploads ADD COLUMN tags TEXT;"
    "DROP INDEX IF EXISTS objects_file;"
    "CREATE UNIQUE INDEX objects_file ON objects(file_id) WHERE file_id <> '';"
    "CREATE TABLE versions("
    "  bucket TEXT NOT NULL COLLATE BINARY,"
    "  key BLOB NOT NULL,"
    "  size INTEGER NOT NULL,"
    "  mtime INTEGER NOT NULL,"
    "  etag TEXT NOT NULL,"
    "  content_type TEXT NOT NULL,"
    "  user_meta TEXT,"
    "  crc32c TEXT NOT NULL,"
    "  crc64nvme TEXT NOT NULL,"
    "  parts INTEGER NOT NULL,"
    "  file_id TEXT NOT NULL,"
    "  owner TEXT NOT NULL DEFAULT '',"
    "  acl TEXT,"
    "  version_id TEXT NOT NULL,"
    "  seq INTEGER NOT NULL,"
    "  dm INTEGER NOT NULL,"
    "  tags TEXT,"
    "  part_sizes TEXT,"
    "  PRIMARY KEY(bucket, key, seq)) WITHOUT ROWID;"
    "CREATE UNIQUE INDEX versions_vid ON versions(bucket, key, version_id);"
    "CREATE INDEX versions_file ON versions(file_id) WHERE file_id <> '';",
    /* 5: bucket configurations beside the bucket's row: tags (TagSet), cors (its rules),
     * pab (PublicAccessBlock bits), ownership (ObjectOwnership, 0: none). */
    "ALTER TABLE buckets ADD COLUMN tags TEXT;"
    "ALTER TABLE buckets ADD COLUMN cors TEXT;"
    "ALTER TABLE buckets ADD COLUMN pab INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE buckets ADD COLUMN ownership INTEGER NOT NULL DEFAULT 0;",
    /* 6: the bucket's LifecycleConfiguration document (NULL: none). */
    "ALTER TABLE buckets ADD COLUMN lifecycle TEXT;",
    /* 7: the cluster's identity and damage tables are PostgreSQL's alone (no cluster runs on
     * SQLite); the step keeps the two version numbers in step. */
    "SELECT 1;",
    /* 8: Object Lock. Each version's retention (lock_mode: 0 none, 1 GOVERNANCE, 2
     * COMPLIANCE; lock_until: seconds since the epoch) and legal hold (0/1), on current and
     * older versions alike, and on an upload (what its completion gets). The bucket's
     * ObjectLockConfiguration document (NULL: object lock not enabled). */
    "ALTER TABLE objects ADD COLUMN lock_mode INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE objects ADD COLUMN lock_until INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE objects ADD COLUMN legal_hold INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE versions ADD COLUMN lock_mode INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE versions ADD COLUMN lock_until INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE versions ADD COLUMN legal_hold INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE uploads ADD COLUMN lock_mode INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE uploads ADD COLUMN lock_until INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE uploads ADD COLUMN legal_hold INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE buckets ADD COLUMN object_lock TEXT;",
    /* 9: encryption at rest. sse: NULL for bytes stored as sent, else the object's encryption
     * parameters (store/crypt.h: kind, salt, the sealed data key or the customer key's
     * verifier, part numbers); never a key in clear. An upload keeps them for its parts. */
    "ALTER TABLE objects ADD COLUMN sse TEXT;"
    "ALTER TABLE versions ADD COLUMN sse TEXT;"
    "ALTER TABLE uploads ADD COLUMN sse TEXT;"
    /* and the bucket's default encryption (PutBucketEncryption): "AES256" or NULL. */
    "ALTER TABLE buckets ADD COLUMN encryption TEXT;",
    /* 10: a completed multipart upload of local data is its parts' files, named by its chunk
     * map: recovery asks whether any chunk map names a file. */
    "CREATE INDEX chunks_chunk ON chunks(chunk_id);",
    /* 11: node states and zones are PostgreSQL's alone (no cluster runs on SQLite); the step
     * keeps the two version numbers in step. */
    "SELECT 1;",
    /* 12: the data reference column is data_id, as in PostgreSQL (it was file_id here, from
     * when every object was one local file); the indexes follow the column. */
    "ALTER TABLE objects RENAME COLUMN file_id TO data_id;"
    "ALTER TABLE versions RENAME COLUMN file_id TO data_id;"
    "ALTER TABLE parts RENAME COLUMN file_id TO data_id;",
    /* 13: the key service's master keys (SSE-KMS): one row per key id, doc its state and
     * versions, each sealed under the server key (ident/kms.c). */
    /* (and the per-user cap on incomplete uploads counts them by owner) */
    ("CREATE TABLE kms_keys(key_id TEXT PRIMARY KEY, doc TEXT NOT NULL);"
     "CREATE INDEX uploads_owner ON uploads(owner);"),
    /* 14: IAM records: a text document under (kind, key), whose meaning the IAM layer gives
     * (groups, memberships, managed policies, attachments, user paths). */
    "CREATE TABLE IF NOT EXISTS iam_records("
    "  kind TEXT NOT NULL COLLATE BINARY,"
    "  key TEXT NOT NULL COLLATE BINARY,"
    "  doc TEXT NOT NULL,"
    "  PRIMARY KEY(kind, key)) WITHOUT ROWID;",
};
_Static_assert(WH_ARRAY_SIZE(SQ_STEPS) == META_SCHEMA_VERSION,
               "every schema version needs its SQLite step");

static int sq_user_version(sqlite3 *db)
{
    sqlite3_stmt *s = NULL;
    int v = -1;
    if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &s, NULL) == SQLITE_OK &&
        sqlite3_step(s) == SQLITE_ROW)
        v = sqlite3_column_int(s, 0);
    sqlite3_finalize(s);
    return v;
}

static wh_status_t sq_exec_sql(sq_conn_t *c, const char *sql, const char *path, const char *what)
{
    char *err = NULL;
    int rc = sqlite3_exec(c->db, sql, NULL, NULL, &err);
    if (rc == SQLITE_OK)
        return WH_OK;
    wh_error("store", "metadata database path=%s: %s failed: %s", path, what, err ? err : "?");
    sqlite3_free(err);
    return sq_fail(c, rc, what);
}

wh_status_t sq_migrate(sq_conn_t *c, const char *path)
{
    int have = sq_user_version(c->db);
    if (have < 0) {
        wh_error("store", "cannot read the schema version of path=%s: %s", path,
                 sqlite3_errmsg(c->db));
        return WH_ERR_IO;
    }
    if (have == META_SCHEMA_VERSION)
        return WH_OK; /* nothing to write: a restart on a full disk works */
    if (have > META_SCHEMA_VERSION) {
        wh_error("store",
                 "metadata database path=%s has schema version %d, newer than this "
                 "wharfd knows (%d); upgrade wharfd",
                 path, have, META_SCHEMA_VERSION);
        return WH_ERR_UNSUPPORTED;
    }
    wh_status_t st = sq_exec_sql(c, "BEGIN IMMEDIATE", path, "migration begin");
    if (st != WH_OK)
        return st;
    /* Read again under the write lock: another process may have migrated meanwhile. */
    have = sq_user_version(c->db);
    if (have < 0 || have > META_SCHEMA_VERSION) {
        /* unread (a step would index SQ_STEPS[-1]) or newer: leave the database as it is */
        wh_error("store",
                 "schema version of path=%s is %d under the write lock (this wharfd "
                 "knows %d): %s",
                 path, have, META_SCHEMA_VERSION, sqlite3_errmsg(c->db));
        st = have < 0 ? WH_ERR_IO : WH_ERR_UNSUPPORTED;
    }
    for (int v = have + 1; st == WH_OK && v <= META_SCHEMA_VERSION; v++) {
        char what[48];
        snprintf(what, sizeof what, "schema migration step %d", v);
        st = sq_exec_sql(c, SQ_STEPS[v - 1], path, what);
    }
    if (st == WH_OK && have < META_SCHEMA_VERSION) {
        char sql[48];
        snprintf(sql, sizeof sql, "PRAGMA user_version=%d", META_SCHEMA_VERSION);
        st = sq_exec_sql(c, sql, path, "schema version record");
    }
    if (st == WH_OK)
        st = sq_exec_sql(c, "COMMIT", path, "migration commit");
    if (st != WH_OK) {
        if (!sqlite3_get_autocommit(c->db))
            sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
        return st;
    }
    if (have > 0 && have < META_SCHEMA_VERSION)
        wh_info("store", "metadata database path=%s migrated from schema version %d to %d", path,
                have, META_SCHEMA_VERSION);
    return WH_OK;
}
