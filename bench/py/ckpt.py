#!/usr/bin/python3
"""B4/B5: checkpoint save and restore of a synthetic N GiB state dict (CPU tensors, or GPU
tensors with --device cuda: restore then lands in GPU memory, through wharfd's direct path
where the host has one).

Arms, paired in one run (A B C A B C ..., each repeat r writes and reads key-r):
  rdma   wharf.torch.save / load over ofi+shm (the server moves the bytes)
  http   wharf.torch.save / load over plain HTTP (libwharf, same concurrency)
  torch  torch.save into a BytesIO + boto3 upload_fileobj; restore with download_fileobj into
         a BytesIO + torch.load (the usual baseline), same wharfd, same concurrency

Workload (B4 of the public suite compared with, docs/benchmarks.md): 64 bf16 weights (every 4th
at half size), each with an equal-size exp_avg, in
{model, optimizer{state{int:{exp_avg, step}}, param_groups}, step, epoch}.
Gates: an rdma save must show server RDMA write bytes >= 0.99 of the payload, an rdma restore
RDMA read bytes >= 0.99; else the cell carries error "rdma-not-used...". Repeat 0 of every arm
is verified after restore, outside the timer (shape, dtype and all values of every tensor).

  /usr/bin/python3 bench/py/ckpt.py [--gib 2] [--repeats 3] [--arms rdma,http,torch]
"""
import argparse
import gc
import io
import sys
import time

import common as cm
import torch

import wharf.torch as wt


def state_dict(total_bytes, seed=1234, device="cpu"):
    """The B4 synthetic state: 64 bf16 weights + equal exp_avg, about total_bytes in all,
    made on device (ddp_ckpt.py: each rank on its own GPU, with a seed of its own)."""
    n = 64
    units = sum(0.5 if i % 4 == 3 else 1.0 for i in range(n))
    per = max(2, int(total_bytes / 2 / units / 2))  # per full-size weight (bf16, 2 copies)
    g = torch.Generator(device=device).manual_seed(seed)
    model, state = {}, {}
    for i in range(n):
        numel = per // 2 if i % 4 == 3 else per
        w = torch.randn(numel, generator=g, dtype=torch.float32, device=device).to(torch.bfloat16)
        model[f"layers.{i}.weight"] = w
        state[i] = {"exp_avg": torch.randn(numel, generator=g, device=device).to(torch.bfloat16),
                    "step": torch.tensor(100.0, device=device)}
    return {"model": model,
            "optimizer": {"state": state, "param_groups": [
                {"lr": 1e-4, "betas": (0.9, 0.95), "eps": 1e-8, "weight_decay": 0.1,
                 "params": list(range(n))}]},
            "step": 100, "epoch": 1}


def to_device(obj, dev):
    if isinstance(obj, torch.Tensor):
        return obj.to(dev)
    if isinstance(obj, dict):
        return {k: to_device(v, dev) for k, v in obj.items()}
    if isinstance(obj, list):
        return [to_device(v, dev) for v in obj]
    return obj


def sync(dev):
    if str(dev).startswith("cuda"):
        torch.cuda.synchronize()


def tensors_of(obj, path="", out=None):
    out = {} if out is None else out
    if isinstance(obj, torch.Tensor):
        out[path] = obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            tensors_of(v, f"{path}/{k}", out)
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            tensors_of(v, f"{path}/{i}", out)
    return out


def verify(ref, got):
    a, b = tensors_of(ref), tensors_of(got)
    bad = [k for k in a if k not in b or a[k].dtype != b[k].dtype or a[k].shape != b[k].shape
           or not torch.equal(a[k], b[k])]
    return {"ok": not bad and set(a) == set(b), "tensors_checked": len(a), "mismatched": bad[:5]}


def payload_bytes(sd):
    return sum(t.numel() * t.element_size() for t in tensors_of(sd).values())


