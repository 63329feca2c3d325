"""wharf.torch: checkpoints as standard safetensors shards, Hugging Face weights, datasets.

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
import base64
import collections
import concurrent.futures as cf
import json
import math
import os
import resource
import threading
import time
import zlib

import numpy as np
import torch

from . import _lib
from .client import Client, client_from_env
from .errors import (ChecksumError, IncompleteCheckpointError, NotFoundError, SafetensorsError,
                     WharfError)
from . import safetensors as st

FORMAT = "wharf.torch/1"
INDEX_NAME = "model.safetensors.index.json"
# Just under 4 GiB: a shard stays below the 4 GiB transfer limit of some RDMA stacks.
DEFAULT_SHARD_SIZE = 4 * 1024 ** 3 - 64 * 1024 ** 2
ARENA_ALIGN = 64

# torch dtype <-> safetensors name, for what this torch has.
_T2S = {torch.bool: "BOOL", torch.uint8: "U8", torch.int8: "I8", torch.int16: "I16",
        torch.int32: "I32", torch.int64: "I64", torch.float16: "F16", torch.bfloat16: "BF16",
        torch.float32: "F32", torch.float64: "F64", torch.complex64: "C64"}
for _tn, _sn in (("uint16", "U16"), ("uint32", "U32"), ("uint64", "U64"),
                 ("float8_e5m2", "F8_E5M2"), ("float8_e4m3fn", "F8_E4M3"),
                 ("float8_e8m0fnu", "F8_E8M0"), ("float8_e4m3fnuz", "F8_E4M3FNUZ"),
                 ("float8_e5m2fnuz", "F8_E5M2FNUZ")):
    if isinstance(getattr(torch, _tn, None), torch.dtype):
        _T2S[getattr(torch, _tn)] = _sn
_S2T = {v: k for k, v in _T2S.items()}
# Stored as their real view (trailing dimension 2), with the dtype named in the metadata.
_AS_REAL = {torch.complex128: "complex128"}
if isinstance(getattr(torch, "complex32", None), torch.dtype):
    _AS_REAL[torch.complex32] = "complex32"
_FROM_REAL = {v: k for k, v in _AS_REAL.items()}

_default_client = None
_default_lock = threading.Lock()


def set_default_client(client):
    """The client used when client= is not given (else one is built from WHARF_* variables)."""
    global _default_client
    _default_client = client


def _client(client):
    global _default_client
    if client is not None:
        if not isinstance(client, Client):
            raise WharfError(_lib.WHARF_ERR_INVALID,
                             f"client must be a wharf.Client, not {type(client).__name__}")
        return client
    with _default_lock:
        if _default_client is None:
            _default_client = client_from_env()
        return _default_client


def parse_url(url, need_key=True):
    """("bucket", "key") of "s3://bucket/key" (the key without a trailing slash)."""
    if not isinstance(url, str) or not url.startswith("s3://"):
        raise WharfError(_lib.WHARF_ERR_INVALID,
                         f"bad URL {url!r}: expected s3://bucket/key")
    bucket, _, key = url[5:].partition("/")
    key = key.strip("/")
    if not bucket:
        raise WharfError(_lib.WHARF_ERR_INVALID, f"bad URL {url!r}: no bucket after s3://")
    if need_key and not key:
        raise WharfError(_lib.WHARF_ERR_INVALID,
                         f"bad URL {url!r}: no key after the bucket (s3://bucket/key)")
    return bucket, key


def _join(prefix, name):
    return f"{prefix}/{name}" if prefix else name


# ---- structure -----------------------------------------------------------------------------


class _Flatten:
    """Walks obj depth-first; tensors become {"__tensor__": name}, everything else a JSON
    encoding that keeps types (tuples, non-string keys, OrderedDict, nan)."""

    def __init__(self, name_prefix=""):
        self.prefix = name_prefix
        self.tensors = []   # [(name, tensor, as_numpy)]
        self.by_id = {}     # id(tensor) -> name
        self.names = set()
        self.keep = []      # keeps ids stable while walking

    def name_for(self, path):
        base = self.prefix + (".".join(_path_part(p) for p in path) if path else "tensor")
        name, n = base, 1
        while name in self.names:
            n += 1
            name = f"{base}#{n}"
        self.names.add(name)
        return name

    def enc(self, obj, path):
        if isinstance(obj, torch.Tensor):
            return self.tensor(obj, path, False)
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, int):
            return int(obj)
        if isinstance(obj, float):
            return float(obj) if math.isfinite(obj) else {"__float__": repr(float(obj))}
        if isinstance(obj, (bytes, bytearray)):
            return {"__bytes__": base64.b64encode(bytes(obj)).decode()}
        if isinstance(obj, torch.dtype):
            return {"__dtype__": str(obj).replace("torch.", "")}
        if isinstance(obj, torch.device):
            return {"__device__": str(obj)}
        if isinstance(obj, torch.Size):
            return {"__size__": list(obj)}
        if isinstance(obj, np.ndarray):
            return self.tensor(torch.from_numpy(np.ascontiguousarray(obj)), path, True)
        if isinstance(obj, dict) and type(obj) in (dict, collections.OrderedDict):
            items = []
            for k, v in obj.items():
                items.append([self.enc_key(k, path), self.enc(v, path + [k])])
            out = {"__dict__": items}
            if type(obj) is collections.OrderedDict:
                out["__type__"] = "OrderedDict"
            return out
        if type(obj) is list:
            return [self.enc(v, path + [i]) for i, v in enumerate(obj)]
        if type(obj) is tuple:
            return {"__tuple__": [self.enc(v, path + [i]) for i, v in enumerate(obj)]}
        raise WharfError(_lib.WHARF_ERR_INVALID,
                         f"cannot save {type(obj).__module__}.{type(obj).__qualname__} at "
                         f"{_show_path(path)}: supported are tensors, numpy arrays, dict, "
                         f"OrderedDict, list, tuple, str, int, float, bool, None, bytes, "
                         f"torch.dtype, torch.device and torch.Size")

    def enc_key(self, k, path):
        if isinstance(k, torch.Tensor) or isinstance(k, np.ndarray):
            raise WharfError(_lib.WHARF_ERR_INVALID,
                             f"cannot save a tensor as a dict key at {_show_path(path)}")
        return self.enc(k, path)

    def tensor(self, t, path, as_numpy):
        if id(t) in self.by_id and not as_numpy:
            return {"__tensor__": self.by_id[id(t)]}
        name = self.name_for(path)
        self.keep.append(t)
        self.by_id[id(t)] = name
        self.tensors.append((name, t, as_numpy))
        out = {"__tensor__": name}
        if as_numpy:
            out["numpy"] = True
        return out


def _path_part(k):
    return k if isinstance(k, str) else str(k)


def _show_path(path):
    return "the root" if not path else "[" + "][".join(repr(p) for p in path) + "]"


def _decode(v, tensors):
    if isinstance(v, list):
        return [_decode(x, tensors) for x in v]
    if not isinstance(v, dict):
        return v
    if "__tensor__" in v:
        t = tensors[v["__tensor__"]]
        return t.numpy() if v.get("numpy") else t
    if "__dict__" in v:
        cls = collections.OrderedDict if v.get("__type__") == "OrderedDict" else dict
        return cls((_decode_key(k, tensors), _decode(x, tensors)) for k, x in v["__dict__"])
    if "__tuple__" in v:
        return tuple(_decode(x, tensors) for x in v["__tuple__"])
    if "__float__" in v:
        return float(v["__float__"])
    if "__bytes__" in v:
        return base64.b64decode(v["__bytes__"])
    if "__dtype__" in v:
        return getattr(torch, v["__dtype__"])
    if "__device__" in v:
        return torch.device(v["__device__"])
    if "__size__" in v:
        return torch.Size(v["__size__"])
    raise WharfError(_lib.WHARF_ERR_PROTOCOL, f"checkpoint structure has an unknown node {v!r}")


def _decode_key(k, tensors):
    k = _decode(k, tensors)
    return tuple(k) if isinstance(k, list) else k  # (lists are not hashable; never saved)


# ---- tensors to bytes ----------------------------------------------------------------------


def _prepare(name, t):
    """(tensor to store, safetensors dtype, special) for a tensor to save."""
    if t.layout != torch.strided:
        raise WharfError(_lib.WHARF_ERR_INVALID, f"tensor {name!r}: {t.layout} tensors cannot "
                         "be saved; convert with .to_dense()")
    if t.is_quantized:
        raise WharfError(_lib.WHARF_ERR_INVALID, f"tensor {name!r}: quantized tensors "
                         f"({t.dtype}) have no safetensors form; dequantize first")
    if t.device.type == "meta":
        raise WharfError(_lib.WHARF_ERR_INVALID, f"tensor {name!r} is on the meta device: it "
                         "has no data")
    t = t.detach()
    if t.is_conj():
        t = t.resolve_conj()
    if t.is_neg():
        t = t.resolve_neg()
    special = None
    if t.dtype in _T2S:
        dt = _T2S[t.dtype]
    elif t.dtype in _AS_REAL:
        special = _AS_REAL[t.dtype]
        t = torch.view_as_real(t.contiguous() if t.dtype == torch.complex128 else t)
        dt = _T2S[t.dtype]
    else:
        raise WharfError(_lib.WHARF_ERR_UNSUPPORTED, f"tensor {name!r}: dtype {t.dtype} has no "
                         "safetensors name and no stored form here")
    if t.device.type != "cpu":
        t = t.cpu()
    return t.contiguous(), dt, special


def _as_bytes(t):
    """A uint8 view of a contiguous tensor's bytes."""
    if t.numel() == 0:
        return torch.empty(0, dtype=torch.uint8)
    return t.reshape(-1).view(torch.uint8)


