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
from conftest import Witness, make_client
from wharfd import ACCESS_KEY, REGION as S3_REGION, SECRET_KEY
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


def test_scatter_composed_object_windows_across_parts(wharfd, provider):
    """A multipart object: windows that straddle its parts' boundaries land whole."""
    part = 5 << 20
    c = wharf.Client(wharfd.endpoint, ACCESS_KEY, SECRET_KEY, region=S3_REGION,
                     provider=None if provider == "http" else provider,
                     unix_socket=wharfd.unix_socket if provider == "ofi+shm" else None,
                     multipart_threshold=part, part_size=part)
    try:
        b = unique_bucket("scatmp")
        c.create_bucket(b)
        data = payload(3 * part + 1234, seed=11)
        c.put_from(b, "mp", data, transport="http")
        ws = [(part - 100, 300, 0), (2 * part - 7, 7 + 4096, 1000), (0, 10, 9000),
              (3 * part, 1234, 10000), (part - 1, 2 * part + 2, 20000)]
        buf = np.zeros(20000 + 2 * part + 2, dtype=np.uint8)
        with Witness(wharfd) as w:
            rep = c.get_scatter(b, "mp", buf, ws, crcs=True)
        for (o, n, d), crc in zip(ws, rep.window_crcs):
            assert np.array_equal(buf[d:d + n], data[o:o + n]), (o, n, d)
            if n < 100_000:  # the pure-Python crc is slow
                assert crc == crc64nvme(data[o:o + n])
        total = sum(n for _, n, _ in ws)
        assert rep.bytes == total
        if provider != "http":
            assert w.delta["get"] >= total, w.delta  # the server moved them by RDMA
    finally:
        c.close()


def test_scatter_encrypted_object(wharfd, provider):
    """SSE-S3 (the bucket's default encryption): decrypted by the server on the way."""
    c = make_client(wharfd, provider)
    try:
        b = unique_bucket("scatsse")
        c.create_bucket(b)
        raw = S3Raw(wharfd.endpoint)
        enc = (b'<ServerSideEncryptionConfiguration><Rule><ApplyServerSideEncryptionByDefault>'
               b'<SSEAlgorithm>AES256</SSEAlgorithm></ApplyServerSideEncryptionByDefault></Rule>'
               b'</ServerSideEncryptionConfiguration>')
        r = raw.request("PUT", f"/{b}", query={"encryption": ""}, body=enc)
        assert r.status == 200, r
        data = payload(200_000, seed=5)
        c.put_from(b, "enc", data, transport="http")
        h = raw.request("HEAD", f"/{b}/enc")
        assert h.headers.get("x-amz-server-side-encryption") == "AES256", h.headers
        ws = [(65536 - 10, 20, 0), (0, 65536 * 2 + 5, 100), (199_990, 10, 200_000)]
        buf = np.zeros(200_010, dtype=np.uint8)
        rep = c.get_scatter(b, "enc", buf, ws, crcs=True)
        for (o, n, d), crc in zip(ws, rep.window_crcs):
            assert np.array_equal(buf[d:d + n], data[o:o + n]), (o, n, d)
        assert rep.window_crcs[0] == crc64nvme(data[65526:65546])
    finally:
        c.close()


def test_scatter_counts_one_request_per_batch(wharfd, obj):
    """Over RDMA 1000 windows are one request (concurrency 1), not 1000."""
    bucket, data = obj
    c = make_client(wharfd, "ofi+shm")
    try:
        ws = [(i * 200, 100, i * 100) for i in range(1000)]
        buf = np.zeros(100_000, dtype=np.uint8)
        key = 'wharf_requests_total{api="WharfScatterGet",status="200"}'
        before = wharfd.metrics().get(key, 0)
        rep = c.get_scatter(bucket, "obj", buf, ws, concurrency=1)
        assert wharfd.metrics().get(key, 0) - before == 1
        assert rep.requests == 1, rep
        assert np.array_equal(buf.reshape(1000, 100), data[:200_000].reshape(1000, 200)[:, :100])
    finally:
        c.close()


def test_scatter_runs_plan():
    from wharf.reader import scatter_runs
    items = [("a", 0, 10), ("a", 10_000_000, 10), ("a", 20, 5 << 20), ("a", 99, 10),
             ("b", 0, 10), ("b", 5, 10), ("b", 9, 10)]
    # small items of one object together whatever the gaps; a large one alone; a new run per
    # object, per window bound and per byte bound
    assert scatter_runs(items, 1 << 20, 16 << 20, 16384) == [(0, 2), (2, 3), (3, 4), (4, 7)]
    assert scatter_runs(items[4:], 1 << 20, 16 << 20, 2) == [(0, 2), (2, 3)]
    assert scatter_runs(items[4:], 1 << 20, 20, 16384) == [(0, 2), (2, 3)]


