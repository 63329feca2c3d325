# SPDX-License-Identifier: Apache-2.0
"""AWS Signature Version 2 against a real wharfd: botocore's HmacV1 signer (signature_version
"s3"), its V2 presigned URLs ("s3-query"), Debian's s3cmd with --signature-v2, a V2-signed POST
form, and raw requests whose V2 signatures are computed here (header and query forms,
sub-resources, a wrong signature, an unknown key, a malformed header, a skewed or unparsable
date, an expired URL). An IAM user signing with V2 is authorised like one signing with V4.
A server started with --sigv2 off refuses all three forms with 400 naming the setting."""
import base64
import email.utils
import hashlib
import hmac
import http.client
import json
import re
import subprocess
import time
import urllib.parse
import uuid

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

import users
from wharfd import ACCESS_KEY, REGION, SECRET_KEY, WharfServer, unique_bucket


def v2_client(endpoint, access_key=ACCESS_KEY, secret_key=SECRET_KEY):
    return boto3.session.Session().client(
        "s3", endpoint_url=endpoint, aws_access_key_id=access_key,
        aws_secret_access_key=secret_key, region_name=REGION,
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                      signature_version="s3"))


def v4_client(endpoint):
    return boto3.session.Session().client(
        "s3", endpoint_url=endpoint, aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY, region_name=REGION,
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                      signature_version="s3v4"))


def sign(secret, sts):
    return base64.b64encode(hmac.new(secret.encode(), sts.encode(), hashlib.sha1).digest()).decode()


def http_date(t=None):
    return email.utils.formatdate(t if t is not None else time.time(), usegmt=True)


def request(srv, method, path, headers=None, body=b""):
    c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=30)
    try:
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        c.close()


def code(body):
    m = re.search(rb"<Code>(.*?)</Code>", body)
    return m.group(1).decode() if m else None


def signed_headers(method, path, secret=SECRET_KEY, key=ACCESS_KEY, date=None, extra=None,
                   resource=None, sig=None):
    """Headers of a V2 header-signed request, computed here from AWS's documented rules."""
    h = {"Date": date or http_date()}
    h.update(extra or {})
    amz = sorted((k.lower(), v.strip()) for k, v in h.items() if k.lower().startswith("x-amz-"))
    date_line = "" if any(k == "x-amz-date" for k, _ in amz) else h["Date"]
    sts = (f"{method}\n{h.get('Content-MD5', '')}\n{h.get('Content-Type', '')}\n{date_line}\n" +
           "".join(f"{k}:{v}\n" for k, v in amz) + (resource or path))
    h["Authorization"] = f"AWS {key}:{sig or sign(secret, sts)}"
    return h


@pytest.fixture(scope="module")
def srv():
    s = WharfServer()
    s.start()
    yield s
    rc = s.stop()
    s.cleanup()
    assert rc == 0


@pytest.fixture(scope="module")
def bucket(srv):
    b = unique_bucket("sigv2")
    v4_client(srv.endpoint).create_bucket(Bucket=b)
    return b


def test_boto3_hmacv1_roundtrip(srv):
    s3 = v2_client(srv.endpoint)
    b = unique_bucket("sigv2-boto")
    s3.create_bucket(Bucket=b)
    s3.put_object(Bucket=b, Key="dir/a b+c.txt", Body=b"hello v2", ContentType="text/plain",
                  Metadata={"colour": "blue"})
    got = s3.get_object(Bucket=b, Key="dir/a b+c.txt")
    assert got["Body"].read() == b"hello v2"
    assert got["Metadata"] == {"colour": "blue"}
    # Sub-resources are in the string to sign: ?acl, ?versioning, ?uploads/uploadId/partNumber.
    s3.put_object_acl(Bucket=b, Key="dir/a b+c.txt", ACL="public-read")
    assert s3.get_object_acl(Bucket=b, Key="dir/a b+c.txt")["Grants"]
    s3.get_bucket_versioning(Bucket=b)
    up = s3.create_multipart_upload(Bucket=b, Key="mpu")
    p = s3.upload_part(Bucket=b, Key="mpu", UploadId=up["UploadId"], PartNumber=1, Body=b"x" * 10)
    s3.complete_multipart_upload(Bucket=b, Key="mpu", UploadId=up["UploadId"],
                                 MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": p["ETag"]}]})
    # response-* overrides are signed sub-resources too.
    r = s3.get_object(Bucket=b, Key="mpu", ResponseContentType="application/x-test")
    assert r["ContentType"] == "application/x-test"
    keys = [o["Key"] for o in s3.list_objects(Bucket=b, Prefix="dir/")["Contents"]]
    assert keys == ["dir/a b+c.txt"]
    s3.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "dir/a b+c.txt"}, {"Key": "mpu"}]})
    s3.delete_bucket(Bucket=b)


