# SPDX-License-Identifier: Apache-2.0
"""Released large objects are given back off the request: the files of a deleted or
overwritten object of 64 MiB or more (its stripes or parts together) leave objects/ before the
DELETE or PUT answers, and a thread of wharfd's unlinks them from tmp/ (unlinking gigabytes on
ext4 with discard took 0.4 s per GiB on the VM, inside the request). Counted in /metrics
(wharf_storage_reclaimed_*), emptied by a clean stop and, after a crash, by start-up; a write
that needs the space waits for it instead of failing. Smaller objects go in place, as before.
Real wharfd, boto3, a real tmpfs mounted for the full-disk case (root)."""
import os
import signal
import subprocess
import tempfile

import pytest

import users
from wharfd import ACCESS_KEY, SECRET_KEY, WharfServer, unique_bucket, wait_until

MIB = 1 << 20
FILES = "wharf_storage_reclaimed_files_total"
BYTES = "wharf_storage_reclaimed_bytes_total"
PENDING = "wharf_storage_reclaim_pending_bytes"


def client(srv):
    return users.client(srv, ACCESS_KEY, SECRET_KEY, signature_version="s3v4")


def files_under(srv, sub):
    out = set()
    for d, _, names in os.walk(os.path.join(srv.data_dir, sub)):
        out |= {os.path.join(d, n) for n in names}
    return out


