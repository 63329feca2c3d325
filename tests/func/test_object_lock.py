# SPDX-License-Identifier: Apache-2.0
"""S3 Object Lock against a real wharfd with boto3 (and raw signed requests where boto3 cannot
send what is needed), on SQLite, and the enforcement once more on PostgreSQL.

- CreateBucket with x-amz-bucket-object-lock-enabled: true: object lock and versioning
  Enabled, which can then not be suspended (409 InvalidBucketState);
  Put/GetObjectLockConfiguration (404 ObjectLockConfigurationNotFoundError when none, 409 on
  an unversioned bucket, MalformedXML / InvalidRetentionPeriod for a bad default retention);
- a version's retention and legal hold from x-amz-object-lock-* on PutObject,
  CreateMultipartUpload (applied at Complete) and CopyObject (the request's, never the
  source's), the bucket's default retention when the request names none, 400 InvalidRequest on
  a bucket without object lock; Put/GetObjectRetention and Put/GetObjectLegalHold by versionId;
  the lock on HEAD and GET;
- COMPLIANCE is never shortened, removed or bypassed; GOVERNANCE only with
  x-amz-bypass-governance-retention: true by a caller allowed s3:BypassGovernanceRetention;
- enforcement: DeleteObject with versionId (403 AccessDenied naming the lock), DeleteObjects
  (a per-entry AccessDenied), lifecycle expiration of noncurrent versions (the locked version
  stays, the others go), DeleteBucket, an overwrite (a new version; the locked one stays); a
  delete without versionId only adds a delete marker; a retention that has run out no longer
  keeps the version; a legal hold and a delete of one version sent at once never both succeed.
"""
import datetime
import json
import threading
import time

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

import pgserver
import users
from s3raw import S3Raw
from wharfd import ACCESS_KEY, REGION, SECRET_KEY, WharfServer, unique_bucket, wait_until

UTC = datetime.timezone.utc


def client(endpoint):
    return boto3.session.Session().client(
        "s3", endpoint_url=endpoint, aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY, region_name=REGION,
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))


@pytest.fixture(scope="module")
def srv():
    # Lifecycle: one "day" is one second, a pass every second (test-only settings).
    s = WharfServer(extra_args=["--lifecycle-period", "1"],
                    env={"WHARF_LIFECYCLE_DAY_SECONDS": "1"})
    s.start()
    yield s
    rc = s.stop()
    log = s.log_tail()
    s.cleanup()
    assert rc == 0, f"wharfd exited with {rc} on SIGTERM: {log}"


@pytest.fixture(scope="module")
def s3(srv):
    return client(srv.endpoint)


def code(e):
    return e.value.response["Error"]["Code"]


def status(e):
    return e.value.response["ResponseMetadata"]["HTTPStatusCode"]


def message(e):
    return e.value.response["Error"]["Message"]


def later(seconds):
    return datetime.datetime.now(UTC) + datetime.timedelta(seconds=seconds)


def lock_bucket(s3, prefix="olk"):
    b = unique_bucket(prefix)
    s3.create_bucket(Bucket=b, ObjectLockEnabledForBucket=True)
    return b


def version_ids(s3, b, key):
    vs = s3.list_object_versions(Bucket=b, Prefix=key).get("Versions", [])
    return [v["VersionId"] for v in vs if v["Key"] == key]


def assert_locked_delete(s3, b, key, vid, **kw):
    with pytest.raises(ClientError) as e:
        s3.delete_object(Bucket=b, Key=key, VersionId=vid, **kw)
    assert status(e) == 403 and code(e) == "AccessDenied", e.value.response
    assert "object lock" in message(e), message(e)
    assert vid in version_ids(s3, b, key)


# ---- the bucket's configuration ----

def test_create_bucket_with_object_lock(s3):
    b = lock_bucket(s3)
    assert s3.get_bucket_versioning(Bucket=b)["Status"] == "Enabled"
    cfg = s3.get_object_lock_configuration(Bucket=b)["ObjectLockConfiguration"]
    assert cfg == {"ObjectLockEnabled": "Enabled"}
    with pytest.raises(ClientError) as e:
        s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Suspended"})
    assert status(e) == 409 and code(e) == "InvalidBucketState"
    assert s3.get_bucket_versioning(Bucket=b)["Status"] == "Enabled"
    # false: a plain bucket
    p = unique_bucket("olkno")
    s3.create_bucket(Bucket=p, ObjectLockEnabledForBucket=False)
    with pytest.raises(ClientError) as e:
        s3.get_object_lock_configuration(Bucket=p)
    assert status(e) == 404 and code(e) == "ObjectLockConfigurationNotFoundError"
    assert "Status" not in s3.get_bucket_versioning(Bucket=p)


