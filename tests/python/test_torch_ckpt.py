# SPDX-License-Identifier: Apache-2.0
"""wharf.torch.save / load: round trips of nested structures over each transport, the shard
files as standard safetensors (read back by the test's own reader, not wharf's), the index as
the commit point (a save killed mid-way), several ranks, verify=True, and bad input."""
import collections
import json
import math
import os
import signal
import struct
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

import wharf
import wharf.torch as wt
from conftest import Witness, make_client
from wharfd import ACCESS_KEY, SECRET_KEY, unique_bucket

HERE = os.path.dirname(os.path.abspath(__file__))
PYDIR = os.path.normpath(os.path.join(HERE, "..", "..", "python"))


def all_dtypes():
    g = torch.Generator().manual_seed(0)
    out = {
        "bool": torch.rand(5, 3, generator=g) > 0.5,
        "uint8": torch.randint(0, 256, (7,), dtype=torch.uint8, generator=g),
        "int8": torch.randint(-128, 128, (2, 3), dtype=torch.int8, generator=g),
        "int16": torch.randint(-30000, 30000, (9,), dtype=torch.int16, generator=g),
        "int32": torch.randint(-2 ** 31, 2 ** 31 - 1, (4, 4), dtype=torch.int32, generator=g),
        "int64": torch.tensor([-2 ** 63, 2 ** 63 - 1, 0, 5], dtype=torch.int64),
        "float16": torch.randn(3, 5, generator=g).half(),
        "bfloat16": torch.randn(6, 2, generator=g).bfloat16(),
        "float32": torch.tensor([1.5, float("nan"), float("inf"), -0.0]),
        "float64": torch.randn(2, 2, 2, generator=g, dtype=torch.float64),
        "complex64": torch.randn(3, generator=g, dtype=torch.complex64),
        "complex128": torch.randn(2, 3, generator=g, dtype=torch.complex128),
    }
    if hasattr(torch, "complex32"):
        out["complex32"] = torch.randn(4, generator=g, dtype=torch.complex64).to(torch.complex32)
    for name in ("uint16", "uint32", "uint64", "float8_e5m2", "float8_e4m3fn"):
        dt = getattr(torch, name, None)
        if isinstance(dt, torch.dtype):
            out[name] = torch.randint(0, 100, (5,), dtype=torch.uint8).view(dt) \
                if dt.itemsize == 1 else torch.randint(0, 100, (5,)).to(dt)
    return out


