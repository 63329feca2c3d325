# SPDX-License-Identifier: Apache-2.0
"""Server-side encryption at rest against a real wharfd over https (a test CA's certificate):
SSE-C (the customer's key, never stored) and SSE-S3 (a random data key per object, sealed under
the server key), with boto3 and one aws CLI round trip. Round trips, ranged GETs across the
64 KiB segments, multipart, copies between SSE-C, SSE-S3 and plain, wrong and missing keys,
the raw key and the plaintext absent from the data directory and meta.db, a flipped bit on
disk refused (never wrong bytes), aws:kms refused, SSE-C over plain HTTP refused, an RDMA
token the engine cannot serve declined as for a plain object, and the bucket's default
encryption. ETags: SSE-S3's is the plaintext's MD5, an
SSE-C object's (and part's) never is, as S3 does; conditional requests use the one returned."""
import base64
import hashlib
import os
import subprocess

import boto3
import botocore.exceptions
import pytest
from botocore.config import Config

from wharfd import (ACCESS_KEY, REGION, SECRET_KEY, TestCert, WharfServer, md5_hex,
                    unique_bucket)

SEG = 64 * 1024
MIB = 1024 * 1024
AWS = "/usr/bin/aws"


@pytest.fixture(scope="module")
def cert(tmp_path_factory):
    return TestCert(str(tmp_path_factory.mktemp("sse-tls")))


@pytest.fixture(scope="module")
def srv(cert):
    s = WharfServer(tls=cert)
    s.start()
    yield s
    s.cleanup()


def client(s, verify=None):
    return boto3.client("s3", endpoint_url=s.endpoint, aws_access_key_id=ACCESS_KEY,
                        aws_secret_access_key=SECRET_KEY, region_name=REGION,
                        verify=verify if verify is not None else (s.tls.ca if s.tls else None),
                        config=Config(s3={"addressing_style": "path"},
                                      retries={"max_attempts": 1}))


@pytest.fixture(scope="module")
def s3(srv):
    return client(srv)


@pytest.fixture()
def bucket(s3):
    name = unique_bucket("sse")
    s3.create_bucket(Bucket=name)
    yield name
    for v in s3.list_objects_v2(Bucket=name).get("Contents", []):
        s3.delete_object(Bucket=name, Key=v["Key"])
    for u in s3.list_multipart_uploads(Bucket=name).get("Uploads", []):
        s3.abort_multipart_upload(Bucket=name, Key=u["Key"], UploadId=u["UploadId"])
    s3.delete_bucket(Bucket=name)


def ssec(key):
    return {"SSECustomerAlgorithm": "AES256", "SSECustomerKey": key}


def copy_ssec(key):
    return {"CopySourceSSECustomerAlgorithm": "AES256", "CopySourceSSECustomerKey": key}


def code(e):
    return e.value.response["Error"]["Code"], e.value.response["ResponseMetadata"]["HTTPStatusCode"]


def data(n, seed=1):
    # Distinct, incompressible-looking bytes (a repeating pattern would hide a swapped segment).
    out = bytearray()
    c = seed.to_bytes(8, "little")
    while len(out) < n:
        c = hashlib.sha256(c).digest()
        out += c
    return bytes(out[:n])


def object_files(s):
    root = os.path.join(s.data_dir, "objects")
    out = []
    for d, _, files in os.walk(root):
        out += [os.path.join(d, f) for f in files]
    return out


# ---- SSE-C ----

def test_ssec_round_trip_and_ranges(s3, bucket):
    key = os.urandom(32)
    body = data(3 * SEG + 123)
    r = s3.put_object(Bucket=bucket, Key="c", Body=body, **ssec(key))
    md5 = base64.b64encode(hashlib.md5(key).digest()).decode()
    assert r["SSECustomerAlgorithm"] == "AES256" and r["SSECustomerKeyMD5"] == md5
    # S3 does not reveal an SSE-C object's MD5 as its ETag (SSE-S3's is the MD5).
    assert r["ETag"].strip('"') != md5_hex(body) and len(r["ETag"].strip('"')) == 32
    g = s3.get_object(Bucket=bucket, Key="c", **ssec(key))
    assert g["Body"].read() == body
    assert g["ContentLength"] == len(body) and g["SSECustomerKeyMD5"] == md5
    h = s3.head_object(Bucket=bucket, Key="c", **ssec(key))
    assert h["ContentLength"] == len(body) and h["SSECustomerAlgorithm"] == "AES256"
    lst = s3.list_objects_v2(Bucket=bucket)["Contents"]
    assert [(o["Key"], o["Size"]) for o in lst] == [("c", len(body))]
    # Ranges inside one segment, across one and two boundaries, at the ends, suffixes.
    for a, b in [(0, 0), (10, 20), (SEG - 5, SEG + 5), (SEG, 2 * SEG - 1), (SEG - 1, 2 * SEG + 1),
                 (0, len(body) - 1), (3 * SEG, len(body) - 1), (len(body) - 1, len(body) - 1)]:
        g = s3.get_object(Bucket=bucket, Key="c", Range=f"bytes={a}-{b}", **ssec(key))
        assert g["Body"].read() == body[a:b + 1], (a, b)
        assert g["ContentRange"] == f"bytes {a}-{b}/{len(body)}"
    g = s3.get_object(Bucket=bucket, Key="c", Range="bytes=-70000", **ssec(key))
    assert g["Body"].read() == body[-70000:]
    # An empty object.
    s3.put_object(Bucket=bucket, Key="empty", Body=b"", **ssec(key))
    assert s3.get_object(Bucket=bucket, Key="empty", **ssec(key))["Body"].read() == b""


