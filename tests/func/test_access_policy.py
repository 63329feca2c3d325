# SPDX-License-Identifier: Apache-2.0
"""Bucket policies against a real wharfd: PutBucketPolicy/GetBucketPolicy/DeleteBucketPolicy/
GetBucketPolicyStatus with boto3 and the real awscli, every statement form and condition key
wharf serves, allowed and denied, for the owner, another user, a read-only user and an
anonymous client (plain urllib, no signature), and the MalformedPolicy answers that name the
fault. Users come from tests/lib/users.py (identity's IAM API)."""
import json
import subprocess
import urllib.error
import urllib.request

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from wharfd import ACCESS_KEY, CTYPES_UNDER_ASAN, REGION, SECRET_KEY, unique_bucket

AWS = "/usr/bin/aws"
ACCOUNT = "000000000000"


def client(endpoint, ak=ACCESS_KEY, sk=SECRET_KEY):
    return boto3.session.Session().client(
        "s3", endpoint_url=endpoint, aws_access_key_id=ak, aws_secret_access_key=sk,
        region_name=REGION,
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                      signature_version="s3v4", connect_timeout=10, read_timeout=60))


def code(excinfo):
    return excinfo.value.response["Error"]["Code"]


def anon(method, url, data=None):
    """(status, body) of an unsigned request: no Authorization, no presign."""
    req = urllib.request.Request(url, data=data, method=method)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def policy(*statements):
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)})


@pytest.fixture(scope="module")
def root(wharfd):
    return client(wharfd.endpoint)


@pytest.fixture()
def bucket(root):
    name = unique_bucket("pol")
    root.create_bucket(Bucket=name)
    root.put_object(Bucket=name, Key="pub/a", Body=b"public a")
    root.put_object(Bucket=name, Key="priv/b", Body=b"private b")
    yield name
    for o in root.list_objects_v2(Bucket=name).get("Contents", []):
        root.delete_object(Bucket=name, Key=o["Key"])
    root.delete_bucket(Bucket=name)


def test_anonymous_by_bucket_policy(wharfd, root, bucket):
    url = f"{wharfd.endpoint}/{bucket}"
    # No policy: the anonymous client gets nothing, not even whether a key exists.
    assert anon("GET", f"{url}/pub/a")[0] == 403
    assert anon("GET", f"{url}/pub/none")[0] == 403
    root.put_bucket_policy(Bucket=bucket, Policy=policy(
        {"Sid": "PublicPrefix", "Effect": "Allow", "Principal": "*",
         "Action": "s3:GetObject", "Resource": f"arn:aws:s3:::{bucket}/pub/*"}))
    st, body = anon("GET", f"{url}/pub/a")
    assert (st, body) == (200, b"public a")
    assert anon("HEAD", f"{url}/pub/a")[0] == 200
    assert anon("GET", f"{url}/priv/b")[0] == 403
    # Allowed to read but not to list: a missing key is 403, never 404.
    assert anon("GET", f"{url}/pub/none")[0] == 403
    assert anon("PUT", f"{url}/pub/new", b"x")[0] == 403
    assert anon("DELETE", f"{url}/pub/a")[0] == 403
    assert anon("GET", f"{url}?list-type=2")[0] == 403
    assert root.get_object(Bucket=bucket, Key="pub/a")["Body"].read() == b"public a"
    got = json.loads(root.get_bucket_policy(Bucket=bucket)["Policy"])
    assert got["Statement"][0]["Sid"] == "PublicPrefix"
    assert root.get_bucket_policy_status(Bucket=bucket)["PolicyStatus"]["IsPublic"] is True
    root.delete_bucket_policy(Bucket=bucket)
    assert anon("GET", f"{url}/pub/a")[0] == 403
    with pytest.raises(ClientError) as e:
        root.get_bucket_policy(Bucket=bucket)
    assert code(e) == "NoSuchBucketPolicy"


