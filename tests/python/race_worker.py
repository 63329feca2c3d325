# SPDX-License-Identifier: Apache-2.0
"""A writer that overwrites one URL again and again (run by test_save_race.py):

    race_worker.py JSON

JSON: endpoint, ak, sk, url, mode ("ckpt": wharf.torch.save; "hf": wharf.torch.hf.
save_pretrained; "dcp": torch.distributed.checkpoint.save through WharfStorageWriter, one
process, no process group), seconds (how long to loop), max_saves (a bound on the count),
grace_s (for "ckpt" and "dcp": the save's grace_s, null for the default). Save n writes
tensors that all hold the value n, so a reader can tell a whole checkpoint (every value
equal) from a mix. Prints the number of saves made on its last line."""
import json
import sys
import time

import torch

import wharf
import wharf.torch as wt
from wharf.torch import hf

TENSORS = 5
NUMEL = 1 << 20  # 4 MiB of float32 each: 20 MiB


def state(n):
    return {f"w{i}": torch.full((NUMEL,), float(n)) for i in range(TENSORS)}


def main():
    a = json.loads(sys.argv[1])
    c = wharf.Client(a["endpoint"], a["ak"], a["sk"])
    end = time.monotonic() + a["seconds"]
    n = 0
    while time.monotonic() < end and n < a["max_saves"]:
        n += 1
        kw = {} if a.get("grace_s") is None else {"grace_s": a["grace_s"]}
        if a["mode"] == "ckpt":
            wt.save(state(n), a["url"], client=c, shard_size=8 << 20, **kw)
        elif a["mode"] == "dcp":
            import torch.distributed.checkpoint as dcp
            from wharf.torch.dcp import WharfStorageWriter
            dcp.save(state(n), storage_writer=WharfStorageWriter(
                a["url"], client=c, object_size=8 << 20, **kw))
        else:
            hf.save_pretrained(state(n), a["url"], client=c, max_shard_size=8 << 20)
    print(n, flush=True)


if __name__ == "__main__":
    main()
