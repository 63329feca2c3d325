# SPDX-License-Identifier: Apache-2.0
"""GETs into GPU memory from one and from several client processes on one host (training runs
one process per GPU; here every process uses GPU 0), against one wharfd: does the aggregate
add up?

    /usr/bin/python3 bench/py/gpu_procs.py --gib 8 --procs 8 --streams 4 --results results/h100

Arms, paired (A B C A B C ...), each a pool of worker processes started once (CUDA context,
client, destination tensors, one untimed warm-up GET of every object):
  1x<single>  one process, --single-streams GETs in flight (the best single-process figure)
  1x<streams> one process, --streams in flight
  Nx<streams> --procs processes, --streams each
Every arm GETs the same objects (--gib in all, --object-mib each, written once and read once
before the first measurement, so they are in the page cache); the processes of an arm split
them. A measurement starts every process at once (a barrier) and ends with the last; the
figure is all bytes / (last end - first start), on the system-wide monotonic clock. Every
object is compared with its pattern on the GPU after the timed window, every GET must report
the direct path (cuda+ipc, not staged), and the server's counters must show >= 0.99 of the
payload moved by RDMA. Medians of --repeats (at least 3), CPU per GB from the server.
"""
import argparse
import multiprocessing as mp
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


def pattern(i, n, torch):
    g = torch.Generator(device="cuda").manual_seed(1000 + i)
    return torch.randint(0, 256, (n,), dtype=torch.uint8, device="cuda", generator=g)


def worker(endpoint, unix_socket, keys, idx, obj, streams, cmd, res, barrier):
    """One client process: GETs its keys into its own GPU tensors each time it is told to."""
    import torch
    import wharf
    try:
        c = wharf.Client(endpoint, cm.ACCESS_KEY, cm.SECRET_KEY, region=cm.REGION,
                         provider="ofi+shm", unix_socket=unix_socket, concurrency=8)
        # one allocation per process, so one CUDA IPC handle (the server keeps 32 open)
        buf = torch.empty(len(keys) * obj, dtype=torch.uint8, device="cuda")
        dsts = [buf[k * obj:(k + 1) * obj] for k in range(len(keys))]

        def get_all():
            errs, reps, it, lock = [], [], iter(range(len(keys))), threading.Lock()

            def one():
                while True:
                    with lock:
                        i = next(it, None)
                    if i is None:
                        return
                    try:
                        reps.append(c.get_into("gpu", keys[i], dsts[i]))
                    except Exception as e:  # noqa: BLE001 - the cell's error
                        errs.append(repr(e))
                        return
            th = [threading.Thread(target=one) for _ in range(min(streams, len(keys)))]
            for t in th:
                t.start()
            for t in th:
                t.join()
            torch.cuda.synchronize()
            return errs, reps

        get_all()  # warm-up: IPC handles opened, connections made
        res.put(("ready", None))
        while cmd.get() == "go":
            buf.zero_()
            torch.cuda.synchronize()
            barrier.wait(timeout=120)
            t0 = time.monotonic()
            errs, reps = get_all()
            t1 = time.monotonic()
            ok = not errs and all(torch.equal(dsts[k], pattern(idx[k], obj, torch))
                                  for k in range(len(keys)))
            bad = [r for r in reps if r.staged or r.provider != "cuda+ipc"]
            res.put(("done", {"t0": t0, "t1": t1, "ok": ok, "errors": errs[:1],
                              "not_direct": repr(bad[0]) if bad else None}))
        c.close()
    except Exception as e:  # noqa: BLE001 - reported to the parent
        res.put(("failed", repr(e)))


