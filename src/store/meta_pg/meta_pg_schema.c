/* SPDX-License-Identifier: Apache-2.0 */
/* PostgreSQL metadata backend: the schema as a list of migration steps (step N takes
 * wharf_schema.version from N-1 to N). meta_pg.c applies the missing ones at open, in one
 * transaction under an advisory lock, so gateways starting together migrate once. A new step is
 * appended here (and in meta_sqlite_schema.c) and META_SCHEMA_VERSION raised.
 *
 * Every table is keyed so that it can later be partitioned without a key change: objects and
 * uploads by (bucket, key) - PARTITION BY LIST (bucket) or HASH (bucket, key) - and chunks by
 * data_id. */
#include "base/util.h"
#include "meta_pg/meta_pg_int.h"

const char *const pg_schema_steps[] = {
    /* 1 */
    "CREATE TABLE buckets("
    "  name text COLLATE \"C\" PRIMARY KEY,"
    "  created bigint NOT NULL);"
    "CREATE TABLE objects("
    "  bucket text COLLATE \"C\" NOT NULL,"
    "  key bytea NOT NULL,"
    "  size bigint NOT NULL,"
    "  mtime bigint NOT NULL,"
    "  etag text NOT NULL,"
    "  content_type text NOT NULL,"
    "  user_meta text,"
    "  crc32c text NOT NULL,"
    "  crc64nvme text NOT NULL,"
    "  parts integer NOT NULL,"
    "  data_id text NOT NULL,"
    "  PRIMARY KEY(bucket, key));"
    "CREATE INDEX objects_data ON objects(data_id);"
    "CREATE TABLE uploads("
    "  upload_id text PRIMARY KEY,"
    "  bucket text COLLATE \"C\" NOT NULL,"
    "  key bytea NOT NULL,"
    "  initiated bigint NOT NULL,"
    "  content_type text NOT NULL,"
    "  user_meta text);"
    "CREATE INDEX uploads_key ON uploads(bucket, key, initiated);"
    "CREATE TABLE parts("
    "  upload_id text NOT NULL,"
    "  number integer NOT NULL,"
    "  size bigint NOT NULL,"
    "  etag text NOT NULL,"
    "  mtime bigint NOT NULL,"
    "  crc64nvme text NOT NULL,"
    "  crc32c text NOT NULL,"
    "  data_id text NOT NULL,"
    "  PRIMARY KEY(upload_id, number));"
    "CREATE INDEX parts_data ON parts(data_id);"
    /* The chunk map of a data id (an object's or a part's bytes), in object order. */
    "CREATE TABLE chunks("
    "  data_id text NOT NULL,"
    "  idx integer NOT NULL,"
    "  chunk_id text NOT NULL,"
    "  off bigint NOT NULL,"
    "  len bigint NOT NULL,"
    "  crc64nvme bigint NOT NULL,"   /* the uint64 as two's complement */
    "  replicas integer[] NOT NULL," /* storage node ids */
    "  ec_k integer NOT NULL DEFAULT 0, ec_m integer NOT NULL DEFAULT 0,"
    "  ec_index integer NOT NULL DEFAULT 0, ec_stripe bigint NOT NULL DEFAULT 0,"
    "  PRIMARY KEY(data_id, idx));"
    "CREATE INDEX chunks_chunk ON chunks(chunk_id);"
    /* Storage servers of a cluster. */
    "CREATE TABLE nodes("
    "  id serial PRIMARY KEY,"
    "  addr text NOT NULL UNIQUE,"
    "  capacity bigint NOT NULL,"
    "  free bigint NOT NULL,"
    "  heartbeat timestamptz NOT NULL DEFAULT now(),"
    "  registered timestamptz NOT NULL DEFAULT now());"
    /* Chunk copies to delete; a chunk still in `chunks` is never handed out. */
    "CREATE TABLE gc_queue("
    "  seq bigserial PRIMARY KEY,"
    "  chunk_id text NOT NULL,"
    "  node integer NOT NULL,"
    "  queued timestamptz NOT NULL DEFAULT now());",
    /* 2: copies queued before they are written (a cluster PUT's intent) wait until not_before;
     * an entry is stale once a row lists its node among the chunk's replicas. */
    "ALTER TABLE gc_queue ADD COLUMN not_before timestamptz NOT NULL DEFAULT now();"
    "CREATE INDEX gc_queue_chunk ON gc_queue(chunk_id);"
    "CREATE INDEX chunks_replicas ON chunks USING gin(replicas);",
    /* 3: identity and access. Owners are canonical ids ("" = root: every row written before
     * this step was written by root); ACLs are the authorization engine's text form (NULL: the
     * default); policies are JSON text. Secrets are stored sealed only. */
    "ALTER TABLE buckets ADD COLUMN owner text NOT NULL DEFAULT '',"
    "  ADD COLUMN acl text, ADD COLUMN policy text;"
    "ALTER TABLE objects ADD COLUMN owner text NOT NULL DEFAULT '', ADD COLUMN acl text;"
    "ALTER TABLE uploads ADD COLUMN owner text NOT NULL DEFAULT '', ADD COLUMN acl text;"
    "CREATE TABLE users("
    "  name text COLLATE \"C\" PRIMARY KEY,"
    "  user_id text NOT NULL UNIQUE,"
    "  canonical_id text NOT NULL UNIQUE,"
    "  created bigint NOT NULL);"
    "CREATE TABLE access_keys("
    "  access_key text COLLATE \"C\" PRIMARY KEY,"
    "  user_name text COLLATE \"C\" NOT NULL,"
    "  secret_sealed text NOT NULL,"
    "  active boolean NOT NULL,"
    "  created bigint NOT NULL);"
    "CREATE INDEX access_keys_user ON access_keys(user_name, created);"
    "CREATE TABLE user_policies("
    "  user_name text COLLATE \"C\" NOT NULL,"
    "  policy_name text COLLATE \"C\" NOT NULL,"
    "  document text NOT NULL,"
    "  PRIMARY KEY(user_name, policy_name));",
    /* 4: versions, tags, part sizes (as SQLite's step 4 describes). dm: 1 for a delete
     * marker (data_id ''). An archived version keeps its chunk map under its data id. */
    "ALTER TABLE buckets ADD COLUMN versioning integer NOT NULL DEFAULT 0;"
    "ALTER TABLE objects ADD COLUMN version_id text NOT NULL DEFAULT 'null';"
    "ALTER TABLE objects ADD COLUMN seq bigint NOT NULL DEFAULT 0;"
    "ALTER TABLE objects ADD COLUMN dm integer NOT NULL DEFAULT 0;"
    "ALTER TABLE objects ADD COLUMN tags text;"
    "ALTER TABLE objects ADD COLUMN part_sizes text;"
    "ALTER TABLE uploads ADD COLUMN tags text;"
    "CREATE TABLE versions("
    "  bucket text COLLATE \"C\" NOT NULL,"
    "  key bytea NOT NULL,"
    "  size bigint NOT NULL,"
    "  mtime bigint NOT NULL,"
    "  etag text NOT NULL,"
    "  content_type text NOT NULL,"
    "  user_meta text,"
    "  crc32c text NOT NULL,"
    "  crc64nvme text NOT NULL,"
    "  parts integer NOT NULL,"
    "  data_id text NOT NULL,"
    "  owner text NOT NULL DEFAULT '',"
    "  acl text,"
    "  version_id text NOT NULL,"
    "  seq bigint NOT NULL,"
    "  dm integer NOT NULL,"
    "  tags text,"
    "  part_sizes text,"
    "  PRIMARY KEY(bucket, key, seq));"
    "CREATE UNIQUE INDEX versions_vid ON versions(bucket, key, version_id);"
    "CREATE INDEX versions_data ON versions(data_id);",
    /* 5: bucket configurations (as SQLite's step 5 describes). */
    "ALTER TABLE buckets ADD COLUMN tags text;"
    "ALTER TABLE buckets ADD COLUMN cors text;"
    "ALTER TABLE buckets ADD COLUMN pab integer NOT NULL DEFAULT 0;"
    "ALTER TABLE buckets ADD COLUMN ownership integer NOT NULL DEFAULT 0;",
    /* 6: bucket lifecycle (as SQLite's step 6 describes). */
    "ALTER TABLE buckets ADD COLUMN lifecycle text;",
    /* 7: cluster identity. The cluster's id (a storage server whose data directory belongs to
     * another cluster refuses this database); each node's data directory identity (a node
     * back at an address with another one, or with an empty directory, is a new node: the
     * old row is retired and its copies repaired); copies a checksum found damaged. */
    "CREATE TABLE cluster_identity(one integer PRIMARY KEY CHECK (one = 1), id text NOT NULL);"
    "INSERT INTO cluster_identity VALUES(1, gen_random_uuid()::text);"
    "ALTER TABLE nodes ADD COLUMN uuid text NOT NULL DEFAULT '',"
    "  ADD COLUMN retired boolean NOT NULL DEFAULT false;"
    "CREATE TABLE chunk_damage("
    "  chunk_id text NOT NULL,"
    "  node integer NOT NULL,"
    "  found timestamptz NOT NULL DEFAULT now(),"
    "  PRIMARY KEY(chunk_id, node));",
    /* 8: Object Lock (as SQLite's step 8 describes). */
    "ALTER TABLE objects ADD COLUMN lock_mode integer NOT NULL DEFAULT 0,"
    "  ADD COLUMN lock_until bigint NOT NULL DEFAULT 0,"
    "  ADD COLUMN legal_hold integer NOT NULL DEFAULT 0;"
    "ALTER TABLE versions ADD COLUMN lock_mode integer NOT NULL DEFAULT 0,"
    "  ADD COLUMN lock_until bigint NOT NULL DEFAULT 0,"
    "  ADD COLUMN legal_hold integer NOT NULL DEFAULT 0;"
    "ALTER TABLE uploads ADD COLUMN lock_mode integer NOT NULL DEFAULT 0,"
    "  ADD COLUMN lock_until bigint NOT NULL DEFAULT 0,"
    "  ADD COLUMN legal_hold integer NOT NULL DEFAULT 0;"
    "ALTER TABLE buckets ADD COLUMN object_lock text;",
    /* 9: encryption at rest (as SQLite's step 9 describes). */
    "ALTER TABLE objects ADD COLUMN sse text;"
    "ALTER TABLE versions ADD COLUMN sse text;"
    "ALTER TABLE uploads ADD COLUMN sse text;"
    "ALTER TABLE buckets ADD COLUMN encryption text;",
    /* 10: chunk maps by chunk id (SQLite's step 10: composed multipart objects); step 2 made
     * chunks_chunk here already, so this only keeps the two version numbers in step. */
    "CREATE INDEX IF NOT EXISTS chunks_chunk ON chunks(chunk_id);",
    /* 11: cluster elasticity. A node's state (active; draining: no new copies, repair moves
     * its copies off; removed: never dialed again, its copies count as lost), its failure
     * domain (wharfd storage --zone; placement spreads a chunk's copies over zones) and its
     * scrubber's progress; what the maintenance gateway last saw (wharfd node status). */
    "ALTER TABLE nodes ADD COLUMN state text NOT NULL DEFAULT 'active'"
    "  CHECK (state IN ('active', 'draining', 'removed')),"
    "  ADD COLUMN zone text NOT NULL DEFAULT '',"
    "  ADD COLUMN scrub_progress double precision NOT NULL DEFAULT 0,"
    "  ADD COLUMN scrub_passes bigint NOT NULL DEFAULT 0,"
    "  ADD COLUMN damaged bigint NOT NULL DEFAULT 0;"
    "CREATE TABLE cluster_status(one integer PRIMARY KEY CHECK (one = 1),"
    "  leader text NOT NULL,"
    "  repair_pending bigint NOT NULL, repair_nodes bigint NOT NULL,"
    "  drain_pending bigint NOT NULL, damage_pending bigint NOT NULL,"
    "  updated timestamptz NOT NULL DEFAULT now());",
    /* 12: SQLite's data reference column takes PostgreSQL's name, data_id, which it has had
     * since step 1: nothing changes here but a note on the schema table (the step keeps the
     * two version numbers in step; a step's statements must return no rows). */
    "COMMENT ON TABLE wharf_schema IS 'wharf metadata schema: one row per migration step';",
    /* 13: the key service's master keys (SSE-KMS): one row per key id, doc its state and
     * versions, each sealed under the server key (ident/kms.c); every gateway sees them. */
    /* (and the per-user cap on incomplete uploads counts them by owner) */
    ("CREATE TABLE kms_keys(key_id text PRIMARY KEY, doc text NOT NULL);"
     "CREATE INDEX uploads_owner ON uploads(owner);"),
    /* 14: IAM records: a text document under (kind, key), whose meaning the IAM layer gives
     * (groups, memberships, managed policies, attachments, user paths). */
    "CREATE TABLE iam_records("
    "  kind text COLLATE \"C\" NOT NULL,"
    "  key text COLLATE \"C\" NOT NULL,"
    "  doc text NOT NULL,"
    "  PRIMARY KEY(kind, key));",
};
_Static_assert(WH_ARRAY_SIZE(pg_schema_steps) == META_SCHEMA_VERSION,
               "every schema version needs its PostgreSQL step");
