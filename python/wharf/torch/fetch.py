# SPDX-License-Identifier: Apache-2.0
"""Landing safetensors files in memory: headers by small range GETs (libwharf's C parser),
every data section by ranged GETs into one arena (host, or the device: registered when the
provider can, else through host staging buffers of at most PIECE bytes per download thread,
reused piece after piece), tensors as zero-copy views. The report says where the bytes
landed (arena), why they were staged (staged_reason) and the host staging it used
(staging_bytes)."""
import concurrent.futures as cf
import queue
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch

from .. import _lib
from .. import safetensors as st
from ..client import Client
from ..errors import CheckpointChangedError, ChecksumError, SafetensorsError, WharfError
from ..progress import Progress
from .dtypes import view as _view

ARENA_ALIGN = 64
# A shard's data section is fetched in pieces of at most this many bytes (each a ranged GET
# that libwharf splits further by its chunk size): progress moves per piece, and a piece
# landed in host memory goes on to the device while the next one downloads.
PIECE = 1 << 30


def fetch(c: Client, bucket: str, shards: Sequence[Tuple[str, int]], device: Any, transport: str,
          rep: Dict[str, Any], expect_etags: Optional[Sequence[Optional[str]]] = None,
          progress: bool = False, desc: str = "load", copy: bool = False) -> Dict[str, Any]:
    """Headers of shards [(key, size)] and a dict {name: tensor}: with copy False, zero-copy
    views of one arena holding every data section; with copy True, each tensor in a storage
    of its own (fetch_each). desc: the progress label (name the object: "load s3://b/k").
    expect_etags: the ETag each shard must have (recorded at a commit): another raises
    ChecksumError. Without them every GET of a shard must see the ETag its header GET saw:
    a shard replaced between them raises CheckpointChangedError (the caller may restart)."""
    t0 = time.perf_counter()
    nthreads = max(1, min(8, len(shards)))

    def header(ks: Tuple[str, int]) -> Tuple[st.Header, str]:
        h = st.read_header(c, bucket, ks[0], ks[1])
        r = c.last_report
        return h, (r.etag if r is not None else "")
    with cf.ThreadPoolExecutor(nthreads, thread_name_prefix="wharf-hdr") as ex:
        got = list(ex.map(header, shards))
    headers = [h for h, _ in got]
    if expect_etags is None:
        expect_etags = [e for _, e in got]
        changed = True
    else:
        _check_etags(bucket, shards, [(k, e) for (k, _), (_, e) in zip(shards, got)],
                     expect_etags)
        changed = False
    t_hdr = time.perf_counter()
    if copy:
        return fetch_each(c, bucket, shards, headers, device, transport, rep, expect_etags,
                          progress, desc, t0, t_hdr, changed)
    bases, total = [], 0
    for h in headers:
        total = (total + ARENA_ALIGN - 1) // ARENA_ALIGN * ARENA_ALIGN
        bases.append(total)
        total += h.data_len
    dev = torch.device(device)
    use_rdma = c.rdma and transport != "http"
    arena: Any = None
    reg: Any = None
    staged: Optional[str] = None
    par = max(1, min(2, len(shards)))
    if dev.type != "cpu":
        arena = torch.empty(total, dtype=torch.uint8, device=dev)
        if use_rdma and total:
            try:
                reg = c.register(arena)
            except WharfError as e:
                staged = e.message  # no device registration here: through host memory
        else:
            staged = "HTTP cannot land bytes in GPU memory" if total else None
    else:
        arena = torch.empty(total, dtype=torch.uint8)
    # Host staging for a device arena is bounded: one piece-sized buffer per download thread
    # (at most par x PIECE bytes whatever the checkpoint's size), reused piece after piece.
    piece_max = min(PIECE, max([h.data_len for h in headers] + [1]))
    nstage = par if staged is not None else 0
    stage_bufs = [torch.empty(piece_max, dtype=torch.uint8, pin_memory=dev.type == "cuda")
                  for _ in range(nstage)]
    stage_regs = [c.register(b) for b in stage_bufs] if use_rdma else []
    free_bufs: "queue.SimpleQueue[torch.Tensor]" = queue.SimpleQueue()
    for b in stage_bufs:
        free_bufs.put(b)
    reports: List[Any] = [None] * len(shards)
    all_reports, seen = [], []
    bar = Progress(total, desc, progress)
    try:
        def one(i: int) -> None:
            (key, _), h, base = shards[i], headers[i], bases[i]
            sb = free_bufs.get() if nstage else None
            try:
                for p in range(0, h.data_len, PIECE):
                    n = min(PIECE, h.data_len - p)
                    land = sb[:n] if sb is not None else arena[base + p:base + p + n]
                    r = c.get_into(bucket, key, land, offset=h.data_offset + p, length=n,
                                   transport=transport, cache=False)
                    if r.bytes != n:
                        raise CheckpointChangedError(
                            _lib.WHARF_ERR_PROTOCOL, f"s3://{bucket}/{key}: {r.bytes} bytes "
                            f"landed of {n} at {h.data_offset + p}: the object is shorter "
                            "than its header says (replaced while it was read?)")
                    if reports[i] is None:
                        reports[i] = r
                    all_reports.append(r)
                    seen.append((key, r.etag))
                    if sb is not None:  # on to the device before the buffer is reused
                        arena[base + p:base + p + n].copy_(land)
                    bar.update(n)
            finally:
                if sb is not None:
                    free_bufs.put(sb)
        with cf.ThreadPoolExecutor(par, thread_name_prefix="wharf-get") as ex:
            list(ex.map(one, range(len(shards))))
        if staged is not None and dev.type == "cuda":
            torch.cuda.synchronize(dev)
    finally:
        bar.close()
        if reg is not None:
            reg.close()
        for r in stage_regs:
            r.close()
    arena_kind = ("host" if dev.type == "cpu" else
                  f"{dev} (registered)" if staged is None else f"{dev} (through host memory)")
    staging_bytes = sum(b.numel() for b in stage_bufs)
    del stage_bufs  # the host staging memory goes now
    t_get = time.perf_counter()
    _check_etags(bucket, shards, seen, expect_etags, changed)
    tensors = {}
    for (key, _), h, base in zip(shards, headers, bases):
        for ti in h.tensors:
            if ti.name in tensors:
                raise SafetensorsError(_lib.WHARF_ERR_INVALID, f"tensor {ti.name!r} is in more "
                                       f"than one shard (again in s3://{bucket}/{key})")
            tensors[ti.name] = _view(arena, base + ti.begin, ti)
    t_end = time.perf_counter()
    rep.update(arena=arena_kind, staged_reason=staged, staging_bytes=staging_bytes,
               bytes=sum(h.data_len for h in headers), shards=len(shards),
               header_s=t_hdr - t0, download_s=t_get - t_hdr, rebuild_s=t_end - t_get,
               transports=sorted({r.transport for r in all_reports}),
               fell_back=any(r.fell_back for r in all_reports),
               reports=all_reports,
               headers={k: h for (k, _), h in zip(shards, headers)})
    return tensors



