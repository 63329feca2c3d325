# SPDX-License-Identifier: Apache-2.0
"""A cluster whose every member serves TLS: the gateway's S3 port is HTTPS, the storage
servers' internal API is HTTPS only, and the gateway dials them over HTTPS verifying their
certificates against the cluster's CA (--cluster-ca). RDMA bytes still move between storage
servers and the client, with the signed request over TLS."""
import os
import socket
import ssl
import subprocess

import pytest

from cluster import Cluster
from wharfd import TestCert, build_dir, unique_bucket

MIB = 1024 * 1024


@pytest.fixture(scope="module")
def tls_cluster(tmp_path_factory):
    cert = TestCert(str(tmp_path_factory.mktemp("ctls")))
    with Cluster(storage=2, replicas=2, chunk_size=1 * MIB, tls=cert) as c:
        yield c


def speaks_plain_http(port):
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        s.settimeout(5)
        try:
            return s.recv(100).startswith(b"HTTP/")
        except (ConnectionResetError, socket.timeout):
            return False


def test_every_member_serves_only_tls(tls_cluster):
    assert tls_cluster.gateway.endpoint.startswith("https://")
    for m in tls_cluster.storage + tls_cluster.gateways:
        assert not speaks_plain_http(m.port), m.role
        ctx = ssl.create_default_context(cafile=tls_cluster.tls.ca)
        with socket.create_connection(("127.0.0.1", m.port), timeout=5) as raw:
            with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
                assert s.version() in ("TLSv1.2", "TLSv1.3")


def test_put_get_through_tls_storage(tls_cluster):
    s3 = tls_cluster.boto3()
    b = unique_bucket("ctls")
    s3.create_bucket(Bucket=b)
    body = os.urandom(5 * MIB + 123)  # six chunks on two storage servers, over HTTPS
    s3.put_object(Bucket=b, Key="k", Body=body)
    assert s3.get_object(Bucket=b, Key="k")["Body"].read() == body
    assert s3.get_object(Bucket=b, Key="k", Range="bytes=1048570-2097160")["Body"].read() \
        == body[1048570:2097161]
    assert tls_cluster.nodes_up() == 2
    assert sum(len(v) for v in tls_cluster.chunk_files().values()) >= 12


def test_rdma_with_the_request_over_tls(tls_cluster, tmp_path):
    """The wharf CLI over https to the gateway, ofi+tcp: the storage servers move the bytes
    (their counters say so) while every HTTP hop is TLS."""
    env = tls_cluster.client_env()
    b = unique_bucket("ctls")
    src = tmp_path / "f"
    src.write_bytes(os.urandom(6 * MIB + 7))
    base = [os.path.join(build_dir(), "wharf"), "--endpoint", tls_cluster.gateway.endpoint,
            "--unix-socket=", "--provider", "ofi+tcp", "--ca-bundle", tls_cluster.tls.ca]
    w0 = tls_cluster.storage_sum("wharf_rdma_write_bytes_total")
    r0 = tls_cluster.storage_sum("wharf_rdma_read_bytes_total")
    for args in (["mb", f"s3://{b}"],
                 ["cp", "--transport", "rdma", str(src), f"s3://{b}/f"],
                 ["cp", "--transport", "rdma", f"s3://{b}/f", str(tmp_path / "g")]):
        r = subprocess.run(base + args, env=env, capture_output=True, timeout=120)
        assert r.returncode == 0, r.stdout.decode() + r.stderr.decode()
    assert (tmp_path / "g").read_bytes() == src.read_bytes()
    n = src.stat().st_size
    assert tls_cluster.storage_sum("wharf_rdma_write_bytes_total") - w0 >= n
    assert tls_cluster.storage_sum("wharf_rdma_read_bytes_total") - r0 >= n


def test_gateway_refuses_storage_without_the_ca(tmp_path):
    """A gateway that does not trust the storage servers' CA cannot use them: PUT fails
    with 503, and nothing is acknowledged."""
    cert = TestCert(str(tmp_path / "a"))
    other = TestCert(str(tmp_path / "b"))
    c = Cluster(storage=1, replicas=1, tls=cert)
    c.start()
    try:
        g = c.gateways[0]
        # A second gateway trusting another CA.
        from wharfd import WharfServer
        d = str(tmp_path / "g2")
        os.makedirs(d)
        g2 = WharfServer(data_dir=d, role="gateway", env=c.env, tls=cert,
                         extra_args=["--meta", c.meta_url, "--replicas", "1",
                                     "--cluster-ca", other.ca])
        g2.start()
        try:
            import boto3
            from botocore.config import Config
            from wharfd import ACCESS_KEY, REGION, SECRET_KEY
            s3 = boto3.client("s3", endpoint_url=g2.endpoint, aws_access_key_id=ACCESS_KEY,
                              aws_secret_access_key=SECRET_KEY, region_name=REGION,
                              verify=cert.ca, config=Config(retries={"max_attempts": 1}))
            b = unique_bucket("ctls")
            s3.create_bucket(Bucket=b)
            with pytest.raises(Exception) as e:
                s3.put_object(Bucket=b, Key="k", Body=b"x" * 1000)
            assert "503" in str(e.value) or "ServiceUnavailable" in str(e.value) \
                or "SlowDown" in str(e.value), e.value
            assert "certificate" in g2.log_tail(20000).lower() or \
                "ssl" in g2.log_tail(20000).lower()
            with pytest.raises(Exception):
                s3.head_object(Bucket=b, Key="k")
        finally:
            g2.cleanup()
        assert g.alive()
    finally:
        c.cleanup()
