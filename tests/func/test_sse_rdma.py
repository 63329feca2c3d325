# SPDX-License-Identifier: Apache-2.0
"""Encrypted objects over the RDMA path, against a real wharfd over https (a test CA), once per
transport (ofi+shm, ofi+tcp): the client memory is a real libfabric process
(unit_engine_test_rdma_source peer) and this test sends the signed requests, SSE-C headers
included (libwharf sends none). An RDMA PUT into an encrypted target (SSE-C, SSE-S3 by header,
the bucket's default, a part of an encrypted upload) is stored encrypted with the plaintext's
CRC-64/NVME and ETag, as over HTTP, and reads back over HTTP; an HTTP PUT reads back over RDMA,
whole and in ranges at the 64 KiB segment boundaries; a multipart upload with RDMA parts; a
missing or wrong customer key refused exactly as over HTTP with nothing moved; the plaintext
is not on disk; a tampered stored segment fails the RDMA GET with an error (its bytes never
land) and the server stays up. The libwharf client (wharf CLI, bound shm over the Unix socket)
round-trips a bucket whose default encryption is AES256."""
import base64
import hashlib
import http.client
import os
import ssl
import struct
import subprocess

import boto3
import pytest
from botocore.config import Config

from s3raw import S3Raw, UNSIGNED
from wharfd import (ACCESS_KEY, REGION, SECRET_KEY, TestCert, WharfServer, build_dir,
                    unique_bucket)

SEG = 64 * 1024
MIB = 1024 * 1024
SIZE = 5 * MIB + 3 * SEG + 123  # more than one 4 MiB engine chunk, a short last segment
REGION_BYTES = 16 * MIB


def _crc_table():
    poly, t = 0x9A6C9329AC4BC9B5, []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ poly if c & 1 else c >> 1
        t.append(c)
    return t


_T = _crc_table()


def crc64nvme_b64(data):
    """CRC-64/NVME (table-driven, pure Python: independent of the server's ISA-L)."""
    c = 0xFFFFFFFFFFFFFFFF
    for b in data:
        c = _T[(c ^ b) & 0xFF] ^ (c >> 8)
    return base64.b64encode(struct.pack(">Q", c ^ 0xFFFFFFFFFFFFFFFF)).decode()


def data(n, seed=1):
    out = bytearray()
    c = seed.to_bytes(8, "little")
    while len(out) < n:
        c = hashlib.sha256(c).digest()
        out += c
    return bytes(out[:n])


class S3RawTLS(S3Raw):
    def __init__(self, endpoint, ca):
        super().__init__(endpoint)
        self.ca = ca

    def _connection(self, timeout):
        return http.client.HTTPSConnection(self.host, self.port, timeout=timeout,
                                           context=ssl.create_default_context(cafile=self.ca))