def run_wharf(arm, c, sd, bucket, key, srv, nbytes, do_verify, concurrency, dev="cpu"):
    url = f"s3://{bucket}/{key}"
    out = {"arm": arm}
    with cm.Window(srv) as w:
        rep = wt.save(sd, url, client=c, concurrency=concurrency)
    out["save"] = dict(wall_s=w.wall_s, gbps=nbytes / w.wall_s / 1e9, bytes=rep["bytes"],
                       flatten_s=rep["flatten_s"], upload_s=rep["upload_s"],
                       fill_s=rep["fill_s"], put_wait_s=rep["put_wait_s"],
                       fill_cpu_s=rep["fill_cpu_s"], staging=rep["staging"],
                       staging_memory=rep["staging_memory"],
                       staging_bytes=rep["staging_bytes"],
                       staging_reason=rep["staging_reason"],
                       gpu_direct=sum(r.memory == "cuda" and not r.staged
                                      for r in rep["reports"]),
                       commit_s=rep["commit_s"], shards=len(rep["shards"]),
                       transports=rep["transports"], rdma_witness=w.witness(), **w.cpu(nbytes))
    err = w.gate(arm, "put", nbytes)
    if err:
        out["save"]["error"] = err + "-on-save"
    del rep
    gc.collect()
    lrep = {}
    with cm.Window(srv) as w:
        got = wt.load(url, client=c, report=lrep, device=dev)
        sync(dev)
    out["load"] = dict(wall_s=w.wall_s, gbps=nbytes / w.wall_s / 1e9, bytes=lrep["bytes"],
                       header_s=lrep["header_s"], download_s=lrep["download_s"],
                       rebuild_s=lrep["rebuild_s"], transports=lrep["transports"],
                       fell_back=lrep["fell_back"], arena=lrep.get("arena"),
                       staging_bytes=lrep.get("staging_bytes"),
                       rdma_witness=w.witness(), **w.cpu(nbytes))
    err = w.gate(arm, "get", nbytes)
    if err:
        out["load"]["error"] = err
    if do_verify:
        out["load"]["verified"] = verify(sd, got)
    del got
    gc.collect()
    return out


def run_torch(s3, sd, bucket, key, srv, nbytes, do_verify, concurrency, dev="cpu"):
    from boto3.s3.transfer import TransferConfig
    cfg = TransferConfig(multipart_threshold=64 * cm.MiB, multipart_chunksize=64 * cm.MiB,
                         max_concurrency=concurrency, use_threads=True)
    out = {"arm": "torch"}
    with cm.Window(srv) as w:
        t0 = time.perf_counter()
        buf = io.BytesIO()
        torch.save(sd, buf)
        t1 = time.perf_counter()
        size = buf.tell()
        buf.seek(0)
        s3.upload_fileobj(buf, bucket, key, Config=cfg)
        t2 = time.perf_counter()
    out["save"] = dict(wall_s=w.wall_s, gbps=nbytes / w.wall_s / 1e9, bytes=size,
                       serialize_s=t1 - t0, upload_s=t2 - t1, rdma_witness=w.witness(),
                       **w.cpu(nbytes))
    del buf
    gc.collect()
    with cm.Window(srv) as w:
        t0 = time.perf_counter()
        buf = io.BytesIO()
        s3.download_fileobj(bucket, key, buf, Config=cfg)
        t1 = time.perf_counter()
        buf.seek(0)
        got = torch.load(buf, map_location=dev)
        sync(dev)
        t2 = time.perf_counter()
    out["load"] = dict(wall_s=w.wall_s, gbps=nbytes / w.wall_s / 1e9, bytes=size,
                       download_s=t1 - t0, deserialize_s=t2 - t1, rdma_witness=w.witness(),
                       **w.cpu(nbytes))
    if do_verify:
        out["load"]["verified"] = verify(sd, got)
    del buf, got
    gc.collect()
    return out


def cleanup(c, bucket, prefix):
    for o in c.list(bucket, prefix):
        c.delete(bucket, o.key)


