# SPDX-License-Identifier: Apache-2.0
"""Readers racing a writer that overwrites the same URL: a load returns the old or the new
checkpoint, whole (every tensor holds the same save's value), never NoSuchKey or a short read.
The writer (race_worker.py) loops in its own process for a bounded time while this process
loads in a bounded loop: wharf.torch.save/load, save_pretrained/load_safetensors, and DCP
(dcp.save/dcp.load through WharfStorageWriter/Reader, one process each, no process group;
skipped where torch has no usable torch.distributed.checkpoint)."""
import json
import os
import subprocess
import sys
import time

import pytest
import torch

import wharf
import wharf.torch as wt
from wharf.torch import hf
from wharfd import ACCESS_KEY, SECRET_KEY, unique_bucket

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from race_worker import NUMEL, TENSORS  # noqa: E402

try:
    import torch.distributed.checkpoint as dcp
    from wharf.torch.dcp import WharfStorageReader, WharfStorageWriter, wharf_error
    HAVE_DCP, WHY = True, ""
except ImportError as e:  # torch < 2.2 (Debian's 1.13), or no distributed
    HAVE_DCP, WHY = False, f"torch {torch.__version__} has no usable DCP ({e})"
need_dcp = pytest.mark.skipif(not HAVE_DCP, reason=WHY)

WORKER = os.path.join(HERE, "race_worker.py")
SECONDS = 6
MAX_LOADS = 400


