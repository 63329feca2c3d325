# SPDX-License-Identifier: Apache-2.0
"""The scatter GET on a cluster gateway (docs/protocol.md, "Scatter GET"): not served there yet,
so it is declined, never half done: 501 NotImplemented with x-amz-rdma-reply: 501 and a message
saying so, no byte moved (the buffer stays as it was, no storage server or gateway counts an
RDMA byte). libwharf reports the decline (WHARF_ERR_DECLINED) under fallback=fail, and under
fallback=http gets every window by ranged GETs and says it fell back."""
import os

import numpy as np
import pytest

import wharf
from cluster import Cluster
from wharfd import ACCESS_KEY, CTYPES_UNDER_ASAN, REGION, SECRET_KEY, unique_bucket

MIB = 1 << 20
pytestmark = pytest.mark.skipif(**CTYPES_UNDER_ASAN)  # libwharf through ctypes


@pytest.fixture(scope="module")
def cl():
    c = Cluster(storage=3, replicas=2, chunk_size=MIB, providers="shm,tcp")
    c.start()
    yield c
    rcs = c.stop()
    c.cleanup()
    assert rcs == [0] * len(rcs), f"members exited with {rcs} on SIGTERM"


def client_for(cl, **kw):
    g = cl.gateway
    return wharf.Client(g.endpoint, ACCESS_KEY, SECRET_KEY, region=REGION, provider="ofi+shm",
                        unix_socket=os.path.join(g.data_dir, "wharfd.sock"), **kw)


def rdma_bytes(cl):
    return sum(f(n) for f in (cl.storage_sum, cl.gateway_sum)
               for n in ("wharf_rdma_read_bytes_total", "wharf_rdma_write_bytes_total"))


def test_scatter_on_a_gateway_is_declined_and_moves_nothing(cl):
    c = client_for(cl)
    try:
        b = unique_bucket("clscat")
        c.create_bucket(b)
        data = np.frombuffer(os.urandom(3 * MIB + 5), dtype=np.uint8)
        c.put_from(b, "obj", data, transport="http")
        ws = [(MIB - 10, 20, 0), (2 * MIB + 7, 4096, 100), (0, 10, 5000)]
        buf = np.full(8192, 0xEE, dtype=np.uint8)
        before = rdma_bytes(cl)
        with pytest.raises(wharf.WharfError) as e:
            c.get_scatter(b, "obj", buf, ws)
        assert e.value.status == wharf._lib.WHARF_ERR_DECLINED, e.value
        assert "not served by a cluster gateway" in str(e.value), e.value
        assert (buf == 0xEE).all(), "a declined scatter GET moved bytes"
        assert rdma_bytes(cl) == before
    finally:
        c.close()


def test_scatter_on_a_gateway_falls_back_to_ranged_gets(cl):
    c = client_for(cl, fallback="http")
    try:
        b = unique_bucket("clscat")
        c.create_bucket(b)
        data = np.frombuffer(os.urandom(3 * MIB + 5), dtype=np.uint8)
        c.put_from(b, "obj", data, transport="http")
        ws = [(MIB - 10, 20, 0), (2 * MIB + 7, 4096, 100), (0, 10, 5000)]
        buf = np.full(8192, 0xEE, dtype=np.uint8)
        rep = c.get_scatter(b, "obj", buf, ws)
        assert rep.fell_back and "cluster gateway" in rep.reason, rep
        for o, n, d in ws:
            assert np.array_equal(buf[d:d + n], data[o:o + n]), (o, n, d)
        assert rep.bytes == sum(n for _, n, _ in ws)
    finally:
        c.close()
