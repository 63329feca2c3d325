# SPDX-License-Identifier: Apache-2.0
"""Object metadata is kept as S3 keeps it, or refused with a clear error: never dropped or cut.

- An x-amz-meta-* value that is not UTF-8 (latin-1 "caf\\xe9") is kept byte for byte and sent
  back as the same bytes. HTTP header values are octets; S3 returns such values as sent.
- User metadata is limited to 2 KB (names after x-amz-meta- plus values, in bytes), S3's
  limit: one byte more is 400 MetadataTooLarge.
- Content-Type is kept whole, however long the request headers let it be (500 bytes here).

Non-UTF-8 header bytes cannot be signed with tests/lib/s3raw.py (it signs text as UTF-8 while
http.client sends latin-1), so those requests are signed here over the exact wire bytes.
"""
import hashlib
import hmac
import http.client

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from s3raw import UNSIGNED, amz_now, signing_key, uri_encode
from wharfd import ACCESS_KEY, REGION, SECRET_KEY, WharfServer, unique_bucket


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
    return boto3.session.Session().client(
        "s3", endpoint_url=srv.endpoint, aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY, region_name=REGION,
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                      signature_version="s3v4"))


@pytest.fixture()
def bucket(s3):
    b = unique_bucket("meta")
    s3.create_bucket(Bucket=b)
    return b


def bytes_request(srv, method, path, headers, body=b"", query=""):
    """One SigV4 request whose header values are bytes, signed over exactly those bytes.
    Returns (status, {lowercase name: value bytes}, body)."""
    amz_date = amz_now()
    date = amz_date[:8]
    host = srv.endpoint.split("://", 1)[1]
    h = {b"host": host.encode(), b"x-amz-date": amz_date.encode(),
         b"x-amz-content-sha256": UNSIGNED.encode()}
    h.update({k.lower().encode(): v for k, v in headers.items()})
    names = sorted(h)
    canon = b"".join(n + b":" + b" ".join(h[n].strip().split()) + b"\n" for n in names)
    signed = b";".join(names)
    creq = b"\n".join([method.encode(), uri_encode(path).encode(), query.encode(), canon,
                       signed, UNSIGNED.encode()])
    scope = f"{date}/{REGION}/s3/aws4_request"
    sts = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(creq).hexdigest()])
    sig = hmac.new(signing_key(SECRET_KEY, date, REGION), sts.encode(),
                   hashlib.sha256).hexdigest()
    h[b"authorization"] = (f"AWS4-HMAC-SHA256 Credential={ACCESS_KEY}/{scope}, "
                           f"SignedHeaders={signed.decode()}, Signature={sig}").encode()
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=30)
    try:
        url = uri_encode(path) + (f"?{query}" if query else "")
        conn.putrequest(method, url, skip_host=True, skip_accept_encoding=True)
        for k, v in h.items():
            conn.putheader(k.decode(), v)
        conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body or None)
        r = conn.getresponse()
        data = r.read()
        # http.client decodes header bytes as latin-1: encoding them back gives the wire bytes.
        got = {k.lower(): v.encode("latin-1") for k, v in r.getheaders()}
        return r.status, got, data
    finally:
        conn.close()


def test_non_utf8_meta_value_kept_as_sent(srv, s3, bucket):
    st, _, body = bytes_request(srv, "PUT", f"/{bucket}/latin1",
                                {"x-amz-meta-city": b"caf\xe9", "x-amz-meta-plain": b"ok"},
                                body=b"data")
    assert st == 200, body
    for method in ("GET", "HEAD"):
        st, got, _ = bytes_request(srv, method, f"/{bucket}/latin1", {})
        assert st == 200
        assert got.get("x-amz-meta-city") == b"caf\xe9", got
        assert got.get("x-amz-meta-plain") == b"ok"
    # UTF-8 values stay text, and boto3 sees both
    meta = s3.head_object(Bucket=bucket, Key="latin1")["Metadata"]
    assert meta["plain"] == "ok"
    assert meta["city"].encode("latin-1") == b"caf\xe9"


