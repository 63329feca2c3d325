# SPDX-License-Identifier: Apache-2.0
"""What wharf does not implement answers 501 NotImplemented naming it, never 200 and never a
plain object or bucket operation (docs/compat.md lists these rows): bucket website, logging,
notifications, replication, inventory, analytics, metrics, accelerate, request payment,
intelligent tiering, S3 Select, object restore and torrents (GET ?torrent is S3's 404
NoSuchKey); IAM groups and roles, and STS.
Nothing is stored by any of them. Against a real wharfd with raw signed requests
(tests/lib/s3raw.py)."""
import pytest
from botocore.exceptions import ClientError

import users
from s3raw import S3Raw
from wharfd import ACCESS_KEY, SECRET_KEY, unique_bucket

BUCKET_SUBRES = ["website", "logging", "notification", "replication", "inventory", "analytics",
                 "metrics", "accelerate", "requestPayment", "intelligent-tiering"]


@pytest.fixture(scope="module")
def raw(wharfd):
    return S3Raw(wharfd.endpoint)


@pytest.fixture(scope="module")
def bucket(raw):
    b = unique_bucket("unsup")
    r = raw.request("PUT", f"/{b}")
    assert r.status == 200, r
    return b


def _not_implemented(r, what):
    assert r.status == 501, (what, r.status, r.body[:300])
    assert r.error_code() == "NotImplemented", (what, r.body[:300])


@pytest.mark.parametrize("sub", BUCKET_SUBRES)
@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE"])
def test_bucket_subresource_is_not_implemented(raw, bucket, sub, method):
    body = b"<x/>" if method == "PUT" else b""
    r = raw.request(method, f"/{bucket}", query=[(sub, None)], body=body)
    _not_implemented(r, f"{method} ?{sub}")
    # The bucket is untouched: still there, still empty.
    r = raw.request("GET", f"/{bucket}", query=[("list-type", "2")])
    assert r.status == 200 and b"<KeyCount>0</KeyCount>" in r.body, r.body[:300]


@pytest.mark.parametrize("query", [[("select", None), ("select-type", "2")], [("restore", None)]])
def test_object_post_subresource_is_not_implemented(raw, bucket, query):
    r = raw.request("POST", f"/{bucket}/k", query=query, body=b"<x/>")
    _not_implemented(r, query)
    assert raw.request("HEAD", f"/{bucket}/k").status == 404  # no object made


def test_torrent_is_no_such_key(raw, bucket):
    """GetObjectTorrent: S3 keeps no torrent for most objects and answers 404 NoSuchKey, what
    s3-tests' test_get_object_torrent accepts; PUT ?torrent stays 501."""
    assert raw.request("PUT", f"/{bucket}/t", body=b"abc").status == 200
    r = raw.request("GET", f"/{bucket}/t", query=[("torrent", None)])
    assert (r.status, r.error_code()) == (404, "NoSuchKey"), r.body[:300]
    assert b"BitTorrent" in r.body
    r = raw.request("PUT", f"/{bucket}/t", query=[("torrent", None)], body=b"x")
    _not_implemented(r, "torrent")
    assert raw.request("GET", f"/{bucket}/t").body == b"abc"  # the object is untouched


def test_select_501_says_why(raw, bucket):
    r = raw.request("POST", f"/{bucket}/k", query=[("select", None), ("select-type", "2")],
                    body=b"<x/>")
    _not_implemented(r, "select")
    assert b"S3 Select" in r.body and b"2024" in r.body, r.body[:400]


def _boto_error(call):
    with pytest.raises(ClientError) as ei:
        call()
    return ei.value.response


@pytest.mark.parametrize("action,kw", [
    ("create_group", {"GroupName": "g"}),
    ("create_role", {"RoleName": "r", "AssumeRolePolicyDocument": "{}"}),
    ("add_user_to_group", {"GroupName": "g", "UserName": "u"}),
    ("list_roles", {}),
])
def test_iam_groups_and_roles_are_not_implemented(wharfd, action, kw):
    iam = users.client(wharfd, ACCESS_KEY, SECRET_KEY, "iam")
    r = _boto_error(lambda: getattr(iam, action)(**kw))
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 501, r
    assert r["Error"]["Code"] == "NotImplemented", r


def test_sts_is_not_implemented(wharfd):
    sts = users.client(wharfd, ACCESS_KEY, SECRET_KEY, "sts")
    r = _boto_error(lambda: sts.assume_role(RoleArn="arn:aws:iam::000000000000:role/r",
                                            RoleSessionName="session"))
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 501, r
    assert r["Error"]["Code"] == "NotImplemented", r
