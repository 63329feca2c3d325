# SPDX-License-Identifier: Apache-2.0
"""SSE-KMS against a real wharfd over https, with the key service wharfd runs itself: keys
made by `wharfd kms create` (and the KMS JSON API, TrentService), PutObject / GetObject /
HeadObject with aws:kms and a key id in each form AWS accepts (id, alias/..., ARN), no key id
or an unknown one refused as S3 does, multipart, CopyObject between SSE-KMS, SSE-S3 and plain,
PostObject's form fields, the bucket's default encryption with a KMSMasterKeyID, rotation
(older objects stay readable, new ones take the new version) and a disabled key (writes and
reads under it refused with KMS.DisabledException until it is enabled again), UploadPart
repeating the upload's aws:kms headers, and two servers of one PostgreSQL sharing the keys."""
import os
import sqlite3
import subprocess

import boto3
import botocore.exceptions
import pytest
from botocore.config import Config

from wharfd import ACCESS_KEY, REGION, SECRET_KEY, TestCert, WharfServer, md5_hex, unique_bucket

SEG = 64 * 1024
MIB = 1024 * 1024
KEY1, KEY2 = "testkey-1", "testkey-2"
ARN1 = f"arn:aws:kms:{REGION}:000000000000:key/{KEY1}"


@pytest.fixture(scope="module")
def cert(tmp_path_factory):
    return TestCert(str(tmp_path_factory.mktemp("kms-tls")))


def kms_cli(srv, *args, check=True):
    p = subprocess.run([srv.binary, "kms", *args, "--data", srv.data_dir], capture_output=True,
                       text=True, timeout=30)
    if check:
        assert p.returncode == 0, p.stderr
    return p


@pytest.fixture(scope="module")
def srv(cert):
    s = WharfServer(tls=cert)
    s.start()
    # Keys made while the server runs hold at its next request.
    for k in (KEY1, KEY2):
        out = kms_cli(s, "create", "--name", k).stdout
        assert f"key_id={k} state=Enabled versions=1" in out, out
    yield s
    rc = s.stop()
    s.cleanup()
    assert rc == 0, f"wharfd exited with {rc} on SIGTERM"


@pytest.fixture(scope="module")
def s3(srv):
    return boto3.client("s3", endpoint_url=srv.endpoint, aws_access_key_id=ACCESS_KEY,
                        aws_secret_access_key=SECRET_KEY, region_name=REGION, verify=srv.tls.ca,
                        config=Config(s3={"addressing_style": "path"},
                                      retries={"max_attempts": 1}))


@pytest.fixture()
def bucket(s3):
    name = unique_bucket("kms")
    s3.create_bucket(Bucket=name)
    yield name
    for v in s3.list_objects_v2(Bucket=name).get("Contents", []):
        s3.delete_object(Bucket=name, Key=v["Key"])
    for u in s3.list_multipart_uploads(Bucket=name).get("Uploads", []):
        s3.abort_multipart_upload(Bucket=name, Key=u["Key"], UploadId=u["UploadId"])
    s3.delete_bucket(Bucket=name)


def code(e):
    return e.value.response["Error"]["Code"], e.value.response["ResponseMetadata"]["HTTPStatusCode"]


def data(n, seed=1):
    out = bytearray()
    x = seed
    while len(out) < n:
        x = (x * 6364136223846793005 + 1442695040888963407) & (2**64 - 1)
        out += x.to_bytes(8, "little")
    return bytes(out[:n])


def sse_rows(srv, key):
    db = sqlite3.connect(os.path.join(srv.data_dir, "meta.db"))
    try:
        return [r[0] for r in db.execute("SELECT sse FROM objects WHERE key = ? AND sse IS NOT NULL",
                                         (key.encode(),))]
    finally:
        db.close()


