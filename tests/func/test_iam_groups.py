# SPDX-License-Identifier: Apache-2.0
"""The IAM API past users and inline policies, with boto3's iam client on wharfd's port:

- user Paths (the ARN carries the path, ListUsers filters by PathPrefix, UpdateUser moves a user
  to a new path; names unique and listed without regard to case; a bucket policy naming the user's path ARN lets it in), GetAccountSummary's
  counts, the root's own access keys (CreateAccessKey without UserName: the key signs as the
  root; ListAccessKeys and DeleteAccessKey without UserName);
- groups: create (names unique without regard to case), get with its users, a renamed user
  (UpdateUser NewUserName) keeps its key, groups and their policies, list by PathPrefix,
  membership both ways, inline group policies; a user gets what its group's policy allows and
  loses it when removed; DeleteGroup and DeleteUser refuse while links remain;
- managed policies: CreatePolicy, GetPolicy, GetPolicyVersion v1, ListPolicies, the two built-in
  AWS ones; attached to a user or a group they allow and deny S3 requests, detached they stop;
  DeletePolicy refuses while attached;
- the same records on PostgreSQL (wharfd serve --meta).
"""
import json
import os
import tempfile

import pytest
from botocore.exceptions import ClientError

import pgserver
import users
from wharfd import ACCESS_KEY, SECRET_KEY, WharfServer, unique_bucket

PG_REASON = pgserver.missing_reason()


def err(fn):
    with pytest.raises(ClientError) as ei:
        fn()
    r = ei.value.response
    return r["Error"]["Code"], r["ResponseMetadata"]["HTTPStatusCode"]


def allow(action, resource="*", effect="Allow"):
    return json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": effect, "Action": action, "Resource": resource}]})


def new_user(iam, srv, name, path="/"):
    iam.create_user(UserName=name, Path=path)
    k = iam.create_access_key(UserName=name)["AccessKey"]
    return users.client(srv, k["AccessKeyId"], k["SecretAccessKey"])


def check_paths_and_root_keys(srv):
    iam = users.client(srv, ACCESS_KEY, SECRET_KEY, "iam")
    u = iam.create_user(UserName="pathed", Path="/s3-tests/")["User"]
    assert u["Path"] == "/s3-tests/" and u["Arn"].endswith(":user/s3-tests/pathed"), u
    iam.create_user(UserName="plain")
    assert err(lambda: iam.create_user(UserName="pathed", Path="/other/")) == (
        "EntityAlreadyExists", 409)
    assert err(lambda: iam.create_user(UserName="bad", Path="no-slash")) == (
        "ValidationError", 400)
    names = lambda **kw: [x["UserName"] for x in iam.list_users(**kw)["Users"]]  # noqa: E731
    assert names(PathPrefix="/s3-tests/") == ["pathed"]
    assert sorted(names()) == ["pathed", "plain"]
    assert iam.get_user(UserName="pathed")["User"]["Path"] == "/s3-tests/"
    iam.update_user(UserName="plain", NewPath="/moved/")
    assert names(PathPrefix="/moved/") == ["plain"]
    assert err(lambda: iam.update_user(UserName="nobody", NewPath="/x/")) == (
        "NoSuchEntity", 404)
    summary = iam.get_account_summary()["SummaryMap"]
    assert summary["Users"] == 2 and summary["AccessKeysPerUserQuota"] == 2, summary
    # Names are unique without regard to case, and listed so; a page of one goes on by Marker.
    for n in ("Ab", "ac"):
        iam.create_user(UserName=n, Path="/case/")
    assert err(lambda: iam.create_user(UserName="AC")) == ("EntityAlreadyExists", 409)
    assert iam.get_user(UserName="AB")["User"]["UserName"] == "Ab"
    pages = iam.get_paginator("list_users").paginate(PathPrefix="/case/",
                                                     PaginationConfig={"PageSize": 1})
    assert [u["UserName"] for p in pages for u in p["Users"]] == ["Ab", "ac"]
    iam.delete_user(UserName="AB")
    iam.delete_user(UserName="ac")
    # A bucket policy naming the user's ARN with its path lets it list.
    root_s3 = users.client(srv, ACCESS_KEY, SECRET_KEY)
    k = iam.create_access_key(UserName="pathed")["AccessKey"]
    s3 = users.client(srv, k["AccessKeyId"], k["SecretAccessKey"])
    bucket = unique_bucket("paths")
    root_s3.create_bucket(Bucket=bucket)
    assert err(lambda: s3.list_objects_v2(Bucket=bucket)) == ("AccessDenied", 403)
    root_s3.put_bucket_policy(Bucket=bucket, Policy=json.dumps({
        "Version": "2012-10-17", "Statement": [{
            "Effect": "Allow", "Principal": {"AWS": u["Arn"]}, "Action": "s3:ListBucket",
            "Resource": f"arn:aws:s3:::{bucket}"}]}))
    assert s3.list_objects_v2(Bucket=bucket)["KeyCount"] == 0
    # The root's own keys: made without UserName, they sign as the root.
    key = iam.create_access_key()["AccessKey"]
    assert "UserName" not in key
    mine = [x["AccessKeyId"] for x in iam.list_access_keys()["AccessKeyMetadata"]]
    assert mine == [key["AccessKeyId"]]
    as_root = users.client(srv, key["AccessKeyId"], key["SecretAccessKey"], "iam")
    assert as_root.get_user()["User"]["Arn"].endswith(":root")
    assert bucket in [b["Name"] for b in users.client(
        srv, key["AccessKeyId"], key["SecretAccessKey"]).list_buckets()["Buckets"]]
    assert "pathed" in [x["UserName"] for x in iam.list_users()["Users"]]  # not ":root"
    iam.delete_access_key(AccessKeyId=key["AccessKeyId"])
    assert err(lambda: iam.delete_access_key(AccessKeyId=key["AccessKeyId"])) == (
        "NoSuchEntity", 404)
    assert iam.list_access_keys()["AccessKeyMetadata"] == []
    assert err(lambda: as_root.get_user()) == ("InvalidClientTokenId", 403)


