# SPDX-License-Identifier: Apache-2.0
"""Bucket configurations against a real wharfd, with boto3, the real awscli and unsigned
browser-like requests: bucket tagging, CORS (configuration, the OPTIONS preflight and the
Access-Control-* headers of allowed requests), PublicAccessBlock (each switch enforced) and
OwnershipControls (BucketOwnerEnforced turns ACLs off). Configurations survive a restart and
are gone with their bucket."""
import json
import subprocess
import urllib.error
import urllib.request

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from wharfd import ACCESS_KEY, REGION, SECRET_KEY, WharfServer, unique_bucket

AWS = "/usr/bin/aws"


def client(endpoint):
    return boto3.session.Session().client(
        "s3", endpoint_url=endpoint, aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY, region_name=REGION,
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))


def code(excinfo):
    return excinfo.value.response["Error"]["Code"]


def raw(method, url, headers=None, data=None):
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, dict((k.lower(), v) for k, v in r.headers.items()), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict((k.lower(), v) for k, v in e.headers.items()), e.read()


@pytest.fixture(scope="module")
def s3(wharfd):
    return client(wharfd.endpoint)


@pytest.fixture()
def bucket(s3):
    b = unique_bucket("bcfg")
    s3.create_bucket(Bucket=b)
    yield b
    for o in s3.list_objects_v2(Bucket=b).get("Contents", []):
        s3.delete_object(Bucket=b, Key=o["Key"])
    s3.delete_bucket(Bucket=b)


def test_bucket_tagging(s3, bucket):
    with pytest.raises(ClientError) as e:
        s3.get_bucket_tagging(Bucket=bucket)
    assert code(e) == "NoSuchTagSet"
    tags = [{"Key": f"k{i}", "Value": f"v {i}/é"} for i in range(30)]  # buckets take 50
    s3.put_bucket_tagging(Bucket=bucket, Tagging={"TagSet": tags})
    assert s3.get_bucket_tagging(Bucket=bucket)["TagSet"] == tags
    with pytest.raises(ClientError) as e:
        s3.put_bucket_tagging(Bucket=bucket, Tagging={"TagSet": [
            {"Key": f"k{i}", "Value": "v"} for i in range(51)]})
    assert code(e) == "InvalidTag" and "50" in str(e.value)
    with pytest.raises(ClientError) as e:
        s3.put_bucket_tagging(Bucket=bucket, Tagging={"TagSet": [{"Key": "aws:x", "Value": "v"}]})
    assert code(e) == "InvalidTag"
    assert s3.get_bucket_tagging(Bucket=bucket)["TagSet"] == tags  # a refusal changes nothing
    # DELETE ?tagging removes the tags, never the bucket.
    s3.put_object(Bucket=bucket, Key="o", Body=b"x")
    s3.delete_bucket_tagging(Bucket=bucket)
    with pytest.raises(ClientError) as e:
        s3.get_bucket_tagging(Bucket=bucket)
    assert code(e) == "NoSuchTagSet"
    assert s3.head_bucket(Bucket=bucket)
    # Object tags keep their own limit of 10.
    with pytest.raises(ClientError) as e:
        s3.put_object_tagging(Bucket=bucket, Key="o", Tagging={"TagSet": [
            {"Key": f"k{i}", "Value": "v"} for i in range(11)]})
    assert code(e) == "InvalidTag"


