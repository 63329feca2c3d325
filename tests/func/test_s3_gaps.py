# SPDX-License-Identifier: Apache-2.0
"""Smaller S3 behaviours where wharf differed from S3, each checked against a real wharfd with
boto3, Debian's aws/s3cmd/rclone where the difference shows through them, and raw signed
requests (tests/lib/s3raw.py) where no SDK sends what is needed.

- DeleteBucket with an incomplete multipart upload deletes the bucket and drops the upload
  (its parts' files released), as AWS and Ceph do; objects still make it BucketNotEmpty. On
  SQLite and on PostgreSQL metadata.
- An x-amz-meta-* header with an empty value is kept and comes back (empty) on GET/HEAD.
- Content-Encoding "gzip, aws-chunked" is kept as "gzip"; "aws-chunked" alone keeps none.
- User metadata in UTF-8 comes back as the same bytes (rclone reads what it wrote).
- Presigned URLs with X-Amz-Expires 0 or above 604800 are refused with 400
  AuthorizationQueryParametersError.
"""
import base64
import json
import os
import struct
import subprocess
import urllib.error
import urllib.request

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

import pgserver
from cluster import Cluster
from s3raw import S3Raw
from wharfd import (ACCESS_KEY, REGION, SECRET_KEY, WharfServer, crc32c, rclone_remote_env,
                    unique_bucket, wait_until)

MIB = 1024 * 1024


def _client(endpoint):
    return boto3.session.Session().client(
        "s3", endpoint_url=endpoint, aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY, region_name=REGION,
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                      signature_version="s3v4"))


@pytest.fixture(scope="module")
def srv():
    s = WharfServer()
    s.start()
    yield s
    rc = s.stop()
    s.cleanup()
    assert rc == 0


@pytest.fixture(scope="module")
def s3(srv):
    return _client(srv.endpoint)


@pytest.fixture(scope="module")
def raw(srv):
    return S3Raw(srv.endpoint)


@pytest.fixture()
def bucket(s3):
    b = unique_bucket("gaps")
    s3.create_bucket(Bucket=b)
    return b


def _object_files(data_dir):
    n = 0
    for _, _, files in os.walk(os.path.join(data_dir, "objects")):
        n += len(files)
    return n


# ---- DeleteBucket with incomplete multipart uploads ----------------------------------------

def _bucket_with_uploads(s3, b):
    """Two incomplete uploads in b, one with two 5 MiB parts; returns their ids."""
    u1 = s3.create_multipart_upload(Bucket=b, Key="big/one")["UploadId"]
    for n in (1, 2):
        s3.upload_part(Bucket=b, Key="big/one", UploadId=u1, PartNumber=n,
                       Body=os.urandom(5 * MIB))
    u2 = s3.create_multipart_upload(Bucket=b, Key="two")["UploadId"]
    s3.upload_part(Bucket=b, Key="two", UploadId=u2, PartNumber=1, Body=b"small part")
    return u1, u2


def _check_delete_bucket_drops_uploads(srv, s3, local_files=True):
    b = unique_bucket("rbmpu")
    s3.create_bucket(Bucket=b)
    before = _object_files(srv.data_dir)
    u1, u2 = _bucket_with_uploads(s3, b)
    if local_files:
        assert _object_files(srv.data_dir) == before + 3
    # An object keeps the bucket, and its uploads stay.
    s3.put_object(Bucket=b, Key="obj", Body=b"x")
    with pytest.raises(s3.exceptions.ClientError) as e:
        s3.delete_bucket(Bucket=b)
    assert e.value.response["Error"]["Code"] == "BucketNotEmpty"
    assert len(s3.list_multipart_uploads(Bucket=b).get("Uploads", [])) == 2
    s3.delete_object(Bucket=b, Key="obj")
    # Only uploads left: the bucket goes, and the uploads with it.
    s3.delete_bucket(Bucket=b)
    with pytest.raises(s3.exceptions.ClientError) as e:
        s3.head_bucket(Bucket=b)
    assert e.value.response["Error"]["Code"] == "404"
    if local_files:
        assert _object_files(srv.data_dir) == before, "the dropped parts' files remain"
    # A new bucket of that name has none of them.
    s3.create_bucket(Bucket=b)
    assert s3.list_multipart_uploads(Bucket=b).get("Uploads", []) == []
    for key, uid in (("big/one", u1), ("two", u2)):
        with pytest.raises(s3.exceptions.ClientError) as e:
            s3.upload_part(Bucket=b, Key=key, UploadId=uid, PartNumber=3, Body=b"late")
        assert e.value.response["Error"]["Code"] == "NoSuchUpload"
    s3.delete_bucket(Bucket=b)


def test_delete_bucket_drops_incomplete_uploads(srv, s3):
    _check_delete_bucket_drops_uploads(srv, s3)


