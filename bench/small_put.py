#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Small durable PUTs: how many acknowledged writes per second wharfd makes on one file
system, against what the file system allows.

  /usr/bin/python3 bench/small_put.py [--dir DIR] [--size 4K] [--connections 1,16]
      [--duration 5] [--repeats 3] [--base-build DIR] [--build DIR] [--results results]

Arms, paired (each repeat runs every arm in turn, A B A B):
  wharfd        wharfd serve --durability disk on DIR (a temp dir under it), bench/loadgen
                PUTs of --size bytes on --connections keep-alive connections for --duration s
                (each PUT: temp file, fdatasync, rename, directory fsync, a SQLite row with
                synchronous=FULL)
  wharfd-base   the same with the wharfd of --base-build (an older build, for before/after)
  limit         the file system alone, from Python threads (os calls release the GIL): per
                write, a new file of --size bytes, fdatasync, rename into a subdirectory,
                fsync of that directory; the same thread counts. No metadata: what the disk
                allows a store that keeps no index at all.
Reports ops/s (median of the repeats), latency p50/p99 and wharfd's CPU seconds per 1000
PUTs. Writes a JSON result to --results.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "tests", "lib"), HERE]

from benchlib import environment, parse_size, proc_cpu_s, write_result  # noqa: E402
from wharfd import ACCESS_KEY, REGION, SECRET_KEY, WharfServer  # noqa: E402


LOADGEN = None


def fs_limit(root, size, threads, duration):
    """Durable small-file creates per second on root's file system, threads in parallel."""
    d = tempfile.mkdtemp(prefix="wharf-limit-", dir=root)
    sub = os.path.join(d, "objects")
    os.mkdir(sub)
    tmp = os.path.join(d, "tmp")
    os.mkdir(tmp)
    data = os.urandom(size)
    counts = [0] * threads
    stop = time.monotonic() + duration

    def run(t):
        dfd = os.open(sub, os.O_RDONLY | os.O_DIRECTORY)
        i = 0
        while time.monotonic() < stop and i < 1_000_000:
            name = f"{t}-{i}"
            p = os.path.join(tmp, name)
            fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.write(fd, data)
            os.fdatasync(fd)
            os.close(fd)
            os.rename(p, os.path.join(sub, name))
            os.fsync(dfd)
            i += 1
        counts[t] = i
        os.close(dfd)

    t0 = time.monotonic()
    ts = [threading.Thread(target=run, args=(t,)) for t in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    wall = time.monotonic() - t0
    subprocess.run(["rm", "-rf", d], check=False)
    return sum(counts) / wall


def loadgen_put(endpoint, size, conns, duration):
    cmd = [LOADGEN, "--url-fmt",
           f"{endpoint}/small/k%05u", "--keys", str(max(64, conns * 8)), "--connections",
           str(conns), "--duration", str(duration), "--warmup", "1", "--sigv4", REGION,
           "--user", f"{ACCESS_KEY}:{SECRET_KEY}", "--put-bytes", str(size)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=duration + 180)
    if out.returncode != 0:
        raise RuntimeError(f"loadgen failed ({out.returncode}): {out.stdout[-400:]} "
                           f"{out.stderr[-400:]}")
    return json.loads(out.stdout)


def run_wharfd(build, root, size, conns_list, duration):
    os.environ["WHARF_BUILD_DIR"] = build
    d = tempfile.mkdtemp(prefix="wharf-smallput-", dir=root)
    res = {}
    try:
        with WharfServer(data_dir=d, extra_args=["--durability", "disk"],
                         log_level="warn") as srv:
            subprocess.run(["curl", "-sf", "-X", "PUT", "--aws-sigv4", f"aws:amz:{REGION}:s3",
                            "-u", f"{ACCESS_KEY}:{SECRET_KEY}", "-H",
                            "x-amz-content-sha256: UNSIGNED-PAYLOAD", f"{srv.endpoint}/small"],
                           check=True, timeout=30)
            for conns in conns_list:
                c0 = proc_cpu_s(srv.proc.pid)
                r = loadgen_put(srv.endpoint, size, conns, duration)
                cpu = proc_cpu_s(srv.proc.pid) - c0
                res[conns] = {"ops_per_s": r["ops_per_s"], "errors": r["errors"],
                              "p50_ms": r["latency"]["p50_ms"],
                              "p99_ms": r["latency"]["p99_ms"],
                              "server_cpu_s_per_1000": 1000 * cpu / max(1, r["ops"])}
    finally:
        subprocess.run(["rm", "-rf", d], check=False)
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", default="/var/tmp", help="a directory on the file system to test")
    ap.add_argument("--size", default="4K")
    ap.add_argument("--connections", default="1,16")
    ap.add_argument("--duration", type=float, default=5)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--base-build", default=None)
    ap.add_argument("--results", default=os.path.join(HERE, "..", "results"))
    a = ap.parse_args()
    size = parse_size(a.size)
    conns = [int(x) for x in a.connections.split(",")]
    if not 1 <= a.repeats <= 20 or not 0 < a.duration <= 60:
        ap.error("--repeats 1..20 and --duration (0, 60] seconds")
    global LOADGEN
    LOADGEN = os.path.join(os.path.abspath(a.build), "bench", "loadgen")  # every arm's load
    arms = [("wharfd", os.path.abspath(a.build))]
    if a.base_build:
        arms.append(("wharfd-base", os.path.abspath(a.base_build)))
    samples = {name: {c: [] for c in conns} for name, _ in arms + [("limit", None)]}
    for rep in range(a.repeats):
        for name, build in arms:
            r = run_wharfd(build, a.dir, size, conns, a.duration)
            for c in conns:
                samples[name][c].append(r[c])
                print(f"rep {rep} {name:12s} c={c:<3d} {r[c]['ops_per_s']:8.0f} PUT/s "
                      f"p50 {r[c]['p50_ms']:.2f} ms p99 {r[c]['p99_ms']:.2f} ms "
                      f"cpu {r[c]['server_cpu_s_per_1000']:.3f} s/1000", flush=True)
        for c in conns:
            ops = fs_limit(a.dir, size, c, a.duration)
            samples["limit"][c].append({"ops_per_s": ops})
            print(f"rep {rep} {'limit':12s} c={c:<3d} {ops:8.0f} creates/s", flush=True)
    summary = {}
    for name, per in samples.items():
        summary[name] = {}
        for c, rs in per.items():
            summary[name][c] = {k: statistics.median(r[k] for r in rs) for k in rs[0]}
            summary[name][c]["ops_per_s_all"] = [round(r["ops_per_s"], 1) for r in rs]
    for c in conns:
        line = f"c={c}: wharfd {summary['wharfd'][c]['ops_per_s']:.0f}/s"
        if a.base_build:
            line += (f", base {summary['wharfd-base'][c]['ops_per_s']:.0f}/s "
                     f"({summary['wharfd'][c]['ops_per_s'] / summary['wharfd-base'][c]['ops_per_s']:.2f}x)")
        line += (f", file system {summary['limit'][c]['ops_per_s']:.0f}/s "
                 f"({summary['wharfd'][c]['ops_per_s'] / summary['limit'][c]['ops_per_s']:.2f} of it)")
        print(line)
    root = {"params": {"size": size, "connections": conns, "duration_s": a.duration,
                       "repeats": a.repeats, "dir": a.dir, "durability": "disk",
                       "base_build": a.base_build},
            "environment": environment(), "summary": summary,
            "samples": {n: {str(c): v for c, v in per.items()} for n, per in samples.items()}}
    path = write_result(a.results, "small_put", root)
    print("wrote", path)


if __name__ == "__main__":
    main()
