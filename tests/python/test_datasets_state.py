# SPDX-License-Identifier: Apache-2.0
"""Object datasets (ObjectMapDataset / ObjectIterableDataset over any prefix or list of
objects), shuffling by (seed, epoch), rank and DataLoader-worker sharding, len(), mid-epoch
resume through state_dict / load_state_dict (the Stateful protocol; StatefulDataLoader where
torchdata is installed), the same on TokenDataset and RawImageShards, and the shard writers
read back by the readers. Every test runs against a real wharfd."""
import json

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, DistributedSampler

import wharf
import wharf.torch as wt
from wharf.torch import (ObjectIterableDataset, ObjectMapDataset, RawImageShards,
                         RawImageShardWriter, TokenDataset, TokenShardWriter)

SEQ = 16


def put_objects(c, b, n=23, prefix="obj/"):
    """n objects of different sizes whose bytes say their index."""
    keys = []
    for i in range(n):
        k = f"{prefix}{i:04d}"
        c.put(b, k, bytes([i]) * (10 + 7 * i))
        keys.append(k)
    return keys


def idx_of(o):
    assert o.data == bytes([o.data[0]]) * o.size and o.size == 10 + 7 * o.data[0], o
    return o.data[0]


def test_wharf_data_is_wharf_torch_data():
    import wharf.data
    import wharf.torch.data
    assert wharf.data is wharf.torch.data
    assert wharf.data.TokenDataset is wt.TokenDataset


def test_map_dataset_prefix_objects_transform(client, bucket, wharfd):
    keys = put_objects(client, bucket)
    client.put(bucket, "objx", b"not under obj/")
    ds = ObjectMapDataset.from_prefix(f"s3://{bucket}/obj/", client=client)
    assert len(ds) == 23
    assert [idx_of(ds[i]) for i in range(23)] == list(range(23))
    assert ds[3].url == f"s3://{bucket}/obj/0003" and ds[3].key == "obj/0003"
    # a prefix without the slash is matched as given
    assert len(ObjectMapDataset.from_prefix(f"s3://{bucket}/obj", client=client)) == 24
    ds = ObjectMapDataset.from_objects([f"s3://{bucket}/{k}" for k in keys[5:0:-1]],
                                       client=client, transform=idx_of)
    assert [ds[i] for i in range(len(ds))] == [5, 4, 3, 2, 1]
    # a sampler splits it between ranks, the DataLoader between workers
    got = []
    for r in range(2):
        ds = ObjectMapDataset.from_objects(keys, bucket=bucket, client=client, transform=idx_of)
        dl = DataLoader(ds, batch_size=None, num_workers=2, multiprocessing_context="fork",
                        sampler=DistributedSampler(ds, num_replicas=2, rank=r, shuffle=False),
                        timeout=60)
        got += list(dl)
    assert sorted(got) == sorted(list(range(23)) + [0])  # DistributedSampler pads to 24


def test_object_datasets_bad_input(http_client, wharfd):
    c = http_client
    from wharfd import unique_bucket
    bk = unique_bucket("objbad")
    c.create_bucket(bk)
    with pytest.raises(wharf.NotFoundError, match="no objects under"):
        ObjectIterableDataset.from_prefix(f"s3://{bk}/none/", client=c)
    with pytest.raises(wharf.WharfError, match="needs bucket="):
        ObjectMapDataset.from_objects(["a"], client=c)
    with pytest.raises(wharf.WharfError, match="not a str"):
        ObjectMapDataset.from_objects(f"s3://{bk}/a", client=c)
    with pytest.raises(wharf.NotFoundError):
        ObjectMapDataset.from_objects([f"s3://{bk}/missing"], client=c)
    c.put(bk, "big", b"x" * 100)
    with pytest.raises(wharf.WharfError, match="more than buffer_bytes 50"):
        ObjectIterableDataset.from_prefix(f"s3://{bk}/", client=c, buffer_bytes=50)
    c.put(bk, "empty", b"")
    ds = ObjectIterableDataset.from_prefix(f"s3://{bk}/", client=c)
    assert sorted((o.key, o.size) for o in ds) == [("big", 100), ("empty", 0)]


