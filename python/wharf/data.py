"""Datasets over wharf objects (torch.utils.data.IterableDataset), each fed by a prefetcher
that fetches windows of objects into a bounded set of registered buffers.

Each dataset takes an s3:// URL, TokenDataset("s3://bucket/tokens/", client=c, ...) (a prefix,
or one object's key; without client= the default client of wharf.torch), or the older form
TokenDataset(c, "bucket", prefix="tokens/") / (c, "bucket", keys=[...]).

Layouts (docs/pytorch.md, "Dataset layouts"):
- TokenDataset: <name>.bin (int32 little-endian tokens, sequences x seq_len, no header) with
  <name>.json {sequences, seq_len, dtype, bytes_per_token, vocab_size, sequence_bytes, ...}.
- RawImageShards: <name>.raw (N x H x W x C uint8, no header; sample i at i*H*W*C) with
  <name>.json {samples, height, width, channels, dtype, sample_bytes, labels[], keys[]}.
- JpegTarShards: <name>.tar (USTAR; <key>.jpg then <key>.cls per sample) with
  <name>.index.json {shard, size, samples: [{key, offset, length, label}]}, over HTTP.

Sharding: rank r of W reads sorted(shards)[r::W]; inside a DataLoader, worker w of N takes
every N-th window of its rank's list. Every dataset works in DataLoader workers (fork): the
client made in the parent is used in the child (libwharf re-initialises itself there), and the
buffers and fetch threads are created inside each worker's iterator.

Items are copies by default. With copy=False they are zero-copy views of a prefetch buffer and
stay valid only until the iterator moves to the next window (num_buffers windows are in flight
or held at once).
"""
import collections
import concurrent.futures as cf
import json
import queue
import time

import torch
from torch.utils.data import IterableDataset, get_worker_info

from . import _lib
from .config import is_url
from .errors import WharfError

DEFAULT_BUFFER_BYTES = 256 * 1024 ** 2

Window = collections.namedtuple("Window", "key offset nbytes info")


def _rank_world(rank, world_size):
    dist = torch.distributed
    if rank is None and world_size is None and dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    rank = 0 if rank is None else int(rank)
    world_size = 1 if world_size is None else int(world_size)
    if world_size < 1 or not 0 <= rank < world_size:
        raise WharfError(_lib.WHARF_ERR_INVALID,
                         f"rank {rank} is not in [0, world_size {world_size})")
    return rank, world_size


def _source(source, bucket, keys, prefix, client, suffix):
    """(client, bucket, keys, prefix) from either call form."""
    if is_url(source):
        if bucket is not None:
            raise WharfError(_lib.WHARF_ERR_INVALID, f"{source}: pass an s3:// URL or (client, "
                             "bucket), not both (the URL names the bucket)")
        b, _, rest = source[5:].partition("/")
        if not b:
            raise WharfError(_lib.WHARF_ERR_INVALID, f"bad URL {source!r}: no bucket after s3://")
        from .torch._common import _client
        c = _client(client)
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


def _keys(client, bucket, keys, prefix, suffix):
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


def _meta(client, bucket, key):
    try:
        return json.loads(client.get(bucket, key, transport="http"))
    except ValueError as e:
        raise WharfError(_lib.WHARF_ERR_INVALID, f"s3://{bucket}/{key} is not valid JSON: {e}")


def _need(meta, key, fields):
    for f in fields:
        if f not in meta:
            raise WharfError(_lib.WHARF_ERR_INVALID, f"{key}: field {f!r} is missing")


