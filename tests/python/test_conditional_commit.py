# SPDX-License-Identifier: Apache-2.0
"""Conditional writes through libwharf and what wharf.torch builds on them: Client.put with
if_none_match / if_match over every transport (RDMA shm and tcp, HTTP; single PUT and
multipart), and the checkpoint commit points (wharf.torch.save's index, the DCP writer's
.metadata, hf.save_pretrained's index), which two writers saving to one URL at once cannot
both pass: the second gets CheckpointConflictError and the first one's checkpoint loads
whole."""
import threading
import time

import pytest
import torch

import wharf
import wharf.torch as wt
from conftest import make_client
from wharf.errors import CheckpointConflictError, NotFoundError, PreconditionFailedError
from wharfd import md5_hex, unique_bucket

MIB = 1024 * 1024


def test_put_if_none_match(client, bucket):
    rep = client.put(bucket, "k", b"first", if_none_match=True)
    assert rep.etag == f'"{md5_hex(b"first")}"'
    with pytest.raises(PreconditionFailedError, match="PreconditionFailed"):
        client.put(bucket, "k", b"second", if_none_match=True)
    assert client.get(bucket, "k") == b"first"


def test_put_if_match(client, bucket):
    with pytest.raises(NotFoundError):
        client.put(bucket, "m", b"x", if_match='"' + md5_hex(b"x") + '"')
    e1 = client.put(bucket, "m", b"v1").etag
    e2 = client.put(bucket, "m", b"v2", if_match=e1).etag
    with pytest.raises(PreconditionFailedError):
        client.put(bucket, "m", b"v3", if_match=e1)
    assert client.get(bucket, "m") == b"v2"
    client.put(bucket, "m", b"v3", if_match=e2)
    assert client.get(bucket, "m") == b"v3"


def test_multipart_put_conditions(wharfd, provider):
    """A multipart PUT carries the condition on its completion; a refused one is aborted."""
    c = make_client(wharfd, provider, multipart_threshold=5 * MIB, part_size=5 * MIB)
    try:
        b = unique_bucket("pymp")
        c.create_bucket(b)
        data = bytes(range(256)) * (11 * MIB // 256)
        buf = bytearray(data)
        rep = c.put_from(b, "big", buf, if_none_match=True)
        assert rep.etag.endswith('-3"')
        with pytest.raises(PreconditionFailedError):
            c.put_from(b, "big", bytearray(b"z" * len(data)), if_none_match=True)
        assert c.get(b, "big") == data
        c.put_from(b, "big", bytearray(b"y" * len(data)), if_match=rep.etag)
        assert c.get(b, "big", length=4) == b"yyyy"
    finally:
        c.close()


def _race(n, fn):
    """n threads run fn(i) after a barrier; returns [result or exception]."""
    barrier = threading.Barrier(n)
    out = [None] * n

    def run(i):
        barrier.wait(timeout=30)
        try:
            out[i] = fn(i)
        except BaseException as e:  # noqa: BLE001 (collected and checked by the caller;
            out[i] = e              # DCP's CheckpointException is a BaseException)

    ts = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=120)
    assert all(not t.is_alive() for t in ts), "a writer hung"
    return out


def test_put_race_one_winner(client, bucket):
    for rnd in range(10):
        out = _race(4, lambda i, rnd=rnd: client.put(bucket, f"r{rnd}", b"w%d" % i,
                                                     if_none_match=True))
        wins = [i for i, r in enumerate(out) if isinstance(r, wharf.Report)]
        assert len(wins) == 1, out
        assert all(isinstance(r, PreconditionFailedError) for i, r in enumerate(out)
                   if i != wins[0]), out
        assert client.get(bucket, f"r{rnd}") == b"w%d" % wins[0]


def _state(seed):
    g = torch.Generator().manual_seed(seed)
    return {"w": torch.randn(64, 32, generator=g), "b": torch.randn(32, generator=g)}


