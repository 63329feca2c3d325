# SPDX-License-Identifier: Apache-2.0
"""RenameObject (S3 Express's request shape: PUT /bucket/dst?renameObject with
x-amz-rename-source: bucket/src) against a real wharfd, over SQLite and PostgreSQL metadata.

The rename is one metadata transaction that moves the source's row to the destination key, so
a GET racing it returns the whole old object or 404, never a torn body; two renames racing for
one destination with If-None-Match: * have exactly one winner; a locked or versioned object is
never renamed away; and the caller needs s3:PutObject on the destination and s3:GetObject and
s3:DeleteObject on the source. (Debian's boto3 predates RenameObject: requests are signed by
tests/lib/s3raw.py.)
"""
import email.utils
import hashlib
import json
import threading
import time

import boto3
import pytest
from botocore.config import Config

import pgserver
import users
from s3raw import S3Raw
from wharfd import ACCESS_KEY, REGION, SECRET_KEY, WharfServer, md5_hex, unique_bucket

MIB = 1024 * 1024


def _q(etag):
    return f'"{etag}"'


def rename(raw, bucket, src, dst, headers=None, source=None):
    h = {"x-amz-rename-source": source if source is not None else f"{bucket}/{src}"}
    h.update(headers or {})
    return raw.request("PUT", f"/{bucket}/{dst}", query={"renameObject": ""}, headers=h)


@pytest.fixture(scope="module")
def raw(wharfd):
    return S3Raw(wharfd.endpoint)


@pytest.fixture()
def bucket(raw):
    b = unique_bucket("ren")
    assert raw.request("PUT", f"/{b}").status == 200
    return b


def _boto3(endpoint):
    return boto3.session.Session().client(
        "s3", endpoint_url=endpoint, aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY, region_name=REGION,
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))


def basic_rename(raw, b):
    body = b"renamed bytes " * 1000
    put = raw.request("PUT", f"/{b}/src", body=body,
                      headers={"x-amz-meta-colour": "blue", "Content-Type": "text/x-test"})
    assert put.status == 200, put
    before = raw.request("HEAD", f"/{b}/src")
    r = rename(raw, b, "src", "dst")
    assert r.status == 200, r
    assert raw.request("GET", f"/{b}/src").status == 404
    got = raw.request("GET", f"/{b}/dst")
    assert got.status == 200 and got.body == body
    after = raw.request("HEAD", f"/{b}/dst")
    # Metadata moves with the object: ETag, checksum, Last-Modified, content type, user metadata.
    for h in ("etag", "last-modified", "content-type", "x-amz-meta-colour", "content-length"):
        assert after.headers.get(h) == before.headers.get(h), h
    assert after.headers["etag"] == _q(md5_hex(body))
    assert put.headers["x-amz-checksum-crc64nvme"] == raw.request(
        "HEAD", f"/{b}/dst", headers={"x-amz-checksum-mode": "ENABLED"}).headers[
        "x-amz-checksum-crc64nvme"]
    # The destination's former object is replaced.
    assert raw.request("PUT", f"/{b}/other", body=b"other").status == 200
    assert rename(raw, b, "dst", "other").status == 200
    assert raw.request("GET", f"/{b}/other").body == body
    assert raw.request("GET", f"/{b}/dst").status == 404


def test_rename_moves_the_object(raw, bucket):
    basic_rename(raw, bucket)
    # A multipart object keeps its parts' layout and its -N ETag.
    k = f"/{bucket}/mp"
    r = raw.request("POST", k, query={"uploads": ""})
    uid = r.body.split(b"<UploadId>")[1].split(b"</UploadId>")[0].decode()
    parts = [b"a" * (5 * MIB), b"b" * 1000]
    xml = "<CompleteMultipartUpload>"
    for i, p in enumerate(parts, 1):
        e = raw.request("PUT", k, query={"uploadId": uid, "partNumber": i}, body=p)
        xml += f"<Part><PartNumber>{i}</PartNumber><ETag>{e.headers['etag']}</ETag></Part>"
    xml += "</CompleteMultipartUpload>"
    done = raw.request("POST", k, query={"uploadId": uid}, body=xml.encode())
    assert done.status == 200, done
    assert rename(raw, bucket, "mp", "mp2").status == 200
    got = raw.request("GET", f"/{bucket}/mp2")
    assert got.body == b"".join(parts)
    assert got.headers["etag"].endswith('-2"')
    assert raw.request("GET", f"/{bucket}/mp2", query={"partNumber": 2}).body == parts[1]


