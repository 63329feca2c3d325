# SPDX-License-Identifier: Apache-2.0
"""Debian's awscli 2.9 (/usr/bin/aws) against a real wharfd: aws s3 and aws s3api.

Every command runs as a subprocess with the endpoint on the command line and the credentials
from WharfServer.client_env(); AWS_CONFIG_FILE points at a config of the module's own
(multipart threshold and chunk size 8 MiB, so a 64 MiB cp goes multipart).
"""
import filecmp
import json
import os
import subprocess
import time
import urllib.request

import pytest

from wharfd import (crc32c_b64, file_md5_hex, md5_hex, multipart_etag, unique_bucket)

AWS = "/usr/bin/aws"
MIB = 1024 * 1024


class Aws:
    def __init__(self, endpoint, env):
        self.endpoint = endpoint
        self.env = env

    def run(self, *args, check=True, timeout=180, env=None):
        cmd = [AWS, "--endpoint-url", self.endpoint, "--no-cli-pager"] + [str(a) for a in args]
        r = subprocess.run(cmd, env=env or self.env, capture_output=True, timeout=timeout)
        if check and r.returncode != 0:
            raise AssertionError(f"{' '.join(cmd)} failed ({r.returncode}):\n"
                                 f"{r.stderr.decode(errors='replace')}")
        return r

    def json(self, *args, env=None):
        out = self.run(*args, "--output", "json", env=env).stdout.decode().strip()
        return json.loads(out) if out else {}

    def fails(self, *args, env=None):
        """Runs a command that must fail; returns its stderr."""
        r = self.run(*args, check=False, env=env)
        err = r.stderr.decode(errors="replace")
        assert r.returncode != 0, f"aws {args} should have failed: {r.stdout[:500]!r}"
        return err


def _write_config(path, extra_s3=""):
    path.write_text("[default]\nregion = us-east-1\noutput = json\ns3 =\n"
                    "  multipart_threshold = 8MB\n  multipart_chunksize = 8MB\n" + extra_s3)


@pytest.fixture(scope="module")
def aws(wharfd, tmp_path_factory):
    d = tmp_path_factory.mktemp("awscfg")
    _write_config(d / "config")
    env = wharfd.client_env()
    env.pop("AWS_CA_BUNDLE", None)
    env.pop("AWS_PROFILE", None)
    env.update({"AWS_CONFIG_FILE": str(d / "config"),
                "AWS_SHARED_CREDENTIALS_FILE": str(d / "no-credentials"),
                "AWS_PAGER": ""})
    return Aws(wharfd.endpoint, env)


@pytest.fixture()
def bucket(aws):
    name = unique_bucket("awscli")
    aws.run("s3api", "create-bucket", "--bucket", name)
    yield name
    aws.run("s3", "rb", f"s3://{name}", "--force", check=False)


def _keys(listing):
    return [c["Key"] for c in listing.get("Contents", [])]


# ---- aws s3 ----

def test_s3_mb_ls_rb(aws):
    name = unique_bucket("awscli-mb")
    out = aws.run("s3", "mb", f"s3://{name}").stdout.decode()
    assert f"make_bucket: {name}" in out
    listed = aws.run("s3", "ls").stdout.decode().split()
    assert name in listed
    # us-east-1: making one's own bucket again succeeds, as in S3 there.
    assert f"make_bucket: {name}" in aws.run("s3", "mb", f"s3://{name}").stdout.decode()
    aws.run("s3", "rb", f"s3://{name}")
    assert name not in aws.run("s3", "ls").stdout.decode().split()


