# SPDX-License-Identifier: Apache-2.0
"""Bucket-policy condition keys taken from the request and the object, against a real wharfd
with boto3 and an IAM user (tests/lib/users.py) whom only the bucket policy lets in:
s3:x-amz-server-side-encryption and -aws-kms-key-id (a policy requiring SSE-KMS refuses a
plain PUT and allows an encrypted one), s3:RequestObjectTag/<k>, s3:RequestObjectTagKeys,
s3:ExistingObjectTag/<k>, aws:Referer, s3:x-amz-copy-source, s3:x-amz-metadata-directive and
s3:x-amz-grant-full-control. Each is checked allowed and refused."""
import json
import uuid

import pytest
from botocore.exceptions import ClientError

import users
from wharfd import ACCESS_KEY, SECRET_KEY, unique_bucket

KMS_KEY = "polkey-1"


@pytest.fixture(scope="module")
def root(wharfd):
    return users.client(wharfd, ACCESS_KEY, SECRET_KEY)


@pytest.fixture(scope="module")
def bob(wharfd):
    u = users.create_user(wharfd, f"bob-{uuid.uuid4().hex[:10]}")
    return u.boto3(wharfd)


@pytest.fixture(scope="module")
def kms_key(wharfd):
    r = users.wharfd_cmd(wharfd, "kms", "create", "--name", KMS_KEY, check=False)
    assert r.returncode in (0, 3), r.stderr  # 3: another file of the session made it
    return KMS_KEY


@pytest.fixture()
def bucket(root):
    name = unique_bucket("pcond")
    root.create_bucket(Bucket=name)
    yield name
    root.delete_bucket_policy(Bucket=name)
    for o in root.list_objects_v2(Bucket=name).get("Contents", []):
        root.delete_object(Bucket=name, Key=o["Key"])
    root.delete_bucket(Bucket=name)


def set_policy(root, bucket, *statements):
    for s in statements:
        s.setdefault("Principal", "*")
        s.setdefault("Resource", f"arn:aws:s3:::{bucket}/*")
    root.put_bucket_policy(Bucket=bucket, Policy=json.dumps(
        {"Version": "2012-10-17", "Statement": list(statements)}))


def denied(fn, **kw):
    with pytest.raises(ClientError) as e:
        fn(**kw)
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403, e.value.response


def with_header(client, event, name, value):
    """Adds a header to every request of event (unregistered by the returned function)."""
    def add(request, **_):
        request.headers[name] = value
    client.meta.events.register(f"before-sign.s3.{event}", add)
    return lambda: client.meta.events.unregister(f"before-sign.s3.{event}", add)


def test_policy_requires_sse_kms(root, bob, bucket, kms_key):
    set_policy(root, bucket,
               {"Effect": "Allow", "Action": "s3:PutObject"},
               {"Effect": "Deny", "Action": "s3:PutObject",
                "Condition": {"StringNotEquals": {"s3:x-amz-server-side-encryption": "aws:kms"}}},
               {"Effect": "Deny", "Action": "s3:PutObject",
                "Condition": {"Null": {"s3:x-amz-server-side-encryption": "true"}}})
    denied(bob.put_object, Bucket=bucket, Key="plain", Body=b"x")
    denied(bob.put_object, Bucket=bucket, Key="s3", Body=b"x", ServerSideEncryption="AES256")
    r = bob.put_object(Bucket=bucket, Key="kms", Body=b"x", ServerSideEncryption="aws:kms",
                       SSEKMSKeyId=kms_key)
    assert r["ServerSideEncryption"] == "aws:kms"
    keys = [o["Key"] for o in root.list_objects_v2(Bucket=bucket)["Contents"]]
    assert keys == ["kms"]
    # Pinning the key: another key id is refused.
    set_policy(root, bucket,
               {"Effect": "Allow", "Action": "s3:PutObject",
                "Condition": {"StringEquals": {
                    "s3:x-amz-server-side-encryption-aws-kms-key-id": kms_key}}})
    bob.put_object(Bucket=bucket, Key="kms2", Body=b"y", ServerSideEncryption="aws:kms",
                   SSEKMSKeyId=kms_key)
    denied(bob.put_object, Bucket=bucket, Key="kms3", Body=b"y", ServerSideEncryption="aws:kms",
           SSEKMSKeyId="alias/" + kms_key)


