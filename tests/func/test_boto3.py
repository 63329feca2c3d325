# SPDX-License-Identifier: Apache-2.0
"""boto3 (Debian's, /usr/bin/python3) against a real wharfd: every S3 API wharfd serves, in
path-style and virtual-host style, presigned URLs, checksums, and the error cases.

Requests boto3 cannot express (crc64nvme headers, bad bodies, skewed clocks) go through
tests/lib/s3raw.py.
"""
import base64
import datetime
import hashlib
import http.client
import os
import socket
import struct
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import boto3
import botocore
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from s3raw import S3Raw, UNSIGNED, amz_now
from wharfd import (ACCESS_KEY, REGION, SECRET_KEY, WharfServer, crc32c_b64, md5_hex,
                    multipart_etag, unique_bucket, wait_until)

MIB = 1024 * 1024


def client(endpoint, style="path", access_key=ACCESS_KEY, secret_key=SECRET_KEY, **cfg):
    return boto3.session.Session().client(
        "s3", endpoint_url=endpoint, aws_access_key_id=access_key,
        aws_secret_access_key=secret_key, region_name=REGION,
        config=Config(s3={"addressing_style": style}, retries={"max_attempts": 1},
                      signature_version="s3v4",  # boto3 1.26 presigns with SigV2 otherwise
                      connect_timeout=10, read_timeout=60, **cfg))


def err(excinfo):
    return excinfo.value.response["Error"]["Code"]


def status(excinfo):
    return excinfo.value.response["ResponseMetadata"]["HTTPStatusCode"]


@pytest.fixture(scope="module")
def s3(wharfd):
    return client(wharfd.endpoint)


@pytest.fixture()
def bucket(s3):
    b = unique_bucket("boto")
    s3.create_bucket(Bucket=b)
    return b


def crc64nvme(data):
    """CRC-64/NVME in pure Python (reflected poly 0x9a6c9329ac4bc9b5), independent of ISA-L."""
    poly = 0x9A6C9329AC4BC9B5
    crc = 0xFFFFFFFFFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ poly if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFFFFFFFFFF


def crc64nvme_b64(data):
    return base64.b64encode(struct.pack(">Q", crc64nvme(data))).decode()


# ---- buckets ------------------------------------------------------------------------------

def test_bucket_lifecycle(s3):
    b = unique_bucket("life")
    s3.create_bucket(Bucket=b)
    assert b in [x["Name"] for x in s3.list_buckets()["Buckets"]]
    h = s3.head_bucket(Bucket=b)
    assert h["ResponseMetadata"]["HTTPHeaders"]["x-amz-bucket-region"] == REGION
    assert s3.get_bucket_location(Bucket=b).get("LocationConstraint") in (None, "")
    assert "Status" not in s3.get_bucket_versioning(Bucket=b)
    # us-east-1: re-creating one's own bucket is 200 (S3's legacy answer there) and resets
    # its ACL to the request's.
    s3.put_bucket_acl(Bucket=b, ACL="public-read")
    assert len(s3.get_bucket_acl(Bucket=b)["Grants"]) == 2
    s3.create_bucket(Bucket=b)
    assert len(s3.get_bucket_acl(Bucket=b)["Grants"]) == 1
    s3.delete_bucket(Bucket=b)
    with pytest.raises(ClientError) as e:
        s3.head_bucket(Bucket=b)
    assert status(e) == 404
    assert b not in [x["Name"] for x in s3.list_buckets()["Buckets"]]


@pytest.mark.parametrize("name", ["ab", "Bad_Name", "a" * 64, "-lead", "trail-", "1.2.3.4",
                                  "two..dots"])
def test_invalid_bucket_name(s3, name):
    with pytest.raises(ClientError) as e:
        s3.create_bucket(Bucket=name)
    assert err(e) == "InvalidBucketName"


def test_no_such_bucket(s3):
    b = unique_bucket("missing")
    for call in (lambda: s3.list_objects_v2(Bucket=b),
                 lambda: s3.get_object(Bucket=b, Key="k"),
                 lambda: s3.put_object(Bucket=b, Key="k", Body=b"x"),
                 lambda: s3.delete_bucket(Bucket=b),
                 lambda: s3.get_bucket_location(Bucket=b)):
        with pytest.raises(ClientError) as e:
            call()
        assert err(e) == "NoSuchBucket"


def test_bucket_not_empty(s3, bucket):
    s3.put_object(Bucket=bucket, Key="x", Body=b"1")
    with pytest.raises(ClientError) as e:
        s3.delete_bucket(Bucket=bucket)
    assert err(e) == "BucketNotEmpty"
    s3.delete_object(Bucket=bucket, Key="x")
    s3.delete_bucket(Bucket=bucket)


# ---- objects ------------------------------------------------------------------------------

