# SPDX-License-Identifier: Apache-2.0
"""Roles and STS with boto3's iam and sts clients on wharfd's port:

- roles: CreateRole with a trust policy (a malformed one is refused), GetRole, ListRoles by
  PathPrefix, UpdateAssumeRolePolicy, inline role policies, attached managed ones, DeleteRole
  refused while policies remain;
- AssumeRole: allowed only to a principal the trust policy names; the temporary credentials sign
  S3 and IAM requests (header and presigned query) and get exactly the role's policies, limited
  further by a session policy (Policy) when one is given;
  GetCallerIdentity names the assumed-role ARN; a request without the session token, or with
  another, is refused; an expired session is refused with ExpiredToken;
- GetSessionToken: a user's temporary credentials carry the user's policies;
- the sessions are durable (a restarted wharfd still accepts them).
"""
import json
import os
import sqlite3
import tempfile
import urllib.error
import urllib.request

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

import users
from wharfd import ACCESS_KEY, REGION, SECRET_KEY, WharfServer, unique_bucket


def err(fn):
    with pytest.raises(ClientError) as ei:
        fn()
    r = ei.value.response
    return r["Error"]["Code"], r["ResponseMetadata"]["HTTPStatusCode"]


def temp_client(srv, creds, service="s3", token=True):
    conf = Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                  signature_version="s3v4")
    return boto3.client(service, endpoint_url=srv.endpoint, region_name=REGION, config=conf,
                        aws_access_key_id=creds["AccessKeyId"],
                        aws_secret_access_key=creds["SecretAccessKey"],
                        aws_session_token=creds["SessionToken"] if token is True else token)


