#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""B8: loading a synthetic multi-shard safetensors model (default 3 GiB in 4 shards, a
Hugging Face snapshot layout with model.safetensors.index.json).

Arms, paired in one run (A B C A B C ...):
  rdma      wharf.torch.load_safetensors over ofi+shm: headers by small HTTP range reads,
            then ranged RDMA GETs of each data section into one registered arena, zero-copy
            views
  http      the same over plain HTTP (libwharf, same concurrency)
  download  download-then-load (the seed's baseline): single-stream GET of each shard to a
            temporary file (boto3, no threads), then a load from that file (header parsed in
            Python, data read into memory, views over it: what safetensors' load_file does)

The timed window is the whole model load. The rdma arm is gated on server RDMA read bytes
>= 0.99 of the data bytes. Repeat 0 of every arm checks 12 tensors spread over the shards
byte for byte against the generated data, outside the timer.

  /usr/bin/python3 bench/py/st_load.py [--gib 3] [--shards 4] [--repeats 3]
"""
import argparse
import json
import os
import struct
import sys
import tempfile
import time

import common as cm
import numpy as np
import torch

import wharf.torch as wt
from wharf import safetensors as wst

DT = {"BF16": torch.bfloat16, "F16": torch.float16, "F32": torch.float32}


def gen_tensor(name, nbytes):
    seed = int.from_bytes(name.encode()[-8:].rjust(8, b"\0"), "little") % (2 ** 32)
    return np.random.default_rng(seed).integers(0, 256, nbytes, dtype=np.uint8)


def build_model(c, bucket, prefix, total, nshards):
    """Uploads the snapshot; returns {name: (shard file, dtype, shape)}."""
    layers = 32
    per_layer = total // layers
    # per layer: attention 4 x d*d and mlp 3 x d*(4d/ ~ 2.7) in bf16, a norm in f32
    d = int((per_layer / 2 / (4 + 3 * 2.6875)) ** 0.5) // 64 * 64
    f = int(d * 2.6875) // 64 * 64
    names = []
    for i in range(layers):
        for p in ("q", "k", "v", "o"):
            names.append((f"model.layers.{i}.self_attn.{p}_proj.weight", "BF16", (d, d)))
        names.append((f"model.layers.{i}.mlp.gate_proj.weight", "BF16", (f, d)))
        names.append((f"model.layers.{i}.mlp.up_proj.weight", "BF16", (f, d)))
        names.append((f"model.layers.{i}.mlp.down_proj.weight", "BF16", (d, f)))
        names.append((f"model.layers.{i}.input_layernorm.weight", "F32", (d,)))
    used = sum(int(np.prod(sh)) * wst.dtype_bits(dt) // 8 for _, dt, sh in names)
    if total - used >= 2 * d:  # the embedding takes the rest, so the model is `total` bytes
        names.insert(0, ("model.embed_tokens.weight", "BF16", ((total - used) // (2 * d), d)))
    per_shard = -(-len(names) // nshards)
    wm, layout = {}, {}
    for s in range(nshards):
        part = names[s * per_shard:(s + 1) * per_shard]
        fname = f"model-{s + 1:05d}-of-{nshards:05d}.safetensors"
        part = sorted(part, key=lambda x: (-wst.dtype_bits(x[1]), x[0]))
        entries, off = [], 0
        for n, dt, shape in part:
            nb = int(np.prod(shape)) * wst.dtype_bits(dt) // 8
            entries.append((n, dt, shape, off, off + nb))
            off += nb
        header = wst.build_header(entries, {"format": "pt"})
        blob = np.empty(len(header) + off, dtype=np.uint8)
        blob[:len(header)] = np.frombuffer(header, dtype=np.uint8)
        for n, dt, shape, b, e in entries:
            blob[len(header) + b:len(header) + e] = gen_tensor(n, e - b)
            wm[n] = fname
            layout[n] = (fname, dt, shape)
        c.put_from(bucket, f"{prefix}/{fname}", blob)
        del blob
    c.put(bucket, f"{prefix}/model.safetensors.index.json",
          json.dumps({"metadata": {"total_size": sum(
              int(np.prod(s)) * wst.dtype_bits(dt) // 8 for _, dt, s in names)},
              "weight_map": wm}).encode())
    c.put(bucket, f"{prefix}/config.json", b'{"model_type": "synthetic"}')
    return layout


def load_file(path):
    """A CPU load of a local safetensors file, the way safetensors' load_file does it: read
    the header, read the data, build tensors over it."""
    with open(path, "rb") as fh:
        n = struct.unpack("<Q", fh.read(8))[0]
        header = json.loads(fh.read(n))
        header.pop("__metadata__", None)
        size = os.fstat(fh.fileno()).st_size - 8 - n
        data = torch.empty(size, dtype=torch.uint8)
        fh.readinto(memoryview(data.numpy()))
    out = {}
    for name, v in header.items():
        b, e = v["data_offsets"]
        out[name] = data[b:e].view(DT[v["dtype"]]).view(v["shape"])
    return out


def run_download(s3, bucket, prefix, tmpdir, device):
    from boto3.s3.transfer import TransferConfig
    cfg = TransferConfig(use_threads=False)
    t0 = time.perf_counter()
    idx = json.loads(s3.get_object(Bucket=bucket, Key=f"{prefix}/model.safetensors.index.json")
                     ["Body"].read())
    files = sorted(set(idx["weight_map"].values()))
    paths = []
    for f in files:
        p = os.path.join(tmpdir, f)
        s3.download_file(bucket, f"{prefix}/{f}", p, Config=cfg)
        paths.append(p)
    t1 = time.perf_counter()
    out = {}
    for p in paths:
        out.update(load_file(p))
    if device != "cpu":
        out = {k: v.to(device) for k, v in out.items()}
        torch.cuda.synchronize()
    t2 = time.perf_counter()
    return out, {"download_s": t1 - t0, "load_s": t2 - t1}


def check(tensors, layout, names):
    bad = []
    for n in names:
        fname, dt, shape = layout[n]
        t = tensors.get(n)
        if t is None or t.dtype != DT[dt] or tuple(t.shape) != tuple(shape):
            bad.append(n)
            continue
        raw = t.contiguous().view(-1).view(torch.uint8).cpu().numpy()
        if not np.array_equal(raw, gen_tensor(n, raw.size)):
            bad.append(n)
    return {"ok": not bad, "tensors_checked": len(names), "mismatched": bad[:5]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    cm.common_args(ap)
    ap.add_argument("--gib", type=float, default=3.0)
    ap.add_argument("--shards", type=int, default=4)
    ap.add_argument("--arms", default="rdma,http,download")
    ap.add_argument("--device", default="cpu", help="cpu, or cuda[:i] (the seed loads to VRAM)")
    ap.add_argument("--chunk-mib", type=int, default=64,
                    help="libwharf ranged-GET chunk (parallel pieces of a data section)")
    a = ap.parse_args()
    arms = a.arms.split(",")
    lim = cm.limits(a)
    if a.device.startswith("cuda") and not a.no_limits:
        lim.update(cm.pinned_copy_rates(cm.GiB, 3))
    srv = cm.start_server(a)
    tmpdir = tempfile.mkdtemp(prefix="wharf-b8-")
    try:
        clients = {arm: cm.make_client(srv, arm, a.concurrency, chunk_size=a.chunk_mib * cm.MiB)
                   for arm in arms if arm != "download"}
        s3 = cm.boto3_client(srv, a.concurrency) if "download" in arms else None
        c0 = clients.get("http") or next(iter(clients.values()))
        bucket, prefix = "model-weights", "synthetic-3g"
        c0.create_bucket(bucket)
        layout = build_model(c0, bucket, prefix, int(a.gib * cm.GiB), a.shards)
        names = sorted(layout)
        spot = [names[int(i * (len(names) - 1) / 11)] for i in range(12)]
        nbytes = sum(int(np.prod(s)) * wst.dtype_bits(dt) // 8 for _, dt, s in layout.values())
        print(f"model: {len(names)} tensors, {nbytes / cm.GiB:.2f} GiB in {a.shards} shards",
              file=sys.stderr)
        runs = []
        for r in range(a.repeats):
            for arm in arms:
                extra = {}
                with cm.Window(srv) as w:
                    if arm == "download":
                        got, extra = run_download(s3, bucket, prefix, tmpdir, a.device)
                    else:
                        rep = {}
                        got = wt.load_safetensors(f"s3://{bucket}/{prefix}", client=clients[arm],
                                                  report=rep, device=a.device)
                        if a.device != "cpu":
                            torch.cuda.synchronize()
                        extra = {k: rep[k] for k in ("header_s", "download_s", "rebuild_s",
                                                     "transports", "fell_back", "arena")}
                cell = {"arm": arm, "repeat": r, "wall_s": w.wall_s, "bytes": nbytes,
                        "gbps": nbytes / w.wall_s / 1e9, "num_tensors": len(got),
                        "rdma_witness": w.witness(), **extra, **w.cpu(nbytes)}
                err = w.gate(arm, "get", nbytes)
                if err:
                    cell["error"] = err
                if r == 0:
                    cell["verified"] = check(got, layout, spot)
                del got
                if arm == "download":
                    for f in os.listdir(tmpdir):
                        os.unlink(os.path.join(tmpdir, f))
                runs.append(cell)
                print(f"repeat {r} {arm:8s} {cell['wall_s']:.3f}s {cell['gbps']:.2f} GB/s "
                      f"{cell.get('error', '')} {cell.get('verified', '')}", file=sys.stderr,
                      flush=True)
        results = {}
        for arm in arms:
            ok = [x for x in runs if x["arm"] == arm and "error" not in x]
            results[arm] = {k: cm.bl.summary([x[k] for x in ok])
                            for k in ("wall_s", "gbps", "client_cpu_s_per_gb",
                                      "host_cpu_s_per_gb")}
            results[arm]["failures"] = [x["error"] for x in runs
                                        if x["arm"] == arm and "error" in x]
        ratios = {}
        if "rdma" in arms and results["rdma"]["wall_s"]["n"]:
            for o in ("http", "download"):
                if o in arms and results[o]["wall_s"]["n"]:
                    ratios[f"speedup_rdma_vs_{o}"] = (results[o]["wall_s"]["median"] /
                                                      results["rdma"]["wall_s"]["median"])
        root = {"params": {"gib": a.gib, "bytes": nbytes, "shards": a.shards,
                           "tensors": len(names), "repeats": a.repeats, "arms": arms,
                           "concurrency": a.concurrency, "chunk_bytes": a.chunk_mib * cm.MiB,
                           "device": a.device},
                "environment": dict(cm.bl.environment("ofi+shm"), torch=torch.__version__),
                "limits": lim, "memory": cm.memory_peaks(srv),
                "results": {"arms": results, "ratios": ratios, "runs": runs}}
        if "h2d_pinned" in lim and "rdma" in arms and results["rdma"]["gbps"]["n"]:
            ratios["rdma_vs_h2d_pinned"] = (results["rdma"]["gbps"]["median"] /
                                            lim["h2d_pinned"]["median"])
        cm.write(a, "st_load", root)
        print(f"ratios {ratios} memory {root['memory']}", file=sys.stderr)
        for arm in arms:
            x = results[arm]
            print(f"{arm:8s} {x['wall_s']['median']:.3f}s ({x['wall_s']['min']:.3f}-"
                  f"{x['wall_s']['max']:.3f}) {x['gbps']['median']:.2f} GB/s "
                  f"failures {x['failures']}")
        print(ratios)
    finally:
        srv.stop()
        for f in os.listdir(tmpdir):
            os.unlink(os.path.join(tmpdir, f))
        os.rmdir(tmpdir)


if __name__ == "__main__":
    main()
