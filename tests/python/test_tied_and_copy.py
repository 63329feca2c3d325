# SPDX-License-Identifier: Apache-2.0
"""Loaded tensors and their memory: tied weights (two names, one memory) are saved once and
come back tied; copy=True gives every loaded tensor a storage of its own, so one tensor kept
(or torch.save'd) does not hold the whole arena. Against a real wharfd, every transport."""
import io
import json

import numpy as np
import pytest
import torch

import st_spec
import wharf
import wharf.safetensors
import wharf.torch as wt
from wharf.torch import fetch as wfetch


class Tied(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(64, 16)
        self.mid = torch.nn.Linear(16, 16)
        self.head = torch.nn.Linear(16, 64, bias=False)
        self.head.weight = self.emb.weight     # tied: one Parameter under two names


def test_tied_weights_saved_once_and_tied_on_load(client, bucket):
    m = Tied()
    sd = m.state_dict()
    assert sd["emb.weight"] is not sd["head.weight"]          # two objects, one memory
    url = f"s3://{bucket}/tied"
    wt.save({"model": sd, "step": 3}, url, client=client)
    idx = json.loads(client.get(bucket, "tied/model.safetensors.index.json"))
    names = set(idx["weight_map"])
    assert "model.emb.weight" in names and "model.head.weight" not in names
    stored = sum(t.numel() * 4 for k, t in sd.items() if k != "head.weight")
    data = sum(wharf.safetensors.read_header(client, bucket, f"tied/{f}").data_len
               for f in set(idx["weight_map"].values()))
    assert data == stored                                      # the tied weight once
    got = wt.load(url, client=client)["model"]
    assert got["emb.weight"] is got["head.weight"]
    for k in sd:
        assert torch.equal(got[k], sd[k]), k
    m2 = Tied()
    m2.load_state_dict(got)
    assert m2.head.weight is m2.emb.weight                     # still one Parameter
    # the same memory seen differently stays two tensors (a transpose, a conjugate)
    w = torch.randn(4, 6, dtype=torch.complex64)
    wt.save({"w": w, "t": w.t(), "c": w.conj(), "w2": w.view(4, 6)}, url, client=client)
    got = wt.load(url, client=client)
    assert got["w"] is got["w2"] and got["t"] is not got["w"]
    assert torch.equal(got["t"], w.t()) and torch.equal(got["c"], w.conj().resolve_conj())


def big_snapshot(client, bucket, key):
    rng = np.random.default_rng(0)
    T = {"big": ("F32", (16, 1 << 18), rng.standard_normal(16 << 18).astype("<f4").tobytes())}
    for i in range(40):   # small tensors: one run, one GET
        T[f"small.{i}"] = ("F32", (64, 64), rng.standard_normal(64 * 64).astype("<f4").tobytes())
    T["tiny"] = ("BF16", (3,), b"\x00\x3f" * 3)
    T["empty"] = ("F32", (0, 2), b"")
    client.put(bucket, key, st_spec.serialize(T))
    return T


def test_copy_gives_each_tensor_its_own_storage(client, bucket):
    T = big_snapshot(client, bucket, "m/model.safetensors")
    url = f"s3://{bucket}/m/model.safetensors"
    views = wt.load_safetensors(url, client=client)
    rep = {}
    own = wt.load_safetensors(url, client=client, copy=True, report=rep)
    assert rep["arena"] == "host (a storage per tensor)"
    assert set(own) == set(views) == set(T)
    for k in T:
        assert torch.equal(own[k], views[k]), k
        if own[k].numel():
            assert own[k].untyped_storage().nbytes() == len(T[k][2]) if hasattr(
                own[k], "untyped_storage") else own[k].storage().nbytes() == len(T[k][2])
    arena = views["small.3"].storage().nbytes()
    assert arena >= sum(len(v[2]) for v in T.values())
    # what torch.save of one 16 KiB tensor writes: the whole arena, or its own bytes
    one_view, one_own = io.BytesIO(), io.BytesIO()
    torch.save(views["small.3"], one_view)
    torch.save(own["small.3"], one_own)
    assert one_view.tell() > arena
    assert one_own.tell() < 64 * 64 * 4 + 4096
    assert own["tiny"].dtype == torch.bfloat16 and own["empty"].shape == (0, 2)


def test_copy_jobs_and_pieces(client, bucket, monkeypatch):
    """Small PIECE and SMALL: large tensors in several ranged GETs, runs split; same bytes."""
    T = big_snapshot(client, bucket, "p/model.safetensors")
    monkeypatch.setattr(wfetch, "PIECE", 1 << 20)
    monkeypatch.setattr(wfetch, "SMALL", 32 << 10)
    monkeypatch.setattr(wfetch, "RUN", 100 << 10)
    rep = {}
    got = wt.load_safetensors(f"s3://{bucket}/p/model.safetensors", client=client, copy=True,
                              report=rep)
    # big: 16 pieces; 40 x 16 KiB in runs of at most 100 KiB: 7 runs; tiny shares the last
    assert len(rep["reports"]) == 16 + 7
    for k, (dt, shape, raw) in T.items():
        b = got[k].contiguous().reshape(-1).view(torch.uint8).numpy().tobytes() \
            if got[k].numel() else b""
        assert b == raw, k


def test_load_pretrained_copy(client, bucket):
    m = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Linear(8, 2))
    sd = {k: v.clone() for k, v in m.state_dict().items()}
    client.put(bucket, "lp/model.safetensors", st_spec.serialize(
        {k: ("F32", tuple(v.shape), v.numpy().astype("<f4").tobytes()) for k, v in sd.items()}))
    m2 = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Linear(8, 2))
    wt.load_pretrained(f"s3://{bucket}/lp", model=m2, client=client, copy=True)
    ptrs = {p.storage().data_ptr() for p in m2.parameters()}
    assert len(ptrs) == 4
    for k, v in m2.state_dict().items():
        assert torch.equal(v, sd[k])


