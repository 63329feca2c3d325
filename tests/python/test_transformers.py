"""Hugging Face snapshots as transformers writes them (save_pretrained, sharded with an index,
tied embeddings left out), uploaded unchanged, loaded with wharf.torch.load_pretrained into a
model on CUDA (load_state_dict(assign=True)) and compared tensor by tensor with transformers'
own from_pretrained of the local directory. Skipped, with the reason, without transformers or
CUDA."""
import os

import pytest
import torch

try:
    import transformers
    WHY = ""
except ImportError as e:
    transformers = None
    WHY = f"transformers is not installed ({e})"
if transformers is not None and not torch.cuda.is_available():
    WHY = "no CUDA device"

import wharf.torch as wt
from conftest import make_client
from wharfd import unique_bucket

pytestmark = pytest.mark.skipif(bool(WHY), reason=WHY)


def upload_dir(c, bucket, prefix, d):
    for name in sorted(os.listdir(d)):
        with open(os.path.join(d, name), "rb") as f:
            c.put(bucket, f"{prefix}/{name}", f.read())


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
