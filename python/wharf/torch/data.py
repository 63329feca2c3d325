# SPDX-License-Identifier: Apache-2.0
"""Datasets over wharf objects, each fed by a prefetcher that fetches windows of objects into a
bounded set of registered buffers.

- ObjectMapDataset / ObjectIterableDataset: any prefix or list of objects, one item per object
  (from_prefix, from_objects; transform= maps each WharfObject to what the dataset yields).
- TokenDataset, RawImageShards, JpegTarShards: the three fixed layouts (docs/pytorch.md,
  "Dataset layouts"); TokenShardWriter and RawImageShardWriter write the first two.

Each dataset takes an s3:// URL, TokenDataset("s3://bucket/tokens/", client=c, ...) (a prefix,
or one object's key; without client= the default client of wharf.torch), or the older form
TokenDataset(c, "bucket", prefix="tokens/") / (c, "bucket", keys=[...]).

Sharding: the iterable datasets split their items between torch.distributed ranks (rank r of W
takes every W-th), then between DataLoader workers (worker w of N every N-th window). The
layouts split shards between ranks (rank r reads sorted(shards)[r::W]); the object datasets
split objects. shuffle=True with seed: the order is a permutation drawn from (seed, epoch),
the same in every process, so ranks stay disjoint; set_epoch(e) draws another. state_dict() /
load_state_dict() (the Stateful protocol torchdata's StatefulDataLoader calls, in each worker)
record how many items this process has yielded in the epoch, and a resumed iterator skips them
without fetching them.

Every dataset works in DataLoader workers (fork): the client made in the parent is used in
the child (libwharf re-initialises itself there), and the buffers and fetch threads are created
inside each worker's iterator.

Items are copies by default. With copy=False (and no shuffle) they are zero-copy views of a
prefetch buffer and stay valid only until the iterator moves to the next window (num_buffers
windows are in flight or held at once).
"""
from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import os
from typing import Any, Iterator, List, Optional, Tuple

import numpy as np
import torch
from torch.utils.data import Dataset, IterableDataset

from .. import _lib
from ..client import Client
from ..config import is_url, parse_url
from ..errors import NotFoundError, WharfError
from ..reader import DEFAULT_BUFFER_SIZE as _READ_BUFFER, READERS, ObjectReader
# The prefetcher and epochs every dataset stands on (_stream.py) and the layouts' writers
# (_writers.py): their public names are this module's.
from ._stream import (DEFAULT_BUFFER_BYTES as DEFAULT_BUFFER_BYTES, Window as Window,
                      Prefetcher as Prefetcher)
from ._stream import (_Epochs, _default_client, _keys, _meta, _need, _rank_world, _source,
                      _worker_info)
from ._writers import (TokenShardWriter as TokenShardWriter,
                       RawImageShardWriter as RawImageShardWriter,
                       write_token_shards as write_token_shards,
                       write_raw_image_shards as write_raw_image_shards)


# --- epochs, shuffling and resumable state, shared by the iterable datasets -----------------


# --- any objects: one item per object ---------------------------------------------------------

@dataclasses.dataclass
class WharfObject:
    """An object as a dataset item: where it is, its size and its bytes."""
    bucket: str
    key: str
    size: int
    data: bytes

    @property
    def url(self) -> Any:
        return f"s3://{self.bucket}/{self.key}"


def _split_url(url: str) -> Any:
    """(bucket, raw prefix) of s3://bucket/prefix, the prefix as given (a trailing / kept)."""
    bucket, _ = parse_url(url, need_key=False)
    return bucket, url.split("://", 1)[1].partition("/")[2]


def _from_prefix(client: Client, url: str) -> Any:
    bucket, prefix = _split_url(url)
    out = [(bucket, o.key, o.length) for o in client.list(bucket, prefix or None)
           if not o.key.endswith("/")]
    if not out:
        raise NotFoundError(_lib.WHARF_ERR_NOT_FOUND, f"no objects under {url}")
    return out


