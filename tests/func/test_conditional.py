# SPDX-License-Identifier: Apache-2.0
"""Conditional writes and deletes against a real wharfd: If-None-Match: * and If-Match: ETAG on
PutObject and CompleteMultipartUpload; If-Match (and x-amz-if-match-size / -last-modified-time)
on DeleteObject and the per-key <ETag> of DeleteObjects; over SQLite and PostgreSQL metadata.

The condition is checked inside the metadata transaction that commits the object (or the
delete), so writers racing on one key cannot both pass: the race tests start several writers at
once (a barrier) for many rounds and require exactly one winner each round, and that what is
stored is the winner's body; the delete race requires that a conditional delete never removes
the overwrite that raced it. (Debian's boto3 predates these headers: requests go through
tests/lib/s3raw.py, which signs them, or through boto3 with the header added by an event hook.)
"""
import base64
import hashlib
import threading

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

import pgserver
from s3raw import S3Raw
from wharfd import ACCESS_KEY, REGION, SECRET_KEY, WharfServer, md5_hex, unique_bucket

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


def test_if_none_match_etag_on_writes_is_not_implemented(raw, bucket):
    """S3 takes only * in If-None-Match on PutObject and CompleteMultipartUpload, and answers
    an ETag there 501 NotImplemented ("A header you provided implies functionality that is not
    implemented"), never 412 or 304: so does wharf, whether or not the ETag matches, and
    nothing is written."""
    k = f"/{bucket}/inm"
    etag = raw.request("PUT", k, body=b"kept").headers["etag"]
    for v in (etag, _q(md5_hex(b"other")), f"{etag}, *"):
        r = raw.request("PUT", k, body=b"new", headers={"If-None-Match": v})
        assert r.status == 501 and r.error_code() == "NotImplemented", (v, r)
    assert raw.request("GET", k).body == b"kept"
    path = f"/{bucket}/inm-mp"
    uid, xml = _mpu(raw, path, [b"a" * (5 * MIB), b"b"])
    for v in (_q(md5_hex(b"x")), etag):
        r = raw.request("POST", path, query={"uploadId": uid}, body=xml,
                        headers={"If-None-Match": v})
        assert r.status == 501 and r.error_code() == "NotImplemented", (v, r)
    assert raw.request("GET", path).status == 404
    # The upload is still there and completes without the header.
    r = raw.request("POST", path, query={"uploadId": uid}, body=xml)
    assert r.status == 200, r


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


# ---- conditional deletes ----------------------------------------------------------------------

DELETERS = 3
DELETE_ROUNDS = 150


def _versioning(raw, bucket):
    body = (b'<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
            b"<Status>Enabled</Status></VersioningConfiguration>")
    r = raw.request("PUT", f"/{bucket}", query={"versioning": ""}, body=body)
    assert r.status == 200, r


