# SPDX-License-Identifier: Apache-2.0
"""wharf.torch.dcp against a real wharfd: dcp.save / async_save / load with 2 gloo processes,
loads resharded to 1 and 4 ranks (values compared shard by shard), a rank killed at three
points of a save (never loaded as complete; an older checkpoint under the same URL stays
whole), a cleanup that spares a later save's objects, overwrite=False, and CUDA tensors. Needs torch.distributed.checkpoint (torch >= 2.2):
skipped, with the reason, on older torch."""
import os
import subprocess
import sys
import tempfile
import time

import pytest
import torch

try:
    import torch.distributed.checkpoint as dcp
    from torch.distributed.tensor import distribute_tensor  # noqa: F401 (DTensor is needed)
    from wharf.torch.dcp import WharfStorageReader, WharfStorageWriter
    HAVE_DCP = True
    WHY = ""
except ImportError as e:
    HAVE_DCP = False
    WHY = f"torch {torch.__version__} has no usable torch.distributed.checkpoint ({e})"

import wharf
from conftest import make_client
from wharfd import free_port, unique_bucket

pytestmark = pytest.mark.skipif(not HAVE_DCP, reason=WHY)
HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "dcp_worker.py")
PYDIR = os.path.normpath(os.path.join(HERE, "..", "..", "python"))


@pytest.fixture(params=["ofi+shm", "http"])
def dprov(request):
    return request.param


def env_for(srv, provider, seed=0):
    env = dict(os.environ, **srv.client_env())
    env["PYTHONPATH"] = PYDIR + os.pathsep + env.get("PYTHONPATH", "")
    env["DCP_SEED"] = str(seed)
    # these tests check what a save deletes at its commit: no grace period for the replaced
    # objects (test_save_race.py tests it)
    env["WHARF_CKPT_GRACE_S"] = "0"
    env.pop("WHARF_PROVIDER", None)
    env.pop("WHARF_UNIX_SOCKET", None)
    if provider != "http":
        env["WHARF_PROVIDER"] = provider
        env["WHARF_UNIX_SOCKET"] = srv.unix_socket
    return env


def run_ranks(mode, url, world, env, timeout=120, expect_ok=True, worker=WORKER):
    """Starts WORLD ranks; once one exits non-zero the others are killed (a dead rank leaves
    them waiting in a collective). Returns [(rc, output)]. Each rank's output goes to a file
    of its own, not a pipe: a rank that writes more than a pipe holds (torch's warnings, a
    traceback per failed write) would block in write() until the timeout killed it."""
    port = str(free_port())
    logs = [tempfile.TemporaryFile(mode="w+") for _ in range(world)]
    procs = [subprocess.Popen([sys.executable, worker, mode, url, str(r), str(world), port],
                              env=env, stdout=logs[r], stderr=subprocess.STDOUT, text=True)
             for r in range(world)]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rcs = [p.poll() for p in procs]
        if all(rc is not None for rc in rcs):
            break
        if any(rc not in (None, 0) for rc in rcs):
            time.sleep(1.0)
            for p in procs:
                if p.poll() is None:
                    p.kill()
        time.sleep(0.1)
    for p in procs:
        if p.poll() is None:
            p.kill()
    out = []
    for p, f in zip(procs, logs):
        rc = p.wait()
        f.seek(0)
        out.append((rc, f.read()))
        f.close()
    if expect_ok:
        for r, (rc, text) in enumerate(out):
            assert rc == 0 and "OK" in text, f"rank {r} of {mode}: rc {rc}\n{text[-4000:]}"
    return out


def run_all(mode, url, world, env, limit=90, worker=None, on_start=None):
    """Starts WORLD ranks of worker (dcp_fault_worker.py) and waits, killing none, until each
    has exited by itself; a rank still running after limit seconds fails the test (every
    rank must end on its own: not hang in a collective, nor wait for its timeout). on_start:
    called (bounded, by the caller) once the ranks run. Returns [(rc, output)]."""
    worker = worker or os.path.join(HERE, "dcp_fault_worker.py")
    port = str(free_port())
    logs = [tempfile.TemporaryFile(mode="w+") for _ in range(world)]
    procs = [subprocess.Popen([sys.executable, worker, mode, url, str(r), str(world), port],
                              env=env, stdout=logs[r], stderr=subprocess.STDOUT, text=True)
             for r in range(world)]
    t0 = time.monotonic()
    try:
        if on_start is not None:
            on_start()
        while time.monotonic() - t0 < limit and any(p.poll() is None for p in procs):
            time.sleep(0.1)
        hung = [r for r, p in enumerate(procs) if p.poll() is None]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    out = []
    for p, f in zip(procs, logs):
        rc = p.wait()
        f.seek(0)
        out.append((rc, f.read()))
        f.close()
    assert not hung, f"ranks {hung} of {mode} still ran after {limit} s:\n" + \
        "\n".join(f"-- rank {r}: rc {rc}\n{t[-3000:]}" for r, (rc, t) in enumerate(out))
    return out