def test_put_get_head_metadata(s3, bucket):
    data = os.urandom(100_000)
    r = s3.put_object(Bucket=bucket, Key="meta.bin", Body=data, ContentType="application/x-test",
                      Metadata={"owner": "wharf", "Mixed-Case": "v a l"},
                      ContentDisposition="attachment; filename=a.bin", CacheControl="no-cache")
    assert r["ETag"] == f'"{md5_hex(data)}"'
    g = s3.get_object(Bucket=bucket, Key="meta.bin")
    assert g["Body"].read() == data
    assert g["ContentType"] == "application/x-test"
    assert g["Metadata"] == {"owner": "wharf", "mixed-case": "v a l"}
    assert g["ContentDisposition"] == "attachment; filename=a.bin"
    assert g["CacheControl"] == "no-cache"
    assert g["ContentLength"] == len(data)
    assert g["ETag"] == r["ETag"]
    h = s3.head_object(Bucket=bucket, Key="meta.bin")
    assert h["ContentLength"] == len(data)
    assert h["Metadata"] == g["Metadata"]
    assert h["ETag"] == r["ETag"]
    assert abs((h["LastModified"] - datetime.datetime.now(datetime.timezone.utc))
               .total_seconds()) < 120


def test_response_overrides(s3, bucket):
    s3.put_object(Bucket=bucket, Key="o", Body=b"abc")
    g = s3.get_object(Bucket=bucket, Key="o", ResponseContentType="text/x-over",
                      ResponseContentDisposition="inline")
    assert g["ContentType"] == "text/x-over"
    assert g["ContentDisposition"] == "inline"


def test_empty_object(s3, bucket):
    s3.put_object(Bucket=bucket, Key="empty", Body=b"")
    g = s3.get_object(Bucket=bucket, Key="empty")
    assert g["Body"].read() == b""
    assert g["ETag"] == '"d41d8cd98f00b204e9800998ecf8427e"'


SPECIAL_KEYS = ["a b c", "plus+sign", "dot/../dot", "./x", "unicode/ünï/日本語", "pct%20lit",
                "q?mark", "hash#tag", "amp&eq=", "double//slash", "trailing/", "~tilde",
                "k" * 1024, "semi;colon", "quote\"'", "<xml>&amp;"]


@pytest.mark.parametrize("style", ["path", "virtual"])
def test_special_keys_roundtrip_and_list(wharfd, style, vhost_dns):
    c = client(wharfd.endpoint.replace("127.0.0.1", "localhost"), style)
    b = unique_bucket("keys")
    c.create_bucket(Bucket=b)
    for i, k in enumerate(SPECIAL_KEYS):
        c.put_object(Bucket=b, Key=k, Body=str(i).encode())
    for i, k in enumerate(SPECIAL_KEYS):
        assert c.get_object(Bucket=b, Key=k)["Body"].read() == str(i).encode(), k
    listed = [o["Key"] for p in c.get_paginator("list_objects_v2").paginate(Bucket=b)
              for o in p.get("Contents", [])]
    assert sorted(listed) == sorted(SPECIAL_KEYS)
    listed1 = [o["Key"] for p in c.get_paginator("list_objects").paginate(Bucket=b)
               for o in p.get("Contents", [])]
    assert sorted(listed1) == sorted(SPECIAL_KEYS)


def test_key_too_long(s3, bucket):
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="k" * 1025, Body=b"x")
    assert err(e) == "KeyTooLongError"


def test_no_such_key(s3, bucket):
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="nope")
    assert err(e) == "NoSuchKey"
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="nope")
    assert status(e) == 404


def test_ranges(s3, bucket):
    data = os.urandom(10_000)
    s3.put_object(Bucket=bucket, Key="r", Body=data)
    cases = {"bytes=0-0": (0, 1), "bytes=100-199": (100, 100), "bytes=9990-": (9990, 10),
             "bytes=-7": (9993, 7), "bytes=9000-20000": (9000, 1000), "bytes=-20000": (0, 10000)}
    for rng, (off, n) in cases.items():
        g = s3.get_object(Bucket=bucket, Key="r", Range=rng)
        assert g["ResponseMetadata"]["HTTPStatusCode"] == 206, rng
        assert g["Body"].read() == data[off:off + n], rng
        assert g["ContentRange"] == f"bytes {off}-{off + n - 1}/{len(data)}", rng
    # Syntactically invalid ranges are ignored, as S3 does: the whole object, 200.
    g = s3.get_object(Bucket=bucket, Key="r", Range="bytes=abc")
    assert g["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert g["Body"].read() == data
    for rng in ("bytes=10000-", "bytes=20000-30000"):
        with pytest.raises(ClientError) as e:
            s3.get_object(Bucket=bucket, Key="r", Range=rng)
        assert status(e) == 416 and err(e) == "InvalidRange", rng


def test_conditionals(s3, bucket):
    r = s3.put_object(Bucket=bucket, Key="c", Body=b"conditional")
    etag = r["ETag"]
    lm = s3.head_object(Bucket=bucket, Key="c")["LastModified"]
    past = lm - datetime.timedelta(days=1)
    future = lm + datetime.timedelta(days=1)
    assert s3.get_object(Bucket=bucket, Key="c", IfMatch=etag)["Body"].read() == b"conditional"
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="c", IfMatch='"0000"')
    assert status(e) == 412 and err(e) == "PreconditionFailed"
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="c", IfNoneMatch=etag)
    assert status(e) == 304
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="c", IfModifiedSince=future)
    assert status(e) == 304
    assert s3.get_object(Bucket=bucket, Key="c", IfModifiedSince=past)["Body"].read()
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="c", IfUnmodifiedSince=past)
    assert status(e) == 412
    assert s3.get_object(Bucket=bucket, Key="c", IfUnmodifiedSince=future)["Body"].read()
    # If-Match wins over a failing If-Unmodified-Since (RFC 7232 order, as S3).
    assert s3.get_object(Bucket=bucket, Key="c", IfMatch=etag, IfUnmodifiedSince=past)
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="c", IfNoneMatch="*")
    assert status(e) == 304


