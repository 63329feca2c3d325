# SPDX-License-Identifier: Apache-2.0
"""Shared parts of the PyTorch benchmark programs (bench/py/*.py, run with /usr/bin/python3).

Each program starts its own wharfd (tests/lib/wharfd.py), runs its arms paired A B C A B C
over the same server state, gates every RDMA figure on the server's /metrics counters
(>= 0.99 of the payload, else the cell carries an error), measures CPU (client process,
server process, whole host) and writes one result file per run with bench/benchlib.py's
schema ("wharf-bench/1": benchmark, backend, params, environment, limits, results, timestamp).
"""
import gc
import os
import resource
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
for p in (os.path.join(REPO, "bench"), os.path.join(REPO, "tests", "lib"),
          os.path.join(REPO, "python")):
    if p not in sys.path:
        sys.path.insert(0, p)

import benchlib as bl  # noqa: E402
import wharf  # noqa: E402
from wharfd import ACCESS_KEY, REGION, SECRET_KEY, WharfServer  # noqa: E402

GATE = 0.99
GiB = 1024 ** 3
MiB = 1024 ** 2


def start_server(args):
    srv = WharfServer(data_dir=getattr(args, "data", None), log_level="warn",
                      extra_args=list(getattr(args, "server_arg", None) or ()))
    srv.start()
    return srv


def make_client(srv, arm, concurrency=4, chunk_size=None):
    """arm: "rdma" (ofi+shm over the server's Unix socket), "rdma-tcp" (ofi+tcp) or "http"."""
    prov = {"rdma": "ofi+shm", "rdma-tcp": "ofi+tcp", "http": None}[arm]
    return wharf.Client(srv.endpoint, ACCESS_KEY, SECRET_KEY, region=REGION, provider=prov,
                        unix_socket=srv.unix_socket if prov == "ofi+shm" else None,
                        concurrency=concurrency, chunk_size=chunk_size)


def boto3_client(srv, concurrency):
    import boto3
    from botocore.config import Config
    os.environ.pop("AWS_CA_BUNDLE", None)
    return boto3.client("s3", endpoint_url=srv.endpoint, aws_access_key_id=ACCESS_KEY,
                        aws_secret_access_key=SECRET_KEY, region_name=REGION,
                        config=Config(max_pool_connections=max(10, concurrency * 2),
                                      s3={"addressing_style": "path"}))


def scrape(srv):
    with urllib.request.urlopen(srv.endpoint + "/metrics", timeout=10) as r:
        return bl.parse_metrics(r.read().decode())


class Window:
    """Witness + CPU around one measurement: server counter deltas, client/server/host CPU."""

    def __init__(self, srv):
        self.srv = srv

    def __enter__(self):
        gc.collect()
        self.m0 = scrape(self.srv)
        self.h0 = bl.host_cpu()
        self.s0 = bl.proc_cpu_s(self.srv.proc.pid)
        ru = resource.getrusage(resource.RUSAGE_SELF)
        self.c0 = ru.ru_utime + ru.ru_stime
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.wall_s = time.perf_counter() - self.t0
        ru = resource.getrusage(resource.RUSAGE_SELF)
        self.client_cpu_s = ru.ru_utime + ru.ru_stime - self.c0
        self.server_cpu_s = bl.proc_cpu_s(self.srv.proc.pid) - self.s0
        self.host_cpu_s = bl.host_busy_s(self.h0, bl.host_cpu())
        m1 = scrape(self.srv)
        self.delta = bl.metrics_delta(self.m0, m1)
        # the server's view: it writes into client memory for a GET, reads from it for a PUT
        self.rdma_get = self.delta.get("wharf_rdma_read_bytes_total", 0.0)
        self.rdma_put = self.delta.get("wharf_rdma_write_bytes_total", 0.0)

    def cpu(self, nbytes):
        gb = nbytes / 1e9 if nbytes else float("nan")
        return {"client_cpu_s": self.client_cpu_s, "server_cpu_s": self.server_cpu_s,
                "host_cpu_s": self.host_cpu_s, "client_cpu_s_per_gb": self.client_cpu_s / gb,
                "server_cpu_s_per_gb": self.server_cpu_s / gb,
                "host_cpu_s_per_gb": self.host_cpu_s / gb}

    def witness(self):
        return {"rdma_get_bytes": self.rdma_get, "rdma_put_bytes": self.rdma_put,
                "wharf_rdma_read_bytes_total": self.rdma_get,
                "wharf_rdma_read_ops_total": self.delta.get("wharf_rdma_read_ops_total", 0.0),
                "wharf_rdma_write_bytes_total": self.rdma_put,
                "wharf_rdma_write_ops_total": self.delta.get("wharf_rdma_write_ops_total", 0.0)}

    def gate(self, arm, direction, payload):
        """None, or the reason the RDMA figure fails its gate. direction: "get" or "put"."""
        if not arm.startswith("rdma"):
            return None
        got = self.rdma_get if direction == "get" else self.rdma_put
        if got < GATE * payload:
            return (f"rdma-not-used: server counted {int(got)} RDMA {direction} bytes of "
                    f"{payload} ({got / max(1, payload):.3f} < {GATE})")
        return None