def test_put_lock_configuration(s3):
    b = unique_bucket("olkcfg")
    s3.create_bucket(Bucket=b)
    rule = {"ObjectLockEnabled": "Enabled",
            "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 1}}}
    with pytest.raises(ClientError) as e:  # unversioned
        s3.put_object_lock_configuration(Bucket=b, ObjectLockConfiguration=rule)
    assert status(e) == 409 and code(e) == "InvalidBucketState"
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Suspended"})
    with pytest.raises(ClientError) as e:  # suspended
        s3.put_object_lock_configuration(Bucket=b, ObjectLockConfiguration=rule)
    assert code(e) == "InvalidBucketState"
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    s3.put_object_lock_configuration(Bucket=b, ObjectLockConfiguration=rule)
    assert s3.get_object_lock_configuration(Bucket=b)["ObjectLockConfiguration"] == rule
    years = {"ObjectLockEnabled": "Enabled",
             "Rule": {"DefaultRetention": {"Mode": "COMPLIANCE", "Years": 2}}}
    s3.put_object_lock_configuration(Bucket=b, ObjectLockConfiguration=years)
    assert s3.get_object_lock_configuration(Bucket=b)["ObjectLockConfiguration"] == years
    with pytest.raises(ClientError) as e:
        s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Suspended"})
    assert code(e) == "InvalidBucketState"
    bad = [({"Mode": "GOVERNANCE", "Days": 1, "Years": 1}, "MalformedXML"),
           ({"Mode": "GOVERNANCE"}, "MalformedXML"),
           ({"Days": 1}, "MalformedXML"),
           # S3's code for a period that is not a positive number (s3-tests'
           # test_object_lock_put_obj_lock_invalid_days / _invalid_years)
           ({"Mode": "GOVERNANCE", "Days": 0}, "InvalidRetentionPeriod"),
           ({"Mode": "COMPLIANCE", "Years": -1}, "InvalidRetentionPeriod")]
    for dr, want in bad:
        with pytest.raises(ClientError) as e:
            s3.put_object_lock_configuration(Bucket=b, ObjectLockConfiguration={
                "ObjectLockEnabled": "Enabled", "Rule": {"DefaultRetention": dr}})
        assert status(e) == 400 and code(e) == want, (dr, e.value.response)
    # a refused document changed nothing
    assert s3.get_object_lock_configuration(Bucket=b)["ObjectLockConfiguration"] == years


def test_lock_headers_need_a_lock_bucket(s3):
    b = unique_bucket("olkplain")
    s3.create_bucket(Bucket=b)
    s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    for kw in ({"ObjectLockMode": "GOVERNANCE", "ObjectLockRetainUntilDate": later(3600)},
               {"ObjectLockLegalHoldStatus": "ON"}):
        with pytest.raises(ClientError) as e:
            s3.put_object(Bucket=b, Key="k", Body=b"x", **kw)
        assert status(e) == 400 and code(e) == "InvalidRequest"
        with pytest.raises(ClientError) as e:
            s3.create_multipart_upload(Bucket=b, Key="k", **kw)
        assert status(e) == 400 and code(e) == "InvalidRequest"
    assert not s3.list_object_versions(Bucket=b).get("Versions")
    assert not s3.list_multipart_uploads(Bucket=b).get("Uploads")
    s3.put_object(Bucket=b, Key="k", Body=b"x")
    with pytest.raises(ClientError) as e:
        s3.put_object_retention(Bucket=b, Key="k", Retention={
            "Mode": "GOVERNANCE", "RetainUntilDate": later(3600)})
    assert status(e) == 400 and code(e) == "InvalidRequest"
    with pytest.raises(ClientError) as e:
        s3.put_object_legal_hold(Bucket=b, Key="k", LegalHold={"Status": "ON"})
    assert status(e) == 400 and code(e) == "InvalidRequest"


def test_bad_lock_headers(s3):
    b = lock_bucket(s3)
    raw = S3Raw(s3.meta.endpoint_url)
    cases = [({"x-amz-object-lock-mode": "GOVERNANCE"}, "InvalidArgument"),
             ({"x-amz-object-lock-mode": "STRICT",
               "x-amz-object-lock-retain-until-date": "2099-01-01T00:00:00Z"}, "InvalidArgument"),
             ({"x-amz-object-lock-mode": "GOVERNANCE",
               "x-amz-object-lock-retain-until-date": "tomorrow"}, "InvalidArgument"),
             ({"x-amz-object-lock-mode": "GOVERNANCE",
               "x-amz-object-lock-retain-until-date": "2001-01-01T00:00:00Z"}, "InvalidArgument"),
             ({"x-amz-object-lock-legal-hold": "MAYBE"}, "InvalidArgument")]
    for h, want in cases:
        r = raw.request("PUT", f"/{b}/k", headers=h, body=b"x")
        assert r.status == 400 and r.error_code() == want, (h, r)
    assert not s3.list_object_versions(Bucket=b).get("Versions")
    # on an API that sets no lock: refused, not dropped
    up = s3.create_multipart_upload(Bucket=b, Key="m")
    r = raw.request("PUT", f"/{b}/m", query={"partNumber": "1", "uploadId": up["UploadId"]},
                    headers={"x-amz-object-lock-legal-hold": "ON"}, body=b"part")
    assert r.status == 400 and r.error_code() == "InvalidRequest", r
    s3.abort_multipart_upload(Bucket=b, Key="m", UploadId=up["UploadId"])


# ---- a version's retention ----

def test_governance_retention(s3):
    b = lock_bucket(s3)
    until = later(3600).replace(microsecond=0)
    v = s3.put_object(Bucket=b, Key="k", Body=b"kept", ObjectLockMode="GOVERNANCE",
                      ObjectLockRetainUntilDate=until)["VersionId"]
    h = s3.head_object(Bucket=b, Key="k")
    assert h["ObjectLockMode"] == "GOVERNANCE" and h["ObjectLockRetainUntilDate"] == until
    g = s3.get_object(Bucket=b, Key="k", VersionId=v)
    assert g["ObjectLockMode"] == "GOVERNANCE" and g["Body"].read() == b"kept"
    assert "ObjectLockLegalHoldStatus" not in h
    r = s3.get_object_retention(Bucket=b, Key="k", VersionId=v)["Retention"]
    assert r == {"Mode": "GOVERNANCE", "RetainUntilDate": until}
    assert_locked_delete(s3, b, "k", v)
    # the bypass header alone is not a removal of the lock for a shortening either
    with pytest.raises(ClientError) as e:
        s3.put_object_retention(Bucket=b, Key="k", VersionId=v, Retention={
            "Mode": "GOVERNANCE", "RetainUntilDate": later(60)})
    assert status(e) == 403 and code(e) == "AccessDenied"
    with pytest.raises(ClientError) as e:
        s3.put_object_retention(Bucket=b, Key="k", VersionId=v, Retention={})
    assert code(e) == "AccessDenied"
    # extending needs no bypass
    longer = later(7200).replace(microsecond=0)
    s3.put_object_retention(Bucket=b, Key="k", VersionId=v, Retention={
        "Mode": "GOVERNANCE", "RetainUntilDate": longer})
    assert s3.get_object_retention(Bucket=b, Key="k", VersionId=v)["Retention"][
        "RetainUntilDate"] == longer
    # a delete without versionId: a delete marker; the version stays
    d = s3.delete_object(Bucket=b, Key="k")
    assert d["DeleteMarker"] is True
    assert s3.get_object(Bucket=b, Key="k", VersionId=v)["Body"].read() == b"kept"
    # an overwrite is a new version; the locked one stays
    s3.put_object(Bucket=b, Key="k", Body=b"newer")
    assert s3.get_object(Bucket=b, Key="k", VersionId=v)["Body"].read() == b"kept"
    # root holds s3:BypassGovernanceRetention: shorten, then delete with the bypass
    s3.put_object_retention(Bucket=b, Key="k", VersionId=v, BypassGovernanceRetention=True,
                            Retention={"Mode": "GOVERNANCE", "RetainUntilDate": later(60)})
    assert_locked_delete(s3, b, "k", v)
    s3.delete_object(Bucket=b, Key="k", VersionId=v, BypassGovernanceRetention=True)
    assert v not in version_ids(s3, b, "k")
    with pytest.raises(ClientError) as e:  # the bucket still holds versions
        s3.delete_bucket(Bucket=b)
    assert code(e) == "BucketNotEmpty"


def test_compliance_retention(s3):
    b = lock_bucket(s3)
    until = later(3600).replace(microsecond=0)
    v = s3.put_object(Bucket=b, Key="c", Body=b"c", ObjectLockMode="COMPLIANCE",
                      ObjectLockRetainUntilDate=until)["VersionId"]
    assert_locked_delete(s3, b, "c", v)
    assert_locked_delete(s3, b, "c", v, BypassGovernanceRetention=True)
    for ret in ({"Mode": "COMPLIANCE", "RetainUntilDate": later(60)},
                {"Mode": "GOVERNANCE", "RetainUntilDate": later(7200)},
                {}):
        with pytest.raises(ClientError) as e:
            s3.put_object_retention(Bucket=b, Key="c", VersionId=v, Retention=ret,
                                    BypassGovernanceRetention=True)
        assert status(e) == 403 and code(e) == "AccessDenied", ret
    assert s3.get_object_retention(Bucket=b, Key="c", VersionId=v)["Retention"] == {
        "Mode": "COMPLIANCE", "RetainUntilDate": until}
    longer = later(7200).replace(microsecond=0)
    s3.put_object_retention(Bucket=b, Key="c", VersionId=v, Retention={
        "Mode": "COMPLIANCE", "RetainUntilDate": longer})
    assert s3.head_object(Bucket=b, Key="c", VersionId=v)["ObjectLockRetainUntilDate"] == longer
    # GOVERNANCE becomes COMPLIANCE only with the bypass (S3: a change of mode changes the
    # GOVERNANCE retention), then stays
    g = s3.put_object(Bucket=b, Key="g", Body=b"g", ObjectLockMode="GOVERNANCE",
                      ObjectLockRetainUntilDate=until)["VersionId"]
    with pytest.raises(ClientError) as e:
        s3.put_object_retention(Bucket=b, Key="g", VersionId=g, Retention={
            "Mode": "COMPLIANCE", "RetainUntilDate": until})
    assert status(e) == 403 and code(e) == "AccessDenied"
    assert s3.head_object(Bucket=b, Key="g", VersionId=g)["ObjectLockMode"] == "GOVERNANCE"
    s3.put_object_retention(Bucket=b, Key="g", VersionId=g, BypassGovernanceRetention=True,
                            Retention={"Mode": "COMPLIANCE", "RetainUntilDate": until})
    assert s3.head_object(Bucket=b, Key="g", VersionId=g)["ObjectLockMode"] == "COMPLIANCE"
    assert_locked_delete(s3, b, "g", g, BypassGovernanceRetention=True)
    # a past date is refused
    with pytest.raises(ClientError) as e:
        s3.put_object_retention(Bucket=b, Key="c", VersionId=v, Retention={
            "Mode": "COMPLIANCE", "RetainUntilDate": datetime.datetime(2001, 1, 1, tzinfo=UTC)})
    assert status(e) == 400 and code(e) == "InvalidArgument"


def test_retention_runs_out(s3):
    b = lock_bucket(s3)
    v = s3.put_object(Bucket=b, Key="short", Body=b"s", ObjectLockMode="COMPLIANCE",
                      ObjectLockRetainUntilDate=later(2))["VersionId"]
    assert_locked_delete(s3, b, "short", v)
    time.sleep(3.2)
    s3.delete_object(Bucket=b, Key="short", VersionId=v)
    assert v not in version_ids(s3, b, "short")


def test_no_retention(s3):
    b = lock_bucket(s3)
    v = s3.put_object(Bucket=b, Key="free", Body=b"f")["VersionId"]
    with pytest.raises(ClientError) as e:
        s3.get_object_retention(Bucket=b, Key="free", VersionId=v)
    assert status(e) == 404 and code(e) == "NoSuchObjectLockConfiguration"
    assert s3.get_object_legal_hold(Bucket=b, Key="free")["LegalHold"] == {"Status": "OFF"}
    assert "ObjectLockMode" not in s3.head_object(Bucket=b, Key="free")
    with pytest.raises(ClientError) as e:
        s3.get_object_retention(Bucket=b, Key="free", VersionId="0" * 32)
    assert status(e) == 404 and code(e) == "NoSuchVersion"
    s3.delete_object(Bucket=b, Key="free", VersionId=v)


# ---- legal hold ----

def test_legal_hold(s3):
    b = lock_bucket(s3)
    v = s3.put_object(Bucket=b, Key="h", Body=b"h", ObjectLockLegalHoldStatus="ON")["VersionId"]
    assert s3.head_object(Bucket=b, Key="h")["ObjectLockLegalHoldStatus"] == "ON"
    assert s3.get_object_legal_hold(Bucket=b, Key="h", VersionId=v)["LegalHold"] == {
        "Status": "ON"}
    assert_locked_delete(s3, b, "h", v)
    assert_locked_delete(s3, b, "h", v, BypassGovernanceRetention=True)
    s3.put_object_legal_hold(Bucket=b, Key="h", VersionId=v, LegalHold={"Status": "OFF"})
    assert "ObjectLockLegalHoldStatus" not in s3.head_object(Bucket=b, Key="h")
    # a hold set afterwards on an older version keeps it too
    w = s3.put_object(Bucket=b, Key="h", Body=b"h2")["VersionId"]
    s3.put_object_legal_hold(Bucket=b, Key="h", VersionId=v, LegalHold={"Status": "ON"})
    assert_locked_delete(s3, b, "h", v)
    s3.put_object_legal_hold(Bucket=b, Key="h", VersionId=v, LegalHold={"Status": "OFF"})
    s3.delete_object(Bucket=b, Key="h", VersionId=v)
    s3.delete_object(Bucket=b, Key="h", VersionId=w)
    assert version_ids(s3, b, "h") == []


# ---- the bucket default, multipart, copy ----

def test_default_retention(s3):
    b = lock_bucket(s3)
    s3.put_object_lock_configuration(Bucket=b, ObjectLockConfiguration={
        "ObjectLockEnabled": "Enabled",
        "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 1}}})
    before = datetime.datetime.now(UTC)
    v = s3.put_object(Bucket=b, Key="d", Body=b"d")["VersionId"]
    h = s3.head_object(Bucket=b, Key="d", VersionId=v)
    assert h["ObjectLockMode"] == "GOVERNANCE"
    delta = h["ObjectLockRetainUntilDate"] - before
    assert datetime.timedelta(hours=23, minutes=59) < delta < datetime.timedelta(days=1, seconds=5)
    assert_locked_delete(s3, b, "d", v)
    # the request's headers win over the default
    until = later(600).replace(microsecond=0)
    e = s3.put_object(Bucket=b, Key="e", Body=b"e", ObjectLockMode="COMPLIANCE",
                      ObjectLockRetainUntilDate=until)["VersionId"]
    h = s3.head_object(Bucket=b, Key="e", VersionId=e)
    assert h["ObjectLockMode"] == "COMPLIANCE" and h["ObjectLockRetainUntilDate"] == until
    # a multipart upload without headers gets the default too
    up = s3.create_multipart_upload(Bucket=b, Key="m")
    p = s3.upload_part(Bucket=b, Key="m", UploadId=up["UploadId"], PartNumber=1, Body=b"part")
    mv = s3.complete_multipart_upload(
        Bucket=b, Key="m", UploadId=up["UploadId"],
        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": p["ETag"]}]})["VersionId"]
    assert s3.head_object(Bucket=b, Key="m", VersionId=mv)["ObjectLockMode"] == "GOVERNANCE"
    assert_locked_delete(s3, b, "m", mv)


def test_multipart_lock(s3):
    b = lock_bucket(s3)
    until = later(3600).replace(microsecond=0)
    up = s3.create_multipart_upload(Bucket=b, Key="mp", ObjectLockMode="COMPLIANCE",
                                    ObjectLockRetainUntilDate=until,
                                    ObjectLockLegalHoldStatus="ON")
    p = s3.upload_part(Bucket=b, Key="mp", UploadId=up["UploadId"], PartNumber=1, Body=b"x" * 10)
    # not locked before it completes
    assert version_ids(s3, b, "mp") == []
    v = s3.complete_multipart_upload(
        Bucket=b, Key="mp", UploadId=up["UploadId"],
        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": p["ETag"]}]})["VersionId"]
    h = s3.head_object(Bucket=b, Key="mp", VersionId=v)
    assert h["ObjectLockMode"] == "COMPLIANCE" and h["ObjectLockRetainUntilDate"] == until
    assert h["ObjectLockLegalHoldStatus"] == "ON"
    assert_locked_delete(s3, b, "mp", v)


def test_copy_destination_lock(s3):
    b = lock_bucket(s3)
    until = later(3600).replace(microsecond=0)
    src = s3.put_object(Bucket=b, Key="src", Body=b"source", ObjectLockMode="COMPLIANCE",
                        ObjectLockRetainUntilDate=until,
                        ObjectLockLegalHoldStatus="ON")["VersionId"]
    # the source's lock is not copied
    c1 = s3.copy_object(Bucket=b, Key="c1", CopySource={"Bucket": b, "Key": "src"})["VersionId"]
    h = s3.head_object(Bucket=b, Key="c1", VersionId=c1)
    assert "ObjectLockMode" not in h and "ObjectLockLegalHoldStatus" not in h
    s3.delete_object(Bucket=b, Key="c1", VersionId=c1)
    # the request's lock is set on the copy
    c2 = s3.copy_object(Bucket=b, Key="c2", CopySource={"Bucket": b, "Key": "src"},
                        ObjectLockMode="GOVERNANCE", ObjectLockRetainUntilDate=until,
                        MetadataDirective="REPLACE", ContentType="text/x")["VersionId"]
    h = s3.head_object(Bucket=b, Key="c2", VersionId=c2)
    assert h["ObjectLockMode"] == "GOVERNANCE" and h["ContentType"] == "text/x"
    assert_locked_delete(s3, b, "c2", c2)
    # a plain destination bucket refuses the headers
    plain = unique_bucket("olkdst")
    s3.create_bucket(Bucket=plain)
    with pytest.raises(ClientError) as e:
        s3.copy_object(Bucket=plain, Key="c", CopySource={"Bucket": b, "Key": "src"},
                       ObjectLockLegalHoldStatus="ON")
    assert status(e) == 400 and code(e) == "InvalidRequest"
    assert not s3.list_objects_v2(Bucket=plain).get("Contents")
    assert_locked_delete(s3, b, "src", src)


# ---- permissions ----

def test_bypass_needs_the_permission(srv, s3):
    b = lock_bucket(s3)
    v = s3.put_object(Bucket=b, Key="k", Body=b"k", ObjectLockMode="GOVERNANCE",
                      ObjectLockRetainUntilDate=later(3600))["VersionId"]
    u = users.create_user(srv, unique_bucket("olkuser")[:40])
    base = ["s3:GetObject", "s3:GetObjectVersion", "s3:DeleteObject", "s3:DeleteObjectVersion",
            "s3:ListBucketVersions", "s3:PutObjectRetention", "s3:GetObjectRetention"]

    def allow(*actions):
        s3.put_bucket_policy(Bucket=b, Policy=json.dumps({
            "Version": "2012-10-17", "Statement": [{
                "Effect": "Allow", "Principal": {"AWS": [u.arn]}, "Action": list(actions),
                "Resource": [f"arn:aws:s3:::{b}/*", f"arn:aws:s3:::{b}"]}]}))

    allow(*base)
    c = u.boto3(srv)
    assert c.get_object_retention(Bucket=b, Key="k", VersionId=v)["Retention"]["Mode"] == \
        "GOVERNANCE"
    assert c.head_object(Bucket=b, Key="k")["ObjectLockMode"] == "GOVERNANCE"
    assert_locked_delete(c, b, "k", v, BypassGovernanceRetention=True)
    with pytest.raises(ClientError) as e:
        c.put_object_retention(Bucket=b, Key="k", VersionId=v, BypassGovernanceRetention=True,
                               Retention={})
    assert code(e) == "AccessDenied"
    # DeleteObjects: a per-entry AccessDenied
    r = c.delete_objects(Bucket=b, BypassGovernanceRetention=True,
                         Delete={"Objects": [{"Key": "k", "VersionId": v}]})
    assert [x["Code"] for x in r.get("Errors", [])] == ["AccessDenied"] and not r.get("Deleted")
    allow(*base, "s3:BypassGovernanceRetention")
    c.delete_object(Bucket=b, Key="k", VersionId=v, BypassGovernanceRetention=True)
    assert v not in version_ids(s3, b, "k")


def test_lock_sub_resources_need_their_actions(srv, s3):
    b = lock_bucket(s3)
    v = s3.put_object(Bucket=b, Key="k", Body=b"k")["VersionId"]
    u = users.create_user(srv, unique_bucket("olkuser2")[:40])
    c = u.boto3(srv)
    for call in (lambda: c.get_object_lock_configuration(Bucket=b),
                 lambda: c.get_object_retention(Bucket=b, Key="k", VersionId=v),
                 lambda: c.put_object_legal_hold(Bucket=b, Key="k", VersionId=v,
                                                 LegalHold={"Status": "ON"})):
        with pytest.raises(ClientError) as e:
            call()
        assert code(e) == "AccessDenied"
    assert "ObjectLockLegalHoldStatus" not in s3.head_object(Bucket=b, Key="k")
    # HEAD shows the lock only to a caller allowed to read it
    s3.put_object_legal_hold(Bucket=b, Key="k", VersionId=v, LegalHold={"Status": "ON"})
    s3.put_object_retention(Bucket=b, Key="k", VersionId=v, Retention={
        "Mode": "GOVERNANCE", "RetainUntilDate": later(3600)})
    s3.put_bucket_policy(Bucket=b, Policy=json.dumps({
        "Version": "2012-10-17", "Statement": [{
            "Effect": "Allow", "Principal": {"AWS": [u.arn]}, "Action": ["s3:GetObject"],
            "Resource": [f"arn:aws:s3:::{b}/*"]}]}))
    h = c.head_object(Bucket=b, Key="k")
    assert "ObjectLockMode" not in h and "ObjectLockLegalHoldStatus" not in h
    h = s3.head_object(Bucket=b, Key="k")
    assert h["ObjectLockMode"] == "GOVERNANCE" and h["ObjectLockLegalHoldStatus"] == "ON"


# ---- DeleteObjects and lifecycle ----

def test_delete_objects_per_entry(s3):
    b = lock_bucket(s3)
    locked = s3.put_object(Bucket=b, Key="a", Body=b"a",
                           ObjectLockLegalHoldStatus="ON")["VersionId"]
    free = s3.put_object(Bucket=b, Key="b", Body=b"b")["VersionId"]
    r = s3.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "a", "VersionId": locked},
                                                        {"Key": "b", "VersionId": free},
                                                        {"Key": "a"}]})
    errs = r.get("Errors", [])
    assert [(x["Key"], x["VersionId"], x["Code"]) for x in errs] == [("a", locked,
                                                                      "AccessDenied")]
    assert "object lock" in errs[0]["Message"]
    deleted = {(x["Key"], x.get("VersionId")) for x in r["Deleted"]}
    assert deleted == {("b", free), ("a", None)}  # the key-only entry made a delete marker
    assert locked in version_ids(s3, b, "a") and free not in version_ids(s3, b, "b")


def test_lifecycle_leaves_locked_versions(srv, s3):
    b = lock_bucket(s3)
    held = s3.put_object(Bucket=b, Key="lc/k", Body=b"1",
                         ObjectLockLegalHoldStatus="ON")["VersionId"]
    ret = s3.put_object(Bucket=b, Key="lc/k", Body=b"2", ObjectLockMode="GOVERNANCE",
                        ObjectLockRetainUntilDate=later(3600))["VersionId"]
    free = s3.put_object(Bucket=b, Key="lc/k", Body=b"3")["VersionId"]
    cur = s3.put_object(Bucket=b, Key="lc/k", Body=b"4")["VersionId"]
    locked_before = srv.metric_sum("wharf_lifecycle_locked_total")
    s3.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={"Rules": [{
        "ID": "nc", "Status": "Enabled", "Filter": {"Prefix": "lc/"},
        "NoncurrentVersionExpiration": {"NoncurrentDays": 1}}]})
    assert wait_until(lambda: free not in version_ids(s3, b, "lc/k"), timeout=20), \
        "lifecycle did not expire the unlocked noncurrent version"
    assert wait_until(lambda: srv.metric_sum("wharf_lifecycle_locked_total") >=
                      locked_before + 2, timeout=20)
    assert version_ids(s3, b, "lc/k") == [cur, ret, held]
    assert s3.get_object(Bucket=b, Key="lc/k", VersionId=held)["Body"].read() == b"1"
    s3.delete_bucket_lifecycle(Bucket=b)