def test_bad_content_md5_stores_nothing(s3, bucket, wharfd):
    before = wharfd.data_files()
    wrong = base64.b64encode(hashlib.md5(b"other").digest()).decode()
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="md5", Body=b"payload", ContentMD5=wrong)
    assert err(e) == "BadDigest"
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="md5")
    assert status(e) == 404
    assert wharfd.data_files() == before
    right = base64.b64encode(hashlib.md5(b"payload").digest()).decode()
    s3.put_object(Bucket=bucket, Key="md5", Body=b"payload", ContentMD5=right)
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="md5", Body=b"payload", ContentMD5="notbase64!")
    assert err(e) == "InvalidDigest"


def test_checksum_crc32c(s3, bucket):
    data = os.urandom(3000)
    r = s3.put_object(Bucket=bucket, Key="c32", Body=data, ChecksumAlgorithm="CRC32C")
    assert r["ChecksumCRC32C"] == crc32c_b64(data)
    h = s3.head_object(Bucket=bucket, Key="c32", ChecksumMode="ENABLED")
    assert h["ChecksumCRC32C"] == crc32c_b64(data)
    g = s3.get_object(Bucket=bucket, Key="c32", ChecksumMode="ENABLED")
    assert g["Body"].read() == data
    assert g["ChecksumCRC32C"] == crc32c_b64(data)


@pytest.mark.parametrize("algo", ["CRC32", "SHA1", "SHA256"])
def test_checksum_other_algorithms(s3, bucket, algo):
    import zlib
    data = os.urandom(4000)
    want = {"CRC32": base64.b64encode(struct.pack(">I", zlib.crc32(data))).decode(),
            "SHA1": base64.b64encode(hashlib.sha1(data).digest()).decode(),
            "SHA256": base64.b64encode(hashlib.sha256(data).digest()).decode()}[algo]
    r = s3.put_object(Bucket=bucket, Key=algo, Body=data, ChecksumAlgorithm=algo)
    assert r[f"Checksum{algo}"] == want
    g = s3.get_object(Bucket=bucket, Key=algo, ChecksumMode="ENABLED")
    assert g["Body"].read() == data and g[f"Checksum{algo}"] == want
    # a range is not the whole object: no whole-object checksum on it
    g = s3.get_object(Bucket=bucket, Key=algo, Range="bytes=0-9", ChecksumMode="ENABLED")
    assert g["Body"].read() == data[:10] and f"Checksum{algo}" not in g


def test_checksum_crc32c_mismatch(wharfd, bucket):
    raw = S3Raw(wharfd.endpoint)
    r = raw.request("PUT", f"/{bucket}/bad32", body=b"abc",
                    headers={"x-amz-checksum-crc32c": crc32c_b64(b"abd")})
    assert r.status == 400 and r.error_code() == "BadDigest", r
    assert raw.request("HEAD", f"/{bucket}/bad32").status == 404


def test_checksum_crc64nvme(wharfd, s3, bucket):
    raw = S3Raw(wharfd.endpoint)
    data = os.urandom(5000)
    want = crc64nvme_b64(data)
    r = raw.request("PUT", f"/{bucket}/c64", body=data, headers={"x-amz-checksum-crc64nvme": want})
    assert r.status == 200, r
    assert r.headers["x-amz-checksum-crc64nvme"] == want
    on = {"x-amz-checksum-mode": "ENABLED"}
    g = raw.request("GET", f"/{bucket}/c64", headers=on)
    assert g.body == data and g.headers["x-amz-checksum-crc64nvme"] == want
    h = raw.request("HEAD", f"/{bucket}/c64", headers=on)
    assert h.headers["x-amz-checksum-crc64nvme"] == want
    # As S3: only when asked for.
    assert "x-amz-checksum-crc64nvme" not in raw.request("GET", f"/{bucket}/c64").headers
    assert "x-amz-checksum-crc64nvme" not in raw.request("HEAD", f"/{bucket}/c64").headers
    assert "ChecksumCRC64NVME" not in s3.head_object(Bucket=bucket, Key="c64")
    # The server computes it for every object, also when the client sent none.
    s3.put_object(Bucket=bucket, Key="c64b", Body=data)
    assert raw.request("HEAD", f"/{bucket}/c64b",
                       headers=on).headers["x-amz-checksum-crc64nvme"] == want
    bad = raw.request("PUT", f"/{bucket}/c64bad", body=data,
                      headers={"x-amz-checksum-crc64nvme": crc64nvme_b64(data[:-1])})
    assert bad.status == 400 and bad.error_code() == "BadDigest", bad
    assert raw.request("HEAD", f"/{bucket}/c64bad").status == 404
    junk = raw.request("PUT", f"/{bucket}/c64bad", body=data,
                       headers={"x-amz-checksum-crc64nvme": "!!"})
    assert junk.status == 400, junk


