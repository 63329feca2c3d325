# SPDX-License-Identifier: Apache-2.0
"""torch.distributed.checkpoint (DCP) storage on wharf: WharfStorageWriter and
WharfStorageReader, for dcp.save / dcp.async_save / dcp.load and everything built on them (FSDP,
torchtitan). Names and arguments follow DCP's FileSystemWriter/Reader and s3torchconnector's
S3StorageWriter/Reader where they overlap (thread_count, overwrite, checkpoint_id).

    import torch.distributed.checkpoint as dcp
    from wharf.torch.dcp import WharfStorageReader, WharfStorageWriter
    dcp.save(state_dict, storage_writer=WharfStorageWriter("s3://ckpt/run1/step-100", client=c))
    dcp.load(state_dict, storage_reader=WharfStorageReader("s3://ckpt/run1/step-100", client=c))

Layout under the URL:
    __<rank>_<save>_<n>.distcp   each rank's items, raw tensor bytes (64-byte aligned) and the
                                 torch.save bytes of non-tensor items, packed into objects of
                                 at most object_size (a larger tensor gets an object of its own)
    .metadata                    the pickled DCP Metadata, whose storage_data maps every item
                                 to (object, offset, length, dtype, shape); written LAST

Commit rules. Every rank PUTs its own objects (RDMA from the tensors: a contiguous CPU tensor
that fills an object goes straight from its memory, others through a staging buffer; CUDA
tensors through the direct GPU path where libwharf can register device memory, else through
host memory). The coordinator's finish() then checks that every object the ranks reported
exists with the reported size, and only then PUTs .metadata. <save> is new for every save, so
a save over an existing checkpoint never touches the objects the old .metadata points to:
until the new .metadata lands, a reader sees the old checkpoint, whole; after, the new one.
finish() then retires the __*.distcp objects the .metadata it replaced pointed to: the new
.metadata lists them (its attribute wharf_retired, {object: unix time retired}) and the first
save more than grace_s seconds later deletes them (grace_s: the writer's argument, else
WHARF_CKPT_GRACE_S, else 60, as wharf.torch.save; 0 deletes at the commit). Objects there
when the save began that no .metadata names (orphans of an interrupted save) go at the
commit. Only objects listed in set_up_storage_writer, before any rank writes, are candidates:
the objects of a save that starts after this commit are never touched. A save that dies (a
rank killed mid-write) leaves no new .metadata, and the reader refuses a URL without one
(IncompleteCheckpointError when objects exist there). .metadata is a conditional PUT, after
every data object is known durable: If-None-Match: * when the URL had no checkpoint when the
save started, else If-Match with the ETag the .metadata had then. So of two writers saving to
one URL at once only one commits; the other gets CheckpointConflictError (and its objects are
left unreferenced, for the next save's cleanup). overwrite=False refuses to start a save where
a .metadata exists.

Readers and an overwrite (as wharf.torch.load): a dcp.load that read the old .metadata before
a save replaced it finds the old objects for grace_s seconds. A read whose objects vanish or
come back short reads .metadata again; where it changed, a single-process load restarts once
on the new one (same layout) and gives the new checkpoint, whole; otherwise (a second change,
another layout, several ranks) it raises CheckpointChangedError naming the race. Never a
NoSuchKey or a short read; last_report["restarts"] counts the restarts.

Reads: items sorted by (object, offset) run on thread_count threads; a contiguous stored region
lands directly in its destination (host or device memory), a strided one (a reshard along an
inner dimension) through host memory; small items of one object share scatter GETs over RDMA,
elsewhere ranged GETs of runs within coalesce_gap (64 KiB).
"""
from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import io
import math
import pickle
import uuid
from typing import Any, Dict, List, Optional, Set, Tuple

import torch

from .. import _lib
from ..client import Client
from ..config import is_url, join, parse_url
from ..errors import (CheckpointChangedError, CheckpointConflictError, IncompleteCheckpointError,
                      MissingDependencyError, NotFoundError, PreconditionFailedError, WharfError)
from .._log import logger
from ..progress import Progress
from ..reader import runs, scatter_runs
from ._common import _client
from .checkpoint import LOAD_RESTARTS, _get_whole, _grace
from .checksum import block_sums, first_mismatch
from ._dcp_util import (_bytes_of, _dtype_name, _generations, _nbytes, _retire,  # noqa: F401
                        _several_ranks, checksum_error, wharf_error)

try:
    from torch.distributed.checkpoint.metadata import Metadata
    from torch.distributed.checkpoint.planner import LoadItemType, WriteItemType
    from torch.distributed.checkpoint.storage import StorageReader, StorageWriter, WriteResult
except ImportError as e:  # torch < 2.0, or a build without distributed
    raise MissingDependencyError(
        f"wharf.torch.dcp needs torch.distributed.checkpoint (torch >= 2.2); torch "
        f"{torch.__version__} has none ({e}). Use wharf.torch.save/load, or install a newer "
        "torch") from None
