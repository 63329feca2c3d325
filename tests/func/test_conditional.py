"""Conditional writes against a real wharfd: If-None-Match: * and If-Match: ETAG on PutObject
and CompleteMultipartUpload, over SQLite and PostgreSQL metadata.

The condition is checked inside the metadata transaction that commits the object, so writers
racing on one key cannot both pass: the race tests start several writers at once (a barrier)
for many rounds and require exactly one winner each round, and that what is stored is the
winner's body. (Debian's boto3 1.29 and awscli 2.9 predate these headers: requests go through
tests/lib/s3raw.py, which signs them.)
"""
import hashlib
import threading

import pytest

import pgserver
from s3raw import S3Raw
from wharfd import WharfServer, md5_hex, unique_bucket

MIB = 1024 * 1024
ROUNDS = 25
WRITERS = 4


def _q(etag):
    return f'"{etag}"'


@pytest.fixture(scope="module")
def raw(wharfd):
    return S3Raw(wharfd.endpoint)


@pytest.fixture()
def bucket(raw):
    b = unique_bucket("cond")
    assert raw.request("PUT", f"/{b}").status == 200
    return b


def test_if_none_match_star(raw, bucket):
    k = f"/{bucket}/k"
    r = raw.request("PUT", k, body=b"first", headers={"If-None-Match": "*"})
    assert r.status == 200, r
    assert r.headers["etag"] == _q(md5_hex(b"first"))
    r = raw.request("PUT", k, body=b"second", headers={"If-None-Match": "*"})
    assert r.status == 412 and r.error_code() == "PreconditionFailed", r
    assert b"already has an object" in r.body
    assert raw.request("GET", k).body == b"first"
    # Without a condition the overwrite goes through.
    assert raw.request("PUT", k, body=b"third").status == 200
    assert raw.request("GET", k).body == b"third"
    # Once deleted, the key is free again.
    assert raw.request("DELETE", k).status == 204
    assert raw.request("PUT", k, body=b"again", headers={"If-None-Match": "*"}).status == 200


def test_if_match(raw, bucket):
    k = f"/{bucket}/m"
    r = raw.request("PUT", k, body=b"v1", headers={"If-Match": _q(md5_hex(b"v1"))})
    assert r.status == 404 and r.error_code() == "NoSuchKey", r
    assert raw.request("GET", k).status == 404
    e1 = raw.request("PUT", k, body=b"v1").headers["etag"]
    r = raw.request("PUT", k, body=b"v2", headers={"If-Match": _q(md5_hex(b"other"))})
    assert r.status == 412 and r.error_code() == "PreconditionFailed", r
    assert raw.request("GET", k).body == b"v1"
    r = raw.request("PUT", k, body=b"v2", headers={"If-Match": e1})
    assert r.status == 200, r
    # Unquoted and upper-case hex are the same ETag.
    e2 = r.headers["etag"].strip('"')
    r = raw.request("PUT", k, body=b"v3", headers={"If-Match": e2.upper()})
    assert r.status == 200, r
    assert raw.request("GET", k).body == b"v3"
    # The old ETag no longer matches.
    assert raw.request("PUT", k, body=b"v4", headers={"If-Match": e1}).status == 412


def test_bad_condition_headers(raw, bucket):
    k = f"/{bucket}/bad"
    r = raw.request("PUT", k, body=b"x", headers={"If-None-Match": '"abc"'})
    assert r.status == 501 and r.error_code() == "NotImplemented", r
    assert b"only *" in r.body
    r = raw.request("PUT", k, body=b"x", headers={"If-None-Match": "*", "If-Match": '"a"'})
    assert r.status == 501, r
    r = raw.request("PUT", k, body=b"x", headers={"If-Match": '"a", "b"'})
    assert r.status == 400 and r.error_code() == "InvalidArgument", r
    assert raw.request("GET", k).status == 404


def _mpu(raw, path, parts):
    r = raw.request("POST", path, query={"uploads": None})
    assert r.status == 200, r
    uid = r.body.split(b"<UploadId>")[1].split(b"</UploadId>")[0].decode()
    etags = []
    for n, data in enumerate(parts, 1):
        r = raw.request("PUT", path, query={"partNumber": str(n), "uploadId": uid}, body=data)
        assert r.status == 200, r
        etags.append(r.headers["etag"])
    xml = ("<CompleteMultipartUpload>" + "".join(
        f"<Part><PartNumber>{n}</PartNumber><ETag>{e}</ETag></Part>"
        for n, e in enumerate(etags, 1)) + "</CompleteMultipartUpload>").encode()
    return uid, xml