def _check_etags(bucket: str, shards: Sequence[Tuple[str, int]],
                 seen: Sequence[Tuple[str, str]],
                 expect_etags: Optional[Sequence[Optional[str]]], changed: bool = False) -> None:
    """Each (key, ETag) a GET saw against its shard's expected ETag."""
    want = {k: e for (k, _), e in zip(shards, expect_etags or ()) if e}
    for key, etag in seen:
        w = want.get(key)
        if not w or not etag or etag == w:
            continue
        if changed:
            raise CheckpointChangedError(
                _lib.WHARF_ERR_PRECONDITION, f"s3://{bucket}/{key} was replaced while it was "
                f"read (ETag {w} at its header, {etag} later): it is being written")
        raise ChecksumError(_lib.WHARF_ERR_CHECKSUM, f"s3://{bucket}/{key} changed after the "
                            f"checkpoint was committed (ETag {etag}, committed {w}); save "
                            "the checkpoint again")


# copy=True: a tensor at least this large is fetched on its own (into its own storage, on the
# host); smaller neighbours share one GET of at most RUN bytes into a staging buffer and are
# copied out of it.
SMALL = 4 << 20
RUN = 64 << 20


def _jobs(h: st.Header) -> List[Tuple[int, int, List[st.TensorInfo]]]:
    """[(begin, end, [TensorInfo])] of one shard's data section: a large tensor alone, runs of
    small neighbours together, each job at most PIECE bytes (a larger tensor in pieces)."""
    out: List[Tuple[int, int, List[st.TensorInfo]]] = []
    cur: List[st.TensorInfo] = []
    for ti in sorted(h.tensors, key=lambda t: t.begin):
        if ti.nbytes == 0:
            continue
        if ti.nbytes >= SMALL:
            if cur:
                out.append((cur[0].begin, cur[-1].end, cur))
                cur = []
            out.append((ti.begin, ti.end, [ti]))
            continue
        if cur and (ti.end - cur[0].begin > RUN or ti.begin != cur[-1].end):
            out.append((cur[0].begin, cur[-1].end, cur))
            cur = []
        cur.append(ti)
    if cur:
        out.append((cur[0].begin, cur[-1].end, cur))
    return out


