# SPDX-License-Identifier: Apache-2.0
"""Bucket versioning against a real wharfd: boto3, Debian's aws s3api, RDMA GET of a version
through python wharf (libwharf over ofi+shm), and the same flows with PostgreSQL metadata.

- Put/GetBucketVersioning (Enabled, Suspended); version ids unique and sorted newest first;
- GET/HEAD/DELETE by versionId; x-amz-version-id on PUT/GET/HEAD/DELETE/Copy/Complete;
- delete markers (404 NoSuchKey with x-amz-delete-marker, 405 by versionId), removing a marker
  brings the older version back; the "null" version of objects written unversioned/suspended;
- ListObjectVersions paging (KeyMarker/VersionIdMarker), prefix, delimiter, max-keys;
- CopyObject from a version, DeleteObjects with VersionId;
- the bytes of non-current versions stay (also across a restart) until their version is
  deleted, and then go.
"""
import json
import os
import subprocess

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

import pgserver
from s3raw import S3Raw
from wharfd import (ACCESS_KEY, CTYPES_UNDER_ASAN, REGION, SECRET_KEY, WharfServer, md5_hex,
                    unique_bucket)

MIB = 1024 * 1024


def client(endpoint):
    return boto3.session.Session().client(
        "s3", endpoint_url=endpoint, aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY, region_name=REGION,
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                      signature_version="s3v4"))


def code(e):
    return e.value.response["Error"]["Code"]


def headers(e):
    return e.value.response["ResponseMetadata"]["HTTPHeaders"]


@pytest.fixture(scope="module")
def s3(wharfd):
    return client(wharfd.endpoint)


@pytest.fixture()
def vbucket(s3):
    b = unique_bucket("ver")
    s3.create_bucket(Bucket=b)
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    return b


def all_versions(s3, b, **kw):
    """Every version and marker, following the paging."""
    out, kw2 = [], dict(kw)
    for _ in range(1000):
        r = s3.list_object_versions(Bucket=b, **kw2)
        items = [("v", v["Key"], v["VersionId"], v["IsLatest"]) for v in r.get("Versions", [])]
        items += [("dm", d["Key"], d["VersionId"], d["IsLatest"])
                  for d in r.get("DeleteMarkers", [])]
        # boto3 splits Versions and DeleteMarkers: the server's order is by key, newest first
        out.append((r, items))
        if not r["IsTruncated"]:
            break
        kw2["KeyMarker"] = r["NextKeyMarker"]
        if r.get("NextVersionIdMarker"):
            kw2["VersionIdMarker"] = r["NextVersionIdMarker"]
        else:
            kw2.pop("VersionIdMarker", None)
    return out


def test_versioning_state(s3):
    b = unique_bucket("vst")
    s3.create_bucket(Bucket=b)
    assert "Status" not in s3.get_bucket_versioning(Bucket=b)
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    assert s3.get_bucket_versioning(Bucket=b)["Status"] == "Enabled"
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Suspended"})
    assert s3.get_bucket_versioning(Bucket=b)["Status"] == "Suspended"
    with pytest.raises(ClientError) as e:
        s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Off"})
    assert code(e) == "MalformedXML"
    with pytest.raises(ClientError) as e:
        s3.put_bucket_versioning(Bucket=unique_bucket("none"),
                                 VersioningConfiguration={"Status": "Enabled"})
    assert code(e) == "NoSuchBucket"


