# SPDX-License-Identifier: Apache-2.0
"""Identity: IAM users and access keys kept in the metadata store, and the schema migration
that brought them.

- `wharfd user|key` while the server runs: a user's key signs S3 requests at once; a second
  user's keys work too; a disabled or deleted key is refused (403 InvalidAccessKeyId) at the
  very next request, and works again once enabled; deleting a user refuses all its keys;
  bad names and duplicates are refused with a clear message;
- secrets are not in plain text anywhere in the data directory (meta.db, its WAL);
- the same on PostgreSQL (wharfd serve --meta, a shared --server-key-file);
- the IAM API on the same port: `aws iam` (Debian's awscli) and boto3's iam client round trips
  of users, access keys (UpdateAccessKey Inactive refuses the key at once) and inline user
  policies (GetUserPolicy returns the document), IAM's error codes and statuses; a user whose
  policy allows iam:* may administer, one without (or with a Deny) gets AccessDenied; a bad
  signature or an unknown key gets IAM's own error document;
- a data directory written by the release at schema version 2 (tests/fixtures/schema-v2.tar.gz)
  opens with this build and keeps every object byte for byte, its upload in progress still
  completes, and it has the new tables; the same on PostgreSQL, from a version-2 schema made
  with the old SQL and the fixture's rows.
"""
import hashlib
import json
import subprocess
import urllib.request
import os
import shutil
import sqlite3
import tarfile
import tempfile

import boto3
import pytest
from botocore.config import Config

import pgserver
import users
from botocore.exceptions import ClientError
from wharfd import ACCESS_KEY, REGION, SECRET_KEY, WharfServer, unique_bucket

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.join(HERE, "..", "fixtures", "schema-v2.tar.gz")
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


def refused(fn, code="InvalidAccessKeyId", status=403):
    with pytest.raises(ClientError) as ei:
        fn()
    err = ei.value.response
    assert err["Error"]["Code"] == code, err
    assert err["ResponseMetadata"]["HTTPStatusCode"] == status, err
    return err


def check_user_lifecycle(srv):
    root = s3_client(srv.endpoint)
    bucket = unique_bucket("users")
    # Users write into root's bucket and read each other's object only as its ACLs allow.
    root.create_bucket(Bucket=bucket, ACL="public-read-write")
    alice = users.create_user(srv, "alice")
    assert alice.access_key.startswith("AKIA") and len(alice.access_key) == 20
    assert len(alice.secret_key) == 40
    assert alice.user_id.startswith("AIDA") and len(alice.user_id) == 21
    assert alice.arn == "arn:aws:iam::000000000000:user/alice"
    a = alice.boto3(srv)
    a.put_object(Bucket=bucket, Key="from-alice", Body=b"alice wrote this",
                 ACL="authenticated-read")
    assert root.get_object(Bucket=bucket, Key="from-alice")["Body"].read() == b"alice wrote this"
    # A second user, with a key the operator chose.
    bob = users.create_user(srv, "bob.ops@example.com", access_key="AKIABOBCHOSEKEY00001",
                            secret_key="bob-secret-of-his-own")
    assert bob.access_key == "AKIABOBCHOSEKEY00001"
    b = bob.boto3(srv)
    assert b.get_object(Bucket=bucket, Key="from-alice")["Body"].read() == b"alice wrote this"
    assert [u[0] for u in users.list_users(srv)] == ["alice", "bob.ops@example.com"]
    # A second key of alice's; disable and delete take effect at the next request.
    ak2, sk2 = users.add_key(srv, "alice")
    a2 = users.client(srv, ak2, sk2)
    a2.head_object(Bucket=bucket, Key="from-alice")
    # keys made in the same second list in either order (ListAccessKeys promises none)
    assert sorted(users.list_keys(srv, "alice")) == sorted([(alice.access_key, "Active"),
                                                           (ak2, "Active")])
    users.disable_key(srv, ak2)
    refused(lambda: a2.head_object(Bucket=bucket, Key="from-alice"), "403", 403)  # HEAD: no body
    refused(lambda: a2.list_objects_v2(Bucket=bucket))
    a.list_objects_v2(Bucket=bucket)  # her other key is untouched
    assert dict(users.list_keys(srv, "alice")) == {alice.access_key: "Active", ak2: "Inactive"}
    users.enable_key(srv, ak2)
    a2.list_objects_v2(Bucket=bucket)
    users.delete_key(srv, ak2)
    refused(lambda: a2.list_objects_v2(Bucket=bucket))
    # A wrong secret for a real key is a signature mismatch, not an unknown key.
    wrong = users.client(srv, alice.access_key, "not-" + alice.secret_key)
    refused(lambda: wrong.list_objects_v2(Bucket=bucket), "SignatureDoesNotMatch")
    # Deleting the user refuses all its keys; root is untouched.
    users.delete_user(srv, "alice")
    refused(lambda: a.list_objects_v2(Bucket=bucket))
    b.list_objects_v2(Bucket=bucket)
    root.list_objects_v2(Bucket=bucket)
    return bob


