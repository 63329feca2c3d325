# SPDX-License-Identifier: Apache-2.0
"""The soak (bench/soak.c, docs/soak.md) for 60 seconds against a real wharfd.

Well-behaved clients over HTTP, RDMA ofi+shm and RDMA ofi+tcp run a mix of GET, ranged GET,
PUT, multipart PUT, DELETE, HEAD and LIST with every byte checked, while ten misbehaving
clients stall, hang up mid-body and mid-response, send garbage, hold idle sockets and get
SIGSTOPped mid-RDMA-GET. Asserted: no error for a well-behaved client, no wrong byte, a
healthy server at the end, and, once the load is gone, its fds and threads back near where they
started (a leak of one per request would be thousands here) and every RDMA pool buffer and
pipeline given back. Sized for a loaded 2-core
machine; the 10-minute, 64-client run is `scripts/soak.sh` (docs/soak.md).
"""
import json
import os
import subprocess

import pytest

from wharfd import WharfServer, build_dir, wait_until

ASAN = "ASAN_OPTIONS" in os.environ
DURATION = 60
WARMUP = 20
MiB = 1 << 20


def soak_bin():
    path = os.path.join(build_dir(), "bench", "soak")
    if not os.path.exists(path):
        pytest.fail(f"{path} is missing: build the tree first (cmake --build)")
    return path


def proc_counts(pid):
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    threads = 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("Threads:"):
                threads = int(line.split()[1])
    return fds, threads


def third_means(samples, key):
    """Means of the first and the last third of a series."""
    v = [s[key] for s in samples if key in s]
    k = max(1, len(v) // 3)
    return sum(v[:k]) / k, sum(v[-k:]) / k


def run_soak(srv, out, extra=()):
    # under ASan everything is several times slower: fewer clients, smaller objects
    clients, max_size = ("9", "12M") if ASAN else ("24", "16M")
    args = [soak_bin(), "--endpoint", srv.endpoint, "--pid", str(srv.proc.pid),
            "--unix-socket", srv.unix_socket, "--duration", str(DURATION),
            "--warmup", str(WARMUP), "--clients", clients, "--bad-clients", "10",
            "--max-size", max_size, "--mem-budget", "512M", "--think-ms", "5",
            "--op-timeout-ms", "60000", "--out", str(out)] + list(extra)
    # bounded: the run, plus one op timeout (with retries) for the last requests to end
    p = subprocess.run(args, env=srv.client_env(), capture_output=True, text=True,
                       timeout=DURATION + 400)
    assert os.path.exists(out), f"soak exited {p.returncode} with no result:\n{p.stderr[-6000:]}"
    with open(out) as f:
        return p, json.load(f)


def test_soak_60s(tmp_path):
    srv = WharfServer(log_level="warn")  # info logs every request: disk I/O, not the test
    srv.start()
    try:
        fds0, threads0 = proc_counts(srv.proc.pid)
        p, res = run_soak(srv, tmp_path / "soak.json")
        detail = json.dumps({k: res[k] for k in ("errors_by_class", "error_samples",
                                                 "wrong_samples", "bad_client_outcomes")},
                            indent=1)[:6000]
        assert res["errors"] == 0, detail
        assert res["wrong_bytes"] == 0 and res["wrong_objects"] == 0, detail
        assert res["server_healthy_at_end"], srv.log_tail()
        assert p.returncode == 0, p.stderr[-4000:]
        # every kind of operation and transport ran, and every misbehaviour was tried
        for op, n in res["ops"].items():
            assert n > 0, f"no {op} ran: {res['ops']}"
        assert set(res["ops_by_transport"]) == {"http", "shm", "tcp"}
        assert all(n > 0 for n in res["ops_by_transport"].values()), res["ops_by_transport"]
        kinds = {k.split("/")[0] for k in res["bad_client_outcomes"]}
        for kind in ("slow_headers", "stall_body", "cut_body", "garbage", "cut_response",
                     "stopped_rdma", "idle"):
            assert kind in kinds, res["bad_client_outcomes"]
        assert res["bytes_put"] > 64 * MiB and res["bytes_got"] > 64 * MiB, res["bytes_put"]
        assert res["unchecked_reads"] * 20 <= res["ops"]["get_other"], res["unchecked_reads"]

        # under load: no trend in fds and threads past the warm-up, RSS within bounds
        after = [s for s in res["samples"] if s["t_s"] >= WARMUP and s.get("alive")]
        assert len(after) >= (DURATION - WARMUP) // 2, len(after)
        f_first, f_last = third_means(after, "fds")
        t_first, t_last = third_means(after, "threads")
        assert f_last - f_first <= 64, f"fds grew from {f_first:.0f} to {f_last:.0f}"
        assert t_last - t_first <= 32, f"threads grew from {t_first:.0f} to {t_last:.0f}"
        if not ASAN:  # ASan's quarantine holds freed memory on purpose
            r_first, r_last = third_means(after, "rss_bytes")
            assert r_last - r_first <= 256 * MiB, f"RSS grew {(r_last - r_first) / MiB:.0f} MiB"

        # once the clients are gone, what they held is given back: fds, threads, and every
        # RDMA pool buffer and pipeline (a SIGSTOPped client must not keep one)
        def rdma_held():
            m = srv.metrics()
            total = m.get('wharf_rdma_pool_buffers{state="total"}')
            free = m.get('wharf_rdma_pool_buffers{state="free"}')
            busy = total - free if total is not None and free is not None else 0
            return busy, m.get("wharf_rdma_pipelines_active", 0)

        def settled():
            fds, threads = proc_counts(srv.proc.pid)
            return (fds <= fds0 + 16 and threads <= threads0 + 16
                    and rdma_held() == (0, 0))
        got = wait_until(settled, timeout=60, interval=0.5)
        assert got, (f"after the soak wharfd holds {proc_counts(srv.proc.pid)} (fds, threads) "
                     f"and {rdma_held()} (RDMA pool buffers, pipelines); it started with "
                     f"{(fds0, threads0)}")
        assert srv.stop() == 0, srv.log_tail()
    finally:
        srv.cleanup()


def test_soak_checker_catches_a_wrong_byte(tmp_path):
    """The checker itself: one byte flipped in an object published as valid must fail the
    run with exactly one wrong byte."""
    with WharfServer() as srv:
        args = [soak_bin(), "--endpoint", srv.endpoint, "--pid", str(srv.proc.pid),
                "--unix-socket", srv.unix_socket, "--duration", "3", "--clients", "3",
                "--bad-clients", "0", "--max-size", "1M", "--mem-budget", "64M",
                "--inject-wrong-byte", "1", "--out", str(tmp_path / "wrong.json")]
        p = subprocess.run(args, env=srv.client_env(), capture_output=True, text=True,
                           timeout=300)
        assert os.path.exists(tmp_path / "wrong.json"), p.stderr[-6000:]
        with open(tmp_path / "wrong.json") as f:
            res = json.load(f)
        assert p.returncode == 1, p.stderr
        assert res["wrong_bytes"] == 1 and res["wrong_objects"] == 1, res["wrong_samples"]
        assert res["wrong_samples"][0]["key"] == "c000/k000", res["wrong_samples"]
        assert res["ok"] is False
