# SPDX-License-Identifier: Apache-2.0
"""RDMA batches into and from GPU memory (the cuda1 token, narrowed by the server to each
slot) without a GPU: both sides load tests/unit/xfer/fake_cuda.c as their CUDA driver
(WHARF_LIBCUDA), whose "device memory" is a shared memfd mapping, so the bytes that land can
be read back here. It checks wharf's own code (each slot's offset inside the allocation),
not a GPU."""
import ctypes
import os

import numpy as np
import pytest

import wharf
from conftest import make_client
from wharfd import CTYPES_UNDER_ASAN, WharfServer, build_dir, unique_bucket

pytestmark = pytest.mark.skipif(**CTYPES_UNDER_ASAN)


def entries(keys_offs_lens):
    arr = (wharf._lib.CBatchEntry * len(keys_offs_lens))()
    keep = []
    for i, (k, off, n) in enumerate(keys_offs_lens):
        wharf._lib.lib.wharf_batch_entry_init(ctypes.byref(arr[i]),
                                              ctypes.sizeof(wharf._lib.CBatchEntry))
        keep.append(k.encode())
        arr[i].key, arr[i].offset, arr[i].length = keep[-1], off, n
    return arr, keep


def test_batch_put_and_get_gpu_memory_fake_cuda():
    fake = os.path.join(build_dir(), "tests", "libwh_fake_cuda.so")
    if not os.path.exists(fake):
        pytest.skip(f"{fake} is not built")
    if os.environ.get("WHARF_LIBCUDA", fake) != fake:
        pytest.skip("this process already loaded another CUDA driver")
    os.environ["WHARF_LIBCUDA"] = fake  # before libwharf first looks for the driver
    srv = WharfServer(env={"WHARF_LIBCUDA": fake})
    srv.start()
    try:
        c = make_client(srv, "ofi+shm")
        b = unique_bucket("kvgpu")
        c.create_bucket(b)
        cu = ctypes.CDLL(fake)
        dptr = ctypes.c_ulonglong()
        n = 64 << 10
        assert cu.fakecuMemAlloc(ctypes.byref(dptr), ctypes.c_size_t(n)) == 0
        dev = np.frombuffer((ctypes.c_uint8 * n).from_address(dptr.value), dtype=np.uint8)
        src = np.random.default_rng(5).integers(0, 256, size=n, dtype=np.uint8)
        dev[:] = src
        lib = wharf._lib.lib
        reg = ctypes.c_void_p()
        assert lib.wharf_mem_register(c._handle(), dptr.value, n, wharf._lib.MEM_CUDA,
                                      ctypes.byref(reg)) == 0, wharf._lib.last_error()
        # the region starts 4 KiB into the allocation: slots are offsets from its base
        base, blen = dptr.value + 4096, n - 4096
        slots = [("g0", 0, 8192), ("g1", 8192, 8192), ("g2", 30000, 1000)]
        arr, keep = entries(slots)
        opts = wharf._lib.XferOpts()
        lib.wharf_xfer_opts_init(ctypes.byref(opts), ctypes.sizeof(opts))
        rep = wharf._lib.CReport()
        lib.wharf_report_init(ctypes.byref(rep), ctypes.sizeof(rep))
        st = lib.wharf_batch_put(c._handle(), b.encode(), base, blen, arr, len(slots),
                                 ctypes.byref(opts), ctypes.byref(rep))
        assert st == 0, wharf._lib.last_error()
        assert rep.provider.decode() == "cuda+ipc", rep.provider
        assert [arr[i].code.decode() for i in range(3)] == ["OK"] * 3
        for k, off, ln in slots:
            assert c.get(b, k, transport="http") == src[4096 + off:4096 + off + ln].tobytes()
        # back into other slots (g1 and g0 swapped: adjacent, one transfer), and a missing key
        dev[:] = 0xEE
        back = [("g1", 0, 8192), ("g0", 8192, 8192), ("nope", 20000, 100), ("g2", 40000, 1000)]
        arr, keep = entries(back)
        st = lib.wharf_batch_get(c._handle(), b.encode(), base, blen, arr, len(back),
                                 ctypes.byref(opts), ctypes.byref(rep))
        assert st == 0, wharf._lib.last_error()
        assert [arr[i].code.decode() for i in range(4)] == ["OK", "OK", "NoSuchKey", "OK"]
        want = np.full(n, 0xEE, dtype=np.uint8)
        for (k, off, ln), (_, soff, sln) in zip([back[0], back[1], back[3]],
                                                [slots[1], slots[0], slots[2]]):
            want[4096 + off:4096 + off + sln] = src[4096 + soff:4096 + soff + sln]
        assert np.array_equal(dev, want)
        lib.wharf_mem_deregister(reg)
        c.close()
    finally:
        srv.stop()
        srv.cleanup()
