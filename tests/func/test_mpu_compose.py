# SPDX-License-Identifier: Apache-2.0
"""Objects that are their multipart upload's parts (CompleteMultipartUpload composes the object
from the part files without copying them) against a real wharfd: GET whole, by Range across
part boundaries and by ?partNumber=N, HEAD, conditional GETs, ListObjects sizes, CopyObject,
UploadPartCopy of a range that spans parts, versioning (an overwritten or deleted version keeps
its files until that version is removed), lifecycle expiration, aws cli multipart, and RDMA GET
(whole and ranged, over ofi+shm and ofi+tcp, through python wharf). Every byte is compared, and
the data directory holds exactly the files the rows name."""
import hashlib
import os
import subprocess
import sys
import time

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from wharfd import (ACCESS_KEY, CTYPES_UNDER_ASAN, REGION, SECRET_KEY, WharfServer, crc32c,
                    unique_bucket, wait_until)

MIB = 1 << 20
SIZES = [5 * MIB, 5 * MIB + 3, 1000]


def client(endpoint):
    return boto3.session.Session().client(
        "s3", endpoint_url=endpoint, aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY, region_name=REGION,
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                      signature_version="s3v4"))


@pytest.fixture(scope="module")
def srv():
    s = WharfServer(extra_args=["--lifecycle-period", "1"],
                    env={"WHARF_LIFECYCLE_DAY_SECONDS": "1"})
    s.start()
    yield s
    s.stop()
    s.cleanup()


@pytest.fixture(scope="module")
def s3(srv):
    return client(srv.endpoint)


def object_files(srv):
    return {p for p in srv.data_files() if p.startswith("objects/")}


def upload(s3, bucket, key, data, sizes):
    u = s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
    parts, off = [], 0
    for i, n in enumerate(sizes, 1):
        r = s3.upload_part(Bucket=bucket, Key=key, UploadId=u, PartNumber=i,
                           Body=data[off:off + n])
        parts.append({"PartNumber": i, "ETag": r["ETag"]})
        off += n
    return s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=u,
                                        MultipartUpload={"Parts": parts})


def composed(srv, s3, key, seed=1, sizes=SIZES, bucket=None):
    b = bucket or unique_bucket("cmp")
    if not bucket:
        s3.create_bucket(Bucket=b)
    data = os.urandom(sum(sizes))
    before = object_files(srv)
    r = upload(s3, b, key, data, sizes)
    # The parts' files are the object's: one file per non-empty part, nothing copied.
    assert len(object_files(srv) - before) == len([n for n in sizes if n]), object_files(srv)
    return b, data, r


def etag_of(data, sizes):
    digests, off = b"", 0
    for n in sizes:
        digests += hashlib.md5(data[off:off + n]).digest()
        off += n
    return f'"{hashlib.md5(digests).hexdigest()}-{len(sizes)}"'


def get(s3, b, k, **kw):
    return s3.get_object(Bucket=b, Key=k, **kw)


def test_get_head_range_part_number(srv, s3):
    b, data, r = composed(srv, s3, "obj")
    want_etag = etag_of(data, SIZES)
    assert r["ETag"] == want_etag
    g = get(s3, b, "obj")
    assert g["Body"].read() == data and g["ETag"] == want_etag
    assert g["ContentLength"] == len(data)
    h = s3.head_object(Bucket=b, Key="obj")
    assert h["ContentLength"] == len(data) and h["ETag"] == want_etag
    # Ranges inside one part (sendfile from that file) and across boundaries (several files).
    b1, b2 = SIZES[0], SIZES[0] + SIZES[1]
    for lo, hi in [(0, 99), (b1 - 10, b1 + 9), (b1 - 1, b1), (b1, b1), (b2 - 5, len(data) - 1),
                   (100, len(data) - 2), (b1 + 7, b2 - 1), (len(data) - 1, len(data) - 1)]:
        g = get(s3, b, "obj", Range=f"bytes={lo}-{hi}")
        assert g["Body"].read() == data[lo:hi + 1], (lo, hi)
        assert g["ContentRange"] == f"bytes {lo}-{hi}/{len(data)}"
    g = get(s3, b, "obj", Range="bytes=-1500")
    assert g["Body"].read() == data[-1500:]
    off = 0
    for i, n in enumerate(SIZES, 1):
        g = get(s3, b, "obj", PartNumber=i)
        assert g["Body"].read() == data[off:off + n], i
        assert g["ContentRange"] == f"bytes {off}-{off + n - 1}/{len(data)}"
        assert g["PartsCount"] == 3
        off += n
    listed = s3.list_objects_v2(Bucket=b)["Contents"]
    assert [(o["Key"], o["Size"], o["ETag"]) for o in listed] == [("obj", len(data), want_etag)]


