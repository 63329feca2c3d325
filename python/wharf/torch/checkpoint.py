"""wharf.torch.checkpoint: checkpoints as standard safetensors shards.

Checkpoint layout under s3://bucket/<key>/ (one process, world_size 1):
    model-00001-of-0000N.safetensors ...    shards, each at most shard_size bytes of tensors
                                            (a single tensor larger than that gets a shard
                                            of its own)
    model.safetensors.index.json            written LAST: the commit point
With W ranks, rank r writes  model-rank0000r-00001-of-0000N.safetensors ... and a rank
manifest rank-0000r-of-0000W.json; the index is written by one commit once every rank is done.

Each shard is a plain safetensors file: any safetensors reader opens it. Tensor names are the
object's paths joined with "." (a state dict keeps its own names; {"model": {"w": t}} gives
"model.w"; with several ranks the names start "rank<r>/"). The first shard of each rank carries
the non-tensor structure in __metadata__["wharf.structure"] (JSON; the index has it too).

The index is a model.safetensors.index.json: {"metadata": {"total_size", "format":
"wharf.torch/1", "world_size", "ranks": [{"rank", "structure", "shards": [{"file", "size",
"etag"}], "tensors": {name: {"crc32", ...}}}]}, "weight_map": {name: file}}.

Rules:
- A save first deletes the index it is about to replace, writes the shards, then the index.
  So an interrupted save leaves a checkpoint that load() reports "incomplete", and any other
  checkpoint (another key) is untouched. load() also compares each shard's ETag with the one
  recorded at commit, so shards overwritten later are detected.
- Tensors sharing storage: the same tensor object reached twice is stored once and loads as one
  tensor reached twice; distinct tensors that view one storage are each stored with their own
  bytes (loads give equal values, no aliasing).
- dtypes: every torch dtype with a safetensors name is stored as itself (bool, uint8, int8,
  int16, int32, int64, float16, bfloat16, float32, float64, complex64 as C64, and, where torch
  has them, uint16/32/64 and float8). complex128 and complex32 have no safetensors name: they
  are stored as their real view (F64/F16 with a trailing dimension of 2), marked in the
  metadata, and load gives the complex tensor back. Quantized and sparse tensors are refused.
- Structure: dicts (any key type that is itself storable: str, int, float, bool, None, tuple),
  OrderedDict, lists, tuples, str, int, float (nan/inf too), bool, None, bytes, torch.dtype,
  torch.device, torch.Size, numpy arrays (as tensors; loaded back as numpy). Anything else is
  refused with the path to it.
- DDP: each rank calls save(obj, url, rank=r, world_size=W) (read from torch.distributed when
  it is initialised and rank/world_size are not given). With a process group, save ends with a
  barrier after which rank 0 writes the index, then a second barrier: every rank returns with
  the checkpoint committed. Without one, save returns after this rank's shards and manifest are
  written, and the caller runs wharf.torch.commit(url, world_size=W) once all ranks are done.

Load plans ranged GETs from each shard's header (parsed by libwharf's C parser), fetches every
data section into one arena (a torch.empty(uint8) of the total, registered once) and returns
tensors that are zero-copy views of it. A tensor whose offset is not a multiple of its item size
(never in files written here or by the reference writer) is copied instead.
"""
import concurrent.futures as cf
import json
import os
import resource
import threading
import time
import zlib

import numpy as np
import torch

from .. import _lib
from ..errors import (CheckpointConflictError, ChecksumError, IncompleteCheckpointError,
                      NotFoundError, PreconditionFailedError, SafetensorsError, WharfError)
from ._common import INDEX_NAME, _client, _join, parse_url, rank_world as _rank_world
from .dtypes import FROM_REAL as _FROM_REAL, as_bytes as _as_bytes, itemsize as _itemsize
from .dtypes import prepare as _prepare
from .checksum import sum64 as _sum64
from .fetch import fetch as _fetch
from .structure import Flatten as _Flatten, decode as _decode
from .. import safetensors as st
from ..progress import Progress

FORMAT = "wharf.torch/1"
# Just under 4 GiB: a shard stays below the 4 GiB transfer limit of some RDMA stacks.
DEFAULT_SHARD_SIZE = 4 * 1024 ** 3 - 64 * 1024 ** 2