def check_groups(srv):
    iam = users.client(srv, ACCESS_KEY, SECRET_KEY, "iam")
    root_s3 = users.client(srv, ACCESS_KEY, SECRET_KEY)
    bucket = unique_bucket("groups")
    root_s3.create_bucket(Bucket=bucket)
    root_s3.put_object(Bucket=bucket, Key="k", Body=b"group data")
    s3 = new_user(iam, srv, "member", "/s3-tests/")
    g = iam.create_group(GroupName="Readers", Path="/s3-tests/")["Group"]
    assert g["Arn"].endswith(":group/s3-tests/Readers") and g["GroupId"].startswith("AGPA")
    assert err(lambda: iam.create_group(GroupName="readers")) == ("EntityAlreadyExists", 409)
    assert iam.get_group(GroupName="readers")["Group"] == g
    assert [x["GroupName"] for x in iam.list_groups(PathPrefix="/s3-tests/")["Groups"]] == [
        "Readers"]
    assert iam.list_groups(PathPrefix="/else/")["Groups"] == []
    iam.put_group_policy(GroupName="Readers", PolicyName="read",
                         PolicyDocument=allow(["s3:GetObject", "s3:ListBucket"]))
    assert iam.list_group_policies(GroupName="Readers")["PolicyNames"] == ["read"]
    doc = iam.get_group_policy(GroupName="Readers", PolicyName="read")["PolicyDocument"]
    assert doc["Statement"][0]["Action"] == ["s3:GetObject", "s3:ListBucket"]
    # Not yet a member: refused.
    assert err(lambda: s3.get_object(Bucket=bucket, Key="k")) == ("AccessDenied", 403)
    iam.add_user_to_group(GroupName="Readers", UserName="member")
    assert [u["UserName"] for u in iam.get_group(GroupName="Readers")["Users"]] == ["member"]
    assert [x["GroupName"] for x in iam.list_groups_for_user(UserName="member")["Groups"]] == [
        "Readers"]
    assert s3.get_object(Bucket=bucket, Key="k")["Body"].read() == b"group data"
    assert err(lambda: s3.put_object(Bucket=bucket, Key="w", Body=b"x")) == ("AccessDenied", 403)
    # A Deny in a group policy binds over the Allow.
    iam.put_group_policy(GroupName="Readers", PolicyName="no-get",
                         PolicyDocument=allow("s3:GetObject", effect="Deny"))
    assert err(lambda: s3.get_object(Bucket=bucket, Key="k")) == ("AccessDenied", 403)
    iam.delete_group_policy(GroupName="Readers", PolicyName="no-get")
    assert s3.get_object(Bucket=bucket, Key="k")["Body"].read() == b"group data"
    # Links block deletes.
    assert err(lambda: iam.delete_group(GroupName="Readers")) == ("DeleteConflict", 409)
    iam.delete_access_key(UserName="member",
                          AccessKeyId=iam.list_access_keys(UserName="member")[
                              "AccessKeyMetadata"][0]["AccessKeyId"])
    assert err(lambda: iam.delete_user(UserName="member")) == ("DeleteConflict", 409)
    k = iam.create_access_key(UserName="member")["AccessKey"]
    s3 = users.client(srv, k["AccessKeyId"], k["SecretAccessKey"])
    iam.remove_user_from_group(GroupName="Readers", UserName="member")
    assert err(lambda: iam.remove_user_from_group(GroupName="Readers", UserName="member")) == (
        "NoSuchEntity", 404)
    assert err(lambda: s3.get_object(Bucket=bucket, Key="k")) == ("AccessDenied", 403)
    assert iam.list_groups_for_user(UserName="member")["Groups"] == []
    assert err(lambda: iam.add_user_to_group(GroupName="nogroup", UserName="member")) == (
        "NoSuchEntity", 404)
    assert err(lambda: iam.add_user_to_group(GroupName="Readers", UserName="nouser")) == (
        "NoSuchEntity", 404)
    iam.delete_group_policy(GroupName="Readers", PolicyName="read")
    iam.delete_group(GroupName="Readers")
    assert err(lambda: iam.get_group(GroupName="Readers")) == ("NoSuchEntity", 404)
    # A user with iam:* on groups only may manage groups, not users.
    iam.put_user_policy(UserName="member", PolicyName="groups",
                        PolicyDocument=allow("iam:*Group*", "arn:aws:iam::*:group/*"))
    giam = users.client(srv, k["AccessKeyId"], k["SecretAccessKey"], "iam")
    giam.create_group(GroupName="by-member")
    assert err(lambda: giam.create_user(UserName="x")) == ("AccessDenied", 403)
    giam.delete_group(GroupName="by-member")
    # UpdateUser's NewUserName: the key, the group and its policy follow the user.
    rs3 = new_user(iam, srv, "renamed-a", "/r/")
    iam.create_group(GroupName="rg")
    iam.put_group_policy(GroupName="rg", PolicyName="read", PolicyDocument=allow("s3:GetObject"))
    iam.add_user_to_group(GroupName="rg", UserName="renamed-a")
    assert err(lambda: iam.update_user(UserName="renamed-a", NewUserName="MEMBER")) == (
        "EntityAlreadyExists", 409)
    iam.update_user(UserName="renamed-a", NewUserName="renamed-b")
    assert err(lambda: iam.get_user(UserName="renamed-a")) == ("NoSuchEntity", 404)
    u = iam.get_user(UserName="renamed-b")["User"]
    assert u["Path"] == "/r/" and u["Arn"].endswith(":user/r/renamed-b")
    assert [x["GroupName"] for x in iam.list_groups_for_user(UserName="renamed-b")["Groups"]] == [
        "rg"]
    assert [x["UserName"] for x in iam.get_group(GroupName="rg")["Users"]] == ["renamed-b"]
    assert rs3.get_object(Bucket=bucket, Key="k")["Body"].read() == b"group data"
    # Deleted with force (wharfd user delete, its keys and policies with it): a new user of the
    # same name inherits none of its groups.
    users.delete_user(srv, "renamed-b")
    iam.create_user(UserName="renamed-b")
    assert iam.list_groups_for_user(UserName="renamed-b")["Groups"] == []
    assert iam.get_group(GroupName="rg")["Users"] == []
    k2 = iam.create_access_key(UserName="renamed-b")["AccessKey"]
    again = users.client(srv, k2["AccessKeyId"], k2["SecretAccessKey"])
    assert err(lambda: again.get_object(Bucket=bucket, Key="k")) == ("AccessDenied", 403)


