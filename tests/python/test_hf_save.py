# SPDX-License-Identifier: Apache-2.0
"""Hugging Face snapshots written and read without transformers (torch only), against a real
wharfd: save_pretrained's files checked by a parser written here from the format's
specification (not wharf's), tied weights stored once and tied again, re-saves over older
layouts, upload_pretrained / download_pretrained of a folder, and load_pretrained into a model
whose non-persistent buffers are on the meta device."""
import importlib.util
import json
import os
import struct
import types

import numpy as np
import pytest
import torch

import st_spec
import wharf
import wharf.torch as wt
from wharf.torch import hf


def parse(blob):
    """{name: (dtype, shape, raw)}, metadata of a safetensors file, checking it tiles."""
    n = struct.unpack("<Q", blob[:8])[0]
    head = json.loads(blob[8:8 + n])
    assert n % 8 == 0
    meta = head.pop("__metadata__", None)
    data = blob[8 + n:]
    spans = sorted(v["data_offsets"] for v in head.values())
    assert spans[0][0] == 0 and spans[-1][1] == len(data)
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
    return {k: (v["dtype"], tuple(v["shape"]), data[v["data_offsets"][0]:v["data_offsets"][1]])
            for k, v in head.items()}, meta


def raw(t):
    return t.detach().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()