def test_sha256_payload_mismatch(wharfd, bucket):
    raw = S3Raw(wharfd.endpoint)
    r = raw.request("PUT", f"/{bucket}/sha", body=b"real body",
                    payload_hash=hashlib.sha256(b"other body").hexdigest())
    assert r.status == 400 and r.error_code() == "XAmzContentSHA256Mismatch", r
    assert raw.request("HEAD", f"/{bucket}/sha").status == 404
    r = raw.request("PUT", f"/{bucket}/uns", body=b"unsigned body", payload_hash=UNSIGNED)
    assert r.status == 200, r


def test_delete_object_and_objects(s3, bucket):
    for k in ("d1", "d2", "d3", "keep"):
        s3.put_object(Bucket=bucket, Key=k, Body=b"x")
    s3.delete_object(Bucket=bucket, Key="d1")
    s3.delete_object(Bucket=bucket, Key="never-existed")  # idempotent, 204
    r = s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": "d2"}, {"Key": "d3"},
                                                             {"Key": "ghost"}]})
    assert sorted(d["Key"] for d in r["Deleted"]) == ["d2", "d3", "ghost"]
    assert not r.get("Errors")
    s3.put_object(Bucket=bucket, Key="q", Body=b"x")
    r = s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": "q"}], "Quiet": True})
    assert not r.get("Deleted")
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])]
    assert keys == ["keep"]


def test_delete_objects_malformed_xml(wharfd, bucket):
    raw = S3Raw(wharfd.endpoint)
    body = b"<Delete><Object><Key>a</Key></Object"
    md5 = base64.b64encode(hashlib.md5(body).digest()).decode()
    r = raw.request("POST", f"/{bucket}", query={"delete": None}, body=body,
                    headers={"content-md5": md5})
    assert r.status == 400 and r.error_code() == "MalformedXML", r


def test_copy_object(s3, bucket):
    data = os.urandom(70_000)
    s3.put_object(Bucket=bucket, Key="src", Body=data, Metadata={"a": "1"}, ContentType="x/y")
    r = s3.copy_object(Bucket=bucket, Key="dst", CopySource={"Bucket": bucket, "Key": "src"})
    assert r["CopyObjectResult"]["ETag"] == f'"{md5_hex(data)}"'
    g = s3.get_object(Bucket=bucket, Key="dst")
    assert g["Body"].read() == data and g["Metadata"] == {"a": "1"} and g["ContentType"] == "x/y"
    s3.copy_object(Bucket=bucket, Key="dst2", CopySource={"Bucket": bucket, "Key": "src"},
                   MetadataDirective="REPLACE", Metadata={"b": "2"}, ContentType="t/u")
    g = s3.get_object(Bucket=bucket, Key="dst2")
    assert g["Metadata"] == {"b": "2"} and g["ContentType"] == "t/u"
    # to itself: only with REPLACE
    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket=bucket, Key="src", CopySource={"Bucket": bucket, "Key": "src"})
    assert err(e) == "InvalidRequest"
    s3.copy_object(Bucket=bucket, Key="src", CopySource={"Bucket": bucket, "Key": "src"},
                   MetadataDirective="REPLACE", Metadata={"c": "3"})
    assert s3.head_object(Bucket=bucket, Key="src")["Metadata"] == {"c": "3"}
    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket=bucket, Key="x", CopySource={"Bucket": bucket, "Key": "ghost"})
    assert err(e) == "NoSuchKey"
    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket=bucket, Key="x", CopySource={"Bucket": bucket, "Key": "src"},
                       CopySourceIfMatch='"nomatch"')
    assert err(e) == "PreconditionFailed"
    # unicode key as the source (x-amz-copy-source is URL-encoded by boto3)
    s3.put_object(Bucket=bucket, Key="ü n/i+c", Body=b"u")
    s3.copy_object(Bucket=bucket, Key="u2", CopySource={"Bucket": bucket, "Key": "ü n/i+c"})
    assert s3.get_object(Bucket=bucket, Key="u2")["Body"].read() == b"u"


# ---- listings -----------------------------------------------------------------------------

def test_list_v2_prefix_delimiter_pagination(s3, bucket):
    keys = [f"dir{d}/file{f:02d}" for d in range(3) for f in range(5)] + ["top1", "top2"]
    for k in keys:
        s3.put_object(Bucket=bucket, Key=k, Body=b"x")
    r = s3.list_objects_v2(Bucket=bucket, Delimiter="/")
    assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["dir0/", "dir1/", "dir2/"]
    assert [o["Key"] for o in r["Contents"]] == ["top1", "top2"]
    assert r["KeyCount"] == 5
    r = s3.list_objects_v2(Bucket=bucket, Prefix="dir1/")
    assert [o["Key"] for o in r["Contents"]] == [f"dir1/file{f:02d}" for f in range(5)]
    # manual pagination with continuation tokens
    seen, token, pages = [], None, 0
    while True:
        kw = {"ContinuationToken": token} if token else {}
        r = s3.list_objects_v2(Bucket=bucket, MaxKeys=4, **kw)
        pages += 1
        seen += [o["Key"] for o in r.get("Contents", [])]
        if not r["IsTruncated"]:
            break
        token = r["NextContinuationToken"]
        assert pages < 20
    assert seen == sorted(keys) and pages == 5
    r = s3.list_objects_v2(Bucket=bucket, StartAfter="dir2/file03")
    assert [o["Key"] for o in r["Contents"]] == ["dir2/file04", "top1", "top2"]
    r = s3.list_objects_v2(Bucket=bucket, MaxKeys=2, Delimiter="/")
    assert r["IsTruncated"] and r["KeyCount"] == 2
    r = s3.list_objects_v2(Bucket=bucket, FetchOwner=True, MaxKeys=1)
    # Root's display name is "root", never its access key id.
    assert r["Contents"][0]["Owner"]["DisplayName"] == "root" != ACCESS_KEY
    r = s3.list_objects_v2(Bucket=bucket, MaxKeys=0)
    assert r.get("KeyCount") == 0


