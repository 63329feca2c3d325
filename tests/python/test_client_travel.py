# SPDX-License-Identifier: Apache-2.0
"""Clients travel: a wharf.Client pickles by its configuration and reopens in the other
process (multiprocessing spawn and forkserver, ProcessPoolExecutor, a DataLoader's spawned
workers), moving real bytes through a real wharfd over each transport; and wharf.Client()
with no arguments reads the environment, then the AWS profile files in boto3's order (checked
against boto3 itself on the same files), with a temporary HOME."""
import concurrent.futures
import multiprocessing
import os
import pickle

import pytest

import wharf
from wharf.config import ENV_ORDER, PROFILE_VARS, resolve_settings
from conftest import make_client
from wharfd import ACCESS_KEY, REGION, SECRET_KEY, unique_bucket
import mp_worker

AWS_FILE_VARS = ("AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE")


def test_pickle_reopens_with_the_same_configuration(wharfd, provider):
    c = make_client(wharfd, provider, concurrency=3, timeout_ms=30000)
    b = unique_bucket("trv")
    c.create_bucket(b)
    c2 = pickle.loads(pickle.dumps(c))
    assert c2 is not c and c2._h.value != c._h.value
    assert c2.config == c.config and c2.provider == c.provider
    c2.put(b, "k", b"travelled")
    assert c.get(b, "k") == b"travelled"
    c2.close()
    assert c.get(b, "k") == b"travelled"  # the original is untouched by the copy's close
    c.close()


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_process_pool(wharfd, provider, method):
    c = make_client(wharfd, provider)
    b = unique_bucket("trvp")
    c.create_bucket(b)
    ctx = multiprocessing.get_context(method)
    with concurrent.futures.ProcessPoolExecutor(2, mp_context=ctx) as ex:
        futs = [ex.submit(mp_worker.put_get, c, b, f"k{i}", bytes([i]) * (1000 + i))
                for i in range(4)]
        for i, f in enumerate(futs):
            data, prov, ep = f.result(timeout=180)
            assert data == bytes([i]) * (1000 + i)
            assert prov == c.provider and ep == wharfd.endpoint
    for i in range(4):  # and the parent sees what the children wrote
        assert c.get(b, f"k{i}") == bytes([i]) * (1000 + i)
    c.close()


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_dataloader_workers(wharfd, method):
    torch = pytest.importorskip("torch")
    c = make_client(wharfd, "ofi+tcp")
    b = unique_bucket("trvd")
    c.create_bucket(b)
    keys = [f"s{i}" for i in range(6)]
    for i, k in enumerate(keys):
        c.put(b, k, bytes([i]) * 64)
    ds = mp_worker.ObjectDataset(c, b, keys)
    dl = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2,
                                     multiprocessing_context=method, timeout=180)
    got, pids = [], set()
    for t, pid in dl:
        got.append(bytes(t.numpy()))
        pids.add(int(pid))
    assert got == [bytes([i]) * 64 for i in range(6)]
    assert os.getpid() not in pids and len(pids) >= 1
    c.close()


# ---- wharf.Client() with no arguments ---------------------------------------------------

@pytest.fixture()
def clean_env(monkeypatch, tmp_path):
    """No WHARF_*/AWS_* settings, and HOME a fresh directory."""
    for names in ENV_ORDER.values():
        for v in names:
            monkeypatch.delenv(v, raising=False)
    for v in PROFILE_VARS + AWS_FILE_VARS + ("AWS_SESSION_TOKEN", "AWS_CA_BUNDLE"):
        monkeypatch.delenv(v, raising=False)
    home = tmp_path / "home"
    (home / ".aws").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    return home


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _boto3_view():
    """(access key, secret key, region) as boto3 resolves them from the same env and files."""
    boto3 = pytest.importorskip("boto3")
    s = boto3.session.Session()
    cr = s.get_credentials()
    # (no region anywhere: boto3 has None, wharf its documented default)
    return (cr.access_key if cr else None, cr.secret_key if cr else None,
            s.region_name or "us-east-1")


def _ours():
    got, _ = resolve_settings()
    return got["access_key"], got["secret_key"], got["region"]


SCENARIOS = {
    "default in credentials, region in config": (
        {}, {"credentials": "[default]\naws_access_key_id = AK1\naws_secret_access_key = SK1\n",
             "config": "[default]\nregion = eu-west-3\n"}),
    "AWS_PROFILE in config only": (
        {"AWS_PROFILE": "dev"},
        {"credentials": "[default]\naws_access_key_id = AK1\naws_secret_access_key = SK1\n",
         "config": "[profile dev]\naws_access_key_id = AK2\naws_secret_access_key = SK2\n"
                   "region = ap-south-1\n"}),
    "credentials file before config file": (
        {"AWS_PROFILE": "dev"},
        {"credentials": "[dev]\naws_access_key_id = AK3\naws_secret_access_key = SK3\n",
         "config": "[profile dev]\naws_access_key_id = AK2\naws_secret_access_key = SK2\n"}),
    "AWS_DEFAULT_PROFILE before AWS_PROFILE": (
        {"AWS_PROFILE": "a", "AWS_DEFAULT_PROFILE": "b"},
        {"credentials": "[a]\naws_access_key_id = AKa\naws_secret_access_key = SKa\n"
                        "[b]\naws_access_key_id = AKb\naws_secret_access_key = SKb\n"}),
    "environment keys before the profile": (
        {"AWS_ACCESS_KEY_ID": "AKenv", "AWS_SECRET_ACCESS_KEY": "SKenv",
         "AWS_DEFAULT_REGION": "us-west-2"},
        {"credentials": "[default]\naws_access_key_id = AK1\naws_secret_access_key = SK1\n",
         "config": "[default]\nregion = eu-west-3\n"}),
    "files named by AWS_SHARED_CREDENTIALS_FILE and AWS_CONFIG_FILE": (
        {"AWS_SHARED_CREDENTIALS_FILE": "{tmp}/elsewhere/creds",
         "AWS_CONFIG_FILE": "{tmp}/elsewhere/conf"},
        {"credentials": "[default]\naws_access_key_id = AKx\naws_secret_access_key = SKx\n",
         "config": "[default]\nregion = sa-east-1\n",
         "{tmp}/elsewhere/creds": "[default]\naws_access_key_id = AK9\n"
                                  "aws_secret_access_key = SK9\n",
         "{tmp}/elsewhere/conf": "[default]\nregion = me-south-1\n"}),
}


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_profile_order_matches_boto3(clean_env, monkeypatch, tmp_path, name):
    env, files = SCENARIOS[name]
    for k, v in env.items():
        monkeypatch.setenv(k, v.format(tmp=tmp_path))
    for f, text in files.items():
        path = tmp_path / f.format(tmp=tmp_path) if "{tmp}" in f else clean_env / ".aws" / f
        _write(path, text)
    want = _boto3_view()
    assert want[0] is not None, want
    assert _ours() == want


