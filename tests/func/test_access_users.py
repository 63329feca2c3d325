"""Identity: IAM users and access keys kept in the metadata store, and the schema migration
that brought them.

- a data directory written by the release at schema version 2 (tests/data/schema-v2.tar.gz)
  opens with this build and keeps every object byte for byte, its upload in progress still
  completes, and it has the new tables; the same on PostgreSQL, from a version-2 schema made
  with the old SQL and the fixture's rows.
"""
import hashlib
import json
import os
import shutil
import sqlite3
import tarfile
import tempfile

import boto3
import pytest
from botocore.config import Config

import pgserver
from wharfd import ACCESS_KEY, REGION, SECRET_KEY, WharfServer

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.join(HERE, "..", "data", "schema-v2.tar.gz")
PG_REASON = pgserver.missing_reason()


def s3_client(endpoint, ak=ACCESS_KEY, sk=SECRET_KEY):
    return boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=ak,
                        aws_secret_access_key=sk, region_name=REGION,
                        config=Config(s3={"addressing_style": "path"},
                                      retries={"max_attempts": 1}))


@pytest.fixture
def v2_dir():
    tmp = tempfile.mkdtemp(prefix="wharf-v2-open-")
    with tarfile.open(FIXTURE) as t:
        t.extractall(tmp)
    d = os.path.join(tmp, "schema-v2")
    with open(os.path.join(d, "manifest.json")) as f:
        manifest = json.load(f)
    yield d, manifest
    shutil.rmtree(tmp, ignore_errors=True)


def check_v2_contents(srv, manifest):
    """Every object byte for byte, every bucket, and the pending upload completes."""
    s3 = s3_client(srv.endpoint)
    names = sorted(b["Name"] for b in s3.list_buckets()["Buckets"])
    assert names == sorted(manifest["buckets"])
    for o in manifest["objects"]:
        got = s3.get_object(Bucket=o["bucket"], Key=o["key"])
        body = got["Body"].read()
        assert len(body) == o["size"], o["key"]
        assert hashlib.sha256(body).hexdigest() == o["sha256"], o["key"]
        assert hashlib.md5(body).hexdigest() == o["md5"], o["key"]
    keys = sorted(x["Key"] for x in s3.list_objects_v2(Bucket="alpha").get("Contents", []))
    assert keys == sorted(o["key"] for o in manifest["objects"] if o["bucket"] == "alpha")
    head = s3.head_object(Bucket="alpha", Key="dir/nested/obj.bin")
    assert head["Metadata"] == {"origin": "schema-v2"}
    p = manifest["pending"]
    ups = s3.list_multipart_uploads(Bucket=p["bucket"]).get("Uploads", [])
    assert [u["UploadId"] for u in ups] == [p["upload_id"]]
    parts = s3.list_parts(Bucket=p["bucket"], Key=p["key"], UploadId=p["upload_id"])["Parts"]
    assert [x["ETag"].strip('"') for x in parts] == [p["part_etag"]]
    s3.complete_multipart_upload(Bucket=p["bucket"], Key=p["key"], UploadId=p["upload_id"],
                                 MultipartUpload={"Parts": [{"PartNumber": 1,
                                                             "ETag": p["part_etag"]}]})
    body = s3.get_object(Bucket=p["bucket"], Key=p["key"])["Body"].read()
    assert hashlib.sha256(body).hexdigest() == p["part_sha256"]
    # New writes work beside the old rows.
    s3.put_object(Bucket="gamma-empty", Key="new", Body=b"after the migration")
    assert s3.get_object(Bucket="gamma-empty", Key="new")["Body"].read() == b"after the migration"


