# SPDX-License-Identifier: Apache-2.0
"""How wharf.torch.save's shards reach the store: the staging buffers kept between saves (host
memory, registered, or GPU memory), the copy pipeline from tensors into them and the uploads
(HTTP or RDMA, with the per-tensor checksums), and the snapshots and in-flight tracking of
asynchronous saves. checkpoint.py plans, commits and loads; it re-exports this module's public
names (free_staging, default_staging_budget, wait_async)."""
from __future__ import annotations

import concurrent.futures as cf
import os
import resource
import threading
import time
import zlib
from typing import Any, Callable, Dict, List, Optional

import numpy as np
import torch

from .. import _lib
from ..errors import WharfError
from ._common import _join
from .dtypes import as_bytes as _as_bytes
from .checksum import sum64 as _sum64
from ..client import Client


def _new_stream(dev: Any) -> Any:
    """torch.cuda.Stream(dev) (untyped in torch 1.13)."""
    stream: Callable[[Any], Any] = torch.cuda.Stream
    return stream(dev)


class _Staging:
    """Staging buffers kept between saves (a training loop saves again and again: the second
    save finds its buffers allocated, faulted in and registered). One set, for one client at a
    time; a concurrent save gets buffers of its own. free_staging() drops them."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.bufs: List[Any] = []
        self.client: Optional[Client] = None
        self.regs: List[Any] = []

    def take(self, c: Client, n: int, cap: int, use_rdma: bool, keep: bool) -> Any:
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
    def _fresh(c: Client, n: int, cap: int, use_rdma: bool) -> Any:
        bufs = [torch.empty(cap, dtype=torch.uint8) for _ in range(n)]
        regs = [c.register(b) for b in bufs] if use_rdma else []
        return _Fresh(bufs, regs)

    def give(self, kept: Any, bufs: Any) -> None:
        if kept:
            self.lock.release()
        else:
            for r in bufs.regs:
                r.close()

    def _drop(self) -> None:
        for r in self.regs:
            r.close()
        self.bufs, self.client, self.regs = [], None, []

    def free(self) -> None:
        with self.lock:
            self._drop()


class _Fresh(List[Any]):
    def __init__(self, bufs: Any, regs: Any) -> None:
        super().__init__(bufs)
        self.regs = regs


_staging = _Staging()


def free_staging() -> None:
    """Releases the staging buffers save() keeps between calls (and their registrations),
    and the snapshot pools of async saves (after waiting for the one in flight)."""
    _staging.free()
    _inflight.claim()
    try:
        for p in _pools.values():
            p.drop()
        _pools.clear()
    finally:
        _inflight.release()


def _copy_workers() -> Any:
    return max(1, min(4, (os.cpu_count() or 2)))


def _cuda_share(plans: Any) -> Any:
    """(the CUDA device holding the most tensor bytes, its share of all the bytes)."""
    per: Dict[Any, int] = {}
    total = 0
    for p in plans:
        for it in p["items"]:
            nb = it[1].numel() * it[1].element_size()
            total += nb
            if it[1].is_cuda:
                per[it[1].device] = per.get(it[1].device, 0) + nb
    if not per or not total:
        return None, 0.0
    dev = max(per, key=lambda d: per[d])
    return dev, per[dev] / total


def _device_staging(c: Client, plans: Any, transport: str, staging: str) -> Any:
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


def _upload_shards(c: Client, bucket: str, prefix: str, plans: Any, transport: str, checksums: bool,
                   concurrency: Optional[int], keep: bool, bar: Any, staging: str = "auto") -> Any:
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



def _upload_from_device(c: Client, bucket: str, prefix: str, plans: Any, transport: str,
                        checksums: bool, concurrency: Optional[int], bar: Any, dev: Any,
                        nbuf: int) -> Any:
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
    tensor_info: Dict[Any, Any] = {}
    stats = {"fill_s": 0.0, "put_wait_s": 0.0, "fill_cpu_s": 0.0, "staging": "temporary",
             "staging_memory": str(dev), "staging_reason": None, "staging_bytes": nbuf * cap}
    stream = _new_stream(dev)
    stream.wait_stream(torch.cuda.current_stream(dev))  # the tensors' producers are done first

    def fill(buf: Any, p: Any) -> None:
        _fill_device_shard(buf, p, checksums, tensor_info)
        stream.synchronize()

    try:
        with torch.cuda.device(dev), torch.cuda.stream(stream):
            reports = _pipeline(c, bucket, prefix, plans, bufs, fill, transport, concurrency,
                                bar, stats)
    finally:
        for r in regs:
            r.close()
    _note_staged(stats, reports)
    return reports, tensor_info, stats


def _note_staged(stats: Any, reports: Any) -> None:
    staged = [r for r in reports if r.staged]
    if staged:
        stats["staging_reason"] = f"{len(staged)} of {len(reports)} shards went through " \
            f"host memory: {staged[0].reason}"


def _fill_device_shard(buf: Any, p: Any, checksums: bool, tensor_info: Any) -> None:
    """Assembles shard p in the device buffer buf (its first p["size"] bytes) on the current
    stream: header, then each tensor by a device-to-device copy; sum64s when checksums.
    The caller synchronizes the stream."""
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


def _fill_host_shard(npbuf: Any, p: Any, cp: Any, checksums: bool, tensor_info: Any,
                     tbuf: Any = None) -> None:
    """Assembles shard p in the host bytes npbuf (numpy uint8; tbuf: the same bytes as a
    tensor, which keeps torch aware that they are pinned): header, then each tensor (a plain
    memcpy; a device-to-host copy for a GPU tensor) on the copy threads cp, each followed by
    its CRC-32 when checksums."""
    hl = len(p["header"])
    npbuf[:hl] = np.frombuffer(p["header"], dtype=np.uint8)
    if tbuf is None:
        tbuf = torch.from_numpy(npbuf)

    def one(ie: Any) -> Any:
        (name, s, dt, special, _), entry = ie
        b, e = entry[3], entry[4]
        if e > b and s.is_cuda:
            tbuf[hl + b:hl + e].copy_(_as_bytes(s))
        elif e > b:
            np.copyto(npbuf[hl + b:hl + e], _as_bytes(s).numpy())
        info = {}
        if checksums:
            info["crc32"] = zlib.crc32(npbuf[hl + b:hl + e])
        if special:
            info["as"] = special
        return name, info

    for name, info in cp.map(one, zip(p["items"], p["entries"])):
        tensor_info[name] = info


def _pipeline(c: Client, bucket: str, prefix: str, plans: Any, bufs: Any, fill: Any, transport: str,
              concurrency: Optional[int], bar: Any, stats: Any) -> Any:
    """For each shard i: wait until buffer i % len(bufs) is free again (the PUT of shard
    i - len(bufs) is done), fill(buf, plan) it, and PUT it while the next shard fills.
    Returns the PUT reports; when it returns or raises, no PUT is still reading a buffer."""
    nbuf = len(bufs)
    futs: List[Any] = []
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
                futs.append(ex.submit(_put, c, bucket, _join(prefix, p["file"]), buf, 0,
                                      p["size"], transport, concurrency, bar))
            t = time.perf_counter()
            reports = [f.result() for f in futs]
            stats["put_wait_s"] += time.perf_counter() - t
    finally:  # the executor's exit waited for a PUT that was running; queued ones go
        for f in futs:
            f.cancel()
    return reports


def _upload_from_host(c: Client, bucket: str, prefix: str, plans: Any, transport: str,
                      checksums: bool, concurrency: Optional[int], keep: bool, bar: Any) -> Any:
    nbuf = min(2, len(plans))
    cap = max(p["size"] for p in plans)
    use_rdma = c.rdma and transport != "http"
    staging, kept, how = _staging.take(c, nbuf, cap, use_rdma, keep)
    tensor_info: Dict[Any, Any] = {}
    stats = {"fill_s": 0.0, "put_wait_s": 0.0, "fill_cpu_s": 0.0, "staging": how,
             "staging_bytes": nbuf * cap}
    try:
        with cf.ThreadPoolExecutor(_copy_workers(), thread_name_prefix="wharf-copy") as cp:
            reports = _pipeline(c, bucket, prefix, plans, staging,
                                lambda buf, p: _fill_host_shard(buf.numpy(), p, cp, checksums,
                                                                tensor_info, buf),
                                transport, concurrency, bar, stats)
    finally:
        _staging.give(kept, staging)
    return reports, tensor_info, stats


def _put(c: Client, bucket: str, key: str, buf: Any, offset: int, size: int, transport: str,
         concurrency: Optional[int], bar: Any) -> Any:
    r = c.put_from(bucket, key, buf, offset, size, transport, None, concurrency)
    bar.update(size)
    return r


def _cpu_s() -> Any:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


# ---- async saves ---------------------------------------------------------------------------


class _InFlight:
    """At most one async save in flight per process. An async save claims the slot before its
    snapshot and frees it when its future is done; every save (async or not, any URL) first
    waits for the slot to be free, so two saves never interleave and the snapshot pool is
    never refilled while an upload still reads it."""

    def __init__(self) -> None:
        self.cv = threading.Condition()
        self.busy = False

    def claim(self) -> Any:
        """Waits until no async save is in flight, then claims the slot. Returns the wait."""
        t = time.perf_counter()
        with self.cv:
            while self.busy:
                self.cv.wait()
            self.busy = True
        return time.perf_counter() - t

    def release(self) -> None:
        with self.cv:
            self.busy = False
            self.cv.notify_all()

    def wait_idle(self) -> Any:
        t = time.perf_counter()
        with self.cv:
            while self.busy:
                self.cv.wait()
        return time.perf_counter() - t


_inflight = _InFlight()


def wait_async() -> None:
    """Blocks until the async save in flight (if any) is done, durable or failed (its
    future says which)."""
    _inflight.wait_idle()


class _Pool:
    """The memory of async snapshots, kept between saves (pinning or allocating gigabytes
    and registering them costs more than the copy). Only touched while the in-flight slot is
    held, so it needs no lock of its own."""

    def __init__(self) -> None:
        self.buf: Optional[torch.Tensor] = None
        self.reg: Any = None
        self.client: Optional[Client] = None

    def take(self, c: Client, n: int, device: Any, pinned: bool, use_rdma: bool) -> Any:
        how = "reused"
        if self.buf is None or self.buf.numel() < n or \
                (pinned and not self.buf.is_pinned()):
            self.drop()
            self.buf = torch.empty(n, dtype=torch.uint8, device=device,
                                   pin_memory=pinned and device == "cpu")
            how = "new"
        if use_rdma and (self.client is not c or self.reg is None):
            if self.reg is not None:
                self.reg.close()
            self.reg, self.client = None, None
            self.reg = c.register(self.buf)
            self.client = c
        return how

    def drop(self) -> None:
        if self.reg is not None:
            self.reg.close()
        self.buf, self.reg, self.client = None, None, None


_pools: Dict[str, Any] = {}  # "host" or str(device) -> _Pool

DEVICE_BUDGET_SHARE = 0.25   # of the GPU's memory, at most, for a device snapshot
HOST_BUDGET_SHARE = 0.5      # of the host memory available, at most, for a host snapshot


def _mem_available() -> Any:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")


def default_staging_budget(device: Any = None) -> Any:
    """The snapshot budget an async save uses where staging_budget is not given: for a GPU
    snapshot on device, a quarter of the GPU's memory and no more than is free less 1 GiB;
    in host memory, half of the memory available now (a pool kept from an earlier async
    save counts as available)."""
    if device is not None and str(device).startswith("cuda"):
        free, total = torch.cuda.mem_get_info(device)
        p = _pools.get(str(device))
        free += p.buf.numel() if p is not None and p.buf is not None else 0
        return max(0, min(int(total * DEVICE_BUDGET_SHARE), free - (1 << 30)))
    p = _pools.get("host")
    held = p.buf.numel() if p is not None and p.buf is not None else 0
    return int((_mem_available() + held) * HOST_BUDGET_SHARE)


def _pool_layout(plans: Any) -> Any:
    offs, total = [], 0
    for p in plans:
        offs.append(total)
        total += (p["size"] + 4095) // 4096 * 4096  # each shard page-aligned in the pool
    return offs, max(total, 1)


def _snapshot(c: Client, plans: Any, transport: str, staging: str, budget: Optional[float],
              checksums: bool) -> Any:
    """The blocking part of an async save: every tensor's bytes copied into the pool, laid
    out as the shard files themselves (header + data), so the upload PUTs straight from it.
    Returns (pool tensor, offsets, tensor_info, stats, whether the CRC-32s are still to be
    computed); when it returns, the caller may change its tensors."""
    offs, total = _pool_layout(plans)
    t0 = time.perf_counter()
    why = None
    use_rdma = c.rdma and transport != "http"
    stats = {"fill_s": 0.0, "put_wait_s": 0.0, "fill_cpu_s": 0.0, "staging_bytes": total}
    tensor_info: Dict[Any, Any] = {}
    dev = None
    if staging != "host":
        dev, share = _cuda_share(plans)
        if dev is None:
            why = "staging=\"device\" but no tensor is on a GPU" if staging == "device" else None
        elif staging == "auto" and share < 0.5:
            why, dev = f"most of the bytes are in host memory ({share:.0%} on {dev})", None
        elif not use_rdma:
            why = ("HTTP cannot read GPU memory" if transport == "http" else
                   f"the client has no RDMA provider ({c.provider or 'none'})")
            dev = None
    if dev is not None:
        dbudget = budget if budget is not None else default_staging_budget(dev)
        if total > dbudget:
            why = (f"the snapshot needs {total / 2**30:.2f} GiB, over the device budget "
                   f"{dbudget / 2**30:.2f} GiB (staging_budget=)")
            dev = None
        else:
            pool = _pools.setdefault(str(dev), _Pool())
            try:
                stats["staging"] = pool.take(c, total, dev, False, True)
            except WharfError as e:
                pool.drop()
                why, dev = f"device memory cannot be registered here: {e.message}", None
            except RuntimeError as e:  # torch.cuda.OutOfMemoryError and its kin
                pool.drop()
                why, dev = f"no {total / 2**30:.2f} GiB on {dev} for the snapshot ({e})", None
    if dev is not None:
        stream = _new_stream(dev)
        stream.wait_stream(torch.cuda.current_stream(dev))
        cpu0 = _cpu_s()
        with torch.cuda.device(dev), torch.cuda.stream(stream):
            for p, off in zip(plans, offs):
                _fill_device_shard(pool.buf[off:off + p["size"]], p, checksums, tensor_info)
        stream.synchronize()
        stats.update(staging_memory=str(dev), staging_reason=None, staging_budget=dbudget,
                     fill_s=time.perf_counter() - t0, fill_cpu_s=_cpu_s() - cpu0)
        return pool.buf, offs, tensor_info, stats, False
    hbudget = budget if budget is not None else default_staging_budget()
    if total > hbudget:
        raise WharfError(_lib.WHARF_ERR_NOMEM, f"async save: the snapshot needs "
                         f"{total / 2**30:.2f} GiB of host memory, over its budget of "
                         f"{hbudget / 2**30:.2f} GiB; pass a larger staging_budget= (bytes), "
                         "a smaller state, or save with async_=False (which needs only two "
                         "shards of staging)")
    pinned = any(it[1].is_cuda for p in plans for it in p["items"])
    pool = _pools.setdefault("host", _Pool())
    stats["staging"] = pool.take(c, total, "cpu", pinned, use_rdma)
    cpu0 = _cpu_s()
    npool = pool.buf.numpy()
    with cf.ThreadPoolExecutor(_copy_workers(), thread_name_prefix="wharf-snap") as cp:
        for p, off in zip(plans, offs):
            # CRC-32s later, in the background: the caller waits only for the copies
            _fill_host_shard(npool[off:off + p["size"]], p, cp, False, tensor_info,
                             pool.buf[off:off + p["size"]])
    stats.update(staging_memory="host", staging_reason=why, staging_budget=hbudget,
                 fill_s=time.perf_counter() - t0, fill_cpu_s=_cpu_s() - cpu0)
    return pool.buf, offs, tensor_info, stats, checksums
