# SPDX-License-Identifier: Apache-2.0
"""RDMA batches on a cluster gateway: refused with 501 NotImplemented and a message that says
so (and x-amz-rdma-reply: 501, a decline), never answered as if done; libwharf reports it as
a decline, and under fallback=http moves each key by plain requests instead. A real cluster
(PostgreSQL, one gateway, two storage servers: tests/lib/cluster.py)."""
import os

import numpy as np
import pytest

import wharf
import wharf.kv as kv
from cluster import Cluster
from wharfd import ACCESS_KEY, CTYPES_UNDER_ASAN, REGION, SECRET_KEY, unique_bucket

pytestmark = pytest.mark.skipif(**CTYPES_UNDER_ASAN)


@pytest.fixture(scope="module")
def cl():
    c = Cluster(storage=2, replicas=1, providers="shm,tcp")
    c.start()
    yield c
    rcs = c.stop()
    c.cleanup()
    assert rcs == [0] * len(rcs), f"members exited with {rcs} on SIGTERM"


def client(cl, **kw):
    g = cl.gateway
    return wharf.Client(g.endpoint, ACCESS_KEY, SECRET_KEY, region=REGION, provider="ofi+shm",
                        unix_socket=os.path.join(g.data_dir, "wharfd.sock"), **kw)


def test_gateway_declines_batches(cl):
    c = client(cl)
    try:
        b = unique_bucket("clbatch")
        c.create_bucket(b)
        buf = np.zeros(8192, dtype=np.uint8)
        with pytest.raises(wharf.DeclinedError) as ei:
            kv.batch_put(c, b, buf, [("a", 0, 4096), ("b", 4096, 4096)])
        assert "not served by a cluster gateway" in str(ei.value)
        assert not c.exists(b, "a")
    finally:
        c.close()


def test_gateway_batch_falls_back_to_one_request_per_key(cl):
    c = client(cl, fallback="http")
    try:
        b = unique_bucket("clbatchfb")
        c.create_bucket(b)
        src = np.random.default_rng(3).integers(0, 256, size=8192, dtype=np.uint8)
        items, rep = kv.batch_put(c, b, src, [("a", 0, 4096), ("b", 4096, 4096)])
        assert [it.code for it in items] == ["OK", "OK"]
        assert rep.fell_back and "cluster gateway" in rep.reason, rep
        dst = np.zeros(8192, dtype=np.uint8)
        items, rep = kv.batch_get(c, b, dst, [("b", 0, 4096), ("a", 4096, 4096)])
        assert [it.code for it in items] == ["OK", "OK"]
        assert dst[:4096].tobytes() == src[4096:].tobytes()
        assert dst[4096:].tobytes() == src[:4096].tobytes()
    finally:
        c.close()
