# SPDX-License-Identifier: Apache-2.0
"""wharfd's RDMA hook-up as far as it can be tested without a transfer (docs/protocol.md,
"The reply", "Declines and errors"): the token must be signed, declines are 501 with
x-amz-rdma-reply: 501 and no body, a declined or refused PUT stores nothing, HEAD with a token
is a plain HEAD, and a token PUT must be body-less and UNSIGNED-PAYLOAD.

The servers here run with --providers none, so every well-formed request is declined whatever
the RDMA engine can do; the token used names an unknown dialect, which the design also answers
with 501. Both arms run over TCP and over the Unix socket.
"""
import http.client
import os
import shutil
import socket
import tempfile

import pytest

from s3raw import Response, S3Raw, UNSIGNED, uri_encode
from wharfd import WharfServer, assert_start_refused, unique_bucket

# Well-formed shape (base:size:dialect:...), dialect that no wharf knows.
TOKEN = "0x7f0000001000:4096:nosuch9:shm:00:00"


@pytest.fixture(scope="module")
def srv():
    s = WharfServer(providers="none")
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
    b = unique_bucket("rdma")
    assert raw.request("PUT", f"/{b}").status == 200
    return b


def put_plain(raw, bucket, key, data):
    r = raw.request("PUT", f"/{bucket}/{key}", body=data)
    assert r.status == 200, r
    return r


def assert_no_object(raw, bucket, key):
    r = raw.request("HEAD", f"/{bucket}/{key}")
    assert r.status == 404, r


def assert_decline(r):
    assert r.status == 501, r
    assert r.headers.get("x-amz-rdma-reply") == "501", r.headers
    assert r.headers.get("content-length") == "0", r.headers
    assert r.body == b""
    assert r.error_code() == "NotImplemented"
    assert r.headers.get("x-amz-error-message"), "a decline must say why"


def test_get_token_not_signed_is_403(raw, bucket):
    put_plain(raw, bucket, "obj", b"abc" * 100)
    r = raw.request("GET", f"/{bucket}/obj", extra_unsigned={"x-amz-rdma-token": TOKEN})
    assert r.status == 403, r
    assert r.error_code() == "AccessDenied"
    assert "x-amz-rdma-token" in r.headers.get("x-amz-error-message", "")
    assert r.body == b"", "no body on a token request, not even the object"


def test_put_token_not_signed_is_403_and_stores_nothing(raw, srv, bucket):
    before = srv.data_files()
    r = raw.request("PUT", f"/{bucket}/unsigned", payload_hash=UNSIGNED,
                    extra_unsigned={"x-amz-rdma-token": TOKEN})
    assert r.status == 403, r
    assert r.error_code() == "AccessDenied"
    assert_no_object(raw, bucket, "unsigned")
    assert srv.data_files() == before


def test_get_declined_501_no_body(raw, bucket):
    put_plain(raw, bucket, "obj", b"x" * 5000)
    r = raw.request("GET", f"/{bucket}/obj", headers={"x-amz-rdma-token": TOKEN})
    assert_decline(r)


def test_ranged_get_declined_501(raw, bucket):
    put_plain(raw, bucket, "obj", b"x" * 5000)
    r = raw.request("GET", f"/{bucket}/obj",
                    headers={"x-amz-rdma-token": TOKEN, "range": "bytes=10-99"})
    assert_decline(r)


def test_get_token_missing_object_is_404_without_body(raw, bucket):
    r = raw.request("GET", f"/{bucket}/nope", headers={"x-amz-rdma-token": TOKEN})
    assert r.status == 404, r
    assert r.body == b""
    assert r.error_code() == "NoSuchKey"


def test_put_declined_stores_nothing(raw, srv, bucket):
    before = srv.data_files()
    r = raw.request("PUT", f"/{bucket}/declined", headers={"x-amz-rdma-token": TOKEN},
                    payload_hash=UNSIGNED)
    assert_decline(r)
    assert_no_object(raw, bucket, "declined")
    assert srv.data_files() == before


def test_put_declined_keeps_existing_object(raw, bucket):
    put_plain(raw, bucket, "keep", b"old contents")
    r = raw.request("PUT", f"/{bucket}/keep", headers={"x-amz-rdma-token": TOKEN},
                    payload_hash=UNSIGNED)
    assert_decline(r)
    g = raw.request("GET", f"/{bucket}/keep")
    assert g.status == 200 and g.body == b"old contents"


