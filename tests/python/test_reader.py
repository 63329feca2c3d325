# SPDX-License-Identifier: Apache-2.0
"""Lazy readers (wharf.reader): a file-like ObjectReader over one object with the three
reader choices (sequential read-ahead, a ranged GET per read, the whole object), read_ranges
and coalesce(), the DCP reader's run planning, and the object datasets' reader= option: a
sample that reads a header and one slice fetches only those."""
import io
import os

import pytest
import torch
from torch.utils.data import DataLoader

import wharf
from wharf.reader import ObjectReader, coalesce, open_object, runs
from wharf.torch import ObjectIterableDataset, ObjectMapDataset

SIZE = 1 << 20


@pytest.fixture()
def obj(client, bucket):
    data = os.urandom(SIZE)
    client.put(bucket, "blob", data)
    return data


def test_readers_read_seek_readinto(client, bucket, obj):
    for reader in ("sequential", "range", "whole"):
        with open_object(client, bucket, "blob", reader=reader, buffer_size=64 << 10) as f:
            assert f.readable() and f.seekable() and not f.writable() and f.size == SIZE
            assert f.read(64) == obj[:64] and f.tell() == 64
            assert f.seek(500_000) == 500_000
            buf = bytearray(1000)
            assert f.readinto(buf) == 1000 and bytes(buf) == obj[500_000:501_000]
            t = torch.empty(4096, dtype=torch.uint8)
            f.seek(-4096, io.SEEK_END)
            assert f.readinto(t.numpy()) == 4096 and bytes(t.numpy()) == obj[-4096:]
            assert f.read(10) == b"" and f.tell() == SIZE
            f.seek(-10, io.SEEK_CUR)
            assert f.read() == obj[-10:]
            f.seek(SIZE - 100)
            assert f.read(1000) == obj[-100:]  # a read past the end stops at it
            gets = f.stats["gets"]
        assert f.closed
        with pytest.raises(wharf.WharfError, match="closed"):
            f.read(1)
        if reader == "whole":
            assert gets == 1
        elif reader == "range":
            assert gets == 5  # one per read that has bytes to return
        else:  # 64 KiB read-ahead: 0, 500000, the tail (SIZE-4096 .. SIZE inside one)
            assert gets == 3
    with pytest.raises(wharf.WharfError, match="reader must be"):
        ObjectReader(client, bucket, "blob", reader="mmap")
    with ObjectReader(client, bucket, "blob") as f:
        with pytest.raises(wharf.WharfError, match="before the start"):
            f.seek(-1)
        # a BufferedReader over it, as open() gives
        assert io.BufferedReader(f).read(100) == obj[:100]


def test_range_reader_fetches_only_what_is_read(client, bucket, obj):
    with open_object(client, bucket, "blob", reader="range") as f:
        f.read(16)
        f.seek(SIZE // 2)
        f.read(4096)
        assert f.stats == {"gets": 2, "bytes": 16 + 4096}
    with open_object(client, bucket, "blob", reader="range") as f:
        got = f.read_ranges([(900_000, 10), (0, 16), (16, 16), (100, 8), (900_020, 5)],
                            max_gap=100)
        assert got == [obj[900_000:900_010], obj[:16], obj[16:32], obj[100:108],
                       obj[900_020:900_025]]
        if client.rdma:  # one scatter GET of exactly the ranges' bytes (test_scatter.py)
            assert f.stats["gets"] == 1 and f.stats["bytes"] == 10 + 16 + 16 + 8 + 5
        else:
            assert f.stats["gets"] == 2 and f.stats["bytes"] == 108 + 25


def test_coalesce_and_runs():
    assert coalesce([]) == []
    assert coalesce([(100, 10), (0, 10), (10, 5)]) == [(0, 15, [1, 2]), (100, 10, [0])]
    assert coalesce([(100, 10), (0, 10), (10, 5)], max_gap=85) == [(0, 110, [1, 2, 0])]
    assert coalesce([(0, 10), (5, 2)]) == [(0, 10, [0, 1])]          # inside: one span
    assert coalesce([(0, 10), (10, 10), (20, 10)], max_span=20) == [(0, 20, [0, 1]),
                                                                    (20, 10, [2])]
    with pytest.raises(wharf.WharfError):
        coalesce([(-1, 5)])
    items = [("a", 0, 10), ("a", 10, 5000), ("a", 5010, 10), ("a", 5100, 10), ("b", 0, 10),
             ("b", 10, 10)]
    # small is 100 bytes: the 5000-byte item goes alone; a's small ones within 100 bytes
    assert runs(items, 100, 100, 1 << 20) == [(0, 1), (1, 2), (2, 4), (4, 6)]
    assert runs(items, 0, 100, 1 << 20) == [(0, 1), (1, 2), (2, 3), (3, 4), (4, 6)]


def _header_and_slice(f):
    """A sample that reads a 16-byte header naming an offset, and 4 KiB there."""
    head = f.read(16)
    off = int.from_bytes(head[:8], "little") % (f.size - 4096)
    f.seek(off)
    return f.key, head, off, f.read(4096), dict(f.stats)


def test_datasets_reader_option(client, bucket):
    objs = {f"lazy/{i}": os.urandom(256 << 10) for i in range(4)}
    for k, v in objs.items():
        client.put(bucket, k, v)
    url = f"s3://{bucket}/lazy/"
    for ds in (ObjectMapDataset.from_prefix(url, client=client, reader="range",
                                            transform=_header_and_slice),
               ObjectIterableDataset.from_prefix(url, client=client, reader="range",
                                                 transform=_header_and_slice)):
        got = [ds[i] for i in range(len(ds))] if isinstance(ds, ObjectMapDataset) \
            else list(ds)
        assert len(got) == 4
        for k, head, off, sl, st in got:
            assert head == objs[k][:16] and sl == objs[k][off:off + 4096]
            assert st == {"gets": 2, "bytes": 16 + 4096}  # not 256 KiB
    # in DataLoader workers (fork), the transform's result crosses back
    ds = ObjectIterableDataset.from_prefix(url, client=client, reader="sequential",
                                           transform=_header_and_slice)
    got = list(DataLoader(ds, batch_size=None, num_workers=2, multiprocessing_context="fork",
                          timeout=60))
    assert sorted(g[0] for g in got) == sorted(objs)
    # without transform the item is the open reader
    m = ObjectMapDataset.from_prefix(url, client=client, reader="whole")
    with m[0] as f:
        assert f.read() == objs[f.key] and f.stats["gets"] == 1
    with pytest.raises(wharf.WharfError, match="reader must be"):
        ObjectMapDataset.from_prefix(url, client=client, reader="lazy")
