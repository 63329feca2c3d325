# SPDX-License-Identifier: Apache-2.0
"""wharf.torch.checkpoint: checkpoints as standard safetensors shards.

Checkpoint layout under s3://bucket/<key>/ (one process, world_size 1):
    model-<gen>-00001-of-0000N.safetensors ...  shards, each at most shard_size bytes of
                                                tensors (a single tensor larger than that
                                                gets a shard of its own); <gen> is a
                                                generation id, new for every save
    model.safetensors.index.json                written LAST: the commit point
With W ranks, rank r writes  model-rank0000r-<gen>-00001-of-0000N.safetensors ... and a rank
manifest rank-0000r-of-0000W.json; the index is written by one commit once every rank is done.

Each shard is a plain safetensors file: any safetensors reader opens it. Tensor names are the
object's paths joined with "." (a state dict keeps its own names; {"model": {"w": t}} gives
"model.w"; with several ranks the names start "rank<r>/"). The first shard of each rank carries
the non-tensor structure in __metadata__["wharf.structure"] (JSON; the index has it too).

The index is a model.safetensors.index.json: {"metadata": {"total_size", "format":
"wharf.torch/1", "world_size", "ranks": [{"rank", "structure", "shards": [{"file", "size",
"etag"}], "tensors": {name: {"crc32", ...}}}]}, "weight_map": {name: file}}.

Rules:
- Overwrite-safe: a save never writes over an object the current index names (its shards
  carry a generation id of their own) and replaces the index last, by one conditional PUT:
  If-Match the ETag the index had when the save began, If-None-Match: * where there was none.
  Until that PUT the old checkpoint loads whole; after it, the new one. A save killed at any
  point leaves the old checkpoint (or, at a new URL, none: load() reports "incomplete"); of
  two saves racing to one URL only one commits, the other gets CheckpointConflictError. Only
  after its commit does a save delete the shards under the URL that the new index does not
  name and that were there before it began (orphans of interrupted saves at once; the
  replaced checkpoint's once they have been retired for grace_s seconds, see below); shards
  of a save that began later are never touched. load() also compares each shard's ETag with
  the one recorded at commit, so shards changed later are detected (ChecksumError).
- Readers and an overwrite: the shards of the checkpoint an index replaces are not deleted at
  its commit but retired: the new index lists them (metadata "retired": {file: unix time})
  and the first save more than grace_s seconds later deletes them (grace_s: save's argument,
  else WHARF_CKPT_GRACE_S, else DEFAULT_GRACE_S = 60; 0 deletes at the commit). A load that
  read the old index before the commit finds its shards for that long. A load whose shards
  vanish or change under it reads the index again and, where it changed, restarts once on
  the new one; it returns the old or the new checkpoint, whole, or raises
  CheckpointChangedError naming the race, never a NotFoundError or a short read.
- Async (save_async, save(async_=True)): the call returns a Future once every tensor is
  copied into a snapshot pool; upload, commit and cleanup run in a thread. One in flight per
  process: any further save first waits for it.
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
from __future__ import annotations

import concurrent.futures as cf
import json
import os
import threading
import time
import uuid
import zlib
from typing import Any, Dict, List, Optional, Set

import torch

from .. import _lib
from ..errors import (CheckpointChangedError, CheckpointConflictError, ChecksumError,
                      IncompleteCheckpointError, NotFoundError, PreconditionFailedError,
                      SafetensorsError, WharfError)
from ._common import INDEX_NAME, _client, _join, parse_url, rank_world as _rank_world
from .dtypes import FROM_REAL as _FROM_REAL, as_bytes as _as_bytes, itemsize as _itemsize
from .dtypes import prepare as _prepare
from .checksum import sum64 as _sum64
from .fetch import fetch as _fetch
from .structure import Flatten as _Flatten, decode as _decode
from .. import safetensors as st
from ..client import Client
from ..progress import Progress
# A save's staging, copies and uploads (_upload.py); the ranks' file names and roll call
# (_ranks.py). Their public names are this module's.
from ._upload import (DEVICE_BUDGET_SHARE as DEVICE_BUDGET_SHARE,
                      HOST_BUDGET_SHARE as HOST_BUDGET_SHARE,
                      default_staging_budget as default_staging_budget,
                      free_staging as free_staging, wait_async as wait_async)
from ._upload import _copy_workers, _inflight, _note_staged, _put, _snapshot, _upload_shards
from ._ranks import ROLL_CALL_TIMEOUT_S as ROLL_CALL_TIMEOUT_S, _barrier, _roll_call
from ._ranks import _is_shard, _manifest_name, _shard_name

FORMAT = "wharf.torch/1"
# Just under 4 GiB: a shard stays below the 4 GiB transfer limit of some RDMA stacks.
DEFAULT_SHARD_SIZE = 4 * 1024 ** 3 - 64 * 1024 ** 2
# Seconds the shards of a replaced checkpoint stay (retired) after the commit that replaced
# them, for loads that read the old index (module doc, "Readers and an overwrite").
DEFAULT_GRACE_S = 60.0
# How many times a load restarts on a new index after its checkpoint changed under it.
LOAD_RESTARTS = 1


def _grace(grace_s: Optional[float]) -> float:
    if grace_s is None:
        v = os.environ.get("WHARF_CKPT_GRACE_S")
        if v is None:
            return DEFAULT_GRACE_S
        try:
            grace_s = float(v)
        except ValueError:
            raise WharfError(_lib.WHARF_ERR_INVALID, f"WHARF_CKPT_GRACE_S={v!r} is not a "
                             "number of seconds") from None
    if not isinstance(grace_s, (int, float)) or isinstance(grace_s, bool) or grace_s < 0:
        raise WharfError(_lib.WHARF_ERR_INVALID, f"grace_s must be a number of seconds >= 0, "
                         f"not {grace_s!r}")
    return float(grace_s)


def save(obj: Any, url: str, client: Optional[Client] = None, shard_size: int = DEFAULT_SHARD_SIZE,
         rank: Any = None, world_size: Optional[int] = None, transport: str = "auto",
         checksums: bool = True, concurrency: Optional[int] = None, keep_staging: bool = True,
         save_id: Any = None, allow_pickle: bool = False, progress: bool = False,
         staging: str = "auto", async_: bool = False, staging_budget: Optional[float] = None,
         grace_s: Optional[float] = None) -> Any:
    """Saves obj (a state dict or any nested structure of tensors and plain values) as
    safetensors shards under url (s3://bucket/key), then commits it (see the module doc for
    several ranks). Returns a dict: bytes, shards, index (its key, or None when a commit is
    still due), generation (the id in this save's shard names), removed (objects of earlier
    saves deleted after the commit), transports, flatten_s, upload_s (of which fill_s copying
    into the staging buffers and checksumming, put_wait_s waiting for PUTs), commit_s,
    wall_s, save_blocking_s (how long the call held the caller: wall_s here), durable_s (from
    the call until the commit; wall_s here), reports.
    A URL that holds a checkpoint keeps it, whole and loadable, until this save's index
    replaces it (see the module doc); a second save while an async one is in flight waits
    for that one to be durable first.
    async_=True: returns a concurrent.futures.Future as soon as a consistent snapshot of
    every tensor exists (see save_async); the upload and the commit run in a thread.
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
    a sum64 (wharf.torch.checksum, computed on the GPU) instead of a CRC-32.
    staging_budget: async_ only, the most bytes the snapshot may take (see save_async).
    grace_s: how long the replaced checkpoint's shards stay for loads still reading them
    (default WHARF_CKPT_GRACE_S, else 60; the module doc, "Readers and an overwrite")."""
    t0 = time.perf_counter()
    c = _client(client)
    bucket, prefix = parse_url(url)
    if not isinstance(shard_size, int) or shard_size < 1:
        raise WharfError(_lib.WHARF_ERR_INVALID,
                         f"shard_size must be a positive int, not {shard_size!r}")
    if staging not in ("auto", "device", "host"):
        raise WharfError(_lib.WHARF_ERR_INVALID,
                         f'staging must be "auto", "device" or "host", not {staging!r}')
    if staging_budget is not None and (not isinstance(staging_budget, int)
                                       or staging_budget < 1):
        raise WharfError(_lib.WHARF_ERR_INVALID, "staging_budget must be a positive int "
                         f"(bytes), not {staging_budget!r}")
    grace = _grace(grace_s)
    rank, world, pg = _rank_world(rank, world_size)
    if async_ and pg and world > 1:
        raise WharfError(_lib.WHARF_ERR_UNSUPPORTED, f"save {url}: async_=True with a process "
                         "group of several ranks is not supported (its commit needs "
                         "collectives, which a background thread cannot run beside training's);"
                         " pass rank= and world_size= and call wharf.torch.commit() once every "
                         "rank's future is done, or save synchronously")
    gen = uuid.uuid4().hex[:12]
    skeleton, plans = _plan(obj, rank, world, shard_size, allow_pickle, gen)
    flatten_s = time.perf_counter() - t0
    if async_:
        return _save_async(c, url, bucket, prefix, rank, world, skeleton, plans, save_id,
                           transport, checksums, concurrency, staging, staging_budget,
                           progress, t0, flatten_s, gen, grace)
    waited_s = _inflight.wait_idle()

    base, before = _begin(c, bucket, prefix, rank, world, pg)
    t1 = time.perf_counter()
    with Progress(sum(p["size"] for p in plans), f"save {url}", progress) as bar:
        reports, tensor_info, ustats = _upload_shards(c, bucket, prefix, plans, transport,
                                                      checksums, concurrency, keep_staging,
                                                      bar, staging)
    upload_s = time.perf_counter() - t1
    rank_rec = _rank_record(rank, save_id, skeleton, plans, reports, tensor_info)
    t2 = time.perf_counter()
    committed, removed = _finish(c, bucket, prefix, url, rank, world, pg, rank_rec, save_id,
                                 base, before, grace)
    commit_s = time.perf_counter() - t2
    wall = time.perf_counter() - t0
    return {"bytes": sum(p["size"] for p in plans), "shards": [p["file"] for p in plans],
            "index": committed, "generation": gen, "removed": removed,
            "transports": sorted({r.transport for r in reports}),
            "flatten_s": flatten_s, "upload_s": upload_s, "commit_s": commit_s, **ustats,
            "waited_s": waited_s, "wall_s": wall, "save_blocking_s": wall, "durable_s": wall,
            "async": False, "reports": reports}


def _plan(obj: Any, rank: Any, world: int, shard_size: int, allow_pickle: bool, gen: str) -> Any:
    """(the structure's skeleton, one plan per shard: file, items, entries, header, size)."""
    fl = _Flatten(f"rank{rank}/" if world > 1 else "", allow_pickle=allow_pickle)
    skeleton = fl.enc(obj, [])
    items = []  # (name, stored tensor, dtype, special, original element size)
    for name, t, _ in fl.tensors:
        s, dt, special = _prepare(name, t)
        items.append((name, s, dt, special, t.element_size()))

    # Shards: greedy in walk order; inside a shard, larger items first keeps every offset a
    # multiple of its item size (the reference writer's order).
    shards: List[Any] = []
    cur: List[Any] = []
    cur_bytes = 0
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
        def largest_first(it: Any) -> Any:
            return -max(it[4], _itemsize(it[2]))
        sh = sorted(sh, key=largest_first)
        entries, specials, off = [], {}, 0
        for name, s, dt, special, _ in sh:
            nb = s.numel() * s.element_size()
            entries.append((name, dt, tuple(s.shape), off, off + nb))
            if special:
                specials[name] = special
            off += nb
        meta = {"format": "pt", "wharf.format": FORMAT, "wharf.rank": str(rank),
                "wharf.world_size": str(world), "wharf.shard": f"{i + 1}/{nsh}",
                "wharf.generation": gen}
        if specials:
            meta["wharf.special"] = json.dumps(specials, separators=(",", ":"))
        if i == 0:
            meta["wharf.structure"] = json.dumps(skeleton, separators=(",", ":"))
        header = st.build_header(entries, meta)
        plans.append(dict(file=_shard_name(rank, world, i, nsh, gen), items=sh,
                          entries=entries, header=header, size=len(header) + off,
                          specials=specials))
    return skeleton, plans


def _begin(c: Client, bucket: str, prefix: str, rank: Any, world: int, pg: bool) -> Any:
    """Before any shard of this save is written: (the ETag of the index this save replaces,
    None where there is none; the shard objects under the URL now, which the commit's
    cleanup may delete). Taken before the writes, the listing never holds a shard of a save
    that began after it; a save whose shards it holds read its own base before this save's
    commit, so that save cannot commit over this one (and loses nothing by the cleanup).
    Also removes this rank's old manifest, so a commit cannot pick up a rank that has not
    finished this save."""
    base, before = _Base(None, set(), {}), set()
    if rank == 0:
        base = _base(c, bucket, prefix)
        before = _shard_keys(c, bucket, prefix)
    if pg and world > 1:
        _roll_call(f"s3://{bucket}/{prefix}", rank, world)
    if world > 1:
        _delete_quiet(c, bucket, _join(prefix, _manifest_name(rank, world)))
    if pg:
        _barrier()
    return base, before


class _Base:
    """The index a save replaces: its ETag (None: there was none), the shard keys it names
    (live) and the retired ones it lists ({key: unix time retired})."""

    def __init__(self, etag: Optional[str], live: Set[str], retired: Dict[str, float]) -> None:
        self.etag, self.live, self.retired = etag, live, retired


def _base(c: Client, bucket: str, prefix: str) -> Any:
    try:
        raw, etag = _get_whole(c, bucket, _join(prefix, INDEX_NAME))
    except NotFoundError:
        return _Base(None, set(), {})
    live, retired = set(), {}
    try:
        meta = json.loads(raw)["metadata"]
        live = _files(prefix, meta["ranks"])
        for f, since in (meta.get("retired") or {}).items():
            retired[_join(prefix, f)] = float(since)
    except (ValueError, KeyError, TypeError, AttributeError):
        pass  # not an index of ours: replaced all the same, its files are not touched
    return _Base(etag, live, retired)


def _retire(base: Any, before: Any, new: Any, grace: float) -> Any:
    """({key: unix time retired} for the new index to list, the keys to delete after its
    commit): the replaced index's shards are retired now, retired ones stay until grace_s has
    passed, the rest of what was listed before the save (orphans) goes."""
    if grace <= 0:
        return {}, set(before) - set(new)
    now = time.time()
    keep = {k: now for k in base.live if k in before and k not in new}
    for k, since in base.retired.items():
        if k in before and k not in new and k not in keep and now - since < grace:
            keep[k] = since
    return keep, set(before) - set(new) - set(keep)


def _get_whole(c: Client, bucket: str, key: str, tries: int = 4) -> Any:
    """(the bytes of one version of a small object, its ETag): a GET that raced an overwrite
    (its ETag not the HEAD's, or fewer bytes) is made again."""
    for _ in range(tries):
        st_ = c.stat(bucket, key)
        raw = c.get(bucket, key, length=st_.length, transport="http")
        rep = c.last_report
        if len(raw) == st_.length and (rep is None or not rep.etag or not st_.etag
                                       or rep.etag == st_.etag):
            return raw, st_.etag
    raise CheckpointChangedError(_lib.WHARF_ERR_PRECONDITION, f"s3://{bucket}/{key} changed "
                                 f"during each of {tries} reads (it is being overwritten)")


def _shard_keys(c: Client, bucket: str, prefix: str, older_than: Any = None) -> Any:
    base = prefix + "/" if prefix else ""
    return {o.key for o in c.list(bucket, base)
            if _is_shard(o.key[len(base):]) and (older_than is None or o.mtime < older_than)}


def _rank_record(rank: Any, save_id: Any, skeleton: Any, plans: Any, reports: Any,
                 tensor_info: Any) -> Any:
    return {"rank": rank, "save_id": save_id, "structure": skeleton,
            "shards": [{"file": p["file"], "size": p["size"], "etag": r.etag}
                       for p, r in zip(plans, reports)],
            "tensors": tensor_info,
            "weight_map": {e[0]: p["file"] for p in plans for e in p["entries"]}}


def _finish(c: Client, bucket: str, prefix: str, url: str, rank: Any, world: int, pg: bool,
            rank_rec: Any, save_id: Any, base: Any, before: Any, grace: float) -> Any:
    """Commits (one rank, or every rank through the process group) and then deletes the
    shards the new index does not name and does not retire. Returns (the index key or None,
    objects removed)."""
    if world == 1:
        retired, gone = _retire(base, before, _files(prefix, [rank_rec]), grace)
        key = _write_index(c, bucket, prefix, 1, [rank_rec], base, retired)
        return key, _cleanup(c, bucket, gone, ())
    c.put(bucket, _join(prefix, _manifest_name(rank, world)),
          json.dumps(rank_rec, separators=(",", ":")).encode(), transport="http")
    if not pg:
        return None, 0
    _barrier()
    removed = 0
    if rank == 0:
        recs, _ = _check_manifests(c, bucket, prefix, url, world, save_id)
        retired, gone = _retire(base, before, _files(prefix, recs), grace)
        _write_index(c, bucket, prefix, world, recs, base, retired)
        removed = _cleanup(c, bucket, gone, ())
    _barrier()
    return _join(prefix, INDEX_NAME), removed


def _files(prefix: str, recs: Any) -> Any:
    return {_join(prefix, sh["file"]) for rr in recs for sh in rr["shards"]}


def _cleanup(c: Client, bucket: str, candidates: Any, keep: Any) -> int:
    """Deletes the candidates the committed index does not name; a failure only leaves an
    orphan for the next save. Returns how many went."""
    n = 0
    for key in sorted(set(candidates) - set(keep)):
        try:
            c.delete(bucket, key)
            n += 1
        except NotFoundError:
            pass
        except WharfError:
            pass  # left for the next save's cleanup
    return n


def _delete_quiet(c: Client, bucket: str, key: str) -> None:
    try:
        c.delete(bucket, key)
    except NotFoundError:
        pass


def save_async(obj: Any, url: str, **kw: Any) -> Any:
    """wharf.torch.save(obj, url, async_=True, **kw): returns a concurrent.futures.Future
    once a consistent snapshot of obj exists; after that the caller may change or free its
    tensors. The snapshot goes into a pool kept between saves (its size is the checkpoint's,
    each shard laid out as its file): in GPU memory (device-to-device copies) when most of
    the bytes are CUDA tensors of one device, the direct GPU path is there and the snapshot
    fits staging_budget (default: default_staging_budget(device), a quarter of the GPU);
    else in host memory (pinned where GPU tensors are copied into it), within
    staging_budget (default: half of the available memory), or it raises WharfError
    (WHARF_ERR_NOMEM) before copying anything. The pool stays for the next async save
    (keep_staging does not apply; free_staging() releases it). Errors in planning (a type that cannot be
    stored) and the budget raise here; errors of the upload and the commit come out of the
    future (future.result() raises them). The future's result is save()'s dict, with
    save_blocking_s (the time this call held the caller), durable_s (from the call until the
    index was committed), staging_budget, and async True; future.save_blocking_s has the
    first as soon as the call returns.
    One async save in flight per process: a second save (async or not) first waits for the
    one in flight to finish. With a process group of several ranks it refuses (the commit
    needs collectives); pass rank=/world_size= and commit() after every rank's future."""
    return save(obj, url, async_=True, **kw)


def _save_async(c: Client, url: str, bucket: str, prefix: str, rank: Any, world: int, skeleton: Any,
                plans: Any, save_id: Any, transport: str, checksums: bool,
                concurrency: Optional[int], staging: str, budget: Optional[float],
                progress: bool, t0: float, flatten_s: float, gen: str, grace: float) -> Any:
    waited_s = _inflight.claim()
    try:
        pool, offs, tensor_info, stats, crc_later = _snapshot(c, plans, transport, staging,
                                                              budget, checksums)
    except BaseException:
        _inflight.release()
        raise
    # the upload reads the pool only: no reference to the caller's tensors survives
    light = [{k: v for k, v in p.items() if k != "items"} for p in plans]
    del plans
    fut: "cf.Future[Any]" = cf.Future()
    fut.set_running_or_notify_cancel()
    blocking = time.perf_counter() - t0
    setattr(fut, "save_blocking_s", blocking)

    def run() -> None:
        try:
            t1 = time.perf_counter()
            if crc_later:
                npool = pool.numpy()
                with cf.ThreadPoolExecutor(_copy_workers(), thread_name_prefix="wharf-crc") as cp:
                    for p, off in zip(light, offs):
                        hl = off + len(p["header"])
                        for name, crc in cp.map(
                                lambda en, hl=hl: (en[0], zlib.crc32(npool[hl + en[3]:
                                                                           hl + en[4]])),
                                p["entries"]):
                            tensor_info[name]["crc32"] = crc
            base, before = _begin(c, bucket, prefix, rank, world, False)
            reports = []
            with Progress(sum(p["size"] for p in light), f"save {url}", progress) as bar:
                for p, off in zip(light, offs):
                    reports.append(_put(c, bucket, _join(prefix, p["file"]), pool, off,
                                        p["size"], transport, concurrency, bar))
            upload_s = time.perf_counter() - t1
            _note_staged(stats, reports)
            rec = _rank_record(rank, save_id, skeleton, light, reports, tensor_info)
            t2 = time.perf_counter()
            committed, removed = _finish(c, bucket, prefix, url, rank, world, False, rec,
                                         save_id, base, before, grace)
            durable = time.perf_counter() - t0
            result = {
                "bytes": sum(p["size"] for p in light), "shards": [p["file"] for p in light],
                "index": committed, "generation": gen, "removed": removed,
                "transports": sorted({r.transport for r in reports}),
                "flatten_s": flatten_s, "upload_s": upload_s,
                "commit_s": time.perf_counter() - t2, **stats, "waited_s": waited_s,
                "wall_s": durable, "save_blocking_s": blocking, "durable_s": durable,
                "async": True, "reports": reports}
        except BaseException as e:  # noqa: B902 (handed to the caller through the future)
            # the slot goes first: a done-callback that saves again must not wait for it
            _inflight.release()
            fut.set_exception(e)
        else:
            _inflight.release()
            fut.set_result(result)

    # not a daemon: an interpreter that exits while a save is in flight waits for it
    threading.Thread(target=run, name="wharf-async-save").start()
    return fut


def _write_index(c: Client, bucket: str, prefix: str, world: int, rank_recs: Any, base: Any,
                 retired: Any = None) -> Any:
    """PUTs the index (the commit point) from every rank's record, over the index this save
    started from: If-Match its ETag (base), or If-None-Match: * where there was none. Of two
    saves racing to one URL, only one commits; the old checkpoint stays whole until then."""
    def rank_of(r: Any) -> Any:
        return r["rank"]
    recs = sorted(rank_recs, key=rank_of)
    weight_map = {}
    for rr in recs:
        weight_map.update(rr["weight_map"])
    ranks = [{k: v for k, v in rr.items() if k != "weight_map"} for rr in recs]
    index = {"metadata": {"total_size": sum(sh["size"] for rr in recs for sh in rr["shards"]),
                          "format": FORMAT, "world_size": world, "ranks": ranks},
             "weight_map": weight_map}
    if retired:
        pre = prefix + "/" if prefix else ""
        index["metadata"]["retired"] = {k[len(pre):]: round(v, 3)
                                        for k, v in sorted(retired.items())}
    key = _join(prefix, INDEX_NAME)
    body = json.dumps(index, separators=(",", ":")).encode()
    try:
        c.put(bucket, key, body, transport="http", if_none_match=base.etag is None,
              if_match=base.etag)
    except (PreconditionFailedError, NotFoundError) as e:
        try:
            if c.get(bucket, key, transport="http") == body:
                return key  # this very commit, already made (a retried commit())
        except NotFoundError:
            pass
        raise CheckpointConflictError(
            _lib.WHARF_ERR_PRECONDITION,
            f"s3://{bucket}/{key}: another save committed this checkpoint while this one "
            f"ran (the index is no longer {base.etag or 'absent'}); this save "
            "was not committed and the other checkpoint stands (this save's shards are left "
            "for the next save's cleanup)", getattr(e, "report", None)) from None
    return key


def _check_manifests(c: Client, bucket: str, prefix: str, url: str, world_size: int,
                     save_id: Any) -> Any:
    """Every rank's manifest, checked (same save, every shard there at its size). Returns
    (the records, the shards' mtimes)."""
    recs, mtimes = [], []
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
            mtimes.append(got.mtime)
    return recs, mtimes


def commit(url: str, world_size: Optional[int] = None, client: Optional[Client] = None,
           save_id: Any = None, grace_s: Optional[float] = None) -> Any:
    """Writes the index of a checkpoint saved by several ranks without a process group, once
    every rank's save() has returned. world_size None: taken from the rank manifests found.
    Refuses (IncompleteCheckpointError) while a rank's manifest or shard is missing, when the
    manifests come from different saves (their save_id differ), or, with save_id given, when
    a manifest is not from that save. Without save_id, a rank that has not started a new save
    under the same key still has its previous manifest, which commit cannot tell apart.
    After the commit it deletes the shards of the index it replaced, and shards no index
    names that are older than this save's (those of interrupted saves)."""
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
    grace = _grace(grace_s)
    base = _base(c, bucket, prefix)
    recs, mtimes = _check_manifests(c, bucket, prefix, url, world_size, save_id)
    new = _files(prefix, recs)
    stale = _shard_keys(c, bucket, prefix, older_than=min(mtimes)) if mtimes else set()
    retired, gone = _retire(base, base.live | set(base.retired) | stale, new, grace)
    key = _write_index(c, bucket, prefix, world_size, recs, base, retired)
    _cleanup(c, bucket, gone, ())
    return key


# ---- load ----------------------------------------------------------------------------------


def _read_json(c: Client, bucket: str, key: str) -> Any:
    raw, _ = _get_whole(c, bucket, key)
    try:
        return json.loads(raw)
    except ValueError as e:
        raise SafetensorsError(_lib.WHARF_ERR_INVALID,
                               f"s3://{bucket}/{key} is not valid JSON: {e}") from None


def _read_index(c: Client, bucket: str, prefix: str, url: str) -> Any:
    """(the parsed index, its ETag)."""
    key = _join(prefix, INDEX_NAME)
    try:
        raw, etag = _get_whole(c, bucket, key)
    except NotFoundError:
        raw = None
    if raw is not None:
        try:
            return json.loads(raw), etag
        except ValueError as e:
            raise SafetensorsError(_lib.WHARF_ERR_INVALID,
                                   f"s3://{bucket}/{key} is not valid JSON: {e}") from None
    others = c.list(bucket, prefix + "/") if prefix else []
    pre = prefix + "/" if prefix else ""
    hf = [o.key[len(pre):] for o in others if o.key.endswith(".safetensors")
          and not _is_shard(o.key[len(pre):], gen=True)]
    if hf:
        raise SafetensorsError(
            _lib.WHARF_ERR_INVALID, f"{url} is not a {FORMAT} checkpoint but a Hugging Face "
            f"safetensors snapshot ({', '.join(sorted(hf)[:3])}): load it with "
            "wharf.torch.load_safetensors (or load_pretrained into a model)")
    if others:
        raise IncompleteCheckpointError(
            _lib.WHARF_ERR_NOT_FOUND, f"checkpoint {url} is incomplete: {len(others)} objects "
            f"exist under it but not its index {INDEX_NAME}, which a save writes last (the save "
            "was interrupted, or with several ranks commit() was not called)")
    raise NotFoundError(_lib.WHARF_ERR_NOT_FOUND,
                        f"no checkpoint at {url}: s3://{bucket}/{key} not found")


def _map_location(map_location: Any, device: Any, url: str) -> Any:
    """The device of torch.load's map_location (a str, torch.device, or a dict mapping
    every location to one device); load places every tensor on one device."""
    if map_location is None:
        return device
    if device not in (None, "cpu"):
        raise WharfError(_lib.WHARF_ERR_INVALID, f"load {url}: pass device= or map_location=, "
                         "not both")
    if isinstance(map_location, dict):
        targets = {str(v) for v in map_location.values()}
        if len(targets) != 1:
            raise WharfError(_lib.WHARF_ERR_UNSUPPORTED, f"load {url}: map_location "
                             f"{map_location!r} maps to several devices; a wharf checkpoint "
                             "loads onto one device (pass it as map_location or device)")
        map_location = targets.pop()
    if isinstance(map_location, (str, torch.device)):
        try:
            return torch.device(map_location)
        except RuntimeError as e:
            raise WharfError(_lib.WHARF_ERR_INVALID, f"load {url}: map_location "
                             f"{map_location!r} is not a device ({e})") from None
    raise WharfError(_lib.WHARF_ERR_UNSUPPORTED, f"load {url}: map_location of type "
                     f"{type(map_location).__name__} is not supported (a device, a str or a "
                     "dict naming one device)")


def load(url: str, client: Optional[Client] = None, device: Any = "cpu", verify: bool = False,
         rank: Any = None, transport: str = "auto", report: Any = None, allow_pickle: bool = False,
         progress: bool = False, map_location: Any = None) -> Any:
    """Loads a checkpoint written by save(). rank: for a checkpoint of several ranks, which
    one (default: torch.distributed's rank, when initialised), or "all" for a list of every
    rank's object. verify=True recomputes each tensor's CRC-32 (or, for tensors saved from GPU
    memory, its sum64, on the device it landed on) against the one recorded at save and raises
    ChecksumError naming the tensors that differ. report: a dict to fill with
    timings and transports. allow_pickle: unpickle objects saved with allow_pickle=True
    (only for checkpoints you trust). progress=True: a progress bar, labelled with the URL.
    map_location: as torch.load's, a device (str or torch.device) or a dict mapping
    locations to one device; the same as device= (give one of them).
    report["restarts"]: how many times the load began again on a new index (module doc,
    "Readers and an overwrite")."""
    t0 = time.perf_counter()
    device = _map_location(map_location, device, url)
    c = _client(client)
    bucket, prefix = parse_url(url)
    rep = {} if report is None else report
    first: Optional[WharfError] = None
    for attempt in range(1 + LOAD_RESTARTS):
        index, etag = _read_index(c, bucket, prefix, url)
        try:
            out = _load_index(c, bucket, prefix, url, index, device, verify, rank, transport,
                              rep, allow_pickle, progress)
        except WharfError as e:
            # shards gone, short or changed under the load: a race with a save exactly when
            # the index moved on meanwhile (else the error is the checkpoint's own)
            if isinstance(e, (IncompleteCheckpointError, CheckpointConflictError)):
                raise
            try:
                now = c.stat(bucket, _join(prefix, INDEX_NAME)).etag
            except NotFoundError:
                now = None
            if now == etag:
                raise
            first = first or e
            continue
        rep["restarts"] = attempt
        rep.pop("headers", None)
        rep["wall_s"] = time.perf_counter() - t0
        return out
    assert first is not None  # every pass that did not return recorded its error
    raise CheckpointChangedError(
        _lib.WHARF_ERR_PRECONDITION, f"load {url}: the checkpoint was replaced while it was "
        f"read, {1 + LOAD_RESTARTS} times (a save to the same URL is racing this load: "
        f"{first.message}); load again, or give the saves a longer grace_s") from first


def _load_index(c: Client, bucket: str, prefix: str, url: str, index: Any, device: Any,
                verify: bool, rank: Any, transport: str, rep: Any, allow_pickle: bool,
                progress: bool) -> Any:
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
    tensors = _fetch(c, bucket, [(k, s) for k, s, _ in shards], device, transport, rep,
                     expect_etags=[e for _, _, e in shards], progress=progress,
                     desc=f"load {url}")
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
    return out if rank == "all" and world > 1 else out[0]