def check_managed_policies(srv):
    iam = users.client(srv, ACCESS_KEY, SECRET_KEY, "iam")
    root_s3 = users.client(srv, ACCESS_KEY, SECRET_KEY)
    bucket = unique_bucket("managed")
    root_s3.create_bucket(Bucket=bucket)
    root_s3.put_object(Bucket=bucket, Key="k", Body=b"managed")
    s3 = new_user(iam, srv, "attached")
    p = iam.create_policy(PolicyName="WriteK", Path="/s3-tests/",
                          PolicyDocument=allow("s3:PutObject", f"arn:aws:s3:::{bucket}/*"))[
        "Policy"]
    arn = p["Arn"]
    assert arn.endswith(":policy/s3-tests/WriteK") and p["DefaultVersionId"] == "v1"
    assert err(lambda: iam.create_policy(PolicyName="WriteK", PolicyDocument=allow("s3:*"))) == (
        "EntityAlreadyExists", 409)
    assert err(lambda: iam.create_policy(PolicyName="Bad", PolicyDocument="{not json")) == (
        "MalformedPolicyDocument", 400)
    assert iam.get_policy(PolicyArn=arn)["Policy"]["AttachmentCount"] == 0
    v = iam.get_policy_version(PolicyArn=arn, VersionId="v1")["PolicyVersion"]
    assert v["Document"]["Statement"][0]["Action"] == "s3:PutObject" and v["IsDefaultVersion"]
    local = [x["PolicyName"] for x in iam.list_policies(Scope="Local")["Policies"]]
    assert local == ["WriteK"]
    assert "AmazonS3ReadOnlyAccess" in [
        x["PolicyName"] for x in iam.list_policies(Scope="AWS")["Policies"]]
    # Nothing attached: refused; attached: allowed; detached: refused again.
    assert err(lambda: s3.put_object(Bucket=bucket, Key="w", Body=b"x")) == ("AccessDenied", 403)
    iam.attach_user_policy(UserName="attached", PolicyArn=arn)
    iam.attach_user_policy(UserName="attached", PolicyArn=arn)  # twice: one attachment
    att = iam.list_attached_user_policies(UserName="attached")["AttachedPolicies"]
    assert att == [{"PolicyName": "WriteK", "PolicyArn": arn}]
    s3.put_object(Bucket=bucket, Key="w", Body=b"x")
    assert err(lambda: s3.get_object(Bucket=bucket, Key="k")) == ("AccessDenied", 403)
    assert err(lambda: iam.delete_policy(PolicyArn=arn)) == ("DeleteConflict", 409)
    assert err(lambda: iam.delete_user(UserName="attached")) == ("DeleteConflict", 409)
    iam.detach_user_policy(UserName="attached", PolicyArn=arn)
    assert err(lambda: iam.detach_user_policy(UserName="attached", PolicyArn=arn)) == (
        "NoSuchEntity", 404)
    assert err(lambda: s3.put_object(Bucket=bucket, Key="w", Body=b"x")) == ("AccessDenied", 403)
    # An AWS managed policy through a group.
    ro = "arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess"
    iam.create_group(GroupName="ro")
    iam.attach_group_policy(GroupName="ro", PolicyArn=ro)
    assert [x["PolicyArn"] for x in iam.list_attached_group_policies(GroupName="ro")[
        "AttachedPolicies"]] == [ro]
    iam.add_user_to_group(GroupName="ro", UserName="attached")
    assert s3.get_object(Bucket=bucket, Key="k")["Body"].read() == b"managed"
    assert err(lambda: s3.put_object(Bucket=bucket, Key="w", Body=b"x")) == ("AccessDenied", 403)
    iam.detach_group_policy(GroupName="ro", PolicyArn=ro)
    assert err(lambda: s3.get_object(Bucket=bucket, Key="k")) == ("AccessDenied", 403)
    assert err(lambda: iam.attach_user_policy(
        UserName="attached", PolicyArn="arn:aws:iam::aws:policy/NoSuch")) == ("NoSuchEntity", 404)
    iam.delete_policy(PolicyArn=arn)
    assert err(lambda: iam.get_policy(PolicyArn=arn)) == ("NoSuchEntity", 404)
    # Lists a cleanup walks: roles and OIDC providers are none.
    assert iam.list_roles()["Roles"] == []
    assert iam.list_open_id_connect_providers()["OpenIDConnectProviderList"] == []