def race_hold_and_delete(c, b, rounds):
    """A legal hold and a delete of the same version, sent at once, rounds times: never both
    succeed (the delete reads the lock in its own transaction). Returns the outcomes seen."""
    seen = set()
    for i in range(rounds):
        v = c.put_object(Bucket=b, Key="race", Body=b"%d" % i)["VersionId"]
        go = threading.Barrier(2, timeout=10)
        out = {}

        def hold():
            go.wait()
            try:
                c.put_object_legal_hold(Bucket=b, Key="race", VersionId=v,
                                        LegalHold={"Status": "ON"})
                out["hold"] = True
            except ClientError as e:
                out["hold"] = e.response["Error"]["Code"]

        def delete():
            go.wait()
            try:
                c.delete_object(Bucket=b, Key="race", VersionId=v)
                out["delete"] = True
            except ClientError as e:
                out["delete"] = e.response["Error"]["Code"]

        ts = [threading.Thread(target=hold), threading.Thread(target=delete)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(timeout=30)
        assert not (out.get("hold") is True and out.get("delete") is True), (i, out)
        assert out.get("hold") is True or out.get("delete") is True, (i, out)
        present = v in version_ids(c, b, "race")
        assert present == (out["delete"] is not True), (i, out)
        if present:
            c.put_object_legal_hold(Bucket=b, Key="race", VersionId=v,
                                    LegalHold={"Status": "OFF"})
            c.delete_object(Bucket=b, Key="race", VersionId=v)
        seen.add((out["hold"], out["delete"]))
    return seen


def test_hold_and_delete_race(s3):
    b = lock_bucket(s3)
    race_hold_and_delete(s3, b, 30)


def test_lock_survives_restart(tmp_path):
    (tmp_path / "d").mkdir()
    with WharfServer(data_dir=str(tmp_path / "d")) as s:
        c = client(s.endpoint)
        b = lock_bucket(c)
        v = c.put_object(Bucket=b, Key="k", Body=b"k", ObjectLockMode="COMPLIANCE",
                         ObjectLockRetainUntilDate=later(3600))["VersionId"]
    with WharfServer(data_dir=str(tmp_path / "d")) as s:
        c = client(s.endpoint)
        assert c.get_object_lock_configuration(Bucket=b)["ObjectLockConfiguration"][
            "ObjectLockEnabled"] == "Enabled"
        assert_locked_delete(c, b, "k", v)


# ---- PostgreSQL ----

reason = pgserver.missing_reason()


@pytest.mark.skipif(reason is not None, reason=reason or "")
def test_enforcement_on_postgresql():
    with pgserver.PgServer() as pg:
        url = pg.create_db("objlock")
        with WharfServer(extra_args=["--meta", url]) as s:
            c = client(s.endpoint)
            b = lock_bucket(c, "olkpg")
            with pytest.raises(ClientError) as e:
                c.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Suspended"})
            assert code(e) == "InvalidBucketState"
            until = later(3600).replace(microsecond=0)
            g = c.put_object(Bucket=b, Key="k", Body=b"g", ObjectLockMode="GOVERNANCE",
                             ObjectLockRetainUntilDate=until)["VersionId"]
            k = c.put_object(Bucket=b, Key="k", Body=b"c", ObjectLockMode="COMPLIANCE",
                             ObjectLockRetainUntilDate=until)["VersionId"]
            h = c.put_object(Bucket=b, Key="k", Body=b"h",
                             ObjectLockLegalHoldStatus="ON")["VersionId"]
            assert c.head_object(Bucket=b, Key="k", VersionId=k)["ObjectLockMode"] == "COMPLIANCE"
            for v in (g, k, h):
                assert_locked_delete(c, b, "k", v)
            assert_locked_delete(c, b, "k", k, BypassGovernanceRetention=True)
            with pytest.raises(ClientError) as e:
                c.put_object_retention(Bucket=b, Key="k", VersionId=k, Retention={},
                                       BypassGovernanceRetention=True)
            assert code(e) == "AccessDenied"
            r = c.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "k", "VersionId": h}]})
            assert [x["Code"] for x in r["Errors"]] == ["AccessDenied"]
            c.delete_object(Bucket=b, Key="k", VersionId=g, BypassGovernanceRetention=True)
            c.put_object_legal_hold(Bucket=b, Key="k", VersionId=h, LegalHold={"Status": "OFF"})
            c.delete_object(Bucket=b, Key="k", VersionId=h)
            assert version_ids(c, b, "k") == [k]
            assert pg.sql("SELECT lock_mode FROM objects", db="objlock") == "2"
            race_hold_and_delete(c, b, 20)
