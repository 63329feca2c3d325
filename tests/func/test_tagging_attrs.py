# SPDX-License-Identifier: Apache-2.0
"""Object tagging, GetObjectAttributes and ?partNumber against a real wharfd (boto3, signed raw
requests where boto3 cannot say it):

- Put/Get/DeleteObjectTagging, per version; x-amz-tagging on PutObject, CreateMultipartUpload
  and CopyObject (x-amz-tagging-directive COPY/REPLACE); x-amz-tagging-count on GET/HEAD;
  S3's limits (10 tags, keys 128 and values 256 characters, unique keys, no aws: prefix) with
  InvalidTag;
- GetObjectAttributes: ETag, Checksum, ObjectParts (paged by MaxParts/PartNumberMarker),
  StorageClass, ObjectSize, of a version too;
- GET and HEAD ?partNumber=N of a multipart object: that part's bytes (206, Content-Range,
  x-amz-mp-parts-count), 400 InvalidPart past the last part (as S3).
"""
import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from s3raw import S3Raw
from wharfd import ACCESS_KEY, REGION, SECRET_KEY, md5_hex, unique_bucket

MIB = 1024 * 1024


@pytest.fixture(scope="module")
def s3(wharfd):
    return boto3.session.Session().client(
        "s3", endpoint_url=wharfd.endpoint, aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY, region_name=REGION,
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                      signature_version="s3v4"))


@pytest.fixture()
def bucket(s3):
    b = unique_bucket("tag")
    s3.create_bucket(Bucket=b)
    return b


def code(e):
    return e.value.response["Error"]["Code"]


def tagset(d):
    return {t["Key"]: t["Value"] for t in d}


def test_put_get_delete_tagging(s3, bucket):
    s3.put_object(Bucket=bucket, Key="k", Body=b"x")
    assert s3.get_object_tagging(Bucket=bucket, Key="k")["TagSet"] == []
    tags = [{"Key": "project", "Value": "wharf"}, {"Key": "a b/c", "Value": "é=&?"},
            {"Key": "empty", "Value": ""}]
    s3.put_object_tagging(Bucket=bucket, Key="k", Tagging={"TagSet": tags})
    assert tagset(s3.get_object_tagging(Bucket=bucket, Key="k")["TagSet"]) == tagset(tags)
    assert s3.head_object(Bucket=bucket, Key="k")["ResponseMetadata"]["HTTPHeaders"][
        "x-amz-tagging-count"] == "3"
    assert s3.get_object(Bucket=bucket, Key="k")["TagCount"] == 3
    s3.delete_object_tagging(Bucket=bucket, Key="k")
    assert s3.get_object_tagging(Bucket=bucket, Key="k")["TagSet"] == []
    assert "TagCount" not in s3.get_object(Bucket=bucket, Key="k")
    with pytest.raises(ClientError) as e:
        s3.get_object_tagging(Bucket=bucket, Key="missing")
    assert code(e) == "NoSuchKey"


@pytest.mark.parametrize("tags,why", [
    ([{"Key": f"k{i}", "Value": "v"} for i in range(11)], "greater than 10"),
    ([{"Key": "k" * 129, "Value": "v"}], "TagKey"),
    ([{"Key": "k", "Value": "v" * 257}], "TagValue"),
    ([{"Key": "dup", "Value": "1"}, {"Key": "dup", "Value": "2"}], "same key"),
    ([{"Key": "aws:x", "Value": "1"}], "aws:"),
])
def test_tag_limits(s3, bucket, tags, why):
    s3.put_object(Bucket=bucket, Key="lim", Body=b"x")
    with pytest.raises(ClientError) as e:
        s3.put_object_tagging(Bucket=bucket, Key="lim", Tagging={"TagSet": tags})
    assert code(e) == "InvalidTag" and why in e.value.response["Error"]["Message"]
    # Exactly at the limits is fine (128 and 256 characters, multi-byte ones too).
    ok = [{"Key": "é" * 128, "Value": "ü" * 256}] + [{"Key": f"k{i}", "Value": ""}
                                                     for i in range(9)]
    s3.put_object_tagging(Bucket=bucket, Key="lim", Tagging={"TagSet": ok})
    assert len(s3.get_object_tagging(Bucket=bucket, Key="lim")["TagSet"]) == 10


