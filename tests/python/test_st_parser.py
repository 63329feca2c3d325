# SPDX-License-Identifier: Apache-2.0
"""libwharf's safetensors header parser through the ABI (wharf_st_*): files from the
spec-exact writer in st_spec.py parse to the same table; malformed headers are refused with
messages that name the tensor and the field."""
import json
import struct

import pytest

import st_spec
from wharf import SafetensorsError
from wharf import safetensors as wst


def parse(blob, file_size="len"):
    fs = len(blob) if file_size == "len" else file_size
    n = wst.header_len(blob[:8], fs)
    return wst.parse_header(blob[:8 + n], fs)


def test_valid_every_dtype():
    tensors = {}
    for i, (dt, bits) in enumerate(sorted(st_spec.ITEMSIZE_BITS.items())):
        shape = (2, 4) if bits % 8 else (3, i % 3 + 1)
        tensors[f"t.{dt}"] = (dt, shape, bytes(range(st_spec.nbytes(dt, shape))))
    tensors["empty"] = ("F32", (0, 7), b"")
    tensors["scalar"] = ("F64", (), b"\x00" * 8)
    blob = st_spec.serialize(tensors, metadata={"format": "pt", "k": "v\u00e9"})
    h = parse(blob)
    assert h.metadata == {"format": "pt", "k": "v\u00e9"}
    assert h.data_offset == 8 + struct.unpack("<Q", blob[:8])[0]
    assert h.data_offset % 8 == 0
    assert h.data_len == len(blob) - h.data_offset
    got = h.by_name()
    assert set(got) == set(tensors)
    hdr = json.loads(blob[8:h.data_offset])
    for name, (dt, shape, raw) in tensors.items():
        t = got[name]
        assert (t.dtype, t.shape) == (dt, tuple(shape))
        assert [t.begin, t.end] == hdr[name]["data_offsets"]
    offs = [(t.begin, t.end) for t in h.tensors]
    assert offs == sorted(offs)
    assert wst.dtype_bits("BF16") == 16 and wst.dtype_bits("F4") == 4
    assert wst.dtype_bits("F6_E3M2") == 6 and wst.dtype_bits("NOPE") == 0


def test_no_metadata_and_no_tensors():
    h = parse(st_spec.serialize({}))
    assert h.tensors == [] and h.metadata is None and h.data_len == 0
    h = parse(st_spec.raw_file({"__metadata__": None}, b""))
    assert h.metadata is None


def test_unknown_file_size():
    blob = st_spec.serialize({"a": ("U8", (5,), b"12345")})
    h = parse(blob, file_size=None)
    assert h.data_len == 5


def test_header_longer_than_probe_is_asked_for():
    blob = st_spec.serialize({"a": ("U8", (5,), b"12345")})
    n = struct.unpack("<Q", blob[:8])[0]
    with pytest.raises(SafetensorsError, match=f"read the first {n + 8} bytes"):
        wst.parse_header(blob[:8 + n - 1], len(blob))


def bad(header, data=b"", match=None, pad=True, file_size="len", status=None):
    blob = st_spec.raw_file(header, data, pad)
    with pytest.raises(SafetensorsError) as ei:
        parse(blob, file_size)
    if match:
        assert match in str(ei.value), str(ei.value)
    if status is not None:
        assert ei.value.status == status
    return str(ei.value)


def t(dt, shape, b, e):
    return {"dtype": dt, "shape": shape, "data_offsets": [b, e]}


def test_header_bomb():
    blob = struct.pack("<Q", 1 << 40) + b"{}"
    with pytest.raises(SafetensorsError, match="header bomb") as ei:
        wst.header_len(blob[:8], 1 << 50)
    assert ei.value.status == -16
    # just over the reference limit, and a length running past the file
    with pytest.raises(SafetensorsError, match="over the limit"):
        wst.header_len(struct.pack("<Q", 100_000_001), 1 << 40)
    with pytest.raises(SafetensorsError, match="runs past the end"):
        wst.header_len(struct.pack("<Q", 64), 40)
    with pytest.raises(SafetensorsError, match="fewer than the 8-byte"):
        wst.header_len(b"\x01\x00\x00\x00\x00\x00\x00\x00", 5)