try:
    from torch.distributed.checkpoint.metadata import StorageMeta
except ImportError:
    StorageMeta = None
try:
    from torch.distributed.checkpoint.default_planner import DefaultLoadPlanner
except ImportError:
    DefaultLoadPlanner = None
try:  # torch >= 2.4: a stager that copies every tensor (CPU ones too) into host memory
    from torch.distributed.checkpoint.staging import BlockingAsyncStager
except ImportError:
    BlockingAsyncStager = None

METADATA = ".metadata"
SUFFIX = ".distcp"
DEFAULT_OBJECT_SIZE = 1 << 30
ALIGN = 64
SMALL_ITEM = 1 << 20          # items below this are fetched together with their neighbours
SMALL_RUN = 16 << 20          # up to this many bytes per shared GET
SCATTER_WINDOWS = 16384       # items per scatter GET (the server's bound)
COALESCE_GAP = 64 << 10       # small items this near share a GET (the gap is read too)
CHECK_BLOCK = 4 << 20         # each item's bytes are checksummed in blocks of this size, so
                              # a ranged read (a reshard) is checked reading at most one
                              # partial block more at each end


@dataclasses.dataclass(frozen=True)
class WharfStorageInfo:
    """Where one item lives: object name (relative to the checkpoint URL), byte offset and
    length in it; for tensors the dtype name and the stored chunk's shape. Integrity, as
    saved: check ("crc32" for bytes the writer had in host memory, "sum64" of
    wharf.torch.checksum for bytes it had in GPU memory), sums (one per block of block
    bytes of the item, the last block shorter) and etag (the object's ETag its PUT
    returned). A checkpoint written before these were recorded has None there and is read
    unchecked."""
    key: str
    offset: int
    length: int
    dtype: Optional[str] = None
    shape: Optional[Tuple[int, ...]] = None
    check: Optional[str] = None
    block: Optional[int] = None
    sums: Optional[Tuple[Any, ...]] = None
    etag: Optional[str] = None


@dataclasses.dataclass(frozen=True)
class _Prefix:
    prefix: str


class _Base:
    def __init__(self, url: str, client: Optional[Client], thread_count: int, transport: str,
                 progress: bool) -> None:
        self._client_arg = client
        self.thread_count = max(1, int(thread_count))
        self.transport = transport
        self.progress = progress
        self._set_url(url)

    def _set_url(self, url: str) -> None:
        url = str(url)
        self.bucket, self.prefix = parse_url(url)
        self.url = url.rstrip("/")

    @property
    def client(self) -> Any:
        return _client(self._client_arg)

    @property
    def checkpoint_id(self) -> Any:
        return self.url

    @classmethod
    def validate_checkpoint_id(cls, checkpoint_id: str) -> Any:
        return is_url(str(checkpoint_id))

    def _key(self, name: str) -> Any:
        return join(self.prefix, name)


