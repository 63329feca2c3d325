#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""What a GET into GPU memory pays the first time the server meets an allocation, measured
without wharf: the driver calls wharfd's cuda+ipc path makes, in the same order, timed.

A parent process allocates SIZE bytes of device memory (cuMemAlloc, as torch's caching
allocator does for a large block) and exports it (cuIpcGetMemHandle). A child process, like
wharfd, opens the handle (cuIpcOpenMemHandle with lazy peer access), sizes it
(cuMemGetAddressRange), and copies pinned host memory into all of it from T threads, each with
two 8 MiB pinned buffers and two streams (wharfd's staging slot), twice: pass 1 is the first
touch of the mapping, pass 2 the same copy again. Then the handle is closed, opened again and
copied a third time (what a fresh mapping of an allocation already touched costs). The parent
then copies into its own allocation without IPC, for the host's plain pinned host-to-device
rate. One JSON line per repeat on stdout (results/h200 keeps them).

  python3 bench/py/cuda_ipc_probe.py --gib 8 --threads 8 --repeats 3
"""
import argparse
import ctypes
import json
import subprocess
import sys
import threading
import time

STAGE = 8 << 20


class IpcHandle(ctypes.Structure):
    """CUipcMemHandle: 64 opaque bytes, passed by value."""
    _fields_ = [("reserved", ctypes.c_char * 64)]


def cuda():
    cu = ctypes.CDLL("libcuda.so.1")
    cu.cuInit(0)
    return cu


def check(r, what):
    if r != 0:
        raise RuntimeError(f"{what} failed: CUresult {r}")


def context(cu):
    dev = ctypes.c_int()
    check(cu.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
    ctx = ctypes.c_void_p()
    check(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
    check(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    return ctx


def copy_all(cu, ctx, dptr, size, nthreads):
    """Pinned host to device over [dptr, dptr+size) from nthreads threads, each its own slice
    through two pinned buffers and two streams; returns seconds."""
    per = (size + nthreads - 1) // nthreads
    errs = []

    def one(i):
        try:
            check(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
            pins, streams = [], []
            for _ in range(2):
                p = ctypes.c_void_p()
                check(cu.cuMemHostAlloc(ctypes.byref(p), ctypes.c_size_t(STAGE), 1),
                      "cuMemHostAlloc")
                s = ctypes.c_void_p()
                check(cu.cuStreamCreate(ctypes.byref(s), 1), "cuStreamCreate")
                pins.append(p)
                streams.append(s)
            bar.wait()
            lo, hi = i * per, min(size, (i + 1) * per)
            j, off = 0, lo
            while off < hi:
                n = min(STAGE, hi - off)
                check(cu.cuStreamSynchronize(streams[j]), "cuStreamSynchronize")
                check(cu.cuMemcpyHtoDAsync_v2(ctypes.c_uint64(dptr + off), pins[j],
                                              ctypes.c_size_t(n), streams[j]),
                      "cuMemcpyHtoDAsync")
                off += n
                j ^= 1
            for s in streams:
                check(cu.cuStreamSynchronize(s), "cuStreamSynchronize")
            bar.wait()
            for p, s in zip(pins, streams):
                cu.cuStreamDestroy_v2(s)
                cu.cuMemFreeHost(p)
        except Exception as e:  # noqa: BLE001 - reported by the caller
            errs.append(str(e))
            bar.abort()

    bar = threading.Barrier(nthreads + 1)
    ts = [threading.Thread(target=one, args=(i,)) for i in range(nthreads)]
    for t in ts:
        t.start()
    try:
        bar.wait()
        t0 = time.perf_counter()
        bar.wait()
        dt = time.perf_counter() - t0
    except threading.BrokenBarrierError:
        dt = None
    for t in ts:
        t.join()
    if errs:
        raise RuntimeError(errs[0])
    return dt


def child(args):
    cu = cuda()
    ctx = context(cu)
    handle = bytes.fromhex(sys.stdin.readline().strip())
    h = IpcHandle.from_buffer_copy(handle)
    cu.cuIpcOpenMemHandle_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), IpcHandle,
                                         ctypes.c_uint]
    out = {}

    def open_():
        d = ctypes.c_uint64()
        t0 = time.perf_counter()
        check(cu.cuIpcOpenMemHandle_v2(ctypes.byref(d), h, 1), "cuIpcOpenMemHandle")
        t1 = time.perf_counter()
        base, sz = ctypes.c_uint64(), ctypes.c_size_t()
        check(cu.cuMemGetAddressRange_v2(ctypes.byref(base), ctypes.byref(sz), d),
              "cuMemGetAddressRange")
        return d.value, sz.value, t1 - t0

    d, sz, out["open_s"] = open_()
    out["alloc_bytes"] = sz
    out["pass1_s"] = copy_all(cu, ctx, d, args.bytes, args.threads)
    out["pass2_s"] = copy_all(cu, ctx, d, args.bytes, args.threads)
    t0 = time.perf_counter()
    check(cu.cuIpcCloseMemHandle(ctypes.c_uint64(d)), "cuIpcCloseMemHandle")
    out["close_s"] = time.perf_counter() - t0
    d, _, out["reopen_s"] = open_()
    out["pass3_s"] = copy_all(cu, ctx, d, args.bytes, args.threads)
    cu.cuIpcCloseMemHandle(ctypes.c_uint64(d))
    print(json.dumps(out), flush=True)


def parent(args):
    cu = cuda()
    ctx = context(cu)
    for rep in range(args.repeats):
        d = ctypes.c_uint64()
        t0 = time.perf_counter()
        check(cu.cuMemAlloc_v2(ctypes.byref(d), ctypes.c_size_t(args.bytes)), "cuMemAlloc")
        alloc_s = time.perf_counter() - t0
        h = IpcHandle()
        check(cu.cuIpcGetMemHandle(ctypes.byref(h), d), "cuIpcGetMemHandle")
        p = subprocess.Popen([sys.executable, __file__, "--child", "--bytes", str(args.bytes),
                              "--threads", str(args.threads)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
        res, _ = p.communicate(ctypes.string_at(ctypes.addressof(h), 64).hex() + "\n", timeout=300)
        if p.returncode != 0:
            raise SystemExit(f"child failed ({p.returncode})")
        r = json.loads(res)
        local_s = copy_all(cu, ctx, d.value, args.bytes, args.threads)
        check(cu.cuMemFree_v2(d), "cuMemFree")
        gb = args.bytes / 1e9
        r.update(repeat=rep, bytes=args.bytes, threads=args.threads, alloc_s=alloc_s,
                 local_s=local_s)
        r["gbps"] = {k: gb / r[k + "_s"] for k in ("pass1", "pass2", "pass3", "local")}
        print(json.dumps(r), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gib", type=float, default=8.0)
    ap.add_argument("--bytes", type=int, default=0)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if not args.bytes:
        args.bytes = int(args.gib * (1 << 30))
    (child if args.child else parent)(args)


if __name__ == "__main__":
    main()
