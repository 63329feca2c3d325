# SPDX-License-Identifier: Apache-2.0
"""SIGTERM under load (docs/operations.md, Reload and signals): wharfd stops accepting (a new
connection is refused), lets the requests in flight finish within --shutdown-grace, and exits
0; every PUT it acknowledged, over HTTP (boto3, and a raw PUT half-sent when the signal came)
or over RDMA (libwharf's Python package, ofi+shm), is readable after a restart."""
import hashlib
import os
import signal
import socket
import threading
import time

import boto3
import pytest
from botocore.config import Config

from s3raw import S3Raw
from wharfd import ACCESS_KEY, CTYPES_UNDER_ASAN, REGION, SECRET_KEY, WharfServer, unique_bucket

GRACE = 8


def body(key, size):
    seed = hashlib.sha256(key.encode()).digest()
    return (seed * (size // len(seed) + 1))[:size]


@pytest.mark.skipif(**CTYPES_UNDER_ASAN)
def test_sigterm_drains_and_loses_no_acknowledged_put():
    import wharf
    srv = WharfServer(extra_args=["--shutdown-grace", str(GRACE)], log_level="info")
    srv.start()
    acked = {}  # key -> sha256 of what was acknowledged
    lock = threading.Lock()
    stop = threading.Event()
    errors = []
    try:
        s3 = boto3.client("s3", endpoint_url=srv.endpoint, aws_access_key_id=ACCESS_KEY,
                          aws_secret_access_key=SECRET_KEY, region_name=REGION,
                          config=Config(retries={"max_attempts": 1}))
        b = unique_bucket("drain")
        s3.create_bucket(Bucket=b)
        # A PUT in flight when the signal comes: its headers and half its body sent.
        half_data = body("half", 4 << 20)
        raw = S3Raw(srv.endpoint)
        half = raw.open_socket("PUT", f"/{b}/half", content_length=len(half_data))
        half.sendall(half_data[:len(half_data) // 2])

        def http_worker(n):
            c = boto3.client("s3", endpoint_url=srv.endpoint, aws_access_key_id=ACCESS_KEY,
                             aws_secret_access_key=SECRET_KEY, region_name=REGION,
                             config=Config(retries={"max_attempts": 1}))
            for i in range(10000):
                if stop.is_set():
                    return
                key = f"http-{n}-{i}"
                data = body(key, (256 << 10) + i)
                try:
                    c.put_object(Bucket=b, Key=key, Body=data)
                except Exception as e:  # refused or reset once the server stops: not acked
                    errors.append(repr(e))
                    return
                with lock:
                    acked[key] = hashlib.sha256(data).hexdigest()

        def rdma_worker(n):
            cl = wharf.Client(srv.endpoint, ACCESS_KEY, SECRET_KEY, region=REGION,
                              provider="ofi+shm", unix_socket=srv.unix_socket)
            try:
                for i in range(10000):
                    if stop.is_set():
                        return
                    key = f"rdma-{n}-{i}"
                    data = body(key, (2 << 20) + i)
                    try:
                        cl.put(b, key, data, transport="rdma")
                    except Exception as e:
                        errors.append(repr(e))
                        return
                    with lock:
                        acked[key] = hashlib.sha256(data).hexdigest()
            finally:
                cl.close()

        threads = [threading.Thread(target=http_worker, args=(n,)) for n in range(3)]
        threads += [threading.Thread(target=rdma_worker, args=(n,)) for n in range(2)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with lock:
                kinds = {k.split("-")[0] for k in acked}
                if len(acked) >= 20 and kinds == {"http", "rdma"}:
                    break
            time.sleep(0.05)
        assert {k.split("-")[0] for k in acked} == {"http", "rdma"}, (acked.keys(), errors)

        t0 = time.monotonic()
        srv.proc.send_signal(signal.SIGTERM)
        time.sleep(0.5)
        # Stopped accepting: a new connection is refused at once.
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", srv.port), timeout=2).close()
        # The request in flight still completes and is acknowledged.
        half.sendall(half_data[len(half_data) // 2:])
        half.settimeout(GRACE)
        reply = b""
        while b"\r\n\r\n" not in reply:
            chunk = half.recv(4096)
            if not chunk:
                break
            reply += chunk
        half.close()
        assert reply.startswith(b"HTTP/1.1 200"), reply[:200]
        acked["half"] = hashlib.sha256(half_data).hexdigest()
        rc = srv.proc.wait(timeout=GRACE + 15)
        took = time.monotonic() - t0
        stop.set()
        for t in threads:
            t.join(30)
            assert not t.is_alive()
        assert rc == 0, srv.log_tail()
        assert took < GRACE + 5 + 2, took  # the grace, the handlers' 5 s, and slack
        srv.stop()

        # Every acknowledged PUT is there after a restart, byte for byte.
        srv.start()
        s3 = boto3.client("s3", endpoint_url=srv.endpoint, aws_access_key_id=ACCESS_KEY,
                          aws_secret_access_key=SECRET_KEY, region_name=REGION)
        for key, digest in sorted(acked.items()):
            got = s3.get_object(Bucket=b, Key=key)["Body"].read()
            assert hashlib.sha256(got).hexdigest() == digest, key
        print(f"acknowledged {len(acked)} PUTs, exit after SIGTERM in {took:.2f}s")
    finally:
        stop.set()
        srv.stop()
        srv.cleanup()


def test_storage_sigterm_drains_a_chunk_put_in_flight():
    """A storage server given SIGTERM with a chunk PUT half-sent refuses new connections,
    answers that PUT 200 once its body arrives, exits 0 within the grace, and has the chunk
    after a restart."""
    from cluster import Cluster, crc64nvme, new_chunk_id, sign_itoken, target_of
    with Cluster(storage=1, gateways=1, replicas=1,
                 storage_args=["--shutdown-grace", str(GRACE)]) as cl:
        st = cl.storage[0]
        chunk = new_chunk_id()
        data = body(chunk, 3 << 20)
        tok = sign_itoken("put", chunk, 0, len(data), target=target_of(st), crc=crc64nvme(data))
        sock = socket.create_connection(("127.0.0.1", st.port), timeout=GRACE)
        sock.sendall((f"PUT /chunk/{chunk} HTTP/1.1\r\nHost: 127.0.0.1:{st.port}\r\n"
                      f"Content-Length: {len(data)}\r\n"
                      f"x-wharf-itoken: {tok}\r\n\r\n")
                     .encode())
        sock.sendall(data[:len(data) // 2])
        time.sleep(0.3)
        t0 = time.monotonic()
        st.proc.send_signal(signal.SIGTERM)
        time.sleep(0.5)
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", st.port), timeout=2).close()
        sock.sendall(data[len(data) // 2:])
        reply = b""
        while b"\r\n\r\n" not in reply:
            got = sock.recv(4096)
            if not got:
                break
            reply += got
        sock.close()
        assert reply.startswith(b"HTTP/1.1 200"), reply[:200]
        rc = st.proc.wait(timeout=GRACE + 15)
        took = time.monotonic() - t0
        assert rc == 0, st.log_tail()
        assert took < GRACE + 2, took
        st.stop()
        st.start()
        import urllib.request
        req = urllib.request.Request(f"{st.endpoint}/chunk/{chunk}", headers={
            "x-wharf-itoken": sign_itoken("get", chunk, 0, len(data), target=target_of(st))})
        with urllib.request.urlopen(req, timeout=10) as r:
            assert r.read() == data
