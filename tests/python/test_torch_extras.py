# SPDX-License-Identifier: Apache-2.0
"""wharf.torch beyond save/load: progress=True, allow_pickle, load_pretrained into a model
(tied weights, strict), the s3:// form of the datasets next to the old (client, bucket) form,
and the errors for missing optional packages. Real wharfd, each transport where data moves."""
import importlib
import io
import json
import sys

import numpy as np
import pytest
import torch

import wharf
import wharf.torch as wt
from wharf.progress import Progress


def test_progress_lines_without_tqdm(client, bucket, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "tqdm", None)       # as if tqdm were not installed
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    sd = {f"t{i}": torch.randn(256, 256) for i in range(4)}
    wt.save(sd, f"s3://{bucket}/p", client=client, progress=True)
    got = wt.load(f"s3://{bucket}/p", client=client, progress=True)
    err = capsys.readouterr().err
    assert f"save s3://{bucket}/p:" in err and "(100%)" in err
    assert f"load s3://{bucket}/p:" in err  # the object loaded, not only its bucket
    assert all(torch.equal(got[k], sd[k]) for k in sd)
    wt.load_safetensors(f"s3://{bucket}/p", client=client, progress=True)
    assert "load_safetensors" in capsys.readouterr().err


def test_progress_counts():
    out = io.StringIO()
    p = Progress(1000, "x", True, every_s=0.0, file=out)
    if p._bar is not None:
        p._bar.close()
        p._bar = None
    p.update(400)
    p.update(600)
    p.close()
    lines = out.getvalue().splitlines()
    assert lines[-1].startswith("x: 0.00 of 0.00 GB (100%)"), lines
    quiet = io.StringIO()
    q = Progress(10, "y", False, file=quiet)
    q.update(10)
    q.close()
    assert quiet.getvalue() == ""


class Opaque:
    def __init__(self, v):
        self.v = v

    def __eq__(self, other):
        return isinstance(other, Opaque) and other.v == self.v


def test_allow_pickle(http_client, bucket):
    obj = {"w": torch.ones(3), "hp": Opaque(7), "nested": [Opaque("x")]}
    url = f"s3://{bucket}/pk"
    with pytest.raises(wharf.WharfError, match="allow_pickle=True"):
        wt.save(obj, url, client=http_client)
    wt.save(obj, url, client=http_client, allow_pickle=True)
    with pytest.raises(wharf.WharfError, match="pickled objects"):
        wt.load(url, client=http_client)
    got = wt.load(url, client=http_client, allow_pickle=True)
    assert got["hp"] == Opaque(7) and got["nested"] == [Opaque("x")]
    assert torch.equal(got["w"], torch.ones(3))


