# SPDX-License-Identifier: Apache-2.0
"""What the tests of installation, packaging and monitoring share: an install of this build
into a temporary DESTDIR (the same `cmake --install` that `make install` runs)."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
from wharfd import build_dir  # noqa: E402


def cmake_install(destdir, prefix):
    """DESTDIR=destdir cmake --install BUILD --prefix prefix; returns destdir + prefix."""
    r = subprocess.run(["cmake", "--install", build_dir(), "--prefix", prefix],
                       env=dict(os.environ, DESTDIR=str(destdir)), capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    return os.path.join(str(destdir), prefix.lstrip("/"))


def source_etc_files():
    d = os.path.join(ROOT, "etc")
    if not os.path.isdir(d):
        return []
    return sorted(f for f in os.listdir(d) if f.startswith("wharfd-") and f.endswith(".conf"))


def has_config_support(wharfd):
    """True when this wharfd has `wharfd check-config` (configuration files)."""
    r = subprocess.run([wharfd, "check-config", "--help"], capture_output=True, text=True,
                       timeout=20)
    return r.returncode == 0 or "check-config" in (r.stdout + r.stderr) and \
        "expected the command" not in r.stderr


def unit_settings(path):
    """{key: [values]} of a unit file's [Service] (and other) lines."""
    out = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith(("#", ";", "[")) or "=" not in line:
                continue
            k, _, v = line.partition("=")
            out.setdefault(k.strip(), []).append(v.strip())
    return out
