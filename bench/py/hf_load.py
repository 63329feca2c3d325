#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""B8 (Hugging Face snapshot into GPU memory): a snapshot written by transformers itself
(save_pretrained(max_shard_size="5GB"): decimal 5 GB shards, each above 4 GiB, and
model.safetensors.index.json), of a Llama-3-8B-shaped model in bf16 (16 GB) with random
weights, loaded into VRAM four ways, paired in one run (A B C D A B C D):

  wharf-rdma       wharf.torch.load_safetensors(s3://..., device="cuda") over ofi+shm: ranged
                   GETs of every data section into host memory, each piece copied on to the
                   GPU while the next downloads (the providers here cannot register device
                   memory)
  wharf-http       the same over plain HTTP (libwharf, same concurrency)
  from-pretrained  transformers' AutoModelForCausalLM.from_pretrained(local dir, dtype=bf16,
                   device_map="cuda"), the snapshot's files in the page cache (read once
                   before the first repeat)
  boto3            boto3 download_file of every file (TransferConfig, 10 threads, 64 MiB
                   parts) into a directory, then safetensors.torch.load_file(device="cuda")

Each cell's window ends with torch.cuda.synchronize() and every tensor in GPU memory. The
wharf-rdma cell is gated on the server's RDMA read bytes (>= 0.99 of the data bytes). Verified
in repeat 0, outside the timer: every tensor of every arm equals, on the GPU, the tensor of the
model from_pretrained loaded (torch.equal), and the snapshot's shards are above 4 GiB.

  python3 bench/py/hf_load.py [--layers 32] [--repeats 2] [--dir /tmp/hf-snapshot]