def test_delete_bucket_drops_incomplete_uploads_postgresql():
    reason = pgserver.missing_reason()
    if reason:
        pytest.skip(reason)
    with pgserver.PgServer() as pg:
        with WharfServer(extra_args=["--meta", pg.create_db("rbmpu")]) as srv:
            _check_delete_bucket_drops_uploads(srv, _client(srv.endpoint))


def test_delete_bucket_drops_incomplete_uploads_cluster():
    """On a cluster gateway the dropped parts' chunks go to garbage collection and leave the
    storage servers' disks."""
    reason = pgserver.missing_reason()
    if reason:
        pytest.skip(reason)
    chunk = 256 * 1024
    with Cluster(storage=2, replicas=2, chunk_size=chunk, providers="none") as cl:
        s3 = _client(cl.gateway.endpoint)
        before = set().union(*cl.chunk_files().values())
        b = unique_bucket("rbcl")
        s3.create_bucket(Bucket=b)
        u = s3.create_multipart_upload(Bucket=b, Key="k")["UploadId"]
        s3.upload_part(Bucket=b, Key="k", UploadId=u, PartNumber=1, Body=os.urandom(3 * chunk))
        parts = set().union(*cl.chunk_files().values()) - before
        assert len(parts) == 3, parts
        s3.delete_bucket(Bucket=b)
        assert wait_until(lambda: not (set().union(*cl.chunk_files().values()) & parts),
                          timeout=30), "the dropped upload's chunks were not collected"
        # the counter moves once the whole GC batch is back, just after the files go
        assert wait_until(lambda: cl.gateway.metric_sum("wharf_cluster_gc_deleted_total") >= 3,
                          timeout=10), cl.gateway.metric_sum("wharf_cluster_gc_deleted_total")


