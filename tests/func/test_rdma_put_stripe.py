# SPDX-License-Identifier: Apache-2.0
"""Striped RDMA PUTs (--put-stripes N, --put-stripe-min SIZE): over bound shm (ofi+shm, the
direct path) a PUT of --put-stripe-min bytes or more is written into N files at once, one per
stripe (each a whole number of 8 MiB windows), and committed as one composed object whose
extents are those files, as a multipart upload's parts are. The object reads back byte-exact
(GET, Range across stripe ends, HEAD, RDMA GET), its CRC-64/NVME and ETag are those of the same
bytes PUT into one file, CopyObject, versioned overwrite and delete work on it and remove its
files; a wharfd killed mid-PUT leaves the old object and, after a restart, no stripe file; with
--put-stripes 1 nothing is striped. Real wharfd and the C CLI."""
import base64
import os
import struct
import subprocess

import crcmod
import pgserver
import pytest

from s3raw import S3Raw
from users import client
from wharfd import (ACCESS_KEY, CTYPES_UNDER_ASAN, SECRET_KEY, WharfServer,
                    assert_start_refused, build_dir, unique_bucket, wait_until)

MIB = 1 << 20
WINDOW = 8 * MIB
STRIPED = 'wharf_rdma_put_striped_total{unit="requests"}'
STRIPED_BYTES = 'wharf_rdma_put_striped_total{unit="bytes"}'
STRIPE_FILES = 'wharf_rdma_put_striped_total{unit="stripes"}'
POSITIONAL = 'wharf_rdma_put_positional_total{unit="bytes"}'
STRIPE_ARGS = ["--put-stripes", "4", "--put-stripe-min", "16M", "--copy-threads", "4"]
_crc64 = crcmod.mkCrcFun(0x1AD93D23594C93659, initCrc=0, rev=True, xorOut=0xFFFFFFFFFFFFFFFF)


def crc64nvme_b64(data):
    return base64.b64encode(struct.pack(">Q", _crc64(data))).decode()