def test_boto3_presigned_v2_url(srv, bucket):
    s3 = v2_client(srv.endpoint)
    s3.put_object(Bucket=bucket, Key="pre", Body=b"presigned")
    url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "pre"},
                                    ExpiresIn=300)
    q = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)
    assert "AWSAccessKeyId" in q and "Signature" in q and "Expires" in q, url
    u = urllib.parse.urlsplit(url)
    st, _, body = request(srv, "GET", f"{u.path}?{u.query}")
    assert st == 200 and body == b"presigned"
    # The signature binds the key: the same query on another key is refused.
    st, _, body = request(srv, "GET", f"/{bucket}/other?{u.query}")
    assert st == 403 and code(body) == "SignatureDoesNotMatch", body


def test_iam_user_v2_is_authorised_as_itself(srv, bucket):
    u = users.create_user(srv, "v2user-" + uuid.uuid4().hex[:8])
    s3u = v2_client(srv.endpoint, u.access_key, u.secret_key)
    # Authenticated as the user, then authorised: the root's bucket is not the user's.
    with pytest.raises(ClientError) as e:
        s3u.get_object(Bucket=bucket, Key="pre")
    assert e.value.response["Error"]["Code"] == "AccessDenied"
    b = unique_bucket("sigv2-user")
    s3u.create_bucket(Bucket=b)
    s3u.put_object(Bucket=b, Key="k", Body=b"mine")
    assert s3u.get_object(Bucket=b, Key="k")["Body"].read() == b"mine"
    # A wrong secret for the user's key: SignatureDoesNotMatch.
    bad = v2_client(srv.endpoint, u.access_key, u.secret_key[:-1] + "x")
    with pytest.raises(ClientError) as e:
        bad.get_object(Bucket=b, Key="k")
    assert e.value.response["Error"]["Code"] == "SignatureDoesNotMatch"


def test_raw_header_form(srv, bucket):
    path = f"/{bucket}/raw%20key"
    h = signed_headers("PUT", path, extra={"Content-Type": "text/plain",
                                           "x-amz-meta-Note": "  spaced  ",
                                           "X-Amz-Acl": "private"})
    st, _, body = request(srv, "PUT", path, h, b"raw")
    assert st == 200, body
    # ?acl is a sub-resource: signed with it.
    h = signed_headers("GET", path + "?acl", resource=path + "?acl")
    st, _, body = request(srv, "GET", path + "?acl", h)
    assert st == 200 and b"AccessControlPolicy" in body, body
    # Signed without it, the signature cannot match.
    h = signed_headers("GET", path + "?acl", resource=path)
    st, _, body = request(srv, "GET", path + "?acl", h)
    assert st == 403 and code(body) == "SignatureDoesNotMatch", body
    # x-amz-date replaces Date (its line in the string to sign is then empty).
    h = signed_headers("GET", path, extra={"x-amz-date": http_date()}, date="Mon, 01 Jan 2001 "
                       "00:00:00 GMT")
    st, _, body = request(srv, "GET", path, h)
    assert st == 200 and body == b"raw", body


@pytest.mark.parametrize("case,status,want", [
    ("wrong-signature", 403, "SignatureDoesNotMatch"),
    ("unknown-key", 403, "InvalidAccessKeyId"),
    ("malformed", 400, "InvalidArgument"),
    ("skew-past", 403, "RequestTimeTooSkewed"),
    ("skew-future", 403, "RequestTimeTooSkewed"),
    ("bad-date", 403, "AccessDenied"),
    ("before-epoch", 403, "AccessDenied"),
    ("no-date", 403, "AccessDenied"),
    ("unsigned-amz-header", 403, "SignatureDoesNotMatch"),
])
def test_raw_header_refusals(srv, bucket, case, status, want):
    path = f"/{bucket}/pre"
    if case == "wrong-signature":
        h = signed_headers("GET", path, secret=SECRET_KEY + "x")
    elif case == "unknown-key":
        h = signed_headers("GET", path, key="AKIANOSUCHKEY0000000")
    elif case == "malformed":
        h = {"Date": http_date(), "Authorization": "AWS HAHAHA"}
    elif case == "skew-past":
        h = signed_headers("GET", path, date=http_date(time.time() - 3600))
    elif case == "skew-future":
        h = signed_headers("GET", path, extra={"x-amz-date": http_date(time.time() + 3600)})
    elif case == "bad-date":
        h = signed_headers("GET", path, extra={"x-amz-date": "Bad Date"})
    elif case == "before-epoch":
        h = signed_headers("GET", path, extra={"x-amz-date": "Tue, 07 Jul 1950 21:53:04 GMT"})
    elif case == "no-date":
        h = signed_headers("GET", path)
        del h["Date"]
    else:
        h = signed_headers("GET", path)
        h["x-amz-meta-added"] = "after signing"
    st, _, body = request(srv, "GET", path, h)
    assert (st, code(body)) == (status, want), body


def _presign(method, path, expires, secret=SECRET_KEY, resource=None):
    sts = f"{method}\n\n\n{expires}\n{resource or path}"
    return (f"AWSAccessKeyId={ACCESS_KEY}&Expires={expires}&Signature=" +
            urllib.parse.quote(sign(secret, sts), safe=""))


