# SPDX-License-Identifier: Apache-2.0
"""Access rules an adversarial pass found open, against a real wharfd with boto3 (root, IAM
users made by tests/lib/users.py, policies through the IAM API) and plain unsigned urllib
requests for the anonymous caller:

- CreateBucket's x-amz-object-ownership is stored; with BucketOwnerEnforced, ACLs that grant
  anything are refused (AccessControlListNotSupported) and never consulted, so a public-read
  object is not served to the anonymous caller; an unknown value is 400 InvalidArgument;
- a bucket policy that allows "*" s3:* lets the anonymous caller write objects, never the
  bucket's configuration (Object Lock, lifecycle, PublicAccessBlock, OwnershipControls, tagging,
  CORS, encryption): 403 and nothing changed;
- Object Lock headers on PutObject, CreateMultipartUpload and CopyObject need
  s3:PutObjectRetention / s3:PutObjectLegalHold besides s3:PutObject;
- a user policy's Deny of s3:ListAllMyBuckets on arn:aws:s3:::* binds, as on "*";
- no ACL answer names root's access key id (DisplayName "root", as in listings);
- x-amz-expected-bucket-owner naming another account is 403 AccessDenied;
- an IAM user owns at most --max-buckets buckets (400 TooManyBuckets); root is not bound.
"""
import base64
import datetime
import hashlib
import json
import urllib.error
import urllib.request
import uuid

import pytest
from botocore.exceptions import ClientError

import users
from wharfd import ACCESS_KEY, SECRET_KEY, WharfServer, assert_start_refused, unique_bucket

UTC = datetime.timezone.utc
ACCOUNT = "000000000000"  # wharfd's default account id


def policy(*statements):
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)})


def code(excinfo):
    return excinfo.value.response["Error"]["Code"]


def anon(method, url, data=None, headers=None):
    h = dict(headers or {})
    if data is not None:
        h["Content-MD5"] = base64.b64encode(hashlib.md5(data).digest()).decode()
    req = urllib.request.Request(url, data=data, method=method, headers=h)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


@pytest.fixture(scope="module")
def root(wharfd):
    return users.client(wharfd, ACCESS_KEY, SECRET_KEY)


@pytest.fixture(scope="module")
def iam(wharfd):
    return users.client(wharfd, ACCESS_KEY, SECRET_KEY, "iam")


def new_user(srv, iam, tag, *statements):
    u = users.create_user(srv, f"{tag}-{uuid.uuid4().hex[:10]}")
    if statements:
        iam.put_user_policy(UserName=u.name, PolicyName="p", PolicyDocument=policy(*statements))
    u.s3 = u.boto3(srv)
    return u


def empty(root, name):
    vs = root.list_object_versions(Bucket=name)
    for v in vs.get("Versions", []) + vs.get("DeleteMarkers", []):
        root.delete_object(Bucket=name, Key=v["Key"], VersionId=v["VersionId"],
                           BypassGovernanceRetention=True)
    for u in root.list_multipart_uploads(Bucket=name).get("Uploads", []):
        root.abort_multipart_upload(Bucket=name, Key=u["Key"], UploadId=u["UploadId"])
    root.delete_bucket(Bucket=name)