def test_destination_conditions(raw, bucket):
    assert raw.request("PUT", f"/{bucket}/a", body=b"A").status == 200
    eb = raw.request("PUT", f"/{bucket}/b", body=b"B").headers["etag"]
    r = rename(raw, bucket, "a", "b", {"If-None-Match": "*"})
    assert r.status == 412 and r.error_code() == "PreconditionFailed", r
    r = rename(raw, bucket, "a", "b", {"If-Match": _q(md5_hex(b"not B"))})
    assert r.status == 412 and r.error_code() == "PreconditionFailed", r
    assert raw.request("GET", f"/{bucket}/a").body == b"A"
    assert raw.request("GET", f"/{bucket}/b").body == b"B"
    r = rename(raw, bucket, "a", "missing", {"If-Match": _q(md5_hex(b"A"))})
    assert r.status == 404 and r.error_code() == "NoSuchKey", r
    assert raw.request("GET", f"/{bucket}/a").body == b"A"
    assert rename(raw, bucket, "a", "b", {"If-Match": eb}).status == 200
    assert raw.request("GET", f"/{bucket}/b").body == b"A"
    assert rename(raw, bucket, "b", "c", {"If-None-Match": "*"}).status == 200
    assert raw.request("GET", f"/{bucket}/c").body == b"A"
    r = rename(raw, bucket, "c", "d", {"If-Modified-Since": email.utils.formatdate(usegmt=True)})
    assert r.status == 501 and r.error_code() == "NotImplemented", r
    assert raw.request("GET", f"/{bucket}/c").body == b"A"


def test_source_conditions(raw, bucket):
    e = raw.request("PUT", f"/{bucket}/s", body=b"S").headers["etag"]
    past = email.utils.formatdate(time.time() - 3600, usegmt=True)
    future = email.utils.formatdate(time.time() + 3600, usegmt=True)
    for h in ({"x-amz-rename-source-if-match": _q(md5_hex(b"other"))},
              {"x-amz-rename-source-if-none-match": e},
              {"x-amz-rename-source-if-unmodified-since": past},
              {"x-amz-rename-source-if-modified-since": future}):
        r = rename(raw, bucket, "s", "t", h)
        assert r.status == 412 and r.error_code() == "PreconditionFailed", (h, r)
        assert raw.request("GET", f"/{bucket}/s").body == b"S"
        assert raw.request("GET", f"/{bucket}/t").status == 404
    r = rename(raw, bucket, "s", "t", {"x-amz-rename-source-if-match": e,
                                       "x-amz-rename-source-if-modified-since": past})
    assert r.status == 200, r
    assert raw.request("GET", f"/{bucket}/t").body == b"S"


def test_bad_requests(raw, bucket):
    assert raw.request("PUT", f"/{bucket}/x", body=b"X").status == 200
    r = rename(raw, bucket, "nothing", "y")
    assert r.status == 404 and r.error_code() == "NoSuchKey", r
    for src, why in ((f"{bucket}", b"bucket/key"), ("/", b"bucket/key"),
                     ("other-bucket/x", b"another bucket"),
                     (f"{bucket}/x?versionId=abc", b"versionId"),
                     (f"{bucket}/%zz", b"percent-escape")):
        r = rename(raw, bucket, None, "y", source=src)
        assert r.status == 400 and r.error_code() == "InvalidArgument", (src, r)
        assert why in r.body, (src, r.body)
    r = raw.request("PUT", f"/{bucket}/y", query={"renameObject": ""})
    assert r.status == 400 and b"x-amz-rename-source" in r.body, r
    r = rename(raw, bucket, "x", "dir/")
    assert r.status == 400 and r.error_code() == "InvalidRequest", r
    # A rename moves no bytes: an x-amz-rdma-token on it is refused, and nothing moves.
    r = rename(raw, bucket, "x", "y", {"x-amz-rdma-token": "0x1000:4096:ofi1:tcp:00:00"})
    assert r.status == 400 and r.error_code() == "InvalidRequest", r
    # Another method on ?renameObject is no other API.
    assert raw.request("GET", f"/{bucket}/x", query={"renameObject": ""}).status == 405
    # Nothing moved, nothing was created.
    assert raw.request("GET", f"/{bucket}/x").body == b"X"
    assert raw.request("GET", f"/{bucket}/y").status == 404
    assert raw.request("GET", f"/{bucket}/dir/").status == 404
    # A URL-encoded source and a leading slash are taken.
    assert raw.request("PUT", f"/{bucket}/sp ace+é", body=b"Z").status == 200
    r = rename(raw, bucket, None, "z", source=f"/{bucket}/sp%20ace%2B%C3%A9")
    assert r.status == 200, r
    assert raw.request("GET", f"/{bucket}/z").body == b"Z"
    # A rename onto itself changes nothing.
    assert rename(raw, bucket, "z", "z").status == 200
    assert raw.request("GET", f"/{bucket}/z").body == b"Z"