def test_cors_configuration_preflight_and_headers(wharfd, s3, bucket):
    url = f"{wharfd.endpoint}/{bucket}/k"
    st, h, _ = raw("OPTIONS", url, {"Origin": "https://app.example",
                                    "Access-Control-Request-Method": "GET"})
    assert st == 403 and "access-control-allow-origin" not in h
    with pytest.raises(ClientError) as e:
        s3.get_bucket_cors(Bucket=bucket)
    assert code(e) == "NoSuchCORSConfiguration"
    rules = [{"AllowedOrigins": ["https://*.example"], "AllowedMethods": ["GET", "PUT"],
              "AllowedHeaders": ["x-amz-*", "Content-Type"], "ExposeHeaders": ["ETag"],
              "MaxAgeSeconds": 600},
             {"ID": "anyone-reads", "AllowedOrigins": ["*"], "AllowedMethods": ["HEAD"]}]
    s3.put_bucket_cors(Bucket=bucket, CORSConfiguration={"CORSRules": rules})
    got = s3.get_bucket_cors(Bucket=bucket)["CORSRules"]
    assert got[0]["AllowedOrigins"] == ["https://*.example"] and got[1]["ID"] == "anyone-reads"
    assert got[0]["MaxAgeSeconds"] == 600 and got[0]["ExposeHeaders"] == ["ETag"]
    # A preflight the first rule allows.
    st, h, _ = raw("OPTIONS", url, {"Origin": "https://app.example",
                                    "Access-Control-Request-Method": "PUT",
                                    "Access-Control-Request-Headers": "x-amz-date, content-type"})
    assert st == 200, h
    assert h["access-control-allow-origin"] == "https://app.example"
    assert "PUT" in h["access-control-allow-methods"]
    assert h["access-control-max-age"] == "600"
    assert h["access-control-allow-headers"] == "x-amz-date, content-type"
    # Refused: another origin, a method no rule names, a header no rule allows.
    for hdrs in ({"Origin": "https://evil.test", "Access-Control-Request-Method": "GET"},
                 {"Origin": "https://app.example", "Access-Control-Request-Method": "DELETE"},
                 {"Origin": "https://app.example", "Access-Control-Request-Method": "GET",
                  "Access-Control-Request-Headers": "authorization"}):
        st, h, body = raw("OPTIONS", url, hdrs)
        assert st == 403 and b"AccessForbidden" in body, (hdrs, st, body)
    st, _, body = raw("OPTIONS", url, {"Origin": "https://app.example"})
    assert st == 400 and b"Access-Control-Request-Method" in body
    # An actual request from an allowed origin carries the headers; another origin's not.
    s3.put_object(Bucket=bucket, Key="k", Body=b"hello")
    s3.put_bucket_policy(Bucket=bucket, Policy=json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
         "Resource": f"arn:aws:s3:::{bucket}/*"}]}))
    st, h, body = raw("GET", url, {"Origin": "https://www.example"})
    assert st == 200 and body == b"hello"
    assert h["access-control-allow-origin"] == "https://www.example"
    assert h["access-control-expose-headers"] == "ETag"
    st, h, _ = raw("GET", url, {"Origin": "https://evil.test"})
    assert st == 200 and "access-control-allow-origin" not in h
    st, h, _ = raw("HEAD", url, {"Origin": "https://evil.test"})
    assert h.get("access-control-allow-origin") == "*"
    # Malformed configurations are refused by name and change nothing.
    for bad, want in (([{"AllowedOrigins": ["*"], "AllowedMethods": ["PATCH"]}], "PATCH"),
                      ([{"AllowedOrigins": ["https://*.*.x"], "AllowedMethods": ["GET"]}],
                       "wildcard")):
        with pytest.raises(ClientError) as e:
            s3.put_bucket_cors(Bucket=bucket, CORSConfiguration={"CORSRules": bad})
        assert want in str(e.value)
    assert len(s3.get_bucket_cors(Bucket=bucket)["CORSRules"]) == 2
    s3.delete_bucket_cors(Bucket=bucket)
    with pytest.raises(ClientError) as e:
        s3.get_bucket_cors(Bucket=bucket)
    assert code(e) == "NoSuchCORSConfiguration"
    s3.delete_bucket_policy(Bucket=bucket)


