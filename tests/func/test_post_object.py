# SPDX-License-Identifier: Apache-2.0
"""POST Object, the browser form upload, against a real wharfd: forms signed by boto3's
generate_presigned_post, sent as multipart/form-data by http.client (in small pieces, so the
server's parser sees boundaries split across reads) and by curl -F, read back with boto3. The
policy's conditions (starts-with, eq, exact match, content-length-range), its expiry, the
signature, fields the policy does not name, the success_action_status and redirect answers,
x-amz-meta-* kept, anonymous forms refused without and allowed with a bucket policy, a
20 MiB file, and boto3's Signature Version 2 form (AWSAccessKeyId, signature)."""
import base64
import hashlib
import hmac
import html
import http.client
import json
import os
import re
import subprocess
import tempfile
import urllib.parse
import uuid

import boto3
import pytest
from botocore.config import Config

from wharfd import ACCESS_KEY, REGION, SECRET_KEY, unique_bucket


def client(endpoint):
    return boto3.session.Session().client(
        "s3", endpoint_url=endpoint, aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY, region_name=REGION,
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                      signature_version="s3v4", connect_timeout=10, read_timeout=60))


def form(fields, data, filename="photo.jpg", file_ctype="application/octet-stream",
         after=None):
    """(content type, body) of a multipart/form-data form: fields in order, then the file,
    then the parts of after (fields S3 ignores)."""
    b = "----wharfform" + uuid.uuid4().hex
    out = []
    for k, v in fields.items():
        out.append(f'--{b}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n'.encode() +
                   v.encode() + b"\r\n")
    out.append(f'--{b}\r\nContent-Disposition: form-data; name="file"; filename="{filename}"'
               f'\r\nContent-Type: {file_ctype}\r\n\r\n'.encode() + data + b"\r\n")
    for k, v in (after or {}).items():
        out.append(f'--{b}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode())
    out.append(f"--{b}--\r\n".encode())
    return f"multipart/form-data; boundary={b}", b"".join(out)


def post(url, ctype, body, piece=7919):
    """(status, headers, body) of a POST sending body in pieces of piece bytes."""
    u = urllib.parse.urlsplit(url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    try:
        c.putrequest("POST", u.path or "/")
        c.putheader("Content-Type", ctype)
        c.putheader("Content-Length", str(len(body)))
        c.endheaders()
        for i in range(0, len(body), piece):
            c.send(body[i:i + piece])
        r = c.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        c.close()


def send(s3, bucket, key, data, fields=None, conditions=None, expires=300, extra=None,
         tamper=None, **kw):
    # (boto3 appends its own conditions to the list it is given: a copy each time)
    p = s3.generate_presigned_post(bucket, key, Fields=dict(fields or {}),
                                   Conditions=list(conditions or []), ExpiresIn=expires)
    f = dict(p["fields"])
    if tamper:
        tamper(f)
    f.update(extra or {})
    ctype, body = form(f, data, **kw)
    return post(p["url"], ctype, body)


def sign_policy(policy_b64, credential):
    """SigV4 POST signature, computed here independently of the server."""
    _, date8, region, service, _ = credential.split("/")
    k = ("AWS4" + SECRET_KEY).encode()
    for part in (date8, region, service, "aws4_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    return hmac.new(k, policy_b64.encode(), hashlib.sha256).hexdigest()


def err(body):
    m = re.search(rb"<Code>(.*?)</Code>.*<Message>(.*?)</Message>", body, re.S)
    assert m, body
    return m.group(1).decode(), html.unescape(m.group(2).decode())


@pytest.fixture(scope="module")
def s3(wharfd):
    return client(wharfd.endpoint)


@pytest.fixture()
def bucket(s3):
    name = unique_bucket("post")
    s3.create_bucket(Bucket=name)
    yield name
    for o in s3.list_objects_v2(Bucket=name).get("Contents", []):
        s3.delete_object(Bucket=name, Key=o["Key"])
    s3.delete_bucket(Bucket=name)


def keys(s3, bucket):
    return [o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])]


def test_presigned_post_roundtrip(s3, bucket):
    data = os.urandom(100_000) + b"\r\n--not-the-boundary\r\n" + os.urandom(1000)
    st, h, body = send(s3, bucket, "a/one.bin", data)
    assert st == 204, body
    assert h["etag"] == '"%s"' % hashlib.md5(data).hexdigest()
    assert h["location"].endswith(f"/{bucket}/a/one.bin")
    got = s3.get_object(Bucket=bucket, Key="a/one.bin")
    assert got["Body"].read() == data
    assert got["ContentType"] == "binary/octet-stream"


def test_filename_substitution_and_starts_with(s3, bucket):
    cond = [["starts-with", "$key", "up/"]]
    st, _, body = send(s3, bucket, "up/${filename}", b"hello", conditions=cond,
                       filename="cat.txt")
    assert st == 204, body
    assert s3.get_object(Bucket=bucket, Key="up/cat.txt")["Body"].read() == b"hello"
    # The policy says up/, the form names another prefix.
    p = s3.generate_presigned_post(bucket, "up/${filename}", Conditions=list(cond))
    f = dict(p["fields"], key="down/x")
    st, _, body = post(p["url"], *form(f, b"x"))
    assert st == 403
    code, msg = err(body)
    assert code == "AccessDenied" and '["starts-with", "$key", "up/"]' in msg, msg
    assert "down/x" not in keys(s3, bucket)


def test_content_length_range(s3, bucket):
    cond = [["content-length-range", 10, 100]]
    assert send(s3, bucket, "r/ok", b"x" * 50, conditions=cond)[0] == 204
    st, _, body = send(s3, bucket, "r/big", b"x" * 101, conditions=cond)
    assert st == 400 and err(body)[0] == "EntityTooLarge", body
    st, _, body = send(s3, bucket, "r/small", b"x" * 9, conditions=cond)
    assert st == 400 and err(body)[0] == "EntityTooSmall", body
    assert keys(s3, bucket) == ["r/ok"]


def test_expired_policy(s3, bucket):
    st, _, body = send(s3, bucket, "late", b"x", expires=-60)
    assert st == 403
    assert err(body) == ("AccessDenied", "Invalid according to Policy: Policy expired.")
    assert keys(s3, bucket) == []


def test_wrong_signature_and_tampered_policy(s3, bucket):
    def bad_sig(f):
        f["x-amz-signature"] = "0" * 64
    st, _, body = send(s3, bucket, "sig", b"x", tamper=bad_sig)
    assert st == 403 and err(body)[0] == "SignatureDoesNotMatch", body

    def other_policy(f):  # a wider policy, signature of the old one
        doc = json.loads(base64.b64decode(f["policy"]))
        doc["conditions"] = [c for c in doc["conditions"] if not (isinstance(c, dict) and "key" in c)]
        f["policy"] = base64.b64encode(json.dumps(doc).encode()).decode()
        f["key"] = "elsewhere"
    st, _, body = send(s3, bucket, "sig", b"x", tamper=other_policy)
    assert st == 403 and err(body)[0] == "SignatureDoesNotMatch", body

    def unknown_key(f):
        f["x-amz-credential"] = f["x-amz-credential"].replace(ACCESS_KEY, "NOSUCHKEY")
    st, _, body = send(s3, bucket, "sig", b"x", tamper=unknown_key)
    assert st == 403 and err(body)[0] == "InvalidAccessKeyId", body
    assert keys(s3, bucket) == []


def test_field_not_in_policy(s3, bucket):
    st, _, body = send(s3, bucket, "extra", b"x", extra={"x-amz-meta-sneaky": "1"})
    assert st == 403
    code, msg = err(body)
    assert code == "AccessDenied" and "Extra input fields: x-amz-meta-sneaky" in msg, msg
    # x-ignore-* fields are exempt, and fields after the file are ignored.
    st, _, body = send(s3, bucket, "extra", b"x", extra={"x-ignore-note": "n"},
                       after={"x-amz-meta-late": "1"})
    assert st == 204, body
    assert "late" not in s3.head_object(Bucket=bucket, Key="extra")["Metadata"]


def test_eq_content_type_and_metadata(s3, bucket):
    fields = {"Content-Type": "image/png", "x-amz-meta-owner": "eric"}
    cond = [["eq", "$Content-Type", "image/png"], {"x-amz-meta-owner": "eric"}]
    st, _, body = send(s3, bucket, "img.png", b"\x89PNG", fields=fields, conditions=cond)
    assert st == 204, body
    h = s3.head_object(Bucket=bucket, Key="img.png")
    assert h["ContentType"] == "image/png" and h["Metadata"] == {"owner": "eric"}

    def other_type(f):
        f["Content-Type"] = "text/html"
    st, _, body = send(s3, bucket, "img2.png", b"x", fields=fields, conditions=cond,
                       tamper=other_type)
    assert st == 403
    assert '["eq", "$Content-Type", "image/png"]' in err(body)[1]


def test_acl_tagging_checksum_fields(wharfd, s3, bucket):
    data = b"tagged and public"
    sha = base64.b64encode(hashlib.sha256(data).digest()).decode()
    tagging = ("<Tagging><TagSet><Tag><Key>team</Key><Value>web</Value></Tag></TagSet>"
               "</Tagging>")
    fields = {"acl": "public-read", "tagging": tagging, "x-amz-checksum-sha256": sha}
    cond = [{"acl": "public-read"}, {"tagging": tagging}, {"x-amz-checksum-sha256": sha}]
    st, h, body = send(s3, bucket, "t/obj", data, fields=fields, conditions=cond)
    assert st == 204, body
    assert h["x-amz-checksum-sha256"] == sha
    assert s3.get_object_tagging(Bucket=bucket, Key="t/obj")["TagSet"] == [
        {"Key": "team", "Value": "web"}]
    u = urllib.parse.urlsplit(wharfd.endpoint)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
    c.request("GET", f"/{bucket}/t/obj")  # unsigned: the public-read ACL lets it through
    r = c.getresponse()
    assert (r.status, r.read()) == (200, data)
    c.close()
    # A checksum the file does not have: nothing is stored.
    bad = dict(fields, **{"x-amz-checksum-sha256": base64.b64encode(b"0" * 32).decode()})
    cond2 = [{"acl": "public-read"}, {"tagging": tagging},
             {"x-amz-checksum-sha256": bad["x-amz-checksum-sha256"]}]
    st, _, body = send(s3, bucket, "t/bad", data, fields=bad, conditions=cond2)
    assert st == 400 and err(body)[0] == "BadDigest", body
    # A field that would become a header may not hold a line break.
    st, _, body = send(s3, bucket, "t/crlf", data, fields={"x-amz-meta-a": "x\r\nSet-Cookie: y"},
                       conditions=[["starts-with", "$x-amz-meta-a", ""]])
    assert st == 400 and err(body)[0] == "InvalidArgument", body
    assert sorted(keys(s3, bucket)) == ["t/obj"]


def test_success_action_status_201(s3, bucket):
    data = b"created"
    st, h, body = send(s3, bucket, "k201", data, fields={"success_action_status": "201"},
                       conditions=[{"success_action_status": "201"}])
    assert st == 201, body
    etag = '"%s"' % hashlib.md5(data).hexdigest()
    assert f"<Bucket>{bucket}</Bucket>" in body.decode()
    assert "<Key>k201</Key>" in body.decode()
    assert f"<ETag>{etag}</ETag>" in html.unescape(body.decode())
    assert re.search(rf"<Location>http://[^<]+/{bucket}/k201</Location>", body.decode())
    st, _, body = send(s3, bucket, "k200", data, fields={"success_action_status": "200"},
                       conditions=[{"success_action_status": "200"}])
    assert (st, body) == (200, b"")


def test_redirect(s3, bucket):
    target = "http://app.example/done?x=1"
    st, h, body = send(s3, bucket, "redir key", b"r",
                       fields={"success_action_redirect": target},
                       conditions=[{"success_action_redirect": target}])
    assert st == 303, body
    loc = urllib.parse.urlsplit(h["location"])
    q = urllib.parse.parse_qs(loc.query)
    assert loc.netloc == "app.example" and q["x"] == ["1"]
    assert q["bucket"] == [bucket] and q["key"] == ["redir key"]
    assert q["etag"] == ['"%s"' % hashlib.md5(b"r").hexdigest()]
    assert s3.get_object(Bucket=bucket, Key="redir key")["Body"].read() == b"r"


def test_anonymous_form(wharfd, s3, bucket):
    url = f"{wharfd.endpoint}/{bucket}"
    st, _, body = post(url, *form({"key": "anon/a"}, b"anon"))
    assert st == 403 and err(body)[0] == "AccessDenied", body
    s3.put_bucket_policy(Bucket=bucket, Policy=json.dumps({
        "Version": "2012-10-17", "Statement": [{
            "Effect": "Allow", "Principal": "*", "Action": "s3:PutObject",
            "Resource": f"arn:aws:s3:::{bucket}/anon/*"}]}))
    try:
        st, _, body = post(url, *form({"key": "anon/${filename}"}, b"anon", filename="a"))
        assert st == 204, body
        assert s3.get_object(Bucket=bucket, Key="anon/a")["Body"].read() == b"anon"
        st, _, body = post(url, *form({"key": "other/a"}, b"anon"))
        assert st == 403, body
    finally:
        s3.delete_bucket_policy(Bucket=bucket)


def test_malformed_forms(wharfd, s3, bucket):
    url = f"{wharfd.endpoint}/{bucket}"
    signed = s3.generate_presigned_post(bucket, "m")["fields"]
    ctype, body = form(signed, b"data")
    st, _, b = post(url, ctype, body[:-10])  # no closing boundary
    assert st == 400 and err(b)[0] == "MalformedPOSTRequest", b
    st, _, b = post(url, "application/x-www-form-urlencoded", b"key=m")
    assert st == 400 and err(b)[0] == "MalformedPOSTRequest", b
    st, _, b = post(url, ctype.split(";")[0], body)
    assert st == 400 and "boundary" in err(b)[1], b
    # No file part.
    b2 = ctype.split("boundary=")[1]
    st, _, b = post(url, ctype, f'--{b2}\r\nContent-Disposition: form-data; name="key"\r\n\r\n'
                    f'm\r\n--{b2}--\r\n'.encode())
    assert st == 400 and err(b)[0] == "InvalidArgument", b
    # Not base64; then signed documents that are no policy (signed here, by hand).
    p = s3.generate_presigned_post(bucket, "m")
    st, _, b = post(p["url"], *form(dict(p["fields"], policy="%%%"), b"x"))
    assert st == 400 and err(b)[0] == "InvalidPolicyDocument", b
    for doc in (b"not json", b'{"conditions": []}', b'{"expiration": "2099-01-01T00:00:00Z"}',
                b'{"expiration": "2099-01-01T00:00:00Z", "conditions": [["in", "$key", "m"]]}'):
        f = dict(p["fields"], policy=base64.b64encode(doc).decode())
        f["x-amz-signature"] = sign_policy(f["policy"], f["x-amz-credential"])
        st, _, b = post(p["url"], *form(f, b"x"))
        assert st == 400 and err(b)[0] == "InvalidPolicyDocument", (doc, b)
    # The fields before the file: 20 KB in all.
    st, _, b = post(url, *form(dict(signed, **{"x-ignore-pad": "p" * (21 << 10)}), b"x"))
    assert st == 400 and "exceed 20480 bytes" in err(b)[1], b
    many = dict(signed, **{f"x-ignore-{i}": "" for i in range(501)})
    st, _, b = post(url, *form(many, b"x"))
    assert st == 400 and "more than 500 fields" in err(b)[1], b
    assert keys(s3, bucket) == []
    assert wharfd.alive()


def test_20mib_file_with_curl(s3, bucket):
    p = s3.generate_presigned_post(bucket, "big/${filename}",
                                   Conditions=[["content-length-range", 1, 64 << 20]])
    with tempfile.NamedTemporaryFile(suffix=".bin") as t:
        data = os.urandom(20 << 20)
        t.write(data)
        t.flush()
        args = ["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "120"]
        for k, v in p["fields"].items():
            args += ["--form-string", f"{k}={v}"]
        args += ["-F", f"file=@{t.name};filename=twenty.bin", p["url"]]
        out = subprocess.run(args, capture_output=True, text=True, timeout=150)
    assert out.stdout == "204", out
    got = s3.get_object(Bucket=bucket, Key="big/twenty.bin")
    assert got["ContentLength"] == len(data)
    assert hashlib.md5(got["Body"].read()).digest() == hashlib.md5(data).digest()


def test_user_signed_form_authorized_as_put_object(wharfd, s3, bucket):
    """The form's signer is the principal: s3:PutObject on the key is decided for that user,
    as for their PutObject."""
    import users
    u = users.create_user(wharfd, f"poster-{uuid.uuid4().hex[:10]}")
    us3 = u.boto3(wharfd, signature_version="s3v4")  # (boto3 signs forms v2 otherwise: 501)
    cond = [["starts-with", "$key", ""]]
    # No policy grants the user anything in root's bucket.
    st, _, body = send(us3, bucket, "u/a", b"x", conditions=cond)
    assert st == 403 and err(body)[0] == "AccessDenied", body
    s3.put_bucket_policy(Bucket=bucket, Policy=json.dumps({
        "Version": "2012-10-17", "Statement": [{
            "Effect": "Allow", "Principal": {"AWS": u.arn}, "Action": "s3:PutObject",
            "Resource": f"arn:aws:s3:::{bucket}/u/*"}]}))
    try:
        st, _, body = send(us3, bucket, "u/a", b"mine", conditions=cond)
        assert st == 204, body
        assert s3.get_object(Bucket=bucket, Key="u/a")["Body"].read() == b"mine"
        st, _, body = send(us3, bucket, "x/a", b"x", conditions=cond)
        assert st == 403 and err(body)[0] == "AccessDenied", body
        # A disabled key signs nothing.
        users.disable_key(wharfd, u.access_key)
        st, _, body = send(us3, bucket, "u/b", b"x", conditions=cond)
        assert st == 403 and err(body)[0] == "InvalidAccessKeyId", body
    finally:
        s3.delete_bucket_policy(Bucket=bucket)
        users.delete_user(wharfd, u.name)
    assert sorted(keys(s3, bucket)) == ["u/a"]


def test_signature_v2_form_served(wharfd, s3, bucket):
    v2 = boto3.session.Session().client(
        "s3", endpoint_url=wharfd.endpoint, aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY, region_name=REGION,
        config=Config(s3={"addressing_style": "path"}, signature_version="s3"))
    p = v2.generate_presigned_post(bucket, "v2")
    assert "AWSAccessKeyId" in p["fields"]
    st, _, body = post(p["url"], *form(p["fields"], b"x"))
    assert st == 204, body
    assert keys(s3, bucket) == ["v2"]
    f = dict(p["fields"], signature=p["fields"]["signature"][:-2] + "A=")
    st, _, body = post(p["url"], *form(f, b"x"))
    assert st == 403 and err(body)[0] == "SignatureDoesNotMatch", body
