# SPDX-License-Identifier: Apache-2.0
"""What wharf does not do is refused, never answered 200 with the work skipped; and the checks
that a request is what it claims, against a real wharfd with boto3 and raw signed requests
(tests/lib/s3raw.py) where boto3 cannot send what is needed.

- SSE-C headers over plain HTTP on PUT, GET, HEAD, CopyObject, CreateMultipartUpload and
  UploadPart: 400 InvalidRequest (the key would travel in clear), nothing stored; SSE-KMS
  (x-amz-server-side-encryption: aws:kms): 501 NotImplemented, nothing stored. (SSE-C over
  https and SSE-S3 are served: tests/func/test_sse.py.)
- Object lock is served now: its refusals are in test_object_lock.py.
- Conditional deletes: DeleteObject with If-Match (412 PreconditionFailed on another ETag, 404
  NoSuchKey on a missing key), x-amz-if-match-size and x-amz-if-match-last-modified-time;
  DeleteObjects' per-key <ETag>.
- A wrong Signature Version 2 (header and presigned query): 403 SignatureDoesNotMatch, never
  served as an anonymous request, even where anonymous reads are allowed.
- A request signed for another region: 400 AuthorizationHeaderMalformed naming the expected
  region (AuthorizationQueryParametersError for a presigned URL); the IAM API takes us-east-1,
  and an empty credential region (an SDK with region_name='').
"""
import hashlib
import urllib.error
import urllib.request

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

import users
from s3raw import S3Raw
from wharfd import ACCESS_KEY, REGION, SECRET_KEY, WharfServer, unique_bucket


def _client(endpoint, region=REGION):
    return boto3.session.Session().client(
        "s3", endpoint_url=endpoint, aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY, region_name=region,
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                      signature_version="s3v4"))


def _code(excinfo):
    return excinfo.value.response["Error"]["Code"]


def _status(excinfo):
    return excinfo.value.response["ResponseMetadata"]["HTTPStatusCode"]


@pytest.fixture(scope="module")
def s3(wharfd):
    return _client(wharfd.endpoint)


@pytest.fixture(scope="module")
def raw(wharfd):
    return S3Raw(wharfd.endpoint)


@pytest.fixture()
def bucket(s3):
    b = unique_bucket("refuse")
    s3.create_bucket(Bucket=b)
    return b


SSEC_KEY = b"k" * 32
SSEC = {"x-amz-server-side-encryption-customer-algorithm": "AES256",
        "x-amz-server-side-encryption-customer-key":
            __import__("base64").b64encode(SSEC_KEY).decode(),
        "x-amz-server-side-encryption-customer-key-md5":
            __import__("base64").b64encode(hashlib.md5(SSEC_KEY).digest()).decode()}


# ---- SSE -------------------------------------------------------------------------------------

def test_sse_c_put_over_http_is_refused_and_nothing_stored(s3, bucket):
    with pytest.raises(ClientError) as ei:
        s3.put_object(Bucket=bucket, Key="secret", Body=b"plaintext",
                      SSECustomerAlgorithm="AES256", SSECustomerKey=SSEC_KEY)
    assert _status(ei) == 400 and _code(ei) == "InvalidRequest"
    assert "secure connection" in ei.value.response["Error"]["Message"]
    with pytest.raises(ClientError) as ei:
        s3.head_object(Bucket=bucket, Key="secret")
    assert _status(ei) == 404


def test_sse_c_over_http_on_reads_copies_and_multipart_is_refused(s3, raw, bucket):
    s3.put_object(Bucket=bucket, Key="plain", Body=b"plain bytes")
    for method, query, extra in [
            ("GET", None, {}), ("HEAD", None, {}),
            ("POST", {"uploads": ""}, {}),
            ("PUT", None, {"x-amz-copy-source": f"/{bucket}/plain"})]:
        r = raw.request(method, f"/{bucket}/plain" if method != "PUT" else f"/{bucket}/copy",
                        query=query, headers={**SSEC, **extra})
        assert r.status == 400, (method, r)
        assert method == "HEAD" or r.error_code() == "InvalidRequest", (method, r)
    r = raw.request("PUT", f"/{bucket}/copy2", headers={
        "x-amz-copy-source": f"/{bucket}/plain",
        **{k.replace("x-amz-", "x-amz-copy-source-"): v for k, v in SSEC.items()}})
    assert r.status == 400 and r.error_code() == "InvalidRequest", r
    up = s3.create_multipart_upload(Bucket=bucket, Key="mp")
    r = raw.request("PUT", f"/{bucket}/mp", query={"partNumber": "1", "uploadId": up["UploadId"]},
                    headers=SSEC, body=b"part")
    assert r.status == 400 and r.error_code() == "InvalidRequest", r
    s3.abort_multipart_upload(Bucket=bucket, Key="mp", UploadId=up["UploadId"])
    # The plain GET still works and nothing was made by the refused writes.
    assert s3.get_object(Bucket=bucket, Key="plain")["Body"].read() == b"plain bytes"
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])]
    assert keys == ["plain"]


