# SPDX-License-Identifier: Apache-2.0
"""`make wheel`'s wheel (scripts/build_wheel.py) installs with `pip install --no-index` into a
fresh venv that sees no system site-packages, and there, with no WHARF_LIB, WHARF_BUILD_DIR,
LD_LIBRARY_PATH or PYTHONPATH, moves bytes through a real wharfd over HTTP, ofi+tcp and
ofi+shm, with libwharf, libfabric and libcurl loaded from the wheel's own copies (read back
from /proc/self/maps). The wheel's RECORD matches its files, every bundled library finds its
neighbours through $ORIGIN, and nothing it needs is left unresolved but the baseline."""
import base64
import csv
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile

import pytest

from wharfd import ACCESS_KEY, SECRET_KEY, build_dir, unique_bucket

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
SCRIPT = os.path.join(ROOT, "scripts", "build_wheel.py")
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import build_wheel  # noqa: E402


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    p = subprocess.run(["/usr/bin/python3", SCRIPT, "--build", build_dir(), "--out", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    whls = [f for f in os.listdir(out) if f.endswith(".whl")]
    assert len(whls) == 1, whls
    assert re.fullmatch(r"wharf-0\.1\.0-py3-none-linux_x86_64\.whl", whls[0]), whls
    return os.path.join(out, whls[0])


def test_record_matches_files(wheel):
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        rec = next(n for n in names if n.endswith(".dist-info/RECORD"))
        rows = list(csv.reader(io.StringIO(z.read(rec).decode())))
        listed = {r[0] for r in rows}
        assert listed == names
        for path, h, size in rows:
            if path == rec:
                assert h == "" and size == ""
                continue
            data = z.read(path)
            algo, _, digest = h.partition("=")
            assert algo == "sha256" and int(size) == len(data)
            want = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            assert digest == want, path
        meta = z.read("wharf-0.1.0.dist-info/METADATA").decode()
        for extra in ("torch", "lightning", "hf", "fsspec", "dcp"):
            assert f"Provides-Extra: {extra}" in meta
        assert 'Requires-Dist: torch>=1.13; extra == "torch"' in meta
        assert "wharf/py.typed" in names and "wharf/_libs/libwharf.so.0" in names


def test_bundle_is_closed_under_origin(wheel, tmp_path):
    with zipfile.ZipFile(wheel) as z:
        z.extractall(tmp_path)
    libs = tmp_path / "wharf" / "_libs"
    have = set(os.listdir(libs))
    assert {"libfabric.so.1", "libcurl.so.4", "libisal.so.2", "libjansson.so.4"} <= have
    for so in have:
        d = subprocess.run(["readelf", "-d", str(libs / so)], capture_output=True, text=True,
                           check=True).stdout
        assert "Library runpath: [$ORIGIN]" in d, so
        for need in re.findall(r"\(NEEDED\)\s+Shared library: \[(.+)\]", d):
            assert need in have or need.startswith(build_wheel.BASELINE), (so, need)
    # nothing but the baseline resolves outside the bundle, LD_LIBRARY_PATH unset
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    ldd = subprocess.run(["ldd", str(libs / "libwharf.so.0")], capture_output=True, text=True,
                         check=True, env=env).stdout
    for m in re.finditer(r"^\s*(\S+)\s+=>\s+(\S+)", ldd, re.M):
        so, path = m.groups()
        assert os.path.dirname(path) == str(libs) or so.startswith(build_wheel.BASELINE), \
            (so, path)


PROBE = r"""
import json, os, signal, sys, time
term = []  # set up before libwharf loads: the bundled libfabric must not take it over
signal.signal(signal.SIGTERM, lambda *a: term.append(1))
import wharf
assert wharf.__file__.startswith(os.environ["VENV"]), wharf.__file__
try:
    import numpy  # noqa: F401
    sys.exit("numpy is importable: the venv is not bare")
except ImportError:
    pass
ep, b = os.environ["EP"], os.environ["BUCKET"]
out = {"library": wharf.library_path(), "moved": {}}
for prov in ("http", "ofi+tcp", "ofi+shm"):
    c = wharf.Client(ep, os.environ["AK"], os.environ["SK"],
                     provider=None if prov == "http" else prov,
                     unix_socket=os.environ["SOCK"] if prov == "ofi+shm" else None)
    if prov == "http":
        c.create_bucket(b)
    data = bytes(range(256)) * 4096
    buf = bytearray(data)
    rep = c.put_from(b, "k-" + prov, buf)
    back = bytearray(len(data))
    rep2 = c.get_into(b, "k-" + prov, back)
    assert bytes(back) == data and c.get(b, "k-" + prov, offset=5, length=7) == data[5:12]
    out["moved"][prov] = [rep.transport, rep2.transport, c.provider]
    c.close()
maps = {}
for line in open("/proc/self/maps"):
    p = line.split()[-1]
    if "/" in p:
        maps[os.path.basename(p)] = p
out["maps"] = maps
os.kill(os.getpid(), signal.SIGTERM)
for _ in range(100):
    if term:
        break
    time.sleep(0.01)
out["sigterm_handled"] = term == [1]
print(json.dumps(out))
"""


def test_fresh_venv_no_index_install_moves_bytes(wheel, tmp_path, wharfd):
    venv = tmp_path / "venv"
    subprocess.run(["/usr/bin/python3", "-m", "venv", str(venv)], check=True, timeout=180)
    py = str(venv / "bin" / "python")
    base = {k: v for k, v in os.environ.items()
            if k not in ("WHARF_LIB", "WHARF_BUILD_DIR", "LD_LIBRARY_PATH", "PYTHONPATH")
            and not k.startswith(("WHARF_", "AWS_"))}
    base.update(PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1",
                PYTHONDONTWRITEBYTECODE="1")
    p = subprocess.run([py, "-m", "pip", "install", "--no-index", wheel],
                       capture_output=True, text=True, timeout=300, env=base, cwd=str(tmp_path))
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    env = dict(base, VENV=str(venv), EP=wharfd.endpoint, AK=ACCESS_KEY, SK=SECRET_KEY,
               SOCK=wharfd.unix_socket, BUCKET=unique_bucket("whl"))
    p = subprocess.run([py, "-c", PROBE], capture_output=True, text=True, timeout=180,
                       env=env, cwd=str(tmp_path))
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    got = json.loads(p.stdout.strip().splitlines()[-1])
    site = str(venv)
    assert got["library"].startswith(site) and got["library"].endswith("_libs/libwharf.so.0")
    for so in ("libwharf.so.0", "libfabric.so.1", "libcurl.so.4", "libisal.so.2"):
        assert got["maps"][so].startswith(site), (so, got["maps"].get(so))
    # the host has rdma-core: its own libibverbs is the one loaded (the bundled one is the
    # fallback for hosts without it)
    if os.path.exists("/lib/x86_64-linux-gnu/libibverbs.so.1"):
        verbs = [p for n, p in got["maps"].items() if n.startswith("libibverbs.so.1")]
        assert verbs and not any(p.startswith(site) for p in verbs), got["maps"]
    assert got["moved"]["http"] == ["http", "http", "none"]
    assert got["moved"]["ofi+tcp"] == ["rdma", "rdma", "ofi+tcp"]
    assert got["moved"]["ofi+shm"] == ["rdma", "rdma", "ofi+shm"]
    assert got["sigterm_handled"], "the program's SIGTERM handler did not run"


ENTRY = r"""
import os, sys
import fsspec
assert "wharf" not in sys.modules
fs = fsspec.filesystem("wharf", endpoint=os.environ["EP"], access_key=os.environ["AK"],
                       secret_key=os.environ["SK"])
assert type(fs).__module__ == "wharf.fsspec", type(fs)
assert sys.modules["wharf"].__file__.startswith(os.environ["VENV"])
b = os.environ["BUCKET"]
fs.mkdir(b)
with fsspec.open(f"wharf://{b}/k", "wb", endpoint=os.environ["EP"],
                 access_key=os.environ["AK"], secret_key=os.environ["SK"]) as f:
    f.write(b"through the entry point")
print(fs.cat_file(f"{b}/k").decode())
"""


def test_entry_point_registers_wharf_with_fsspec(wheel, tmp_path, wharfd):
    pytest.importorskip("fsspec")
    venv = tmp_path / "venv"
    # system site-packages: Debian's fsspec; the wheel's own entry point is what finds wharf
    subprocess.run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", str(venv)],
                   check=True, timeout=180)
    py = str(venv / "bin" / "python")
    base = {k: v for k, v in os.environ.items()
            if k not in ("WHARF_LIB", "WHARF_BUILD_DIR", "LD_LIBRARY_PATH", "PYTHONPATH")
            and not k.startswith(("WHARF_", "AWS_"))}
    base.update(PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1",
                PYTHONDONTWRITEBYTECODE="1")
    p = subprocess.run([py, "-m", "pip", "install", "--no-index", wheel],
                       capture_output=True, text=True, timeout=300, env=base, cwd=str(tmp_path))
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    env = dict(base, VENV=str(venv), EP=wharfd.endpoint, AK=ACCESS_KEY, SK=SECRET_KEY,
               BUCKET=unique_bucket("whe"))
    p = subprocess.run([py, "-c", ENTRY], capture_output=True, text=True, timeout=180,
                       env=env, cwd=str(tmp_path))
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert p.stdout.strip().splitlines()[-1] == "through the entry point"


def test_host_without_the_bundled_libraries(wheel, tmp_path, wharfd):
    """The host's own copy of every library the wheel bundles hidden (a private mount
    namespace, each file bind-mounted over with an empty one), rdma-core included: the
    installed wheel still loads and moves bytes over HTTP and ofi+tcp, so the bundle is
    complete, and the bundled rdma-core is the fallback that loads."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("needs root and unshare(1) for a private mount namespace")
    venv = tmp_path / "venv"
    subprocess.run(["/usr/bin/python3", "-m", "venv", str(venv)], check=True, timeout=180)
    py = str(venv / "bin" / "python")
    base = {k: v for k, v in os.environ.items()
            if k not in ("WHARF_LIB", "WHARF_BUILD_DIR", "LD_LIBRARY_PATH", "PYTHONPATH")
            and not k.startswith(("WHARF_", "AWS_"))}
    base.update(PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1",
                PYTHONDONTWRITEBYTECODE="1")
    p = subprocess.run([py, "-m", "pip", "install", "--no-index", wheel],
                       capture_output=True, text=True, timeout=300, env=base, cwd=str(tmp_path))
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    with zipfile.ZipFile(wheel) as z:
        bundled = [os.path.basename(n) for n in z.namelist() if n.startswith("wharf/_libs/")]
    hosts = build_wheel.closure(os.path.join(build_dir(), "libwharf.so"))
    hide = sorted({os.path.realpath(hosts[so]) for so in bundled if so in hosts})
    assert any("libfabric" in h for h in hide) and any("libibverbs" in h for h in hide)
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    mounts = " && ".join(f"mount --bind {empty} {h}" for h in hide)
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE.replace('("http", "ofi+tcp", "ofi+shm")', '("http", "ofi+tcp")'))
    env = dict(base, VENV=str(venv), EP=wharfd.endpoint, AK=ACCESS_KEY, SK=SECRET_KEY,
               SOCK=wharfd.unix_socket, BUCKET=unique_bucket("whh"))
    p = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                        f"{mounts} && exec {py} {probe}"],
                       capture_output=True, text=True, timeout=180, env=env, cwd=str(tmp_path))
    if p.returncode != 0 and "unshare failed" in p.stderr:
        pytest.skip(f"no private mount namespace here: {p.stderr.strip()}")
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    got = json.loads(p.stdout.strip().splitlines()[-1])
    site = str(venv)
    for so in ("libwharf.so.0", "libfabric.so.1", "libcurl.so.4", "libibverbs.so.1"):
        assert got["maps"][so].startswith(site), (so, got["maps"].get(so))
    assert got["moved"]["ofi+tcp"] == ["rdma", "rdma", "ofi+tcp"]
    assert got["moved"]["http"] == ["http", "http", "none"]
