#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The cluster benchmark: one client against a wharf cluster (tests/lib/cluster.py, the same
harness as the cluster tests), paired arms in one run.

Sections (each can be chosen with --only):
  scale     GET and PUT throughput with 1, 2 and 4 storage servers, every object's chunks
            spread over all of them, --streams objects in flight at once; arms rdma (ofi+shm on loopback, or ofi+tcp across network namespaces
            with --netns) and http (through the gateway), alternating A B A B over the same
            objects; CPU-seconds per GB of the gateway and of the storage servers; the witness
            of each RDMA cell is the sum of the storage servers' counters (>= 0.99 of the
            payload, written into clients for a GET and read from them for a PUT, else the
            cell fails) and the gateway's RDMA counters must stay at zero.
  serve     GET and PUT through a 2-server cluster against the same operations on `wharfd
            serve`, same machine, same objects.
  ec        replicas (--replicas 2) against erasure coding 4+2 (a bucket tagged wharf-ec=4+2)
            on one 6-server cluster: HTTP PUT and GET, RDMA GET (the data shards' servers
            write into the client), alternating arms, and the bytes each layout put on the
            storage servers' disks per object byte (chunk files summed, footers included).
  faults    GET throughput per second across a kill -9 of a storage server and a 15 s SIGSTOP
            of another, as a timeline (JSON, and a PNG with --plot).