def test_upload_part_declined_stores_no_part(raw, bucket):
    r = raw.request("POST", f"/{bucket}/mp", query={"uploads": None})
    assert r.status == 200, r
    upload_id = r.body.split(b"<UploadId>")[1].split(b"</UploadId>")[0].decode()
    r = raw.request("PUT", f"/{bucket}/mp", query={"partNumber": "1", "uploadId": upload_id},
                    headers={"x-amz-rdma-token": TOKEN}, payload_hash=UNSIGNED)
    assert_decline(r)
    r = raw.request("GET", f"/{bucket}/mp", query={"uploadId": upload_id})
    assert r.status == 200, r
    assert b"<Part>" not in r.body
    assert raw.request("DELETE", f"/{bucket}/mp", query={"uploadId": upload_id}).status == 204


def send_expecting_early_reply(raw, method, path, headers, body, payload_hash):
    """One request whose answer may come before its body is read: the server then closes, so
    sending the body can fail (EPIPE) while the answer already waits in the socket."""
    h, _ = raw.sign_headers(method, path, None, headers, payload_hash)
    h.pop("host")
    lines = [f"{method} {uri_encode(path)} HTTP/1.1", f"Host: {raw.netloc}",
             f"Content-Length: {len(body)}"] + [f"{k}: {v}" for k, v in h.items()]
    if raw.unix_socket:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(30)
        s.connect(raw.unix_socket)
    else:
        s = socket.create_connection((raw.host, raw.port), timeout=30)
    try:
        try:
            s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        except (BrokenPipeError, ConnectionResetError):
            pass
        resp = http.client.HTTPResponse(s)
        resp.begin()
        return Response(resp.status, resp.getheaders(), resp.read())
    finally:
        s.close()


def test_put_token_with_body_is_400(raw, srv, bucket):
    before = srv.data_files()
    r = send_expecting_early_reply(raw, "PUT", f"/{bucket}/withbody",
                                   {"x-amz-rdma-token": TOKEN}, b"not allowed", UNSIGNED)
    assert r.status == 400, r
    assert r.error_code() == "InvalidArgument"
    assert r.body == b""
    assert_no_object(raw, bucket, "withbody")
    assert srv.data_files() == before


def test_put_token_needs_unsigned_payload(raw, bucket):
    r = raw.request("PUT", f"/{bucket}/signedpayload", headers={"x-amz-rdma-token": TOKEN})
    assert r.status == 400, r
    assert r.error_code() == "InvalidArgument"
    assert "UNSIGNED-PAYLOAD" in r.headers.get("x-amz-error-message", "")
    assert_no_object(raw, bucket, "signedpayload")


def test_head_with_token_is_plain_head(raw, bucket):
    put_plain(raw, bucket, "h", b"y" * 1234)
    plain = raw.request("HEAD", f"/{bucket}/h")
    tok = raw.request("HEAD", f"/{bucket}/h", headers={"x-amz-rdma-token": TOKEN})
    assert tok.status == 200, tok
    assert tok.headers["content-length"] == "1234"
    assert tok.headers["etag"] == plain.headers["etag"]
    assert "x-amz-rdma-reply" not in tok.headers


def test_token_on_other_api_is_refused(raw, bucket):
    r = raw.request("GET", f"/{bucket}", headers={"x-amz-rdma-token": TOKEN})
    assert r.status == 400, r
    assert r.error_code() == "InvalidRequest"
    assert r.body == b""


def test_declines_are_counted_per_api(srv, raw, bucket):
    put_plain(raw, bucket, "m", b"z")
    key = 'wharf_requests_total{api="GetObject",status="501"}'
    before = srv.metrics().get(key, 0)
    assert_decline(raw.request("GET", f"/{bucket}/m", headers={"x-amz-rdma-token": TOKEN}))
    assert srv.metrics().get(key, 0) == before + 1


def test_cuda_pinned_budget_flag_and_metrics():
    """--cuda-pinned-mem bounds the pinned staging of GPU copies; a size under one slot is
    refused with the flag named. /metrics always carries the budget, what is allocated and
    the peak in use (all 0 on a host without a CUDA driver, where cuda+ipc does not open; on
    the GPU host tests/python/test_cuda_direct.py checks them under load)."""
    srv = WharfServer(extra_args=["--cuda-pinned-mem", "32M"])
    srv.start()
    try:
        m = srv.metrics()
        for state in ("budget", "allocated", "peak"):
            assert f'wharf_cuda_pinned_bytes{{state="{state}"}}' in m, sorted(m)[-20:]
    finally:
        srv.stop()
        srv.cleanup()
    assert_start_refused(["--cuda-pinned-mem", "1M"],
                         "--cuda-pinned-mem wants a size of at least 16M, got '1M'")


