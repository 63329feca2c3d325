# SPDX-License-Identifier: Apache-2.0
"""The shm cross-process attack against a real wharfd (docs/internals.md, "The data path is a
security boundary"): a signed request whose x-amz-rdma-token names the shm endpoint and memory
of ANOTHER process (a victim that registered its own buffer) must be refused before any byte
moves, and the victim's memory must be unchanged. The victim is a real libfabric shm client
(unit_xfer_test_ofi victim); the attacker is this test process, signing with valid
credentials over the Unix socket, where the server knows its pid from SO_PEERCRED.
"""
import os
import subprocess

import pytest

from s3raw import S3Raw, UNSIGNED
from wharfd import WharfServer, build_dir, unique_bucket


@pytest.fixture(scope="module")
def srv():
    s = WharfServer(providers="shm")
    s.start()
    yield s
    rc = s.stop()
    s.cleanup()
    assert rc == 0


@pytest.fixture()
def victim():
    exe = os.path.join(build_dir(), "tests", "unit_xfer_test_ofi")
    if not os.path.exists(exe):
        pytest.fail(f"{exe} not built")
    p = subprocess.Popen([exe, "victim"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True)
    token = p.stdout.readline().split()[1]
    pid = int(p.stdout.readline().split()[1])

    def check():
        p.stdin.write("check\n")
        p.stdin.flush()
        return p.stdout.readline().strip()

    assert check() == "unchanged"
    yield token, pid, check
    try:
        p.stdin.write("quit\n")
        p.stdin.flush()
        p.wait(timeout=10)
    except (BrokenPipeError, subprocess.TimeoutExpired):
        p.kill()
        p.wait()


def obj(raw, size=1 << 20):
    b = unique_bucket("atk")
    assert raw.request("PUT", f"/{b}").status == 200
    assert raw.request("PUT", f"/{b}/o", body=b"\xee" * size).status == 200
    return b


def assert_refused(r, statuses=(403,)):
    assert r.status in statuses, r
    assert r.body == b"", "a token request never gets a body"
    assert r.headers.get("x-amz-error-message"), r.headers


def test_get_into_other_process_refused(srv, victim):
    token, pid, check = victim
    raw = S3Raw(srv.endpoint, unix_socket=srv.unix_socket)
    b = obj(raw)
    r = raw.request("GET", f"/{b}/o", headers={"x-amz-rdma-token": token})
    assert_refused(r)
    assert str(pid) in r.headers["x-amz-error-message"]
    assert check() == "unchanged"
    m = srv.metrics()
    assert m.get('wharf_rdma_declines_total{reason="peer"}', 0) >= 1


def test_put_from_other_process_refused_and_stores_nothing(srv, victim):
    token, pid, check = victim
    raw = S3Raw(srv.endpoint, unix_socket=srv.unix_socket)
    b = unique_bucket("atk")
    assert raw.request("PUT", f"/{b}").status == 200
    r = raw.request("PUT", f"/{b}/stolen", headers={"x-amz-rdma-token": token},
                    payload_hash=UNSIGNED)
    assert_refused(r)
    assert raw.request("HEAD", f"/{b}/stolen").status == 404
    assert check() == "unchanged"


def test_forged_endpoint_with_victim_address_refused(srv, victim):
    """The attacker keeps the victim's address and key but names an endpoint that claims to
    be its own: no such shm region exists for it, so 400 before any byte moves."""
    token, pid, check = victim
    base, size, dialect, prov, _ep, key = token.split(":")
    # (a name no endpoint of this process has: "<pid>:0:0" may be this process's own real
    # endpoint, which the server may legitimately write, where the victim's address is
    # then unmapped: a 502, with the victim untouched all the same)
    forged_ep = f"fi_shm://{os.getpid()}:4095:4095".encode().hex() + "00"
    forged = ":".join([base, size, dialect, prov, forged_ep, key])
    raw = S3Raw(srv.endpoint, unix_socket=srv.unix_socket)
    b = obj(raw)
    r = raw.request("GET", f"/{b}/o", headers={"x-amz-rdma-token": forged})
    assert_refused(r, (400, 403))
    assert check() == "unchanged"


def test_shm_over_tcp_is_declined(srv, victim):
    """Over TCP the server cannot know which process asks: shm is declined (501)."""
    token, pid, check = victim
    raw = S3Raw(srv.endpoint)
    b = obj(raw)
    r = raw.request("GET", f"/{b}/o", headers={"x-amz-rdma-token": token})
    assert r.status == 501, r
    assert r.headers.get("x-amz-rdma-reply") == "501"
    assert "Unix socket" in r.headers.get("x-amz-error-message", "")
    assert check() == "unchanged"