def same(a, b, path="root"):
    """Deep equality with exact types, dtypes, shapes and bytes (nan == nan)."""
    assert type(a) is type(b), (path, type(a), type(b))
    if isinstance(a, torch.Tensor):
        a = a.resolve_conj().resolve_neg()
        assert a.dtype == b.dtype and a.shape == b.shape, (path, a.dtype, b.dtype, a.shape)
        ab = a.contiguous().reshape(-1).view(torch.uint8) if a.numel() else a
        bb = b.contiguous().reshape(-1).view(torch.uint8) if b.numel() else b
        if a.dtype == getattr(torch, "complex32", None):
            ab, bb = torch.view_as_real(a).contiguous(), torch.view_as_real(b).contiguous()
        assert torch.equal(ab, bb), path
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and np.array_equal(a, b), path
    elif isinstance(a, dict):
        assert list(a.keys()) == list(b.keys()), path
        for k in a:
            same(a[k], b[k], f"{path}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, f"{path}[{i}]")
    elif isinstance(a, float) and math.isnan(a):
        assert math.isnan(b), path
    else:
        assert a == b, path


@pytest.fixture()
def url(client, bucket):
    return f"s3://{bucket}/ckpt/step-1"


def test_round_trip_every_dtype(client, url, wharfd, provider):
    sd = all_dtypes()
    with Witness(wharfd) as w:
        rep = wt.save(sd, url, client=client)
    assert rep["index"].endswith("model.safetensors.index.json")
    assert rep["transports"] == (["http"] if provider == "http" else ["rdma"])
    if provider != "http":
        assert w.delta["put"] >= rep["bytes"]
    lr = {}
    with Witness(wharfd) as w:
        got = wt.load(url, client=client, report=lr)
    same(sd, got)
    assert lr["transports"] == (["http"] if provider == "http" else ["rdma"])
    if provider != "http":
        assert w.delta["get"] >= lr["bytes"] > 0


def test_structure_and_special_tensors(client, url):
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    shared = torch.randn(3, 3)
    obj = collections.OrderedDict([
        ("model", {"w": base, "wt": base.t(), "slice": base[1:3, ::2], "row": base[2],
                   "scalar": torch.tensor(3.25), "empty": torch.empty(0, 5),
                   "empty_i": torch.zeros((2, 0, 3), dtype=torch.int64),
                   "tied_a": shared, "tied_b": shared,
                   "neg_conj": torch.randn(3, dtype=torch.complex64).conj()}),
        ("optimizer", {"state": {0: {"step": torch.tensor(10.0), "exp_avg": torch.ones(4)},
                                 1: {"step": torch.tensor(10.0), "exp_avg": torch.zeros(4)}},
                       "param_groups": [{"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8,
                                         "params": [0, 1], "amsgrad": False,
                                         "foreach": None}]}),
        ("step", 12345678901234), ("epoch", 3), ("loss", 0.125), ("nan", float("nan")),
        ("inf", float("-inf")), ("name", "run-\u00e9\U0001F680"), ("flags", [True, False, None]),
        ("keys", {1: "int", 2.5: "float", (1, "a"): "tuple", None: "none", True: "bool",
                  "s": "str"}),
        ("nested", [[1, [2, (3, 4)]], {"deep": [torch.ones(2, dtype=torch.int16)]}]),
        ("blob", b"\x00\xffbytes"), ("dtype", torch.bfloat16), ("device", torch.device("cpu")),
        ("size", torch.Size([2, 3])), ("np", np.arange(6, dtype=np.int16).reshape(2, 3)),
        ("empty_containers", [{}, [], ()]),
    ])
    wt.save(obj, url, client=client)
    got = wt.load(url, client=client)
    same(obj, got)
    # the same tensor object is stored once and comes back as one tensor
    assert got["model"]["tied_a"] is got["model"]["tied_b"]
    # views of one storage are stored each with their own bytes
    assert got["model"]["wt"].shape == (6, 4)
    assert torch.equal(got["model"]["slice"], base[1:3, ::2])


def test_loaded_tensors_are_views_of_one_arena(client, url):
    sd = {f"layer{i}.weight": torch.randn(64, 64) for i in range(6)}
    sd["ids"] = torch.arange(10)
    wt.save(sd, url, client=client, shard_size=40000)  # several shards
    got = wt.load(url, client=client)
    storages = {t.storage().data_ptr() for t in got.values()}
    assert len(storages) == 1, "every tensor should view the one arena"
    for k in sd:
        assert torch.equal(sd[k], got[k])


def test_large_multi_shard_arena(client, url):
    """A 20 MiB checkpoint in three shards: values, zero-copy views of one arena, and the
    arena's lifetime while some views are dropped."""
    g = torch.Generator().manual_seed(7)
    sd = {f"w{i}": torch.randn(1 << 20, generator=g) for i in range(5)}  # 20 MiB in 3 shards
    sd["tail"] = torch.arange(1001, dtype=torch.int16)
    wt.save(sd, url, client=client, shard_size=9 << 20)
    got = wt.load(url, client=client)
    assert len({t.storage().data_ptr() for t in got.values()}) == 1
    first = got["w0"]
    del got["w1"]  # dropping other views keeps the arena alive for the rest
    import gc
    gc.collect()
    for k in sd:
        if k != "w1":
            assert torch.equal(sd[k], got[k]), k
    first.add_(1)  # the arena is writable
    assert torch.equal(first, sd["w0"] + 1)


def test_shards_are_standard_safetensors(client, bucket, url):
    """Read the shards with the test's own parser (not wharf's) and check every byte."""
    sd = {f"p{i}": torch.randn(100 + i) for i in range(10)}
    sd["half"] = torch.randn(33).half()
    sd["flag"] = torch.tensor([True, False, True])
    rep = wt.save(sd, url, client=client, shard_size=2000)
    prefix = url.split("/", 3)[3]
    index = json.loads(client.get(bucket, f"{prefix}/model.safetensors.index.json"))
    assert set(index["weight_map"]) == set(sd)
    files = sorted(set(index["weight_map"].values()))
    n = len(files)
    assert n == len(rep["shards"]) > 2
    # the generation (new for every save) names this save's shards
    gen = rep["generation"]
    assert len(gen) == 12
    assert files == [f"model-{gen}-{i:05d}-of-{n:05d}.safetensors" for i in range(1, n + 1)]
    seen = {}
    for f in files:
        blob = client.get(bucket, f"{prefix}/{f}")
        hl = struct.unpack("<Q", blob[:8])[0]
        assert (8 + hl) % 8 == 0
        header = json.loads(blob[8:8 + hl])
        meta = header.pop("__metadata__")
        assert meta["format"] == "pt" and all(isinstance(v, str) for v in meta.values())
        data = blob[8 + hl:]
        spans = sorted(tuple(v["data_offsets"]) for v in header.values())
        assert spans[0][0] == 0 and spans[-1][1] == len(data)
        assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
        for name, v in header.items():
            assert index["weight_map"][name] == f
            b, e = v["data_offsets"]
            exp = sd[name]
            assert v["shape"] == list(exp.shape)
            assert v["dtype"] == {torch.float32: "F32", torch.float16: "F16",
                                  torch.bool: "BOOL"}[exp.dtype]
            assert data[b:e] == exp.numpy().tobytes()
            seen[name] = True
    assert set(seen) == set(sd)
    assert "wharf.structure" in json.loads(
        client.get(bucket, f"{prefix}/{files[0]}")[8:8 + struct.unpack(
            "<Q", client.get(bucket, f"{prefix}/{files[0]}", length=8))[0]])["__metadata__"]


def test_overwrite_and_other_keys(client, bucket):
    a = {"x": torch.ones(10)}
    b = {"x": torch.zeros(10), "y": torch.arange(3)}
    wt.free_staging()
    assert wt.save(b, f"s3://{bucket}/c/b", client=client)["staging"] == "new"
    rep = wt.save(a, f"s3://{bucket}/c/a", client=client)
    assert rep["staging"] == "reused"  # kept from the previous save, large enough
    wt.free_staging()
    rep = wt.save(b, f"s3://{bucket}/c/a", client=client, keep_staging=False)  # overwrite
    assert rep["staging"] == "temporary"
    same(wt.load(f"s3://{bucket}/c/a", client=client), b)
    same(wt.load(f"s3://{bucket}/c/b", client=client), b)


def test_verify_detects_tensor_mismatch(client, bucket, url):
    sd = {"a": torch.randn(50), "b": torch.randn(60)}
    wt.save(sd, url, client=client)
    same(wt.load(url, client=client, verify=True), sd)
    prefix = url.split("/", 3)[3]
    ik = f"{prefix}/model.safetensors.index.json"
    index = json.loads(client.get(bucket, ik))
    index["metadata"]["ranks"][0]["tensors"]["b"]["crc32"] ^= 1
    client.put(bucket, ik, json.dumps(index).encode())
    wt.load(url, client=client)  # without verify the recorded CRC is not consulted
    with pytest.raises(wharf.ChecksumError) as ei:
        wt.load(url, client=client, verify=True)
    assert "'b'" not in str(ei.value) and " b" in str(ei.value) and "CRC-32" in str(ei.value)


def test_shard_changed_after_commit(client, bucket, url):
    rep = wt.save({"a": torch.ones(100)}, url, client=client)
    prefix = url.split("/", 3)[3]
    k = f"{prefix}/{rep['shards'][0]}"
    blob = bytearray(client.get(bucket, k))
    blob[-1] ^= 0xFF
    client.put(bucket, k, bytes(blob))
    with pytest.raises(wharf.WharfError, match="changed after the checkpoint was committed"):
        wt.load(url, client=client)


def test_missing_and_incomplete(client, bucket):
    with pytest.raises(wharf.NotFoundError, match="no checkpoint"):
        wt.load(f"s3://{bucket}/nothing/here", client=client)
    wt.save({"a": torch.ones(3)}, f"s3://{bucket}/half", client=client)
    client.delete(bucket, "half/model.safetensors.index.json")
    with pytest.raises(wharf.IncompleteCheckpointError, match="incomplete"):
        wt.load(f"s3://{bucket}/half", client=client)


SAVE_AND_DIE = textwrap.dedent("""
    import os, signal, sys, torch
    sys.path.insert(0, {pydir!r})
    import wharf, wharf.torch as wt
    c = wharf.Client({ep!r}, {ak!r}, {sk!r}, provider={prov!r}, unix_socket={sock!r})
    real = c.put_from
    n = [0]
    def put_from(*a, **k):
        r = real(*a, **k)
        n[0] += 1
        if n[0] == 2:
            os.kill(os.getpid(), signal.SIGKILL)  # dies between shard 2 and shard 3
        return r
    c.put_from = put_from
    sd = {{f"w{{i}}": torch.full((1000,), float(i)) for i in range(8)}}
    wt.save(sd, {url!r}, client=c, shard_size=8000)
    print("NOT KILLED")
""")


def run_save_and_die(wharfd, provider, url):
    script = SAVE_AND_DIE.format(pydir=PYDIR, ep=wharfd.endpoint, ak=ACCESS_KEY,
                                 sk=SECRET_KEY,
                                 prov=None if provider == "http" else provider,
                                 sock=wharfd.unix_socket if provider == "ofi+shm" else None,
                                 url=url)
    p = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=dict(os.environ))
    try:
        out, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(timeout=10)
        # libfabric shm names its region after the pid: a killed process leaves it behind, and
        # a later process given the same pid would find the name taken
        for f in os.listdir("/dev/shm"):
            if f.startswith(f"{p.pid}:"):
                os.unlink(os.path.join("/dev/shm", f))
    assert p.returncode == -signal.SIGKILL, (p.returncode, out, err[-2000:])