def test_scatter_into_gpu_memory_fake_cuda(tmp_path):
    """The cuda1 path (the server opens the client's CUDA IPC handle and writes each window
    into the allocation) without a GPU: both sides load tests/unit/xfer/fake_cuda.c as their
    CUDA driver (WHARF_LIBCUDA), whose "device memory" is a shared memfd mapping, so the bytes
    that land can be read back here. It checks wharf's own code, not a GPU."""
    import ctypes
    from wharfd import WharfServer, build_dir
    fake = os.path.join(build_dir(), "tests", "libwh_fake_cuda.so")
    if not os.path.exists(fake):
        pytest.skip(f"{fake} is not built")
    if os.environ.get("WHARF_LIBCUDA", fake) != fake:
        pytest.skip("this process already loaded another CUDA driver")
    os.environ["WHARF_LIBCUDA"] = fake  # before libwharf first looks for the driver
    srv = WharfServer(env={"WHARF_LIBCUDA": fake})
    srv.start()
    try:
        c = make_client(srv, "ofi+shm")
        b = unique_bucket("scatgpu")
        c.create_bucket(b)
        data = payload(100_000, seed=9)
        c.put_from(b, "obj", data, transport="http")
        cu = ctypes.CDLL(fake)
        dptr = ctypes.c_ulonglong()
        n = 64 << 10
        assert cu.fakecuMemAlloc(ctypes.byref(dptr), ctypes.c_size_t(n)) == 0
        dev = (ctypes.c_uint8 * n).from_address(dptr.value)
        ctypes.memset(dptr.value, 0xEE, n)
        lib = wharf._lib.lib
        reg = ctypes.c_void_p()
        st = lib.wharf_mem_register(c._handle(), dptr.value, n, wharf._lib.MEM_CUDA,
                                    ctypes.byref(reg))
        assert st == 0, wharf._lib.last_error()
        ws = [(10, 1000, 0), (50_000, 4096, 2000), (99_000, 1000, 60_000)]
        arr = (wharf._lib.CWindow * 3)(*[wharf._lib.CWindow(o, k, d) for o, k, d in ws])
        crcs = (ctypes.c_uint64 * 3)()
        opts = wharf._lib.XferOpts()
        lib.wharf_xfer_opts_init(ctypes.byref(opts), ctypes.sizeof(opts))
        rep = wharf._lib.CReport()
        lib.wharf_report_init(ctypes.byref(rep), ctypes.sizeof(rep))
        st = lib.wharf_object_get_scatter(c._handle(), b.encode(), b"obj", dptr.value, n, arr, 3,
                                          crcs, ctypes.byref(opts), ctypes.byref(rep))
        assert st == 0, wharf._lib.last_error()
        assert rep.provider.decode() == "cuda+ipc", rep.provider
        got = np.frombuffer(dev, dtype=np.uint8)
        want = np.full(n, 0xEE, dtype=np.uint8)
        for (o, k, d), crc in zip(ws, crcs):
            want[d:d + k] = data[o:o + k]
            assert crc == crc64nvme(data[o:o + k])
        assert np.array_equal(got, want)
        lib.wharf_mem_deregister(reg)
        c.close()
    finally:
        srv.stop()
        srv.cleanup()


def test_read_ranges_is_one_scatter_get_over_rdma(wharfd, obj, provider):
    """ObjectReader.read_ranges: far-apart ranges (and one cut at the object's end) come back
    right; over RDMA by scatter GETs (at most one per runner), over HTTP by coalesced ranged
    GETs."""
    from wharf.reader import ObjectReader
    bucket, data = obj
    c = make_client(wharfd, provider)
    try:
        ranges = [(i * 7919 % (SIZE - 600), 300 + i) for i in range(40)] + [(SIZE - 10, 100),
                                                                             (5, 0)]
        f = ObjectReader(c, bucket, "obj", reader="range")
        got = f.read_ranges(ranges, max_gap=0)
        for (o, n), g in zip(ranges, got):
            assert g == data[o:o + n].tobytes(), (o, n)
        if provider == "http":
            from wharf.reader import coalesce
            spans = [(o, min(n, SIZE - o)) for o, n, _ in coalesce(ranges, 0, 64 << 20)]
            assert f.stats["gets"] == sum(1 for _, n in spans if n > 0), f.stats
        else:  # one scatter GET (a batch holds at least 64 windows), not one per range
            assert f.stats["gets"] == 1, f.stats
    finally:
        c.close()


def test_scatter_of_empty_windows_moves_nothing(wharfd, obj, provider):
    bucket, _ = obj
    c = make_client(wharfd, provider)
    try:
        buf = np.full(8, 0xEE, dtype=np.uint8)
        rep = c.get_scatter(bucket, "obj", buf, [(5, 0, 0), (SIZE, 0, 8)], crcs=True)
        assert rep.bytes == 0 and rep.window_crcs == [0, 0] and (buf == 0xEE).all()
    finally:
        c.close()
