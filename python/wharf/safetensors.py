# SPDX-License-Identifier: Apache-2.0
"""safetensors headers: parsed by libwharf's C parser (wharf_st_*), read from objects with
small HTTP range GETs, and written (for wharf.torch.save) in the reference layout.

Layout of a file: u64 LE N, N bytes of JSON (padded with spaces to a multiple of 8), then the
data section, which the tensors tile exactly in order of offset.
"""
import ctypes
import dataclasses
import json
import struct
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import _lib
from ._lib import lib
from .errors import SafetensorsError, WharfError, from_status

# Bytes read first from an object to find its header; most headers fit (then one request).
HEAD_PROBE = 1 << 20


@dataclasses.dataclass
class TensorInfo:
    name: str
    dtype: str           # safetensors name: "BF16", "F8_E4M3", ...
    shape: Tuple[int, ...]
    begin: int           # relative to the data section
    end: int

    @property
    def nbytes(self) -> int:
        return self.end - self.begin


@dataclasses.dataclass
class Header:
    tensors: List[TensorInfo]            # in order of offset
    metadata: Optional[Dict[str, str]]   # __metadata__ (str -> str) or None
    data_offset: int     # 8 + N
    data_len: int
    file_size: int

    def by_name(self) -> Dict[str, TensorInfo]:
        return {t.name: t for t in self.tensors}


def dtype_bits(name: str) -> int:
    """Bits per element of a safetensors dtype name (0 if unknown), from the C table."""
    return int(lib.wharf_st_dtype_bits(name.encode()))


def header_len(prefix8: bytes, file_size: Optional[int] = None, where: str = "") -> int:
    """N from the first 8 bytes of a file; refuses header bombs and N+8 > file_size."""
    if len(prefix8) < 8:
        raise SafetensorsError(_lib.WHARF_ERR_INVALID, f"{where}safetensors: {len(prefix8)} "
                               f"bytes is shorter than the 8-byte header length")
    n = ctypes.c_uint64()
    buf = ctypes.create_string_buffer(bytes(prefix8[:8]), 8)
    st = lib.wharf_st_header_len(buf, _lib.WHOLE if file_size is None else int(file_size),
                                 ctypes.byref(n))
    if st != _lib.OK:
        raise from_status(st, where.rstrip(": ") or None, cls=SafetensorsError)
    return int(n.value)


def parse_header(buf: bytes, file_size: Optional[int] = None, where: str = "") -> "Header":
    """Parses the header in buf (the first 8+N bytes of the file, or more) with the C parser.
    file_size None: the data section is taken to end at the last tensor."""
    buf = bytes(buf)
    cbuf = ctypes.create_string_buffer(buf, len(buf))
    h = ctypes.c_void_p()
    fs = _lib.WHOLE if file_size is None else int(file_size)
    st = lib.wharf_st_parse(cbuf, len(buf), fs, ctypes.byref(h))
    if st != _lib.OK:
        raise from_status(st, where.rstrip(": ") or None, cls=SafetensorsError)
    try:
        count = lib.wharf_st_count(h)
        tensors = []
        name, dtype = ctypes.c_char_p(), ctypes.c_char_p()
        ndim = ctypes.c_uint32()
        shape = (ctypes.c_uint64 * _lib.ST_MAX_DIMS)()
        b, e = ctypes.c_uint64(), ctypes.c_uint64()
        for i in range(count):
            rc = lib.wharf_st_tensor(h, i, ctypes.byref(name), ctypes.byref(dtype),
                                     ctypes.byref(ndim), shape, _lib.ST_MAX_DIMS, ctypes.byref(b),
                                     ctypes.byref(e))
            if rc != _lib.OK:
                raise from_status(rc, where.rstrip(": ") or None, cls=SafetensorsError)
            tensors.append(TensorInfo((name.value or b"").decode("utf-8"),
                                      (dtype.value or b"").decode(),
                                      tuple(shape[d] for d in range(ndim.value)), b.value,
                                      e.value))
        meta = lib.wharf_st_metadata_json(h)
        return Header(tensors=tensors, metadata=json.loads(meta) if meta else None,
                      data_offset=int(lib.wharf_st_data_offset(h)),
                      data_len=int(lib.wharf_st_data_len(h)),
                      file_size=file_size if file_size is not None
                      else int(lib.wharf_st_data_offset(h)) + int(lib.wharf_st_data_len(h)))
    finally:
        lib.wharf_st_free(h)


def read_header(client: Any, bucket: str, key: str, size: Optional[int] = None) -> Header:
    """The parsed header of the object bucket/key: one HTTP range GET of the first MiB (a
    second for the rest of a larger header). size: the object's size, when known."""
    where = f"s3://{bucket}/{key}: "
    if size is None:
        size = client.stat(bucket, key).length
    if size < 8:
        raise SafetensorsError(_lib.WHARF_ERR_INVALID, f"{where}the object has {size} bytes, "
                               "fewer than the 8-byte header length; not a safetensors file")
    first = client.get(bucket, key, offset=0, length=min(size, HEAD_PROBE), transport="http")
    n = header_len(first[:8], size, where)
    if 8 + n > len(first):
        rest = client.get(bucket, key, offset=len(first), length=8 + n - len(first),
                          transport="http")
        first = first + rest
    return parse_header(first[:8 + n], size, where)


def build_header(entries: Sequence[Tuple[str, str, Sequence[int], int, int]],
                 metadata: Optional[Dict[str, str]] = None) -> bytes:
    """Header bytes (u64 N + JSON padded to 8) for entries [(name, dtype, shape, begin, end)]
    and a str->str metadata map. The caller lays the data out; offsets must tile it."""
    d: Dict[str, Any] = {}
    if metadata:
        for k, v in metadata.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise WharfError(_lib.WHARF_ERR_INVALID, "safetensors __metadata__ must map "
                                 "strings to strings")
        d["__metadata__"] = metadata
    for name, dtype, shape, b, e in entries:
        if name in d:
            raise WharfError(_lib.WHARF_ERR_INVALID, f"duplicate tensor name {name!r}")
        d[name] = {"dtype": dtype, "shape": [int(x) for x in shape], "data_offsets": [b, e]}
    js = json.dumps(d, separators=(",", ":"), ensure_ascii=False).encode()
    js += b" " * ((8 - len(js) % 8) % 8)
    return struct.pack("<Q", len(js)) + js