def trust(principal):
    return json.dumps({"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"AWS": principal}, "Action": "sts:AssumeRole"}]})


def allow(action, resource="*"):
    return json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": action, "Resource": resource}]})


def make_users(srv):
    iam = users.client(srv, ACCESS_KEY, SECRET_KEY, "iam")
    iam.create_user(UserName="alice")
    k = iam.create_access_key(UserName="alice")["AccessKey"]
    iam.create_user(UserName="mallory")
    km = iam.create_access_key(UserName="mallory")["AccessKey"]
    alice_arn = iam.get_user(UserName="alice")["User"]["Arn"]
    return iam, k, km, alice_arn


def check_roles_and_assume(srv, bucket):
    iam, k, km, alice_arn = make_users(srv)
    root_s3 = users.client(srv, ACCESS_KEY, SECRET_KEY)
    root_s3.create_bucket(Bucket=bucket)
    root_s3.put_object(Bucket=bucket, Key="r", Body=b"role data")
    assert err(lambda: iam.create_role(RoleName="bad", AssumeRolePolicyDocument="{}")) == (
        "MalformedPolicyDocument", 400)
    role = iam.create_role(RoleName="Reader", Path="/s3-tests/",
                           AssumeRolePolicyDocument=trust(alice_arn))["Role"]
    assert role["Arn"].endswith(":role/s3-tests/Reader") and role["RoleId"].startswith("AROA")
    assert err(lambda: iam.create_role(RoleName="reader",
                                       AssumeRolePolicyDocument=trust(alice_arn))) == (
        "EntityAlreadyExists", 409)
    got = iam.get_role(RoleName="Reader")["Role"]
    assert got["AssumeRolePolicyDocument"]["Statement"][0]["Principal"]["AWS"] == alice_arn
    assert [r["RoleName"] for r in iam.list_roles(PathPrefix="/s3-tests/")["Roles"]] == ["Reader"]
    assert iam.get_account_summary()["SummaryMap"]["Roles"] == 1
    iam.put_role_policy(RoleName="Reader", PolicyName="get",
                        PolicyDocument=allow("s3:GetObject", f"arn:aws:s3:::{bucket}/*"))
    assert iam.list_role_policies(RoleName="Reader")["PolicyNames"] == ["get"]
    assert err(lambda: iam.delete_role(RoleName="Reader")) == ("DeleteConflict", 409)
    # Mallory is not in the trust policy.
    msts = users.client(srv, km["AccessKeyId"], km["SecretAccessKey"], "sts")
    assert err(lambda: msts.assume_role(RoleArn=role["Arn"], RoleSessionName="mm")) == (
        "AccessDenied", 403)
    sts = users.client(srv, k["AccessKeyId"], k["SecretAccessKey"], "sts")
    assert err(lambda: sts.assume_role(RoleArn=role["Arn"] + "x", RoleSessionName="ss")) == (
        "NoSuchEntity", 404)
    resp = sts.assume_role(RoleArn=role["Arn"], RoleSessionName="sess1", DurationSeconds=900)
    creds = resp["Credentials"]
    assert creds["AccessKeyId"].startswith("ASIA") and resp["AssumedRoleUser"]["Arn"].endswith(
        ":assumed-role/Reader/sess1")
    s3 = temp_client(srv, creds)
    assert s3.get_object(Bucket=bucket, Key="r")["Body"].read() == b"role data"
    assert err(lambda: s3.put_object(Bucket=bucket, Key="w", Body=b"x")) == ("AccessDenied", 403)
    ident = temp_client(srv, creds, "sts").get_caller_identity()
    assert ident["Arn"] == resp["AssumedRoleUser"]["Arn"]
    # A presigned GET with the session's token.
    url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "r"},
                                    ExpiresIn=300)
    assert "X-Amz-Security-Token" in url
    with urllib.request.urlopen(url, timeout=10) as r:
        assert r.read() == b"role data"
    # Without the token, or with another session's: refused.
    assert err(lambda: temp_client(srv, creds, token=None).get_object(Bucket=bucket, Key="r"))[
        1] == 403
    other = sts.assume_role(RoleArn=role["Arn"], RoleSessionName="sess2")["Credentials"]
    assert err(lambda: temp_client(srv, creds, token=other["SessionToken"]).get_object(
        Bucket=bucket, Key="r")) == ("InvalidToken", 400)
    # The role's policies change what the session may do, at once.
    iam.attach_role_policy(RoleName="Reader", PolicyArn="arn:aws:iam::aws:policy/AmazonS3FullAccess")
    assert [p["PolicyName"] for p in iam.list_attached_role_policies(RoleName="Reader")[
        "AttachedPolicies"]] == ["AmazonS3FullAccess"]
    s3.put_object(Bucket=bucket, Key="w", Body=b"x")
    iam.detach_role_policy(RoleName="Reader",
                           PolicyArn="arn:aws:iam::aws:policy/AmazonS3FullAccess")
    assert err(lambda: s3.put_object(Bucket=bucket, Key="w", Body=b"x")) == ("AccessDenied", 403)
    # A session may act on IAM as far as the role's policies allow.
    iam.put_role_policy(RoleName="Reader", PolicyName="iam-roles",
                        PolicyDocument=allow("iam:*RolePolic*", "arn:aws:iam::*:role/*"))
    siam = temp_client(srv, creds, "iam")
    assert "iam-roles" in siam.list_role_policies(RoleName="Reader")["PolicyNames"]
    assert err(lambda: siam.list_users()) == ("AccessDenied", 403)
    # A resource ARN without the account names this account's.
    iam.put_role_policy(RoleName="Reader", PolicyName="get-user",
                        PolicyDocument=allow("iam:GetUser", "arn:aws:iam:::user/alice"))
    assert siam.get_user(UserName="alice")["User"]["UserName"] == "alice"
    assert err(lambda: siam.get_user(UserName="mallory")) == ("AccessDenied", 403)
    # A session policy limits the session to what both it and the role allow.
    iam.attach_role_policy(RoleName="Reader", PolicyArn="arn:aws:iam::aws:policy/AmazonS3FullAccess")
    narrow = sts.assume_role(RoleArn=role["Arn"], RoleSessionName="narrow",
                             Policy=allow(["s3:GetObject", "s3:PutObject", "iam:GetUser"],
                                          f"arn:aws:s3:::{bucket}/r"))["Credentials"]
    ns3 = temp_client(srv, narrow)
    assert ns3.get_object(Bucket=bucket, Key="r")["Body"].read() == b"role data"
    assert err(lambda: ns3.put_object(Bucket=bucket, Key="w", Body=b"x")) == ("AccessDenied", 403)
    assert err(lambda: ns3.list_objects_v2(Bucket=bucket)) == ("AccessDenied", 403)
    s3.put_object(Bucket=bucket, Key="w", Body=b"x")  # the session without one may
    assert err(lambda: temp_client(srv, narrow, "iam").list_role_policies(RoleName="Reader")) == (
        "AccessDenied", 403)
    assert err(lambda: sts.assume_role(RoleArn=role["Arn"], RoleSessionName="bad",
                                       Policy="{nope")) == ("MalformedPolicyDocument", 400)
    iam.detach_role_policy(RoleName="Reader",
                           PolicyArn="arn:aws:iam::aws:policy/AmazonS3FullAccess")
    # ARNs without the account, as single-tenant stores write them, name this account's.
    iam.create_role(RoleName="Bare", AssumeRolePolicyDocument=trust("arn:aws:iam:::user/alice"))
    sts.assume_role(RoleArn="arn:aws:iam:::role/Bare", RoleSessionName="bare")
    assert err(lambda: msts.assume_role(RoleArn="arn:aws:iam:::role/Bare",
                                        RoleSessionName="bare")) == ("AccessDenied", 403)
    # UpdateAssumeRolePolicy: now Mallory may, Alice may not.
    mallory_arn = iam.get_user(UserName="mallory")["User"]["Arn"]
    iam.update_assume_role_policy(RoleName="Reader", PolicyDocument=trust(mallory_arn))
    msts.assume_role(RoleArn=role["Arn"], RoleSessionName="mm")
    assert err(lambda: sts.assume_role(RoleArn=role["Arn"], RoleSessionName="aa")) == (
        "AccessDenied", 403)
    return creds