def test_non_utf8_meta_survives_copy_and_multipart(srv, s3, bucket):
    st, _, body = bytes_request(srv, "PUT", f"/{bucket}/src", {"x-amz-meta-k": b"\xff\xfe"},
                                body=b"x")
    assert st == 200, body
    s3.copy_object(Bucket=bucket, Key="dst", CopySource={"Bucket": bucket, "Key": "src"})
    st, got, _ = bytes_request(srv, "HEAD", f"/{bucket}/dst", {})
    assert got.get("x-amz-meta-k") == b"\xff\xfe", got

    st, _, body = bytes_request(srv, "POST", f"/{bucket}/mp", {"x-amz-meta-k": b"\xe9t\xe9"},
                                query="uploads=")
    assert st == 200, body
    upload_id = body.split(b"<UploadId>")[1].split(b"</UploadId>")[0].decode()
    part = s3.upload_part(Bucket=bucket, Key="mp", UploadId=upload_id, PartNumber=1, Body=b"p")
    s3.complete_multipart_upload(Bucket=bucket, Key="mp", UploadId=upload_id,
                                 MultipartUpload={"Parts": [{"PartNumber": 1,
                                                             "ETag": part["ETag"]}]})
    st, got, _ = bytes_request(srv, "HEAD", f"/{bucket}/mp", {})
    assert got.get("x-amz-meta-k") == b"\xe9t\xe9", got


def test_user_metadata_limit_is_2kb(s3, bucket):
    # names (after x-amz-meta-) plus values: 2 + 2046 = 2048 bytes is allowed
    s3.put_object(Bucket=bucket, Key="at-limit", Body=b"x", Metadata={"ab": "v" * 2046})
    meta = s3.head_object(Bucket=bucket, Key="at-limit")["Metadata"]
    assert meta == {"ab": "v" * 2046}
    with pytest.raises(ClientError) as ei:
        s3.put_object(Bucket=bucket, Key="over", Body=b"x",
                      Metadata={"ab": "v" * 1000, "cd": "w" * 1045})
    assert ei.value.response["Error"]["Code"] == "MetadataTooLarge"
    assert ei.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert "2049" in ei.value.response["Error"]["Message"]
    with pytest.raises(ClientError) as ei:
        s3.head_object(Bucket=bucket, Key="over")
    assert ei.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404
    # the same limit on the other ways metadata arrives
    s3.put_object(Bucket=bucket, Key="src", Body=b"x")
    for call in (lambda: s3.create_multipart_upload(Bucket=bucket, Key="mp",
                                                    Metadata={"k": "v" * 2048}),
                 lambda: s3.copy_object(Bucket=bucket, Key="dst", MetadataDirective="REPLACE",
                                        CopySource={"Bucket": bucket, "Key": "src"},
                                        Metadata={"k": "v" * 2048})):
        with pytest.raises(ClientError) as ei:
            call()
        assert ei.value.response["Error"]["Code"] == "MetadataTooLarge"


@pytest.mark.parametrize("n", [255, 256, 500, 4000])
def test_long_content_type_kept_whole(s3, bucket, n):
    ct = "application/x-" + "a" * (n - len("application/x-") - len("; q=end")) + "; q=end"
    assert len(ct) == n
    s3.put_object(Bucket=bucket, Key=f"ct{n}", Body=b"x", ContentType=ct)
    assert s3.head_object(Bucket=bucket, Key=f"ct{n}")["ContentType"] == ct
    assert s3.get_object(Bucket=bucket, Key=f"ct{n}")["ContentType"] == ct
    # copied with the object, and replaced by a short one on REPLACE
    s3.copy_object(Bucket=bucket, Key=f"copy{n}", CopySource={"Bucket": bucket, "Key": f"ct{n}"})
    assert s3.head_object(Bucket=bucket, Key=f"copy{n}")["ContentType"] == ct
    s3.copy_object(Bucket=bucket, Key=f"copy{n}", CopySource={"Bucket": bucket, "Key": f"ct{n}"},
                   MetadataDirective="REPLACE", ContentType="text/plain")
    assert s3.head_object(Bucket=bucket, Key=f"copy{n}")["ContentType"] == "text/plain"
    # a response-content-type override still wins
    r = s3.get_object(Bucket=bucket, Key=f"ct{n}", ResponseContentType="image/png")
    assert r["ContentType"] == "image/png"


def test_long_content_type_through_multipart(s3, bucket):
    ct = "text/x-" + "b" * 600
    mp = s3.create_multipart_upload(Bucket=bucket, Key="mpct", ContentType=ct)
    part = s3.upload_part(Bucket=bucket, Key="mpct", UploadId=mp["UploadId"], PartNumber=1,
                          Body=b"p")
    s3.complete_multipart_upload(Bucket=bucket, Key="mpct", UploadId=mp["UploadId"],
                                 MultipartUpload={"Parts": [{"PartNumber": 1,
                                                             "ETag": part["ETag"]}]})
    assert s3.head_object(Bucket=bucket, Key="mpct")["ContentType"] == ct