class TiedLM(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(50, 8)
        self.proj = torch.nn.Linear(8, 8)
        self.head = torch.nn.Linear(8, 50, bias=False)
        self.tie_weights()

    def tie_weights(self):
        self.head.weight = self.embed.weight


def put_snapshot(client, bucket, prefix, sd, shards=2):
    """A Hugging Face style snapshot of sd (wharf.torch.save writes standard safetensors; the
    index is rewritten to the transformers form)."""
    names = sorted(sd)
    wm = {}
    for i in range(shards):
        part = {k: sd[k] for k in names[i::shards]}
        f = f"model-{i + 1:05d}-of-{shards:05d}.safetensors"
        tmp = f"s3://{bucket}/tmp-{prefix}-{i}"
        rep = wt.save(part, tmp, client=client)
        data = client.get(bucket, f"tmp-{prefix}-{i}/{rep['shards'][0]}")
        client.put(bucket, f"{prefix}/{f}", data)
        wm.update({k: f for k in part})
    client.put(bucket, f"{prefix}/model.safetensors.index.json",
               json.dumps({"metadata": {}, "weight_map": wm}).encode())


def test_load_pretrained_into_model(client, bucket):
    torch.manual_seed(0)
    src = TiedLM()
    sd = {k: v for k, v in src.state_dict().items() if k != "head.weight"}  # as HF saves tied
    put_snapshot(client, bucket, "lm", sd)
    url = f"s3://{bucket}/lm"
    got = wt.load_pretrained(url, client=client)
    assert set(got) == set(sd) and all(torch.equal(got[k], sd[k]) for k in sd)
    torch.manual_seed(1)
    m = TiedLM()
    rep = {}
    assert wt.load_pretrained(url, model=m, client=client, report=rep) is m
    for k, v in src.state_dict().items():
        assert torch.equal(m.state_dict()[k], v), k
    assert m.head.weight is m.embed.weight and rep["missing_keys"] == []
    # a model the snapshot does not fit
    other = torch.nn.Sequential(torch.nn.Linear(8, 8))
    with pytest.raises(wharf.WharfError, match="does not fit Sequential"):
        wt.load_pretrained(url, model=other, client=client)
    wt.load_pretrained(url, model=other, client=client, strict=False)


def put_tokens(client, bucket, prefix, n=3, seqs=5, L=16):
    for s in range(n):
        toks = (np.arange(seqs * L).reshape(seqs, L) + 1000 * s).astype("<i4")
        client.put_from(bucket, f"{prefix}/s{s}.bin", toks)
        client.put(bucket, f"{prefix}/s{s}.json",
                   json.dumps({"sequences": seqs, "seq_len": L}).encode())


def test_datasets_url_form_equals_old_form(client, bucket):
    put_tokens(client, bucket, "tok")
    old = [t for t in wt.TokenDataset(client, bucket, prefix="tok/")]
    new = [t for t in wt.TokenDataset(f"s3://{bucket}/tok/", client=client)]
    assert len(old) == 15 and all(torch.equal(a, b) for a, b in zip(old, new))
    one = list(wt.TokenDataset(f"s3://{bucket}/tok/s1.bin", client=client))
    assert len(one) == 5 and int(one[0][0]) == 1000
    with pytest.raises(wharf.WharfError, match="not both"):
        wt.TokenDataset(f"s3://{bucket}/tok/", bucket)
    with pytest.raises(wharf.WharfError, match="client= goes with an s3:// URL"):
        wt.TokenDataset(client, bucket, prefix="tok/", client=client)
    img = np.arange(2 * 4 * 4 * 3, dtype=np.uint8).reshape(2, 4, 4, 3)
    client.put_from(bucket, "img/a.raw", img)
    client.put(bucket, "img/a.json", json.dumps(
        {"samples": 2, "height": 4, "width": 4, "channels": 3, "labels": [3, 4]}).encode())
    got = list(wt.RawImageShards(f"s3://{bucket}/img/", client=client))
    assert [lab for _, lab in got] == [3, 4] and torch.equal(got[1][0], torch.from_numpy(img[1]))


def test_jpeg_tar_url_form(client, bucket):
    import tarfile
    jpg = b"\xff\xd8" + b"\x01" * 100
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tf:
        ti = tarfile.TarInfo("s0.jpg")
        ti.size = len(jpg)
        tf.addfile(ti, io.BytesIO(jpg))
    data = buf.getvalue()
    client.put(bucket, "jt/a.tar", data)
    client.put(bucket, "jt/a.index.json", json.dumps(
        {"samples": [{"key": "s0", "offset": 512, "length": len(jpg), "label": 9}]}).encode())
    got = list(wt.JpegTarShards(f"s3://{bucket}/jt/", client=client))
    assert got == [(jpg, 9)]


@pytest.mark.parametrize("mod,needs", [("wharf.torch.dcp", "torch.distributed.checkpoint"),
                                       ("wharf.lightning", "Lightning")])
def test_missing_optional_package_is_a_clear_error(mod, needs):
    try:
        importlib.import_module(mod)
    except wharf.MissingDependencyError as e:
        assert needs in str(e) and isinstance(e, ImportError)
        return
    pytest.skip(f"{mod} imports here: its dependency is installed")
