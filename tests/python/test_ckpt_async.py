# SPDX-License-Identifier: Apache-2.0
"""wharf.torch.save(..., async_=True) / save_async: the future comes back once a snapshot
exists, the upload runs behind it (held back here by a gate on the client's PUTs, so the test
knows nothing was uploaded yet), the tensors may change after the future returns, errors come
out of the future, a second save waits for the one in flight, and the pool is reused."""
import concurrent.futures as cf
import json
import threading
import time

import pytest
import torch

import wharf
import wharf.torch as wt
import wharf.torch.checkpoint as ck
from conftest import make_client
from wharf.errors import CheckpointConflictError
from wharfd import unique_bucket


def state(seed, n=4, numel=1 << 16):
    g = torch.Generator().manual_seed(seed)
    return {"step": seed, "lr": 0.5, "w": [torch.randn(numel, generator=g) for _ in range(n)],
            "ids": torch.arange(100) * seed}


def equal(a, b):
    assert a["step"] == b["step"] and a["lr"] == b["lr"]
    assert all(torch.equal(x, y) for x, y in zip(a["w"], b["w"]))
    assert torch.equal(a["ids"], b["ids"])


class Gate:
    """Holds every put_from of client c until open(); records the keys in order."""

    def __init__(self, c):
        self.c, self.ev, self.keys = c, threading.Event(), []
        real = c.put_from

        def put_from(bucket, key, *a, **kw):
            self.keys.append(key)
            assert self.ev.wait(timeout=60), "gate never opened"
            return real(bucket, key, *a, **kw)
        c.put_from = put_from

    def open(self):
        self.ev.set()


@pytest.fixture()
def gated(wharfd, provider):
    c = make_client(wharfd, provider)
    g = Gate(c)
    b = unique_bucket("pyasync")
    c.create_bucket(b)
    yield c, g, b
    g.open()
    wt.wait_async()
    c.close()


def test_future_and_snapshot(gated):
    c, gate, b = gated
    url = f"s3://{b}/run/last"
    sd = state(1)
    want = {"step": 1, "lr": 0.5, "w": [t.clone() for t in sd["w"]], "ids": sd["ids"].clone()}
    fut = wt.save(sd, url, client=c, shard_size=1 << 18, async_=True)
    assert isinstance(fut, cf.Future) and not fut.done()
    assert fut.save_blocking_s > 0
    assert gate.keys == [] or len(gate.keys) == 1  # nothing uploaded yet
    # the caller owns its tensors again: what it does to them is not in the checkpoint
    for t in sd["w"]:
        t.mul_(-3).add_(7)
    sd["ids"].zero_()
    with pytest.raises(wharf.NotFoundError):
        wt.load(url, client=c)  # not committed while the gate holds the shards
    gate.open()
    rep = fut.result(timeout=60)
    assert rep["async"] and rep["index"].endswith(wt.INDEX_NAME)
    assert rep["save_blocking_s"] == fut.save_blocking_s <= rep["durable_s"]
    assert rep["staging_memory"] == "host" and rep["staging_bytes"] >= rep["bytes"]
    assert 0 < rep["staging_budget"] <= 2 * wt.default_staging_budget()
    assert len(rep["shards"]) >= 4
    equal(wt.load(url, client=c, verify=True), want)


def test_second_save_waits_for_the_first(gated):
    """The rule: a save (async or not) started while an async one is in flight waits until
    that one is done; their uploads never interleave."""
    c, gate, b = gated
    a_url, b_url = f"s3://{b}/a", f"s3://{b}/b"
    fut = wt.save_async(state(1), a_url, client=c)
    out = {}
    second = threading.Thread(target=lambda: out.setdefault(
        "rep", wt.save(state(2), b_url, client=c)))
    second.start()
    time.sleep(0.5)
    assert second.is_alive(), "the second save did not wait for the first"
    assert all(k.startswith("a/") for k in gate.keys), gate.keys
    gate.open()
    fut.result(timeout=60)
    second.join(timeout=60)
    assert not second.is_alive()
    assert out["rep"]["waited_s"] > 0.3
    first_b = min(i for i, k in enumerate(gate.keys) if k.startswith("b/"))
    assert all(k.startswith("a/") for k in gate.keys[:first_b])
    assert all(k.startswith("b/") for k in gate.keys[first_b:])
    equal(wt.load(a_url, client=c), state(1))
    equal(wt.load(b_url, client=c), state(2))
    # and two async saves in a row: the second waits the same way, then reuses the pool
    f1 = wt.save_async(state(3), a_url, client=c)
    f2 = wt.save_async(state(4), a_url, client=c)
    r2 = f2.result(timeout=60)
    r1 = f1.result(timeout=60)
    assert r1["staging"] in ("new", "reused") and r2["staging"] == "reused"
    assert r2["waited_s"] >= 0 and r1["index"] == r2["index"]
    equal(wt.load(a_url, client=c), state(4))


def test_done_callback_may_save_again(client, bucket):
    """The slot is free before the future completes: a done-callback (which runs in the
    upload thread) that starts the next save does not wait for itself."""
    url = f"s3://{bucket}/cb"
    out, done = {}, threading.Event()

    def again(f):
        out["first"] = f.result()
        out["second"] = wt.save(state(6), url, client=client)
        done.set()

    wt.save_async(state(5), url, client=client).add_done_callback(again)
    assert done.wait(timeout=60), "the callback's save never finished"
    assert out["second"]["index"]
    equal(wt.load(url, client=client), state(6))


