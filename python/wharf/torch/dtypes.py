# SPDX-License-Identifier: Apache-2.0
"""torch dtypes <-> safetensors dtype names, and tensors to and from raw bytes."""
from typing import Optional, Tuple

import torch

from .. import _lib
from .. import safetensors as st
from ..errors import WharfError


# torch dtype <-> safetensors name, for what this torch has.
_T2S = {torch.bool: "BOOL", torch.uint8: "U8", torch.int8: "I8", torch.int16: "I16",
        torch.int32: "I32", torch.int64: "I64", torch.float16: "F16", torch.bfloat16: "BF16",
        torch.float32: "F32", torch.float64: "F64", torch.complex64: "C64"}
for _tn, _sn in (("uint16", "U16"), ("uint32", "U32"), ("uint64", "U64"),
                 ("float8_e5m2", "F8_E5M2"), ("float8_e4m3fn", "F8_E4M3"),
                 ("float8_e8m0fnu", "F8_E8M0"), ("float8_e4m3fnuz", "F8_E4M3FNUZ"),
                 ("float8_e5m2fnuz", "F8_E5M2FNUZ")):
    if isinstance(getattr(torch, _tn, None), torch.dtype):
        _T2S[getattr(torch, _tn)] = _sn
_S2T = {v: k for k, v in _T2S.items()}
# Stored as their real view (trailing dimension 2), with the dtype named in the metadata.
_AS_REAL = {torch.complex128: "complex128"}
if isinstance(getattr(torch, "complex32", None), torch.dtype):
    _AS_REAL[torch.complex32] = "complex32"
_FROM_REAL = {v: k for k, v in _AS_REAL.items()}


def _prepare(name: str, t: torch.Tensor) -> Tuple[torch.Tensor, str, Optional[str]]:
    """(tensor to store, safetensors dtype, special) for a tensor to save: contiguous, on
    the host or its own GPU."""
    if t.layout != torch.strided:
        raise WharfError(_lib.WHARF_ERR_INVALID, f"tensor {name!r}: {t.layout} tensors cannot "
                         "be saved; convert with .to_dense()")
    if t.is_quantized:
        raise WharfError(_lib.WHARF_ERR_INVALID, f"tensor {name!r}: quantized tensors "
                         f"({t.dtype}) have no safetensors form; dequantize first")
    if t.device.type == "meta":
        raise WharfError(_lib.WHARF_ERR_INVALID, f"tensor {name!r} is on the meta device: it "
                         "has no data")
    t = t.detach()
    if t.is_conj():
        t = t.resolve_conj()
    if t.is_neg():
        t = t.resolve_neg()
    special = None
    if t.dtype in _T2S:
        dt = _T2S[t.dtype]
    elif t.dtype in _AS_REAL:
        special = _AS_REAL[t.dtype]
        t = torch.view_as_real(t.contiguous() if t.dtype == torch.complex128 else t)
        dt = _T2S[t.dtype]
    else:
        raise WharfError(_lib.WHARF_ERR_UNSUPPORTED, f"tensor {name!r}: dtype {t.dtype} has no "
                         "safetensors name and no stored form here")
    if t.device.type not in ("cpu", "cuda"):
        t = t.cpu()
    # CUDA tensors stay where they are: the save assembles them in GPU memory (or copies
    # them into its host staging buffer itself)
    return t.contiguous(), dt, special


def _as_bytes(t: torch.Tensor) -> torch.Tensor:
    """A uint8 view of a contiguous tensor's bytes."""
    if t.numel() == 0:
        return torch.empty(0, dtype=torch.uint8)
    return t.reshape(-1).view(torch.uint8)


def _itemsize(dt: str) -> int:
    return max(1, st.dtype_bits(dt) // 8)


def _view(arena: torch.Tensor, off: int, ti: st.TensorInfo) -> torch.Tensor:
    """The tensor ti as a view of arena[off:off+nbytes] (a copy when misaligned); dtypes torch
    lacks come back as uint8: fp8 with the same shape, wider ones with a trailing dimension of
    the item size, sub-byte ones (F4, F6) as the flat bytes."""
    raw = arena[off:off + ti.nbytes]
    tdt = _S2T.get(ti.dtype)
    if tdt is None:
        bits = st.dtype_bits(ti.dtype)
        if bits == 8:
            return raw.view(ti.shape)
        if bits % 8 == 0:
            return raw.view(*ti.shape, bits // 8)
        return raw
    if ti.nbytes == 0:
        return torch.empty(ti.shape, dtype=tdt, device=arena.device)
    size = torch.empty(0, dtype=tdt).element_size()
    if off % size:
        raw = raw.clone()  # misaligned in the file: a copy, not a view
    return raw.view(tdt).view(ti.shape)


T2S, S2T, AS_REAL, FROM_REAL = _T2S, _S2T, _AS_REAL, _FROM_REAL
prepare, as_bytes, itemsize, view = _prepare, _as_bytes, _itemsize, _view
