# SPDX-License-Identifier: Apache-2.0
"""Tied weights of a plain nn.Module (no transformers, no tie_weights()): save_pretrained
stores a tied tensor once; load_pretrained into the model built under init_empty_weights
restores every name and ties it again (one Parameter, or one storage), with strict=True and
strict=False; a parameter no snapshot holds is never left on the meta device silently."""
import warnings

import pytest
import torch
from torch import nn

import wharf
from wharf.torch import hf
from wharfd import unique_bucket


def _params(m):
    """{name: parameter} of every name (torch 1.13 has no remove_duplicate=False)."""
    return {f"{mn}.{leaf}" if mn else leaf: p
            for mn, mod in m.named_modules(remove_duplicate=False)
            for leaf, p in mod._parameters.items() if p is not None}


class Tied(nn.Module):
    """An LM's embedding and output head, tied by assignment (one Parameter)."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(16, 8)
        self.mid = nn.Linear(8, 8)
        self.head = nn.Linear(8, 16, bias=False)
        self.head.weight = self.emb.weight


class Shared(nn.Module):
    """Two Parameters over one storage."""

    def __init__(self):
        super().__init__()
        self.a = nn.Parameter(torch.randn(4, 4))
        self.b = nn.Parameter(self.a.data)


class Extra(Tied):
    def __init__(self):
        super().__init__()
        self.new = nn.Linear(8, 2)


@pytest.fixture()
def tb(http_client):
    b = unique_bucket("tied")
    http_client.create_bucket(b)
    return b


@pytest.mark.parametrize("strict", [True, False])
def test_tied_by_assignment(http_client, tb, strict):
    torch.manual_seed(0)
    src = Tied()
    rep = hf.save_pretrained(src, f"s3://{tb}/t", client=http_client)
    assert rep["dropped_tied"] == {"head.weight": "emb.weight"}
    with hf.init_empty_weights():
        m = Tied()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        hf.load_pretrained(f"s3://{tb}/t", model=m, client=http_client, strict=strict)
    assert m.head.weight is m.emb.weight
    assert set(_params(m)) == {"emb.weight", "mid.weight", "mid.bias", "head.weight"}
    for n, p in _params(m).items():
        assert p.device.type == "cpu", n
        assert torch.equal(p, _params(src)[n]), n
    x = torch.tensor([[1, 2, 3]])
    assert torch.equal(m.head(m.mid(m.emb(x))), src.head(src.mid(src.emb(x))))


@pytest.mark.parametrize("strict", [True, False])
def test_two_parameters_one_storage(http_client, tb, strict):
    src = Shared()
    rep = hf.save_pretrained(src, f"s3://{tb}/s", client=http_client)
    assert rep["dropped_tied"] == {"b": "a"}
    with hf.init_empty_weights():
        m = Shared()
    hf.load_pretrained(f"s3://{tb}/s", model=m, client=http_client, strict=strict)
    assert m.a.device.type == "cpu" and m.b.device.type == "cpu"
    assert torch.equal(m.a, src.a) and torch.equal(m.b, src.b)
    assert m.a.data_ptr() == m.b.data_ptr()  # tied again: one memory


def test_a_parameter_no_snapshot_holds_is_not_left_on_meta_silently(http_client, tb):
    hf.save_pretrained(Tied(), f"s3://{tb}/x", client=http_client)
    with hf.init_empty_weights():
        m = Extra()
    with pytest.raises(wharf.WharfError, match="new.weight"):
        hf.load_pretrained(f"s3://{tb}/x", model=m, client=http_client)
    with hf.init_empty_weights():
        m = Extra()
    rep = {}
    with pytest.warns(UserWarning, match="meta device"):
        hf.load_pretrained(f"s3://{tb}/x", model=m, client=http_client, strict=False,
                           report=rep)
    assert sorted(rep["left_on_meta"]) == ["new.bias", "new.weight"]
    assert m.head.weight is m.emb.weight and m.emb.weight.device.type == "cpu"