def test_conditional_gets(srv, s3):
    b, data, r = composed(srv, s3, "c")
    etag = r["ETag"]
    assert get(s3, b, "c", IfMatch=etag)["Body"].read() == data
    with pytest.raises(ClientError) as ei:
        get(s3, b, "c", IfNoneMatch=etag)
    assert ei.value.response["Error"]["Code"] == "304"
    with pytest.raises(ClientError) as ei:
        get(s3, b, "c", IfMatch='"0123"')
    assert ei.value.response["Error"]["Code"] == "PreconditionFailed"
    g = get(s3, b, "c", IfMatch=etag, Range="bytes=5242000-5243000")
    assert g["Body"].read() == data[5242000:5243001]


def test_checksum_unchanged(srv, s3):
    """A CRC-32C upload's object checksum is the COMPOSITE of the parts' CRC-32Cs, as S3
    makes it, whether or not the bytes were copied."""
    import base64
    import struct
    b = unique_bucket("cks")
    s3.create_bucket(Bucket=b)
    data = os.urandom(sum(SIZES))
    u = s3.create_multipart_upload(Bucket=b, Key="k", ChecksumAlgorithm="CRC32C")["UploadId"]
    parts, off, cat = [], 0, b""
    for i, n in enumerate(SIZES, 1):
        r = s3.upload_part(Bucket=b, Key="k", UploadId=u, PartNumber=i, Body=data[off:off + n],
                           ChecksumAlgorithm="CRC32C")
        parts.append({"PartNumber": i, "ETag": r["ETag"], "ChecksumCRC32C": r["ChecksumCRC32C"]})
        cat += struct.pack(">I", crc32c(data[off:off + n]))
        off += n
    c = s3.complete_multipart_upload(Bucket=b, Key="k", UploadId=u,
                                     MultipartUpload={"Parts": parts})
    want = base64.b64encode(struct.pack(">I", crc32c(cat))).decode() + "-3"
    assert c["ChecksumCRC32C"] == want
    h = s3.head_object(Bucket=b, Key="k", ChecksumMode="ENABLED")
    assert h["ChecksumCRC32C"] == want
    g = get(s3, b, "k", ChecksumMode="ENABLED")
    assert g["Body"].read() == data


def test_copy_object_and_upload_part_copy_across_parts(srv, s3):
    b, data, r = composed(srv, s3, "src")
    before = object_files(srv)
    c = s3.copy_object(Bucket=b, Key="dst", CopySource={"Bucket": b, "Key": "src"})
    assert c["CopyObjectResult"]["ETag"] == r["ETag"]
    assert len(object_files(srv) - before) == 1  # the copy is one new file
    assert get(s3, b, "dst")["Body"].read() == data
    # UploadPartCopy of a range that starts in part 1 and ends in part 3.
    lo, hi = SIZES[0] - 100, len(data) - 10
    u = s3.create_multipart_upload(Bucket=b, Key="pc")["UploadId"]
    p1 = s3.upload_part_copy(Bucket=b, Key="pc", UploadId=u, PartNumber=1,
                             CopySource={"Bucket": b, "Key": "src"},
                             CopySourceRange=f"bytes={lo}-{hi}")
    p2 = s3.upload_part(Bucket=b, Key="pc", UploadId=u, PartNumber=2, Body=b"tail")
    s3.complete_multipart_upload(
        Bucket=b, Key="pc", UploadId=u,
        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": p1["CopyPartResult"]["ETag"]},
                                   {"PartNumber": 2, "ETag": p2["ETag"]}]})
    assert get(s3, b, "pc")["Body"].read() == data[lo:hi + 1] + b"tail"
    # A composed object copied onto itself with new metadata keeps its bytes.
    s3.copy_object(Bucket=b, Key="src", CopySource={"Bucket": b, "Key": "src"},
                   Metadata={"m": "1"}, MetadataDirective="REPLACE")
    assert get(s3, b, "src")["Body"].read() == data


def test_overwrite_and_delete_release_every_file(srv, s3):
    b, data, _ = composed(srv, s3, "o")
    start = object_files(srv)
    s3.put_object(Bucket=b, Key="o", Body=b"small")
    assert len(start - object_files(srv)) == 3 and len(object_files(srv) - start) == 1
    _, data2, _ = composed(srv, s3, "o", bucket=b)
    assert get(s3, b, "o")["Body"].read() == data2
    n = len(object_files(srv))
    s3.delete_object(Bucket=b, Key="o")
    assert len(object_files(srv)) == n - 3


