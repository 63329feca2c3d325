#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""What encryption at rest costs wharf's RDMA path: one wharfd with its data directory on
tmpfs (so the disk is not what is measured), the same objects PUT and GET over RDMA (libwharf,
ofi+shm over the Unix socket: the bound, direct shm path) into a plain bucket (A) and into a
bucket whose default encryption is AES256, SSE-S3 (B), in paired rounds A B A B ..., medians:

  put   a plain PUT takes the positional path (the engine's copy threads write the file at
        their offsets); an SSE-S3 PUT the in-order sink into the writer's cipher (AES-256-GCM
        per 64 KiB segment, and the plaintext's MD5 for its ETag)
  get   a plain GET maps the file and copies it into the client; an SSE-S3 GET reads, verifies
        and decrypts each segment into the engine's pool buffers (rdma_get_source), then
        copies them into the client

Each round PUTs every object then GETs it back, one request at a time (STREAMS 1: the rate of
one request), and checks every byte outside the timed window. The server's CPU seconds per GB
come from /proc. The machine's memcpy rate and one core's AES-256-GCM rate (openssl speed,
64 KiB blocks) are measured in the same run as limits. Writes a wharf-bench/1 JSON result
(params, limits, results) to --results.

  /usr/bin/python3 bench/sse_rdma_bench.py [--size 64M] [--objects 2] [--repeats 3]
                                           [--results results]
"""
import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "python"),
                 os.path.join(HERE, "..", "tests", "lib")]

import boto3  # noqa: E402
import numpy as np  # noqa: E402
from botocore.config import Config  # noqa: E402

import wharf  # noqa: E402
from benchlib import environment, memcpy_gbps, parse_size, proc_cpu_s, write_result  # noqa: E402
from sse_bench import aes_gcm_gbps  # noqa: E402
from wharfd import ACCESS_KEY, REGION, SECRET_KEY, WharfServer  # noqa: E402

ARMS = (("plain", "plainb"), ("sse-s3", "sseb"))


def timed(pid, fn, keys, size):
    """GB/s and server CPU-s/GB of fn(key) over every key, one after another."""
    c0, t0 = proc_cpu_s(pid), time.perf_counter()
    for k in keys:
        rep = fn(k)
        if rep.bytes != size or rep.transport != "rdma":
            raise RuntimeError(f"{k}: {rep.bytes} bytes over {rep.transport}")
    dt, cpu = time.perf_counter() - t0, proc_cpu_s(pid) - c0
    gb = len(keys) * size / 1e9
    return gb / dt, cpu / gb


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="64M")
    ap.add_argument("--objects", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--results", default="results")
    a = ap.parse_args()
    if a.repeats < 3:
        ap.error("--repeats must be at least 3 (medians of paired rounds)")
    size = parse_size(a.size)
    tmp = "/dev/shm" if os.path.isdir("/dev/shm") else None
    data_dir = tempfile.mkdtemp(prefix="wharf-sse-rdma-", dir=tmp)
    srv = WharfServer(data_dir=data_dir, providers="shm").start()
    try:
        s3 = boto3.client("s3", endpoint_url=srv.endpoint, aws_access_key_id=ACCESS_KEY,
                          aws_secret_access_key=SECRET_KEY, region_name=REGION,
                          config=Config(s3={"addressing_style": "path"}))
        s3.create_bucket(Bucket="plainb")
        s3.create_bucket(Bucket="sseb")
        s3.put_bucket_encryption(Bucket="sseb", ServerSideEncryptionConfiguration={
            "Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]})
        c = wharf.Client(endpoint=srv.endpoint, access_key=ACCESS_KEY, secret_key=SECRET_KEY,
                         region=REGION, provider="ofi+shm", unix_socket=srv.unix_socket)
        rng = np.random.default_rng(1)
        keys = [f"o{i}" for i in range(a.objects)]
        src = {k: rng.integers(0, 256, size, dtype=np.uint8) for k in keys}
        dst = {k: np.zeros(size, dtype=np.uint8) for k in keys}
        for b in list(src.values()) + list(dst.values()):
            c.register(b)
        runs = {f"{op}-{arm}": [] for op in ("put", "get") for arm, _ in ARMS}
        pid = srv.proc.pid
        for _ in range(a.repeats):
            for arm, bucket in ARMS:  # A then B, every round
                runs[f"put-{arm}"].append(timed(
                    pid, lambda k, b=bucket: c.put_from(b, k, src[k], transport="rdma"),
                    keys, size))
                for d in dst.values():
                    d[:] = 0
                runs[f"get-{arm}"].append(timed(
                    pid, lambda k, b=bucket: c.get_into(b, k, dst[k], transport="rdma"),
                    keys, size))
                for k in keys:  # every byte, outside the window
                    if not np.array_equal(src[k], dst[k]):
                        raise RuntimeError(f"{arm}: {k} came back wrong")
        h = s3.head_object(Bucket="sseb", Key=keys[0])
        if h.get("ServerSideEncryption") != "AES256":
            raise RuntimeError("the sse-s3 bucket's objects are not encrypted")
        for b in list(src.values()) + list(dst.values()):
            c.deregister(b)
        c.close()
        results = {}
        for op in ("put", "get"):
            cell = {}
            for arm, _ in ARMS:
                r = runs[f"{op}-{arm}"]
                cell[arm] = {"gbps": statistics.median(g for g, _ in r),
                             "server_cpu_s_per_gb": statistics.median(x for _, x in r),
                             "runs_gbps": [round(g, 3) for g, _ in r]}
            cell["sse_over_plain"] = statistics.median(
                b[0] / p[0] for p, b in zip(runs[f"{op}-plain"], runs[f"{op}-sse-s3"]))
            results[op] = cell
            print(f"{op}: plain {cell['plain']['gbps']:.2f} GB/s "
                  f"({cell['plain']['server_cpu_s_per_gb']:.2f} CPU-s/GB), sse-s3 "
                  f"{cell['sse-s3']['gbps']:.2f} GB/s "
                  f"({cell['sse-s3']['server_cpu_s_per_gb']:.2f} CPU-s/GB), "
                  f"sse/plain {cell['sse_over_plain']:.2f}", flush=True)
        mc, aes = memcpy_gbps(), aes_gcm_gbps()
        root = {"params": {"size": size, "objects": a.objects, "repeats": a.repeats,
                           "streams": 1, "provider": "ofi+shm (bound, Unix socket)",
                           "data_dir": "tmpfs" if tmp else "disk",
                           "order": "paired rounds: plain then sse-s3, PUT then GET",
                           "sse": "SSE-S3 (bucket default), AES-256-GCM, 64 KiB segments"},
                "limits": {"memcpy_gbps_1core": mc, "aes_256_gcm_gbps_1core_64k": aes,
                           "loadavg": os.getloadavg()},
                "environment": environment("ofi+shm"),
                "results": results}
        path = write_result(a.results, "sse_rdma", root)
        print(f"memcpy (1 core) {mc:.2f} GB/s; AES-256-GCM (1 core, 64 KiB) "
              f"{aes if aes is None else round(aes, 2)} GB/s; wrote {path}")
    finally:
        srv.stop()
        srv.cleanup()
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
