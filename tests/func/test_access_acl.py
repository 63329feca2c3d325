# SPDX-License-Identifier: Apache-2.0
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
    # S3's answer for an address no account has (s3-tests: test_bucket_acl_grant_email_not_exist)
    assert code(e) == "UnresolvableGrantByEmailAddress"
    assert "does not match any account" in e.value.response["Error"]["Message"]
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
    assert code(e) == "UnresolvableGrantByEmailAddress"
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


# ---- several users ---------------------------------------------------------------------------

import uuid  # noqa: E402

import users  # noqa: E402
import wharf  # noqa: E402
from wharfd import CTYPES_UNDER_ASAN  # noqa: E402



def new_user(srv, tag):
    u = users.create_user(srv, f"{tag}-{uuid.uuid4().hex[:10]}")
    u.s3 = u.boto3(srv)
    u.canonical = u.s3.list_buckets()["Owner"]["ID"]
    return u


def empty_bucket(root, name):
    for o in root.list_objects_v2(Bucket=name).get("Contents", []):
        root.delete_object(Bucket=name, Key=o["Key"])
    root.delete_bucket(Bucket=name)


def denied(fn, *a, **kw):
    with pytest.raises(ClientError) as e:
        fn(*a, **kw)
    assert code(e) in ("AccessDenied", "403"), e.value.response
    return e.value.response["Error"].get("Message", "")


@pytest.fixture()
def trio(wharfd, root):
    """alice owns a bucket with one object; bob and carol are other users."""
    alice, bob, carol = (new_user(wharfd, t) for t in ("alice", "bob", "carol"))
    name = unique_bucket("own")
    alice.s3.create_bucket(Bucket=name)
    alice.s3.put_object(Bucket=name, Key="doc", Body=b"alice's doc")
    yield alice, bob, carol, name
    empty_bucket(root, name)


def test_list_uploads_shows_the_real_initiator(wharfd, root, root_id, trio):
    alice, _, _, name = trio
    mine = alice.s3.create_multipart_upload(Bucket=name, Key="by-alice")["UploadId"]
    roots = root.create_multipart_upload(Bucket=name, Key="by-root")["UploadId"]
    try:
        for lister in (root, alice.s3):
            ups = {u["UploadId"]: u for u in lister.list_multipart_uploads(Bucket=name)["Uploads"]}
            assert ups[mine]["Initiator"]["ID"] == ups[mine]["Owner"]["ID"] == alice.canonical
            assert ups[roots]["Initiator"]["ID"] == root_id
            assert ups[roots]["Initiator"]["DisplayName"] == "root"
        ups = {u["UploadId"]: u for u in alice.s3.list_multipart_uploads(Bucket=name)["Uploads"]}
        assert ups[mine]["Initiator"]["DisplayName"] == alice.name
        assert root.list_buckets()["Owner"]["DisplayName"] == "root"
    finally:
        root.abort_multipart_upload(Bucket=name, Key="by-alice", UploadId=mine)
        root.abort_multipart_upload(Bucket=name, Key="by-root", UploadId=roots)


def test_owner_only_by_default_and_list_buckets_shows_own(wharfd, root, root_id, trio):
    alice, bob, _, name = trio
    mine = alice.s3.list_buckets()
    assert mine["Owner"]["ID"] == alice.canonical != root_id
    assert mine["Owner"]["DisplayName"] == alice.name
    assert [b["Name"] for b in mine["Buckets"]] == [name]
    assert name not in [b["Name"] for b in bob.s3.list_buckets()["Buckets"]]
    assert name in [b["Name"] for b in root.list_buckets()["Buckets"]]
    # Everything on alice's bucket is refused to bob; root may do anything.
    msg = denied(bob.s3.get_object, Bucket=name, Key="doc")
    assert bob.arn in msg and "s3:GetObject" in msg
    denied(bob.s3.put_object, Bucket=name, Key="x", Body=b"x")
    denied(bob.s3.delete_object, Bucket=name, Key="doc")
    denied(bob.s3.list_objects_v2, Bucket=name)
    denied(bob.s3.get_bucket_acl, Bucket=name)
    denied(bob.s3.put_bucket_acl, Bucket=name, ACL="public-read")
    denied(bob.s3.delete_bucket, Bucket=name)
    denied(bob.s3.put_bucket_policy, Bucket=name, Policy="{}")
    assert root.get_object(Bucket=name, Key="doc")["Body"].read() == b"alice's doc"
    # The namespace is shared: bob cannot take the name; alice already owns it.
    with pytest.raises(ClientError) as e:
        bob.s3.create_bucket(Bucket=name)
    assert code(e) == "BucketAlreadyExists"
    alice.s3.create_bucket(Bucket=name)  # us-east-1: 200 for its owner
    acl = alice.s3.get_bucket_acl(Bucket=name)
    assert acl["Owner"]["ID"] == alice.canonical
    assert grants(acl) == {(alice.canonical, "FULL_CONTROL")}
    assert alice.s3.get_object_acl(Bucket=name, Key="doc")["Owner"]["ID"] == alice.canonical