def _shard_name(rank, world, i, n):
    if world == 1:
        return f"model-{i + 1:05d}-of-{n:05d}.safetensors"
    return f"model-rank{rank:05d}-{i + 1:05d}-of-{n:05d}.safetensors"


def _manifest_name(rank, world):
    return f"rank-{rank:05d}-of-{world:05d}.json"


def save(obj, url, client=None, shard_size=DEFAULT_SHARD_SIZE, rank=None, world_size=None,
         transport="auto", checksums=True, concurrency=None, keep_staging=True, save_id=None,
         allow_pickle=False, progress=False, staging="auto"):
    """Saves obj (a state dict or any nested structure of tensors and plain values) as
    safetensors shards under url (s3://bucket/key), then commits it (see the module doc for
    several ranks). Returns a dict: bytes, shards, index (its key, or None when a commit is
    still due), transports, flatten_s, upload_s (of which fill_s copying into the staging
    buffers and checksumming, put_wait_s waiting for PUTs), commit_s, wall_s, reports.
    keep_staging: keep the staging buffers (two of the largest shard's size, registered) for
    the next save; wharf.torch.free_staging() releases them. checksums: record each tensor's
    CRC-32 in the index, for load(verify=True). save_id: with several ranks and no process
    group, a string naming this save (the step, say), given to every rank and to commit(),
    which then refuses a rank manifest left by another save. allow_pickle: objects of other
    types are pickled into the structure (load needs allow_pickle=True too). progress=True: a
    progress bar (tqdm where installed, else lines on stderr).
    staging: where each shard is assembled before its PUT. "auto": in GPU memory when most of
    the bytes are CUDA tensors of one device and the server can read that device directly
    (the shard then never passes through host memory: device-to-device copies, and wharfd
    reads the buffer over the direct GPU path); else in host memory. "device" or "host" force
    one ("device" falls back to host, and says why, where the direct path is not there).
    The result's "staging_memory" names where it was ("cuda:0", "host"), "staging_bytes" how
    much (two buffers of the largest shard, so shard_size bounds it), and "staging_reason"
    why it is host when GPU tensors were saved. Device-staged tensors record
    a sum64 (wharf.torch.checksum, computed on the GPU) instead of a CRC-32."""
    t0 = time.perf_counter()
    c = _client(client)
    bucket, prefix = parse_url(url)
    if not isinstance(shard_size, int) or shard_size < 1:
        raise WharfError(_lib.WHARF_ERR_INVALID,
                         f"shard_size must be a positive int, not {shard_size!r}")
    if staging not in ("auto", "device", "host"):
        raise WharfError(_lib.WHARF_ERR_INVALID,
                         f'staging must be "auto", "device" or "host", not {staging!r}')
    rank, world, pg = _rank_world(rank, world_size)
    index_key = _join(prefix, INDEX_NAME)

    fl = _Flatten(f"rank{rank}/" if world > 1 else "", allow_pickle=allow_pickle)
    skeleton = fl.enc(obj, [])
    items = []  # (name, stored tensor, dtype, special)
    for name, t, _ in fl.tensors:
        s, dt, special = _prepare(name, t)
        items.append((name, s, dt, special, t.element_size()))

    # Shards: greedy in walk order; inside a shard, larger items first keeps every offset a
    # multiple of its item size (the reference writer's order).
    shards, cur, cur_bytes = [], [], 0
    for it in items:
        nb = it[1].numel() * it[1].element_size()
        if cur and cur_bytes + nb > shard_size:
            shards.append(cur)
            cur, cur_bytes = [], 0
        cur.append(it)
        cur_bytes += nb
    shards.append(cur)
    nsh = len(shards)
    plans = []
    for i, sh in enumerate(shards):
        # the original element size: complex128 stored as F64 pairs needs 16-byte alignment
        sh = sorted(sh, key=lambda it: -max(it[4], _itemsize(it[2])))
        entries, specials, off = [], {}, 0
        for name, s, dt, special, _ in sh:
            nb = s.numel() * s.element_size()
            entries.append((name, dt, tuple(s.shape), off, off + nb))
            if special:
                specials[name] = special
            off += nb
        meta = {"format": "pt", "wharf.format": FORMAT, "wharf.rank": str(rank),
                "wharf.world_size": str(world), "wharf.shard": f"{i + 1}/{nsh}"}
        if specials:
            meta["wharf.special"] = json.dumps(specials, separators=(",", ":"))
        if i == 0:
            meta["wharf.structure"] = json.dumps(skeleton, separators=(",", ":"))
        header = st.build_header(entries, meta)
        plans.append(dict(file=_shard_name(rank, world, i, nsh), items=sh, entries=entries,
                          header=header, size=len(header) + off, specials=specials))
    flatten_s = time.perf_counter() - t0

    # Replace, never mix: the old index goes first (rank 0; the others wait for it), and each
    # rank's old manifest, so a commit cannot pick up a rank that has not finished this save.
    if rank == 0:
        _delete_quiet(c, bucket, index_key)
    if world > 1:
        _delete_quiet(c, bucket, _join(prefix, _manifest_name(rank, world)))
    if pg:
        torch.distributed.barrier()

    t1 = time.perf_counter()
    with Progress(sum(p["size"] for p in plans), f"save {url}", progress) as bar:
        reports, tensor_info, ustats = _upload_shards(c, bucket, prefix, plans, transport,
                                                      checksums, concurrency, keep_staging,
                                                      bar, staging)
    upload_s = time.perf_counter() - t1

    rank_rec = {"rank": rank, "save_id": save_id, "structure": skeleton,
                "shards": [{"file": p["file"], "size": p["size"], "etag": r.etag}
                           for p, r in zip(plans, reports)],
                "tensors": tensor_info,
                "weight_map": {e[0]: p["file"] for p in plans for e in p["entries"]}}
    t2 = time.perf_counter()
    committed = None
    if world == 1:
        committed = _write_index(c, bucket, prefix, 1, [rank_rec])
    else:
        c.put(bucket, _join(prefix, _manifest_name(rank, world)),
              json.dumps(rank_rec, separators=(",", ":")).encode(), transport="http")
        if pg:
            torch.distributed.barrier()
            if rank == 0:
                commit(url, world_size=world, client=c, save_id=save_id)
            torch.distributed.barrier()
            committed = index_key
    commit_s = time.perf_counter() - t2
    return {"bytes": sum(p["size"] for p in plans), "shards": [p["file"] for p in plans],
            "index": committed, "transports": sorted({r.transport for r in reports}),
            "flatten_s": flatten_s, "upload_s": upload_s, "commit_s": commit_s, **ustats,
            "wall_s": time.perf_counter() - t0, "reports": reports}


