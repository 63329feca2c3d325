# SPDX-License-Identifier: Apache-2.0
"""What every dataset of wharf.torch.data stands on: where its objects come from (a URL, a
prefix, a list of keys), the Prefetcher that fetches windows of them into a bounded set of
registered buffers, and the epochs (the permutation drawn from (seed, epoch), the split between
ranks and DataLoader workers, and the count that state_dict() records). wharf.torch.data
re-exports its public names."""
from __future__ import annotations

import collections
import concurrent.futures as cf
import json
import queue
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple, cast

import torch
from torch.utils.data import get_worker_info

from .. import _lib
from ..client import Client
from ..config import is_url
from ..errors import WharfError


# untyped in torch 1.13: the DataLoader worker's info (None in the main process)
_worker_info: Callable[[], Any] = get_worker_info


DEFAULT_BUFFER_BYTES = 256 * 1024 ** 2


# bucket None: the Prefetcher's own bucket
Window = collections.namedtuple("Window", "key offset nbytes info bucket", defaults=(None,))


def _rank_world(rank: Optional[int], world_size: Optional[int]) -> Tuple[int, int]:
    dist = torch.distributed
    if rank is None and world_size is None and dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    rank = 0 if rank is None else int(rank)
    world_size = 1 if world_size is None else int(world_size)
    if world_size < 1 or not 0 <= rank < world_size:
        raise WharfError(_lib.WHARF_ERR_INVALID,
                         f"rank {rank} is not in [0, world_size {world_size})")
    return rank, world_size


def _default_client(client: Optional[Client]) -> Client:
    from ._common import _client
    return _client(client)


def _source(source: Any, bucket: Optional[str], keys: Any, prefix: Optional[str],
            client: Optional[Client], suffix: str) -> Tuple[Client, str, Any, Optional[str]]:
    """(client, bucket, keys, prefix) from either call form."""
    if is_url(source):
        if bucket is not None:
            raise WharfError(_lib.WHARF_ERR_INVALID, f"{source}: pass an s3:// URL or (client, "
                             "bucket), not both (the URL names the bucket)")
        b, _, rest = source.split("://", 1)[1].partition("/")
        if not b:
            raise WharfError(_lib.WHARF_ERR_INVALID, f"bad URL {source!r}: no bucket after s3://")
        c = _default_client(client)
        if keys is None and prefix is None:
            if rest.endswith(suffix):
                keys = [rest]
            else:
                prefix = rest
        return c, b, keys, prefix
    if client is not None:
        raise WharfError(_lib.WHARF_ERR_INVALID, "client= goes with an s3:// URL; in the "
                         "(client, bucket) form the client is the first argument")
    if bucket is None:
        raise WharfError(_lib.WHARF_ERR_INVALID, f"expected an s3://bucket/prefix URL or "
                         f"(client, bucket), not {source!r}")
    return source, bucket, keys, prefix


def _keys(client: Client, bucket: str, keys: Any, prefix: Optional[str], suffix: str) -> List[str]:
    if keys is not None:
        if isinstance(keys, str):
            raise WharfError(_lib.WHARF_ERR_INVALID, "keys must be a list of keys, not a str")
        out = sorted(keys)
    elif prefix is not None:
        out = sorted(o.key for o in client.list(bucket, prefix) if o.key.endswith(suffix))
    else:
        raise WharfError(_lib.WHARF_ERR_INVALID, "pass keys=[...] or prefix=")
    if not out:
        raise WharfError(_lib.WHARF_ERR_NOT_FOUND, f"no {suffix} objects in {bucket} under "
                         f"{prefix!r}" if keys is None else "keys is empty")
    return out


def _meta(client: Client, bucket: str, key: str) -> Any:
    try:
        return json.loads(client.get(bucket, key, transport="http"))
    except ValueError as e:
        raise WharfError(_lib.WHARF_ERR_INVALID, f"s3://{bucket}/{key} is not valid JSON: {e}")


def _need(meta: Any, key: str, fields: Any) -> None:
    for f in fields:
        if f not in meta:
            raise WharfError(_lib.WHARF_ERR_INVALID, f"{key}: field {f!r} is missing")


