# SPDX-License-Identifier: Apache-2.0
"""Appends over HTTP against a real wharfd (S3 Express's PutObject with
x-amz-write-offset-bytes), over SQLite and PostgreSQL metadata: the segments an object is made of
(GET ?partNumber=N reads the Nth), its checksums and size after each append, what an append
refuses and that a refused one moves and stores nothing, that an appended object's files all go
when it is deleted, and that of appends racing at one offset exactly one lands. The RDMA path is
tests/python/test_append.py (libwharf's write_offset)."""
import base64
import os
import struct
import threading
import time

import pytest

import pgserver
from cluster import crc64nvme
from s3raw import S3Raw
from wharfd import WharfServer, crc32c_b64, unique_bucket

MIB = 1024 * 1024
OFF = "x-amz-write-offset-bytes"


def c64(data):
    return base64.b64encode(struct.pack(">Q", crc64nvme(data))).decode()


def append(raw, path, body, off, headers=None):
    h = {OFF: str(off)}
    h.update(headers or {})
    return raw.request("PUT", path, body=body, headers=h)


@pytest.fixture(scope="module")
def raw(wharfd):
    return S3Raw(wharfd.endpoint)


@pytest.fixture()
def bucket(raw):
    b = unique_bucket("app")
    assert raw.request("PUT", f"/{b}").status == 200
    return b


def appends(raw, b):
    k = f"/{b}/log"
    segs = [os.urandom(3000), os.urandom(70000), b"tail" * 10]
    r = append(raw, k, segs[0], 0)  # no object, offset 0: created
    assert r.status == 200, r
    size = len(segs[0])
    for s in segs[1:]:
        r = append(raw, k, s, size)
        assert r.status == 200, r
        size += len(s)
        assert r.headers["x-amz-object-size"] == str(size)
    whole = b"".join(segs)
    got = raw.request("GET", k, headers={"x-amz-checksum-mode": "ENABLED"})
    assert got.status == 200 and got.body == whole
    assert got.headers["x-amz-checksum-crc64nvme"] == c64(whole)
    assert got.headers["etag"] == r.headers["etag"] and r.headers["etag"].endswith('-3"')
    for i, s in enumerate(segs, 1):  # each append is a part
        p = raw.request("GET", k, query={"partNumber": i})
        assert p.status == 206 and p.body == s, (i, p.status)
    assert raw.request("GET", k, headers={"Range": "bytes=2990-3010"}).body == whole[2990:3011]
    return whole


def test_appends_make_one_object(raw, bucket):
    appends(raw, bucket)


def test_full_object_crc32c_is_combined(raw, bucket):
    k = f"/{bucket}/c32"
    first = os.urandom(5000)
    r = raw.request("PUT", k, body=first, headers={"x-amz-checksum-crc32c": crc32c_b64(first)})
    assert r.status == 200, r
    more = os.urandom(7000)
    assert append(raw, k, more, len(first)).status == 200
    got = raw.request("GET", k, headers={"x-amz-checksum-mode": "ENABLED"})
    assert got.body == first + more
    assert got.headers["x-amz-checksum-crc32c"] == crc32c_b64(first + more)
    assert got.headers["x-amz-checksum-crc64nvme"] == c64(first + more)


def test_append_to_a_multipart_object(raw, bucket):
    k = f"/{bucket}/mp"
    r = raw.request("POST", k, query={"uploads": ""})
    uid = r.body.split(b"<UploadId>")[1].split(b"</UploadId>")[0].decode()
    parts = [b"p" * (5 * MIB), b"q" * 100]
    xml = "<CompleteMultipartUpload>"
    for i, p in enumerate(parts, 1):
        e = raw.request("PUT", k, query={"uploadId": uid, "partNumber": i}, body=p)
        xml += f"<Part><PartNumber>{i}</PartNumber><ETag>{e.headers['etag']}</ETag></Part>"
    xml += "</CompleteMultipartUpload>"
    assert raw.request("POST", k, query={"uploadId": uid}, body=xml.encode()).status == 200
    r = append(raw, k, b"appended", sum(map(len, parts)))
    assert r.status == 200, r
    whole = b"".join(parts) + b"appended"
    got = raw.request("GET", k, headers={"x-amz-checksum-mode": "ENABLED"})
    assert got.body == whole and got.headers["x-amz-checksum-crc64nvme"] == c64(whole)
    assert raw.request("GET", k, query={"partNumber": 3}).body == b"appended"
    assert raw.request("GET", k, query={"partNumber": 2}).body == parts[1]