def test_save_killed_midway(client, bucket, wharfd, provider, monkeypatch):
    monkeypatch.setenv("WHARF_CKPT_GRACE_S", "0")  # the replaced shards go at the commit
    old = {"w": torch.arange(5.0)}
    wt.save(old, f"s3://{bucket}/run/step-1", client=client)
    run_save_and_die(wharfd, provider, f"s3://{bucket}/run/step-2")
    same(wt.load(f"s3://{bucket}/run/step-1", client=client), old)
    with pytest.raises(wharf.IncompleteCheckpointError) as ei:
        wt.load(f"s3://{bucket}/run/step-2", client=client)
    assert "incomplete" in str(ei.value)
    # a killed overwrite of an existing checkpoint leaves the old one, whole, never a mix;
    # the next save removes the killed one's shards
    run_save_and_die(wharfd, provider, f"s3://{bucket}/run/step-1")
    same(wt.load(f"s3://{bucket}/run/step-1", client=client), old)
    assert len(client.list(bucket, "run/step-1/")) == 1 + 1 + 2  # index, shard, 2 orphans
    rep = wt.save(old, f"s3://{bucket}/run/step-1", client=client)
    assert rep["removed"] == 3  # the old checkpoint's shard and the orphans
    assert sorted(o.key for o in client.list(bucket, "run/step-1/")) == sorted(
        [f"run/step-1/{f}" for f in rep["shards"]] + ["run/step-1/model.safetensors.index.json"])


