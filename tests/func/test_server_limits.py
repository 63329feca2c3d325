# SPDX-License-Identifier: Apache-2.0
"""Size limits the S3 front enforces before any byte moves, the same for every data path.

S3 caps a PutObject and an UploadPart at 5 GiB. An HTTP request declares its size in
Content-Length; an x-amz-rdma-token request declares it in the token (base:size:...), and its
Content-Length is 0. Both must get 400 EntityTooLarge at once, with nothing stored and nothing
read from the client's memory.

The server runs with its default providers (shm, tcp), so a token that passed the size check
would really be served: the over-limit tokens name address 0x1000 (never mapped), so even a
server without the check fails fast instead of reading gigabytes.
"""
import socket

import pytest

from s3raw import S3Raw, UNSIGNED
from wharfd import WharfServer, unique_bucket

GIB = 1 << 30
EP = "00" * 16


def token(size, base=0x1000):
    return f"{base:x}:{size:x}:ofi1:shm:{EP}:1"


@pytest.fixture(scope="module")
def srv():
    s = WharfServer()
    s.start()
    yield s
    rc = s.stop()
    s.cleanup()
    assert rc == 0


@pytest.fixture(params=["tcp", "unix"])
def raw(request, srv):
    if request.param == "tcp":
        return S3Raw(srv.endpoint)
    return S3Raw(srv.endpoint, unix_socket=srv.unix_socket)


@pytest.fixture()
def bucket(raw):
    b = unique_bucket("limits")
    assert raw.request("PUT", f"/{b}").status == 200
    return b


def create_upload(raw, bucket, key):
    r = raw.request("POST", f"/{bucket}/{key}", query={"uploads": None})
    assert r.status == 200, r
    return r.body.split(b"<UploadId>")[1].split(b"</UploadId>")[0].decode()


def assert_too_large(r):
    assert r.status == 400, r
    assert r.error_code() == "EntityTooLarge", r
    assert r.body == b"", "a token request is answered without a body"
    msg = r.headers.get("x-amz-error-message", "")
    assert "5 GiB" in msg and "token" in msg, msg


def test_rdma_put_over_5gib_is_entity_too_large(raw, srv, bucket):
    before = srv.data_files()
    r = raw.request("PUT", f"/{bucket}/big", headers={"x-amz-rdma-token": token(6 * GIB)},
                    payload_hash=UNSIGNED)
    assert_too_large(r)
    assert "6442450944" in r.headers.get("x-amz-error-message", "")
    assert raw.request("HEAD", f"/{bucket}/big").status == 404
    assert srv.data_files() == before


def test_rdma_upload_part_over_5gib_is_entity_too_large(raw, srv, bucket):
    upload_id = create_upload(raw, bucket, "mp")
    before = srv.data_files()
    r = raw.request("PUT", f"/{bucket}/mp", query={"partNumber": "1", "uploadId": upload_id},
                    headers={"x-amz-rdma-token": token(5 * GIB + 1)}, payload_hash=UNSIGNED)
    assert_too_large(r)
    r = raw.request("GET", f"/{bucket}/mp", query={"uploadId": upload_id})
    assert r.status == 200 and b"<Part>" not in r.body, r
    assert srv.data_files() == before
    assert raw.request("DELETE", f"/{bucket}/mp", query={"uploadId": upload_id}).status == 204


def test_rdma_put_at_5gib_passes_the_limit(raw, bucket):
    """Exactly 5 GiB is allowed: the request gets past the limit to the transfer, which then
    fails on the unmapped address (or the binding rules), never with EntityTooLarge."""
    r = raw.request("PUT", f"/{bucket}/edge", headers={"x-amz-rdma-token": token(5 * GIB)},
                    payload_hash=UNSIGNED)
    assert r.status != 200, r
    assert r.error_code() != "EntityTooLarge", r
    assert raw.request("HEAD", f"/{bucket}/edge").status == 404


def _headers_only(raw, method, path, content_length, query=None, timeout=10):
    """Sends a signed request's headers declaring content_length and no body; returns the
    status and the reply's start (the server must answer without waiting for the body)."""
    s = raw.open_socket(method, path, content_length, query=query, timeout=timeout)
    try:
        buf = b""
        while b"</Error>" not in buf and len(buf) < 65536:
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
    except socket.timeout:
        pytest.fail(f"no answer within {timeout}s: the server waited for a {content_length} "
                    "byte body")
    finally:
        s.close()
    assert buf.startswith(b"HTTP/1."), buf[:200]
    return int(buf.split(b" ", 2)[1]), buf


def test_http_upload_part_declaring_over_5gib_is_refused_at_once(srv, bucket):
    raw = S3Raw(srv.endpoint)
    upload_id = create_upload(raw, bucket, "mp-http")
    status, buf = _headers_only(raw, "PUT", f"/{bucket}/mp-http", 6 * GIB,
                                query={"partNumber": "1", "uploadId": upload_id})
    assert status == 400 and b"<Code>EntityTooLarge</Code>" in buf, buf[:400]
    assert raw.request("DELETE", f"/{bucket}/mp-http",
                       query={"uploadId": upload_id}).status == 204


def test_http_put_declaring_over_5gib_is_refused_at_once(srv, bucket):
    raw = S3Raw(srv.endpoint)
    status, buf = _headers_only(raw, "PUT", f"/{bucket}/http-big", 6 * GIB)
    assert status == 400 and b"<Code>EntityTooLarge</Code>" in buf, buf[:400]
