"""ACLs against a real wharfd: canned ACLs and x-amz-grant-* on CreateBucket, PutObject,
CopyObject and CreateMultipartUpload; Get/PutBucketAcl and Get/PutObjectAcl with boto3, the
real awscli and s3cmd; each permission allowed and denied for the owner, another user, a
read-only user and an anonymous client (plain urllib, no signature). Users come from
tests/lib/users.py (identity's IAM API)."""
import json
import os
import subprocess
import urllib.error
import urllib.request
import xml.etree.ElementTree as ET

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from wharfd import ACCESS_KEY, REGION, SECRET_KEY, unique_bucket

AWS = "/usr/bin/aws"
S3CMD = "/usr/bin/s3cmd"
ALL_USERS = "http://acs.amazonaws.com/groups/global/AllUsers"
AUTH_USERS = "http://acs.amazonaws.com/groups/global/AuthenticatedUsers"


def client(endpoint, ak=ACCESS_KEY, sk=SECRET_KEY):
    return boto3.session.Session().client(
        "s3", endpoint_url=endpoint, aws_access_key_id=ak, aws_secret_access_key=sk,
        region_name=REGION,
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                      signature_version="s3v4", connect_timeout=10, read_timeout=60))


def code(excinfo):
    return excinfo.value.response["Error"]["Code"]


def anon(method, url, data=None, headers=None):
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def grants(acl):
    """{(grantee, permission)} of a GetBucketAcl/GetObjectAcl answer."""
    out = set()
    for g in acl["Grants"]:
        who = g["Grantee"].get("ID") or g["Grantee"].get("URI")
        out.add((who, g["Permission"]))
    return out


@pytest.fixture(scope="module")
def root(wharfd):
    return client(wharfd.endpoint)


@pytest.fixture(scope="module")
def root_id(root):
    return root.list_buckets()["Owner"]["ID"]


@pytest.fixture()
def bucket(root):
    name = unique_bucket("acl")
    root.create_bucket(Bucket=name)
    yield name
    for o in root.list_objects_v2(Bucket=name).get("Contents", []):
        root.delete_object(Bucket=name, Key=o["Key"])
    root.delete_bucket(Bucket=name)


def test_default_private_and_canned_public_read(wharfd, root, root_id, bucket):
    url = f"{wharfd.endpoint}/{bucket}"
    root.put_object(Bucket=bucket, Key="k", Body=b"data")
    assert grants(root.get_bucket_acl(Bucket=bucket)) == {(root_id, "FULL_CONTROL")}
    assert grants(root.get_object_acl(Bucket=bucket, Key="k")) == {(root_id, "FULL_CONTROL")}
    assert anon("GET", f"{url}/k")[0] == 403
    assert anon("GET", url)[0] == 403
    # public-read on the bucket lists it, but its objects keep their own ACL.
    root.put_bucket_acl(Bucket=bucket, ACL="public-read")
    assert grants(root.get_bucket_acl(Bucket=bucket)) == {(root_id, "FULL_CONTROL"),
                                                           (ALL_USERS, "READ")}
    st, body = anon("GET", url)
    assert st == 200 and b"<Key>k</Key>" in body
    assert anon("GET", f"{url}/k")[0] == 403
    assert anon("GET", f"{url}/missing")[0] == 404  # who may list learns a key is absent
    assert anon("PUT", f"{url}/new", b"x")[0] == 403
    root.put_object_acl(Bucket=bucket, Key="k", ACL="public-read")
    assert anon("GET", f"{url}/k") == (200, b"data")
    assert anon("GET", f"{url}/k?acl")[0] == 403  # READ is not READ_ACP
    assert anon("PUT", f"{url}/k?acl", b"", {"x-amz-acl": "public-read-write"})[0] == 403
    root.put_object_acl(Bucket=bucket, Key="k", ACL="private")
    assert anon("GET", f"{url}/k")[0] == 403


