# SPDX-License-Identifier: Apache-2.0
"""`pip install --no-build-isolation ./python` works with no network (setuptools from the
system, reading python/pyproject.toml), and the installed package finds libwharf through
WHARF_LIB. (`make wheel`'s wheel, which bundles libwharf, is tests/python/test_wheel.py.)"""
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PYDIR = os.path.normpath(os.path.join(HERE, "..", "..", "python"))


def test_pip_install_offline(tmp_path):
    import wharf
    libpath = wharf.library_path()
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)],
                   check=True, timeout=120)
    py = str(venv / "bin" / "python")
    env = dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1",
               PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTHONPATH", None)
    # copy the source so the build leaves nothing in the tree
    src = tmp_path / "src"
    subprocess.run(["cp", "-r", PYDIR, str(src)], check=True)
    p = subprocess.run([py, "-m", "pip", "install", "--no-index", "--no-build-isolation",
                        str(src)],
                       capture_output=True, text=True, timeout=300, env=env)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    code = ("import wharf, wharf.safetensors, os, importlib.resources as r; "
            "assert r.files('wharf').joinpath('py.typed').is_file(); "
            "assert wharf.__file__.startswith(os.environ['VENV']), wharf.__file__; "
            "print(wharf.__version__, wharf.library_version())")
    p = subprocess.run([py, "-c", code], capture_output=True, text=True, timeout=120,
                       env=dict(env, WHARF_LIB=libpath, VENV=str(venv)), cwd=str(tmp_path))
    assert p.returncode == 0, p.stderr[-3000:]
    v = os.environ["WHARF_PROJECT_VERSION"]
    assert p.stdout.split() == [v, v]
    # without any way to find the library the import works and the first call says what to do
    p = subprocess.run([py, "-c", "import wharf; wharf.library_version()"],
                       capture_output=True, text=True, timeout=120,
                       env=dict(env, WHARF_LIB="/nonexistent/libwharf.so"), cwd=str(tmp_path))
    assert p.returncode != 0 and "WHARF_LIB" in p.stderr


@pytest.mark.parametrize("var", ["WHARF_LIB", "WHARF_BUILD_DIR"])
def test_library_found_from_env(var):
    import wharf
    libpath = wharf.library_path()
    val = libpath if var == "WHARF_LIB" else os.path.dirname(libpath)
    env = dict(os.environ, PYTHONPATH=PYDIR)
    env.pop("WHARF_LIB", None)
    env.pop("WHARF_BUILD_DIR", None)
    env[var] = val
    p = subprocess.run([sys.executable, "-c", "import wharf; print(wharf.library_path())"],
                       capture_output=True, text=True, timeout=60, env=env, cwd="/")
    assert p.returncode == 0, p.stderr
    assert os.path.realpath(p.stdout.strip()) == os.path.realpath(libpath)