def test_client_from_a_profile_alone(clean_env, wharfd, monkeypatch):
    # endpoint, keys and region only in the profile files: a real wharfd answers
    _write(clean_env / ".aws" / "credentials",
           f"[wh]\naws_access_key_id = {ACCESS_KEY}\naws_secret_access_key = {SECRET_KEY}\n")
    _write(clean_env / ".aws" / "config",
           f"[profile wh]\nregion = {REGION}\nendpoint_url = {wharfd.endpoint}\n")
    monkeypatch.setenv("AWS_PROFILE", "wh")
    c = wharf.Client()
    assert c.endpoint == wharfd.endpoint and c.config["region"] == REGION
    b = unique_bucket("prof")
    c.create_bucket(b)
    c.put(b, "k", b"from a profile")
    assert c.get(b, "k") == b"from a profile"
    # and it travels with what it resolved, to a child with no profile at all
    ctx = multiprocessing.get_context("spawn")
    monkeypatch.setenv("HOME", "/nonexistent")
    monkeypatch.delenv("AWS_PROFILE")
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=ctx) as ex:
        data, _, ep = ex.submit(mp_worker.put_get, c, b, "k2", b"child").result(timeout=180)
    assert data == b"child" and ep == wharfd.endpoint
    c.close()


def test_services_section_endpoint_wins_over_profile_endpoint(clean_env, wharfd, monkeypatch):
    _write(clean_env / ".aws" / "credentials",
           f"[default]\naws_access_key_id = {ACCESS_KEY}\naws_secret_access_key = {SECRET_KEY}\n")
    _write(clean_env / ".aws" / "config",
           "[default]\nendpoint_url = http://127.0.0.1:1\nservices = local\n"
           f"[services local]\ns3 =\n  endpoint_url = {wharfd.endpoint}\n")
    got, src = resolve_settings()
    assert got["endpoint"] == wharfd.endpoint and "services local" in src["endpoint"]
    c = wharf.Client()
    assert c.list_buckets() is not None
    c.close()


def test_environment_endpoint_before_profile(clean_env, wharfd, monkeypatch):
    _write(clean_env / ".aws" / "config", "[default]\nendpoint_url = http://127.0.0.1:1\n")
    _write(clean_env / ".aws" / "credentials",
           f"[default]\naws_access_key_id = {ACCESS_KEY}\naws_secret_access_key = {SECRET_KEY}\n")
    monkeypatch.setenv("AWS_ENDPOINT_URL", wharfd.endpoint)
    c = wharf.Client()
    assert c.endpoint == wharfd.endpoint and c.list_buckets() is not None
    c.close()


def test_named_profile_missing_is_a_config_error(clean_env, monkeypatch):
    _write(clean_env / ".aws" / "credentials",
           "[default]\naws_access_key_id = a\naws_secret_access_key = b\n")
    monkeypatch.setenv("AWS_PROFILE", "nope")
    with pytest.raises(wharf.ConfigError, match="AWS_PROFILE=nope: no \\[nope\\]"):
        wharf.Client()


def test_nothing_anywhere_names_what_to_set(clean_env):
    with pytest.raises(wharf.ConfigError) as ei:
        wharf.Client()
    for v in ("WHARF_ENDPOINT", "AWS_ACCESS_KEY_ID", "AWS_PROFILE", "~/.aws/credentials"):
        assert v in str(ei.value)


def test_no_argument_client_reads_the_environment(clean_env, wharfd, monkeypatch):
    monkeypatch.setenv("WHARF_ENDPOINT", wharfd.endpoint)
    monkeypatch.setenv("WHARF_ACCESS_KEY", ACCESS_KEY)
    monkeypatch.setenv("WHARF_SECRET_KEY", SECRET_KEY)
    monkeypatch.setenv("WHARF_PROVIDER", "ofi+shm")
    monkeypatch.setenv("WHARF_UNIX_SOCKET", wharfd.unix_socket)
    c = wharf.Client()
    assert c.provider == "ofi+shm"
    b = unique_bucket("envc")
    c.create_bucket(b)
    import numpy as np
    a = np.arange(1 << 16, dtype=np.uint8)
    assert c.put_from(b, "k", a).transport == "rdma"
    c.close()
    # explicit arguments are not mixed with WHARF_PROVIDER
    c = wharf.Client(wharfd.endpoint, ACCESS_KEY, SECRET_KEY)
    assert c.provider == "none"
    c.close()
