#!/usr/bin/python3
"""What TLS costs wharf's GET: two wharfd on this host, one plain and one with --tls-cert
(a test CA's certificate), the same objects on both, measured in paired rounds
(A B C D, repeated, medians):

  http       GET over plain HTTP (libwharf, transport http)
  https      GET over HTTPS (the bytes through TLS)
  rdma       GET over RDMA (ofi+tcp), the signed request over plain HTTP
  rdma-tls   GET over RDMA (ofi+tcp), the signed request over HTTPS, the bytes over the fabric

Each arm reads every object into registered memory with STREAMS threads, and reports GB/s
and the server's CPU seconds per GB (utime+stime of its process over the window). The
machine's memcpy rate is measured in the same run. Writes a JSON result to --results.

  /usr/bin/python3 bench/tls_bench.py [--size 64M] [--objects 8] [--streams 1,4]
                                      [--repeats 3] [--results results]
"""
import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "python"), os.path.join(HERE, "..", "tests", "lib")]

import numpy as np  # noqa: E402

import wharf  # noqa: E402
from wharfd import ACCESS_KEY, REGION, SECRET_KEY, TestCert, WharfServer  # noqa: E402


def parse_size(s):
    m = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(s[:-1]) * m[s[-1].upper()] if s[-1].upper() in m else int(s)


def cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        parts = f.read().rsplit(")", 1)[1].split()
    return (int(parts[11]) + int(parts[12])) / os.sysconf("SC_CLK_TCK")


def memcpy_gbps(n=256 << 20, repeats=3):
    a = np.ones(n, dtype=np.uint8)
    b = np.empty_like(a)
    best = 0.0
    for _ in range(repeats):
        t = time.perf_counter()
        np.copyto(b, a)
        best = max(best, n / (time.perf_counter() - t) / 1e9)
    return best


def client(srv, cert, provider):
    return wharf.Client(endpoint=srv.endpoint, access_key=ACCESS_KEY, secret_key=SECRET_KEY,
                        region=REGION, provider=provider, ca_bundle=cert.ca if srv.tls else None)


def measure(c, srv, keys, size, streams, transport, bufs):
    """GB/s and server CPU-s per GB of reading every key once with `streams` threads."""
    todo = list(keys)
    lock = threading.Lock()
    errors = []

    def work(i):
        while True:
            with lock:
                if not todo:
                    return
                k = todo.pop()
            try:
                rep = c.get_into("tlsb", k, bufs[i], transport=transport)
                if rep.bytes != size or rep.transport != transport:
                    errors.append(f"{k}: {rep.bytes} bytes over {rep.transport}")
            except Exception as e:  # noqa: BLE001
                errors.append(f"{k}: {e}")
                return
    c0 = cpu_s(srv.proc.pid)
    t0 = time.perf_counter()
    th = [threading.Thread(target=work, args=(i,)) for i in range(streams)]
    for t in th:
        t.start()
    for t in th:
        t.join(timeout=600)
    dt = time.perf_counter() - t0
    cpu = cpu_s(srv.proc.pid) - c0
    if errors:
        raise RuntimeError("; ".join(errors[:3]))
    gb = len(keys) * size / 1e9
    return gb / dt, cpu / gb


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="64M")
    ap.add_argument("--objects", type=int, default=8)
    ap.add_argument("--streams", default="1,4")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--results", default="results")
    a = ap.parse_args()
    size = parse_size(a.size)
    streams = [int(x) for x in a.streams.split(",")]
    work = tempfile.mkdtemp(prefix="wharf-tls-bench-")
    cert = TestCert(os.path.join(work, "tls"))
    plain = WharfServer(providers="tcp").start()
    tls = WharfServer(providers="tcp", tls=cert).start()
    arms = {"http": (plain, "none", "http"), "https": (tls, "none", "http"),
            "rdma": (plain, "ofi+tcp", "rdma"), "rdma-tls": (tls, "ofi+tcp", "rdma")}
    try:
        data = np.random.default_rng(1).integers(0, 256, size, dtype=np.uint8).tobytes()
        keys = [f"o{i}" for i in range(a.objects)]
        clients = {}
        for name, (srv, prov, _) in arms.items():
            clients[name] = c = client(srv, cert, prov)
        for srv, name in ((plain, "http"), (tls, "https")):
            c = clients[name]
            c.create_bucket("tlsb")
            for k in keys:
                c.put("tlsb", k, data, transport="http")
        limit = memcpy_gbps()
        cells = []
        for s in streams:
            bufs = {n: [bytearray(size) for _ in range(s)] for n in arms}
            for n in arms:
                if arms[n][2] == "rdma":
                    for b in bufs[n]:
                        clients[n].register(b)
            got = {n: [] for n in arms}
            for _ in range(a.repeats):
                for n, (srv, _, tr) in arms.items():
                    got[n].append(measure(clients[n], srv, keys, size, s, tr, bufs[n]))
            cell = {"streams": s}
            for n in arms:
                cell[n] = {"gbps": statistics.median(g for g, _ in got[n]),
                           "server_cpu_s_per_gb": statistics.median(c for _, c in got[n]),
                           "runs_gbps": [round(g, 3) for g, _ in got[n]]}
            cell["https_over_http"] = cell["https"]["gbps"] / cell["http"]["gbps"]
            cell["rdma_tls_over_rdma"] = cell["rdma-tls"]["gbps"] / cell["rdma"]["gbps"]
            cells.append(cell)
            for n in arms:
                for b in bufs[n]:
                    if arms[n][2] == "rdma":
                        clients[n].deregister(b)
            print(f"streams={s}: " + "  ".join(
                f"{n} {cell[n]['gbps']:.2f} GB/s ({cell[n]['server_cpu_s_per_gb']:.2f} CPU-s/GB)"
                for n in arms) + f"  https/http {cell['https_over_http']:.2f}"
                f"  rdma-tls/rdma {cell['rdma_tls_over_rdma']:.2f}", flush=True)
        for c in clients.values():
            c.close()
        out = {"bench": "tls_get", "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
               "params": {"size": size, "objects": a.objects, "streams": streams,
                          "repeats": a.repeats, "provider": "ofi+tcp",
                          "tls": "TLS 1.2/1.3 (GnuTLS NORMAL), ECDSA P-256 certificate"},
               "limits": {"memcpy_gbps_1core": limit, "cpus": os.cpu_count(),
                          "host": platform.node()},
               "results": {"cells": cells}}
        os.makedirs(a.results, exist_ok=True)
        path = os.path.join(a.results, f"tls-get-{time.strftime('%Y%m%d-%H%M%S')}.json")
        with open(path, "w") as f:
            json.dump(out, f, indent=1)
        print(f"memcpy (1 core) {limit:.2f} GB/s; wrote {path}")
    finally:
        plain.cleanup()
        tls.cleanup()


if __name__ == "__main__":
    main()