def test_users_and_keys_while_the_server_runs():
    with WharfServer(providers="none") as srv:
        bob = check_user_lifecycle(srv)
        # Secrets never appear in plain text in the data directory (meta.db and its WAL).
        for root_dir, _dirs, files in os.walk(srv.data_dir):
            for f in files:
                if not os.path.isfile(os.path.join(root_dir, f)) or f.endswith(".sock"):
                    continue
                with open(os.path.join(root_dir, f), "rb") as fh:
                    data = fh.read()
                assert bob.secret_key.encode() not in data, f
        with open(os.path.join(srv.data_dir, "meta.db"), "rb") as fh:
            assert b"AKIABOBCHOSEKEY00001" in fh.read() + open(
                os.path.join(srv.data_dir, "meta.db-wal"), "rb").read()
        assert oct(os.stat(os.path.join(srv.data_dir, "server.key")).st_mode & 0o777) == "0o600"
        # meta.db and its WAL and shm hold sealed secrets and every name: owner-only.
        for f in ("meta.db", "meta.db-wal", "meta.db-shm"):
            mode = os.stat(os.path.join(srv.data_dir, f)).st_mode & 0o777
            assert mode == 0o600, (f, oct(mode))


def test_meta_db_made_private_on_restart():
    """A data directory from an older version (meta.db files 0644) is set 0600 at start."""
    srv = WharfServer(providers="none")
    srv.start()
    srv.stop()
    for f in ("meta.db", "meta.db-wal", "meta.db-shm"):
        p = os.path.join(srv.data_dir, f)
        if os.path.exists(p):
            os.chmod(p, 0o644)
    srv.start()
    try:
        for f in ("meta.db", "meta.db-wal", "meta.db-shm"):
            p = os.path.join(srv.data_dir, f)
            assert os.stat(p).st_mode & 0o777 == 0o600, f
    finally:
        srv.stop()
        srv.cleanup()


def test_chosen_secret_from_file_or_environment(tmp_path):
    with WharfServer(providers="none") as srv:
        users.create_user(srv, "erin")
        f = tmp_path / "sk"
        f.write_text("erin-secret-from-a-file\n")
        r = users.wharfd_cmd(srv, "key", "create", "erin", "--access-key", "AKIAERINFILEKEY00001",
                             "--secret-key-file", str(f))
        assert "erin-secret-from-a-file" in r.stdout and "warning" not in r.stderr
        users.client(srv, "AKIAERINFILEKEY00001", "erin-secret-from-a-file").list_buckets()
        r = users.wharfd_cmd(srv, "key", "create", "erin", "--access-key", "AKIAERINENVKEY000001",
                             env_extra={"WHARF_USER_SECRET_KEY": "erin-secret-from-env"})
        assert "warning" not in r.stderr
        users.client(srv, "AKIAERINENVKEY000001", "erin-secret-from-env").list_buckets()
        # On the command line it still works, with a warning naming the safer ways.
        r = users.wharfd_cmd(srv, "key", "create", "erin", "--access-key", "AKIAERINARGVKEY00001",
                             "--secret-key", "erin-secret-on-argv")
        assert "process list" in r.stderr and "--secret-key-file" in r.stderr
        r = users.wharfd_cmd(srv, "key", "create", "erin", "--access-key", "AKIAERINARGVKEY00002",
                             "--secret-key-file", str(tmp_path / "missing"), check=False)
        assert r.returncode == 2 and "cannot read --secret-key-file" in r.stderr