def test_list_v2_bad_token_and_encoding(wharfd, bucket):
    raw = S3Raw(wharfd.endpoint)
    r = raw.request("GET", f"/{bucket}", query={"list-type": "2", "continuation-token": "%%%"})
    assert r.status == 400 and r.error_code() == "InvalidArgument", r
    r = raw.request("GET", f"/{bucket}", query={"list-type": "2", "encoding-type": "base64"})
    assert r.status == 400 and r.error_code() == "InvalidArgument", r
    r = raw.request("GET", f"/{bucket}", query={"list-type": "2", "max-keys": "-1"})
    assert r.status == 400 and r.error_code() == "InvalidArgument", r


def test_list_v2_encoding_url_on_wire(wharfd, s3, bucket):
    s3.put_object(Bucket=bucket, Key="sp ace/plus+", Body=b"x")
    raw = S3Raw(wharfd.endpoint)
    r = raw.request("GET", f"/{bucket}", query={"list-type": "2", "encoding-type": "url"})
    assert r.status == 200
    assert b"<Key>sp%20ace/plus%2B</Key>" in r.body, r.body
    assert b"<EncodingType>url</EncodingType>" in r.body


def test_list_v1_marker(s3, bucket):
    keys = [f"k{i:03d}" for i in range(11)]
    for k in keys:
        s3.put_object(Bucket=bucket, Key=k, Body=b"x")
    seen, marker = [], ""
    for _ in range(20):
        r = s3.list_objects(Bucket=bucket, MaxKeys=3, Marker=marker)
        seen += [o["Key"] for o in r.get("Contents", [])]
        if not r["IsTruncated"]:
            break
        marker = r.get("NextMarker") or r["Contents"][-1]["Key"]
    assert seen == keys
    r = s3.list_objects(Bucket=bucket, Marker="k005", MaxKeys=2)
    assert [o["Key"] for o in r["Contents"]] == ["k006", "k007"]
    assert r["NextMarker"] == "k007"


def test_list_object_versions(s3, bucket):
    for k in ("v1", "v2"):
        s3.put_object(Bucket=bucket, Key=k, Body=b"x")
    r = s3.list_object_versions(Bucket=bucket)
    vs = r["Versions"]
    assert [v["Key"] for v in vs] == ["v1", "v2"]
    assert all(v["VersionId"] == "null" and v["IsLatest"] for v in vs)
    # How tools empty a bucket: versions -> DeleteObjects with VersionId null.
    s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": v["Key"], "VersionId": "null"}
                                                         for v in vs]})
    assert not s3.list_object_versions(Bucket=bucket).get("Versions")
    s3.delete_bucket(Bucket=bucket)


def test_unsupported_subresource(s3, bucket):
    with pytest.raises(ClientError) as e:
        s3.get_bucket_website(Bucket=bucket)
    assert err(e) == "NotImplemented" and status(e) == 501


# ---- multipart ----------------------------------------------------------------------------

def test_multipart_full(s3, bucket):
    parts_data = [os.urandom(5 * MIB), os.urandom(5 * MIB), os.urandom(1234)]
    mp = s3.create_multipart_upload(Bucket=bucket, Key="big", ContentType="a/b",
                                    Metadata={"m": "1"})
    uid = mp["UploadId"]
    ups = s3.list_multipart_uploads(Bucket=bucket)["Uploads"]
    assert [(u["Key"], u["UploadId"]) for u in ups] == [("big", uid)]
    etags = []
    for i, d in enumerate(parts_data, 1):
        r = s3.upload_part(Bucket=bucket, Key="big", UploadId=uid, PartNumber=i, Body=d)
        assert r["ETag"] == f'"{md5_hex(d)}"'
        etags.append(r["ETag"])
    lp = s3.list_parts(Bucket=bucket, Key="big", UploadId=uid)
    assert [(p["PartNumber"], p["Size"], p["ETag"]) for p in lp["Parts"]] == \
        [(i + 1, len(d), etags[i]) for i, d in enumerate(parts_data)]
    lp = s3.list_parts(Bucket=bucket, Key="big", UploadId=uid, MaxParts=1, PartNumberMarker=1)
    assert [p["PartNumber"] for p in lp["Parts"]] == [2] and lp["IsTruncated"]
    r = s3.complete_multipart_upload(
        Bucket=bucket, Key="big", UploadId=uid,
        MultipartUpload={"Parts": [{"PartNumber": i + 1, "ETag": e} for i, e in enumerate(etags)]})
    whole = b"".join(parts_data)
    digests = b"".join(hashlib.md5(d).digest() for d in parts_data)
    assert r["ETag"] == f'"{hashlib.md5(digests).hexdigest()}-3"'
    g = s3.get_object(Bucket=bucket, Key="big")
    assert g["Body"].read() == whole
    assert g["ContentType"] == "a/b" and g["Metadata"] == {"m": "1"}
    assert not s3.list_multipart_uploads(Bucket=bucket).get("Uploads")
    with pytest.raises(ClientError) as e:
        s3.list_parts(Bucket=bucket, Key="big", UploadId=uid)
    assert err(e) == "NoSuchUpload"