def race_delete_if_match(raw, bucket, versioned, rounds=DELETE_ROUNDS):
    """Each round: the key holds E_old; an overwrite and DELETERS deletes with If-Match: E_old
    start together. A delete may remove E_old only, never the overwrite: whatever the order,
    the overwrite's body is what the key holds afterwards (a check made before the delete's
    transaction lets an overwrite in between, which the delete then removes or hides)."""
    k = f"/{bucket}/drace"
    counts = {204: 0, 412: 0, 404: 0}
    for rnd in range(rounds):
        old = raw.request("PUT", k, body=b"old %d" % rnd)
        assert old.status == 200, old
        e_old = old.headers["etag"]
        new_body = _body(rnd, 99)
        barrier = threading.Barrier(1 + DELETERS)
        out = [None] * (1 + DELETERS)

        def put():
            barrier.wait(timeout=30)
            out[0] = raw.request("PUT", k, body=new_body, timeout=60)

        def delete(i):
            barrier.wait(timeout=30)
            out[i] = raw.request("DELETE", k, headers={"If-Match": e_old}, timeout=60)

        ts = [threading.Thread(target=put)]
        ts += [threading.Thread(target=delete, args=(i,)) for i in range(1, 1 + DELETERS)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(timeout=90)
        assert all(not t.is_alive() for t in ts), "a request hung"
        assert out[0].status == 200, out[0]
        for r in out[1:]:
            assert r.status in counts, r
            counts[r.status] += 1
        got = raw.request("GET", k)
        assert got.status == 200 and got.body == new_body, (
            f"round {rnd}: a delete with If-Match {e_old} removed the overwrite "
            f"{out[0].headers['etag']} (versioned={versioned}): {out[1:]}, GET {got}")
    if versioned:
        # One delete marker per delete that said 204 (each hid E_old), none for the others.
        r = raw.request("GET", f"/{bucket}", query={"versions": "", "prefix": "drace"})
        assert r.status == 200 and b"<IsTruncated>false" in r.body, r
        assert r.body.count(b"<DeleteMarker>") == counts[204], (counts, r.body[:2000])
    # Some deletes came first and removed E_old (else the race was never run).
    assert counts[204] > 0, counts
    return counts


def test_race_delete_if_match(raw, bucket):
    race_delete_if_match(raw, bucket, versioned=False)


def test_race_delete_if_match_versioned(raw, bucket):
    _versioning(raw, bucket)
    race_delete_if_match(raw, bucket, versioned=True)


def race_delete_objects_etag(raw, bucket, rounds=DELETE_ROUNDS // 2):
    """DeleteObjects with the Object's <ETag>, raced by an overwrite, as above."""
    k = "dmrace"
    for rnd in range(rounds):
        e_old = raw.request("PUT", f"/{bucket}/{k}", body=b"old %d" % rnd).headers["etag"]
        new_body = _body(rnd, 98)
        body = (f"<Delete><Object><Key>{k}</Key><ETag>{e_old}</ETag></Object>"
                f"</Delete>").encode()
        md5 = base64.b64encode(hashlib.md5(body).digest()).decode()
        barrier = threading.Barrier(1 + DELETERS)
        out = [None] * (1 + DELETERS)

        def put():
            barrier.wait(timeout=30)
            out[0] = raw.request("PUT", f"/{bucket}/{k}", body=new_body, timeout=60)

        def delete(i):
            barrier.wait(timeout=30)
            out[i] = raw.request("POST", f"/{bucket}", query={"delete": ""}, body=body,
                                 headers={"Content-MD5": md5}, timeout=60)

        ts = [threading.Thread(target=put)]
        ts += [threading.Thread(target=delete, args=(i,)) for i in range(1, 1 + DELETERS)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(timeout=90)
        assert all(not t.is_alive() for t in ts), "a request hung"
        assert out[0].status == 200 and all(r.status == 200 for r in out[1:]), out
        got = raw.request("GET", f"/{bucket}/{k}")
        assert got.status == 200 and got.body == new_body, (rnd, out[1:], got)


def test_race_delete_objects_etag(raw, bucket):
    race_delete_objects_etag(raw, bucket)


def _boto3(endpoint):
    return boto3.session.Session().client(
        "s3", endpoint_url=endpoint, aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY, region_name=REGION,
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                      signature_version="s3v4"))


def _delete_if(s3, bucket, key, headers, **kw):
    """boto3's DeleteObject with conditional headers added before it signs (this boto3's
    model has no IfMatch yet; newer ones send the same header)."""
    def add(request, **_):
        for n, v in headers.items():
            request.headers[n] = v
    s3.meta.events.register_first("before-sign.s3.DeleteObject", add)
    try:
        return s3.delete_object(Bucket=bucket, Key=key, **kw)
    finally:
        s3.meta.events.unregister("before-sign.s3.DeleteObject", add)


def _err(ei):
    return (ei.value.response["ResponseMetadata"]["HTTPStatusCode"],
            ei.value.response["Error"]["Code"])


def plain_conditional_deletes(s3, bucket):
    e1 = s3.put_object(Bucket=bucket, Key="k", Body=b"v1")["ETag"]
    with pytest.raises(ClientError) as ei:
        _delete_if(s3, bucket, "k", {"If-Match": _q(md5_hex(b"other"))})
    assert _err(ei) == (412, "PreconditionFailed")
    assert s3.get_object(Bucket=bucket, Key="k")["Body"].read() == b"v1"
    with pytest.raises(ClientError) as ei:
        _delete_if(s3, bucket, "missing", {"If-Match": e1})
    assert _err(ei) == (404, "NoSuchKey")
    with pytest.raises(ClientError) as ei:
        _delete_if(s3, bucket, "k", {"If-Match": e1, "x-amz-if-match-size": "3"})
    assert _err(ei) == (412, "PreconditionFailed")
    r = _delete_if(s3, bucket, "k", {"If-Match": e1, "x-amz-if-match-size": "2"})
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204
    with pytest.raises(ClientError):
        s3.head_object(Bucket=bucket, Key="k")
    # The size and time conditions hold for a key with no object (S3 answers 204).
    r = _delete_if(s3, bucket, "k", {"x-amz-if-match-size": "2"})
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204


def plain_conditional_deletes_versioned(s3, bucket):
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    p1 = s3.put_object(Bucket=bucket, Key="v", Body=b"one")
    p2 = s3.put_object(Bucket=bucket, Key="v", Body=b"two")
    # A wrong If-Match makes no delete marker.
    with pytest.raises(ClientError) as ei:
        _delete_if(s3, bucket, "v", {"If-Match": p1["ETag"]})
    assert _err(ei) == (412, "PreconditionFailed")
    vs = s3.list_object_versions(Bucket=bucket, Prefix="v")
    assert not vs.get("DeleteMarkers") and len(vs["Versions"]) == 2
    # The current version's ETag: a delete marker becomes current.
    r = _delete_if(s3, bucket, "v", {"If-Match": p2["ETag"]})
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204 and r["DeleteMarker"] is True
    dm = r["VersionId"]
    # Now the current version is a delete marker: If-Match finds no object.
    with pytest.raises(ClientError) as ei:
        _delete_if(s3, bucket, "v", {"If-Match": p2["ETag"]})
    assert _err(ei) == (404, "NoSuchKey")
    assert len(s3.list_object_versions(Bucket=bucket, Prefix="v")["DeleteMarkers"]) == 1
    # With a version id the condition is the named version's: v1's ETag deletes v1 only.
    with pytest.raises(ClientError) as ei:
        _delete_if(s3, bucket, "v", {"If-Match": p2["ETag"]}, VersionId=p1["VersionId"])
    assert _err(ei) == (412, "PreconditionFailed")
    r = _delete_if(s3, bucket, "v", {"If-Match": p1["ETag"]}, VersionId=p1["VersionId"])
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204 and r["VersionId"] == p1["VersionId"]
    vs = s3.list_object_versions(Bucket=bucket, Prefix="v")
    assert [v["VersionId"] for v in vs["Versions"]] == [p2["VersionId"]]
    # The delete marker itself, named by its id, is no object to If-Match.
    with pytest.raises(ClientError) as ei:
        _delete_if(s3, bucket, "v", {"If-Match": "*"}, VersionId=dm)
    assert _err(ei) == (404, "NoSuchKey")
    r = _delete_if(s3, bucket, "v", {"x-amz-if-match-size": "3"}, VersionId=dm)
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 204
    assert s3.get_object(Bucket=bucket, Key="v")["Body"].read() == b"two"
    # DeleteObjects' per-key ETag is checked against the named version too.
    body = (f"<Delete><Object><Key>v</Key><VersionId>{p2['VersionId']}</VersionId>"
            f"<ETag>{p1['ETag']}</ETag></Object></Delete>")
    return body


def test_plain_conditional_deletes(raw, bucket, wharfd):
    s3 = _boto3(wharfd.endpoint)
    plain_conditional_deletes(s3, bucket)
    vb = unique_bucket("condv")
    s3.create_bucket(Bucket=vb)
    body = plain_conditional_deletes_versioned(s3, vb).encode()
    md5 = base64.b64encode(hashlib.md5(body).digest()).decode()
    r = raw.request("POST", f"/{vb}", query={"delete": ""}, body=body,
                    headers={"Content-MD5": md5})
    assert r.status == 200 and b"<Code>PreconditionFailed</Code>" in r.body, r
    assert s3.get_object(Bucket=vb, Key="v")["Body"].read() == b"two"


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
            # Fewer rounds: PostgreSQL's commits are slower (and its retries serialize them).
            race_delete_if_match(raw, b, versioned=False, rounds=40)
            race_delete_objects_etag(raw, b, rounds=20)
            vb = unique_bucket("condpgv")
            assert raw.request("PUT", f"/{vb}").status == 200
            _versioning(raw, vb)
            race_delete_if_match(raw, vb, versioned=True, rounds=40)
            s3 = _boto3(srv.endpoint)
            plain_conditional_deletes(s3, b)
            vb2 = unique_bucket("condpgv2")
            s3.create_bucket(Bucket=vb2)
            plain_conditional_deletes_versioned(s3, vb2)
            # A retry follows only a failure PostgreSQL called retryable (a serialization
            # conflict): a loser that then finds the precondition false answers 412 at once,
            # not after every attempt's back-off (about a second each).
            m = srv.metrics()
            retries = m["wharf_meta_tx_retries_total"]
            retryable = m["wharf_meta_tx_retryable_failures_total"]
            assert retries <= retryable, (retries, retryable)
