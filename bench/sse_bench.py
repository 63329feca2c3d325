#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""What encryption at rest costs wharf's GET: one wharfd, the same objects stored plain and as
SSE-S3 (a bucket whose default encryption is AES256), measured in paired rounds (A B C,
repeated, medians):

  http       GET of the plain objects over HTTP (sendfile)
  http-sse   GET of the SSE-S3 objects over HTTP (each 64 KiB segment read, authenticated and
             decrypted by the server, then sent)
  rdma       GET of the plain objects over RDMA (ofi+tcp): the reference (RDMA of encrypted
             objects against plain ones: bench/sse_rdma_bench.py)

Each arm reads every object into memory with STREAMS threads (libwharf), checks every byte
outside the timed window, and reports GB/s and the server's CPU seconds per GB. The machine's
memcpy rate and AES-256-GCM decryption rate (openssl speed, one core, 64 KiB blocks: the
server's per-core limit for encrypted bytes) are measured in the same run. Writes a JSON result
to --results.

  /usr/bin/python3 bench/sse_bench.py [--size 32M] [--objects 8] [--streams 1,4]
                                      [--repeats 3] [--results results]
"""
import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "python"),
                 os.path.join(HERE, "..", "tests", "lib")]

import boto3  # noqa: E402
import numpy as np  # noqa: E402
from botocore.config import Config  # noqa: E402

import wharf  # noqa: E402
from benchlib import memcpy_gbps, parse_size, read_all  # noqa: E402
from wharfd import ACCESS_KEY, REGION, SECRET_KEY, WharfServer  # noqa: E402


def aes_gcm_gbps():
    """openssl speed's AES-256-GCM rate at 64 KiB blocks, one core (libcrypto, as wharfd)."""
    r = subprocess.run(["openssl", "speed", "-evp", "aes-256-gcm", "-bytes", "65536",
                        "-seconds", "2"], capture_output=True, text=True, timeout=120)
    m = re.search(r"^aes-256-gcm\s+([\d.]+)k", r.stdout, re.M | re.I)
    return float(m.group(1)) * 1000 / 1e9 if m else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="32M")
    ap.add_argument("--objects", type=int, default=8)
    ap.add_argument("--streams", default="1,4")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--results", default="results")
    a = ap.parse_args()
    size = parse_size(a.size)
    streams = [int(x) for x in a.streams.split(",")]
    srv = WharfServer(providers="tcp").start()
    try:
        s3 = boto3.client("s3", endpoint_url=srv.endpoint, aws_access_key_id=ACCESS_KEY,
                          aws_secret_access_key=SECRET_KEY, region_name=REGION,
                          config=Config(s3={"addressing_style": "path"}))
        s3.create_bucket(Bucket="plainb")
        s3.create_bucket(Bucket="sseb")
        s3.put_bucket_encryption(Bucket="sseb", ServerSideEncryptionConfiguration={
            "Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]})
        rng = np.random.default_rng(1)
        keys = [f"o{i}" for i in range(a.objects)]
        objs = {k: rng.integers(0, 256, size, dtype=np.uint8).tobytes() for k in keys}
        for k in keys:
            s3.put_object(Bucket="plainb", Key=k, Body=objs[k])
            r = s3.put_object(Bucket="sseb", Key=k, Body=objs[k])
            assert r.get("ServerSideEncryption") == "AES256"
        arms = {"http": ("plainb", "none", "http"), "http-sse": ("sseb", "none", "http"),
                "rdma": ("plainb", "ofi+tcp", "rdma")}
        clients = {n: wharf.Client(endpoint=srv.endpoint, access_key=ACCESS_KEY,
                                   secret_key=SECRET_KEY, region=REGION, provider=p)
                   for n, (_, p, _) in arms.items()}
        mc, aes = memcpy_gbps(), aes_gcm_gbps()
        cells = []
        for s in streams:
            # One buffer per object and arm: every byte stays there to be checked.
            bufs = {n: {k: bytearray(size) for k in keys} for n in arms}
            for n, (_, _, tr) in arms.items():
                if tr == "rdma":
                    for b in bufs[n].values():
                        clients[n].register(b)
            got = {n: [] for n in arms}
            for _ in range(a.repeats):
                for n, (bk, _, tr) in arms.items():
                    for b in bufs[n].values():  # poisoned before the window
                        b[:] = bytes(size)
                    got[n].append(read_all(clients[n], srv.proc.pid, bk, keys, size, s, tr,
                                           lambda i, k, b=bufs[n]: b[k]))
                    for k in keys:  # every byte, outside the window
                        if bufs[n][k] != objs[k]:
                            raise RuntimeError(f"{n}: {k} came back wrong")
            cell = {"streams": s}
            for n in arms:
                cell[n] = {"gbps": statistics.median(g for g, _ in got[n]),
                           "server_cpu_s_per_gb": statistics.median(c for _, c in got[n]),
                           "runs_gbps": [round(g, 3) for g, _ in got[n]]}
            cell["sse_over_http"] = statistics.median(
                x[0] / y[0] for x, y in zip(got["http-sse"], got["http"]))
            cells.append(cell)
            for n, (_, _, tr) in arms.items():
                if tr == "rdma":
                    for b in bufs[n].values():
                        clients[n].deregister(b)
            print(f"streams={s}: " + "  ".join(
                f"{n} {cell[n]['gbps']:.2f} GB/s ({cell[n]['server_cpu_s_per_gb']:.2f} CPU-s/GB)"
                for n in arms) + f"  sse/http {cell['sse_over_http']:.2f}", flush=True)
        for c in clients.values():
            c.close()
        out = {"bench": "sse_get", "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
               "params": {"size": size, "objects": a.objects, "streams": streams,
                          "repeats": a.repeats, "provider": "ofi+tcp",
                          "sse": "SSE-S3, AES-256-GCM, 64 KiB segments"},
               "limits": {"memcpy_gbps_1core": mc, "aes_256_gcm_gbps_1core_64k": aes,
                          "cpus": os.cpu_count(), "host": platform.node(),
                          "loadavg": os.getloadavg()},
               "results": {"cells": cells}}
        os.makedirs(a.results, exist_ok=True)
        path = os.path.join(a.results, f"sse-get-{time.strftime('%Y%m%d-%H%M%S')}.json")
        with open(path, "w") as f:
            json.dump(out, f, indent=1)
        print(f"memcpy (1 core) {mc:.2f} GB/s; AES-256-GCM (1 core, 64 KiB) "
              f"{aes if aes is None else round(aes, 2)} GB/s; wrote {path}")
    finally:
        srv.cleanup()


if __name__ == "__main__":
    main()