def test_multipart_via_transfer_manager(s3, bucket):
    from boto3.s3.transfer import TransferConfig
    data = os.urandom(12 * MIB)
    cfg = TransferConfig(multipart_threshold=5 * MIB, multipart_chunksize=5 * MIB,
                         max_concurrency=3)
    import io
    s3.upload_fileobj(io.BytesIO(data), bucket, "tm", Config=cfg)
    assert s3.head_object(Bucket=bucket, Key="tm")["ETag"] == \
        f'"{multipart_etag(data, 5 * MIB)}"'
    out = io.BytesIO()
    s3.download_fileobj(bucket, "tm", out, Config=cfg)  # ranged GETs in parallel
    assert out.getvalue() == data


def test_multipart_errors(s3, bucket, wharfd):
    uid = s3.create_multipart_upload(Bucket=bucket, Key="e")["UploadId"]
    small = s3.upload_part(Bucket=bucket, Key="e", UploadId=uid, PartNumber=1, Body=b"tiny")
    last = s3.upload_part(Bucket=bucket, Key="e", UploadId=uid, PartNumber=2, Body=b"last")

    def complete(parts):
        with pytest.raises(ClientError) as e:
            s3.complete_multipart_upload(Bucket=bucket, Key="e", UploadId=uid,
                                         MultipartUpload={"Parts": parts})
        return err(e)

    assert complete([{"PartNumber": 1, "ETag": small["ETag"]},
                     {"PartNumber": 2, "ETag": last["ETag"]}]) == "EntityTooSmall"
    assert complete([{"PartNumber": 1, "ETag": '"ffffffffffffffffffffffffffffffff"'}]) == \
        "InvalidPart"
    assert complete([{"PartNumber": 3, "ETag": small["ETag"]}]) == "InvalidPart"
    assert complete([{"PartNumber": 2, "ETag": last["ETag"]},
                     {"PartNumber": 1, "ETag": small["ETag"]}]) == "InvalidPartOrder"
    raw = S3Raw(wharfd.endpoint)
    r = raw.request("POST", f"/{bucket}/e", query={"uploadId": uid},
                    body=b"<CompleteMultipartUpload><Part><PartNumber>1</Part>")
    assert r.status == 400 and r.error_code() == "MalformedXML", r
    with pytest.raises(ClientError) as e:
        s3.upload_part(Bucket=bucket, Key="e", UploadId=uid, PartNumber=10001, Body=b"x")
    assert err(e) == "InvalidArgument"
    with pytest.raises(ClientError) as e:
        s3.upload_part(Bucket=bucket, Key="e", UploadId="nosuchupload", PartNumber=1, Body=b"x")
    assert err(e) == "NoSuchUpload"
    s3.abort_multipart_upload(Bucket=bucket, Key="e", UploadId=uid)
    with pytest.raises(ClientError) as e:
        s3.abort_multipart_upload(Bucket=bucket, Key="e", UploadId=uid)
    assert err(e) == "NoSuchUpload"
    with pytest.raises(ClientError) as e:
        s3.head_object(Bucket=bucket, Key="e")
    assert status(e) == 404


def test_upload_part_copy(s3, bucket):
    src = os.urandom(6 * MIB)
    s3.put_object(Bucket=bucket, Key="src", Body=src)
    uid = s3.create_multipart_upload(Bucket=bucket, Key="pc")["UploadId"]
    p1 = s3.upload_part_copy(Bucket=bucket, Key="pc", UploadId=uid, PartNumber=1,
                             CopySource={"Bucket": bucket, "Key": "src"},
                             CopySourceRange=f"bytes=0-{5 * MIB - 1}")
    p2 = s3.upload_part_copy(Bucket=bucket, Key="pc", UploadId=uid, PartNumber=2,
                             CopySource={"Bucket": bucket, "Key": "src"},
                             CopySourceRange=f"bytes={5 * MIB}-{6 * MIB - 1}")
    s3.complete_multipart_upload(
        Bucket=bucket, Key="pc", UploadId=uid,
        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": p1["CopyPartResult"]["ETag"]},
                                   {"PartNumber": 2, "ETag": p2["CopyPartResult"]["ETag"]}]})
    assert s3.get_object(Bucket=bucket, Key="pc")["Body"].read() == src


# ---- presigned URLs -----------------------------------------------------------------------

def test_presigned_get_put(s3, bucket):
    url = s3.generate_presigned_url("put_object", Params={"Bucket": bucket, "Key": "pre s/ü"},
                                    ExpiresIn=300)
    req = urllib.request.Request(url, data=b"presigned body", method="PUT")
    with urllib.request.urlopen(req, timeout=30) as r:
        assert r.status == 200
    url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "pre s/ü"},
                                    ExpiresIn=300)
    with urllib.request.urlopen(url, timeout=30) as r:
        assert r.read() == b"presigned body"
    # tampering with the signed URL breaks it
    bad = url.replace("X-Amz-Expires=300", "X-Amz-Expires=301")
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(bad, timeout=30)
    assert e.value.code == 403


