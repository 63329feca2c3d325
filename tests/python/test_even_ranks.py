# SPDX-License-Identifier: Apache-2.0
"""Even ranks: every wharf dataset gives each rank the same number of items (batches) per
epoch, as torch's DistributedSampler does (even="pad": the shortfall repeated from the
stream's start; "drop": the tail dropped), also with fewer shards than ranks; drop_last
drops the last partial batch of the rank's stream, not the tail of every shard. 3, 5 and 8
ranks on 4 shards of unequal sizes, read through a DataLoader with workers too."""
import json

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

import wharf
from wharf.torch import (JpegTarShards, ObjectIterableDataset, RawImageShards, TokenDataset,
                         write_raw_image_shards)
from wharf.torch.data import TokenShardWriter
from wharfd import unique_bucket
from test_datasets import build_tar, fake_jpeg

SEQ = 8
SIZES = [30, 20, 25, 17]  # sequences (samples) per shard: 92


@pytest.fixture(scope="module")
def eb(wharfd):
    from conftest import make_client
    c = make_client(wharfd, "http")
    b = unique_bucket("even")
    c.create_bucket(b)
    n = 0
    for s, size in enumerate(SIZES):  # token shards: every token of sequence i is i
        with TokenShardWriter(f"s3://{b}/tok/", SEQ, size, client=c, first_index=s) as w:
            w.write(np.repeat(np.arange(n, n + size, dtype=np.int32), SEQ))
        n += size
    with TokenShardWriter(f"s3://{b}/big/", SEQ, 250, client=c) as w:
        w.write(np.repeat(np.arange(1000, dtype=np.int32), SEQ))
    imgs = np.stack([np.full((2, 3, 1), i % 256, np.uint8) for i in range(sum(SIZES))])
    k0 = 0
    for s, size in enumerate(SIZES):
        write_raw_image_shards(f"s3://{b}/raw{s}/", imgs[k0:k0 + size],
                               list(range(k0, k0 + size)), size, client=c)
        k0 += size
    k0 = 0
    for s, size in enumerate(SIZES):
        blob, index = build_tar([(f"{k0 + i:04d}", fake_jpeg(k0 + i), k0 + i)
                                 for i in range(size)])
        c.put(b, f"jpeg/shard-{s}.tar", blob)
        c.put(b, f"jpeg/shard-{s}.index.json", json.dumps({"samples": index}).encode())
        k0 += size
    for s in range(4):
        c.put(b, f"obj/{s}", bytes([s]) * (s + 1))
    yield c, b
    c.close()


def _tok(b):
    return [int(x) for x in b.reshape(-1, SEQ)[:, 0]]


def _rank_items(make, world, workers=0):
    out = []
    for r in range(world):
        ds = make(r, world)
        if workers:
            got = list(DataLoader(ds, batch_size=None, num_workers=workers,
                                  multiprocessing_context="fork", timeout=60))
        else:
            got = list(ds)
        assert len(got) == len(ds), (r, world, len(got), len(ds))
        out.append(got)
    return out


@pytest.mark.parametrize("world", [3, 5, 8])
def test_tokens_equal_batches(eb, world):
    c, b = eb
    total = sum(SIZES)
    for even in ("pad", "drop"):
        per = -(-total // world) if even == "pad" else total // world
        items = _rank_items(lambda r, w: TokenDataset(f"s3://{b}/tok/", client=c, rank=r,
                                                      world_size=w, batch_size=4,
                                                      drop_last=False, even=even,
                                                      buffer_bytes=SEQ * 4 * 12), world)
        counts = {len(x) for x in items}
        assert counts == {-(-per // 4)}, (even, counts)
        seqs = [s for x in items for bt in x for s in _tok(bt)]
        assert len(seqs) == per * world
        if even == "pad":  # everything, the shortfall from the stream's start
            assert seqs == (list(range(total)) * 2)[:per * world]
        else:
            assert seqs == list(range(per * world))
    # DataLoader workers split a rank's batches; every rank still has as many
    items = _rank_items(lambda r, w: TokenDataset(f"s3://{b}/tok/", client=c, rank=r,
                                                  world_size=w, batch_size=4,
                                                  shuffle=True, seed=3), world, workers=2)
    assert len({len(x) for x in items}) == 1


def test_drop_last_is_the_streams(eb):
    c, b = eb
    ds = TokenDataset(f"s3://{b}/big/", client=c, batch_size=16, drop_last=True)
    got = [s for bt in ds for s in _tok(bt)]
    assert len(ds) == 62 and got == list(range(992))  # not 4 x 15 x 16 = 960
    ds = TokenDataset(f"s3://{b}/big/", client=c, batch_size=16, drop_last=False)
    got = [s for bt in ds for s in _tok(bt)]
    assert len(ds) == 63 and got == list(range(1000))


@pytest.mark.parametrize("world", [3, 5, 8])
def test_images_jpeg_objects_equal_counts(eb, world):
    c, b = eb
    keys = [f"raw{s}/shard-00000.raw" for s in range(4)]
    items = _rank_items(lambda r, w: RawImageShards(c, b, keys=keys, rank=r, world_size=w,
                                                    batch_size=3), world)
    assert len({len(x) for x in items}) == 1
    labels = [int(v) for x in items for _, lab in x for v in lab]
    imgs = [int(v) for x in items for im, _ in x for v in im[:, 0, 0, 0]]
    assert imgs == [v % 256 for v in labels] and set(labels) == set(range(sum(SIZES)))
    items = _rank_items(lambda r, w: JpegTarShards(c, b, prefix="jpeg/", rank=r,
                                                   world_size=w), world)
    assert len({len(x) for x in items}) == 1
    assert {lab for x in items for _, lab in x} == set(range(sum(SIZES)))
    assert all(d == fake_jpeg(lab) for x in items for d, lab in x)
    # 4 objects on 5 or 8 ranks: every rank has one or more (none is left out silently)
    items = _rank_items(lambda r, w: ObjectIterableDataset.from_prefix(
        f"s3://{b}/obj/", client=c, rank=r, world_size=w), world)
    assert {len(x) for x in items} == {-(-4 // world)}
    items = _rank_items(lambda r, w: ObjectIterableDataset.from_prefix(
        f"s3://{b}/obj/", client=c, rank=r, world_size=w, even="drop"), world)
    assert {len(x) for x in items} == {4 // world}


def test_bad_even(eb):
    c, b = eb
    with pytest.raises(wharf.WharfError, match="even must be"):
        TokenDataset(f"s3://{b}/tok/", client=c, even="spread")