def test_ssec_refusals(s3, bucket):
    key, other = os.urandom(32), os.urandom(32)
    s3.put_object(Bucket=bucket, Key="c", Body=b"secret bytes", **ssec(key))
    for head, call in ((False, s3.get_object), (True, s3.head_object)):
        # HEAD has no body: boto3 sees only the status.
        with pytest.raises(botocore.exceptions.ClientError) as e:
            call(Bucket=bucket, Key="c")
        assert code(e)[1] == 400 and (head or code(e)[0] == "InvalidRequest")
        with pytest.raises(botocore.exceptions.ClientError) as e:
            call(Bucket=bucket, Key="c", **ssec(other))
        # Another key: 400, as S3 (s3-tests' test_encryption_sse_c_other_key).
        assert code(e)[1] == 400 and (head or code(e)[0] == "InvalidRequest")
    # The key's MD5 is checked.
    bad = base64.b64encode(hashlib.md5(other).digest()).decode()
    with pytest.raises(botocore.exceptions.ClientError) as e:
        # With the MD5 given, botocore sends the key as given: base64 it here.
        s3.put_object(Bucket=bucket, Key="d", Body=b"x", SSECustomerAlgorithm="AES256",
                      SSECustomerKey=base64.b64encode(key).decode(), SSECustomerKeyMD5=bad)
    assert code(e) == ("InvalidArgument", 400)
    assert "MD5" in e.value.response["Error"]["Message"]
    # A key that is not 256 bits, an algorithm that is not AES256.
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.put_object(Bucket=bucket, Key="d", Body=b"x", **ssec(os.urandom(16)))
    assert code(e) == ("InvalidArgument", 400)
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.put_object(Bucket=bucket, Key="d", Body=b"x", SSECustomerAlgorithm="AES128",
                      SSECustomerKey=key)
    assert code(e) == ("InvalidArgument", 400)
    # A key given for a plain object is refused, not ignored.
    s3.put_object(Bucket=bucket, Key="plain", Body=b"p")
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.get_object(Bucket=bucket, Key="plain", **ssec(key))
    assert code(e)[1] == 400
    # Nothing was stored by the refused writes.
    assert sorted(o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]) == ["c", "plain"]


def test_ssec_object_attributes_need_the_key(s3, bucket):
    """GetObjectAttributes of an SSE-C object answers only to its key, as GET and HEAD do."""
    key, other = os.urandom(32), os.urandom(32)
    s3.put_object(Bucket=bucket, Key="c", Body=b"secret bytes", SSECustomerAlgorithm="AES256",
                  SSECustomerKey=key)
    attrs = ["ETag", "ObjectSize"]

    def ssec(k):  # this botocore encodes the key for GetObjectAttributes only as given
        return {"SSECustomerAlgorithm": "AES256",
                "SSECustomerKey": base64.b64encode(k).decode(),
                "SSECustomerKeyMD5": base64.b64encode(hashlib.md5(k).digest()).decode()}
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.get_object_attributes(Bucket=bucket, Key="c", ObjectAttributes=attrs)
    assert code(e) == ("InvalidRequest", 400)
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.get_object_attributes(Bucket=bucket, Key="c", ObjectAttributes=attrs, **ssec(other))
    assert code(e) == ("InvalidRequest", 400)
    got = s3.get_object_attributes(Bucket=bucket, Key="c", ObjectAttributes=attrs, **ssec(key))
    assert got["ObjectSize"] == len(b"secret bytes")
    s3.put_object(Bucket=bucket, Key="plain", Body=b"p")
    assert s3.get_object_attributes(Bucket=bucket, Key="plain",
                                    ObjectAttributes=attrs)["ObjectSize"] == 1