"""
import argparse
import gc
import json
import os
import shutil
import sys
import tempfile
import time

import common as cm
import numpy as np
import torch

import wharf.torch as wt

ARMS = ["wharf-rdma", "wharf-http", "from-pretrained", "boto3"]


def make_snapshot(d, layers, shard):
    import transformers
    cfg = transformers.LlamaConfig(hidden_size=4096, intermediate_size=14336,
                                   num_hidden_layers=layers, num_attention_heads=32,
                                   num_key_value_heads=8, vocab_size=128256,
                                   max_position_embeddings=8192, tie_word_embeddings=False)
    t = time.perf_counter()
    with torch.device("cuda"):
        m = transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16)
    n_params = sum(p.numel() for p in m.parameters())
    t1 = time.perf_counter()
    m.save_pretrained(d, max_shard_size=shard)
    t2 = time.perf_counter()
    del m
    gc.collect()
    torch.cuda.empty_cache()
    return n_params, t1 - t, t2 - t1


def files_of(d):
    return sorted(f for f in os.listdir(d) if os.path.isfile(os.path.join(d, f)))


def upload(c, bucket, prefix, d):
    for f in files_of(d):
        p = os.path.join(d, f)
        if os.path.getsize(p) == 0:
            c.put(bucket, f"{prefix}/{f}", b"")
            continue
        try:
            c.put_from(bucket, f"{prefix}/{f}", np.memmap(p, dtype=np.uint8, mode="r"))
        except Exception as e:  # a read-only file mapping the provider will not register
            print(f"upload of {f} over RDMA failed ({e}); over HTTP", file=sys.stderr)
            c.put_from(bucket, f"{prefix}/{f}", np.memmap(p, dtype=np.uint8, mode="r"),
                       transport="http")


def sync_sd(sd):
    torch.cuda.synchronize()
    return sd


def arm_wharf(c, url):
    rep = {}
    sd = wt.load_safetensors(url, device="cuda", client=c, report=rep)
    return sync_sd(sd), {"transports": rep.get("transports"), "arena": rep.get("arena"),
                         "header_s": rep.get("header_s"), "download_s": rep.get("download_s")}


def arm_from_pretrained(d):
    import transformers
    m = transformers.AutoModelForCausalLM.from_pretrained(d, dtype=torch.bfloat16,
                                                         device_map="cuda")
    torch.cuda.synchronize()
    return m, {}


def arm_boto3(s3, bucket, prefix, d, dl_dir):
    from boto3.s3.transfer import TransferConfig
    from safetensors.torch import load_file
    cfg = TransferConfig(max_concurrency=10, multipart_chunksize=64 << 20,
                         multipart_threshold=64 << 20)
    t = time.perf_counter()
    out = tempfile.mkdtemp(dir=dl_dir, prefix="hf-dl-")
    try:
        for f in files_of(d):
            s3.download_file(bucket, f"{prefix}/{f}", os.path.join(out, f), Config=cfg)
        t1 = time.perf_counter()
        sd = {}
        for f in files_of(out):
            if f.endswith(".safetensors"):
                sd.update(load_file(os.path.join(out, f), device="cuda"))
        torch.cuda.synchronize()
        return sd, {"download_s": t1 - t, "load_s": time.perf_counter() - t1}
    finally:
        shutil.rmtree(out, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    cm.common_args(ap)
    ap.set_defaults(repeats=2, concurrency=8)
    ap.add_argument("--layers", type=int, default=32, help="32: Llama-3-8B, 16 GB in bf16")
    ap.add_argument("--shard", default="5GB", help="save_pretrained max_shard_size")
    ap.add_argument("--dir", default=None, help="where the snapshot is written (default: a "
                    "temporary directory)")
    ap.add_argument("--download-dir", default=None, help="where boto3 downloads to (default: "
                    "the snapshot's file system, else /dev/shm when it lacks the room)")
    ap.add_argument("--arms", default=",".join(ARMS))
    ap.add_argument("--boto3-repeats", type=int, default=1000,
                    help="run the (slow) boto3 arm only in the first N repeats")
    a = ap.parse_args()
    arms = a.arms.split(",")
    lim = cm.limits(a)
    d = a.dir or tempfile.mkdtemp(prefix="hf-snapshot-")
    os.makedirs(d, exist_ok=True)
    n_params, init_s, save_s = make_snapshot(d, a.layers, a.shard)
    sizes = {f: os.path.getsize(os.path.join(d, f)) for f in files_of(d)}
    shard_sizes = [v for k, v in sizes.items() if k.endswith(".safetensors")]
    total = sum(shard_sizes)
    print(f"snapshot: {n_params / 1e9:.2f} B params, {len(shard_sizes)} shards "
          f"{[round(s / 1e9, 2) for s in shard_sizes]} GB, init {init_s:.1f}s, "
          f"save_pretrained {save_s:.1f}s", file=sys.stderr, flush=True)
    dl_dir = a.download_dir or (d if shutil.disk_usage(d).free > 1.3 * total else "/dev/shm")
    srv = cm.start_server(a)
    runs, ref = [], None
    try:
        clients = {"wharf-rdma": cm.make_client(srv, "rdma", a.concurrency),
                   "wharf-http": cm.make_client(srv, "http", a.concurrency)}
        bucket, prefix = "bench-hf", "llama-8b"
        clients["wharf-http"].create_bucket(bucket)
        t = time.perf_counter()
        upload(clients["wharf-rdma"], bucket, prefix, d)
        upload_s = time.perf_counter() - t
        url = f"s3://{bucket}/{prefix}"
        s3 = None
        if "boto3" in arms:
            try:
                s3 = cm.boto3_client(srv, 10)
            except Exception as e:
                print(f"boto3 unavailable: {e}", file=sys.stderr)
        for f in files_of(d):  # the page cache holds the local snapshot (from-pretrained)
            with open(os.path.join(d, f), "rb") as fh:
                while fh.read(64 << 20):
                    pass
        print(f"uploaded in {upload_s:.1f}s; boto3 downloads to {dl_dir}", file=sys.stderr)
        inc = cm.Incremental(a, "hf_load")

        def report(complete):
            results = {}
            for arm in arms:
                ok = [x for x in runs if x["arm"] == arm and "error" not in x]
                results[arm] = {k: cm.bl.summary([x[k] for x in ok if k in x])
                                for k in ("wall_s", "gbps", "client_cpu_s_per_gb",
                                          "host_cpu_s_per_gb")}
                results[arm]["failures"] = [x["error"] for x in runs
                                            if x["arm"] == arm and "error" in x]
            ratios = {}
            for base in ("wharf-http", "from-pretrained", "boto3"):
                x, y = results.get("wharf-rdma"), results.get(base)
                if x and y and x["wall_s"]["n"] and y["wall_s"]["n"]:
                    ratios[f"wharf_rdma_vs_{base.replace('-', '_')}"] = \
                        y["wall_s"]["median"] / x["wall_s"]["median"]
            import transformers
            root = {"params": {"layers": a.layers, "params": n_params, "max_shard_size": a.shard,
                               "shard_bytes": shard_sizes, "data_bytes": total,
                               "shards_over_4gib": sum(s > 4 * cm.GiB for s in shard_sizes),
                               "concurrency": a.concurrency, "repeats": a.repeats, "arms": arms,
                               "boto3_repeats": min(a.repeats, a.boto3_repeats),
                               "download_dir": dl_dir, "init_s": init_s,
                               "save_pretrained_s": save_s, "upload_s": upload_s},
                    "environment": dict(cm.bl.environment("ofi+shm"), torch=torch.__version__,
                                        transformers=transformers.__version__,
                                        gpu=torch.cuda.get_device_name()),
                    "limits": lim, "results": {"arms": results, "ratios": ratios, "runs": runs}}
            inc.write(root, complete)
            return results, ratios

        for r in range(a.repeats):
            order = (["from-pretrained"] + [x for x in arms if x != "from-pretrained"]
                     if r == 0 and "from-pretrained" in arms else arms)
            for arm in order:
                if arm == "boto3" and r >= a.boto3_repeats:
                    continue
                gc.collect()
                torch.cuda.empty_cache()
                cell = {"arm": arm, "repeat": r}
                try:
                    with cm.Window(srv) as w:
                        if arm.startswith("wharf"):
                            out, extra = arm_wharf(clients[arm], url)
                        elif arm == "from-pretrained":
                            out, extra = arm_from_pretrained(d)
                        else:
                            if s3 is None:
                                raise RuntimeError("boto3 is not installed here")
                            out, extra = arm_boto3(s3, bucket, prefix, d, dl_dir)
                    cell.update(wall_s=w.wall_s, gbps=total / w.wall_s / 1e9,
                                rdma_witness=w.witness(), **w.cpu(total), **extra)
                    if arm == "wharf-rdma":
                        err = w.gate("rdma", "get", total)
                        if err:
                            cell["error"] = err
                    if r == 0:
                        sd = out.state_dict() if arm == "from-pretrained" else out
                        if arm == "from-pretrained":
                            ref = {k: v for k, v in sd.items()}
                            cell["verified"] = {"ok": True, "what": "the reference"}
                        elif ref is not None:
                            bad = [k for k in sd if k not in ref or not torch.equal(sd[k], ref[k])]
                            cell["verified"] = {"ok": not bad and len(sd) == len(ref),
                                                "tensors": len(sd), "differ": bad[:8],
                                                "what": "every tensor equals from_pretrained's"}
                    del out
                except Exception as e:
                    cell["error"] = f"{type(e).__name__}: {e}"
                runs.append(cell)
                print(f"repeat {r} {arm:15s} " + (f"{cell['wall_s']:.2f}s {cell['gbps']:.2f} "
                      f"GB/s client cpu {cell['client_cpu_s']:.1f}s host cpu "
                      f"{cell['host_cpu_s']:.1f}s " if "wall_s" in cell else "") +
                      f"{cell.get('verified', '')} {cell.get('error', '')}",
                      file=sys.stderr, flush=True)
                report(False)
        ref = None
        results, ratios = report(True)
        for arm in arms:
            x = results[arm]
            if x["wall_s"]["n"]:
                print(f"{arm:15s} {x['wall_s']['median']:.2f}s ({x['wall_s']['min']:.2f}-"
                      f"{x['wall_s']['max']:.2f}) {x['gbps']['median']:.2f} GB/s failures "
                      f"{x['failures']}")
        print(json.dumps(ratios))
    finally:
        srv.stop()
        if not a.dir:
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