class Prefetcher:
    """Fetches windows (each from its own bucket, or from `bucket`) in order into num_buffers
    buffers of buffer_bytes (registered once when the client has RDMA), with `workers` fetch
    threads; yields (window, uint8 view). A view is valid until the next item is requested.
    stats: fetch_wait_s, bytes, windows, transports, fetch_s, memory ("host", "cuda:0
    (direct)" or "cuda:0 (through host memory)") and staged_reason.

    device="cuda[:i]": the buffers are in GPU memory and the views yielded are GPU tensors.
    Over RDMA they are registered and the server writes into them itself (cuda+ipc); where
    that cannot be (HTTP, no direct path) each buffer gets a page-locked host twin that the
    fetch lands in and copies to the GPU, and stats say so and why."""

    def __init__(self, client: Client, bucket: Optional[str], windows: Any, num_buffers: int = 2,
                 buffer_bytes: Optional[int] = None, workers: Any = 2, transport: str = "auto",
                 pin_memory: bool = False, device: Any = None) -> None:
        if num_buffers < 1 or workers < 1:
            raise WharfError(_lib.WHARF_ERR_INVALID, "num_buffers and workers must be >= 1")
        self.client, self.bucket, self.windows = client, bucket, list(windows)
        self.num_buffers = min(num_buffers, max(1, len(self.windows)))
        need = max((w.nbytes for w in self.windows), default=0)
        self.buffer_bytes = need if buffer_bytes is None else buffer_bytes
        if need > self.buffer_bytes:
            raise WharfError(_lib.WHARF_ERR_TOO_LARGE, f"a window of {need} bytes does not fit "
                             f"buffers of {self.buffer_bytes}")
        self.workers, self.transport, self.pin_memory = workers, transport, pin_memory
        self.device = torch.device(device) if device is not None else torch.device("cpu")
        if self.device.type not in ("cpu", "cuda"):
            raise WharfError(_lib.WHARF_ERR_INVALID, f"device must be cpu or cuda, not "
                             f"{self.device}")
        if self.device.type == "cuda" and not torch.cuda.is_available():
            raise WharfError(_lib.WHARF_ERR_UNSUPPORTED, f"device {self.device}: this torch "
                             "has no CUDA device (torch.cuda.is_available() is False)")
        if self.device.type == "cuda" and self.device.index is None:
            self.device = torch.device("cuda", torch.cuda.current_device())
        self.stats: Dict[str, Any] = dict(
            fetch_wait_s=0.0, bytes=0, windows=0, transports=set(), fetch_s=0.0,
            buffers=self.num_buffers, memory="host", staged_reason=None)

    def __iter__(self) -> Iterator[Any]:
        if not self.windows:
            return
        c = self.client
        n = max(1, self.buffer_bytes)
        dev = self.device.type == "cuda"
        rdma = c.rdma and self.transport != "http"
        bufs = [torch.empty(n, dtype=torch.uint8, device=self.device) if dev else
                torch.empty(n, dtype=torch.uint8, pin_memory=self.pin_memory)
                for _ in range(self.num_buffers)]
        regs = []
        free: "queue.SimpleQueue[Any]" = queue.SimpleQueue()  # indexes of bufs (and of lands)
        for i in range(len(bufs)):
            free.put(i)
        pending: "collections.deque[Any]" = collections.deque()
        ex = cf.ThreadPoolExecutor(min(self.workers, self.num_buffers),
                                   thread_name_prefix="wharf-prefetch")
        try:
            why = None
            if dev and rdma:
                try:
                    for b in bufs:
                        regs.append(c.register(b))
                except WharfError as e:
                    for r in regs:
                        r.close()
                    regs, why = [], f"GPU memory cannot be registered here: {e.message}"
            elif dev:
                why = ("HTTP cannot land bytes in GPU memory" if self.transport == "http" else
                       f"the client has no RDMA provider ({c.provider or 'none'})")
            # where the fetch lands: the buffer itself, or its page-locked host twin
            lands = ([torch.empty(n, dtype=torch.uint8, pin_memory=True) for _ in bufs]
                     if why else bufs)
            if rdma and not regs:
                regs = [c.register(b) for b in lands]
            if dev:
                how = "through host memory" if why else "direct"
                self.stats["memory"] = f"{self.device} ({how})"
                self.stats["staged_reason"] = why

            def fetch(w: Any) -> Any:
                i = free.get()
                b, land = bufs[i], lands[i]
                # a window without a bucket of its own belongs to the prefetcher's
                bucket = cast(str, w.bucket or self.bucket)
                if w.nbytes == 0:  # an empty object: nothing to GET
                    return i, None, 0.0
                t = time.perf_counter()
                try:
                    r = c.get_into(bucket, w.key, land[:w.nbytes], offset=w.offset,
                                   length=w.nbytes, transport=self.transport, cache=False)
                    if land is not b:
                        b[:w.nbytes].copy_(land[:w.nbytes])  # synchronous: the twin is reused
                except BaseException:
                    free.put(i)
                    raise
                if r.bytes != w.nbytes:
                    free.put(i)
                    raise WharfError(_lib.WHARF_ERR_PROTOCOL, f"s3://{bucket}/{w.key}: "
                                     f"{r.bytes} bytes landed of {w.nbytes}")
                return i, r, time.perf_counter() - t

            nxt = 0
            while nxt < len(self.windows) and len(pending) < self.num_buffers:
                pending.append((self.windows[nxt], ex.submit(fetch, self.windows[nxt])))
                nxt += 1
            while pending:
                w, fut = pending.popleft()
                t = time.perf_counter()
                i, got, dt = fut.result()
                self.stats["fetch_wait_s"] += time.perf_counter() - t
                self.stats["windows"] += 1
                if got is not None:
                    self.stats["bytes"] += got.bytes
                    self.stats["fetch_s"] += dt
                    self.stats["transports"].add(got.transport)
                try:
                    yield w, bufs[i][:w.nbytes]
                finally:
                    # Copies out of a GPU buffer (the items' clones, a caller's .to()) are
                    # queued on the caller's stream, and the next GET writes the buffer from
                    # outside it (the server, over CUDA IPC): they must have run first.
                    if self.device is not None and self.device.type == "cuda":
                        stream: Any = torch.cuda.current_stream(self.device)  # untyped in 1.13
                        stream.synchronize()
                    free.put(i)
                if nxt < len(self.windows):
                    pending.append((self.windows[nxt], ex.submit(fetch, self.windows[nxt])))
                    nxt += 1
        finally:
            for _, fut in pending:
                fut.cancel()
            ex.shutdown(wait=True)
            for r in regs:
                r.close()


