#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""What authorization costs on the data path: GET and PUT ops/s at 4 KiB and 1 MiB, and GB/s
at 256 MiB, over HTTP and over RDMA (ofi+shm, the server's own copy into the peer), for three
arms against one wharfd:

  root    the operator's key: s3h_authorize returns at once (the cost of no authorization)
  user1   one user, owner of its bucket, no policy: the bucket's owner and ACL are loaded and
          the decision made on every request
  user10  ten users exist; one of them, not the owner, is allowed by the last statement of a
          twenty-statement bucket policy (every statement is evaluated on every request)

Runs are paired and interleaved per cell (root, user1, user10, root again, repeated), so drift
on a shared machine hits every arm alike; the second root run of each round measures the
run's noise (root vs root). Each figure is the median of the rounds. Results go to
results/authz-...json (wharf-bench/1 schema, bench/benchlib.py).

    /usr/bin/python3 bench/authz_bench.py [--rounds 3] [--seconds 2] [--quick]
"""
import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

import benchlib  # noqa: E402
import users  # noqa: E402
import wharf  # noqa: E402
from wharfd import ACCESS_KEY, REGION, SECRET_KEY, WharfServer  # noqa: E402

KIB, MIB = 1 << 10, 1 << 20
ARMS = ("root", "user1", "user10")


def log(msg):
    print(f"[authz-bench] {msg}", file=sys.stderr, flush=True)


def twenty_statements(bucket, grantee_arn, others):
    """Nineteen statements that never match the measured user, then the one that allows it."""
    res = f"arn:aws:s3:::{bucket}"
    st = []
    for i in range(19):
        who = others[i % len(others)]
        st.append({"Sid": f"other{i}", "Effect": "Allow", "Principal": {"AWS": who},
                   "Action": ["s3:GetObject", "s3:PutObject"],
                   "Resource": f"{res}/team{i}/*",
                   "Condition": {"IpAddress": {"aws:SourceIp": ["10.0.0.0/8", "127.0.0.0/8"]}}})
    st.append({"Sid": "measured", "Effect": "Allow", "Principal": {"AWS": grantee_arn},
               "Action": ["s3:GetObject", "s3:PutObject", "s3:ListBucket"],
               "Resource": [res, f"{res}/*"],
               "Condition": {"StringLike": {"aws:username": "bench*"}}})
    return json.dumps({"Version": "2012-10-17", "Statement": st})


class Arm:
    def __init__(self, name, srv, ak, sk, bucket, provider):
        self.name, self.bucket = name, bucket
        self.c = wharf.Client(srv.endpoint, ak, sk, region=REGION, provider=provider,
                              unix_socket=srv.unix_socket if provider == "ofi+shm" else None)

    def close(self):
        self.c.close()


def server_cpu_s(srv):
    return srv.metrics().get("process_cpu_seconds_total", 0.0)


def run_cell(arm, op, size, transport, buf, seconds, max_ops, srv=None):
    """ops/s and bytes/s of one timed run (each op a whole object of size bytes), and the
    server's CPU time per operation (less disturbed by other load on a shared machine than
    throughput is)."""
    key = f"{arm.name}/obj-{size}"
    cpu0 = server_cpu_s(srv) if srv else 0.0
    n, t0 = 0, time.perf_counter()
    deadline = t0 + seconds
    while n < max_ops and (n == 0 or time.perf_counter() < deadline):
        if op == "get":
            arm.c.get_into(arm.bucket, key, buf, length=size, transport=transport)
        else:
            arm.c.put_from(arm.bucket, key, buf, length=size, transport=transport)
        n += 1
    dt = time.perf_counter() - t0
    out = {"ops": n, "seconds": dt, "ops_per_s": n / dt, "gbps": n * size / dt / 1e9}
    if srv:
        out["server_cpu_us_per_op"] = (server_cpu_s(srv) - cpu0) / n * 1e6
    return out


def report(path):
    """The table docs/access.md shows: medians, and each user arm and the noise arm relative to
    root (negative: slower than root)."""
    with open(path) as f:
        res = json.load(f)
    print("| transport | op | size | unit | root | user1 | user10 | user1 vs root | "
          "user10 vs root | noise (root vs root) | server CPU us/op root / user1 / user10 / "
          "root again |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for c in res["results"]:
        size = c["size_bytes"]
        sz = f"{size >> 20} MiB" if size >= MIB else f"{size >> 10} KiB"
        unit = "GB/s" if c["metric"] == "gbps" else "ops/s"
        m = c["median"]
        fmt = (lambda v: f"{v:.3f}") if unit == "GB/s" else (lambda v: f"{v:.0f}")
        print(f"| {c['transport']} | {c['op'].upper()} | {sz} | {unit} | {fmt(m['root'])} | "
              f"{fmt(m['user1'])} | {fmt(m['user10'])} | {c['user1_vs_root_pct']:+.1f}% | "
              f"{c['user10_vs_root_pct']:+.1f}% | {c['noise_root_vs_root_pct']:+.1f}% | " +
              (" / ".join(f"{c['server_cpu_us_per_op_median'][k]:.0f}"
                          for k in ARMS + ("root_again",))
               if "server_cpu_us_per_op_median" in c else "-") + " |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=2.0, help="per small-object run")
    ap.add_argument("--big-ops", type=int, default=3, help="256 MiB transfers per run")
    ap.add_argument("--quick", action="store_true", help="1 round, 0.5 s runs (smoke test)")
    ap.add_argument("--results", default=os.path.join(HERE, "..", "results"))
    ap.add_argument("--report", metavar="JSON", help="print the markdown table of a result file")
    ap.add_argument("--data-parent", default="/dev/shm",
                    help="where the server's data directory goes (tmpfs by default: the disk's "
                         "fsync would hide what authorization costs)")
    a = ap.parse_args()
    if a.report:
        report(a.report)
        return
    if a.quick:
        a.rounds, a.seconds, a.big_ops = 1, 0.5, 1
    t_start = time.monotonic()
    data_dir = tempfile.mkdtemp(prefix="wharf-authz-", dir=a.data_parent)
    srv = WharfServer(data_dir=data_dir, log_level="warn").start()
    arms = {}
    try:
        people = [users.create_user(srv, f"bench{i}-{uuid.uuid4().hex[:6]}") for i in range(10)]
        owner1, owner10, measured = people[0], people[1], people[2]
        root_b, b1, b10 = (f"authz-{t}-{uuid.uuid4().hex[:8]}" for t in ("root", "u1", "u10"))
        rc = users.client(srv, ACCESS_KEY, SECRET_KEY)
        rc.create_bucket(Bucket=root_b)
        owner1.boto3(srv).create_bucket(Bucket=b1)
        o10 = owner10.boto3(srv)
        o10.create_bucket(Bucket=b10)
        o10.put_bucket_policy(Bucket=b10, Policy=twenty_statements(
            b10, measured.arn, [p.arn for p in people[3:]]))
        cells = []
        for transport, provider in (("http", "none"), ("rdma", "ofi+shm")):
            arms = {"root": Arm("root", srv, ACCESS_KEY, SECRET_KEY, root_b, provider),
                    "user1": Arm("user1", srv, owner1.access_key, owner1.secret_key, b1,
                                 provider),
                    "user10": Arm("user10", srv, measured.access_key, measured.secret_key,
                                  b10, provider)}
            buf = bytearray(os.urandom(256 * MIB))
            regs = [arm.c.register(buf) for arm in arms.values()] if transport == "rdma" else []
            for size in (4 * KIB, 1 * MIB, 256 * MIB):
                for arm in arms.values():  # the objects the GETs read, and a warm-up
                    run_cell(arm, "put", size, transport, buf, 0.2, 3)
                for op in ("put", "get"):
                    runs = {k: [] for k in ARMS + ("root_again",)}
                    for rnd in range(a.rounds):
                        for k in ARMS + ("root_again",):
                            arm = arms["root" if k == "root_again" else k]
                            big = size >= 256 * MIB
                            runs[k].append(run_cell(arm, op, size, transport, buf,
                                                    a.seconds, a.big_ops if big else 10 ** 9,
                                                    srv))
                    metric = "gbps" if size >= 256 * MIB else "ops_per_s"
                    med = {k: statistics.median(r[metric] for r in v) for k, v in runs.items()}
                    cpu = {k: statistics.median(r["server_cpu_us_per_op"] for r in v)
                           for k, v in runs.items()}
                    cell = {"op": op, "size_bytes": size, "transport": transport,
                            "provider": provider, "metric": metric, "median": med,
                            "server_cpu_us_per_op_median": cpu,
                            "runs": runs,
                            "noise_root_vs_root_pct": 100 * (med["root_again"] - med["root"]) /
                            med["root"],
                            "user1_vs_root_pct": 100 * (med["user1"] - med["root"]) / med["root"],
                            "user10_vs_root_pct": 100 * (med["user10"] - med["root"]) /
                            med["root"]}
                    # Per round, the pairwise differences (same round, adjacent runs).
                    for k in ("user1", "user10", "root_again"):
                        cell[f"{k}_vs_root_round_pct"] = [
                            100 * (x[metric] - r[metric]) / r[metric]
                            for x, r in zip(runs[k], runs["root"])]
                    cells.append(cell)
                    log(f"{transport:4} {op:3} {size >> 10:>7} KiB  {metric}: " +
                        "  ".join(f"{k}={med[k]:.4g}" for k in ARMS) +
                        f"  noise {cell['noise_root_vs_root_pct']:+.1f}%  user1 "
                        f"{cell['user1_vs_root_pct']:+.1f}%  user10 "
                        f"{cell['user10_vs_root_pct']:+.1f}%  server CPU us/op " +
                        " ".join(f"{k}={cpu[k]:.0f}" for k in ARMS + ("root_again",)))
            for r in regs:
                r.close()
            for arm in arms.values():
                arm.close()
            arms = {}
        root = {"params": {"rounds": a.rounds, "data_parent": a.data_parent, "seconds_per_run": a.seconds,
                           "big_ops_per_run": a.big_ops, "arms": list(ARMS),
                           "users": len(people), "policy_statements": 20,
                           "order": "root, user1, user10, root_again per round"},
                "environment": benchlib.environment("ofi+shm"),
                "results": cells, "wall_s": time.monotonic() - t_start}
        path = benchlib.write_result(a.results, "authz", root)
        log(f"wrote {path}")
    finally:
        for arm in arms.values():
            arm.close()
        srv.stop()
        srv.cleanup()
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
