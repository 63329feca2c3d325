# SPDX-License-Identifier: Apache-2.0
"""A full data directory: wharfd on a small tmpfs of its own, written until full.

- a write that does not fit answers 507 InsufficientStorage ("the storage is full"), never 500;
- deletes (DELETE and DeleteObjects) and their metadata commits work on the full disk: the
  space reserved for them (DIR/reserve) is released when a commit needs it;
- after enough deletes, writes work again;
- wharfd restarts on the full disk (start-up needs no free space) and serves what it holds;
- /metrics shows the free space, and --high-water refuses new writes before the disk is full.

The tmpfs is mounted by the test (root only); where mount is refused the tests skip with the
reason. Each mount is removed at the end."""
import base64
import hashlib
import os
import subprocess
import tempfile

import pytest

from s3raw import S3Raw
from wharfd import WharfServer, unique_bucket

MIB = 1 << 20
FS_SIZE = 64 * MIB


@pytest.fixture
def tmpfs():
    d = tempfile.mkdtemp(prefix="wharf-fulldisk-")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={FS_SIZE},mode=0755", "tmpfs", d],
                       capture_output=True, text=True)
    if r.returncode != 0:
        os.rmdir(d)
        pytest.skip(f"cannot mount a tmpfs here: {(r.stderr or r.stdout).strip()}")
    try:
        yield d
    finally:
        subprocess.run(["umount", "-l", d], capture_output=True)
        os.rmdir(d)


def _server(data_dir, *args):
    srv = WharfServer(data_dir=data_dir, extra_args=list(args))
    # The log goes outside the tmpfs: a full disk must not cost the log.
    srv.log_path = tempfile.mkstemp(prefix="wharfd-fulldisk-", suffix=".log")[1]
    return srv