def summarize_runs(a, arms, runs, sd, nbytes, lim, srv):
    """The result root of the runs so far (written after every repeat: a run stopped by its
    time limit keeps the repeats it finished)."""
    results = {}
    for arm in arms:
        rr = [x for x in runs if x["arm"] == arm]
        results[arm] = {}
        for phase in ("save", "load"):
            cells = [x[phase] for x in rr]
            ok = [c for c in cells if "error" not in c]
            results[arm][phase] = {
                "wall_s": cm.bl.summary([c["wall_s"] for c in ok]),
                "gbps": cm.bl.summary([c["gbps"] for c in ok]),
                "client_cpu_s_per_gb": cm.bl.summary([c["client_cpu_s_per_gb"]
                                                      for c in ok]),
                "server_cpu_s_per_gb": cm.bl.summary([c["server_cpu_s_per_gb"]
                                                      for c in ok]),
                "host_cpu_s_per_gb": cm.bl.summary([c["host_cpu_s_per_gb"] for c in ok]),
                "failures": [c["error"] for c in cells if "error" in c],
            }
    ratios = {}
    med = {arm: results[arm]["load"]["wall_s"]["median"] for arm in arms}
    if "rdma" in arms and med.get("rdma"):
        for other in ("torch", "http"):
            if other in arms and med.get(other):
                ratios[f"restore_speedup_rdma_vs_{other}"] = med[other] / med["rdma"]
        smed = {arm: results[arm]["save"]["wall_s"]["median"] for arm in arms}
        for other in ("torch", "http"):
            if other in arms and smed.get("rdma") and smed.get(other):
                ratios[f"save_speedup_rdma_vs_{other}"] = smed[other] / smed["rdma"]
    root = {"params": {"gib": a.gib, "payload_bytes": nbytes, "repeats": a.repeats,
                       "arms": arms, "concurrency": a.concurrency,
                       "tensors": len(tensors_of(sd)), "shard_size": wt.DEFAULT_SHARD_SIZE,
                       "order": "paired: " + " ".join(arms) + " per repeat"},
            "environment": dict(cm.bl.environment("ofi+shm"), torch=torch.__version__),
            "limits": lim,
            "results": {"arms": results, "ratios": ratios, "runs": runs}}
    root["memory"] = cm.memory_peaks(srv)
    return root, results, ratios


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    cm.common_args(ap)
    ap.add_argument("--gib", type=float, default=2.0)
    ap.add_argument("--arms", default="rdma,http,torch")
    ap.add_argument("--device", default="cpu", help="cpu, or cuda: the state dict lives there "
                    "and restores land there")
    a = ap.parse_args()
    arms = a.arms.split(",")
    lim = cm.limits(a)
    if a.device.startswith("cuda") and not a.no_limits:
        lim.update(cm.pinned_copy_rates(cm.GiB, 3))
    srv = cm.start_server(a)
    try:
        sd = to_device(state_dict(int(a.gib * cm.GiB)), a.device)
        nbytes = payload_bytes(sd)
        print(f"state dict: {nbytes / cm.GiB:.2f} GiB, {len(tensors_of(sd))} tensors",
              file=sys.stderr)
        clients = {arm: cm.make_client(srv, arm, a.concurrency) for arm in arms
                   if arm != "torch"}
        s3 = cm.boto3_client(srv, a.concurrency) if "torch" in arms else None
        bucket = "bench-ckpt"
        (clients.get("http") or next(iter(clients.values()))).create_bucket(bucket)
        runs = []
        out = cm.Incremental(a, "ckpt")
        for r in range(a.repeats):
            for arm in arms:
                key = f"ckpt-{arm}-{r}"
                print(f"repeat {r} arm {arm}", file=sys.stderr, flush=True)
                if arm == "torch":
                    res = run_torch(s3, sd, bucket, key, srv, nbytes, r == 0, a.concurrency,
                                    a.device)
                    s3.delete_object(Bucket=bucket, Key=key)
                else:
                    res = run_wharf(arm, clients[arm], sd, bucket, key, srv, nbytes, r == 0,
                                    a.concurrency, a.device)
                    cleanup(clients[arm], bucket, key + "/")
                res["repeat"] = r
                runs.append(res)
                print(f"  save {res['save']['wall_s']:.3f}s load {res['load']['wall_s']:.3f}s "
                      f"{res['save'].get('error', '')}{res['load'].get('error', '')}",
                      file=sys.stderr, flush=True)
            out.write(summarize_runs(a, arms, runs, sd, nbytes, lim, srv)[0], False)
        root, results, ratios = summarize_runs(a, arms, runs, sd, nbytes, lim, srv)
        out.write(root, True)
        for arm in arms:
            s, l_ = results[arm]["save"], results[arm]["load"]
            print(f"{arm:6s} save {s['wall_s']['median']:.3f}s "
                  f"({s['gbps']['median']:.2f} GB/s) load {l_['wall_s']['median']:.3f}s "
                  f"({l_['gbps']['median']:.2f} GB/s) failures {s['failures'] + l_['failures']}")
        print(ratios)
    finally:
        srv.stop()


if __name__ == "__main__":
    main()
