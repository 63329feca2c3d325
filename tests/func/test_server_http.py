# SPDX-License-Identifier: Apache-2.0
"""wharfd's HTTP front beyond what an SDK exercises: aborted and short uploads store nothing,
aws-chunked bodies (signed chunks, checksum trailers), header limits, keep-alive, the Unix
socket, and the per-request log line."""
import base64
import http.client
import os
import re
import socket
import struct
import time

import pytest

from s3raw import S3Raw, UNSIGNED
from wharfd import crc32c_b64, md5_hex, unique_bucket, wait_until


@pytest.fixture(scope="module")
def raw(wharfd):
    return S3Raw(wharfd.endpoint)


@pytest.fixture()
def bucket(raw):
    b = unique_bucket("http")
    assert raw.request("PUT", f"/{b}").status == 200
    return b


def inflight(srv):
    """Requests in flight on the server, not counting the /metrics request asking."""
    return srv.metrics().get("wharf_inflight_requests", 0) - 1


@pytest.mark.parametrize("sent", [0, 1, 3 << 20])
def test_disconnect_mid_upload_stores_nothing(wharfd, raw, bucket, sent):
    before = wharfd.data_files()
    s = raw.open_socket("PUT", f"/{bucket}/cut", content_length=8 << 20)
    s.sendall(os.urandom(sent))
    time.sleep(0.2)
    s.close()
    # The request ends on the server when it sees the close; only then is the temp file gone.
    assert wait_until(lambda: inflight(wharfd) == 0, timeout=10)
    assert raw.request("HEAD", f"/{bucket}/cut").status == 404
    assert wait_until(lambda: wharfd.data_files() == before, timeout=10), \
        wharfd.data_files() - before
    assert wharfd.alive()


def test_half_closed_short_body_stores_nothing(wharfd, raw, bucket):
    before = wharfd.data_files()
    s = raw.open_socket("PUT", f"/{bucket}/short", content_length=1000)
    s.sendall(b"x" * 10)
    s.shutdown(socket.SHUT_WR)  # the body ends 990 bytes early
    s.settimeout(10)
    try:
        s.recv(1000)
    except OSError:
        pass
    s.close()
    assert wait_until(lambda: inflight(wharfd) == 0, timeout=10)
    assert raw.request("HEAD", f"/{bucket}/short").status == 404
    assert wait_until(lambda: wharfd.data_files() == before, timeout=10)


def test_aws_chunked_signed(raw, bucket):
    data = os.urandom(200_000)
    h, body = raw.chunked_signed("PUT", f"/{bucket}/ch", data, chunk_size=65536,
                                 headers={"content-type": "x/chunked"})
    r = raw.send_prepared("PUT", f"/{bucket}/ch", h, body)
    assert r.status == 200, r
    assert r.headers["etag"] == f'"{md5_hex(data)}"'
    g = raw.request("GET", f"/{bucket}/ch")
    assert g.body == data
    assert g.headers["content-type"] == "x/chunked"
    assert "content-encoding" not in g.headers, "aws-chunked is framing, not the object's"


def test_aws_chunked_tampered_chunk_stores_nothing(wharfd, raw, bucket):
    before = wharfd.data_files()
    data = os.urandom(200_000)
    h, body = raw.chunked_signed("PUT", f"/{bucket}/tamper", data, tamper_chunk=1)
    r = raw.send_prepared("PUT", f"/{bucket}/tamper", h, body)
    assert r.status == 403 and r.error_code() == "SignatureDoesNotMatch", r
    assert raw.request("HEAD", f"/{bucket}/tamper").status == 404
    assert wait_until(lambda: wharfd.data_files() == before, timeout=10)


def test_unsigned_trailer_checksum(raw, bucket):
    data = os.urandom(150_000)
    good = crc32c_b64(data)
    h, body = raw.chunked_trailer("PUT", f"/{bucket}/tr", data, "x-amz-checksum-crc32c", good)
    r = raw.send_prepared("PUT", f"/{bucket}/tr", h, body)
    assert r.status == 200, r
    assert r.headers["x-amz-checksum-crc32c"] == good
    assert raw.request("HEAD", f"/{bucket}/tr", headers={"x-amz-checksum-mode": "ENABLED"}
                       ).headers["x-amz-checksum-crc32c"] == good
    bad = base64.b64encode(struct.pack(">I", 12345)).decode()
    h, body = raw.chunked_trailer("PUT", f"/{bucket}/trbad", data, "x-amz-checksum-crc32c", bad)
    r = raw.send_prepared("PUT", f"/{bucket}/trbad", h, body)
    assert r.status == 400 and r.error_code() == "BadDigest", r
    assert raw.request("HEAD", f"/{bucket}/trbad").status == 404


