# SPDX-License-Identifier: Apache-2.0
"""The gather UploadPart (docs/protocol.md, "Gather UploadPart") against a real wharfd: a part
made of windows of one registered region (a real libfabric process's memory, the
unit_engine_test_rdma_source peer, over ofi+shm and ofi+tcp), stored in part order and read
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