def _itemsize(dt):
    return max(1, st.dtype_bits(dt) // 8)


# ---- save ----------------------------------------------------------------------------------


def _rank_world(rank, world_size):
    dist = torch.distributed
    pg = dist.is_available() and dist.is_initialized()
    if rank is None and world_size is None and pg:
        return dist.get_rank(), dist.get_world_size(), True
    rank = 0 if rank is None else int(rank)
    world_size = 1 if world_size is None else int(world_size)
    if world_size < 1 or not 0 <= rank < world_size:
        raise WharfError(_lib.WHARF_ERR_INVALID, f"rank {rank} is not in [0, world_size "
                         f"{world_size})")
    return rank, world_size, pg and dist.get_world_size() == world_size


def _shard_name(rank, world, i, n):
    if world == 1:
        return f"model-{i + 1:05d}-of-{n:05d}.safetensors"
    return f"model-rank{rank:05d}-{i + 1:05d}-of-{n:05d}.safetensors"


def _manifest_name(rank, world):
    return f"rank-{rank:05d}-of-{world:05d}.json"


def save(obj, url, client=None, shard_size=DEFAULT_SHARD_SIZE, rank=None, world_size=None,
         transport="auto", checksums=True, concurrency=None, keep_staging=True, save_id=None):
    """Saves obj (a state dict or any nested structure of tensors and plain values) as
    safetensors shards under url (s3://bucket/key), then commits it (see the module doc for
    several ranks). Returns a dict: bytes, shards, index (its key, or None when a commit is
    still due), transports, flatten_s, upload_s (of which fill_s copying into the staging
    buffers and checksumming, put_wait_s waiting for PUTs), commit_s, wall_s, reports.
    keep_staging: keep the staging buffers (two of the largest shard's size, registered) for
    the next save; wharf.torch.free_staging() releases them. checksums: record each tensor's
    CRC-32 in the index, for load(verify=True). save_id: with several ranks and no process
    group, a string naming this save (the step, say), given to every rank and to commit(),
    which then refuses a rank manifest left by another save."""
    t0 = time.perf_counter()
    c = _client(client)
    bucket, prefix = parse_url(url)
    if not isinstance(shard_size, int) or shard_size < 1:
        raise WharfError(_lib.WHARF_ERR_INVALID,
                         f"shard_size must be a positive int, not {shard_size!r}")
    rank, world, pg = _rank_world(rank, world_size)
    index_key = _join(prefix, INDEX_NAME)

    fl = _Flatten(f"rank{rank}/" if world > 1 else "")
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
    reports, tensor_info, ustats = _upload_shards(c, bucket, prefix, plans, transport,
                                                  checksums, concurrency, keep_staging)
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


def _upload_shards(c, bucket, prefix, plans, transport, checksums, concurrency, keep):
    """Copies each shard into a staging buffer and PUTs it; the copy of shard i+1 overlaps the
    upload of shard i (two staging buffers). The copies are plain memcpy (numpy) on a few
    threads, each followed by that tensor's CRC-32: torch's own parallel copy would keep all
    its OpenMP workers spinning between tensors, at many CPU-seconds per GB."""
    nbuf = min(2, len(plans))
    cap = max(p["size"] for p in plans)
    use_rdma = c.rdma and transport != "http"
    staging, kept, how = _staging.take(c, nbuf, cap, use_rdma, keep)
    tensor_info = {}
    futs = []
    stats = {"fill_s": 0.0, "put_wait_s": 0.0, "fill_cpu_s": 0.0, "staging": how}

    def fill_one(npbuf, hl, item, entry):
        name, s, dt, special, _ = item
        b, e = entry[3], entry[4]
        if e > b:
            np.copyto(npbuf[hl + b:hl + e], _as_bytes(s).numpy())
        info = {}
        if checksums:
            info["crc32"] = zlib.crc32(npbuf[hl + b:hl + e])
        if special:
            info["as"] = special
        return name, info

    try:
        with cf.ThreadPoolExecutor(1, thread_name_prefix="wharf-save") as ex, \
                cf.ThreadPoolExecutor(_copy_workers(), thread_name_prefix="wharf-copy") as cp:
            for i, p in enumerate(plans):
                t = time.perf_counter()
                if i >= nbuf:
                    futs[i - nbuf].result()  # its buffer is free again
                t1 = time.perf_counter()
                stats["put_wait_s"] += t1 - t
                cpu0 = _cpu_s()
                buf = staging[i % nbuf]
                npbuf = buf.numpy()
                hl = len(p["header"])
                npbuf[:hl] = np.frombuffer(p["header"], dtype=np.uint8)
                for name, info in cp.map(lambda ie: fill_one(npbuf, hl, *ie),
                                         zip(p["items"], p["entries"])):
                    tensor_info[name] = info
                stats["fill_s"] += time.perf_counter() - t1
                stats["fill_cpu_s"] += _cpu_s() - cpu0
                key = _join(prefix, p["file"])
                futs.append(ex.submit(c.put_from, bucket, key, buf, 0, p["size"], transport,
                                      None, concurrency))
            t = time.perf_counter()
            reports = [f.result() for f in futs]
            stats["put_wait_s"] += time.perf_counter() - t
    finally:
        for f in futs:
            if not f.done():
                f.cancel()
        _staging.give(kept, staging)
    return reports, tensor_info, stats


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
    c.put(bucket, key, json.dumps(index, separators=(",", ":")).encode(), transport="http")
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
         report=None):
    """Loads a checkpoint written by save(). rank: for a checkpoint of several ranks, which
    one (default: torch.distributed's rank, when initialised), or "all" for a list of every
    rank's object. verify=True recomputes each tensor's CRC-32 against the one recorded at save
    and raises ChecksumError naming the tensors that differ. report: a dict to fill with
    timings and transports."""
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
                     expect_etags=[e for _, _, e in shards])
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
            if info.get("as") in _FROM_REAL:
                t = tensors[name]
                try:
                    tensors[name] = torch.view_as_complex(t)
                except RuntimeError:  # misaligned for the complex type: a copy
                    tensors[name] = torch.view_as_complex(t.clone())
        out.append(_decode(recs[r]["structure"], tensors))
    if bad:
        raise ChecksumError(_lib.WHARF_ERR_CHECKSUM, f"{url}: {len(bad)} tensors do not match "
                            f"the CRC-32 recorded at save: {', '.join(bad[:8])}"
                            f"{' ...' if len(bad) > 8 else ''}")
    rep.pop("headers", None)
    rep["wall_s"] = time.perf_counter() - t0
    return out if rank == "all" and world > 1 else out[0]