def test_versions_get_head_delete(s3, vbucket, wharfd):
    b = vbucket
    before = len(wharfd.data_files())
    vids = []
    for i in range(3):
        r = s3.put_object(Bucket=b, Key="k", Body=b"body %d" % i)
        vids.append(r["VersionId"])
    assert len(set(vids)) == 3 and all(len(v) == 32 for v in vids)
    assert sorted(vids) == vids[::-1], "version ids sort newest first"
    assert len(wharfd.data_files()) == before + 3, "every version keeps its bytes"
    g = s3.get_object(Bucket=b, Key="k")
    assert g["Body"].read() == b"body 2" and g["VersionId"] == vids[2]
    for i, v in enumerate(vids):
        g = s3.get_object(Bucket=b, Key="k", VersionId=v)
        assert g["Body"].read() == b"body %d" % i and g["VersionId"] == v
        h = s3.head_object(Bucket=b, Key="k", VersionId=v)
        assert h["ContentLength"] == 6 and h["ETag"] == f'"{md5_hex(b"body %d" % i)}"'
    rg = s3.get_object(Bucket=b, Key="k", VersionId=vids[0], Range="bytes=5-5")
    assert rg["Body"].read() == b"0"
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=b, Key="k", VersionId="0" * 32)
    assert code(e) == "NoSuchVersion"
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=b, Key="k", VersionId="not-a-version")
    assert code(e) == "InvalidArgument"

    # DELETE without a version: a delete marker becomes current.
    d = s3.delete_object(Bucket=b, Key="k")
    assert d["DeleteMarker"] is True and len(d["VersionId"]) == 32
    dm = d["VersionId"]
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=b, Key="k")
    assert code(e) == "NoSuchKey"
    assert headers(e).get("x-amz-delete-marker") == "true"
    assert headers(e).get("x-amz-version-id") == dm
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=b, Key="k")
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404
    assert headers(e).get("x-amz-delete-marker") == "true"
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=b, Key="k", VersionId=dm)
    assert code(e) == "MethodNotAllowed"
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 405
    assert headers(e).get("x-amz-delete-marker") == "true"
    # ListObjects hides the key; the versions stay readable.
    assert "Contents" not in s3.list_objects_v2(Bucket=b)
    assert s3.get_object(Bucket=b, Key="k", VersionId=vids[1])["Body"].read() == b"body 1"
    assert len(wharfd.data_files()) == before + 3

    # Removing the marker brings the newest version back.
    d = s3.delete_object(Bucket=b, Key="k", VersionId=dm)
    assert d["DeleteMarker"] is True and d["VersionId"] == dm
    assert s3.get_object(Bucket=b, Key="k")["Body"].read() == b"body 2"
    # Removing a version frees its bytes, and only its.
    d = s3.delete_object(Bucket=b, Key="k", VersionId=vids[1])
    assert d["VersionId"] == vids[1] and "DeleteMarker" not in d
    assert len(wharfd.data_files()) == before + 2
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=b, Key="k", VersionId=vids[1])
    assert code(e) == "NoSuchVersion"
    # Removing the current version makes the next newest current.
    s3.delete_object(Bucket=b, Key="k", VersionId=vids[2])
    g = s3.get_object(Bucket=b, Key="k")
    assert g["Body"].read() == b"body 0" and g["VersionId"] == vids[0]
    # A bucket with versions is not empty; without them it can go.
    with pytest.raises(ClientError) as e:
        s3.delete_bucket(Bucket=b)
    assert code(e) == "BucketNotEmpty"
    s3.delete_object(Bucket=b, Key="k", VersionId=vids[0])
    assert len(wharfd.data_files()) == before
    assert all_versions(s3, b)[0][1] == []
    s3.delete_bucket(Bucket=b)


def test_null_version_and_suspended(s3, wharfd):
    b = unique_bucket("vnull")
    s3.create_bucket(Bucket=b)
    r = s3.put_object(Bucket=b, Key="n", Body=b"unversioned")
    assert "VersionId" not in r
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    v1 = s3.put_object(Bucket=b, Key="n", Body=b"v1")["VersionId"]
    assert s3.get_object(Bucket=b, Key="n", VersionId="null")["Body"].read() == b"unversioned"
    h = s3.head_object(Bucket=b, Key="n", VersionId="null")
    assert h["VersionId"] == "null"
    items = all_versions(s3, b)[0][1]
    assert items == [("v", "n", v1, True), ("v", "n", "null", False)]
    # Suspended: a PUT replaces the null version (its old bytes go), the Enabled one stays.
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Suspended"})
    n_files = len(wharfd.data_files())
    r = s3.put_object(Bucket=b, Key="n", Body=b"suspended")
    assert r.get("VersionId", "null") == "null"
    assert len(wharfd.data_files()) == n_files, "the old null version's bytes were freed"
    assert s3.get_object(Bucket=b, Key="n")["Body"].read() == b"suspended"
    assert s3.get_object(Bucket=b, Key="n", VersionId=v1)["Body"].read() == b"v1"
    items = all_versions(s3, b)[0][1]
    assert items == [("v", "n", "null", True), ("v", "n", v1, False)]
    # A DELETE while suspended: a null delete marker replaces the null version.
    d = s3.delete_object(Bucket=b, Key="n")
    assert d["DeleteMarker"] is True and d["VersionId"] == "null"
    items = all_versions(s3, b)[0][1]
    assert ("dm", "n", "null", True) in items and ("v", "n", v1, False) in items
    assert len(items) == 2