def test_request_object_tags(root, bob, bucket):
    set_policy(root, bucket,
               {"Effect": "Allow", "Action": "s3:PutObject",
                "Condition": {"StringEquals": {"s3:RequestObjectTag/security": "public"}}})
    bob.put_object(Bucket=bucket, Key="t1", Body=b"x", Tagging="security=public")
    denied(bob.put_object, Bucket=bucket, Key="t2", Body=b"x", Tagging="security=private")
    denied(bob.put_object, Bucket=bucket, Key="t3", Body=b"x")
    set_policy(root, bucket,
               {"Effect": "Allow", "Action": "s3:PutObject",
                "Condition": {"ForAllValues:StringEquals": {
                    "s3:RequestObjectTagKeys": ["team", "project"]}}})
    bob.put_object(Bucket=bucket, Key="t4", Body=b"x", Tagging="team=a&project=b")
    denied(bob.put_object, Bucket=bucket, Key="t5", Body=b"x", Tagging="team=a&owner=c")


def test_existing_object_tag(root, bob, bucket):
    root.put_object(Bucket=bucket, Key="publictag", Body=b"pub", Tagging="security=public")
    root.put_object(Bucket=bucket, Key="privatetag", Body=b"priv", Tagging="security=private")
    root.put_object(Bucket=bucket, Key="untagged", Body=b"none")
    set_policy(root, bucket,
               {"Effect": "Allow", "Action": ["s3:GetObject", "s3:GetObjectTagging"],
                "Condition": {"StringEquals": {"s3:ExistingObjectTag/security": "public"}}})
    assert bob.get_object(Bucket=bucket, Key="publictag")["Body"].read() == b"pub"
    assert bob.get_object_tagging(Bucket=bucket, Key="publictag")["TagSet"]
    denied(bob.get_object, Bucket=bucket, Key="privatetag")
    denied(bob.get_object, Bucket=bucket, Key="untagged")
    # Re-tagging the object changes the answer at the next request.
    root.put_object_tagging(Bucket=bucket, Key="privatetag",
                            Tagging={"TagSet": [{"Key": "security", "Value": "public"}]})
    assert bob.get_object(Bucket=bucket, Key="privatetag")["Body"].read() == b"priv"


def test_referer(root, bob, bucket):
    root.put_object(Bucket=bucket, Key="page", Body=b"page")
    set_policy(root, bucket,
               {"Effect": "Allow", "Action": "s3:GetObject",
                "Condition": {"StringLike": {"aws:Referer": "http://www.example.com/*"}}})
    denied(bob.get_object, Bucket=bucket, Key="page")
    undo = with_header(bob, "GetObject", "Referer", "http://www.example.com/index.html")
    try:
        assert bob.get_object(Bucket=bucket, Key="page")["Body"].read() == b"page"
    finally:
        undo()
    undo = with_header(bob, "GetObject", "Referer", "http://evil.example.net/")
    try:
        denied(bob.get_object, Bucket=bucket, Key="page")
    finally:
        undo()


def test_copy_source_and_directive(root, bob, bucket):
    root.put_object(Bucket=bucket, Key="public/foo", Body=b"public foo")
    root.put_object(Bucket=bucket, Key="private/foo", Body=b"private foo")
    set_policy(root, bucket,
               {"Effect": "Allow", "Action": "s3:GetObject"},
               {"Effect": "Allow", "Action": "s3:PutObject",
                "Condition": {"StringLike": {"s3:x-amz-copy-source": f"{bucket}/public/*"}}},
               {"Effect": "Deny", "Action": "s3:PutObject",
                "Condition": {"StringEquals": {"s3:x-amz-metadata-directive": "REPLACE"}}})
    bob.copy_object(Bucket=bucket, Key="new1", CopySource={"Bucket": bucket, "Key": "public/foo"})
    assert root.get_object(Bucket=bucket, Key="new1")["Body"].read() == b"public foo"
    denied(bob.copy_object, Bucket=bucket, Key="new2",
           CopySource={"Bucket": bucket, "Key": "private/foo"})
    denied(bob.copy_object, Bucket=bucket, Key="new3",
           CopySource={"Bucket": bucket, "Key": "public/foo"}, MetadataDirective="REPLACE",
           Metadata={"a": "b"})
    denied(bob.put_object, Bucket=bucket, Key="new4", Body=b"not a copy")


def test_grant_full_control(root, bob, bucket):
    owner = root.get_bucket_acl(Bucket=bucket)["Owner"]["ID"]
    set_policy(root, bucket,
               {"Effect": "Allow", "Action": "s3:PutObject",
                "Condition": {"StringEquals": {"s3:x-amz-grant-full-control": f"id={owner}"}}})
    bob.put_object(Bucket=bucket, Key="g1", Body=b"x", GrantFullControl=f"id={owner}")
    denied(bob.put_object, Bucket=bucket, Key="g2", Body=b"x")
