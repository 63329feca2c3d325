#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""B7: TokenDataset tokens/s, RDMA against HTTP (into host memory, or --device cuda: into GPU
memory).

Token shards in the llm-tokens layout (int32 LE, sequences x seq_len, + JSON) are uploaded
once; then the arms alternate (rdma http rdma http ...), each iterating TokenDataset over the
same shards with the same prefetch (num_buffers x buffer_bytes, fetch_workers threads, the
same per-transfer concurrency). Batches are zero-copy [batch, seq_len] int32 views, each
touched with a 1-element read (as the seed touches its batch with a D2H read). The window is
counted in shards: warm-up shards first (not timed), then the measured shards.

An rdma repeat whose server RDMA read bytes cover < 0.99 of the bytes fetched in the window
is marked failed. Tokens are verified outside the timer: each shard's sequence i starts with
a value derived from (shard, i), checked on every batch's first row after the window.

  /usr/bin/python3 bench/py/tokens.py [--shards 6] [--shard-mib 256] [--repeats 3]
"""
import argparse
import json
import sys
import time

import common as cm
import numpy as np
import torch

from wharf.torch import TokenDataset

VOCAB = 128256


def make_shard(s, seqs, seq_len):
    rng = np.random.default_rng(1000 + s)
    toks = rng.integers(0, VOCAB, (seqs, seq_len), dtype=np.int32)
    toks[:, 0] = (np.arange(seqs) * 7 + s * 100003) % VOCAB  # a checkable first column
    return toks


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    cm.common_args(ap)
    ap.add_argument("--shards", type=int, default=6, help="measured shards")
    ap.add_argument("--warmup-shards", type=int, default=1)
    ap.add_argument("--shard-mib", type=int, default=256)
    ap.add_argument("--seq-len", type=int, default=4096)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--buffers", type=int, default=2)
    ap.add_argument("--buffer-mib", type=int, default=128)
    ap.add_argument("--fetch-workers", type=int, default=2)
    ap.add_argument("--arms", default="rdma,http")
    ap.add_argument("--device", default="cpu", help="cpu, or cuda: TokenDataset(device=) "
                    "fetches into GPU buffers (rdma: the server writes them, cuda+ipc; http: "
                    "page-locked host twins, copied) and each batch is touched there")
    a = ap.parse_args()
    arms = a.arms.split(",")
    lim = cm.limits(a)
    srv = cm.start_server(a)
    try:
        clients = {arm: cm.make_client(srv, arm, a.concurrency) for arm in arms}
        c0 = clients[arms[-1]]
        bucket = "bench-tokens"
        c0.create_bucket(bucket)
        seq_bytes = a.seq_len * 4
        seqs = a.shard_mib * cm.MiB // seq_bytes
        n = a.warmup_shards + a.shards
        keys = []
        for s in range(n):
            toks = make_shard(s, seqs, a.seq_len)
            k = f"llm-tokens/shard-{s:05d}.bin"
            c0.put_from(bucket, k, toks)
            c0.put(bucket, k[:-4] + ".json", json.dumps(
                {"sequences": seqs, "seq_len": a.seq_len, "dtype": "int32",
                 "bytes_per_token": 4, "vocab_size": VOCAB, "sequence_bytes": seq_bytes,
                 "synthetic": True}).encode())
            keys.append(k)
        runs = []
        for r in range(a.repeats):
            for arm in arms:
                c = clients[arm]
                warm = TokenDataset(c, bucket, keys=keys[:a.warmup_shards],
                                    batch_size=a.batch, num_buffers=a.buffers,
                                    buffer_bytes=a.buffer_mib * cm.MiB,
                                    fetch_workers=a.fetch_workers, transport="auto",
                                    copy=False, device=a.device)
                for b in warm:
                    int(b[0, 0])
                ds = TokenDataset(c, bucket, keys=keys[a.warmup_shards:], batch_size=a.batch,
                                  num_buffers=a.buffers, buffer_bytes=a.buffer_mib * cm.MiB,
                                  fetch_workers=a.fetch_workers, transport="auto", copy=False,
                                  device=a.device)
                firsts, steps = [], []
                with cm.Window(srv) as w:
                    t = time.perf_counter()
                    for b in ds:
                        firsts.append(int(b[0, 0]))  # the touch (a D2H read on the GPU)
                        now = time.perf_counter()
                        steps.append(now - t)
                        t = now
                stt = ds.last_stats
                ntok = len(firsts) * a.batch * a.seq_len
                cell = {"arm": arm, "repeat": r, "tokens": ntok, "bytes": stt["bytes"],
                        "wall_s": w.wall_s, "tokens_per_s": ntok / w.wall_s,
                        "gbps": stt["bytes"] / w.wall_s / 1e9,
                        "fetch_wait_s": stt["fetch_wait_s"], "shards_in_window": a.shards,
                        "median_step_ms": float(np.median(steps)) * 1e3,
                        "transports": sorted(stt["transports"]),
                        "memory": stt["memory"], "staged_reason": stt["staged_reason"],
                        "rdma_witness": w.witness(), **w.cpu(stt["bytes"])}
                err = w.gate(arm, "get", stt["bytes"])
                if err:
                    cell["error"] = err
                # verification, outside the window: first token of each batch's first row
                per_shard = seqs // a.batch
                want = [int((q * a.batch * 7 + s * 100003) % VOCAB)
                        for s in range(a.warmup_shards, n) for q in range(per_shard)]
                cell["verified"] = {"ok": firsts == want, "batches_checked": len(firsts)}
                runs.append(cell)
                print(f"repeat {r} {arm:5s} {cell['tokens_per_s'] / 1e6:8.1f} M tok/s "
                      f"{cell['gbps']:.2f} GB/s wait {cell['fetch_wait_s']:.2f}s "
                      f"{cell.get('error', '')} verified {cell['verified']['ok']}",
                      file=sys.stderr, flush=True)
        results = {}
        for arm in arms:
            ok = [x for x in runs if x["arm"] == arm and "error" not in x]
            results[arm] = {k: cm.bl.summary([x[k] for x in ok])
                            for k in ("tokens_per_s", "gbps", "wall_s", "fetch_wait_s",
                                      "client_cpu_s_per_gb", "host_cpu_s_per_gb")}
            results[arm]["failures"] = [x["error"] for x in runs
                                        if x["arm"] == arm and "error" in x]
        ratio = {}
        if "rdma" in results and "http" in results and results["http"]["tokens_per_s"]["n"]:
            ratio["tokens_per_s_rdma_vs_http"] = (results["rdma"]["tokens_per_s"]["median"] /
                                                  results["http"]["tokens_per_s"]["median"])
        root = {"params": {"shards": a.shards, "warmup_shards": a.warmup_shards,
                           "shard_bytes": seqs * seq_bytes, "seq_len": a.seq_len,
                           "batch": a.batch, "buffers": a.buffers,
                           "buffer_bytes": a.buffer_mib * cm.MiB,
                           "fetch_workers": a.fetch_workers, "concurrency": a.concurrency,
                           "repeats": a.repeats, "arms": arms, "device": a.device},
                "environment": dict(cm.bl.environment("ofi+shm"), torch=torch.__version__),
                "limits": lim, "results": {"arms": results, "ratios": ratio, "runs": runs}}
        cm.write(a, "tokens", root)
        for arm in arms:
            x = results[arm]
            print(f"{arm:5s} {x['tokens_per_s']['median'] / 1e6:.1f} M tok/s "
                  f"({x['tokens_per_s']['min'] / 1e6:.1f}-{x['tokens_per_s']['max'] / 1e6:.1f})"
                  f" {x['gbps']['median']:.2f} GB/s failures {x['failures']}")
        print(ratio)
    finally:
        srv.stop()


if __name__ == "__main__":
    main()
