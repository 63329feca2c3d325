"""The wharf CLI against a real wharfd: mb, ls, cp (both ways, rdma and http), stat, rm, rb,
error exits, and `wharf verify` (PASS over shm and tcp; FAIL, non-zero, when the server has
RDMA disabled)."""
import os
import subprocess
import uuid

import pytest

from wharfd import WharfServer, build_dir

ARMS = [
    pytest.param("ofi+shm", "rdma", id="shm"),
    pytest.param("ofi+tcp", "rdma", id="tcp"),
    pytest.param("none", "http", id="http"),
]


def wharf_bin():
    path = os.path.join(build_dir(), "wharf")
    if not os.path.exists(path):
        pytest.fail(f"{path} is missing: build the tree first (cmake --build)")
    return path


def env_for(srv, provider):
    env = srv.client_env()
    env["WHARF_PROVIDER"] = provider
    if provider != "ofi+shm":
        env.pop("WHARF_UNIX_SOCKET", None)
    return env


def wharf(env, *args, check=True, timeout=300, cwd=None):
    p = subprocess.run([wharf_bin(), *args], env=env, capture_output=True, text=True,
                       timeout=timeout, cwd=cwd)
    if check:
        assert p.returncode == 0, f"wharf {' '.join(args)} exited {p.returncode}:\n" \
                                  f"{p.stdout}\n{p.stderr}"
    return p


@pytest.mark.parametrize("provider,transport", ARMS)
def test_cli_round_trip(wharfd, tmp_path, provider, transport):
    env = env_for(wharfd, provider)
    bucket = f"cli-{uuid.uuid4().hex[:10]}"
    data = os.urandom(3 * (1 << 20) + 17)
    src = tmp_path / "src.bin"
    src.write_bytes(data)
    empty = tmp_path / "empty"
    empty.write_bytes(b"")

    assert f"make_bucket: s3://{bucket}" in wharf(env, "mb", f"s3://{bucket}").stdout
    assert bucket in wharf(env, "ls").stdout

    up = wharf(env, "cp", str(src), f"s3://{bucket}/dir/obj.bin", "--transport", transport)
    assert f"transport {transport}" in up.stdout, up.stdout
    assert "fell back" not in up.stdout
    wharf(env, "cp", str(empty), f"s3://{bucket}/dir/", "--transport", transport)

    ls = wharf(env, "ls", f"s3://{bucket}/dir/").stdout
    assert f" {len(data)} dir/obj.bin" in ls, ls
    assert " 0 dir/empty" in ls, ls

    st = wharf(env, "stat", f"s3://{bucket}/dir/obj.bin").stdout
    assert f"size: {len(data)}" in st, st
    assert "etag: \"" in st, st

    dst = tmp_path / "back.bin"
    down = wharf(env, "cp", f"s3://{bucket}/dir/obj.bin", str(dst), "--transport", transport)
    assert f"transport {transport}" in down.stdout, down.stdout
    assert dst.read_bytes() == data
    # into a directory: the key's base name
    outdir = tmp_path / "outdir"
    outdir.mkdir()
    wharf(env, "cp", f"s3://{bucket}/dir/empty", str(outdir), "--transport", transport)
    assert (outdir / "empty").read_bytes() == b""

    # not empty yet: rb fails with a message and a non-zero exit
    rb = wharf(env, "rb", f"s3://{bucket}", check=False)
    assert rb.returncode == 1 and "BucketNotEmpty" in rb.stderr, rb.stderr
    assert "delete: " in wharf(env, "rm", f"s3://{bucket}/dir/obj.bin").stdout
    wharf(env, "rm", f"s3://{bucket}/dir/empty")
    assert "dir/obj.bin" not in wharf(env, "ls", f"s3://{bucket}").stdout
    missing = wharf(env, "stat", f"s3://{bucket}/dir/obj.bin", check=False)
    assert missing.returncode == 1 and "404" in missing.stderr, missing.stderr
    wharf(env, "rb", f"s3://{bucket}")
    assert bucket not in wharf(env, "ls").stdout


def test_cli_errors(wharfd, tmp_path):
    env = env_for(wharfd, "none")
    p = wharf(env, "cp", "a", "b", check=False)
    assert p.returncode == 2 and "s3://" in p.stderr
    p = wharf(env, "bogus", check=False)
    assert p.returncode == 2 and "unknown command" in p.stderr
    p = wharf(env, "rb", "s3://no-such-bucket-cli", check=False)
    assert p.returncode == 1 and "NoSuchBucket" in p.stderr, p.stderr
    p = wharf(env, "cp", "s3://no-such-bucket-cli/k", str(tmp_path / "x"), check=False)
    assert p.returncode == 1 and not (tmp_path / "x").exists()
    p = wharf(env, "--fallback", "maybe", "ls", check=False)
    assert p.returncode == 2
    bad = dict(env, WHARF_SECRET_KEY="wrong-secret")
    p = wharf(bad, "ls", check=False)
    assert p.returncode == 1 and "403" in p.stderr, p.stderr
    # asked for RDMA with no provider: refused, not silently done over HTTP
    f = tmp_path / "f"
    f.write_bytes(b"x" * 100)
    wharf(env, "mb", "s3://cli-err-bucket")
    p = wharf(env, "cp", str(f), "s3://cli-err-bucket/f", "--transport", "rdma", check=False)
    assert p.returncode == 1 and "no data-path provider" in p.stderr, p.stderr
    p = wharf(env, "--fallback", "http", "cp", str(f), "s3://cli-err-bucket/f", "--transport",
              "rdma")
    assert "fell back to HTTP" in p.stdout, p.stdout
    wharf(env, "rm", "s3://cli-err-bucket/f")
    wharf(env, "rb", "s3://cli-err-bucket")


@pytest.mark.parametrize("provider", [pytest.param("ofi+shm", id="shm"),
                                      pytest.param("ofi+tcp", id="tcp")])
def test_cli_verify_passes(wharfd, provider):
    p = wharf(env_for(wharfd, provider), "verify", check=False)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "PASS" in p.stdout and "FAIL" not in p.stdout, p.stdout


@pytest.mark.parametrize("provider", [pytest.param("ofi+shm", id="shm"),
                                      pytest.param("ofi+tcp", id="tcp")])
def test_cli_verify_fails_without_rdma(provider):
    with WharfServer(providers="none") as srv:
        p = wharf(env_for(srv, provider), "verify", check=False)
    assert p.returncode != 0, p.stdout + p.stderr
    assert "FAIL: " in p.stdout and "PASS" not in p.stdout, p.stdout
    assert "declined" in p.stdout, p.stdout


def test_cli_verify_fails_over_http_only(wharfd):
    p = wharf(env_for(wharfd, "none"), "verify", check=False)
    assert p.returncode != 0 and "FAIL: " in p.stdout, p.stdout