def test_ssec_over_plain_http_refused():
    with WharfServer() as plain:
        c = client(plain)
        c.create_bucket(Bucket="ssehttp")
        with pytest.raises(botocore.exceptions.ClientError) as e:
            c.put_object(Bucket="ssehttp", Key="k", Body=b"x", **ssec(os.urandom(32)))
        assert code(e) == ("InvalidRequest", 400)
        assert "secure connection" in e.value.response["Error"]["Message"]
        assert c.list_objects_v2(Bucket="ssehttp").get("KeyCount") == 0
        # SSE-S3 needs no TLS.
        c.put_object(Bucket="ssehttp", Key="s3", Body=b"y", ServerSideEncryption="AES256")
        g = c.get_object(Bucket="ssehttp", Key="s3")
        assert g["Body"].read() == b"y" and g["ServerSideEncryption"] == "AES256"


# ---- SSE-S3 and KMS ----

def test_sse_s3_round_trip(s3, bucket):
    body = data(2 * SEG + 7, seed=2)
    r = s3.put_object(Bucket=bucket, Key="s", Body=body, ServerSideEncryption="AES256")
    assert r["ServerSideEncryption"] == "AES256"
    assert r["ETag"].strip('"') == md5_hex(body)
    g = s3.get_object(Bucket=bucket, Key="s")
    assert g["ServerSideEncryption"] == "AES256" and g["Body"].read() == body
    assert s3.head_object(Bucket=bucket, Key="s")["ServerSideEncryption"] == "AES256"
    g = s3.get_object(Bucket=bucket, Key="s", Range=f"bytes={SEG - 3}-{SEG + 3}")
    assert g["Body"].read() == body[SEG - 3:SEG + 4]
    # A plain object says nothing of encryption.
    s3.put_object(Bucket=bucket, Key="p", Body=b"plain")
    assert "ServerSideEncryption" not in s3.head_object(Bucket=bucket, Key="p")
    # SSE-C headers on an SSE-S3 object are refused.
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.get_object(Bucket=bucket, Key="s", **ssec(os.urandom(32)))
    assert code(e)[1] == 400


def test_kms_refused(s3, bucket):
    for v in ("aws:kms", "aws:kms:dsse"):
        with pytest.raises(botocore.exceptions.ClientError) as e:
            s3.put_object(Bucket=bucket, Key="k", Body=b"x", ServerSideEncryption=v)
        assert code(e) == ("NotImplemented", 501)
        assert "key management" in e.value.response["Error"]["Message"]
        with pytest.raises(botocore.exceptions.ClientError) as e:
            s3.create_multipart_upload(Bucket=bucket, Key="k", ServerSideEncryption=v)
        assert code(e) == ("NotImplemented", 501)
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.put_object(Bucket=bucket, Key="k", Body=b"x", ServerSideEncryption="AES256",
                      SSEKMSKeyId="some-key")
    assert code(e) == ("NotImplemented", 501)
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.put_object(Bucket=bucket, Key="k", Body=b"x", ServerSideEncryption="DES")
    assert code(e) == ("InvalidArgument", 400)
    assert s3.list_objects_v2(Bucket=bucket).get("KeyCount") == 0


def test_ssec_etag_is_opaque_and_conditions_use_it(s3, bucket):
    key = os.urandom(32)
    body = data(SEG + 77, seed=5)
    e1 = s3.put_object(Bucket=bucket, Key="e", Body=body, **ssec(key))["ETag"]
    assert e1.strip('"') != md5_hex(body)
    # The same bytes under the same key again: another ETag (each object has its own salt).
    e2 = s3.put_object(Bucket=bucket, Key="e2", Body=body, **ssec(key))["ETag"]
    assert e2 != e1 and e2.strip('"') != md5_hex(body)
    # What HEAD, GET and the listing give is the ETag the PUT returned.
    assert s3.head_object(Bucket=bucket, Key="e", **ssec(key))["ETag"] == e1
    assert s3.get_object(Bucket=bucket, Key="e", **ssec(key))["ETag"] == e1
    lst = {o["Key"]: o["ETag"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]}
    assert lst["e"] == e1 and lst["e2"] == e2
    # Conditional reads and writes work against it, and not against the MD5.
    g = s3.get_object(Bucket=bucket, Key="e", IfMatch=e1, **ssec(key))
    assert g["Body"].read() == body
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.get_object(Bucket=bucket, Key="e", IfMatch=md5_hex(body), **ssec(key))
    assert code(e)[1] == 412
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.head_object(Bucket=bucket, Key="e", IfNoneMatch=e1, **ssec(key))
    assert code(e)[1] == 304
    # SSE-S3 keeps the MD5, as S3 does.
    r = s3.put_object(Bucket=bucket, Key="s", Body=body, ServerSideEncryption="AES256")
    assert r["ETag"].strip('"') == md5_hex(body)


# ---- multipart ----

