# SPDX-License-Identifier: Apache-2.0
"""wharf.torch.load_safetensors on files written by the test's spec-exact writer (st_spec.py):
single files, Hugging Face snapshot directories with an index, every dtype (fp8 as raw bytes
where torch lacks it), misaligned offsets, and malformed files."""
import json
import struct

import numpy as np
import pytest
import torch

import st_spec
import wharf
import wharf.torch as wt
from conftest import Witness
from wharfd import unique_bucket


def f32(a):
    return ("F32", a.shape, a.astype("<f4").tobytes())


def bf16_bytes(x):
    u = np.asarray(x, dtype="<f4").view("<u4")
    return ((u >> 16).astype("<u2")).tobytes()


def check(t, dtype, shape, raw):
    assert tuple(t.shape) == tuple(shape)
    assert t.dtype == dtype
    b = t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
    assert b == raw


def model_tensors(seed=0):
    rng = np.random.default_rng(seed)
    out = {}
    for i in range(6):
        out[f"model.layers.{i}.mlp.weight"] = f32(rng.standard_normal((32, 16)))
        x = rng.standard_normal(64).astype("<f4")
        out[f"model.layers.{i}.norm.weight"] = ("BF16", (64,), bf16_bytes(x))
    out["model.embed_tokens.weight"] = ("F16", (50, 8),
                                        rng.standard_normal((50, 8)).astype("<f2").tobytes())
    return out