def test_public_access_block(wharfd, s3, bucket):
    with pytest.raises(ClientError) as e:
        s3.get_public_access_block(Bucket=bucket)
    assert code(e) == "NoSuchPublicAccessBlockConfiguration"
    s3.put_object(Bucket=bucket, Key="k", Body=b"data", ACL="public-read")
    url = f"{wharfd.endpoint}/{bucket}/k"
    assert raw("GET", url)[0] == 200
    pub_policy = json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
         "Resource": f"arn:aws:s3:::{bucket}/*"}]})
    # IgnorePublicAcls: the public-read object is no longer readable anonymously.
    cfg = {"BlockPublicAcls": False, "IgnorePublicAcls": True, "BlockPublicPolicy": False,
           "RestrictPublicBuckets": False}
    s3.put_public_access_block(Bucket=bucket, PublicAccessBlockConfiguration=cfg)
    assert s3.get_public_access_block(Bucket=bucket)["PublicAccessBlockConfiguration"] == cfg
    assert raw("GET", url)[0] == 403
    # BlockPublicAcls: a public ACL is refused on PutObject and PutObjectAcl; private is fine.
    cfg["BlockPublicAcls"] = True
    s3.put_public_access_block(Bucket=bucket, PublicAccessBlockConfiguration=cfg)
    for call in (lambda: s3.put_object(Bucket=bucket, Key="k2", Body=b"x", ACL="public-read"),
                 lambda: s3.put_object_acl(Bucket=bucket, Key="k", ACL="public-read-write"),
                 lambda: s3.put_bucket_acl(Bucket=bucket, ACL="public-read")):
        with pytest.raises(ClientError) as e:
            call()
        assert code(e) == "AccessDenied" and "BlockPublicAcls" in str(e.value)
    s3.put_object(Bucket=bucket, Key="k3", Body=b"x", ACL="private")
    # RestrictPublicBuckets: a public policy grants anonymous callers nothing.
    s3.put_bucket_policy(Bucket=bucket, Policy=pub_policy)
    cfg.update({"IgnorePublicAcls": False, "RestrictPublicBuckets": True})
    s3.put_public_access_block(Bucket=bucket, PublicAccessBlockConfiguration=cfg)
    assert raw("GET", f"{wharfd.endpoint}/{bucket}/k3")[0] == 403
    cfg["RestrictPublicBuckets"] = False
    s3.put_public_access_block(Bucket=bucket, PublicAccessBlockConfiguration=cfg)
    assert raw("GET", f"{wharfd.endpoint}/{bucket}/k3")[0] == 200
    # BlockPublicPolicy: a public policy is refused at PutBucketPolicy.
    s3.delete_bucket_policy(Bucket=bucket)
    cfg["BlockPublicPolicy"] = True
    s3.put_public_access_block(Bucket=bucket, PublicAccessBlockConfiguration=cfg)
    with pytest.raises(ClientError) as e:
        s3.put_bucket_policy(Bucket=bucket, Policy=pub_policy)
    assert code(e) == "AccessDenied" and "BlockPublicPolicy" in str(e.value)
    s3.delete_public_access_block(Bucket=bucket)
    with pytest.raises(ClientError) as e:
        s3.get_public_access_block(Bucket=bucket)
    assert code(e) == "NoSuchPublicAccessBlockConfiguration"
    assert raw("GET", url)[0] == 200  # the public-read ACL counts again
    with pytest.raises(ClientError) as e:
        s3.put_public_access_block(Bucket=bucket, PublicAccessBlockConfiguration={
            "BlockPublicAcls": True, "Bogus": True} if False else {"BlockPublicAcls": True},
            ContentMD5="AAAAAAAAAAAAAAAAAAAAAA==")
    assert code(e) in ("BadDigest", "InvalidDigest")