@pytest.mark.parametrize("first", [True, False], ids=["first-commit", "replace"])
def test_save_index_race(http_client, monkeypatch, first):
    """Two wharf.torch.save to one URL reach their commit together: exactly one commits; the
    other gets CheckpointConflictError, and the winner's checkpoint loads whole (each save's
    shards carry its own generation, so the loser overwrote nothing)."""
    import wharf.torch.checkpoint as ck
    monkeypatch.setenv("WHARF_CKPT_GRACE_S", "0")  # the replaced shards go at the commit
    b = unique_bucket("pyck")
    http_client.create_bucket(b)
    url = f"s3://{b}/run/step-1"
    if not first:
        wt.save(_state(7), url, client=http_client, transport="http")
    real = ck._write_index
    barrier = threading.Barrier(2)

    def gated(*a, **kw):
        barrier.wait(timeout=60)  # both saves have written their shards
        return real(*a, **kw)

    monkeypatch.setattr(ck, "_write_index", gated)
    out = _race(2, lambda i: wt.save(_state(i), url, client=http_client, transport="http"))
    ok = [i for i, r in enumerate(out) if isinstance(r, dict)]
    bad = [r for r in out if isinstance(r, Exception)]
    assert len(ok) == 1 and len(bad) == 1, out
    assert isinstance(bad[0], CheckpointConflictError), bad[0]
    assert "another save committed" in str(bad[0])
    monkeypatch.setattr(ck, "_write_index", real)
    want = _state(ok[0])
    got = wt.load(url, client=http_client, verify=True)
    assert all(torch.equal(got[k], want[k]) for k in want)
    # the loser's shards are orphans; the next save removes them
    rep = wt.save(_state(9), url, client=http_client, transport="http")
    assert sorted(o.key for o in http_client.list(b, "run/step-1/")) == sorted(
        [f"run/step-1/{f}" for f in rep["shards"]] + ["run/step-1/" + wt.INDEX_NAME])


def test_cleanup_spares_a_later_save(http_client, monkeypatch):
    """A save's cleanup (after its commit) deletes only what was there before it began: the
    shards of a save that started after its commit survive, and that save loads whole."""
    import wharf.torch.checkpoint as ck
    monkeypatch.setenv("WHARF_CKPT_GRACE_S", "0")  # the replaced shards go at the commit
    b = unique_bucket("pyck")
    http_client.create_bucket(b)
    url = f"s3://{b}/run/last"
    wt.save(_state(1), url, client=http_client, transport="http")
    real = ck._cleanup
    committed, go = threading.Event(), threading.Event()

    def slow_cleanup(*a, **kw):
        if threading.current_thread().name == "first":
            committed.set()
            assert go.wait(timeout=60)
        return real(*a, **kw)

    monkeypatch.setattr(ck, "_cleanup", slow_cleanup)
    out = {}
    t = threading.Thread(target=lambda: out.setdefault("a", wt.save(
        _state(2), url, client=http_client, transport="http")), name="first")
    t.start()
    assert committed.wait(timeout=60)
    rep_b = wt.save(_state(3), url, client=http_client, transport="http", shard_size=4096)
    go.set()
    t.join(timeout=60)
    assert not t.is_alive() and out["a"]["index"]
    got = wt.load(url, client=http_client, verify=True)
    assert all(torch.equal(got[k], _state(3)[k]) for k in got)
    assert {o.key for o in http_client.list(b, "run/last/")} == \
        {f"run/last/{f}" for f in rep_b["shards"]} | {"run/last/" + wt.INDEX_NAME}


try:
    import torch.distributed.checkpoint as dcp
    from wharf.torch.dcp import WharfStorageWriter, WharfStorageReader
    HAVE_DCP = True
except ImportError:
    HAVE_DCP = False


@pytest.mark.skipif(not HAVE_DCP, reason="torch has no usable torch.distributed.checkpoint")
@pytest.mark.parametrize("first", [True, False], ids=["first-commit", "replace"])
def test_dcp_metadata_race(http_client, first):
    """Two DCP saves to one URL (each started before either committed): one .metadata wins;
    the other save fails with CheckpointConflictError, and the winner's checkpoint loads."""
    b = unique_bucket("pydcp")
    http_client.create_bucket(b)
    url = f"s3://{b}/dcp/step-1"
    if not first:
        dcp.save(_state(7), storage_writer=WharfStorageWriter(url, client=http_client,
                                                              transport="http"))
    barrier = threading.Barrier(2)

    class Gated(WharfStorageWriter):
        def finish(self, metadata, results):
            barrier.wait(timeout=60)  # both have planned and written their objects
            return super().finish(metadata, results)

    # dcp.save returns the checkpoint's Metadata on newer torch, None on older: the result
    # is the writer's index either way.
    out = _race(2, lambda i: (dcp.save(_state(i), storage_writer=Gated(
        url, client=http_client, transport="http")), i)[1])
    wins = [r for r in out if isinstance(r, int)]
    errs = [r for r in out if isinstance(r, BaseException)]
    assert len(wins) == 1 and len(errs) == 1, out
    found = [errs[0]] + [f[0] if isinstance(f, tuple) else f
                         for f in getattr(errs[0], "failures", {}).values()]
    assert any(isinstance(x, CheckpointConflictError) for x in found), repr(errs[0])
    assert "another writer committed" in str(errs[0])
    want = _state(wins[0])
    got = {k: torch.zeros_like(v) for k, v in want.items()}
    dcp.load(got, storage_reader=WharfStorageReader(url, client=http_client))
    for k in want:
        assert torch.equal(got[k], want[k]), k


