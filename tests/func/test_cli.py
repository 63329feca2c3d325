# SPDX-License-Identifier: Apache-2.0
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



def aws_only_env(srv):
    """The server's endpoint and keys in the standard AWS variables only: no WHARF_* at all."""
    env = {k: v for k, v in srv.client_env().items() if not k.startswith("WHARF_")}
    for k in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_REGION", "AWS_DEFAULT_REGION"):
        env.pop(k, None)
    env["AWS_ENDPOINT_URL_S3"] = srv.endpoint
    env["AWS_ENDPOINT_URL"] = "http://127.0.0.1:1"  # the S3-specific one comes first
    env["AWS_REGION"] = "us-east-1"
    env["WHARF_PROVIDER"] = "none"
    return env


def test_cli_credentials_from_aws_variables(wharfd, tmp_path):
    """With only AWS_* set, the CLI and the benchmark find the endpoint and the (non-default)
    keys there; a WHARF_* variable still wins over its AWS_* counterpart."""
    env = aws_only_env(wharfd)
    bucket = f"cli-aws-{uuid.uuid4().hex[:8]}"
    wharf(env, "mb", f"s3://{bucket}")
    assert bucket in wharf(env, "ls").stdout
    bad = dict(env, WHARF_SECRET_KEY="not-the-secret")
    p = wharf(bad, "ls", check=False)
    assert p.returncode != 0, p.stdout
    bench = os.path.join(build_dir(), "bench", "wharf_bench")
    p = subprocess.run([bench, "fetch", "--sizes", "4K", "--budget", "64K", "--concurrency", "1",
                        "--repeats", "1", "--no-limits", "--arms", "http", "--objects", "2",
                        "--bucket", bucket, "--results", str(tmp_path / "res")],
                       env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    wharf(env, "rb", f"s3://{bucket}", check=False)


def test_sizes_are_bytes_everywhere(wharfd, tmp_path):
    """One size parser: a bare number is bytes in wharfd, the CLI and the benchmark, and a
    malformed size is refused by each with the same description of the syntax."""
    syntax = "bytes, or with a suffix K, M, G, T"
    env = env_for(wharfd, "none")
    p = wharf(env, "--chunk-size", "1.5M", "ls", check=False)
    assert p.returncode == 2 and syntax in p.stderr, p.stderr
    bench = os.path.join(build_dir(), "bench", "wharf_bench")
    p = subprocess.run([bench, "fetch", "--budget", "1.5M"], env=env, capture_output=True,
                       text=True, timeout=30)
    assert p.returncode == 2 and syntax in p.stderr, p.stderr
    p = subprocess.run([os.path.join(build_dir(), "wharfd"), "serve", "--data",
                        str(tmp_path / "d"), "--rdma-mem", "1.5M"], capture_output=True,
                       text=True, timeout=30)
    assert p.returncode == 2 and syntax in p.stderr, p.stderr
    # the benchmark's --sizes 4096 is 4096 bytes (it used to mean 4096 MiB)
    results = tmp_path / "res"
    bucket = f"sizes-{uuid.uuid4().hex[:8]}"
    p = subprocess.run([bench, "fetch", "--sizes", "4096", "--budget", "65536", "--concurrency",
                        "1", "--repeats", "1", "--no-limits", "--arms", "http", "--objects", "2",
                        "--bucket", bucket, "--results", str(results)], env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    import glob
    import json
    (path,) = glob.glob(str(results / "b1-fetch-*.json"))
    with open(path) as f:
        run = json.load(f)
    assert run["params"]["sizes_bytes"] == [4096]
    sizes = {c["size_bytes"] for c in run["results"]["cells"]}
    assert sizes == {4096}


def test_cli_bench_is_its_own_program(wharfd):
    """There is one benchmark entry point, bench/wharf_bench; `wharf bench` says where it is."""
    env = env_for(wharfd, "none")
    for cmd, want in (("bench", "wharf_bench fetch"), ("report", "wharf_bench report")):
        p = wharf(env, cmd, "fetch", check=False)
        assert p.returncode == 2 and want in p.stderr, p.stderr
    bench = os.path.join(build_dir(), "bench", "wharf_bench")
    p = subprocess.run([bench, "fetch", "--help"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0 and "rdma-vs-http" in p.stdout, p.stdout + p.stderr
