# SPDX-License-Identifier: Apache-2.0
"""The public API (wharf.Client, wharf.config, the errors) is typed and says so (py.typed):
mypy, run as a user would on code that uses it, accepts correct calls and names the
argument in wrong ones. Skipped where mypy is not installed (Debian: python3-mypy)."""
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PYDIR = os.path.normpath(os.path.join(HERE, "..", "..", "python"))

GOOD = '''
import wharf
from wharf.config import resolve_settings
c = wharf.Client("http://127.0.0.1:9", "ak", "sk", provider="ofi+tcp", concurrency=4)
rep: wharf.Report = c.put("b", "k", b"x")
data: bytes = c.get("b", "k", offset=1, length=2)
n: int = c.stat("b", "k").length
names: list = c.list_buckets()
keys = [o.key for o in c.list("b", prefix="p/")]
settings, sources = resolve_settings()
e = wharf.NotFoundError(-4, "m")
status: int = e.status
try:
    pass
except wharf.TimedOutError as t:
    msg: str = t.message
'''

BAD = '''
import wharf
c = wharf.Client("http://127.0.0.1:9", "ak", "sk")
c.get("b", 42)
x: str = c.put("b", "k", b"x")
c.create_bucket(None)
'''


@pytest.fixture(scope="module")
def mypy_out(tmp_path_factory):
    """One mypy run (it is slow to start) over both files: {file name: its error lines}."""
    pytest.importorskip("mypy")
    d = tmp_path_factory.mktemp("typing")
    (d / "good.py").write_text(GOOD)
    (d / "bad.py").write_text(BAD)
    p = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental",
                        "--cache-dir", str(d / "cache"), str(d / "good.py"), str(d / "bad.py")],
                       capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, MYPYPATH=PYDIR))
    assert p.returncode in (0, 1), p.stdout + p.stderr
    out = {"good.py": [], "bad.py": [], "other": []}
    for line in p.stdout.splitlines():
        if ": error:" not in line:
            continue
        name = os.path.basename(line.split(":", 1)[0])
        out[name if name in out else "other"].append(line)
    return out


def test_py_typed_is_there():
    assert os.path.isfile(os.path.join(PYDIR, "wharf", "py.typed"))


def test_correct_use_type_checks(mypy_out):
    assert mypy_out["good.py"] == [] and mypy_out["other"] == [], mypy_out


def test_wrong_use_is_named(mypy_out):
    out = "\n".join(mypy_out["bad.py"])
    assert 'Argument 2 to "get" of "Client" has incompatible type "int"' in out, out
    assert 'Incompatible types in assignment (expression has type "Report"' in out, out
    assert 'Argument 1 to "create_bucket" of "Client" has incompatible type "None"' in out, out