def test_grants_to_another_user_read_write_acp(wharfd, root, trio):
    alice, bob, carol, name = trio
    # READ on the bucket lists it; the object keeps its own ACL.
    alice.s3.put_bucket_acl(Bucket=name, GrantRead=f'id="{bob.canonical}"',
                            GrantFullControl=f'id="{alice.canonical}"')
    assert [o["Key"] for o in bob.s3.list_objects_v2(Bucket=name)["Contents"]] == ["doc"]
    denied(bob.s3.get_object, Bucket=name, Key="doc")
    denied(carol.s3.list_objects_v2, Bucket=name)
    alice.s3.put_object_acl(Bucket=name, Key="doc", GrantRead=f'id="{bob.canonical}"',
                            GrantFullControl=f'id="{alice.canonical}"')
    assert bob.s3.get_object(Bucket=name, Key="doc")["Body"].read() == b"alice's doc"
    denied(bob.s3.get_object_acl, Bucket=name, Key="doc")
    denied(bob.s3.put_object, Bucket=name, Key="bob1", Body=b"b")
    # WRITE on the bucket: bob puts and deletes; his object is his (alice reads it only if
    # he grants it, as S3's ObjectWriter ownership).
    alice.s3.put_bucket_acl(Bucket=name, GrantRead=f'id="{bob.canonical}"',
                            GrantWrite=f'id="{bob.canonical}"',
                            GrantFullControl=f'id="{alice.canonical}"')
    bob.s3.put_object(Bucket=name, Key="bob1", Body=b"by bob")
    assert bob.s3.get_object_acl(Bucket=name, Key="bob1")["Owner"]["ID"] == bob.canonical
    denied(alice.s3.get_object, Bucket=name, Key="bob1")
    owners = {o["Key"]: o["Owner"]["ID"]
              for o in alice.s3.list_objects_v2(Bucket=name, FetchOwner=True)["Contents"]}
    assert owners == {"doc": alice.canonical, "bob1": bob.canonical}
    assert {o["Key"]: o["Owner"]["ID"] for o in root.list_objects(Bucket=name)["Contents"]} \
        == owners
    bob.s3.put_object(Bucket=name, Key="bob2", Body=b"for alice", ACL="bucket-owner-full-control")
    assert alice.s3.get_object(Bucket=name, Key="bob2")["Body"].read() == b"for alice"
    alice.s3.delete_object(Bucket=name, Key="bob1")  # the bucket owner may delete anything
    bob.s3.delete_object(Bucket=name, Key="bob2")
    # READ_ACP / WRITE_ACP on the object.
    alice.s3.put_object_acl(Bucket=name, Key="doc", GrantReadACP=f'id="{carol.canonical}"',
                            GrantWriteACP=f'id="{bob.canonical}"',
                            GrantFullControl=f'id="{alice.canonical}"')
    assert carol.s3.get_object_acl(Bucket=name, Key="doc")["Owner"]["ID"] == alice.canonical
    denied(carol.s3.get_object, Bucket=name, Key="doc")
    denied(carol.s3.put_object_acl, Bucket=name, Key="doc", ACL="public-read")
    bob.s3.put_object_acl(Bucket=name, Key="doc", ACL="authenticated-read")
    # authenticated-read: every signed user reads, the anonymous client does not.
    assert carol.s3.get_object(Bucket=name, Key="doc")["Body"].read() == b"alice's doc"
    assert anon("GET", f"{wharfd.endpoint}/{name}/doc")[0] == 403
    # bob's WRITE_ACP is gone with the canned ACL; the owner keeps READ_ACP and WRITE_ACP.
    denied(bob.s3.put_object_acl, Bucket=name, Key="doc", ACL="private")
    alice.s3.put_object_acl(Bucket=name, Key="doc", ACL="private")


