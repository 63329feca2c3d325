# SPDX-License-Identifier: Apache-2.0
"""Readers racing a writer that overwrites the same URL: a load returns the old or the new
checkpoint, whole (every tensor holds the same save's value), never NoSuchKey or a short read.
The writer (race_worker.py) loops in its own process for a bounded time while this process
loads in a bounded loop."""
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
from race_worker import TENSORS  # noqa: E402

WORKER = os.path.join(HERE, "race_worker.py")
SECONDS = 6
MAX_LOADS = 400


def _race(srv, client, url, mode, load, grace_s=None, allowed=None, raced=None):
    """(loads that returned, failures [(exception type, message)], saves made); errors of
    the allowed types go to raced instead."""
    if mode == "ckpt":  # a first checkpoint, so that every load has one to find
        wt.save({f"w{i}": torch.zeros(4) for i in range(TENSORS)}, url, client=client)
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