class Rotary(torch.nn.Module):
    """Like a transformers rotary embedding: inv_freq is computed in __init__ and is not
    persistent (in no checkpoint)."""

    def __init__(self, dim):
        super().__init__()
        inv = 1.0 / (10000 ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
        self.register_buffer("inv_freq", inv, persistent=False)

    def forward(self, x):
        pos = torch.arange(x.shape[1], dtype=torch.float32, device=x.device)
        f = torch.outer(pos, self.inv_freq)
        return x * torch.cat([f.cos(), f.sin()], dim=-1)


class Tiny(torch.nn.Module):
    """A small causal-LM-shaped model built from a config, with tied embeddings."""

    def __init__(self, config):
        super().__init__()
        self.config = config
        self.embed = torch.nn.Embedding(config.vocab, config.dim)
        self.rot = Rotary(config.dim)
        self.layers = torch.nn.ModuleList(torch.nn.Linear(config.dim, config.dim)
                                          for _ in range(config.layers))
        self.norm = torch.nn.LayerNorm(config.dim)
        self.register_buffer("scale", torch.tensor(0.5))          # persistent buffer
        self.lm_head = torch.nn.Linear(config.dim, config.vocab, bias=False)
        self.tie_weights()

    def tie_weights(self):
        self.lm_head.weight = self.embed.weight

    def forward(self, ids):
        h = self.rot(self.embed(ids))
        for lin in self.layers:
            h = torch.relu(lin(h)) * self.scale
        return self.lm_head(self.norm(h))


def cfg(**kw):
    d = dict(vocab=97, dim=16, layers=4)
    d.update(kw)
    return types.SimpleNamespace(**d)


def test_save_pretrained_layout(client, bucket):
    torch.manual_seed(0)
    m = Tiny(cfg())
    url = f"s3://{bucket}/tiny"
    rep = hf.save_pretrained(m, url, client=client, max_shard_size="3KB",
                             config={"model_type": "tiny", "vocab": 97})
    assert rep["dropped_tied"] == {"lm_head.weight": "embed.weight"}
    nsh = len(rep["files"])
    assert nsh > 2 and rep["files"] == [f"model-{i:05d}-of-{nsh:05d}.safetensors"
                                        for i in range(1, nsh + 1)]
    idx = json.loads(client.get(bucket, "tiny/model.safetensors.index.json"))
    sd = m.state_dict()
    want = {k: v for k, v in sd.items() if k != "lm_head.weight"}
    assert set(idx["weight_map"]) == set(want)
    assert idx["metadata"]["total_size"] == sum(v.numel() * v.element_size()
                                                for v in want.values())
    assert json.loads(client.get(bucket, "tiny/config.json")) == {"model_type": "tiny",
                                                                   "vocab": 97}
    seen = {}
    for f in rep["files"]:
        blob = client.get(bucket, f"tiny/{f}")
        tensors, meta = parse(blob)
        # Hugging Face's {"format": "pt"}, and the id of this save (shards of two saves
        # are told apart by load_safetensors)
        assert {k: v for k, v in meta.items() if k != "wharf.tied"} == \
            {"format": "pt", "wharf.snapshot": idx["metadata"]["wharf.snapshot"]}
        assert len(blob) - 8 <= 3000 + 4096 or len(tensors) == 1
        for k, (dt, shape, b) in tensors.items():
            assert idx["weight_map"][k] == f
            seen[k] = (dt, shape, b)
    for k, v in want.items():
        assert seen[k] == ("F32", tuple(v.shape), raw(v)), k
    # loaded back into a fresh model: equal, and the head tied to the embedding again
    torch.manual_seed(1)
    m2 = Tiny(cfg())
    r = {}
    wt.load_pretrained(url, model=m2, client=client, report=r)
    assert r["missing_keys"] == [] and m2.lm_head.weight is m2.embed.weight
    ids = torch.randint(0, 97, (2, 5))
    with torch.no_grad():
        assert torch.equal(m2(ids), m(ids))


def test_save_pretrained_resave_and_state_dict(http_client, wharfd):
    from wharfd import unique_bucket
    c = http_client
    b = unique_bucket("hfsave")
    c.create_bucket(b)
    url = f"s3://{b}/m"
    m = Tiny(cfg(layers=6))
    hf.save_pretrained(m, url, client=c, max_shard_size=2000)
    sharded = sorted(o.key for o in c.list(b, "m/"))
    assert "m/model.safetensors.index.json" in sharded and len(sharded) > 3
    # a single file over a sharded save: the index and every old shard go
    hf.save_pretrained(m.state_dict(), url, client=c)
    assert sorted(o.key for o in c.list(b, "m/")) == ["m/model.safetensors"]
    got = wt.load_safetensors(url, client=c)
    assert set(got) == set(m.state_dict()) - {"lm_head.weight"}
    # sharded over a single file: the single file goes after the index is written
    hf.save_pretrained(m, url, client=c, max_shard_size="2000B")
    assert sorted(o.key for o in c.list(b, "m/")) == sharded
    c.put(b, "m/other.txt", b"kept")
    hf.save_pretrained(m, url, client=c, max_shard_size="1MB")
    assert sorted(o.key for o in c.list(b, "m/")) == ["m/model.safetensors", "m/other.txt"]
    with pytest.raises(wharf.WharfError, match="max_shard_size must be"):
        hf.save_pretrained(m, url, client=c, max_shard_size="5 parsecs")
    with pytest.raises(wharf.WharfError, match="no safetensors dtype"):
        hf.save_pretrained({"z": torch.zeros(2, dtype=torch.complex128)}, url, client=c)
    with pytest.raises(wharf.WharfError, match="not a tensor"):
        hf.save_pretrained({"a": 1}, url, client=c)
    assert hf.parse_size("5GB") == 5 * 10 ** 9 and hf.parse_size("1.5MiB") == 3 << 19


def test_meta_model_buffers_materialized(client, bucket):
    torch.manual_seed(0)
    ref = Tiny(cfg())
    url = f"s3://{bucket}/meta"
    hf.save_pretrained(ref, url, client=client, max_shard_size="4KB")
    ids = torch.randint(0, 97, (2, 7))
    with torch.no_grad():
        want = ref(ids)
    m = Tiny(cfg()).to("meta")       # what torch.device("meta") builds: buffers on meta too
    assert m.rot.inv_freq.device.type == "meta"
    rep = {}
    wt.load_pretrained(url, model=m, client=client, report=rep)
    assert rep["materialized_buffers"] == ["rot.inv_freq"]
    assert m.rot.inv_freq.device.type == "cpu" and torch.equal(m.rot.inv_freq,
                                                                 ref.rot.inv_freq)
    assert "rot.inv_freq" not in m.state_dict()          # still not persistent
    assert all(t.device.type == "cpu" for t in list(m.parameters()) + list(m.buffers()))
    with torch.no_grad():
        assert torch.equal(m(ids), want)
    # init_empty_weights: parameters on meta, buffers real; nothing to repair after the load
    with hf.init_empty_weights():
        e = Tiny(cfg())
    assert all(p.device.type == "meta" for p in e.parameters())
    assert e.rot.inv_freq.device.type == "cpu" and e.scale.device.type == "cpu"
    rep = {}
    wt.load_pretrained(url, model=e, client=client, report=rep)
    assert rep["materialized_buffers"] == []
    with torch.no_grad():
        assert torch.equal(e(ids), want)


class NoConfig(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.rot = Rotary(4)


def test_meta_buffers_without_config(http_client, wharfd):
    from wharfd import unique_bucket
    c = http_client
    b = unique_bucket("hfmeta")
    c.create_bucket(b)
    ref = NoConfig()
    hf.save_pretrained(ref, f"s3://{b}/nc", client=c)
    m = NoConfig().to("meta")
    with pytest.raises(wharf.WharfError, match=r"buffers \['rot.inv_freq'\].*init_empty_weights"):
        wt.load_pretrained(f"s3://{b}/nc", model=m, client=c)
    m = NoConfig().to("meta")
    wt.load_pretrained(f"s3://{b}/nc", model=m, client=c, buffers_from=NoConfig)
    assert torch.equal(m.rot.inv_freq, ref.rot.inv_freq)
    assert torch.equal(m.lin.weight, ref.lin.weight)


def test_upload_and_download_pretrained(client, bucket, tmp_path):
    """A folder as transformers writes it (shards, index, config, tokenizer files, a
    subfolder) up and back, byte for byte; load_safetensors reads the upload."""
    d = tmp_path / "snap"
    (d / "sub").mkdir(parents=True)
    rng = np.random.default_rng(2)
    parts = [{"a.w": ("F32", (8, 8), rng.standard_normal(64).astype("<f4").tobytes())},
             {"b.w": ("F16", (5,), rng.standard_normal(5).astype("<f2").tobytes()),
              "b.i": ("I64", (3,), np.arange(3, dtype="<i8").tobytes())}]
    wm = {}
    for i, p in enumerate(parts):
        f = f"model-{i + 1:05d}-of-00002.safetensors"
        (d / f).write_bytes(st_spec.serialize(p, metadata={"format": "pt"}))
        wm.update({k: f for k in p})
    (d / "model.safetensors.index.json").write_text(json.dumps(
        {"metadata": {"total_size": 0}, "weight_map": wm}))
    (d / "config.json").write_text('{"model_type": "x"}')
    (d / "tokenizer.json").write_text('{"v": 1}')
    (d / "sub" / "extra.txt").write_bytes(b"")
    url = f"s3://{bucket}/up"
    keys = hf.upload_pretrained(str(d), url, client=client)
    assert keys[-1] == "up/model.safetensors.index.json" and len(keys) == 6
    got = wt.load_safetensors(url, client=client)
    for p in parts:
        for k, (dt, shape, b) in p.items():
            assert raw(got[k]) == b and tuple(got[k].shape) == shape
    out = tmp_path / "down"
    paths = hf.download_pretrained(url, str(out), client=client)
    assert len(paths) == 6
    for rel in ["config.json", "tokenizer.json", "sub/extra.txt", "model.safetensors.index.json",
                "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]:
        assert (out / rel).read_bytes() == (d / rel).read_bytes(), rel
    light = tmp_path / "light"
    paths = hf.download_pretrained(url, str(light), client=client, weights=False)
    assert sorted(os.path.relpath(p, light) for p in paths) == sorted(
        ["config.json", "tokenizer.json", "sub/extra.txt", "model.safetensors.index.json"])
    with pytest.raises(wharf.NotFoundError):
        hf.download_pretrained(f"s3://{bucket}/nothing", str(tmp_path / "n"), client=client)
    (tmp_path / "empty").mkdir()
    with pytest.raises(wharf.WharfError, match="no files"):
        hf.upload_pretrained(str(tmp_path / "empty"), url, client=client)


def test_from_pretrained_needs_transformers(http_client):
    if importlib.util.find_spec("transformers") is not None:
        pytest.skip("transformers is installed: test_transformers.py covers from_pretrained")
    with pytest.raises(ImportError, match="needs transformers"):
        hf.from_pretrained("s3://b/m", client=http_client)