@pytest.mark.parametrize("kw", [{"ServerSideEncryption": "aws:kms"},
                                {"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": "k1"}])
def test_sse_kms_is_refused(s3, bucket, kw):
    with pytest.raises(ClientError) as ei:
        s3.put_object(Bucket=bucket, Key="enc", Body=b"x", **kw)
    assert _status(ei) == 501 and _code(ei) == "NotImplemented"
    with pytest.raises(ClientError) as ei:
        s3.create_multipart_upload(Bucket=bucket, Key="enc", **kw)
    assert _status(ei) == 501
    assert not s3.list_objects_v2(Bucket=bucket).get("Contents")
    assert not s3.list_multipart_uploads(Bucket=bucket).get("Uploads")


# ---- conditional deletes ---------------------------------------------------------------------

def test_delete_if_match(s3, raw, bucket):
    etag = s3.put_object(Bucket=bucket, Key="k", Body=b"v1")["ETag"]
    r = raw.request("DELETE", f"/{bucket}/k", headers={"If-Match": '"0123456789abcdef"'})
    assert r.status == 412 and r.error_code() == "PreconditionFailed", r
    assert s3.get_object(Bucket=bucket, Key="k")["Body"].read() == b"v1"
    r = raw.request("DELETE", f"/{bucket}/missing", headers={"If-Match": "*"})
    assert r.status == 404 and r.error_code() == "NoSuchKey", r
    r = raw.request("DELETE", f"/{bucket}/k", headers={"If-Match": etag})
    assert r.status == 204, r
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="k")
    s3.put_object(Bucket=bucket, Key="k2", Body=b"v2")
    r = raw.request("DELETE", f"/{bucket}/k2", headers={"If-Match": "*"})
    assert r.status == 204, r


def test_delete_if_match_size_and_time(s3, raw, bucket):
    s3.put_object(Bucket=bucket, Key="k", Body=b"12345")
    h = s3.head_object(Bucket=bucket, Key="k")
    r = raw.request("DELETE", f"/{bucket}/k", headers={"x-amz-if-match-size": "4"})
    assert r.status == 412, r
    r = raw.request("DELETE", f"/{bucket}/k",
                    headers={"x-amz-if-match-last-modified-time": "Mon, 01 Jan 2001 00:00:00 GMT"})
    assert r.status == 412, r
    r = raw.request("DELETE", f"/{bucket}/k", headers={"x-amz-if-match-size": "five"})
    assert r.status == 400, r
    assert s3.head_object(Bucket=bucket, Key="k")["ContentLength"] == 5
    lm = h["LastModified"].strftime("%a, %d %b %Y %H:%M:%S GMT")
    r = raw.request("DELETE", f"/{bucket}/k", headers={"x-amz-if-match-size": "5",
                                                       "x-amz-if-match-last-modified-time": lm})
    assert r.status == 204, r
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="k")


def test_delete_objects_per_key_etag(s3, raw, bucket):
    e1 = s3.put_object(Bucket=bucket, Key="a", Body=b"a")["ETag"]
    s3.put_object(Bucket=bucket, Key="b", Body=b"b")
    body = (f"<Delete><Object><Key>a</Key><ETag>{e1}</ETag></Object>"
            f"<Object><Key>b</Key><ETag>\"ffffffffffffffffffffffffffffffff\"</ETag></Object>"
            f"</Delete>").encode()
    md5 = __import__("base64").b64encode(hashlib.md5(body).digest()).decode()
    r = raw.request("POST", f"/{bucket}", query={"delete": ""}, body=body,
                    headers={"Content-MD5": md5})
    assert r.status == 200, r
    assert b"<Deleted><Key>a</Key>" in r.body, r.body
    assert b"<Key>b</Key><Code>PreconditionFailed</Code>" in r.body, r.body
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])]
    assert keys == ["b"]