def kms_keys_doc(srv, key_id):
    db = sqlite3.connect(os.path.join(srv.data_dir, "meta.db"))
    try:
        return db.execute("SELECT doc FROM kms_keys WHERE key_id = ?", (key_id,)).fetchone()[0]
    finally:
        db.close()


def test_put_get_head(srv, s3, bucket):
    body = data(2 * SEG + 13, seed=3)
    r = s3.put_object(Bucket=bucket, Key="o", Body=body, ServerSideEncryption="aws:kms",
                      SSEKMSKeyId=KEY1)
    assert r["ServerSideEncryption"] == "aws:kms" and r["SSEKMSKeyId"] == KEY1
    assert r["ETag"].strip('"') == md5_hex(body)
    g = s3.get_object(Bucket=bucket, Key="o")
    assert g["Body"].read() == body
    assert g["ServerSideEncryption"] == "aws:kms" and g["SSEKMSKeyId"] == KEY1
    h = s3.head_object(Bucket=bucket, Key="o")
    assert h["ServerSideEncryption"] == "aws:kms" and h["SSEKMSKeyId"] == KEY1
    assert h["ContentLength"] == len(body)
    g = s3.get_object(Bucket=bucket, Key="o", Range=f"bytes={SEG - 5}-{SEG + 5}")
    assert g["Body"].read() == body[SEG - 5:SEG + 6]
    # Stored encrypted, naming no key material.
    for f in srv.data_files():
        with open(os.path.join(srv.data_dir, f), "rb") as fh:
            assert body[SEG:SEG + 64] not in fh.read()
    # A HEAD that sends encryption headers is refused, as S3 does.
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.head_object(Bucket=bucket, Key="o", **{"SSECustomerAlgorithm": "AES256",
                                                   "SSECustomerKey": os.urandom(32)})
    assert code(e)[1] == 400


@pytest.mark.parametrize("ref", ["alias/" + KEY2, f"arn:aws:kms:{REGION}:000000000000:key/{KEY2}",
                                 f"arn:aws:kms:{REGION}:000000000000:alias/{KEY2}"])
def test_key_id_forms(s3, bucket, ref):
    r = s3.put_object(Bucket=bucket, Key="f", Body=b"forms", ServerSideEncryption="aws:kms",
                      SSEKMSKeyId=ref)
    assert r["SSEKMSKeyId"] == KEY2
    assert s3.get_object(Bucket=bucket, Key="f")["Body"].read() == b"forms"


def test_refusals(s3, bucket):
    # aws:kms without a key id (no account default here), a key id without aws:kms, an
    # unknown key, a malformed id, and DSSE: refused, nothing stored.
    for kw, want in [({"ServerSideEncryption": "aws:kms"}, ("InvalidArgument", 400)),
                     ({"SSEKMSKeyId": KEY1}, ("InvalidArgument", 400)),
                     ({"ServerSideEncryption": "AES256", "SSEKMSKeyId": KEY1},
                      ("InvalidArgument", 400)),
                     ({"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": "no-such-key"},
                      ("KMS.NotFoundException", 400)),
                     ({"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": "alias/bad key!"},
                      ("KMS.NotFoundException", 400)),
                     ({"ServerSideEncryption": "aws:kms:dsse", "SSEKMSKeyId": KEY1},
                      ("NotImplemented", 501))]:
        with pytest.raises(botocore.exceptions.ClientError) as e:
            s3.put_object(Bucket=bucket, Key="x", Body=b"x", **kw)
        assert code(e) == want, kw
        with pytest.raises(botocore.exceptions.ClientError) as e:
            s3.create_multipart_upload(Bucket=bucket, Key="x", **kw)
        assert code(e) == want, kw
    assert s3.list_objects_v2(Bucket=bucket).get("KeyCount") == 0
    assert not s3.list_multipart_uploads(Bucket=bucket).get("Uploads")