def test_presigned_expired(s3, bucket):
    s3.put_object(Bucket=bucket, Key="exp", Body=b"x")
    url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "exp"},
                                    ExpiresIn=1)
    time.sleep(2.2)
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(url, timeout=30)
    assert e.value.code == 403
    assert b"AccessDenied" in e.value.read()


# ---- auth ---------------------------------------------------------------------------------

def test_wrong_secret(wharfd):
    c = client(wharfd.endpoint, secret_key="not-the-secret")
    with pytest.raises(ClientError) as e:
        c.list_buckets()
    assert err(e) == "SignatureDoesNotMatch" and status(e) == 403


def test_unknown_access_key(wharfd):
    c = client(wharfd.endpoint, access_key="nosuchkey")
    with pytest.raises(ClientError) as e:
        c.list_buckets()
    assert err(e) == "InvalidAccessKeyId" and status(e) == 403


def test_anonymous_refused(wharfd, s3, bucket):
    s3.put_object(Bucket=bucket, Key="anon", Body=b"secret")
    for url in (f"{wharfd.endpoint}/", f"{wharfd.endpoint}/{bucket}/anon"):
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(url, timeout=30)
        assert e.value.code == 403
        assert b"<Code>AccessDenied</Code>" in e.value.read()
    anon = boto3.session.Session().client(
        "s3", endpoint_url=wharfd.endpoint, region_name=REGION,
        config=Config(signature_version=botocore.UNSIGNED, retries={"max_attempts": 1}))
    with pytest.raises(ClientError) as e:
        anon.get_object(Bucket=bucket, Key="anon")
    assert err(e) == "AccessDenied"


def test_request_time_too_skewed(wharfd):
    raw = S3Raw(wharfd.endpoint)
    skewed = (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=20))
    r = raw.request("GET", "/", amz_date=skewed.strftime("%Y%m%dT%H%M%SZ"))
    assert r.status == 403 and r.error_code() == "RequestTimeTooSkewed", r
    # boto3 itself with a clock 20 minutes ahead (botocore reads datetime.datetime.utcnow)
    real = datetime.datetime

    class Ahead(real):
        @classmethod
        def utcnow(cls):
            return real.utcnow() + datetime.timedelta(minutes=20)

    from unittest import mock
    c = client(wharfd.endpoint)
    with mock.patch.object(botocore.auth.datetime, "datetime", Ahead):
        with pytest.raises(ClientError) as e:
            c.list_buckets()
    assert err(e) == "RequestTimeTooSkewed"
    # within 15 minutes is fine
    ok = (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=10))
    assert raw.request("GET", "/", amz_date=ok.strftime("%Y%m%dT%H%M%SZ")).status == 200


# ---- virtual-host style -------------------------------------------------------------------

@pytest.fixture()
def vhost_dns(monkeypatch):
    """Resolve *.localhost to 127.0.0.1 in this process (glibc does not), so boto3 can reach
    http://<bucket>.localhost:<port>/ while the Host header carries the bucket."""
    real = socket.getaddrinfo

    def fake(host, *a, **kw):
        if isinstance(host, str) and host.endswith(".localhost"):
            host = "127.0.0.1"
        return real(host, *a, **kw)

    monkeypatch.setattr(socket, "getaddrinfo", fake)


def test_virtual_host_style(wharfd, vhost_dns):
    c = client(wharfd.endpoint.replace("127.0.0.1", "localhost"), "virtual")
    b = unique_bucket("vhost")
    c.create_bucket(Bucket=b)
    r = c.put_object(Bucket=b, Key="dir/obj", Body=b"vhost data", Metadata={"x": "y"})
    assert c.get_object(Bucket=b, Key="dir/obj")["Body"].read() == b"vhost data"
    assert [o["Key"] for o in c.list_objects_v2(Bucket=b)["Contents"]] == ["dir/obj"]
    assert c.head_object(Bucket=b, Key="dir/obj")["ETag"] == r["ETag"]
    uid = c.create_multipart_upload(Bucket=b, Key="m")["UploadId"]
    p = c.upload_part(Bucket=b, Key="m", UploadId=uid, PartNumber=1, Body=b"one")
    c.complete_multipart_upload(Bucket=b, Key="m", UploadId=uid,
                                MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": p["ETag"]}]})
    assert c.get_object(Bucket=b, Key="m")["Body"].read() == b"one"
    c.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "dir/obj"}, {"Key": "m"}]})
    c.delete_bucket(Bucket=b)
    # the path-style client sees the same bucket namespace
    assert b not in [x["Name"] for x in client(wharfd.endpoint).list_buckets()["Buckets"]]


def test_path_style_with_dotted_endpoint_name(wharfd, vhost_dns):
    """A path-style client whose endpoint name has dots (here wharf.localhost) must not be
    mistaken for virtual-host style: no bucket "wharf" exists, so the path names the bucket."""
    c = client(wharfd.endpoint.replace("127.0.0.1", "wharf.localhost"), "path")
    b = unique_bucket("dotted")
    c.create_bucket(Bucket=b)
    c.put_object(Bucket=b, Key="k/1", Body=b"dotted")
    assert c.get_object(Bucket=b, Key="k/1")["Body"].read() == b"dotted"
    assert [o["Key"] for o in c.list_objects_v2(Bucket=b)["Contents"]] == ["k/1"]
    assert b in [x["Name"] for x in client(wharfd.endpoint).list_buckets()["Buckets"]]


