# SPDX-License-Identifier: Apache-2.0
"""The mapped positional RDMA PUT (--data-writes mapped): over bound shm (ofi+shm, the direct path) a PUT of two 8 MiB
windows or more is read from the client straight into the mapped temp file (one copy). The
server counts those bytes (wharf_rdma_put_mapped_bytes_total); objects of every size read back
byte-exact over HTTP and RDMA with the right CRC-64/NVME and a digest ETag; a PUT whose client
is killed mid-way leaves no object and no temp file, also after a restart; two clients racing
to overwrite one key leave one whole version. Real wharfd and the C CLI (runs under ASan)."""
import base64
import os
import signal
import struct
import subprocess
import time

import crcmod
import pytest

from s3raw import S3Raw
from wharfd import WharfServer, build_dir, unique_bucket, wait_until

MIB = 1 << 20
MAPPED = 'wharf_rdma_put_mapped_bytes_total{unit="bytes"}'
MAPPED_OPS = 'wharf_rdma_put_mapped_bytes_total{unit="requests"}'
# CRC-64/NVME (reflected 0x9a6c9329ac4bc9b5, init and xorout all ones), crcmod's C extension.
_crc64 = crcmod.mkCrcFun(0x1AD93D23594C93659, initCrc=0, rev=True, xorOut=0xFFFFFFFFFFFFFFFF)


def crc64nvme_b64(data):
    return base64.b64encode(struct.pack(">Q", _crc64(data))).decode()