def test_deny_beats_public_acl_and_list_with_prefix_condition(wharfd, root, bucket):
    url = f"{wharfd.endpoint}/{bucket}"
    root.put_bucket_acl(Bucket=bucket, ACL="public-read")
    root.put_object_acl(Bucket=bucket, Key="priv/b", ACL="public-read")
    assert anon("GET", f"{url}/priv/b")[0] == 200
    assert anon("GET", f"{url}?list-type=2")[0] == 200
    root.put_bucket_policy(Bucket=bucket, Policy=policy(
        {"Effect": "Deny", "Principal": {"AWS": "*"}, "Action": "s3:GetObject",
         "Resource": f"arn:aws:s3:::{bucket}/priv/*"},
        {"Effect": "Deny", "Principal": "*", "Action": "s3:ListBucket",
         "Resource": f"arn:aws:s3:::{bucket}",
         "Condition": {"StringNotLike": {"s3:prefix": "pub/*"}}}))
    assert anon("GET", f"{url}/priv/b")[0] == 403
    assert anon("GET", f"{url}?list-type=2")[0] == 403            # no prefix: denied
    assert anon("GET", f"{url}?list-type=2&prefix=priv/")[0] == 403
    st, body = anon("GET", f"{url}?list-type=2&prefix=pub/")
    assert st == 200 and b"<Key>pub/a</Key>" in body and b"priv/b" not in body
    # Root is never locked out by a policy.
    assert root.get_object(Bucket=bucket, Key="priv/b")["Body"].read() == b"private b"
    assert root.list_objects_v2(Bucket=bucket)["KeyCount"] == 2


def test_public_policy_never_hands_the_bucket_to_anonymous(wharfd, root):
    name = unique_bucket("own")
    root.create_bucket(Bucket=name)
    res = f"arn:aws:s3:::{name}"
    doc = policy({"Effect": "Allow", "Principal": "*", "Action": "s3:*",
                  "Resource": [res, f"{res}/*"]})
    root.put_bucket_policy(Bucket=name, Policy=doc)
    url = f"{wharfd.endpoint}/{name}"
    assert anon("PUT", f"{url}/k", data=b"anon")[0] == 200  # the policy grants object writes
    assert anon("GET", f"{url}/k") == (200, b"anon")
    assert anon("DELETE", f"{url}/k")[0] == 204
    other = policy({"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
                    "Resource": f"{res}/*"}).encode()
    assert anon("PUT", f"{url}?policy", data=other)[0] == 405
    assert anon("GET", f"{url}?policy")[0] == 405
    assert anon("DELETE", f"{url}?policy")[0] == 405
    st, body = anon("PUT", f"{url}?acl", data=b"")
    assert st == 403, body
    assert anon("PUT", f"{url}?versioning", data=(
        b'<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>'))[0] == 403
    assert anon("DELETE", url)[0] == 403
    # Nothing changed: the owner's policy, ACL and bucket are all still there.
    assert json.loads(root.get_bucket_policy(Bucket=name)["Policy"]) == json.loads(doc)
    assert root.get_bucket_versioning(Bucket=name).get("Status") is None
    root.delete_bucket_policy(Bucket=name)
    root.delete_bucket(Bucket=name)


