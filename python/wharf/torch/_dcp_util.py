# SPDX-License-Identifier: Apache-2.0
"""Helpers of wharf.torch.dcp that need nothing of torch.distributed.checkpoint: tensor bytes,
the generations a .metadata names and retires, and the WharfError inside a DCP exception."""
from __future__ import annotations

import pickle
import time
from typing import Any, Dict, Optional, Set, Tuple

import torch

from .. import _lib
from ..errors import ChecksumError
from .dtypes import as_bytes as _as_bytes


def _dtype_name(dt: Any) -> Any:
    return str(dt).replace("torch.", "")


def _nbytes(t: Any) -> Any:
    return t.numel() * t.element_size()


def _bytes_of(t: Any) -> Any:
    """A 1-D uint8 view of a contiguous tensor's bytes, on its device."""
    if t.is_complex():
        t = torch.view_as_real(t)
    return _as_bytes(t)


def _show(v: Any) -> Any:
    return f"{v:#010x}" if isinstance(v, int) else str(v)


def _generations(raw: bytes) -> Tuple[Optional[Set[str]], Dict[str, float]]:
    """(the data objects a .metadata names, those it lists as retired {name: unix time});
    (None, {}) for a .metadata that is not WharfStorageWriter's."""
    try:
        md = pickle.loads(raw)
        live = {si.key for si in (md.storage_data or {}).values()}
        retired = {str(k): float(v) for k, v in (getattr(md, "wharf_retired", None)
                                                  or {}).items()}
    except Exception:  # noqa: B902 (any unpickling failure: not ours, replaced all the same)
        return None, {}
    return live, retired


def _retire(live: Optional[Set[str]], retired: Dict[str, float], before: Set[str],
            new: Set[str], grace: float) -> Tuple[Dict[str, float], Set[str]]:
    """({name: unix time retired} for the new .metadata to list, the names to delete after
    its commit), of the objects listed before the save (`before`): those of the replaced
    .metadata (`live`; None: all of `before`) are retired now, retired ones stay until grace
    seconds have passed, the rest (orphans) go."""
    if grace <= 0:
        return {}, before - new
    now = time.time()
    keep = {k: now for k in (before if live is None else live) if k in before and k not in new}
    for k, since in retired.items():
        if k in before and k not in new and k not in keep and now - since < grace:
            keep[k] = since
    return keep, before - new - set(keep)


def _several_ranks() -> bool:
    dist: Any = torch.distributed
    return bool(dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1)


def wharf_error(exc: Any) -> Any:
    """The WharfError that ended a DCP call, or None. DCP wraps what a storage reader or writer
    raised in a CheckpointException (a BaseException, not an Exception, in torch 2.x) whose
    failures map each rank to its exception (or to an (exception, traceback) pair), and
    sometimes chains it as a cause: this looks through all of them.

        try:
            dcp.load(sd, storage_reader=WharfStorageReader(url, client=c))
        except BaseException as e:
            err = wharf_error(e)   # e.g. a ChecksumError naming the object and its bytes
    """
    from ..errors import WharfError
    seen, todo = set(), [exc]
    while todo:
        x = todo.pop(0)
        if x is None or id(x) in seen:
            continue
        seen.add(id(x))
        if isinstance(x, tuple):
            todo.extend(x)
            continue
        if isinstance(x, WharfError):
            return x
        if isinstance(x, BaseException):
            todo.extend([x.__cause__, x.__context__])
            f = getattr(x, "failures", None)
            if isinstance(f, dict):
                todo.extend(f.values())
            e = getattr(x, "exception", None)   # a wrapped-exception record
            if isinstance(e, BaseException):
                todo.append(e)
        elif isinstance(getattr(x, "exception", None), BaseException):
            todo.append(x.exception)
    return None


def checksum_error(url: str, r: Any, info: Any, bad: Tuple[int, Any, Any],
                   etag: Optional[str]) -> ChecksumError:
    """The error for item r whose block bad[0] has checksum bad[1] where the save recorded
    bad[2] (info: its WharfStorageInfo; etag: the object's ETag now)."""
    k, got, want = bad
    if etag is None or info.etag is None:
        why = "the bytes changed after the save"
    elif etag != info.etag:
        why = f"the object was replaced after the save (ETag {info.etag} then, {etag} now)"
    else:
        why = "the object's ETag is unchanged: its bytes changed in storage or on the way"
    lo, hi = k * info.block, min((k + 1) * info.block, info.length)
    return ChecksumError(
        _lib.WHARF_ERR_CHECKSUM,
        f"{url}/{info.key}: item {getattr(r.storage_index, 'fqn', r.storage_index)}"
        f" bytes [{lo}, {hi}) (object bytes [{info.offset + lo}, {info.offset + hi})) "
        f"have {info.check} {_show(got)}, the save recorded {_show(want)}; {why}. "
        "Not loading changed data: load another checkpoint (verify=False reads it "
        "unchecked)")