class Prefetcher:
    """Fetches windows in order into num_buffers buffers of buffer_bytes (registered once when
    the client has RDMA), with `workers` fetch threads; yields (window, uint8 view). A view is
    valid until the next item is requested. stats: fetch_wait_s, bytes, windows, transports,
    fetch_s, memory ("host", "cuda:0 (direct)" or "cuda:0 (through host memory)") and
    staged_reason.

    device="cuda[:i]": the buffers are in GPU memory and the views yielded are GPU tensors.
    Over RDMA they are registered and the server writes into them itself (cuda+ipc); where
    that cannot be (HTTP, no direct path) each buffer gets a page-locked host twin that the
    fetch lands in and copies to the GPU, and stats say so and why."""

    def __init__(self, client, bucket, windows, num_buffers=2, buffer_bytes=None, workers=2,
                 transport="auto", pin_memory=False, device=None):
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
        self.stats = dict(fetch_wait_s=0.0, bytes=0, windows=0, transports=set(), fetch_s=0.0,
                          buffers=self.num_buffers, memory="host", staged_reason=None)

    def __iter__(self):
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
        free = queue.SimpleQueue()  # indexes of bufs (and of lands)
        for i in range(len(bufs)):
            free.put(i)
        pending = collections.deque()
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

            def fetch(w):
                i = free.get()
                b, land = bufs[i], lands[i]
                t = time.perf_counter()
                try:
                    r = c.get_into(self.bucket, w.key, land[:w.nbytes], offset=w.offset,
                                   length=w.nbytes, transport=self.transport, cache=False)
                    if land is not b:
                        b[:w.nbytes].copy_(land[:w.nbytes])  # synchronous: the twin is reused
                except BaseException:
                    free.put(i)
                    raise
                if r.bytes != w.nbytes:
                    free.put(i)
                    raise WharfError(_lib.WHARF_ERR_PROTOCOL, f"s3://{self.bucket}/{w.key}: "
                                     f"{r.bytes} bytes landed of {w.nbytes}")
                return i, r, time.perf_counter() - t

            nxt = 0
            while nxt < len(self.windows) and len(pending) < self.num_buffers:
                pending.append((self.windows[nxt], ex.submit(fetch, self.windows[nxt])))
                nxt += 1
            while pending:
                w, fut = pending.popleft()
                t = time.perf_counter()
                i, r, dt = fut.result()
                self.stats["fetch_wait_s"] += time.perf_counter() - t
                self.stats["bytes"] += r.bytes
                self.stats["windows"] += 1
                self.stats["fetch_s"] += dt
                self.stats["transports"].add(r.transport)
                try:
                    yield w, bufs[i][:w.nbytes]
                finally:
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


class _Base(IterableDataset):
    pin_memory = False  # page-locked prefetch buffers: faster copies to a GPU
    device = None       # "cuda": items are GPU tensors, fetched into GPU memory (Prefetcher)

    def __init__(self, client, bucket, num_buffers, buffer_bytes, fetch_workers, transport,
                 copy, rank, world_size):
        self.client, self.bucket = client, bucket
        self.num_buffers, self.buffer_bytes = num_buffers, buffer_bytes
        self.fetch_workers, self.transport, self.copy = fetch_workers, transport, copy
        self.rank, self.world_size = _rank_world(rank, world_size)
        self.last_stats = None

    def _my_windows(self, windows):
        wi = get_worker_info()
        if wi is not None and wi.num_workers > 1:
            return windows[wi.id::wi.num_workers]
        return windows

    def _prefetch(self, windows):
        p = Prefetcher(self.client, self.bucket, windows, self.num_buffers, self.buffer_bytes,
                       self.fetch_workers, self.transport, self.pin_memory, self.device)
        self.last_stats = p.stats
        return p


class TokenDataset(_Base):
    """Sequences of seq_len int32 tokens (or batches [batch_size, seq_len] when batch_size is
    set) from token shards. seq_len defaults to the shards' own; another value re-cuts the
    token stream of each shard (a tail shorter than seq_len is dropped, as is a last partial
    batch when drop_last)."""

    def __init__(self, source, bucket=None, keys=None, prefix=None, seq_len=None,
                 batch_size=None, rank=None, world_size=None, num_buffers=2,
                 buffer_bytes=DEFAULT_BUFFER_BYTES, fetch_workers=2, transport="auto", copy=True,
                 drop_last=True, repeat=1, client=None, device=None):
        client, bucket, keys, prefix = _source(source, bucket, keys, prefix, client, ".bin")
        super().__init__(client, bucket, num_buffers, buffer_bytes, fetch_workers, transport,
                         copy, rank, world_size)
        self.device = device
        all_keys = _keys(client, bucket, keys, prefix, ".bin")
        self.keys = all_keys[self.rank::self.world_size]
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

    def __iter__(self):
        windows = self._my_windows(self.windows) * int(self.repeat)
        bs, L = self.batch_size, self.seq_len
        for w, buf in self._prefetch(windows):
            toks = buf.view(torch.int32).view(-1, L)
            if bs is None:
                for i in range(toks.shape[0]):
                    yield toks[i].clone() if self.copy else toks[i]
            else:
                for i in range(0, toks.shape[0], bs):
                    b = toks[i:i + bs]
                    if b.shape[0] < bs and self.drop_last:
                        break
                    yield b.clone() if self.copy else b