def _delete_quiet(c, bucket, key):
    try:
        c.delete(bucket, key)
    except NotFoundError:
        pass


class _Staging:
    """Staging buffers kept between saves (a training loop saves again and again: the second
    save finds its buffers allocated, faulted in and registered). One set, for one client at a
    time; a concurrent save gets buffers of its own. free_staging() drops them."""

    def __init__(self):
        self.lock = threading.Lock()
        self.bufs, self.client, self.regs = [], None, []

    def take(self, c, n, cap, use_rdma, keep):
        """(buffers, kept, how): how is "reused", "new" (kept for next time) or "temporary"."""
        if not keep or not self.lock.acquire(blocking=False):
            return self._fresh(c, n, cap, use_rdma), False, "temporary"
        try:
            how = "reused"
            if len(self.bufs) < n or any(b.numel() < cap for b in self.bufs[:n]):
                self._drop()
                self.bufs = [torch.empty(cap, dtype=torch.uint8) for _ in range(n)]
                how = "new"
            if use_rdma and (self.client is not c or len(self.regs) < n):
                for r in self.regs:
                    r.close()
                self.regs, self.client = [c.register(b) for b in self.bufs[:n]], c
            return self.bufs[:n], True, how
        except BaseException:
            self.lock.release()
            raise

    @staticmethod
    def _fresh(c, n, cap, use_rdma):
        bufs = [torch.empty(cap, dtype=torch.uint8) for _ in range(n)]
        regs = [c.register(b) for b in bufs] if use_rdma else []
        return _Fresh(bufs, regs)

    def give(self, kept, bufs):
        if kept:
            self.lock.release()
        else:
            for r in bufs.regs:
                r.close()

    def _drop(self):
        for r in self.regs:
            r.close()
        self.bufs, self.client, self.regs = [], None, []

    def free(self):
        with self.lock:
            self._drop()


class _Fresh(list):
    def __init__(self, bufs, regs):
        super().__init__(bufs)
        self.regs = regs


_staging = _Staging()


def free_staging():
    """Releases the staging buffers save() keeps between calls (and their registrations)."""
    _staging.free()