def _fetch(c, bucket, shards, device, transport, rep, expect_etags=None):
    """Headers of shards [(key, size)], their data sections in one arena, and a dict of
    zero-copy views {name: tensor}."""
    t0 = time.perf_counter()
    nthreads = max(1, min(8, len(shards)))
    with cf.ThreadPoolExecutor(nthreads, thread_name_prefix="wharf-hdr") as ex:
        headers = list(ex.map(lambda ks: st.read_header(c, bucket, ks[0], ks[1]), shards))
    t_hdr = time.perf_counter()
    bases, total = [], 0
    for h in headers:
        total = (total + ARENA_ALIGN - 1) // ARENA_ALIGN * ARENA_ALIGN
        bases.append(total)
        total += h.data_len
    dev = torch.device(device)
    use_rdma = c.rdma and transport != "http"
    arena, reg, host = None, None, None
    if dev.type != "cpu":
        arena = torch.empty(total, dtype=torch.uint8, device=dev)
        if use_rdma and total:
            try:
                reg = c.register(arena)
            except WharfError:
                reg = None  # no device registration here: land in host memory, then copy
        if reg is None:
            host = torch.empty(total, dtype=torch.uint8)
    else:
        arena = torch.empty(total, dtype=torch.uint8)
    if host is not None and use_rdma and total:
        reg = c.register(host)
    land = host if host is not None else arena
    reports = [None] * len(shards)
    try:
        def one(i):
            (key, _), h, base = shards[i], headers[i], bases[i]
            if h.data_len == 0:
                return
            r = c.get_into(bucket, key, land[base:base + h.data_len], offset=h.data_offset,
                           length=h.data_len, transport=transport, cache=False)
            if r.bytes != h.data_len:
                raise WharfError(_lib.WHARF_ERR_PROTOCOL, f"s3://{bucket}/{key}: {r.bytes} "
                                 f"bytes landed of {h.data_len}")
            reports[i] = r
            if host is not None:  # this shard to the device while the next one downloads
                arena[base:base + h.data_len].copy_(host[base:base + h.data_len])
        par = max(1, min(2, len(shards)))
        with cf.ThreadPoolExecutor(par, thread_name_prefix="wharf-get") as ex:
            list(ex.map(one, range(len(shards))))
        if host is not None and dev.type == "cuda":
            torch.cuda.synchronize(dev)
    finally:
        if reg is not None:
            reg.close()
    arena_kind = ("host" if dev.type == "cpu" else
                  f"{dev} (registered)" if host is None else f"{dev} (through host memory)")
    del host, land
    t_get = time.perf_counter()
    if expect_etags:
        for (key, _), r, want in zip(shards, reports, expect_etags):
            if r is not None and want and r.etag and r.etag != want:
                raise WharfError(_lib.WHARF_ERR_PRECONDITION, f"s3://{bucket}/{key} changed "
                                 f"after the checkpoint was committed (ETag {r.etag}, committed "
                                 f"{want}); save the checkpoint again")
    tensors = {}
    for (key, _), h, base in zip(shards, headers, bases):
        for ti in h.tensors:
            if ti.name in tensors:
                raise SafetensorsError(_lib.WHARF_ERR_INVALID, f"tensor {ti.name!r} is in more "
                                       f"than one shard (again in s3://{bucket}/{key})")
            tensors[ti.name] = _view(arena, base + ti.begin, ti)
    t_end = time.perf_counter()
    rep.update(arena=arena_kind,
               bytes=sum(h.data_len for h in headers), shards=len(shards),
               header_s=t_hdr - t0, download_s=t_get - t_hdr, rebuild_s=t_end - t_get,
               transports=sorted({r.transport for r in reports if r is not None}),
               fell_back=any(r.fell_back for r in reports if r is not None),
               reports=[r for r in reports if r is not None],
               headers={k: h for (k, _), h in zip(shards, headers)})
    return tensors