def test_public_read_write_bucket_and_object_acl_on_put(wharfd, root, root_id):
    name = unique_bucket("aclrw")
    root.create_bucket(Bucket=name, ACL="public-read-write")
    url = f"{wharfd.endpoint}/{name}"
    try:
        assert (ALL_USERS, "WRITE") in grants(root.get_bucket_acl(Bucket=name))
        assert anon("PUT", f"{url}/from-anon", b"anon bytes")[0] == 200
        # The anonymous writer's object is private to its owner: nobody else reads it by ACL.
        assert anon("GET", f"{url}/from-anon")[0] == 403
        assert root.get_object(Bucket=name, Key="from-anon")["Body"].read() == b"anon bytes"
        root.put_object(Bucket=name, Key="pub", Body=b"p", ACL="public-read")
        assert anon("GET", f"{url}/pub") == (200, b"p")
        root.put_object(Bucket=name, Key="grant", Body=b"g", GrantRead=f'uri="{ALL_USERS}"')
        assert anon("GET", f"{url}/grant") == (200, b"g")
        assert grants(root.get_object_acl(Bucket=name, Key="grant")) == {(ALL_USERS, "READ")}
        assert anon("DELETE", f"{url}/grant")[0] == 204
    finally:
        for o in root.list_objects_v2(Bucket=name).get("Contents", []):
            root.delete_object(Bucket=name, Key=o["Key"])
        root.delete_bucket(Bucket=name)


def test_copy_and_multipart_take_the_request_acl(wharfd, root, bucket):
    url = f"{wharfd.endpoint}/{bucket}"
    root.put_object(Bucket=bucket, Key="src", Body=b"source", ACL="public-read")
    # A copy never takes the source's ACL; it takes the one its request names.
    root.copy_object(Bucket=bucket, Key="c1", CopySource={"Bucket": bucket, "Key": "src"})
    assert anon("GET", f"{url}/c1")[0] == 403
    root.copy_object(Bucket=bucket, Key="c2", CopySource={"Bucket": bucket, "Key": "src"},
                     ACL="public-read")
    assert anon("GET", f"{url}/c2") == (200, b"source")
    up = root.create_multipart_upload(Bucket=bucket, Key="mp", ACL="public-read")
    part = root.upload_part(Bucket=bucket, Key="mp", UploadId=up["UploadId"], PartNumber=1,
                            Body=b"multi")
    root.complete_multipart_upload(Bucket=bucket, Key="mp", UploadId=up["UploadId"],
                                   MultipartUpload={"Parts": [{"PartNumber": 1,
                                                               "ETag": part["ETag"]}]})
    assert anon("GET", f"{url}/mp") == (200, b"multi")


def test_grant_headers_and_their_errors(wharfd, root, root_id, bucket):
    url = f"{wharfd.endpoint}/{bucket}"
    root.put_object(Bucket=bucket, Key="k", Body=b"v")
    root.put_object_acl(Bucket=bucket, Key="k", GrantRead=f'uri="{ALL_USERS}"',
                        GrantFullControl=f'id="{root_id}"')
    assert grants(root.get_object_acl(Bucket=bucket, Key="k")) == {(ALL_USERS, "READ"),
                                                                  (root_id, "FULL_CONTROL")}
    assert anon("GET", f"{url}/k") == (200, b"v")
    with pytest.raises(ClientError) as e:
        root.put_object_acl(Bucket=bucket, Key="k", GrantRead='emailAddress="a@example.com"')
    assert code(e) == "NotImplemented"
    assert "emailAddress grantees are not implemented" in e.value.response["Error"]["Message"]
    with pytest.raises(ClientError) as e:
        root.put_object_acl(Bucket=bucket, Key="k", GrantRead='uri="http://example.com/x"')
    assert code(e) == "InvalidArgument"
    with pytest.raises(ClientError) as e:
        root.put_object_acl(Bucket=bucket, Key="k", ACL="public-read",
                            GrantRead=f'uri="{ALL_USERS}"')
    assert code(e) == "InvalidRequest"
    with pytest.raises(ClientError) as e:
        root.put_object_acl(Bucket=bucket, Key="k", ACL="world-readable")
    assert code(e) == "InvalidArgument" and "world-readable" in e.value.response["Error"]["Message"]
    # What failed changed nothing.
    assert anon("GET", f"{url}/k") == (200, b"v")
    with pytest.raises(ClientError) as e:
        root.put_object_acl(Bucket=bucket, Key="nope", ACL="public-read")
    assert code(e) == "NoSuchKey"
    for canned in ("authenticated-read", "bucket-owner-read", "bucket-owner-full-control",
                   "log-delivery-write", "private"):
        root.put_object_acl(Bucket=bucket, Key="k", ACL=canned)
        assert anon("GET", f"{url}/k")[0] == 403


