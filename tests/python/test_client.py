# SPDX-License-Identifier: Apache-2.0
"""wharf.Client over each transport: buckets, objects, get_into/put_from with numpy arrays,
torch tensors and plain buffers (whole and ranges), reports checked against the server's
counters, registrations, and errors carrying the C library's message."""
import os

import numpy as np
import pytest
import torch

import wharf
from conftest import Witness, expect_transport, make_client
from wharfd import unique_bucket


def pattern(n, seed):
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8)


def test_version_and_library():
    assert wharf.library_version() == os.environ["WHARF_PROJECT_VERSION"]
    assert os.path.exists(wharf.library_path())


def test_buckets(client):
    name = unique_bucket("pyb")
    client.create_bucket(name)
    assert name in client.list_buckets()
    client.create_bucket(name)  # one's own, again: 200 in us-east-1, as S3 answers there
    client.put(name, "x", b"1")
    with pytest.raises(wharf.WharfError) as ei:
        client.delete_bucket(name)
    assert "BucketNotEmpty" in str(ei.value) or ei.value.status == wharf._lib.WHARF_ERR_NOT_EMPTY
    client.delete(name, "x")
    client.delete_bucket(name)
    assert name not in client.list_buckets()


def test_put_get_stat_list_delete(client, bucket, wharfd, provider):
    data = pattern(3 << 20, 1).tobytes()
    with Witness(wharfd) as w:
        rep = client.put(bucket, "dir/a.bin", data)
    expect_transport(wharfd, provider, w, rep, len(data), "put")
    assert rep.bytes == len(data) and rep.etag.startswith('"')
    with Witness(wharfd) as w:
        got = client.get(bucket, "dir/a.bin")
    assert got == data
    expect_transport(wharfd, provider, w, client.last_report, len(data), "get")
    st = client.stat(bucket, "dir/a.bin")
    assert st.length == len(data) and st.etag == rep.etag
    client.put(bucket, "dir/b.bin", b"")
    client.put(bucket, "other", "text")
    keys = [o.key for o in client.list(bucket)]
    assert keys == ["dir/a.bin", "dir/b.bin", "other"]
    assert [(o.key, o.length) for o in client.list(bucket, "dir/")] == [
        ("dir/a.bin", len(data)), ("dir/b.bin", 0)]
    assert client.get(bucket, "dir/b.bin") == b""
    assert client.get(bucket, "other") == b"text"
    assert client.get(bucket, "dir/a.bin", offset=100, length=50) == data[100:150]
    assert client.get(bucket, "dir/a.bin", offset=len(data) - 7) == data[-7:]
    client.delete(bucket, "dir/a.bin")
    assert not client.exists(bucket, "dir/a.bin")
    with pytest.raises(wharf.NotFoundError) as ei:
        client.get(bucket, "dir/a.bin")
    assert "dir/a.bin" in str(ei.value) and ei.value.status == -4


def test_numpy_whole_and_ranges(client, bucket, wharfd, provider):
    src = np.random.default_rng(2).standard_normal(1 << 20).astype(np.float32)  # 4 MiB
    with Witness(wharfd) as w:
        rep = client.put_from(bucket, "np", src)
    expect_transport(wharfd, provider, w, rep, src.nbytes, "put")
    dst = np.zeros_like(src)
    with Witness(wharfd) as w:
        rep = client.get_into(bucket, "np", dst)
    expect_transport(wharfd, provider, w, rep, src.nbytes, "get")
    assert rep.bytes == src.nbytes and np.array_equal(dst, src)
    # a range of the object into a slice of a bigger array
    big = np.zeros(4096, dtype=np.float32)
    rep = client.get_into(bucket, "np", big[1000:2000], offset=4 * 5000, length=4000)
    assert rep.bytes == 4000
    assert np.array_equal(big[1000:2000], src[5000:6000])
    assert not big[:1000].any() and not big[2000:].any()
    # put a range of a buffer
    client.put_from(bucket, "np-part", src, offset=400, length=800)
    assert client.get(bucket, "np-part") == src.tobytes()[400:1200]
    # 2-D Fortran-ordered arrays are contiguous too
    f = np.asfortranarray(np.arange(12, dtype=np.int64).reshape(3, 4))
    client.put_from(bucket, "fortran", f)
    assert client.get(bucket, "fortran") == f.tobytes(order="A")


