#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Cold GETs over a network provider: direct I/O into the registered buffers, against reads
through the page cache.

  /usr/bin/python3 bench/py/cold_get.py [--gib 1] [--repeats 3] [--data DIR]

One data directory (on a file system with O_DIRECT), objects written once over HTTP. Each
measurement starts wharfd with --cold-reads direct or buffered on that directory (paired,
A B A B), drops the objects' pages from the page cache (fsync + POSIX_FADV_DONTNEED), and GETs
every object over ofi+tcp into one registered buffer, with --streams GETs in flight. It
records the throughput, the server's CPU per GB, where the server's bytes came from
(wharf_rdma_get_read_bytes_total by source), and how much of the objects the page cache
holds afterwards (mincore through fincore(1): what a one-pass read of a checkpoint evicts).
The limit in the same run: the disk's own O_DIRECT read rate of the same files (dd). Every
byte is compared with what was written.
"""
import argparse
import concurrent.futures as cf
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

import common as cm

MiB = cm.MiB


def drop_cache(srv):
    files = [os.path.join(srv.data_dir, p) for p in srv.data_files()]
    for f in files:
        fd = os.open(f, os.O_RDONLY)
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)
    return files


def resident_bytes(files):
    """Bytes of files in the page cache (fincore), or None without fincore."""
    try:
        p = subprocess.run(["fincore", "-b", "-n", "-o", "RES", *files], capture_output=True,
                           text=True, timeout=30)
    except OSError:
        return None
    if p.returncode != 0:
        return None
    return sum(int(x) for x in p.stdout.split())


def dd_direct(files):
    rates = []
    for f in files:
        size = os.path.getsize(f)
        if size < 64 * MiB:
            continue
        t0 = time.perf_counter()
        subprocess.run(["dd", f"if={f}", "of=/dev/null", "bs=4M", "iflag=direct"],
                       capture_output=True, timeout=120, check=True)
        rates.append(size / (time.perf_counter() - t0) / 1e9)
    return cm.bl.summary(rates)


def sources(srv):
    with cm.urllib.request.urlopen(srv.endpoint + "/metrics", timeout=10) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        if line.startswith('wharf_rdma_get_read_bytes_total{source="'):
            out[line.split('"')[1]] = float(line.rsplit(" ", 1)[1])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--gib", type=float, default=1.0, help="bytes per measurement (GiB)")
    ap.add_argument("--object-mib", type=int, default=256)
    ap.add_argument("--streams", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--data", default=None, help="data directory (default: a new one in /var/tmp)")
    ap.add_argument("--results", default=os.path.join(cm.REPO, "results"))
    ap.add_argument("--tag", default="")
    a = ap.parse_args()
    data_dir = a.data or tempfile.mkdtemp(prefix="wharf-cold-", dir="/var/tmp")
    obj = a.object_mib * MiB
    nobj = max(1, int(a.gib * cm.GiB) // obj)
    payload = nobj * obj
    rng = np.random.default_rng(7)
    srcs = [rng.integers(0, 256, obj, dtype=np.uint8) for _ in range(nobj)]
    srv = cm.WharfServer(data_dir=data_dir, log_level="warn")
    srv.start()
    c = cm.make_client(srv, "http")
    c.create_bucket("cold")
    for i, s in enumerate(srcs):
        c.put_from("cold", f"o{i}", s, transport="http")
    c.close()
    files = drop_cache(srv)
    limit = dd_direct(files)
    srv.stop()
    dst = np.zeros(payload, dtype=np.uint8)
    runs = []
    for r in range(a.repeats):
        for mode in ("direct", "buffered"):
            srv = cm.WharfServer(data_dir=data_dir, log_level="warn",
                                 extra_args=["--cold-reads", mode])
            srv.start()
            try:
                c = cm.make_client(srv, "rdma-tcp", concurrency=1)
                reg = c.register(dst)
                files = drop_cache(srv)
                s0 = sources(srv)
                with cm.Window(srv) as w:
                    with cf.ThreadPoolExecutor(a.streams) as ex:
                        reps = list(ex.map(lambda i: c.get_into(
                            "cold", f"o{i}", dst[i * obj:(i + 1) * obj], transport="rdma",
                            cache=True), range(nobj)))
                s1 = sources(srv)
                cell = {"mode": mode, "repeat": r, "wall_s": w.wall_s,
                        "gbps": payload / w.wall_s / 1e9, **w.cpu(payload),
                        "rdma_witness": w.witness(),
                        "read_sources": {k: s1[k] - s0.get(k, 0) for k in s1},
                        "page_cache_after_bytes": resident_bytes(files),
                        "transports": sorted({x.transport for x in reps})}
                err = w.gate("rdma", "get", payload)
                if err:
                    cell["error"] = err
                cell["verified"] = all(np.array_equal(dst[i * obj:(i + 1) * obj], srcs[i])
                                       for i in range(nobj))
                reg.close()
                c.close()
            finally:
                srv.stop()
            runs.append(cell)
            print(f"repeat {r} {mode:8s} {cell['gbps']:.2f} GB/s server "
                  f"{cell['server_cpu_s_per_gb']:.3f} CPU-s/GB sources {cell['read_sources']} "
                  f"cache after {cell['page_cache_after_bytes']} verified {cell['verified']} "
                  f"{cell.get('error', '')}", file=sys.stderr, flush=True)
    res = {}
    for mode in ("direct", "buffered"):
        ok = [x for x in runs if x["mode"] == mode and "error" not in x and x["verified"]]
        res[mode] = {k: cm.bl.summary([x[k] for x in ok])
                     for k in ("gbps", "server_cpu_s_per_gb", "host_cpu_s_per_gb")}
    pairs = [d["gbps"] / b["gbps"] for d, b in zip(
        [x for x in runs if x["mode"] == "direct"], [x for x in runs if x["mode"] == "buffered"])]
    root = {"params": {"payload_bytes": payload, "object_bytes": obj, "objects": nobj,
                       "streams": a.streams, "repeats": a.repeats, "provider": "ofi+tcp",
                       "order": "paired: direct buffered per repeat, a fresh wharfd each"},
            "environment": cm.bl.environment("ofi+tcp"),
            "limits": {"dd_o_direct_read_gbps": limit},
            "results": {"modes": res, "paired_direct_over_buffered": cm.bl.summary(pairs),
                        "runs": runs}}
    cm.write(a, "cold_get", root)
    for mode in ("direct", "buffered"):
        print(f"{mode:8s} {res[mode]['gbps']['median']:.2f} GB/s, server "
              f"{res[mode]['server_cpu_s_per_gb']['median']:.3f} CPU-s/GB")
    print(f"direct / buffered (paired) {root['results']['paired_direct_over_buffered']}; "
          f"disk O_DIRECT read {limit.get('median')}")
    if not a.data:
        import shutil
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