def _copy_workers():
    return max(1, min(4, (os.cpu_count() or 2)))


def _cuda_share(plans):
    """(the CUDA device holding the most tensor bytes, its share of all the bytes)."""
    per, total = {}, 0
    for p in plans:
        for it in p["items"]:
            nb = it[1].numel() * it[1].element_size()
            total += nb
            if it[1].is_cuda:
                per[it[1].device] = per.get(it[1].device, 0) + nb
    if not per or not total:
        return None, 0.0
    dev = max(per, key=per.get)
    return dev, per[dev] / total


def _device_staging(c, plans, transport, staging):
    """(device, nbuf, None) to assemble the shards in GPU memory, or (None, 0, why not) for
    host staging (why is None when there were no GPU tensors to speak of)."""
    if staging == "host":
        return None, 0, None
    dev, share = _cuda_share(plans)
    if dev is None:
        return None, 0, ("staging=\"device\" but no tensor is on a GPU"
                         if staging == "device" else None)
    if staging == "auto" and share < 0.5:
        return None, 0, f"most of the bytes are in host memory ({share:.0%} on {dev})"
    if transport == "http" or not c.rdma:
        return None, 0, ("HTTP cannot read GPU memory" if transport == "http" else
                         f"the client has no RDMA provider ({c.provider or 'none'})")
    cap = max(p["size"] for p in plans)
    free, _ = torch.cuda.mem_get_info(dev)
    margin = 256 << 20
    nbuf = min(2, len(plans))
    if free < nbuf * cap + margin:
        nbuf = 1
    if free < cap + margin:
        return None, 0, (f"{free / 2**30:.1f} GiB free on {dev}, a {cap / 2**30:.1f} GiB "
                         "shard does not fit beside it (a smaller shard_size would)")
    return dev, nbuf, None


def _upload_shards(c, bucket, prefix, plans, transport, checksums, concurrency, keep, bar,
                   staging="auto"):
    """Copies each shard into a staging buffer and PUTs it; the copy of shard i+1 overlaps the
    upload of shard i (two staging buffers). In host memory the copies are plain memcpy
    (numpy) on a few threads, each followed by that tensor's CRC-32: torch's own parallel copy
    would keep all its OpenMP workers spinning between tensors, at many CPU-seconds per GB.
    In GPU memory (see _device_staging) they are device-to-device copies and the checksum a
    sum64 on the GPU; the PUT then goes over the direct path, with a host-staged PUT (named
    in its report) only where the server turns the device buffer down."""
    dev, dnbuf, why = _device_staging(c, plans, transport, staging)
    if dev is not None:
        try:
            return _upload_from_device(c, bucket, prefix, plans, transport, checksums,
                                       concurrency, bar, dev, dnbuf)
        except _NoDirect as e:
            why = str(e)
    reports, info, stats = _upload_from_host(c, bucket, prefix, plans, transport, checksums,
                                             concurrency, keep, bar)
    stats["staging_memory"] = "host"
    stats["staging_reason"] = why
    return reports, info, stats


class _NoDirect(Exception):
    """The device staging buffer could not be registered for the direct path."""


def _upload_from_device(c, bucket, prefix, plans, transport, checksums, concurrency, bar,
                        dev, nbuf):
    cap = max(p["size"] for p in plans)
    bufs = [torch.empty(cap, dtype=torch.uint8, device=dev) for _ in range(nbuf)]
    regs = []
    try:
        for b in bufs:
            regs.append(c.register(b))
    except WharfError as e:
        for r in regs:
            r.close()
        raise _NoDirect(f"device memory cannot be registered here: {e.message}") from None
    tensor_info = {}
    stats = {"fill_s": 0.0, "put_wait_s": 0.0, "fill_cpu_s": 0.0, "staging": "temporary",
             "staging_memory": str(dev), "staging_reason": None, "staging_bytes": nbuf * cap}
    stream = torch.cuda.Stream(dev)
    stream.wait_stream(torch.cuda.current_stream(dev))  # the tensors' producers are done first

    def fill(buf, p):
        hl = len(p["header"])
        hdr = torch.frombuffer(bytearray(p["header"]), dtype=torch.uint8)
        buf[:hl].copy_(hdr.pin_memory() if hl > 4096 else hdr)
        sums = []
        for item, entry in zip(p["items"], p["entries"]):
            name, s, dt, special, _ = item
            b, e = entry[3], entry[4]
            if e > b:
                src = _as_bytes(s)
                buf[hl + b:hl + e].copy_(src, non_blocking=not src.is_cuda)
            tensor_info[name] = {"as": special} if special else {}
            sums.append((name, hl + b, hl + e))
        if checksums:
            for name, b, e in sums:
                tensor_info[name]["sum64"] = _sum64(buf[b:e])
        stream.synchronize()

    try:
        with torch.cuda.device(dev), torch.cuda.stream(stream):
            reports = _pipeline(c, bucket, prefix, plans, bufs, fill, transport, concurrency,
                                bar, stats)
    finally:
        for r in regs:
            r.close()
    staged = [r for r in reports if r.staged]
    if staged:
        stats["staging_reason"] = f"{len(staged)} of {len(reports)} shards went through " \
            f"host memory: {staged[0].reason}"
    return reports, tensor_info, stats


