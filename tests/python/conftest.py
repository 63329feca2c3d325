# SPDX-License-Identifier: Apache-2.0
"""Fixtures of the Python suite. The session wharfd comes from tests/conftest.py; each test
that moves data runs once per transport: ofi+shm (over the server's Unix socket), ofi+tcp and
plain HTTP."""
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

import wharf  # noqa: E402
from wharfd import ACCESS_KEY, REGION, SECRET_KEY, unique_bucket  # noqa: E402

PROVIDERS = ["ofi+shm", "ofi+tcp", "http"]


def make_client(srv, provider, **kw):
    return wharf.Client(srv.endpoint, ACCESS_KEY, SECRET_KEY, region=REGION,
                        provider=None if provider == "http" else provider,
                        unix_socket=srv.unix_socket if provider == "ofi+shm" else None, **kw)


@pytest.fixture(params=PROVIDERS)
def provider(request):
    return request.param


@pytest.fixture()
def client(wharfd, provider):
    c = make_client(wharfd, provider)
    yield c
    c.close()


@pytest.fixture()
def bucket(client):
    name = unique_bucket("py")
    client.create_bucket(name)
    return name


@pytest.fixture()
def http_client(wharfd):
    c = make_client(wharfd, "http")
    yield c
    c.close()


class Witness:
    """Server counter deltas: the proof of which transport moved the bytes."""

    def __init__(self, srv):
        self.srv = srv

    def __enter__(self):
        self.before = self._read()
        return self

    def __exit__(self, *exc):
        self.after = self._read()
        self.delta = {k: self.after[k] - self.before[k] for k in self.after}

    def _read(self):
        # the server's view: it writes into client memory for a GET, reads from it for a PUT
        return {"get": self.srv.metric_sum("wharf_rdma_read_bytes_total"),
                "put": self.srv.metric_sum("wharf_rdma_write_bytes_total")}


def expect_transport(srv, provider, witness, rep, nbytes, direction):
    """The report and the server's counters agree on the transport."""
    if provider == "http":
        assert rep.transport == "http", rep
        assert witness.delta[direction] == 0
    else:
        assert rep.transport == "rdma", rep
        assert not rep.fell_back, rep
        assert witness.delta[direction] >= nbytes, (witness.delta, nbytes)