def test_schema_v2_data_dir_opens_and_keeps_every_object(v2_dir):
    d, manifest = v2_dir
    db = os.path.join(d, "meta.db")
    with sqlite3.connect(db) as c:
        assert c.execute("PRAGMA user_version").fetchone()[0] == 2
    with WharfServer(data_dir=d, providers="none") as srv:
        check_v2_contents(srv, manifest)
        assert "migrated from schema version 2" in srv.log_tail(20000)
    with sqlite3.connect(db) as c:
        assert c.execute("PRAGMA user_version").fetchone()[0] >= 3
        tables = {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        assert {"users", "access_keys", "user_policies"} <= tables
        cols = {r[1] for r in c.execute("PRAGMA table_info(objects)")}
        assert {"owner", "acl"} <= cols
        cols = {r[1] for r in c.execute("PRAGMA table_info(buckets)")}
        assert {"owner", "acl", "policy"} <= cols
        # The old rows are owned by root (""), with the default ACL.
        assert c.execute("SELECT count(*) FROM objects WHERE owner = '' AND acl IS NULL"
                         " AND bucket = 'beta'").fetchone()[0] == 2
    # A second start migrates nothing more and still serves the bytes.
    with WharfServer(data_dir=d, providers="none") as srv:
        s3 = s3_client(srv.endpoint)
        o = next(x for x in manifest["objects"] if x["key"] == "multi.bin")
        body = s3.get_object(Bucket="beta", Key="multi.bin")["Body"].read()
        assert hashlib.sha256(body).hexdigest() == o["sha256"]


# The PostgreSQL schema of the release at version 2, verbatim (its two migration steps).
PG_V2_SQL = """
CREATE TABLE buckets(name text COLLATE "C" PRIMARY KEY, created bigint NOT NULL);
CREATE TABLE objects(bucket text COLLATE "C" NOT NULL, key bytea NOT NULL, size bigint NOT NULL,
  mtime bigint NOT NULL, etag text NOT NULL, content_type text NOT NULL, user_meta text,
  crc32c text NOT NULL, crc64nvme text NOT NULL, parts integer NOT NULL, data_id text NOT NULL,
  PRIMARY KEY(bucket, key));
CREATE INDEX objects_data ON objects(data_id);
CREATE TABLE uploads(upload_id text PRIMARY KEY, bucket text COLLATE "C" NOT NULL,
  key bytea NOT NULL, initiated bigint NOT NULL, content_type text NOT NULL, user_meta text);
CREATE INDEX uploads_key ON uploads(bucket, key, initiated);
CREATE TABLE parts(upload_id text NOT NULL, number integer NOT NULL, size bigint NOT NULL,
  etag text NOT NULL, mtime bigint NOT NULL, crc64nvme text NOT NULL, crc32c text NOT NULL,
  data_id text NOT NULL, PRIMARY KEY(upload_id, number));
CREATE INDEX parts_data ON parts(data_id);
CREATE TABLE chunks(data_id text NOT NULL, idx integer NOT NULL, chunk_id text NOT NULL,
  off bigint NOT NULL, len bigint NOT NULL, crc64nvme bigint NOT NULL,
  replicas integer[] NOT NULL, ec_k integer NOT NULL DEFAULT 0, ec_m integer NOT NULL DEFAULT 0,
  ec_index integer NOT NULL DEFAULT 0, ec_stripe bigint NOT NULL DEFAULT 0,
  PRIMARY KEY(data_id, idx));
CREATE INDEX chunks_chunk ON chunks(chunk_id);
CREATE TABLE nodes(id serial PRIMARY KEY, addr text NOT NULL UNIQUE, capacity bigint NOT NULL,
  free bigint NOT NULL, heartbeat timestamptz NOT NULL DEFAULT now(),
  registered timestamptz NOT NULL DEFAULT now());
CREATE TABLE gc_queue(seq bigserial PRIMARY KEY, chunk_id text NOT NULL, node integer NOT NULL,
  queued timestamptz NOT NULL DEFAULT now());
ALTER TABLE gc_queue ADD COLUMN not_before timestamptz NOT NULL DEFAULT now();
CREATE INDEX gc_queue_chunk ON gc_queue(chunk_id);
CREATE INDEX chunks_replicas ON chunks USING gin(replicas);
CREATE TABLE wharf_schema(version integer NOT NULL, applied timestamptz NOT NULL DEFAULT now());
INSERT INTO wharf_schema(version) VALUES (1), (2);
"""


def _lit(v):
    if v is None:
        return "NULL"
    if isinstance(v, bytes):
        return "'\\x" + v.hex() + "'::bytea"
    if isinstance(v, int):
        return str(v)
    return "'" + str(v).replace("'", "''") + "'"


def _rows_sql(db):
    """INSERTs of the fixture's SQLite rows into the version-2 PostgreSQL tables."""
    out = []
    with sqlite3.connect(db) as c:
        for table, cols, pg_cols in (
                ("buckets", "name, created", None),
                ("objects", "bucket, key, size, mtime, etag, content_type, user_meta, crc32c,"
                            " crc64nvme, parts, file_id",
                 "bucket, key, size, mtime, etag, content_type, user_meta, crc32c,"
                 " crc64nvme, parts, data_id"),
                ("uploads", "upload_id, bucket, key, initiated, content_type, user_meta", None),
                ("parts", "upload_id, number, size, etag, mtime, crc64nvme, crc32c, file_id",
                 "upload_id, number, size, etag, mtime, crc64nvme, crc32c, data_id")):
            for row in c.execute(f"SELECT {cols} FROM {table}"):
                vals = ", ".join(_lit(v) for v in row)
                out.append(f"INSERT INTO {table}({pg_cols or cols}) VALUES({vals});")
    return "\n".join(out)


@pytest.mark.skipif(PG_REASON is not None, reason=PG_REASON or "")
def test_schema_v2_postgresql_opens_and_keeps_every_object(v2_dir):
    d, manifest = v2_dir
    with pgserver.PgServer() as pg:
        url = pg.create_db("v2")
        pg.sql(PG_V2_SQL + _rows_sql(os.path.join(d, "meta.db")), db="v2")
        assert pg.sql("SELECT max(version) FROM wharf_schema", db="v2") == "2"
        os.remove(os.path.join(d, "meta.db"))  # the bytes stay in DIR; the rows are in PG
        with WharfServer(data_dir=d, providers="none", extra_args=["--meta", url]) as srv:
            check_v2_contents(srv, manifest)
        assert int(pg.sql("SELECT max(version) FROM wharf_schema", db="v2")) >= 3
        tables = set(pg.sql("SELECT tablename FROM pg_tables WHERE schemaname = 'public'",
                            db="v2").split())
        assert {"users", "access_keys", "user_policies"} <= tables
        assert pg.sql("SELECT count(*) FROM objects WHERE owner = '' AND acl IS NULL"
                      " AND bucket = 'beta'", db="v2") == "2"