def test_create_bucket_object_ownership_is_stored_and_enforced(wharfd, root):
    b = unique_bucket("own")
    root.create_bucket(Bucket=b, ObjectOwnership="BucketOwnerEnforced")
    rules = root.get_bucket_ownership_controls(Bucket=b)["OwnershipControls"]["Rules"]
    assert rules == [{"ObjectOwnership": "BucketOwnerEnforced"}]
    with pytest.raises(ClientError) as e:
        root.put_bucket_acl(Bucket=b, ACL="public-read")
    assert code(e) == "AccessControlListNotSupported"
    with pytest.raises(ClientError) as e:
        root.put_object(Bucket=b, Key="pub", Body=b"secret", ACL="public-read")
    assert code(e) == "AccessControlListNotSupported"
    root.put_object(Bucket=b, Key="k", Body=b"secret", ACL="bucket-owner-full-control")
    assert anon("GET", f"{wharfd.endpoint}/{b}/k")[0] == 403
    assert anon("GET", f"{wharfd.endpoint}/{b}/pub")[0] in (403, 404)
    # ACLs that grant nothing beyond the owner are accepted, as in S3; public ones refused at
    # creation too; an unknown value is named.
    with pytest.raises(ClientError) as e:
        root.create_bucket(Bucket=unique_bucket("own"), ObjectOwnership="BucketOwnerEnforced",
                           ACL="public-read")
    assert code(e) == "InvalidBucketAclWithObjectOwnership"
    with pytest.raises(ClientError) as e:
        root.create_bucket(Bucket=unique_bucket("own"), ObjectOwnership="Nobody")
    assert code(e) == "InvalidArgument"
    assert "x-amz-object-ownership" in e.value.response["Error"]["Message"]
    other = unique_bucket("own")
    root.create_bucket(Bucket=other, ObjectOwnership="ObjectWriter")
    rules = root.get_bucket_ownership_controls(Bucket=other)["OwnershipControls"]["Rules"]
    assert rules == [{"ObjectOwnership": "ObjectWriter"}]
    root.delete_bucket(Bucket=other)
    empty(root, b)


LC = (b'<LifecycleConfiguration><Rule><ID>x</ID><Filter><Prefix></Prefix></Filter>'
      b'<Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>'
      b'</LifecycleConfiguration>')
LOCK = (b'<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule>'
        b'<DefaultRetention><Mode>COMPLIANCE</Mode><Years>100</Years></DefaultRetention></Rule>'
        b'</ObjectLockConfiguration>')
PAB = (b'<PublicAccessBlockConfiguration><BlockPublicAcls>false</BlockPublicAcls>'
       b'<IgnorePublicAcls>false</IgnorePublicAcls><BlockPublicPolicy>false</BlockPublicPolicy>'
       b'<RestrictPublicBuckets>false</RestrictPublicBuckets></PublicAccessBlockConfiguration>')
OWN = (b'<OwnershipControls><Rule><ObjectOwnership>ObjectWriter</ObjectOwnership></Rule>'
       b'</OwnershipControls>')
TAGS = b'<Tagging><TagSet><Tag><Key>a</Key><Value>b</Value></Tag></TagSet></Tagging>'
CORS = (b'<CORSConfiguration><CORSRule><AllowedMethod>GET</AllowedMethod><AllowedOrigin>*'
        b'</AllowedOrigin></CORSRule></CORSConfiguration>')
ENC = (b'<ServerSideEncryptionConfiguration><Rule><ApplyServerSideEncryptionByDefault>'
       b'<SSEAlgorithm>AES256</SSEAlgorithm></ApplyServerSideEncryptionByDefault></Rule>'
       b'</ServerSideEncryptionConfiguration>')


def test_public_policy_never_hands_bucket_configuration_to_anonymous(wharfd, root):
    b = unique_bucket("cfg")
    root.create_bucket(Bucket=b, ObjectLockEnabledForBucket=True)
    res = f"arn:aws:s3:::{b}"
    root.put_bucket_policy(Bucket=b, Policy=policy(
        {"Effect": "Allow", "Principal": "*", "Action": "s3:*", "Resource": [res, f"{res}/*"]}))
    root.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={"Rules": [
        {"ID": "keep", "Filter": {"Prefix": "tmp/"}, "Status": "Enabled",
         "Expiration": {"Days": 30}}]})
    url = f"{wharfd.endpoint}/{b}"
    assert anon("PUT", f"{url}/k", data=b"anon")[0] == 200  # the policy grants object writes
    for method, sub, body in [("PUT", "object-lock", LOCK), ("PUT", "lifecycle", LC),
                              ("DELETE", "lifecycle", None), ("PUT", "publicAccessBlock", PAB),
                              ("DELETE", "publicAccessBlock", None),
                              ("PUT", "ownershipControls", OWN),
                              ("DELETE", "ownershipControls", None), ("PUT", "tagging", TAGS),
                              ("DELETE", "tagging", None), ("PUT", "cors", CORS),
                              ("DELETE", "cors", None), ("PUT", "encryption", ENC),
                              ("DELETE", "encryption", None)]:
        st, out = anon(method, f"{url}?{sub}", data=body)
        assert st == 403 and b"AccessDenied" in out, (method, sub, st, out)
    # Nothing changed: no default retention, the owner's lifecycle rule, no PAB, no tags.
    assert "Rule" not in root.get_object_lock_configuration(Bucket=b)["ObjectLockConfiguration"]
    assert root.get_bucket_lifecycle_configuration(Bucket=b)["Rules"][0]["ID"] == "keep"
    for fn in (root.get_public_access_block, root.get_bucket_tagging, root.get_bucket_cors,
               root.get_bucket_ownership_controls):
        with pytest.raises(ClientError):
            fn(Bucket=b)
    root.delete_bucket_policy(Bucket=b)
    empty(root, b)