def test_malformed_json():
    bad(b'{"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]', b"x",
        match="invalid JSON")
    bad(b"[1, 2, 3]", match="not an object")
    bad(b'{"a": 1}\x00\x00', match="invalid JSON", pad=False)
    bad(b'{"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}, '
        b'"a": {"dtype": "U8", "shape": [1], "data_offsets": [1, 2]}}', b"xy",
        match="duplicate")
    bad(b'{"\xff\xfe": 1}', match="invalid JSON")


def test_bad_fields():
    m = bad({"w": t("F33", [1], 0, 4)}, b"\0" * 4)
    assert 'tensor "w"' in m and '"dtype"' in m and "F33" in m
    m = bad({"w": {"dtype": 5, "shape": [1], "data_offsets": [0, 1]}}, b"\0")
    assert '"dtype" is not a string' in m
    m = bad({"w": t("F32", [-1], 0, 4)}, b"\0" * 4)
    assert '"shape"' in m and "non-negative" in m
    m = bad({"w": t("F32", [1.5], 0, 4)}, b"\0" * 4)
    assert '"shape"' in m
    m = bad({"w": t("F32", "3", 0, 4)}, b"\0" * 4)
    assert '"shape" is not an array' in m
    m = bad({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0]}}, b"\0" * 4)
    assert '"data_offsets"' in m
    m = bad({"w": {"dtype": "F32", "shape": [1], "data_offsets": ["0", "4"]}}, b"\0" * 4)
    assert '"data_offsets"' in m
    m = bad({"w": {"dtype": "F32", "shape": [1]}}, b"\0" * 4)
    assert 'missing field "data_offsets"' in m
    m = bad({"w": dict(t("U8", [1], 0, 1), extra=1)}, b"\0")
    assert 'unknown field "extra"' in m
    m = bad({"w": [1, 2]}, b"")
    assert "not an object" in m
    m = bad({"w": t("F32", [2, 2], 0, 12)}, b"\0" * 12)
    assert "spans 12 bytes" in m and "need 16" in m
    m = bad({"w": t("F32", [1], 4, 0)}, b"\0" * 4)
    assert "before begin" in m
    m = bad({"w": t("F4", [3], 0, 2)}, b"\0\0")
    assert "whole bytes" in m
    m = bad({"w": t("U8", [1] * 65, 0, 1)}, b"\0")
    assert "dimensions" in m
    m = bad({"w": t("F64", [2 ** 62, 2 ** 62], 0, 8)}, b"\0" * 8)
    assert "overflow" in m
    m = bad({"__metadata__": {"a": 1}}, b"")
    assert "__metadata__" in m and "not a" in m
    m = bad({"__metadata__": ["x"]}, b"")
    assert "__metadata__" in m


def test_offsets_outside_overlapping_holes():
    m = bad({"a": t("U8", [4], 0, 4), "b": t("U8", [4], 4, 8)}, b"\0" * 6)
    assert 'tensor "b"' in m and "past the data section" in m
    m = bad({"a": t("U8", [4], 0, 4), "b": t("U8", [4], 2, 6)}, b"\0" * 6)
    assert "overlaps" in m and '"a"' in m and '"b"' in m
    m = bad({"a": t("U8", [4], 0, 4), "b": t("U8", [4], 0, 4)}, b"\0" * 4)
    assert "overlaps" in m
    m = bad({"a": t("U8", [2], 0, 2), "b": t("U8", [2], 4, 6)}, b"\0" * 6)
    assert "holes" in m and 'tensor "b"' in m
    m = bad({"a": t("U8", [2], 0, 2)}, b"\0" * 5)
    assert "trailing bytes" in m


def test_long_names_are_truncated_in_messages():
    name = "n" * 5000
    m = bad({name: t("F32", [1], 0, 3)}, b"\0" * 3)
    assert len(m) < 1100 and "..." in m