def test_wrong_offsets_and_refusals(wharfd, raw, bucket):
    k = f"/{bucket}/r"
    assert raw.request("PUT", k, body=b"12345").status == 200
    before = wharfd.data_files()
    for off in ("0", "4", "6", "99999999999"):
        r = append(raw, k, b"x", off)
        assert r.status == 400 and r.error_code() == "InvalidWriteOffset", (off, r)
    r = append(raw, f"/{bucket}/none", b"x", 1)
    assert r.status == 400 and r.error_code() == "InvalidWriteOffset", r
    for off in ("-1", "abc", "", "1e3"):
        r = append(raw, k, b"x", off)
        assert r.status == 400 and r.error_code() == "InvalidArgument", (off, r)
    cases = [({"If-None-Match": "*"}, 501, "NotImplemented"),
             ({"If-Match": '"abc"'}, 501, "NotImplemented"),
             ({"x-amz-server-side-encryption": "AES256"}, 501, "NotImplemented"),
             ({"x-amz-object-lock-legal-hold": "ON"}, 400, "InvalidRequest"),
             ({"x-amz-meta-a": "b"}, 400, "InvalidRequest"),
             ({"x-amz-tagging": "a=b"}, 400, "InvalidRequest")]
    for h, status, code in cases:
        r = append(raw, k, b"x", 5, h)
        assert r.status == status and r.error_code() == code, (h, r)
    r = append(raw, k, b"", 5)
    assert r.status == 400 and b"cannot be empty" in r.body, r
    # Only PutObject takes the offset.
    r = raw.request("POST", k, query={"uploads": ""}, headers={OFF: "5"})
    assert r.status == 400 and r.error_code() == "InvalidRequest", r
    assert raw.request("GET", k).body == b"12345"
    assert wharfd.data_files() == before
    # User metadata may come with the append that creates the object.
    r = append(raw, f"/{bucket}/meta", b"m", 0, {"x-amz-meta-a": "b"})
    assert r.status == 200, r
    assert raw.request("HEAD", f"/{bucket}/meta").headers["x-amz-meta-a"] == "b"


def test_versioned_bucket_refused(raw):
    b = unique_bucket("appv")
    assert raw.request("PUT", f"/{b}").status == 200
    assert raw.request("PUT", f"/{b}", query={"versioning": ""}, body=(
        b'<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>')).status \
        == 200
    assert raw.request("PUT", f"/{b}/k", body=b"v1").status == 200
    r = append(raw, f"/{b}/k", b"more", 2)
    assert r.status == 501 and b"versioning" in r.body, r
    assert raw.request("GET", f"/{b}/k").body == b"v1"


def test_appended_object_files_go_with_it(wharfd, raw, bucket):
    before = wharfd.data_files()
    k = f"/{bucket}/gone"
    assert raw.request("PUT", k, body=b"a" * 1000).status == 200
    for i in range(3):
        assert append(raw, k, b"b" * 500, 1000 + 500 * i).status == 200
    assert len(wharfd.data_files()) >= len(before) + 4
    assert raw.request("DELETE", k).status == 204
    deadline = 50  # a large released file is reclaimed off the request's path
    while wharfd.data_files() != before and deadline:
        time.sleep(0.1)
        deadline -= 1
    assert wharfd.data_files() == before


def race_appends(raw, b, rounds=8, writers=4):
    k = f"/{b}/race"
    assert raw.request("PUT", k, body=b"start").status == 200
    expect = b"start"
    for rnd in range(rounds):
        segs = [os.urandom(2000 + i) for i in range(writers)]
        barrier = threading.Barrier(writers)
        out = [None] * writers
        off = len(expect)

        def run(i):
            barrier.wait(timeout=30)
            out[i] = append(raw, k, segs[i], off)

        ts = [threading.Thread(target=run, args=(i,)) for i in range(writers)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(timeout=60)
        assert all(not t.is_alive() for t in ts)
        statuses = [r.status for r in out]
        assert statuses.count(200) == 1, (rnd, statuses, [r.body for r in out])
        assert all(r.error_code() == "InvalidWriteOffset" for r in out if r.status != 200), out
        expect += segs[statuses.index(200)]
    got = raw.request("GET", k, headers={"x-amz-checksum-mode": "ENABLED"})
    assert got.body == expect and got.headers["x-amz-checksum-crc64nvme"] == c64(expect)


def test_race_appends(raw, bucket):
    race_appends(raw, bucket)


reason = pgserver.missing_reason()


@pytest.mark.skipif(reason is not None, reason=reason or "")
def test_appends_on_postgresql():
    with pgserver.PgServer() as pg:
        url = pg.create_db("app")
        with WharfServer(extra_args=["--meta", url]) as srv:
            raw = S3Raw(srv.endpoint)
            b = unique_bucket("apppg")
            assert raw.request("PUT", f"/{b}").status == 200
            appends(raw, b)
            race_appends(raw, b, rounds=4)


def test_appended_object_survives_a_restart(fresh_wharfd):
    """Recovery at start removes files no row names: an appended object's segments are named
    by its extent map and stay."""
    srv = fresh_wharfd
    raw = S3Raw(srv.endpoint)
    b = unique_bucket("appr")
    assert raw.request("PUT", f"/{b}").status == 200
    for i in range(4):
        assert append(raw, f"/{b}/a", bytes([65 + i]) * 1000, i * 1000).status == 200
    files = srv.data_files()
    srv.stop()
    srv.start()
    raw = S3Raw(srv.endpoint)
    got = raw.request("GET", f"/{b}/a")
    assert got.status == 200 and got.body == b"A" * 1000 + b"B" * 1000 + b"C" * 1000 + b"D" * 1000
    assert srv.data_files() == files
    assert append(raw, f"/{b}/a", b"E", 4000).status == 200