def test_multipart(s3, bucket):
    p1, p2 = data(5 * MIB, seed=5), data(SEG + 3, seed=6)
    u = s3.create_multipart_upload(Bucket=bucket, Key="m", ServerSideEncryption="aws:kms",
                                   SSEKMSKeyId=KEY1)
    assert u["ServerSideEncryption"] == "aws:kms" and u["SSEKMSKeyId"] == KEY1
    parts = []
    for n, p in ((1, p1), (2, p2)):
        r = s3.upload_part(Bucket=bucket, Key="m", UploadId=u["UploadId"], PartNumber=n, Body=p)
        assert r["ServerSideEncryption"] == "aws:kms" and r["SSEKMSKeyId"] == KEY1
        parts.append({"PartNumber": n, "ETag": r["ETag"]})
    c = s3.complete_multipart_upload(Bucket=bucket, Key="m", UploadId=u["UploadId"],
                                     MultipartUpload={"Parts": parts})
    assert c["ServerSideEncryption"] == "aws:kms"
    g = s3.get_object(Bucket=bucket, Key="m")
    assert g["Body"].read() == p1 + p2 and g["SSEKMSKeyId"] == KEY1
    g = s3.get_object(Bucket=bucket, Key="m", Range=f"bytes={5 * MIB - 2}-{5 * MIB + 2}")
    assert g["Body"].read() == (p1 + p2)[5 * MIB - 2:5 * MIB + 3]


def test_copy(s3, bucket):
    body = data(SEG + 99, seed=8)
    s3.put_object(Bucket=bucket, Key="plain", Body=body)
    # plain -> KMS
    r = s3.copy_object(Bucket=bucket, Key="k1", CopySource={"Bucket": bucket, "Key": "plain"},
                       ServerSideEncryption="aws:kms", SSEKMSKeyId=KEY1)
    assert r["ServerSideEncryption"] == "aws:kms" and r["SSEKMSKeyId"] == KEY1
    # KMS -> KMS under another key
    s3.copy_object(Bucket=bucket, Key="k2", CopySource={"Bucket": bucket, "Key": "k1"},
                   ServerSideEncryption="aws:kms", SSEKMSKeyId="alias/" + KEY2)
    # KMS -> SSE-S3, KMS -> plain
    s3.copy_object(Bucket=bucket, Key="s3", CopySource={"Bucket": bucket, "Key": "k2"},
                   ServerSideEncryption="AES256")
    s3.copy_object(Bucket=bucket, Key="p2", CopySource={"Bucket": bucket, "Key": "k2"})
    for k, enc, kid in (("k1", "aws:kms", KEY1), ("k2", "aws:kms", KEY2), ("s3", "AES256", None),
                        ("p2", None, None)):
        g = s3.get_object(Bucket=bucket, Key=k)
        assert g["Body"].read() == body, k
        assert g.get("ServerSideEncryption") == enc and g.get("SSEKMSKeyId") == kid, k
    # A copy into an unknown key is refused and makes nothing.
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.copy_object(Bucket=bucket, Key="bad", CopySource={"Bucket": bucket, "Key": "k1"},
                       ServerSideEncryption="aws:kms", SSEKMSKeyId="missing")
    assert code(e) == ("KMS.NotFoundException", 400)
    assert "bad" not in [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]]