def test_torch_tensors(client, bucket, wharfd, provider):
    t = torch.randn(512, 1024, dtype=torch.float32)
    with Witness(wharfd) as w:
        rep = client.put_from(bucket, "t", t)
    expect_transport(wharfd, provider, w, rep, t.numel() * 4, "put")
    out = torch.empty_like(t)
    rep = client.get_into(bucket, "t", out)
    assert torch.equal(out, t) and rep.bytes == t.numel() * 4
    # bf16 and a row range straight into a view of a larger tensor
    b = t.to(torch.bfloat16)
    client.put_from(bucket, "bf16", b)
    dst = torch.zeros(10, 1024, dtype=torch.bfloat16)
    row = 1024 * 2
    client.get_into(bucket, "bf16", dst[2:5], offset=7 * row, length=3 * row)
    assert torch.equal(dst[2:5], b[7:10]) and not dst[:2].any() and not dst[5:].any()


def test_bytearray_memoryview(client, bucket):
    data = bytearray(pattern(1 << 16, 3).tobytes())
    client.put_from(bucket, "ba", data)
    client.put_from(bucket, "mv", memoryview(bytes(data))[10:20])
    out = bytearray(len(data))
    rep = client.get_into(bucket, "ba", out)
    assert out == data and rep.bytes == len(data)
    out2 = bytearray(64)
    rep = client.get_into(bucket, "ba", memoryview(out2)[8:18], offset=5, length=10)
    assert out2[8:18] == data[5:15] and rep.bytes == 10
    assert client.get(bucket, "mv") == bytes(data[10:20])


def test_short_destination_and_bad_buffers(client, bucket):
    client.put(bucket, "k", b"x" * 1000)
    with pytest.raises(wharf.WharfError) as ei:
        client.get_into(bucket, "k", bytearray(10))  # whole object into 10 bytes
    assert ei.value.status == wharf._lib.WHARF_ERR_TOO_LARGE and ei.value.message
    with pytest.raises(wharf.WharfError, match="not contiguous"):
        client.get_into(bucket, "k", torch.zeros(10, 10).t())
    with pytest.raises(wharf.WharfError, match="not contiguous"):
        client.get_into(bucket, "k", np.zeros((10, 10))[:, ::2])
    with pytest.raises(wharf.WharfError, match="read-only"):
        client.get_into(bucket, "k", b"immutable bytes")
    with pytest.raises(wharf.WharfError, match="expected a numpy array"):
        client.get_into(bucket, "k", 12345)
    with pytest.raises(wharf.WharfError, match="outside"):
        client.put_from(bucket, "k2", b"abc", offset=2, length=5)
    with pytest.raises(wharf.WharfError, match="transport must be"):
        client.get_into(bucket, "k", bytearray(1000), transport="carrier-pigeon")
    with pytest.raises(wharf.WharfError, match="bucket must be a non-empty string"):
        client.get(None, "k")
    with pytest.raises(wharf.WharfError, match="NUL"):
        client.get(bucket, "a\0b")


def test_missing_bucket_and_key(client, bucket):
    with pytest.raises(wharf.NotFoundError) as ei:
        client.get_into(bucket, "missing", bytearray(10), length=10)
    assert ei.value.status == wharf._lib.WHARF_ERR_NOT_FOUND
    assert "missing" in str(ei.value)
    with pytest.raises(wharf.NotFoundError):
        client.list("no-such-bucket-" + bucket[-8:])
    with pytest.raises(wharf.NotFoundError):
        client.stat(bucket, "missing")


