#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Runs the benchmark program (bench/wharf_bench) against a wharfd of its own on this host.

  /usr/bin/python3 bench/run_local.py [--providers shm,tcp] [--rdma-mem 512M] [--data DIR] \
      -- fetch --sizes 64M,256M --concurrency 1,4

wharfd is started by tests/lib/wharfd.py (the one way to start a server) on a free loopback port
with a temporary data directory (or --data), and the benchmark gets its endpoint, credentials
and Unix socket through the environment (WHARF_ENDPOINT, WHARF_ACCESS_KEY, WHARF_SECRET_KEY,
WHARF_UNIX_SOCKET; WHARF_DATA_DIR, so that params.data_fs names the file system PUTs land on).
Everything after "--" goes to wharf_bench. The server's log is kept under the results folder
when the run fails. --durable-limit first measures the data directory's durable write rate
with wharfd's own write-and-sync patterns (bench/disk_commit.py) and hands it to wharf_bench as
limits.durable_write_gbps (not on tmpfs).
"""
import argparse
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests", "lib"))

import benchlib as bl  # noqa: E402
from wharfd import WharfServer  # noqa: E402


def durable_limit(data_dir):
    """wharf_bench flags with the durable write rate of data_dir's file system ([] on tmpfs)."""
    if bl.fs_type(data_dir) == "tmpfs":
        print("run_local: data directory on tmpfs: no durable write limit", file=sys.stderr)
        return []
    d = os.path.join(data_dir, "durable-limit")
    os.makedirs(d, exist_ok=True)
    try:
        p = subprocess.run([sys.executable, os.path.join(HERE, "disk_commit.py"), d,
                            "--patterns", "inplace,commit+sfr", "--writers", "1,16",
                            "--mib", "64", "--files", "4", "--repeats", "3", "--best"],
                           capture_output=True, text=True, timeout=1800, check=True)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    gbps, _, how = p.stdout.strip().partition(" ")
    print(f"run_local: durable write limit {gbps} GB/s ({how})", file=sys.stderr)
    return ["--durable-write-gbps", gbps, "--durable-how",
            f"bench/disk_commit.py on the data directory, best median of in place and "
            f"commit+sfr at 1 and 16 writers x 4 files x 64 MiB, 3 repeats: {how}"]


def main():
    argv = sys.argv[1:]
    rest = []
    if "--" in argv:
        k = argv.index("--")
        argv, rest = argv[:k], argv[k + 1:]
    ap = argparse.ArgumentParser(description="bench/wharf_bench against a local wharfd")
    ap.add_argument("--providers", default=None, help="wharfd --providers (default: its own)")
    ap.add_argument("--rdma-mem", default=None, help="wharfd --rdma-mem")
    ap.add_argument("--data", default=None, help="data directory (default: a temporary one)")
    ap.add_argument("--log-level", default="warn")
    ap.add_argument("--copy-threads", default=None, help="wharfd --copy-threads")
    ap.add_argument("--wharfd-arg", action="append", default=[],
                    help="one more wharfd argument (repeat it), e.g. --wharfd-arg=--put-threads=8")
    ap.add_argument("--timeout", type=int, default=3600, help="bound on the whole run, seconds")
    ap.add_argument("--durable-limit", action="store_true",
                    help="before the run, measure the data directory's durable write rate with "
                         "wharfd's own patterns (bench/disk_commit.py: in place and commit+sfr, "
                         "1 and 16 writers) and record it as limits.durable_write_gbps; "
                         "skipped on tmpfs")
    a = ap.parse_args(argv)
    if not rest:
        ap.error("give the benchmark after --, e.g. -- fetch --sizes 64M")
    extra = []
    if a.rdma_mem:
        extra += ["--rdma-mem", a.rdma_mem]
    if a.copy_threads:
        extra += ["--copy-threads", a.copy_threads]
    for x in a.wharfd_arg:
        extra += x.split("=", 1) if x.startswith("--") and "=" in x else [x]
    cmd = [os.path.join(bl.build_dir(), "bench", "wharf_bench")] + rest
    srv = WharfServer(data_dir=a.data, extra_args=extra, providers=a.providers,
                      log_level=a.log_level)
    if a.durable_limit:
        rest += durable_limit(srv.data_dir)
    srv.start()
    rc = 1
    try:
        env = srv.client_env()
        env["WHARF_DATA_DIR"] = srv.data_dir  # params.data_fs
        print(f"run_local: wharfd {srv.endpoint} data {srv.data_dir}; {' '.join(cmd)}",
              file=sys.stderr, flush=True)
        p = subprocess.run(cmd, env=env, timeout=a.timeout)
        rc = p.returncode
        if not srv.alive():
            print("run_local: wharfd died during the run:\n" + srv.log_tail(), file=sys.stderr)
            rc = rc or 1
    except subprocess.TimeoutExpired:
        print(f"run_local: the benchmark ran past {a.timeout} s and was killed", file=sys.stderr)
    finally:
        if rc != 0:
            print("run_local: wharfd log tail:\n" + srv.log_tail(3000), file=sys.stderr)
        stop_rc = srv.stop()
        if stop_rc not in (0, None):
            print(f"run_local: wharfd exited {stop_rc} on SIGTERM", file=sys.stderr)
        if a.data is None:
            shutil.rmtree(srv.data_dir, ignore_errors=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