def test_iterable_ranks_workers_shuffle_epochs(client, bucket, provider):
    put_objects(client, bucket)
    url = f"s3://{bucket}/obj/"

    def epoch(rank, world, e, seed=7, workers=0):
        ds = ObjectIterableDataset.from_prefix(url, client=client, transform=idx_of,
                                               rank=rank, world_size=world, shuffle=True,
                                               seed=seed)
        ds.set_epoch(e)
        if not workers:
            return list(ds), len(ds)
        dl = DataLoader(ds, batch_size=None, num_workers=workers,
                        multiprocessing_context="fork", timeout=60)
        return list(dl), len(ds)

    one, n = epoch(0, 1, 0)
    assert n == 23 and sorted(one) == list(range(23)) and one != list(range(23))
    assert epoch(0, 1, 0)[0] == one                      # same seed and epoch: same order
    assert epoch(0, 1, 1)[0] != one                      # another epoch: another order
    assert epoch(0, 1, 0, seed=8)[0] != one              # another seed: another order
    # ranks take every world-th item of the one global order, padded from its start (as
    # DistributedSampler) so that each has 8: all covered, one item twice
    parts = [epoch(r, 3, 0) for r in range(3)]
    assert [p[1] for p in parts] == [8, 8, 8]
    for r in range(3):
        assert parts[r][0] == (one + one[:1])[r::3]
    # DataLoader workers split a rank's items between them, none twice
    got, _ = epoch(1, 2, 0, workers=2)
    assert sorted(got) == sorted((one + one[:1])[1::2])
    unshuffled = ObjectIterableDataset.from_prefix(url, client=client, transform=idx_of)
    assert list(unshuffled) == list(range(23))
    if provider != "http":
        assert unshuffled.last_stats["transports"] == {"rdma"}


def test_iterable_state_resume(client, bucket):
    put_objects(client, bucket)
    url = f"s3://{bucket}/obj/"

    def make():
        return ObjectIterableDataset.from_prefix(url, client=client, transform=idx_of,
                                                 shuffle=True, seed=3, rank=0, world_size=1)
    ds = make()
    ds.set_epoch(2)
    full = list(ds)
    it = iter(ds)
    head = [next(it) for _ in range(9)]
    st = ds.state_dict()
    assert st["served"] == 9 and st["epoch"] == 2 and st["seed"] == 3
    st = json.loads(json.dumps(st))       # plain data: it survives a JSON round trip
    it.close()
    ds2 = make()                          # a fresh process would start here
    ds2.load_state_dict(st)
    assert ds2.state_dict()["served"] == 9
    tail = list(ds2)
    assert head + tail == full
    assert ds2.last_stats["windows"] == 23 - 9    # the skipped items were not fetched
    assert ds2.state_dict()["served"] == 0    # the epoch ended: the next one starts again
    assert list(ds2) == full              # the next iterator starts the epoch again
    ds2.set_epoch(3)
    assert list(ds2) != full
    # a state from another layout is refused, not silently misread
    ds3 = make()
    ds3.load_state_dict(dict(st, layout=[0, 1, 1, 2]))
    with pytest.raises(wharf.WharfError, match="same ranks and DataLoader workers"):
        list(ds3)
    with pytest.raises(wharf.WharfError, match="lacks"):
        make().load_state_dict({"epoch": 1})


def put_token_shards(c, b, n_shards=3, seqs=20):
    """Through the writer: every token encodes (sequence number, position)."""
    toks = (np.arange(n_shards * seqs, dtype=np.int64)[:, None] * 1000
            + np.arange(SEQ)[None, :])
    keys = wt.write_token_shards(f"s3://{b}/tok", toks, SEQ, seqs, vocab_size=10 ** 6,
                                 client=c)
    return keys, toks