def test_lock_headers_need_retention_and_legal_hold_permissions(wharfd, root, iam):
    b = unique_bucket("lockh")
    root.create_bucket(Bucket=b, ObjectLockEnabledForBucket=True)
    root.put_object(Bucket=b, Key="src", Body=b"source")
    objs = f"arn:aws:s3:::{b}/*"
    writer = new_user(wharfd, iam, "writer", {"Effect": "Allow", "Action": [
        "s3:PutObject", "s3:GetObject"], "Resource": objs})
    until = datetime.datetime.now(UTC) + datetime.timedelta(days=3650)
    lock = {"ObjectLockMode": "COMPLIANCE", "ObjectLockRetainUntilDate": until}
    hold = {"ObjectLockLegalHoldStatus": "ON"}
    for extra in (lock, hold):
        for call in (lambda: writer.s3.put_object(Bucket=b, Key="k", Body=b"x", **extra),
                     lambda: writer.s3.create_multipart_upload(Bucket=b, Key="m", **extra),
                     lambda: writer.s3.copy_object(Bucket=b, Key="c", **extra,
                                                   CopySource={"Bucket": b, "Key": "src"})):
            with pytest.raises(ClientError) as e:
                call()
            assert code(e) == "AccessDenied", e.value.response
    keys = {v["Key"] for v in root.list_object_versions(Bucket=b).get("Versions", [])}
    assert keys == {"src"}
    assert not root.list_multipart_uploads(Bucket=b).get("Uploads")
    # Without the headers the write goes through, with the bucket's (absent) default.
    writer.s3.put_object(Bucket=b, Key="plain", Body=b"x")
    # With both permissions the headers are taken.
    locker = new_user(wharfd, iam, "locker", {"Effect": "Allow", "Action": [
        "s3:PutObject", "s3:PutObjectRetention", "s3:PutObjectLegalHold"], "Resource": objs})
    locker.s3.put_object(Bucket=b, Key="held", Body=b"x", **hold)
    assert root.get_object_legal_hold(Bucket=b, Key="held")["LegalHold"]["Status"] == "ON"
    for v in root.list_object_versions(Bucket=b).get("Versions", []):
        if v["Key"] == "held":
            root.put_object_legal_hold(Bucket=b, Key="held", VersionId=v["VersionId"],
                                       LegalHold={"Status": "OFF"})
    empty(root, b)


def test_deny_list_all_my_buckets_on_s3_arn_wildcard(wharfd, root, iam):
    for resource in ("arn:aws:s3:::*", "*"):
        u = new_user(wharfd, iam, "nolist",
                     {"Effect": "Allow", "Action": "s3:*", "Resource": "*"},
                     {"Effect": "Deny", "Action": "s3:ListAllMyBuckets", "Resource": resource})
        with pytest.raises(ClientError) as e:
            u.s3.list_buckets()
        assert code(e) == "AccessDenied", resource
    # An Allow on arn:aws:s3:::* matches as well (and a Deny on one bucket does not).
    u = new_user(wharfd, iam, "list",
                 {"Effect": "Allow", "Action": "s3:ListAllMyBuckets", "Resource": "arn:aws:s3:::*"},
                 {"Effect": "Deny", "Action": "s3:ListAllMyBuckets",
                  "Resource": "arn:aws:s3:::somebucket"})
    assert "Buckets" in u.s3.list_buckets()


