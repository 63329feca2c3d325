# SPDX-License-Identifier: Apache-2.0
"""RDMA batches (POST /bucket?rdma-batch, docs/protocol.md "Batches") against a real wharfd:

- libwharf's batch GET and PUT over shm move every key's bytes, with the right crc64nvme and
  ETag per key (what a plain GET then reads back), and report a missing key as NoSuchKey
  without failing the others;
- each key is authorized as if requested alone: a bucket policy that lets a user read and
  write ok/* only gives that user AccessDenied on the other keys of the same batch, while the
  allowed keys move;
- adjacent slots move as one transfer; a file changed on disk behind the server makes the
  keys move again one by one, each with the crc64nvme of what landed;
- If-None-Match per key ('n' flag) keeps an existing object and stores a new one;
- the list is checked before a byte moves: overlapping slots, slots outside the token's
  region, too many keys, a list over 1 MiB, a slot over the per-key bound, an unsigned list,
  a batch without a token are each a 400 naming what is wrong;
- wharf.kv.KVStore puts, gets and checks fixed-size blocks of a torch tensor.
"""
import hashlib
import json
import os
import socket
import struct

import numpy as np
import pytest

import users
import wharf
import wharf.kv as kv
from s3raw import S3Raw
from wharfd import ACCESS_KEY, CTYPES_UNDER_ASAN, REGION, SECRET_KEY, WharfServer, unique_bucket

BLK = 8192


@pytest.fixture(scope="module")
def srv():
    s = WharfServer(providers="shm,tcp")
    s.start()
    yield s
    rc = s.stop()
    s.cleanup()
    assert rc == 0


def client(srv, ak=ACCESS_KEY, sk=SECRET_KEY):
    return wharf.Client(srv.endpoint, ak, sk, region=REGION, provider="ofi+shm",
                        unix_socket=srv.unix_socket)


def crc64nvme(data):
    """CRC-64/NVME, bitwise (the reference definition), for a few KiB."""
    crc = 0xFFFFFFFFFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x9A6C9329AC4BC9B5 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFFFFFFFFFF


@pytest.mark.skipif(**CTYPES_UNDER_ASAN)
def test_batch_put_get_round_trip_crc_and_missing_key(srv):
    c = client(srv)
    try:
        b = unique_bucket("batch")
        c.create_bucket(b)
        rng = np.random.default_rng(7)
        src = rng.integers(0, 256, size=6 * BLK, dtype=np.uint8)
        # sizes differ per key: a slot need not be full on GET
        ents = [(f"blk/{i}", i * BLK, BLK - 100 * i) for i in range(6)]
        items, rep = kv.batch_put(c, b, src, ents)
        assert rep.transport == "rdma" and rep.requests == 1, rep
        assert [it.code for it in items] == ["OK"] * 6
        for (key, off, n), it in zip(ents, items):
            part = src[off:off + n].tobytes()
            assert it.bytes == n
            assert it.crc64nvme == crc64nvme(part), key
            assert it.etag == hashlib.md5(part).hexdigest(), key
            assert c.get(b, key, transport="http") == part  # committed as a PutObject
        dst = np.zeros(7 * BLK, dtype=np.uint8)
        gets = [(key, i * BLK, BLK) for i, (key, _, _) in enumerate(ents)] + \
            [("blk/absent", 6 * BLK, BLK)]
        items, rep = kv.batch_get(c, b, dst, gets)
        assert rep.transport == "rdma" and rep.requests == 1, rep
        assert [it.code for it in items] == ["OK"] * 6 + ["NoSuchKey"]
        assert items[-1].status == wharf._lib.WHARF_ERR_NOT_FOUND
        for (key, off, n), it, (_, doff, _) in zip(ents, items, gets):
            assert it.bytes == n
            assert dst[doff:doff + n].tobytes() == src[off:off + n].tobytes()
            assert it.crc64nvme == crc64nvme(src[off:off + n].tobytes())
        assert not dst[6 * BLK:].any()  # nothing landed for the missing key
        # an object larger than its slot is that key's error, the others still land
        items, _ = kv.batch_get(c, b, dst, [("blk/0", 0, BLK // 2), ("blk/1", BLK, BLK)])
        assert items[0].code == "InvalidArgument" and "entry holds" in items[0].message
        assert items[1].code == "OK"
    finally:
        c.close()


@pytest.mark.skipif(**CTYPES_UNDER_ASAN)
def test_batch_get_run_whose_stored_checksums_do_not_combine(srv):
    """Adjacent full slots move as one transfer, each key's crc64nvme taken from the stored
    ones once they combine to the bytes moved. A file changed on disk behind the server's back
    breaks that: the keys then move again one by one, each answered with the crc64nvme of
    exactly the bytes that landed (which the client checks), never the stale stored one."""
    c = client(srv)
    try:
        b = unique_bucket("batchcrc")
        c.create_bucket(b)
        src = np.random.default_rng(11).integers(0, 256, size=3 * BLK, dtype=np.uint8)
        kv.batch_put(c, b, src, [(f"r{i}", i * BLK, BLK) for i in range(3)])
        mid = src[BLK:2 * BLK].tobytes()
        hits = []
        for rel in srv.data_files():
            path = os.path.join(srv.data_dir, rel)
            if os.path.getsize(path) == BLK and open(path, "rb").read() == mid:
                hits.append(path)
        assert len(hits) == 1, hits
        with open(hits[0], "r+b") as f:
            f.seek(100)
            f.write(bytes([mid[100] ^ 0xFF]))
        bad = bytearray(mid)
        bad[100] ^= 0xFF
        dst = np.zeros(3 * BLK, dtype=np.uint8)
        items, _ = kv.batch_get(c, b, dst, [(f"r{i}", i * BLK, BLK) for i in range(3)],
                                verify=True)
        assert [it.code for it in items] == ["OK"] * 3
        assert dst[BLK:2 * BLK].tobytes() == bytes(bad)
        assert items[1].crc64nvme == crc64nvme(bytes(bad))
        assert items[0].crc64nvme == crc64nvme(src[:BLK].tobytes())
        with open(srv.log_path) as f:
            assert "do not combine to the bytes moved" in f.read()
    finally:
        c.close()


@pytest.mark.skipif(**CTYPES_UNDER_ASAN)
def test_batch_if_none_match_per_key(srv):
    c = client(srv)
    try:
        b = unique_bucket("batchinm")
        c.create_bucket(b)
        c.put(b, "old", b"x" * 100)
        src = np.full(2 * BLK, 0x42, dtype=np.uint8)
        items, _ = kv.batch_put(c, b, src, [("old", 0, BLK, True), ("new", BLK, BLK, True)])
        assert [it.code for it in items] == ["PreconditionFailed", "OK"]
        assert c.get(b, "old") == b"x" * 100
        assert c.get(b, "new") == b"\x42" * BLK
    finally:
        c.close()


@pytest.mark.skipif(**CTYPES_UNDER_ASAN)
def test_batch_authorizes_every_key(srv):
    root = client(srv)
    alice = users.create_user(srv, "batch-alice")
    a = client(srv, alice.access_key, alice.secret_key)
    try:
        b = unique_bucket("batchauth")
        root.create_bucket(b)
        for k in ("ok/1", "no/1"):
            root.put(b, k, bytes([len(k)]) * 300)
        S3Raw(srv.endpoint).request("PUT", f"/{b}", query={"policy": ""}, body=json.dumps({
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Principal": {"AWS": alice.arn},
                           "Action": ["s3:GetObject", "s3:PutObject", "s3:ListBucket"],
                           "Resource": [f"arn:aws:s3:::{b}/ok/*", f"arn:aws:s3:::{b}"]}]
        }).encode())
        dst = np.zeros(4 * BLK, dtype=np.uint8)
        items, _ = kv.batch_get(a, b, dst, [("ok/1", 0, BLK), ("no/1", BLK, BLK),
                                            ("ok/missing", 2 * BLK, BLK),
                                            ("no/missing", 3 * BLK, BLK)])
        assert [it.code for it in items] == ["OK", "AccessDenied", "NoSuchKey", "AccessDenied"]
        assert dst[:300].tobytes() == bytes([4]) * 300
        assert not dst[BLK:].any()  # nothing of the refused key landed
        src = np.full(2 * BLK, 7, dtype=np.uint8)
        items, _ = kv.batch_put(a, b, src, [("ok/2", 0, BLK), ("no/2", BLK, BLK)])
        assert [it.code for it in items] == ["OK", "AccessDenied"]
        assert root.get(b, "ok/2") == b"\x07" * BLK
        assert not root.exists(b, "no/2")
    finally:
        a.close()
        root.close()


def tcp_token(size):
    ep = struct.pack("<H", socket.AF_INET) + struct.pack(">H", 4242) + \
        socket.inet_aton("127.0.0.1") + b"\0" * 8
    return f"10000:{size:x}:ofi1:tcp;ofi_rxm:{ep.hex()}:1"


def batch_raw(srv, b, body, token=tcp_token(1 << 20), **kw):
    raw = S3Raw(srv.endpoint, unix_socket=srv.unix_socket)
    hdrs = {"x-amz-rdma-token": token} if token else {}
    return raw.request("POST", f"/{b}", query={"rdma-batch": ""}, headers=hdrs, body=body, **kw)


@pytest.mark.parametrize("body,why", [
    (b"wharf-rdma-batch 1 GET\n0 8192 - a\n4096 8192 - b\n", "overlap"),
    (b"wharf-rdma-batch 1 GET\n1040384 8193 - a\n", "outside the token's region"),
    (b"wharf-rdma-batch 1 GET\n0 67108865 - a\n", "max bytes per key"),
    (b"wharf-rdma-batch 1 GET\n" + b"".join(b"%d 1 - k%d\n" % (i, i) for i in range(1001)),
     "max keys"),
    (b"wharf-rdma-batch 2 GET\n0 1 - a\n", "another version"),
    (b"wharf-rdma-batch 1 GET\n" + b"0 1 - " + b"k" * (1 << 20) + b"\n", "max list bytes"),
    (b"wharf-rdma-batch 1 PUT\n0 1 - a\n1 1 - a\n", "twice"),
    (b"wharf-rdma-batch 1 GET\n0 1 n a\n", "for PUT batches"),
    (b"wharf-rdma-batch 1 GET\n0 1 - a b\n", "single spaces"),
])
def test_batch_list_refused_before_any_byte_moves(srv, body, why):
    b = unique_bucket("batchbad")
    S3Raw(srv.endpoint).request("PUT", f"/{b}")
    r = batch_raw(srv, b, body, token=tcp_token(64 << 20 if "per key" in why else 1 << 20))
    assert r.status == 400, r
    assert why in r.headers.get("x-amz-error-message", ""), r.headers


def test_batch_needs_a_signed_list_and_a_token(srv):
    b = unique_bucket("batchsig")
    S3Raw(srv.endpoint).request("PUT", f"/{b}")
    body = b"wharf-rdma-batch 1 GET\n0 1 - a\n"
    r = batch_raw(srv, b, body, payload_hash="UNSIGNED-PAYLOAD")
    assert r.status == 400 and "must be signed" in r.headers.get("x-amz-error-message", ""), r
    r = batch_raw(srv, b, body, token=None)
    assert r.status == 400 and b"needs x-amz-rdma-token" in r.body, r
    # the list is what is signed: a body other than the signed one is refused
    r = batch_raw(srv, b, body, payload_hash=hashlib.sha256(b"other").hexdigest())
    assert r.status == 400, r


@pytest.mark.skipif(**CTYPES_UNDER_ASAN)
def test_kvstore_blocks_of_a_tensor(srv):
    torch = pytest.importorskip("torch")
    c = client(srv)
    try:
        b = unique_bucket("kvstore")
        c.create_bucket(b)
        store = kv.KVStore(c, b, block_bytes=BLK, prefix="model/")
        keys = [f"chunk{i}" for i in range(5)]
        blocks = torch.randint(0, 255, (5, BLK), dtype=torch.uint8)
        store.put(keys, blocks)
        assert store.exists(keys + ["nope"]) == [True] * 5 + [False]
        out = torch.zeros((6, BLK), dtype=torch.uint8)
        assert store.get(keys[:2] + ["nope"] + keys[2:], out) == [True, True, False, True,
                                                                   True, True]
        assert torch.equal(out[:2], blocks[:2]) and torch.equal(out[3:], blocks[2:])
        assert not out[2].any()
        assert store.last_report is not None and store.last_report.transport == "rdma"
        # if_absent keeps what is there
        store.put(keys[:1], torch.zeros((1, BLK), dtype=torch.uint8), if_absent=True)
        one = torch.zeros((1, BLK), dtype=torch.uint8)
        assert store.get(keys[:1], one) == [True] and torch.equal(one[0], blocks[0])
    finally:
        c.close()


@pytest.mark.skipif(**CTYPES_UNDER_ASAN)
def test_batch_over_http_fallback_without_rdma(srv):
    c = wharf.Client(srv.endpoint, ACCESS_KEY, SECRET_KEY, region=REGION, provider="none")
    try:
        b = unique_bucket("batchhttp")
        c.create_bucket(b)
        src = np.arange(2 * BLK, dtype=np.uint32).view(np.uint8)[:2 * BLK].copy()
        items, rep = kv.batch_put(c, b, src, [("h0", 0, BLK), ("h1", BLK, BLK)])
        assert [it.code for it in items] == ["OK", "OK"] and rep.transport == "http"
        dst = np.zeros(2 * BLK, dtype=np.uint8)
        items, rep = kv.batch_get(c, b, dst, [("h1", 0, BLK), ("h9", BLK, BLK)])
        assert items[0].ok and items[1].status == wharf._lib.WHARF_ERR_NOT_FOUND
        assert dst[:BLK].tobytes() == src[BLK:].tobytes()
    finally:
        c.close()


@pytest.mark.skipif(**CTYPES_UNDER_ASAN)
def test_batch_over_ofi_tcp(srv):
    """The network provider (ofi+tcp, staged through the server's pool buffers): many keys'
    transfers at once, every byte where it belongs."""
    c = wharf.Client(srv.endpoint, ACCESS_KEY, SECRET_KEY, region=REGION, provider="ofi+tcp")
    try:
        b = unique_bucket("batchtcp")
        c.create_bucket(b)
        n = 40
        src = np.random.default_rng(13).integers(0, 256, size=n * BLK, dtype=np.uint8)
        items, rep = kv.batch_put(c, b, src, [(f"t{i}", i * BLK, BLK) for i in range(n)])
        assert rep.transport == "rdma" and rep.provider == "ofi+tcp", rep
        assert {it.code for it in items} == {"OK"}
        dst = np.zeros_like(src)
        items, rep = kv.batch_get(c, b, dst, [(f"t{i}", (n - 1 - i) * BLK, BLK)
                                              for i in range(n)], verify=True)
        assert {it.code for it in items} == {"OK"}
        for i in range(n):
            assert dst[(n - 1 - i) * BLK:(n - i) * BLK].tobytes() == \
                src[i * BLK:(i + 1) * BLK].tobytes()
    finally:
        c.close()