def test_tagging_header_on_writes(s3, bucket):
    s3.put_object(Bucket=bucket, Key="h", Body=b"x", Tagging="a=1&b=two%20words")
    assert tagset(s3.get_object_tagging(Bucket=bucket, Key="h")["TagSet"]) == \
        {"a": "1", "b": "two words"}
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="bad", Body=b"x",
                      Tagging="&".join(f"k{i}=v" for i in range(11)))
    assert code(e) == "InvalidTag"
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="bad", Body=b"x", Tagging="=no-key")
    assert code(e) == "InvalidTag" and "TagKey" in e.value.response["Error"]["Message"]
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="bad", Body=b"x", Tagging="a=%zz")
    assert code(e) == "InvalidArgument"
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="bad")
    # CopyObject copies the tags, or replaces them.
    s3.copy_object(Bucket=bucket, Key="c1", CopySource={"Bucket": bucket, "Key": "h"})
    assert tagset(s3.get_object_tagging(Bucket=bucket, Key="c1")["TagSet"]) == \
        {"a": "1", "b": "two words"}
    s3.copy_object(Bucket=bucket, Key="c2", CopySource={"Bucket": bucket, "Key": "h"},
                   TaggingDirective="REPLACE", Tagging="z=26")
    assert tagset(s3.get_object_tagging(Bucket=bucket, Key="c2")["TagSet"]) == {"z": "26"}
    s3.copy_object(Bucket=bucket, Key="c3", CopySource={"Bucket": bucket, "Key": "h"},
                   TaggingDirective="REPLACE")
    assert s3.get_object_tagging(Bucket=bucket, Key="c3")["TagSet"] == []
    # CreateMultipartUpload's tags are the completed object's.
    up = s3.create_multipart_upload(Bucket=bucket, Key="mp", Tagging="mp=yes")["UploadId"]
    e1 = s3.upload_part(Bucket=bucket, Key="mp", UploadId=up, PartNumber=1,
                        Body=b"p")["ETag"]
    s3.complete_multipart_upload(Bucket=bucket, Key="mp", UploadId=up, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": e1}]})
    assert tagset(s3.get_object_tagging(Bucket=bucket, Key="mp")["TagSet"]) == {"mp": "yes"}


def test_tagging_per_version(s3, bucket):
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    v1 = s3.put_object(Bucket=bucket, Key="v", Body=b"1", Tagging="gen=1")["VersionId"]
    v2 = s3.put_object(Bucket=bucket, Key="v", Body=b"2")["VersionId"]
    assert s3.get_object_tagging(Bucket=bucket, Key="v")["TagSet"] == []
    r = s3.get_object_tagging(Bucket=bucket, Key="v", VersionId=v1)
    assert tagset(r["TagSet"]) == {"gen": "1"} and r["VersionId"] == v1
    s3.put_object_tagging(Bucket=bucket, Key="v", VersionId=v1,
                          Tagging={"TagSet": [{"Key": "old", "Value": "yes"}]})
    assert tagset(s3.get_object_tagging(Bucket=bucket, Key="v", VersionId=v1)["TagSet"]) == \
        {"old": "yes"}
    assert s3.get_object_tagging(Bucket=bucket, Key="v", VersionId=v2)["TagSet"] == []
    s3.delete_object_tagging(Bucket=bucket, Key="v", VersionId=v1)
    assert s3.get_object_tagging(Bucket=bucket, Key="v", VersionId=v1)["TagSet"] == []
    dm = s3.delete_object(Bucket=bucket, Key="v")["VersionId"]
    with pytest.raises(ClientError) as e:
        s3.get_object_tagging(Bucket=bucket, Key="v", VersionId=dm)
    assert code(e) == "MethodNotAllowed"
    with pytest.raises(ClientError) as e:
        s3.put_object_tagging(Bucket=bucket, Key="v", VersionId="0" * 32,
                              Tagging={"TagSet": []})
    assert code(e) == "NoSuchVersion"


def _multipart(s3, bucket, key, sizes):
    up = s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
    parts, datas = [], []
    for n, size in enumerate(sizes, 1):
        d = bytes([n]) * size
        datas.append(d)
        e = s3.upload_part(Bucket=bucket, Key=key, UploadId=up, PartNumber=n, Body=d)["ETag"]
        parts.append({"PartNumber": n, "ETag": e})
    r = s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=up,
                                     MultipartUpload={"Parts": parts})
    return r, datas