def test_acl_display_name_is_never_the_access_key(wharfd, root):
    b = unique_bucket("dn")
    root.create_bucket(Bucket=b)
    root.put_object(Bucket=b, Key="k", Body=b"v")
    res = f"arn:aws:s3:::{b}"
    root.put_bucket_policy(Bucket=b, Policy=policy(
        {"Effect": "Allow", "Principal": "*", "Action": ["s3:GetBucketAcl", "s3:GetObjectAcl"],
         "Resource": [res, f"{res}/*"]}))
    owner = root.list_buckets()["Owner"]
    for acl in (root.get_bucket_acl(Bucket=b), root.get_object_acl(Bucket=b, Key="k")):
        assert acl["Owner"] == owner and owner["DisplayName"] == "root"
        assert ACCESS_KEY not in json.dumps(acl, default=str)
    for url in (f"{wharfd.endpoint}/{b}?acl", f"{wharfd.endpoint}/{b}/k?acl"):
        st, body = anon("GET", url)
        assert st == 200, body
        assert ACCESS_KEY.encode() not in body and b"<DisplayName>root</DisplayName>" in body
    listed = root.list_objects_v2(Bucket=b, FetchOwner=True)["Contents"][0]["Owner"]
    assert listed == owner
    root.delete_bucket_policy(Bucket=b)
    empty(root, b)


def test_expected_bucket_owner(wharfd, root):
    b = unique_bucket("exp")
    root.create_bucket(Bucket=b)
    root.put_object(Bucket=b, Key="k", Body=b"v")
    # the server's account (the test server's: the default, no --account-id) is accepted
    assert root.get_object(Bucket=b, Key="k", ExpectedBucketOwner=ACCOUNT)["Body"].read() == b"v"
    with pytest.raises(ClientError) as e:
        root.get_object(Bucket=b, Key="k", ExpectedBucketOwner="111122223333")
    assert code(e) == "AccessDenied"
    with pytest.raises(ClientError) as e:
        root.put_object(Bucket=b, Key="k2", Body=b"x", ExpectedBucketOwner="111122223333")
    assert code(e) == "AccessDenied"
    with pytest.raises(ClientError) as e:
        root.copy_object(Bucket=b, Key="k3", CopySource={"Bucket": b, "Key": "k"},
                         ExpectedSourceBucketOwner="111122223333")
    assert code(e) == "AccessDenied"
    assert [o["Key"] for o in root.list_objects_v2(Bucket=b)["Contents"]] == ["k"]
    empty(root, b)


def test_bucket_quota_per_user():
    srv = WharfServer(extra_args=["--max-buckets", "2"])
    srv.start()
    try:
        root = users.client(srv, ACCESS_KEY, SECRET_KEY)
        u = users.create_user(srv, f"quota-{uuid.uuid4().hex[:8]}")
        s3 = u.boto3(srv)
        names = [unique_bucket("quota") for _ in range(3)]
        s3.create_bucket(Bucket=names[0])
        s3.create_bucket(Bucket=names[1])
        with pytest.raises(ClientError) as e:
            s3.create_bucket(Bucket=names[2])
        assert code(e) == "TooManyBuckets"
        assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
        assert "--max-buckets 2" in e.value.response["Error"]["Message"]
        with pytest.raises(ClientError):
            root.head_bucket(Bucket=names[2])
        for i in range(3):  # root is not bound
            root.create_bucket(Bucket=f"{names[2]}-r{i}")
        s3.delete_bucket(Bucket=names[0])
        s3.create_bucket(Bucket=names[2])
    finally:
        assert srv.stop() == 0
        srv.cleanup()
    assert_start_refused(["--max-buckets", "0"],
                         "--max-buckets wants a whole number from 1 to 1000000, got '0'")
