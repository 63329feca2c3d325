#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Scatter GET against per-tensor ranged GETs and one large GET: a synthetic checkpoint of
many tensors (default 20,000 of 4-256 KiB, uniform, packed in one object) loaded into one
registered buffer laid out as the object.

Arms, paired in one run (A B C A B C ...), over the same object, buffer and server:
  per_tensor  one ranged GET per tensor (Client.get_into of its slice), from `concurrency`
              Python threads taking tensors in turn: what a loader issues today
  scatter     Client.get_scatter of every tensor's window: `concurrency` signed requests of
              up to 16,384 windows each, run in parallel
  large       one Client.get_into of the same bytes (the tensors are contiguous): the bound

The timed window is the call(s) that land every tensor. Each repeat of each arm first fills
the buffer with 0xEE, and afterwards compares the whole buffer with the generated object
(outside the timer). The RDMA arms are gated on the server's RDMA GET bytes >= 0.99 of the
payload. The load average is recorded before and after each cell (other jobs share the host).

  /usr/bin/python3 bench/py/scatter.py [--tensors 20000] [--min-kib 4] [--max-kib 256]
                                       [--provider rdma|rdma-tcp] [--repeats 3]
"""
import argparse
import os
import threading
import time

import common as cm
import numpy as np

ARMS = ("per_tensor", "scatter", "large")


def per_tensor(c, bucket, key, buf, windows, conc):
    nxt = [0]
    lock = threading.Lock()
    err = []

    def worker():
        try:
            while True:
                with lock:
                    i = nxt[0]
                    nxt[0] += 1
                if i >= len(windows):
                    return
                off, n, dst = windows[i]
                c.get_into(bucket, key, buf[dst:dst + n], offset=off, length=n,
                           concurrency=1)
        except Exception as e:  # noqa: BLE001 - reported below
            err.append(e)

    th = [threading.Thread(target=worker) for _ in range(conc)]
    for t in th:
        t.start()
    for t in th:
        t.join()
    if err:
        raise err[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    cm.common_args(ap)
    ap.add_argument("--tensors", type=int, default=20000)
    ap.add_argument("--min-kib", type=int, default=4)
    ap.add_argument("--max-kib", type=int, default=256)
    ap.add_argument("--provider", choices=("rdma", "rdma-tcp"), default="rdma")
    a = ap.parse_args()
    rng = np.random.default_rng(5)
    sizes = rng.integers(a.min_kib << 10, (a.max_kib << 10) + 1, a.tensors)
    offs = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    total = int(sizes.sum())
    windows = [(int(o), int(n), int(o)) for o, n in zip(offs, sizes)]
    data = rng.integers(0, 256, total, dtype=np.uint8)
    srv = cm.start_server(a)
    c = cm.make_client(srv, a.provider, concurrency=a.concurrency)
    c.create_bucket("scatter")
    c.put_from("scatter", "ckpt", data, transport="http")
    buf = np.empty(total, dtype=np.uint8)
    reg = c.register(buf)
    arms = {
        "per_tensor": lambda: per_tensor(c, "scatter", "ckpt", buf, windows, a.concurrency),
        "scatter": lambda: c.get_scatter("scatter", "ckpt", buf, windows,
                                         concurrency=a.concurrency),
        "large": lambda: c.get_into("scatter", "ckpt", buf, offset=0, length=total,
                                    concurrency=a.concurrency),
    }
    runs = {arm: [] for arm in ARMS}
    for r in range(a.repeats):
        for arm in ARMS:
            buf.fill(0xEE)
            load0 = os.getloadavg()
            with cm.Window(srv) as w:
                t0 = time.perf_counter()
                arms[arm]()
                dt = time.perf_counter() - t0
            load1 = os.getloadavg()
            ok = bool(np.array_equal(buf, data))
            gate = w.gate("rdma", "get", total)
            cell = {"wall_s": dt, "gb_per_s": total / dt / 1e9,
                    "tensors_per_s": a.tensors / dt, "verified": ok,
                    "loadavg_before": load0, "loadavg_after": load1,
                    "witness": w.witness(), **w.cpu(total)}
            if not ok:
                cell["error"] = "the buffer does not match the object"
            elif gate:
                cell["error"] = gate
            runs[arm].append(cell)
            print(f"repeat {r} {arm}: {dt * 1e3:.1f} ms, {total / dt / 1e9:.2f} GB/s, "
                  f"verified={ok}, load {load0[0]:.1f}->{load1[0]:.1f}"
                  f"{', ' + cell['error'] if cell.get('error') else ''}", flush=True)
    reg.close()
    c.close()
    res = {arm: {"wall_s": cm.summarize(rs, "wall_s"), "gb_per_s": cm.summarize(rs, "gb_per_s"),
                 "server_cpu_s_per_gb": cm.summarize(rs, "server_cpu_s_per_gb"),
                 "client_cpu_s_per_gb": cm.summarize(rs, "client_cpu_s_per_gb"),
                 "runs": rs} for arm, rs in runs.items()}
    med = {arm: res[arm]["wall_s"].get("median") if isinstance(res[arm]["wall_s"], dict)
           else None for arm in ARMS}
    ratios = {}
    if all(med.values()):
        ratios = {"per_tensor_over_scatter": med["per_tensor"] / med["scatter"],
                  "scatter_over_large": med["scatter"] / med["large"]}
        print(f"median wall: per_tensor {med['per_tensor'] * 1e3:.0f} ms, scatter "
              f"{med['scatter'] * 1e3:.0f} ms, large {med['large'] * 1e3:.0f} ms; "
              f"scatter {ratios['per_tensor_over_scatter']:.1f}x faster than per-tensor, "
              f"{ratios['scatter_over_large']:.2f}x the large GET's time", flush=True)
    root = {"params": {"tensors": a.tensors, "min_bytes": a.min_kib << 10,
                       "max_bytes": a.max_kib << 10, "total_bytes": total,
                       "provider": a.provider, "repeats": a.repeats,
                       "concurrency": a.concurrency,
                       "order": "paired: " + " ".join(ARMS) + " per repeat",
                       "verified": "the whole buffer after every cell"},
            "environment": cm.bl.environment("ofi+shm" if a.provider == "rdma" else "ofi+tcp"),
            "limits": cm.limits(a), "results": {"arms": res, "median_ratios": ratios}}
    cm.write(a, "scatter", root)
    srv.stop()


if __name__ == "__main__":
    main()