def _pipeline(c, bucket, prefix, plans, bufs, fill, transport, concurrency, bar, stats):
    """For each shard i: wait until buffer i % len(bufs) is free again (the PUT of shard
    i - len(bufs) is done), fill(buf, plan) it, and PUT it while the next shard fills.
    Returns the PUT reports; when it returns or raises, no PUT is still reading a buffer."""
    nbuf, futs = len(bufs), []
    try:
        with cf.ThreadPoolExecutor(1, thread_name_prefix="wharf-save") as ex:
            for i, p in enumerate(plans):
                t = time.perf_counter()
                if i >= nbuf:
                    futs[i - nbuf].result()
                t1 = time.perf_counter()
                stats["put_wait_s"] += t1 - t
                cpu0 = _cpu_s()
                buf = bufs[i % nbuf]
                fill(buf, p)
                stats["fill_s"] += time.perf_counter() - t1
                stats["fill_cpu_s"] += _cpu_s() - cpu0
                futs.append(ex.submit(_put, c, bucket, _join(prefix, p["file"]), buf,
                                      p["size"], transport, concurrency, bar))
            t = time.perf_counter()
            reports = [f.result() for f in futs]
            stats["put_wait_s"] += time.perf_counter() - t
    finally:  # the executor's exit waited for a PUT that was running; queued ones go
        for f in futs:
            f.cancel()
    return reports


def _upload_from_host(c, bucket, prefix, plans, transport, checksums, concurrency, keep, bar):
    nbuf = min(2, len(plans))
    cap = max(p["size"] for p in plans)
    use_rdma = c.rdma and transport != "http"
    staging, kept, how = _staging.take(c, nbuf, cap, use_rdma, keep)
    tensor_info = {}
    stats = {"fill_s": 0.0, "put_wait_s": 0.0, "fill_cpu_s": 0.0, "staging": how,
             "staging_bytes": nbuf * cap}

    def fill_one(npbuf, hl, item, entry):
        name, s, dt, special, _ = item
        b, e = entry[3], entry[4]
        if e > b and s.is_cuda:  # a GPU tensor staged in host memory: one device-to-host copy
            torch.from_numpy(npbuf[hl + b:hl + e]).copy_(_as_bytes(s))
        elif e > b:
            np.copyto(npbuf[hl + b:hl + e], _as_bytes(s).numpy())
        info = {}
        if checksums:
            info["crc32"] = zlib.crc32(npbuf[hl + b:hl + e])
        if special:
            info["as"] = special
        return name, info

    def fill(buf, p):
        npbuf = buf.numpy()
        hl = len(p["header"])
        npbuf[:hl] = np.frombuffer(p["header"], dtype=np.uint8)
        for name, info in cp.map(lambda ie: fill_one(npbuf, hl, *ie),
                                 zip(p["items"], p["entries"])):
            tensor_info[name] = info

    try:
        with cf.ThreadPoolExecutor(_copy_workers(), thread_name_prefix="wharf-copy") as cp:
            reports = _pipeline(c, bucket, prefix, plans, staging, fill, transport,
                                concurrency, bar, stats)
    finally:
        _staging.give(kept, staging)
    return reports, tensor_info, stats


def _put(c, bucket, key, buf, size, transport, concurrency, bar):
    r = c.put_from(bucket, key, buf, 0, size, transport, None, concurrency)
    bar.update(size)
    return r


