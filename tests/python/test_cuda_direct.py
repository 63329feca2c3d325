# SPDX-License-Identifier: Apache-2.0
"""GPU memory as a destination and a source, directly: wharfd opens the client's CUDA IPC
handle (a cuda1 token over its Unix socket) and copies between the object and device memory
itself. Needs a CUDA GPU on the server's host; skips with the reason elsewhere.

Each case checks the bytes on the GPU against the source, the report (provider cuda+ipc, not
staged), and the server's counters (the witness: the server moved them)."""
import ctypes
import threading
import time

import pytest

torch = pytest.importorskip("torch")

from conftest import Witness, make_client  # noqa: E402
from s3raw import UNSIGNED, S3Raw  # noqa: E402
from wharfd import WharfServer, unique_bucket  # noqa: E402

import wharf  # noqa: E402

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(),
                                reason="no CUDA device on this host (the direct GPU path "
                                       "runs on the GPU machine)")


@pytest.fixture()
def gclient(wharfd):
    c = make_client(wharfd, "ofi+shm")
    yield c
    c.close()


@pytest.fixture()
def gbucket(gclient):
    name = unique_bucket("gpu")
    gclient.create_bucket(name)
    return name


def _host_bytes(n, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 256, (n,), dtype=torch.uint8, generator=g)


@pytest.mark.parametrize("size", [1, 4095, 1 << 20, (64 << 20) + 12345])
def test_get_into_device(wharfd, gclient, gbucket, size):
    src = _host_bytes(size, size)
    gclient.put_from(gbucket, f"o{size}", src.numpy(), transport="http")
    dst = torch.zeros(size, dtype=torch.uint8, device="cuda")
    with Witness(wharfd) as w:
        rep = gclient.get_into(gbucket, f"o{size}", dst)
    assert rep.transport == "rdma" and rep.provider == "cuda+ipc", rep
    assert rep.memory == "cuda" and not rep.staged, rep
    assert w.delta["get"] >= size
    assert torch.equal(dst.cpu(), src)


@pytest.mark.parametrize("size", [1, 3 << 20, (40 << 20) + 7])
def test_put_from_device(wharfd, gclient, gbucket, size):
    src = _host_bytes(size, 7 + size).cuda()
    with Witness(wharfd) as w:
        rep = gclient.put_from(gbucket, f"p{size}", src)
    assert rep.transport == "rdma" and rep.provider == "cuda+ipc" and not rep.staged, rep
    assert w.delta["put"] >= size
    back = gclient.get(gbucket, f"p{size}", transport="http")
    assert bytes(back) == bytes(src.cpu().numpy())


def test_offsets_and_ranges(gclient, gbucket):
    n = 9 << 20
    src = _host_bytes(n, 3)
    gclient.put_from(gbucket, "r", src.numpy(), transport="http")
    big = torch.full((n + 8192,), 0xee, dtype=torch.uint8, device="cuda")
    # a sub-range of the object into an odd offset inside one allocation
    view = big[4097:4097 + 5000001]
    rep = gclient.get_into(gbucket, "r", view, offset=123457, length=5000001)
    assert rep.bytes == 5000001 and rep.provider == "cuda+ipc"
    host = big.cpu()
    assert torch.equal(host[4097:4097 + 5000001], src[123457:123457 + 5000001])
    assert bool((host[:4097] == 0xee).all()) and bool((host[4097 + 5000001:] == 0xee).all())


def test_concurrent_into_one_allocation(gclient, gbucket):
    parts, n = 8, 3 << 20
    srcs = [_host_bytes(n, 100 + i) for i in range(parts)]
    for i, s in enumerate(srcs):
        gclient.put_from(gbucket, f"c{i}", s.numpy(), transport="http")
    dst = torch.zeros(parts * n, dtype=torch.uint8, device="cuda")
    errs = []

    def one(i):
        try:
            gclient.get_into(gbucket, f"c{i}", dst[i * n:(i + 1) * n])
        except Exception as e:  # noqa: BLE001 - reported below
            errs.append(e)

    th = [threading.Thread(target=one, args=(i,)) for i in range(parts)]
    for t in th:
        t.start()
    for t in th:
        t.join(timeout=120)
    assert not errs, errs
    host = dst.cpu()
    for i in range(parts):
        assert torch.equal(host[i * n:(i + 1) * n], srcs[i]), i


