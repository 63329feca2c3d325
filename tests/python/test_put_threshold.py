# SPDX-License-Identifier: Apache-2.0
"""An RDMA PUT from host memory with the client's default multipart threshold stays one
request up to WH_DEFAULT_RDMA_MULTIPART_THRESHOLD (1 GiB): the server completes a multipart
upload by copying every part again, so a 300 MiB object goes as one PutObject over ofi+shm and
ofi+tcp, and multipart over HTTP (the 256 MiB threshold) or when the caller sets a threshold."""
import numpy as np
import pytest

from conftest import make_client
from wharfd import CTYPES_UNDER_ASAN, unique_bucket

pytestmark = pytest.mark.skipif(**CTYPES_UNDER_ASAN)
MIB = 1 << 20


def calls(srv, api):
    return sum(v for k, v in srv.metrics().items()
               if k.startswith("wharf_requests_total{") and f'api="{api}"' in k)


@pytest.mark.parametrize("provider,threshold,multipart", [
    ("ofi+shm", None, False), ("ofi+tcp", None, False), ("http", None, True),
    ("ofi+shm", 128 * MIB, True)])
def test_rdma_put_default_threshold(wharfd, provider, threshold, multipart):
    kw = {"multipart_threshold": threshold} if threshold else {}
    c = make_client(wharfd, provider, **kw)
    try:
        b = unique_bucket("thr")
        c.create_bucket(b)
        data = np.random.default_rng(3).integers(0, 256, 300 * MIB, dtype=np.uint8)
        if provider != "http":
            c.register(data)
        before = calls(wharfd, "CreateMultipartUpload"), calls(wharfd, "PutObject")
        rep = c.put_from(b, "k", data)
        assert rep.bytes == data.nbytes
        assert rep.transport == ("http" if provider == "http" else "rdma")
        mpu = calls(wharfd, "CreateMultipartUpload") - before[0]
        puts = calls(wharfd, "PutObject") - before[1]
        assert (mpu == 1) == multipart and (puts == 1) == (not multipart), (mpu, puts)
        back = np.empty_like(data)
        c.get_into(b, "k", back, transport="http")
        assert np.array_equal(back, data)
        c.delete(b, "k")
        c.delete_bucket(b)
    finally:
        c.close()