def _from_objects(client: Client, objects: Any, bucket: Optional[str]) -> Any:
    """[(bucket, key, size)] of s3:// URLs, or of keys in bucket; sizes from HEADs."""
    if isinstance(objects, str):
        raise WharfError(_lib.WHARF_ERR_INVALID, "objects must be a list of s3:// URLs or "
                         "keys, not a str")
    named = []
    for o in objects:
        if is_url(o):
            named.append(parse_url(o))
        elif isinstance(o, str) and bucket:
            named.append((bucket, o))
        else:
            raise WharfError(_lib.WHARF_ERR_INVALID, f"{o!r} is not an s3:// URL (a bare key "
                             "needs bucket=)")
    if not named:
        raise WharfError(_lib.WHARF_ERR_INVALID, "objects is empty")
    with cf.ThreadPoolExecutor(min(8, len(named)), thread_name_prefix="wharf-stat") as ex:
        sizes = list(ex.map(lambda bk: client.stat(*bk).length, named))
    return [(b, k, n) for (b, k), n in zip(named, sizes)]


class _Objects:
    """from_prefix / from_objects for the object datasets."""

    client: Client
    transform: Any
    transport: str
    reader: Optional[str]
    read_buffer: int

    @classmethod
    def from_prefix(cls: Any, url: str, client: Optional[Client] = None, transform: Any = None,
                    **kw: Any) -> Any:
        """Every object under s3://bucket/prefix (listing order: by key). A prefix is matched
        as given: s3://b/img/ takes img/..., s3://b/img also img2/..."""
        c = _default_client(client)
        return cls(_from_prefix(c, url), client=c, transform=transform, **kw)

    @classmethod
    def from_objects(cls: Any, objects: Any, client: Optional[Client] = None,
                     bucket: Optional[str] = None, transform: Any = None, **kw: Any) -> Any:
        """The objects named, in that order: s3:// URLs (any buckets), or keys with bucket=."""
        c = _default_client(client)
        return cls(_from_objects(c, objects, bucket), client=c, transform=transform, **kw)

    def _item(self, b: Any, k: Any, n: int, data: Any) -> Any:
        o = WharfObject(b, k, n, data)
        return self.transform(o) if self.transform is not None else o

    def _lazy(self, b: Any, k: Any, n: int) -> Any:
        """reader= set: transform(an ObjectReader over the object), closed after it; without
        transform the open reader itself (the caller closes it)."""
        assert self.reader is not None  # _lazy serves datasets with reader= only
        r = ObjectReader(self.client, b, k, n, self.reader, self.read_buffer, self.transport)
        if self.transform is None:
            return r
        with r:
            return self.transform(r)


def _reader_arg(reader: Any) -> Any:
    if reader is not None and reader not in READERS:
        raise WharfError(_lib.WHARF_ERR_INVALID, f"reader must be None (the whole object as "
                         f"bytes, fetched ahead) or one of {READERS}, not {reader!r}")
    return reader


class ObjectMapDataset(_Objects, Dataset[Any]):
    """A map-style dataset, one item per object: ds[i] GETs object i and returns
    transform(WharfObject) (the WharfObject itself without transform). len() is the number of
    objects. Ranks and workers split it through the DataLoader's sampler (DistributedSampler
    for ranks), as for any map-style dataset. Build with from_prefix or from_objects.
    reader="sequential", "range" or "whole" (wharf.reader): transform gets a lazy file-like
    ObjectReader instead of the bytes, so a sample that reads a header and one slice fetches
    only those (read_buffer: the sequential reader's read-ahead)."""

    def __init__(self, objects: Any, client: Optional[Client] = None, transform: Any = None,
                 transport: str = "auto", reader: Any = None,
                 read_buffer: Any = _READ_BUFFER) -> None:
        self.client = _default_client(client)
        self.objects, self.transform, self.transport = list(objects), transform, transport
        self.reader, self.read_buffer = _reader_arg(reader), read_buffer

    def __len__(self) -> Any:
        return len(self.objects)

    def __getitem__(self, i: int) -> Any:
        b, k, n = self.objects[i]
        if self.reader is not None:
            return self._lazy(b, k, n)
        data = self.client.get(b, k, length=n, transport=self.transport) if n else b""
        if len(data) != n:
            raise WharfError(_lib.WHARF_ERR_PROTOCOL, f"s3://{b}/{k}: {len(data)} bytes read, "
                             f"the listing said {n} (changed since?)")
        return self._item(b, k, n, data)


