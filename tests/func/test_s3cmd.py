# SPDX-License-Identifier: Apache-2.0
"""Debian's s3cmd 2.3 against a real wharfd (path-style, SigV4, plain HTTP)."""
import os
import re
import subprocess

import pytest

from s3raw import S3Raw
from wharfd import ACCESS_KEY, SECRET_KEY, md5_hex, multipart_etag, unique_bucket

S3CMD = "/usr/bin/s3cmd"
MIB = 1024 * 1024


class S3cmd:
    def __init__(self, cfg, env):
        self.cfg = cfg
        self.env = env

    def run(self, *args, check=True, timeout=180):
        cmd = [S3CMD, "-c", str(self.cfg)] + [str(a) for a in args]
        r = subprocess.run(cmd, env=self.env, capture_output=True, timeout=timeout)
        if check and r.returncode != 0:
            raise AssertionError(f"{' '.join(cmd)} failed ({r.returncode}):\n"
                                 f"{r.stdout.decode(errors='replace')[-2000:]}\n"
                                 f"{r.stderr.decode(errors='replace')[-3000:]}")
        return r

    def out(self, *args):
        return self.run(*args).stdout.decode()

    def fails(self, *args):
        r = self.run(*args, check=False)
        assert r.returncode != 0, f"s3cmd {args} should have failed: {r.stdout[-500:]!r}"
        return r.stdout.decode(errors="replace") + r.stderr.decode(errors="replace")


@pytest.fixture(scope="module")
def s3cmd(wharfd, tmp_path_factory):
    d = tmp_path_factory.mktemp("s3cmd")
    host = f"127.0.0.1:{wharfd.port}"
    cfg = d / "s3cfg"
    cfg.write_text(f"""[default]
access_key = {ACCESS_KEY}
secret_key = {SECRET_KEY}
host_base = {host}
host_bucket = {host}
use_https = False
signature_v2 = False
bucket_location = us-east-1
check_ssl_certificate = False
progress_meter = False
""")
    env = wharfd.client_env()
    env["HOME"] = str(d)  # no ~/.s3cfg of the user's leaks in
    return S3cmd(cfg, env)


@pytest.fixture()
def bucket(s3cmd):
    name = unique_bucket("s3cmd")
    s3cmd.run("mb", f"s3://{name}")
    yield name
    s3cmd.run("rb", "--recursive", "--force", f"s3://{name}", check=False)


def _ls_keys(out, bucket):
    """Keys from `s3cmd ls -r` output (last column is the URL)."""
    keys = []
    pre = f"s3://{bucket}/"
    for line in out.splitlines():
        i = line.find(pre)
        if i >= 0:
            keys.append(line[i + len(pre):])
    return keys


def test_s3cmd_mb_put_ls_la_get_info_del_rb(s3cmd, tmp_path):
    name = unique_bucket("s3cmd-cycle")
    assert f"Bucket 's3://{name}/' created" in s3cmd.out("mb", f"s3://{name}")
    assert f"s3://{name}" in s3cmd.out("ls")
    data = os.urandom(12_345)
    src = tmp_path / "small.bin"
    src.write_bytes(data)
    s3cmd.run("put", "--mime-type=application/x-s3cmd-test", src, f"s3://{name}/d/small.bin")
    s3cmd.run("put", src, f"s3://{name}/top ü.bin")
    ls = s3cmd.out("ls", f"s3://{name}/d/")
    assert f"s3://{name}/d/small.bin" in ls and " 12345 " in ls, ls
    assert sorted(_ls_keys(s3cmd.out("ls", "-r", f"s3://{name}"), name)) == \
        ["d/small.bin", "top ü.bin"]
    la = s3cmd.out("la")
    assert f"s3://{name}/top ü.bin" in la and f"s3://{name}/d/" in la, la
    info = s3cmd.out("info", f"s3://{name}/d/small.bin")
    assert re.search(r"File size:\s+12345\b", info), info
    assert re.search(rf"MD5 sum:\s+{md5_hex(data)}", info), info
    assert "application/x-s3cmd-test" in info, info
    dst = tmp_path / "back.bin"
    s3cmd.run("get", f"s3://{name}/d/small.bin", dst)
    assert dst.read_bytes() == data
    out = s3cmd.fails("get", f"s3://{name}/missing", tmp_path / "missing")
    assert "404" in out or "does not exist" in out, out
    out = s3cmd.fails("rb", f"s3://{name}")
    assert "BucketNotEmpty" in out, out
    s3cmd.run("del", f"s3://{name}/d/small.bin")
    s3cmd.run("del", f"s3://{name}/top ü.bin")
    assert _ls_keys(s3cmd.out("ls", "-r", f"s3://{name}"), name) == []
    assert f"Bucket 's3://{name}/' removed" in s3cmd.out("rb", f"s3://{name}")
    assert f"s3://{name}" not in s3cmd.out("ls")