class Pool:
    def __init__(self, ctx, srv, keys, obj, procs, streams):
        self.name = f"{procs}x{streams}"
        self.procs, self.streams = procs, streams
        self.barrier = ctx.Barrier(procs)
        self.res = ctx.Queue()
        self.cmds = [ctx.Queue() for _ in range(procs)]
        self.ps = []
        for p in range(procs):
            mine = list(range(p, len(keys), procs))
            self.ps.append(ctx.Process(target=worker, args=(
                srv.endpoint, srv.unix_socket, [keys[i] for i in mine], mine, obj, streams,
                self.cmds[p], self.res, self.barrier)))
        for pr in self.ps:
            pr.start()
        for _ in range(procs):
            kind, why = self.res.get(timeout=300)
            if kind != "ready":
                raise SystemExit(f"pool {self.name}: a worker failed to start: {why}")

    def run(self):
        for q in self.cmds:
            q.put("go")
        out = [self.res.get(timeout=300) for _ in range(self.procs)]
        bad = [w for k, w in out if k != "done"]
        if bad:
            return None, f"worker failed: {bad[0]}"
        ws = [w for _, w in out]
        err = next((w["errors"][0] for w in ws if w["errors"]), None) or \
            next((f"not direct: {w['not_direct']}" for w in ws if w["not_direct"]), None) or \
            (None if all(w["ok"] for w in ws) else "wrong bytes on the GPU")
        return max(w["t1"] for w in ws) - min(w["t0"] for w in ws), err

    def close(self):
        for q in self.cmds:
            q.put("stop")
        for pr in self.ps:
            pr.join(timeout=60)
            if pr.is_alive():
                pr.kill()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    cm.common_args(ap)
    ap.add_argument("--gib", type=float, default=8.0, help="payload per measurement (GiB)")
    ap.add_argument("--object-mib", type=int, default=256)
    ap.add_argument("--procs", type=int, default=8)
    ap.add_argument("--streams", type=int, default=4, help="GETs in flight per process")
    ap.add_argument("--single-streams", type=int, default=16,
                    help="GETs in flight of the best single-process arm")
    args = ap.parse_args()
    if args.repeats < 3:
        ap.error("--repeats must be at least 3")
    import torch
    obj = args.object_mib * cm.MiB
    nobj = max(args.procs, int(args.gib * cm.GiB // obj))
    payload = nobj * obj
    lim = {} if args.no_limits else cm.pinned_copy_rates(min(payload, 4 * cm.GiB), 3)
    ddir = args.data or tempfile.mkdtemp(prefix="wharf-gpu-procs-", dir="/dev/shm")
    srv = WharfServer(data_dir=ddir, log_level="warn")
    srv.start()
    ctx = mp.get_context("spawn")
    pools, results = [], []
    try:
        up = cm.make_client(srv, "rdma", concurrency=8)
        up.create_bucket("gpu")
        keys = [f"o{i}" for i in range(nobj)]
        host = torch.empty(obj, dtype=torch.uint8).pin_memory()
        for i in range(nobj):
            host.copy_(pattern(i, obj, torch))
            up.put_from("gpu", keys[i], host)
            up.get_into("gpu", keys[i], host)  # in the page cache, as the goal reads
        up.close()
        for procs, streams in ((1, args.single_streams), (1, args.streams),
                               (args.procs, args.streams)):
            pools.append(Pool(ctx, srv, keys, obj, procs, streams))
        for rep in range(args.repeats):
            for p in pools:
                with cm.Window(srv) as w:
                    secs, err = p.run()
                cell = {"arm": p.name, "procs": p.procs, "streams": p.streams, "repeat": rep,
                        "seconds": secs, "gbps": payload / secs / 1e9 if secs else None,
                        **w.cpu(payload), **w.witness()}
                err = err or w.gate("rdma", "get", payload)
                if err:
                    cell["error"] = err
                results.append(cell)
                print(f"rep {rep} {p.name}: "
                      + (f"{cell['gbps']:.2f} GB/s" if not err else f"ERROR {err}")
                      + f" server {cell['server_cpu_s_per_gb']:.3f} CPU-s/GB",
                      file=sys.stderr, flush=True)
    finally:
        for p in pools:
            p.close()
        srv.stop()
        srv.cleanup()
        if not args.data:
            os.system(f"rm -rf '{ddir}'")
    summary = {}
    for p in pools:
        g = [c["gbps"] for c in results if c["arm"] == p.name and not c.get("error")]
        summary[p.name] = bl.summary(g) if g else None
    best1 = max((summary[p.name]["median"] for p in pools if p.procs == 1 and summary[p.name]),
                default=None)
    many = summary.get(f"{args.procs}x{args.streams}")
    ratio = many["median"] / best1 if many and best1 else None
    print("medians: " + " ".join(f"{k}={v['median']:.2f}" for k, v in summary.items() if v)
          + (f"; {args.procs} processes / best single process = {ratio:.2f}" if ratio else ""),
          file=sys.stderr)
    root = {"params": dict(vars(args), objects=nobj, payload_bytes=payload,
                           method="arms paired per repeat; aggregate = bytes / (last end - "
                                  "first start); every object verified on the GPU"),
            "limits": lim, "environment": bl.environment("cuda+ipc"), "results": results,
            "summary": summary, "procs_over_best_single": ratio}
    cm.write(args, "gpu_procs", root)


if __name__ == "__main__":
    main()
