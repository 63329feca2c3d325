# SPDX-License-Identifier: Apache-2.0
"""wharf.torch.save inside a process group (gloo, 2 CPU ranks in spawned processes): called
on every rank it saves one checkpoint of both; called on rank 0 only (`if rank == 0:
wt.save(...)`) it fails within the roll-call timeout, naming the ranks that did not call and
the fix, where it used to wait forever in a barrier; with rank=0, world_size=1 one rank saves
alone while the other does not call it."""
import os
import socket

import pytest
import torch
import torch.multiprocessing as mp

from wharfd import ACCESS_KEY, CTYPES_UNDER_ASAN, REGION, SECRET_KEY, unique_bucket

pytestmark = pytest.mark.skipif(**CTYPES_UNDER_ASAN)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(rank, world, port, endpoint, bucket, mode, out_dir):
    import torch.distributed as dist
    import wharf
    import wharf.torch as wt
    os.environ["WHARF_SAVE_RANK_TIMEOUT_S"] = "4"
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world)
    c = wharf.Client(endpoint, ACCESS_KEY, SECRET_KEY, region=REGION)
    state = {"w": torch.full((1000,), float(rank))}
    result = "ok"
    try:
        if mode == "all":
            wt.save(state, f"s3://{bucket}/all", client=c)
        elif mode == "rank0" and rank == 0:
            wt.save(state, f"s3://{bucket}/rank0", client=c)
        elif mode == "alone" and rank == 0:
            wt.save(state, f"s3://{bucket}/alone", client=c, rank=0, world_size=1)
    except wharf.WharfError as e:
        result = f"{type(e).__name__}: {e}"
    with open(os.path.join(out_dir, f"r{rank}"), "w") as f:
        f.write(result)
    c.close()
    if mode != "rank0":
        dist.barrier()
    dist.destroy_process_group()


def _run(wharfd, tmp_path, mode):
    import wharf
    c = wharf.Client(wharfd.endpoint, ACCESS_KEY, SECRET_KEY, region=REGION)
    b = unique_bucket("rk")
    c.create_bucket(b)
    mp.start_processes(_worker, args=(2, _free_port(), wharfd.endpoint, b, mode, str(tmp_path)),
                       nprocs=2, join=True, start_method="spawn")
    got = [(tmp_path / f"r{r}").read_text() for r in range(2)]
    return c, b, got


def test_every_rank_saves(wharfd, tmp_path):
    import wharf.torch as wt
    c, b, got = _run(wharfd, tmp_path, "all")
    assert got == ["ok", "ok"]
    back = wt.load(f"s3://{b}/all", client=c, rank=1)
    assert torch.equal(back["w"], torch.full((1000,), 1.0))


def test_rank0_only_fails_with_the_fix(wharfd, tmp_path):
    c, b, got = _run(wharfd, tmp_path, "rank0")
    assert got[1] == "ok"  # rank 1 never called save
    assert got[0].startswith("TimedOutError") and "rank(s) [1]" in got[0], got[0]
    assert "rank=0, world_size=1" in got[0]


def test_one_rank_alone(wharfd, tmp_path):
    import wharf.torch as wt
    c, b, got = _run(wharfd, tmp_path, "alone")
    assert got == ["ok", "ok"]
    assert torch.equal(wt.load(f"s3://{b}/alone", client=c)["w"], torch.zeros(1000))


def test_dcp_checkpoint_ids():
    """DCP's validate_checkpoint_id takes wharf's URLs (s3:// and fsspec's wharf://) and
    refuses local paths, so dcp.save/load pick the wharf storage for them."""
    try:
        import wharf.torch.dcp as dcp
    except ImportError as e:  # torch without DCP (Debian's 1.13): the GPU machine runs it
        pytest.skip(f"wharf.torch.dcp does not import here: {e}")
    for cls in (dcp.WharfStorageWriter, dcp.WharfStorageReader):
        assert cls.validate_checkpoint_id("s3://b/ckpt")
        assert cls.validate_checkpoint_id("wharf://b/ckpt")
        assert not cls.validate_checkpoint_id("/tmp/ckpt")


def test_dcp_load_names_a_dead_server_and_a_refused_key(wharfd):
    """dcp.load through WharfStorageReader with the server down, or with a key the server
    refuses, raises that error by name (torch 2.x's dcp.load swallows read_metadata's
    exceptions and used to report only "metadata is None")."""
    try:
        import torch.distributed.checkpoint as tdcp
        import wharf.torch.dcp as dcp
    except ImportError as e:
        pytest.skip(f"wharf.torch.dcp does not import here: {e}")
    import wharf
    dead = wharf.Client(f"http://127.0.0.1:{_free_port()}", ACCESS_KEY, SECRET_KEY,
                        region=REGION, timeout_ms=3000, max_retries=0)
    bad = wharf.Client(wharfd.endpoint, ACCESS_KEY, "not-the-secret", region=REGION)
    state = {"w": torch.zeros(4)}
    for client, err in ((dead, wharf.TransportError), (bad, wharf.AuthError)):
        # torch 2.x wraps it in DCP's CheckpointException (a BaseException): found inside
        with pytest.raises(BaseException) as ei:
            tdcp.load(state, storage_reader=dcp.WharfStorageReader("s3://b/ckpt",
                                                                   client=client))
        assert isinstance(dcp.wharf_error(ei.value), err), repr(ei.value)