def _mix(seed: int, epoch: int, salt: int) -> Any:
    """One 63-bit generator seed from (seed, epoch, salt): the same in every process."""
    m = (1 << 64) - 1
    x = (int(seed) * 0x9E3779B97F4A7C15 + int(epoch) * 0xBF58476D1CE4E5B9 + int(salt)) & m
    x = ((x ^ (x >> 31)) * 0x94D049BB133111EB) & m
    return (x ^ (x >> 29)) & ((1 << 63) - 1)


class _Epochs:
    """shuffle/seed, set_epoch, and the Stateful protocol (state_dict / load_state_dict) that
    torchdata's StatefulDataLoader calls in each worker. The state is the number of items
    this process has yielded in the epoch (after rank and worker sharding), with the epoch,
    the seed and where it was taken (rank, world size, worker, workers); a resumed iterator
    skips that many items without fetching them, and refuses to resume elsewhere. An
    iterator that reaches the end of the epoch resets the count (as torchdata's examples do):
    the next iterator, or one resumed from that state, starts the epoch again; set_epoch
    moves on."""

    rank: int
    world_size: int

    _STATE_KEYS = ("epoch", "seed", "shuffle", "served", "layout")

    def _init_epochs(self, shuffle: bool, seed: int) -> None:
        self.shuffle, self.seed, self.epoch = bool(shuffle), int(seed), 0
        self._resume, self._served = 0, 0
        self._layout: Optional[List[Any]] = None

    def set_epoch(self, epoch: int) -> None:
        """The epoch the next iterator reads: with shuffle, the permutation drawn from
        (seed, epoch). Drops a resume point set by load_state_dict."""
        self.epoch = int(epoch)
        self._resume = self._served = 0
        self._layout = None

    def _perm(self, n: int, salt: int = 0) -> Any:
        if not self.shuffle or n < 2:
            return list(range(n))
        g = torch.Generator()
        g.manual_seed(_mix(self.seed, self.epoch, salt))
        return torch.randperm(n, generator=g).tolist()

    def _where(self) -> Any:
        wi = _worker_info()
        return [self.rank, self.world_size, wi.id if wi else 0, wi.num_workers if wi else 1]

    def state_dict(self) -> Any:
        return {"epoch": self.epoch, "seed": self.seed, "shuffle": self.shuffle,
                "served": self._served, "layout": self._layout or self._where()}

    def load_state_dict(self, state: Any) -> None:
        miss = [k for k in self._STATE_KEYS if k not in state]
        if miss:
            raise WharfError(_lib.WHARF_ERR_INVALID, f"dataset state lacks {miss}: not a "
                             f"state_dict() of {type(self).__name__}")
        self.epoch, self.seed = int(state["epoch"]), int(state["seed"])
        self.shuffle = bool(state["shuffle"])
        self._resume = self._served = int(state["served"])
        self._layout = list(state["layout"])

    def _begin(self) -> Any:
        """Items this iterator skips (a resume point), checked against where it runs."""
        skip, here = self._resume, self._where()
        if skip and self._layout is not None and self._layout != here:
            raise WharfError(_lib.WHARF_ERR_INVALID, f"{type(self).__name__}: the state was "
                             f"saved at [rank, world_size, worker, num_workers] {self._layout} "
                             f"and this iterator runs at {here}; resume with the same ranks "
                             "and DataLoader workers (the skipped items depend on them)")
        self._resume, self._layout, self._served = 0, None, skip
        return skip