def _cpu_s():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _write_index(c, bucket, prefix, world, rank_recs):
    """PUTs the index (the commit point) from every rank's record."""
    recs = sorted(rank_recs, key=lambda r: r["rank"])
    weight_map = {}
    for rr in recs:
        weight_map.update(rr["weight_map"])
    ranks = [{k: v for k, v in rr.items() if k != "weight_map"} for rr in recs]
    index = {"metadata": {"total_size": sum(sh["size"] for rr in recs for sh in rr["shards"]),
                          "format": FORMAT, "world_size": world, "ranks": ranks},
             "weight_map": weight_map}
    key = _join(prefix, INDEX_NAME)
    body = json.dumps(index, separators=(",", ":")).encode()
    # The save removed the old index before it began, so the commit is a first write
    # (If-None-Match: *): of two saves racing to one URL, only one commits.
    try:
        c.put(bucket, key, body, transport="http", if_none_match=True)
    except PreconditionFailedError as e:
        try:
            if c.get(bucket, key, transport="http") == body:
                return key  # this very commit, already made (a retried commit())
        except NotFoundError:
            pass
        raise CheckpointConflictError(
            _lib.WHARF_ERR_PRECONDITION,
            f"s3://{bucket}/{key}: another save committed this checkpoint while this one "
            "ran; this save was not committed (its shards may have been overwritten by the "
            "other save: save again to a URL of its own)", e.report) from None
    return key


def commit(url, world_size=None, client=None, save_id=None):
    """Writes the index of a checkpoint saved by several ranks without a process group, once
    every rank's save() has returned. world_size None: taken from the rank manifests found.
    Refuses (IncompleteCheckpointError) while a rank's manifest or shard is missing, when the
    manifests come from different saves (their save_id differ), or, with save_id given, when
    a manifest is not from that save. Without save_id, a rank that has not started a new save
    under the same key still has its previous manifest, which commit cannot tell apart."""
    c = _client(client)
    bucket, prefix = parse_url(url)
    if world_size is None:
        found = [o.key for o in c.list(bucket, _join(prefix, "rank-"))]
        worlds = {k.rsplit("-of-", 1)[-1].split(".")[0] for k in found if k.endswith(".json")}
        if len(worlds) != 1:
            raise IncompleteCheckpointError(
                _lib.WHARF_ERR_INVALID, f"commit {url}: cannot tell the world size from the "
                f"rank manifests found ({len(found)}); pass world_size=")
        world_size = int(worlds.pop())
    recs = []
    for r in range(world_size):
        mkey = _join(prefix, _manifest_name(r, world_size))
        try:
            recs.append(json.loads(c.get(bucket, mkey, transport="http")))
        except NotFoundError:
            raise IncompleteCheckpointError(
                _lib.WHARF_ERR_NOT_FOUND, f"commit {url}: incomplete: rank {r} of {world_size} "
                f"has not finished saving ({mkey} is missing); call commit after every rank's "
                "save() has returned") from None
        got_id = recs[-1].get("save_id")
        want_id = save_id if save_id is not None else recs[0].get("save_id")
        if got_id != want_id:
            raise IncompleteCheckpointError(
                _lib.WHARF_ERR_PRECONDITION, f"commit {url}: incomplete: rank {r}'s manifest is "
                f"from save {got_id!r}, not {want_id!r} (rank {r} has not finished this save)")
        for sh in recs[-1]["shards"]:
            k = _join(prefix, sh["file"])
            try:
                got = c.stat(bucket, k)
            except NotFoundError:
                raise IncompleteCheckpointError(
                    _lib.WHARF_ERR_NOT_FOUND, f"commit {url}: incomplete: shard {k} of rank {r} "
                    "is missing") from None
            if got.length != sh["size"]:
                raise IncompleteCheckpointError(
                    _lib.WHARF_ERR_INVALID, f"commit {url}: shard {k} has {got.length} bytes, "
                    f"rank {r} wrote {sh['size']}")
    return _write_index(c, bucket, prefix, world_size, recs)


# ---- load ----------------------------------------------------------------------------------


def _read_json(c, bucket, key):
    raw = c.get(bucket, key, transport="http")
    try:
        return json.loads(raw)
    except ValueError as e:
        raise SafetensorsError(_lib.WHARF_ERR_INVALID,
                               f"s3://{bucket}/{key} is not valid JSON: {e}") from None