class ObjectIterableDataset(_Objects, _Epochs, IterableDataset[Any]):
    """An iterable dataset, one item per object: transform(WharfObject) for each object of
    this rank (every world_size-th of the epoch's order) and DataLoader worker (every
    num_workers-th of those; even="pad" (default), "drop" or False as for the layouts, so
    every rank has as many), fetched ahead into num_buffers buffers (of the largest object's
    size unless buffer_bytes says) by fetch_workers threads (default: the CPU count, 2 to 8). shuffle=True: the order is a
    permutation of (seed, epoch), set_epoch changes it. len() is this rank's object count.
    state_dict/load_state_dict resume mid-epoch. Build with from_prefix or from_objects.
    reader="sequential", "range" or "whole": no fetch ahead; transform gets a lazy file-like
    ObjectReader (wharf.reader) per object and reads what it needs."""

    def __init__(self, objects: Any, client: Optional[Client] = None, transform: Any = None,
                 rank: Any = None, world_size: Optional[int] = None, shuffle: bool = False,
                 seed: int = 0, num_buffers: int = 8, buffer_bytes: Optional[int] = None,
                 fetch_workers: Optional[int] = None, transport: str = "auto", even: Any = "pad",
                 reader: Any = None, read_buffer: Any = _READ_BUFFER) -> None:
        self.client = _default_client(client)
        self.objects, self.transform = list(objects), transform
        self.reader, self.read_buffer = _reader_arg(reader), read_buffer
        self.rank, self.world_size = _rank_world(rank, world_size)
        self.even = _even(even)
        self.num_buffers, self.buffer_bytes = num_buffers, buffer_bytes
        # objects are often small: several GETs in flight, sized from the host
        self.fetch_workers = fetch_workers or max(2, min(8, os.cpu_count() or 2))
        self.transport = transport
        self.last_stats: Any = None
        big = [(b, k, n) for b, k, n in self.objects if buffer_bytes is not None
               and n > buffer_bytes]
        if big:
            raise WharfError(_lib.WHARF_ERR_TOO_LARGE, f"s3://{big[0][0]}/{big[0][1]} has "
                             f"{big[0][2]} bytes, more than buffer_bytes {buffer_bytes}")
        self._init_epochs(shuffle, seed)

    def _mine(self) -> Any:
        """This rank's object indexes of the epoch: every world_size-th of the epoch's order,
        padded (even="pad": the order repeated from its start, as DistributedSampler) or cut
        (even="drop") so that every rank has as many."""
        order, W = self._perm(len(self.objects)), self.world_size
        n = len(order)
        if self.even == "pad" and n:
            per = -(-n // W)
            order = (order * (-(-per * W // n)))[:per * W]
        elif self.even == "drop":
            order = order[:n // W * W]
        return order[self.rank::W]

    def __len__(self) -> Any:
        return len(self._mine())

    def __iter__(self) -> Iterator[Any]:
        skip = self._begin()
        mine = self._mine()
        wi = _worker_info()
        if wi is not None and wi.num_workers > 1:
            mine = mine[wi.id::wi.num_workers]
        if self.reader is not None:
            for i in mine[skip:]:
                item = self._lazy(*self.objects[i])
                self._served += 1
                yield item
            self._served = 0
            return
        wins = [Window(self.objects[i][1], 0, self.objects[i][2], i, self.objects[i][0])
                for i in mine[skip:]]
        p = Prefetcher(self.client, None, wins, self.num_buffers, self.buffer_bytes,
                       self.fetch_workers, self.transport)
        self.last_stats = p.stats
        for w, buf in p:
            data = buf.numpy().tobytes()
            self._served += 1
            yield self._item(w.bucket, w.key, w.nbytes, data)
        self._served = 0  # the epoch is done: a next iterator starts it again


# --- the fixed layouts ------------------------------------------------------------------------

EVEN_MODES = ("pad", "drop", False)


def _even(even: Any) -> Any:
    if even is True:
        return "pad"
    if even not in EVEN_MODES:
        raise WharfError(_lib.WHARF_ERR_INVALID, f'even must be "pad", "drop" or False, not '
                         f"{even!r}")
    return even


class _Base(_Epochs, IterableDataset[Any]):
    """The fixed layouts. An epoch is one global stream of rows (sequences, samples): every
    shard's windows in order (shuffle: windows in a permutation of (seed, epoch), the rows of
    each in one too), repeat times. Rank r of W takes its share of that stream, the same
    number of rows on every rank (even="pad", the default: ceil(rows / W), the shortfall
    repeated from the stream's start, as torch's DistributedSampler pads; "drop": floor(rows
    / W), the tail dropped; False: rows split as evenly as they go, ranks differing by one),
    whatever the number of shards (fewer shards than ranks included). The rank's rows are cut
    into batches of batch_size, which may span shards; drop_last drops only the last partial
    batch of the rank's stream. DataLoader workers take contiguous runs of the rank's
    batches. Each worker fetches only the rows its batches hold."""
    pin_memory = False  # page-locked prefetch buffers: faster copies to a GPU
    device: Any = None  # "cuda": items are GPU tensors, fetched into GPU memory (Prefetcher)
    repeat = 1
    batch_size: Optional[int] = None
    drop_last: bool = False

    def __init__(self, client: Client, bucket: str, num_buffers: int, buffer_bytes: int,
                 fetch_workers: int, transport: str, copy: bool, rank: Optional[int],
                 world_size: Optional[int], shuffle: bool = False, seed: int = 0,
                 even: Any = "pad") -> None:
        self.client, self.bucket = client, bucket
        self.num_buffers, self.buffer_bytes = num_buffers, buffer_bytes
        self.fetch_workers, self.transport, self.copy = fetch_workers, transport, copy
        self.rank, self.world_size = _rank_world(rank, world_size)
        self.even = _even(even)
        self.last_stats: Any = None
        self._init_epochs(shuffle, seed)

    def _prefetch(self, windows: Any) -> Any:
        p = Prefetcher(self.client, self.bucket, windows, self.num_buffers, self.buffer_bytes,
                       self.fetch_workers, self.transport, self.pin_memory, self.device)
        self.last_stats = p.stats
        return p

    # A layout says how many rows a window holds (_rows), the sub-window of rows [lo, hi)
    # (_sub), and makes an item of parts [(sub-window, its buffer, row indexes in it)].
    windows: List[Window]

    def _rows(self, w: Any) -> int:
        raise NotImplementedError

    def _sub(self, w: Any, lo: int, hi: int) -> Window:
        raise NotImplementedError

    def _part(self, sw: Any, buf: Any, rows: Any, own: bool) -> Any:
        raise NotImplementedError

    def _item(self, parts: List[Any]) -> Any:
        raise NotImplementedError

    def _share(self) -> Any:
        """(first stream position, rows) of this rank, of total rows in the epoch."""
        total = sum(self._rows(w) for w in self.windows) * int(self.repeat)
        W, r = self.world_size, self.rank
        if self.even == "pad":
            per = -(-total // W)
            return r * per, per, total
        if self.even == "drop":
            per = total // W
            return r * per, per, total
        return r * total // W, (r + 1) * total // W - r * total // W, total

    def __len__(self) -> Any:
        """Items (batches) this rank yields in an epoch (shared between its DataLoader
        workers): the same on every rank unless even=False."""
        _, per, _ = self._share()
        bs = self.batch_size or 1
        return per // bs + (1 if per % bs and not self.drop_last else 0)

    def _batches(self) -> Any:
        """This rank's items of the epoch: each a list of (window index, row indexes)."""
        first, per, total = self._share()
        if not total or not per:
            return []
        n = len(self.windows)
        stream = []  # (window index, rows, row order or None)
        for r in range(int(self.repeat)):
            for i in self._perm(n, salt=-1 - r):
                nr = self._rows(self.windows[i])
                order = (np.asarray(self._perm(nr, r * n + i + 1), dtype=np.int64)
                         if self.shuffle else None)
                if nr:
                    stream.append((i, nr, order))
        mine, pos, left = [], first % total, per
        k = 0
        while pos >= stream[k][1]:
            pos -= stream[k][1]
            k += 1
        while left:
            i, nr, order = stream[k]
            take = min(left, nr - pos)
            rows = (order[pos:pos + take] if order is not None
                    else np.arange(pos, pos + take, dtype=np.int64))
            mine.append((i, rows))
            left -= take
            pos, k = 0, (k + 1) % len(stream)
        bs = self.batch_size or 1
        out, cur, cn = [], [], 0
        for i, rows in mine:
            while len(rows):
                t = min(bs - cn, len(rows))
                cur.append((i, rows[:t]))
                rows, cn = rows[t:], cn + t
                if cn == bs:
                    out.append(cur)
                    cur, cn = [], 0
        if cur and not self.drop_last:
            out.append(cur)
        return out

    def __iter__(self) -> Iterator[Any]:
        skip = self._begin()
        batches = self._batches()
        wi = _worker_info()
        if wi is not None and wi.num_workers > 1:
            nb = len(batches)
            batches = batches[wi.id * nb // wi.num_workers:(wi.id + 1) * nb // wi.num_workers]
        batches = batches[skip:]
        # the fetches: consecutive parts of one window share one while they fit a buffer
        fetches: List[Tuple[int, int, int]] = []
        plan: List[List[Tuple[int, Any]]] = []
        for b in batches:
            parts = []
            for i, rows in b:
                lo, hi = int(rows.min()), int(rows.max()) + 1
                if fetches:
                    fi, flo, fhi = fetches[-1]
                    if fi == i and lo >= flo and self._fits(self.windows[i], flo,
                                                            max(fhi, hi)):
                        fetches[-1] = (fi, flo, max(fhi, hi))
                        parts.append((len(fetches) - 1, rows))
                        continue
                fetches.append((i, lo, hi))
                parts.append((len(fetches) - 1, rows))
            plan.append(parts)
        subs = [self._sub(self.windows[i], lo, hi) for i, lo, hi in fetches]
        it = iter(self._prefetch(subs))
        at, buf = -1, None
        for parts in plan:
            got = []
            for k, rows in parts:
                while at < k:  # a batch over two fetches: its parts so far are copies
                    _, buf = next(it)
                    at += 1
                got.append(self._part(subs[k], buf, rows - fetches[k][1], len(parts) > 1))
            self._served += 1
            yield self._item(got)
        self._served = 0  # the epoch is done: a next iterator starts it again

    def _fits(self, w: Any, lo: int, hi: int) -> Any:
        return self._sub(w, lo, hi).nbytes <= self.buffer_bytes

    def _take(self, t: Any, rows: Any, own: bool = False) -> Any:
        """Rows of t: a view (or, with copy or own, its copy) when they are adjacent and in
        order, else a gathered copy."""
        n = len(rows)
        if n and int(rows[-1]) - int(rows[0]) == n - 1 and (n < 2 or bool(
                (np.diff(rows) == 1).all())):
            v = t[int(rows[0]):int(rows[0]) + n]
            return v.clone() if self.copy or own else v
        return t[torch.as_tensor(rows, device=t.device)]


class TokenDataset(_Base):
    """Sequences of seq_len int32 tokens (or batches [batch_size, seq_len] when batch_size is
    set) from token shards. seq_len defaults to the shards' own; another value re-cuts the
    token stream of each shard (a tail shorter than seq_len is dropped). Ranks split the
    sequences of all shards evenly (even=, _Base); drop_last drops the last partial batch of
    the rank's stream. shuffle=True: windows, and the sequences inside each, in a permutation
    of (seed, epoch); len(): items of this rank per epoch."""

    def __init__(self, source: Any, bucket: Optional[str] = None, keys: Any = None,
                 prefix: Optional[str] = None, seq_len: Optional[int] = None,
                 batch_size: Optional[int] = None, rank: Any = None,
                 world_size: Optional[int] = None, num_buffers: int = 2,
                 buffer_bytes: int = DEFAULT_BUFFER_BYTES, fetch_workers: int = 2,
                 transport: str = "auto", copy: bool = True, drop_last: bool = True,
                 repeat: int = 1, client: Optional[Client] = None, device: Any = None,
                 shuffle: bool = False, seed: int = 0, even: Any = "pad") -> None:
        client, bucket, keys, prefix = _source(source, bucket, keys, prefix, client, ".bin")
        super().__init__(client, bucket, num_buffers, buffer_bytes, fetch_workers, transport,
                         copy, rank, world_size, shuffle, seed, even)
        self.device = device
        self.keys = _keys(client, bucket, keys, prefix, ".bin")
        self.batch_size, self.drop_last, self.repeat = batch_size, drop_last, repeat
        self.shards = []
        for k in self.keys:
            jk = k[:-4] + ".json"
            m = _meta(client, bucket, jk)
            _need(m, jk, ("sequences", "seq_len"))
            if m.get("dtype", "int32") != "int32" or m.get("bytes_per_token", 4) != 4:
                raise WharfError(_lib.WHARF_ERR_INVALID, f"{jk}: dtype {m.get('dtype')} is not "
                                 "int32 (4 bytes per token)")
            self.shards.append((k, int(m["sequences"]) * int(m["seq_len"]) * 4, m))
        self.seq_len = int(seq_len or (self.shards[0][2]["seq_len"] if self.shards else 0))
        if self.seq_len <= 0:
            raise WharfError(_lib.WHARF_ERR_INVALID, "seq_len must be positive")
        unit = self.seq_len * 4 * (batch_size or 1)
        if unit > buffer_bytes:
            raise WharfError(_lib.WHARF_ERR_TOO_LARGE, f"one item is {unit} bytes, more than "
                             f"buffer_bytes {buffer_bytes}")
        per = buffer_bytes // unit * unit
        self.windows = []
        for k, nbytes, _ in self.shards:
            usable = nbytes // (self.seq_len * 4) * self.seq_len * 4
            off = 0
            while off < usable:
                n = min(per, usable - off)
                self.windows.append(Window(k, off, n, None))
                off += n
        self.num_sequences = sum(w.nbytes for w in self.windows) // (self.seq_len * 4)

    def _rows(self, w: Any) -> Any:
        return w.nbytes // (self.seq_len * 4)

    def _sub(self, w: Any, lo: int, hi: int) -> Any:
        rb = self.seq_len * 4
        return Window(w.key, w.offset + lo * rb, (hi - lo) * rb, None)

    def _part(self, sw: Any, buf: Any, rows: Any, own: bool) -> Any:
        return self._take(buf.view(torch.int32).view(-1, self.seq_len), rows, own)

    def _item(self, parts: Any) -> Any:
        b = parts[0] if len(parts) == 1 else torch.cat(parts)
        return b[0] if self.batch_size is None else b


class RawImageShards(_Base):
    """(image uint8 [H, W, C], label) from raw NHWC shards; with batch_size, (uint8
    [B, H, W, C], int64 labels [B]) (a last partial batch of the rank's stream is yielded
    unless drop_last). Ranks split the samples of all shards evenly (even=, _Base).
    shuffle=True: windows, and the samples inside each, in a permutation of (seed, epoch);
    len(): items of this rank per epoch."""

    def __init__(self, source: Any, bucket: Optional[str] = None, keys: Any = None,
                 prefix: Optional[str] = None, batch_size: Optional[int] = None, rank: Any = None,
                 world_size: Optional[int] = None, num_buffers: int = 2,
                 buffer_bytes: int = DEFAULT_BUFFER_BYTES, fetch_workers: int = 2,
                 transport: str = "auto", copy: bool = True, drop_last: bool = False,
                 client: Optional[Client] = None, device: Any = None, shuffle: bool = False,
                 seed: int = 0, even: Any = "pad") -> None:
        client, bucket, keys, prefix = _source(source, bucket, keys, prefix, client, ".raw")
        super().__init__(client, bucket, num_buffers, buffer_bytes, fetch_workers, transport,
                         copy, rank, world_size, shuffle, seed, even)
        self.device = device
        self.keys = _keys(client, bucket, keys, prefix, ".raw")
        self.batch_size, self.drop_last = batch_size, drop_last
        self.windows = []
        self.num_samples = 0
        for k in self.keys:
            jk = k[:-4] + ".json"
            m = _meta(client, bucket, jk)
            _need(m, jk, ("samples", "height", "width", "channels", "labels"))
            if m.get("dtype", "uint8") != "uint8":
                raise WharfError(_lib.WHARF_ERR_INVALID, f"{jk}: dtype {m['dtype']} is not uint8")
            h, w_, ch, n = int(m["height"]), int(m["width"]), int(m["channels"]), int(m["samples"])
            sb = int(m.get("sample_bytes", h * w_ * ch))
            if sb != h * w_ * ch or len(m["labels"]) != n:
                raise WharfError(_lib.WHARF_ERR_INVALID, f"{jk}: sample_bytes {sb} or labels "
                                 f"({len(m['labels'])}) do not match {n} samples of "
                                 f"{h}x{w_}x{ch}")
            per = max(1, buffer_bytes // sb)
            if sb > buffer_bytes:
                raise WharfError(_lib.WHARF_ERR_TOO_LARGE, f"{jk}: a sample of {sb} bytes does "
                                 f"not fit buffer_bytes {buffer_bytes}")
            for s0 in range(0, n, per):
                s1 = min(n, s0 + per)
                self.windows.append(Window(k, s0 * sb, (s1 - s0) * sb,
                                           ((h, w_, ch), m["labels"][s0:s1])))
            self.num_samples += n

    def _rows(self, w: Any) -> Any:
        return len(w.info[1])

    def _sub(self, w: Any, lo: int, hi: int) -> Any:
        shape, labels = w.info
        sb = shape[0] * shape[1] * shape[2]
        return Window(w.key, w.offset + lo * sb, (hi - lo) * sb, (shape, labels[lo:hi]))

    def _part(self, sw: Any, buf: Any, rows: Any, own: bool) -> Any:
        shape, labels = sw.info
        imgs = self._take(buf.view(len(labels), *shape), rows, own)
        return imgs, [labels[int(x)] for x in rows]

    def _item(self, parts: Any) -> Any:
        b = parts[0][0] if len(parts) == 1 else torch.cat([p[0] for p in parts])
        lab = [x for p in parts for x in p[1]]
        if self.batch_size is None:
            return b[0], int(lab[0])
        return b, torch.tensor(lab, dtype=torch.int64, device=b.device)


class JpegTarShards(_Base):
    """(JPEG bytes, label) from tar shards and their byte index, fetched over HTTP by default
    (JPEG decoding needs host memory; transport= may say otherwise). decode: a callable applied
    to each JPEG's bytes (e.g. torchvision.io.decode_jpeg on a uint8 tensor); None gives bytes.
    check_jpeg: refuse a sample whose bytes do not start with the JPEG SOI marker FF D8.
    shuffle=True: windows, and the samples inside each, in a permutation of (seed, epoch)."""

    def __init__(self, source: Any, bucket: Optional[str] = None, keys: Any = None,
                 prefix: Optional[str] = None, rank: Any = None, world_size: Optional[int] = None,
                 num_buffers: int = 2, buffer_bytes: int = DEFAULT_BUFFER_BYTES,
                 fetch_workers: int = 2, transport: str = "http", decode: Any = None,
                 check_jpeg: bool = True, client: Optional[Client] = None, shuffle: bool = False,
                 seed: int = 0, even: Any = "pad") -> None:
        client, bucket, keys, prefix = _source(source, bucket, keys, prefix, client, ".tar")
        super().__init__(client, bucket, num_buffers, buffer_bytes, fetch_workers, transport,
                         True, rank, world_size, shuffle, seed, even)
        self.keys = _keys(client, bucket, keys, prefix, ".tar")
        self.decode, self.check_jpeg = decode, check_jpeg
        self.windows = []
        self.num_samples = 0
        for k in self.keys:
            ik = k[:-4] + ".index.json"
            m = _meta(client, bucket, ik)
            _need(m, ik, ("samples",))
            samples = sorted(m["samples"], key=lambda s: int(s["offset"]))
            cur: List[Any] = []
            start, end = 0, 0
            for s in samples:
                off, ln = int(s["offset"]), int(s["length"])
                if off < 0 or ln < 0 or ln > buffer_bytes:
                    raise WharfError(_lib.WHARF_ERR_TOO_LARGE if ln > buffer_bytes
                                     else _lib.WHARF_ERR_INVALID,
                                     f"{ik}: sample {s.get('key')} at {off} of {ln} bytes: "
                                     f"bad offset/length or more than buffer_bytes "
                                     f"{buffer_bytes}")
                if cur and max(end, off + ln) - start > buffer_bytes:
                    self.windows.append(Window(k, start, end - start, cur))
                    cur = []
                if not cur:
                    start, end = off, off + ln
                else:
                    end = max(end, off + ln)
                cur.append((off - start, ln, s.get("label"), s.get("key")))
            if cur:
                self.windows.append(Window(k, start, end - start, cur))
            self.num_samples += len(samples)

    def _rows(self, w: Any) -> Any:
        return len(w.info)

    def _sub(self, w: Any, lo: int, hi: int) -> Any:
        smp = w.info[lo:hi]
        start = min(rel for rel, _, _, _ in smp)
        end = max(rel + ln for rel, ln, _, _ in smp)
        return Window(w.key, w.offset + start, end - start,
                      [(rel - start, ln, label, key) for rel, ln, label, key in smp])

    def _part(self, sw: Any, buf: Any, rows: Any, own: bool) -> Any:
        mv = buf.numpy()
        out = []
        for x in rows:
            rel, ln, label, key = sw.info[int(x)]
            data = mv[rel:rel + ln].tobytes()
            if self.check_jpeg and data[:2] != b"\xff\xd8":
                raise WharfError(_lib.WHARF_ERR_INVALID, f"s3://{self.bucket}/{sw.key}: "
                                 f"sample {key} at offset {sw.offset + rel} does not start "
                                 "with the JPEG marker FF D8 (index and tar disagree)")
            out.append(((self.decode(data) if self.decode else data), label))
        return out

    def _item(self, parts: Any) -> Any:
        return parts[0][0]


# --- writers: the inverse of TokenDataset and RawImageShards ---------------------------------
