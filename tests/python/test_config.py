# SPDX-License-Identifier: Apache-2.0
"""wharf.config: the order of the environment variables (WHARF_* first, then the standard AWS
ones), a client built from AWS variables alone working against a real wharfd through every
wharf.torch entry point, the error when nothing is set, and s3:// URL parsing."""
import json

import numpy as np
import pytest
import torch

import wharf
import wharf.torch as wt
from wharf.config import ENV_ORDER, settings_from_env
from conftest import make_client
from wharfd import ACCESS_KEY, REGION, SECRET_KEY, unique_bucket

ALL_VARS = [v for names in ENV_ORDER.values() for v in names]


def test_documented_order():
    assert ENV_ORDER["endpoint"] == ("WHARF_ENDPOINT", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
    assert ENV_ORDER["access_key"] == ("WHARF_ACCESS_KEY", "AWS_ACCESS_KEY_ID")
    assert ENV_ORDER["secret_key"] == ("WHARF_SECRET_KEY", "AWS_SECRET_ACCESS_KEY")
    assert ENV_ORDER["region"] == ("WHARF_REGION", "AWS_REGION", "AWS_DEFAULT_REGION")


@pytest.mark.parametrize("setting", ["endpoint", "access_key", "secret_key", "region"])
def test_first_set_variable_wins(setting):
    names = ENV_ORDER[setting]
    for i in range(len(names)):
        env = {n: f"value-of-{n}" for n in names[i:]}
        env[names[i - 1]] = ""   # an empty variable counts as unset (i > 0)
        got, src = settings_from_env(env)
        assert got[setting] == f"value-of-{names[i]}" and src[setting] == names[i]
    got, src = settings_from_env({})
    assert got[setting] == ("us-east-1" if setting == "region" else None)


def test_nothing_set_says_what_to_set():
    with pytest.raises(wharf.ConfigError) as ei:
        wharf.client_from_env(env={})
    msg = str(ei.value)
    for v in ("WHARF_ENDPOINT", "AWS_ENDPOINT_URL", "WHARF_ACCESS_KEY", "AWS_ACCESS_KEY_ID",
              "WHARF_SECRET_KEY", "AWS_SECRET_ACCESS_KEY", "client=wharf.Client"):
        assert v in msg
    assert isinstance(ei.value, wharf.WharfError)


def test_aws_variables_alone_drive_every_entry_point(wharfd, monkeypatch):
    for v in ALL_VARS:
        monkeypatch.delenv(v, raising=False)
    monkeypatch.setenv("AWS_ENDPOINT_URL", wharfd.endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    wt.set_default_client(None)
    try:
        setup = make_client(wharfd, "http")
        b = unique_bucket("cfg")
        setup.create_bucket(b)
        wt.save({"a": torch.arange(6.0)}, f"s3://{b}/ck")
        assert torch.equal(wt.load(f"s3://{b}/ck")["a"], torch.arange(6.0))
        assert torch.equal(wt.load_safetensors(f"s3://{b}/ck")["a"], torch.arange(6.0))
        toks = np.arange(4 * 8, dtype="<i4").reshape(4, 8)
        setup.put_from(b, "tok/s0.bin", toks)
        setup.put(b, "tok/s0.json", json.dumps({"sequences": 4, "seq_len": 8}).encode())
        rows = list(wt.TokenDataset(f"s3://{b}/tok/"))
        assert torch.equal(torch.stack(rows), torch.from_numpy(toks))
        setup.close()
    finally:
        wt.set_default_client(None)


def test_wrong_secret_from_aws_variables_is_an_auth_error(wharfd, monkeypatch):
    for v in ALL_VARS:
        monkeypatch.delenv(v, raising=False)
    monkeypatch.setenv("WHARF_ENDPOINT", wharfd.endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    c = wharf.client_from_env()
    with pytest.raises(wharf.AuthError):
        c.list_buckets()
    c.close()


@pytest.mark.parametrize("url,want", [
    ("s3://b/k", ("b", "k")), ("s3://b/a/b/", ("b", "a/b")), ("s3://b//x", ("b", "x")),
    ("wharf://b/k", ("b", "k"))])
def test_parse_url(url, want):
    assert wharf.parse_url(url) == want


@pytest.mark.parametrize("url,msg", [
    ("/local/path", "expected s3://bucket/key"), ("s3:///k", "no bucket"),
    ("s3://b", "no key after the bucket"), (None, "expected s3://")])
def test_bad_urls(url, msg, http_client):
    with pytest.raises(wharf.WharfError, match=msg):
        wharf.parse_url(url)
    for fn in (wt.load, wt.load_safetensors, wt.load_pretrained):
        if url == "s3://b" and fn is not wt.load:
            continue   # a snapshot may sit at a bucket's root
        with pytest.raises(wharf.WharfError, match=msg):
            fn(url, client=http_client)
    with pytest.raises(wharf.WharfError, match=msg):
        wt.save({}, url, client=http_client)
