# SPDX-License-Identifier: Apache-2.0
"""Crash safety of wharf.torch.save over an existing checkpoint: the saving process
(ckpt_crash_worker.py) is killed with SIGKILL at every client operation of the save (before
it, and in the middle of the shard PUTs), sync and async; wharfd itself is killed at points of
a save and restarted on its data dir. After each kill exactly one complete checkpoint loads,
the old one where the kill came before the index PUT, the new one after, with every value
checked (verify=True); and the next save leaves no orphan: the objects under the URL are its
index and its shards, nothing else."""
import json
import os
import signal
import subprocess
import sys

import pytest
import torch

import wharf
import wharf.torch as wt
from conftest import make_client
from wharfd import ACCESS_KEY, SECRET_KEY, unique_bucket

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from ckpt_crash_worker import SHARD, state  # noqa: E402

WORKER = os.path.join(HERE, "ckpt_crash_worker.py")
MAX_POINTS = 8


@pytest.fixture(autouse=True)
def _no_grace(monkeypatch):
    """The replaced checkpoint's shards go at the commit (grace_s 0), so that the next save
    leaving no orphan is checked exactly (test_save_race.py covers the grace period)."""
    monkeypatch.setenv("WHARF_CKPT_GRACE_S", "0")


def run_worker(srv, provider, url, seed, mode, kill_at, how, victim="self", timeout=120):
    """(returncode, the operations it logged: [(n, name, key)], stderr)."""
    arg = {"endpoint": srv.endpoint, "ak": ACCESS_KEY, "sk": SECRET_KEY,
           "provider": None if provider == "http" else provider,
           "sock": srv.unix_socket if provider == "ofi+shm" else None, "url": url,
           "seed": seed, "mode": mode, "kill_at": kill_at, "how": how,
           "victim": victim}
    p = subprocess.Popen([sys.executable, WORKER, json.dumps(arg)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=dict(os.environ))
    try:
        out, err = p.communicate(timeout=timeout)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(timeout=10)
        for f in os.listdir("/dev/shm"):  # libfabric shm regions are named after the pid
            if f.startswith(f"{p.pid}:"):
                os.unlink(os.path.join("/dev/shm", f))
    ops = []
    for line in out.decode().splitlines():
        if line.startswith("op "):
            _, k, name, *key = line.split(" ")
            ops.append((int(k), name, key[0] if key else ""))
    return p.returncode, ops, out.decode(), err.decode()


def index_op(ops):
    """The operation that writes the index (Client.put goes through put_from: the inner
    one)."""
    return max(k for k, name, key in ops if key.endswith(wt.INDEX_NAME))


def shard_puts(ops):
    return [k for k, name, key in ops if name == "put_from" and key.endswith(".safetensors")]


def check_one(c, url, seeds):
    """The checkpoint at url loads whole, with the values of one of seeds; returns which."""
    got = wt.load(url, client=c, verify=True)
    assert got["step"] in seeds, got["step"]
    want = state(got["step"])
    for k, t in want["model"].items():
        assert torch.equal(got["model"][k], t), (got["step"], k)
    return got["step"]


def check_no_orphans(c, bucket, key, rep):
    got = sorted(o.key for o in c.list(bucket, key + "/"))
    assert got == sorted([f"{key}/{f}" for f in rep["shards"]] + [f"{key}/{wt.INDEX_NAME}"])


def points(ops):
    """Kill points over the save: before each operation, and in the middle of the first and
    last shard PUT; at most MAX_POINTS, spread evenly."""
    pts = [(k, "before") for k, _, _ in ops]
    puts = shard_puts(ops)
    pts += [(puts[0], "mid"), (puts[-1], "mid")]
    if len(pts) > MAX_POINTS:
        step = len(pts) / MAX_POINTS
        pts = [pts[int(i * step)] for i in range(MAX_POINTS)]
    return sorted(set(pts))


@pytest.mark.parametrize("prov,mode", [("http", "sync"), ("ofi+tcp", "sync"),
                                       ("ofi+tcp", "async")])
def test_saver_killed_at_every_point(wharfd, prov, mode):
    c = make_client(wharfd, prov)
    try:
        bucket = unique_bucket("pycrash")
        c.create_bucket(bucket)
        key = "run/last"
        url = f"s3://{bucket}/{key}"
        # a first save, killed after its first shard: no checkpoint, never a part of one
        rc, ops, out, err = run_worker(wharfd, prov, url, 1, mode, 4, "before")
        assert rc == -signal.SIGKILL, (rc, out, err[-2000:])
        with pytest.raises(wharf.IncompleteCheckpointError):
            wt.load(url, client=c)
        rep = wt.save(state(2), url, client=c, shard_size=SHARD)
        check_no_orphans(c, bucket, key, rep)
        # a whole overwrite, to learn its operations
        rc, ops, out, err = run_worker(wharfd, prov, url, 3, mode, 0, "before")
        assert rc == 0 and "DONE" in out, (rc, out, err[-2000:])
        assert check_one(c, url, {3}) == 3
        assert len(shard_puts(ops)) == 4, ops
        idx = index_op(ops)
        # ... and those of a first save to a new URL (it has no index to read first)
        rc, fops, out, err = run_worker(wharfd, prov, f"s3://{bucket}/{key}-probe", 4, mode, 0,
                                        "before")
        assert rc == 0 and "DONE" in out, (rc, out, err[-2000:])
        # first saves to new URLs, killed in a shard PUT, between shards, before the index:
        # nothing loads, and the next save there leaves only its own objects
        for i, (k, how) in enumerate([(shard_puts(fops)[0], "mid"),
                                      (index_op(fops), "before")]):
            fkey = f"{key}-fresh{i}"
            rc, kops, out, err = run_worker(wharfd, prov, f"s3://{bucket}/{fkey}", 5, mode,
                                            k, how)
            assert rc == -signal.SIGKILL, (k, how, rc, out, err[-2000:])
            with pytest.raises((wharf.IncompleteCheckpointError, wharf.NotFoundError)):
                wt.load(f"s3://{bucket}/{fkey}", client=c)
            rep = wt.save(state(6), f"s3://{bucket}/{fkey}", client=c, shard_size=SHARD)
            check_no_orphans(c, bucket, fkey, rep)
        current, seed = 3, 10
        pts = points(ops)
        assert len(pts) >= 6, pts
        for k, how in pts:
            seed += 1
            rc, kops, out, err = run_worker(wharfd, prov, url, seed, mode, k, how)
            assert rc == -signal.SIGKILL, (k, how, rc, out, err[-2000:])
            assert kops[-1][0] == k, (k, kops)
            want = seed if k > idx else current
            assert check_one(c, url, {current, seed}) == want, (k, how, kops[-1])
            # the next save removes every object of the killed one and of the one it replaced
            seed += 1
            rep = wt.save(state(seed), url, client=c, shard_size=SHARD)
            check_no_orphans(c, bucket, key, rep)
            current = seed
    finally:
        c.close()


def test_wharfd_killed_during_save(fresh_wharfd):
    """wharfd gets SIGKILL at points of an overwrite (before the first operation, between
    shards, in the middle of a shard, before the index PUT, after it) and restarts on its
    data dir: what it acknowledged is there, and exactly one checkpoint loads."""
    srv = fresh_wharfd
    c = None
    try:
        c = make_client(srv, "http")
        bucket = unique_bucket("pycrashd")
        c.create_bucket(bucket)
        key = "run/last"
        url = f"s3://{bucket}/{key}"
        wt.save(state(1), url, client=c, shard_size=SHARD)
        rc, ops, out, err = run_worker(srv, "http", url, 2, "sync", 0, "before")
        assert rc == 0, (rc, out, err[-2000:])
        idx = index_op(ops)
        puts = shard_puts(ops)
        pts = [(1, "before"), (puts[1], "before"), (puts[2], "mid"), (idx, "before"),
               (idx + 1, "before"), (puts[-1], "mid")]
        current, seed = 2, 10
        for k, how in pts:
            seed += 1
            rc, kops, out, err = run_worker(srv, "http", url, seed, "sync", k, how,
                                            victim=str(srv.proc.pid), timeout=180)
            assert rc != -signal.SIGKILL, (k, how, out)  # it failed, or (a kill during the
            # cleanup after the commit) finished with the old shards left for the next save
            assert kops and kops[-1][0] >= k, (k, how, kops, err[-2000:])
            srv.stop()  # reaps the killed server
            srv.start(port=srv.port)
            want = seed if k > idx else current
            assert check_one(c, url, {current, seed}) == want, (k, how)
            seed += 1
            rep = wt.save(state(seed), url, client=c, shard_size=SHARD)
            check_no_orphans(c, bucket, key, rep)
            current = seed
    finally:
        if c is not None:
            c.close()