def test_read_only_user_and_copy_and_delete_objects(wharfd, root, trio):
    alice, bob, carol, name = trio
    ro = carol
    alice.s3.put_bucket_acl(Bucket=name, GrantRead=f'id="{ro.canonical}"',
                            GrantFullControl=f'id="{alice.canonical}"')
    # Explicit grants are the whole ACL: the owner names itself to keep its access.
    alice.s3.put_object(Bucket=name, Key="shared", Body=b"shared", GrantRead=f'id="{ro.canonical}"',
                        GrantFullControl=f'id="{alice.canonical}"')
    assert ro.s3.get_object(Bucket=name, Key="shared")["Body"].read() == b"shared"
    denied(ro.s3.put_object, Bucket=name, Key="shared", Body=b"overwrite")
    denied(ro.s3.delete_object, Bucket=name, Key="shared")
    denied(ro.s3.create_multipart_upload, Bucket=name, Key="mp")
    r = ro.s3.delete_objects(Bucket=name, Delete={"Objects": [{"Key": "shared"},
                                                              {"Key": "doc"}]})
    assert sorted(e["Key"] for e in r["Errors"]) == ["doc", "shared"]
    assert all(e["Code"] == "AccessDenied" for e in r["Errors"])
    assert alice.s3.get_object(Bucket=name, Key="shared")["Body"].read() == b"shared"
    # A copy needs s3:GetObject on the source and s3:PutObject on the destination.
    dst = unique_bucket("ro-dst")
    ro.s3.create_bucket(Bucket=dst)
    try:
        ro.s3.copy_object(Bucket=dst, Key="c", CopySource={"Bucket": name, "Key": "shared"})
        assert ro.s3.get_object(Bucket=dst, Key="c")["Body"].read() == b"shared"
        assert ro.s3.get_object_acl(Bucket=dst, Key="c")["Owner"]["ID"] == ro.canonical
        denied(ro.s3.copy_object, Bucket=dst, Key="d", CopySource={"Bucket": name, "Key": "doc"})
        denied(bob.s3.copy_object, Bucket=dst, Key="e", CopySource={"Bucket": name,
                                                                     "Key": "shared"})
        denied(ro.s3.copy_object, Bucket=name, Key="f", CopySource={"Bucket": dst, "Key": "c"})
    finally:
        empty_bucket(root, dst)


def test_rclone_and_s3cmd_on_a_second_users_keys(wharfd, root, trio, tmp_path):
    alice, bob, _, name = trio
    alice.s3.put_bucket_acl(Bucket=name, GrantRead=f'id="{bob.canonical}"',
                            GrantWrite=f'id="{bob.canonical}"',
                            GrantFullControl=f'id="{alice.canonical}"')
    env = dict(os.environ)
    env.pop("AWS_CA_BUNDLE", None)
    conf = tmp_path / "rclone.conf"
    conf.write_text(f"[w]\ntype = s3\nprovider = Other\naccess_key_id = {bob.access_key}\n"
                    f"secret_access_key = {bob.secret_key}\nendpoint = {wharfd.endpoint}\n"
                    f"region = {REGION}\nforce_path_style = true\n")
    src = tmp_path / "up"
    src.mkdir()
    (src / "r.txt").write_bytes(b"rclone by bob")

    def rclone(*args, check=True):
        r = subprocess.run(["rclone", "--config", str(conf), "--retries", "1",
                            "--low-level-retries", "1", *args], env=env, capture_output=True,
                           timeout=120)
        if check:
            assert r.returncode == 0, r.stderr.decode(errors="replace")
        return r

    rclone("copy", str(src), f"w:{name}/rc")
    assert b"rc/r.txt" in rclone("ls", f"w:{name}").stdout
    assert bob.s3.get_object(Bucket=name, Key="rc/r.txt")["Body"].read() == b"rclone by bob"
    # Without a grant on alice's own object, bob's rclone cannot read it.
    # (rclone takes the 403 of its HEAD for a missing object: it copies nothing.)
    r = rclone("copyto", f"w:{name}/doc", str(tmp_path / "doc"), check=False)
    assert not (tmp_path / "doc").exists(), r
    assert b"alice's doc" not in rclone("cat", f"w:{name}/doc", check=False).stdout
    # s3cmd on bob's keys: his own object made public, and refused on alice's.
    cfg = tmp_path / "s3cfg"
    host = wharfd.endpoint.replace("http://", "")
    cfg.write_text(f"[default]\naccess_key = {bob.access_key}\nsecret_key = {bob.secret_key}\n"
                   f"host_base = {host}\nhost_bucket = {host}\nuse_https = False\n"
                   f"signature_v2 = False\nbucket_location = us-east-1\n")

    def s3cmd(*args, check=True):
        r = subprocess.run([S3CMD, "-c", str(cfg), *args], env=env, capture_output=True,
                           timeout=120)
        if check:
            assert r.returncode == 0, r.stderr.decode(errors="replace")
        return r

    s3cmd("setacl", "--acl-public", f"s3://{name}/rc/r.txt")
    assert anon("GET", f"{wharfd.endpoint}/{name}/rc/r.txt") == (200, b"rclone by bob")
    r = s3cmd("setacl", "--acl-public", f"s3://{name}/doc", check=False)
    assert r.returncode != 0
    assert anon("GET", f"{wharfd.endpoint}/{name}/doc")[0] == 403