def test_header_limits_keep_server_up(wharfd, raw):
    r = raw.request("GET", "/", headers={"x-big": "a" * 20000})
    assert r.status == 400 and r.error_code() == "RequestHeaderSectionTooLarge", r
    s = socket.create_connection(("127.0.0.1", wharfd.port), timeout=10)
    s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nX-Huge: " + b"a" * (3 << 20) + b"\r\n\r\n")
    reply = b""
    try:
        reply = s.recv(200)
    except OSError:
        pass
    s.close()
    assert reply == b"" or reply.split(b" ")[1] in (b"431", b"413", b"400"), reply
    assert wharfd.alive()
    assert raw.request("GET", "/").status == 200


def test_keep_alive_reuses_connection(wharfd, raw, bucket):
    conn = http.client.HTTPConnection("127.0.0.1", wharfd.port, timeout=10)
    ports = set()
    for i in range(5):
        h, _ = raw.sign_headers("PUT" if i == 0 else "GET", f"/{bucket}/ka",
                                payload_hash=UNSIGNED)
        h.pop("host")
        conn.putrequest("PUT" if i == 0 else "GET", f"/{bucket}/ka", skip_host=True,
                        skip_accept_encoding=True)
        conn.putheader("Host", raw.netloc)
        for k, v in h.items():
            conn.putheader(k, v)
        if i == 0:
            conn.putheader("Content-Length", "5")
            conn.endheaders(b"hello")
        else:
            conn.endheaders()
        r = conn.getresponse()
        body = r.read()
        assert r.status == 200 and (i == 0 or body == b"hello")
        assert (r.getheader("connection") or "").lower() != "close"
        ports.add(conn.sock.getsockname()[1])
    conn.close()
    assert len(ports) == 1, "all five requests should ride one connection"


def test_unix_socket_serves_s3(wharfd, bucket):
    u = S3Raw(wharfd.endpoint, unix_socket=wharfd.unix_socket)
    assert u.request("PUT", f"/{bucket}/viaunix", body=b"unix!").status == 200
    assert u.request("GET", f"/{bucket}/viaunix").body == b"unix!"
    assert S3Raw(wharfd.endpoint).request("GET", f"/{bucket}/viaunix").body == b"unix!"
    assert wait_until(lambda: "peer=unix" in wharfd.log_tail(20000), timeout=5)


def test_request_log_line(wharfd, raw, bucket):
    r = raw.request("PUT", f"/{bucket}/logged", body=b"12345")
    rid = r.headers["x-amz-request-id"]

    def line():
        for ln in wharfd.log_tail(50000).splitlines():
            if f"id={rid}" in ln:
                return ln
        return None
    ln = wait_until(line, timeout=5)
    assert ln, "one log line per request"
    for part in ("method=PUT", f"path=/{bucket}/logged", "status=200", "rx=5", "dur_ms="):
        assert part in ln, ln


def test_not_signed_health_metrics_only(wharfd):
    import urllib.request
    with urllib.request.urlopen(wharfd.endpoint + "/metrics", timeout=5) as r:
        text = r.read().decode()
    assert "wharf_requests_total" in text and "process_cpu_seconds_total" in text
    assert "# TYPE wharf_request_duration_seconds histogram" in text
    # The checksum code in use is named; on a CPU with AVX-512 and VPCLMULQDQ it is the wide one.
    impl = re.search(r'^wharf_crc64nvme_info\{impl="([a-z0-9-]+)"\} 1$', text, re.M)
    assert impl, text[:2000]
    with open("/proc/cpuinfo") as f:
        flags = f.read()
    wide = " vpclmulqdq" in flags and " avx512f" in flags
    assert impl.group(1) == ("vpclmulqdq-512" if wide else "pclmulqdq-128"), impl.group(1)


def test_sha256_of_absent_body_is_checked(raw):
    import hashlib
    r = raw.request("GET", "/", payload_hash=hashlib.sha256(b"a body never sent").hexdigest())
    assert r.status == 400 and r.error_code() == "XAmzContentSHA256Mismatch", r
    assert raw.request("GET", "/").status == 200