def fetch_each(c: Client, bucket: str, shards: Sequence[Tuple[str, int]],
               headers: List[st.Header], device: Any, transport: str, rep: Dict[str, Any],
               expect_etags: Optional[Sequence[Optional[str]]], progress: bool, desc: str,
               t0: float, t_hdr: float, changed: bool = False) -> Dict[str, Any]:
    """Every tensor in a storage of its own, so that one tensor kept alive holds only its own
    bytes (and torch.save of it writes only those). On the host a large tensor lands in its
    own memory directly; runs of small ones, and everything bound for a GPU, land in a
    staging buffer per download thread (page-locked for a GPU) and are copied out."""
    dev = torch.device(device)
    jobs = [(i, b, e, tis) for i, h in enumerate(headers) for b, e, tis in _jobs(h)]
    dests = {}
    for i, h in enumerate(headers):
        for ti in h.tensors:
            dests[(i, ti.name)] = torch.empty(ti.nbytes, dtype=torch.uint8, device=dev)

    def direct(job: Tuple[int, int, int, List[st.TensorInfo]]) -> bool:
        return dev.type == "cpu" and len(job[3]) == 1

    staged = [j for j in jobs if not direct(j)]
    piece_max = min(PIECE, max([e - b for _, b, e, _ in staged] + [0]))
    par = max(1, min(2, len(jobs)))
    stage_bufs = [torch.empty(piece_max, dtype=torch.uint8, pin_memory=dev.type == "cuda")
                  for _ in range(par if staged else 0)]
    use_rdma = c.rdma and transport != "http"
    stage_regs = [c.register(b) for b in stage_bufs] if use_rdma else []
    free_bufs: "queue.SimpleQueue[torch.Tensor]" = queue.SimpleQueue()
    for b in stage_bufs:
        free_bufs.put(b)
    reports: List[Any] = [None] * len(shards)
    all_reports, seen = [], []
    bar = Progress(sum(h.data_len for h in headers), desc, progress)

    def get(i: int, land: torch.Tensor, off: int, n: int) -> None:
        key = shards[i][0]
        r = c.get_into(bucket, key, land, offset=headers[i].data_offset + off, length=n,
                       transport=transport, cache=False)
        if r.bytes != n:
            raise CheckpointChangedError(
            _lib.WHARF_ERR_PROTOCOL, f"s3://{bucket}/{key}: {r.bytes} bytes landed of {n} at "
            f"{headers[i].data_offset + off}: the object is shorter than its header says "
            "(replaced while it was read?)")
        if reports[i] is None:
            reports[i] = r
        all_reports.append(r)
        seen.append((key, r.etag))
        bar.update(n)

    def one(job: Tuple[int, int, int, List[st.TensorInfo]]) -> None:
        i, b, e, tis = job
        if direct(job):
            d = dests[(i, tis[0].name)]
            for p in range(0, e - b, PIECE):
                get(i, d[p:p + min(PIECE, e - b - p)], b + p, min(PIECE, e - b - p))
            return
        sb = free_bufs.get()
        try:
            for p in range(b, e, PIECE):  # a GPU-bound tensor over PIECE: piece by piece
                n = min(PIECE, e - p)
                get(i, sb[:n], p, n)
                for ti in tis:
                    lo, hi = max(ti.begin, p), min(ti.end, p + n)
                    if lo < hi:
                        dests[(i, ti.name)][lo - ti.begin:hi - ti.begin].copy_(
                            sb[lo - p:hi - p])
            if dev.type == "cuda":
                torch.cuda.synchronize(dev)  # the copies read sb, which is reused next
        finally:
            free_bufs.put(sb)

    try:
        with cf.ThreadPoolExecutor(par, thread_name_prefix="wharf-get") as ex:
            list(ex.map(one, jobs))
    finally:
        bar.close()
        for r in stage_regs:
            r.close()
    staging_bytes = sum(b.numel() for b in stage_bufs)
    del stage_bufs
    t_get = time.perf_counter()
    _check_etags(bucket, shards, seen, expect_etags, changed)
    tensors = {}
    for i, ((key, _), h) in enumerate(zip(shards, headers)):
        for ti in h.tensors:
            if ti.name in tensors:
                raise SafetensorsError(_lib.WHARF_ERR_INVALID, f"tensor {ti.name!r} is in more "
                                       f"than one shard (again in s3://{bucket}/{key})")
            own = st.TensorInfo(ti.name, ti.dtype, ti.shape, 0, ti.nbytes)
            tensors[ti.name] = _view(dests.pop((i, ti.name)), 0, own)
    t_end = time.perf_counter()
    rep.update(arena=f"{'host' if dev.type == 'cpu' else dev} (a storage per tensor)",
               staged_reason=None if dev.type == "cpu" else "copy=True: a storage per tensor "
               "lands through host staging", staging_bytes=staging_bytes,
               bytes=sum(h.data_len for h in headers), shards=len(shards),
               header_s=t_hdr - t0, download_s=t_get - t_hdr, rebuild_s=t_end - t_get,
               transports=sorted({r.transport for r in all_reports}),
               fell_back=any(r.fell_back for r in all_reports), reports=all_reports,
               headers={k: h for (k, _), h in zip(shards, headers)})
    return tensors
