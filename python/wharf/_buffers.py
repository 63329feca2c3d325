# SPDX-License-Identifier: Apache-2.0
"""What a buffer argument of the client is (bytes-like, numpy, torch tensors on CPU or GPU, their
roots and bounds: _as_buf), and the registrations of buffers with libwharf (_Reg, the client's
cache of them, and Registration, what Client.register returns). wharf.client re-exports
Registration."""
from __future__ import annotations

import ctypes
import sys
from typing import TYPE_CHECKING, Any, Optional, Tuple

from . import _lib
from .errors import WharfError

if TYPE_CHECKING:
    from .client import Client


class _Buf:
    """A contiguous buffer: address, length, owner (kept alive during the call), kind; and the
    range worth registering (root: the whole array or tensor a view belongs to, so that
    later views of it find the registration)."""
    __slots__ = ("addr", "nbytes", "owner", "kind", "writable", "weakable", "root_addr",
                 "root_nbytes", "root")

    def __init__(self, addr: int, nbytes: int, owner: Any, kind: int, writable: bool,
                 weakable: bool, root: Optional[Tuple[int, int, Any]] = None) -> None:
        self.addr, self.nbytes, self.owner = addr, nbytes, owner
        self.kind, self.writable, self.weakable = kind, writable, weakable
        self.root_addr, self.root_nbytes, self.root = root or (addr, nbytes, owner)

    def sub(self, offset: int, n: int) -> "_Buf":
        return _Buf(self.addr + offset, n, self.owner, self.kind, self.writable, self.weakable,
                    (self.root_addr, self.root_nbytes, self.root))


def _torch_root(t: Any) -> Optional[Tuple[int, int, Any]]:
    """(addr, nbytes, tensor) of the contiguous tensor t is a view of, or of t itself."""
    base = getattr(t, "_base", None)
    if base is not None and base.is_contiguous() and base.device == t.device:
        a, n = base.data_ptr(), base.numel() * base.element_size()
        if a <= t.data_ptr() and t.data_ptr() + t.numel() * t.element_size() <= a + n:
            return a, n, base
    return None


def _numpy_root(arr: Any) -> Optional[Tuple[int, int, Any]]:
    import numpy
    root = arr
    while isinstance(root.base, numpy.ndarray):
        root = root.base
    if root is arr or not (root.flags.c_contiguous or root.flags.f_contiguous):
        return None
    a, n = root.__array_interface__["data"][0], root.nbytes
    b = arr.__array_interface__["data"][0]
    if a <= b and b + arr.nbytes <= a + n:
        return a, n, root
    return None


def _as_buf(obj: Any, what: str) -> _Buf:
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(obj, torch.Tensor):
        if obj.is_sparse or obj.layout != torch.strided:
            raise WharfError(_lib.WHARF_ERR_INVALID, f"{what}: a {obj.layout} tensor has no "
                             "contiguous bytes; pass a dense tensor")
        if not obj.is_contiguous():
            raise WharfError(_lib.WHARF_ERR_INVALID, f"{what}: the tensor is not contiguous "
                             "(transfers need one address range); pass t.contiguous()")
        if obj.device.type not in ("cpu", "cuda"):
            raise WharfError(_lib.WHARF_ERR_INVALID,
                             f"{what}: tensors on {obj.device} are not supported")
        kind = _lib.MEM_CUDA if obj.device.type == "cuda" else _lib.MEM_HOST
        return _Buf(obj.data_ptr(), obj.numel() * obj.element_size(), obj, kind, True, True,
                    _torch_root(obj))
    np = sys.modules.get("numpy")
    if np is not None and isinstance(obj, np.ndarray):
        if not (obj.flags.c_contiguous or obj.flags.f_contiguous):
            raise WharfError(_lib.WHARF_ERR_INVALID, f"{what}: the array is not contiguous "
                             "(transfers need one address range); pass np.ascontiguousarray(a)")
        return _Buf(obj.__array_interface__["data"][0], obj.nbytes, obj, _lib.MEM_HOST,
                    bool(obj.flags.writeable), True, _numpy_root(obj))
    try:
        mv = memoryview(obj)
    except TypeError:
        raise WharfError(_lib.WHARF_ERR_INVALID,
                         f"{what}: expected a numpy array, a torch tensor or a buffer "
                         f"(bytes, bytearray, memoryview), not {type(obj).__name__}") from None
    if not mv.contiguous:
        raise WharfError(_lib.WHARF_ERR_INVALID, f"{what}: the buffer is not contiguous")
    nbytes = mv.nbytes
    if nbytes == 0:
        return _Buf(0, 0, mv, _lib.MEM_HOST, not mv.readonly, False)
    if mv.readonly and isinstance(obj, bytes):
        # the bytes object's own storage (c_char_p points at it; no copy, no numpy needed)
        addr = ctypes.cast(ctypes.c_char_p(obj), ctypes.c_void_p).value
        owner: Any = obj
    elif mv.readonly:
        try:
            import numpy
        except ImportError:  # no numpy (a bare install): a copy of the read-only buffer
            owner = bytearray(mv)
            addr = ctypes.addressof((ctypes.c_char * nbytes).from_buffer(owner))
        else:
            arr = numpy.frombuffer(mv, dtype=numpy.uint8)
            addr = arr.__array_interface__["data"][0]
            owner = arr
    else:
        flat = mv.cast("B") if mv.format != "B" or mv.ndim != 1 else mv
        addr = ctypes.addressof((ctypes.c_char * nbytes).from_buffer(flat))
        owner = mv
    return _Buf(int(addr or 0), nbytes, owner, _lib.MEM_HOST, not mv.readonly, False)


class _Reg:
    __slots__ = ("addr", "end", "handle", "kind", "ref", "strong", "inuse", "dead", "pinned",
                 "__weakref__")

    def __init__(self, addr: int, end: int, handle: Any, kind: int) -> None:
        self.addr, self.end, self.handle, self.kind = addr, end, handle, kind
        self.ref: Any = None
        self.strong: Any = None
        self.inuse = 0
        self.dead = False
        self.pinned = False


class Registration:
    """A registration pinned by client.register(buf); deregistered by close() (or with)."""

    def __init__(self, client: "Client", reg: Any, owner: Any) -> None:
        self._client, self._reg, self._owner = client, reg, owner

    @property
    def addr(self) -> int:
        return int(self._reg.addr)

    @property
    def nbytes(self) -> int:
        return int(self._reg.end - self._reg.addr)

    def close(self) -> None:
        if self._reg is not None:
            self._client._unpin(self._reg)
            self._reg = self._owner = None

    def __enter__(self) -> "Registration":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
