# SPDX-License-Identifier: Apache-2.0
"""Hugging Face snapshots as transformers writes them (save_pretrained, sharded with an index,
tied embeddings left out), uploaded unchanged, loaded with wharf.torch.load_pretrained into a
model on CUDA (load_state_dict(assign=True)) and compared tensor by tensor with transformers'
own from_pretrained of the local directory; snapshots written by wharf.torch.hf.save_pretrained
loaded by transformers; wharf.torch.hf.from_pretrained from a URL; and a model built on the
meta device (its rotary inv_freq in no snapshot) loaded and run. Skipped, with the reason,
without transformers (and the first test without CUDA)."""
import os

import pytest
import torch

try:
    import transformers
    WHY = ""
except ImportError as e:
    transformers = None
    WHY = f"transformers is not installed ({e})"
WHY_CUDA = WHY or ("" if torch.cuda.is_available() else "no CUDA device")
DEV = "cuda" if torch.cuda.is_available() else "cpu"

import wharf.torch as wt
from wharf.torch import hf
from conftest import make_client
from wharfd import unique_bucket

pytestmark = pytest.mark.skipif(bool(WHY), reason=WHY)


def llama(tied, seed=0):
    cfg = transformers.LlamaConfig(vocab_size=512, hidden_size=64, intermediate_size=128,
                                   num_hidden_layers=3, num_attention_heads=4,
                                   num_key_value_heads=2, tie_word_embeddings=tied)
    torch.manual_seed(seed)
    # Built as from_pretrained(dtype=) builds: bf16 parameters, the float32 rotary buffer
    # (LlamaForCausalLM(cfg).to(bf16) would cast that buffer too).
    return cfg, transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16)


def same_model(a, b):
    sa, sb = a.state_dict(), b.state_dict()
    assert sa.keys() == sb.keys()
    for k in sa:
        assert sa[k].dtype == sb[k].dtype and torch.equal(sa[k].to(DEV), sb[k].to(DEV)), k
    ba, bb = dict(a.named_buffers()), dict(b.named_buffers())
    assert ba.keys() == bb.keys()
    for k in ba:  # non-persistent buffers (rotary inv_freq) are computed, not stored
        assert torch.allclose(ba[k].to(DEV).float(), bb[k].to(DEV).float(), rtol=1e-6), k
    ids = torch.randint(0, 512, (1, 16), device=DEV)
    with torch.no_grad():
        la, lb = a.to(DEV)(ids).logits, b.to(DEV)(ids).logits
    # The weights are bitwise equal (above); the logits of two bf16 models may differ in the
    # last bit where transformers picks another attention kernel for the model it built.
    assert torch.allclose(la.float(), lb.float(), rtol=2e-2, atol=2e-2)


def bucket_client(wharfd, prefix):
    c = make_client(wharfd, "ofi+shm")
    b = unique_bucket(prefix)
    c.create_bucket(b)
    return c, b


def upload_dir(c, bucket, prefix, d):
    for name in sorted(os.listdir(d)):
        with open(os.path.join(d, name), "rb") as f:
            c.put(bucket, f"{prefix}/{name}", f.read())