def body(n, seed):
    return (bytes([seed]) * 4096 + os.urandom(4096)) * (n // 8192)


@pytest.fixture(scope="module")
def srv():
    s = WharfServer()
    s.start()
    yield s
    rc = s.stop()
    # A clean stop removes what was queued: nothing is left in tmp/.
    assert not files_under(s, "tmp"), files_under(s, "tmp")
    s.cleanup()
    assert rc == 0


@pytest.fixture(scope="module")
def s3(srv):
    return client(srv)


@pytest.fixture()
def bucket(s3):
    b = unique_bucket("reclaim")
    s3.create_bucket(Bucket=b)
    return b


def settled(srv, files0):
    """Waits until every queued file is gone; returns the metrics then."""
    assert wait_until(lambda: srv.metrics()[PENDING] == 0 and srv.metrics()[FILES] > files0
                      and not files_under(srv, "tmp"), timeout=20), \
        (srv.metrics()[PENDING], files_under(srv, "tmp"))
    return srv.metrics()


def test_large_delete_leaves_objects_at_once_and_is_reclaimed(srv, s3, bucket):
    before = files_under(srv, "objects")
    m0 = srv.metrics()
    data = body(80 * MIB, 1)
    s3.put_object(Bucket=bucket, Key="big", Body=data)
    added = files_under(srv, "objects") - before
    assert added, "the object's file is in objects/"
    s3.delete_object(Bucket=bucket, Key="big")
    # Answered: its files are out of objects/ already.
    assert files_under(srv, "objects") == before
    m1 = settled(srv, m0[FILES])
    assert m1[FILES] - m0[FILES] == len(added)
    assert m1[BYTES] - m0[BYTES] >= 80 * MIB
    with pytest.raises(s3.exceptions.NoSuchKey):
        s3.get_object(Bucket=bucket, Key="big")


def test_overwrite_reclaims_the_old_object_and_serves_the_new(srv, s3, bucket):
    m0 = srv.metrics()
    s3.put_object(Bucket=bucket, Key="k", Body=body(70 * MIB, 2))
    new = body(70 * MIB, 3)
    s3.put_object(Bucket=bucket, Key="k", Body=new)
    m1 = settled(srv, m0[FILES])
    assert m1[FILES] - m0[FILES] >= 1
    assert s3.get_object(Bucket=bucket, Key="k")["Body"].read() == new


def test_multipart_object_of_small_parts_counts_as_one(srv, s3, bucket):
    """Three 25 MiB parts (each file below the bound, 75 MiB together): all three go."""
    m0 = srv.metrics()
    before = files_under(srv, "objects")
    up = s3.create_multipart_upload(Bucket=bucket, Key="mpu")["UploadId"]
    parts = []
    for i in range(3):
        r = s3.upload_part(Bucket=bucket, Key="mpu", UploadId=up, PartNumber=i + 1,
                           Body=body(25 * MIB, 10 + i))
        parts.append({"PartNumber": i + 1, "ETag": r["ETag"]})
    s3.complete_multipart_upload(Bucket=bucket, Key="mpu", UploadId=up,
                                 MultipartUpload={"Parts": parts})
    files = files_under(srv, "objects") - before
    s3.delete_object(Bucket=bucket, Key="mpu")
    assert files_under(srv, "objects") == before
    m1 = settled(srv, m0[FILES])
    assert m1[FILES] - m0[FILES] == len(files) >= 3


def test_small_object_goes_in_place(srv, s3, bucket):
    m0 = srv.metrics()
    before = files_under(srv, "objects")
    s3.put_object(Bucket=bucket, Key="small", Body=body(8 * MIB, 4))
    s3.delete_object(Bucket=bucket, Key="small")
    assert files_under(srv, "objects") == before
    assert not files_under(srv, "tmp")
    m1 = srv.metrics()
    assert m1[FILES] == m0[FILES] and m1[PENDING] == 0


def test_start_removes_what_a_crash_left_queued(tmp_path):
    """kill -9 with files queued (or not): start-up empties tmp/, and the objects that were not
    deleted are all still there."""
    s = WharfServer(data_dir=str(tmp_path / "d"))
    s.start()
    try:
        c = client(s)
        b = unique_bucket("reclaim-crash")
        c.create_bucket(Bucket=b)
        keep = body(66 * MIB, 5)
        c.put_object(Bucket=b, Key="keep", Body=keep)
        for i in range(3):
            c.put_object(Bucket=b, Key=f"gone{i}", Body=body(66 * MIB, 6 + i))
        for i in range(3):
            c.delete_object(Bucket=b, Key=f"gone{i}")
        os.kill(s.proc.pid, signal.SIGKILL)
        s.proc.wait(timeout=10)
        s.proc = None
        # As the crash may have left it (whatever the thread had not removed yet, and one more).
        extra = os.path.join(s.data_dir, "tmp", "reclaim-" + "ab" * 16)
        with open(extra, "wb") as f:
            f.write(b"x" * 4096)
        s.start()
        c = client(s)  # its port may have changed
        assert not files_under(s, "tmp"), files_under(s, "tmp")
        assert c.get_object(Bucket=b, Key="keep")["Body"].read() == keep
        assert [o["Key"] for o in c.list_objects_v2(Bucket=b).get("Contents", [])] == ["keep"]
    finally:
        s.stop()
        s.cleanup()


@pytest.fixture
def small_tmpfs():
    d = tempfile.mkdtemp(prefix="wharf-tmpfs-reclaim-")
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=200m", "tmpfs", d],
                       capture_output=True, text=True)
    if p.returncode != 0:
        os.rmdir(d)
        pytest.skip(f"cannot mount a tmpfs here: {p.stderr.strip()}")
    yield d
    subprocess.run(["umount", "-l", d], check=False)
    os.rmdir(d)


def test_write_that_needs_the_space_waits_for_it(small_tmpfs):
    """A 200 MiB file system: 120 MiB stored, deleted, and 120 MiB stored again at once. The
    second PUT is accepted (the space the first gives back counts), 10 times over."""
    s = WharfServer(data_dir=os.path.join(small_tmpfs, "d"))
    s.start()
    try:
        c = client(s)
        b = unique_bucket("reclaim-full")
        c.create_bucket(Bucket=b)
        for i in range(10):
            data = body(120 * MIB, 20 + i)
            c.put_object(Bucket=b, Key=f"k{i}", Body=data)
            c.delete_object(Bucket=b, Key=f"k{i}")
        assert wait_until(lambda: s.metrics()[PENDING] == 0, timeout=20)
        assert s.metrics()[FILES] >= 10
    finally:
        s.stop()
        s.cleanup()