def test_range_past_end(client, bucket):
    client.put(bucket, "r", b"0123456789")
    with pytest.raises(wharf.WharfError) as ei:
        client.get_into(bucket, "r", bytearray(10), offset=20, length=5)
    assert ei.value.status == wharf._lib.WHARF_ERR_RANGE


def test_bad_credentials(wharfd, provider):
    c = wharf.Client(wharfd.endpoint, "wharftest", "wrong-secret",
                     provider=None if provider == "http" else provider,
                     unix_socket=wharfd.unix_socket if provider == "ofi+shm" else None)
    with pytest.raises(wharf.AuthError) as ei:
        c.list_buckets()
    assert ei.value.status == wharf._lib.WHARF_ERR_AUTH and "403" in str(ei.value)
    c.close()
    with pytest.raises(wharf.WharfError, match="closed"):
        c.list_buckets()


def test_bad_client_config(wharfd):
    with pytest.raises(wharf.WharfError) as ei:
        wharf.Client(None, "a", "b")
    assert ei.value.status == wharf._lib.WHARF_ERR_INVALID and "endpoint" in str(ei.value)
    with pytest.raises(wharf.WharfError, match="fallback"):
        wharf.Client(wharfd.endpoint, "a", "b", fallback="maybe")
    with pytest.raises(wharf.WharfError) as ei:
        wharf.Client(wharfd.endpoint, "a", "b", provider="ofi+nosuch")
    assert "nosuch" in str(ei.value)


def test_registration_cache(client, bucket, provider):
    if provider == "http":
        assert not client.rdma
        with pytest.raises(wharf.WharfError, match="no RDMA provider"):
            client.register(bytearray(10))
        return
    src = pattern(1 << 20, 4)
    client.put_from(bucket, "reg", src)
    dst = np.zeros(2 << 20, dtype=np.uint8)
    before = len(client._cached_regs())
    for i in range(4):  # slices of one array: registered once, then found by address range
        client.get_into(bucket, "reg", dst[:1 << 20])
    assert np.array_equal(dst[:1 << 20], src)
    regs = client._cached_regs()
    assert len(regs) == before + 1
    # a pinned registration covers transfers into any part of the buffer
    t = torch.zeros(3 << 20, dtype=torch.uint8)
    with client.register(t) as reg:
        assert reg.nbytes == t.numel()
        n = len(client._cached_regs())
        client.get_into(bucket, "reg", t[1 << 20:2 << 20])
        client.get_into(bucket, "reg", t[:1 << 20])
        assert len(client._cached_regs()) == n
    assert torch.equal(t[1 << 20:2 << 20], torch.from_numpy(src))
    # an owner that dies takes its registration with it
    tmp = np.zeros(1 << 20, dtype=np.uint8)
    client.get_into(bucket, "reg", tmp)
    addr = tmp.ctypes.data
    assert any(a == addr for a, _, _ in client._cached_regs())
    del tmp
    assert not any(a == addr for a, _, _ in client._cached_regs())


def test_concurrent_threads_one_buffer(client, bucket):
    """Several threads transfer into disjoint ranges of one buffer at once."""
    import concurrent.futures as cf
    src = pattern(8 << 20, 5)
    client.put_from(bucket, "conc", src)
    dst = np.zeros_like(src)
    part = 1 << 20

    def one(i):
        return client.get_into(bucket, "conc", dst[i * part:(i + 1) * part], offset=i * part,
                               length=part).bytes
    with cf.ThreadPoolExecutor(4) as ex:
        assert sum(ex.map(one, range(8))) == src.nbytes
    assert np.array_equal(dst, src)


def test_http_transport_forced(client, bucket, wharfd):
    src = pattern(1 << 20, 6)
    client.put_from(bucket, "forced", src)
    dst = np.zeros_like(src)
    with Witness(wharfd) as w:
        rep = client.get_into(bucket, "forced", dst, transport="http")
    assert rep.transport == "http" and w.delta["get"] == 0 and np.array_equal(dst, src)


