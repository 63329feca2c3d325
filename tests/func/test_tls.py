# SPDX-License-Identifier: Apache-2.0
"""TLS on wharfd's TCP port (--tls-cert/--tls-key): aws, boto3, s3cmd, rclone, the wharf CLI
and libwharf over https against a real wharfd, a certificate made by a test CA; SIGHUP reloads
the pair; aws:SecureTransport is true over TLS; a bad pair is refused at start with its reason.
The RDMA path is unchanged: the signed request goes over TLS, the bytes over the fabric."""
import hashlib
import json
import os
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request

import boto3
import pytest
from botocore.config import Config

from wharfd import (ACCESS_KEY, REGION, SECRET_KEY, TestCert, WharfServer, build_dir,
                    rclone_remote_env, unique_bucket)

MIB = 1024 * 1024


@pytest.fixture(scope="module")
def cert(tmp_path_factory):
    return TestCert(str(tmp_path_factory.mktemp("tls")))


@pytest.fixture(scope="module")
def tls_srv(cert):
    srv = WharfServer(tls=cert, providers="shm,tcp")
    srv.start()
    yield srv
    srv.cleanup()


def s3(srv, verify):
    return boto3.client("s3", endpoint_url=srv.endpoint, aws_access_key_id=ACCESS_KEY,
                        aws_secret_access_key=SECRET_KEY, region_name=REGION, verify=verify,
                        config=Config(s3={"addressing_style": "path"},
                                      retries={"max_attempts": 1}))


def served_fingerprint(port, ca):
    ctx = ssl.create_default_context(cafile=ca)
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
        with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
            return hashlib.sha256(s.getpeercert(binary_form=True)).hexdigest()


def file_fingerprint(pem):
    der = ssl.PEM_cert_to_DER_cert(open(pem).read())
    return hashlib.sha256(der).hexdigest()


def test_https_only_and_verified(tls_srv, cert):
    assert tls_srv.endpoint.startswith("https://")
    ctx = ssl.create_default_context(cafile=cert.ca)
    with urllib.request.urlopen(tls_srv.endpoint + "/health", timeout=5, context=ctx) as r:
        assert r.status == 200
    # Without the CA the certificate does not verify.
    with pytest.raises(urllib.error.URLError) as e:
        urllib.request.urlopen(tls_srv.endpoint + "/health", timeout=5,
                               context=ssl.create_default_context())
    assert "CERTIFICATE_VERIFY_FAILED" in str(e.value)
    # A TLS port serves only TLS: plain HTTP gets no HTTP answer.
    with socket.create_connection(("127.0.0.1", tls_srv.port), timeout=5) as s:
        s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        s.settimeout(5)
        try:
            got = s.recv(100)
        except (ConnectionResetError, socket.timeout):
            got = b""
    assert not got.startswith(b"HTTP/"), got
    assert tls_srv.alive()
    # TLS 1.0/1.1 are refused.
    old = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    old.load_verify_locations(cert.ca)
    old.minimum_version = old.maximum_version = ssl.TLSVersion["TLSv1_1"]
    try:
        old.set_ciphers("ALL:@SECLEVEL=0")
    except ssl.SSLError:
        pass
    with pytest.raises((ssl.SSLError, ConnectionResetError)):
        with socket.create_connection(("127.0.0.1", tls_srv.port), timeout=5) as raw:
            old.wrap_socket(raw, server_hostname="127.0.0.1").close()


def test_boto3_over_https(tls_srv, cert):
    c = s3(tls_srv, cert.ca)
    b = unique_bucket("tls")
    c.create_bucket(Bucket=b)
    body = os.urandom(3 * MIB + 17)
    c.put_object(Bucket=b, Key="k", Body=body)
    assert c.get_object(Bucket=b, Key="k")["Body"].read() == body
    assert c.get_object(Bucket=b, Key="k", Range="bytes=5-99")["Body"].read() == body[5:100]
    # Multipart over TLS (boto3's transfer manager, 8 MiB parts).
    from boto3.s3.transfer import TransferConfig
    big = os.urandom(20 * MIB)
    import io
    c.upload_fileobj(io.BytesIO(big), b, "mp",
                     Config=TransferConfig(multipart_threshold=8 * MIB,
                                           multipart_chunksize=8 * MIB))
    assert c.head_object(Bucket=b, Key="mp")["ETag"].endswith('-3"')
    out = io.BytesIO()
    c.download_fileobj(b, "mp", out)
    assert out.getvalue() == big
    with pytest.raises(Exception) as e:
        s3(tls_srv, True).list_buckets()
    assert "CERTIFICATE_VERIFY_FAILED" in str(e.value) or "SSL" in str(e.value)