def _read_index(c, bucket, prefix, url):
    key = _join(prefix, INDEX_NAME)
    try:
        return _read_json(c, bucket, key)
    except NotFoundError:
        pass
    others = c.list(bucket, prefix + "/") if prefix else []
    if others:
        raise IncompleteCheckpointError(
            _lib.WHARF_ERR_NOT_FOUND, f"checkpoint {url} is incomplete: {len(others)} objects "
            f"exist under it but not its index {INDEX_NAME}, which a save writes last (the save "
            "was interrupted, or with several ranks commit() was not called)")
    raise NotFoundError(_lib.WHARF_ERR_NOT_FOUND,
                        f"no checkpoint at {url}: s3://{bucket}/{key} not found")


def load(url, client=None, device="cpu", verify=False, rank=None, transport="auto",
         report=None, allow_pickle=False, progress=False):
    """Loads a checkpoint written by save(). rank: for a checkpoint of several ranks, which
    one (default: torch.distributed's rank, when initialised), or "all" for a list of every
    rank's object. verify=True recomputes each tensor's CRC-32 (or, for tensors saved from GPU
    memory, its sum64, on the device it landed on) against the one recorded at save and raises
    ChecksumError naming the tensors that differ. report: a dict to fill with
    timings and transports. allow_pickle: unpickle objects saved with allow_pickle=True
    (only for checkpoints you trust). progress=True: a progress bar."""
    t0 = time.perf_counter()
    c = _client(client)
    bucket, prefix = parse_url(url)
    index = _read_index(c, bucket, prefix, url)
    meta = index.get("metadata") if isinstance(index, dict) else None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise SafetensorsError(_lib.WHARF_ERR_INVALID, f"{url}: the index is not a "
                               f"{FORMAT} checkpoint index; for Hugging Face weights use "
                               "wharf.torch.load_safetensors")
    world = int(meta["world_size"])
    recs = {int(r["rank"]): r for r in meta["ranks"]}
    if world == 1:
        want = [0]
    elif rank == "all":
        want = list(range(world))
    else:
        if rank is None:
            dist = torch.distributed
            if not (dist.is_available() and dist.is_initialized()):
                raise WharfError(_lib.WHARF_ERR_INVALID, f"{url} was saved by {world} ranks: "
                                 "pass rank=<r> or rank=\"all\"")
            rank = dist.get_rank()
        if not 0 <= int(rank) < world:
            raise WharfError(_lib.WHARF_ERR_INVALID,
                             f"{url}: rank {rank} is not in [0, {world})")
        want = [int(rank)]
    shards = []
    for r in want:
        for sh in recs[r]["shards"]:
            shards.append((_join(prefix, sh["file"]), sh["size"], sh.get("etag")))
    rep = {} if report is None else report
    tensors = _fetch(c, bucket, [(k, s) for k, s, _ in shards], device, transport, rep,
                     expect_etags=[e for _, _, e in shards], progress=progress, desc="load")
    out = []
    bad = []
    for r in want:
        infos = recs[r]["tensors"]
        for name, info in infos.items():
            if name not in tensors:
                raise SafetensorsError(_lib.WHARF_ERR_INVALID, f"{url}: tensor {name!r} of rank "
                                       f"{r} is in the index but in none of its shards")
            if verify and "crc32" in info:
                t = tensors[name]
                got = zlib.crc32(_as_bytes(t.cpu() if t.device.type != "cpu" else t).numpy())
                if got != info["crc32"]:
                    bad.append(name)
            elif verify and "sum64" in info:  # saved from GPU memory: checked where it is
                if _sum64(_as_bytes(tensors[name])) != info["sum64"]:
                    bad.append(name)
            if info.get("as") in _FROM_REAL:
                t = tensors[name]
                try:
                    tensors[name] = torch.view_as_complex(t)
                except RuntimeError:  # misaligned for the complex type: a copy
                    tensors[name] = torch.view_as_complex(t.clone())
        out.append(_decode(recs[r]["structure"], tensors, allow_pickle))
    if bad:
        raise ChecksumError(_lib.WHARF_ERR_CHECKSUM, f"{url}: {len(bad)} tensors do not match "
                            f"the CRC-32 recorded at save: {', '.join(bad[:8])}"
                            f"{' ...' if len(bad) > 8 else ''}")
    rep.pop("headers", None)
    rep["wall_s"] = time.perf_counter() - t0
    return out if rank == "all" and world > 1 else out[0]