def test_access_control_policy_body(wharfd, root, root_id, bucket):
    acp = {"Owner": {"ID": root_id},
           "Grants": [{"Grantee": {"Type": "CanonicalUser", "ID": root_id},
                       "Permission": "FULL_CONTROL"},
                      {"Grantee": {"Type": "Group", "URI": ALL_USERS}, "Permission": "READ"},
                      {"Grantee": {"Type": "Group", "URI": AUTH_USERS},
                       "Permission": "READ_ACP"}]}
    root.put_bucket_acl(Bucket=bucket, AccessControlPolicy=acp)
    assert grants(root.get_bucket_acl(Bucket=bucket)) == {
        (root_id, "FULL_CONTROL"), (ALL_USERS, "READ"), (AUTH_USERS, "READ_ACP")}
    assert anon("GET", f"{wharfd.endpoint}/{bucket}")[0] == 200
    bad = dict(acp, Owner={"ID": "a" * 64})
    with pytest.raises(ClientError) as e:
        root.put_bucket_acl(Bucket=bucket, AccessControlPolicy=bad)
    assert code(e) == "AccessDenied" and "cannot change the owner" in \
        e.value.response["Error"]["Message"]
    # Raw bodies: not XML, a bad permission, an e-mail grantee.
    s3 = root

    def put_raw(body):
        def add_body(request, **kw):
            request.data = body
            request.headers["Content-Length"] = str(len(body))
            for h in list(request.headers.keys()):
                if h.lower() == "content-md5" or h.lower().startswith("x-amz-checksum-"):
                    del request.headers[h]
        s3.meta.events.register_first("before-sign.s3.PutBucketAcl", add_body)
        try:
            s3.put_bucket_acl(Bucket=bucket, AccessControlPolicy=acp)
        finally:
            s3.meta.events.unregister("before-sign.s3.PutBucketAcl", add_body)
    with pytest.raises(ClientError) as e:
        put_raw(b"<AccessControlPolicy><Owner><ID>")
    assert code(e) == "MalformedXML"
    with pytest.raises(ClientError) as e:
        put_raw(f"<AccessControlPolicy><Owner><ID>{root_id}</ID></Owner><AccessControlList>"
                f"<Grant><Grantee><URI>{ALL_USERS}</URI></Grantee><Permission>EVERYTHING"
                f"</Permission></Grant></AccessControlList></AccessControlPolicy>".encode())
    assert code(e) == "MalformedACLError" and "Permission must be" in \
        e.value.response["Error"]["Message"]
    with pytest.raises(ClientError) as e:
        put_raw(f"<AccessControlPolicy><Owner><ID>{root_id}</ID></Owner><AccessControlList>"
                f"<Grant><Grantee><EmailAddress>a@b.c</EmailAddress></Grantee><Permission>READ"
                f"</Permission></Grant></AccessControlList></AccessControlPolicy>".encode())
    assert code(e) == "NotImplemented"
    assert wharfd.proc.poll() is None
    assert (ALL_USERS, "READ") in grants(root.get_bucket_acl(Bucket=bucket))