def test_errors_come_out_of_the_future(client, bucket):
    # the upload fails (no such bucket): the future carries the error, the call did not
    fut = wt.save_async(state(1), f"s3://nosuch-{unique_bucket('x')}/k", client=client)
    with pytest.raises(wharf.NotFoundError):
        fut.result(timeout=60)
    assert isinstance(fut.exception(), wharf.WharfError)
    # planning errors and the budget are the call's own, before anything is copied or sent
    with pytest.raises(wharf.WharfError, match="cannot|refused|not"):
        wt.save_async({"x": object()}, f"s3://{bucket}/bad", client=client)
    with pytest.raises(wharf.WharfError, match="budget") as ei:
        wt.save_async(state(1), f"s3://{bucket}/big", client=client, staging_budget=4096)
    assert ei.value.status_name == "WHARF_ERR_NOMEM"
    with pytest.raises(wharf.WharfError, match="staging_budget must be a positive int"):
        wt.save_async(state(1), f"s3://{bucket}/big", client=client, staging_budget=0)
    assert client.list(bucket, "big/") == []
    # a failed async save frees the slot: the next one runs
    rep = wt.save_async(state(2), f"s3://{bucket}/ok", client=client).result(timeout=60)
    assert rep["index"]
    equal(wt.load(f"s3://{bucket}/ok", client=client), state(2))


def test_async_overwrite_conflict(wharfd, http_client, monkeypatch):
    """An async save whose base changed under it (another process committed a save to the
    URL meanwhile) fails through its future with CheckpointConflictError; the other
    checkpoint stands, whole."""
    from ckpt_crash_worker import state as other_state
    from test_ckpt_crash import run_worker
    b = unique_bucket("pyasync")
    http_client.create_bucket(b)
    url = f"s3://{b}/run"
    wt.save(state(1), url, client=http_client)
    real = ck._begin
    started, go = threading.Event(), threading.Event()

    def slow_begin(*a, **kw):
        r = real(*a, **kw)
        started.set()
        assert go.wait(timeout=60)
        return r

    monkeypatch.setattr(ck, "_begin", slow_begin)
    fut = wt.save_async(state(2), url, client=http_client)
    try:
        assert started.wait(timeout=60)
        rc, _, out, err = run_worker(wharfd, "http", url, 3, "sync", 0, "before")
        assert rc == 0 and "DONE" in out, (rc, out, err[-2000:])
    finally:
        go.set()
    with pytest.raises(CheckpointConflictError, match="another save committed"):
        fut.result(timeout=60)
    got = wt.load(url, client=http_client, verify=True)
    want = other_state(3)
    assert got["step"] == 3 and all(torch.equal(got["model"][k], want["model"][k])
                                    for k in want["model"])


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_async_cuda_snapshot(client, bucket):
    """GPU tensors: the snapshot is taken on the device (or in pinned host memory where the
    direct path is not there, reported in staging_reason); changing them after the future
    returns changes nothing saved."""
    url = f"s3://{bucket}/gpu"
    sd = {"w": [t.cuda() for t in state(5)["w"]], "step": 5}
    want = [t.clone() for t in sd["w"]]
    fut = wt.save_async(sd, url, client=client)
    for t in sd["w"]:
        t.fill_(float("nan"))
    rep = fut.result(timeout=120)
    assert rep["staging_memory"].startswith("cuda") or rep["staging_reason"], rep
    got = wt.load(url, client=client, device="cuda", verify=True)
    assert all(torch.equal(a, b) for a, b in zip(got["w"], want))
    assert rep["save_blocking_s"] <= rep["durable_s"]


def test_async_ranks_without_process_group(client, bucket, monkeypatch):
    """Several ranks without a process group: each rank's future resolves once its shards and
    manifest are written (index None); commit() then makes the checkpoint, and the one it
    replaced loads until then."""
    monkeypatch.setenv("WHARF_CKPT_GRACE_S", "0")  # the replaced shards go at the commit
    url = f"s3://{bucket}/ddp"
    old = [{"w": torch.full((8,), -1.0 - r)} for r in range(2)]
    for r in range(2):
        wt.save(old[r], url, client=client, rank=r, world_size=2)
    wt.commit(url, world_size=2, client=client)
    parts = [{"w": torch.arange(8.0) + 10 * r, "rank": r} for r in range(2)]
    futs = [wt.save_async(parts[r], url, client=client, rank=r, world_size=2, save_id="s2")
            for r in range(2)]
    reps = [f.result(timeout=60) for f in futs]
    assert all(rep["index"] is None for rep in reps)
    got = wt.load(url, client=client, rank="all")
    assert all(torch.equal(g["w"], o["w"]) for g, o in zip(got, old))
    wt.commit(url, world_size=2, client=client, save_id="s2")
    got = wt.load(url, client=client, rank="all")
    assert [g["rank"] for g in got] == [0, 1]
    assert all(torch.equal(g["w"], p["w"]) for g, p in zip(got, parts))
    index = json.loads(client.get(bucket, "ddp/" + wt.INDEX_NAME))
    assert {o.key for o in client.list(bucket, "ddp/")} == \
        {"ddp/" + f for f in index["weight_map"].values()} | \
        {f"ddp/rank-{r:05d}-of-00002.json" for r in range(2)} | {"ddp/" + wt.INDEX_NAME}
