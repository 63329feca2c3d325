#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""DDP checkpoint save and restore: every rank saves its own state, one wharfd for the host.

Launch with torchrun (one process per GPU), or let the program spawn its ranks itself:

  torchrun --standalone --nproc-per-node 8 bench/py/ddp_ckpt.py --gib-per-rank 4
  /usr/bin/python3 bench/py/ddp_ckpt.py --nproc 2 --gib-per-rank 0.004   # CPU ranks, gloo

--backend auto: nccl when every local rank has a GPU of its own, else gloo; each rank's state
lives on its own GPU (cuda:LOCAL_RANK) with nccl, in host memory with gloo (--device overrides).
Rank 0 starts wharfd (tests/lib/wharfd.py) unless --endpoint names one; the timing barriers and
the small control messages go over a gloo group of their own, so they block the host the same
way with either backend.

Arms, paired (every repeat runs each arm once, the order rotated by one per repeat), each
repeat under a fresh key:
  rdma   wharf.torch.save / load over ofi+shm (the server's Unix socket)
  http   the same over wharf's HTTP (libwharf, same concurrency)
  dcp    torch.distributed.checkpoint save / load with wharf.torch.dcp's WharfStorageWriter /
         WharfStorageReader over ofi+shm (needs DCP: skipped with the reason on older torch);
         restores land in place in tensors allocated outside the timed window
  torch  torch.save of each rank's state into a BytesIO + boto3 upload_fileobj; restore with
         download_fileobj + torch.load (skipped with the reason where boto3 is missing)
  dcpfs  DCP's own FileSystemWriter / FileSystemReader into a directory (--fs-dir, default one
         beside wharfd's data: the same file system), the same flat dict as dcp: the DCP
         baseline without an object store (DCP's defaults: fsync on, one thread per rank)

The state of rank r (the B4 layout of bench/py/ckpt.py, seeded by r so that no two ranks hold
the same bytes): 64 bf16 weights, every 4th at half size, each with an equal exp_avg, in
{model, optimizer{state{i:{exp_avg, step}}, param_groups}, step, epoch}; the dcp arm saves
the same tensors as a flat dict keyed "rank<r>/<path>".

One cell is one phase (save or restore) of one arm with K ranks. It runs between barriers of
every rank: barrier, rank 0 reads the server's /metrics, /proc/stat and process CPU, barrier,
t0, the K ranks save (or restore), barrier, rank 0 commits the checkpoint where the library
leaves that to the caller (wharf.torch.commit with K < world size), barrier, t1. stall_s =
t1 - t0 (the training stall: no rank resumes before the checkpoint is committed / every rank
has its state back), rank_s = each rank's own call, gbps = payload of the K ranks / stall_s,
host_cpu_s = busy CPU of the whole host from /proc/stat, server_cpu_s = wharfd's
process_cpu_seconds_total, client_cpu_s = the K ranks' getrusage summed. Every restore is
compared tensor by tensor with the rank's state (dtype, shape, all values) after t1, outside
the window. rdma and dcp cells are gated on the server's counters: RDMA write bytes (save) or
read bytes (restore) >= 0.99 of the payload summed over the K ranks, else the cell carries
error "rdma-not-used...". Cells with an error or a failed verification count in "failures",
not in the medians.

Scaling: --ranks 1,2,4,8 runs every arm with the first 1, 2, 4 and 8 ranks in one run (the
others wait at the barriers); results.scaling has the aggregate GB/s per rank count.

The result file (bench/benchlib.py's schema, benchmark "ddp-ckpt") is rewritten after every
cell, so a run stopped by its time limit keeps what it finished ("complete": false).
"""
import argparse
import datetime
import gc
import importlib
import io
import os
import resource
import sys
import time
import traceback
import uuid

import common as cm
import ckpt
import torch
import torch.distributed as dist

import wharf
import wharf.torch as wt

ARMS = ("rdma", "http", "dcp", "torch", "dcpfs")
RDMA_ARMS = ("rdma", "dcp")
BENCHMARK = "ddp-ckpt"


# ---- the state of one rank -----------------------------------------------------------------


def rank_state(total_bytes, rank, device):
    """ckpt.state_dict's layout, about total_bytes of tensors, made on device, with a seed of
    its own per rank."""
    return ckpt.state_dict(total_bytes, seed=1234 + 7919 * rank, device=device)


def flat_state(sd, rank):
    """The dcp arm's view of a rank's state: {"rank<r>/<path>": tensor}; keys differ per rank,
    so DCP's planner keeps every rank's items (it de-duplicates equal keys as replicas)."""
    return {f"rank{rank}{path}": t for path, t in ckpt.tensors_of(sd).items()}


# ---- ranks, groups, the server --------------------------------------------------------------


class Ctx:
    """What every rank knows: its rank, the world, the groups, the clients."""

    def __init__(self, a):
        self.a = a
        self.rank = dist.get_rank()
        self.world = dist.get_world_size()
        self.ctl = None            # gloo group of every rank: barriers and control messages
        self.sub = {}              # K -> gloo group of ranks [0, K) (DCP's process group)
        self.srv = None            # rank 0's WharfServer, when it started one
        self.server_pid = None
        self.endpoint = self.unix_socket = None
        self.clients = {}
        self.fs_dir = None         # the dcpfs arm's directory (rank 0 made it)
        self.s3 = None
        self.device = "cpu"

    def barrier(self):
        dist.barrier(group=self.ctl)

    def gather(self, obj):
        """obj of every rank, on rank 0 (None elsewhere)."""
        out = [None] * self.world if self.rank == 0 else None
        dist.gather_object(obj, out, dst=0, group=self.ctl)
        return out

    def bcast(self, obj):
        box = [obj]
        dist.broadcast_object_list(box, src=0, group=self.ctl)
        return box[0]


def pick_backend(a, local_world):
    if a.backend != "auto":
        return a.backend
    if torch.cuda.is_available() and dist.is_nccl_available() and \
            torch.cuda.device_count() >= local_world:
        return "nccl"
    return "gloo"


def init_dist(a, rank, world, local_rank, local_world):
    backend = pick_backend(a, local_world)
    dev = a.device
    if dev == "auto":
        dev = "cuda" if backend == "nccl" else "cpu"
    if dev == "cuda":
        # More ranks than GPUs (e.g. 8 ranks on one GPU, as the scaling runs do): ranks share
        # the GPUs round-robin.
        gpu = local_rank % max(1, torch.cuda.device_count())
        torch.cuda.set_device(gpu)
        dev = f"cuda:{gpu}"
    timeout = datetime.timedelta(seconds=a.timeout_s)
    kw = {}
    if backend == "nccl" and "device_id" in init_pg_params():
        kw["device_id"] = torch.device(dev)
    dist.init_process_group(backend, rank=rank, world_size=world, timeout=timeout, **kw)
    return backend, dev


def init_pg_params():
    import inspect
    try:
        return inspect.signature(dist.init_process_group).parameters
    except (TypeError, ValueError):
        return {}


class _Srv:
    """The server as a non-zero rank sees it (what cm.make_client / boto3_client read)."""

    def __init__(self, endpoint, unix_socket):
        self.endpoint, self.unix_socket = endpoint, unix_socket


def start_server(a):
    """cm.start_server's wharfd, under setpriv --pdeathsig where there is one: a rank 0 killed
    (a failed rank makes the launcher kill the others) takes its wharfd with it."""
    import shutil
    prefix = ["setpriv", "--pdeathsig", "TERM"] if shutil.which("setpriv") else []
    srv = cm.WharfServer(data_dir=a.data, log_level="warn", prefix=prefix)
    srv.start()
    return srv


def setup(ctx, backend):
    a = ctx.a
    ctx.ctl = dist.new_group(backend="gloo") if backend != "gloo" else dist.group.WORLD
    for k in ctx.ks:
        ctx.sub[k] = dist.new_group(ranks=list(range(k)), backend="gloo")
    if backend == "nccl":  # the training group works before anything is measured
        x = torch.ones(1, device=ctx.device)
        dist.all_reduce(x)
        torch.cuda.synchronize()
        assert int(x.item()) == ctx.world, x
    info = None
    if ctx.rank == 0:
        try:
            if a.endpoint:
                info = (a.endpoint, a.unix_socket, None, None)
            else:
                ctx.srv = start_server(a)
                info = (ctx.srv.endpoint, ctx.srv.unix_socket, ctx.srv.proc.pid, None)
        except Exception as e:  # every rank must hear of it, or they wait in bcast
            info = (None, None, None, f"rank 0 could not start wharfd: {e}")
    info = ctx.bcast(info)
    if info[3]:
        raise SystemExit(info[3])
    ctx.endpoint, ctx.unix_socket, ctx.server_pid = info[:3]
    srv = _Srv(ctx.endpoint, ctx.unix_socket)
    ctx.skipped = dict(ctx.skipped)
    for arm in ctx.arms:
        if arm in ("rdma", "dcp") and "rdma" not in ctx.clients:
            if not ctx.unix_socket:
                ctx.skipped.setdefault(arm, "no Unix socket of the server (--unix-socket) "
                                       "for ofi+shm")
                continue
            ctx.clients["rdma"] = cm.make_client(srv, "rdma", a.concurrency)
        if arm == "http":
            ctx.clients["http"] = cm.make_client(srv, "http", a.concurrency)
        if arm == "torch":
            try:
                ctx.s3 = cm.boto3_client(srv, a.concurrency)
            except ImportError as e:  # the baseline arm needs boto3; the others do not
                ctx.skipped.setdefault(arm, f"boto3 is not importable ({e})")
    if "http" not in ctx.clients:
        ctx.clients["http"] = cm.make_client(srv, "http", a.concurrency)
    ctx.bucket = ctx.bcast(f"bench-ddp-{uuid.uuid4().hex[:10]}" if ctx.rank == 0 else None)
    if ctx.rank == 0:
        ctx.clients["http"].create_bucket(ctx.bucket)
    fs_dir = None
    if "dcpfs" in ctx.arms and ctx.rank == 0:
        import tempfile
        base = a.fs_dir or (os.path.dirname(os.path.abspath(a.data)) if a.data else None)
        fs_dir = tempfile.mkdtemp(prefix="dcpfs-", dir=base)
    ctx.fs_dir = ctx.bcast(fs_dir)
    ctx.barrier()


def arm_skips(arms):
    """{arm: reason} for the arms this host cannot run (the same on every rank)."""
    out = {}
    if "dcp" in arms or "dcpfs" in arms:
        try:
            importlib.import_module("torch.distributed.checkpoint")
            importlib.import_module("wharf.torch.dcp")
        except ImportError as e:
            for arm in ("dcp", "dcpfs"):
                if arm in arms:
                    out[arm] = f"torch {torch.__version__}: no usable " \
                               f"torch.distributed.checkpoint ({e})"
    if "torch" in arms:
        try:
            importlib.import_module("boto3")
        except ImportError as e:
            out["torch"] = f"boto3 is not importable ({e})"
    return out


# ---- one timed cell -------------------------------------------------------------------------


def server_cpu(ctx, metrics):
    if ctx.server_pid:
        return cm.bl.proc_cpu_s(ctx.server_pid)
    return metrics.get("process_cpu_seconds_total", 0.0)


def _sync(dev):
    if str(dev).startswith("cuda"):
        torch.cuda.synchronize()


def timed(ctx, k, fn, finish=None):
    """Runs fn() on ranks [0, k) between barriers of every rank (see the module doc). fn
    returns (result, extra dict). Returns (result of this rank or None, cell on rank 0)."""
    part = ctx.rank < k
    ctx.barrier()
    if ctx.rank == 0:
        gc.collect()
        m0 = cm.scrape(ctx)
        h0, s0 = cm.bl.host_cpu(), server_cpu(ctx, m0)
    ctx.barrier()
    ru0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    res, extra, err = None, {}, None
    if part:
        try:
            res, extra = fn()
            _sync(ctx.device)
        except Exception as e:
            err = f"rank {ctx.rank}: {type(e).__name__}: {e}"
            traceback.print_exc()
    own = time.perf_counter() - t0
    ctx.barrier()
    if finish is not None and ctx.rank == 0:
        try:
            finish()
        except Exception as e:
            err = (err + "; " if err else "") + f"commit: {type(e).__name__}: {e}"
    ctx.barrier()
    stall = time.perf_counter() - t0
    ru1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = ru1.ru_utime + ru1.ru_stime - ru0.ru_utime - ru0.ru_stime
    if ctx.rank == 0:
        m1 = cm.scrape(ctx)
        host_s = cm.bl.host_busy_s(h0, cm.bl.host_cpu())
        srv_s = server_cpu(ctx, m1) - s0
        delta = cm.bl.metrics_delta(m0, m1)
    per = ctx.gather({"rank": ctx.rank, "part": part, "own_s": own, "stall_s": stall,
                      "cpu_s": cpu, "error": err, "extra": extra})
    if ctx.rank != 0:
        return res, None
    per = [p for p in per if p["part"]]
    nbytes = sum(ctx.payload[p["rank"]] for p in per)
    stall_s = max(p["stall_s"] for p in per)
    gb = nbytes / 1e9
    client_s = sum(p["cpu_s"] for p in per)
    cell = {"ranks": k, "bytes": nbytes, "stall_s": stall_s, "gbps": gb / stall_s,
            "rank_s": [p["own_s"] for p in per], "rank_max_s": max(p["own_s"] for p in per),
            "host_cpu_s": host_s, "server_cpu_s": srv_s, "client_cpu_s": client_s,
            "host_cpu_s_per_gb": host_s / gb, "server_cpu_s_per_gb": srv_s / gb,
            "client_cpu_s_per_gb": client_s / gb,
            "rdma_witness": {
                "wharf_rdma_read_bytes_total": delta.get("wharf_rdma_read_bytes_total", 0.0),
                "wharf_rdma_read_ops_total": delta.get("wharf_rdma_read_ops_total", 0.0),
                "wharf_rdma_write_bytes_total": delta.get("wharf_rdma_write_bytes_total", 0.0),
                "wharf_rdma_write_ops_total": delta.get("wharf_rdma_write_ops_total", 0.0)},
            "per_rank": [dict(rank=p["rank"], **p["extra"]) for p in per]}
    errs = [p["error"] for p in per if p["error"]]
    if errs:
        cell["error"] = "; ".join(errs)[:2000]
    return res, cell


def gate(cell, arm, direction):
    """RDMA arms: the server must have moved >= GATE of the payload of every rank."""
    if arm not in RDMA_ARMS or "error" in cell:
        return
    w = cell["rdma_witness"]
    got = w["wharf_rdma_write_bytes_total" if direction == "put" else
            "wharf_rdma_read_bytes_total"]
    cell["gate"] = {"direction": direction, "rdma_bytes": got, "payload": cell["bytes"],
                    "ratio": got / max(1, cell["bytes"]), "min_ratio": cm.GATE,
                    "passed": got >= cm.GATE * cell["bytes"]}
    if not cell["gate"]["passed"]:
        cell["error"] = (f"rdma-not-used: server counted {int(got)} RDMA {direction} bytes of "
                         f"{cell['bytes']} ({got / max(1, cell['bytes']):.3f} < {cm.GATE})")


def verified(ctx, k, ref, got):
    """Every participating rank compares its restore with its state; rank 0 gets the cells'
    verdict. Outside any timed window."""
    v = None
    if ctx.rank < k:
        try:
            v = ckpt.verify(ref, got) if got is not None else \
                {"ok": False, "tensors_checked": 0, "mismatched": ["nothing restored"]}
        except Exception as e:
            v = {"ok": False, "tensors_checked": 0, "mismatched": [f"{type(e).__name__}: {e}"]}
    vs = ctx.gather(v)
    if ctx.rank != 0:
        return None
    vs = [dict(rank=r, **x) for r, x in enumerate(vs) if x is not None]
    return {"ok": all(x["ok"] for x in vs) and len(vs) == k,
            "ranks_checked": len(vs), "tensors_checked": sum(x["tensors_checked"] for x in vs),
            "mismatched": [f"rank {x['rank']}: {m}" for x in vs for m in x["mismatched"]][:8]}


# ---- the arms -------------------------------------------------------------------------------


def arm_wharf(ctx, arm, k, key):
    c = ctx.clients["rdma" if arm == "rdma" else "http"]
    url = f"s3://{ctx.bucket}/{key}"
    r, a = ctx.rank, ctx.a
    # world_size k < the process group's: wharf.torch leaves the commit to the caller
    explicit = 1 < k < ctx.world

    def save():
        rep = wt.save(ctx.sd, url, client=c, rank=r, world_size=k, save_id=key,
                      concurrency=a.concurrency)
        return None, {"bytes": rep["bytes"], "shards": len(rep["shards"]),
                      "transports": rep["transports"], "staging": rep["staging"],
                      "upload_s": rep["upload_s"], "commit_s": rep["commit_s"]}

    def commit():
        wt.commit(url, world_size=k, client=c, save_id=key)

    def load():
        lrep = {}
        got = wt.load(url, client=c, rank=r, device=ctx.device, report=lrep)
        return got, {"bytes": lrep.get("bytes"), "transports": lrep.get("transports"),
                     "fell_back": lrep.get("fell_back")}

    return save, commit if explicit else None, load, lambda: ctx.sd


def arm_dcp(ctx, k, key):
    import torch.distributed.checkpoint as dcp
    from wharf.torch.dcp import WharfStorageReader, WharfStorageWriter
    c = ctx.clients["rdma"]
    url = f"s3://{ctx.bucket}/{key}"
    pg = ctx.sub[k]
    flat = flat_state(ctx.sd, ctx.rank)
    dest = {}

    def save():
        w = WharfStorageWriter(url, client=c)
        dcp.save(flat, storage_writer=w, process_group=pg)
        return None, dict(w.last_report)

    def load():
        r = WharfStorageReader(url, client=c)
        dcp.load(dest, storage_reader=r, process_group=pg)
        return dest, {}

    def prepare():  # the destination a restarted job already has: allocated outside the window
        dest.clear()
        dest.update({n: torch.empty_like(t) for n, t in flat.items()})
        return flat

    return save, None, load, prepare


def arm_dcpfs(ctx, k, key):
    import torch.distributed.checkpoint as dcp
    path = os.path.join(ctx.fs_dir, key)
    pg = ctx.sub[k]
    flat = flat_state(ctx.sd, ctx.rank)
    dest = {}

    def save():
        dcp.save(flat, storage_writer=dcp.FileSystemWriter(path), process_group=pg)
        return None, {}

    def load():
        dcp.load(dest, storage_reader=dcp.FileSystemReader(path), process_group=pg)
        return dest, {}

    def prepare():
        dest.clear()
        dest.update({n: torch.empty_like(t) for n, t in flat.items()})
        return flat

    return save, None, load, prepare


def arm_torch(ctx, k, key):
    from boto3.s3.transfer import TransferConfig
    a = ctx.a
    cfg = TransferConfig(multipart_threshold=64 * cm.MiB, multipart_chunksize=64 * cm.MiB,
                         max_concurrency=a.concurrency, use_threads=True)
    obj = f"{key}/rank-{ctx.rank:05d}.pt"

    def save():
        t0 = time.perf_counter()
        buf = io.BytesIO()
        torch.save(ctx.sd, buf)
        t1 = time.perf_counter()
        size = buf.tell()
        buf.seek(0)
        ctx.s3.upload_fileobj(buf, ctx.bucket, obj, Config=cfg)
        return None, {"bytes": size, "serialize_s": t1 - t0,
                      "upload_s": time.perf_counter() - t1}

    def load():
        t0 = time.perf_counter()
        buf = io.BytesIO()
        ctx.s3.download_fileobj(ctx.bucket, obj, buf, Config=cfg)
        t1 = time.perf_counter()
        buf.seek(0)
        got = torch.load(buf, map_location=ctx.device)
        _sync(ctx.device)
        return got, {"download_s": t1 - t0, "deserialize_s": time.perf_counter() - t1}

    return save, None, load, lambda: ctx.sd


def run_cell(ctx, arm, k, key):
    """Save then restore of one arm with k ranks, verified and cleaned up. Cells on rank 0."""
    if arm == "dcp":
        save, commit, load, prepare = arm_dcp(ctx, k, key)
    elif arm == "dcpfs":
        save, commit, load, prepare = arm_dcpfs(ctx, k, key)
    elif arm == "torch":
        save, commit, load, prepare = arm_torch(ctx, k, key)
    else:
        save, commit, load, prepare = arm_wharf(ctx, arm, k, key)
    _, scell = timed(ctx, k, save, commit)
    if ctx.rank == 0:
        gate(scell, arm, "put")
    failed = ctx.bcast("error" in scell if ctx.rank == 0 else None)
    lcell = None
    if failed:
        if ctx.rank == 0:
            lcell = {"ranks": k, "error": "not run: the save failed"}
    else:
        ref = prepare()
        got, lcell = timed(ctx, k, load)
        if ctx.rank == 0:
            gate(lcell, arm, "get")
        v = verified(ctx, k, ref, got)
        del got, ref
        if ctx.rank == 0:
            lcell["verified"] = v
            if not v["ok"] and "error" not in lcell:
                lcell["error"] = "verify-failed: " + "; ".join(v["mismatched"][:3])
    gc.collect()
    if ctx.rank == 0:  # outside the windows: free the server's disk for the next cell
        c = ctx.clients["http"]
        for o in c.list(ctx.bucket, key + "/"):
            c.delete(ctx.bucket, o.key)
        if arm == "dcpfs":
            import shutil
            shutil.rmtree(os.path.join(ctx.fs_dir, key), ignore_errors=True)
    ctx.barrier()
    return scell, lcell


# ---- summaries ------------------------------------------------------------------------------


def summarize(cells):
    ok = [c for c in cells if "error" not in c]
    s = cm.bl.summary
    out = {f: s([c[f] for c in ok]) for f in
           ("stall_s", "rank_max_s", "gbps", "host_cpu_s_per_gb", "server_cpu_s_per_gb",
            "client_cpu_s_per_gb")}
    if ok:  # each rank's own time, median over the repeats
        n = len(ok[0]["rank_s"])
        out["rank_s_median"] = [s([c["rank_s"][i] for c in ok])["median"] for i in range(n)]
    out["failures"] = [c["error"] for c in cells if "error" in c]
    if any("verified" in c for c in cells):
        out["verified"] = sum(1 for c in cells if c.get("verified", {}).get("ok"))
    out["gated"] = sum(1 for c in cells if c.get("gate", {}).get("passed"))
    return out


def build_results(ctx, cells):
    by_ranks, scaling, ratios = {}, {}, {}
    for k in ctx.ks:
        by_ranks[str(k)] = {}
        for arm in ctx.arms:
            if arm in ctx.skipped:
                continue
            rr = [c for c in cells if c["ranks"] == k and c["arm"] == arm]
            by_ranks[str(k)][arm] = {ph: summarize([c[ph] for c in rr])
                                     for ph in ("save", "load")}
    for arm in ctx.arms:
        if arm in ctx.skipped:
            continue
        scaling[arm] = {}
        for ph in ("save", "load"):
            med = [by_ranks[str(k)][arm][ph]["gbps"]["median"] for k in ctx.ks]
            scaling[arm][ph] = {"ranks": list(ctx.ks), "gbps_median": med,
                                "non_decreasing": all(b >= a for a, b in zip(med, med[1:]))}
    for k in ctx.ks:
        t = by_ranks[str(k)]
        rk = ratios.setdefault(str(k), {})
        for ph, name in (("save", "save"), ("load", "restore")):
            base = t.get("rdma", {}).get(ph, {}).get("stall_s", {}).get("median")
            for other in ("http", "dcp", "torch", "dcpfs"):
                o = t.get(other, {}).get(ph, {}).get("stall_s", {}).get("median")
                if base and o:
                    rk[f"{name}_speedup_rdma_vs_{other}"] = o / base
            d = t.get("dcp", {}).get(ph, {}).get("stall_s", {}).get("median")
            f = t.get("dcpfs", {}).get(ph, {}).get("stall_s", {}).get("median")
            if d and f:  # DCP through wharf against DCP's own file system writer
                rk[f"{name}_speedup_dcp_vs_dcpfs"] = f / d
            hb = t.get("rdma", {}).get(ph, {}).get("host_cpu_s_per_gb", {}).get("median")
            for other in ("http", "dcp", "torch", "dcpfs"):
                o = t.get(other, {}).get(ph, {}).get("host_cpu_s_per_gb", {}).get("median")
                if hb and o:
                    rk[f"{name}_host_cpu_ratio_{other}_vs_rdma"] = o / hb
    top = str(ctx.ks[-1])
    return {"arms": by_ranks[top], "by_ranks": by_ranks, "scaling": scaling,
            "ratios": ratios, "skipped": ctx.skipped, "cells": cells}


# ---- one rank -------------------------------------------------------------------------------


def rank_main(a, rank, world, local_rank, local_world):
    backend, dev = init_dist(a, rank, world, local_rank, local_world)
    ctx = Ctx(a)
    ctx.device = dev
    ctx.ks = parse_ranks(a.ranks, world)
    ctx.arms = [x for x in a.arms.split(",") if x]
    ctx.skipped = arm_skips(ctx.arms)
    try:
        setup(ctx, backend)
        run(ctx, a, backend)
    finally:
        for c in ctx.clients.values():
            c.close()
        if ctx.srv is not None:
            ctx.srv.cleanup()
        if ctx.fs_dir and ctx.rank == 0:
            import shutil
            shutil.rmtree(ctx.fs_dir, ignore_errors=True)
        dist.destroy_process_group()


def run(ctx, a, backend):
    lim = cm.limits(a) if ctx.rank == 0 else None
    ctx.barrier()  # the limits ran on a quiet host: the others wait before making their state
    ctx.sd = rank_state(int(a.gib_per_rank * cm.GiB), ctx.rank, ctx.device)
    _sync(ctx.device)
    mine = ckpt.payload_bytes(ctx.sd)
    ctx.payload = ctx.bcast(ctx.gather(mine))
    arms = [x for x in ctx.arms if x not in ctx.skipped]
    inc = cm.Incremental(a, BENCHMARK) if ctx.rank == 0 else None
    cells = []
    root = None
    if ctx.rank == 0:
        print(f"{ctx.world} ranks ({backend}, {ctx.device} on rank 0), "
              f"{mine / cm.MiB:.1f} MiB per rank, ranks {ctx.ks}, arms {arms}, skipped "
              f"{ctx.skipped}", file=sys.stderr, flush=True)
        env = dict(cm.bl.environment("ofi+shm"), torch=torch.__version__,
                   boto3=_version("boto3"))
        root = {"params": {"gib_per_rank": a.gib_per_rank, "payload_bytes_per_rank":
                           ctx.payload, "world_size": ctx.world, "ranks": ctx.ks,
                           "backend": backend, "device": str(ctx.device), "arms": ctx.arms,
                           "repeats": a.repeats, "concurrency": a.concurrency,
                           "launcher": "spawn" if a.nproc else "torchrun",
                           "tensors_per_rank": len(ckpt.tensors_of(ctx.sd)),
                           "shard_size": wt.DEFAULT_SHARD_SIZE,
                           "server": "external " + a.endpoint if a.endpoint else
                           "one wharfd started by rank 0",
                           "sync": "barriers of a gloo group of every rank",
                           "order": "paired: every arm once per repeat, rotated by one",
                           "dcp_destination": "allocated outside the timed window",
                           "gate": f"rdma, dcp: server RDMA bytes >= {cm.GATE} x payload"},
                "environment": env, "limits": lim,
                "results": build_results(ctx, cells)}
        inc.write(root, False)
    for k in ctx.ks:
        for r in range(a.repeats):
            order = arms[r % len(arms):] + arms[:r % len(arms)] if arms else []
            for arm in order:
                key = f"k{k}-{arm}-{r}"
                scell, lcell = run_cell(ctx, arm, k, key)
                if ctx.rank == 0:
                    cells.append({"ranks": k, "arm": arm, "repeat": r, "save": scell,
                                  "load": lcell})
                    print(f"ranks {k} repeat {r} {arm:5s} save {scell['stall_s']:.3f}s "
                          f"({scell['gbps']:.2f} GB/s) restore "
                          f"{lcell.get('stall_s', float('nan')):.3f}s "
                          f"{scell.get('error', '')} {lcell.get('error', '')}",
                          file=sys.stderr, flush=True)
                    root["results"] = build_results(ctx, cells)
                    inc.write(root, False)
    if ctx.rank == 0:
        root["results"] = build_results(ctx, cells)
        inc.write(root, True)
        report(root, inc.path)
        try:  # the run's bucket, empty by now (each cell removed its objects)
            ctx.clients["http"].delete_bucket(ctx.bucket)
        except wharf.WharfError as e:
            print(f"could not delete bucket {ctx.bucket}: {e}", file=sys.stderr)
    ctx.barrier()


def report(root, path):
    res = root["results"]
    for k, arms in res["by_ranks"].items():
        for arm, ph in arms.items():
            s, l_ = ph["save"], ph["load"]
            print(f"ranks {k} {arm:5s} save {s['stall_s']['median']:.3f}s "
                  f"({s['gbps']['median']:.2f} GB/s, host {s['host_cpu_s_per_gb']['median']:.2f}"
                  f" CPU-s/GB) restore {l_['stall_s']['median']:.3f}s "
                  f"({l_['gbps']['median']:.2f} GB/s, host "
                  f"{l_['host_cpu_s_per_gb']['median']:.2f} CPU-s/GB) verified "
                  f"{l_.get('verified', 0)} failures {len(s['failures']) + len(l_['failures'])}")
    for arm, why in res["skipped"].items():
        print(f"skipped {arm}: {why}")
    print(f"result: {path}")


def _version(mod):
    try:
        return __import__(mod).__version__
    except Exception:
        return None


def parse_ranks(spec, world):
    if not spec:
        return [world]
    ks = sorted({int(x) for x in str(spec).split(",") if x.strip()})
    if not ks or ks[0] < 1 or ks[-1] > world:
        raise SystemExit(f"--ranks {spec}: every count must be in [1, {world}] (the world "
                         "size)")
    return ks


def _spawned(local_rank, a, world, port):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(local_rank),
                      WORLD_SIZE=str(world), LOCAL_RANK=str(local_rank),
                      LOCAL_WORLD_SIZE=str(world))
    # as torchrun does for several processes: no rank's OpenMP pool spans every core
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // world))
    rank_main(a, local_rank, world, local_rank, world)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    cm.common_args(ap)
    ap.add_argument("--gib-per-rank", type=float, default=4.0,
                    help="GiB of tensors in each rank's state (fractions allowed)")
    ap.add_argument("--arms", default=",".join(ARMS))
    ap.add_argument("--ranks", default="", help="scaling: rank counts to run, e.g. 1,2,4,8 "
                    "(default: the world size only)")
    ap.add_argument("--nproc", type=int, default=0,
                    help="spawn this many ranks (torch.multiprocessing) instead of torchrun")
    ap.add_argument("--backend", default="auto", choices=("auto", "nccl", "gloo"))
    ap.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    ap.add_argument("--endpoint", default=None, help="a running wharfd (default: rank 0 "
                    "starts one)")
    ap.add_argument("--unix-socket", default=None, help="its Unix socket (for ofi+shm)")
    ap.add_argument("--fs-dir", default=None, help="the dcpfs arm's directory (default: "
                    "beside --data, else the temporary directory)")
    ap.add_argument("--timeout-s", type=float, default=1800,
                    help="collective timeout: a rank that dies ends the others by then")
    a = ap.parse_args()
    if a.repeats < 3:
        ap.error("--repeats must be at least 3 (the reports give medians of 3 or more)")
    bad = [x for x in a.arms.split(",") if x and x not in ARMS]
    if bad:
        ap.error(f"unknown arms {bad}; choose from {','.join(ARMS)}")
    if a.endpoint and a.data:
        ap.error("--data is for the wharfd rank 0 starts; not with --endpoint")
    if a.nproc:
        import torch.multiprocessing as mp
        from wharfd import free_port
        mp.spawn(_spawned, args=(a, a.nproc, free_port()), nprocs=a.nproc, join=True)
        return
    env = os.environ
    if "RANK" not in env:
        ap.error("not under torchrun (no RANK in the environment): pass --nproc N to spawn "
                 "the ranks here")
    rank_main(a, int(env["RANK"]), int(env["WORLD_SIZE"]), int(env.get("LOCAL_RANK", 0)),
              int(env.get("LOCAL_WORLD_SIZE", env["WORLD_SIZE"])))


if __name__ == "__main__":
    main()