def raises(cls, match):
    """pytest.raises for an error DCP may hand back wrapped in a CheckpointException (one
    per failed rank): the wharf error must be one of the failures."""
    return _Raises(cls, match)


class _Raises:
    def __init__(self, cls, match):
        self.cls, self.match = cls, match

    def __enter__(self):
        return self

    def __exit__(self, typ, e, tb):
        assert e is not None, f"no {self.cls.__name__} raised"
        found = [e] + [f[0] if isinstance(f, tuple) else f
                       for f in getattr(e, "failures", {}).values()]
        assert any(isinstance(x, self.cls) for x in found), repr(e)
        assert self.match in str(e), str(e)
        return True


def load_one(url, client, seed=0, device="cpu"):
    """dcp.load in this process (no process group: DCP's single-rank mode)."""
    sys.path.insert(0, HERE)
    import dcp_worker as w
    sd = w.state(1, seed, zeros=True)
    sd = {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in sd.items()}
    dcp.load(sd, storage_reader=WharfStorageReader(url, client=client))
    w.check({k: v.cpu() if isinstance(v, torch.Tensor) else v for k, v in sd.items()}, 1, seed)
    return sd


def test_save_2_ranks_load_1_and_4(wharfd, dprov):
    c = make_client(wharfd, dprov)
    b = unique_bucket("dcp")
    c.create_bucket(b)
    url = f"s3://{b}/run/step-1"
    env = env_for(wharfd, dprov)
    with_rdma = wharfd.metric_sum("wharf_rdma_write_bytes_total")
    run_ranks("save", url, 2, env)
    if dprov != "http":  # the ranks' tensor bytes went over RDMA
        assert wharfd.metric_sum("wharf_rdma_write_bytes_total") - with_rdma >= 1_200_000
    keys = sorted(o.key for o in c.list(b, "run/step-1/"))
    assert "run/step-1/.metadata" in keys
    assert any(k.split("/")[-1].startswith("__0_") for k in keys)
    assert any(k.split("/")[-1].startswith("__1_") for k in keys)
    load_one(url, c)
    run_ranks("load", url, 4, env)
    c.close()


@pytest.mark.skipif(HAVE_DCP and not hasattr(dcp, "async_save"),
                    reason=f"torch {torch.__version__} has no dcp.async_save (torch >= 2.3)")
def test_async_save(wharfd):
    c = make_client(wharfd, "ofi+shm")
    b = unique_bucket("dcpa")
    c.create_bucket(b)
    url = f"s3://{b}/async"
    env = env_for(wharfd, "ofi+shm", seed=3)
    run_ranks("async", url, 2, env)
    load_one(url, c, seed=3)
    c.close()


@pytest.mark.skipif(HAVE_DCP and not hasattr(dcp, "async_save"),
                    reason=f"torch {torch.__version__} has no dcp.async_save (torch >= 2.3)")
@pytest.mark.parametrize("point", ["write-mid", "finish"])
def test_async_save_over_a_checkpoint(wharfd, point):
    """dcp.async_save over an existing checkpoint: the tensors changed after it returned are
    not saved; an async save killed (a rank mid-write, the coordinator before the commit)
    leaves the previous checkpoint whole; the next async save commits and leaves only its
    own objects."""
    c = make_client(wharfd, "ofi+shm")
    b = unique_bucket("dcpao")
    c.create_bucket(b)
    url = f"s3://{b}/last"
    run_ranks("save", url, 2, env_for(wharfd, "ofi+shm", seed=0))
    run_ranks("async", url, 2, env_for(wharfd, "ofi+shm", seed=3))
    load_one(url, c, seed=3)
    out = run_ranks(f"adie-{point}", url, 2, env_for(wharfd, "ofi+shm", seed=5),
                    expect_ok=False)
    assert any(rc != 0 for rc, _ in out), out
    load_one(url, c, seed=3)
    run_ranks("async", url, 2, env_for(wharfd, "ofi+shm", seed=6))
    load_one(url, c, seed=6)
    names = [o.key.split("/")[-1] for o in c.list(b, "last/")]
    assert len({n.split("_")[3] for n in names if n.endswith(".distcp")}) == 1, names
    c.close()


@pytest.mark.parametrize("point", ["write-start", "write-mid", "finish"])
def test_killed_rank_never_complete(wharfd, point):
    c = make_client(wharfd, "ofi+shm")
    b = unique_bucket("dcpk")
    c.create_bucket(b)
    fresh, over = f"s3://{b}/fresh", f"s3://{b}/over"
    # a complete checkpoint (seed 0) that a later, killed save (seed 5) tries to replace
    run_ranks("save", over, 2, env_for(wharfd, "ofi+shm", seed=0))
    env = env_for(wharfd, "ofi+shm", seed=5)
    for url in (fresh, over):
        out = run_ranks(f"die-{point}", url, 2, env, expect_ok=False)
        assert any(rc != 0 for rc, _ in out), out
    assert c.list(b, "fresh/"), "the killed save wrote nothing at all"
    with raises(wharf.IncompleteCheckpointError, "incomplete"):
        load_one(fresh, c, seed=5)
    load_one(over, c, seed=0)   # the old checkpoint, whole: never a mix
    # a later successful save commits and removes the dead save's objects
    run_ranks("save", over, 2, env)
    load_one(over, c, seed=5)
    names = [o.key.split("/")[-1] for o in c.list(b, "over/")]
    sids = {n.split("_")[3] for n in names if n.endswith(".distcp")}
    assert len(sids) == 1, names
    c.close()