def test_s3cmd_multipart_put_get(wharfd, s3cmd, bucket, tmp_path):
    size = 16 * MIB + 1234  # 4 parts of 5 MiB, the last short
    data = os.urandom(size)
    src = tmp_path / "big.bin"
    src.write_bytes(data)
    s3cmd.run("put", "--multipart-chunk-size-mb=5", src, f"s3://{bucket}/big.bin")
    # The ETag proves it went up as 4 parts of 5 MiB (progress output is off).
    head = S3Raw(wharfd.endpoint).request("HEAD", f"/{bucket}/big.bin")
    assert head.headers["etag"] == f'"{multipart_etag(data, 5 * MIB)}"', head.headers
    assert head.headers["etag"].endswith('-4"')
    # s3cmd lists the whole-file md5 it stored in its attrs metadata.
    ls = s3cmd.out("ls", "--list-md5", f"s3://{bucket}/big.bin")
    assert md5_hex(data) in ls, ls
    # s3cmd keeps the whole-file md5 in x-amz-meta-s3cmd-attrs and shows it in info.
    info = s3cmd.out("info", f"s3://{bucket}/big.bin")
    assert re.search(rf"File size:\s+{size}\b", info), info
    assert md5_hex(data) in info, info
    dst = tmp_path / "back.bin"
    s3cmd.run("get", f"s3://{bucket}/big.bin", dst)  # s3cmd checks the md5 too
    assert dst.stat().st_size == size and dst.read_bytes() == data


def test_s3cmd_sync(s3cmd, bucket, tmp_path):
    up = tmp_path / "up"
    files = {"a.txt": b"alpha", "d1/b.bin": os.urandom(2000), "d1/d2/c c.txt": b"cc",
             "d1/d2/ü.txt": "ü".encode()}
    for rel, content in files.items():
        (up / rel).parent.mkdir(parents=True, exist_ok=True)
        (up / rel).write_bytes(content)
    s3cmd.run("sync", f"{up}/", f"s3://{bucket}/s/")
    assert sorted(_ls_keys(s3cmd.out("ls", "-r", f"s3://{bucket}"), bucket)) == \
        sorted(f"s/{k}" for k in files)
    # Unchanged tree: nothing to upload (s3cmd compares size and md5 with the listing).
    out = s3cmd.out("sync", f"{up}/", f"s3://{bucket}/s/")
    assert "upload:" not in out, out
    (up / "a.txt").write_bytes(b"ALPHA")  # same size, different md5
    (up / "d1/b.bin").unlink()
    out = s3cmd.out("sync", "--delete-removed", f"{up}/", f"s3://{bucket}/s/")
    assert "a.txt" in out and "delete:" in out, out
    down = tmp_path / "down"
    down.mkdir()
    s3cmd.run("sync", f"s3://{bucket}/s/", f"{down}/")
    got = sorted(str(p.relative_to(down)) for p in down.rglob("*") if p.is_file())
    want = sorted(str(p.relative_to(up)) for p in up.rglob("*") if p.is_file())
    assert got == want
    for rel in want:
        assert (down / rel).read_bytes() == (up / rel).read_bytes(), rel
