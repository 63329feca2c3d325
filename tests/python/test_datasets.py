# SPDX-License-Identifier: Apache-2.0
"""Datasets: TokenDataset, RawImageShards and JpegTarShards over each transport, per-rank
sharding, bounded prefetch buffers, and DataLoader workers (fork) re-using a client made in
the parent."""
import io
import json
import os
import tarfile

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

import wharf
from conftest import Witness, make_client
from wharfd import unique_bucket
from wharf.data import Prefetcher, Window
from wharf.torch import JpegTarShards, RawImageShards, TokenDataset

SEQ = 64


def put_tokens(client, bucket, n_shards=4, seqs=50, seq_len=SEQ):
    """Token shards whose every token encodes (shard, sequence, position)."""
    keys = []
    for s in range(n_shards):
        toks = (np.arange(seqs * seq_len, dtype=np.int64).reshape(seqs, seq_len)
                + s * 1_000_000).astype("<i4")
        k = f"tok/shard-{s:03d}.bin"
        client.put_from(bucket, k, toks)
        meta = {"sequences": seqs, "seq_len": seq_len, "dtype": "int32", "bytes_per_token": 4,
                "vocab_size": 128256, "sequence_bytes": seq_len * 4, "synthetic": True}
        client.put(bucket, k[:-4] + ".json", json.dumps(meta).encode())
        keys.append(k)
    return keys


