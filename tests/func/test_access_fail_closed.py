# SPDX-License-Identifier: Apache-2.0
"""Access decisions that must never fail open, against a real wharfd, its IAM API (boto3's iam
client) and boto3's s3 client signed as IAM users (tests/lib/users.py):

- every inline policy of a user is weighed: a Deny in the 17th (or any) binds;
- the IAM API evaluates aws:SourceIp against the caller's address (without its port);
- a stored policy that no longer parses refuses the user's requests (IAM and S3) instead of
  being skipped with whatever it denies.
"""
import json
import os
import sqlite3
import uuid

import pytest
from botocore.exceptions import ClientError

import users
from wharfd import ACCESS_KEY, SECRET_KEY, WharfServer, unique_bucket


def policy(*statements):
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)})


def code(excinfo):
    return excinfo.value.response["Error"]["Code"]


@pytest.fixture(scope="module")
def wharfd():
    """A server of this file's own: one test rewrites meta.db behind the server's back, which
    no other file's server should see."""
    srv = WharfServer()
    srv.start()
    yield srv
    rc = srv.stop()
    srv.cleanup()
    assert rc == 0


@pytest.fixture(scope="module")
def iam(wharfd):
    return users.client(wharfd, ACCESS_KEY, SECRET_KEY, "iam")


@pytest.fixture(scope="module")
def root_s3(wharfd):
    return users.client(wharfd, ACCESS_KEY, SECRET_KEY)


def new_user(srv, tag):
    u = users.create_user(srv, f"{tag}-{uuid.uuid4().hex[:10]}")
    u.s3 = u.boto3(srv)
    u.iam = u.boto3(srv, "iam")
    return u


def test_every_inline_policy_is_weighed(wharfd, iam, root_s3):
    u = new_user(wharfd, "many")
    b = unique_bucket("many")
    root_s3.create_bucket(Bucket=b)
    root_s3.put_object(Bucket=b, Key="k", Body=b"v")
    for i in range(16):
        iam.put_user_policy(UserName=u.name, PolicyName=f"allow{i:02d}", PolicyDocument=policy(
            {"Effect": "Allow", "Action": ["s3:GetObject", "iam:ListUsers"], "Resource": "*"}))
    assert u.s3.get_object(Bucket=b, Key="k")["Body"].read() == b"v"
    u.iam.list_users()
    # The 17th (in name order, last) denies everything: it binds on S3 and on IAM.
    iam.put_user_policy(UserName=u.name, PolicyName="zz-deny-all", PolicyDocument=policy(
        {"Effect": "Deny", "Action": "*", "Resource": "*"}))
    assert len(iam.list_user_policies(UserName=u.name)["PolicyNames"]) == 17
    with pytest.raises(ClientError) as ei:
        u.s3.get_object(Bucket=b, Key="k")
    assert code(ei) == "AccessDenied"
    with pytest.raises(ClientError) as ei:
        u.iam.list_users()
    assert code(ei) == "AccessDenied"
    iam.delete_user_policy(UserName=u.name, PolicyName="zz-deny-all")
    assert u.s3.get_object(Bucket=b, Key="k")["Body"].read() == b"v"


def test_iam_source_ip_is_the_address_without_port(wharfd, iam):
    u = new_user(wharfd, "ip")
    iam.put_user_policy(UserName=u.name, PolicyName="local", PolicyDocument=policy(
        {"Effect": "Allow", "Action": "iam:ListUsers", "Resource": "*",
         "Condition": {"IpAddress": {"aws:SourceIp": "127.0.0.0/8"}}}))
    assert any(x["UserName"] == u.name for x in u.iam.list_users()["Users"])
    iam.put_user_policy(UserName=u.name, PolicyName="no-local", PolicyDocument=policy(
        {"Effect": "Deny", "Action": "iam:*", "Resource": "*",
         "Condition": {"IpAddress": {"aws:SourceIp": "127.0.0.1/32"}}}))
    with pytest.raises(ClientError) as ei:
        u.iam.list_users()
    assert code(ei) == "AccessDenied"