def test_versioning(srv, s3):
    b = unique_bucket("cmpv")
    s3.create_bucket(Bucket=b)
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    empty = object_files(srv)
    _, data, r = composed(srv, s3, "v", bucket=b)
    v1 = r["VersionId"]
    s3.put_object(Bucket=b, Key="v", Body=b"v2")
    s3.delete_object(Bucket=b, Key="v")  # a delete marker
    assert len(object_files(srv) - empty) == 4  # v1's three parts and v2
    g = get(s3, b, "v", VersionId=v1, Range=f"bytes={SIZES[0] - 3}-{SIZES[0] + 3}")
    assert g["Body"].read() == data[SIZES[0] - 3:SIZES[0] + 4]
    assert get(s3, b, "v", VersionId=v1)["Body"].read() == data
    # A composed version over a composed version: both stay.
    _, data3, r3 = composed(srv, s3, "v", seed=3, bucket=b)
    assert len(object_files(srv) - empty) == 7
    s3.delete_object(Bucket=b, Key="v", VersionId=v1)
    assert len(object_files(srv) - empty) == 4
    assert get(s3, b, "v")["Body"].read() == data3
    s3.delete_object(Bucket=b, Key="v", VersionId=r3["VersionId"])
    assert len(object_files(srv) - empty) == 1


def test_lifecycle_expiration_releases_extents(srv, s3):
    b, data, _ = composed(srv, s3, "exp/a")
    n = len(object_files(srv))
    s3.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={"Rules": [
        {"ID": "e", "Status": "Enabled", "Filter": {"Prefix": "exp/"},
         "Expiration": {"Days": 1}}]})
    assert wait_until(lambda: "Contents" not in s3.list_objects_v2(Bucket=b), timeout=30)
    assert wait_until(lambda: len(object_files(srv)) == n - 3, timeout=10)


def test_restart_keeps_composed_objects(srv, s3, tmp_path):
    (tmp_path / "d").mkdir()
    s = WharfServer(data_dir=str(tmp_path / "d"))
    s.start()
    try:
        c = client(s.endpoint)
        b, data, _ = composed(s, c, "r")
        files = object_files(s)
        s.stop()
        s.start()
        c = client(s.endpoint)
        assert object_files(s) == files
        assert hashlib.sha256(get(c, b, "r")["Body"].read()).digest() == \
            hashlib.sha256(data).digest()
    finally:
        s.stop()
        s.cleanup()


def test_awscli_multipart(srv, tmp_path):
    b = unique_bucket("cmpcli")
    env = srv.client_env()
    cfg = tmp_path / "cfg"
    cfg.write_text("[default]\ns3 =\n  multipart_threshold = 5MB\n  multipart_chunksize = 5MB\n")
    env["AWS_CONFIG_FILE"] = str(cfg)

    def aws(*a):
        p = subprocess.run(["aws", "--endpoint-url", srv.endpoint, *a], env=env,
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, (a, p.stdout, p.stderr)
        return p.stdout
    aws("s3", "mb", f"s3://{b}")
    src = tmp_path / "src"
    data = os.urandom(17 * MIB + 12345)
    src.write_bytes(data)
    before = object_files(srv)
    aws("s3", "cp", str(src), f"s3://{b}/f")
    assert len(object_files(srv) - before) == 4  # 4 parts of 5 MiB (last 2 MiB), no copy
    aws("s3", "cp", f"s3://{b}/f", str(tmp_path / "back"))
    assert (tmp_path / "back").read_bytes() == data
    aws("s3api", "get-object", "--bucket", b, "--key", "f", "--range",
        f"bytes={5 * MIB - 50}-{10 * MIB + 50}", str(tmp_path / "rng"))
    assert (tmp_path / "rng").read_bytes() == data[5 * MIB - 50:10 * MIB + 51]


@pytest.mark.skipif(**CTYPES_UNDER_ASAN)
@pytest.mark.parametrize("provider", ["ofi+shm", "ofi+tcp"])
def test_rdma_get(srv, s3, provider):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                    "python"))
    import wharf
    b, data, _ = composed(srv, s3, "rd", sizes=[5 * MIB, 6 * MIB + 5, 4 * MIB + 7])
    c = wharf.Client(srv.endpoint, ACCESS_KEY, SECRET_KEY, region=REGION, provider=provider,
                     unix_socket=srv.unix_socket if provider == "ofi+shm" else None)
    try:
        out = c.get(b, "rd", transport="rdma")
        assert c.last_report.transport == "rdma"
        assert out == data
        b1, b2 = 5 * MIB, 11 * MIB + 5
        for off, n in [(0, 100), (b1 - 1, 2), (b1 - 4096, 8192), (b1 + 3, b2 - b1),
                       (b1 - 7, b2 - b1 + 100), (100, len(data) - 200), (b2, len(data) - b2),
                       (len(data) - 1, 1)]:
            got = c.get(b, "rd", offset=off, length=n, transport="rdma")
            assert c.last_report.transport == "rdma" and got == data[off:off + n], (off, n)
    finally:
        c.close()
