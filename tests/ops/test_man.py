# SPDX-License-Identifier: Apache-2.0
"""The installed man pages cannot drift from --help: every option that `wharfd --help`, its
commands' --help (gateway, storage, user, node) and `wharf --help` print is in wharfd(1) or
wharf(1) as installed (they are generated from --help at build time, scripts/gen_man.py)."""
import os
import re
import subprocess

import pytest

from opslib import cmake_install

OPT = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
HELPS = {"wharfd.1": [[], ["gateway"], ["storage"], ["user"], ["node"]], "wharf.1": [[]]}


def _options(program, sub):
    lib = os.path.join(os.path.dirname(os.path.dirname(program)), "lib")  # the installed one
    r = subprocess.run([program] + sub + ["--help"], capture_output=True, text=True, timeout=20,
                       env=dict(os.environ, LD_LIBRARY_PATH=lib))
    assert r.returncode == 0, r.stderr
    return set(OPT.findall(r.stdout))


def _man_text(path):
    """The page's text with roff's escapes for - and fonts undone."""
    with open(path) as f:
        t = f.read()
    t = t.replace("\\-", "-").replace("\\&", "").replace("\\e", "\\")
    return re.sub(r"\\f[BIRP]", "", t)


def missing(page, program, subs):
    text = _man_text(page)
    found = set(OPT.findall(text))
    return {" ".join(s) or "-": sorted(_options(program, s) - found) for s in subs
            if _options(program, s) - found}


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    return cmake_install(tmp_path_factory.mktemp("dest"), "/usr")


@pytest.mark.parametrize("page", sorted(HELPS))
def test_man_page_has_every_option(installed, page):
    program = os.path.join(installed, "bin", page[:-2])
    path = os.path.join(installed, "share", "man", "man1", page)
    assert missing(path, program, HELPS[page]) == {}
    r = subprocess.run(["man", "-l", path], capture_output=True, text=True, timeout=30,
                       env=dict(os.environ, MANWIDTH="100"))
    assert r.returncode == 0 and page[:-2].upper() in r.stdout


def test_check_catches_a_dropped_option(installed, tmp_path):
    """A page that lost an option (here --replicas, a gateway option) fails the check."""
    page = os.path.join(installed, "share", "man", "man1", "wharfd.1")
    with open(page) as f:
        text = f.read()
    assert "replicas" in text
    stale = tmp_path / "wharfd.1"
    stale.write_text(text.replace("\\-\\-replicas", "").replace("--replicas", ""))
    assert missing(str(stale), os.path.join(installed, "bin", "wharfd"),
                   HELPS["wharfd.1"]) == {"gateway": ["--replicas"]}
