#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
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
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "python"), os.path.join(HERE, "..", "tests", "lib")]

import numpy as np  # noqa: E402

import wharf  # noqa: E402
from benchlib import memcpy_gbps, parse_size, read_all  # noqa: E402
from wharfd import ACCESS_KEY, REGION, SECRET_KEY, TestCert, WharfServer  # noqa: E402


def client(srv, cert, provider):
    return wharf.Client(endpoint=srv.endpoint, access_key=ACCESS_KEY, secret_key=SECRET_KEY,
                        region=REGION, provider=provider, ca_bundle=cert.ca if srv.tls else None)


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
                    got[n].append(read_all(clients[n], srv.proc.pid, "tlsb", keys, size, s, tr,
                                           lambda i, k, b=bufs[n]: b[i]))
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