def _view(arena, off, ti):
    """The tensor ti as a view of arena[off:off+nbytes] (a copy when misaligned); dtypes torch
    lacks come back as uint8: fp8 with the same shape, wider ones with a trailing dimension of
    the item size, sub-byte ones (F4, F6) as the flat bytes."""
    raw = arena[off:off + ti.nbytes]
    tdt = _S2T.get(ti.dtype)
    if tdt is None:
        bits = st.dtype_bits(ti.dtype)
        if bits == 8:
            return raw.view(ti.shape)
        if bits % 8 == 0:
            return raw.view(*ti.shape, bits // 8)
        return raw
    if ti.nbytes == 0:
        return torch.empty(ti.shape, dtype=tdt, device=arena.device)
    size = torch.empty(0, dtype=tdt).element_size()
    if off % size:
        raw = raw.clone()  # misaligned in the file: a copy, not a view
    return raw.view(tdt).view(ti.shape)


# ---- Hugging Face weights ------------------------------------------------------------------


def _resolve_hf(c, bucket, key, url):
    """[(shard key, size)], weight_map or None for a file, an index or a snapshot dir."""
    def one_file(k):
        return [(k, c.stat(bucket, k).length)], None

    def from_index(k):
        idx = _read_json(c, bucket, k)
        wm = idx.get("weight_map") if isinstance(idx, dict) else None
        if not isinstance(wm, dict) or not all(isinstance(v, str) for v in wm.values()):
            raise SafetensorsError(_lib.WHARF_ERR_INVALID, f"s3://{bucket}/{k}: no weight_map "
                                   "of tensor name to shard file")
        d = k.rpartition("/")[0]
        files = list(dict.fromkeys(wm.values()))
        out = []
        for f in files:
            sk = _join(d, f)
            try:
                out.append((sk, c.stat(bucket, sk).length))
            except NotFoundError:
                raise NotFoundError(_lib.WHARF_ERR_NOT_FOUND, f"{url}: the index names shard "
                                    f"{f}, but s3://{bucket}/{sk} does not exist") from None
        return out, wm

    if key.endswith(".json"):
        return from_index(key)
    if key.endswith(".safetensors"):
        return one_file(key)
    for name, fn in ((INDEX_NAME, from_index), ("model.safetensors", one_file)):
        k = _join(key, name)
        if c.exists(bucket, k):
            return fn(k)
    pre = key + "/" if key else ""
    files = [(o.key, o.length) for o in c.list(bucket, pre or None)
             if o.key.endswith(".safetensors") and "/" not in o.key[len(pre):]]
    if not files:
        raise NotFoundError(_lib.WHARF_ERR_NOT_FOUND, f"{url}: no {INDEX_NAME}, "
                            "model.safetensors or *.safetensors there")
    return files, None


def load_safetensors(url, device="cpu", client=None, transport="auto", report=None):
    """{name: tensor} of a Hugging Face safetensors snapshot (a directory with
    model.safetensors.index.json and its shards, or with model.safetensors / *.safetensors),
    an index, or a single file. Every tensor is a zero-copy view of one arena; dtypes this
    torch lacks come back as raw uint8 views (see _view)."""
    c = _client(client)
    bucket, key = parse_url(url, need_key=False)
    shards, wm = _resolve_hf(c, bucket, key, url)
    rep = {} if report is None else report
    t0 = time.perf_counter()
    tensors = _fetch(c, bucket, shards, device, transport, rep)
    if wm is not None:
        hdrs = rep["headers"]
        d = key.rpartition("/")[0] if key.endswith(".json") else key
        for name, f in wm.items():
            h = hdrs.get(_join(d, f))
            if h is None or name not in h.by_name():
                raise SafetensorsError(_lib.WHARF_ERR_INVALID, f"{url}: the index puts tensor "
                                       f"{name!r} in {f}, but that shard has no such tensor")
    rep["wall_s"] = time.perf_counter() - t0
    rep.pop("headers", None)
    return tensors


from .data import JpegTarShards, RawImageShards, TokenDataset  # noqa: E402,F401