def test_bucket_default(s3, bucket):
    conf = {"Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "aws:kms",
                                                             "KMSMasterKeyID": KEY2}}]}
    s3.put_bucket_encryption(Bucket=bucket, ServerSideEncryptionConfiguration=conf)
    got = s3.get_bucket_encryption(Bucket=bucket)["ServerSideEncryptionConfiguration"]
    d = got["Rules"][0]["ApplyServerSideEncryptionByDefault"]
    assert d == {"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": KEY2}
    r = s3.put_object(Bucket=bucket, Key="d", Body=b"by default")
    assert r["ServerSideEncryption"] == "aws:kms" and r["SSEKMSKeyId"] == KEY2
    h = s3.head_object(Bucket=bucket, Key="d")
    assert h["ServerSideEncryption"] == "aws:kms" and h["SSEKMSKeyId"] == KEY2
    u = s3.create_multipart_upload(Bucket=bucket, Key="dm")
    assert u["SSEKMSKeyId"] == KEY2
    s3.abort_multipart_upload(Bucket=bucket, Key="dm", UploadId=u["UploadId"])
    # An explicit request still wins over the default.
    assert s3.put_object(Bucket=bucket, Key="e", Body=b"e",
                         ServerSideEncryption="AES256")["ServerSideEncryption"] == "AES256"
    # aws:kms without a key id, or with an unknown one, is refused; the default is kept.
    for rule, want in [({"SSEAlgorithm": "aws:kms"}, ("InvalidArgument", 400)),
                       ({"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": "nope"},
                        ("KMS.NotFoundException", 400))]:
        with pytest.raises(botocore.exceptions.ClientError) as e:
            s3.put_bucket_encryption(Bucket=bucket, ServerSideEncryptionConfiguration={
                "Rules": [{"ApplyServerSideEncryptionByDefault": rule}]})
        assert code(e) == want
    d = s3.get_bucket_encryption(Bucket=bucket)["ServerSideEncryptionConfiguration"]
    assert d["Rules"][0]["ApplyServerSideEncryptionByDefault"]["KMSMasterKeyID"] == KEY2
    s3.delete_bucket_encryption(Bucket=bucket)
    assert "ServerSideEncryption" not in s3.put_object(Bucket=bucket, Key="p", Body=b"p")
    assert s3.get_object(Bucket=bucket, Key="d")["Body"].read() == b"by default"


def test_rotate_and_disable(srv, s3, bucket):
    kms_cli(srv, "create", "--name", "rot-key")
    s3.put_object(Bucket=bucket, Key="v1", Body=b"one", ServerSideEncryption="aws:kms",
                  SSEKMSKeyId="rot-key")
    out = kms_cli(srv, "rotate", "alias/rot-key").stdout
    assert "versions=2" in out, out
    s3.put_object(Bucket=bucket, Key="v2", Body=b"two", ServerSideEncryption="aws:kms",
                  SSEKMSKeyId="rot-key")
    assert s3.get_object(Bucket=bucket, Key="v1")["Body"].read() == b"one"
    assert s3.get_object(Bucket=bucket, Key="v2")["Body"].read() == b"two"
    # Disabled: no new writes, and (as in KMS) no decryption of what it protects.
    kms_cli(srv, "disable", "rot-key")
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.put_object(Bucket=bucket, Key="v3", Body=b"x", ServerSideEncryption="aws:kms",
                      SSEKMSKeyId="rot-key")
    assert code(e) == ("KMS.DisabledException", 400)
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.get_object(Bucket=bucket, Key="v1")
    assert code(e) == ("KMS.DisabledException", 400)
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.copy_object(Bucket=bucket, Key="c", CopySource={"Bucket": bucket, "Key": "v2"})
    assert code(e) == ("KMS.DisabledException", 400)
    # Objects under other keys are untouched.
    s3.put_object(Bucket=bucket, Key="other", Body=b"o", ServerSideEncryption="aws:kms",
                  SSEKMSKeyId=KEY1)
    kms_cli(srv, "enable", "rot-key")
    assert s3.get_object(Bucket=bucket, Key="v1")["Body"].read() == b"one"
    assert s3.get_object(Bucket=bucket, Key="v2")["Body"].read() == b"two"
    listed = kms_cli(srv, "list").stdout
    assert "key_id=rot-key state=Enabled versions=2" in listed, listed
    # Each object names the version it was written under, and the key's versions are sealed
    # under the server key, never in clear (meta.db read with the server stopped: another
    # process reading it beside the server is not how it is used).
    srv.stop()
    try:
        assert sse_rows(srv, "v1")[0].endswith(";rot-key:1")
        assert sse_rows(srv, "v2")[0].endswith(";rot-key:2")
        doc = kms_keys_doc(srv, "rot-key").split("\n")
        assert doc[0].startswith("wk1 Enabled") and len(doc) == 4 and doc[3] == "", doc
        assert doc[1].startswith("g1:") and doc[2].startswith("g1:") and doc[1] != doc[2]
    finally:
        srv.start(port=srv.port)