def test_single_file_every_dtype(client, bucket, wharfd, provider):
    rng = np.random.default_rng(1)
    T = {
        "bool": ("BOOL", (3, 2), bytes([1, 0, 1, 1, 0, 0])),
        "u8": ("U8", (5,), rng.integers(0, 256, 5, dtype=np.uint8).tobytes()),
        "i8": ("I8", (2, 2), rng.integers(-128, 128, 4, dtype=np.int8).tobytes()),
        "i16": ("I16", (3,), rng.integers(-9999, 9999, 3).astype("<i2").tobytes()),
        "u16": ("U16", (3,), rng.integers(0, 65535, 3).astype("<u2").tobytes()),
        "i32": ("I32", (2, 3), rng.integers(-99999, 99999, 6).astype("<i4").tobytes()),
        "u32": ("U32", (2,), rng.integers(0, 2 ** 32 - 1, 2, dtype=np.uint64).astype("<u4")
                .tobytes()),
        "i64": ("I64", (2,), np.array([-2 ** 63, 2 ** 63 - 1], dtype="<i8").tobytes()),
        "u64": ("U64", (1,), np.array([2 ** 64 - 1], dtype="<u8").tobytes()),
        "f16": ("F16", (4,), rng.standard_normal(4).astype("<f2").tobytes()),
        "bf16": ("BF16", (2, 2), bf16_bytes(rng.standard_normal(4))),
        "f32": f32(rng.standard_normal((3, 3))),
        "f64": ("F64", (2,), rng.standard_normal(2).astype("<f8").tobytes()),
        "c64": ("C64", (2,), rng.standard_normal(4).astype("<f4").tobytes()),
        "fp8a": ("F8_E4M3", (2, 3), rng.integers(0, 256, 6, dtype=np.uint8).tobytes()),
        "fp8b": ("F8_E5M2", (4,), rng.integers(0, 256, 4, dtype=np.uint8).tobytes()),
        "e8m0": ("F8_E8M0", (3,), rng.integers(0, 256, 3, dtype=np.uint8).tobytes()),
        "f4": ("F4", (2, 4), rng.integers(0, 256, 4, dtype=np.uint8).tobytes()),
        "f6": ("F6_E2M3", (4,), rng.integers(0, 256, 3, dtype=np.uint8).tobytes()),
        "scalar": ("F32", (), struct.pack("<f", 2.5)),
        "empty": ("F32", (0, 3), b""),
        "empty_bf16": ("BF16", (2, 0), b""),
    }
    blob = st_spec.serialize(T, metadata={"format": "pt"})
    client.put(bucket, "one/model.safetensors", blob)
    rep = {}
    with Witness(wharfd) as w:
        got = wt.load_safetensors(f"s3://{bucket}/one/model.safetensors", client=client,
                                  report=rep)
    assert set(got) == set(T)
    data_bytes = sum(len(v[2]) for v in T.values())
    assert rep["bytes"] == data_bytes
    if provider != "http":
        assert rep["transports"] == ["rdma"] and w.delta["get"] >= data_bytes
    native = {"BOOL": torch.bool, "U8": torch.uint8, "I8": torch.int8, "I16": torch.int16,
              "I32": torch.int32, "I64": torch.int64, "F16": torch.float16,
              "BF16": torch.bfloat16, "F32": torch.float32, "F64": torch.float64,
              "C64": torch.complex64}
    for extra, tn in (("U16", "uint16"), ("U32", "uint32"), ("U64", "uint64"),
                      ("F8_E4M3", "float8_e4m3fn"), ("F8_E5M2", "float8_e5m2"),
                      ("F8_E8M0", "float8_e8m0fnu")):
        if isinstance(getattr(torch, tn, None), torch.dtype):
            native[extra] = getattr(torch, tn)
    for name, (dt, shape, raw) in T.items():
        t = got[name]
        if dt in native:
            check(t, native[dt], shape, raw)
        elif dt in ("F4", "F6_E2M3"):
            check(t, torch.uint8, (len(raw),), raw)  # sub-byte: the flat bytes
        elif st_spec.ITEMSIZE_BITS[dt] == 8:
            check(t, torch.uint8, shape, raw)  # fp8 this torch lacks: raw bytes, same shape
        else:
            check(t, torch.uint8, tuple(shape) + (st_spec.ITEMSIZE_BITS[dt] // 8,), raw)
    assert float(got["scalar"]) == 2.5
    assert torch.equal(got["bf16"].float(), torch.from_numpy(
        (np.frombuffer(T["bf16"][2], "<u2").astype("<u4") << 16).view("<f4").reshape(2, 2)))


def test_snapshot_directory_with_index(client, bucket, wharfd, provider):
    T = model_tensors()
    names = sorted(T)
    shards = [names[0:5], names[5:9], names[9:]]
    weight_map = {}
    for i, part in enumerate(shards):
        f = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
        client.put(bucket, f"snap/{f}", st_spec.serialize({n: T[n] for n in part},
                                                          metadata={"format": "pt"}))
        weight_map.update({n: f for n in part})
    index = {"metadata": {"total_size": sum(len(v[2]) for v in T.values())},
             "weight_map": weight_map}
    client.put(bucket, "snap/model.safetensors.index.json", json.dumps(index).encode())
    client.put(bucket, "snap/config.json", b"{}")
    for url in (f"s3://{bucket}/snap", f"s3://{bucket}/snap/",
                f"s3://{bucket}/snap/model.safetensors.index.json"):
        got = wt.load_safetensors(url, client=client)
        assert set(got) == set(T)
        for n, (dt, shape, raw) in T.items():
            check(got[n], {"F32": torch.float32, "BF16": torch.bfloat16,
                           "F16": torch.float16}[dt], shape, raw)
        assert len({t.storage().data_ptr() for t in got.values()}) == 1  # one arena


def test_directory_without_index(client, bucket):
    T = model_tensors(2)
    names = sorted(T)
    client.put(bucket, "noidx/a.safetensors", st_spec.serialize({n: T[n] for n in names[:3]}))
    client.put(bucket, "noidx/b.safetensors", st_spec.serialize({n: T[n] for n in names[3:]}))
    client.put(bucket, "noidx/sub/c.safetensors", st_spec.serialize({"x": T[names[0]]}))
    got = wt.load_safetensors(f"s3://{bucket}/noidx", client=client)
    assert set(got) == set(T)
    client.put(bucket, "single/model.safetensors", st_spec.serialize({"x": T[names[0]]}))
    assert set(wt.load_safetensors(f"s3://{bucket}/single", client=client)) == {"x"}


def test_misaligned_offsets_are_copied(client, bucket):
    """A file (legal by the spec) whose F32 tensor starts at an odd offset: loads correctly,
    as a copy rather than a view."""
    T = {"odd": ("U8", (3,), b"abc"), "w": f32(np.arange(4, dtype="<f4"))}
    blob = st_spec.serialize(T, order=["odd", "w"])
    client.put(bucket, "mis.safetensors", blob)
    got = wt.load_safetensors(f"s3://{bucket}/mis.safetensors", client=client)
    check(got["w"], torch.float32, (4,), T["w"][2])
    check(got["odd"], torch.uint8, (3,), b"abc")


def test_header_larger_than_first_read(http_client):
    """A header over the 1 MiB first read is fetched in a second range read (headers are
    read over HTTP whatever the transport, so this runs once)."""
    client, bucket = http_client, unique_bucket("pyhdr")
    client.create_bucket(bucket)
    T = {f"t{i:05d}_" + "x" * 40: ("U8", (1,), bytes([i % 256])) for i in range(20000)}
    blob = st_spec.serialize(T, metadata={"pad": "y" * 100})
    assert struct.unpack("<Q", blob[:8])[0] > 1 << 20
    client.put(bucket, "bighdr.safetensors", blob)
    got = wt.load_safetensors(f"s3://{bucket}/bighdr.safetensors", client=client)
    assert len(got) == 20000 and int(got["t00300_" + "x" * 40][0]) == 300 % 256


def put_bad(client, bucket, key, blob):
    client.put(bucket, key, blob)
    return f"s3://{bucket}/{key}"


def t(dt, shape, b, e):
    return {"dtype": dt, "shape": shape, "data_offsets": [b, e]}


def test_malformed_files(client, bucket):
    cases = [
        (struct.pack("<Q", 1 << 45) + b"{}", "header bomb"),
        (struct.pack("<Q", 200) + b"{}", "runs past the end"),
        (b"\x01\x02", "fewer than the 8-byte"),
        (st_spec.raw_file({"a": t("U8", [4], 0, 4), "b": t("U8", [4], 2, 6)}, b"\0" * 6),
         "overlaps"),
        (st_spec.raw_file({"a": t("I32", [2], 0, 4)}, b"\0" * 4), "need 8"),
        (st_spec.raw_file({"a": t("Q8", [2], 0, 2)}, b"\0" * 2), "unknown dtype"),
        (st_spec.raw_file({"a": {"dtype": "U8", "shape": "2", "data_offsets": [0, 2]}},
                          b"\0" * 2), '"shape" is not an array'),
        (st_spec.raw_file({"a": t("U8", [2], 0, 2)}, b"\0" * 3), "trailing bytes"),
        (st_spec.raw_file(b"not json at all", b""), "invalid JSON"),
    ]
    for i, (blob, msg) in enumerate(cases):
        url = put_bad(client, bucket, f"bad/{i}.safetensors", blob)
        with pytest.raises(wharf.SafetensorsError) as ei:
            wt.load_safetensors(url, client=client)
        assert msg in str(ei.value), (i, str(ei.value))
        assert f"bad/{i}.safetensors" in str(ei.value)


def test_bad_index_and_urls(client, bucket):
    client.put(bucket, "bi/model.safetensors.index.json",
               json.dumps({"weight_map": {"a": "missing.safetensors"}}).encode())
    with pytest.raises(wharf.NotFoundError, match="missing.safetensors"):
        wt.load_safetensors(f"s3://{bucket}/bi", client=client)
    client.put(bucket, "bi2/model.safetensors.index.json", b'{"weight_map": [1]}')
    with pytest.raises(wharf.SafetensorsError, match="weight_map"):
        wt.load_safetensors(f"s3://{bucket}/bi2", client=client)
    client.put(bucket, "bi3/a.safetensors", st_spec.serialize({"x": ("U8", (1,), b"1")}))
    client.put(bucket, "bi3/model.safetensors.index.json",
               json.dumps({"weight_map": {"y": "a.safetensors"}}).encode())
    with pytest.raises(wharf.SafetensorsError, match="'y'"):
        wt.load_safetensors(f"s3://{bucket}/bi3", client=client)
    client.put(bucket, "dup/a.safetensors", st_spec.serialize({"x": ("U8", (1,), b"1")}))
    client.put(bucket, "dup/b.safetensors", st_spec.serialize({"x": ("U8", (1,), b"2")}))
    with pytest.raises(wharf.SafetensorsError, match="more than one shard"):
        wt.load_safetensors(f"s3://{bucket}/dup", client=client)
    with pytest.raises(wharf.NotFoundError, match="no model.safetensors"):
        wt.load_safetensors(f"s3://{bucket}/nothing-here", client=client)
    with pytest.raises(wharf.NotFoundError):
        wt.load_safetensors(f"s3://{bucket}/nope.safetensors", client=client)
    with pytest.raises(wharf.WharfError, match="bad URL"):
        wt.load_safetensors("/local/path/model.safetensors", client=client)