@pytest.mark.parametrize("kind", ["ssec", "sse-s3"])
def test_multipart(s3, bucket, kind):
    key = os.urandom(32)
    create = ssec(key) if kind == "ssec" else {"ServerSideEncryption": "AES256"}
    part_args = ssec(key) if kind == "ssec" else {}
    get_args = ssec(key) if kind == "ssec" else {}
    parts = [data(5 * MIB + 1000, seed=10), data(5 * MIB, seed=11), data(SEG + 9, seed=12)]
    u = s3.create_multipart_upload(Bucket=bucket, Key="m", **create)
    if kind == "sse-s3":
        assert u["ServerSideEncryption"] == "AES256"
    done = []
    # Part numbers with a gap, and part 2 uploaded twice (the second one counts).
    for num, p in [(1, parts[0]), (3, b"replaced"), (3, parts[1]), (7, parts[2])]:
        r = s3.upload_part(Bucket=bucket, Key="m", UploadId=u["UploadId"], PartNumber=num,
                           Body=p, **part_args)
        if num != 3 or p != b"replaced":
            done = [d for d in done if d["PartNumber"] != num]
            done.append({"PartNumber": num, "ETag": r["ETag"]})
    if kind == "ssec":  # a part without the key, or with another one, is refused
        with pytest.raises(botocore.exceptions.ClientError) as e:
            s3.upload_part(Bucket=bucket, Key="m", UploadId=u["UploadId"], PartNumber=9, Body=b"x")
        assert code(e)[1] == 400
        with pytest.raises(botocore.exceptions.ClientError) as e:
            s3.upload_part(Bucket=bucket, Key="m", UploadId=u["UploadId"], PartNumber=9,
                           Body=b"x", **ssec(os.urandom(32)))
        assert code(e)[1] == 400  # another key: 400, as S3
    c = s3.complete_multipart_upload(Bucket=bucket, Key="m", UploadId=u["UploadId"],
                                     MultipartUpload={"Parts": done})
    if kind == "sse-s3":
        assert c["ServerSideEncryption"] == "AES256"
    # The object's ETag is the MD5 of the listed part ETags, -N, in both kinds; SSE-C's part
    # ETags are not the parts' MD5s.
    by_num = {1: parts[0], 3: parts[1], 7: parts[2]}
    for d in done:
        assert (d["ETag"].strip('"') == md5_hex(by_num[d["PartNumber"]])) == (kind == "sse-s3")
    want = hashlib.md5(b"".join(bytes.fromhex(d["ETag"].strip('"'))
                                for d in sorted(done, key=lambda d: d["PartNumber"])))
    assert c["ETag"].strip('"') == f"{want.hexdigest()}-3"
    assert s3.head_object(Bucket=bucket, Key="m", **get_args)["ETag"] == c["ETag"]
    whole = b"".join(parts)
    g = s3.get_object(Bucket=bucket, Key="m", **get_args)
    assert g["ContentLength"] == len(whole) and g["Body"].read() == whole
    b1 = len(parts[0])
    for a, b in [(b1 - 10, b1 + 10), (b1 - SEG, b1 + SEG), (len(whole) - SEG - 20, len(whole) - 1)]:
        g = s3.get_object(Bucket=bucket, Key="m", Range=f"bytes={a}-{b}", **get_args)
        assert g["Body"].read() == whole[a:b + 1], (a, b)
    g = s3.get_object(Bucket=bucket, Key="m", PartNumber=2, **get_args)
    assert g["Body"].read() == parts[1]
    assert s3.list_objects_v2(Bucket=bucket)["Contents"][0]["Size"] == len(whole)
    if kind == "ssec":
        with pytest.raises(botocore.exceptions.ClientError) as e:
            s3.get_object(Bucket=bucket, Key="m")
        assert code(e) == ("InvalidRequest", 400)


# ---- copies ----

