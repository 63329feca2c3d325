#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Lazy readers against whole-object fetch: dataset items that read a header and one slice of
larger objects (default 48 objects of 8 MiB; each item reads the 16-byte header, takes an
offset from it and reads a 256 KiB slice there).

Arms, paired in one run (A B C A B C ...), over the same objects and server:
  range       ObjectMapDataset(reader="range"): a ranged GET per read (header, slice)
  sequential  ObjectMapDataset(reader="sequential", read_buffer=1 MiB): read-ahead buffer
  whole       ObjectMapDataset() (no reader): the whole object as bytes, then the slice

The timed window is one pass over every item (ds[i] for each i, one process, no DataLoader).
Every slice is compared with the generated object outside the timer (repeat 0 of each arm).
Reported per arm: items/s, bytes fetched from the server (its /metrics GET bytes), CPU.

  /usr/bin/python3 bench/py/lazy_read.py [--objects 48] [--object-mib 8] [--slice-kib 256]
                                          [--provider http|rdma] [--repeats 3]
"""
import argparse
import time

import common as cm
import numpy as np

from wharf.torch import ObjectMapDataset

ARMS = ("range", "sequential", "whole")


def item(f):
    head = f.read(16)
    off = int.from_bytes(head[:8], "little")
    f.seek(off)
    return f.key, off, f.read(SLICE)


def item_whole(o):
    off = int.from_bytes(o.data[:8], "little")
    return o.key, off, o.data[off:off + SLICE]


SLICE = 256 << 10


def main():
    global SLICE
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    cm.common_args(ap)
    ap.add_argument("--objects", type=int, default=48)
    ap.add_argument("--object-mib", type=int, default=8)
    ap.add_argument("--slice-kib", type=int, default=256)
    ap.add_argument("--provider", choices=("http", "rdma"), default="http")
    a = ap.parse_args()
    SLICE = a.slice_kib << 10
    size = a.object_mib * cm.MiB
    rng = np.random.default_rng(11)
    srcs = []
    for i in range(a.objects):
        s = rng.integers(0, 256, size, dtype=np.uint8)
        off = int(rng.integers(16, size - SLICE))
        s[:8] = np.frombuffer(off.to_bytes(8, "little"), dtype=np.uint8)
        srcs.append(s)
    srv = cm.start_server(a)
    c = cm.make_client(srv, a.provider, concurrency=a.concurrency)
    c.create_bucket("lazy")
    for i, s in enumerate(srcs):
        c.put_from("lazy", f"obj/{i:04d}", s, transport="http")
    url = "s3://lazy/obj/"
    dss = {"range": ObjectMapDataset.from_prefix(url, client=c, reader="range",
                                                 transform=item),
           "sequential": ObjectMapDataset.from_prefix(url, client=c, reader="sequential",
                                                      read_buffer=1 << 20, transform=item),
           "whole": ObjectMapDataset.from_prefix(url, client=c, transform=item_whole)}
    runs = {arm: [] for arm in ARMS}
    for r in range(a.repeats):
        for arm in ARMS:
            ds = dss[arm]
            with cm.Window(srv) as w:
                t0 = time.perf_counter()
                out = [ds[i] for i in range(len(ds))]
                dt = time.perf_counter() - t0
            if r == 0:
                for k, off, sl in out:
                    src = srcs[int(k.rsplit("/", 1)[1])]
                    assert sl == src[off:off + SLICE].tobytes(), (arm, k)
            fetched = w.delta.get("wharf_http_read_bytes_total", 0.0) + w.rdma_get
            runs[arm].append({"wall_s": dt, "items_per_s": len(out) / dt,
                              "server_bytes_out": fetched,
                              "rdma_get_bytes": w.rdma_get,
                              "client_cpu_s": w.client_cpu_s,
                              "server_cpu_s": w.server_cpu_s, "host_cpu_s": w.host_cpu_s})
            print(f"repeat {r} {arm}: {len(out) / dt:.1f} items/s, {dt * 1e3:.1f} ms, "
                  f"server out {fetched / 1e6:.1f} MB", flush=True)
    c.close()
    res = {arm: {"items_per_s": cm.summarize(rs, "items_per_s"),
                 "wall_s": cm.summarize(rs, "wall_s"),
                 "server_bytes_out": cm.summarize(rs, "server_bytes_out"),
                 "client_cpu_s": cm.summarize(rs, "client_cpu_s"),
                 "server_cpu_s": cm.summarize(rs, "server_cpu_s"),
                 "runs": rs} for arm, rs in runs.items()}
    root = {"params": {"objects": a.objects, "object_bytes": size, "slice_bytes": SLICE,
                       "header_bytes": 16, "provider": a.provider, "repeats": a.repeats,
                       "concurrency": a.concurrency, "order": "paired: " + " ".join(ARMS)
                       + " per repeat", "verified": "every slice of repeat 0 of each arm"},
            "environment": cm.bl.environment("ofi+shm" if a.provider == "rdma" else "none"),
            "limits": cm.limits(a), "results": {"arms": res}}
    cm.write(a, "lazy-read", root)
    srv.stop()


if __name__ == "__main__":
    main()