Every byte is verified outside the timed windows. Results: one JSON per run under --results.
"""
import argparse
import hashlib
import json
import os
import signal
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

import benchlib  # noqa: E402
import wharf  # noqa: E402
from cluster import Cluster, netns_available  # noqa: E402
from s3raw import S3Raw  # noqa: E402
from wharfd import ACCESS_KEY, REGION, SECRET_KEY, WharfServer  # noqa: E402

MIB = 1 << 20


def client(endpoint, provider, unix_socket=None, concurrency=8):
    return wharf.Client(endpoint, ACCESS_KEY, SECRET_KEY, region=REGION,
                        provider=None if provider == "http" else provider,
                        unix_socket=unix_socket, concurrency=concurrency,
                        multipart_threshold=1 << 40)


def pids_cpu(pids):
    return sum(benchlib.proc_cpu_s(p) for p in pids)


def witness(cl):
    """(storage servers' RDMA bytes written into clients, the gateway's RDMA bytes either way,
    storage servers' RDMA bytes read from clients)."""
    return (cl.storage_sum("wharf_rdma_read_bytes_total"),
            cl.gateway_sum("wharf_rdma_read_bytes_total") +
            cl.gateway_sum("wharf_rdma_write_bytes_total"),
            cl.storage_sum("wharf_rdma_write_bytes_total"))


def timed_gets(c, bucket, keys, nbytes, bufs, transport):
    """GETs of every key, len(bufs) in flight (one buffer per stream); seconds."""
    def one(i):
        for k in keys[i::len(bufs)]:
            rep = c.get_into(bucket, k, bufs[i], transport=transport)
            if rep.bytes != nbytes:
                raise RuntimeError(f"short GET of {k}: {rep.bytes}")
            if transport == "rdma" and rep.transport != "rdma":
                raise RuntimeError(f"GET of {k} went {rep.transport}: {rep.reason}")
    return _streams(one, len(bufs))


def timed_puts(c, bucket, keys, srcs, transport):
    """PUTs of every key from srcs[key], as many in flight as timed_gets; seconds."""
    n = len(srcs["_streams"])

    def one(i):
        for k in keys[i::n]:
            rep = c.put_from(bucket, k, srcs[k], transport=transport)
            if transport == "rdma" and rep.transport != "rdma":
                raise RuntimeError(f"PUT of {k} went {rep.transport}: {rep.reason}")
    return _streams(one, n)


def _streams(fn, n):
    errs = []

    def run(i):
        try:
            fn(i)
        except Exception as e:  # noqa: BLE001 - re-raised below
            errs.append(e)
    ts = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    t0 = time.monotonic()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    dt = time.monotonic() - t0
    if errs:
        raise errs[0]
    return dt


def scale_cell(args, n_storage, netns):
    prov = "ofi+tcp" if netns else "ofi+shm"
    cl = Cluster(storage=n_storage, replicas=1, chunk_size=args.chunk_mib * MIB,
                 providers="tcp" if netns else "shm,tcp", netns=netns, log_level="warn")
    cl.start()
    try:
        g = cl.gateway
        sock = os.path.join(g.data_dir, "wharfd.sock")
        arms = {"rdma": client(g.endpoint, prov, sock if prov == "ofi+shm" else None,
                               args.concurrency),
                "http": client(g.endpoint, "http", concurrency=args.concurrency)}
        bucket = "bench-cluster"
        arms["http"].create_bucket(bucket)
        nbytes = args.object_mib * MIB
        keys, digests = [], {}
        for i in range(args.objects):
            data = os.urandom(nbytes)
            k = f"o{i}"
            arms["http"].put(bucket, k, data, transport="http")
            keys.append(k)
            digests[k] = hashlib.md5(data).hexdigest()
        # the chunks are spread over every server
        spread = [s.metric_sum("wharf_storage_chunks") for s in cl.storage]
        bufs = [bytearray(nbytes) for _ in range(args.streams)]
        srcs = {k: bytearray(os.urandom(nbytes)) for k in keys}
        srcs["_streams"] = bufs
        cell = {"storage_servers": n_storage, "provider": prov, "object_bytes": nbytes,
                "objects": args.objects, "chunk_bytes": args.chunk_mib * MIB,
                "streams": args.streams, "chunks_per_server": spread, "arms": {}}
        gw_pids = benchlib.tree_pids(g.proc.pid)
        st_pids = [p for s in cl.storage for p in benchlib.tree_pids(s.proc.pid)]
        names = ("rdma", "http", "rdma_put", "http_put")
        raw = {a: {"gbps": [], "gw_cpu_s_per_gb": [], "st_cpu_s_per_gb": [], "witness": []}
               for a in names}
        for rep in range(args.repeats):
            for name in names:
                arm = name.split("_")[0]
                w0 = witness(cl)
                g0, s0 = pids_cpu(gw_pids), pids_cpu(st_pids)
                if name.endswith("_put"):
                    dt = timed_puts(arms[arm], bucket, keys, srcs, arm)
                else:
                    dt = timed_gets(arms[arm], bucket, keys, nbytes, bufs, arm)
                g1, s1 = pids_cpu(gw_pids), pids_cpu(st_pids)
                w1 = witness(cl)
                gb = nbytes * len(keys) / 1e9
                raw[name]["gbps"].append(gb / dt)
                raw[name]["gw_cpu_s_per_gb"].append((g1 - g0) / gb)
                raw[name]["st_cpu_s_per_gb"].append((s1 - s0) / gb)
                if arm == "rdma":
                    moved = w1[0] - w0[0] if name == "rdma" else w1[2] - w0[2]
                    frac = moved / (nbytes * len(keys))
                    raw[name]["witness"].append({"storage_fraction": frac,
                                                 "gateway_rdma_bytes": w1[1] - w0[1]})
                    if frac < 0.99 or w1[1] != w0[1]:
                        cell["failed"] = (f"{name} witness: storage {frac:.3f}, gateway "
                                          f"{w1[1] - w0[1]}")
                if name.endswith("_put"):
                    digests.update({k: hashlib.md5(srcs[k]).hexdigest() for k in keys})
        # verify every byte outside the timed windows (the last PUT arm wrote srcs)
        buf = bufs[0]
        for k in keys:
            for arm in arms:
                arms[arm].get_into(bucket, k, buf, transport=arm)
                if hashlib.md5(buf).hexdigest() != digests[k]:
                    cell["failed"] = f"wrong bytes for {k} over {arm}"
        for arm, r in raw.items():
            if not r["gbps"]:
                continue
            cell["arms"][arm] = {"throughput_gbps": benchlib.summary(r["gbps"]),
                                 "gateway_cpu_s_per_gb": benchlib.summary(r["gw_cpu_s_per_gb"]),
                                 "storage_cpu_s_per_gb": benchlib.summary(r["st_cpu_s_per_gb"]),
                                 "witness": r["witness"]}
        for c in arms.values():
            c.close()
        return cell
    except Exception as e:
        # what the servers said goes into the result: the cluster's directory goes below
        cell = {"storage_servers": n_storage, "failed": f"{type(e).__name__}: {e}",
                "exit_codes": [s.proc.poll() for s in [cl.gateway] + cl.storage],
                "log_tails": [_tail(s.log_path) for s in [cl.gateway] + cl.storage]}
        print(json.dumps(cell, indent=1), file=sys.stderr)
        return cell
    finally:
        cl.cleanup()


def _tail(path, n=40):
    try:
        with open(path, "rb") as f:
            return f.read()[-8192:].decode(errors="replace").splitlines()[-n:]
    except OSError as e:
        return [str(e)]


def serve_section(args):
    """GET and PUT: cluster (2 servers, 1 replica... and 2) against wharfd serve."""
    nbytes = args.object_mib * MIB
    datas = [os.urandom(nbytes) for _ in range(args.objects)]
    out = {}
    targets = []
    srv = WharfServer(log_level="warn")
    srv.start()
    targets.append(("serve", srv.endpoint, srv.unix_socket, None))
    cl = Cluster(storage=2, replicas=2, chunk_size=args.chunk_mib * MIB, log_level="warn")
    cl.start()
    g = cl.gateway
    targets.append(("cluster-2x2", g.endpoint, os.path.join(g.data_dir, "wharfd.sock"), cl))
    try:
        for name, ep, sock, _c in targets:
            res = {}
            for arm, prov in (("rdma", "ofi+shm"), ("http", "http")):
                c = client(ep, prov, sock if prov == "ofi+shm" else None, args.concurrency)
                b = f"bench-{arm}"
                try:
                    c.create_bucket(b)
                except wharf.WharfError:
                    pass
                put_s, get_s = [], []
                buf = bytearray(nbytes)
                for _ in range(args.repeats):
                    t0 = time.monotonic()
                    for i, d in enumerate(datas):
                        c.put(b, f"o{i}", d, transport=arm)
                    put_s.append(time.monotonic() - t0)
                    t0 = time.monotonic()
                    for i in range(len(datas)):
                        c.get_into(b, f"o{i}", buf, transport=arm)
                    get_s.append(time.monotonic() - t0)
                for i, d in enumerate(datas):
                    c.get_into(b, f"o{i}", buf, transport=arm)
                    if bytes(buf) != d:
                        res["failed"] = f"wrong bytes {arm} o{i}"
                gb = nbytes * len(datas) / 1e9
                res[arm] = {"put_gbps": benchlib.summary([gb / s for s in put_s]),
                            "get_gbps": benchlib.summary([gb / s for s in get_s])}
                c.close()
            out[name] = res
    finally:
        srv.cleanup()
        cl.cleanup()
    return out


def _chunk_bytes(cl):
    total = 0
    for st in cl.storage:
        for root, _dirs, files in os.walk(os.path.join(st.data_dir, "chunks")):
            for f in files:
                try:
                    total += os.path.getsize(os.path.join(root, f))
                except OSError:
                    pass
    return total


def ec_section(args):
    """Replicas against EC 4+2 on one 6-server cluster, same objects, arms alternating: HTTP
    PUT and GET, RDMA GET and RDMA PUT (EC: the storage servers encode and spread the shards,
    the gateway moves none of the bytes, witnessed), then one storage server killed and RDMA
    GET again (EC: the stripes missing a data shard rebuilt at a storage server; replicas:
    the other copy)."""
    nbytes = args.object_mib * MIB
    datas = [os.urandom(nbytes) for _ in range(args.objects)]
    cl = Cluster(storage=6, replicas=2, chunk_size=args.chunk_mib * MIB, log_level="warn",
                 providers="shm,tcp")
    cl.start()
    out = {"servers": 6, "replicas": 2, "ec": "4+2"}
    try:
        g = cl.gateway
        arms = {"replicas": "bench-rep", "ec-4+2": "bench-ec"}
        h = client(g.endpoint, "http", None, args.concurrency)
        for arm, b in arms.items():
            h.create_bucket(b)
        # the bucket's layout tag, signed by the tests' S3 client (no boto3 needed)
        tagging = (b'<Tagging><TagSet><Tag><Key>wharf-ec</Key><Value>4+2</Value></Tag>'
                   b'</TagSet></Tagging>')
        r = S3Raw(g.endpoint).request("PUT", "/bench-ec", query={"tagging": ""}, body=tagging)
        if r.status not in (200, 204):
            raise RuntimeError(f"PutBucketTagging wharf-ec=4+2: {r.status} {r.body[:200]!r}")
        c = client(g.endpoint, "ofi+shm", os.path.join(g.data_dir, "wharfd.sock"),
                   args.concurrency)
        res = {a: {"put": [], "get": [], "rdma_get": [], "rdma_put": [], "rdma_get_degraded": []}
               for a in arms}
        buf = bytearray(nbytes)
        srcs = [bytearray(d) for d in datas]  # registered once (the client's cache)
        gb = nbytes * len(datas) / 1e9

        def rdma_gets(rep, b, what):
            """Seconds to GET round rep's objects of bucket b over RDMA (refused otherwise)."""
            t0 = time.monotonic()
            for i in range(len(datas)):
                r = c.get_into(b, f"r{rep}o{i}", buf, transport="rdma")
                if r.transport != "rdma":
                    raise RuntimeError(f"{what} went {r.transport}: {r.reason}")
            return time.monotonic() - t0
        for rep in range(args.repeats):
            for arm, b in arms.items():
                before = _chunk_bytes(cl)
                t0 = time.monotonic()
                for i, d in enumerate(datas):
                    h.put(b, f"r{rep}o{i}", d, transport="http")
                res[arm]["put"].append(gb / (time.monotonic() - t0))
                if rep == 0:
                    res[arm]["stored_per_byte"] = (_chunk_bytes(cl) - before) / \
                        (nbytes * len(datas))
                t0 = time.monotonic()
                for i in range(len(datas)):
                    h.get_into(b, f"r{rep}o{i}", buf, transport="http")
                res[arm]["get"].append(gb / (time.monotonic() - t0))
                res[arm]["rdma_get"].append(gb / rdma_gets(rep, b, f"{arm} GET"))
                w0 = witness(cl)
                t0 = time.monotonic()
                for i, src in enumerate(srcs):
                    r = c.put_from(b, f"p{rep}o{i}", src, transport="rdma")
                    if r.transport != "rdma":
                        raise RuntimeError(f"{arm} PUT went {r.transport}: {r.reason}")
                res[arm]["rdma_put"].append(gb / (time.monotonic() - t0))
                w1 = witness(cl)
                res[arm].setdefault("rdma_put_witness", []).append(
                    {"storage_pulled_bytes": w1[2] - w0[2], "gateway_rdma_bytes": w1[1] - w0[1]})
        # one storage server down: EC reads rebuild the stripes it held a data shard of at a
        # storage server (rdec); replicas read the other copy
        cl.storage[0].kill()
        cl.wait_nodes_up(5)
        for rep in range(args.repeats):
            for arm, b in arms.items():
                d0 = g.metric_sum("wharf_cluster_ec_degraded_reads_total")
                res[arm]["rdma_get_degraded"].append(
                    gb / rdma_gets(rep, b, f"{arm} degraded GET"))
                res[arm].setdefault("stripes_rebuilt", []).append(
                    g.metric_sum("wharf_cluster_ec_degraded_reads_total") - d0)
        for arm, b in arms.items():
            for i, d in enumerate(datas):
                for rep in range(args.repeats):
                    for key in (f"r{rep}o{i}", f"p{rep}o{i}"):
                        c.get_into(b, key, buf, transport="rdma")
                        if bytes(buf) != d:
                            res[arm]["failed"] = f"wrong bytes {key}"
            for k in ("put", "get", "rdma_get", "rdma_put", "rdma_get_degraded"):
                res[arm][k + "_gbps"] = benchlib.summary(res[arm].pop(k))
        out["arms"] = res
        out["gateway_overhead_metric"] = g.metric_sum("wharf_cluster_storage_overhead")
        c.close()
        h.close()
    finally:
        cl.cleanup()
    return out


def faults_section(args):
    cl = Cluster(storage=3, replicas=2, chunk_size=args.chunk_mib * MIB, log_level="warn")
    cl.start()
    try:
        g = cl.gateway
        sock = os.path.join(g.data_dir, "wharfd.sock")
        c = client(g.endpoint, "ofi+shm", sock, args.concurrency)
        b = "bench-faults"
        c.create_bucket(b)
        nbytes = args.object_mib * MIB
        datas = {f"o{i}": os.urandom(nbytes) for i in range(args.objects)}
        for k, d in datas.items():
            c.put(b, k, d, transport="http")
        samples, wrong, failed = [], [], []
        stop = threading.Event()
        buf = bytearray(nbytes)
        t_start = time.monotonic()

        def load():
            i = 0
            keys = sorted(datas)
            while not stop.is_set():
                k = keys[i % len(keys)]
                t0 = time.monotonic()
                try:
                    c.get_into(b, k, buf, transport="rdma")
                    ok = bytes(buf) == datas[k]
                    if not ok:
                        wrong.append(k)
                except wharf.WharfError as e:
                    failed.append(str(e))
                    ok = False
                samples.append((time.monotonic() - t_start, time.monotonic() - t0,
                                nbytes if ok else 0))
                i += 1

        th = threading.Thread(target=load, daemon=True)
        th.start()
        events = []
        time.sleep(args.fault_gap)
        events.append((time.monotonic() - t_start, "kill -9 storage 1"))
        cl.storage[1].kill()
        time.sleep(args.fault_gap)
        # one fault at a time: the killed server comes back before the next one
        events.append((time.monotonic() - t_start, "restart storage 1"))
        cl.storage[1].start()
        cl.wait_nodes_up(3, timeout=30)
        time.sleep(args.fault_gap)
        events.append((time.monotonic() - t_start, "SIGSTOP storage 2 (15 s)"))
        cl.storage[2].proc.send_signal(signal.SIGSTOP)
        time.sleep(15)
        cl.storage[2].proc.send_signal(signal.SIGCONT)
        events.append((time.monotonic() - t_start, "SIGCONT storage 2"))
        time.sleep(args.fault_gap)
        stop.set()
        th.join(timeout=60)
        c.close()
        end = max(s[0] for s in samples) if samples else 0
        per_s = [0.0] * (int(end) + 1)
        for t, _d, n in samples:
            per_s[int(t)] += n / 1e9
        return {"per_second_gbps": per_s, "events": events, "wrong_objects": wrong,
                "failed_gets": failed, "gets": len(samples),
                "max_get_s": max((s[1] for s in samples), default=0)}
    finally:
        cl.cleanup()


def plot_faults(f, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(9, 3.5))
    ax.plot(range(len(f["per_second_gbps"])), f["per_second_gbps"], drawstyle="steps-post")
    for t, what in f["events"]:
        ax.axvline(t, color="red", linestyle="--", linewidth=1)
        ax.text(t, ax.get_ylim()[1] * 0.95, " " + what, rotation=90, va="top", fontsize=8)
    ax.set_xlabel("seconds")
    ax.set_ylabel("GET GB/s (RDMA, bytes verified)")
    ax.set_title("One client's GETs through a 3-server cluster (2 replicas) across faults")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", choices=["scale", "serve", "ec", "faults"], action="append")
    ap.add_argument("--servers", default="1,2,4")
    ap.add_argument("--objects", type=int, default=4)
    ap.add_argument("--object-mib", type=int, default=64)
    ap.add_argument("--chunk-mib", type=int, default=8)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--streams", type=int, default=1, help="scale: objects in flight at once")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--netns", action="store_true", help="rdma arm over ofi+tcp between "
                    "network namespaces (skipped with the reason where refused)")
    ap.add_argument("--fault-gap", type=float, default=5.0)
    ap.add_argument("--results", default=os.path.join(HERE, "results"))
    ap.add_argument("--plot", default=None, help="PNG path for the fault timeline")
    args = ap.parse_args()
    sections = args.only or ["scale", "serve", "faults"]
    root = {"params": vars(args), "environment": benchlib.environment("ofi+shm"),
            "results": {}}
    t0 = time.monotonic()
    if "scale" in sections:
        netns = False
        if args.netns:
            ok, why = netns_available()
            root["results"]["netns"] = "used" if ok else f"skipped: {why}"
            netns = ok
        root["results"]["scale"] = []
        for n in args.servers.split(","):
            cell = scale_cell(args, int(n), netns)
            root["results"]["scale"].append(cell)
            # each cell as it ends, so a run cut short still says what it measured
            print("cell " + json.dumps(cell), file=sys.stderr, flush=True)
    if "serve" in sections:
        root["results"]["cluster_vs_serve"] = serve_section(args)
    if "ec" in sections:
        root["results"]["ec"] = ec_section(args)
    if "faults" in sections:
        f = faults_section(args)
        root["results"]["faults"] = f
        if args.plot:
            plot_faults(f, args.plot)
    root["wall_s"] = time.monotonic() - t0
    path = benchlib.write_result(args.results, "cluster", root)
    print(json.dumps(root["results"], indent=1))
    print("result:", path)


if __name__ == "__main__":
    main()
