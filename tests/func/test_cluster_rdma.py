# SPDX-License-Identifier: Apache-2.0
"""RDMA through a cluster: the gateway authenticates and resolves chunks, the storage servers
move the bytes into and out of the client's memory themselves (ofi+shm over the gateway's
Unix socket, ofi+tcp over TCP), and the witness is the sum of the storage servers' counters:
at least 0.99 of every transfer, while the gateway's own RDMA counters stay at zero. Bytes are
compared with what was written, whole and ranged, also across the RDMA/HTTP paths (an RDMA
PUT read back with boto3 and the other way round). With the servers in network namespaces of
their own, ofi+tcp crosses a bridge (skipped, with the reason, where namespaces are
refused)."""
import hashlib
import os

import pytest

import wharf
from cluster import Cluster, netns_available
from wharfd import ACCESS_KEY, REGION, SECRET_KEY, unique_bucket

CHUNK = 1 << 20
MIB = 1 << 20
ARMS = ["ofi+shm", "ofi+tcp"]


def client_for(cl, provider, **kw):
    g = cl.gateway
    return wharf.Client(g.endpoint, ACCESS_KEY, SECRET_KEY, region=REGION, provider=provider,
                        unix_socket=os.path.join(g.data_dir, "wharfd.sock")
                        if provider == "ofi+shm" else None, **kw)


def chunk_etag(data, chunk):
    digests = b"".join(hashlib.md5(data[i:i + chunk]).digest()
                       for i in range(0, len(data), chunk))
    return f"{hashlib.md5(digests).hexdigest()}-{(len(data) + chunk - 1) // chunk}"


def witness(cl):
    return {"st_read": cl.storage_sum("wharf_rdma_read_bytes_total"),
            "st_write": cl.storage_sum("wharf_rdma_write_bytes_total"),
            "gw_read": cl.gateway_sum("wharf_rdma_read_bytes_total"),
            "gw_write": cl.gateway_sum("wharf_rdma_write_bytes_total")}


@pytest.fixture(scope="module")
def cl():
    c = Cluster(storage=3, replicas=2, chunk_size=CHUNK, providers="shm,tcp")
    c.start()
    yield c
    rcs = c.stop()
    c.cleanup()
    assert rcs == [0] * len(rcs), f"members exited with {rcs} on SIGTERM"


@pytest.mark.parametrize("provider", ARMS)
def test_rdma_round_trip_witnessed_by_storage(cl, provider):
    c = client_for(cl, provider, multipart_threshold=64 * MIB)
    b = unique_bucket("clr")
    c.create_bucket(b)
    data = os.urandom(5 * MIB + 123)
    w0 = witness(cl)
    rep = c.put(b, "obj", data, transport="rdma")
    assert rep.transport == "rdma" and not rep.fell_back, rep
    w1 = witness(cl)
    # each of the 2 replicas pulled every byte
    assert w1["st_write"] - w0["st_write"] >= 0.99 * 2 * len(data), (w0, w1)
    assert rep.etag.strip('"') == chunk_etag(data, CHUNK), rep.etag
    got = c.get(b, "obj", transport="rdma")
    rep = c.last_report
    assert got == data
    assert rep.transport == "rdma" and not rep.fell_back, rep
    w2 = witness(cl)
    assert w2["st_read"] - w1["st_read"] >= 0.99 * len(data), (w1, w2)
    assert w2["gw_read"] == 0 and w2["gw_write"] == 0, w2
    # ranges: inside a chunk, across chunk boundaries, the tail
    for off, n in [(7, 100), (CHUNK - 5, 10), (CHUNK // 2, 3 * CHUNK), (len(data) - 9, 9)]:
        assert c.get(b, "obj", offset=off, length=n, transport="rdma") == data[off:off + n]
    c.close()


@pytest.mark.parametrize("provider", ARMS)
def test_rdma_and_http_paths_agree(cl, provider):
    c = client_for(cl, provider)
    s3 = cl.boto3()
    b = unique_bucket("clx")
    c.create_bucket(b)
    a = os.urandom(3 * MIB + 1)
    c.put(b, "by-rdma", a, transport="rdma")
    assert s3.get_object(Bucket=b, Key="by-rdma")["Body"].read() == a
    h = os.urandom(2 * MIB + 7)
    s3.put_object(Bucket=b, Key="by-http", Body=h)
    assert c.get(b, "by-http", transport="rdma") == h
    c.put(b, "empty", b"", transport="rdma")
    assert s3.get_object(Bucket=b, Key="empty")["Body"].read() == b""
    c.close()


def test_rdma_multipart_put(cl):
    """Above the client's multipart threshold every part goes by RDMA to the storage
    servers; completion stitches the parts' chunk maps without moving bytes."""
    c = client_for(cl, "ofi+tcp", multipart_threshold=8 * MIB, part_size=5 * MIB)
    b = unique_bucket("clm")
    c.create_bucket(b)
    data = os.urandom(17 * MIB + 3)
    w0 = witness(cl)
    rep = c.put(b, "mp", data, transport="rdma")
    assert rep.transport == "rdma", rep
    assert rep.etag.strip('"').endswith("-4"), rep.etag
    assert c.get(b, "mp", transport="rdma") == data
    w1 = witness(cl)
    assert w1["st_write"] - w0["st_write"] >= 0.99 * 2 * len(data)
    assert cl.boto3().get_object(Bucket=b, Key="mp")["Body"].read() == data
    c.close()


@pytest.fixture(scope="module")
def netns_cl():
    ok, why = netns_available()
    if not ok:
        pytest.skip(f"network namespaces unavailable: {why}")
    c = Cluster(storage=3, replicas=2, chunk_size=CHUNK, providers="tcp", netns=True)
    c.start()
    yield c
    c.cleanup()


def test_rdma_tcp_across_namespaces(netns_cl):
    cl = netns_cl
    assert all(s.host.startswith(cl.netns.prefix) for s in cl.storage)
    c = client_for(cl, "ofi+tcp")
    b = unique_bucket("clns")
    c.create_bucket(b)
    data = os.urandom(6 * MIB + 5)
    w0 = witness(cl)
    assert c.put(b, "o", data, transport="rdma").transport == "rdma"
    assert c.get(b, "o", transport="rdma") == data
    w1 = witness(cl)
    assert w1["st_write"] - w0["st_write"] >= 0.99 * 2 * len(data), (w0, w1)
    assert w1["st_read"] - w0["st_read"] >= 0.99 * len(data), (w0, w1)
    assert w1["gw_read"] == 0 and w1["gw_write"] == 0
    # every storage server took part (chunks spread over all three namespaces)
    assert all(s.metric_sum("wharf_rdma_write_bytes_total") > 0 for s in cl.storage)
    assert cl.boto3().get_object(Bucket=b, Key="o")["Body"].read() == data
    c.close()