def test_kms_cli_errors(srv):
    p = kms_cli(srv, "create", "--name", KEY1, check=False)
    assert p.returncode == 3 and "exists" in p.stderr
    p = kms_cli(srv, "rotate", "no-such", check=False)
    assert p.returncode == 3 and "no such key" in p.stderr
    p = kms_cli(srv, "create", "--name", "bad name", check=False)
    assert p.returncode == 2 and "--name" in p.stderr
    p = kms_cli(srv, "frobnicate", check=False)
    assert p.returncode == 2 and "unknown kms command" in p.stderr
    # A key made without a name gets a UUID.
    out = kms_cli(srv, "create").stdout
    kid = out.split()[0].split("=", 1)[1]
    assert len(kid) == 36 and kid.count("-") == 4, out


# ---- the KMS JSON API (TrentService), boto3's kms client ----

@pytest.fixture(scope="module")
def kms(srv):
    return boto3.client("kms", endpoint_url=srv.endpoint, aws_access_key_id=ACCESS_KEY,
                        aws_secret_access_key=SECRET_KEY, region_name=REGION, verify=srv.tls.ca,
                        config=Config(retries={"max_attempts": 1}))


def test_kms_api(srv, s3, kms, bucket):
    m = kms.create_key()["KeyMetadata"]
    kid = m["KeyId"]
    assert m["KeyState"] == "Enabled" and m["Enabled"] is True
    assert m["Arn"] == f"arn:aws:kms:{REGION}:000000000000:key/{kid}"
    assert kms.describe_key(KeyId=m["Arn"])["KeyMetadata"]["KeyId"] == kid
    ids = [k["KeyId"] for k in kms.list_keys(Limit=1000)["Keys"]]
    assert kid in ids and KEY1 in ids
    page = kms.list_keys(Limit=1)
    assert len(page["Keys"]) == 1 and page["Truncated"] is True
    rest = kms.list_keys(Limit=1000, Marker=page["NextMarker"])["Keys"]
    assert [k["KeyId"] for k in page["Keys"] + rest] == sorted(ids)
    # The key the API made encrypts objects; disabling it refuses them.
    r = s3.put_object(Bucket=bucket, Key="api", Body=b"api", ServerSideEncryption="aws:kms",
                      SSEKMSKeyId=m["Arn"])
    assert r["SSEKMSKeyId"] == kid
    kms.disable_key(KeyId=kid)
    assert kms.describe_key(KeyId=kid)["KeyMetadata"]["KeyState"] == "Disabled"
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.get_object(Bucket=bucket, Key="api")
    assert code(e) == ("KMS.DisabledException", 400)
    kms.enable_key(KeyId=kid)
    assert s3.get_object(Bucket=bucket, Key="api")["Body"].read() == b"api"
    d = kms.schedule_key_deletion(KeyId=kid, PendingWindowInDays=7)
    assert d["KeyState"] == "PendingDeletion"
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.put_object(Bucket=bucket, Key="api2", Body=b"x", ServerSideEncryption="aws:kms",
                      SSEKMSKeyId=kid)
    assert code(e) == ("KMS.DisabledException", 400)
    kms.cancel_key_deletion(KeyId=kid)
    assert kms.describe_key(KeyId=kid)["KeyMetadata"]["KeyState"] == "Disabled"
    kms.enable_key(KeyId=kid)
    # Refusals: an unknown key, a field or an action not served.
    for call, want in [(lambda: kms.describe_key(KeyId="nope"), "NotFoundException"),
                       (lambda: kms.create_key(Tags=[{"TagKey": "a", "TagValue": "b"}]),
                        "UnsupportedOperationException"),
                       (lambda: kms.create_key(KeySpec="RSA_2048", KeyUsage="SIGN_VERIFY"),
                        "UnsupportedOperationException"),
                       (lambda: kms.encrypt(KeyId=kid, Plaintext=b"x"),
                        "UnsupportedOperationException")]:
        with pytest.raises(botocore.exceptions.ClientError) as e:
            call()
        assert e.value.response["Error"]["Code"] == want