def test_copies_between_kinds(s3, bucket):
    k1, k2 = os.urandom(32), os.urandom(32)
    body = data(SEG * 2 + 5, seed=20)
    s3.put_object(Bucket=bucket, Key="src-c", Body=body, **ssec(k1))
    src = {"Bucket": bucket, "Key": "src-c"}
    # SSE-C -> SSE-C under another key, SSE-C -> SSE-S3, SSE-C -> plain.
    e_src = s3.head_object(Bucket=bucket, Key="src-c", **ssec(k1))["ETag"]
    r = s3.copy_object(Bucket=bucket, Key="c2", CopySource=src, **copy_ssec(k1), **ssec(k2))
    assert r["SSECustomerKeyMD5"] == base64.b64encode(hashlib.md5(k2).digest()).decode()
    # Each SSE-C object's ETag is its own, and never the MD5; a plain copy's is the MD5.
    e_c2 = r["CopyObjectResult"]["ETag"]
    assert e_c2 != e_src and e_c2.strip('"') != md5_hex(body)
    assert s3.head_object(Bucket=bucket, Key="c2", **ssec(k2))["ETag"] == e_c2
    assert s3.get_object(Bucket=bucket, Key="c2", **ssec(k2))["Body"].read() == body
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.get_object(Bucket=bucket, Key="c2", **ssec(k1))
    assert code(e)[1] == 400
    r = s3.copy_object(Bucket=bucket, Key="s3", CopySource=src, ServerSideEncryption="AES256",
                       **copy_ssec(k1))
    assert r["ServerSideEncryption"] == "AES256"
    assert s3.get_object(Bucket=bucket, Key="s3")["Body"].read() == body
    r = s3.copy_object(Bucket=bucket, Key="plain", CopySource=src, **copy_ssec(k1))
    assert r["CopyObjectResult"]["ETag"].strip('"') == md5_hex(body)
    g = s3.get_object(Bucket=bucket, Key="plain")
    assert g["Body"].read() == body and "ServerSideEncryption" not in g
    assert g["ETag"].strip('"') == md5_hex(body)
    # SSE-S3 -> SSE-C, plain -> SSE-S3.
    r = s3.copy_object(Bucket=bucket, Key="c3", CopySource={"Bucket": bucket, "Key": "s3"},
                       **ssec(k2))
    assert r["CopyObjectResult"]["ETag"].strip('"') != md5_hex(body)
    assert s3.get_object(Bucket=bucket, Key="c3", **ssec(k2))["Body"].read() == body
    s3.copy_object(Bucket=bucket, Key="s4", CopySource={"Bucket": bucket, "Key": "plain"},
                   ServerSideEncryption="AES256")
    assert s3.get_object(Bucket=bucket, Key="s4")["Body"].read() == body
    # The source's key is needed, and must be the right one; nothing is stored otherwise.
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.copy_object(Bucket=bucket, Key="x", CopySource=src)
    assert code(e)[1] == 400
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.copy_object(Bucket=bucket, Key="x", CopySource=src, **copy_ssec(k2))
    assert code(e)[1] == 400
    # A customer key for a source that has none is refused too.
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.copy_object(Bucket=bucket, Key="x", CopySource={"Bucket": bucket, "Key": "plain"},
                       **copy_ssec(k1))
    assert code(e) == ("InvalidRequest", 400)
    keys = {o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]}
    assert "x" not in keys
    # Onto itself, changing the encryption: allowed.
    s3.copy_object(Bucket=bucket, Key="src-c", CopySource=src, **copy_ssec(k1),
                   ServerSideEncryption="AES256")
    assert s3.get_object(Bucket=bucket, Key="src-c")["Body"].read() == body


def test_upload_part_copy(s3, bucket):
    k1, k2 = os.urandom(32), os.urandom(32)
    body = data(6 * MIB, seed=30)
    s3.put_object(Bucket=bucket, Key="src", Body=body, **ssec(k1))
    u = s3.create_multipart_upload(Bucket=bucket, Key="dst", **ssec(k2))
    src = {"Bucket": bucket, "Key": "src"}
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.upload_part_copy(Bucket=bucket, Key="dst", UploadId=u["UploadId"], PartNumber=1,
                            CopySource=src, **ssec(k2))
    assert code(e)[1] == 400  # the source's key is missing
    p1 = s3.upload_part_copy(Bucket=bucket, Key="dst", UploadId=u["UploadId"], PartNumber=1,
                             CopySource=src, CopySourceRange=f"bytes=0-{5 * MIB - 1}",
                             **copy_ssec(k1), **ssec(k2))
    p2 = s3.upload_part_copy(Bucket=bucket, Key="dst", UploadId=u["UploadId"], PartNumber=2,
                             CopySource=src, CopySourceRange=f"bytes={5 * MIB}-{6 * MIB - 1}",
                             **copy_ssec(k1), **ssec(k2))
    s3.complete_multipart_upload(
        Bucket=bucket, Key="dst", UploadId=u["UploadId"],
        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": p1["CopyPartResult"]["ETag"]},
                                   {"PartNumber": 2, "ETag": p2["CopyPartResult"]["ETag"]}]})
    assert s3.get_object(Bucket=bucket, Key="dst", **ssec(k2))["Body"].read() == body


# ---- what is on disk ----