def test_aws_cli_over_https(tls_srv, cert, tmp_path):
    env = tls_srv.client_env()
    env.pop("WHARF_CA_BUNDLE", None)
    b = unique_bucket("tls")
    src = tmp_path / "f"
    src.write_bytes(os.urandom(MIB + 3))
    aws = ["aws", "--endpoint-url", tls_srv.endpoint, "--ca-bundle", cert.ca]
    for args in (["s3", "mb", f"s3://{b}"], ["s3", "cp", str(src), f"s3://{b}/f"],
                 ["s3", "cp", f"s3://{b}/f", str(tmp_path / "g")]):
        r = subprocess.run(aws + args, env=env, capture_output=True, timeout=120)
        assert r.returncode == 0, r.stderr.decode()
    assert (tmp_path / "g").read_bytes() == src.read_bytes()
    r = subprocess.run(["aws", "--endpoint-url", tls_srv.endpoint, "s3", "ls"], env=env,
                       capture_output=True, timeout=120)
    assert r.returncode != 0 and b"CERTIFICATE_VERIFY_FAILED" in r.stderr, r.stderr


def test_s3cmd_over_https(tls_srv, cert, tmp_path):
    host = f"127.0.0.1:{tls_srv.port}"
    cfg = tmp_path / "s3cfg"
    cfg.write_text(f"""[default]
access_key = {ACCESS_KEY}
secret_key = {SECRET_KEY}
host_base = {host}
host_bucket = {host}
use_https = True
check_ssl_certificate = True
ca_certs_file = {cert.ca}
signature_v2 = False
bucket_location = us-east-1
progress_meter = False
""")
    env = tls_srv.client_env()
    env["HOME"] = str(tmp_path)
    b = unique_bucket("tls")
    src = tmp_path / "f"
    src.write_bytes(os.urandom(2 * MIB))
    for args in (["mb", f"s3://{b}"], ["put", str(src), f"s3://{b}/f"],
                 ["get", f"s3://{b}/f", str(tmp_path / "g")]):
        r = subprocess.run(["s3cmd", "-c", str(cfg)] + args, env=env, capture_output=True,
                           timeout=120)
        assert r.returncode == 0, r.stdout.decode() + r.stderr.decode()
    assert (tmp_path / "g").read_bytes() == src.read_bytes()


def test_rclone_over_https(tls_srv, cert, tmp_path):
    env = tls_srv.client_env()
    env.pop("AWS_CA_BUNDLE", None)
    env.update(rclone_remote_env(tls_srv.endpoint, tmp_path))
    env["HOME"] = str(tmp_path)
    b = unique_bucket("tls")
    d = tmp_path / "src"
    d.mkdir()
    for i in range(3):
        (d / f"f{i}").write_bytes(os.urandom(MIB + i))
    base = ["rclone", "--ca-cert", cert.ca, "--retries", "1", "--low-level-retries", "1"]
    for args in (["mkdir", f"w:{b}"], ["copy", str(d), f"w:{b}/d"],
                 ["check", str(d), f"w:{b}/d"]):
        r = subprocess.run(base + args, env=env, capture_output=True, timeout=120)
        assert r.returncode == 0, r.stderr.decode()[-2000:]


def wharf_cli(srv, *args, ca=None, provider="none"):
    env = srv.client_env()
    env.pop("WHARF_CA_BUNDLE", None)
    cmd = [os.path.join(build_dir(), "wharf"), "--endpoint", srv.endpoint, "--provider",
           provider] + (["--ca-bundle", ca] if ca else []) + list(args)
    return subprocess.run(cmd, env=env, capture_output=True, timeout=120)


def test_libwharf_cli_over_https_http_and_rdma(tls_srv, cert, tmp_path):
    b = unique_bucket("tls")
    src = tmp_path / "f"
    src.write_bytes(os.urandom(5 * MIB + 1))
    r = wharf_cli(tls_srv, "mb", f"s3://{b}", ca=cert.ca)
    assert r.returncode == 0, r.stderr.decode()
    r = wharf_cli(tls_srv, "cp", str(src), f"s3://{b}/f", ca=cert.ca)
    assert r.returncode == 0, r.stderr.decode()
    r = wharf_cli(tls_srv, "cp", f"s3://{b}/f", str(tmp_path / "g"), ca=cert.ca)
    assert r.returncode == 0, r.stderr.decode()
    assert (tmp_path / "g").read_bytes() == src.read_bytes()
    # The signed request over TLS (TCP, no Unix socket), the bytes over the fabric (ofi+tcp):
    # verify checks the server counted them as RDMA.
    r = wharf_cli(tls_srv, "--unix-socket=", "verify", "--size", "8M", ca=cert.ca,
                  provider="ofi+tcp")
    assert r.returncode == 0 and b"PASS" in r.stdout, r.stdout.decode() + r.stderr.decode()
    # WHARF_CA_BUNDLE is read like --ca-bundle; without any CA the handshake fails by name.
    env = tls_srv.client_env()
    cmd = [os.path.join(build_dir(), "wharf"), "--provider", "none", "ls", f"s3://{b}"]
    r = subprocess.run(cmd, env=env, capture_output=True, timeout=60)
    assert r.returncode == 0 and b"f" in r.stdout, r.stderr.decode()
    # Over TCP (no Unix socket, which is plain HTTP on the host) and with no CA: refused.
    r = wharf_cli(tls_srv, "--unix-socket=", "ls", f"s3://{b}")
    assert r.returncode != 0
    assert b"certificate" in r.stderr.lower() or b"ssl" in r.stderr.lower(), r.stderr