def test_kms_api_root_only(srv, kms):
    import users
    u = users.create_user(srv, "kms-user")
    c = boto3.client("kms", endpoint_url=srv.endpoint, aws_access_key_id=u.access_key,
                     aws_secret_access_key=u.secret_key, region_name=REGION, verify=srv.tls.ca,
                     config=Config(retries={"max_attempts": 1}))
    for call in (c.create_key, c.list_keys, lambda: c.disable_key(KeyId=KEY1)):
        with pytest.raises(botocore.exceptions.ClientError) as e:
            call()
        assert e.value.response["Error"]["Code"] == "AccessDeniedException"
    assert kms.describe_key(KeyId=KEY1)["KeyMetadata"]["KeyState"] == "Enabled"
    # A bad signature is refused before anything is read.
    bad = boto3.client("kms", endpoint_url=srv.endpoint, aws_access_key_id=ACCESS_KEY,
                       aws_secret_access_key="x" * 40, region_name=REGION, verify=srv.tls.ca,
                       config=Config(retries={"max_attempts": 1}))
    with pytest.raises(botocore.exceptions.ClientError) as e:
        bad.list_keys()
    assert e.value.response["Error"]["Code"] == "InvalidSignatureException"


def test_parts_may_repeat_the_uploads_kms_headers(s3, bucket):
    # The s3-tests suite sends its upload's aws:kms headers on every UploadPart (with another
    # key id, or an unknown one, too) and expects success: the part takes its upload's key.
    u = s3.create_multipart_upload(Bucket=bucket, Key="m", ServerSideEncryption="aws:kms",
                                   SSEKMSKeyId=KEY1)["UploadId"]
    parts = []
    for n in (1, 2, 3):
        body = data(5 * MIB if n < 3 else 10, seed=40 + n)
        r = s3.upload_part(Bucket=bucket, Key="m", UploadId=u, PartNumber=n, Body=body)
        parts.append(({"PartNumber": n, "ETag": r["ETag"]}, body))
    # boto3 has no SSE parameters on UploadPart: send the headers as the suite does.
    hdrs = {"x-amz-server-side-encryption": "aws:kms",
            "x-amz-server-side-encryption-aws-kms-key-id": "not-a-key"}

    def add(params, **_):
        params["headers"].update(hdrs)
    s3.meta.events.register("before-call.s3.UploadPart", add)
    try:
        body4 = data(7, seed=50)
        r = s3.upload_part(Bucket=bucket, Key="m", UploadId=u, PartNumber=3, Body=body4)
        assert r["SSEKMSKeyId"] == KEY1  # the upload's key, whatever the part named
        parts[2] = ({"PartNumber": 3, "ETag": r["ETag"]}, body4)
        # On an upload that is not SSE-KMS the header is refused.
        u2 = s3.create_multipart_upload(Bucket=bucket, Key="plain-mp")["UploadId"]
        with pytest.raises(botocore.exceptions.ClientError) as e:
            s3.upload_part(Bucket=bucket, Key="plain-mp", UploadId=u2, PartNumber=1, Body=b"x")
        assert code(e) == ("InvalidArgument", 400)
        s3.abort_multipart_upload(Bucket=bucket, Key="plain-mp", UploadId=u2)
    finally:
        s3.meta.events.unregister("before-call.s3.UploadPart", add)
    s3.complete_multipart_upload(Bucket=bucket, Key="m", UploadId=u,
                                 MultipartUpload={"Parts": [p for p, _ in parts]})
    g = s3.get_object(Bucket=bucket, Key="m")
    assert g["SSEKMSKeyId"] == KEY1 and g["Body"].read() == b"".join(b for _, b in parts)


