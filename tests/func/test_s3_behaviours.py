# SPDX-License-Identifier: Apache-2.0
"""S3 behaviours that ceph/s3-tests checks, against a real wharfd with boto3 and raw requests:

- x-amz-expiration on PutObject, GetObject and HeadObject when an enabled lifecycle rule
  expires the object (expiry-date: the object's time plus the rule's days, rounded up to the
  next midnight UTC; rule-id), by prefix, by tag and by And; absent when no rule takes it.
- An OPTIONS preflight is answered by the bucket's CORS rules without authentication, also on
  a presigned URL (its X-Amz-* query is not verified): 200 with Access-Control-* when a rule
  matches, 403 otherwise.
- A bucket policy naming a service principal ({"Service": "logging.s3.amazonaws.com"}, the
  target-bucket policy AWS documents for server access logging) is accepted and grants no
  request of wharf's.
"""
import datetime
import http.client
import json
import re
import urllib.parse

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

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


def _expiration(resp):
    return resp["ResponseMetadata"]["HTTPHeaders"].get("x-amz-expiration")


def _parse(hdr):
    m = re.fullmatch(r'expiry-date="(.+)", rule-id="(.*)"', hdr)
    assert m, hdr
    when = datetime.datetime.strptime(m.group(1), "%a, %d %b %Y %H:%M:%S GMT")
    return when.replace(tzinfo=datetime.timezone.utc), m.group(2)


def test_expiration_header(s3):
    b = unique_bucket("lc-hdr")
    s3.create_bucket(Bucket=b)
    s3.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={"Rules": [
        {"ID": "days1", "Status": "Enabled", "Filter": {"Prefix": "days1/"},
         "Expiration": {"Days": 1}},
        {"ID": "tagged", "Status": "Enabled",
         "Filter": {"Tag": {"Key": "key1", "Value": "val1"}}, "Expiration": {"Days": 3}},
        {"ID": "and", "Status": "Enabled",
         "Filter": {"And": {"Prefix": "and/", "Tags": [{"Key": "k", "Value": "v"}]}},
         "Expiration": {"Days": 5}},
        {"ID": "off", "Status": "Disabled", "Filter": {"Prefix": "off/"},
         "Expiration": {"Days": 1}},
    ]})
    now = datetime.datetime.now(datetime.timezone.utc)
    put = s3.put_object(Bucket=b, Key="days1/foo", Body=b"x")
    when, rule = _parse(_expiration(put))
    assert rule == "days1"
    # Rounded up to midnight UTC after one day: s3-tests checks (expiry - now).days == 1.
    assert (when.hour, when.minute, when.second) == (0, 0, 0)
    assert (when - now).days == 1, (when, now)
    for call in (s3.head_object, s3.get_object):
        assert _parse(_expiration(call(Bucket=b, Key="days1/foo"))) == (when, "days1")
    # By tag: taken with the tag, not without it.
    put = s3.put_object(Bucket=b, Key="t", Body=b"x", Tagging="key1=val1")
    assert _parse(_expiration(put))[1] == "tagged"
    assert _parse(_expiration(s3.head_object(Bucket=b, Key="t")))[1] == "tagged"
    s3.put_object(Bucket=b, Key="t2", Body=b"x")
    assert _expiration(s3.head_object(Bucket=b, Key="t2")) is None
    # And: prefix and tag both needed.
    s3.put_object(Bucket=b, Key="and/x", Body=b"x", Tagging="k=v")
    when, rule = _parse(_expiration(s3.head_object(Bucket=b, Key="and/x")))
    assert rule == "and" and (when - now).days == 5
    s3.put_object(Bucket=b, Key="and/y", Body=b"x")
    assert _expiration(s3.head_object(Bucket=b, Key="and/y")) is None
    # A disabled rule, and a bucket without lifecycle rules: no header.
    assert _expiration(s3.put_object(Bucket=b, Key="off/x", Body=b"x")) is None
    s3.delete_bucket_lifecycle(Bucket=b)
    assert _expiration(s3.head_object(Bucket=b, Key="days1/foo")) is None


def _options(srv, path, method, origin="http://example.com"):
    c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=30)
    try:
        c.request("OPTIONS", path, headers={"Origin": origin,
                                            "Access-Control-Request-Method": method})
        r = c.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        c.close()


def test_preflight_on_presigned_url_needs_no_auth(srv, s3):
    b = unique_bucket("cors-pre")
    s3.create_bucket(Bucket=b)
    s3.put_bucket_cors(Bucket=b, CORSConfiguration={"CORSRules": [
        {"AllowedMethods": ["GET", "PUT"], "AllowedOrigins": ["*.example.com", "http://example.com"],
         "AllowedHeaders": ["*"], "MaxAgeSeconds": 60}]})
    url = s3.generate_presigned_url("put_object", Params={"Bucket": b, "Key": "up"},
                                    ExpiresIn=60)
    u = urllib.parse.urlsplit(url)
    path = f"{u.path}?{u.query}"
    st, h, body = _options(srv, path, "PUT")
    assert st == 200, body
    assert h["access-control-allow-origin"] == "http://example.com"
    assert "PUT" in h["access-control-allow-methods"]
    # No rule allows DELETE: 403, the CORS refusal, not an authentication error.
    st, h, body = _options(srv, path, "DELETE")
    assert st == 403 and b"CORSResponse" in body, body
    # A broken presigned query is not looked at either.
    st, _, body = _options(srv, f"/{b}/up?X-Amz-Signature=abc&X-Amz-Credential=x", "GET")
    assert st == 200, body
    # And the preflight creates nothing.
    assert s3.list_objects_v2(Bucket=b)["KeyCount"] == 0


def test_logging_target_policy_with_service_principal(s3):
    """The target-bucket policy AWS documents for server access logging names the service
    principal logging.s3.amazonaws.com: accepted and kept; it grants no wharf principal."""
    b = unique_bucket("log-target")
    s3.create_bucket(Bucket=b)
    pol = {"Version": "2012-10-17", "Statement": [{
        "Sid": "S3ServerAccessLogsPolicy", "Effect": "Allow",
        "Principal": {"Service": "logging.s3.amazonaws.com"},
        "Action": ["s3:PutObject"], "Resource": f"arn:aws:s3:::{b}/logs/*"}]}
    s3.put_bucket_policy(Bucket=b, Policy=json.dumps(pol))
    assert json.loads(s3.get_bucket_policy(Bucket=b)["Policy"])["Statement"][0]["Principal"] == \
        {"Service": "logging.s3.amazonaws.com"}
    # Not public: the service principal is nobody's request here.
    assert s3.get_bucket_policy_status(Bucket=b)["PolicyStatus"]["IsPublic"] is False
    st, _, _ = _anon_put(s3, b, "logs/x")
    assert st == 403
    bad = dict(pol, Statement=[dict(pol["Statement"][0], Principal={"Service": "Not A Name"})])
    with pytest.raises(ClientError) as e:
        s3.put_bucket_policy(Bucket=b, Policy=json.dumps(bad))
    assert e.value.response["Error"]["Code"] == "MalformedPolicy"


def _anon_put(s3, bucket, key):
    u = urllib.parse.urlsplit(s3.meta.endpoint_url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    try:
        c.request("PUT", f"/{bucket}/{key}", body=b"x")
        r = c.getresponse()
        return r.status, dict(r.getheaders()), r.read()
    finally:
        c.close()