def _corrupt_policy(srv, user, name):
    """Rewrites a stored policy so that it no longer parses (as one kept from an older
    version with a grammar the server stopped taking would)."""
    with sqlite3.connect(os.path.join(srv.data_dir, "meta.db"), timeout=10) as c:
        n = c.execute("UPDATE user_policies SET document=? WHERE user_name=? AND policy_name=?",
                      ('{"Statement": "not a statement"}', user, name)).rowcount
    assert n == 1


def test_stored_policy_that_no_longer_parses_fails_closed(wharfd, iam, root_s3):
    u = new_user(wharfd, "broken")
    b = unique_bucket("broken")
    root_s3.create_bucket(Bucket=b)
    root_s3.put_object(Bucket=b, Key="k", Body=b"v")
    iam.put_user_policy(UserName=u.name, PolicyName="allow", PolicyDocument=policy(
        {"Effect": "Allow", "Action": ["s3:GetObject", "iam:ListUsers"], "Resource": "*"}))
    iam.put_user_policy(UserName=u.name, PolicyName="deny", PolicyDocument=policy(
        {"Effect": "Deny", "Action": "iam:ListUsers", "Resource": "*"}))
    _corrupt_policy(wharfd, u.name, "deny")
    with pytest.raises(ClientError) as ei:
        u.iam.list_users()
    assert ei.value.response["ResponseMetadata"]["HTTPStatusCode"] >= 400
    assert "cannot be read" in ei.value.response["Error"]["Message"]
    with pytest.raises(ClientError) as ei:
        u.s3.get_object(Bucket=b, Key="k")
    assert ei.value.response["ResponseMetadata"]["HTTPStatusCode"] >= 400
    # Root replaces it; the user is served again.
    iam.delete_user_policy(UserName=u.name, PolicyName="deny")
    assert u.s3.get_object(Bucket=b, Key="k")["Body"].read() == b"v"
    u.iam.list_users()


def test_copy_copies_the_version_it_authorized(wharfd, iam, root_s3):
    """A copy source readable only while public (its ACL) and overwritten meanwhile with
    private bytes: every copy that succeeds holds the public bytes (it copies the version it
    authorized, or is undone with OperationAborted), never the private ones."""
    import threading
    import time
    u = new_user(wharfd, "copier")
    src, dst = unique_bucket("csrc"), unique_bucket("cdst")
    root_s3.create_bucket(Bucket=src)
    root_s3.create_bucket(Bucket=dst)
    iam.put_user_policy(UserName=u.name, PolicyName="dst", PolicyDocument=policy(
        {"Effect": "Allow", "Action": ["s3:PutObject", "s3:GetObject", "s3:DeleteObject"],
         "Resource": f"arn:aws:s3:::{dst}/*"}))
    public, private = b"P" * 4096, b"S" * 4096
    root_s3.put_object(Bucket=src, Key="k", Body=public, ACL="public-read")
    stop = threading.Event()

    def flip():
        while not stop.is_set():
            root_s3.put_object(Bucket=src, Key="k", Body=private)
            root_s3.put_object(Bucket=src, Key="k", Body=public, ACL="public-read")

    t = threading.Thread(target=flip)
    t.start()
    res = {"leaked": 0, "copied": 0, "errors": []}
    lock = threading.Lock()
    deadline = time.monotonic() + 15

    def copier(w):
        s3 = u.boto3(wharfd)
        for i in range(2000):
            if time.monotonic() > deadline:
                return
            try:
                s3.copy_object(Bucket=dst, Key=f"c{w}", CopySource={"Bucket": src, "Key": "k"})
            except ClientError as e:
                if code_of(e) not in ("AccessDenied", "OperationAborted"):
                    with lock:
                        res["errors"].append(e.response)
                continue
            got = s3.get_object(Bucket=dst, Key=f"c{w}")["Body"].read()
            with lock:
                res["copied"] += 1
                res["leaked"] += got != public

    workers = [threading.Thread(target=copier, args=(w,)) for w in range(4)]
    try:
        for w in workers:
            w.start()
        for w in workers:
            w.join(timeout=60)
    finally:
        stop.set()
        t.join(timeout=30)
    leaked, copied = res["leaked"], res["copied"]
    assert not res["errors"], res["errors"][:3]
    assert leaked == 0, f"{leaked} of {copied} copies hold bytes their caller may not read"
    assert copied > 0


def code_of(e):
    return e.response["Error"]["Code"]