class Peer:
    """The client memory: a libfabric process that registered REGION_BYTES and prints its
    token; load/save move bytes between its region and files."""

    def __init__(self, provider, tmp):
        exe = os.path.join(build_dir(), "tests", "unit_engine_test_rdma_source")
        if not os.path.exists(exe):
            pytest.fail(f"{exe} not built")
        self.tmp = tmp
        self.p = subprocess.Popen([exe, "peer", provider, str(REGION_BYTES)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.p.stdout.readline().split()
        assert line and line[0] == "token", line
        self.token = line[1]

    def _ask(self, cmd):
        self.p.stdin.write(cmd + "\n")
        self.p.stdin.flush()
        assert self.p.stdout.readline().strip() == "ok", cmd

    def load(self, b):
        path = os.path.join(self.tmp, "load")
        with open(path, "wb") as f:
            f.write(b)
        self._ask(f"load {path}")

    def save(self, n):
        path = os.path.join(self.tmp, "save")
        self._ask(f"save {path} {n}")
        with open(path, "rb") as f:
            return f.read()

    def close(self):
        try:
            self.p.stdin.write("quit\n")
            self.p.stdin.flush()
            self.p.wait(timeout=10)
        except (BrokenPipeError, subprocess.TimeoutExpired):
            self.p.kill()
            self.p.wait()


@pytest.fixture(scope="module")
def cert(tmp_path_factory):
    return TestCert(str(tmp_path_factory.mktemp("sse-rdma-tls")))


@pytest.fixture(scope="module")
def srv(cert):
    # The requests come over TCP (TLS) from this process while the memory is the peer's:
    # shm is served to them only on a trusted host.
    s = WharfServer(tls=cert, extra_args=["--shm-trust-local"])
    s.start()
    yield s
    rc = s.stop()
    s.cleanup()
    assert rc == 0


@pytest.fixture(scope="module")
def s3(srv):
    return boto3.client("s3", endpoint_url=srv.endpoint, aws_access_key_id=ACCESS_KEY,
                        aws_secret_access_key=SECRET_KEY, region_name=REGION, verify=srv.tls.ca,
                        config=Config(s3={"addressing_style": "path"},
                                      retries={"max_attempts": 1}))


@pytest.fixture(scope="module")
def raw(srv):
    return S3RawTLS(srv.endpoint, srv.tls.ca)


@pytest.fixture(params=["ofi+shm", "ofi+tcp"], ids=["shm", "tcp"])
def peer(request, tmp_path):
    p = Peer(request.param, str(tmp_path))
    yield p
    p.close()


@pytest.fixture()
def bucket(s3):
    name = unique_bucket("sserdma")
    s3.create_bucket(Bucket=name)
    return name


def ssec_h(key):
    return {"x-amz-server-side-encryption-customer-algorithm": "AES256",
            "x-amz-server-side-encryption-customer-key": base64.b64encode(key).decode(),
            "x-amz-server-side-encryption-customer-key-md5":
                base64.b64encode(hashlib.md5(key).digest()).decode()}


def ssec(key):
    return {"SSECustomerAlgorithm": "AES256", "SSECustomerKey": key}


def rdma_put(raw, peer, path, body, headers=None, query=None):
    peer.load(body)
    h = {"x-amz-rdma-token": _sized(peer.token, len(body))}
    h.update(headers or {})
    return raw.request("PUT", path, query=query, payload_hash=UNSIGNED, headers=h)


def rdma_get(raw, peer, path, headers=None):
    h = {"x-amz-rdma-token": peer.token}
    h.update(headers or {})
    return raw.request("GET", path, headers=h)


def _sized(token, n):
    """The peer's token naming only the first n bytes of its region (a PUT moves the token's
    whole size): ofi1's base and size are lowercase hex (src/shared/xfer/token.h)."""
    base, _size, rest = token.split(":", 2)
    return f"{base}:{n:x}:{rest}"


def object_files(srv):
    return {p: os.path.getsize(os.path.join(srv.data_dir, p)) for p in srv.data_files()}


def assert_not_on_disk(srv, needle):
    for p in srv.data_files():
        with open(os.path.join(srv.data_dir, p), "rb") as f:
            assert needle not in f.read(), p


# ---- RDMA PUT, HTTP GET ----

@pytest.mark.parametrize("kind", ["ssec", "sse-s3", "default"])
def test_rdma_put_http_get(srv, s3, raw, peer, bucket, kind):
    body = data(SIZE, seed=7)
    key = os.urandom(32)
    headers = ssec_h(key) if kind == "ssec" else (
        {"x-amz-server-side-encryption": "AES256"} if kind == "sse-s3" else {})
    if kind == "default":
        s3.put_bucket_encryption(Bucket=bucket, ServerSideEncryptionConfiguration={
            "Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]})
    # The same bytes over HTTP into a plain key: what the checksums must be.
    ref = raw.request("PUT", f"/{bucket}/plain", body=body) if kind != "default" else None
    before = set(srv.data_files())
    r = rdma_put(raw, peer, f"/{bucket}/o", body, headers)
    assert r.status == 200, (r, r.headers.get("x-amz-error-message"))
    assert r.headers.get("x-amz-rdma-reply") == "200"
    assert int(r.headers["x-amz-rdma-bytes-transferred"]) == SIZE
    crc = crc64nvme_b64(body)
    assert r.headers["x-amz-checksum-crc64nvme"] == crc
    if ref:
        assert ref.status == 200 and ref.headers["x-amz-checksum-crc64nvme"] == crc
    etag = r.headers["etag"].strip('"')
    if kind == "ssec":
        assert r.headers["x-amz-server-side-encryption-customer-algorithm"] == "AES256"
        assert etag != hashlib.md5(body).hexdigest() and len(etag) == 32  # opaque, as S3
    else:
        assert r.headers["x-amz-server-side-encryption"] == "AES256"
        assert etag == hashlib.md5(body).hexdigest()  # the plaintext's MD5, as over HTTP
    # Stored encrypted: the new file is the blob (header, tags), and holds no plaintext.
    new = sorted(set(srv.data_files()) - before)
    assert len(new) == 1, new
    nseg = (SIZE + SEG - 1) // SEG
    assert os.path.getsize(os.path.join(srv.data_dir, new[0])) == 16 + SIZE + 16 * nseg
    with open(os.path.join(srv.data_dir, new[0]), "rb") as f:
        stored = f.read()
    for at in (0, SEG, SIZE - 4096):
        assert body[at:at + 64] not in stored
    extra = ssec(key) if kind == "ssec" else {}
    g = s3.get_object(Bucket=bucket, Key="o", **extra)
    assert g["Body"].read() == body
    assert g["ETag"].strip('"') == etag
    h = raw.request("HEAD", f"/{bucket}/o", headers=dict(
        ssec_h(key) if kind == "ssec" else {}, **{"x-amz-checksum-mode": "ENABLED"}))
    assert h.status == 200 and int(h.headers["content-length"]) == SIZE
    assert h.headers.get("x-amz-checksum-crc64nvme") == crc
    # And back over RDMA.
    peer.load(b"\0" * SIZE)
    r = rdma_get(raw, peer, f"/{bucket}/o", ssec_h(key) if kind == "ssec" else None)
    assert r.status == 200, (r, r.headers.get("x-amz-error-message"))
    assert r.headers["x-amz-checksum-crc64nvme"] == crc
    assert peer.save(SIZE) == body


# ---- HTTP PUT, RDMA GET, ranges at the segment boundaries ----

@pytest.mark.parametrize("kind", ["ssec", "sse-s3"])
def test_http_put_rdma_get_ranges(srv, s3, raw, peer, bucket, kind):
    body = data(SIZE, seed=11)
    key = os.urandom(32)
    extra = ssec(key) if kind == "ssec" else {"ServerSideEncryption": "AES256"}
    s3.put_object(Bucket=bucket, Key="o", Body=body, **extra)
    hdr = ssec_h(key) if kind == "ssec" else {}
    r = rdma_get(raw, peer, f"/{bucket}/o", hdr)
    assert r.status == 200 and r.body == b"", r
    assert r.headers["x-amz-checksum-crc64nvme"] == crc64nvme_b64(body)
    assert (r.headers.get("x-amz-server-side-encryption") == "AES256") == (kind == "sse-s3")
    assert peer.save(SIZE) == body
    last = SIZE - 1
    for a, b in [(0, SEG - 1), (SEG - 1, SEG), (SEG, 2 * SEG - 1), (SEG - 7, 3 * SEG + 5),
                 (4 * MIB - 3, 4 * MIB + SEG + 2), (last - 122, last), (last, last),
                 (100, 4 * MIB + 2 * SEG)]:
        peer.load(b"\0" * (b - a + 1))
        r = rdma_get(raw, peer, f"/{bucket}/o", dict(hdr, range=f"bytes={a}-{b}"))
        assert r.status == 206, (a, b, r)
        assert r.headers["content-range"] == f"bytes {a}-{b}/{SIZE}"
        assert int(r.headers["x-amz-rdma-bytes-transferred"]) == b - a + 1
        got = peer.save(b - a + 1)
        assert got == body[a:b + 1], (a, b)
        if b - a < MIB:
            assert r.headers["x-amz-checksum-crc64nvme"] == crc64nvme_b64(got)


# ---- multipart ----

def test_multipart_rdma_parts(srv, s3, raw, peer, bucket):
    key = os.urandom(32)
    p1, p2, p3 = data(5 * MIB, seed=21), data(5 * MIB + 17, seed=22), data(SEG + 1, seed=23)
    u = s3.create_multipart_upload(Bucket=bucket, Key="m", **ssec(key))["UploadId"]
    q = lambda n: {"partNumber": str(n), "uploadId": u}
    r1 = rdma_put(raw, peer, f"/{bucket}/m", p1, ssec_h(key), q(1))
    assert r1.status == 200, (r1, r1.headers)
    assert r1.headers["x-amz-checksum-crc64nvme"] == crc64nvme_b64(p1)
    e2 = s3.upload_part(Bucket=bucket, Key="m", UploadId=u, PartNumber=2, Body=p2,
                        **ssec(key))["ETag"]
    r3 = rdma_put(raw, peer, f"/{bucket}/m", p3, ssec_h(key), q(3))
    assert r3.status == 200, r3
    # A part without the upload's key is refused before any byte moves.
    r = rdma_put(raw, peer, f"/{bucket}/m", p3, None, q(4))
    assert r.status == 400 and r.error_code() == "InvalidRequest", r
    parts = s3.list_parts(Bucket=bucket, Key="m", UploadId=u)["Parts"]
    assert [p["PartNumber"] for p in parts] == [1, 2, 3]
    assert [p["Size"] for p in parts] == [len(p1), len(p2), len(p3)]
    s3.complete_multipart_upload(
        Bucket=bucket, Key="m", UploadId=u,
        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": r1.headers["etag"]},
                                   {"PartNumber": 2, "ETag": e2},
                                   {"PartNumber": 3, "ETag": r3.headers["etag"]}]})
    whole = p1 + p2 + p3
    assert s3.get_object(Bucket=bucket, Key="m", **ssec(key))["Body"].read() == whole
    r = rdma_get(raw, peer, f"/{bucket}/m", ssec_h(key))
    assert r.status == 200, r
    assert peer.save(len(whole)) == whole
    # A range across the parts' boundary (part 1's last segment into part 2's first).
    a, b = 5 * MIB - 10, 5 * MIB + SEG + 10
    r = rdma_get(raw, peer, f"/{bucket}/m", dict(ssec_h(key), range=f"bytes={a}-{b}"))
    assert r.status == 206, r
    assert peer.save(b - a + 1) == whole[a:b + 1]
    assert_not_on_disk(srv, p1[MIB:MIB + 64])


# ---- refusals ----

def test_customer_key_refused_as_over_http(srv, s3, raw, peer, bucket):
    key = os.urandom(32)
    body = data(3 * SEG, seed=31)
    s3.put_object(Bucket=bucket, Key="c", Body=body, **ssec(key))
    sentinel = b"\x5a" * (3 * SEG)
    plain = raw.request("GET", f"/{bucket}/c")
    for hdr, status, code in [(None, 400, "InvalidRequest"),
                              (ssec_h(os.urandom(32)), 400, "InvalidRequest")]:
        peer.load(sentinel)
        r = rdma_get(raw, peer, f"/{bucket}/c", hdr)
        http = raw.request("GET", f"/{bucket}/c", headers=hdr or {})
        assert (r.status, r.error_code()) == (status, code), r
        assert (http.status, http.error_code()) == (status, code), http
        assert r.headers.get("x-amz-error-message") and r.body == b""
        assert peer.save(3 * SEG) == sentinel  # nothing moved
    assert plain.status == 400
    # A key on a plain object is refused too, as over HTTP.
    s3.put_object(Bucket=bucket, Key="p", Body=b"plain")
    r = rdma_get(raw, peer, f"/{bucket}/p", ssec_h(key))
    assert r.status == 400 and r.error_code() == "InvalidRequest", r
    # An RDMA PUT with a customer key over plain HTTP is refused before any byte moves.
    with WharfServer(extra_args=["--shm-trust-local"]) as clear:
        c = S3Raw(clear.endpoint)
        assert c.request("PUT", f"/{bucket}").status == 200
        before = clear.data_files()
        r = rdma_put(c, peer, f"/{bucket}/k", body, ssec_h(key))
        assert r.status == 400 and r.error_code() == "InvalidRequest", r
        assert "secure" in r.headers.get("x-amz-error-message", "")
        assert clear.data_files() == before


def test_tampered_segment_fails_the_get(srv, s3, raw, peer, bucket):
    body = data(SIZE, seed=41)
    before = set(srv.data_files())
    s3.put_object(Bucket=bucket, Key="t", Body=body, ServerSideEncryption="AES256")
    path = os.path.join(srv.data_dir, sorted(set(srv.data_files()) - before)[0])
    bad_seg = 70  # in the second 4 MiB engine chunk
    with open(path, "r+b") as f:
        at = 16 + bad_seg * (SEG + 16) + 500
        f.seek(at)
        b = f.read(1)
        f.seek(at)
        f.write(bytes([b[0] ^ 0x80]))
    sentinel = b"\x33" * SIZE
    peer.load(sentinel)
    r = rdma_get(raw, peer, f"/{bucket}/t")
    assert r.status == 500 and r.error_code() == "InternalError", r
    msg = r.headers.get("x-amz-error-message", "")
    assert "verification" in msg and "not served" in msg, msg
    got = peer.save(SIZE)
    seg = slice(bad_seg * SEG, (bad_seg + 1) * SEG)
    assert got[seg] == sentinel[seg]  # the damaged segment's bytes never landed
    assert body[seg] not in got
    # A range of intact segments is served; one that touches the damaged one is not.
    r = rdma_get(raw, peer, f"/{bucket}/t", {"range": f"bytes=0-{SEG - 1}"})
    assert r.status == 206, r
    assert peer.save(SEG) == body[:SEG]
    r = rdma_get(raw, peer, f"/{bucket}/t",
                 {"range": f"bytes={bad_seg * SEG + 10}-{bad_seg * SEG + 20}"})
    assert r.status == 500, r
    assert srv.alive()
    assert s3.head_bucket(Bucket=bucket)["ResponseMetadata"]["HTTPStatusCode"] == 200


# ---- libwharf: bound shm over the Unix socket into a default-encrypted bucket ----

def test_wharf_cli_default_encrypted_bucket(tmp_path):
    srv = WharfServer()
    srv.start()
    try:
        b = unique_bucket("clienc")
        s3 = boto3.client("s3", endpoint_url=srv.endpoint, aws_access_key_id=ACCESS_KEY,
                          aws_secret_access_key=SECRET_KEY, region_name=REGION)
        s3.create_bucket(Bucket=b)
        s3.put_bucket_encryption(Bucket=b, ServerSideEncryptionConfiguration={
            "Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]})
        body = data(20 * MIB + 4097, seed=51)  # over the positional PUT's two windows
        src = tmp_path / "src"
        src.write_bytes(body)
        cli = lambda *a: subprocess.run([os.path.join(build_dir(), "wharf"), "--quiet",
                                         "--provider", "ofi+shm", *a], env=srv.client_env(),
                                        capture_output=True, text=True, timeout=120)
        p = cli("cp", "--transport", "rdma", str(src), f"s3://{b}/o")
        assert p.returncode == 0, (p.stdout, p.stderr)
        h = s3.head_object(Bucket=b, Key="o")
        assert h["ServerSideEncryption"] == "AES256" and h["ContentLength"] == len(body)
        assert h["ETag"].strip('"') == hashlib.md5(body).hexdigest()
        assert_not_on_disk(srv, body[MIB:MIB + 64])
        p = cli("cp", "--transport", "rdma", f"s3://{b}/o", str(tmp_path / "back"))
        assert p.returncode == 0, (p.stdout, p.stderr)
        assert (tmp_path / "back").read_bytes() == body
        assert s3.get_object(Bucket=b, Key="o")["Body"].read() == body
    finally:
        srv.stop()
        srv.cleanup()