def test_list_versions_paging(s3, vbucket):
    b = vbucket
    keys = ["a/1", "a/2", "b", "c/x/y", "d"]
    want = []
    for k in keys:
        vs = [s3.put_object(Bucket=b, Key=k, Body=k.encode() * n)["VersionId"]
              for n in (1, 2, 3)]
        want += [(k, v) for v in reversed(vs)]
    s3.delete_object(Bucket=b, Key="b")
    full = all_versions(s3, b)[0][1]
    assert len(full) == len(want) + 1
    assert [(k, v) for t, k, v, _ in full if t == "v"] == want
    for page in (1, 2, 3, 4, 7):
        pages = all_versions(s3, b, MaxKeys=page)
        got = [it for _, items in pages for it in items]
        assert sorted(got) == sorted(full), page
        assert all(len(items) <= page for _, items in pages)
    r = s3.list_object_versions(Bucket=b, Prefix="a/")
    assert {v["Key"] for v in r["Versions"]} == {"a/1", "a/2"} and len(r["Versions"]) == 6
    r = s3.list_object_versions(Bucket=b, Delimiter="/")
    assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["a/", "c/"]
    assert {v["Key"] for v in r["Versions"]} == {"b", "d"}
    # Paging through common prefixes too.
    got = [it for _, items in all_versions(s3, b, Delimiter="/", MaxKeys=2) for it in items]
    assert sorted(got) == sorted(it for it in full if "/" not in it[1])


def test_copy_from_version_and_multipart(s3, vbucket):
    b = vbucket
    v1 = s3.put_object(Bucket=b, Key="src", Body=b"first")["VersionId"]
    s3.put_object(Bucket=b, Key="src", Body=b"second")
    r = s3.copy_object(Bucket=b, Key="dst", CopySource={"Bucket": b, "Key": "src",
                                                        "VersionId": v1})
    assert r["CopySourceVersionId"] == v1 and len(r["VersionId"]) == 32
    assert s3.get_object(Bucket=b, Key="dst")["Body"].read() == b"first"
    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket=b, Key="dst", CopySource={"Bucket": b, "Key": "src",
                                                        "VersionId": "f" * 32})
    assert code(e) == "NoSuchVersion"
    # Restoring an older version onto the key itself is a copy from that version.
    r = s3.copy_object(Bucket=b, Key="src", CopySource={"Bucket": b, "Key": "src",
                                                        "VersionId": v1})
    assert s3.get_object(Bucket=b, Key="src")["Body"].read() == b"first"
    assert len(all_versions(s3, b, Prefix="src")[0][1]) == 3
    up = s3.create_multipart_upload(Bucket=b, Key="mp")["UploadId"]
    parts = []
    for n, data in ((1, b"a" * (5 * MIB)), (2, b"tail")):
        e_ = s3.upload_part(Bucket=b, Key="mp", UploadId=up, PartNumber=n, Body=data)["ETag"]
        parts.append({"PartNumber": n, "ETag": e_})
    r = s3.complete_multipart_upload(Bucket=b, Key="mp", UploadId=up,
                                     MultipartUpload={"Parts": parts})
    assert len(r["VersionId"]) == 32
    assert s3.head_object(Bucket=b, Key="mp", VersionId=r["VersionId"])["ContentLength"] == \
        5 * MIB + 4


def test_delete_objects_with_versions(s3, vbucket):
    b = vbucket
    vs = [s3.put_object(Bucket=b, Key="m", Body=b"%d" % i)["VersionId"] for i in range(3)]
    r = s3.delete_objects(Bucket=b, Delete={"Objects": [
        {"Key": "m", "VersionId": vs[0]}, {"Key": "m", "VersionId": vs[1]}, {"Key": "other"},
        {"Key": "m", "VersionId": "bad"}]})
    deleted = {(d["Key"], d.get("VersionId")) for d in r["Deleted"]}
    assert ("m", vs[0]) in deleted and ("m", vs[1]) in deleted
    other = [d for d in r["Deleted"] if d["Key"] == "other"][0]
    assert other["DeleteMarker"] is True and len(other["DeleteMarkerVersionId"]) == 32
    assert [e["Code"] for e in r["Errors"]] == ["InvalidArgument"]
    items = all_versions(s3, b)[0][1]
    assert sorted(items) == sorted([("v", "m", vs[2], True),
                                    ("dm", "other", other["DeleteMarkerVersionId"], True)])