def stripe_layout(size, stripes, minimum):
    """(count, bytes per stripe) as --put-stripes documents it: at most `stripes` stripes of
    whole 8 MiB windows, none empty; (1, size) below the minimum or two windows."""
    if size < max(minimum, 2 * WINDOW) or stripes < 2:
        return 1, size
    units = -(-size // WINDOW)
    n = min(stripes, units)
    length = -(-units // n) * WINDOW
    n = -(-size // length)
    return (n, length) if n > 1 else (1, size)


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


def object_files(srv):
    return {f for f in srv.data_files() if f.startswith("objects/")}


def put_counted(srv, tmp_path, url, data):
    """RDMA PUT of data; returns (metrics delta of striped requests, of stripe files, of new
    object files)."""
    src = tmp_path / "src"
    src.write_bytes(data)
    before, files = srv.metrics(), object_files(srv)
    rdma_put(srv, src, url)
    after = srv.metrics()
    new = object_files(srv) - files
    assert after[POSITIONAL] - before[POSITIONAL] == (len(data) if len(data) >= 2 * WINDOW
                                                      else 0)
    return after[STRIPED] - before[STRIPED], after[STRIPE_FILES] - before[STRIPE_FILES], new


def check_ranges(raw, path, data, length):
    """Ranges around every stripe end, the first and last bytes, a suffix."""
    spans = [(0, 0), (len(data) - 1, len(data) - 1)]
    for b in range(length, len(data), length):
        spans += [(b - 5, b + 4), (b - 1, b - 1), (b, b), (b - WINDOW // 2, b + WINDOW // 2)]
    for lo, hi in spans:
        hi = min(hi, len(data) - 1)
        g = raw.request("GET", path, headers={"range": f"bytes={lo}-{hi}"}, timeout=60)
        assert g.status == 206, (lo, hi, g)
        assert g.body == data[lo:hi + 1], (lo, hi)
    g = raw.request("GET", path, headers={"range": "bytes=-7"})
    assert g.status == 206 and g.body == data[-7:]


def test_striped_put_sizes_read_back(tmp_path):
    srv = WharfServer(extra_args=STRIPE_ARGS)
    srv.start()
    try:
        b = unique_bucket("stripe")
        cli(srv, "--provider", "none", "mb", f"s3://{b}")
        raw = S3Raw(srv.endpoint)
        # Under the minimum; exactly two windows; a 4097-byte last stripe; stripes of two
        # windows with a short last one; 256 MiB + 1 in four stripes of nine windows.
        for size in (16 * MIB - 1, 16 * MIB, 24 * MIB + 4097, 40 * MIB + 3, 256 * MIB + 1):
            data = os.urandom(size)
            n, length = stripe_layout(size, 4, 16 * MIB)
            reqs, files, new = put_counted(srv, tmp_path, f"s3://{b}/o{size}", data)
            assert (reqs, files) == ((1, n) if n > 1 else (0, 0)), size
            assert len(new) == n, (size, sorted(new))
            path = f"/{b}/o{size}"
            g = raw.request("GET", path, headers={"x-amz-checksum-mode": "ENABLED"},
                            timeout=120)
            assert g.status == 200 and len(g.body) == size, (size, g)
            assert g.body == data, size
            assert g.headers["x-amz-checksum-crc64nvme"] == crc64nvme_b64(data), size
            h = raw.request("HEAD", path, headers={"x-amz-checksum-mode": "ENABLED"})
            assert h.status == 200 and int(h.headers["content-length"]) == size
            assert h.headers["etag"] == g.headers["etag"]
            assert h.headers["x-amz-checksum-crc64nvme"] == crc64nvme_b64(data)
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


def test_striped_etag_and_checksum_match_one_file(tmp_path):
    """The same bytes PUT striped and into one file: the same ETag and CRC-64/NVME."""
    data = os.urandom(72 * MIB + 12345)
    heads = []
    for args, striped in ((STRIPE_ARGS, True), (["--put-stripes", "1"], False)):
        srv = WharfServer(extra_args=args)
        srv.start()
        try:
            b = unique_bucket("stripeq")
            cli(srv, "--provider", "none", "mb", f"s3://{b}")
            reqs, files, new = put_counted(srv, tmp_path, f"s3://{b}/k", data)
            assert (reqs, len(new)) == ((1, 4) if striped else (0, 1))
            g = S3Raw(srv.endpoint).request("GET", f"/{b}/k",
                                            headers={"x-amz-checksum-mode": "ENABLED"},
                                            timeout=120)
            assert g.status == 200 and g.body == data
            heads.append((g.headers["etag"], g.headers["x-amz-checksum-crc64nvme"]))
        finally:
            srv.stop()
            srv.cleanup()
    assert heads[0] == heads[1], heads
    assert heads[0][1] == crc64nvme_b64(data)
    assert heads[0][0].strip('"').endswith("-2"), heads  # the digest ETag, 64M parts


def _copy_versions_delete(tmp_path, meta_args):
    srv = WharfServer(extra_args=STRIPE_ARGS + meta_args)
    srv.start()
    try:
        b = unique_bucket("stripev")
        s3 = client(srv, ACCESS_KEY, SECRET_KEY)
        s3.create_bucket(Bucket=b)
        s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
        empty = object_files(srv)
        d1, d2 = os.urandom(24 * MIB + 4097), os.urandom(40 * MIB + 3)
        _, _, f1 = put_counted(srv, tmp_path, f"s3://{b}/k", d1)
        _, _, f2 = put_counted(srv, tmp_path, f"s3://{b}/k", d2)
        assert len(f1) == 4 and len(f2) == 3
        # A restart's recovery keeps every stripe a version names.
        srv.stop()
        srv.start()
        s3 = client(srv, ACCESS_KEY, SECRET_KEY)
        assert f1 | f2 <= object_files(srv)
        vs = s3.list_object_versions(Bucket=b, Prefix="k")["Versions"]
        assert len(vs) == 2
        latest = [v for v in vs if v["IsLatest"]][0]["VersionId"]
        older = [v for v in vs if not v["IsLatest"]][0]["VersionId"]
        raw = S3Raw(srv.endpoint)
        g = raw.request("GET", f"/{b}/k", query={"versionId": older}, timeout=60)
        assert g.status == 200 and g.body == d1
        g = raw.request("GET", f"/{b}/k", timeout=60)
        assert g.status == 200 and g.body == d2
        check_ranges(raw, f"/{b}/k", d2, 16 * MIB)
        # CopyObject of a striped object: the copy's bytes and CRC are the source's.
        s3.copy_object(Bucket=b, Key="c", CopySource={"Bucket": b, "Key": "k"},
                       ChecksumAlgorithm="CRC64NVME")
        g = raw.request("GET", f"/{b}/c", headers={"x-amz-checksum-mode": "ENABLED"},
                        timeout=60)
        assert g.status == 200 and g.body == d2
        assert g.headers["x-amz-checksum-crc64nvme"] == crc64nvme_b64(d2)
        # Deleting a version removes every one of its stripe files, and only those.
        s3.delete_object(Bucket=b, Key="k", VersionId=older)
        assert wait_until(lambda: not (object_files(srv) & f1), timeout=10)
        assert f2 <= object_files(srv)
        g = raw.request("GET", f"/{b}/k", timeout=60)
        assert g.status == 200 and g.body == d2
        for v in s3.list_object_versions(Bucket=b)["Versions"]:
            s3.delete_object(Bucket=b, Key=v["Key"], VersionId=v["VersionId"])
        for m in s3.list_object_versions(Bucket=b).get("DeleteMarkers", []):
            s3.delete_object(Bucket=b, Key=m["Key"], VersionId=m["VersionId"])
        assert wait_until(lambda: object_files(srv) == empty, timeout=10), \
            sorted(object_files(srv) - empty)
    finally:
        srv.stop()
        srv.cleanup()


def test_striped_copy_versions_delete(tmp_path):
    _copy_versions_delete(tmp_path, [])


_pg_missing = pgserver.missing_reason()


@pytest.mark.skipif(_pg_missing is not None, reason=_pg_missing or "")
def test_striped_copy_versions_delete_postgresql(tmp_path):
    """The same with the metadata in PostgreSQL (its chunk map holds the stripes)."""
    with pgserver.PgServer() as pg:
        _copy_versions_delete(tmp_path, ["--meta", pg.create_db("stripes")])


@pytest.mark.skipif(**CTYPES_UNDER_ASAN)
def test_striped_multipart_parts(tmp_path):
    """RDMA UploadParts of the minimum or more are striped too; CompleteMultipartUpload
    composes the object of every part's stripes (no copy). The object reads back whole and in
    ranges across part and stripe ends, a restart keeps its files, its ETag and CRC are those
    of the same upload into one file per part, and a delete removes every file."""
    import wharf
    data = os.urandom(160 * MIB + 7)  # parts of 64, 64 and 32 MiB + 7: 4, 4 and 3 stripes
    seen = []
    for args, striped in ((STRIPE_ARGS, True), (["--put-stripes", "1"], False)):
        srv = WharfServer(extra_args=args)
        srv.start()
        c = None
        try:
            c = wharf.Client(srv.endpoint, ACCESS_KEY, SECRET_KEY, provider="ofi+shm",
                             unix_socket=srv.unix_socket, multipart_threshold=100 * MIB,
                             part_size=64 * MIB)
            b = unique_bucket("stripemp")
            c.create_bucket(b)
            empty, m0 = object_files(srv), srv.metrics()
            c.put(b, "k", data, transport="rdma")
            m1 = srv.metrics()
            new = object_files(srv) - empty
            assert (m1[STRIPED] - m0[STRIPED], m1[STRIPE_FILES] - m0[STRIPE_FILES]) == \
                ((3, 11) if striped else (0, 0))
            assert len(new) == (11 if striped else 3), sorted(new)
            c.close()
            c = None
            srv.stop()
            srv.start()
            assert object_files(srv) - empty == new
            raw = S3Raw(srv.endpoint)
            g = raw.request("GET", f"/{b}/k", headers={"x-amz-checksum-mode": "ENABLED"},
                            timeout=120)
            assert g.status == 200 and g.body == data
            check_ranges(raw, f"/{b}/k", data, 16 * MIB)
            for n, (lo, hi) in enumerate(((0, 64 * MIB), (64 * MIB, 128 * MIB),
                                          (128 * MIB, len(data))), 1):
                g2 = raw.request("GET", f"/{b}/k", query={"partNumber": str(n)}, timeout=60)
                assert g2.status == 206 and g2.body == data[lo:hi], n
            seen.append((g.headers["etag"], g.headers.get("x-amz-checksum-crc64nvme")))
            assert raw.request("DELETE", f"/{b}/k").status == 204
            assert wait_until(lambda: object_files(srv) == empty, timeout=10), \
                sorted(object_files(srv) - empty)
        finally:
            if c:
                c.close()
            srv.stop()
            srv.cleanup()
    assert seen[0] == seen[1], seen
    assert seen[0][0].strip('"').endswith("-3"), seen


def test_striped_put_server_killed(tmp_path):
    """wharfd is killed (SIGKILL) while a striped PUT writes its stripes: the old object stays
    whole, and the restarted server leaves no stripe file behind (temp or orphan)."""
    old = os.urandom(24 * MIB + 4097)
    big = tmp_path / "big"
    BIG = 1000 * MIB + 1  # one PUT: under the client's 1 GiB RDMA multipart threshold
    big.write_bytes(os.urandom(BIG))
    srv = WharfServer(extra_args=STRIPE_ARGS)
    srv.start()
    b = unique_bucket("stripekill")
    killed = False
    try:
        cli(srv, "--provider", "none", "mb", f"s3://{b}")
        put_counted(srv, tmp_path, f"s3://{b}/k", old)
        before = srv.data_files()

        def stripe_temps():  # begin has made the four stripe files
            return len([f for f in srv.data_files() - before if f.startswith("tmp/")]) == 4

        for _ in range(3):  # bounded: retried only if the PUT won the race
            p = cli(srv, "--provider", "ofi+shm", "cp", "--transport", "rdma", str(big),
                    f"s3://{b}/k", wait=False)
            try:
                seen = wait_until(stripe_temps, timeout=60, interval=0.002)
                srv.kill()
            finally:
                p.wait(timeout=60)
            killed = seen and p.returncode != 0
            srv.stop()
            srv.start()
            if killed:
                break
            put_counted(srv, tmp_path, f"s3://{b}/k", old)  # the PUT won: put it back
            before = srv.data_files()
        assert killed, "the PUT never ran long enough to be killed"
        g = S3Raw(srv.endpoint).request("GET", f"/{b}/k",
                                        headers={"x-amz-checksum-mode": "ENABLED"}, timeout=60)
        assert g.status == 200 and g.body == old
        assert g.headers["x-amz-checksum-crc64nvme"] == crc64nvme_b64(old)
        assert srv.data_files() == before, sorted(srv.data_files() ^ before)
    finally:
        srv.stop()
        srv.cleanup()


def _default_stripes():
    n = os.sysconf("SC_NPROCESSORS_ONLN")
    return min(16, (n + 1) // 2 if n > 2 else 1)


@pytest.mark.parametrize("flag,stripes", [(["--put-stripes", "1"], 1),
                                          (["--put-stripes", "4"], 4),
                                          ([], _default_stripes())])
def test_stripes_option(tmp_path, flag, stripes):
    """--put-stripes 1 is the one-file PUT of before (positional, not striped, one file);
    the default stripe minimum is 64 MiB; the default count comes from the CPU count."""
    srv = WharfServer(extra_args=flag)
    srv.start()
    try:
        b = unique_bucket("stripeopt")
        cli(srv, "--provider", "none", "mb", f"s3://{b}")
        for size in (64 * MIB - 1, 64 * MIB + 5):
            data = os.urandom(size)
            n, _ = stripe_layout(size, stripes, 64 * MIB)
            reqs, files, new = put_counted(srv, tmp_path, f"s3://{b}/o{size}", data)
            assert (reqs, files, len(new)) == ((1, n, n) if n > 1 else (0, 0, 1)), (size, n)
            g = S3Raw(srv.endpoint).request("GET", f"/{b}/o{size}", timeout=60)
            assert g.status == 200 and g.body == data
    finally:
        srv.stop()
        srv.cleanup()


@pytest.mark.parametrize("args,message", [
    (["--put-stripes", "0"], "--put-stripes wants a count 1..16"),
    (["--put-stripes", "17"], "--put-stripes wants a count 1..16"),
    (["--put-stripe-min", "8M"], "--put-stripe-min wants a size of at least 16M"),
])
def test_stripes_bad_flags(args, message):
    assert_start_refused(args, message)
