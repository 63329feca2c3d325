#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The soak in one command: a wharfd of its own, bench/soak against it, the result and the plot.

  /usr/bin/python3 bench/soak_run.py                      # 10 minutes, 64 + 10 clients
  /usr/bin/python3 bench/soak_run.py --duration 120 -- --clients 32

wharfd is started by tests/lib/wharfd.py (the one way to start a server) on a free loopback
port with a temporary data directory. The result goes to results/soak-<UTC time>.json and the
plot (bench/soak_plot.py) to docs/soak.png (--plot to change it, --no-plot to skip it).
Everything after "--" goes to bench/soak (docs/soak.md lists its options). Exit status is
bench/soak's: 0 when well-behaved clients saw no error and no byte was wrong.
"""
import argparse
import datetime
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))

from wharfd import WharfServer, build_dir  # noqa: E402


def main():
    argv = sys.argv[1:]
    rest = []
    if "--" in argv:
        k = argv.index("--")
        argv, rest = argv[:k], argv[k + 1:]
    ap = argparse.ArgumentParser(description="bench/soak against a local wharfd")
    ap.add_argument("--duration", type=float, default=600, help="seconds (default 600)")
    ap.add_argument("--warmup", type=float, default=60, help="seconds left out of the slopes")
    ap.add_argument("--out", default=None, help="result file (default results/soak-<time>.json)")
    ap.add_argument("--plot", default=os.path.join(ROOT, "docs", "soak.png"))
    ap.add_argument("--no-plot", action="store_true")
    ap.add_argument("--rdma-mem", default=None, help="wharfd --rdma-mem")
    ap.add_argument("--log-level", default="warn", help="wharfd's (default warn)")
    ap.add_argument("--keep-log", default=None, help="copy wharfd's log here at the end")
    a = ap.parse_args(argv)
    exe = os.path.join(build_dir(), "bench", "soak")
    if not os.path.exists(exe):
        sys.exit(f"soak_run: {exe} is missing: build first (make build)")
    out = a.out or os.path.join(
        ROOT, "results",
        "soak-" + datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%S") + ".json")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    extra = ["--rdma-mem", a.rdma_mem] if a.rdma_mem else []
    srv = WharfServer(extra_args=extra, log_level=a.log_level)
    srv.start()
    rc = 1
    try:
        cmd = [exe, "--endpoint", srv.endpoint, "--pid", str(srv.proc.pid),
               "--unix-socket", srv.unix_socket, "--duration", str(a.duration),
               "--warmup", str(a.warmup), "--out", out] + rest
        print(f"soak_run: wharfd {srv.endpoint} pid {srv.proc.pid}; {' '.join(cmd)}",
              file=sys.stderr, flush=True)
        # bounded: the run plus time for the last requests (two op timeouts) to end
        p = subprocess.run(cmd, env=srv.client_env(), timeout=a.duration + 600)
        rc = p.returncode
        if not srv.alive():
            print("soak_run: wharfd died during the run:\n" + srv.log_tail(), file=sys.stderr)
            rc = rc or 1
    except subprocess.TimeoutExpired:
        print("soak_run: bench/soak ran past its bound and was killed", file=sys.stderr)
    finally:
        if rc != 0:
            print("soak_run: wharfd log tail:\n" + srv.log_tail(3000), file=sys.stderr)
        stop_rc = srv.stop()
        if stop_rc not in (0, None):
            print(f"soak_run: wharfd exited {stop_rc} on SIGTERM", file=sys.stderr)
            rc = rc or 1
        if a.keep_log:
            shutil.copyfile(srv.log_path, a.keep_log)
        shutil.rmtree(srv.data_dir, ignore_errors=True)
    if os.path.exists(out):
        print(f"soak_run: result {out}", file=sys.stderr)
        if not a.no_plot:
            subprocess.run([sys.executable, os.path.join(HERE, "soak_plot.py"), out,
                            "-o", a.plot], check=False, timeout=120)
    return rc


if __name__ == "__main__":
    sys.exit(main())