# torch.distributed.checkpoint (torch >= 2.2) may be absent where mypy runs: Any to it then
class WharfStorageWriter(_Base, StorageWriter):  # type: ignore[misc]
    """A DCP StorageWriter writing to url (s3://bucket/prefix). client: a wharf.Client (default:
    wharf.torch's default client, from the environment). thread_count: objects written at
    once per rank. object_size: the most bytes packed into one object. overwrite=False:
    refuse a URL that already holds a checkpoint. progress=True: a progress bar per rank.
    For dcp.async_save (torch >= 2.4) the writer is its own AsyncStager: stage() copies every
    tensor, CPU ones included, into host memory (torch's BlockingAsyncStager) on the caller's
    thread before async_save returns, so the state may change while the upload runs (DCP's
    fallback in torch 2.3 to 2.6 moves only GPU tensors and leaves CPU ones shared).
    cache_staging=True keeps those host copies for the next save of the same layout.
    grace_s: seconds the objects of the checkpoint a save replaces stay (retired) for loads
    that read the old .metadata (module doc; None: WHARF_CKPT_GRACE_S, else 60)."""

    _synchronize_after_execute = False

    def __init__(self, url: str, client: Optional[Client] = None, thread_count: int = 4,
                 object_size: int = DEFAULT_OBJECT_SIZE, overwrite: bool = True,
                 transport: str = "auto", progress: bool = False,
                 cache_staging: Any = False, grace_s: Optional[float] = None) -> None:
        _Base.__init__(self, url, client, thread_count, transport, progress)
        self.grace_s = grace_s
        _grace(grace_s)  # a bad value is refused here, not at the commit
        self.object_size = int(object_size)
        self.overwrite = overwrite
        self.cache_staging = cache_staging
        self._stager: Any = None
        self.save_id = uuid.uuid4().hex
        self.is_coordinator = False
        self.last_report: Dict[Any, Any] = {}

    def reset(self, checkpoint_id: Optional[str] = None) -> None:
        if checkpoint_id:
            self._set_url(checkpoint_id)
        self.save_id = uuid.uuid4().hex

    # AsyncStager (dcp.async_save uses the writer as its stager when it is one)
    @property
    def should_synchronize_after_execute(self) -> Any:
        return self._synchronize_after_execute

    def stage(self, state_dict: Any) -> Any:
        """A copy of state_dict whose tensors are host-memory snapshots (DTensors keep their
        placement, their local shards copied); dcp.async_save calls it before returning."""
        if self._stager is None:
            self._stager = BlockingAsyncStager(cache_staged_state_dict=self.cache_staging,
                                               type_check=False)
        return self._stager.stage(state_dict)

    def synchronize_staging(self) -> None:
        pass  # stage() copies synchronously

    def close(self) -> None:
        self._stager = None

    def set_up_storage_writer(self, is_coordinator: bool, *args: Any, **kwargs: Any) -> None:
        # A new save id for every save, also when DCP reuses this writer without reset():
        # a save must never write over objects the current .metadata points to.
        self.save_id = uuid.uuid4().hex
        self.is_coordinator = is_coordinator
        self.rank = kwargs.get("rank")
        if kwargs.get("use_collectives", True) is False:
            raise WharfError(_lib.WHARF_ERR_UNSUPPORTED, f"{self.url}: rank-local checkpoints "
                             "(use_collectives=False) are not supported by WharfStorageWriter; "
                             "save with a process group")
        self.base_etag = None  # the .metadata this save replaces (None: there was none)
        self.before = set()    # the data objects under the URL before this save wrote any
        # the objects the replaced .metadata names (None: unreadable, all of `before` count)
        # and those it lists as retired {name: unix time}
        self.base_live: Optional[Set[str]] = set()
        self.base_retired: Dict[str, float] = {}
        if is_coordinator:
            try:
                raw, self.base_etag = _get_whole(self.client, self.bucket, self._key(METADATA))
            except NotFoundError:
                pass
            else:
                self.base_live, self.base_retired = _generations(raw)
            # Taken before any rank writes (DCP runs this in its planning step, before
            # write_data, in torch 1.13 and 2.x alike): the cleanup after the commit deletes
            # only these, never the objects of a save that began later.
            self.before = self._data_objects()
        if is_coordinator and not self.overwrite and self.base_etag is not None:
            raise WharfError(_lib.WHARF_ERR_EXISTS, f"{self.url} already holds a checkpoint "
                             "and overwrite=False; choose another URL or pass overwrite=True")

    def storage_meta(self) -> Any:
        if StorageMeta is None:
            return None
        return StorageMeta(checkpoint_id=self.url, save_id=self.save_id)

    def prepare_local_plan(self, plan: Any) -> Any:
        return plan

    def prepare_global_plan(self, plans: Any) -> Any:
        sid = self.save_id[:12]
        return [dataclasses.replace(p, storage_data=_Prefix(f"__{i}_{sid}_"))
                for i, p in enumerate(plans)]

    def write_data(self, plan: Any, planner: Any) -> Any:
        fut: torch.futures.Future[Any] = torch.futures.Future()
        try:
            fut.set_result(self._write(plan, planner))
        except BaseException as e:  # noqa: B902 (DCP collects the exception from the future)
            fut.set_exception(e)
        return fut

    def _write(self, plan: Any, planner: Any) -> Any:
        c = self.client
        prefix = plan.storage_data.prefix
        sized = []
        for item in plan.items:
            if item.type == WriteItemType.BYTE_IO:
                buf = planner.resolve_data(item)
                data = buf.getvalue() if hasattr(buf, "getvalue") else bytes(buf)
                sized.append((item, len(data), data))
            else:
                td = item.tensor_data   # td.size is the whole tensor's; this item is its chunk
                n = math.prod(td.chunk.sizes) * \
                    torch.empty(0, dtype=td.properties.dtype).element_size()
                sized.append((item, n, None))
        # Objects: greedy in plan order, each item 64-byte aligned; a large item alone.
        objects: List[Any] = []
        cur: List[Any] = []
        off = 0
        for item, n, data in sized:
            start = (off + ALIGN - 1) // ALIGN * ALIGN
            if cur and start + n > self.object_size:
                objects.append(cur)
                cur, start = [], 0
            cur.append((item, start, n, data))
            off = start + n
        if cur:
            objects.append(cur)
        names = [f"{prefix}{i}{SUFFIX}" for i in range(len(objects))]
        total = sum(n for _, n, _ in sized)
        bar = Progress(total, f"dcp save {self.url}", self.progress)
        try:
            with cf.ThreadPoolExecutor(self.thread_count, thread_name_prefix="wharf-dcp-w") as ex:
                def put(a: Tuple[str, Any]) -> Any:
                    return self._put_object(c, planner, a[0], a[1], bar)
                parts = list(ex.map(put, zip(names, objects)))
        finally:
            bar.close()
        reps = [r for _, r in parts]
        staged = [r.reason for r in reps if r.staged]
        self.last_report = {"objects": len(objects), "bytes": total,
                            "transports": sorted({r.transport for r in reps}),
                            # objects PUT from GPU memory by the server itself / through host
                            "gpu_direct": sum(r.memory == "cuda" and not r.staged
                                              for r in reps),
                            "gpu_staged": len(staged),
                            "staged_reason": staged[0] if staged else None}
        return [r for rs, _ in parts for r in rs]

    def _put_object(self, c: Client, planner: Any, name: str, entries: Any, bar: Any) -> Any:
        key = self._key(name)
        length = entries[-1][1] + entries[-1][2]
        kinds: List[Tuple[Optional[str], Optional[Tuple[int, ...]]]] = []
        tensors: List[Any] = []
        for item, off, n, data in entries:
            if data is None:
                t = planner.resolve_data(item).detach()
                if _nbytes(t) != n:
                    raise WharfError(_lib.WHARF_ERR_INTERNAL, f"{self.url}: item {item.index} "
                                     f"resolved to {_nbytes(t)} bytes, its plan says {n}")
                tensors.append(t)
                kinds.append((_dtype_name(t.dtype), tuple(t.shape)))
            else:
                tensors.append(None)
                kinds.append((None, None))
        t0, n0 = tensors[0], entries[0][2]
        if len(entries) == 1 and t0 is not None and t0.is_contiguous() and n0 > 0 \
                and t0.device.type in ("cpu", "cuda") and not (t0.is_conj() or t0.is_neg()):
            flat = _bytes_of(t0)
            sums = [block_sums(flat, CHECK_BLOCK)]  # of the memory the PUT reads, where it is
            rep = c.put_from(self.bucket, key, t0, transport=self.transport)  # no copy
        else:
            devs = {t.device for t in tensors if t is not None and _nbytes(t)}
            cuda = any(d.type == "cuda" for d in devs)
            # GPU tensors of one device (with, at most, pickled items beside them) are packed
            # in GPU memory and PUT over the direct path; a host buffer otherwise
            on_dev = cuda and len(devs) == 1 and self.transport != "http" and c.rdma
            if on_dev:
                buf = torch.empty(max(1, length), dtype=torch.uint8, device=devs.pop())
            else:
                buf = torch.empty(max(1, length), dtype=torch.uint8, pin_memory=cuda)
            for (item, off, n, data), t in zip(entries, tensors):
                if n == 0:
                    continue
                if t is None:
                    buf[off:off + n] = torch.frombuffer(bytearray(data), dtype=torch.uint8)
                else:
                    dst = buf[off:off + n].view(t.dtype).view(t.shape)
                    dst.copy_(t.resolve_conj().resolve_neg() if t.is_complex() else t,
                              non_blocking=cuda)
            if cuda:
                torch.cuda.synchronize()
            sums = [block_sums(buf[off:off + n], CHECK_BLOCK) for _, off, n, _ in entries]
            rep = c.put_from(self.bucket, key, buf, 0, length, transport=self.transport,
                             cache=False)
        etag = rep.etag or None
        results = [WriteResult(index=item.index, size_in_bytes=n, storage_data=WharfStorageInfo(
            name, off, n, dt, shape, check=check, block=CHECK_BLOCK, sums=ss, etag=etag))
            for (item, off, n, _), (dt, shape), (check, ss) in zip(entries, kinds, sums)]
        bar.update(sum(e[2] for e in entries))
        return results, rep

    def finish(self, metadata: Any, results: Any) -> None:
        c = self.client
        storage = {}
        sizes: Dict[str, Any] = {}
        etags: Dict[str, Any] = {}
        for rs in results:
            for wr in rs:
                storage[wr.index] = wr.storage_data
                si = wr.storage_data
                sizes[si.key] = max(sizes.get(si.key, 0), si.offset + si.length)
                if si.etag:
                    etags[si.key] = si.etag
        metadata.storage_data = storage
        if hasattr(metadata, "storage_meta"):
            metadata.storage_meta = self.storage_meta()
        # The objects of the replaced checkpoint are retired, not deleted (module doc)
        before: Set[str] = getattr(self, "before", set())
        keep, gone = _retire(getattr(self, "base_live", set()),
                             getattr(self, "base_retired", {}), before, set(sizes),
                             _grace(getattr(self, "grace_s", None)))
        if keep:
            metadata.wharf_retired = {k: round(v, 3) for k, v in sorted(keep.items())}
        # Every data object must be there, whole, before the commit point is written.
        for name, size in sorted(sizes.items()):
            try:
                st = c.stat(self.bucket, self._key(name))
            except NotFoundError:
                raise IncompleteCheckpointError(
                    _lib.WHARF_ERR_NOT_FOUND, f"{self.url}: {name} was reported written but "
                    "is not there; not committing (save again)") from None
            got = st.length
            if etags.get(name) and st.etag and st.etag != etags[name]:
                raise IncompleteCheckpointError(
                    _lib.WHARF_ERR_PRECONDITION, f"{self.url}: {name} was replaced after its "
                    f"rank wrote it (ETag {etags[name]} then, {st.etag} now); not committing "
                    "(save again)")
            if got < size:
                raise IncompleteCheckpointError(
                    _lib.WHARF_ERR_INVALID, f"{self.url}: {name} has {got} bytes, the ranks "
                    f"wrote {size}; not committing (save again)")
        # The commit point, conditionally: only over the .metadata this save started from.
        base = getattr(self, "base_etag", None)
        try:
            c.put(self.bucket, self._key(METADATA), pickle.dumps(metadata), transport="http",
                  if_none_match=base is None, if_match=base)
        except (PreconditionFailedError, NotFoundError) as e:
            raise CheckpointConflictError(
                _lib.WHARF_ERR_PRECONDITION,
                f"{self.url}: another writer committed a checkpoint here while this save ran "
                f"(the .metadata is no longer {'absent' if base is None else base}); this "
                "save was not committed and the other checkpoint stands", e.report) from None
        # What is no longer referenced nor retired (retired past grace_s, orphans of
        # interrupted saves). Only objects listed before this save began: a save that started
        # after this commit may be writing objects of its own here.
        removed = 0
        for rel in sorted(gone):
            try:
                c.delete(self.bucket, self._key(rel))
                removed += 1
            except WharfError:
                pass  # NotFound, or a failure: an orphan for the next save to remove
        self.last_report = dict(getattr(self, "last_report", {}), retired=len(keep),
                                removed=removed)

    def _data_objects(self) -> Any:
        base = self.prefix + "/"
        return {o.key[len(base):] for o in self.client.list(self.bucket, base)
                if o.key[len(base):].startswith("__") and o.key.endswith(SUFFIX)
                and "/" not in o.key[len(base):]}


