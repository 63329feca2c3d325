# SPDX-License-Identifier: Apache-2.0
"""Part ETags: a PutObject above --etag-part-size (here 8 MiB) without Content-MD5 gets the
ETag S3 gives a multipart upload of parts of that size (md5 of the parts' md5s, "-N"), hashed
in parallel instead of one MD5 at one core's speed; with Content-MD5, as an UploadPart, or at
or below the part size, the ETag stays the plain MD5.

Who sends no Content-MD5: libwharf (RDMA and HTTP, so wharf.torch), curl, raw signed requests.
Debian's boto3 and aws send one on PutObject, so their objects keep plain MD5 ETags. Real
clients still read, copy, check and condition on part-ETag objects: boto3, aws, s3cmd,
rclone (check included).

RDMA PUTs and parts of 4 MiB or more without Content-MD5 get digest ETags instead (from the
CRCs, no MD5 pass; `--rdma-etag md5` turns them off): the same clients pass on those."""
import hashlib
import os
import re
import subprocess

import boto3
import pytest
from botocore.config import Config

from s3raw import UNSIGNED, S3Raw
from test_awscli import Aws, _write_config
from test_rclone import Rclone
from wharfd import (ACCESS_KEY, REGION, SECRET_KEY, WharfServer, assert_start_refused,
                    rclone_remote_env, unique_bucket)

MIB = 1 << 20
PART = 8 * MIB


def part_etag(data, part=PART):
    parts = [data[i:i + part] for i in range(0, len(data), part)] or [b""]
    if len(parts) == 1:
        return hashlib.md5(data).hexdigest()
    cat = b"".join(hashlib.md5(p).digest() for p in parts)
    return f"{hashlib.md5(cat).hexdigest()}-{len(parts)}"


@pytest.fixture(scope="module")
def wharfd():
    srv = WharfServer(extra_args=["--etag-part-size", "8M"])
    srv.start()
    yield srv
    srv.stop()
    srv.cleanup()


@pytest.fixture(scope="module")
def s3(wharfd):
    os.environ.pop("AWS_CA_BUNDLE", None)
    return boto3.client("s3", endpoint_url=wharfd.endpoint, aws_access_key_id=ACCESS_KEY,
                        aws_secret_access_key=SECRET_KEY, region_name=REGION,
                        config=Config(s3={"addressing_style": "path"}))


@pytest.fixture()
def bucket(s3):
    name = unique_bucket("etag")
    s3.create_bucket(Bucket=name)
    return name


@pytest.fixture(scope="module")
def raw(wharfd):
    return S3Raw(wharfd.endpoint)


def raw_put(raw, bucket, key, data):
    """A signed PUT without Content-MD5 (as libwharf sends)."""
    r = raw.request("PUT", f"/{bucket}/{key}", body=data, payload_hash=UNSIGNED)
    assert r.status == 200, (r.status, r.body[:300])
    return r.headers["etag"]


def aws_cli(wharfd, tmp_path):
    d = tmp_path / "cfg"
    d.mkdir()
    _write_config(d / "config")
    env = wharfd.client_env()
    env.pop("AWS_CA_BUNDLE", None)
    env.update({"AWS_CONFIG_FILE": str(d / "config"),
                "AWS_SHARED_CREDENTIALS_FILE": str(d / "none"), "AWS_PAGER": ""})
    return Aws(wharfd.endpoint, env)


def s3cmd(wharfd, tmp_path):
    """A function running Debian's s3cmd against wharfd with its own config and HOME."""
    host = f"127.0.0.1:{wharfd.port}"
    cfg = tmp_path / "s3cfg"
    cfg.write_text(f"[default]\naccess_key = {ACCESS_KEY}\nsecret_key = {SECRET_KEY}\n"
                   f"host_base = {host}\nhost_bucket = {host}\nuse_https = False\n"
                   "signature_v2 = False\nbucket_location = us-east-1\nprogress_meter = False\n")
    env = wharfd.client_env()
    env["HOME"] = str(tmp_path)
    return lambda *a: subprocess.run(["/usr/bin/s3cmd", "-c", str(cfg)] + list(a), env=env,
                                     capture_output=True, timeout=120)


