# SPDX-License-Identifier: Apache-2.0
"""A wharf.torch.save that dies at a chosen point (run by test_ckpt_crash.py, one process per
point):

    ckpt_crash_worker.py JSON

JSON: endpoint, provider (null: HTTP), sock, url, seed, mode ("sync" or "async"), kill_at
(the 1-based client operation at which to kill; 0: none), how ("before": SIGKILL before the
operation starts; "mid": start it, SIGKILL 2 ms later, while its bytes move), victim ("self":
this process; an int: that pid, wharfd, after which this save goes on against a dead server).
Every client operation of the save (stat, list, put_from, put, delete, get) is printed as
"op <n> <name> <key>" before it runs, so the test knows where the kill landed. In async mode
the tensors are overwritten as soon as the future is returned: a checkpoint that loads must
still hold the values of the snapshot. Prints DONE on a save that finished."""
import json
import os
import signal
import sys
import threading
import time

import torch

import wharf
import wharf.torch as wt

TENSORS = 8
NUMEL = 1 << 20          # 4 MiB of float32 each: 32 MiB in 4 shards of 8 MiB
SHARD = 8 << 20


def state(seed):
    g = torch.Generator().manual_seed(seed)
    return {"step": seed,
            "model": {f"w{i}": torch.randn(NUMEL, generator=g) for i in range(TENSORS)}}


def main():
    a = json.loads(sys.argv[1])
    c = wharf.Client(a["endpoint"], a["ak"], a["sk"], provider=a["provider"],
                     unix_socket=a["sock"])
    n = [0]
    victim = os.getpid() if a["victim"] == "self" else int(a["victim"])

    def wrap(name):
        real = getattr(c, name)

        def op(*args, **kw):
            n[0] += 1
            print(f"op {n[0]} {name} {args[1] if len(args) > 1 else ''}", flush=True)
            if n[0] != a["kill_at"]:
                return real(*args, **kw)
            if a["how"] == "before":
                os.kill(victim, signal.SIGKILL)
                return real(*args, **kw)
            t = threading.Thread(target=lambda: real(*args, **kw), daemon=True)
            t.start()
            time.sleep(0.002)
            os.kill(victim, signal.SIGKILL)
            t.join()
            return real(*args, **kw)
        setattr(c, name, op)

    for name in ("stat", "list", "put_from", "put", "delete", "get"):
        wrap(name)
    sd = state(a["seed"])
    if a["mode"] == "async":
        fut = wt.save(sd, a["url"], client=c, shard_size=SHARD, async_=True)
        for t in sd["model"].values():
            t.fill_(-1.0)  # after the snapshot: never in the checkpoint
        fut.result(timeout=120)
    else:
        wt.save(sd, a["url"], client=c, shard_size=SHARD)
    print("DONE", flush=True)


if __name__ == "__main__":
    main()