def seq_ids(batch):
    """(shard, sequence) of each row of a [.., SEQ] int32 tensor."""
    b = batch.reshape(-1, batch.shape[-1]).to(torch.int64)
    first = b[:, 0]
    assert torch.equal(b - first[:, None], torch.arange(b.shape[1])[None, :].expand_as(b))
    return [(int(v) // 1_000_000, int(v) % 1_000_000 // SEQ) for v in first]


def test_token_dataset(client, bucket, wharfd, provider):
    put_tokens(client, bucket)
    ds = TokenDataset(client, bucket, prefix="tok/", buffer_bytes=SEQ * 4 * 16)
    assert ds.num_sequences == 200 and ds.seq_len == SEQ
    with Witness(wharfd) as w:
        rows = list(ds)
    assert all(r.dtype == torch.int32 and r.shape == (SEQ,) for r in rows)
    ids = [seq_ids(r[None])[0] for r in rows]
    assert ids == [(s, q) for s in range(4) for q in range(50)]
    st = ds.last_stats
    assert st["bytes"] == 200 * SEQ * 4 and st["buffers"] == 2
    assert st["transports"] == ({"http"} if provider == "http" else {"rdma"})
    if provider != "http":
        assert w.delta["get"] >= st["bytes"]


def test_token_batches_ranks_and_zero_copy(client, bucket):
    keys = put_tokens(client, bucket, n_shards=5, seqs=20)
    seen = []
    for r in range(2):
        ds = TokenDataset(client, bucket, keys=keys, batch_size=8, rank=r, world_size=2,
                          buffer_bytes=SEQ * 4 * 8 * 2, copy=False)
        assert ds.keys == sorted(keys) and len(ds) == 6
        for b in ds:
            assert b.shape == (8, SEQ)
            seen += seq_ids(b)
    # 100 sequences, 50 a rank: 6 full batches each (drop_last drops the rank's last 2), in
    # stream order, each sequence at most once across the two ranks
    stream = [(s, q) for s in range(5) for q in range(20)]
    assert seen == stream[:48] + stream[50:98]
    # seq_len re-cut and a last partial batch kept
    ds = TokenDataset(client, bucket, keys=keys[:1], seq_len=SEQ * 2, batch_size=4,
                      drop_last=False)
    shapes = [tuple(b.shape) for b in ds]
    assert shapes == [(4, SEQ * 2)] * 2 + [(2, SEQ * 2)]


def test_token_dataloader_fork_workers(client, bucket, provider):
    """num_workers=2 (fork): each worker uses the parent's client; all data arrives once."""
    put_tokens(client, bucket, n_shards=3, seqs=40)
    ds = TokenDataset(client, bucket, prefix="tok/", batch_size=10,
                      buffer_bytes=SEQ * 4 * 20)
    dl = DataLoader(ds, batch_size=None, num_workers=2,
                    multiprocessing_context="fork", timeout=60)
    seen = []
    for b in dl:
        seen += seq_ids(b)
    assert sorted(seen) == [(s, q) for s in range(3) for q in range(40)]
    # the parent's client still works after the children used it
    assert client.get(bucket, "tok/shard-000.json")


def test_client_used_in_forked_child(client, bucket, provider):
    """A client created (and used) in the parent works in a plain fork() child."""
    src = np.arange(1 << 18, dtype=np.int32)
    client.put_from(bucket, "fork.bin", src)
    dst = np.zeros_like(src)
    client.get_into(bucket, "fork.bin", dst)  # registers dst in the parent
    r, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            out = np.zeros_like(src)
            rep = client.get_into(bucket, "fork.bin", out)
            rep2 = client.get_into(bucket, "fork.bin", dst)  # parent-registered buffer
            ok = np.array_equal(out, src) and np.array_equal(dst, src)
            want = "http" if provider == "http" else "rdma"
            ok = ok and rep.transport == want and rep2.transport == want
            client.put(bucket, "from-child", b"child")
            code = 0 if ok else 2
            os.write(wfd, f"{rep.transport} {ok}".encode())
        finally:
            os._exit(code)
    os.close(wfd)
    _, status = os.waitpid(pid, 0)
    msg = os.read(r, 200).decode()
    os.close(r)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, (status, msg)
    assert client.get(bucket, "from-child") == b"child"


def put_raw_images(client, bucket, n_shards=2, n=12, hw=(8, 6)):
    keys = []
    for s in range(n_shards):
        imgs = np.empty((n, hw[0], hw[1], 3), dtype=np.uint8)
        for i in range(n):
            imgs[i] = (s * 100 + i) % 256
        k = f"train/train-{s:06d}.raw"
        client.put_from(bucket, k, imgs)
        meta = {"samples": n, "height": hw[0], "width": hw[1], "channels": 3,
                "dtype": "uint8", "sample_bytes": hw[0] * hw[1] * 3,
                "labels": [(s * 100 + i) % 7 for i in range(n)],
                "keys": [f"img{s}-{i}" for i in range(n)]}
        client.put(bucket, k[:-4] + ".json", json.dumps(meta).encode())
        keys.append(k)
    return keys


def test_raw_image_shards(client, bucket):
    put_raw_images(client, bucket)
    ds = RawImageShards(client, bucket, prefix="train/", buffer_bytes=8 * 6 * 3 * 5)
    items = list(ds)
    assert len(items) == ds.num_samples == 24
    for img, lab in items:
        assert img.shape == (8, 6, 3) and img.dtype == torch.uint8
        v = int(img[0, 0, 0])
        assert bool((img == v).all()) and lab == v % 7
    vals = [int(img[0, 0, 0]) for img, _ in items]
    assert vals == [(s * 100 + i) % 256 for s in range(2) for i in range(12)]
    # batches in DataLoader workers
    ds = RawImageShards(client, bucket, prefix="train/", batch_size=4,
                        buffer_bytes=8 * 6 * 3 * 12)
    dl = DataLoader(ds, batch_size=None, num_workers=2, multiprocessing_context="fork",
                    timeout=60)
    got = []
    for imgs, labs in dl:
        assert imgs.shape[1:] == (8, 6, 3) and labs.dtype == torch.int64
        got += [(int(x[0, 0, 0]), int(y)) for x, y in zip(imgs, labs)]
    assert sorted(got) == sorted(((s * 100 + i) % 256, (s * 100 + i) % 7)
                                 for s in range(2) for i in range(12))


def fake_jpeg(i):
    return b"\xff\xd8\xff\xe0" + bytes([i % 256]) * (100 + 37 * i) + b"\xff\xd9"


def build_tar(samples):
    """USTAR tar with <key>.jpg then <key>.cls per sample, and its byte index."""
    bio = io.BytesIO()
    index = []
    with tarfile.open(fileobj=bio, mode="w", format=tarfile.USTAR_FORMAT) as tf:
        for key, data, label in samples:
            for name, payload in ((f"{key}.jpg", data), (f"{key}.cls", str(label).encode())):
                ti = tarfile.TarInfo(name)
                ti.size, ti.mode, ti.mtime, ti.uid, ti.gid = len(payload), 0o644, 0, 0, 0
                hdr_off = bio.tell()
                tf.addfile(ti, io.BytesIO(payload))
                if name.endswith(".jpg"):
                    index.append({"key": key, "offset": hdr_off + 512, "length": len(payload),
                                  "label": label})
    blob = bio.getvalue()
    for s in index:
        assert blob[s["offset"]:s["offset"] + 2] == b"\xff\xd8"
    return blob, index


def test_jpeg_tar_shards(client, bucket, wharfd, provider):
    all_samples = []
    for s in range(3):
        samples = [(f"s{s}-{i:04d}", fake_jpeg(s * 10 + i), (s * 10 + i) % 5) for i in range(9)]
        blob, index = build_tar(samples)
        k = f"jpeg/shard-{s:04d}.tar"
        client.put(bucket, k, blob)
        client.put(bucket, k[:-4] + ".index.json",
                   json.dumps({"shard": k, "size": len(blob), "samples": index}).encode())
        all_samples += samples
    ds = JpegTarShards(client, bucket, prefix="jpeg/", buffer_bytes=2000)
    with Witness(wharfd) as w:
        got = list(ds)
    assert [(d, lab) for d, lab in got] == [(d, lab) for _, d, lab in all_samples]
    assert ds.last_stats["transports"] == {"http"} and w.delta["get"] == 0
    # decode hook, ranks and DataLoader workers
    ds = JpegTarShards(client, bucket, prefix="jpeg/", rank=1, world_size=2,
                       decode=lambda b: torch.frombuffer(bytearray(b), dtype=torch.uint8))
    dl = DataLoader(ds, batch_size=None, num_workers=2, multiprocessing_context="fork",
                    timeout=60)
    got = [(bytes(t.numpy()), lab) for t, lab in dl]
    # rank 1 of 2: the second half of the samples of every shard, in one stream
    half = -(-len(all_samples) // 2)
    mine = (all_samples + all_samples)[half:2 * half]
    assert sorted(got) == sorted((d, lab) for k, d, lab in mine)


def test_jpeg_index_mismatch_is_an_error(client, bucket):
    blob, index = build_tar([("a", fake_jpeg(1), 0)])
    index[0]["offset"] -= 512  # points at the tar header, not the JPEG
    client.put(bucket, "badj/x.tar", blob)
    client.put(bucket, "badj/x.index.json",
               json.dumps({"shard": "x", "size": len(blob), "samples": index}).encode())
    with pytest.raises(wharf.WharfError, match="FF D8"):
        list(JpegTarShards(client, bucket, prefix="badj/"))


def test_prefetcher_bounded_and_ordered(client, bucket, provider):
    src = np.arange(1 << 16, dtype=np.uint8)
    client.put_from(bucket, "pf.bin", src)
    wins = [Window("pf.bin", i * 4096, 4096, i) for i in range(16)]
    p = Prefetcher(client, bucket, wins, num_buffers=3, workers=2)
    before = len(client._cached_regs())
    seen = []
    for w, buf in p:
        assert bytes(buf.numpy()) == src[w.offset:w.offset + 4096].tobytes()
        if provider != "http":
            assert len(client._cached_regs()) - before == 3  # the 3 buffers, no more
        seen.append(w.info)
    assert seen == list(range(16))
    assert len(client._cached_regs()) == before  # released at the end


def test_dataset_bad_input(client, bucket):
    with pytest.raises(wharf.WharfError, match="pass keys"):
        TokenDataset(client, bucket)
    with pytest.raises(wharf.WharfError, match="no .bin objects"):
        TokenDataset(client, bucket, prefix="none/")
    with pytest.raises(wharf.NotFoundError):
        TokenDataset(client, bucket, keys=["missing.bin"])
    client.put(bucket, "t/x.bin", b"\0" * 64)
    client.put(bucket, "t/x.json", b'{"sequences": 1}')
    with pytest.raises(wharf.WharfError, match="'seq_len' is missing"):
        TokenDataset(client, bucket, prefix="t/")
    client.put(bucket, "t/x.json", b"[not json")
    with pytest.raises(wharf.WharfError, match="not valid JSON"):
        TokenDataset(client, bucket, prefix="t/")
    client.put(bucket, "t/x.json", json.dumps({"sequences": 1, "seq_len": 16,
                                               "dtype": "int64"}).encode())
    with pytest.raises(wharf.WharfError, match="not int32"):
        TokenDataset(client, bucket, prefix="t/")
    with pytest.raises(wharf.WharfError, match="rank 3 is not in"):
        RawImageShards(client, bucket, prefix="train/", rank=3, world_size=2)
    with pytest.raises(wharf.WharfError, match="keys must be a list"):
        RawImageShards(client, bucket, keys="train/x.raw")


def test_device_must_be_usable(wharfd):
    """device= names a device this torch can use, or the dataset refuses with the reason."""
    c = make_client(wharfd, "http")
    b = unique_bucket("devq")
    c.create_bucket(b)
    c.put(b, "t/s0.bin", np.arange(64, dtype=np.int32).tobytes())
    c.put(b, "t/s0.json", b'{"sequences": 4, "seq_len": 16}')
    with pytest.raises(wharf.WharfError, match="device must be cpu or cuda"):
        list(TokenDataset(c, b, prefix="t/", device="meta"))
    if not torch.cuda.is_available():
        with pytest.raises(wharf.WharfError, match="no CUDA device"):
            list(TokenDataset(c, b, prefix="t/", device="cuda"))
    got = list(TokenDataset(c, b, prefix="t/", device="cpu"))
    assert len(got) == 4 and torch.equal(got[1], torch.arange(16, 32, dtype=torch.int32))
    c.close()