# ---- overwrite atomicity, metrics, shutdown -----------------------------------------------

def test_overwrite_is_atomic_for_readers(wharfd, s3, bucket):
    size = 48 * MIB
    old = bytes([0xAA]) * size
    new = bytes([0x55]) * size
    s3.put_object(Bucket=bucket, Key="ow", Body=old)
    raw = S3Raw(wharfd.endpoint)
    h, _ = raw.sign_headers("GET", f"/{bucket}/ow")
    h.pop("host")
    conn = http.client.HTTPConnection("127.0.0.1", wharfd.port, timeout=60)
    conn.putrequest("GET", f"/{bucket}/ow", skip_host=True, skip_accept_encoding=True)
    conn.putheader("Host", raw.netloc)
    for k, v in h.items():
        conn.putheader(k, v)
    conn.endheaders()
    resp = conn.getresponse()
    assert resp.status == 200
    first = resp.read(MIB)  # the reader is mid-object...
    s3.put_object(Bucket=bucket, Key="ow", Body=new)  # ...when the key is overwritten
    rest = resp.read()
    conn.close()
    got = first + rest
    assert len(got) == size
    assert got == old, "the in-flight GET must keep reading the version it started"
    assert s3.get_object(Bucket=bucket, Key="ow")["Body"].read() == new


def test_metrics(wharfd, s3, bucket):
    m0 = wharfd.metrics()
    data = os.urandom(123_456)
    s3.put_object(Bucket=bucket, Key="met", Body=data)
    assert s3.get_object(Bucket=bucket, Key="met")["Body"].read() == data
    with pytest.raises(ClientError):
        s3.get_object(Bucket=bucket, Key="ghost")
    # Request counts are taken when the reply is queued; bytes and latency when the request
    # ends, which can be a moment after the client has its last byte.
    m1 = {}

    def d(k):
        return m1.get(k, 0) - m0.get(k, 0)

    def settled():
        m1.clear()
        m1.update(wharfd.metrics())
        return d("wharf_http_read_ops_total") >= 1 and \
            d('wharf_request_duration_seconds_count{api="GetObject"}') >= 2
    assert wait_until(settled, timeout=10)

    assert d('wharf_requests_total{api="PutObject",status="200"}') == 1
    assert d('wharf_requests_total{api="GetObject",status="200"}') == 1
    assert d('wharf_requests_total{api="GetObject",status="404"}') == 1
    assert d("wharf_http_write_bytes_total") == len(data)
    assert d("wharf_http_write_ops_total") == 1
    assert d("wharf_http_read_bytes_total") == len(data)
    assert d("wharf_http_read_ops_total") == 1
    assert d("wharf_http_rx_bytes_total") >= len(data)
    assert d("wharf_http_tx_bytes_total") >= len(data)
    assert d('wharf_request_duration_seconds_count{api="PutObject"}') == 1
    assert m1["process_cpu_seconds_total"] > 0
    with urllib.request.urlopen(wharfd.endpoint + "/health", timeout=5) as r:
        assert r.read() == b"ok\n"


def test_request_id_and_server_headers(s3, bucket):
    r = s3.put_object(Bucket=bucket, Key="ids", Body=b"x")
    h = r["ResponseMetadata"]["HTTPHeaders"]
    assert len(h["x-amz-request-id"]) == 16
    assert h["server"].startswith("wharfd/")
    assert "date" in h
    r2 = s3.head_object(Bucket=bucket, Key="ids")
    assert r2["ResponseMetadata"]["HTTPHeaders"]["x-amz-request-id"] != h["x-amz-request-id"]


def test_sigterm_exits_zero_after_inflight_get(fresh_wharfd):
    srv = fresh_wharfd
    c = client(srv.endpoint)
    b = unique_bucket("term")
    c.create_bucket(Bucket=b)
    data = os.urandom(32 * MIB)
    c.put_object(Bucket=b, Key="k", Body=data)
    g = c.get_object(Bucket=b, Key="k")
    first = g["Body"].read(MIB)
    srv.proc.send_signal(15)
    rest = g["Body"].read()  # the in-flight response still completes
    assert first + rest == data
    rc = srv.proc.wait(timeout=20)
    assert rc == 0, srv.log_tail()
    assert not os.path.exists(srv.unix_socket)


def test_bad_flag_exits_2():
    import subprocess
    srv = WharfServer()
    r = subprocess.run([srv.binary, "serve", "--data", srv.data_dir, "--nonsense"],
                       capture_output=True, timeout=20)
    assert r.returncode == 2
    assert b"--nonsense" in r.stderr
    r = subprocess.run([srv.binary, "--version"], capture_output=True, timeout=20)
    assert r.returncode == 0 and r.stdout.startswith(b"wharfd ")
    r = subprocess.run([srv.binary, "--help"], capture_output=True, timeout=20)
    assert r.returncode == 0 and b"serve" in r.stdout
    srv.cleanup()