def test_raw_query_form(srv, bucket):
    path = f"/{bucket}/pre"
    st, _, body = request(srv, "GET", f"{path}?{_presign('GET', path, int(time.time()) + 60)}")
    assert st == 200 and body == b"presigned", body
    # response-content-type is signed (decoded) with the URL.
    exp = int(time.time()) + 60
    q = _presign("GET", path, exp, resource=f"{path}?response-content-type=text/x-y")
    st, h, body = request(srv, "GET", f"{path}?response-content-type=text%2Fx-y&{q}")
    assert st == 200 and h["content-type"] == "text/x-y", body
    # Expired: AccessDenied (S3's answer to an expired V2 URL).
    st, _, body = request(srv, "GET", f"{path}?{_presign('GET', path, int(time.time()) - 5)}")
    assert st == 403 and code(body) == "AccessDenied" and b"expired" in body, body
    # A wrong signature, and an Expires that was changed after signing.
    q = _presign("GET", path, int(time.time()) + 60, secret=SECRET_KEY + "x")
    st, _, body = request(srv, "GET", f"{path}?{q}")
    assert st == 403 and code(body) == "SignatureDoesNotMatch", body
    q = _presign("GET", path, int(time.time()) + 60).replace("Expires=", "Expires=1")
    st, _, body = request(srv, "GET", f"{path}?{q}")
    assert st == 403 and code(body) == "SignatureDoesNotMatch", body


def _post_v2(srv, bucket, key, secret=SECRET_KEY):
    exp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 300))
    policy = base64.b64encode(json.dumps({"expiration": exp, "conditions": [
        {"bucket": bucket}, ["starts-with", "$key", "v2/"], {"acl": "private"},
        ["starts-with", "$Content-Type", "text/"]]}).encode()).decode()
    fields = {"key": key, "AWSAccessKeyId": ACCESS_KEY, "acl": "private", "policy": policy,
              "signature": sign(secret, policy), "Content-Type": "text/plain"}
    b = "----v2form" + uuid.uuid4().hex
    body = b"".join(f'--{b}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode()
                    for k, v in fields.items())
    body += (f'--{b}\r\nContent-Disposition: form-data; name="file"; filename="f.txt"\r\n'
             f'Content-Type: text/plain\r\n\r\n').encode() + b"form body\r\n" + f"--{b}--\r\n".encode()
    return request(srv, "POST", f"/{bucket}",
                   {"Content-Type": f"multipart/form-data; boundary={b}"}, body)


def test_post_form_v2(srv, bucket):
    st, _, body = _post_v2(srv, bucket, "v2/posted")
    assert st == 204, body
    got = v4_client(srv.endpoint).get_object(Bucket=bucket, Key="v2/posted")
    assert got["Body"].read() == b"form body" and got["ContentType"] == "text/plain"
    st, _, body = _post_v2(srv, bucket, "v2/bad", secret=SECRET_KEY + "x")
    assert st == 403 and code(body) == "SignatureDoesNotMatch", body


def test_s3cmd_signature_v2(srv, tmp_path):
    cfg = tmp_path / "s3cfg"
    host = f"127.0.0.1:{srv.port}"
    cfg.write_text(f"""[default]
access_key = {ACCESS_KEY}
secret_key = {SECRET_KEY}
host_base = {host}
host_bucket = {host}
use_https = False
signature_v2 = True
bucket_location = us-east-1
progress_meter = False
""")
    env = srv.client_env()
    env["HOME"] = str(tmp_path)
    b = unique_bucket("sigv2-s3cmd")
    src = tmp_path / "src.bin"
    src.write_bytes(b"s3cmd v2 " * 1000)

    def run(*args):
        r = subprocess.run(["/usr/bin/s3cmd", "-c", str(cfg), "--signature-v2"] + list(args),
                           env=env, capture_output=True, timeout=60)
        assert r.returncode == 0, r.stdout[-1000:] + r.stderr[-2000:]
        return r.stdout.decode()

    run("mb", f"s3://{b}")
    run("put", str(src), f"s3://{b}/s3cmd key")
    assert "s3cmd key" in run("ls", f"s3://{b}")
    run("get", f"s3://{b}/s3cmd key", str(tmp_path / "back.bin"))
    assert (tmp_path / "back.bin").read_bytes() == src.read_bytes()
    run("del", f"s3://{b}/s3cmd key")
    run("rb", f"s3://{b}")


def test_sigv2_off_refuses_all_forms(tmp_path):
    s = WharfServer(extra_args=["--sigv2", "off"])
    s.start()
    try:
        b = unique_bucket("sigv2-off")
        v4_client(s.endpoint).create_bucket(Bucket=b)  # SigV4 still served
        v4_client(s.endpoint).put_object(Bucket=b, Key="pre", Body=b"x")
        path = f"/{b}/pre"
        for p, h in ((path, signed_headers("GET", path)),
                     (f"{path}?{_presign('GET', path, int(time.time()) + 60)}", {})):
            st, _, body = request(s, "GET", p, h)
            assert st == 400 and code(body) == "InvalidRequest" and b"sigv2" in body, body
        st, _, body = _post_v2(s, b, "v2/x")
        assert st == 400 and code(body) == "InvalidRequest" and b"sigv2" in body, body
    finally:
        rc = s.stop()
        s.cleanup()
    assert rc == 0
