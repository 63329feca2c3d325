# SPDX-License-Identifier: Apache-2.0
"""Appends (S3 Express's x-amz-write-offset-bytes) through libwharf over every transport (RDMA
shm and tcp, HTTP): Client.put(write_offset=N). The bytes of an append go after the object's
first N bytes, N its size; the object's CRC-64/NVME is the whole object's afterwards; and of
appends racing at one offset exactly one lands each round, the others failing with
InvalidWriteOffset and storing nothing."""
import os
import threading

import crcmod
import pytest

import wharf
from cluster import crc64nvme
from conftest import Witness, expect_transport, make_client
from wharf.errors import WharfError
from wharfd import WharfServer, unique_bucket

KIB = 1024
MIB = 1024 * KIB


def _seg(tag, n=64 * KIB):
    return (tag * (n // len(tag) + 1))[:n]


def test_append_sequence(wharfd, client, bucket, provider):
    segs = [_seg(b"first "), _seg(b"second", 96 * KIB), _seg(b"3rd")]
    rep = client.put(bucket, "log", segs[0], write_offset=0)  # no object: offset 0 creates it
    with Witness(wharfd) as w:
        rep = client.put(bucket, "log", segs[1], write_offset=len(segs[0]))
    expect_transport(wharfd, provider, w, rep, len(segs[1]), "put")
    rep = client.put(bucket, "log", segs[2], write_offset=len(segs[0]) + len(segs[1]))
    whole = b"".join(segs)
    assert rep.etag.endswith('-3"'), rep.etag
    assert client.get(bucket, "log") == whole
    st = client.stat(bucket, "log")
    assert st.length == len(whole)
    assert st.crc64nvme == crc64nvme(whole)
    # A wrong offset (behind or past the end) stores nothing.
    for off in (0, len(whole) - 1, len(whole) + 1):
        with pytest.raises(WharfError, match="InvalidWriteOffset"):
            client.put(bucket, "log", b"nope", write_offset=off)
    with pytest.raises(WharfError, match="InvalidWriteOffset"):
        client.put(bucket, "missing", b"x", write_offset=5)
    assert client.get(bucket, "log") == whole
    assert client.stat(bucket, "log").crc64nvme == crc64nvme(whole)


def _race(n, fn):
    barrier = threading.Barrier(n)
    out = [None] * n

    def run(i):
        barrier.wait(timeout=30)
        try:
            out[i] = fn(i)
        except BaseException as e:  # noqa: BLE001 (collected and checked by the caller)
            out[i] = e

    ts = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=120)
    assert all(not t.is_alive() for t in ts), "an appender hung"
    return out


def test_append_race_one_winner(client, bucket):
    """Each round N appenders append at the object's size at once: exactly one lands, the
    others get InvalidWriteOffset; the object is the winners' segments in order."""
    first = _seg(b"base", 16 * KIB)
    client.put(bucket, "race", first)
    expect = first
    for rnd in range(6):
        segs = [_seg(b"r%dw%d." % (rnd, i), 8 * KIB + i) for i in range(4)]
        off = len(expect)
        out = _race(4, lambda i, off=off, segs=segs: client.put(bucket, "race", segs[i],
                                                                write_offset=off))
        wins = [i for i, r in enumerate(out) if isinstance(r, wharf.Report)]
        assert len(wins) == 1, (rnd, out)
        assert all(isinstance(r, WharfError) and "InvalidWriteOffset" in str(r)
                   for i, r in enumerate(out) if i != wins[0]), out
        expect += segs[wins[0]]
        assert client.get(bucket, "race") == expect
    assert client.stat(bucket, "race").crc64nvme == crc64nvme(expect)


def test_append_above_the_multipart_threshold_is_one_request(wharfd, provider):
    """An append larger than the client's multipart threshold still goes as one PUT (a
    multipart upload would replace the object instead of extending it)."""
    c = make_client(wharfd, provider, multipart_threshold=5 * MIB, part_size=5 * MIB)
    try:
        b = unique_bucket("pyapp")
        c.create_bucket(b)
        head = b"h" * 1000
        c.put(b, "big", head)
        tail = bytes(range(256)) * (6 * MIB // 256)
        rep = c.put(b, "big", tail, write_offset=len(head))
        assert rep.etag.endswith('-2"'), rep.etag  # two segments
        assert c.get(b, "big") == head + tail
        assert c.stat(b, "big").length == len(head) + len(tail)
    finally:
        c.close()


def test_striped_rdma_append():
    """A large RDMA append written as several stripe files (--put-stripes) becomes that many
    more extents of the object, in order."""
    crc = crcmod.mkCrcFun(0x1AD93D23594C93659, initCrc=0, rev=True, xorOut=0xFFFFFFFFFFFFFFFF)
    striped = 'wharf_rdma_put_striped_total{unit="requests"}'
    with WharfServer(providers="shm", extra_args=["--put-stripes", "4", "--put-stripe-min",
                                                  "16M"]) as srv:
        c = make_client(srv, "ofi+shm")
        try:
            b = unique_bucket("pystr")
            c.create_bucket(b)
            head = os.urandom(MIB + 5)
            c.put(b, "s", head)
            tail = os.urandom(24 * MIB)
            before = srv.metrics().get(striped, 0)
            rep = c.put(b, "s", tail, write_offset=len(head))
            assert rep.transport == "rdma", rep
            assert srv.metrics().get(striped, 0) == before + 1
            assert c.get(b, "s") == head + tail
            assert c.stat(b, "s").crc64nvme == crc(head + tail)
            more = os.urandom(100)
            c.put(b, "s", more, write_offset=len(head) + len(tail))
            whole = head + tail
            at = len(head) - 3  # a read across the first two segments
            assert c.get(b, "s", offset=at, length=8) == whole[at:at + 8]
            assert c.stat(b, "s").crc64nvme == crc(head + tail + more)
        finally:
            c.close()
