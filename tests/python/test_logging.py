# SPDX-License-Identifier: Apache-2.0
"""The `wharf` logger carries what Python sees of libwharf (its ABI has no log callback):
a DEBUG line per transfer with its report, INFO for a new client, WARNING for a fallback from
RDMA to HTTP with the server's reason, DEBUG for each error raised; silent (NullHandler) by
default. Against real wharfds (one that declines RDMA)."""
import logging
import subprocess
import sys

import pytest

import wharf
from conftest import make_client
from wharfd import ACCESS_KEY, SECRET_KEY, WharfServer, unique_bucket


def test_transfers_and_client_are_logged(wharfd, caplog):
    caplog.set_level(logging.DEBUG, logger="wharf")
    c = make_client(wharfd, "ofi+tcp")
    b = unique_bucket("log")
    c.create_bucket(b)
    c.put(b, "k", b"x" * 5000)
    assert c.get(b, "k") == b"x" * 5000
    with pytest.raises(wharf.NotFoundError):
        c.get(b, "missing")
    recs = [r for r in caplog.records if r.name == "wharf"]
    msgs = [r.getMessage() for r in recs]
    assert any(r.levelno == logging.INFO and r.getMessage().startswith(
        f"client endpoint {wharfd.endpoint} provider ofi+tcp") for r in recs), msgs
    assert any(m.startswith(f"PUT {b}/k bytes 5000 transport rdma provider ofi+tcp")
               for m in msgs), msgs
    assert any(m.startswith(f"GET {b}/k bytes 5000 transport rdma") for m in msgs), msgs
    assert any(m.startswith("error NotFoundError status WHARF_ERR_NOT_FOUND") and "missing" in m
               for m in msgs), msgs
    c.close()


def test_fallback_is_a_warning_with_the_reason(caplog):
    caplog.set_level(logging.WARNING, logger="wharf")
    with WharfServer(providers="none") as srv:
        c = wharf.Client(srv.endpoint, ACCESS_KEY, SECRET_KEY, provider="ofi+tcp",
                         fallback="http")
        b = unique_bucket("logf")
        c.create_bucket(b)
        rep = c.put(b, "k", b"y" * 4096)
        assert rep.fell_back and rep.transport == "http"
        c.close()
    warn = [r for r in caplog.records if r.name == "wharf" and r.levelno == logging.WARNING]
    assert len(warn) == 1, [r.getMessage() for r in warn]
    assert warn[0].getMessage() == f'PUT {b}/k fell back to http reason "{rep.reason}"'
    assert rep.reason


def test_silent_unless_configured(wharfd):
    code = ("import wharf, sys\n"
            f"c = wharf.Client({wharfd.endpoint!r}, {ACCESS_KEY!r}, {SECRET_KEY!r})\n"
            "c.list_buckets()\n"
            "try:\n    c.get('no-such-bucket-x', 'k')\nexcept wharf.NotFoundError:\n    pass\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0 and p.stderr == "", p.stderr