def seq_no(t):
    t = t.reshape(-1, SEQ).to(torch.int64)
    assert torch.equal(t - t[:, :1], torch.arange(SEQ).expand_as(t))
    return [int(x) // 1000 for x in t[:, 0]]


def test_token_writer_round_trip(client, bucket):
    keys, toks = put_token_shards(client, bucket, n_shards=2, seqs=7)
    assert keys == ["tok/shard-00000.bin", "tok/shard-00001.bin"]
    m = json.loads(client.get(bucket, "tok/shard-00001.json"))
    assert m["sequences"] == 7 and m["seq_len"] == SEQ and m["vocab_size"] == 10 ** 6
    ds = TokenDataset(f"s3://{bucket}/tok/", client=client)
    got = torch.stack(list(ds))
    assert torch.equal(got, torch.from_numpy(toks.astype(np.int32)))
    # streaming writes of odd sizes, flat or 2-D, cut into shards of 5 with a partial last
    with TokenShardWriter(f"s3://{bucket}/tok2/", SEQ, 5, client=client, name="t") as w:
        w.write(toks[:3].reshape(-1))
        w.write(torch.from_numpy(toks[3:11]))
        w.write(toks[11:14])
    assert len(w.keys) == 3
    assert [json.loads(client.get(bucket, k[:-4] + ".json"))["sequences"]
            for k in w.keys] == [5, 5, 4]
    got = torch.stack(list(TokenDataset(f"s3://{bucket}/tok2/", client=client)))
    assert seq_no(got) == list(range(14))
    w2 = TokenShardWriter(f"s3://{bucket}/tok3/", SEQ, 5, vocab_size=100, client=client)
    with pytest.raises(wharf.WharfError, match="not a whole number"):
        w2.write(np.zeros(SEQ + 1, dtype=np.int32))
    with pytest.raises(wharf.WharfError, match=r"token 100 is outside \[0, 100\)"):
        w2.write(np.full(SEQ, 100))
    with pytest.raises(wharf.WharfError, match="must be integers"):
        w2.write(np.zeros(SEQ, dtype=np.float32))
    # an exception inside the with-block writes nothing pending
    with pytest.raises(RuntimeError):
        with TokenShardWriter(f"s3://{bucket}/tok4/", SEQ, 5, client=client) as w3:
            w3.write(toks[:3])
            raise RuntimeError("stop")
    assert client.list(bucket, "tok4/") == []


def test_token_dataset_shuffle_len_resume(client, bucket):
    put_token_shards(client, bucket)      # 3 shards of 20 sequences
    kw = dict(client=client, buffer_bytes=SEQ * 4 * 7, batch_size=3, shuffle=True, seed=11)
    ds = TokenDataset(f"s3://{bucket}/tok/", **kw)
    # 60 sequences in one stream (windows of 6, 6, 6, 2 per shard): 20 batches of 3, some
    # across two windows; drop_last drops only the stream's last partial batch (none here)
    assert len(ds) == 20 and len(list(ds)) == 20
    e0 = [seq_no(b) for b in ds]
    assert all(len(b) == 3 for b in e0)
    flat = [x for b in e0 for x in b]
    assert len(set(flat)) == 60 and flat != sorted(flat)
    assert [seq_no(b) for b in ds] == e0
    ds.set_epoch(1)
    assert [seq_no(b) for b in ds] != e0
    ds.set_epoch(0)
    it = iter(ds)
    head = [seq_no(next(it)) for _ in range(5)]   # stops inside a window
    st = ds.state_dict()
    it.close()
    ds2 = TokenDataset(f"s3://{bucket}/tok/", **kw)
    ds2.load_state_dict(st)
    assert head + [seq_no(b) for b in ds2] == e0
    # without drop_last and without shuffle: every sequence once, in order; len agrees
    ds = TokenDataset(f"s3://{bucket}/tok/", client=client, buffer_bytes=SEQ * 4 * 7,
                      batch_size=3, drop_last=False)
    got = [seq_no(b) for b in ds]
    assert len(ds) == len(got) == 20 and [x for b in got for x in b] == list(range(60))
    # ranks split the sequences evenly; each rank's len() and DataLoader workers
    seen = []
    for r in range(2):
        ds = TokenDataset(f"s3://{bucket}/tok/", client=client, rank=r, world_size=2,
                          shuffle=True, seed=5)
        assert len(ds) == 30
        dl = DataLoader(ds, batch_size=None, num_workers=2, multiprocessing_context="fork",
                        timeout=60)
        seen += [seq_no(t)[0] for t in dl]
    assert sorted(seen) == list(range(60))


def test_raw_image_writer_round_trip_shuffle(client, bucket):
    n, hw = 17, (4, 5)
    imgs = np.stack([np.full((*hw, 3), i, dtype=np.uint8) for i in range(n)])
    labels = [i % 4 for i in range(n)]
    keys = wt.write_raw_image_shards(f"s3://{bucket}/img/", imgs, labels, 6, client=client)
    assert len(keys) == 3
    m = json.loads(client.get(bucket, keys[2][:-4] + ".json"))
    assert m["samples"] == 5 and m["keys"] == [f"{i:09d}" for i in range(12, 17)]
    ds = RawImageShards(f"s3://{bucket}/img/", client=client)
    got = list(ds)
    assert len(ds) == n and [(int(x[0, 0, 0]), y) for x, y in got] == list(zip(range(n), labels))
    assert all(torch.equal(x, torch.from_numpy(imgs[i])) for i, (x, _) in enumerate(got))
    kw = dict(client=client, batch_size=3, shuffle=True, seed=1, buffer_bytes=4 * 5 * 3 * 4)
    ds = RawImageShards(f"s3://{bucket}/img/", **kw)
    e0 = [([int(v) for v in x[:, 0, 0, 0]], y.tolist()) for x, y in ds]
    assert len(ds) == len(e0)
    flat = [i for xs, _ in e0 for i in xs]
    assert sorted(flat) == list(range(n)) and flat != list(range(n))
    assert all(ys == [i % 4 for i in xs] for xs, ys in e0)   # labels follow their images
    it = iter(ds)
    head = [next(it) for _ in range(3)]
    st = ds.state_dict()
    it.close()
    ds2 = RawImageShards(f"s3://{bucket}/img/", **kw)
    ds2.load_state_dict(st)
    rest = [([int(v) for v in x[:, 0, 0, 0]], y.tolist()) for x, y in ds2]
    assert [([int(v) for v in x[:, 0, 0, 0]], y.tolist()) for x, y in head] + rest == e0
    w = RawImageShardWriter(f"s3://{bucket}/bad/", 4, 5, 3, 6, client=client)
    with pytest.raises(wharf.WharfError, match=r"must be uint8 \[B, 4, 5, 3\]"):
        w.write(imgs[:, :2], labels)
    with pytest.raises(wharf.WharfError, match="2 labels for 17 images"):
        w.write(imgs, [0, 1])


def resumable(kind, c, b, cls_mix=None):
    """(factory of a fresh dataset, item -> comparable value, items per epoch) for kind:
    "objects" (ObjectIterableDataset over 23 objects) or "tokens" (TokenDataset over 3
    shards, batches of 3 sequences from shuffled windows). cls_mix: a mixin class put first."""
    if kind == "objects":
        put_objects(c, b)
        cls = ObjectIterableDataset
        if cls_mix:
            cls = type("Mixed", (cls_mix, cls), {})
        return (lambda: cls.from_prefix(f"s3://{b}/obj/", client=c, transform=idx_of,
                                        shuffle=True, seed=9, rank=0, world_size=1),
                lambda x: x, 23)
    put_token_shards(c, b)
    cls = TokenDataset
    if cls_mix:
        cls = type("Mixed", (cls_mix, cls), {})
    return (lambda: cls(f"s3://{b}/tok/", client=c, buffer_bytes=SEQ * 4 * 7, batch_size=3,
                        shuffle=True, seed=11, rank=0, world_size=1),
            lambda x: tuple(seq_no(x)), 20)


@pytest.mark.parametrize("kind", ["objects", "tokens"])
@pytest.mark.parametrize("workers", [0, 2])
def test_stateful_dataloader(http_client, wharfd, kind, workers):
    """torchdata's StatefulDataLoader saves each worker's dataset state mid-epoch (and which
    worker is next); a new loader given that state delivers exactly the rest of the epoch, in
    the order the uninterrupted loader would have."""
    sdl = pytest.importorskip("torchdata.stateful_dataloader",
                              reason="torchdata (StatefulDataLoader) is not installed")
    from wharfd import unique_bucket
    c = http_client
    b = unique_bucket("sdl")
    c.create_bucket(b)
    make, key, n = resumable(kind, c, b)
    kw = dict(batch_size=None, num_workers=workers)
    if workers:
        kw.update(multiprocessing_context="fork", timeout=60)
    full = [key(x) for x in sdl.StatefulDataLoader(make(), **kw)]
    assert len(full) == n and len(set(full)) == n
    for cut in (1, n // 2, n - 1):
        dl = sdl.StatefulDataLoader(make(), **kw)
        it = iter(dl)
        head = [key(next(it)) for _ in range(cut)]
        st = dl.state_dict()
        del it
        dl2 = sdl.StatefulDataLoader(make(), **kw)
        dl2.load_state_dict(st)
        tail = [key(x) for x in dl2]
        assert head + tail == full, (kind, workers, cut)


def test_jpeg_tar_shuffle_and_resume(http_client, wharfd):
    from test_datasets import build_tar, fake_jpeg
    from wharfd import unique_bucket
    c = http_client
    b = unique_bucket("jshuf")
    c.create_bucket(b)
    everything = []
    for s in range(2):
        samples = [(f"s{s}-{i:03d}", fake_jpeg(s * 20 + i), s * 20 + i) for i in range(11)]
        blob, index = build_tar(samples)
        c.put(b, f"j/shard-{s}.tar", blob)
        c.put(b, f"j/shard-{s}.index.json", json.dumps({"samples": index}).encode())
        everything += [lab for _, _, lab in samples]
    kw = dict(client=c, shuffle=True, seed=4, buffer_bytes=1500)
    ds = wt.JpegTarShards(f"s3://{b}/j/", **kw)
    e0 = [lab for _, lab in ds]
    assert len(ds) == 22 and sorted(e0) == everything and e0 != everything
    it = iter(ds)
    head = [next(it)[1] for _ in range(7)]
    st = ds.state_dict()
    it.close()
    ds2 = wt.JpegTarShards(f"s3://{b}/j/", **kw)
    ds2.load_state_dict(st)
    assert head + [lab for _, lab in ds2] == e0


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_token_dataset_shuffle_on_cuda(wharfd):
    """shuffle with device="cuda": batches gathered on the GPU, same order as on the host."""
    from conftest import make_client
    from wharfd import unique_bucket
    c = make_client(wharfd, "ofi+shm")
    b = unique_bucket("shufcuda")
    c.create_bucket(b)
    put_token_shards(c, b)
    kw = dict(client=c, batch_size=4, shuffle=True, seed=2, buffer_bytes=SEQ * 4 * 8)
    host = [seq_no(x) for x in TokenDataset(f"s3://{b}/tok/", **kw)]
    ds = TokenDataset(f"s3://{b}/tok/", device="cuda", **kw)
    dev = list(ds)
    assert all(x.device.type == "cuda" for x in dev)
    assert [seq_no(x.cpu()) for x in dev] == host
    c.close()


class _ProbeMixin:
    """Yields (item, the worker's state after it): what StatefulDataLoader snapshots."""

    def __iter__(self):
        for x in super().__iter__():
            yield x, self.state_dict()


def _load_worker_state(states):
    def init(worker_id):
        from torch.utils.data import get_worker_info
        get_worker_info().dataset.load_state_dict(states[worker_id])
    return init


@pytest.mark.parametrize("kind", ["objects", "tokens"])
def test_resume_in_dataloader_workers(client, bucket, kind):
    """The protocol as StatefulDataLoader drives it, in real fork workers of a plain
    DataLoader: each worker's state taken with the items it delivered, loaded back into that
    worker before it iterates; each worker goes on exactly where it stopped."""
    make, key, n = resumable(kind, client, bucket, cls_mix=_ProbeMixin)

    def loader(ds, init=None):
        return DataLoader(ds, batch_size=None, num_workers=2, multiprocessing_context="fork",
                          timeout=60, worker_init_fn=init)

    def by_worker(pairs):
        out = {0: [], 1: []}
        for x, st in pairs:
            out[st["layout"][2]].append(key(x))
        return out
    full = by_worker(loader(make()))
    assert len(full[0] + full[1]) == n and len(set(full[0] + full[1])) == n
    head, states = [], {}
    it = iter(loader(make()))
    for _ in range(n // 2):
        x, st = next(it)
        head.append((x, st))
        states[st["layout"][2]] = st
    del it
    assert sorted(states) == [0, 1] and sum(s["served"] for s in states.values()) == n // 2
    tail = by_worker(loader(make(), _load_worker_state(states)))
    head = by_worker(head)
    # each worker's stream goes on where it stopped (the DataLoader's interleaving of the
    # workers is its own: StatefulDataLoader records which worker is next)
    for w in (0, 1):
        assert head[w] + tail[w] == full[w], w
