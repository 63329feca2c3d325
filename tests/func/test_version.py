# SPDX-License-Identifier: Apache-2.0
"""The version is written once, in CMakeLists.txt's project(wharf VERSION ...): wharfd (its
--version and Server header), libwharf (wharf_version(), through the CLI's --version), the
pkg-config file and the Python package all say that version, and no source spells it out."""
import os
import re
import subprocess
import sys
import urllib.request

from wharfd import WharfServer, build_dir

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def project_version():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        m = re.search(r"project\(wharf VERSION ([0-9]+\.[0-9]+\.[0-9]+)", f.read())
    assert m, "CMakeLists.txt has no project(wharf VERSION x.y.z)"
    # CTest passes the configured version too: a stale build dir fails here, not later
    assert os.environ.get("WHARF_PROJECT_VERSION", m.group(1)) == m.group(1)
    return m.group(1)


def test_programs_say_the_project_version():
    v = project_version()
    srv = WharfServer()
    try:
        r = subprocess.run([srv.binary, "--version"], capture_output=True, text=True, timeout=20)
        assert r.returncode == 0 and r.stdout.split() == ["wharfd", v], r.stdout
        srv.start()
        with urllib.request.urlopen(srv.endpoint + "/health", timeout=5) as resp:
            assert resp.headers["Server"] == "wharfd/" + v
    finally:
        srv.stop()
        srv.cleanup()
    # the CLI prints libwharf's wharf_version()
    r = subprocess.run([os.path.join(build_dir(), "wharf"), "--version"], capture_output=True,
                       text=True, timeout=20)
    assert r.returncode == 0 and r.stdout.split() == ["wharf", v], r.stdout
    with open(os.path.join(build_dir(), "wharf.pc")) as f:
        assert re.search(r"^Version: (.*)$", f.read(), re.M).group(1) == v


def test_python_package_says_the_project_version():
    v = project_version()
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import wharf  # does not load libwharf
    assert wharf.__version__ == v
    # pyproject.toml takes it from wharf/_version.py (setuptools and scripts/build_wheel.py)
    import tomllib
    with open(os.path.join(ROOT, "python", "pyproject.toml"), "rb") as f:
        proj = tomllib.load(f)
    assert "version" not in proj["project"] and "version" in proj["project"]["dynamic"]
    assert proj["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "wharf._version.__version__"}


def test_version_is_written_once():
    v = project_version()
    allowed = {"CMakeLists.txt", os.path.join("python", "wharf", "_version.py")}
    found = []
    pat = re.compile(r"(?<![0-9.])" + re.escape(v) + r"(?![0-9])")
    for top in ("src", "include", "python", "cmake", "bench", "scripts"):
        for dirpath, _, files in os.walk(os.path.join(ROOT, top)):
            for name in files:
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, ROOT)
                if rel in allowed or "__pycache__" in rel:
                    continue
                try:
                    with open(path, encoding="utf-8") as f:
                        if pat.search(f.read()):
                            found.append(rel)
                except (UnicodeDecodeError, OSError):
                    continue
    assert found == [], f"the version {v} is spelled out in {found}: take it from wharf_version.h"