def test_get_object_attributes(s3, bucket):
    s3.put_object(Bucket=bucket, Key="one", Body=b"hello")
    a = s3.get_object_attributes(Bucket=bucket, Key="one", ObjectAttributes=[
        "ETag", "Checksum", "ObjectParts", "StorageClass", "ObjectSize"])
    assert a["ETag"] == md5_hex(b"hello") and a["ObjectSize"] == 5
    assert a["StorageClass"] == "STANDARD" and "ObjectParts" not in a
    # (Debian's boto3 predates ChecksumCRC64NVME: read the document itself.)
    r = S3Raw(s3.meta.endpoint_url).request(
        "GET", f"/{bucket}/one", query={"attributes": None},
        headers={"x-amz-object-attributes": "Checksum"})
    assert r.status == 200 and b"<Checksum><ChecksumCRC64NVME>" in r.body, r
    sizes = [5 * MIB, 5 * MIB, 5 * MIB, 123]
    r, _ = _multipart(s3, bucket, "mp", sizes)
    a = s3.get_object_attributes(Bucket=bucket, Key="mp",
                                 ObjectAttributes=["ObjectParts", "ObjectSize", "ETag"])
    assert a["ObjectSize"] == sum(sizes) and f'"{a["ETag"]}"' == r["ETag"]
    op = a["ObjectParts"]
    assert op["TotalPartsCount"] == 4 and not op["IsTruncated"]
    assert [(p["PartNumber"], p["Size"]) for p in op["Parts"]] == list(enumerate(sizes, 1))
    # Paging through the parts.
    seen, marker = [], 0
    for _ in range(10):
        a = s3.get_object_attributes(Bucket=bucket, Key="mp", ObjectAttributes=["ObjectParts"],
                                     MaxParts=3, PartNumberMarker=marker)
        op = a["ObjectParts"]
        seen += [p["PartNumber"] for p in op.get("Parts", [])]
        if not op["IsTruncated"]:
            break
        marker = op["NextPartNumberMarker"]
    assert seen == [1, 2, 3, 4]
    raw = S3Raw(s3.meta.endpoint_url)
    r = raw.request("GET", f"/{bucket}/mp", query={"attributes": None},
                    headers={"x-amz-object-attributes": "ETag,Bogus"})
    assert r.status == 400 and r.error_code() == "InvalidArgument" and b"Bogus" in r.body
    r = raw.request("GET", f"/{bucket}/mp", query={"attributes": None})
    assert r.status == 400 and b"x-amz-object-attributes" in r.body
    # Of one version.
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    v = s3.put_object(Bucket=bucket, Key="one", Body=b"second version")["VersionId"]
    a = s3.get_object_attributes(Bucket=bucket, Key="one", VersionId="null",
                                 ObjectAttributes=["ObjectSize"])
    assert a["ObjectSize"] == 5 and a["VersionId"] == "null"
    a = s3.get_object_attributes(Bucket=bucket, Key="one", VersionId=v,
                                 ObjectAttributes=["ObjectSize"])
    assert a["ObjectSize"] == 14


def test_part_number(s3, bucket):
    sizes = [5 * MIB, 5 * MIB + 7, 99]
    _, datas = _multipart(s3, bucket, "mp", sizes)
    off = 0
    for n, d in enumerate(datas, 1):
        g = s3.get_object(Bucket=bucket, Key="mp", PartNumber=n)
        assert g["ResponseMetadata"]["HTTPStatusCode"] == 206
        assert g["PartsCount"] == 3 and g["ContentLength"] == len(d)
        assert g["ContentRange"] == f"bytes {off}-{off + len(d) - 1}/{sum(sizes)}"
        assert g["Body"].read() == d
        h = s3.head_object(Bucket=bucket, Key="mp", PartNumber=n)
        assert h["ContentLength"] == len(d) and h["PartsCount"] == 3
        off += len(d)
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="mp", PartNumber=4)
    assert code(e) == "InvalidPart"
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    raw = S3Raw(s3.meta.endpoint_url)
    r = raw.request("GET", f"/{bucket}/mp", query={"partNumber": "1"},
                    headers={"Range": "bytes=0-1"})
    assert r.status == 400 and r.error_code() == "InvalidRequest"
    r = raw.request("GET", f"/{bucket}/mp", query={"partNumber": "0"})
    assert r.status == 400 and r.error_code() == "InvalidArgument"
    # A single PUT is its own part 1.
    s3.put_object(Bucket=bucket, Key="single", Body=b"abc")
    assert s3.get_object(Bucket=bucket, Key="single", PartNumber=1)["Body"].read() == b"abc"
    with pytest.raises(ClientError) as e:
        s3.get_object(Bucket=bucket, Key="single", PartNumber=2)
    assert code(e) == "InvalidPart"
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