def test_ownership_controls(wharfd, s3, bucket):
    with pytest.raises(ClientError) as e:
        s3.get_bucket_ownership_controls(Bucket=bucket)
    assert code(e) == "OwnershipControlsNotFoundError"
    s3.put_object(Bucket=bucket, Key="pub", Body=b"p", ACL="public-read")
    url = f"{wharfd.endpoint}/{bucket}/pub"
    assert raw("GET", url)[0] == 200
    s3.put_bucket_ownership_controls(Bucket=bucket, OwnershipControls={
        "Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]})
    got = s3.get_bucket_ownership_controls(Bucket=bucket)["OwnershipControls"]
    assert got["Rules"] == [{"ObjectOwnership": "BucketOwnerEnforced"}]
    # ACLs are off: the old public-read grant counts for nothing, new ACLs are refused,
    # bucket-owner-full-control (which changes nothing) is accepted.
    assert raw("GET", url)[0] == 403
    with pytest.raises(ClientError) as e:
        s3.put_object(Bucket=bucket, Key="x", Body=b"x", ACL="public-read")
    assert code(e) == "AccessControlListNotSupported"
    with pytest.raises(ClientError) as e:
        s3.put_object_acl(Bucket=bucket, Key="pub", ACL="authenticated-read")
    assert code(e) == "AccessControlListNotSupported"
    s3.put_object(Bucket=bucket, Key="y", Body=b"y", ACL="bucket-owner-full-control")
    with pytest.raises(ClientError) as e:
        s3.put_bucket_ownership_controls(Bucket=bucket, OwnershipControls={
            "Rules": [{"ObjectOwnership": "Nobody"}]})
    assert code(e) == "MalformedXML"
    s3.put_bucket_ownership_controls(Bucket=bucket, OwnershipControls={
        "Rules": [{"ObjectOwnership": "ObjectWriter"}]})
    assert raw("GET", url)[0] == 200
    s3.delete_bucket_ownership_controls(Bucket=bucket)
    with pytest.raises(ClientError) as e:
        s3.get_bucket_ownership_controls(Bucket=bucket)
    assert code(e) == "OwnershipControlsNotFoundError"


def test_configs_survive_restart_and_go_with_the_bucket(tmp_path):
    d = str(tmp_path / "d")
    import os
    os.makedirs(d)
    srv = WharfServer(data_dir=d)
    srv.start()
    c = client(srv.endpoint)
    c.create_bucket(Bucket="keep")
    c.put_bucket_tagging(Bucket="keep", Tagging={"TagSet": [{"Key": "team", "Value": "ml"}]})
    c.put_bucket_cors(Bucket="keep", CORSConfiguration={"CORSRules": [
        {"AllowedOrigins": ["*"], "AllowedMethods": ["GET"]}]})
    srv.stop()
    srv.start()
    try:
        c = client(srv.endpoint)
        assert c.get_bucket_tagging(Bucket="keep")["TagSet"] == [{"Key": "team", "Value": "ml"}]
        assert c.get_bucket_cors(Bucket="keep")["CORSRules"][0]["AllowedMethods"] == ["GET"]
        c.delete_bucket(Bucket="keep")
        c.create_bucket(Bucket="keep")
        with pytest.raises(ClientError) as e:
            c.get_bucket_tagging(Bucket="keep")
        assert code(e) == "NoSuchTagSet"
        with pytest.raises(ClientError) as e:
            c.get_bucket_cors(Bucket="keep")
        assert code(e) == "NoSuchCORSConfiguration"
    finally:
        srv.cleanup()


def test_awscli_bucket_tagging_and_cors(wharfd, bucket, tmp_path):
    env = wharfd.client_env()
    base = [AWS, "--endpoint-url", wharfd.endpoint, "s3api"]
    r = subprocess.run(base + ["put-bucket-tagging", "--bucket", bucket, "--tagging",
                               'TagSet=[{Key=a,Value=b}]'], env=env, capture_output=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr.decode()
    r = subprocess.run(base + ["get-bucket-tagging", "--bucket", bucket], env=env,
                       capture_output=True, timeout=60)
    assert r.returncode == 0 and json.loads(r.stdout)["TagSet"] == [{"Key": "a", "Value": "b"}]
    cors = tmp_path / "cors.json"
    cors.write_text(json.dumps({"CORSRules": [{"AllowedOrigins": ["https://x.test"],
                                               "AllowedMethods": ["GET"]}]}))
    r = subprocess.run(base + ["put-bucket-cors", "--bucket", bucket, "--cors-configuration",
                               f"file://{cors}"], env=env, capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr.decode()
    r = subprocess.run(base + ["get-bucket-cors", "--bucket", bucket], env=env,
                       capture_output=True, timeout=60)
    assert json.loads(r.stdout)["CORSRules"][0]["AllowedOrigins"] == ["https://x.test"]


def test_configs_on_postgresql_metadata():
    """The same configurations through the PostgreSQL metadata backend."""
    import pgserver
    reason = pgserver.missing_reason()
    if reason:
        pytest.skip(reason)
    with pgserver.PgServer() as pg:
        url = pg.create_db("bcfg")
        with WharfServer(extra_args=["--meta", url]) as srv:
            c = client(srv.endpoint)
            c.create_bucket(Bucket="pgb")
            c.put_bucket_tagging(Bucket="pgb", Tagging={"TagSet": [{"Key": "a", "Value": "1"}]})
            c.put_bucket_cors(Bucket="pgb", CORSConfiguration={"CORSRules": [
                {"AllowedOrigins": ["*"], "AllowedMethods": ["GET"]}]})
            c.put_public_access_block(Bucket="pgb", PublicAccessBlockConfiguration={
                "BlockPublicAcls": True, "IgnorePublicAcls": False, "BlockPublicPolicy": False,
                "RestrictPublicBuckets": False})
            c.put_bucket_ownership_controls(Bucket="pgb", OwnershipControls={
                "Rules": [{"ObjectOwnership": "BucketOwnerPreferred"}]})
            assert c.get_bucket_tagging(Bucket="pgb")["TagSet"] == [{"Key": "a", "Value": "1"}]
            assert c.get_bucket_cors(Bucket="pgb")["CORSRules"][0]["AllowedOrigins"] == ["*"]
            assert c.get_public_access_block(Bucket="pgb")[
                "PublicAccessBlockConfiguration"]["BlockPublicAcls"] is True
            assert c.get_bucket_ownership_controls(Bucket="pgb")["OwnershipControls"][
                "Rules"][0]["ObjectOwnership"] == "BucketOwnerPreferred"
            with pytest.raises(ClientError) as e:
                c.put_object(Bucket="pgb", Key="k", Body=b"x", ACL="public-read")
            assert code(e) == "AccessDenied"
            c.delete_bucket_tagging(Bucket="pgb")
            with pytest.raises(ClientError) as e:
                c.get_bucket_tagging(Bucket="pgb")
            assert code(e) == "NoSuchTagSet"