def test_copy_staged_pieces_cross_tensors(client, bucket, monkeypatch):
    """A run of small tensors fetched in staging pieces smaller than the run: tensors that
    straddle two pieces are assembled from both (the path every GPU-bound tensor takes)."""
    rng = np.random.default_rng(5)
    T = {f"t{i:02d}": ("F32", (61 + i,), rng.standard_normal(61 + i).astype("<f4").tobytes())
         for i in range(30)}
    T["i8"] = ("I8", (7,), bytes(range(7)))
    client.put(bucket, "s/model.safetensors", st_spec.serialize(T))
    monkeypatch.setattr(wfetch, "PIECE", 1000)
    rep = {}
    got = wt.load_safetensors(f"s3://{bucket}/s/model.safetensors", client=client, copy=True,
                              report=rep)
    total = sum(len(v[2]) for v in T.values())
    assert len(rep["reports"]) == -(-total // 1000) and rep["staging_bytes"] > 0
    for k, (dt, shape, b) in T.items():
        assert got[k].contiguous().view(torch.uint8).numpy().tobytes() == b, k


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_copy_into_cuda(wharfd):
    """copy=True into GPU memory: a storage per tensor on the device, through host staging."""
    from conftest import make_client
    from wharfd import unique_bucket
    c = make_client(wharfd, "ofi+shm")
    b = unique_bucket("cpcuda")
    c.create_bucket(b)
    T = big_snapshot(c, b, "m/model.safetensors")
    rep = {}
    got = wt.load_safetensors(f"s3://{b}/m/model.safetensors", client=c, device="cuda",
                              copy=True, report=rep)
    ref = wt.load_safetensors(f"s3://{b}/m/model.safetensors", client=c)
    assert rep["arena"].endswith("(a storage per tensor)")
    for k in T:
        assert got[k].device.type == "cuda" and torch.equal(got[k].cpu(), ref[k]), k
        if got[k].numel():
            assert got[k].untyped_storage().nbytes() == len(T[k][2]), k
    c.close()