def cli(srv, *args, wait=True):
    cmd = [os.path.join(build_dir(), "wharf"), "--quiet", *args]
    if not wait:
        return subprocess.Popen(cmd, env=srv.client_env(), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
    p = subprocess.run(cmd, env=srv.client_env(), capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, (args, p.stdout, p.stderr)
    return p


def rdma_put(srv, src, url):
    return cli(srv, "--provider", "ofi+shm", "cp", "--transport", "rdma", str(src), url)


def test_mapped_put_sizes_read_back(tmp_path):
    srv = WharfServer(extra_args=["--data-writes", "mapped", "--copy-threads", "4", "--put-threads", "1"])
    srv.start()
    try:
        b = unique_bucket("map")
        cli(srv, "--provider", "none", "mb", f"s3://{b}")
        raw = S3Raw(srv.endpoint)
        # 0 and 1 byte and just under the threshold go in order; the rest is mapped: not a
        # multiple of the 8 MiB window nor of a page, and 256 MiB + 1.
        for size in (0, 1, 16 * MIB - 1, 16 * MIB, 24 * MIB + 4097, 256 * MIB + 1):
            data = os.urandom(size)
            src = tmp_path / "src"
            src.write_bytes(data)
            before = srv.metrics()
            rdma_put(srv, src, f"s3://{b}/o{size}")
            after = srv.metrics()
            mapped = size >= 16 * MIB
            assert after[MAPPED] - before[MAPPED] == (size if mapped else 0), size
            assert after[MAPPED_OPS] - before[MAPPED_OPS] == (1 if mapped else 0), size
            g = raw.request("GET", f"/{b}/o{size}", headers={"x-amz-checksum-mode": "ENABLED"},
                            timeout=120)
            assert g.status == 200 and len(g.body) == size, (size, g)
            assert g.body == data, size
            assert g.headers["x-amz-checksum-crc64nvme"] == crc64nvme_b64(data), size
            etag = g.headers["etag"].strip('"')
            assert len(etag.split("-")[0]) == 32, etag
            dst = tmp_path / "dst"
            if dst.exists():
                dst.unlink()
            cli(srv, "--provider", "ofi+shm", "cp", "--transport", "rdma", f"s3://{b}/o{size}",
                str(dst))
            assert dst.read_bytes() == data, size
        assert srv.data_files() and not [f for f in srv.data_files() if f.startswith("tmp/")]
    finally:
        srv.stop()
        srv.cleanup()


def test_mapped_put_client_killed(tmp_path):
    """The client dies while the server copies from it: the PUT fails, its mapped temp file is
    removed, no object appears, and a restart finds nothing left over."""
    srv = WharfServer(extra_args=["--data-writes", "mapped"])
    srv.start()
    try:
        b = unique_bucket("mapkill")
        cli(srv, "--provider", "none", "mb", f"s3://{b}")
        raw = S3Raw(srv.endpoint)
        before = srv.data_files()
        BIG = 1000 * MIB + 1  # one PUT: under the client's 1 GiB RDMA multipart threshold
        big = tmp_path / "big"
        big.write_bytes(os.urandom(BIG))

        def mapped_temp():  # the temp file at its full size: map_at_begin has run
            for f in srv.data_files() - before:
                try:
                    if f.startswith("tmp/") and \
                            os.path.getsize(os.path.join(srv.data_dir, f)) == BIG:
                        return f
                except OSError:
                    pass
            return None

        killed = False
        for delay in (0.1, 0.02, 0.0):  # bounded: retried only if the PUT won the race
            m0 = srv.metrics()
            p = cli(srv, "--provider", "ofi+shm", "cp", "--transport", "rdma", str(big),
                    f"s3://{b}/partial", wait=False)
            try:
                temp = wait_until(mapped_temp, timeout=60, interval=0.005)
                time.sleep(delay)  # into the copy
                p.send_signal(signal.SIGKILL)
            finally:
                p.wait(timeout=60)
            if p.returncode == -signal.SIGKILL and temp:
                killed = srv.metrics()[MAPPED_OPS] == m0[MAPPED_OPS]
            if killed:
                break
            raw.request("DELETE", f"/{b}/partial")
        assert killed, "the PUT never ran long enough to be killed"
        assert wait_until(lambda: srv.data_files() == before, timeout=30), \
            sorted(srv.data_files() - before)
        assert raw.request("HEAD", f"/{b}/partial").status == 404
    finally:
        srv.stop()
    again = WharfServer(data_dir=srv.data_dir, extra_args=["--data-writes", "mapped"])
    again.start()
    try:
        assert S3Raw(again.endpoint).request("HEAD", f"/{b}/partial").status == 404
        assert again.data_files() == before, sorted(again.data_files() ^ before)
    finally:
        again.stop()
        again.cleanup()


def test_mapped_put_overwrite_race(tmp_path):
    """Two clients PUT one key at once, each by the mapped path: every round ends with one of
    the two versions, whole, with its own CRC, and no temp file."""
    srv = WharfServer(extra_args=["--data-writes", "mapped", "--copy-threads", "4"])
    srv.start()
    try:
        b = unique_bucket("maprace")
        cli(srv, "--provider", "none", "mb", f"s3://{b}")
        raw = S3Raw(srv.endpoint)
        size = 40 * MIB + 3
        versions = []
        for i in range(2):
            data = os.urandom(size)
            (tmp_path / f"v{i}").write_bytes(data)
            versions.append(data)
        m0 = srv.metrics()[MAPPED_OPS]
        for _ in range(3):
            ps = [cli(srv, "--provider", "ofi+shm", "cp", "--transport", "rdma",
                      str(tmp_path / f"v{i}"), f"s3://{b}/k", wait=False) for i in range(2)]
            deadline = time.time() + 120
            for p in ps:
                p.wait(timeout=max(1, deadline - time.time()))
                assert p.returncode == 0
            g = raw.request("GET", f"/{b}/k", headers={"x-amz-checksum-mode": "ENABLED"},
                            timeout=120)
            assert g.status == 200
            assert g.body in versions, "a mix of the two versions"
            assert g.headers["x-amz-checksum-crc64nvme"] == crc64nvme_b64(g.body)
        assert srv.metrics()[MAPPED_OPS] - m0 == 6
        assert not [f for f in srv.data_files() if f.startswith("tmp/")]
    finally:
        srv.stop()
        srv.cleanup()


@pytest.mark.parametrize("flag", [[], ["--data-writes", "buffered"]])
def test_data_writes_buffered_not_mapped(tmp_path, flag):
    """The default, --data-writes buffered: the positional PUT writes by pwrite (counted
    positional, not mapped), and the object is the same."""
    srv = WharfServer(extra_args=flag)
    srv.start()
    try:
        b = unique_bucket("mapoff")
        cli(srv, "--provider", "none", "mb", f"s3://{b}")
        data = os.urandom(24 * MIB + 4097)
        (tmp_path / "src").write_bytes(data)
        before = srv.metrics()
        rdma_put(srv, tmp_path / "src", f"s3://{b}/o")
        after = srv.metrics()
        pos = 'wharf_rdma_put_positional_total{unit="bytes"}'
        assert after[pos] - before[pos] == len(data)
        assert after[MAPPED] == before[MAPPED]
        g = S3Raw(srv.endpoint).request("GET", f"/{b}/o",
                                        headers={"x-amz-checksum-mode": "ENABLED"})
        assert g.status == 200 and g.body == data
        assert g.headers["x-amz-checksum-crc64nvme"] == crc64nvme_b64(data)
    finally:
        srv.stop()
        srv.cleanup()