def test_versions_survive_restart(fresh_wharfd):
    """Recovery at open keeps the bytes of every version (they are referenced)."""
    s3 = client(fresh_wharfd.endpoint)
    b = unique_bucket("vrst")
    s3.create_bucket(Bucket=b)
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    vs = [s3.put_object(Bucket=b, Key="k", Body=b"gen %d" % i)["VersionId"] for i in range(3)]
    s3.delete_object(Bucket=b, Key="k")
    n = len(fresh_wharfd.data_files())
    assert fresh_wharfd.stop() == 0
    fresh_wharfd.start()
    assert len(fresh_wharfd.data_files()) == n
    s3 = client(fresh_wharfd.endpoint)
    for i, v in enumerate(vs):
        assert s3.get_object(Bucket=b, Key="k", VersionId=v)["Body"].read() == b"gen %d" % i


def test_awscli_versions(wharfd, tmp_path):
    env = wharfd.client_env()
    env.pop("AWS_CA_BUNDLE", None)
    (tmp_path / "config").write_text("[default]\nregion = us-east-1\noutput = json\n")
    env.update({"AWS_CONFIG_FILE": str(tmp_path / "config"),
                "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none")})

    def aws(*args):
        r = subprocess.run(["/usr/bin/aws", "--endpoint-url", wharfd.endpoint, "--no-cli-pager",
                            "--output", "json", "s3api"] + list(args), env=env,
                           capture_output=True, timeout=120)
        assert r.returncode == 0, r.stderr.decode()
        out = r.stdout.decode().strip()
        return json.loads(out) if out else {}

    b = unique_bucket("vcli")
    aws("create-bucket", "--bucket", b)
    aws("put-bucket-versioning", "--bucket", b, "--versioning-configuration", "Status=Enabled")
    assert aws("get-bucket-versioning", "--bucket", b)["Status"] == "Enabled"
    src = tmp_path / "f"
    vids = []
    for i in range(2):
        src.write_bytes(b"cli %d" % i)
        vids.append(aws("put-object", "--bucket", b, "--key", "k", "--body", str(src))["VersionId"])
    lst = aws("list-object-versions", "--bucket", b)
    assert [v["VersionId"] for v in lst["Versions"]] == vids[::-1]
    out = tmp_path / "o"
    r = aws("get-object", "--bucket", b, "--key", "k", "--version-id", vids[0], str(out))
    assert r["VersionId"] == vids[0] and out.read_bytes() == b"cli 0"
    r = aws("delete-object", "--bucket", b, "--key", "k")
    assert r["DeleteMarker"] is True
    assert aws("list-object-versions", "--bucket", b)["DeleteMarkers"][0]["IsLatest"] is True


@pytest.mark.skipif(**CTYPES_UNDER_ASAN)
def test_rdma_get_of_a_version(wharfd):
    """GET by versionId over RDMA (libwharf over ofi+shm on the Unix socket): the bytes of
    the old version land, moved by RDMA, and the report names the version."""
    import wharf
    s3 = client(wharfd.endpoint)
    b = unique_bucket("vrdma")
    s3.create_bucket(Bucket=b)
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    old = os.urandom(3 * MIB + 17)
    v1 = s3.put_object(Bucket=b, Key="t", Body=old)["VersionId"]
    s3.put_object(Bucket=b, Key="t", Body=b"new")
    c = wharf.Client(wharfd.endpoint, ACCESS_KEY, SECRET_KEY, region=REGION,
                     provider="ofi+shm", unix_socket=wharfd.unix_socket)
    try:
        buf = bytearray(len(old))
        rep = c.get_into(b, "t", buf, version_id=v1, transport="rdma")
        assert rep.transport == "rdma" and rep.bytes == len(old) and bytes(buf) == old
        assert rep.version_id == v1
        assert c.get(b, "t", version_id=v1, transport="rdma") == old  # sized by a HEAD
        assert c.stat(b, "t", version_id=v1).length == len(old)
        part = bytearray(1000)
        rep = c.get_into(b, "t", part, offset=MIB, length=1000, version_id=v1,
                         transport="rdma")
        assert bytes(part) == old[MIB:MIB + 1000]
        assert c.get(b, "t") == b"new"
        # A version id that is a delete marker, or missing, is refused and moves nothing.
        dm = s3.delete_object(Bucket=b, Key="t")["VersionId"]
        with pytest.raises(wharf.WharfError):
            c.get_into(b, "t", bytearray(10), length=10, version_id=dm, transport="rdma")
        with pytest.raises(wharf.errors.NotFoundError):
            c.get_into(b, "t", bytearray(10), length=10, version_id="0" * 32,
                       transport="rdma")
        # RDMA PUT into a versioned bucket: the report carries the new version id.
        reg = bytearray(b"x" * 4096)
        rep = c.put_from(b, "t", reg, transport="rdma")
        assert rep.transport == "rdma" and len(rep.version_id) == 32
    finally:
        c.close()