def check_session_token(srv, bucket):
    iam = users.client(srv, ACCESS_KEY, SECRET_KEY, "iam")
    iam.create_user(UserName="bob")
    k = iam.create_access_key(UserName="bob")["AccessKey"]
    iam.put_user_policy(UserName="bob", PolicyName="list",
                        PolicyDocument=allow("s3:ListBucket", f"arn:aws:s3:::{bucket}"))
    sts = users.client(srv, k["AccessKeyId"], k["SecretAccessKey"], "sts")
    creds = sts.get_session_token(DurationSeconds=900)["Credentials"]
    s3 = temp_client(srv, creds)
    assert s3.list_objects_v2(Bucket=bucket)["KeyCount"] >= 1
    assert err(lambda: s3.get_object(Bucket=bucket, Key="r")) == ("AccessDenied", 403)
    assert temp_client(srv, creds, "sts").get_caller_identity()["Arn"].endswith(":user/bob")
    assert err(lambda: sts.get_session_token(DurationSeconds=200000)) == ("ValidationError", 400)
    return creds


def expire(data_dir, access_key):
    db = sqlite3.connect(os.path.join(data_dir, "meta.db"), timeout=10)
    doc = db.execute("SELECT doc FROM iam_records WHERE kind = 'session' AND key = ?",
                     (access_key,)).fetchone()[0]
    parts = [("exp=1" if p.startswith("exp=") else p) for p in doc.split("&")]
    db.execute("UPDATE iam_records SET doc = ? WHERE kind = 'session' AND key = ?",
               ("&".join(parts), access_key))
    db.commit()
    db.close()


def test_roles_assume_role_and_session_tokens():
    d = tempfile.mkdtemp(prefix="wharf-sts-")
    bucket = unique_bucket("sts")
    with WharfServer(data_dir=d, providers="none") as srv:
        role_creds = check_roles_and_assume(srv, bucket)
        user_creds = check_session_token(srv, bucket)
    # Durable: a restarted server accepts the sessions; an expired one is refused (the expiry
    # is moved back while the server is down: a running one caches what it read).
    with WharfServer(data_dir=d, providers="none") as srv:
        temp_client(srv, user_creds).list_objects_v2(Bucket=bucket)
        temp_client(srv, role_creds).get_object(Bucket=bucket, Key="r")
    expire(d, role_creds["AccessKeyId"])
    with WharfServer(data_dir=d, providers="none") as srv:
        temp_client(srv, user_creds).list_objects_v2(Bucket=bucket)
        assert err(lambda: temp_client(srv, role_creds).get_object(Bucket=bucket, Key="r")) == (
            "ExpiredToken", 400)
        assert err(lambda: temp_client(srv, role_creds, "sts").get_caller_identity()) == (
            "ExpiredToken", 400)