def _dio_ok(path):
    try:
        fd = os.open(os.path.join(path, "dio-probe"), os.O_CREAT | os.O_WRONLY | os.O_DIRECT,
                     0o600)
    except OSError:
        return False
    os.close(fd)
    os.unlink(os.path.join(path, "dio-probe"))
    return True


def _read_sources(srv):
    m = srv.metrics()
    return {s: m[f'wharf_rdma_get_read_bytes_total{{source="{s}"}}']
            for s in ("page_cache", "direct_io", "buffered")}


def _wharf_cli(srv, *args):
    import subprocess
    from wharfd import build_dir
    p = subprocess.run([os.path.join(build_dir(), "wharf"), "--quiet", *args],
                       env=srv.client_env(), capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, (args, p.stdout, p.stderr)
    return p


def _drop_page_cache(srv):
    for path in srv.data_files():
        fd = os.open(os.path.join(srv.data_dir, path), os.O_RDONLY)
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)


@pytest.mark.parametrize("mode", ["direct", "buffered"])
def test_cold_reads_by_direct_io(mode, tmp_path):
    """A GET over a network provider (ofi+tcp, by the C CLI, so this runs under ASan too) of an
    object dropped from the page cache reads it with O_DIRECT into the registered buffers (the
    server's counters say where each byte came from), leaving the cache as it was, so the same
    GET again is direct too. --cold-reads buffered reads it through the cache, and the second
    GET then comes from the cache. The bytes are right every time. (A ranged GET at an odd
    offset: tests/python/test_client.py.)"""
    srv = WharfServer(extra_args=["--cold-reads", mode])
    if not _dio_ok(srv.data_dir):
        srv.cleanup()
        pytest.skip(f"{srv.data_dir}: its file system has no O_DIRECT (tmpfs?)")
    srv.start()
    try:
        src = tmp_path / "src"
        data = os.urandom((24 << 20) + 4097)
        src.write_bytes(data)
        b = unique_bucket("cold")
        _wharf_cli(srv, "--provider", "none", "mb", f"s3://{b}")
        _wharf_cli(srv, "--provider", "none", "cp", str(src), f"s3://{b}/o")
        _drop_page_cache(srv)
        get = ["--provider", "ofi+tcp", "cp", "--transport", "rdma", f"s3://{b}/o"]
        before = _read_sources(srv)
        _wharf_cli(srv, *get, str(tmp_path / "a"))
        assert (tmp_path / "a").read_bytes() == data
        cold = {k: v - before[k] for k, v in _read_sources(srv).items()}
        assert sum(cold.values()) == len(data), cold
        if mode == "direct":
            assert cold["direct_io"] >= 24 << 20, cold  # all but the sub-4 KiB tail
        else:
            assert cold["direct_io"] == 0 and cold["buffered"] > 0, cold  # readahead: the rest
        before = _read_sources(srv)
        _wharf_cli(srv, *get, str(tmp_path / "b"))
        assert (tmp_path / "b").read_bytes() == data
        hot = {k: v - before[k] for k, v in _read_sources(srv).items()}
        if mode == "direct":  # direct I/O left nothing in the cache: this read is cold too
            assert hot["direct_io"] >= 24 << 20, hot
        else:                 # the buffered read did: from the page cache now
            assert hot["page_cache"] == len(data) and hot["direct_io"] == 0, hot
    finally:
        srv.stop()
        srv.cleanup()
    assert_start_refused(["--cold-reads", "fast"],
                         "--cold-reads wants direct or buffered, got 'fast'")


def test_rdma_put_positional(tmp_path):
    """An RDMA PUT of two 8 MiB windows or more goes through the direct path's copy threads
    at their offsets (the server counts it), and the object's bytes, size and ETag form are
    right whatever the size's alignment; a smaller PUT goes in order. Over ofi+shm by the C
    CLI, so this runs under ASan too, with --put-threads 3 so that several threads write one
    object on any host. The unit test (unit/engine/test_rdma) checks the checksums."""
    import boto3
    from wharfd import ACCESS_KEY, REGION, SECRET_KEY
    srv = WharfServer(extra_args=["--copy-threads", "4", "--put-threads", "3"])
    srv.start()
    try:
        b = unique_bucket("pos")
        _wharf_cli(srv, "--provider", "none", "mb", f"s3://{b}")
        s3 = boto3.client("s3", endpoint_url=srv.endpoint, aws_access_key_id=ACCESS_KEY,
                          aws_secret_access_key=SECRET_KEY, region_name=REGION)
        m = srv.metrics()
        assert m["wharf_rdma_put_threads"] == 3
        key = 'wharf_rdma_put_positional_total{unit="requests"}'
        for size, positional in [((16 << 20) - 1, False), (16 << 20, True),
                                 ((40 << 20) + 4097, True)]:
            data = os.urandom(size)
            src = tmp_path / "src"
            src.write_bytes(data)
            before = srv.metrics()
            _wharf_cli(srv, "--provider", "ofi+shm", "cp", "--transport", "rdma", str(src),
                       f"s3://{b}/o{size}")
            after = srv.metrics()
            assert after[key] - before[key] == (1 if positional else 0), (size, after[key])
            bytes_key = 'wharf_rdma_put_positional_total{unit="bytes"}'
            assert after[bytes_key] - before[bytes_key] == (size if positional else 0)
            got = s3.get_object(Bucket=b, Key=f"o{size}")
            assert got["ContentLength"] == size
            assert got["Body"].read() == data
            etag = got["ETag"].strip('"')
            assert len(etag.split("-")[0]) == 32, etag  # a digest ETag: no MD5 pass
    finally:
        srv.stop()
        srv.cleanup()
    assert_start_refused(["--put-threads", "0"], "--put-threads wants a count 1..64")