# torch.distributed.checkpoint (torch >= 2.2) may be absent where mypy runs: Any to it then
class WharfStorageReader(_Base, StorageReader):  # type: ignore[misc]
    """A DCP StorageReader reading a checkpoint WharfStorageWriter wrote at url. thread_count:
    ranged GETs in flight per rank. Refuses (IncompleteCheckpointError) a URL whose .metadata
    is missing: its save never finished. verify=True (the default) checks every byte read
    against the checksums the writer recorded (a ranged read takes in the whole checksum
    blocks around it) and raises ChecksumError naming the object, the item and the bytes
    that changed; verify=False reads unchecked. coalesce_gap: small items (under SMALL_ITEM)
    of one object at most this many bytes apart share one GET (of at most SMALL_RUN bytes;
    wharf.reader.coalesce, in offset order); 0: only adjacent ones."""

    def __init__(self, url: str, client: Optional[Client] = None, thread_count: int = 8,
                 transport: str = "auto", progress: bool = False, verify: bool = True,
                 coalesce_gap: Any = COALESCE_GAP) -> None:
        _Base.__init__(self, url, client, thread_count, transport, progress)
        self.verify = verify
        if not isinstance(coalesce_gap, int) or coalesce_gap < 0:
            raise WharfError(_lib.WHARF_ERR_INVALID, f"coalesce_gap must be an int >= 0, not "
                             f"{coalesce_gap!r}")
        self.coalesce_gap = coalesce_gap
        self.storage_data: Dict[Any, Any] = {}
        self.load_id = uuid.uuid4().hex
        self.last_report: Dict[Any, Any] = {}
        self._missing: Optional[WharfError] = None
        self.metadata_etag: Optional[str] = None  # of the .metadata being read

    def reset(self, checkpoint_id: Optional[str] = None) -> None:
        self.storage_data = {}
        if checkpoint_id:
            self._set_url(checkpoint_id)
        self.load_id = uuid.uuid4().hex

    def read_metadata(self, *args: Any, **kwargs: Any) -> Any:
        """The checkpoint's Metadata. Without a .metadata (no checkpoint, or one whose save
        never finished) it returns an empty Metadata and set_up_storage_reader raises the
        error saying so: dcp.load (torch 2.11) swallows read_metadata's exceptions while it
        looks for rank-local metadata, and would report only "metadata is None"."""
        self._missing = None
        try:
            return self._read_metadata()
        except WharfError as e:
            # Also an unreachable server (TransportError, TimedOutError) or a refused key
            # (AuthError): raised by name from set_up_storage_reader, not "metadata is None".
            self._missing = e
            return Metadata(state_dict_metadata={})

    def _read_metadata(self) -> Any:
        c = self.client
        try:
            raw, self.metadata_etag = _get_whole(c, self.bucket, self._key(METADATA))
        except NotFoundError:
            others = c.list(self.bucket, self.prefix + "/")
            if others:
                raise IncompleteCheckpointError(
                    _lib.WHARF_ERR_NOT_FOUND, f"checkpoint {self.url} is incomplete: "
                    f"{len(others)} objects exist under it but not {METADATA}, which a save "
                    "writes last (the save was interrupted); load an earlier checkpoint or "
                    "save again") from None
            raise NotFoundError(_lib.WHARF_ERR_NOT_FOUND, f"no checkpoint at {self.url}: "
                                f"{METADATA} not found") from None
        try:
            md = pickle.loads(raw)
        except Exception as e:
            raise WharfError(_lib.WHARF_ERR_PROTOCOL, f"{self.url}/{METADATA} is not a DCP "
                             f"metadata pickle ({e}); was it written by WharfStorageWriter?")
        if StorageMeta is not None and hasattr(md, "storage_meta"):
            if getattr(md, "storage_meta", None) is None:
                md.storage_meta = StorageMeta()
            md.storage_meta.load_id = self.load_id
        return md

    def set_up_storage_reader(self, metadata: Any, is_coordinator: bool, *args: Any,
                              **kwargs: Any) -> None:
        missing: Optional[WharfError] = getattr(self, "_missing", None)
        if missing is not None:
            raise missing
        self.storage_data = metadata.storage_data
        if not self.storage_data:
            raise WharfError(_lib.WHARF_ERR_PROTOCOL, f"{self.url}: the metadata has no "
                             "storage_data; it was not written by WharfStorageWriter")

    def prepare_local_plan(self, plan: Any) -> Any:
        return plan

    def prepare_global_plan(self, plans: Any) -> Any:
        return plans

    def read_data(self, plan: Any, planner: Any) -> Any:
        fut: torch.futures.Future[Any] = torch.futures.Future()
        try:
            self._read_restarting(plan, planner)
            fut.set_result(None)
        except BaseException as e:  # noqa: B902
            fut.set_exception(e)
        return fut

    def _read_restarting(self, plan: Any, planner: Any) -> None:
        """_read, begun again once on the new .metadata where the checkpoint was replaced
        while it was read (module doc, "Readers and an overwrite")."""
        first: Optional[WharfError] = None
        why = ""
        for attempt in range(1 + LOAD_RESTARTS):
            try:
                self._read(plan, planner)
            except WharfError as e:
                if isinstance(e, (IncompleteCheckpointError, CheckpointConflictError)):
                    raise
                # objects gone, short or changed under the read: a race with a save exactly
                # when .metadata moved on meanwhile (else the error is the checkpoint's own)
                try:
                    now = self.client.stat(self.bucket, self._key(METADATA)).etag
                except NotFoundError:
                    now = None
                except WharfError:
                    raise e from None  # the server gone, a refused key: the read's own error
                if now == self.metadata_etag:
                    raise
                first = first or e
                if _several_ranks():
                    why = ("; with several ranks a restart could mix checkpoints across "
                           "ranks, so none is made")
                    break
                if attempt == LOAD_RESTARTS:
                    break
                why = self._adopt(plan)
                if why:
                    break
                continue
            self.last_report["restarts"] = attempt
            return
        assert first is not None  # every pass that did not return recorded its error
        raise CheckpointChangedError(
            _lib.WHARF_ERR_PRECONDITION, f"dcp load {self.url}: the checkpoint was replaced "
            f"while it was read (a save to the same URL is racing this load: {first.message})"
            f"{why}; load again, or give the saves a longer grace_s") from first

    def _adopt(self, plan: Any) -> str:
        """Takes the storage_data of the current .metadata for the next pass over plan; ""
        when every item of plan is there with the layout it had, else why not."""
        try:
            md = self._read_metadata()
        except WharfError as e:
            return f"; its .metadata could not be read again: {e}"
        new = getattr(md, "storage_data", None) or {}
        for r in plan.items:
            old, now = self.storage_data.get(r.storage_index), new.get(r.storage_index)
            if now is None or old is None or (old.dtype, old.shape, old.length) != \
                    (now.dtype, now.shape, now.length):
                return (f"; the new checkpoint stores item "
                        f"{getattr(r.storage_index, 'fqn', r.storage_index)} otherwise, so the "
                        "load's plan does not fit it")
        self.storage_data = new
        return ""

    def _info(self, req: Any) -> Any:
        try:
            return self.storage_data[req.storage_index]
        except KeyError:
            raise WharfError(_lib.WHARF_ERR_PROTOCOL, f"{self.url}: item {req.storage_index} is "
                             "not in the checkpoint's metadata") from None

    def _read(self, plan: Any, planner: Any) -> None:
        c = self.client
        reqs = sorted(plan.items, key=lambda r: (self._info(r).key, self._info(r).offset))
        total = sum(self._info(r).length for r in reqs)
        bar = Progress(total, f"dcp load {self.url}", self.progress)
        parallel = (DefaultLoadPlanner is not None
                    and type(planner).resolve_tensor is DefaultLoadPlanner.resolve_tensor
                    and type(planner).commit_tensor is DefaultLoadPlanner.commit_tensor)
        try:
            if not parallel:  # a planner whose hooks may depend on order: one item at a time
                for r in reqs:
                    self._finish(planner, r, self._one(c, r, self._target(planner, r), bar))
                return
            targets = [self._target(planner, r) for r in reqs]
            items = [(x.key, x.offset, x.length) for x in map(self._info, reqs)]
            # Over RDMA the small items of an object share one scatter GET, gaps and all
            # (only their bytes move); else runs of near neighbours share one ranged GET.
            self._scatter = c.rdma and self.transport != "http"
            jobs = (scatter_runs(items, SMALL_ITEM, SMALL_RUN, SCATTER_WINDOWS)
                    if self._scatter else runs(items, self.coalesce_gap, SMALL_ITEM, SMALL_RUN))
            with cf.ThreadPoolExecutor(self.thread_count, thread_name_prefix="wharf-dcp-r") as ex:
                def run(ij: Any) -> Any:
                    return self._run(c, reqs, targets, ij, bar)
                outs = list(ex.map(run, jobs))
            for (i, j), out in zip(jobs, outs):
                for k in range(i, j):
                    self._finish(planner, reqs[k], out[k - i])
        finally:
            bar.close()

    @staticmethod
    def _target(planner: Any, r: Any) -> Any:
        return None if r.type == LoadItemType.BYTE_IO else planner.resolve_tensor(r).detach()

    def _finish(self, planner: Any, r: Any, out: Any) -> None:
        if r.type == LoadItemType.BYTE_IO:
            planner.load_bytes(r, io.BytesIO(out))
        else:
            planner.commit_tensor(r, out)

    def _run(self, c: Client, reqs: Any, targets: Any, ij: Any, bar: Any) -> Any:
        i, j = ij
        if j - i == 1:
            return [self._one(c, reqs[i], targets[i], bar)]
        if getattr(self, "_scatter", False):
            try:
                return self._scatter_run(c, reqs, targets, ij, bar)
            except WharfError as e:
                if e.status not in (_lib.WHARF_ERR_DECLINED, _lib.WHARF_ERR_UNSUPPORTED):
                    raise
                # a server without the scatter GET (a cluster gateway): item by item
                logger.info("dcp load %s: scatter GET refused (%s); one GET per item", self.url,
                         e.message)
                return [self._one(c, reqs[k], targets[k], bar) for k in range(i, j)]
        infos = [self._info(reqs[k]) for k in range(i, j)]
        base = min(x.offset for x in infos)
        n = max(x.offset + x.length for x in infos) - base
        buf = torch.empty(n, dtype=torch.uint8)
        etag = self._get(c, infos[0].key, buf, base, n)
        out = []
        for k in range(i, j):
            info = self._info(reqs[k])
            raw = buf[info.offset - base:info.offset - base + info.length]
            self._check(reqs[k], info, raw, 0, etag)   # every item here is whole
            out.append(self._place(reqs[k], targets[k], info, raw))
        bar.update(n)
        return out

    def _scatter_run(self, c: Client, reqs: Any, targets: Any, ij: Any, bar: Any) -> Any:
        """Items reqs[i:j] of one object by one scatter GET, packed into one buffer."""
        i, j = ij
        infos = [self._info(reqs[k]) for k in range(i, j)]
        at, pos = [], 0
        for x in infos:
            at.append(pos)
            pos += x.length
        buf = torch.empty(max(pos, 1), dtype=torch.uint8)
        rep = c.get_scatter(self.bucket, self._key(infos[0].key), buf,
                            [(x.offset, x.length, a) for x, a in zip(infos, at)],
                            transport=self.transport, cache=False)
        etag: Any = rep.etag or None
        out = []
        for k, info, a in zip(range(i, j), infos, at):
            raw = buf[a:a + info.length]
            self._check(reqs[k], info, raw, 0, etag)   # every item here is whole
            out.append(self._place(reqs[k], targets[k], info, raw))
        bar.update(pos)
        return out

    def _get(self, c: Client, name: str, dst: Any, offset: int, n: int) -> Any:
        """GETs [offset, offset + n) of name into dst; returns the object's ETag."""
        if n == 0:
            return None
        rep = c.get_into(self.bucket, self._key(name), dst, offset=offset, length=n,
                         transport=self.transport, cache=False)
        if rep.bytes != n:
            raise WharfError(_lib.WHARF_ERR_PROTOCOL, f"{self.url}/{name}: {rep.bytes} bytes "
                             f"landed of {n} at {offset}; the object is shorter than the "
                             "metadata says (overwritten by another save?)")
        return rep.etag or None

    def _checked(self, info: Any) -> Any:
        return self.verify and info.sums is not None and info.block

    def _span(self, info: Any, start: int, n: int) -> Any:
        """[start, start + n) of the item widened to whole checksum blocks (unchanged when
        the item carries no checksums or verify is off)."""
        if not self._checked(info) or n == 0:
            return start, start + n
        blk = info.block
        return start // blk * blk, min(-(-(start + n) // blk) * blk, info.length)

    def _check(self, r: Any, info: Any, flat: Any, start: int, etag: str) -> None:
        """flat (bytes, or a 1-D uint8 tensor on any device) holds the item's bytes from
        start, a block boundary, to a block boundary or the item's end: each block must
        match its checksum recorded at save."""
        if not self._checked(info):
            return
        try:
            bad = first_mismatch(info.check, info.sums, info.block, flat, start)
        except ValueError as e:
            raise WharfError(_lib.WHARF_ERR_PROTOCOL, f"{self.url}/{info.key}: {e}; the "
                             "metadata was not written by this WharfStorageWriter") from None
        if bad is not None:
            raise checksum_error(self.url, r, info, bad, etag)

    def _one(self, c: Client, r: Any, target: Any, bar: Any) -> Any:
        info = self._info(r)
        if target is None:
            buf = bytearray(info.length)
            etag = self._get(c, info.key, buf, info.offset, info.length)
            self._check(r, info, memoryview(buf), 0, etag)
            bar.update(info.length)
            return bytes(buf)
        dt = getattr(torch, info.dtype)
        shape = list(info.shape)
        offs, lens = list(r.storage_offsets), list(r.lengths)
        item = torch.empty(0, dtype=dt).element_size()
        strides = [1] * len(shape)
        for d in range(len(shape) - 2, -1, -1):
            strides[d] = strides[d + 1] * shape[d + 1]
        if tuple(target.shape) != tuple(lens):
            raise WharfError(_lib.WHARF_ERR_PROTOCOL, f"{self.url}: item {r.storage_index} "
                             f"asks for {lens}, its destination is {list(target.shape)}")
        # rows [offs[0], offs[0] + lens[0]) of the stored chunk hold the region
        if shape:
            row0, nrows = offs[0], lens[0]
            start, n = row0 * strides[0] * item, nrows * strides[0] * item
        else:
            start, n = 0, item
        inner_full = all(offs[d] == 0 and lens[d] == shape[d] for d in range(1, len(shape)))
        direct = (inner_full and target.is_contiguous() and target.dtype == dt
                  and target.device.type in ("cpu", "cuda")
                  and not (target.is_conj() or target.is_neg()))
        lo, hi = self._span(info, start, n)   # whole checksum blocks
        if direct and (lo, hi) == (start, start + n):
            etag = self._get(c, info.key, target, info.offset + start, n)
            if n:
                self._check(r, info, _bytes_of(target), start, etag)
        else:
            wide = torch.empty(hi - lo, dtype=torch.uint8)
            etag = self._get(c, info.key, wide, info.offset + lo, hi - lo)
            self._check(r, info, wide, lo, etag)
            slab = wide[start - lo:start - lo + n]
            src = slab.view(dt).view([lens[0]] + shape[1:] if shape else [])
            for d in range(1, len(shape)):
                src = src.narrow(d, offs[d], lens[d])
            target.copy_(src)
        bar.update(n)
        return target

    def _place(self, r: Any, target: Any, info: Any, raw: Any) -> Any:
        """An item that arrived inside a shared GET (raw: its bytes in host memory)."""
        if target is None:
            return raw.numpy().tobytes()
        dt = getattr(torch, info.dtype)
        src = raw.view(dt).view(list(info.shape)) if raw.numel() else \
            torch.empty(info.shape, dtype=dt)
        for d, (o, n) in enumerate(zip(r.storage_offsets, r.lengths)):
            src = src.narrow(d, o, n)
        target.copy_(src)
        return target


if BlockingAsyncStager is None:  # torch < 2.4: no stager protocol; DCP stages by itself
    for _name in ("stage", "synchronize_staging", "close", "should_synchronize_after_execute",
                  "_synchronize_after_execute"):
        delattr(WharfStorageWriter, _name)


__all__ = ["WharfStorageWriter", "WharfStorageReader", "WharfStorageInfo", "wharf_error"]
