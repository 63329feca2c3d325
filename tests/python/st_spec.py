# SPDX-License-Identifier: Apache-2.0
"""A small safetensors writer written from the format's specification, independent of wharf's
own writer: u64 little-endian header length N, N bytes of UTF-8 JSON padded with spaces to a
multiple of 8, then the tensors' bytes back to back. Tensors are laid out by descending item
size, then name (the reference implementation's order); offsets are relative to the data."""
import json
import struct

ITEMSIZE_BITS = {"BOOL": 8, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8,
                 "I16": 16, "U16": 16, "F16": 16, "BF16": 16, "I32": 32, "U32": 32, "F32": 32,
                 "I64": 64, "U64": 64, "F64": 64, "C64": 64, "F4": 4, "F6_E2M3": 6,
                 "F6_E3M2": 6}


def nbytes(dtype, shape):
    n = 1
    for d in shape:
        n *= d
    bits = n * ITEMSIZE_BITS[dtype]
    assert bits % 8 == 0
    return bits // 8


def serialize(tensors, metadata=None, order=None):
    """tensors: {name: (dtype, shape, raw bytes)}. Returns the file's bytes."""
    names = order or sorted(tensors, key=lambda n: (-ITEMSIZE_BITS[tensors[n][0]], n))
    header = {}
    if metadata is not None:
        header["__metadata__"] = metadata
    off = 0
    for n in names:
        dt, shape, raw = tensors[n]
        assert len(raw) == nbytes(dt, shape), n
        header[n] = {"dtype": dt, "shape": list(shape), "data_offsets": [off, off + len(raw)]}
        off += len(raw)
    js = json.dumps(header).encode("utf-8")
    js += b" " * (-len(js) % 8)
    return struct.pack("<Q", len(js)) + js + b"".join(tensors[n][2] for n in names)


def raw_file(header_obj, data, pad=True):
    """A file from an arbitrary header object (for malformed cases)."""
    js = header_obj if isinstance(header_obj, bytes) else json.dumps(header_obj).encode()
    if pad:
        js += b" " * (-len(js) % 8)
    return struct.pack("<Q", len(js)) + js + data