def test_s3_cp_up_down_small(aws, bucket, tmp_path):
    data = os.urandom(100_000)
    src = tmp_path / "small.bin"
    src.write_bytes(data)
    key = "dir one/ünïcode file.bin"
    aws.run("s3", "cp", src, f"s3://{bucket}/{key}")
    ls = aws.run("s3", "ls", f"s3://{bucket}/dir one/").stdout.decode()
    assert "ünïcode file.bin" in ls and str(len(data)) in ls, ls
    dst = tmp_path / "back.bin"
    aws.run("s3", "cp", f"s3://{bucket}/{key}", dst)
    assert dst.read_bytes() == data
    # To stdout, and a zero-byte object.
    out = aws.run("s3", "cp", f"s3://{bucket}/{key}", "-").stdout
    assert out == data
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    aws.run("s3", "cp", empty, f"s3://{bucket}/empty")
    head = aws.json("s3api", "head-object", "--bucket", bucket, "--key", "empty")
    assert head["ContentLength"] == 0
    assert head["ETag"] == f'"{md5_hex(b"")}"'
    # From stdin (size unknown to aws), and a presigned URL made by aws, fetched by urllib.
    r = subprocess.run([AWS, "--endpoint-url", aws.endpoint, "s3", "cp", "-",
                        f"s3://{bucket}/from-stdin"], input=data, env=aws.env,
                       capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    url = aws.run("s3", "presign", f"s3://{bucket}/from-stdin", "--expires-in", "300")
    url = url.stdout.decode().strip()
    assert "X-Amz-Signature=" in url, url
    with urllib.request.urlopen(url, timeout=30) as resp:
        assert resp.status == 200 and resp.read() == data
    # Missing key.
    err = aws.fails("s3", "cp", f"s3://{bucket}/nope", tmp_path / "nope")
    assert "404" in err or "Not Found" in err, err


def test_s3_cp_multipart_64mib(aws, bucket, tmp_path):
    size = 64 * MIB + 12345  # 9 parts of 8 MiB, the last one short
    data = os.urandom(size)
    src = tmp_path / "big.bin"
    src.write_bytes(data)
    aws.run("s3", "cp", src, f"s3://{bucket}/big.bin")
    head = aws.json("s3api", "head-object", "--bucket", bucket, "--key", "big.bin")
    assert head["ContentLength"] == size
    assert head["ETag"] == f'"{multipart_etag(data, 8 * MIB)}"', head
    assert head["ETag"].endswith('-9"')
    # No upload left behind.
    ups = aws.json("s3api", "list-multipart-uploads", "--bucket", bucket)
    assert not ups.get("Uploads"), ups
    dst = tmp_path / "big.back"
    aws.run("s3", "cp", f"s3://{bucket}/big.bin", dst)  # multipart download: ranged GETs
    assert dst.stat().st_size == size
    assert filecmp.cmp(src, dst, shallow=False)
    del data


def _tree(root, files):
    # mtimes a minute in the past: S3's LastModified has one-second resolution, and aws sync
    # re-uploads a file whose mtime is later than it, so files written in the same second as
    # the upload would make the "nothing to do" check below racy.
    old = time.time() - 60
    for rel, content in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(content)
        os.utime(p, (old, old))


def _dirs_equal(a, b):
    la = sorted(str(p.relative_to(a)) for p in a.rglob("*") if p.is_file())
    lb = sorted(str(p.relative_to(b)) for p in b.rglob("*") if p.is_file())
    assert la == lb
    for rel in la:
        assert (a / rel).read_bytes() == (b / rel).read_bytes(), rel


def test_s3_sync_up_down_delete(aws, bucket, tmp_path):
    up = tmp_path / "up"
    files = {"a.txt": b"alpha\n", "d1/b.bin": os.urandom(3000), "d1/d2/c with space.txt": b"c",
             "d1/d2/d3/ü.txt": "ü".encode(), "zero": b""}
    _tree(up, files)
    out = aws.run("s3", "sync", up, f"s3://{bucket}/t").stdout.decode()
    assert out.count("upload:") == len(files), out
    listing = aws.json("s3api", "list-objects-v2", "--bucket", bucket)
    assert sorted(_keys(listing)) == sorted(f"t/{k}" for k in files)
    # Nothing changed: a second sync must upload nothing (sizes and LastModified agree).
    out = aws.run("s3", "sync", up, f"s3://{bucket}/t").stdout.decode()
    assert "upload:" not in out, out
    # Change one (different size), add one, remove one; sync --delete mirrors it.
    (up / "a.txt").write_bytes(b"alpha, longer now\n")
    (up / "new.txt").write_bytes(b"new")
    for p in (up / "a.txt", up / "new.txt"):
        os.utime(p, (time.time() - 30, time.time() - 30))
    (up / "d1/b.bin").unlink()
    out = aws.run("s3", "sync", up, f"s3://{bucket}/t", "--delete").stdout.decode()
    assert "upload: " in out and "delete: s3://" in out, out
    expect = sorted(f"t/{p.relative_to(up)}" for p in up.rglob("*") if p.is_file())
    assert sorted(_keys(aws.json("s3api", "list-objects-v2", "--bucket", bucket))) == expect
    down = tmp_path / "down"
    aws.run("s3", "sync", f"s3://{bucket}/t", down)
    _dirs_equal(up, down)


def _sync_keys(aws, tmp_path, bucket, keys, content=b"x"):
    """Uploads small objects under `keys` with one aws process (s3 sync of a local tree)."""
    root = tmp_path / "sync-src"
    for k in keys:
        (root / k).parent.mkdir(parents=True, exist_ok=True)
        (root / k).write_bytes(content)
    aws.run("s3", "sync", root, f"s3://{bucket}")


def test_s3_rm_and_rb(aws, tmp_path):
    name = unique_bucket("awscli-rm")
    aws.run("s3", "mb", f"s3://{name}")
    _sync_keys(aws, tmp_path, name, ["k1", "p/k2", "p/k3", "p/q/k4"])
    aws.run("s3", "rm", f"s3://{name}/k1")
    assert sorted(_keys(aws.json("s3api", "list-objects-v2", "--bucket", name))) == \
        ["p/k2", "p/k3", "p/q/k4"]
    err = aws.fails("s3", "rb", f"s3://{name}")
    assert "BucketNotEmpty" in err, err
    out = aws.run("s3", "rm", f"s3://{name}/p/q/", "--recursive").stdout.decode()
    assert out.count("delete:") == 1, out
    assert _keys(aws.json("s3api", "list-objects-v2", "--bucket", name)) == ["p/k2", "p/k3"]
    out = aws.run("s3", "rb", f"s3://{name}", "--force").stdout.decode()
    assert out.count("delete:") == 2 and f"remove_bucket: {name}" in out, out
    err = aws.fails("s3api", "head-bucket", "--bucket", name)
    assert "404" in err, err


# ---- aws s3api ----

def test_s3api_bucket_calls(aws, tmp_path):
    name = unique_bucket("awscli-api")
    aws.run("s3api", "create-bucket", "--bucket", name)
    aws.run("s3api", "head-bucket", "--bucket", name)
    err = aws.fails("s3api", "head-bucket", "--bucket", name + "-missing")
    assert "404" in err, err
    buckets = aws.json("s3api", "list-buckets")
    mine = [b for b in buckets["Buckets"] if b["Name"] == name]
    assert len(mine) == 1 and mine[0]["CreationDate"], buckets
    assert "Owner" in buckets
    loc = aws.json("s3api", "get-bucket-location", "--bucket", name)
    assert loc.get("LocationConstraint") in (None, "", "us-east-1"), loc
    ver = aws.json("s3api", "get-bucket-versioning", "--bucket", name)
    assert ver.get("Status") in (None, "Suspended"), ver
    _sync_keys(aws, tmp_path, name, ["x/1", "x/2", "y"], b"v")
    vers = aws.json("s3api", "list-object-versions", "--bucket", name)
    v = vers.get("Versions", [])
    assert sorted(e["Key"] for e in v) == ["x/1", "x/2", "y"], vers
    assert all(e["VersionId"] == "null" and e["IsLatest"] for e in v), v
    assert all(e["Size"] == 1 and e["ETag"] == f'"{md5_hex(b"v")}"' for e in v), v
    assert not vers.get("DeleteMarkers")
    vers = aws.json("s3api", "list-object-versions", "--bucket", name, "--prefix", "x/")
    assert sorted(e["Key"] for e in vers.get("Versions", [])) == ["x/1", "x/2"], vers
    err = aws.fails("s3api", "delete-bucket", "--bucket", name)
    assert "BucketNotEmpty" in err, err
    aws.run("s3", "rm", f"s3://{name}", "--recursive")
    aws.run("s3api", "delete-bucket", "--bucket", name)
    assert name not in [b["Name"] for b in aws.json("s3api", "list-buckets")["Buckets"]]
    err = aws.fails("s3api", "create-bucket", "--bucket", "Bad_Name")
    assert "InvalidBucketName" in err, err


def test_s3api_put_metadata_content_type(aws, bucket, tmp_path):
    body = os.urandom(4321)
    f = tmp_path / "b"
    f.write_bytes(body)
    r = aws.json("s3api", "put-object", "--bucket", bucket, "--key", "m/obj", "--body", f,
                 "--metadata", "color=blue,owner-name=Ada", "--content-type",
                 "application/x-wharf-test")
    assert r["ETag"] == f'"{md5_hex(body)}"'
    head = aws.json("s3api", "head-object", "--bucket", bucket, "--key", "m/obj")
    assert head["ContentLength"] == len(body)
    assert head["ContentType"] == "application/x-wharf-test"
    assert head["Metadata"] == {"color": "blue", "owner-name": "Ada"}, head
    assert head["ETag"] == r["ETag"]
    assert head["LastModified"]
    out = tmp_path / "o"
    g = aws.json("s3api", "get-object", "--bucket", bucket, "--key", "m/obj", out)
    assert g["Metadata"] == {"color": "blue", "owner-name": "Ada"}
    assert g["ContentType"] == "application/x-wharf-test"
    assert out.read_bytes() == body
    err = aws.fails("s3api", "head-object", "--bucket", bucket, "--key", "m/missing")
    assert "404" in err, err


def test_s3api_checksum_crc32c(aws, bucket, tmp_path):
    """--checksum-algorithm CRC32C: over http aws 2.9 sends x-amz-checksum-crc32c with a signed
    payload, or with UNSIGNED-PAYLOAD when payload signing is off; both are verified and the
    checksum comes back on HEAD and GET with checksum mode on."""
    cfg = tmp_path / "config"
    _write_config(cfg, "  payload_signing_enabled = false\n")
    unsigned = dict(aws.env, AWS_CONFIG_FILE=str(cfg))
    body = os.urandom(50_000)
    f = tmp_path / "b"
    f.write_bytes(body)
    want = crc32c_b64(body)
    for key, env in (("c", None), ("c-unsigned", unsigned)):
        r = aws.json("s3api", "put-object", "--bucket", bucket, "--key", key, "--body", f,
                     "--checksum-algorithm", "CRC32C", env=env)
        assert r.get("ChecksumCRC32C") == want, (key, r)
    head = aws.json("s3api", "head-object", "--bucket", bucket, "--key", "c-unsigned",
                    "--checksum-mode", "ENABLED")
    assert head.get("ChecksumCRC32C") == want, head
    # GET with checksum mode: botocore validates the body against the returned checksum.
    out = tmp_path / "o"
    g = aws.json("s3api", "get-object", "--bucket", bucket, "--key", "c",
                 "--checksum-mode", "ENABLED", out)
    assert g.get("ChecksumCRC32C") == want, g
    assert out.read_bytes() == body
    # A wrong checksum value is refused, signed or not, and nothing is stored.
    for key, env in (("c-bad", None), ("c-bad-unsigned", unsigned)):
        err = aws.fails("s3api", "put-object", "--bucket", bucket, "--key", key, "--body", f,
                        "--checksum-crc32-c", "AAAAAA==", env=env)
        assert "BadDigest" in err, err
    assert sorted(_keys(aws.json("s3api", "list-objects-v2", "--bucket", bucket))) == \
        ["c", "c-unsigned"]


def test_s3api_get_range(aws, bucket, tmp_path):
    body = bytes(range(256)) * 4  # 1024 bytes
    f = tmp_path / "b"
    f.write_bytes(body)
    aws.run("s3api", "put-object", "--bucket", bucket, "--key", "r", "--body", f)
    out = tmp_path / "o"
    cases = [("bytes=100-199", 100, 200), ("bytes=-10", 1014, 1024), ("bytes=1000-", 1000, 1024),
             ("bytes=1000-5000", 1000, 1024)]
    for rng, lo, hi in cases:
        g = aws.json("s3api", "get-object", "--bucket", bucket, "--key", "r", "--range", rng, out)
        assert out.read_bytes() == body[lo:hi], rng
        assert g["ContentLength"] == hi - lo, (rng, g)
        assert g["ContentRange"] == f"bytes {lo}-{hi - 1}/1024", (rng, g)
    err = aws.fails("s3api", "get-object", "--bucket", bucket, "--key", "r", "--range",
                    "bytes=2000-3000", out)
    assert "InvalidRange" in err, err


def test_s3api_copy_object(aws, bucket, tmp_path):
    body = os.urandom(20_000)
    f = tmp_path / "b"
    f.write_bytes(body)
    aws.run("s3api", "put-object", "--bucket", bucket, "--key", "src key", "--body", f,
            "--metadata", "a=1", "--content-type", "text/x-src")
    r = aws.json("s3api", "copy-object", "--bucket", bucket, "--key", "dst/copy",
                 "--copy-source", f"{bucket}/src key")
    assert r["CopyObjectResult"]["ETag"] == f'"{md5_hex(body)}"', r
    head = aws.json("s3api", "head-object", "--bucket", bucket, "--key", "dst/copy")
    assert head["Metadata"] == {"a": "1"} and head["ContentType"] == "text/x-src", head
    r = aws.json("s3api", "copy-object", "--bucket", bucket, "--key", "dst/replaced",
                 "--copy-source", f"{bucket}/src key", "--metadata-directive", "REPLACE",
                 "--metadata", "b=2", "--content-type", "text/x-new")
    head = aws.json("s3api", "head-object", "--bucket", bucket, "--key", "dst/replaced")
    assert head["Metadata"] == {"b": "2"} and head["ContentType"] == "text/x-new", head
    assert head["ETag"] == f'"{md5_hex(body)}"'
    # Overwriting the source does not change the copy.
    f.write_bytes(b"new source")
    aws.run("s3api", "put-object", "--bucket", bucket, "--key", "src key", "--body", f)
    out = tmp_path / "o"
    aws.run("s3api", "get-object", "--bucket", bucket, "--key", "dst/copy", out)
    assert out.read_bytes() == body
    err = aws.fails("s3api", "copy-object", "--bucket", bucket, "--key", "x",
                    "--copy-source", f"{bucket}/does-not-exist")
    assert "NoSuchKey" in err, err


def test_s3api_delete_objects(aws, bucket, tmp_path):
    keys = ["del/1", "del/2", "del/ü 3", "keep"]
    _sync_keys(aws, tmp_path, bucket, keys)
    req = {"Objects": [{"Key": k} for k in keys[:3]] + [{"Key": "del/never-existed"}],
           "Quiet": False}
    r = aws.json("s3api", "delete-objects", "--bucket", bucket, "--delete", json.dumps(req))
    assert sorted(d["Key"] for d in r.get("Deleted", [])) == \
        sorted(keys[:3] + ["del/never-existed"]), r
    assert not r.get("Errors"), r
    assert _keys(aws.json("s3api", "list-objects-v2", "--bucket", bucket)) == ["keep"]
    req = {"Objects": [{"Key": "keep"}], "Quiet": True}
    r = aws.json("s3api", "delete-objects", "--bucket", bucket, "--delete", json.dumps(req))
    assert not r.get("Deleted") and not r.get("Errors"), r
    assert _keys(aws.json("s3api", "list-objects-v2", "--bucket", bucket)) == []


LIST_KEYS = ["a/1", "a/2", "a/b/3", "a/b/4", "b/5", "c", "d/e/6", "plus+sign", "sp ace/ü.txt"]


@pytest.fixture(scope="module")
def list_bucket(aws, tmp_path_factory):
    name = unique_bucket("awscli-list")
    aws.run("s3api", "create-bucket", "--bucket", name)
    f = tmp_path_factory.mktemp("lst") / "f"
    f.write_bytes(b"L")
    # One aws process for all the PUTs: `s3 sync` of a local tree with these keys.
    root = f.parent / "tree"
    for k in LIST_KEYS:
        (root / k).parent.mkdir(parents=True, exist_ok=True)
        (root / k).write_bytes(b"L")
    aws.run("s3", "sync", root, f"s3://{name}")
    yield name
    aws.run("s3", "rb", f"s3://{name}", "--force", check=False)


def test_s3api_list_v2_prefix_delimiter(aws, list_bucket):
    r = aws.json("s3api", "list-objects-v2", "--bucket", list_bucket, "--no-paginate")
    assert _keys(r) == sorted(LIST_KEYS), r  # byte order; url-decoded by aws
    assert r["KeyCount"] == len(LIST_KEYS) and r["IsTruncated"] is False, r
    assert all(c["Size"] == 1 for c in r["Contents"])
    r = aws.json("s3api", "list-objects-v2", "--bucket", list_bucket, "--prefix", "a/",
                 "--delimiter", "/")
    assert _keys(r) == ["a/1", "a/2"], r
    assert [p["Prefix"] for p in r.get("CommonPrefixes", [])] == ["a/b/"], r
    r = aws.json("s3api", "list-objects-v2", "--bucket", list_bucket, "--delimiter", "/")
    assert _keys(r) == ["c", "plus+sign"], r
    assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["a/", "b/", "d/", "sp ace/"], r
    r = aws.json("s3api", "list-objects-v2", "--bucket", list_bucket, "--start-after", "b/5")
    assert _keys(r) == [k for k in sorted(LIST_KEYS) if k > "b/5"], r
    r = aws.json("s3api", "list-objects-v2", "--bucket", list_bucket, "--prefix", "zzz")
    assert _keys(r) == [] and not r.get("CommonPrefixes"), r


def test_s3api_list_v2_pagination(aws, list_bucket):
    # --page-size sets max-keys, so the server's continuation tokens carry the walk;
    # --max-items/--starting-token are aws's own resumable pagination on top.
    got, token = [], None
    for _ in range(len(LIST_KEYS) + 2):
        args = ["s3api", "list-objects-v2", "--bucket", list_bucket, "--page-size", "2",
                "--max-items", "3"]
        if token:
            args += ["--starting-token", token]
        r = aws.json(*args)
        keys = _keys(r)
        assert len(keys) <= 3
        got += keys
        token = r.get("NextToken")
        if not token:
            break
    assert got == sorted(LIST_KEYS)
    # Delimiter with pagination: prefixes and keys are counted together.
    r = aws.json("s3api", "list-objects-v2", "--bucket", list_bucket, "--delimiter", "/",
                 "--page-size", "1")
    assert _keys(r) == ["c", "plus+sign"], r
    assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["a/", "b/", "d/", "sp ace/"], r


def test_s3api_list_objects_v1(aws, list_bucket):
    r = aws.json("s3api", "list-objects", "--bucket", list_bucket, "--page-size", "2")
    assert _keys(r) == sorted(LIST_KEYS), r  # walked with marker / NextMarker
    r = aws.json("s3api", "list-objects", "--bucket", list_bucket, "--delimiter", "/",
                 "--page-size", "2")
    assert _keys(r) == ["c", "plus+sign"], r
    assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["a/", "b/", "d/", "sp ace/"], r
    r = aws.json("s3api", "list-objects", "--bucket", list_bucket, "--marker", "a/2")
    assert _keys(r) == [k for k in sorted(LIST_KEYS) if k > "a/2"], r


def test_s3api_multipart_low_level(aws, bucket, tmp_path):
    p1 = os.urandom(5 * MIB)
    p2 = os.urandom(MIB + 7)
    (tmp_path / "p1").write_bytes(p1)
    (tmp_path / "p2").write_bytes(p2)
    key = "mp/obj"
    c = aws.json("s3api", "create-multipart-upload", "--bucket", bucket, "--key", key,
                 "--content-type", "application/x-mp", "--metadata", "m=1")
    uid = c["UploadId"]
    assert uid and c["Key"] == key and c["Bucket"] == bucket

    def upload(n, src):
        return aws.json("s3api", "upload-part", "--bucket", bucket, "--key", key,
                        "--upload-id", uid, "--part-number", n, "--body", src)["ETag"]

    def complete(parts):
        doc = {"Parts": [{"PartNumber": n, "ETag": e} for n, e in parts]}
        args = ("s3api", "complete-multipart-upload", "--bucket", bucket, "--key", key,
                "--upload-id", uid, "--multipart-upload", json.dumps(doc))
        return args

    # Part 1 too small (not the last part): EntityTooSmall, and the upload stays.
    e_small = upload(1, tmp_path / "p2")
    e2 = upload(2, tmp_path / "p2")
    err = aws.fails(*complete([(1, e_small), (2, e2)]))
    assert "EntityTooSmall" in err, err
    # Uploading part 1 again replaces it.
    e1 = upload(1, tmp_path / "p1")
    assert e1 == f'"{md5_hex(p1)}"' and e2 == f'"{md5_hex(p2)}"'
    parts = aws.json("s3api", "list-parts", "--bucket", bucket, "--key", key, "--upload-id", uid)
    assert [(p["PartNumber"], p["Size"], p["ETag"]) for p in parts["Parts"]] == \
        [(1, len(p1), e1), (2, len(p2), e2)], parts
    ups = aws.json("s3api", "list-multipart-uploads", "--bucket", bucket)
    assert [(u["Key"], u["UploadId"]) for u in ups["Uploads"]] == [(key, uid)], ups
    # Bad completions leave the upload in place.
    err = aws.fails(*complete([(1, e1), (2, '"' + "0" * 32 + '"')]))
    assert "InvalidPart" in err, err
    err = aws.fails(*complete([(2, e2), (1, e1)]))
    assert "InvalidPartOrder" in err, err
    r = aws.json(*complete([(1, e1), (2, e2)]))
    want = multipart_etag(p1 + p2, 5 * MIB)
    assert r["ETag"] == f'"{want}"' and r["ETag"].endswith('-2"'), r
    head = aws.json("s3api", "head-object", "--bucket", bucket, "--key", key)
    assert head["ContentLength"] == len(p1) + len(p2) and head["ETag"] == r["ETag"], head
    assert head["ContentType"] == "application/x-mp" and head["Metadata"] == {"m": "1"}, head
    out = tmp_path / "o"
    aws.run("s3api", "get-object", "--bucket", bucket, "--key", key, out)
    assert file_md5_hex(out) == md5_hex(p1 + p2)

    # Abort: the upload and its parts go away, and nothing appears under the key.
    uid2 = aws.json("s3api", "create-multipart-upload", "--bucket", bucket,
                    "--key", "mp/aborted")["UploadId"]
    aws.run("s3api", "upload-part", "--bucket", bucket, "--key", "mp/aborted", "--upload-id",
            uid2, "--part-number", "1", "--body", tmp_path / "p2")
    aws.run("s3api", "abort-multipart-upload", "--bucket", bucket, "--key", "mp/aborted",
            "--upload-id", uid2)
    err = aws.fails("s3api", "list-parts", "--bucket", bucket, "--key", "mp/aborted",
                    "--upload-id", uid2)
    assert "NoSuchUpload" in err, err
    assert not aws.json("s3api", "list-multipart-uploads", "--bucket", bucket).get("Uploads")
    assert _keys(aws.json("s3api", "list-objects-v2", "--bucket", bucket)) == [key]