def test_write_if_none_match_etag_is_refused_clearly(s3, raw, bucket):
    r = raw.request("PUT", f"/{bucket}/k", headers={"If-None-Match": '"abc"'}, body=b"x")
    assert r.status == 501 and b"takes only *" in r.body, r
    r = raw.request("PUT", f"/{bucket}/k", headers={"If-None-Match": "*"}, body=b"x")
    assert r.status == 200, r


# ---- signature version 2 ---------------------------------------------------------------------

def test_bad_sigv2_is_refused_not_served_as_anonymous(wharfd, s3, bucket):
    s3.put_object(Bucket=bucket, Key="pub", Body=b"public", ACL="public-read")
    url = f"{wharfd.endpoint}/{bucket}/pub"
    with urllib.request.urlopen(url, timeout=10) as r:  # anonymous read: allowed
        assert r.read() == b"public"
    for req in [urllib.request.Request(
                    url + f"?AWSAccessKeyId={ACCESS_KEY}&Expires=2000000000&Signature=abc%3D"),
                urllib.request.Request(url, headers={"Authorization": f"AWS {ACCESS_KEY}:abc="})]:
        with pytest.raises(urllib.error.HTTPError) as ei:
            urllib.request.urlopen(req, timeout=10)
        body = ei.value.read()
        # A wrong signature, or (the header form) no Date to sign: test_s3_sigv2 signs right.
        assert ei.value.code == 403, body
        assert b"SignatureDoesNotMatch" in body or b"a valid Date" in body, body


# ---- region ----------------------------------------------------------------------------------

def test_request_signed_for_another_region_is_refused(wharfd, s3, bucket):
    other = S3Raw(wharfd.endpoint, region="eu-west-1")
    r = other.request("GET", f"/{bucket}")
    assert r.status == 400 and r.error_code() == "AuthorizationHeaderMalformed", r
    assert (b"<Message>the authorization header is malformed; the region &apos;eu-west-1&apos; "
            b"is wrong; expecting &apos;us-east-1&apos;</Message>") in r.body, r.body
    url = wharfd.endpoint + other.presign("GET", f"/{bucket}")
    with pytest.raises(urllib.error.HTTPError) as ei:
        urllib.request.urlopen(url, timeout=10)
    assert ei.value.code == 400
    body = ei.value.read()
    assert b"AuthorizationQueryParametersError" in body
    assert (b"<Message>the authorization query parameters are malformed; the region "
            b"&apos;eu-west-1&apos; is wrong; expecting &apos;us-east-1&apos;</Message>") in body, \
        body
    with pytest.raises(ClientError) as ei:
        _client(wharfd.endpoint, "eu-west-1").list_objects_v2(Bucket=bucket)
    assert _code(ei) == "AuthorizationHeaderMalformed"
    assert S3Raw(wharfd.endpoint).request("GET", f"/{bucket}").status == 200


def test_iam_takes_us_east_1_on_a_server_of_another_region():
    srv = WharfServer(extra_args=["--region", "eu-central-1"])
    srv.start()
    try:
        iam = users.client(srv, ACCESS_KEY, SECRET_KEY, "iam")  # signs for us-east-1
        iam.create_user(UserName="region-u")
        assert [u["UserName"] for u in iam.list_users()["Users"]] == ["region-u"]
        r = S3Raw(srv.endpoint).request("GET", "/")  # S3 signed for us-east-1: refused
        assert r.status == 400 and b"expecting &apos;eu-central-1&apos;" in r.body, r
        r = S3Raw(srv.endpoint, region="eu-central-1").request("GET", "/")
        assert r.status == 200, r
    finally:
        assert srv.stop() == 0
        srv.cleanup()


def test_iam_takes_an_empty_credential_region(wharfd):
    """An SDK configured with region_name='' signs IAM requests for an empty region (IAM is
    global); S3 still needs one. Signed by botocore's own SigV4 signer."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    def send(service, url, body):
        req = AWSRequest("POST" if body else "GET", url, data=body,
                         headers={"Content-Type": "application/x-www-form-urlencoded"}
                         if body else {})
        SigV4Auth(Credentials(ACCESS_KEY, SECRET_KEY), service, "").add_auth(req)
        r = urllib.request.Request(req.url, data=req.body or None, headers=dict(req.headers),
                                   method=req.method)
        try:
            with urllib.request.urlopen(r, timeout=10) as resp:
                return resp.status, resp.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    st, body = send("iam", wharfd.endpoint + "/", b"Action=ListUsers&Version=2010-05-08")
    assert st == 200 and b"<ListUsersResult>" in body, (st, body[:300])
    st, body = send("s3", wharfd.endpoint + "/", None)
    assert st == 400 and b"region" in body, (st, body[:300])