def test_conditions_source_ip_max_keys_secure_transport(wharfd, root, bucket):
    url = f"{wharfd.endpoint}/{bucket}"
    res = f"arn:aws:s3:::{bucket}"
    root.put_bucket_policy(Bucket=bucket, Policy=policy(
        {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": f"{res}/*",
         "Condition": {"IpAddress": {"aws:SourceIp": ["127.0.0.0/8", "::1/128"]}}},
        {"Effect": "Allow", "Principal": "*", "Action": "s3:ListBucket", "Resource": res,
         "Condition": {"NumericLessThanEquals": {"s3:max-keys": "10"}}}))
    assert anon("GET", f"{url}/priv/b")[0] == 200
    assert anon("GET", f"{url}?list-type=2&max-keys=10")[0] == 200
    assert anon("GET", f"{url}?list-type=2&max-keys=11")[0] == 403
    assert anon("GET", f"{url}?list-type=2")[0] == 403  # absent key: the condition fails
    root.put_bucket_policy(Bucket=bucket, Policy=policy(
        {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": f"{res}/*",
         "Condition": {"NotIpAddress": {"aws:SourceIp": "127.0.0.0/8"}}}))
    assert anon("GET", f"{url}/priv/b")[0] == 403
    # wharfd serves plain HTTP: aws:SecureTransport is false, so the usual "deny insecure"
    # statement refuses everyone but root.
    root.put_bucket_policy(Bucket=bucket, Policy=policy(
        {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": f"{res}/*"},
        {"Effect": "Deny", "Principal": "*", "Action": "s3:*", "Resource": [res, f"{res}/*"],
         "Condition": {"Bool": {"aws:SecureTransport": "false"}}}))
    assert anon("GET", f"{url}/priv/b")[0] == 403
    assert root.get_object(Bucket=bucket, Key="priv/b")["Body"].read() == b"private b"
    assert root.get_bucket_policy_status(Bucket=bucket)["PolicyStatus"]["IsPublic"] is True


@pytest.mark.parametrize("doc,want", [
    ("{not json", "not valid JSON"),
    ('{"Version":"2012-10-17"}', "missing required field Statement"),
    (policy({"Effect": "Permit", "Principal": "*", "Action": "s3:GetObject",
             "Resource": "arn:aws:s3:::B/*"}), "Statement 1: Effect must be"),
    (policy({"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
             "Resource": "arn:aws:s3:::B/*",
             "Condition": {"StringEqualz": {"s3:prefix": "a"}}}),
     "unknown condition operator \"StringEqualz\""),
    (policy({"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
             "Resource": "arn:aws:s3:::another-bucket/*"}), "Policy has invalid resource"),
    (policy({"Effect": "Allow", "Principal": {"AWS": "bob"}, "Action": "s3:GetObject",
             "Resource": "arn:aws:s3:::B/*"}), "Invalid principal"),
    (policy({"Effect": "Allow", "Principal": "*", "Action": "iam:CreateUser",
             "Resource": "arn:aws:s3:::B/*"}), "invalid action"),
    (policy({"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
             "Resource": "arn:aws:s3:::B/*",
             "Condition": {"IpAddress": {"aws:SourceIp": "300.1.1.1"}}}),
     "not an IP address or CIDR block"),
    # A condition key wharf cannot evaluate is refused (taken as absent, a Deny on it would
    # never fire), and so is a policy variable it cannot expand.
    *[(policy({"Effect": "Deny", "Principal": "*", "Action": "s3:PutObject",
               "Resource": "arn:aws:s3:::B/*", "Condition": {"StringEquals": {k: "x"}}}),
       f'cannot evaluate the condition key "{k}"')
      for k in ("s3:signatureAge", "s3:x-amz-grant-other", "aws:ResourceTag/t",
                "s3:object-lock-mode", "aws:SourceVpc", "aws:userid")],
    (policy({"Effect": "Deny", "Principal": "*", "Action": "s3:GetObject",
             "Resource": "arn:aws:s3:::B/${aws:userid}/*"}), "policy variables"),
    ('{"Version":"2012-10-17","Statement":[' + ",".join(
        [json.dumps({"Sid": f"s{i}", "Effect": "Allow", "Principal": "*",
                     "Action": "s3:GetObject", "Resource": "arn:aws:s3:::B/" + "k" * 200})
         for i in range(80)]) + "]}", "maximum allowed document size"),
])
def test_malformed_policy_names_the_fault(wharfd, root, bucket, doc, want):
    doc = doc.replace("arn:aws:s3:::B", f"arn:aws:s3:::{bucket}")
    with pytest.raises(ClientError) as e:
        root.put_bucket_policy(Bucket=bucket, Policy=doc)
    assert code(e) == "MalformedPolicy"
    assert want in e.value.response["Error"]["Message"]
    with pytest.raises(ClientError) as e:
        root.get_bucket_policy(Bucket=bucket)
    assert code(e) == "NoSuchBucketPolicy"  # nothing was stored
    assert wharfd.proc.poll() is None


def test_policy_on_missing_bucket_and_routing(wharfd, root):
    name = unique_bucket("nopol")
    with pytest.raises(ClientError) as e:
        root.put_bucket_policy(Bucket=name, Policy=policy(
            {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
             "Resource": f"arn:aws:s3:::{name}/*"}))
    assert code(e) == "NoSuchBucket"
    # An anonymous client learns NoSuchBucket too (as S3 answers).
    st, body = anon("GET", f"{wharfd.endpoint}/{name}/k")
    assert st == 404 and b"NoSuchBucket" in body
    # ?policy and ?acl with a method no row serves are not the plain request.
    root.create_bucket(Bucket=name)
    try:
        req = urllib.request.Request(f"{wharfd.endpoint}/{name}?policy", method="POST")
        st, _ = anon("POST", f"{wharfd.endpoint}/{name}?policy")
        assert st in (403, 405)
        assert root.head_bucket(Bucket=name)["ResponseMetadata"]["HTTPStatusCode"] == 200
        del req
    finally:
        root.delete_bucket(Bucket=name)


def test_awscli_put_get_delete_bucket_policy(wharfd, root, bucket, tmp_path):
    env = wharfd.client_env()
    env.pop("AWS_PROFILE", None)
    (tmp_path / "config").write_text("[default]\nregion = us-east-1\n")
    env.update({"AWS_CONFIG_FILE": str(tmp_path / "config"),
                "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none")})
    doc = policy({"Sid": "cli", "Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
                  "Resource": f"arn:aws:s3:::{bucket}/pub/*"})
    (tmp_path / "p.json").write_text(doc)

    def aws(*args, check=True):
        r = subprocess.run([AWS, "--endpoint-url", wharfd.endpoint, "--no-cli-pager", "s3api",
                            *args], env=env, capture_output=True, timeout=120)
        if check:
            assert r.returncode == 0, r.stderr.decode(errors="replace")
        return r

    aws("put-bucket-policy", "--bucket", bucket, "--policy", f"file://{tmp_path / 'p.json'}")
    out = json.loads(aws("get-bucket-policy", "--bucket", bucket).stdout)
    assert json.loads(out["Policy"]) == json.loads(doc)
    out = json.loads(aws("get-bucket-policy-status", "--bucket", bucket).stdout)
    assert out["PolicyStatus"]["IsPublic"] is True
    assert anon("GET", f"{wharfd.endpoint}/{bucket}/pub/a")[0] == 200
    aws("delete-bucket-policy", "--bucket", bucket)
    r = aws("get-bucket-policy", "--bucket", bucket, check=False)
    assert r.returncode != 0 and b"NoSuchBucketPolicy" in r.stderr
    assert anon("GET", f"{wharfd.endpoint}/{bucket}/pub/a")[0] == 403
    (tmp_path / "bad.json").write_text('{"Statement": {"Effect": "Allow"}}')
    r = aws("put-bucket-policy", "--bucket", bucket, "--policy",
            f"file://{tmp_path / 'bad.json'}", check=False)
    assert r.returncode != 0 and b"MalformedPolicy" in r.stderr


# ---- several users ---------------------------------------------------------------------------

import uuid  # noqa: E402
import os  # noqa: E402

import users  # noqa: E402



def new_user(srv, tag):
    u = users.create_user(srv, f"{tag}-{uuid.uuid4().hex[:10]}")
    u.s3 = u.boto3(srv)
    return u


def denied(fn, *a, **kw):
    with pytest.raises(ClientError) as e:
        fn(*a, **kw)
    assert code(e) in ("AccessDenied", "403"), e.value.response


@pytest.fixture()
def trio(wharfd, root):
    alice, bob, carol = (new_user(wharfd, t) for t in ("alice", "bob", "carol"))
    name = unique_bucket("upol")
    alice.s3.create_bucket(Bucket=name)
    for k in ("pub/a", "home/x/f", "secret/s"):
        alice.s3.put_object(Bucket=name, Key=k, Body=k.encode())
    alice.s3.put_object(Bucket=name, Key=f"home/{bob.name}/f", Body=b"bob's home")
    yield alice, bob, carol, name
    for o in root.list_objects_v2(Bucket=name).get("Contents", []):
        root.delete_object(Bucket=name, Key=o["Key"])
    root.delete_bucket(Bucket=name)


def test_policy_grants_one_user_and_denies_another(wharfd, trio):
    alice, bob, carol, name = trio
    res = f"arn:aws:s3:::{name}"
    alice.s3.put_bucket_policy(Bucket=name, Policy=policy(
        {"Sid": "BobReadsAndWrites", "Effect": "Allow", "Principal": {"AWS": [bob.arn]},
         "Action": ["s3:GetObject", "s3:PutObject", "s3:ListBucket"],
         "Resource": [res, f"{res}/*"]},
        {"Sid": "NoSecrets", "Effect": "Deny", "Principal": {"AWS": "*"},
         "Action": "s3:*", "Resource": f"{res}/secret/*"}))
    assert bob.s3.get_object(Bucket=name, Key="pub/a")["Body"].read() == b"pub/a"
    bob.s3.put_object(Bucket=name, Key="pub/by-bob", Body=b"b")
    assert bob.s3.list_objects_v2(Bucket=name, Prefix="pub/")["KeyCount"] == 2
    denied(bob.s3.get_object, Bucket=name, Key="secret/s")
    denied(bob.s3.put_object, Bucket=name, Key="secret/new", Body=b"x")
    denied(bob.s3.delete_object, Bucket=name, Key="pub/a")
    denied(carol.s3.get_object, Bucket=name, Key="pub/a")
    # The Deny binds the owner too (root alone is above policies).
    denied(alice.s3.get_object, Bucket=name, Key="secret/s")
    assert alice.s3.get_object(Bucket=name, Key="pub/a")["Body"].read() == b"pub/a"
    # Per key in DeleteObjects: the denied key is an error entry, the others go.
    r = alice.s3.delete_objects(Bucket=name, Delete={"Objects": [{"Key": "secret/s"},
                                                                 {"Key": "pub/by-bob"}]})
    assert [e["Key"] for e in r["Errors"]] == ["secret/s"]
    assert [d["Key"] for d in r["Deleted"]] == ["pub/by-bob"]
    # Policies are the owner's: bob may not read or change this one.
    denied(bob.s3.get_bucket_policy, Bucket=name)
    denied(bob.s3.delete_bucket_policy, Bucket=name)


def test_deny_on_canned_acl_and_auth_type_fires(wharfd, trio):
    alice, bob, carol, name = trio
    res = f"arn:aws:s3:::{name}"
    alice.s3.put_bucket_policy(Bucket=name, Policy=policy(
        {"Effect": "Allow", "Principal": {"AWS": [bob.arn]},
         "Action": ["s3:GetObject", "s3:PutObject"], "Resource": f"{res}/*"},
        {"Effect": "Deny", "Principal": "*", "Action": "s3:PutObject", "Resource": f"{res}/*",
         "Condition": {"StringEquals": {"s3:x-amz-acl": ["public-read", "public-read-write"]}}},
        {"Effect": "Deny", "Principal": "*", "Action": "s3:GetObject", "Resource": f"{res}/*",
         "Condition": {"StringEquals": {"s3:authType": "REST-QUERY-STRING"}}}))
    denied(bob.s3.put_object, Bucket=name, Key="pub/open", Body=b"x", ACL="public-read")
    bob.s3.put_object(Bucket=name, Key="pub/closed", Body=b"x", ACL="private")
    bob.s3.put_object(Bucket=name, Key="pub/plain", Body=b"x")
    assert bob.s3.get_object(Bucket=name, Key="pub/plain")["Body"].read() == b"x"
    v4 = bob.boto3(wharfd, signature_version="s3v4")
    url = v4.generate_presigned_url("get_object", Params={"Bucket": name, "Key": "pub/plain"})
    assert "X-Amz-Signature=" in url
    assert anon("GET", url)[0] == 403  # presigned: REST-QUERY-STRING, denied


def test_not_principal_account_principal_and_conditions(wharfd, trio):
    alice, bob, carol, name = trio
    res = f"arn:aws:s3:::{name}"
    # The account principal delegates to the account, as in AWS: a user of it reads pub/
    # once its own policy allows it (not by the bucket policy alone); everyone but alice
    # and bob is denied writes.
    alice.s3.put_bucket_policy(Bucket=name, Policy=policy(
        {"Effect": "Allow", "Principal": {"AWS": ACCOUNT}, "Action": "s3:GetObject",
         "Resource": f"{res}/pub/*"},
        {"Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:root"},
         "Action": "s3:PutObject", "Resource": f"{res}/drop/*"},
        {"Effect": "Deny", "NotPrincipal": {"AWS": [alice.arn, bob.arn]},
         "Action": "s3:PutObject", "Resource": f"{res}/*"}))
    denied(carol.s3.get_object, Bucket=name, Key="pub/a")
    denied(bob.s3.put_object, Bucket=name, Key="drop/b", Body=b"b")
    iam = users.client(wharfd, ACCESS_KEY, SECRET_KEY, "iam")
    for u, act in ((carol, "s3:GetObject"), (bob, "s3:PutObject")):
        iam.put_user_policy(UserName=u.name, PolicyName="delegated", PolicyDocument=policy(
            {"Effect": "Allow", "Action": act, "Resource": f"{res}/*"}))
    assert carol.s3.get_object(Bucket=name, Key="pub/a")["Body"].read() == b"pub/a"
    assert anon("GET", f"{wharfd.endpoint}/{name}/pub/a")[0] == 403  # not in the account
    bob.s3.put_object(Bucket=name, Key="drop/b", Body=b"b")
    denied(carol.s3.put_object, Bucket=name, Key="drop/c", Body=b"c")
    for u in (carol, bob):
        iam.delete_user_policy(UserName=u.name, PolicyName="delegated")
    # A Deny naming the account covers its users.
    alice.s3.put_bucket_policy(Bucket=name, Policy=policy(
        {"Effect": "Allow", "Principal": {"AWS": [bob.arn]}, "Action": "s3:GetObject",
         "Resource": f"{res}/*"},
        {"Effect": "Deny", "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:root"},
         "Action": "s3:GetObject", "Resource": f"{res}/secret/*"}))
    assert bob.s3.get_object(Bucket=name, Key="pub/a")["Body"].read() == b"pub/a"
    denied(bob.s3.get_object, Bucket=name, Key="secret/s")
    # aws:username: each user reads its own home/; aws:PrincipalArn with ArnLike.
    alice.s3.put_bucket_policy(Bucket=name, Policy=policy(
        {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
         "Resource": f"{res}/home/${{aws:username}}/*"},
        {"Effect": "Allow", "Principal": "*", "Action": "s3:ListBucket", "Resource": res,
         "Condition": {"StringLike": {"s3:prefix": "home/${aws:username}/*"}}},
        {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
         "Resource": f"{res}/pub/*",
         "Condition": {"ArnLike": {"aws:PrincipalArn": f"arn:aws:iam::*:user/{carol.name}"}}}))
    assert bob.s3.get_object(Bucket=name, Key=f"home/{bob.name}/f")["Body"].read() == \
        b"bob's home"
    denied(carol.s3.get_object, Bucket=name, Key=f"home/{bob.name}/f")
    assert bob.s3.list_objects_v2(Bucket=name, Prefix=f"home/{bob.name}/")["KeyCount"] == 1
    denied(bob.s3.list_objects_v2, Bucket=name, Prefix="home/")
    assert carol.s3.get_object(Bucket=name, Key="pub/a")["Body"].read() == b"pub/a"
    denied(bob.s3.get_object, Bucket=name, Key="pub/a")
    # StringEquals on aws:username, and a Deny on a source address the clients have.
    alice.s3.put_bucket_policy(Bucket=name, Policy=policy(
        {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": f"{res}/*",
         "Condition": {"StringEquals": {"aws:username": [bob.name]}}},
        {"Effect": "Deny", "Principal": "*", "Action": "s3:GetObject",
         "Resource": f"{res}/secret/*",
         "Condition": {"IpAddress": {"aws:SourceIp": "127.0.0.0/8"}}}))
    assert bob.s3.get_object(Bucket=name, Key="pub/a")["Body"].read() == b"pub/a"
    denied(bob.s3.get_object, Bucket=name, Key="secret/s")
    denied(carol.s3.get_object, Bucket=name, Key="pub/a")


@pytest.mark.skipif(**CTYPES_UNDER_ASAN)
def test_user_policies_read_only_user_and_allow_elsewhere(wharfd, root, trio):
    """Inline user policies (the IAM API's PutUserPolicy): a Deny binds the user even in its
    own bucket, over HTTP and RDMA; an Allow reaches another user's bucket."""
    import wharf
    alice, bob, carol, name = trio
    iam = users.client(wharfd, ACCESS_KEY, SECRET_KEY, "iam")
    mine = unique_bucket("ro-own")
    carol.s3.create_bucket(Bucket=mine)
    carol.s3.put_object(Bucket=mine, Key="k", Body=b"before")
    iam.put_user_policy(UserName=carol.name, PolicyName="read-only", PolicyDocument=policy(
        {"Effect": "Allow", "Action": ["s3:Get*", "s3:List*"], "Resource": "*"},
        {"Effect": "Deny", "Action": ["s3:PutObject", "s3:DeleteObject", "s3:DeleteBucket"],
         "Resource": "*"}))
    try:
        assert carol.s3.get_object(Bucket=mine, Key="k")["Body"].read() == b"before"
        denied(carol.s3.put_object, Bucket=mine, Key="k", Body=b"after")
        denied(carol.s3.delete_object, Bucket=mine, Key="k")
        denied(carol.s3.delete_bucket, Bucket=mine)
        # Its Allow reaches alice's bucket (no ACL or bucket policy there names carol).
        assert carol.s3.get_object(Bucket=name, Key="pub/a")["Body"].read() == b"pub/a"
        assert carol.s3.list_objects_v2(Bucket=name)["KeyCount"] == 4
        denied(bob.s3.get_object, Bucket=name, Key="pub/a")
        # The RDMA PUT of the read-only user: refused before a byte of its memory is read.
        buf = bytearray(os.urandom(256 << 10))
        with wharf.Client(wharfd.endpoint, carol.access_key, carol.secret_key, region=REGION,
                          provider="ofi+shm", unix_socket=wharfd.unix_socket) as c:
            with c.register(buf):
                m0 = wharfd.metrics()
                with pytest.raises(wharf.WharfError) as e:
                    c.put_from(mine, "k", buf, transport="rdma")
                assert "AccessDenied" in str(e.value), str(e.value)
                m1 = wharfd.metrics()
                for k in ("wharf_rdma_write_bytes_total", "wharf_rdma_read_bytes_total"):
                    assert sum(v for n, v in m1.items() if n.split("{")[0] == k) == \
                        sum(v for n, v in m0.items() if n.split("{")[0] == k)
            assert c.get(mine, "k", transport="rdma") == b"before"
    finally:
        iam.delete_user_policy(UserName=carol.name, PolicyName="read-only")
        carol.s3.delete_object(Bucket=mine, Key="k")
        carol.s3.delete_bucket(Bucket=mine)
