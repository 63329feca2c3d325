#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""B4/B5: checkpoint save and restore of a synthetic N GiB state dict (CPU tensors, or GPU
tensors with --device cuda: restore then lands in GPU memory, through wharfd's direct path
where the host has one).

Arms, paired in one run (A B C A B C ..., each repeat r writes and reads key-r, or with
--overwrite one key per arm, each repeat replacing the last: the overwrite-safe path, its
cleanup included):
  rdma     wharf.torch.save / load over ofi+shm (the server moves the bytes)
  http     wharf.torch.save / load over plain HTTP (libwharf, same concurrency)
  torch    torch.save into a BytesIO + boto3 upload_fileobj; restore with download_fileobj into
           a BytesIO + torch.load (the usual baseline), same wharfd, same concurrency
  torchfs  torch.save to a file under --local-dir + fsync; restore torch.load (map_location)
  dcpfs    DCP's FileSystemWriter / FileSystemReader under --local-dir (torch >= 2.2; a
           single-rank gloo group; the flat tensor dict, no plain values)
  dcp      DCP with wharf.torch.dcp.WharfStorageWriter / Reader over ofi+shm (same)
--async-save: rdma/http save with wharf.torch.save(async_=True), dcp/dcpfs with
dcp.async_save (torch >= 2.3). Every save cell reports save_blocking_s (until the call gave
the caller back: the future returned) and durable_s (until the checkpoint was committed:
the future's result, or fsync/the .metadata for the file arms); synchronous saves have both
equal to wall_s. results.arms.<arm>.save_blocking_s and .durable_s summarize them.

Workload (B4 of the public suite compared with, docs/benchmarks.md): 64 bf16 weights (every 4th
at half size), each with an equal-size exp_avg, in
{model, optimizer{state{int:{exp_avg, step}}, param_groups}, step, epoch}.
Gates: an rdma save must show server RDMA write bytes >= 0.99 of the payload, an rdma restore
RDMA read bytes >= 0.99; else the cell carries error "rdma-not-used...". Repeat 0 of every arm
is verified after restore, outside the timer (shape, dtype and all values of every tensor).
An arm that cannot run here (no DCP in this torch) is reported under results.skipped with
the reason.
On a disk (the data dir not on tmpfs or ramfs; --durable-limit on forces it, off skips it) the
disk's durable write rate is measured before every repeat and after the last, in wharfd's
commit pattern (bench/disk_commit.py: commit+sfr, --durable-writers writers, 4 files of
--durable-mib MiB each) on the data dir's file system: limits.durable_write_gbps, and for every
arm ratios.<arm>_durable_over_disk_limit = its median durable_s / (payload / the median rate).

  /usr/bin/python3 bench/py/ckpt.py [--gib 2] [--repeats 3] [--arms rdma,http,torch]
      [--device cuda] [--async-save] [--overwrite] [--data DIR] [--local-dir DIR]
"""
import argparse
import gc
import io
import os
import shutil
import sys
import tempfile
import time

import common as cm
import disk_commit
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


def run_wharf(arm, c, sd, bucket, key, srv, nbytes, do_verify, concurrency, dev="cpu",
              async_save=False, reloads=0):
    url = f"s3://{bucket}/{key}"
    out = {"arm": arm}
    with cm.Window(srv) as w:
        t0 = time.perf_counter()
        if async_save:
            fut = wt.save(sd, url, client=c, concurrency=concurrency, async_=True)
            blocking = time.perf_counter() - t0
            rep = fut.result()
        else:
            rep = wt.save(sd, url, client=c, concurrency=concurrency)
            blocking = time.perf_counter() - t0
        durable = time.perf_counter() - t0
    out["save"] = dict(wall_s=w.wall_s, gbps=nbytes / w.wall_s / 1e9, bytes=rep["bytes"],
                       save_blocking_s=blocking, durable_s=durable, async_save=async_save,
                       lib_save_blocking_s=rep["save_blocking_s"],
                       lib_durable_s=rep["durable_s"], removed=rep["removed"],
                       staging_budget=rep.get("staging_budget"),
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
    # The same checkpoint loaded again: a first load that is slower than these pays for
    # meeting new memory (the arena, the server's mapping of it), not for moving bytes.
    out["reloads"] = []
    for _ in range(reloads):
        lrep = {}
        with cm.Window(srv) as w:
            got = wt.load(url, client=c, report=lrep, device=dev)
            sync(dev)
        out["reloads"].append(dict(wall_s=w.wall_s, gbps=nbytes / w.wall_s / 1e9,
                                   download_s=lrep["download_s"], **w.cpu(nbytes)))
        del got
        gc.collect()
    return out


def flat(sd):
    """The state's tensors as one flat dict (what the DCP arms save)."""
    return tensors_of(sd)


def run_torchfs(sd, path, srv, nbytes, do_verify, dev="cpu"):
    """torch.save to a local file, flushed and fsynced (durable), then torch.load."""
    out = {"arm": "torchfs"}
    with cm.Window(srv) as w:
        t0 = time.perf_counter()
        with open(path, "wb") as f:
            torch.save(sd, f)
            f.flush()
            os.fsync(f.fileno())
        dfd = os.open(os.path.dirname(path), os.O_RDONLY)
        try:
            os.fsync(dfd)  # the file's directory entry too
        finally:
            os.close(dfd)
        t1 = time.perf_counter()
    size = os.path.getsize(path)
    out["save"] = dict(wall_s=w.wall_s, gbps=nbytes / w.wall_s / 1e9, bytes=size,
                       save_blocking_s=t1 - t0, durable_s=t1 - t0, async_save=False,
                       rdma_witness=w.witness(), **w.cpu(nbytes))
    gc.collect()
    with cm.Window(srv) as w:
        got = torch.load(path, map_location=dev)
        sync(dev)
    out["load"] = dict(wall_s=w.wall_s, gbps=nbytes / w.wall_s / 1e9, bytes=size,
                       rdma_witness=w.witness(), **w.cpu(nbytes))
    if do_verify:
        out["load"]["verified"] = verify(sd, got)
    del got
    gc.collect()
    return out


def dcp_ready():
    """(torch.distributed.checkpoint, None) with a single-rank gloo group set up, or
    (None, why not)."""
    try:
        import torch.distributed as dist
        import torch.distributed.checkpoint as dcp
    except ImportError as e:
        return None, f"torch {torch.__version__} has no torch.distributed.checkpoint ({e})"
    if not dist.is_initialized():
        fd, store = tempfile.mkstemp(prefix="ckpt-bench-pg-")
        os.close(fd)
        os.unlink(store)
        dist.init_process_group("gloo", init_method=f"file://{store}", rank=0, world_size=1)
    return dcp, None


def run_dcp(arm, dcp, sd, where, srv, nbytes, do_verify, dev="cpu", async_save=False,
            client=None):
    """DCP save and load of the flat tensor dict: FileSystemWriter under a local directory
    (dcpfs), or WharfStorageWriter to s3:// (dcp)."""
    if arm == "dcp":
        from wharf.torch.dcp import WharfStorageReader, WharfStorageWriter
        writer = WharfStorageWriter(where, client=client)
        reader = WharfStorageReader(where, client=client)
    else:
        writer = dcp.FileSystemWriter(where)
        reader = dcp.FileSystemReader(where)
    state = flat(sd)
    out = {"arm": arm}
    with cm.Window(srv) as w:
        t0 = time.perf_counter()
        if async_save:
            if not hasattr(dcp, "async_save"):
                raise RuntimeError(f"torch {torch.__version__} has no dcp.async_save")
            fut = dcp.async_save(state, storage_writer=writer)
            blocking = time.perf_counter() - t0
            fut.result()
        else:
            dcp.save(state, storage_writer=writer)
            blocking = time.perf_counter() - t0
        durable = time.perf_counter() - t0
    out["save"] = dict(wall_s=w.wall_s, gbps=nbytes / w.wall_s / 1e9, bytes=nbytes,
                       save_blocking_s=blocking, durable_s=durable, async_save=async_save,
                       rdma_witness=w.witness(), **w.cpu(nbytes))
    err = w.gate("rdma" if arm == "dcp" else arm, "put", nbytes)
    if err:
        out["save"]["error"] = err + "-on-save"
    gc.collect()
    got = {k: torch.empty_like(v) for k, v in state.items()}
    with cm.Window(srv) as w:
        dcp.load(got, storage_reader=reader)
        sync(dev)
    out["load"] = dict(wall_s=w.wall_s, gbps=nbytes / w.wall_s / 1e9, bytes=nbytes,
                       rdma_witness=w.witness(), **w.cpu(nbytes))
    err = w.gate("rdma" if arm == "dcp" else arm, "get", nbytes)
    if err:
        out["load"]["error"] = err
    if do_verify:
        out["load"]["verified"] = verify(state, got)
    del got, state
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
                       serialize_s=t1 - t0, upload_s=t2 - t1, save_blocking_s=t2 - t0,
                       durable_s=t2 - t0, async_save=False, rdma_witness=w.witness(),
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


def summarize_runs(a, arms, runs, sd, nbytes, lim, srv, skipped=None):
    """The result root of the runs so far (written after every repeat: a run stopped by its
    time limit keeps the repeats it finished)."""
    skipped = skipped or {}
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
        saves = [x["save"] for x in rr if "error" not in x["save"]]
        for f in ("save_blocking_s", "durable_s"):
            results[arm][f] = cm.bl.summary([c[f] for c in saves if c.get(f) is not None])
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
                       "arms": arms, "concurrency": a.concurrency, "device": a.device,
                       "async_save": a.async_save, "overwrite": a.overwrite,
                       "data_dir": srv.data_dir, "data_fs": cm.bl.fs_type(srv.data_dir),
                       "local_dir": a.local_dir,
                       "staging_budget_default": wt.default_staging_budget(
                           a.device if a.device.startswith("cuda") else None),
                       "tensors": len(tensors_of(sd)), "shard_size": wt.DEFAULT_SHARD_SIZE,
                       "order": "paired: " + " ".join(arms) + " per repeat"},
            "environment": dict(cm.bl.environment("ofi+shm"), torch=torch.__version__),
            "limits": lim,
            "results": {"arms": results, "ratios": ratios, "runs": runs,
                        "skipped": skipped}}
    root["memory"] = cm.memory_peaks(srv)
    rate = (lim.get("durable_write_gbps") or {}).get("median")
    if rate:
        floor = nbytes / (rate * 1e9)
        for arm in arms:
            du = results[arm]["durable_s"]
            if du.get("median"):
                ratios[f"{arm}_durable_over_disk_limit"] = du["median"] / floor
    if "rdma" in results:
        sb, du = results["rdma"]["save_blocking_s"], results["rdma"]["durable_s"]
        if sb.get("median") and du.get("median"):
            ratios["rdma_durable_over_blocking"] = du["median"] / sb["median"]
    return root, results, ratios


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    cm.common_args(ap)
    ap.add_argument("--gib", type=float, default=2.0)
    ap.add_argument("--arms", default="rdma,http,torch")
    ap.add_argument("--device", default="cpu", help="cpu, or cuda: the state dict lives there "
                    "and restores land there")
    ap.add_argument("--async-save", action="store_true", help="rdma/http: wharf.torch.save("
                    "async_=True); dcp/dcpfs: dcp.async_save")
    ap.add_argument("--overwrite", action="store_true", help="one key per arm, every repeat "
                    "saving over the last (the overwrite-safe path with its cleanup)")
    ap.add_argument("--reloads", type=int, default=0, help="rdma/http: load each saved "
                    "checkpoint this many more times (results.runs[].reloads)")
    ap.add_argument("--durable-limit", choices=("auto", "on", "off"), default="auto",
                    help="measure the disk's durable write rate between repeats (auto: when "
                    "the data dir is not on tmpfs or ramfs)")
    ap.add_argument("--durable-writers", type=int, default=16,
                    help="writer threads of that measure (wharfd's commit pattern)")
    ap.add_argument("--durable-mib", type=int, default=64,
                    help="size of each of its files (4 per writer)")
    ap.add_argument("--local-dir", default=None, help="where torchfs and dcpfs write "
                    "(default: a temporary directory; tmpfs or a disk, like --data)")
    a = ap.parse_args()
    arms = a.arms.split(",")
    if a.device.startswith("cuda") and not torch.cuda.is_available():
        print("skip: --device cuda but torch.cuda.is_available() is False", file=sys.stderr)
        return 77
    skipped = {}
    dcp = None
    if {"dcp", "dcpfs"} & set(arms):
        dcp, why = dcp_ready()
        if why is None and a.async_save and not hasattr(dcp, "async_save"):
            why = f"torch {torch.__version__} has no dcp.async_save (torch >= 2.3)"
        if why:
            for arm in ("dcp", "dcpfs"):
                if arm in arms:
                    skipped[arm] = why
                    arms.remove(arm)
            print(f"skip dcp arms: {why}", file=sys.stderr)
    local = a.local_dir or tempfile.mkdtemp(prefix="ckpt-bench-local-")
    os.makedirs(local, exist_ok=True)
    lim = cm.limits(a)
    if a.device.startswith("cuda") and not a.no_limits:
        lim.update(cm.pinned_copy_rates(cm.GiB, 3))
    srv = cm.start_server(a)
    try:
        sd = to_device(state_dict(int(a.gib * cm.GiB)), a.device)
        nbytes = payload_bytes(sd)
        print(f"state dict: {nbytes / cm.GiB:.2f} GiB, {len(tensors_of(sd))} tensors",
              file=sys.stderr)
        clients = {arm: cm.make_client(srv, "rdma" if arm == "dcp" else arm, a.concurrency)
                   for arm in arms if arm not in ("torch", "torchfs", "dcpfs")}
        if not clients:
            clients["http"] = cm.make_client(srv, "http", a.concurrency)
        s3 = cm.boto3_client(srv, a.concurrency) if "torch" in arms else None
        bucket = "bench-ckpt"
        (clients.get("http") or next(iter(clients.values()))).create_bucket(bucket)
        runs = []
        out = cm.Incremental(a, "ckpt")
        fs = cm.bl.fs_type(srv.data_dir)
        durable = a.durable_limit == "on" or (a.durable_limit == "auto" and
                                              fs not in ("tmpfs", "ramfs"))
        rates = []

        def measure_durable():
            if durable:
                rates.append(disk_commit.durable_rate(os.path.dirname(
                    os.path.abspath(srv.data_dir)), a.durable_writers, 4, a.durable_mib))
                lim["durable_write_gbps"] = cm.bl.summary(rates)
                lim["durable_write_how"] = (
                    f"bench/disk_commit.py commit+sfr, {a.durable_writers} writers x 4 files "
                    f"x {a.durable_mib} MiB, on {fs} beside the data dir, before every repeat "
                    "and after the last")
                print(f"durable write rate {rates[-1]:.3f} GB/s", file=sys.stderr, flush=True)
        for r in range(a.repeats):
            measure_durable()
            for arm in arms:
                key = f"ckpt-{arm}" if a.overwrite else f"ckpt-{arm}-{r}"
                last = r == a.repeats - 1
                print(f"repeat {r} arm {arm}", file=sys.stderr, flush=True)
                if arm == "torch":
                    res = run_torch(s3, sd, bucket, key, srv, nbytes, r == 0, a.concurrency,
                                    a.device)
                    if not a.overwrite or last:
                        s3.delete_object(Bucket=bucket, Key=key)
                elif arm == "torchfs":
                    path = os.path.join(local, key + ".pt")
                    res = run_torchfs(sd, path, srv, nbytes, r == 0, a.device)
                    if not a.overwrite or last:
                        os.unlink(path)
                elif arm == "dcpfs":
                    path = os.path.join(local, key)
                    res = run_dcp(arm, dcp, sd, path, srv, nbytes, r == 0, a.device,
                                  a.async_save)
                    if not a.overwrite or last:
                        shutil.rmtree(path, ignore_errors=True)
                elif arm == "dcp":
                    res = run_dcp(arm, dcp, sd, f"s3://{bucket}/{key}", srv, nbytes, r == 0,
                                  a.device, a.async_save, clients[arm])
                    if not a.overwrite or last:
                        cleanup(clients[arm], bucket, key + "/")
                else:
                    res = run_wharf(arm, clients[arm], sd, bucket, key, srv, nbytes, r == 0,
                                    a.concurrency, a.device, a.async_save, a.reloads)
                    if not a.overwrite or last:
                        cleanup(clients[arm], bucket, key + "/")
                res["repeat"] = r
                runs.append(res)
                print(f"  save {res['save']['wall_s']:.3f}s load {res['load']['wall_s']:.3f}s "
                      f"reloads {[round(x['wall_s'], 3) for x in res.get('reloads', [])]} "
                      f"{res['save'].get('error', '')}{res['load'].get('error', '')}",
                      file=sys.stderr, flush=True)
            out.write(summarize_runs(a, arms, runs, sd, nbytes, lim, srv, skipped)[0], False)
        measure_durable()
        root, results, ratios = summarize_runs(a, arms, runs, sd, nbytes, lim, srv, skipped)
        out.write(root, True)
        for arm in arms:
            s, l_ = results[arm]["save"], results[arm]["load"]
            print(f"{arm:7s} save {s['wall_s']['median']:.3f}s "
                  f"({s['gbps']['median']:.2f} GB/s) blocking "
                  f"{results[arm]['save_blocking_s']['median']:.3f}s durable "
                  f"{results[arm]['durable_s']['median']:.3f}s load "
                  f"{l_['wall_s']['median']:.3f}s ({l_['gbps']['median']:.2f} GB/s) "
                  f"failures {s['failures'] + l_['failures']}")
        print(ratios, skipped or "")
    finally:
        srv.stop()
        if a.local_dir is None:
            shutil.rmtree(local, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