def test_complete_conditions(raw, bucket):
    path = f"/{bucket}/mp"
    body = [b"a" * (5 * MIB), b"tail"]
    uid, xml = _mpu(raw, path, body)
    # If-Match on a missing key: NoSuchKey, and the upload stays.
    r = raw.request("POST", path, query={"uploadId": uid}, body=xml,
                    headers={"If-Match": '"0123456789abcdef0123456789abcdef"'})
    assert r.status == 404 and r.error_code() == "NoSuchKey", r
    r = raw.request("POST", path, query={"uploadId": uid}, body=xml,
                    headers={"If-None-Match": "*"})
    assert r.status == 200, r
    etag = r.body.split(b"<ETag>")[1].split(b"</ETag>")[0].decode().replace("&quot;", '"')
    assert raw.request("GET", path).body == b"".join(body)
    # A second upload to the same key, with If-None-Match: *, fails and keeps its upload...
    uid2, xml2 = _mpu(raw, path, [b"b" * (5 * MIB), b"end"])
    r = raw.request("POST", path, query={"uploadId": uid2}, body=xml2,
                    headers={"If-None-Match": "*"})
    assert r.status == 412 and r.error_code() == "PreconditionFailed", r
    assert raw.request("GET", path).body == b"".join(body)
    r = raw.request("GET", path, query={"uploadId": uid2})
    assert r.status == 200 and r.body.count(b"<Part>") == 2, r
    # ... a wrong If-Match fails too, and the right one completes it.
    r = raw.request("POST", path, query={"uploadId": uid2}, body=xml2,
                    headers={"If-Match": '"0123456789abcdef0123456789abcdef-2"'})
    assert r.status == 412, r
    r = raw.request("POST", path, query={"uploadId": uid2}, body=xml2,
                    headers={"If-Match": etag})
    assert r.status == 200, r
    assert raw.request("GET", path).body == b"b" * (5 * MIB) + b"end"


def _race(raw, paths_bodies, headers_of, rounds):
    """rounds x WRITERS writers released together; returns per round the statuses."""
    results = []
    for rnd in range(rounds):
        barrier = threading.Barrier(WRITERS)
        out = [None] * WRITERS

        def writer(i, rnd=rnd):
            path, body = paths_bodies(rnd, i)
            h = headers_of(rnd, i)
            barrier.wait(timeout=30)
            out[i] = raw.request("PUT", path, body=body, headers=h, timeout=60)

        ts = [threading.Thread(target=writer, args=(i,)) for i in range(WRITERS)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(timeout=90)
        assert all(not t.is_alive() for t in ts), "a writer hung"
        results.append(out)
    return results


def _body(rnd, i):
    return hashlib.sha256(f"{rnd}-{i}".encode()).digest() * 512


def race_if_none_match(raw, bucket):
    res = _race(raw, lambda rnd, i: (f"/{bucket}/race{rnd}", _body(rnd, i)),
                lambda rnd, i: {"If-None-Match": "*"}, ROUNDS)
    for rnd, out in enumerate(res):
        st = [r.status for r in out]
        assert st.count(200) == 1 and st.count(412) == WRITERS - 1, (rnd, out)
        win = st.index(200)
        assert raw.request("GET", f"/{bucket}/race{rnd}").body == _body(rnd, win)


def race_if_match(raw, bucket):
    """Every writer holds the same ETag: one replaces it, the rest find it gone."""
    k = f"/{bucket}/cas"
    cur = raw.request("PUT", k, body=b"start").headers["etag"]
    holder = {}
    for rnd in range(ROUNDS):
        holder[rnd] = cur
        out = _race(raw, lambda _r, i, rnd=rnd: (k, _body(rnd, i)),
                    lambda _r, i, rnd=rnd: {"If-Match": holder[rnd]}, 1)[0]
        st = [r.status for r in out]
        assert st.count(200) == 1 and st.count(412) == WRITERS - 1, (rnd, out)
        win = st.index(200)
        assert raw.request("GET", k).body == _body(rnd, win)
        cur = out[win].headers["etag"]


def test_race_if_none_match(raw, bucket):
    race_if_none_match(raw, bucket)


def test_race_if_match(raw, bucket):
    race_if_match(raw, bucket)


def test_race_complete(raw, bucket):
    """Two uploads of one key complete at once with If-None-Match: *: exactly one wins."""
    for rnd in range(5):
        path = f"/{bucket}/mprace{rnd}"
        ups = [_mpu(raw, path, [bytes([65 + i]) * (5 * MIB), b"t%d" % i]) for i in range(2)]
        barrier = threading.Barrier(2)
        out = [None, None]

        def completer(i):
            uid, xml = ups[i]
            barrier.wait(timeout=30)
            out[i] = raw.request("POST", path, query={"uploadId": uid}, body=xml,
                                 headers={"If-None-Match": "*"}, timeout=60)

        ts = [threading.Thread(target=completer, args=(i,)) for i in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(timeout=90)
        st = sorted(r.status for r in out)
        assert st in ([200, 409], [200, 412]), out
        win = [r.status for r in out].index(200)
        assert raw.request("GET", path).body == bytes([65 + win]) * (5 * MIB) + b"t%d" % win


reason = pgserver.missing_reason()


@pytest.mark.skipif(reason is not None, reason=reason or "")
def test_races_on_postgresql():
    """The same races with the metadata in PostgreSQL (SERIALIZABLE transactions, retried)."""
    with pgserver.PgServer() as pg:
        url = pg.create_db("cond")
        with WharfServer(extra_args=["--meta", url]) as srv:
            raw = S3Raw(srv.endpoint)
            b = unique_bucket("condpg")
            assert raw.request("PUT", f"/{b}").status == 200
            race_if_none_match(raw, b)
            race_if_match(raw, b)
