# SPDX-License-Identifier: Apache-2.0
"""The scatter GET and the gather UploadPart on the wire (docs/protocol.md, "Scatter GET",
"Gather UploadPart"), sent as raw signed requests by a client that is not libwharf, against a
real wharfd, the memory being a real libfabric process's (the unit_engine_test_rdma_source
peer, over ofi+shm and ofi+tcp; no ctypes, so these run under ASan too). Scatter: every window
lands at its offset, nothing else of the region changes, the reply's body is one crc64nvme
line per window. Gather: a part made of windows of the region, stored in part order and read
back whole after CompleteMultipartUpload; and what is refused before a byte moves: windows
that leave a gap or overlap in the part, a window outside the token's region, a list that is
not the one signed, an unsigned list, a user without s3:PutObject. A refused part stores
nothing (ListParts stays empty)."""
import hashlib
import os
import re
import subprocess

import pytest

from s3raw import S3Raw, UNSIGNED
from users import create_user
from wharfd import WharfServer, build_dir, unique_bucket

REGION_BYTES = 4 << 20


class Peer:
    """The client memory: a libfabric process that registered REGION_BYTES and prints its
    token; load puts bytes at the start of its region."""

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

    def load(self, b):
        path = os.path.join(self.tmp, "load")
        with open(path, "wb") as f:
            f.write(b)
        self.p.stdin.write(f"load {path}\n")
        self.p.stdin.flush()
        assert self.p.stdout.readline().strip() == "ok"

    def save(self, n):
        path = os.path.join(self.tmp, "save")
        self.p.stdin.write(f"save {path} {n}\n")
        self.p.stdin.flush()
        assert self.p.stdout.readline().strip() == "ok"
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
def srv():
    # The requests come over TCP from this process while the memory is the peer's: shm is
    # served to them only on a trusted host.
    s = WharfServer(extra_args=["--shm-trust-local"])
    s.start()
    yield s
    rc = s.stop()
    s.cleanup()
    assert rc == 0


@pytest.fixture(params=["ofi+shm", "ofi+tcp"], ids=["shm", "tcp"])
def peer(request, tmp_path):
    p = Peer(request.param, str(tmp_path))
    p.load(REGION)
    yield p
    p.close()


