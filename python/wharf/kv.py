# SPDX-License-Identifier: Apache-2.0
"""Batches of small objects over RDMA (libwharf's wharf_batch_get / wharf_batch_put), and a
key-value store of fixed-size blocks on them, shaped for KV-cache offload (docs/kv-cache.md).

One request GETs many objects of one bucket into, or PUTs them from, slots of one buffer (a
numpy array, a torch tensor on the CPU or a GPU, any writable buffer); every key is
authorized and answered on its own. ::

    kv = wharf.kv.KVStore(client, "kvcache", block_bytes=256 << 10)
    kv.put(["layer0/blk17", "layer0/blk18"], blocks)     # blocks: 2 * 256 KiB, contiguous
    found = kv.get(["layer0/blk17", "layer0/blk99"], out)  # [True, False]
"""
import ctypes
import dataclasses
from typing import Any, List, Optional, Sequence, Tuple, Union

from . import _lib
from ._lib import lib
from ._buffers import _as_buf
from .client import Buffer, Client, Report, _enc
from .errors import WharfError, from_status

# (key, offset in the buffer, length) or (key, offset, length, if_none_match)
Entry = Union[Tuple[str, int, int], Tuple[str, int, int, bool]]


@dataclasses.dataclass
class BatchItem:
    """How one key of a batch fared: code is "OK" or the S3 error code (NoSuchKey,
    AccessDenied, PreconditionFailed ...); bytes landed (GET) or stored (PUT)."""
    key: str
    status: int
    code: str
    bytes: int
    crc64nvme: int
    etag: str
    message: str

    @property
    def ok(self) -> bool:
        return self.status == _lib.OK


def _run(client: Client, put: bool, bucket: str, buf: Buffer, entries: Sequence[Entry],
         verify: Optional[bool], concurrency: Optional[int],
         transport: str) -> Tuple[List[BatchItem], Report]:
    what = f"batch {'PUT' if put else 'GET'} {bucket}"
    b = _as_buf(buf, what)
    if not put and not b.writable:
        raise WharfError(_lib.WHARF_ERR_INVALID, f"{what}: the destination is read-only")
    if not entries:
        return [], Report(status=0, transport="none", bytes=0, requests=0, retries=0,
                          fell_back=False, reason="", wall_s=0.0, first_byte_s=0.0,
                          crc64nvme=0, etag="", provider="")
    if transport not in ("auto", "rdma", "http"):
        raise WharfError(_lib.WHARF_ERR_INVALID, f'{what}: transport must be "auto", "rdma" '
                         f'or "http", not {transport!r}')
    t = {"auto": _lib.TRANSPORT_AUTO, "rdma": _lib.TRANSPORT_RDMA,
         "http": _lib.TRANSPORT_HTTP}[transport]
    if t == _lib.TRANSPORT_AUTO and not client.rdma:
        t = _lib.TRANSPORT_HTTP
    if b.kind == _lib.MEM_CUDA and t == _lib.TRANSPORT_HTTP:
        return _bounce(client, put, bucket, b.owner, entries, verify, concurrency, transport,
                       "HTTP cannot reach GPU memory")
    arr = (_lib.CBatchEntry * len(entries))()
    keys = []  # the encoded keys, alive for the call
    for i, ent in enumerate(entries):
        lib.wharf_batch_entry_init(ctypes.byref(arr[i]), ctypes.sizeof(_lib.CBatchEntry))
        k = _enc(ent[0], "key")
        keys.append(k)
        arr[i].key = k
        arr[i].offset = int(ent[1])
        arr[i].length = int(ent[2])
        arr[i].if_none_match = 1 if len(ent) > 3 and ent[3] else 0  # type: ignore[misc]
    opts = _lib.XferOpts()
    lib.wharf_xfer_opts_init(ctypes.byref(opts), ctypes.sizeof(opts))
    opts.transport = t
    opts.verify_checksum = -1 if verify is None else (1 if verify else 0)
    opts.concurrency = int(concurrency or 0)
    rep = _lib.CReport()
    lib.wharf_report_init(ctypes.byref(rep), ctypes.sizeof(rep))
    reg = None
    if t != _lib.TRANSPORT_HTTP:
        try:
            reg = client._acquire(b, True)
        except WharfError as e:
            if b.kind != _lib.MEM_CUDA:
                raise
            return _bounce(client, put, bucket, b.owner, entries, verify, concurrency,
                           transport, e.message)
    try:
        fn = lib.wharf_batch_put if put else lib.wharf_batch_get
        st = fn(client._handle(), _enc(bucket, "bucket"), ctypes.c_void_p(b.addr), b.nbytes,
                arr, len(entries), ctypes.byref(opts), ctypes.byref(rep))
    finally:
        if reg is not None:
            client._release(reg)
    out = Report._from_c(rep)
    out.memory = "cuda" if b.kind == _lib.MEM_CUDA else "host"
    if st != _lib.OK:
        raise from_status(st, what, out)
    items = [BatchItem(key=ent[0], status=arr[i].status,
                       code=arr[i].code.decode("utf-8", "replace"), bytes=arr[i].bytes,
                       crc64nvme=arr[i].crc64nvme, etag=arr[i].etag.decode("utf-8", "replace"),
                       message=arr[i].message.decode("utf-8", "replace"))
             for i, ent in enumerate(entries)]
    return items, out