def test_cleanup_spares_a_later_save(wharfd):
    """The coordinator's cleanup after its commit deletes only the objects that were there
    when its save began: a save that starts after that commit (while the cleanup still runs)
    keeps every object, and loads whole. grace_s=0: the replaced objects go at the commit."""
    import threading
    a_client, b_client = make_client(wharfd, "http"), make_client(wharfd, "http")
    b = unique_bucket("dcpc")
    b_client.create_bucket(b)
    url = f"s3://{b}/last"
    sd = lambda s: {"x": torch.arange(4.0) + s, "y": torch.full((300, 1024), float(s))}  # noqa
    dcp.save(sd(1), storage_writer=WharfStorageWriter(url, client=b_client, grace_s=0))
    real, committed, go = a_client.delete, threading.Event(), threading.Event()

    def slow_delete(*a, **kw):
        committed.set()
        assert go.wait(timeout=60)
        return real(*a, **kw)

    a_client.delete = slow_delete
    t = threading.Thread(target=lambda: dcp.save(sd(2), storage_writer=WharfStorageWriter(
        url, client=a_client, grace_s=0)))
    t.start()
    try:
        assert committed.wait(timeout=60), "the first save never reached its cleanup"
        dcp.save(sd(3), storage_writer=WharfStorageWriter(url, client=b_client, grace_s=0))
    finally:
        go.set()
        t.join(timeout=60)
    got = {k: torch.zeros_like(v) for k, v in sd(3).items()}
    dcp.load(got, storage_reader=WharfStorageReader(url, client=b_client))
    assert all(torch.equal(got[k], v) for k, v in sd(3).items())
    a_client.close()
    b_client.close()


def test_missing_checkpoint_and_overwrite_false(wharfd):
    c = make_client(wharfd, "http")
    b = unique_bucket("dcpm")
    c.create_bucket(b)
    with raises(wharf.NotFoundError, "no checkpoint"):
        load_one(f"s3://{b}/nothing", c)
    sd = {"x": torch.arange(4.0)}
    dcp.save(sd, storage_writer=WharfStorageWriter(f"s3://{b}/once", client=c))
    with raises(wharf.WharfError, "overwrite=False"):
        dcp.save(sd, storage_writer=WharfStorageWriter(f"s3://{b}/once", client=c,
                                                        overwrite=False))
    assert WharfStorageWriter.validate_checkpoint_id(f"s3://{b}/once")
    assert not WharfStorageReader.validate_checkpoint_id("/tmp/ckpt")
    # checkpoint_id= instead of a URL in the constructor
    out = {"x": torch.zeros(4)}
    dcp.load(out, checkpoint_id=f"s3://{b}/once",
             storage_reader=WharfStorageReader(f"s3://{b}/elsewhere", client=c))
    assert torch.equal(out["x"], sd["x"])
    c.close()


@pytest.mark.skipif(torch.cuda.device_count() < 2,
                    reason=f"NCCL needs a GPU per rank: {torch.cuda.device_count()} here, 2 needed")
@pytest.mark.parametrize("prov", ["ofi+shm", "http"])
def test_nccl_2_ranks_save_and_load(wharfd, prov):
    """The same save and load as the gloo test, over NCCL with each rank's DTensor shards on
    its own GPU: the bytes go from and into device memory; loaded again on one CPU rank."""
    c = make_client(wharfd, prov)
    b = unique_bucket("dcpn")
    c.create_bucket(b)
    url = f"s3://{b}/nccl"
    env = dict(env_for(wharfd, prov, seed=4), DCP_BACKEND="nccl")
    run_ranks("save", url, 2, env)
    run_ranks("load", url, 2, env)
    load_one(url, c, seed=4)
    c.close()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_tensors_2_ranks(wharfd):
    c = make_client(wharfd, "ofi+shm")
    b = unique_bucket("dcpc")
    c.create_bucket(b)
    url = f"s3://{b}/cuda"
    run_ranks("cuda-save", url, 2, env_for(wharfd, "ofi+shm"))
    out = {"r0": torch.zeros(1000, device="cuda"), "r1": torch.zeros(1000, device="cuda"),
           "shared": torch.zeros(5, device="cuda")}
    dcp.load(out, storage_reader=WharfStorageReader(url, client=c))
    for r in range(2):
        assert torch.equal(out[f"r{r}"].cpu(), torch.arange(1000, dtype=torch.float32) + r)
    assert torch.equal(out["shared"].cpu(), torch.ones(5))
    c.close()


