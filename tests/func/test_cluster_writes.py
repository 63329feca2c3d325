# SPDX-License-Identifier: Apache-2.0
"""Conditional creates, RenameObject and appends on a cluster (tests/lib/cluster.py: a private
PostgreSQL, two gateways, storage servers): creates with If-None-Match: * racing through both
gateways have one winner per round; a rename through one gateway is seen whole through the
other, racing renames for one destination have one winner, and the renamed object's chunks are
the source's (no byte moved); an append is refused (501: a cluster's data table does not
extend an object) and stores nothing."""
import threading

import pytest

from cluster import Cluster
from s3raw import S3Raw
from wharfd import unique_bucket

CHUNK = 256 * 1024


@pytest.fixture(scope="module")
def cl():
    c = Cluster(storage=2, gateways=2, replicas=1, chunk_size=CHUNK, providers="none")
    c.start()
    yield c
    rcs = c.stop()
    c.cleanup()
    assert rcs == [0] * len(rcs), f"members exited with {rcs} on SIGTERM"


def _race(n, fn):
    barrier = threading.Barrier(n)
    out = [None] * n

    def run(i):
        barrier.wait(timeout=30)
        out[i] = fn(i)

    ts = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=120)
    assert all(not t.is_alive() for t in ts), "a writer hung"
    return out


def rename(raw, b, src, dst, headers=None):
    h = {"x-amz-rename-source": f"{b}/{src}"}
    h.update(headers or {})
    return raw.request("PUT", f"/{b}/{dst}", query={"renameObject": ""}, headers=h)


def test_conditional_create_and_rename(cl):
    raws = [S3Raw(g.endpoint) for g in cl.gateways]
    b = unique_bucket("clw")
    assert raws[0].request("PUT", f"/{b}").status == 200
    for rnd in range(8):
        out = _race(4, lambda i, rnd=rnd: raws[i % 2].request(
            "PUT", f"/{b}/c{rnd}", body=b"w%d" % i, headers={"If-None-Match": "*"}))
        st = [r.status for r in out]
        assert st.count(200) == 1 and all(s in (200, 409, 412) for s in st), (rnd, st)
        assert raws[1].request("GET", f"/{b}/c{rnd}").body == b"w%d" % st.index(200)
    body = bytes(range(256)) * (3 * CHUNK // 256 + 7)  # several chunks
    assert raws[0].request("PUT", f"/{b}/src", body=body).status == 200
    chunks = {(c[0], c[1], c[2]) for c in cl.chunk_map()}
    nfiles = sum(len(v) for v in cl.chunk_files().values())
    assert rename(raws[0], b, "src", "dst").status == 200
    got = raws[1].request("GET", f"/{b}/dst")
    assert got.status == 200 and got.body == body
    assert raws[1].request("GET", f"/{b}/src").status == 404
    # The same chunks, and no new chunk file (a racing create's loser's may go meanwhile):
    # nothing was copied.
    assert {(c[0], c[1], c[2]) for c in cl.chunk_map()} == chunks
    assert sum(len(v) for v in cl.chunk_files().values()) <= nfiles
    for rnd in range(6):
        for i in range(4):
            assert raws[0].request("PUT", f"/{b}/s{rnd}-{i}", body=b"s%d" % i).status == 200
        out = _race(4, lambda i, rnd=rnd: rename(raws[i % 2], b, f"s{rnd}-{i}", f"d{rnd}",
                                                 {"If-None-Match": "*"}))
        st = [r.status for r in out]
        assert st.count(200) == 1 and all(s in (200, 409, 412) for s in st), (rnd, st)
        assert raws[0].request("GET", f"/{b}/d{rnd}").body == b"s%d" % st.index(200)


def test_append_refused(cl):
    raw = S3Raw(cl.gateway.endpoint)
    b = unique_bucket("cla")
    assert raw.request("PUT", f"/{b}").status == 200
    assert raw.request("PUT", f"/{b}/k", body=b"12345").status == 200
    r = raw.request("PUT", f"/{b}/k", body=b"678", headers={"x-amz-write-offset-bytes": "5"})
    assert r.status == 501 and r.error_code() == "NotImplemented", r
    assert raw.request("GET", f"/{b}/k").body == b"12345"