def test_versioned_and_locked_buckets_refused(wharfd, raw):
    s3 = _boto3(wharfd.endpoint)
    vb = unique_bucket("renv")
    s3.create_bucket(Bucket=vb)
    s3.put_bucket_versioning(Bucket=vb, VersioningConfiguration={"Status": "Enabled"})
    s3.put_object(Bucket=vb, Key="k", Body=b"v1")
    r = rename(raw, vb, "k", "k2")
    assert r.status == 501 and r.error_code() == "NotImplemented" and b"versioning" in r.body, r
    s3.put_bucket_versioning(Bucket=vb, VersioningConfiguration={"Status": "Suspended"})
    assert rename(raw, vb, "k", "k2").status == 501
    assert s3.get_object(Bucket=vb, Key="k")["Body"].read() == b"v1"
    lb = unique_bucket("renl")
    s3.create_bucket(Bucket=lb, ObjectLockEnabledForBucket=True)
    s3.put_object(Bucket=lb, Key="held", Body=b"held", ObjectLockLegalHoldStatus="ON")
    r = rename(raw, lb, "held", "away")
    assert r.status == 501, r
    assert s3.get_object(Bucket=lb, Key="held")["Body"].read() == b"held"
    assert rename(raw, lb, "held", "away").status != 200
    with pytest.raises(Exception):
        s3.head_object(Bucket=lb, Key="away")
    s3.put_object_legal_hold(Bucket=lb, Key="held", LegalHold={"Status": "OFF"})


def _threads(n, fn):
    barrier = threading.Barrier(n)
    out = [None] * n

    def run(i):
        barrier.wait(timeout=30)
        try:
            out[i] = fn(i)
        except BaseException as e:  # noqa: BLE001 (checked by the caller)
            out[i] = e

    ts = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=120)
    assert all(not t.is_alive() for t in ts), "a thread hung"
    return out