def _bounce(client: Client, put: bool, bucket: str, t: Any, entries: Sequence[Entry],
            verify: Optional[bool], concurrency: Optional[int], transport: str,
            why: str) -> Tuple[List[BatchItem], Report]:
    """A GPU tensor through one host copy of it (the report says staged, and why)."""
    import torch
    flat = t.reshape(-1).view(torch.uint8)
    host = flat.cpu() if put else torch.empty(flat.numel(), dtype=torch.uint8)
    items, rep = _run(client, put, bucket, host, entries, verify, concurrency,
                      "auto" if transport == "rdma" else transport)
    if not put:
        flat.copy_(host)
    rep.reason = (rep.reason + "; " if rep.reason else "") + \
        f"staged through host memory: {why}"
    rep.memory, rep.staged = "cuda", True
    return items, rep


def batch_get(client: Client, bucket: str, buf: Buffer, entries: Sequence[Entry],
              verify: Optional[bool] = None, concurrency: Optional[int] = None,
              transport: str = "auto") -> Tuple[List[BatchItem], Report]:
    """GETs each (key, offset, length) entry into buf[offset:offset+length] (the object must
    fit its slot). Returns one BatchItem per entry, in order, and the Report. Raises only for
    the batch's own failure; a missing or refused key is its item's code."""
    return _run(client, False, bucket, buf, entries, verify, concurrency, transport)


def batch_put(client: Client, bucket: str, buf: Buffer, entries: Sequence[Entry],
              verify: Optional[bool] = None, concurrency: Optional[int] = None,
              transport: str = "auto") -> Tuple[List[BatchItem], Report]:
    """PUTs buf[offset:offset+length] as each (key, offset, length[, if_none_match]) entry's
    object, each committed as a PutObject. Returns one BatchItem per entry and the Report."""
    return _run(client, True, bucket, buf, entries, verify, concurrency, transport)


class KVStore:
    """Fixed-size blocks by key in one bucket: the shape of an LMCache remote backend (put,
    get and exists of KV-cache chunks). Block i of a call is bytes [i*block_bytes,
    (i+1)*block_bytes) of the buffer passed (a CPU or GPU tensor, a numpy array ...)."""

    def __init__(self, client: Client, bucket: str, block_bytes: int, prefix: str = "") -> None:
        if block_bytes <= 0 or block_bytes > _lib.BATCH_MAX_OBJECT:
            raise WharfError(_lib.WHARF_ERR_INVALID, f"KVStore: block_bytes must be 1 to "
                             f"{_lib.BATCH_MAX_OBJECT}, not {block_bytes}")
        self.client, self.bucket, self.block_bytes, self.prefix = (client, bucket,
                                                                  int(block_bytes), prefix)
        self.last_report: Optional[Report] = None

    def _entries(self, keys: Sequence[str], buf: Buffer, what: str,
                 inm: bool = False) -> List[Entry]:
        n = _as_buf(buf, what).nbytes
        if n < len(keys) * self.block_bytes:
            raise WharfError(_lib.WHARF_ERR_TOO_LARGE, f"{what}: {len(keys)} blocks of "
                             f"{self.block_bytes} bytes do not fit a {n}-byte buffer")
        return [(self.prefix + k, i * self.block_bytes, self.block_bytes, inm)
                for i, k in enumerate(keys)]

    def put(self, keys: Sequence[str], blocks: Buffer, if_absent: bool = False) -> List[BatchItem]:
        """Stores block i of blocks under keys[i]. if_absent: a key that already has an object
        keeps it (its item is PreconditionFailed). Raises unless every key is stored (or, with
        if_absent, already there)."""
        items, self.last_report = batch_put(self.client, self.bucket, blocks,
                                            self._entries(keys, blocks, "KVStore.put", if_absent))
        bad = [it for it in items if not it.ok and not (if_absent and
                                                         it.code == "PreconditionFailed")]
        if bad:
            raise WharfError(bad[0].status or _lib.WHARF_ERR_HTTP,
                             f"KVStore.put: {len(bad)} of {len(items)} keys failed; first "
                             f"{bad[0].key}: {bad[0].code} {bad[0].message}")
        return items

    def get(self, keys: Sequence[str], out: Buffer) -> List[bool]:
        """Loads keys[i] into block i of out. True where the key was found and landed whole,
        False where it has no object; raises for any other failure (refused, wrong size)."""
        items, self.last_report = batch_get(self.client, self.bucket, out,
                                            self._entries(keys, out, "KVStore.get"))
        found = []
        for it in items:
            if it.code == "NoSuchKey":
                found.append(False)
            elif not it.ok or it.bytes != self.block_bytes:
                raise WharfError(it.status or _lib.WHARF_ERR_INVALID,
                                 f"KVStore.get {it.key}: {it.code} {it.message}"
                                 + (f" ({it.bytes} of {self.block_bytes} bytes)"
                                    if it.ok else ""))
            else:
                found.append(True)
        return found

    def exists(self, keys: Sequence[str]) -> List[bool]:
        """Whether each key has an object (a HEAD each: nothing moves)."""
        return [self.client.exists(self.bucket, self.prefix + k) for k in keys]