def test_paths_and_root_keys():
    with WharfServer(providers="none") as srv:
        check_paths_and_root_keys(srv)


def test_groups_allow_and_deny():
    with WharfServer(providers="none") as srv:
        check_groups(srv)


def test_managed_policies_allow_and_deny():
    with WharfServer(providers="none") as srv:
        check_managed_policies(srv)


def test_records_survive_a_restart():
    d = tempfile.mkdtemp(prefix="wharf-iam-restart-")
    with WharfServer(data_dir=d, providers="none") as srv:
        iam = users.client(srv, ACCESS_KEY, SECRET_KEY, "iam")
        iam.create_user(UserName="kept", Path="/p/")
        iam.create_group(GroupName="kept-g")
        iam.add_user_to_group(GroupName="kept-g", UserName="kept")
    with WharfServer(data_dir=d, providers="none") as srv:
        iam = users.client(srv, ACCESS_KEY, SECRET_KEY, "iam")
        assert iam.get_user(UserName="kept")["User"]["Path"] == "/p/"
        assert [u["UserName"] for u in iam.get_group(GroupName="kept-g")["Users"]] == ["kept"]


@pytest.mark.skipif(PG_REASON is not None, reason=PG_REASON or "")
def test_groups_and_managed_policies_on_postgresql():
    with pgserver.PgServer() as pg:
        url = pg.create_db("iamrec")
        keydir = tempfile.mkdtemp(prefix="wharf-key-")
        kf = os.path.join(keydir, "server.key")
        with open(kf, "w") as f:
            f.write(os.urandom(32).hex() + "\n")
        os.chmod(kf, 0o600)
        with WharfServer(providers="none",
                         extra_args=["--meta", url, "--server-key-file", kf]) as srv:
            check_groups(srv)
            check_managed_policies(srv)
        assert int(pg.sql("SELECT count(*) FROM iam_records WHERE kind = 'policy'",
                          db="iamrec")) == 0