def rclone(wharfd, tmp_path):
    """rclone with the remote "w:" on wharfd, configured through the environment."""
    env = wharfd.client_env()
    env.pop("AWS_CA_BUNDLE", None)
    env.update(rclone_remote_env(wharfd.endpoint, tmp_path), HOME=str(tmp_path))
    return Rclone(env)


def test_sizes_and_forms(s3, raw, bucket):
    for n in (0, 1, PART, PART + 1, 3 * PART, 3 * PART + 12345):
        data = os.urandom(n)
        etag = raw_put(raw, bucket, f"k{n}", data)
        want = part_etag(data)
        assert etag.strip('"') == want, (n, etag, want)
        h = s3.head_object(Bucket=bucket, Key=f"k{n}")
        assert h["ETag"].strip('"') == want
        assert h["ContentLength"] == n
        got = s3.get_object(Bucket=bucket, Key=f"k{n}")["Body"].read()
        assert got == data
    # plain MD5 up to the part size, the part form above it
    assert "-" not in part_etag(os.urandom(PART))


def test_content_md5_keeps_the_plain_md5(s3, bucket):
    import base64
    data = os.urandom(3 * PART + 7)
    md5 = hashlib.md5(data)
    r = s3.put_object(Bucket=bucket, Key="cmd5", Body=data,
                      ContentMD5=base64.b64encode(md5.digest()).decode())
    assert r["ETag"].strip('"') == md5.hexdigest()
    # boto3 sends Content-MD5 on its own: its objects keep plain MD5 ETags
    r = s3.put_object(Bucket=bucket, Key="b3", Body=data)
    assert r["ETag"].strip('"') == md5.hexdigest()


def test_upload_part_keeps_the_plain_md5(s3, raw, bucket):
    up = s3.create_multipart_upload(Bucket=bucket, Key="mpu")["UploadId"]
    p1, p2 = os.urandom(2 * PART + 3), os.urandom(1000)
    etags = []
    for i, p in enumerate((p1, p2), 1):
        q = [("partNumber", str(i)), ("uploadId", up)]
        r = raw.request("PUT", f"/{bucket}/mpu", query=q, body=p, payload_hash=UNSIGNED)
        assert r.status == 200, r.body[:300]
        assert r.headers["etag"].strip('"') == hashlib.md5(p).hexdigest()
        etags.append(r.headers["etag"])
    s3.complete_multipart_upload(Bucket=bucket, Key="mpu", UploadId=up, MultipartUpload={
        "Parts": [{"PartNumber": i + 1, "ETag": e} for i, e in enumerate(etags)]})
    assert s3.get_object(Bucket=bucket, Key="mpu")["Body"].read() == p1 + p2


def test_if_match_and_copy_use_the_etag(s3, raw, bucket):
    data = os.urandom(2 * PART + 1)
    etag = raw_put(raw, bucket, "c", data)
    assert etag.strip('"').endswith("-3")
    g = s3.get_object(Bucket=bucket, Key="c", IfMatch=etag)
    assert g["Body"].read() == data
    s3.copy_object(Bucket=bucket, Key="c2", CopySource={"Bucket": bucket, "Key": "c"})
    assert s3.get_object(Bucket=bucket, Key="c2")["Body"].read() == data


def test_aws_cli(wharfd, raw, bucket, tmp_path):
    aws = aws_cli(wharfd, tmp_path)
    data = os.urandom(3 * PART + 99)
    raw_put(raw, bucket, "a", data)
    out = aws.json("s3api", "head-object", "--bucket", bucket, "--key", "a")
    assert out["ETag"].strip('"') == part_etag(data)
    dst = tmp_path / "dst.bin"
    aws.run("s3", "cp", f"s3://{bucket}/a", str(dst))
    assert dst.read_bytes() == data