def test_key_and_plaintext_never_on_disk(srv, s3, bucket):
    key = os.urandom(32)
    marker = b"PLAINTEXT-MARKER-" + os.urandom(8).hex().encode()
    body = marker * 5000
    s3.put_object(Bucket=bucket, Key="c", Body=body, **ssec(key))
    s3.put_object(Bucket=bucket, Key="s", Body=body, ServerSideEncryption="AES256")
    u = s3.create_multipart_upload(Bucket=bucket, Key="m", **ssec(key))
    p = s3.upload_part(Bucket=bucket, Key="m", UploadId=u["UploadId"], PartNumber=1, Body=body,
                       **ssec(key))
    s3.complete_multipart_upload(Bucket=bucket, Key="m", UploadId=u["UploadId"],
                                 MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": p["ETag"]}]})
    needles = [key, base64.b64encode(key), key.hex().encode(), marker[:24]]
    checked = 0
    for d, _, files in os.walk(srv.data_dir):
        for f in files:
            path = os.path.join(d, f)
            if f == "wharfd.log" or not os.path.isfile(path):
                continue
            blob = open(path, "rb").read()
            checked += 1
            for n in needles:
                assert n not in blob, f"{n[:8]!r}... found in {path}"
    assert checked >= 2  # at least meta.db and object files
    assert any(f.endswith("meta.db") for _, _, fs in os.walk(srv.data_dir) for f in fs)
    # Stored bytes are larger than the plaintext by the header and the tags.
    for k in ("c", "s"):
        assert s3.head_object(Bucket=bucket, Key=k, **(ssec(key) if k == "c" else {}))[
            "ContentLength"] == len(body)


def test_corruption_detected(srv, s3, bucket):
    key = os.urandom(32)
    body = data(3 * SEG, seed=40)
    before = set(object_files(srv))
    s3.put_object(Bucket=bucket, Key="c", Body=body, **ssec(key))
    new = sorted(set(object_files(srv)) - before)
    assert len(new) == 1
    path = new[0]
    assert os.path.getsize(path) == 16 + len(body) + 3 * 16
    # Flip one bit in the second segment's ciphertext.
    with open(path, "r+b") as f:
        at = 16 + (SEG + 16) + 1000
        f.seek(at)
        b = f.read(1)
        f.seek(at)
        f.write(bytes([b[0] ^ 0x01]))
    # The first segment is intact and is served.
    g = s3.get_object(Bucket=bucket, Key="c", Range=f"bytes=0-{SEG - 1}", **ssec(key))
    assert g["Body"].read() == body[:SEG]
    # A range starting in the damaged segment fails before its header.
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.get_object(Bucket=bucket, Key="c", Range=f"bytes={SEG}-{SEG + 10}", **ssec(key))
    assert code(e)[1] == 500
    # The whole object: the header went out with the first segment; the stream stops before
    # the damaged one, never serving its bytes.
    got = b""
    with pytest.raises((botocore.exceptions.ClientError, botocore.exceptions.ResponseStreamingError,
                        botocore.exceptions.IncompleteReadError, ConnectionError)):
        g = s3.get_object(Bucket=bucket, Key="c", **ssec(key))
        got = g["Body"].read()
        assert len(got) == len(body)  # never reached: a short body raises in read()
    assert got == b"" or body[SEG:2 * SEG] not in got
    assert srv.alive()


# ---- aws CLI ----

def test_awscli_ssec_round_trip(srv, bucket, tmp_path):
    key = os.urandom(32)
    # aws s3 cp --sse-c-key takes the key as text: 32 printable bytes.
    key = base64.b64encode(key)[:32]
    src = tmp_path / "in.bin"
    src.write_bytes(data(200000, seed=50))
    env = srv.client_env()
    env.update({"AWS_CONFIG_FILE": str(tmp_path / "none"), "AWS_PAGER": "",
                "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none")})
    base = [AWS, "--endpoint-url", srv.endpoint, "--ca-bundle", srv.tls.ca, "s3", "cp",
            "--sse-c", "AES256", "--sse-c-key", key.decode()]
    r = subprocess.run(base + [str(src), f"s3://{bucket}/cli"], env=env, capture_output=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "out.bin"
    r = subprocess.run(base + [f"s3://{bucket}/cli", str(out)], env=env, capture_output=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert out.read_bytes() == src.read_bytes()
    # Without the key the CLI's download fails.
    r = subprocess.run([AWS, "--endpoint-url", srv.endpoint, "--ca-bundle", srv.tls.ca, "s3",
                        "cp", f"s3://{bucket}/cli", str(tmp_path / "nokey.bin")], env=env,
                       capture_output=True, timeout=120)
    assert r.returncode != 0 and not (tmp_path / "nokey.bin").exists()


# ---- the bucket's default encryption ----

def test_bucket_default_encryption(s3, bucket):
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.get_bucket_encryption(Bucket=bucket)
    assert code(e) == ("ServerSideEncryptionConfigurationNotFoundError", 404)
    s3.put_object(Bucket=bucket, Key="before", Body=b"b")
    cfg = {"Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]}
    s3.put_bucket_encryption(Bucket=bucket, ServerSideEncryptionConfiguration=cfg)
    got = s3.get_bucket_encryption(Bucket=bucket)["ServerSideEncryptionConfiguration"]
    assert got["Rules"][0]["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256"
    # Writes that name no encryption are SSE-S3 now: PUT, multipart, copy.
    r = s3.put_object(Bucket=bucket, Key="after", Body=b"a" * 100000)
    assert r["ServerSideEncryption"] == "AES256"
    assert s3.head_object(Bucket=bucket, Key="after")["ServerSideEncryption"] == "AES256"
    assert s3.get_object(Bucket=bucket, Key="after")["Body"].read() == b"a" * 100000
    assert "ServerSideEncryption" not in s3.head_object(Bucket=bucket, Key="before")
    u = s3.create_multipart_upload(Bucket=bucket, Key="mp")
    assert u["ServerSideEncryption"] == "AES256"
    p = s3.upload_part(Bucket=bucket, Key="mp", UploadId=u["UploadId"], PartNumber=1, Body=b"m")
    assert p["ServerSideEncryption"] == "AES256"
    s3.complete_multipart_upload(Bucket=bucket, Key="mp", UploadId=u["UploadId"],
                                 MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": p["ETag"]}]})
    assert s3.get_object(Bucket=bucket, Key="mp")["ServerSideEncryption"] == "AES256"
    s3.copy_object(Bucket=bucket, Key="copy", CopySource={"Bucket": bucket, "Key": "before"})
    assert s3.head_object(Bucket=bucket, Key="copy")["ServerSideEncryption"] == "AES256"
    # An explicit SSE-C write still takes the customer's key.
    key = os.urandom(32)
    s3.put_object(Bucket=bucket, Key="c", Body=b"c", **ssec(key))
    with pytest.raises(botocore.exceptions.ClientError):
        s3.get_object(Bucket=bucket, Key="c")
    # aws:kms is refused; a malformed document names its fault; the default is kept.
    kms = {"Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "aws:kms",
                                                            "KMSMasterKeyID": "k"}}]}
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.put_bucket_encryption(Bucket=bucket, ServerSideEncryptionConfiguration=kms)
    assert code(e) == ("NotImplemented", 501)
    # Delete: new writes are plain again; what was written stays encrypted.
    s3.delete_bucket_encryption(Bucket=bucket)
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.get_bucket_encryption(Bucket=bucket)
    assert code(e)[1] == 404
    assert "ServerSideEncryption" not in s3.put_object(Bucket=bucket, Key="plain2", Body=b"p")
    assert s3.head_object(Bucket=bucket, Key="after")["ServerSideEncryption"] == "AES256"


def test_bucket_encryption_malformed():
    from s3raw import S3Raw
    with WharfServer() as plain:  # no key travels: plain HTTP is fine
        client(plain).create_bucket(Bucket="ssexml")
        raw = S3Raw(plain.endpoint)
        for doc, what in [
                (b"<ServerSideEncryptionConfiguration><Rule><Nope/></Rule>"
                 b"</ServerSideEncryptionConfiguration>", "unknown element"),
                (b"<ServerSideEncryptionConfiguration><Rule><ApplyServerSideEncryptionByDefault>"
                 b"<SSEAlgorithm>DES</SSEAlgorithm></ApplyServerSideEncryptionByDefault></Rule>"
                 b"</ServerSideEncryptionConfiguration>", "SSEAlgorithm"),
                (b"<ServerSideEncryptionConfiguration/>", "needs a Rule"),
                (b"<Other/>", "not a ServerSideEncryptionConfiguration"),
                (b"<ServerSideEncryptionConfiguration><Rule>", "well-formed")]:
            r = raw.request("PUT", "/ssexml", query={"encryption": ""}, body=doc)
            assert r.status == 400 and r.error_code() == "MalformedXML", (doc, r.status, r.body)
            assert what.encode() in r.body, r.body
        r = raw.request("GET", "/ssexml", query={"encryption": ""})
        assert r.status == 404


# ---- the RDMA path ----

# Well-formed shape (base:size:dialect:...), a dialect no wharf knows: the engine declines it
# whatever the object. Encryption itself is no reason to decline (the transfers themselves:
# test_sse_rdma.py); what is checked here is that an encrypted object or target is declined
# only as a plain one is, by the engine, and that a declined PUT stores nothing.
TOKEN = "0x7f0000001000:4096:nosuch9:shm:00:00"


def assert_engine_decline(r):
    assert r.status == 501 and r.headers.get("x-amz-rdma-reply") == "501", r
    msg = r.headers.get("x-amz-error-message", "")
    assert "nosuch9" in msg and "encrypt" not in msg, msg
    assert r.body == b""


def test_rdma_on_encrypted_objects_declined_only_by_the_engine():
    from s3raw import S3Raw, UNSIGNED
    with WharfServer(providers="none") as plain:
        c = client(plain)
        c.create_bucket(Bucket="sserdma")
        c.put_object(Bucket="sserdma", Key="enc", Body=b"e" * 4096, ServerSideEncryption="AES256")
        raw = S3Raw(plain.endpoint)
        assert_engine_decline(raw.request("GET", "/sserdma/enc",
                                          headers={"x-amz-rdma-token": TOKEN}))
        assert_engine_decline(raw.request(
            "PUT", "/sserdma/new", payload_hash=UNSIGNED,
            headers={"x-amz-rdma-token": TOKEN, "x-amz-server-side-encryption": "AES256"}))
        c.put_bucket_encryption(Bucket="sserdma", ServerSideEncryptionConfiguration={
            "Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]})
        assert_engine_decline(raw.request("PUT", "/sserdma/new", payload_hash=UNSIGNED,
                                          headers={"x-amz-rdma-token": TOKEN}))
        keys = [o["Key"] for o in c.list_objects_v2(Bucket="sserdma").get("Contents", [])]
        assert keys == ["enc"]


def test_rdma_upload_part_of_encrypted_upload_declined_only_by_the_engine():
    from s3raw import S3Raw, UNSIGNED
    with WharfServer(providers="none") as plain:
        c = client(plain)
        c.create_bucket(Bucket="ssempr")
        u = c.create_multipart_upload(Bucket="ssempr", Key="m", ServerSideEncryption="AES256")
        r = S3Raw(plain.endpoint).request(
            "PUT", "/ssempr/m", query={"partNumber": "1", "uploadId": u["UploadId"]},
            payload_hash=UNSIGNED, headers={"x-amz-rdma-token": TOKEN})
        assert_engine_decline(r)
        assert not c.list_parts(Bucket="ssempr", Key="m", UploadId=u["UploadId"]).get("Parts")


def test_post_object_encrypted():
    """PostObject: the form's x-amz-server-side-encryption field, and the bucket's default."""
    import http.client
    import urllib.parse
    import uuid

    def post(c, bucket, key, data, fields):
        p = c.generate_presigned_post(bucket, key, Fields=dict(fields),
                                      Conditions=[{k: v} for k, v in fields.items()])
        b = "----sse" + uuid.uuid4().hex
        parts = [f'--{b}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode()
                 for k, v in p["fields"].items()]
        parts.append(f'--{b}\r\nContent-Disposition: form-data; name="file"; filename="f"\r\n'
                     f'Content-Type: application/octet-stream\r\n\r\n'.encode() + data + b"\r\n")
        parts.append(f"--{b}--\r\n".encode())
        body = b"".join(parts)
        u = urllib.parse.urlsplit(p["url"])
        h = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
        try:
            h.request("POST", u.path, body, {"Content-Type": f"multipart/form-data; boundary={b}"})
            r = h.getresponse()
            return r.status, r.read()
        finally:
            h.close()

    with WharfServer() as plain:
        c = boto3.client("s3", endpoint_url=plain.endpoint, aws_access_key_id=ACCESS_KEY,
                         aws_secret_access_key=SECRET_KEY, region_name=REGION,
                         config=Config(s3={"addressing_style": "path"}, signature_version="s3v4",
                                       retries={"max_attempts": 1}))
        c.create_bucket(Bucket="ssepost")
        st, body = post(c, "ssepost", "f1", b"form bytes", {"x-amz-server-side-encryption": "AES256"})
        assert st == 204, body
        g = c.get_object(Bucket="ssepost", Key="f1")
        assert g["ServerSideEncryption"] == "AES256" and g["Body"].read() == b"form bytes"
        st, body = post(c, "ssepost", "f2", b"x", {"x-amz-server-side-encryption": "aws:kms"})
        assert st == 501, body
        c.put_bucket_encryption(Bucket="ssepost", ServerSideEncryptionConfiguration={
            "Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]})
        st, body = post(c, "ssepost", "f3", b"by default", {})
        assert st == 204, body
        assert c.head_object(Bucket="ssepost", Key="f3")["ServerSideEncryption"] == "AES256"
        keys = sorted(o["Key"] for o in c.list_objects_v2(Bucket="ssepost")["Contents"])
        assert keys == ["f1", "f3"]


def test_versions_keep_their_encryption(s3, bucket):
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    k1 = os.urandom(32)
    v1 = s3.put_object(Bucket=bucket, Key="v", Body=b"one" * 30000, **ssec(k1))["VersionId"]
    v2 = s3.put_object(Bucket=bucket, Key="v", Body=b"two", ServerSideEncryption="AES256")[
        "VersionId"]
    v3 = s3.put_object(Bucket=bucket, Key="v", Body=b"three")["VersionId"]
    assert s3.get_object(Bucket=bucket, Key="v")["Body"].read() == b"three"
    g = s3.get_object(Bucket=bucket, Key="v", VersionId=v1, **ssec(k1))
    assert g["Body"].read() == b"one" * 30000
    with pytest.raises(botocore.exceptions.ClientError) as e:
        s3.get_object(Bucket=bucket, Key="v", VersionId=v1)
    assert code(e)[1] == 400
    g = s3.get_object(Bucket=bucket, Key="v", VersionId=v2)
    assert g["ServerSideEncryption"] == "AES256" and g["Body"].read() == b"two"
    # Removing the current version promotes the SSE-S3 one, still encrypted.
    s3.delete_object(Bucket=bucket, Key="v", VersionId=v3)
    g = s3.get_object(Bucket=bucket, Key="v")
    assert g["ServerSideEncryption"] == "AES256" and g["Body"].read() == b"two"
    for v in (v1, v2):
        s3.delete_object(Bucket=bucket, Key="v", VersionId=v)