# ---- the RDMA data path under the same rules ---------------------------------------------

RDMA = [pytest.param("ofi+shm", id="shm"), pytest.param("ofi+tcp", id="tcp")]


def rdma_client(srv, user, provider):
    return wharf.Client(srv.endpoint, user.access_key, user.secret_key, region=REGION,
                        provider=provider,
                        unix_socket=srv.unix_socket if provider == "ofi+shm" else None)


def rdma_bytes(srv):
    m = srv.metrics()
    return {k: sum(v for n, v in m.items() if n.split("{")[0] == k)
            for k in ("wharf_rdma_write_bytes_total", "wharf_rdma_read_bytes_total")}


@pytest.mark.skipif(**CTYPES_UNDER_ASAN)
@pytest.mark.parametrize("provider", RDMA)
def test_rdma_follows_acls(wharfd, root, trio, provider):
    alice, bob, carol, name = trio
    ro = carol
    data = os.urandom(1 << 20)
    with rdma_client(wharfd, alice, provider) as a:
        rep = a.put(name, "big", data, transport="rdma")
        assert rep.transport == "rdma"
        assert a.get(name, "big", transport="rdma") == data
    alice.s3.put_bucket_acl(Bucket=name, GrantRead=f'id="{ro.canonical}"',
                            GrantFullControl=f'id="{alice.canonical}"')
    alice.s3.put_object_acl(Bucket=name, Key="big", GrantRead=f'id="{ro.canonical}"',
                            GrantFullControl=f'id="{alice.canonical}"')
    with rdma_client(wharfd, ro, provider) as c, rdma_client(wharfd, bob, provider) as b:
        assert c.get(name, "big", transport="rdma") == data
        # The read-only user's RDMA PUT: its buffer is registered, the token is signed, and the
        # server refuses with 403 before it reads a byte of that memory.
        buf = bytearray(os.urandom(1 << 20))
        with c.register(buf):
            before = rdma_bytes(wharfd)
            with pytest.raises(wharf.WharfError) as e:
                c.put_from(name, "big", buf, transport="rdma")
            assert "403" in str(e.value) or "AccessDenied" in str(e.value), str(e.value)
            assert rdma_bytes(wharfd) == before
        assert alice.s3.get_object(Bucket=name, Key="big")["Body"].read() == data
        # A user with no grant: no RDMA GET (nothing written into its memory) and no PUT.
        out = bytearray(1 << 20)
        with b.register(out):
            before = rdma_bytes(wharfd)
            with pytest.raises(wharf.WharfError):
                b.get_into(name, "big", out, transport="rdma")
            with pytest.raises(wharf.WharfError):
                b.put_from(name, "new", out, transport="rdma")
            assert rdma_bytes(wharfd) == before
        assert out == bytearray(1 << 20)