reason = pgserver.missing_reason()


@pytest.mark.skipif(reason is not None, reason=reason or "")
def test_versions_on_postgresql():
    with pgserver.PgServer() as pg:
        url = pg.create_db("versions")
        with WharfServer(extra_args=["--meta", url]) as srv:
            s3 = client(srv.endpoint)
            b = unique_bucket("vpg")
            s3.create_bucket(Bucket=b)
            s3.put_object(Bucket=b, Key="k", Body=b"null one")
            s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
            vs = [s3.put_object(Bucket=b, Key="k", Body=b"pg %d" % i)["VersionId"]
                  for i in range(3)]
            for i, v in enumerate(vs):
                assert s3.get_object(Bucket=b, Key="k", VersionId=v)["Body"].read() == \
                    b"pg %d" % i
            assert s3.get_object(Bucket=b, Key="k", VersionId="null")["Body"].read() == \
                b"null one"
            dm = s3.delete_object(Bucket=b, Key="k")["VersionId"]
            with pytest.raises(ClientError) as e:
                s3.get_object(Bucket=b, Key="k")
            assert code(e) == "NoSuchKey" and headers(e).get("x-amz-delete-marker") == "true"
            full = all_versions(s3, b)[0][1]
            assert [x[2] for x in full if x[0] == "v"] == vs[::-1] + ["null"]
            paged = [it for _, items in all_versions(s3, b, MaxKeys=2) for it in items]
            assert sorted(paged) == sorted(full)
            s3.delete_object(Bucket=b, Key="k", VersionId=dm)
            s3.delete_object(Bucket=b, Key="k", VersionId=vs[2])
            assert s3.get_object(Bucket=b, Key="k")["Body"].read() == b"pg 1"
            assert pg.sql("SELECT count(*) FROM versions", db="versions") == "2"
            s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Suspended"})
            s3.put_object(Bucket=b, Key="k", Body=b"suspended")
            assert s3.get_object(Bucket=b, Key="k", VersionId="null")["Body"].read() == \
                b"suspended"
            raw = S3Raw(srv.endpoint)
            r = raw.request("GET", f"/{b}/k", query={"versionId": vs[0]})
            assert r.status == 200 and r.body == b"pg 0"


def test_versioned_requests_need_the_version_actions(wharfd, s3):
    """A user allowed s3:GetObject and s3:DeleteObject (a bucket policy) reads and deletes the
    current version, but a request naming a version needs s3:GetObjectVersion /
    s3:DeleteObjectVersion, as S3 decides it."""
    import users
    b = unique_bucket("vauth")
    s3.create_bucket(Bucket=b)
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    v1 = s3.put_object(Bucket=b, Key="k", Body=b"one")["VersionId"]
    s3.put_object(Bucket=b, Key="k", Body=b"two")
    u = users.create_user(wharfd, unique_bucket("vuser")[:40])
    arn = f"arn:aws:s3:::{b}/*"

    def allow(*actions):
        s3.put_bucket_policy(Bucket=b, Policy=json.dumps({
            "Version": "2012-10-17", "Statement": [{
                "Effect": "Allow", "Principal": {"AWS": [u.arn]}, "Action": list(actions),
                "Resource": [arn]}]}))

    allow("s3:GetObject", "s3:DeleteObject")
    c = u.boto3(wharfd)
    assert c.get_object(Bucket=b, Key="k")["Body"].read() == b"two"
    with pytest.raises(ClientError) as e:
        c.get_object(Bucket=b, Key="k", VersionId=v1)
    assert code(e) == "AccessDenied"
    with pytest.raises(ClientError) as e:
        c.delete_object(Bucket=b, Key="k", VersionId=v1)
    assert code(e) == "AccessDenied"
    allow("s3:GetObject", "s3:GetObjectVersion", "s3:DeleteObjectVersion")
    assert c.get_object(Bucket=b, Key="k", VersionId=v1)["Body"].read() == b"one"
    c.delete_object(Bucket=b, Key="k", VersionId=v1)
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=b, Key="k", VersionId=v1)
    assert code(e) == "NoSuchVersion"