def test_ranks_without_process_group(client, bucket, monkeypatch):
    monkeypatch.setenv("WHARF_CKPT_GRACE_S", "0")  # the replaced shards go at the commit
    url = f"s3://{bucket}/ddp"
    parts = [{"w": torch.full((4,), float(r)), "rank": r} for r in range(3)]
    for r in range(3):
        rep = wt.save(parts[r], url, client=client, rank=r, world_size=3)
        assert rep["index"] is None
        if r < 2:
            with pytest.raises(wharf.IncompleteCheckpointError):
                wt.commit(url, world_size=3, client=client)
            with pytest.raises(wharf.IncompleteCheckpointError, match="incomplete"):
                wt.load(url, client=client, rank=0)
    wt.commit(url, client=client)  # world size from the rank manifests
    got = wt.load(url, client=client, rank="all")
    same(got, parts)
    same(wt.load(url, client=client, rank=1), parts[1])
    with pytest.raises(wharf.WharfError, match="pass rank="):
        wt.load(url, client=client)
    with pytest.raises(wharf.WharfError, match="not in"):
        wt.load(url, client=client, rank=3)
    # saving again under a save_id: until the new commit the previous checkpoint loads whole,
    # and commit never mixes in the previous save's ranks
    new = [{"w": torch.zeros(2) + r} for r in range(3)]
    wt.save(new[0], url, client=client, rank=0, world_size=3, save_id="step-2")
    same(wt.load(url, client=client, rank="all"), parts)
    wt.save(new[1], url, client=client, rank=1, world_size=3, save_id="step-2")
    with pytest.raises(wharf.IncompleteCheckpointError, match="rank 2.*not 'step-2'"):
        wt.commit(url, world_size=3, client=client, save_id="step-2")
    with pytest.raises(wharf.IncompleteCheckpointError, match="rank 0's manifest is from"):
        wt.commit(url, world_size=3, client=client, save_id="step-3")
    wt.save(new[2], url, client=client, rank=2, world_size=3, save_id="step-2")
    wt.commit(url, world_size=3, client=client, save_id="step-2")
    same(wt.load(url, client=client, rank="all"), new)
    # the previous save's shards went with the commit that replaced them
    index = json.loads(client.get(bucket, "ddp/" + wt.INDEX_NAME))
    assert {o.key for o in client.list(bucket, "ddp/")} == \
        {"ddp/" + f for f in index["weight_map"].values()} | \
        {f"ddp/rank-{r:05d}-of-00003.json" for r in range(3)} | {"ddp/" + wt.INDEX_NAME}