def _hf_state(v, n=6):
    return {f"w{i}": torch.full((256,), float(v)) for i in range(n)}


def test_save_pretrained_index_race(http_client, monkeypatch):
    """Two hf.save_pretrained to one URL (shard layouts that share no name) reach their
    index commit together: the index is created with If-None-Match: *, so exactly one
    commits, the other gets CheckpointConflictError, and the winner's snapshot loads whole."""
    from wharf.torch import hf
    b = unique_bucket("pyhf")
    http_client.create_bucket(b)
    url = f"s3://{b}/hf/snap"
    real = wharf.Client.put
    barrier = threading.Barrier(2)

    def gated(self, bucket, key, *a, **kw):
        if key.endswith(wt.INDEX_NAME):
            barrier.wait(timeout=60)  # both saves have written their shards
        return real(self, bucket, key, *a, **kw)

    monkeypatch.setattr(wharf.Client, "put", gated)
    sizes = [3 * 1024, 2 * 1024]  # 2 and 3 shards of 1 KiB tensors
    out = _race(2, lambda i: hf.save_pretrained(_hf_state(i + 1), url, client=http_client,
                                                max_shard_size=sizes[i]))
    monkeypatch.setattr(wharf.Client, "put", real)
    ok = [i for i, r in enumerate(out) if isinstance(r, dict)]
    bad = [r for r in out if isinstance(r, Exception)]
    assert len(ok) == 1 and len(bad) == 1, out
    assert isinstance(bad[0], CheckpointConflictError), bad[0]
    assert "another save committed" in str(bad[0])
    got = hf.load_safetensors(url, client=http_client)
    want = _hf_state(ok[0] + 1)
    assert sorted(got) == sorted(want) and all(torch.equal(got[k], want[k]) for k in want)


def test_save_pretrained_shards_written_over(http_client, monkeypatch):
    """save_pretrained A has written its shards when save B (same shard names) runs whole and
    commits: A must not commit an index over B's shards (a snapshot mixing two saves); it gets
    CheckpointConflictError and B's snapshot loads whole."""
    from wharf.torch import hf
    b = unique_bucket("pyhf")
    http_client.create_bucket(b)
    url = f"s3://{b}/hf/snap"
    real_put, real_stat = wharf.Client.put, wharf.Client.stat
    b_done, held = threading.Event(), []

    def hold(key):  # A, on its first step after its shards (a check or the index PUT)
        if threading.current_thread().name == "A" and not held and (
                key.endswith(wt.INDEX_NAME) or key.endswith(".safetensors")):
            held.append(key)
            assert b_done.wait(timeout=60)

    def put(self, bucket, key, *a, **kw):
        hold(key)
        return real_put(self, bucket, key, *a, **kw)

    def stat(self, bucket, key, *a, **kw):
        hold(key)
        return real_stat(self, bucket, key, *a, **kw)

    monkeypatch.setattr(wharf.Client, "put", put)
    monkeypatch.setattr(wharf.Client, "stat", stat)
    out = {}

    def save_a():
        try:
            out["a"] = hf.save_pretrained(_hf_state(1), url, client=http_client,
                                          max_shard_size=2 * 1024)
        except Exception as e:  # noqa: BLE001 (checked below)
            out["a"] = e
    t = threading.Thread(target=save_a, name="A")
    t.start()
    deadline = time.monotonic() + 60
    while not held and t.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert held, out
    out["b"] = hf.save_pretrained(_hf_state(2), url, client=http_client,
                                  max_shard_size=2 * 1024)
    b_done.set()
    t.join(timeout=60)
    assert not t.is_alive()
    monkeypatch.setattr(wharf.Client, "put", real_put)
    monkeypatch.setattr(wharf.Client, "stat", real_stat)
    assert isinstance(out["a"], CheckpointConflictError), out["a"]
    assert "written over" in str(out["a"])
    got = hf.load_safetensors(url, client=http_client)
    assert all(torch.equal(got[k], v) for k, v in _hf_state(2).items())