def test_awscli_rb_with_incomplete_upload(srv, s3, tmp_path):
    """aws s3 rb on a bucket whose only content is an abandoned upload (what an interrupted
    aws s3 cp leaves)."""
    b = unique_bucket("rbcli")
    s3.create_bucket(Bucket=b)
    _bucket_with_uploads(s3, b)
    env = srv.client_env()
    env.pop("AWS_CA_BUNDLE", None)
    env.pop("AWS_PROFILE", None)
    env.update({"AWS_CONFIG_FILE": str(tmp_path / "none"),
                "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"), "HOME": str(tmp_path)})
    r = subprocess.run(["/usr/bin/aws", "--endpoint-url", srv.endpoint, "s3", "rb", f"s3://{b}"],
                       env=env, capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    assert b not in [x["Name"] for x in s3.list_buckets()["Buckets"]]


# ---- metadata ------------------------------------------------------------------------------

def test_empty_metadata_value_kept(s3, raw, bucket):
    s3.put_object(Bucket=bucket, Key="k", Body=b"x", Metadata={"empty": "", "full": "v"})
    assert s3.head_object(Bucket=bucket, Key="k")["Metadata"] == {"empty": "", "full": "v"}
    assert s3.get_object(Bucket=bucket, Key="k")["Metadata"] == {"empty": "", "full": "v"}
    r = raw.request("HEAD", f"/{bucket}/k")
    assert r.status == 200 and r.headers.get("x-amz-meta-empty") == ""
    # Kept through a multipart upload and a copy too.
    u = s3.create_multipart_upload(Bucket=bucket, Key="m", Metadata={"e": ""})["UploadId"]
    p = s3.upload_part(Bucket=bucket, Key="m", UploadId=u, PartNumber=1, Body=b"part")
    s3.complete_multipart_upload(Bucket=bucket, Key="m", UploadId=u, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": p["ETag"]}]})
    assert s3.head_object(Bucket=bucket, Key="m")["Metadata"] == {"e": ""}
    s3.copy_object(Bucket=bucket, Key="c", CopySource={"Bucket": bucket, "Key": "k"})
    assert s3.head_object(Bucket=bucket, Key="c")["Metadata"] == {"empty": "", "full": "v"}


@pytest.mark.parametrize("sent,kept", [
    ("gzip, aws-chunked", "gzip"),
    ("aws-chunked, gzip", "gzip"),
    ("gzip,aws-chunked,br", "gzip, br"),
    ("AWS-CHUNKED", None),
    ("aws-chunked", None),
])
def test_content_encoding_without_aws_chunked(raw, s3, bucket, sent, kept):
    data = b"compressed bytes, as far as the store knows" * 100
    h, body = raw.chunked_signed("PUT", f"/{bucket}/ce", data, chunk_size=1000,
                                 content_encoding=sent)
    r = raw.send_prepared("PUT", f"/{bucket}/ce", h, body)
    assert r.status == 200, r
    got = s3.head_object(Bucket=bucket, Key="ce")
    assert got.get("ContentEncoding") == kept
    assert got["ContentLength"] == len(data)
    g = raw.request("GET", f"/{bucket}/ce")
    assert g.body == data and g.headers.get("content-encoding") == kept


def test_utf8_metadata_round_trip(srv, raw, bucket, tmp_path):
    """UTF-8 metadata is kept and sent back byte for byte. The "Hello WorldÃ©" that s3cmd and
    boto3 print for "Hello Worldé" is their own reading: Python's http.client decodes reply
    header bytes as ISO-8859-1. A client that reads header bytes as sent (rclone) gets its
    value back."""
    value = "Hello Worldé ünïcødé €"
    src = tmp_path / "f"
    src.write_bytes(b"body")
    env = srv.client_env()
    env.pop("AWS_CA_BUNDLE", None)
    env.update(rclone_remote_env(srv.endpoint, tmp_path),
               HOME=str(tmp_path), XDG_CACHE_HOME=str(tmp_path / "cache"))
    rc = ["/usr/bin/rclone", "--retries", "1", "--low-level-retries", "1"]
    r = subprocess.run(rc + ["copyto", "-M", "--metadata-set", f"note={value}", str(src),
                             f"w:{bucket}/u"], env=env, capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    # On the wire: the UTF-8 bytes as rclone sent them.
    h = raw.request("HEAD", f"/{bucket}/u")
    assert h.headers["x-amz-meta-note"].encode("iso-8859-1") == value.encode()
    r = subprocess.run(rc + ["lsjson", "-M", f"w:{bucket}/u"], env=env, capture_output=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    assert json.loads(r.stdout)[0]["Metadata"]["note"] == value


# ---- presigned URL lifetime ----------------------------------------------------------------

@pytest.mark.parametrize("expires", [0, 604801, 10 ** 12])
def test_presigned_expires_out_of_range(srv, raw, bucket, s3, expires):
    s3.put_object(Bucket=bucket, Key="p", Body=b"presigned")
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(srv.endpoint + raw.presign("GET", f"/{bucket}/p", expires=expires),
                               timeout=10)
    assert e.value.code == 400
    body = e.value.read()
    assert b"<Code>AuthorizationQueryParametersError</Code>" in body
    assert b"X-Amz-Expires" in body
    ok = urllib.request.urlopen(srv.endpoint + raw.presign("GET", f"/{bucket}/p",
                                                           expires=604800), timeout=10)
    assert ok.status == 200 and ok.read() == b"presigned"


# ---- ListBuckets paging --------------------------------------------------------------------

def _xml(body):
    import xml.etree.ElementTree as ET
    root = ET.fromstring(body)
    for el in root.iter():
        el.tag = el.tag.split("}", 1)[-1]
    return root


def test_list_buckets_paging(srv, raw, s3):
    """max-buckets, continuation-token (ContinuationToken while more remain), prefix and
    bucket-region. Debian's botocore 1.29 has no MaxBuckets, so these are raw requests."""
    pfx = unique_bucket("lbp")[:20]
    names = sorted(f"{pfx}-{c}" for c in ("a", "b.c", "b-d", "c", "d0", "e"))
    for n in names:
        s3.create_bucket(Bucket=n)
    got, token, pages = [], None, 0
    while pages < 10:
        q = {"max-buckets": "2", "prefix": pfx}
        if token:
            q["continuation-token"] = token
        r = raw.request("GET", "/", query=q)
        assert r.status == 200, r
        x = _xml(r.body)
        page = [b.findtext("Name") for b in x.find("Buckets")]
        assert len(page) <= 2
        assert all(b.findtext("BucketRegion") == REGION for b in x.find("Buckets"))
        assert x.findtext("Prefix") == pfx
        got += page
        pages += 1
        token = x.findtext("ContinuationToken")
        if not token:
            break
    assert got == names and pages == 3
    # Without max-buckets, every bucket, no token; prefix still applies.
    x = _xml(raw.request("GET", "/", query={"prefix": pfx}).body)
    assert [b.findtext("Name") for b in x.find("Buckets")] == names
    assert x.find("ContinuationToken") is None
    # bucket-region: this endpoint's region lists them, any other none.
    x = _xml(raw.request("GET", "/", query={"prefix": pfx, "bucket-region": REGION}).body)
    assert len(x.find("Buckets")) == len(names)
    x = _xml(raw.request("GET", "/", query={"prefix": pfx, "bucket-region": "eu-west-3"}).body)
    assert len(x.find("Buckets")) == 0
    for bad in ("0", "10001", "x"):
        r = raw.request("GET", "/", query={"max-buckets": bad})
        assert r.status == 400 and r.error_code() == "InvalidArgument", r
    r = raw.request("GET", "/", query={"continuation-token": "%%%"})
    assert r.status == 400 and r.error_code() == "InvalidArgument"
    # boto3's plain ListBuckets still sees them all.
    assert set(names) <= {b["Name"] for b in s3.list_buckets()["Buckets"]}
    for n in names:
        s3.delete_bucket(Bucket=n)


# ---- ListMultipartUploads paging -----------------------------------------------------------

def test_list_multipart_uploads_paging(s3, raw, bucket):
    keys = ["a/1", "a/2", "b", "b", "b", "c/x/y", "d"]
    ids = {}
    for k in keys:
        ids.setdefault(k, []).append(
            s3.create_multipart_upload(Bucket=bucket, Key=k)["UploadId"])
    want = [(k, u) for k in sorted(ids) for u in ids[k]]
    # Every page size walks every upload once, in order, through the markers boto3 follows.
    for size in (1, 2, 3, 7, 1000):
        seen = []
        pager = s3.get_paginator("list_multipart_uploads")
        for page in pager.paginate(Bucket=bucket, PaginationConfig={"PageSize": size}):
            assert len(page.get("Uploads", [])) <= size
            seen += [(u["Key"], u["UploadId"]) for u in page.get("Uploads", [])]
        assert sorted(seen) == sorted(want) and len(seen) == len(want), size
    # One page by hand: truncated, with both next markers, starting inside key "b".
    r = s3.list_multipart_uploads(Bucket=bucket, MaxUploads=3)
    assert r["IsTruncated"] is True and r["MaxUploads"] == 3
    assert r["NextKeyMarker"] == "b"
    first_b = [u for u in r["Uploads"] if u["Key"] == "b"]
    assert len(first_b) == 1 and r["NextUploadIdMarker"] == first_b[0]["UploadId"]
    r2 = s3.list_multipart_uploads(Bucket=bucket, MaxUploads=3, KeyMarker="b",
                                   UploadIdMarker=r["NextUploadIdMarker"])
    assert [u["Key"] for u in r2["Uploads"]] == ["b", "b", "c/x/y"]
    assert first_b[0]["UploadId"] not in [u["UploadId"] for u in r2["Uploads"]]
    # key-marker alone: keys after it.
    r = s3.list_multipart_uploads(Bucket=bucket, KeyMarker="b")
    assert [u["Key"] for u in r["Uploads"]] == ["c/x/y", "d"] and r["IsTruncated"] is False
    # Prefix and delimiter: CommonPrefixes, each counted once against max-uploads.
    r = s3.list_multipart_uploads(Bucket=bucket, Delimiter="/")
    assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["a/", "c/"]
    assert [u["Key"] for u in r["Uploads"]] == ["b", "b", "b", "d"]
    r = s3.list_multipart_uploads(Bucket=bucket, Delimiter="/", MaxUploads=1)
    assert r["IsTruncated"] is True and r["NextKeyMarker"] == "a/"
    assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["a/"] and "Uploads" not in r
    r = s3.list_multipart_uploads(Bucket=bucket, Delimiter="/", MaxUploads=1, KeyMarker="a/")
    assert [u["Key"] for u in r["Uploads"]] == ["b"]
    r = s3.list_multipart_uploads(Bucket=bucket, Prefix="c/", Delimiter="/")
    assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["c/x/"] and r["Prefix"] == "c/"
    r = s3.list_multipart_uploads(Bucket=bucket, Prefix="a/")
    assert [u["Key"] for u in r["Uploads"]] == ["a/1", "a/2"]
    # encoding-type=url: keys URL-encoded.
    s3.create_multipart_upload(Bucket=bucket, Key="sp ace")
    x = _xml(raw.request("GET", f"/{bucket}", query={"uploads": None, "prefix": "sp",
                                                       "encoding-type": "url"}).body)
    assert x.find("Upload").findtext("Key") == "sp%20ace"
    r = raw.request("GET", f"/{bucket}", query={"uploads": None, "max-uploads": "x"})
    assert r.status == 400 and r.error_code() == "InvalidArgument"


def test_awscli_list_multipart_uploads_pages(srv, s3, bucket, tmp_path):
    for i in range(5):
        s3.create_multipart_upload(Bucket=bucket, Key=f"k{i}")
    env = srv.client_env()
    env.pop("AWS_PROFILE", None)
    env.update({"AWS_CONFIG_FILE": str(tmp_path / "none"),
                "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"), "HOME": str(tmp_path)})
    r = subprocess.run(["/usr/bin/aws", "--endpoint-url", srv.endpoint, "s3api",
                        "list-multipart-uploads", "--bucket", bucket, "--page-size", "2",
                        "--output", "json"], env=env, capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    keys = [u["Key"] for u in json.loads(r.stdout)["Uploads"]]
    assert keys == [f"k{i}" for i in range(5)]


# ---- multipart checksums: COMPOSITE and FULL_OBJECT ----------------------------------------

def _b64_u32(v):
    return base64.b64encode(struct.pack(">I", v)).decode()


@pytest.fixture(scope="module")
def mpu_data():
    first = os.urandom(5 * MIB)
    tail = os.urandom(1000)
    c1, c2 = crc32c(first), crc32c(tail)
    return {"parts": [first, tail], "crc": [c1, c2],
            "composite": _b64_u32(crc32c(struct.pack(">II", c1, c2))) + "-2",
            "full": _b64_u32(crc32c(tail, crc32c(first)))}


def _mpu_start(raw, bucket, key, headers):
    r = raw.request("POST", f"/{bucket}/{key}", query={"uploads": None}, headers=headers)
    return r, (_xml(r.body).findtext("UploadId") if r.status == 200 else None)


def _mpu_parts(raw, bucket, key, uid, d, send_sums=True):
    etags = []
    for i, (p, c) in enumerate(zip(d["parts"], d["crc"]), 1):
        h = {"x-amz-checksum-crc32c": _b64_u32(c)} if send_sums else {}
        r = raw.request("PUT", f"/{bucket}/{key}", query={"partNumber": str(i), "uploadId": uid},
                        headers=h, body=p)
        assert r.status == 200, r
        if send_sums:
            assert r.headers["x-amz-checksum-crc32c"] == _b64_u32(c)
        etags.append(r.headers["etag"])
    return etags


def _complete_body(etags, crcs=None):
    parts = "".join(
        f"<Part><PartNumber>{i}</PartNumber><ETag>{e}</ETag>"
        + (f"<ChecksumCRC32C>{crcs[i - 1]}</ChecksumCRC32C>" if crcs else "") + "</Part>"
        for i, e in enumerate(etags, 1))
    return f"<CompleteMultipartUpload>{parts}</CompleteMultipartUpload>".encode()


def test_mpu_crc32c_composite(raw, s3, bucket, mpu_data):
    d = mpu_data
    r, uid = _mpu_start(raw, bucket, "comp", {"x-amz-checksum-algorithm": "CRC32C"})
    assert r.status == 200, r
    assert r.headers["x-amz-checksum-algorithm"] == "CRC32C"
    assert r.headers["x-amz-checksum-type"] == "COMPOSITE"  # S3's default for CRC32C
    etags = _mpu_parts(raw, bucket, "comp", uid, d)
    # ListParts carries each part's CRC-32C.
    lp = s3.list_parts(Bucket=bucket, Key="comp", UploadId=uid)
    assert [p["ChecksumCRC32C"] for p in lp["Parts"]] == [_b64_u32(c) for c in d["crc"]]
    r = raw.request("POST", f"/{bucket}/comp", query={"uploadId": uid},
                    body=_complete_body(etags, [_b64_u32(c) for c in d["crc"]]))
    assert r.status == 200, r
    x = _xml(r.body)
    assert x.findtext("ChecksumCRC32C") == d["composite"]
    assert x.findtext("ChecksumType") == "COMPOSITE"
    # HEAD and GET with checksum mode, through boto3: the composite value and its type.
    h = s3.head_object(Bucket=bucket, Key="comp", ChecksumMode="ENABLED")
    assert h["ChecksumCRC32C"] == d["composite"]
    assert h["ResponseMetadata"]["HTTPHeaders"]["x-amz-checksum-type"] == "COMPOSITE"
    g = s3.get_object(Bucket=bucket, Key="comp", ChecksumMode="ENABLED")
    assert g["ChecksumCRC32C"] == d["composite"]
    assert g["Body"].read() == b"".join(d["parts"])
    assert "x-amz-checksum-algorithm" not in g["ResponseMetadata"]["HTTPHeaders"]
    assert g["Metadata"] == {}


def test_mpu_crc32c_full_object_boto3(s3, bucket, mpu_data):
    """boto3 1.29 sends the part checksums it is given and reads ChecksumCRC32C back; the
    type header has no parameter there, so it rides on the request's headers."""
    d = mpu_data

    def add_type(params, **kw):
        params["headers"]["x-amz-checksum-type"] = "FULL_OBJECT"
    s3.meta.events.register("before-call.s3.CreateMultipartUpload", add_type)
    try:
        uid = s3.create_multipart_upload(Bucket=bucket, Key="full",
                                         ChecksumAlgorithm="CRC32C")["UploadId"]
    finally:
        s3.meta.events.unregister("before-call.s3.CreateMultipartUpload", add_type)
    parts = []
    for i, (p, c) in enumerate(zip(d["parts"], d["crc"]), 1):
        r = s3.upload_part(Bucket=bucket, Key="full", UploadId=uid, PartNumber=i, Body=p,
                           ChecksumCRC32C=_b64_u32(c))
        parts.append({"PartNumber": i, "ETag": r["ETag"], "ChecksumCRC32C": _b64_u32(c)})
    r = s3.complete_multipart_upload(Bucket=bucket, Key="full", UploadId=uid,
                                     MultipartUpload={"Parts": parts})
    assert r["ChecksumCRC32C"] == d["full"]
    h = s3.head_object(Bucket=bucket, Key="full", ChecksumMode="ENABLED")
    assert h["ChecksumCRC32C"] == d["full"]
    assert h["ResponseMetadata"]["HTTPHeaders"]["x-amz-checksum-type"] == "FULL_OBJECT"
    # The same bytes in one PUT have the same CRC-32C and CRC-64/NVME.
    one = s3.put_object(Bucket=bucket, Key="one", Body=b"".join(d["parts"]),
                        ChecksumCRC32C=d["full"])
    assert one["ChecksumCRC32C"] == d["full"]
    assert (h["ResponseMetadata"]["HTTPHeaders"]["x-amz-checksum-crc64nvme"] ==
            one["ResponseMetadata"]["HTTPHeaders"]["x-amz-checksum-crc64nvme"])


def test_mpu_crc64nvme_full_object_and_expected_values(raw, s3, bucket, mpu_data):
    d = mpu_data
    whole = b"".join(d["parts"])
    s3.put_object(Bucket=bucket, Key="ref", Body=whole)
    c64 = s3.head_object(Bucket=bucket, Key="ref", ChecksumMode="ENABLED")[
        "ResponseMetadata"]["HTTPHeaders"]["x-amz-checksum-crc64nvme"]
    r, uid = _mpu_start(raw, bucket, "c64", {"x-amz-checksum-algorithm": "crc64nvme"})
    assert r.status == 200 and r.headers["x-amz-checksum-type"] == "FULL_OBJECT", r
    etags = _mpu_parts(raw, bucket, "c64", uid, d, send_sums=False)
    # A wrong expected whole-object value is BadDigest, and nothing is committed.
    bad = base64.b64encode(b"\0" * 8).decode()
    r = raw.request("POST", f"/{bucket}/c64", query={"uploadId": uid},
                    headers={"x-amz-checksum-crc64nvme": bad}, body=_complete_body(etags))
    assert r.status == 400 and r.error_code() == "BadDigest", r
    assert c64.encode() in r.body
    assert raw.request("HEAD", f"/{bucket}/c64").status == 404
    r = raw.request("POST", f"/{bucket}/c64", query={"uploadId": uid},
                    headers={"x-amz-checksum-crc64nvme": c64}, body=_complete_body(etags))
    assert r.status == 200, r
    x = _xml(r.body)
    assert x.findtext("ChecksumCRC64NVME") == c64 and x.findtext("ChecksumType") == "FULL_OBJECT"
    assert x.find("ChecksumCRC32C") is None
    # A listed part checksum that is not the part's: InvalidPart.
    r, uid = _mpu_start(raw, bucket, "badpart", {"x-amz-checksum-algorithm": "CRC32C"})
    etags = _mpu_parts(raw, bucket, "badpart", uid, d)
    wrong = [_b64_u32(d["crc"][0]), _b64_u32(d["crc"][1] ^ 1)]
    r = raw.request("POST", f"/{bucket}/badpart", query={"uploadId": uid},
                    body=_complete_body(etags, wrong))
    assert r.status == 400 and r.error_code() == "InvalidPart", r
    # An expected composite that differs: BadDigest; the right one (suffix or not) completes.
    r = raw.request("POST", f"/{bucket}/badpart", query={"uploadId": uid},
                    headers={"x-amz-checksum-crc32c": _b64_u32(1) + "-2"},
                    body=_complete_body(etags))
    assert r.status == 400 and r.error_code() == "BadDigest", r
    r = raw.request("POST", f"/{bucket}/badpart", query={"uploadId": uid},
                    headers={"x-amz-checksum-crc32c": d["composite"]}, body=_complete_body(etags))
    assert r.status == 200, r


@pytest.mark.parametrize("headers,why", [
    ({"x-amz-checksum-type": "COMPOSITE"}, "only valid together"),
    ({"x-amz-checksum-algorithm": "MD5"}, "must be one of"),
    ({"x-amz-checksum-algorithm": "CRC32C", "x-amz-checksum-type": "PARTIAL"}, "COMPOSITE or"),
    ({"x-amz-checksum-algorithm": "CRC64NVME", "x-amz-checksum-type": "COMPOSITE"},
     "cannot be used"),
    ({"x-amz-checksum-algorithm": "SHA256", "x-amz-checksum-type": "FULL_OBJECT"},
     "cannot be used"),
])
def test_mpu_checksum_request_refused(raw, bucket, headers, why):
    r, _ = _mpu_start(raw, bucket, "refused", headers)
    assert r.status == 400 and r.error_code() == "InvalidRequest", r
    assert why.encode() in r.body


def test_mpu_without_checksum_request_unchanged(s3, bucket):
    """No algorithm: no CRC-32C on the object (S3's multipart default), its CRC-64/NVME as
    before, and the type says FULL_OBJECT."""
    uid = s3.create_multipart_upload(Bucket=bucket, Key="plain")["UploadId"]
    p = s3.upload_part(Bucket=bucket, Key="plain", UploadId=uid, PartNumber=1, Body=b"abc")
    r = s3.complete_multipart_upload(Bucket=bucket, Key="plain", UploadId=uid, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": p["ETag"]}]})
    assert "ChecksumCRC32C" not in r
    h = s3.head_object(Bucket=bucket, Key="plain", ChecksumMode="ENABLED")
    assert "ChecksumCRC32C" not in h
    assert h["ResponseMetadata"]["HTTPHeaders"]["x-amz-checksum-type"] == "FULL_OBJECT"


# ---- docs/features.md's S3 API table -------------------------------------------------------------

def test_features_doc_lists_every_served_operation():
    """Every API of the dispatch table (front_ops in src/server/s3api/app.c) that has a handler has
    its row in docs/features.md's S3 API table, with RDMA marked where the row takes a token."""
    import re
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    src = open(os.path.join(root, "src/server/s3api/app.c")).read()
    table = src[src.index("const front_op_t front_ops[]"):]
    table = table[:table.index("\n};")]
    names = dict(re.findall(r'X\((FRONT_API_\w+), "(\w+)"\)',
                            open(os.path.join(root, "src/server/front/route.h")).read()))
    served = {}
    rows = re.findall(r"\{\.level = [^{}]*\}", table)
    assert len(rows) > 50, f"found {len(rows)} rows in front_ops"
    for row in rows:
        fields = dict(re.findall(r"\.(\w+) = ([^,}]+)", row))
        api = fields["api"].strip()
        if "begin" not in fields:  # no begin step: the router answers it
            continue
        served.setdefault(names[api], False)
        served[names[api]] |= fields.get("rdma", "false").strip() == "true"
    readme = open(os.path.join(root, "docs", "features.md")).read()
    rows = {m.group(1): m.group(2) for m in
            re.finditer(r"^\| (\w+) \| [^|]+ \| yes \| ([^|]+) \|", readme, re.M)}
    missing = sorted(set(served) - set(rows))
    assert not missing, f"docs/features.md's S3 API table has no row for {missing}"
    for name, rdma in served.items():
        assert (rows[name].strip() != "no") == rdma, \
            f"{name}: docs/features.md says RDMA {rows[name]!r}"


# ---- answers that already matched S3 (pinned) ----------------------------------------------

def test_create_bucket_us_east_1_constraint(srv, s3, raw, tmp_path):
    """On a us-east-1 endpoint, LocationConstraint us-east-1 (boto3, aws s3api, rclone with
    location_constraint) is accepted like none; another region is refused by name."""
    b1, b2, b3 = (unique_bucket(p) for p in ("cbue", "cbcli", "cbrc"))
    s3.create_bucket(Bucket=b1, CreateBucketConfiguration={"LocationConstraint": "us-east-1"})
    env = srv.client_env()
    env.pop("AWS_PROFILE", None)
    env.update({"AWS_CONFIG_FILE": str(tmp_path / "none"),
                "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"), "HOME": str(tmp_path)})
    r = subprocess.run(["/usr/bin/aws", "--endpoint-url", srv.endpoint, "s3api", "create-bucket",
                        "--bucket", b2, "--create-bucket-configuration",
                        "LocationConstraint=us-east-1"], env=env, capture_output=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    env.update(rclone_remote_env(srv.endpoint, tmp_path, location_constraint="us-east-1"))
    r = subprocess.run(["/usr/bin/rclone", "--retries", "1", "mkdir", f"w:{b3}"], env=env,
                       capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    names = {b["Name"] for b in s3.list_buckets()["Buckets"]}
    assert {b1, b2, b3} <= names
    with pytest.raises(s3.exceptions.ClientError) as e:
        s3.create_bucket(Bucket=unique_bucket("cbeu"),
                         CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    assert e.value.response["Error"]["Code"] == "IllegalLocationConstraintException"


def test_list_objects_v2_empty_continuation_token(raw, s3, bucket):
    """An empty continuation-token lists from the start and comes back empty (the s3-tests
    suite's test_bucket_listv2_continuationtoken_empty); a malformed one is InvalidArgument."""
    for k in ("bar", "baz", "foo", "quxx"):
        s3.put_object(Bucket=bucket, Key=k, Body=b"x")
    resp = s3.list_objects_v2(Bucket=bucket, ContinuationToken="")
    assert resp["ContinuationToken"] == "" and resp["IsTruncated"] is False, resp
    assert [o["Key"] for o in resp["Contents"]] == ["bar", "baz", "foo", "quxx"]
    r = raw.request("GET", f"/{bucket}", query={"list-type": "2", "continuation-token": "%%%"})
    assert r.status == 400 and r.error_code() == "InvalidArgument", r




# ---- the cap on incomplete multipart uploads -------------------------------------------------

def test_incomplete_uploads_are_capped_per_bucket():
    srv = WharfServer(extra_args=["--max-uploads", "5"])
    srv.start()
    try:
        s3 = _client(srv.endpoint)
        b, other = unique_bucket("cap"), unique_bucket("cap2")
        s3.create_bucket(Bucket=b)
        s3.create_bucket(Bucket=other)
        ids = [s3.create_multipart_upload(Bucket=b, Key=f"k{i}")["UploadId"] for i in range(5)]
        with pytest.raises(ClientError) as ei:
            s3.create_multipart_upload(Bucket=b, Key="one-too-many")
        assert ei.value.response["Error"]["Code"] == "TooManyUploads"
        assert "--max-uploads 5" in ei.value.response["Error"]["Message"]
        assert len(s3.list_multipart_uploads(Bucket=b)["Uploads"]) == 5
        s3.create_multipart_upload(Bucket=other, Key="k")  # per bucket
        s3.abort_multipart_upload(Bucket=b, Key="k0", UploadId=ids[0])
        s3.create_multipart_upload(Bucket=b, Key="fits-again")
    finally:
        assert srv.stop() == 0
        srv.cleanup()


# ---- smaller answers as S3 gives them ----------------------------------------------------------

@pytest.mark.parametrize("algo", ["CRC32C", "SHA256", "CRC32"])
def test_create_multipart_upload_echoes_its_checksum_algorithm(s3, bucket, algo):
    r = s3.create_multipart_upload(Bucket=bucket, Key="mp", ChecksumAlgorithm=algo)
    assert r.get("ChecksumAlgorithm") == algo, r
    s3.abort_multipart_upload(Bucket=bucket, Key="mp", UploadId=r["UploadId"])


def test_policy_status_without_policy_and_any_bucket_resource(srv, s3, bucket):
    assert s3.get_bucket_policy_status(Bucket=bucket)["PolicyStatus"]["IsPublic"] is False
    s3.put_object(Bucket=bucket, Key="k", Body=b"v")
    s3.put_bucket_policy(Bucket=bucket, Policy=json.dumps({
        "Version": "2012-10-17", "Statement": [{
            "Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
            "Resource": "arn:aws:s3:::*/*"}]}))
    assert s3.get_bucket_policy_status(Bucket=bucket)["PolicyStatus"]["IsPublic"] is True
    with urllib.request.urlopen(f"{srv.endpoint}/{bucket}/k", timeout=10) as r:
        assert r.read() == b"v"
    s3.delete_bucket_policy(Bucket=bucket)


def test_recreating_own_bucket_outside_us_east_1_is_already_owned():
    srv = WharfServer(extra_args=["--region", "eu-central-1"])
    srv.start()
    try:
        s3 = boto3.session.Session().client(
            "s3", endpoint_url=srv.endpoint, aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY, region_name="eu-central-1",
            config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
        b = unique_bucket("own")
        cfg = {"LocationConstraint": "eu-central-1"}
        s3.create_bucket(Bucket=b, CreateBucketConfiguration=cfg)
        with pytest.raises(ClientError) as ei:
            s3.create_bucket(Bucket=b, CreateBucketConfiguration=cfg)
        assert ei.value.response["Error"]["Code"] == "BucketAlreadyOwnedByYou"
    finally:
        assert srv.stop() == 0
        srv.cleanup()


def test_retried_complete_after_success_is_200_again(s3, bucket):
    up = s3.create_multipart_upload(Bucket=bucket, Key="mp")["UploadId"]
    e1 = s3.upload_part(Bucket=bucket, Key="mp", UploadId=up, PartNumber=1,
                        Body=b"a" * (5 * MIB))["ETag"]
    e2 = s3.upload_part(Bucket=bucket, Key="mp", UploadId=up, PartNumber=2, Body=b"b")["ETag"]
    parts = {"Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}]}
    first = s3.complete_multipart_upload(Bucket=bucket, Key="mp", UploadId=up,
                                         MultipartUpload=parts)
    again = s3.complete_multipart_upload(Bucket=bucket, Key="mp", UploadId=up,
                                         MultipartUpload=parts)
    assert again["ETag"] == first["ETag"] and again["Key"] == "mp"
    # Another part list for the gone upload is still NoSuchUpload; so is any after a change.
    with pytest.raises(ClientError) as ei:
        s3.complete_multipart_upload(Bucket=bucket, Key="mp", UploadId=up,
                                     MultipartUpload={"Parts": [parts["Parts"][0]]})
    assert ei.value.response["Error"]["Code"] == "NoSuchUpload"
    s3.put_object(Bucket=bucket, Key="mp", Body=b"replaced")
    with pytest.raises(ClientError) as ei:
        s3.complete_multipart_upload(Bucket=bucket, Key="mp", UploadId=up,
                                     MultipartUpload=parts)
    assert ei.value.response["Error"]["Code"] == "NoSuchUpload"