REGION = hashlib.sha256(b"seed").digest() * (REGION_BYTES // 32)


def body(ws):
    return "".join(f"{o} {n} {d}\n" for o, n, d in ws).encode()


def new_upload(raw, b, key):
    r = raw.request("POST", f"/{b}/{key}", query={"uploads": ""})
    assert r.status == 200, r
    return re.search(rb"<UploadId>([^<]+)</UploadId>", r.body).group(1).decode()


def gather(raw, b, key, uid, ws, token, part=1, **kw):
    return raw.request("POST", f"/{b}/{key}",
                       query={"x-wharf-gather": "1", "uploadId": uid, "partNumber": str(part)},
                       headers={"x-amz-rdma-token": token}, body=kw.pop("data", body(ws)), **kw)


def parts(raw, b, key, uid):
    r = raw.request("GET", f"/{b}/{key}", query={"uploadId": uid})
    assert r.status == 200, r
    return r.body.count(b"<Part>")


def refused(r, status, code, *words):
    assert r.status == status, r
    assert r.error_code() == code, r
    for w in words:
        assert w in r.headers.get("x-amz-error-message", ""), r.headers


def test_gather_part_round_trip(srv, peer):
    raw = S3Raw(srv.endpoint)
    b = unique_bucket("gath")
    assert raw.request("PUT", f"/{b}").status == 200
    uid = new_upload(raw, b, "obj")
    # listed out of part order; 5 MiB+ parts are not needed for the last (only) part
    ws = [(0, 5000, 100_000), (3_000_000, 100_000, 0), (REGION_BYTES - 1000, 1000, 105_000),
          (17, 0, 106_000)]
    r = gather(raw, b, "obj", uid, ws, peer.token)
    assert r.status == 200, r
    assert r.headers.get("x-amz-rdma-reply") == "200"
    assert r.headers.get("x-amz-rdma-bytes-transferred") == "106000"
    etag = r.headers["etag"]
    want = REGION[3_000_000:3_100_000] + REGION[:5000] + REGION[-1000:]
    assert etag.strip('"') == hashlib.md5(want).hexdigest()
    done = (f'<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>{etag}</ETag>'
            f'</Part></CompleteMultipartUpload>').encode()
    r = raw.request("POST", f"/{b}/obj", query={"uploadId": uid}, body=done)
    assert r.status == 200, r
    got = raw.request("GET", f"/{b}/obj")
    assert got.status == 200 and got.body == want


def test_gather_refusals_store_nothing(srv, peer):
    raw = S3Raw(srv.endpoint)
    b = unique_bucket("gath")
    assert raw.request("PUT", f"/{b}").status == 200
    uid = new_upload(raw, b, "obj")
    tok = peer.token
    refused(gather(raw, b, "obj", uid, [(0, 10, 0), (100, 10, 20)], tok), 400,
            "InvalidArgument", "in no window (a gap)")
    refused(gather(raw, b, "obj", uid, [(0, 10, 0), (100, 10, 5)], tok), 400,
            "InvalidArgument", "given twice")
    refused(gather(raw, b, "obj", uid, [(0, 10, 0), (REGION_BYTES - 5, 10, 10)], tok), 400,
            "InvalidArgument", "window 1", "outside the x-amz-rdma-token region")
    signed, sent = body([(0, 10, 0)]), body([(5, 10, 0)])
    refused(gather(raw, b, "obj", uid, [], tok, data=sent,
                   payload_hash=hashlib.sha256(signed).hexdigest()),
            400, "XAmzContentSHA256Mismatch")
    refused(gather(raw, b, "obj", uid, [(0, 10, 0)], tok, payload_hash=UNSIGNED), 400,
            "InvalidRequest", "signed")
    eve = create_user(srv, "gatheve" + os.urandom(3).hex())
    other = S3Raw(srv.endpoint, access_key=eve.access_key, secret_key=eve.secret_key)
    refused(gather(other, b, "obj", uid, [(0, 10, 0)], tok), 403, "AccessDenied")
    assert parts(raw, b, "obj", uid) == 0


def crc64nvme(data):
    poly, c, table = 0x9A6C9329AC4BC9B5, 0xFFFFFFFFFFFFFFFF, []
    for i in range(256):
        x = i
        for _ in range(8):
            x = (x >> 1) ^ poly if x & 1 else x >> 1
        table.append(x)
    for ch in data:
        c = table[(c ^ ch) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFFFFFFFFFF


def test_scatter_on_the_wire(srv, peer):
    raw = S3Raw(srv.endpoint)
    b = unique_bucket("scwire")
    assert raw.request("PUT", f"/{b}").status == 200
    obj = hashlib.sha256(b"obj").digest() * 8000  # 256,000 bytes
    assert raw.request("PUT", f"/{b}/obj", body=obj).status == 200
    ws = [(1000, 5000, 20_000), (0, 17, 0), (250_000, 6000, 100_000), (7, 0, 50)]
    r = raw.request("POST", f"/{b}/obj", query={"x-wharf-scatter": "1"},
                    headers={"x-amz-rdma-token": peer.token}, body=body(ws))
    assert r.status == 200, r
    assert r.headers.get("x-amz-rdma-reply") == "200"
    assert r.headers.get("x-amz-rdma-bytes-transferred") == str(5000 + 17 + 6000)
    assert r.headers.get("x-wharf-scatter-windows") == "4"
    lines = r.body.decode().split("\n")
    assert lines[-1] == "" and len(lines) == 5, r.body
    got = peer.save(110_000)
    want = bytearray(REGION[:110_000])
    for (o, n, d), line in zip(ws, lines):
        want[d:d + n] = obj[o:o + n]
        assert int(line, 16) == crc64nvme(obj[o:o + n]) and len(line) == 16, line
    assert got == bytes(want), "a window landed wrong, or bytes outside the windows changed"