class RawImageShards(_Base):
    """(image uint8 [H, W, C], label) from raw NHWC shards; with batch_size, (uint8
    [B, H, W, C], int64 labels [B]) (a last partial batch of a window is yielded unless
    drop_last)."""

    def __init__(self, source, bucket=None, keys=None, prefix=None, batch_size=None, rank=None,
                 world_size=None, num_buffers=2, buffer_bytes=DEFAULT_BUFFER_BYTES,
                 fetch_workers=2, transport="auto", copy=True, drop_last=False, client=None,
                 device=None):
        client, bucket, keys, prefix = _source(source, bucket, keys, prefix, client, ".raw")
        super().__init__(client, bucket, num_buffers, buffer_bytes, fetch_workers, transport,
                         copy, rank, world_size)
        self.device = device
        all_keys = _keys(client, bucket, keys, prefix, ".raw")
        self.keys = all_keys[self.rank::self.world_size]
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

    def __iter__(self):
        bs = self.batch_size
        for w, buf in self._prefetch(self._my_windows(self.windows)):
            shape, labels = w.info
            imgs = buf.view(len(labels), *shape)
            if bs is None:
                for i, lab in enumerate(labels):
                    yield (imgs[i].clone() if self.copy else imgs[i]), int(lab)
            else:
                for i in range(0, len(labels), bs):
                    b = imgs[i:i + bs]
                    if b.shape[0] < bs and self.drop_last:
                        break
                    yield (b.clone() if self.copy else b,
                           torch.tensor(labels[i:i + bs], dtype=torch.int64,
                                        device=buf.device))


class JpegTarShards(_Base):
    """(JPEG bytes, label) from tar shards and their byte index, fetched over HTTP by default
    (JPEG decoding needs host memory; transport= may say otherwise). decode: a callable applied
    to each JPEG's bytes (e.g. torchvision.io.decode_jpeg on a uint8 tensor); None gives bytes.
    check_jpeg: refuse a sample whose bytes do not start with the JPEG SOI marker FF D8."""

    def __init__(self, source, bucket=None, keys=None, prefix=None, rank=None, world_size=None,
                 num_buffers=2, buffer_bytes=DEFAULT_BUFFER_BYTES, fetch_workers=2,
                 transport="http", decode=None, check_jpeg=True, client=None):
        client, bucket, keys, prefix = _source(source, bucket, keys, prefix, client, ".tar")
        super().__init__(client, bucket, num_buffers, buffer_bytes, fetch_workers, transport,
                         True, rank, world_size)
        all_keys = _keys(client, bucket, keys, prefix, ".tar")
        self.keys = all_keys[self.rank::self.world_size]
        self.decode, self.check_jpeg = decode, check_jpeg
        self.windows = []
        self.num_samples = 0
        for k in self.keys:
            ik = k[:-4] + ".index.json"
            m = _meta(client, bucket, ik)
            _need(m, ik, ("samples",))
            samples = sorted(m["samples"], key=lambda s: int(s["offset"]))
            cur, start, end = [], 0, 0
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

    def __iter__(self):
        for w, buf in self._prefetch(self._my_windows(self.windows)):
            mv = buf.numpy()
            for rel, ln, label, key in w.info:
                data = mv[rel:rel + ln].tobytes()
                if self.check_jpeg and data[:2] != b"\xff\xd8":
                    raise WharfError(_lib.WHARF_ERR_INVALID, f"s3://{self.bucket}/{w.key}: "
                                     f"sample {key} at offset {w.offset + rel} does not start "
                                     "with the JPEG marker FF D8 (index and tar disagree)")
                yield (self.decode(data) if self.decode else data), label
