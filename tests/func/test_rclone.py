# SPDX-License-Identifier: Apache-2.0
"""Debian's rclone 1.60 against a real wharfd: copy a tree, then check (hashes), lsjson,
delete and purge. The remote "w" is configured through RCLONE_CONFIG_W_* variables."""
import datetime
import hashlib
import json
import os
import re
import subprocess

import pytest

from s3raw import S3Raw
from wharfd import file_md5_hex, rclone_remote_env, unique_bucket

RCLONE = "/usr/bin/rclone"
MIB = 1024 * 1024


class Rclone:
    def __init__(self, env):
        self.env = env

    def run(self, *args, check=True, timeout=240):
        # Retries would hide a server error behind a later success: fail on the first one.
        cmd = [RCLONE, "--retries", "1", "--low-level-retries", "1",
               "--s3-upload-cutoff", "16M", "--s3-chunk-size", "16M"] + [str(a) for a in args]
        r = subprocess.run(cmd, env=self.env, capture_output=True, timeout=timeout)
        if check and r.returncode != 0:
            raise AssertionError(f"{' '.join(cmd)} failed ({r.returncode}):\n"
                                 f"{r.stdout.decode(errors='replace')[-2000:]}\n"
                                 f"{r.stderr.decode(errors='replace')[-3000:]}")
        return r

    def lsjson(self, *args):
        return json.loads(self.run("lsjson", *args).stdout)


@pytest.fixture(scope="module")
def rclone(wharfd, tmp_path_factory):
    d = tmp_path_factory.mktemp("rclone")
    env = wharfd.client_env()
    env.pop("AWS_CA_BUNDLE", None)
    env.update(rclone_remote_env(wharfd.endpoint, d),
               HOME=str(d), XDG_CACHE_HOME=str(d / "cache"))
    return Rclone(env)


BIG = 64 * MIB + 4099  # > upload cutoff 16M: a 5-part multipart upload
FILES = {
    "top.txt": b"top level\n",
    "empty": b"",
    "d1/a.txt": b"aaaa",
    "d1/d2/b.bin": None,      # random 70000 bytes
    "d1/d2/d3/deep.txt": b"deep",
    "ünïcødé ñame €.txt": "unicode name".encode(),
    "big/big.bin": None,      # BIG random bytes
}


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("rclone-src") / "src"
    for rel, content in FILES.items():
        if content is None:
            content = os.urandom(BIG if rel.startswith("big/") else 70000)
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(content)
    # Old, distinct mtimes: lsjson can only report them if the metadata rclone stored with each
    # object comes back (the server's LastModified would be "now").
    for i, p in enumerate(sorted(x for x in root.rglob("*") if x.is_file())):
        t = 1600000000 + 3600 * i + 0.25
        os.utime(p, (t, t))
    return root


def _rfc3339(ts):
    """Seconds since the epoch from rclone's RFC 3339 time (nanoseconds, Z or an offset)."""
    m = re.match(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)$", ts)
    assert m, ts
    tz = "+00:00" if m.group(3) == "Z" else m.group(3)
    base = datetime.datetime.fromisoformat(m.group(1) + tz).timestamp()
    return base + float("0" + (m.group(2) or ""))


def _local_files(root):
    return {str(p.relative_to(root)): p for p in root.rglob("*") if p.is_file()}


def test_rclone_copy_check_lsjson_delete_purge(wharfd, rclone, tree):
    bucket = unique_bucket("rclone")
    remote = f"w:{bucket}/tree"
    rclone.run("mkdir", f"w:{bucket}")
    rclone.run("copy", tree, remote)

    # check: sizes and MD5s on both sides (the multipart object's MD5 comes from the metadata
    # rclone stored with it, so this also proves user metadata round-trips).
    r = rclone.run("check", tree, remote)
    log = r.stderr.decode(errors="replace")
    assert "0 differences found" in log, log
    assert f"{len(FILES)} matching files" in log, log
    assert "hashes could not be checked" not in log, log

    # Per-file MD5 as rclone sees it, against our own.
    local = _local_files(tree)
    sums = {}
    for line in rclone.run("md5sum", remote).stdout.decode().splitlines():
        h, _, path = line.partition("  ")
        sums[path] = h
    assert sums == {rel: file_md5_hex(p) for rel, p in local.items()}

    # lsjson: every file with its size, and the modification time rclone stored.
    entries = [e for e in rclone.lsjson("-R", remote) if not e["IsDir"]]
    assert sorted(e["Path"] for e in entries) == sorted(local)
    for e in entries:
        st = local[e["Path"]].stat()
        assert e["Size"] == st.st_size, e
        assert abs(_rfc3339(e["ModTime"]) - st.st_mtime) < 1.0, (e, st.st_mtime)
    # The big file went up as a multipart upload of 16 MiB parts.
    head = S3Raw(wharfd.endpoint).request("HEAD", f"/{bucket}/tree/big/big.bin")
    assert head.status == 200 and head.headers["etag"].endswith('-5"'), head.headers

    # Same size, different bytes: check must notice (it compares hashes, not just sizes).
    p = f"{remote}/d1/a.txt"
    subprocess.run([RCLONE, "rcat", p], input=b"AAAA", env=rclone.env, check=True,
                   capture_output=True, timeout=60)
    r = rclone.run("check", tree, remote, check=False)
    log = r.stderr.decode(errors="replace")
    assert r.returncode != 0 and "1 differences found" in log, log

    # copy --checksum repairs it, then check passes again.
    rclone.run("copy", "--checksum", tree, remote)
    rclone.run("check", tree, remote)

    # delete removes the files under a path and keeps the rest.
    rclone.run("delete", f"{remote}/d1")
    left = sorted(e["Path"] for e in rclone.lsjson("-R", "--files-only", remote))
    assert left == sorted(k for k in local if not k.startswith("d1/"))

    # purge removes everything, the bucket included.
    rclone.run("purge", f"w:{bucket}")
    buckets = [e["Path"] for e in rclone.lsjson("w:")]
    assert bucket not in buckets


def test_rclone_download_matches(rclone, tree, tmp_path):
    """copy up, copy back down (the big object via ranged/multi-thread GETs), compare bytes."""
    bucket = unique_bucket("rclone-dl")
    rclone.run("mkdir", f"w:{bucket}")
    rclone.run("copy", tree / "big", f"w:{bucket}/big")
    rclone.run("copy", "--multi-thread-streams", "4", "--multi-thread-cutoff", "16M",
               f"w:{bucket}/big", tmp_path / "down")
    a = hashlib.md5((tree / "big/big.bin").read_bytes()).hexdigest()
    b = hashlib.md5((tmp_path / "down/big.bin").read_bytes()).hexdigest()
    assert a == b
    rclone.run("purge", f"w:{bucket}")