def race_rename_vs_get(raw, b, rounds=6, readers=3, reads=15):
    """Readers GET the source and the destination while the source is renamed onto the
    destination: each GET is a whole object (the old destination, or the source) or 404."""
    for rnd in range(rounds):
        old = bytes([65 + rnd % 26]) * (3 * MIB + rnd)
        new = hashlib.sha256(str(rnd).encode()).digest() * (2 * MIB // 32)
        assert raw.request("PUT", f"/{b}/rg-dst", body=old).status == 200
        assert raw.request("PUT", f"/{b}/rg-src", body=new).status == 200
        seen = []

        def fn(i):
            if i == readers:
                time.sleep(0.01)
                return rename(raw, b, "rg-src", "rg-dst").status
            got = []
            for _ in range(reads):
                for key in ("rg-src", "rg-dst"):
                    r = raw.request("GET", f"/{b}/{key}")
                    got.append((key, r.status, hashlib.md5(r.body).hexdigest()))
            return got

        out = _threads(readers + 1, fn)
        assert out[readers] == 200, out[readers]
        for res in out[:readers]:
            assert isinstance(res, list), res
            seen += res
        whole = {md5_hex(old), md5_hex(new)}
        for key, status, digest in seen:
            if key == "rg-src":
                assert status == 404 or (status == 200 and digest == md5_hex(new)), (key, status)
            else:
                assert status == 200 and digest in whole, (key, status)
        assert raw.request("GET", f"/{b}/rg-dst").body == new
        assert raw.request("GET", f"/{b}/rg-src").status == 404


def race_rename_create(raw, b, rounds=15, writers=4):
    """Renames of different sources onto one destination with If-None-Match: *: one winner."""
    for rnd in range(rounds):
        for i in range(writers):
            assert raw.request("PUT", f"/{b}/rc{rnd}-{i}", body=f"{rnd}-{i}".encode()).status == 200
        out = _threads(writers, lambda i: rename(raw, b, f"rc{rnd}-{i}", f"rc{rnd}",
                                                 {"If-None-Match": "*"}))
        statuses = [r.status for r in out]
        assert statuses.count(200) == 1, (rnd, statuses, [r.body for r in out])
        assert all(s in (200, 409, 412) for s in statuses), statuses
        w = statuses.index(200)
        assert raw.request("GET", f"/{b}/rc{rnd}").body == f"{rnd}-{w}".encode()
        for i in range(writers):  # the losers' sources are untouched
            r = raw.request("GET", f"/{b}/rc{rnd}-{i}")
            assert (r.status == 404) == (i == w), (i, r.status)


def race_rename_source(raw, b, rounds=15, writers=4):
    """Renames of one source to different destinations: one moves it, the others find none."""
    for rnd in range(rounds):
        assert raw.request("PUT", f"/{b}/rs{rnd}", body=b"one").status == 200
        out = _threads(writers, lambda i: rename(raw, b, f"rs{rnd}", f"rs{rnd}-{i}"))
        statuses = [r.status for r in out]
        assert statuses.count(200) == 1, (rnd, statuses)
        assert all(s in (200, 404, 409) for s in statuses), statuses
        present = [i for i in range(writers)
                   if raw.request("GET", f"/{b}/rs{rnd}-{i}").status == 200]
        assert present == [statuses.index(200)], (present, statuses)


def test_race_rename_vs_get(raw, bucket):
    race_rename_vs_get(raw, bucket)


def test_race_rename_create(raw, bucket):
    race_rename_create(raw, bucket)


def test_race_rename_source(raw, bucket):
    race_rename_source(raw, bucket)


def _allow(actions, b):
    return json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": actions, "Resource": [f"arn:aws:s3:::{b}/*"]}]})


def test_authorization():
    """s3:PutObject on the destination, s3:GetObject and s3:DeleteObject on the source: a
    user without any of the three is refused and nothing moves."""
    with WharfServer(providers="none") as srv:
        root = S3Raw(srv.endpoint)
        b = unique_bucket("rena")
        assert root.request("PUT", f"/{b}").status == 200
        assert root.request("PUT", f"/{b}/src/k", body=b"data").status == 200
        u = users.create_user(srv, "renamer")
        iam = users.client(srv, ACCESS_KEY, SECRET_KEY, "iam")
        raw = S3Raw(srv.endpoint, access_key=u.access_key, secret_key=u.secret_key)
        full = ["s3:PutObject", "s3:GetObject", "s3:DeleteObject"]
        for missing in full:
            iam.put_user_policy(UserName="renamer", PolicyName="p",
                                PolicyDocument=_allow([a for a in full if a != missing], b))
            r = rename(raw, b, "src/k", "dst/k")
            assert r.status == 403 and r.error_code() == "AccessDenied", (missing, r)
            assert root.request("GET", f"/{b}/src/k").body == b"data"
            assert root.request("GET", f"/{b}/dst/k").status == 404
        # The destination's resource alone grants nothing on the source.
        iam.put_user_policy(UserName="renamer", PolicyName="p", PolicyDocument=json.dumps({
            "Version": "2012-10-17", "Statement": [
                {"Effect": "Allow", "Action": full, "Resource": [f"arn:aws:s3:::{b}/dst/*"]}]}))
        assert rename(raw, b, "src/k", "dst/k").status == 403
        iam.put_user_policy(UserName="renamer", PolicyName="p", PolicyDocument=_allow(full, b))
        r = rename(raw, b, "src/k", "dst/k")
        assert r.status == 200, r
        assert root.request("GET", f"/{b}/dst/k").body == b"data"
        assert root.request("GET", f"/{b}/src/k").status == 404


reason = pgserver.missing_reason()


@pytest.mark.skipif(reason is not None, reason=reason or "")
def test_rename_on_postgresql():
    """The same rename and races with the metadata in PostgreSQL (SERIALIZABLE, retried)."""
    with pgserver.PgServer() as pg:
        url = pg.create_db("ren")
        with WharfServer(extra_args=["--meta", url]) as srv:
            raw = S3Raw(srv.endpoint)
            b = unique_bucket("renpg")
            assert raw.request("PUT", f"/{b}").status == 200
            basic_rename(raw, b)
            race_rename_create(raw, b, rounds=8)
            race_rename_source(raw, b, rounds=8)
            race_rename_vs_get(raw, b, rounds=3)
