# SPDX-License-Identifier: Apache-2.0
"""Small API points: wt.load(map_location=) as torch.load's, a Client repr that says where
and how without the credentials, and load progress that names the object loaded."""
import pytest
import torch

import wharf
import wharf.torch as wt
from conftest import make_client
from wharfd import ACCESS_KEY, SECRET_KEY, unique_bucket


@pytest.fixture()
def url(http_client):
    b = unique_bucket("small")
    http_client.create_bucket(b)
    u = f"s3://{b}/run/step-3"
    wt.save({"w": torch.arange(6.0)}, u, client=http_client)
    return u


def test_load_map_location(http_client, url):
    for ml in ("cpu", torch.device("cpu"), {"cuda:0": "cpu", "cpu": "cpu"}):
        sd = wt.load(url, client=http_client, map_location=ml)
        assert sd["w"].device.type == "cpu" and sd["w"].tolist() == list(range(6))
    with pytest.raises(wharf.WharfError, match="not supported"):
        wt.load(url, client=http_client, map_location=lambda s, loc: s)
    with pytest.raises(wharf.WharfError, match="several devices"):
        wt.load(url, client=http_client, map_location={"cuda:0": "cpu", "cuda:1": "cuda:0"})
    with pytest.raises(wharf.WharfError, match="not a device"):
        wt.load(url, client=http_client, map_location="gpu7")
    with pytest.raises(wharf.WharfError, match="not both"):
        wt.load(url, client=http_client, map_location="cpu", device="cuda:0")


def test_client_repr(wharfd):
    for prov, want in (("http", "'http'"), ("ofi+tcp", "'ofi+tcp'"), ("ofi+shm", "'ofi+shm'")):
        c = make_client(wharfd, prov)
        r = repr(c)
        assert wharfd.endpoint in r and f"transport={want}" in r, r
        assert SECRET_KEY not in r and ACCESS_KEY not in r, r
        c.close()
        assert "closed" in repr(c)


def test_load_progress_names_the_object(http_client, url, capfd):
    wt.load(url, client=http_client, progress=True)
    err = capfd.readouterr().err
    assert f"load {url}:" in err, err