def test_rdma_on_http_client_is_an_error(http_client):
    b = unique_bucket("pyh")
    http_client.create_bucket(b)
    http_client.put(b, "k", b"abc")
    with pytest.raises(wharf.WharfError) as ei:
        http_client.get_into(b, "k", bytearray(3), transport="rdma")
    assert ei.value.message


def test_stats(client, bucket, provider):
    client.put(bucket, "s", b"x" * 4096)
    client.get(bucket, "s")
    s = client.stats()
    if provider == "http":
        assert s["http_bytes"] >= 8192 and s["rdma_bytes"] == 0
    else:
        assert s["rdma_bytes"] >= 8192 and s["fallbacks"] == 0


def test_large_multipart_put(wharfd, provider):
    """A PUT above the multipart threshold goes up in parallel parts and reads back whole."""
    c = make_client(wharfd, provider, multipart_threshold=8 << 20, part_size=5 << 20,
                    chunk_size=4 << 20)
    try:
        b = unique_bucket("pymp")
        c.create_bucket(b)
        src = pattern(21 << 20, 7)
        rep = c.put_from(b, "big", src)
        assert rep.bytes == src.nbytes
        dst = np.zeros_like(src)
        rep = c.get_into(b, "big", dst)
        assert rep.bytes == src.nbytes and np.array_equal(dst, src)
        assert rep.requests >= 2  # 4 MiB chunks
    finally:
        c.close()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here")
def test_cuda_tensors(client, bucket):
    src = torch.randn(1 << 18, device="cuda")
    rep = client.put_from(bucket, "cuda", src)
    assert rep.bytes == src.numel() * 4
    dst = torch.zeros_like(src)
    rep = client.get_into(bucket, "cuda", dst)
    assert rep.bytes == src.numel() * 4 and torch.equal(dst, src)
    part = torch.zeros(1000, device="cuda")
    client.get_into(bucket, "cuda", part, offset=4000, length=4000)
    assert torch.equal(part, src[1000:2000])


def test_cold_ranged_gets_over_tcp_are_right(wharfd):
    """Ranged GETs over ofi+tcp of an object dropped from the page cache, at offsets that are
    and are not 4 KiB-aligned and lengths that end mid-page: the server reads the aligned
    spans by direct I/O (its counters) and the unaligned head and tail through the cache, and
    every byte lands right."""
    try:
        fd = os.open(os.path.join(wharfd.data_dir, "dio-probe"),
                     os.O_CREAT | os.O_WRONLY | os.O_DIRECT, 0o600)
        os.close(fd)
        os.unlink(os.path.join(wharfd.data_dir, "dio-probe"))
    except OSError:
        pytest.skip(f"{wharfd.data_dir}: its file system has no O_DIRECT (tmpfs?)")
    c = make_client(wharfd, "ofi+tcp")
    b = unique_bucket("coldr")
    c.create_bucket(b)
    data = np.frombuffer(os.urandom((17 << 20) + 333), dtype=np.uint8)
    c.put_from(b, "o", data, transport="http")

    def direct_bytes():
        return wharfd.metrics()['wharf_rdma_get_read_bytes_total{source="direct_io"}']

    for off, n in [(0, data.size), (12345, 5_000_001), (4096, 9 << 20), (4095, 8193),
                   (data.size - 5000, 5000)]:
        for path in wharfd.data_files():
            if path.startswith("objects"):
                f = os.open(os.path.join(wharfd.data_dir, path), os.O_RDONLY)
                os.fsync(f)
                os.posix_fadvise(f, 0, 0, os.POSIX_FADV_DONTNEED)
                os.close(f)
        d0 = direct_bytes()
        out = np.zeros(n, dtype=np.uint8)
        r = c.get_into(b, "o", out, offset=off, length=n, transport="rdma")
        assert r.transport == "rdma" and r.bytes == n
        assert np.array_equal(out, data[off:off + n]), (off, n)
        if n >= 3 * 4096:
            assert direct_bytes() - d0 >= n - 2 * (4 << 20), (off, n)  # cold: by direct I/O
    c.close()