def test_s3cmd(wharfd, raw, bucket, tmp_path):
    run = s3cmd(wharfd, tmp_path)
    src = tmp_path / "s.bin"
    data = os.urandom(3 * PART + 5)
    src.write_bytes(data)
    r = run("put", "--disable-multipart", str(src), f"s3://{bucket}/s")
    assert r.returncode == 0, r.stderr
    r = run("get", f"s3://{bucket}/s", str(tmp_path / "back.bin"))
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "back.bin").read_bytes() == data
    # an object with a part ETag downloads cleanly (s3cmd skips its MD5 check on "-N")
    raw_put(raw, bucket, "p", data)
    r = run("get", f"s3://{bucket}/p", str(tmp_path / "p.bin"))
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "p.bin").read_bytes() == data


def test_rclone_check(wharfd, raw, bucket, tmp_path):
    """Objects with part ETags (written without Content-MD5) pass `rclone check`, and a
    changed byte is still found by `rclone check --download`."""
    local = tmp_path / "tree"
    local.mkdir()
    files = {"one.bin": os.urandom(3 * PART + 3), "two.bin": os.urandom(PART + 1),
             "small.txt": b"small"}
    for name, data in files.items():
        (local / name).write_bytes(data)
        raw_put(raw, bucket, name, data)
    rc = rclone(wharfd, tmp_path)
    r = rc.run("check", str(local), f"w:{bucket}", check=False)
    assert r.returncode == 0, r.stdout.decode()[-1500:] + r.stderr.decode()[-1500:]
    # a differing byte is still found (sizes equal: the check must read or hash)
    bad = bytearray(files["two.bin"])
    bad[5] ^= 1
    (local / "two.bin").write_bytes(bytes(bad))
    r = rc.run("check", "--download", str(local), f"w:{bucket}", check=False)
    assert r.returncode != 0


def _rdma_client(wharfd, **kw):
    import wharf
    return wharf.Client(wharfd.endpoint, ACCESS_KEY, SECRET_KEY, region=REGION,
                        provider="ofi+shm", unix_socket=wharfd.unix_socket, **kw)


def _np(data):
    import numpy as np
    return np.frombuffer(data, dtype=np.uint8).copy()


DIGEST = re.compile(r"^[0-9a-f]{32}-[0-9]+$")


def test_libwharf_rdma_put_gets_a_digest_etag(wharfd, s3, bucket):
    """An RDMA PutObject of 4 MiB or more without Content-MD5 gets a digest ETag: 32 hex made
    from the CRCs the server computes anyway, with "-N" (N parts of --etag-part-size), and no
    MD5 pass. It is not the MD5 form, so no client compares it with an MD5 of the bytes; it
    changes with the bytes, and conditions and copies use it like any ETag."""
    c = _rdma_client(wharfd)
    try:
        data = os.urandom(3 * PART + 11)
        rep = c.put_from(bucket, "r", _np(data))
        assert rep.transport == "rdma", rep
        etag = rep.etag.strip('"')
        assert DIGEST.match(etag) and etag.endswith("-4"), etag
        assert etag != part_etag(data)
        assert s3.head_object(Bucket=bucket, Key="r")["ETag"].strip('"') == etag
        assert s3.get_object(Bucket=bucket, Key="r")["Body"].read() == data
        # one byte changed: another ETag; the same bytes again: the same ETag
        other = bytearray(data)
        other[12345] ^= 1
        assert c.put_from(bucket, "r2", _np(bytes(other))).etag.strip('"') != etag
        assert c.put_from(bucket, "r3", _np(data)).etag.strip('"') == etag
        # If-Match / If-None-Match and CopyObject treat it as the ETag it is
        assert s3.get_object(Bucket=bucket, Key="r", IfMatch=rep.etag)["Body"].read() == data
        with pytest.raises(Exception) as ei:
            s3.get_object(Bucket=bucket, Key="r", IfNoneMatch=rep.etag)
        assert "304" in str(ei.value) or "Not Modified" in str(ei.value)
        s3.copy_object(Bucket=bucket, Key="rc", CopySource={"Bucket": bucket, "Key": "r"})
        assert s3.get_object(Bucket=bucket, Key="rc")["Body"].read() == data
        # small RDMA PUTs keep the plain MD5
        small = os.urandom(1 << 20)
        assert c.put_from(bucket, "s", _np(small)).etag.strip('"') == \
            hashlib.md5(small).hexdigest()
    finally:
        c.close()