def test_user_command_errors():
    with WharfServer(providers="none") as srv:
        r = users.wharfd_cmd(srv, "user", "create", "no spaces allowed", check=False)
        assert r.returncode == 2 and "user names are 1 to 64" in r.stderr
        users.create_user(srv, "carol")
        r = users.wharfd_cmd(srv, "user", "create", "carol", check=False)
        assert r.returncode == 3 and "already exists" in r.stderr
        r = users.wharfd_cmd(srv, "key", "create", "nobody", check=False)
        assert r.returncode == 3 and "no user named nobody" in r.stderr
        r = users.wharfd_cmd(srv, "key", "delete", "AKIANOSUCHKEY0000000", check=False)
        assert r.returncode == 3 and "not found" in r.stderr
        r = users.wharfd_cmd(srv, "key", "create", "carol", "--access-key", "AKIA-bad-0123456789",
                             "--secret-key", "long-enough-secret", check=False)
        assert r.returncode == 2 and "letters and digits" in r.stderr
        r = users.wharfd_cmd(srv, "key", "create", "carol", "--access-key", "AKIAGOODKEY000000001",
                             check=False)
        assert r.returncode == 2 and "go together" in r.stderr
        r = users.wharfd_cmd(srv, "user", "frobnicate", "x", check=False)
        assert r.returncode == 2 and "unknown user command" in r.stderr
        # A failed key leaves no user behind (user create promises both).
        r = users.wharfd_cmd(srv, "user", "create", "dave", "--access-key", "short",
                             "--secret-key", "long-enough-secret", check=False)
        assert r.returncode == 2
        assert "dave" not in [u[0] for u in users.list_users(srv)]


@pytest.mark.skipif(PG_REASON is not None, reason=PG_REASON or "")
def test_users_and_keys_on_postgresql():
    with pgserver.PgServer() as pg:
        url = pg.create_db("users")
        keydir = tempfile.mkdtemp(prefix="wharf-key-")
        kf = os.path.join(keydir, "server.key")
        with open(kf, "w") as f:
            f.write(os.urandom(32).hex() + "\n")
        os.chmod(kf, 0o600)
        try:
            with WharfServer(providers="none", extra_args=["--meta", url,
                                                           "--server-key-file", kf]) as srv:
                bob = check_user_lifecycle(srv)
                # The IAM API over the same tables.
                iam = users.client(srv, ACCESS_KEY, SECRET_KEY, "iam")
                iam.create_user(UserName="pg-iam")
                key = iam.create_access_key(UserName="pg-iam")["AccessKey"]
                users.client(srv, key["AccessKeyId"], key["SecretAccessKey"]).list_buckets()
                iam.update_access_key(UserName="pg-iam", AccessKeyId=key["AccessKeyId"],
                                      Status="Inactive")
                refused(lambda: users.client(srv, key["AccessKeyId"],
                                             key["SecretAccessKey"]).list_buckets())
                assert "pg-iam" in [u[0] for u in users.list_users(srv)]
                sealed = pg.sql("SELECT secret_sealed FROM access_keys WHERE access_key ="
                                f" '{bob.access_key}'", db="users")
                assert sealed.startswith("g1:") and bob.secret_key not in sealed
                dump = pg.sql("SELECT string_agg(secret_sealed, ',') FROM access_keys", db="users")
                assert bob.secret_key not in dump
                # A second wharfd on the same database and key file accepts the same key.
                with WharfServer(providers="none", extra_args=["--meta", url,
                                                               "--server-key-file", kf]) as srv2:
                    bob.boto3(srv2).list_buckets()
                # Another server key (serve --meta with a data directory of its own makes
                # DIR/server.key) cannot open the secrets: users' keys are refused, root works.
                other = os.path.join(keydir, "other-data")
                os.makedirs(other)
                with WharfServer(providers="none", extra_args=["--meta", url],
                                 data_dir=other) as srv4:
                    refused(lambda: bob.boto3(srv4).list_buckets(), "InvalidAccessKeyId")
                    s3_client(srv4.endpoint).list_buckets()
                    assert "does not open with this server key" in srv4.log_tail(20000)
        finally:
            shutil.rmtree(keydir, ignore_errors=True)


def aws_iam(srv, *args, ak=ACCESS_KEY, sk=SECRET_KEY):
    env = srv.client_env()
    env.update({"AWS_ACCESS_KEY_ID": ak, "AWS_SECRET_ACCESS_KEY": sk})
    r = subprocess.run(["/usr/bin/aws", "iam", "--endpoint-url", srv.endpoint, "--output", "json",
                        *args], env=env, capture_output=True, text=True, timeout=60)
    return r.returncode, (json.loads(r.stdout) if r.stdout.strip() else None), r.stderr