def _race(srv, client, url, mode, load, grace_s=None, allowed=None, raced=None):
    """(loads that returned, failures [(exception type, message)], saves made); errors of
    the allowed types go to raced instead."""
    if mode == "ckpt":  # a first checkpoint, so that every load has one to find
        wt.save({f"w{i}": torch.zeros(4) for i in range(TENSORS)}, url, client=client)
    elif mode == "dcp":
        dcp.save({f"w{i}": torch.zeros(NUMEL) for i in range(TENSORS)},
                 storage_writer=WharfStorageWriter(url, client=client))
    else:
        hf.save_pretrained({f"w{i}": torch.zeros(4) for i in range(TENSORS)}, url,
                           client=client)
    arg = {"endpoint": srv.endpoint, "ak": ACCESS_KEY, "sk": SECRET_KEY, "url": url,
           "mode": mode, "seconds": SECONDS, "max_saves": 2000, "grace_s": grace_s}
    p = subprocess.Popen([sys.executable, WORKER, json.dumps(arg)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=dict(os.environ))
    ok, bad = 0, []
    raced = [] if raced is None else raced
    deadline = time.monotonic() + SECONDS + 30
    try:
        for _ in range(MAX_LOADS):
            if p.poll() is not None or time.monotonic() > deadline:
                break
            try:
                sd = load(url)
            except wharf.WharfError as e:
                if allowed and isinstance(e, allowed):
                    raced.append(str(e)[:300])
                    continue
                bad.append((type(e).__name__, str(e)[:300]))
                continue
            vals = {float(sd[f"w{i}"][0]) for i in range(TENSORS)}
            if not vals <= {float(n) for n in range(2001)}:
                bad.append(("foreign", f"values {sorted(vals)} are no save's"))
                continue
            whole = all(bool((sd[f"w{i}"] == sd[f"w{i}"][0]).all()) for i in range(TENSORS))
            if len(vals) != 1 or not whole:
                bad.append(("mixed", f"values {sorted(vals)}, each tensor uniform: {whole}"))
                continue
            ok += 1
        out, err = p.communicate(timeout=SECONDS + 60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(timeout=10)
    assert p.returncode == 0, err.decode()[-2000:]
    return ok, bad, int(out.split()[-1])


@pytest.fixture()
def race_bucket(http_client):
    name = unique_bucket("race")
    http_client.create_bucket(name)
    return name


def test_load_races_save(wharfd, http_client, race_bucket):
    bucket = race_bucket
    url = f"s3://{bucket}/race/ckpt"
    ok, bad, saves = _race(wharfd, http_client, url, "ckpt",
                           lambda u: wt.load(u, client=http_client))
    assert saves >= 3 and ok >= 10, (saves, ok, bad[:3])
    assert not bad, f"{len(bad)} of {ok + len(bad)} loads failed: {bad[:3]}"


def test_load_safetensors_races_save_pretrained(wharfd, http_client, race_bucket):
    bucket = race_bucket
    url = f"s3://{bucket}/race/hf"
    ok, bad, saves = _race(wharfd, http_client, url, "hf",
                           lambda u: hf.load_safetensors(u, client=http_client))
    assert saves >= 3 and ok >= 10, (saves, ok, bad[:3])
    assert not bad, f"{len(bad)} of {ok + len(bad)} loads failed: {bad[:3]}"


def test_without_grace_a_load_restarts_or_names_the_race(wharfd, http_client, race_bucket):
    """grace_s=0: the replaced shards go at the commit, so loads do race the deletes; each
    returns a whole checkpoint (after a restart on the new index) or raises
    CheckpointChangedError, never NoSuchKey or a short read."""
    url = f"s3://{race_bucket}/race/nograce"
    raced, restarts = [], []

    def load(u):
        rep = {}
        sd = wt.load(u, client=http_client, report=rep)
        restarts.append(rep["restarts"])
        return sd
    ok, bad, saves = _race(wharfd, http_client, url, "ckpt", load, grace_s=0,
                           allowed=wharf.CheckpointChangedError, raced=raced)
    assert saves >= 3 and ok >= 10, (saves, ok, bad[:3])
    assert not bad, f"{len(bad)} of {ok + len(bad) + len(raced)} loads failed: {bad[:3]}"
    print(f"loads {ok} (restarted {sum(1 for r in restarts if r)}), named the race "
          f"{len(raced)}, saves {saves}")


def test_replaced_shards_retire_for_grace_s(http_client, race_bucket, monkeypatch):
    url = f"s3://{race_bucket}/retire"
    pre = "retire/"

    def shards():
        return {o.key[len(pre):] for o in http_client.list(race_bucket, pre)
                if o.key.endswith(".safetensors")}
    r1 = wt.save({"w": torch.full((8,), 1.0)}, url, client=http_client, grace_s=60)
    r2 = wt.save({"w": torch.full((8,), 2.0)}, url, client=http_client, grace_s=60)
    assert r2["removed"] == 0 and shards() == set(r1["shards"]) | set(r2["shards"])
    idx = json.loads(http_client.get(race_bucket, pre + "model.safetensors.index.json"))
    assert set(idx["metadata"]["retired"]) == set(r1["shards"])
    assert float(wt.load(url, client=http_client)["w"][0]) == 2.0
    time.sleep(0.6)
    # the first save more than grace_s after r1's shards were retired deletes them; r2's,
    # retired by this save, stay
    r3 = wt.save({"w": torch.full((8,), 3.0)}, url, client=http_client, grace_s=0.5)
    assert r3["removed"] == len(r1["shards"])
    assert shards() == set(r2["shards"]) | set(r3["shards"])
    monkeypatch.setenv("WHARF_CKPT_GRACE_S", "0")
    r4 = wt.save({"w": torch.full((8,), 4.0)}, url, client=http_client)
    assert shards() == set(r4["shards"]) and r4["removed"] == 2
    idx = json.loads(http_client.get(race_bucket, pre + "model.safetensors.index.json"))
    assert "retired" not in idx["metadata"]
    monkeypatch.setenv("WHARF_CKPT_GRACE_S", "soon")
    with pytest.raises(wharf.WharfError, match="WHARF_CKPT_GRACE_S"):
        wt.save({"w": torch.zeros(1)}, url, client=http_client)
    with pytest.raises(wharf.WharfError, match="grace_s"):
        wt.save({"w": torch.zeros(1)}, url, client=http_client, grace_s=-1)


def _dcp_load(client, restarts=None):
    """dcp.load of the race's state into fresh tensors (DCP wraps the reader's error in a
    CheckpointException: the WharfError in it is raised)."""
    def load(u):
        sd = {f"w{i}": torch.full((NUMEL,), -1.0) for i in range(TENSORS)}
        r = WharfStorageReader(u, client=client)
        try:
            dcp.load(sd, storage_reader=r)
        except BaseException as e:  # noqa: B902 (a CheckpointException is no Exception)
            w = wharf_error(e)
            if w is None:
                raise
            raise w from e
        if restarts is not None:
            restarts.append(r.last_report.get("restarts", 0))
        return sd
    return load


@need_dcp
def test_dcp_load_races_save(wharfd, http_client, race_bucket):
    """dcp.load in a loop while another process saves DCP checkpoints to the same URL: the
    replaced objects are retired for grace_s (60 s), so every load is whole, none fails."""
    url = f"s3://{race_bucket}/race/dcp"
    ok, bad, saves = _race(wharfd, http_client, url, "dcp", _dcp_load(http_client))
    assert saves >= 3 and ok >= 10, (saves, ok, bad[:3])
    assert not bad, f"{len(bad)} of {ok + len(bad)} loads failed: {bad[:3]}"


@need_dcp
def test_dcp_without_grace_a_load_restarts_or_names_the_race(wharfd, http_client,
                                                             race_bucket):
    """grace_s=0: the replaced objects go at the commit, so loads race the deletes; each
    returns a whole checkpoint (after a restart on the new .metadata) or raises
    CheckpointChangedError, never NoSuchKey or a short read."""
    url = f"s3://{race_bucket}/race/dcp-nograce"
    raced, restarts = [], []
    ok, bad, saves = _race(wharfd, http_client, url, "dcp", _dcp_load(http_client, restarts),
                           grace_s=0, allowed=wharf.CheckpointChangedError, raced=raced)
    assert saves >= 3 and ok >= 10, (saves, ok, bad[:3])
    assert not bad, f"{len(bad)} of {ok + len(bad) + len(raced)} loads failed: {bad[:3]}"
    assert all("replaced while it was read" in m for m in raced), raced[:3]
    print(f"loads {ok} (restarted {sum(1 for r in restarts if r)}), named the race "
          f"{len(raced)}, saves {saves}")


@need_dcp
def test_dcp_replaced_objects_retire_for_grace_s(http_client, race_bucket, monkeypatch):
    import pickle
    url = f"s3://{race_bucket}/dcp-retire"
    pre = "dcp-retire/"

    def objects():
        return {o.key[len(pre):] for o in http_client.list(race_bucket, pre)
                if o.key.endswith(".distcp")}

    def save(v, **kw):
        w = WharfStorageWriter(url, client=http_client, **kw)
        dcp.save({"w": torch.full((8,), float(v))}, storage_writer=w)
        return objects(), w.last_report

    def retired():
        md = pickle.loads(http_client.get(race_bucket, pre + ".metadata"))
        return set(getattr(md, "wharf_retired", {}))
    o1, _ = save(1, grace_s=60)
    o2, r2 = save(2, grace_s=60)
    assert r2["removed"] == 0 and o1 < o2 and retired() == o1
    got = {"w": torch.zeros(8)}
    dcp.load(got, storage_reader=WharfStorageReader(url, client=http_client))
    assert float(got["w"][0]) == 2.0
    time.sleep(0.6)
    # the first save more than grace_s after save 1's objects were retired deletes them;
    # save 2's, retired by this save, stay
    o3, r3 = save(3, grace_s=0.5)
    assert r3["removed"] == len(o1) and o3 == o2 - o1 | (o3 - o2) and retired() == o2 - o1
    monkeypatch.setenv("WHARF_CKPT_GRACE_S", "0")
    o4, r4 = save(4)
    assert r4["removed"] == len(o3) and o4.isdisjoint(o3) and retired() == set()
    with pytest.raises(wharf.WharfError, match="grace_s"):
        WharfStorageWriter(url, client=http_client, grace_s=-1)
