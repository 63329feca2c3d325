# SPDX-License-Identifier: Apache-2.0
"""KV-cache-style blocks: N objects of B bytes PUT and GET by one RDMA batch request per
1000 keys (wharf.kv.batch_put / batch_get) against one request per key (put_from / get_into),
both over the RDMA path (ofi+shm through the Unix socket, or ofi+tcp with --provider tcp),
one request in flight at a time in both arms (stated in params). Arms alternate A B A B over
the same keys and server state; each cell is gated on the server's RDMA counters (>= 0.99 of
the payload) and every GET's bytes are compared with what was PUT, outside the timed window.

    /usr/bin/python3 bench/py/kv_batch.py --blocks 10000 --block-kib 256 --repeats 3 \\
        --results results/vm/kv-batch-<date>
"""
import argparse
import os
import sys
import time

import numpy as np

import common as cm
import benchlib as bl
import wharf.kv as kv


def run_arm(c, arm, op, bucket, keys, buf, blk):
    n = len(keys)
    if arm == "batch":
        ents = [(k, i * blk, blk) for i, k in enumerate(keys)]
        items, _ = (kv.batch_put if op == "put" else kv.batch_get)(c, bucket, buf, ents,
                                                                 verify=False)
        bad = [it for it in items if not it.ok or it.bytes != blk]
        if bad:
            raise RuntimeError(f"{len(bad)} keys failed, first {bad[0]}")
    else:
        for i, k in enumerate(keys):
            if op == "put":
                c.put_from(bucket, k, buf, offset=i * blk, length=blk, transport="rdma",
                           verify=False)
            else:
                c.get_into(bucket, k, buf[i * blk:(i + 1) * blk], transport="rdma",
                           verify=False)
    return n


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    cm.common_args(ap)
    ap.add_argument("--blocks", type=int, default=10000)
    ap.add_argument("--block-kib", type=int, default=256)
    ap.add_argument("--provider", choices=("shm", "tcp"), default="shm")
    args = ap.parse_args()
    blk = args.block_kib << 10
    srv = cm.start_server(args)
    root = {"params": {"blocks": args.blocks, "block_bytes": blk, "repeats": args.repeats,
                       "provider": args.provider, "requests_in_flight": 1,
                       "batch_keys_per_request": 1000},
            "environment": bl.environment("ofi+" + args.provider),
            "loadavg_before": open("/proc/loadavg").read().split()[:3]}
    try:
        c = cm.wharf.Client(srv.endpoint, cm.ACCESS_KEY, cm.SECRET_KEY, region=cm.REGION,
                            provider="ofi+" + args.provider, concurrency=1,
                            unix_socket=srv.unix_socket if args.provider == "shm" else None)
        bucket = "kv-bench"
        c.create_bucket(bucket)
        keys = [f"model/layer{i % 32}/blk{i:06d}" for i in range(args.blocks)]
        src = np.random.default_rng(1).integers(0, 256, size=args.blocks * blk, dtype=np.uint8)
        dst = np.zeros_like(src)
        reg_src, reg_dst = c.register(src), c.register(dst)
        payload = args.blocks * blk
        runs = []
        for r in range(args.repeats):
            for arm in ("batch", "single"):
                for op in ("put", "get"):
                    if op == "get":
                        dst[:] = 0
                    with cm.Window(srv) as w:
                        n = run_arm(c, arm, op, bucket, keys, src if op == "put" else dst, blk)
                    cell = {"repeat": r, "arm": arm, "op": op, "ops": n, "bytes": payload,
                            "wall_s": w.wall_s, "ops_per_s": n / w.wall_s,
                            "gbps": payload / w.wall_s / 1e9, "witness": w.witness(),
                            **w.cpu(payload)}
                    why = w.gate("rdma", op, payload)
                    if why:
                        cell["error"] = why
                    if op == "get":
                        cell["verified"] = bool(np.array_equal(dst, src))
                        if not cell["verified"]:
                            cell["error"] = "bytes differ from what was PUT"
                    print(f"r{r} {arm:6s} {op}: {cell['ops_per_s']:9.1f} ops/s "
                          f"{cell['gbps']:.3f} GB/s {cell.get('error', '')}", file=sys.stderr)
                    runs.append(cell)
        reg_src.close()
        reg_dst.close()
        c.close()
        res = {"runs": runs}
        for op in ("put", "get"):
            for arm in ("batch", "single"):
                res[f"{op}_{arm}_ops_per_s"] = cm.summarize(
                    [x for x in runs if x["arm"] == arm and x["op"] == op], "ops_per_s")
            b, s = res[f"{op}_batch_ops_per_s"], res[f"{op}_single_ops_per_s"]
            if b and s and b.get("median") and s.get("median"):
                res[f"{op}_speedup_median"] = b["median"] / s["median"]
        root["results"] = res
        root["loadavg_after"] = open("/proc/loadavg").read().split()[:3]
        cm.write(args, "kv-batch", root)
        for op in ("put", "get"):
            print(f"{op}: batch {res[f'{op}_batch_ops_per_s']} single "
                  f"{res[f'{op}_single_ops_per_s']} speedup {res.get(f'{op}_speedup_median')}",
                  file=sys.stderr)
    finally:
        srv.stop()
        srv.cleanup()


if __name__ == "__main__":
    main()