def test_secure_transport_condition(cert, tmp_path):
    """A policy that allows anonymous reads only over TLS: refused over plain HTTP, allowed
    over HTTPS on the same data directory."""
    data = str(tmp_path / "d")
    os.makedirs(data)
    doc = json.dumps({"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
        "Resource": "arn:aws:s3:::sec/*",
        "Condition": {"Bool": {"aws:SecureTransport": "true"}}}]})
    plain = WharfServer(data_dir=data)
    plain.start()
    try:
        c = s3(plain, None)
        c.create_bucket(Bucket="sec")
        c.put_object(Bucket="sec", Key="k", Body=b"secret")
        c.put_bucket_policy(Bucket="sec", Policy=doc)
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(plain.endpoint + "/sec/k", timeout=5)
        assert e.value.code == 403
    finally:
        plain.stop()
    tls = WharfServer(data_dir=data, tls=cert)
    tls.start()
    try:
        ctx = ssl.create_default_context(cafile=cert.ca)
        with urllib.request.urlopen(tls.endpoint + "/sec/k", timeout=5, context=ctx) as r:
            assert r.read() == b"secret"
    finally:
        tls.stop()


def test_sighup_reloads_and_a_bad_pair_keeps_the_old(tmp_path):
    cert = TestCert(str(tmp_path / "c"))
    srv = WharfServer(tls=cert)
    srv.start()
    try:
        first = served_fingerprint(srv.port, cert.ca)
        assert first == file_fingerprint(cert.cert)
        cert.issue()  # a new key and certificate in place
        assert file_fingerprint(cert.cert) != first
        srv.proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and served_fingerprint(srv.port, cert.ca) == first:
            time.sleep(0.05)
        second = served_fingerprint(srv.port, cert.ca)
        assert second == file_fingerprint(cert.cert) != first
        # A key that does not belong to the certificate: refused, the pair in use stays.
        other = TestCert(str(tmp_path / "o"))
        with open(other.key) as f, open(cert.key, "w") as g:
            g.write(f.read())
        srv.proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and "TLS reload failed" not in srv.log_tail():
            time.sleep(0.05)
        assert "does not belong to the certificate" in srv.log_tail()
        assert served_fingerprint(srv.port, cert.ca) == second
        assert srv.alive()
    finally:
        srv.cleanup()


@pytest.mark.parametrize("make_args,message", [
    (lambda c: ["--tls-cert", c.cert], "TLS needs both --tls-cert FILE and --tls-key FILE"),
    (lambda c: ["--tls-cert", c.cert, "--tls-key", "/nonexistent/key.pem"],
     "cannot read the TLS key /nonexistent/key.pem"),
    (lambda c: ["--tls-cert", c.key, "--tls-key", c.key], "holds no usable PEM certificate"),
    (lambda c: ["--tls-cert", c.ca, "--tls-key", c.key], "does not belong to the certificate"),
])
def test_bad_pairs_refused_at_start(cert, make_args, message):
    srv = WharfServer(extra_args=make_args(cert))
    try:
        with pytest.raises(RuntimeError):
            srv.start(timeout=5)
        assert message in srv.log_tail(), srv.log_tail()
    finally:
        srv.cleanup()


@pytest.mark.skipif(**__import__("wharfd").CTYPES_UNDER_ASAN)
def test_python_client_over_https(tls_srv, cert, monkeypatch):
    import wharf
    b = unique_bucket("tlspy")
    kw = dict(endpoint=tls_srv.endpoint, access_key=ACCESS_KEY, secret_key=SECRET_KEY)
    with wharf.Client(**kw, ca_bundle=cert.ca) as c:
        c.create_bucket(b)
        body = os.urandom(3 * MIB + 5)
        c.put(b, "k", body, transport="http")
        assert bytes(c.get(b, "k", transport="http")) == body
    # WHARF_CA_BUNDLE / AWS_CA_BUNDLE reach wharf.config like the C side's base/env.h.
    from wharf import config
    monkeypatch.setenv("WHARF_ENDPOINT", tls_srv.endpoint)
    monkeypatch.setenv("WHARF_ACCESS_KEY", ACCESS_KEY)
    monkeypatch.setenv("WHARF_SECRET_KEY", SECRET_KEY)
    monkeypatch.delenv("WHARF_CA_BUNDLE", raising=False)
    monkeypatch.setenv("AWS_CA_BUNDLE", cert.ca)
    with config.client_from_env() as c:
        assert b in c.list_buckets()
    monkeypatch.delenv("AWS_CA_BUNDLE")
    with pytest.raises(wharf.WharfError) as e:
        with wharf.Client(**kw) as c:
            c.list_buckets()
    assert "certificate" in str(e.value).lower() or "ssl" in str(e.value).lower()