def summarize(runs, field):
    return bl.summary([r[field] for r in runs if r.get(field) is not None and
                       not r.get("error")])


def limits(args):
    if getattr(args, "no_limits", False):
        return {"skipped": True}
    return bl.measure_limits(repeats=3, mib=512)


def pinned_copy_rates(nbytes, repeats):
    """Pinned host-to-device and device-to-host copy of nbytes: GB/s medians."""
    import torch
    h = torch.empty(nbytes, dtype=torch.uint8).pin_memory()
    d = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    out = {}
    for name, fn in (("h2d_pinned", lambda: d.copy_(h, non_blocking=True)),
                     ("d2h_pinned", lambda: h.copy_(d, non_blocking=True))):
        fn()
        torch.cuda.synchronize()
        rates = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn()
            torch.cuda.synchronize()
            rates.append(nbytes / (time.perf_counter() - t0) / 1e9)
        out[name] = bl.summary(rates)
    del h, d
    return out


def memory_peaks(srv):
    """The host memory the benchmark held at its peak: this process's RSS (ru_maxrss), the
    server's pinned GPU staging (budget, allocated, peak in use) from its /metrics."""
    with urllib.request.urlopen(srv.endpoint + "/metrics", timeout=10) as r:
        text = r.read().decode()
    out = {"client_max_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}
    for line in text.splitlines():
        if line.startswith('wharf_cuda_pinned_bytes{state="'):
            state = line.split('"')[1]
            out[f"server_cuda_pinned_{state}_bytes"] = int(float(line.rsplit(" ", 1)[1]))
    return out


def limit_rates(lim):
    """GB/s medians of the same-run limits (memcpy, process_vm_writev, loopback TCP)."""
    out = {}
    if not isinstance(lim, dict):
        return out
    for k, v in lim.items():
        if isinstance(v, dict) and "median" in v:
            out[k] = v["median"]
    return out


class Incremental:
    """One result file per run, rewritten after every cell: a run stopped by its time limit
    still leaves every cell it finished (root["complete"] says whether it ended)."""

    def __init__(self, args, benchmark):
        self.args, self.benchmark, self.path = args, benchmark, None

    def write(self, root, complete):
        import json
        root["complete"] = complete
        if self.path is None:
            self.path = write(self.args, self.benchmark, root)
        else:
            tmp = self.path + ".tmp"
            with open(tmp, "w") as f:
                json.dump(root, f, indent=1, sort_keys=True)
            os.replace(tmp, self.path)


def write(args, benchmark, root):
    if getattr(args, "server_arg", None) and isinstance(root.get("params"), dict):
        root["params"]["server_args"] = list(args.server_arg)
    path = bl.write_result(args.results, benchmark, root, tag=getattr(args, "tag", ""),
                           backend="wharf")
    print(f"result: {path}", file=sys.stderr)
    return path


def common_args(ap):
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--results", default=os.path.join(REPO, "results"))
    ap.add_argument("--tag", default="")
    ap.add_argument("--data", default=None, help="wharfd data dir (default: temporary)")
    ap.add_argument("--server-arg", action="append", default=[], metavar="ARG",
                    help="one more wharfd argument (repeat it: --server-arg=--put-stripes "
                         "--server-arg=4); recorded in params.server_args")
    ap.add_argument("--concurrency", type=int, default=4,
                    help="parallel requests per transfer, the same for every arm")
    ap.add_argument("--no-limits", action="store_true", help="skip the same-run limits")
