# SPDX-License-Identifier: Apache-2.0
"""A network (ofi+tcp) x-amz-rdma-token's endpoint must be on the requester's host, over the
Unix socket too: a request there whose token names another machine's address is refused (403,
no byte moves, nothing dialled), the client's own loopback endpoint still moves the bytes.
Against a real wharfd with tcp enabled, signed raw requests (tests/lib/s3raw.py)."""
import os
import socket
import struct

import pytest

from s3raw import S3Raw
import wharf
from wharfd import ACCESS_KEY, CTYPES_UNDER_ASAN, REGION, SECRET_KEY, WharfServer, unique_bucket


@pytest.fixture(scope="module")
def srv():
    s = WharfServer(providers="tcp")
    s.start()
    yield s
    rc = s.stop()
    s.cleanup()
    assert rc == 0


def tcp_token(ip, port=4242, size=1 << 20):
    ep = struct.pack("<H", socket.AF_INET) + struct.pack(">H", port) + socket.inet_aton(ip)
    ep += b"\0" * 8
    return f"10000:{size:x}:ofi1:tcp;ofi_rxm:{ep.hex()}:1"


def test_tcp_token_over_unix_socket_names_this_host_only(srv):
    raw = S3Raw(srv.endpoint, unix_socket=srv.unix_socket)
    b = unique_bucket("tpeer")
    assert raw.request("PUT", f"/{b}").status == 200
    assert raw.request("PUT", f"/{b}/o", body=b"\x5a" * 4096).status == 200
    # 192.0.2.1 (TEST-NET-1) is no address of this host: refused before anything is dialled.
    r = raw.request("GET", f"/{b}/o", headers={"x-amz-rdma-token": tcp_token("192.0.2.1")},
                    timeout=20)
    assert r.status == 403, r
    assert "not the requester's address" in r.headers.get("x-amz-error-message", ""), r.headers


@pytest.mark.skipif(**CTYPES_UNDER_ASAN)
def test_tcp_token_over_unix_socket_to_the_clients_own_endpoint_moves_bytes(srv):
    """The client's own (loopback) tcp endpoint over the Unix socket moves the bytes."""
    b = unique_bucket("tpeer")
    S3Raw(srv.endpoint, unix_socket=srv.unix_socket).request("PUT", f"/{b}")
    c = wharf.Client(srv.endpoint, ACCESS_KEY, SECRET_KEY, region=REGION, provider="ofi+tcp",
                     unix_socket=srv.unix_socket)
    try:
        data = os.urandom(3 << 20)
        assert c.put(b, "r", data, transport="rdma").transport == "rdma"
        assert c.get(b, "r", transport="rdma") == data
    finally:
        c.close()