# ---- PostgreSQL: the keys are rows every server of the database sees ----

def test_keys_shared_through_postgresql(tmp_path):
    import pgserver
    why = pgserver.missing_reason()
    if why:
        pytest.skip(why)
    with pgserver.PgServer() as pg:
        url = pg.create_db("kms")
        key_file = str(tmp_path / "server.key")
        fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, os.urandom(32).hex().encode() + b"\n")
        os.close(fd)
        # Both servers (gateways of one database) share one server key, as they must.
        a = WharfServer(extra_args=["--meta", url, "--server-key-file", key_file])
        b = WharfServer(extra_args=["--meta", url, "--server-key-file", key_file])
        with a, b:
            p = subprocess.run([a.binary, "kms", "create", "--name", "pg-key", "--meta", url,
                                "--server-key-file", key_file], capture_output=True, text=True,
                               timeout=30)
            assert p.returncode == 0, p.stderr
            ca, cb = (boto3.client("s3", endpoint_url=s.endpoint, aws_access_key_id=ACCESS_KEY,
                                   aws_secret_access_key=SECRET_KEY, region_name=REGION,
                                   config=Config(s3={"addressing_style": "path"},
                                                 retries={"max_attempts": 1}))
                      for s in (a, b))
            bkt = unique_bucket("kmspg")
            ca.create_bucket(Bucket=bkt)
            # Bytes are local to each server; the keys and rows are the database's.
            ca.put_object(Bucket=bkt, Key="a", Body=b"on a", ServerSideEncryption="aws:kms",
                          SSEKMSKeyId="pg-key")
            r = cb.put_object(Bucket=bkt, Key="b", Body=b"on b", ServerSideEncryption="aws:kms",
                              SSEKMSKeyId="alias/pg-key")
            assert r["SSEKMSKeyId"] == "pg-key"
            assert cb.get_object(Bucket=bkt, Key="b")["Body"].read() == b"on b"
            # Disabled through one server's KMS API: the other refuses at its next request.
            kms = boto3.client("kms", endpoint_url=a.endpoint, aws_access_key_id=ACCESS_KEY,
                               aws_secret_access_key=SECRET_KEY, region_name=REGION,
                               config=Config(retries={"max_attempts": 1}))
            kms.disable_key(KeyId="pg-key")
            with pytest.raises(botocore.exceptions.ClientError) as e:
                cb.get_object(Bucket=bkt, Key="b")
            assert code(e) == ("KMS.DisabledException", 400)
            kms.enable_key(KeyId="pg-key")
            p = subprocess.run([a.binary, "kms", "rotate", "pg-key", "--meta", url,
                                "--server-key-file", key_file], capture_output=True, text=True,
                               timeout=30)
            assert "versions=2" in p.stdout, p.stderr
            cb.put_object(Bucket=bkt, Key="b2", Body=b"v2", ServerSideEncryption="aws:kms",
                          SSEKMSKeyId="pg-key")
            assert cb.get_object(Bucket=bkt, Key="b")["Body"].read() == b"on b"
            assert cb.get_object(Bucket=bkt, Key="b2")["Body"].read() == b"v2"
            assert ca.get_object(Bucket=bkt, Key="a")["Body"].read() == b"on a"
            assert pg.sql("SELECT sse FROM objects WHERE key = 'b2'::bytea",
                          db="kms").endswith(";pg-key:2")
            assert pg.sql("SELECT count(*) FROM kms_keys", db="kms") == "1"