def test_anonymous_cannot_name_client_memory(wharfd, root, bucket):
    root.put_bucket_acl(Bucket=bucket, ACL="public-read-write")
    st, _ = anon("PUT", f"{wharfd.endpoint}/{bucket}/t", b"",
                 {"x-amz-rdma-token": "0x1000:4096:ofi1:tcp:00:00"})
    assert st == 403
    with pytest.raises(ClientError) as e:
        root.head_object(Bucket=bucket, Key="t")
    assert e.value.response["Error"]["Code"] in ("404", "NoSuchKey")


def test_awscli_bucket_and_object_acl(wharfd, root, root_id, bucket, tmp_path):
    env = wharfd.client_env()
    env.pop("AWS_PROFILE", None)
    (tmp_path / "config").write_text("[default]\nregion = us-east-1\n")
    env.update({"AWS_CONFIG_FILE": str(tmp_path / "config"),
                "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none")})

    def aws(*args, check=True):
        r = subprocess.run([AWS, "--endpoint-url", wharfd.endpoint, "--no-cli-pager", "s3api",
                            *args], env=env, capture_output=True, timeout=120)
        if check:
            assert r.returncode == 0, r.stderr.decode(errors="replace")
        return json.loads(r.stdout) if r.stdout.strip() else {}

    root.put_object(Bucket=bucket, Key="o", Body=b"cli")
    aws("put-bucket-acl", "--bucket", bucket, "--acl", "public-read")
    got = aws("get-bucket-acl", "--bucket", bucket)
    assert got["Owner"]["ID"] == root_id and grants(got) == {(root_id, "FULL_CONTROL"),
                                                             (ALL_USERS, "READ")}
    aws("put-object-acl", "--bucket", bucket, "--key", "o", "--grant-read", f"uri={ALL_USERS}")
    assert grants(aws("get-object-acl", "--bucket", bucket, "--key", "o")) == {
        (ALL_USERS, "READ")}
    assert anon("GET", f"{wharfd.endpoint}/{bucket}/o") == (200, b"cli")
    acp = {"Owner": {"ID": root_id}, "Grants": [
        {"Grantee": {"Type": "CanonicalUser", "ID": root_id}, "Permission": "FULL_CONTROL"}]}
    (tmp_path / "acp.json").write_text(json.dumps(acp))
    aws("put-object-acl", "--bucket", bucket, "--key", "o", "--access-control-policy",
        f"file://{tmp_path / 'acp.json'}")
    assert anon("GET", f"{wharfd.endpoint}/{bucket}/o")[0] == 403


def test_s3cmd_setacl_public_private(wharfd, root, bucket, tmp_path):
    cfg = tmp_path / "s3cfg"
    host = wharfd.endpoint.replace("http://", "")
    cfg.write_text(f"[default]\naccess_key = {ACCESS_KEY}\nsecret_key = {SECRET_KEY}\n"
                   f"host_base = {host}\nhost_bucket = {host}\nuse_https = False\n"
                   f"signature_v2 = False\nbucket_location = us-east-1\n")
    env = dict(os.environ)

    def s3cmd(*args):
        r = subprocess.run([S3CMD, "-c", str(cfg), *args], env=env, capture_output=True,
                           timeout=120)
        assert r.returncode == 0, r.stderr.decode(errors="replace")
        return r.stdout.decode(errors="replace")

    src = tmp_path / "f.txt"
    src.write_bytes(b"s3cmd public")
    s3cmd("put", "--acl-public", str(src), f"s3://{bucket}/pub.txt")
    assert anon("GET", f"{wharfd.endpoint}/{bucket}/pub.txt") == (200, b"s3cmd public")
    s3cmd("setacl", "--acl-private", f"s3://{bucket}/pub.txt")
    assert anon("GET", f"{wharfd.endpoint}/{bucket}/pub.txt")[0] == 403
    s3cmd("setacl", "--acl-public", f"s3://{bucket}/pub.txt")
    assert anon("GET", f"{wharfd.endpoint}/{bucket}/pub.txt")[0] == 200
    info = s3cmd("info", f"s3://{bucket}/pub.txt")
    assert "*anon*: READ" in info