def test_aws_iam_round_trips():
    with WharfServer(providers="none") as srv:
        rc, out, err = aws_iam(srv, "create-user", "--user-name", "ops")
        assert rc == 0, err
        assert out["User"]["UserName"] == "ops" and out["User"]["UserId"].startswith("AIDA")
        assert out["User"]["Arn"] == "arn:aws:iam::000000000000:user/ops"
        rc, _, err = aws_iam(srv, "create-user", "--user-name", "ops")
        assert rc != 0 and "EntityAlreadyExists" in err
        rc, out, _ = aws_iam(srv, "get-user", "--user-name", "ops")
        assert rc == 0 and out["User"]["UserName"] == "ops"
        rc, out, _ = aws_iam(srv, "list-users")
        assert [u["UserName"] for u in out["Users"]] == ["ops"]
        rc, out, err = aws_iam(srv, "create-access-key", "--user-name", "ops")
        assert rc == 0, err
        key = out["AccessKey"]
        assert key["Status"] == "Active" and len(key["SecretAccessKey"]) == 40
        # The new key signs S3 requests at once.
        s3 = users.client(srv, key["AccessKeyId"], key["SecretAccessKey"])
        s3.list_buckets()
        rc, out, _ = aws_iam(srv, "list-access-keys", "--user-name", "ops")
        assert [k["AccessKeyId"] for k in out["AccessKeyMetadata"]] == [key["AccessKeyId"]]
        rc, _, err = aws_iam(srv, "update-access-key", "--user-name", "ops", "--access-key-id",
                             key["AccessKeyId"], "--status", "Inactive")
        assert rc == 0, err
        refused(s3.list_buckets)
        rc, out, _ = aws_iam(srv, "list-access-keys", "--user-name", "ops")
        assert out["AccessKeyMetadata"][0]["Status"] == "Inactive"
        aws_iam(srv, "update-access-key", "--user-name", "ops", "--access-key-id",
                key["AccessKeyId"], "--status", "Active")
        s3.list_buckets()
        # Inline policies: the document comes back as it was put.
        doc = {"Version": "2012-10-17",
               "Statement": [{"Effect": "Allow", "Action": "s3:GetObject",
                              "Resource": "arn:aws:s3:::data/*"}]}
        rc, _, err = aws_iam(srv, "put-user-policy", "--user-name", "ops", "--policy-name",
                             "read-data", "--policy-document", json.dumps(doc))
        assert rc == 0, err
        rc, out, _ = aws_iam(srv, "get-user-policy", "--user-name", "ops", "--policy-name",
                             "read-data")
        assert rc == 0 and out["PolicyDocument"] == doc and out["PolicyName"] == "read-data"
        rc, out, _ = aws_iam(srv, "list-user-policies", "--user-name", "ops")
        assert out["PolicyNames"] == ["read-data"]
        rc, _, err = aws_iam(srv, "put-user-policy", "--user-name", "ops", "--policy-name", "bad",
                             "--policy-document", '{"Statement": [{"Effect": "Maybe"}]}')
        assert rc != 0 and "MalformedPolicyDocument" in err
        # A user with keys or policies cannot be deleted; without, it can.
        rc, _, err = aws_iam(srv, "delete-user", "--user-name", "ops")
        assert rc != 0 and "DeleteConflict" in err
        aws_iam(srv, "delete-user-policy", "--user-name", "ops", "--policy-name", "read-data")
        rc, _, err = aws_iam(srv, "delete-user-policy", "--user-name", "ops", "--policy-name",
                             "read-data")
        assert rc != 0 and "NoSuchEntity" in err
        rc, _, err = aws_iam(srv, "delete-access-key", "--user-name", "ops", "--access-key-id",
                             key["AccessKeyId"])
        assert rc == 0, err
        refused(s3.list_buckets)
        rc, _, err = aws_iam(srv, "delete-user", "--user-name", "ops")
        assert rc == 0, err
        rc, _, err = aws_iam(srv, "get-user", "--user-name", "ops")
        assert rc != 0 and "NoSuchEntity" in err
        # What the CLI sees is what `wharfd user list` sees (one store).
        aws_iam(srv, "create-user", "--user-name", "from-iam")
        assert [u[0] for u in users.list_users(srv)] == ["from-iam"]


def iam_error(fn):
    with pytest.raises(ClientError) as ei:
        fn()
    e = ei.value.response
    return e["Error"]["Code"], e["ResponseMetadata"]["HTTPStatusCode"]