def test_token_past_allocation_is_refused(wharfd, gbucket, gclient):
    """A token whose region runs past its allocation is refused before a byte moves, and the
    memory around it is untouched. The token is forged with the client's real IPC handle and
    a larger size, sent over the Unix socket by a raw signed request."""
    n = 1 << 20
    # the object is no larger than the token claims, so only the allocation check stops it
    gclient.put_from(gbucket, "big", _host_bytes(n, 9).numpy(), transport="http")
    dst = torch.full((n,), 0x5a, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    # Export the handle of the tensor's allocation here, as libwharf would.
    cu = ctypes.CDLL("libcuda.so.1")
    handle = (ctypes.c_char * 64)()
    base, size = ctypes.c_uint64(), ctypes.c_size_t()
    assert cu.cuMemGetAddressRange_v2(ctypes.byref(base), ctypes.byref(size),
                                      ctypes.c_uint64(dst.data_ptr())) == 0
    assert cu.cuIpcGetMemHandle(handle, base) == 0
    uuid = (ctypes.c_char * 16)()
    assert cu.cuDeviceGetUuid(uuid, 0) == 0
    off = dst.data_ptr() - base.value
    too_big = size.value - off + 4096  # runs 4 KiB past the allocation
    tok = "%x:%x:cuda1:%s:%s:%x" % (dst.data_ptr(), too_big, bytes(uuid).hex(),
                                     bytes(handle).hex(), off)
    raw = S3Raw(wharfd.endpoint, unix_socket=wharfd.unix_socket)
    r = raw.request("GET", f"/{gbucket}/big", headers={"x-amz-rdma-token": tok},
                    payload_hash=UNSIGNED)
    assert r.status == 400, (r.status, r.body)
    msg = r.headers.get("x-amz-error-message", "") + r.body.decode("utf-8", "replace")
    assert "runs past its CUDA allocation" in msg, (r.headers, r.body)
    assert bool((dst.cpu() == 0x5a).all())


def test_staged_fallback_is_reported(wharfd, gbucket, gclient):
    """HTTP cannot reach device memory: the report says staged, and why."""
    src = _host_bytes(1 << 20, 5)
    gclient.put_from(gbucket, "s", src.numpy(), transport="http")
    dst = torch.zeros(1 << 20, dtype=torch.uint8, device="cuda")
    rep = gclient.get_into(gbucket, "s", dst, transport="http")
    assert rep.staged and rep.memory == "cuda" and "staged" in rep.reason, rep
    assert torch.equal(dst.cpu(), src)


def test_libwharf_refuses_http_into_device(wharfd, gbucket):
    """libwharf itself never lets HTTP write device memory: a clean error, no crash."""
    c = make_client(wharfd, "ofi+shm")
    try:
        dst = torch.zeros(4096, dtype=torch.uint8, device="cuda")
        c.put_from(gbucket, "h", _host_bytes(4096, 1).numpy(), transport="http")
        with c.register(dst):
            with pytest.raises(wharf.WharfError) as ei:
                # straight to libwharf: the Python layer would stage instead
                _raw_http_get(c, gbucket, "h", dst)
            assert "GPU memory" in str(ei.value)
    finally:
        c.close()


def _raw_http_get(c, bucket, key, dst):
    from wharf import _lib
    lib = _lib.lib
    opts = _lib.XferOpts()
    lib.wharf_xfer_opts_init(ctypes.byref(opts), ctypes.sizeof(opts))
    opts.transport = _lib.TRANSPORT_HTTP
    rep = _lib.CReport()
    lib.wharf_report_init(ctypes.byref(rep), ctypes.sizeof(rep))
    st = lib.wharf_object_get(c._handle(), bucket.encode(), key.encode(),
                              ctypes.c_void_p(dst.data_ptr()), dst.numel(), 0, _lib.WHOLE,
                              ctypes.byref(opts), ctypes.byref(rep))
    if st != _lib.OK:
        raise wharf.errors.from_status(st, "raw GET")


# ---- wharf.torch and DCP saves from GPU tensors --------------------------------------------

def _gpu_state(seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    return {"w": torch.randn(1024, 1031, device="cuda", generator=g),
            "h": torch.randn(3, 777, device="cuda", generator=g).to(torch.bfloat16),
            "u": torch.randint(0, 255, (12345,), device="cuda", dtype=torch.uint8,
                               generator=g),
            "flag": torch.tensor([True, False, True], device="cuda"),
            "big": torch.randn(9 << 20, device="cuda", generator=g),
            "step": 7}


def test_checkpoint_save_from_gpu_goes_direct(wharfd, gclient, gbucket):
    """Shards assembled in GPU memory and read by wharfd over the direct path: no report
    staged, the server's counters saw every byte, and the restore (verify=True: sum64 on the
    GPU) equals the source tensor by tensor. Two shards, so the two device buffers alternate."""
    import wharf.torch as wt
    sd = _gpu_state(1)
    url = f"s3://{gbucket}/direct"
    with Witness(wharfd) as w:
        out = wt.save(sd, url, client=gclient, shard_size=24 << 20)
    assert out["staging_memory"] == "cuda:0" and out["staging_reason"] is None, out
    assert len(out["shards"]) >= 2
    for r in out["reports"]:
        assert r.provider == "cuda+ipc" and r.memory == "cuda" and not r.staged, r
    assert w.delta["put"] >= out["bytes"]
    got = wt.load(url, client=gclient, device="cuda", verify=True)
    for k, v in sd.items():
        if isinstance(v, torch.Tensor):
            assert got[k].device.type == "cuda" and torch.equal(got[k], v), k
        else:
            assert got[k] == v
    # the same checkpoint read into host memory, verified there (sum64 on the CPU)
    host = wt.load(url, client=gclient, device="cpu", verify=True)
    assert torch.equal(host["w"], sd["w"].cpu())


def test_checkpoint_sum64_mismatch_is_caught_on_the_gpu(gclient, gbucket):
    import json

    import wharf.torch as wt
    sd = _gpu_state(2)
    url = f"s3://{gbucket}/tamper"
    wt.save(sd, url, client=gclient)
    key = "tamper/model.safetensors.index.json"
    idx = json.loads(gclient.get(gbucket, key, transport="http"))
    info = idx["metadata"]["ranks"][0]["tensors"]["u"]
    assert "sum64" in info and "crc32" not in info, info
    info["sum64"][1] ^= 1
    gclient.put(gbucket, key, json.dumps(idx).encode(), transport="http")
    with pytest.raises(wharf.ChecksumError, match="u"):
        wt.load(url, client=gclient, device="cuda", verify=True)
    wt.load(url, client=gclient, device="cuda")  # without verify it loads


def test_checkpoint_staging_choice_is_reported(gclient, gbucket):
    import wharf.torch as wt
    url = f"s3://{gbucket}/host"
    # mostly host bytes: host staging, and the reason says so
    sd = {"cpu": torch.randn(1 << 20), "gpu": torch.randn(1000, device="cuda")}
    out = wt.save(sd, url, client=gclient)
    assert out["staging_memory"] == "host" and "host memory" in out["staging_reason"], out
    got = wt.load(url, client=gclient, verify=True)
    assert torch.equal(got["gpu"], sd["gpu"].cpu())
    # forced host staging of GPU tensors: no reason to give, host memory
    out = wt.save(_gpu_state(3), url, client=gclient, staging="host")
    assert out["staging_memory"] == "host" and out["staging_reason"] is None, out
    # over HTTP the device cannot be read: host, and why
    out = wt.save(_gpu_state(3), url, client=gclient, transport="http")
    assert out["staging_memory"] == "host" and "HTTP" in out["staging_reason"], out


def test_dcp_save_packs_gpu_tensors_in_gpu_memory(wharfd, gclient, gbucket):
    """DCP objects holding several CUDA tensors (and pickled items) are packed in GPU memory
    and PUT direct; the load lands in CUDA tensors with the same values."""
    dcp = pytest.importorskip("torch.distributed.checkpoint")
    from wharf.torch.dcp import WharfStorageReader, WharfStorageWriter
    sd = _gpu_state(4)
    sd["extra"] = {"name": "x"}
    url = f"s3://{gbucket}/dcp"
    wr = WharfStorageWriter(url, client=gclient, object_size=8 << 20)
    with Witness(wharfd) as w:
        dcp.save(sd, storage_writer=wr)
    lr = wr.last_report
    assert lr["gpu_staged"] == 0 and lr["gpu_direct"] >= 2, lr
    assert w.delta["put"] >= 9 << 22
    out = {k: (torch.zeros_like(v) if isinstance(v, torch.Tensor) else v)
           for k, v in sd.items()}
    out["step"], out["extra"] = 0, {"name": ""}
    dcp.load(out, storage_reader=WharfStorageReader(url, client=gclient))
    for k, v in sd.items():
        if isinstance(v, torch.Tensor):
            assert out[k].is_cuda and torch.equal(out[k], v), k


def _pinned(srv):
    m = srv.metrics()
    return {s: int(m[f'wharf_cuda_pinned_bytes{{state="{s}"}}'])
            for s in ("budget", "allocated", "peak")}


def test_pinned_staging_stays_in_its_budget(gbucket):
    """A server given --cuda-pinned-mem 32M (two copy slots) serves 8 concurrent 24 MiB GETs
    into GPU memory and PUTs from it: every byte right, and the pinned memory it allocated and
    used at its peak within the budget."""
    from wharfd import WharfServer
    srv = WharfServer(extra_args=["--cuda-pinned-mem", "32M"])
    srv.start()
    try:
        c = make_client(srv, "ofi+shm")
        b = unique_bucket("pin")
        c.create_bucket(b)
        n = 24 << 20
        src = _host_bytes(n, 11)
        c.put_from(b, "o", src.numpy(), transport="http")
        dsts = [torch.zeros(n, dtype=torch.uint8, device="cuda") for _ in range(8)]
        errs = []

        def one(d):
            try:
                r = c.get_into(b, "o", d)
                assert r.provider == "cuda+ipc" and not r.staged, r
            except BaseException as e:  # noqa: B902
                errs.append(e)
        ts = [threading.Thread(target=one, args=(d,)) for d in dsts]
        for t in ts:
            t.start()
        for t in ts:
            t.join(60)
        assert not errs, errs
        for d in dsts:
            assert torch.equal(d.cpu(), src)
        rep = c.put_from(b, "back", dsts[0])
        assert rep.provider == "cuda+ipc" and not rep.staged, rep
        p = _pinned(srv)
        assert p["budget"] == 32 << 20, p
        assert 0 < p["peak"] <= p["budget"] and 0 < p["allocated"] <= p["budget"], p
        c.close()
    finally:
        srv.stop()
        srv.cleanup()


def test_staged_load_into_gpu_uses_bounded_host_buffers(gclient, gbucket, monkeypatch):
    """A load into GPU memory that cannot go direct (HTTP here) stages through at most one
    piece-sized host buffer per download thread, not a host copy of the whole checkpoint;
    the report says why it was staged and how much host memory that took."""
    import wharf.torch as wt
    from wharf.torch import fetch
    monkeypatch.setattr(fetch, "PIECE", 4 << 20)
    sd = _gpu_state(5)
    url = f"s3://{gbucket}/staged"
    wt.save(sd, url, client=gclient, shard_size=20 << 20)
    rep = {}
    got = wt.load(url, client=gclient, device="cuda", transport="http", report=rep)
    assert rep["arena"].endswith("(through host memory)") and "HTTP" in rep["staged_reason"]
    assert 0 < rep["staging_bytes"] <= 2 * (4 << 20), rep["staging_bytes"]
    total = sum(v.numel() * v.element_size() for v in sd.values() if torch.is_tensor(v))
    assert rep["staging_bytes"] < total / 4
    for k, v in sd.items():
        if torch.is_tensor(v):
            assert torch.equal(got[k], v), k


def test_token_dataset_into_gpu_memory(wharfd, gclient, gbucket):
    """TokenDataset(device="cuda") yields GPU tensors: over ofi+shm the server writes every
    window into the registered GPU buffers (the counters, memory "direct"); over HTTP each
    window lands in a page-locked twin and is copied, and the stats say so and why. The
    tokens are right either way, with copy=True and copy=False."""
    from wharf.torch import TokenDataset
    seqs, L = 96, 512
    toks = torch.arange(seqs * L, dtype=torch.int32)
    gclient.put_from(gbucket, "tok/s0.bin", toks.numpy(), transport="http")
    gclient.put(gbucket, "tok/s0.json",
                f'{{"sequences": {seqs}, "seq_len": {L}}}'.encode(), transport="http")
    want = toks.view(seqs, L).cuda()
    for transport, how in (("auto", "direct"), ("http", "through host memory")):
        for copy in (True, False):
            ds = TokenDataset(gclient, gbucket, prefix="tok/", batch_size=16, device="cuda",
                              buffer_bytes=32 * L * 4, transport=transport, copy=copy)
            with Witness(wharfd) as w:
                got = [b.clone() if not copy else b for b in ds]
            assert all(b.is_cuda for b in got)
            assert torch.equal(torch.cat(got), want)
            st = ds.last_stats
            assert st["memory"] == f"cuda:0 ({how})", st
            if how == "direct":
                assert st["staged_reason"] is None and w.delta["get"] >= toks.numel() * 4
            else:
                assert "HTTP" in st["staged_reason"] and w.delta["get"] == 0


def _regcache(srv):
    m = srv.metrics()
    ev = {e: m.get(f'wharf_cuda_regcache_events_total{{event="{e}"}}', 0.0)
          for e in ("hit", "register", "release", "fallback")}
    return ev, m.get('wharf_cuda_regcache_bytes{state="registered"}', 0.0)


@pytest.fixture()
def regserver(tmp_path):
    srv = WharfServer(data_dir=str(tmp_path / "data"), env={"WHARF_CUDA_SOURCE": "register"})
    srv.start()
    yield srv
    srv.stop()
    srv.cleanup()


def test_registered_pages_are_kept_and_let_go(regserver):
    """WHARF_CUDA_SOURCE=register (a timing variant): GETs into GPU memory DMA from the
    object's registered page-cache pages; the second GET of an object registers nothing more
    (hits), its bytes are right both times, an overwrite serves the new bytes, and a deleted
    object's pages are let go."""
    wharfd = regserver
    gclient = make_client(wharfd, "ofi+shm")
    gbucket = unique_bucket("reg")
    gclient.create_bucket(gbucket)
    size = (96 << 20) + 4097  # four chunks of the cache, the last partial
    src = _host_bytes(size, 41)
    gclient.put_from(gbucket, "reg", src.numpy(), transport="http")
    dst = torch.zeros(size, dtype=torch.uint8, device="cuda")
    ev0, _ = _regcache(wharfd)
    gclient.get_into(gbucket, "reg", dst)
    assert torch.equal(dst.cpu(), src)
    ev1, held1 = _regcache(wharfd)
    assert ev1["register"] > ev0["register"], (ev0, ev1)
    assert held1 >= size
    dst.zero_()
    gclient.get_into(gbucket, "reg", dst)
    assert torch.equal(dst.cpu(), src)
    ev2, _ = _regcache(wharfd)
    assert ev2["register"] == ev1["register"] and ev2["hit"] > ev1["hit"], (ev1, ev2)
    src2 = _host_bytes(size, 42)
    gclient.put_from(gbucket, "reg", src2.numpy(), transport="http")
    gclient.get_into(gbucket, "reg", dst)
    assert torch.equal(dst.cpu(), src2)
    gclient.delete(gbucket, "reg")
    # a large object's file is unlinked by the data table's thread after the DELETE: every new
    # file GET sweeps the unlinked ones; bounded wait
    small = torch.zeros(1 << 20, dtype=torch.uint8, device="cuda")
    for i in range(40):
        other = _host_bytes(1 << 20, 43 + i)
        gclient.put_from(gbucket, f"other{i}", other.numpy(), transport="http")
        gclient.get_into(gbucket, f"other{i}", small)
        assert torch.equal(small.cpu(), other)
        ev3, held3 = _regcache(wharfd)
        if ev3["release"] > ev2["release"] + 1 and held3 < size:
            break
        time.sleep(0.25)
    # two releases: the file the overwrite replaced, and the deleted one
    assert ev3["release"] >= ev2["release"] + 2, (ev2, ev3)
    assert held3 < size, held3
    gclient.close()
