# SPDX-License-Identifier: Apache-2.0
"""One rank of a DCP test (run by test_dcp.py as a subprocess per rank, over gloo):

    dcp_worker.py MODE URL RANK WORLD PORT

MODE save | async: saves state(WORLD) (DTensors sharded on a 1-d mesh, a replicated tensor,
plain values) with WharfStorageWriter (client from the environment); load: loads it into
zeros laid out for WORLD ranks and checks every local shard against the expected values;
die-<point>: saves and kills itself (os._exit) at <point>: write-start (rank 1, before its
first object), write-mid (rank 1, after its first object), finish (rank 0, after checking the
objects, before .metadata); adie-<point>: the same under dcp.async_save (async also overwrites
every tensor once async_save has returned: the load must not see it); cuda-save: per-rank
CUDA tensors. Prints OK on success.
DCP_BACKEND=nccl (one GPU per rank): the process group is NCCL and the DTensors live on
cuda:RANK, so save and load move GPU memory."""
import datetime
import os
import sys

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp

from wharf.torch.dcp import WharfStorageReader, WharfStorageWriter


def full(seed):
    g = torch.Generator().manual_seed(seed)
    return {"w": torch.randn(8, 6, generator=g),
            "v": torch.randn(4, 8, generator=g).to(torch.bfloat16),
            "r": torch.arange(10, dtype=torch.int64) * (seed + 1),
            "big": torch.randn(300, 1024, generator=g)}   # 1.2 MB: a GET of its own


BACKEND = os.environ.get("DCP_BACKEND", "gloo")
DEVICE = "cuda" if BACKEND == "nccl" else "cpu"


def state(world, seed, zeros=False):
    f = full(seed)
    if zeros:
        f = {k: torch.zeros_like(v) for k, v in f.items()}
    if world > 1:
        f = {k: v.to(DEVICE) for k, v in f.items()}
    out = {"step": 0 if zeros else 100 + seed, "extra": {"name": "" if zeros else f"s{seed}"}}
    if world == 1:
        out.update(f)
        return out
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor
    mesh = init_device_mesh(DEVICE, (world,))
    out["w"] = distribute_tensor(f["w"], mesh, [Shard(0)])
    out["v"] = distribute_tensor(f["v"], mesh, [Shard(1)])   # inner dimension: strided reads
    out["big"] = distribute_tensor(f["big"], mesh, [Shard(0)])
    out["r"] = distribute_tensor(f["r"], mesh, [Replicate()])
    return out


def check(sd, world, seed):
    f = full(seed)
    assert sd["step"] == 100 + seed, sd["step"]
    assert sd["extra"] == {"name": f"s{seed}"}, sd["extra"]
    for k, want in f.items():
        got = sd[k]
        if world > 1:
            from torch.distributed.tensor import distribute_tensor
            want = distribute_tensor(want.to(got.device), got.device_mesh,
                                     got.placements).to_local()
            got = got.to_local()
        assert got.dtype == want.dtype and got.shape == want.shape, (k, got.shape, want.shape)
        assert torch.equal(got.cpu(), want.cpu()), k


class DyingWriter(WharfStorageWriter):
    point = None

    def _put_object(self, c, planner, name, entries, bar):
        if self.point == "write-start" and dist.get_rank() == 1:
            os._exit(9)
        out = super()._put_object(c, planner, name, entries, bar)
        if self.point == "write-mid" and dist.get_rank() == 1:
            os._exit(9)
        return out

    def finish(self, metadata, results):
        if self.point == "finish":  # every object is written; .metadata is not
            os._exit(9)
        return super().finish(metadata, results)


def main():
    mode, url, rank, world, port = sys.argv[1], sys.argv[2], int(sys.argv[3]), \
        int(sys.argv[4]), sys.argv[5]
    seed = int(os.environ.get("DCP_SEED", "0"))
    if world > 1:
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
        if BACKEND == "nccl":
            torch.cuda.set_device(rank)
        dist.init_process_group(BACKEND, rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=60))
    if mode in ("save", "async"):
        sd = state(world, seed)
        w = WharfStorageWriter(url, thread_count=2, object_size=64 << 10)
        if mode == "async":
            fut = dcp.async_save(sd, storage_writer=w)
            for v in sd.values():  # after async_save returned: never in the checkpoint
                if isinstance(v, torch.Tensor):
                    (v.to_local() if hasattr(v, "to_local") else v).fill_(-7)
            fut.result()
        else:
            dcp.save(sd, storage_writer=w)
    elif mode == "load":
        sd = state(world, seed, zeros=True)
        dcp.load(sd, storage_reader=WharfStorageReader(url, thread_count=4))
        check(sd, world, seed)
    elif mode.startswith("die-"):
        DyingWriter.point = mode[4:]
        dcp.save(state(world, seed), storage_writer=DyingWriter(url, object_size=64 << 10))
    elif mode.startswith("adie-"):  # the same, the save running behind dcp.async_save
        DyingWriter.point = mode[5:]
        dcp.async_save(state(world, seed),
                       storage_writer=DyingWriter(url, object_size=64 << 10)).result()
    elif mode == "cuda-save":
        t = torch.arange(1000, dtype=torch.float32, device="cuda") + rank
        dcp.save({f"r{rank}": t, "shared": torch.ones(5, device="cuda")},
                 storage_writer=WharfStorageWriter(url))
    else:
        raise SystemExit(f"unknown mode {mode}")
    if world > 1:
        dist.barrier()
        dist.destroy_process_group()
    print("OK", flush=True)


if __name__ == "__main__":
    main()