def test_boto3_iam_errors_and_policies():
    with WharfServer(providers="none") as srv:
        iam = users.client(srv, ACCESS_KEY, SECRET_KEY, "iam")
        iam.create_user(UserName="admin")
        iam.create_user(UserName="worker")
        assert iam_error(lambda: iam.create_user(UserName="admin")) == ("EntityAlreadyExists", 409)
        assert iam_error(lambda: iam.get_user(UserName="ghost")) == ("NoSuchEntity", 404)
        assert iam_error(lambda: iam.create_user(UserName="bad/name")) == ("ValidationError", 400)
        assert iam_error(lambda: iam.put_user_policy(
            UserName="admin", PolicyName="p", PolicyDocument="[]")) == ("MalformedPolicyDocument", 400)
        assert iam_error(lambda: iam.put_user_policy(
            UserName="admin", PolicyName="p",
            PolicyDocument=json.dumps({"Statement": [{"Effect": "Allow", "Action": "iam:*",
                                                      "Resource": "*", "Sid": "x" * 11000}]}))) \
            == ("LimitExceeded", 409)
        k1 = iam.create_access_key(UserName="worker")["AccessKey"]
        iam.create_access_key(UserName="worker")
        assert iam_error(lambda: iam.create_access_key(UserName="worker")) == ("LimitExceeded", 409)
        assert iam_error(lambda: iam.update_access_key(
            UserName="worker", AccessKeyId=k1["AccessKeyId"], Status="Sleeping")) == ("ValidationError", 400)
        assert iam_error(lambda: iam.delete_access_key(
            UserName="admin", AccessKeyId=k1["AccessKeyId"])) == ("NoSuchEntity", 404)  # not admin's
        # A user may do IAM only as far as its policies allow.
        worker = users.client(srv, k1["AccessKeyId"], k1["SecretAccessKey"], "iam")
        assert iam_error(lambda: worker.list_users()) == ("AccessDenied", 403)
        assert iam_error(lambda: worker.create_user(UserName="sneaky")) == ("AccessDenied", 403)
        ka = iam.create_access_key(UserName="admin")["AccessKey"]
        admin = users.client(srv, ka["AccessKeyId"], ka["SecretAccessKey"], "iam")
        assert iam_error(lambda: admin.list_users()) == ("AccessDenied", 403)
        iam.put_user_policy(UserName="admin", PolicyName="iam-admin", PolicyDocument=json.dumps(
            {"Version": "2012-10-17",
             "Statement": [{"Effect": "Allow", "Action": "iam:*", "Resource": "*"},
                           {"Effect": "Deny", "Action": "iam:DeleteUser",
                            "Resource": "arn:aws:iam::000000000000:user/admin"}]}))
        assert sorted(u["UserName"] for u in admin.list_users()["Users"]) == ["admin", "worker"]
        admin.create_user(UserName="hired")
        kh = admin.create_access_key(UserName="hired")["AccessKey"]
        users.client(srv, kh["AccessKeyId"], kh["SecretAccessKey"]).list_buckets()
        # The explicit Deny wins over iam:*.
        assert iam_error(lambda: admin.delete_user(UserName="admin")) == ("AccessDenied", 403)
        # A user's own keys without UserName.
        own = admin.list_access_keys()["AccessKeyMetadata"]
        assert [k["AccessKeyId"] for k in own] == [ka["AccessKeyId"]]
        assert admin.get_user()["User"]["UserName"] == "admin"
        # Signature problems come back as IAM error documents.
        bad = users.client(srv, ka["AccessKeyId"], "wrong-secret-0000000000000000000000000", "iam")
        assert iam_error(lambda: bad.list_users()) == ("SignatureDoesNotMatch", 403)
        ghost = users.client(srv, "AKIAGHOSTGHOSTGHOST0", "x" * 40, "iam")
        assert iam_error(lambda: ghost.list_users()) == ("InvalidClientTokenId", 403)
        # Unsigned, and not a form: refused without touching anything.
        req = urllib.request.Request(srv.endpoint + "/", data=b"Action=ListUsers&Version=2010-05-08",
                                     headers={"Content-Type": "application/x-www-form-urlencoded"})
        with pytest.raises(urllib.error.HTTPError) as ei:
            urllib.request.urlopen(req, timeout=10)
        assert ei.value.code == 403 and b"<ErrorResponse" in ei.value.read()
        # An IAM action wharf does not implement is 501; a name IAM does not have is 400.
        r = users.client(srv, ACCESS_KEY, SECRET_KEY, "iam")
        assert iam_error(lambda: r.create_instance_profile(InstanceProfileName="p")) == (
            "NotImplemented", 501)
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest
        from botocore.credentials import Credentials
        req = AWSRequest("POST", srv.endpoint + "/",
                         data=b"Action=NoSuchAction&Version=2010-05-08",
                         headers={"Content-Type": "application/x-www-form-urlencoded"})
        SigV4Auth(Credentials(ACCESS_KEY, SECRET_KEY), "iam", REGION).add_auth(req)
        with pytest.raises(urllib.error.HTTPError) as ei:
            urllib.request.urlopen(urllib.request.Request(
                req.url, data=req.body, headers=dict(req.headers), method="POST"), timeout=10)
        assert ei.value.code == 400 and b"InvalidAction" in ei.value.read()


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