def _body(i, n=MIB):
    seed = hashlib.sha256(str(i).encode()).digest()
    return (seed * (n // len(seed) + 1))[:n]


def _fill(raw, bucket, start=0, limit=400):
    """PUTs objects until the disk is full to the last block: 1 MiB ones until one is refused,
    then smaller and smaller ones. Returns ({key: size} stored, the last refusal)."""
    keys, refusal, i = {}, None, start
    for size in (MIB, 256 << 10, 64 << 10, 16 << 10, 4 << 10, 1 << 10):
        while True:
            assert i < start + limit, f"{limit} PUTs went into a {FS_SIZE // MIB} MiB file system"
            r = raw.request("PUT", f"/{bucket}/o{i:04d}", body=_body(i, size))
            if r.status != 200:
                _assert_full(r)
                refusal = r
                break
            keys[f"o{i:04d}"] = size
            i += 1
        i += 1
    return keys, refusal


def _fill_file(path):
    """Writes a file until the file system refuses; returns its size."""
    n = 0
    with open(path, "wb", buffering=0) as f:
        for step in (MIB, 4096, 1):
            try:
                while True:
                    n += f.write(b"\0" * step)
            except OSError:
                pass
    st = os.statvfs(path)
    assert st.f_bavail == 0, st
    return n


def _assert_full(r):
    assert r.status == 507, r
    assert r.error_code() == "InsufficientStorage", r
    assert b"storage is full" in r.body.lower() or \
        "storage is full" in r.headers.get("x-amz-error-message", "").lower(), r


def _delete_objects(raw, bucket, keys):
    body = ("<Delete>" + "".join(f"<Object><Key>{k}</Key></Object>" for k in keys) +
            "</Delete>").encode()
    md5 = base64.b64encode(hashlib.md5(body).digest()).decode()
    return raw.request("POST", f"/{bucket}", query=[("delete", None)], body=body,
                       headers={"content-md5": md5})


def test_fill_delete_write_restart(tmpfs):
    data = os.path.join(tmpfs, "data")
    srv = _server(data, "--high-water", "100")
    srv.start()
    try:
        raw = S3Raw(srv.endpoint)
        b = unique_bucket("full")
        assert raw.request("PUT", f"/{b}").status == 200
        m = srv.metrics()
        assert 0 < m["wharf_storage_free_bytes"] <= m["wharf_storage_total_bytes"] <= FS_SIZE
        assert m["wharf_storage_reserve_bytes"] == 8 * MIB

        stored, refusal = _fill(raw, b)
        keys = sorted(stored)
        assert sum(stored.values()) >= 40 * MIB, len(keys)  # reserve and metadata: a few MiB
        assert srv.metrics()["wharf_storage_free_bytes"] < 64 << 10
        # A multipart upload cannot start its parts either: 507, not 500.
        r = raw.request("POST", f"/{b}/mp", query={"uploads": None})
        if r.status == 200:
            uid = r.body.split(b"<UploadId>")[1].split(b"</UploadId>")[0].decode()
            r = raw.request("PUT", f"/{b}/mp", query={"partNumber": "1", "uploadId": uid},
                            body=_body(7, 5 * MIB))
            _assert_full(r)
            assert raw.request("DELETE", f"/{b}/mp", query={"uploadId": uid}).status == 204
        else:
            _assert_full(r)

        # Deletes work on the full disk, one by one and in a batch.
        assert raw.request("DELETE", f"/{b}/{keys[0]}").status == 204
        r = _delete_objects(raw, b, keys[1:12])
        assert r.status == 200 and r.body.count(b"<Deleted>") == 11 and b"<Error>" not in r.body, r
        for k in keys[:12]:
            assert raw.request("HEAD", f"/{b}/{k}").status == 404
        # ... and then writes work again.
        r = raw.request("PUT", f"/{b}/again", body=_body(-1))
        assert r.status == 200, r
        assert raw.request("GET", f"/{b}/again").body == _body(-1)

        # Full again, then a restart on the full disk.
        more_sizes, refusal = _fill(raw, b, start=1000)
        more = sorted(more_sizes)
        assert srv.stop() == 0
        # Whatever space is left, something else takes: the disk is full to the last byte.
        _fill_file(os.path.join(tmpfs, "filler"))
        srv.start()
        raw = S3Raw(srv.endpoint)
        for k, size in list(stored.items())[12:] + list(more_sizes.items()):
            r = raw.request("GET", f"/{b}/{k}")
            assert r.status == 200 and r.body == _body(int(k[1:]), size), k
        # Started by letting the reserve go (no free space was needed); until deletes make
        # room for it again, new writes are refused.
        assert srv.metrics()["wharf_storage_reserve_bytes"] == 0
        r = raw.request("PUT", f"/{b}/on-full-restart", body=_body(5))
        _assert_full(r)
        assert _delete_objects(raw, b, more).status == 200
        os.unlink(os.path.join(tmpfs, "filler"))
        r = raw.request("PUT", f"/{b}/after-restart", body=_body(6))
        assert r.status == 200, r
        assert srv.metrics()["wharf_storage_reserve_bytes"] == 8 * MIB
    finally:
        srv.stop()
        print(open(srv.log_path, errors="replace").read()[-3000:])
        os.unlink(srv.log_path)


def test_high_water_mark_refuses_before_full(tmpfs):
    data = os.path.join(tmpfs, "data")
    srv = _server(data, "--high-water", "50")
    srv.start()
    try:
        raw = S3Raw(srv.endpoint)
        b = unique_bucket("hw")
        assert raw.request("PUT", f"/{b}").status == 200
        stored, refusal = _fill(raw, b)
        keys = sorted(stored)
        m = srv.metrics()
        assert m["wharf_storage_high_water_ratio"] == 0.5
        used = m["wharf_storage_total_bytes"] - m["wharf_storage_free_bytes"]
        # Refused near half full, with plenty of room left on the disk itself.
        assert 0.40 * FS_SIZE < used <= 0.55 * FS_SIZE, (used, len(keys))
        assert m["wharf_storage_free_bytes"] > 20 * MIB
        assert raw.request("DELETE", f"/{b}/{keys[0]}").status == 204
        assert raw.request("DELETE", f"/{b}/{keys[1]}").status == 204
        assert raw.request("PUT", f"/{b}/fits-again", body=_body(3)).status == 200
    finally:
        srv.stop()
        os.unlink(srv.log_path)