def test_libwharf_rdma_multipart_digest_parts(wharfd, s3, bucket):
    """An RDMA multipart upload: each part's ETag is a digest (32 hex, no suffix, as
    CompleteMultipartUpload wants), the object's the md5 of the parts' digests, "-N"."""
    c = _rdma_client(wharfd, multipart_threshold=5 << 20, part_size=5 << 20)
    try:
        data = os.urandom(3 * (5 << 20) + 7)
        rep = c.put_from(bucket, "m", _np(data))
        etag = rep.etag.strip('"')
        assert DIGEST.match(etag) and etag.endswith("-4"), etag
        assert etag != part_etag(data, 5 << 20)
        assert s3.get_object(Bucket=bucket, Key="m")["Body"].read() == data
        attrs = s3.get_object_attributes(Bucket=bucket, Key="m", ObjectAttributes=["ObjectParts"])
        assert attrs["ObjectParts"]["TotalPartsCount"] == 4
    finally:
        c.close()


def test_digest_etag_objects_pass_every_client(wharfd, bucket, tmp_path):
    """Objects written over RDMA with digest ETags: aws s3 cp and s3api, s3cmd get (which
    checks MD5s of plain ETags only) and rclone check (which cannot take an MD5 from "-N" and
    compares sizes, or with --download the bytes) all pass; a changed byte is still found."""
    c = _rdma_client(wharfd, multipart_threshold=5 << 20, part_size=5 << 20)
    files = {"one.bin": os.urandom(3 * PART + 3), "mp.bin": os.urandom(11 << 20),
             "small.txt": b"small"}
    try:
        for name, data in files.items():
            rep = c.put_from(bucket, f"d/{name}", _np(data))
            assert (DIGEST.match(rep.etag.strip('"')) is not None) == (len(data) >= 4 << 20)
    finally:
        c.close()
    aws = aws_cli(wharfd, tmp_path)
    out = aws.json("s3api", "head-object", "--bucket", bucket, "--key", "d/one.bin")
    assert DIGEST.match(out["ETag"].strip('"')), out
    for name, data in files.items():
        dst = tmp_path / f"aws-{name}"
        aws.run("s3", "cp", f"s3://{bucket}/d/{name}", str(dst))
        assert dst.read_bytes() == data
    run = s3cmd(wharfd, tmp_path)
    for name, data in files.items():
        dst = tmp_path / f"s3cmd-{name}"
        r = run("get", f"s3://{bucket}/d/{name}", str(dst))
        assert r.returncode == 0, r.stderr
        assert b"MD5" not in r.stderr, r.stderr  # no "MD5 signatures do not match" warning
        assert dst.read_bytes() == data
    local = tmp_path / "tree"
    local.mkdir()
    for name, data in files.items():
        (local / name).write_bytes(data)
    rc = rclone(wharfd, tmp_path)
    r = rc.run("check", str(local), f"w:{bucket}/d", check=False)
    assert r.returncode == 0, r.stdout.decode()[-1500:] + r.stderr.decode()[-1500:]
    r = rc.run("check", "--download", str(local), f"w:{bucket}/d", check=False)
    assert r.returncode == 0, r.stdout.decode()[-1500:] + r.stderr.decode()[-1500:]
    bad = bytearray(files["one.bin"])
    bad[77] ^= 1
    (local / "one.bin").write_bytes(bytes(bad))
    r = rc.run("check", "--download", str(local), f"w:{bucket}/d", check=False)
    assert r.returncode != 0


def test_rdma_etag_md5_option_keeps_md5_forms(bucket):
    """--rdma-etag md5: RDMA PUTs take the MD5 forms again (here the part form)."""
    srv = WharfServer(extra_args=["--etag-part-size", "8M", "--rdma-etag", "md5"])
    srv.start()
    try:
        c = _rdma_client(srv)
        b = unique_bucket("md5mode")
        c.create_bucket(b)
        data = os.urandom(3 * PART + 11)
        assert c.put_from(b, "r", _np(data)).etag.strip('"') == part_etag(data)
        c.close()
    finally:
        srv.stop()
        srv.cleanup()
    assert_start_refused(["--rdma-etag", "sha1"], "--rdma-etag wants digest or md5, got 'sha1'")
