# SPDX-License-Identifier: Apache-2.0
"""Errors keep their type: each WharfError subclass raised in a DataLoader worker reaches
the parent as that class (torch rebuilds it from one message); a shard changed after its
commit is a ChecksumError; wt.load of a Hugging Face snapshot names load_safetensors."""
import pytest
import torch
from torch.utils.data import DataLoader, Dataset

import wharf
import wharf.config
import wharf.errors
import wharf.torch as wt
from wharf.torch import hf
from wharfd import unique_bucket


def _all_subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _all_subclasses(sub)


def _classes():
    import wharf.torch  # noqa: F401  (its modules may define subclasses too)
    return [wharf.WharfError] + sorted(set(_all_subclasses(wharf.WharfError)),
                                       key=lambda c: c.__name__)


class _Raises(Dataset):
    def __init__(self, cls):
        self.cls = cls

    def __len__(self):
        return 1

    def __getitem__(self, i):
        if self.cls is wharf.MissingDependencyError:
            raise self.cls("needs a package (a marker 7e1)")
        raise self.cls(self.cls._status, "what failed (a marker 7e1)")


def test_every_subclass_crosses_a_dataloader_worker():
    classes = _classes()
    assert {wharf.NotFoundError, wharf.ChecksumError, wharf.config.UrlError,
            wharf.CheckpointChangedError} <= set(classes)
    for cls in classes:
        dl = DataLoader(_Raises(cls), num_workers=1)
        with pytest.raises(Exception) as ei:
            next(iter(dl))
        assert type(ei.value) is cls, (cls, type(ei.value))
        assert "a marker 7e1" in str(ei.value) and "DataLoader worker" in str(ei.value)
        assert ei.value.status == cls._status


def test_one_message_builds_each_class():
    for cls in _classes():
        e = cls("just a message")
        assert e.message == "just a message" and e.status == cls._status


@pytest.fixture()
def ebucket(http_client):
    b = unique_bucket("errt")
    http_client.create_bucket(b)
    return b


def test_shard_changed_after_commit_is_a_checksum_error(http_client, ebucket):
    url = f"s3://{ebucket}/ck"
    r = wt.save({"w": torch.arange(1000, dtype=torch.float32)}, url, client=http_client)
    key = f"ck/{r['shards'][0]}"
    raw = bytearray(http_client.get(ebucket, key))
    raw[-4:] = b"\x00\x00\x80\x7f"  # the last float, same size, other bytes
    http_client.put(ebucket, key, bytes(raw))
    with pytest.raises(wharf.ChecksumError, match="changed after the checkpoint was committed"):
        wt.load(url, client=http_client)


@pytest.mark.parametrize("shard", [None, 1000])
def test_load_of_a_hf_snapshot_names_load_safetensors(http_client, ebucket, shard):
    url = f"s3://{ebucket}/hf{shard}"
    kw = {} if shard is None else {"max_shard_size": shard}
    hf.save_pretrained({"a": torch.ones(300), "b": torch.zeros(300)}, url,
                       client=http_client, **kw)
    with pytest.raises(wharf.SafetensorsError) as ei:
        wt.load(url, client=http_client)
    assert "load_safetensors" in str(ei.value)
    assert "interrupted" not in str(ei.value) and "incomplete" not in str(ei.value)
