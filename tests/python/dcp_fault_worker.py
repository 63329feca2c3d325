# SPDX-License-Identifier: Apache-2.0
"""One rank of a DCP fault test (run by test_dcp_faults.py and test_dcp_integrity.py as a
subprocess per rank, over gloo, CPU tensors):

    dcp_fault_worker.py MODE URL RANK WORLD PORT

MODE save | load: dcp.save / dcp.load of state(WORLD) (a 16 MiB tensor sharded on dim 0, so
that a rank's rows straddle the readers' checksum blocks, a small replicated tensor and plain
values), checking every local shard after a load. The client comes from the environment,
except on rank DCP_BAD_RANK (if set), whose fault is DCP_BAD: "secret" (a secret key the
server refuses), "bucket" (its writer/reader URL names a bucket that does not exist), or
"stall" (after its first object it writes DCP_MARKER and sleeps DCP_STALL_S seconds, so that
the test can stop the server mid-save). DCP_PG_TIMEOUT_S: the process group's timeout
(default 300 s: longer than the tests wait, so an error that reaches a rank only through a
collective's timeout fails the test).

Prints OK on success. On an exception: "ERR <rank> <outer type> | <wharf type> | <message>"
(the wharf error found in the exception or in DCP's CheckpointException failures, "-" when
there is none) and exits 3."""
import datetime
import os
import sys
import time
import traceback

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp

import wharf
from wharf.torch.dcp import WharfStorageReader, WharfStorageWriter, wharf_error

ROWS, COLS = 4096, 1024   # 16 MiB of float32: four checksum blocks


def full(seed):
    g = torch.Generator().manual_seed(seed)
    return {"big": torch.randn(ROWS, COLS, generator=g),
            "small": torch.arange(16, dtype=torch.int32) * (seed + 1)}


def state(world, seed, zeros=False):
    f = full(seed)
    if zeros:
        f = {k: torch.zeros_like(v) for k, v in f.items()}
    out = {"step": 0 if zeros else 100 + seed, "extra": {"name": "" if zeros else f"s{seed}"}}
    if world == 1:
        out.update(f)
        return out
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor
    mesh = init_device_mesh("cpu", (world,))
    out["big"] = distribute_tensor(f["big"], mesh, [Shard(0)])
    out["small"] = distribute_tensor(f["small"], mesh, [Replicate()])
    return out


def check(sd, world, seed):
    f = full(seed)
    assert sd["step"] == 100 + seed, sd["step"]
    assert sd["extra"] == {"name": f"s{seed}"}, sd["extra"]
    for k, want in f.items():
        got = sd[k]
        if world > 1:
            from torch.distributed.tensor import distribute_tensor
            want = distribute_tensor(want, got.device_mesh, got.placements).to_local()
            got = got.to_local()
        assert torch.equal(got, want), k


class StallingWriter(WharfStorageWriter):
    def _put_object(self, c, planner, name, entries, bar):
        out = super()._put_object(c, planner, name, entries, bar)
        marker = os.environ["DCP_MARKER"]
        if not os.path.exists(marker):
            with open(marker, "w") as f:
                f.write(name)
            time.sleep(float(os.environ.get("DCP_STALL_S", "5")))
        return out


def main():
    mode, url, rank, world, port = sys.argv[1], sys.argv[2], int(sys.argv[3]), \
        int(sys.argv[4]), sys.argv[5]
    seed = int(os.environ.get("DCP_SEED", "0"))
    bad = os.environ.get("DCP_BAD") if str(rank) == os.environ.get("DCP_BAD_RANK") else None
    if world > 1:
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
        timeout = float(os.environ.get("DCP_PG_TIMEOUT_S", "300"))
        dist.init_process_group("gloo", rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=timeout))
    kw = {}
    if bad == "secret":
        kw["secret_key"] = "not-the-secret"
    client = wharf.client_from_env(**kw)
    if bad == "bucket":
        url = "s3://no-such-bucket-" + url[len("s3://"):]
    try:
        if mode == "save":
            cls = StallingWriter if bad == "stall" else WharfStorageWriter
            dcp.save(state(world, seed), storage_writer=cls(url, client=client, thread_count=2,
                                                            object_size=1 << 20))
        elif mode == "load":
            sd = state(world, seed, zeros=True)
            dcp.load(sd, storage_reader=WharfStorageReader(url, client=client, thread_count=4))
            check(sd, world, seed)
        else:
            raise SystemExit(f"unknown mode {mode}")
    except BaseException as e:  # noqa: B902 (DCP's CheckpointException is a BaseException)
        if isinstance(e, (SystemExit, KeyboardInterrupt)):
            raise
        w = wharf_error(e)
        print(f"ERR {rank} {type(e).__name__} | {type(w).__name__ if w else '-'} | "
              f"{w.message if w else e}", flush=True)
        traceback.print_exc()
        sys.stdout.flush()
        os._exit(3)   # no destroy_process_group: another rank may already be gone
    if world > 1:
        dist.barrier()
        dist.destroy_process_group()
    print("OK", flush=True)


if __name__ == "__main__":
    main()