def test_data_writes_direct(tmp_path):
    """--data-writes direct: a large RDMA PUT's aligned pieces go to the disk by O_DIRECT, so
    the object's file holds (almost) nothing in the page cache afterwards (fincore), the
    server counts those bytes, and the bytes read back are right; without the flag the same
    PUT leaves the file cached. On a file system without O_DIRECT (tmpfs) the flag warns and
    the writes go through the cache."""
    import subprocess
    import boto3
    from wharfd import ACCESS_KEY, REGION, SECRET_KEY

    def cached(srv, key_size):
        files = [os.path.join(srv.data_dir, p) for p in srv.data_files()]
        big = [f for f in files if os.path.getsize(f) == key_size]
        assert len(big) == 1, files
        out = subprocess.run(["fincore", "--bytes", "--noheadings", "--output", "RES", big[0]],
                             capture_output=True, text=True, check=True).stdout
        return int(out.split()[0])

    size = (40 << 20) + 4097
    data = os.urandom(size)
    src = tmp_path / "src"
    src.write_bytes(data)
    for mode in ("direct", "buffered"):
        srv = WharfServer(extra_args=["--data-writes", mode])
        if not _dio_ok(srv.data_dir):
            srv.cleanup()
            pytest.skip(f"{srv.data_dir}: its file system has no O_DIRECT (tmpfs?)")
        srv.start()
        try:
            b = unique_bucket("dio")
            _wharf_cli(srv, "--provider", "none", "mb", f"s3://{b}")
            m0 = srv.metrics()
            assert m0["wharf_storage_direct_writes"] == (1 if mode == "direct" else 0)
            _wharf_cli(srv, "--provider", "ofi+shm", "cp", "--transport", "rdma", str(src),
                       f"s3://{b}/o")
            m1 = srv.metrics()
            moved = m1["wharf_storage_direct_write_bytes_total"] - \
                m0["wharf_storage_direct_write_bytes_total"]
            res = cached(srv, size)
            if mode == "direct":
                assert moved == size - 4097, moved  # all but the unaligned tail
                assert res <= 64 << 10, res
            else:
                assert moved == 0
                assert res >= size - 4096, res
            s3 = boto3.client("s3", endpoint_url=srv.endpoint, aws_access_key_id=ACCESS_KEY,
                              aws_secret_access_key=SECRET_KEY, region_name=REGION)
            assert s3.get_object(Bucket=b, Key="o")["Body"].read() == data
        finally:
            srv.stop()
            srv.cleanup()
    assert_start_refused(["--data-writes", "fast"], "--data-writes wants buffered, mapped or direct")
    # tmpfs: refused by the file system, said once, served through the page cache.
    if os.path.isdir("/dev/shm") and not _dio_ok("/dev/shm"):
        d = tempfile.mkdtemp(dir="/dev/shm", prefix="wharf-dio-")
        srv = WharfServer(data_dir=d, extra_args=["--data-writes", "direct"])
        srv.start()
        try:
            b = unique_bucket("dio")
            _wharf_cli(srv, "--provider", "none", "mb", f"s3://{b}")
            _wharf_cli(srv, "--provider", "ofi+shm", "cp", "--transport", "rdma", str(src),
                       f"s3://{b}/o")
            assert "refuses O_DIRECT" in srv.log_tail(20000)
            assert srv.metrics()["wharf_storage_direct_writes"] == 0
        finally:
            srv.stop()
            srv.cleanup()
            shutil.rmtree(d, ignore_errors=True)
