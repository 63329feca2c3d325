# SPDX-License-Identifier: Apache-2.0
"""A data directory on a tmpfs with huge pages (mounted huge=within_size or huge=always): such
a tmpfs keeps a large file in 2 MiB pages, and a write that covers part of a fresh one first
zeroes the rest of it. wharfd reports the page size (wharf_storage_page_bytes), and a large RDMA
PUT over bound shm is written in whole pages (each copy thread gathers 2 MiB, copied and
checksummed 256 KiB at a time, before one write; wharf_rdma_put_page_grouped_total), striped
or into one file. The objects read back byte-exact with their CRC-64/NVME, and each stripe file
holds exactly its bytes. On a tmpfs in 4 KiB pages nothing is grouped, and wharfd's log says
how to mount it. Real wharfd, a real tmpfs mounted for the test (root), the C CLI."""
import os
import subprocess
import tempfile

import pytest

from s3raw import S3Raw
from test_rdma_put_stripe import (WINDOW, check_ranges, cli, crc64nvme_b64, object_files,
                                  rdma_put, stripe_layout)
from wharfd import WharfServer, unique_bucket

MIB = 1 << 20
GROUPED = 'wharf_rdma_put_page_grouped_total{unit="requests"}'
GROUPED_BYTES = 'wharf_rdma_put_page_grouped_total{unit="bytes"}'
POSITIONAL = 'wharf_rdma_put_positional_total{unit="bytes"}'
PAGE = "wharf_storage_page_bytes"


def hpage_bytes():
    try:
        with open("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size") as f:
            return int(f.read())
    except OSError:
        return 0


def shmem_policy():
    try:
        with open("/sys/kernel/mm/transparent_hugepage/shmem_enabled") as f:
            return next(w.strip("[]") for w in f.read().split() if w.startswith("["))
    except (OSError, StopIteration):
        return ""


@pytest.fixture
def tmpfs():
    """mount(huge) -> a fresh tmpfs directory; unmounted afterwards."""
    mounts = []

    def mount(huge):
        d = tempfile.mkdtemp(prefix=f"wharf-tmpfs-{huge}-")
        p = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size=1g,huge={huge}", "tmpfs", d],
                           capture_output=True, text=True)
        if p.returncode != 0:
            os.rmdir(d)
            pytest.skip(f"cannot mount a tmpfs (huge={huge}) here: {p.stderr.strip()}")
        mounts.append(d)
        return d

    yield mount
    for d in mounts:
        subprocess.run(["umount", "-l", d], check=False)
        os.rmdir(d)


def put_grouped(srv, tmp_path, url, data):
    """RDMA PUT of data; returns (grouped requests, grouped bytes) it added."""
    src = tmp_path / "src"
    src.write_bytes(data)
    before = srv.metrics()
    rdma_put(srv, src, url)
    after = srv.metrics()
    assert after[POSITIONAL] - before[POSITIONAL] == (len(data) if len(data) >= 2 * WINDOW
                                                      else 0)
    return after[GROUPED] - before[GROUPED], after[GROUPED_BYTES] - before[GROUPED_BYTES]


@pytest.mark.parametrize("huge,stripes", [("within_size", 4), ("within_size", 1),
                                          ("always", 4)])
def test_huge_tmpfs_put_whole_pages(tmp_path, tmpfs, huge, stripes):
    if not hpage_bytes() or shmem_policy() == "deny":
        pytest.skip("this kernel has no huge pages for tmpfs")
    data_dir = os.path.join(tmpfs(huge), "data")
    srv = WharfServer(data_dir=data_dir, extra_args=["--put-stripes", str(stripes),
                                                     "--put-stripe-min", "16M",
                                                     "--copy-threads", "4"])
    srv.start()
    try:
        assert srv.metrics()[PAGE] == hpage_bytes()
        b = unique_bucket("hpage")
        cli(srv, "--provider", "none", "mb", f"s3://{b}")
        raw = S3Raw(srv.endpoint)
        # Under two windows (not positional); exactly two; a 4097-byte tail past whole pages;
        # stripes with a short last one; 64 MiB + 1.
        for size in (16 * MIB - 1, 16 * MIB, 24 * MIB + 4097, 40 * MIB + 3, 64 * MIB + 1):
            data = os.urandom(size)
            n, length = stripe_layout(size, stripes, 16 * MIB)
            files = object_files(srv)
            reqs, nbytes = put_grouped(srv, tmp_path, f"s3://{b}/o{size}", data)
            positional = size >= 2 * WINDOW
            assert (reqs, nbytes) == ((1, size) if positional else (0, 0)), size
            new = sorted(object_files(srv) - files)
            assert len(new) == n, (size, new)
            # Each file holds exactly its stripe's bytes (they were sized before the writes).
            sizes = sorted(os.path.getsize(os.path.join(data_dir, f)) for f in new)
            want = sorted([length] * (n - 1) + [size - length * (n - 1)]) if n > 1 else [size]
            assert sizes == want, (size, sizes, want)
            path = f"/{b}/o{size}"
            g = raw.request("GET", path, headers={"x-amz-checksum-mode": "ENABLED"},
                            timeout=120)
            assert g.status == 200 and g.body == data, size
            assert g.headers["x-amz-checksum-crc64nvme"] == crc64nvme_b64(data), size
            check_ranges(raw, path, data, length)
            dst = tmp_path / "dst"
            if dst.exists():
                dst.unlink()
            cli(srv, "--provider", "ofi+shm", "cp", "--transport", "rdma", f"s3://{b}/o{size}",
                str(dst))
            assert dst.read_bytes() == data, size
        assert not [f for f in srv.data_files() if f.startswith("tmp/")]
    finally:
        srv.stop()
        srv.cleanup()


def test_small_page_tmpfs_not_grouped(tmp_path, tmpfs):
    """A tmpfs in base pages: 4 KiB reported, nothing grouped, and the log names the mount
    option that would help."""
    data_dir = os.path.join(tmpfs("never"), "data")
    srv = WharfServer(data_dir=data_dir, extra_args=["--put-stripes", "4",
                                                     "--put-stripe-min", "16M"])
    srv.start()
    try:
        assert srv.metrics()[PAGE] == os.sysconf("SC_PAGE_SIZE")
        assert "huge=within_size" in srv.log_tail(100000)
        b = unique_bucket("spage")
        cli(srv, "--provider", "none", "mb", f"s3://{b}")
        data = os.urandom(40 * MIB + 3)
        assert put_grouped(srv, tmp_path, f"s3://{b}/o", data) == (0, 0)
        g = S3Raw(srv.endpoint).request("GET", f"/{b}/o", timeout=120)
        assert g.status == 200 and g.body == data
    finally:
        srv.stop()
        srv.cleanup()


def test_disk_data_dir_not_grouped(tmp_path):
    """The default data directory (not a tmpfs in huge pages): nothing grouped, no tmpfs
    advice in the log."""
    srv = WharfServer(extra_args=["--put-stripes", "4", "--put-stripe-min", "16M"])
    srv.start()
    try:
        if srv.metrics()[PAGE] > os.sysconf("SC_PAGE_SIZE"):
            pytest.skip("the default data directory is itself in huge pages here")
        b = unique_bucket("dpage")
        cli(srv, "--provider", "none", "mb", f"s3://{b}")
        data = os.urandom(24 * MIB + 5)
        assert put_grouped(srv, tmp_path, f"s3://{b}/o", data) == (0, 0)
        g = S3Raw(srv.endpoint).request("GET", f"/{b}/o", timeout=120)
        assert g.status == 200 and g.body == data
    finally:
        srv.stop()
        srv.cleanup()
