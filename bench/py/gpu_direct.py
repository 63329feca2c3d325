# SPDX-License-Identifier: Apache-2.0
"""GET into and PUT from GPU memory: wharfd's direct path (cuda1 over its Unix socket: the
server copies between the page cache and the client's device memory itself) against staging
through host memory (RDMA or HTTP into a pinned host buffer, then a host-to-device copy), with
the machine's limits measured in the same run (pinned host-to-device and device-to-host copy,
memcpy and process_vm_writev on all cores).

Arms run paired (A B C A B C ...), every figure is the median of --repeats, every byte is
checked on the GPU outside the timed window, and the direct arm is gated on the server's
counters (it moved >= 0.99 of the payload). Server staging variants (WHARF_CUDA_STAGING:
pinned double-buffered staging, pageable copies, or pinning the page-cache pages per copy)
run as separate servers, for the timing comparison that chose the default.

    /usr/bin/python3 bench/py/gpu_direct.py --gib 8 --results results/h200
"""
import argparse
import os
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import common as cm  # noqa: E402
import benchlib as bl  # noqa: E402
from wharfd import WharfServer  # noqa: E402

import torch  # noqa: E402


def run_get(client, bucket, keys, dsts, streams):
    """GETs keys[i] into dsts[i] with `streams` requests in flight; returns seconds."""
    errs = []
    idx = iter(range(len(keys)))
    lock = threading.Lock()

    def worker():
        while True:
            with lock:
                i = next(idx, None)
            if i is None:
                return
            try:
                rep = client.get_into(bucket, keys[i], dsts[i])
                worker.reports.append(rep)
            except Exception as e:  # noqa: BLE001 - recorded as the cell's error
                errs.append(repr(e))
                return
    worker.reports = []
    th = [threading.Thread(target=worker) for _ in range(streams)]
    t0 = time.perf_counter()
    for t in th:
        t.start()
    for t in th:
        t.join()
    torch.cuda.synchronize()
    return time.perf_counter() - t0, errs, worker.reports


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    cm.common_args(ap)
    ap.add_argument("--gib", type=float, default=8.0, help="payload per measurement (GiB)")
    ap.add_argument("--object-mib", type=int, default=1024)
    ap.add_argument("--streams", default="1,4,8")
    ap.add_argument("--variants", default="pinned,pageable,register")
    ap.add_argument("--data-kinds", default="tmpfs,disk")
    args = ap.parse_args()
    obj = args.object_mib * cm.MiB
    nobj = max(1, int(args.gib * cm.GiB // obj))
    payload = nobj * obj
    streams = [int(s) for s in args.streams.split(",")]
    lim = cm.limits(args)
    lim.update(cm.pinned_copy_rates(min(payload, 4 * cm.GiB), args.repeats))
    print(f"limits: {cm.limit_rates(lim)}", file=sys.stderr, flush=True)

    g = torch.Generator(device="cuda").manual_seed(1)
    srcs = [torch.randint(0, 256, (obj,), dtype=torch.uint8, device="cuda", generator=g)
            for _ in range(nobj)]
    dsts = [torch.empty(obj, dtype=torch.uint8, device="cuda") for _ in range(nobj)]
    host = [torch.empty(obj, dtype=torch.uint8).pin_memory() for _ in range(nobj)]
    results = []
    for kind in args.data_kinds.split(","):
        base = "/dev/shm" if kind == "tmpfs" else "/var/tmp"
        for variant in args.variants.split(","):
            ddir = tempfile.mkdtemp(prefix=f"wharf-gpu-{kind}-", dir=base)
            srv = WharfServer(data_dir=ddir, log_level="warn",
                              env={"WHARF_CUDA_STAGING": variant})
            srv.start()
            try:
                results += run_server(args, srv, kind, variant, srcs, dsts, host, obj, nobj,
                                      payload, streams)
            finally:
                srv.stop()
                srv.cleanup()
                os.system(f"rm -rf '{ddir}'")
            if kind == "disk":
                break  # the staging comparison runs on tmpfs; disk adds the default only
    root = {"params": vars(args), "limits": lim, "environment": bl.environment("cuda+ipc"),
            "results": results}
    cm.write(args, "gpu_direct", root)


def run_server(args, srv, kind, variant, srcs, dsts, host, obj, nobj, payload, streams):
    out = []
    up = cm.make_client(srv, "rdma", concurrency=8)
    bucket = "gpu"
    up.create_bucket(bucket)
    keys = [f"o{i}" for i in range(nobj)]
    for i in range(nobj):
        host[i].copy_(srcs[i])
        up.put_from(bucket, keys[i], host[i])
    for i in range(nobj):  # warm the page cache (the goal is "object in the page cache")
        up.get_into(bucket, keys[i], host[i])
    arms = {"direct": cm.make_client(srv, "rdma", concurrency=8),
            "staged-rdma": up,
            "staged-http": cm.make_client(srv, "http", concurrency=8)}
    # warm-up, untimed: IPC handles opened, staging slots created, connections made
    for arm, c in arms.items():
        if arm == "direct":
            run_get(c, bucket, keys, dsts, max(streams))
        else:
            run_get(c, bucket, keys, host, max(streams))
    for st in streams:
        cells = {a: [] for a in arms}
        for rep_i in range(args.repeats):
            for arm, c in arms.items():
                for d in dsts:
                    d.zero_()
                torch.cuda.synchronize()
                with cm.Window(srv) as w:
                    if arm == "direct":
                        secs, errs, reps = run_get(c, bucket, keys, dsts, st)
                    else:
                        t0 = time.perf_counter()
                        errs = []
                        secs_get, errs, reps = run_get(c, bucket, keys, host, st)
                        for i in range(nobj):
                            dsts[i].copy_(host[i], non_blocking=True)
                        torch.cuda.synchronize()
                        secs = time.perf_counter() - t0
                cell = {"arm": arm, "streams": st, "repeat": rep_i, "seconds": secs,
                        "gbps": payload / secs / 1e9, **w.cpu(payload), **w.witness()}
                if errs:
                    cell["error"] = errs[0]
                elif arm == "direct":
                    g = w.gate("rdma", "get", payload)
                    if g:
                        cell["error"] = g
                    elif any(r.staged or r.provider != "cuda+ipc" for r in reps):
                        cell["error"] = "not direct: " + repr(reps[0])
                ok = all(torch.equal(dsts[i], srcs[i]) for i in range(nobj))
                cell["verified"] = ok
                if not ok:
                    cell["error"] = "wrong bytes on the GPU"
                cells[arm].append(cell)
                out.append(dict(cell, data=kind, variant=variant, op="get"))
        print(f"{kind} {variant} streams={st} " + " ".join(
            f"{a}={bl.summary([x['gbps'] for x in v if not x.get('error')])['median']:.2f}"
            if any(not x.get("error") for x in v) else f"{a}=ERR({v[0].get('error')})"
            for a, v in cells.items()), file=sys.stderr, flush=True)
    # PUT from GPU memory, direct, one stream and all objects at once
    arms["direct"].put_from(bucket, "warm", srcs[0])
    for st in (1, min(8, nobj)):
        for rep_i in range(args.repeats):
            with cm.Window(srv) as w:
                t0 = time.perf_counter()
                errs = []
                lock = threading.Lock()
                it = iter(range(nobj))

                def put_worker():
                    while True:
                        with lock:
                            i = next(it, None)
                        if i is None:
                            return
                        try:
                            arms["direct"].put_from(bucket, f"p{i}", srcs[i])
                        except Exception as e:  # noqa: BLE001
                            errs.append(repr(e))
                            return
                th = [threading.Thread(target=put_worker) for _ in range(st)]
                for t in th:
                    t.start()
                for t in th:
                    t.join()
                secs = time.perf_counter() - t0
            cell = {"arm": "direct", "op": "put", "streams": st, "repeat": rep_i,
                    "seconds": secs, "gbps": payload / secs / 1e9, "data": kind,
                    "variant": variant, **w.cpu(payload), **w.witness()}
            g = w.gate("rdma", "put", payload)
            if errs or g:
                cell["error"] = errs[0] if errs else g
            out.append(cell)
        ok = True
        for i in range(nobj):
            up.get_into(bucket, f"p{i}", host[i])
            ok &= torch.equal(host[i].cuda(), srcs[i])
        out[-1]["verified"] = ok
        print(f"{kind} {variant} put streams={st} "
              f"{bl.summary([x['gbps'] for x in out if x.get('op') == 'put' and x['streams'] == st and x['variant'] == variant and x['data'] == kind and not x.get('error')] or [0])['median']:.2f} GB/s verified={ok}",
              file=sys.stderr, flush=True)
    for c in arms.values():
        c.close()
    return out


if __name__ == "__main__":
    main()