DDP_WORKER = textwrap.dedent("""
    import os, sys, torch, torch.distributed as dist
    sys.path.insert(0, {pydir!r})
    import wharf, wharf.torch as wt
    rank = int(sys.argv[1])
    dist.init_process_group("gloo", init_method="file://" + {store!r}, rank=rank,
                            world_size=2)
    c = wharf.Client({ep!r}, {ak!r}, {sk!r}, provider={prov!r}, unix_socket={sock!r})
    sd = {{"w": torch.full((1000,), float(rank)), "b": torch.arange(rank + 3)}}
    rep = wt.save(sd, {url!r}, client=c, shard_size=3000)
    assert rep["index"], rep
    got = wt.load({url!r}, client=c)  # this rank's part, rank from the process group
    assert torch.equal(got["w"], sd["w"]) and torch.equal(got["b"], sd["b"])
    dist.barrier()
    dist.destroy_process_group()
    print("OK", rank)
""")


def test_ddp_with_process_group(client, bucket, wharfd, provider, tmp_path):
    url = f"s3://{bucket}/pg"
    script = DDP_WORKER.format(pydir=PYDIR, store=str(tmp_path / "store"), ep=wharfd.endpoint,
                               ak=ACCESS_KEY, sk=SECRET_KEY,
                               prov=None if provider == "http" else provider,
                               sock=wharfd.unix_socket if provider == "ofi+shm" else None,
                               url=url)
    procs = [subprocess.Popen([sys.executable, "-c", script, str(r)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE) for r in range(2)]
    outs = []
    for p in procs:
        try:
            o, e = p.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            p.kill()
            o, e = p.communicate()
        outs.append((p.returncode, o, e[-3000:]))
    assert all(rc == 0 for rc, _, _ in outs), outs
    both = wt.load(url, client=client, rank="all")
    assert [float(x["w"][0]) for x in both] == [0.0, 1.0]
    index = json.loads(client.get(bucket, "pg/model.safetensors.index.json"))
    assert index["metadata"]["world_size"] == 2
    assert any(f.startswith("model-rank00001-") for f in index["weight_map"].values())


def test_bad_input(client, bucket):
    for bad in ("http://x/y", "s3://", "s3:///key", "bucket/key", 42):
        with pytest.raises(wharf.WharfError, match="bad URL"):
            wt.save({"a": torch.ones(1)}, bad, client=client)
        with pytest.raises(wharf.WharfError, match="bad URL"):
            wt.load(bad, client=client)
    with pytest.raises(wharf.WharfError, match="no key"):
        wt.save({"a": torch.ones(1)}, f"s3://{bucket}", client=client)
    with pytest.raises(wharf.WharfError, match=r"cannot save .*object.* at \['x'\]\[0\]"):
        wt.save({"x": [object()]}, f"s3://{bucket}/bad", client=client)
    with pytest.raises(wharf.WharfError, match="cannot save .*set"):
        wt.save({"x": {1, 2}}, f"s3://{bucket}/bad", client=client)
    q = torch.quantize_per_tensor(torch.randn(4), 0.1, 0, torch.qint8)
    with pytest.raises(wharf.WharfError, match="quantized"):
        wt.save({"q": q}, f"s3://{bucket}/bad", client=client)
    with pytest.raises(wharf.WharfError, match="to_dense"):
        wt.save({"s": torch.eye(3).to_sparse()}, f"s3://{bucket}/bad", client=client)
    with pytest.raises(wharf.WharfError, match="shard_size"):
        wt.save({"a": torch.ones(1)}, f"s3://{bucket}/bad", client=client, shard_size=0)
    with pytest.raises(wharf.WharfError, match="rank 2 is not in"):
        wt.save({"a": torch.ones(1)}, f"s3://{bucket}/bad", client=client, rank=2,
                world_size=2)
    with pytest.raises(wharf.WharfError, match="must be a wharf.Client"):
        wt.load(f"s3://{bucket}/bad", client="not a client")
    with pytest.raises(wharf.NotFoundError):
        wt.save({"a": torch.ones(1)}, "s3://no-such-bucket-xyz/k", client=client)
    # an HF index is not a checkpoint index
    client.put(bucket, "hf/model.safetensors.index.json",
               json.dumps({"metadata": {"total_size": 0}, "weight_map": {}}).encode())
    with pytest.raises(wharf.SafetensorsError, match="load_safetensors"):
        wt.load(f"s3://{bucket}/hf", client=client)
    client.put(bucket, "junk/model.safetensors.index.json", b"{not json")
    with pytest.raises(wharf.SafetensorsError, match="not valid JSON"):
        wt.load(f"s3://{bucket}/junk", client=client)


def test_default_client_from_env(wharfd, monkeypatch):
    monkeypatch.setenv("WHARF_ENDPOINT", wharfd.endpoint)
    monkeypatch.setenv("WHARF_ACCESS_KEY", ACCESS_KEY)
    monkeypatch.setenv("WHARF_SECRET_KEY", SECRET_KEY)
    monkeypatch.delenv("WHARF_PROVIDER", raising=False)
    wt.set_default_client(None)
    try:
        c = make_client(wharfd, "http")
        b = unique_bucket("pyenv")
        c.create_bucket(b)
        wt.save({"a": torch.ones(2)}, f"s3://{b}/k")
        assert torch.equal(wt.load(f"s3://{b}/k")["a"], torch.ones(2))
    finally:
        wt.set_default_client(None)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here")
def test_cuda_save_and_load_to_device(client, url):
    sd = {"w": torch.randn(64, 64, device="cuda"), "b": torch.arange(10),
          "h": torch.randn(5, device="cuda").half()}
    wt.save(sd, url, client=client)
    got = wt.load(url, client=client, device="cuda")
    for k in sd:
        assert got[k].device.type == "cuda"
        assert torch.equal(got[k].cpu(), sd[k].cpu())


def test_sum64_matches_its_definition_and_wraps():
    """sum64 (the checksum of GPU-staged saves, computed by torch where the tensor is) against
    the plain-Python definition: odd lengths, an odd start, several pieces, and sums past
    2**64 (words of 0xffffffff over 1 MiB wrap s2 many times)."""
    from wharf.torch import checksum as ck
    g = torch.Generator().manual_seed(5)
    data = torch.randint(0, 256, (300001,), dtype=torch.uint8, generator=g)
    old = ck.PIECE
    try:
        ck.PIECE = 4096 * 3  # many pieces
        for lo, hi in [(0, 0), (0, 1), (0, 5), (1, 4099), (3, 300001), (0, 300000)]:
            assert ck.sum64(data[lo:hi]) == ck.sum64_reference(bytes(data[lo:hi].numpy())), \
                (lo, hi)
        ones = torch.full((1 << 20,), 255, dtype=torch.uint8)
        got = ck.sum64(ones)
        assert got == ck.sum64_reference(bytes(ones.numpy()))
        n = 1 << 18  # words of 0xffffffff: s2 = 0xffffffff * n(n+1)/2, past 2**64
        assert got[1] == (0xffffffff * n * (n + 1) // 2) % (1 << 64) and got[2] == 1 << 20
    finally:
        ck.PIECE = old
    a = bytearray(data[:1000].numpy().tobytes())
    base = ck.sum64_reference(a)
    b = bytearray(a)
    b[500] ^= 0x10
    assert ck.sum64_reference(b) != base  # one byte changed
    c = bytearray(a)
    c[0:4], c[4:8] = a[4:8], a[0:4]
    assert a[0:4] != a[4:8] and ck.sum64_reference(c) != base  # two words swapped
    assert ck.sum64_reference(a + b"\0") != base  # a zero byte more


def test_staging_argument(client, url):
    with pytest.raises(wharf.WharfError, match="staging must be"):
        wt.save({"a": torch.ones(2)}, url, client=client, staging="gpu")
    # host tensors: host staging, with a CRC-32 per tensor; "device" says why it could not
    out = wt.save({"a": torch.ones(2)}, url, client=client)
    assert out["staging_memory"] == "host" and out["staging_reason"] is None
    out = wt.save({"a": torch.ones(2)}, url, client=client, staging="device")
    assert out["staging_memory"] == "host" and "no tensor is on a GPU" in out["staging_reason"]
    idx = wt.load(url, client=client, verify=True)
    assert torch.equal(idx["a"], torch.ones(2))