@pytest.mark.skipif(bool(WHY_CUDA), reason=WHY_CUDA)
@pytest.mark.parametrize("tied", [True, False])
def test_load_pretrained_equals_from_pretrained(wharfd, tmp_path, tied):
    cfg = transformers.LlamaConfig(vocab_size=512, hidden_size=64, intermediate_size=128,
                                   num_hidden_layers=3, num_attention_heads=4,
                                   num_key_value_heads=2, tie_word_embeddings=tied)
    torch.manual_seed(0)
    src = transformers.LlamaForCausalLM(cfg).to(torch.bfloat16)
    d = tmp_path / "snap"
    src.save_pretrained(str(d), max_shard_size="100KB")   # several shards and an index
    assert (d / "model.safetensors.index.json").exists()
    c = make_client(wharfd, "ofi+shm")
    b = unique_bucket("hf")
    c.create_bucket(b)
    upload_dir(c, b, "llama", str(d))
    ref = transformers.AutoModelForCausalLM.from_pretrained(str(d), dtype=torch.bfloat16).cuda()
    with torch.device("cuda"):
        mine = transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16)
    rep = {}
    out = wt.load_pretrained(f"s3://{b}/llama", model=mine, client=c, report=rep)
    assert out is mine and rep["transports"] == ["rdma"]
    a, r = mine.state_dict(), ref.state_dict()
    assert a.keys() == r.keys()
    for k in r:
        assert a[k].device.type == "cuda", k
        assert a[k].dtype == r[k].dtype and torch.equal(a[k], r[k]), k
    if tied:
        assert mine.lm_head.weight.data_ptr() == mine.model.embed_tokens.weight.data_ptr()
    # the state-dict form: exactly the snapshot's tensors
    sd = wt.load_pretrained(f"s3://{b}/llama", client=c, device="cuda")
    assert set(sd) <= set(r) and len(sd) == len(r) - (1 if tied else 0)
    ids = torch.randint(0, 512, (1, 16), device="cuda")
    with torch.no_grad():
        assert torch.allclose(mine(ids).logits, ref(ids).logits, rtol=1e-3, atol=1e-3)
    c.close()


@pytest.mark.parametrize("tied", [True, False])
def test_wharf_save_pretrained_loads_in_transformers(wharfd, tmp_path, tied):
    """hf.save_pretrained writes straight to wharf; transformers' from_pretrained reads the
    downloaded folder: the same weights (the tied head once in the files) and logits."""
    cfg, src = llama(tied)
    c, b = bucket_client(wharfd, "hfw")
    rep = hf.save_pretrained(src, f"s3://{b}/w", client=c, max_shard_size="100KB")
    assert len(rep["files"]) > 1
    assert ("lm_head.weight" in rep["dropped_tied"]) == tied
    d = tmp_path / "down"
    hf.download_pretrained(f"s3://{b}/w", str(d), client=c)
    assert (d / "config.json").exists() and (d / "model.safetensors.index.json").exists()
    back = transformers.AutoModelForCausalLM.from_pretrained(str(d), dtype=torch.bfloat16)
    same_model(back, src)
    if tied:
        assert back.lm_head.weight.data_ptr() == back.model.embed_tokens.weight.data_ptr()
    c.close()


def test_from_pretrained_url_and_meta_model(wharfd, tmp_path):
    """A folder transformers wrote, uploaded by upload_pretrained: hf.from_pretrained(url)
    builds and loads the model in one call; a model built under torch.device("meta") (its
    rotary inv_freq on meta: non-persistent, in no snapshot) loads and runs."""
    cfg, src = llama(True)
    d = tmp_path / "snap"
    src.save_pretrained(str(d), max_shard_size="100KB")
    c, b = bucket_client(wharfd, "hff")
    keys = hf.upload_pretrained(str(d), f"s3://{b}/llama", client=c)
    assert keys[-1].endswith("model.safetensors.index.json")
    ref = transformers.AutoModelForCausalLM.from_pretrained(str(d), dtype=torch.bfloat16)
    m = hf.from_pretrained(f"s3://{b}/llama", device=DEV, client=c, dtype=torch.bfloat16)
    assert next(m.parameters()).device.type == DEV
    same_model(m, ref)
    with torch.device("meta"):
        meta = transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16)
    assert any(b_.device.type == "meta" for b_ in meta.buffers())
    rep = {}
    wt.load_pretrained(f"s3://{b}/llama", model=meta, client=c, device=DEV, report=rep)
    assert any(n.endswith("inv_freq") for n in rep["materialized_buffers"]), rep
    assert all(t.device.type == DEV for t in list(meta.parameters()) + list(meta.buffers()))
    same_model(meta, ref)
    c.close()
