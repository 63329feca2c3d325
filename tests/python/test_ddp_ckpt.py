# SPDX-License-Identifier: Apache-2.0
"""bench/py/ddp_ckpt.py, the DDP checkpoint benchmark, run for real on CPU ranks (gloo): 2
spawned ranks with a state of a few MiB each against a real wharfd (the one rank 0 starts,
and the session's through --endpoint with a scaling run), then its JSON checked: every arm
present or skipped with a reason, every restore verified tensor by tensor, the RDMA cells
gated on the server's counters and passing, HTTP cells with no RDMA bytes, per-rank times
positive. The gate and the verdict are also checked on inputs that must fail them."""
import glob
import json
import os
import subprocess
import sys

import pytest

from wharfd import bench_env

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
PROG = os.path.join(REPO, "bench", "py", "ddp_ckpt.py")
sys.path.insert(0, os.path.join(REPO, "bench", "py"))
MIB_PER_RANK = 3
TENSORS_PER_RANK = 64 * 3          # weight, exp_avg and step of each of the 64 layers


def run_bench(tmp_path, *args, timeout=150):
    env = bench_env()
    out = tmp_path / "results"
    cmd = [sys.executable, PROG, "--gib-per-rank", str(MIB_PER_RANK / 1024), "--no-limits",
           "--results", str(out), "--timeout-s", "90", "--concurrency", "2", *args]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    assert p.returncode == 0, f"rc {p.returncode}\n{p.stdout[-3000:]}\n{p.stderr[-6000:]}"
    files = glob.glob(str(out / "ddp-ckpt-*.json"))
    assert len(files) == 1, files
    with open(files[0]) as f:
        return json.load(f), p.stdout


def check_cells(root, ks, arms):
    res = root["results"]
    payload = root["params"]["payload_bytes_per_rank"]
    assert len(payload) == root["params"]["world_size"]
    assert all(b >= MIB_PER_RANK * 2 ** 20 * 0.9 for b in payload), payload
    for k in ks:
        for arm in arms:
            cells = [c for c in res["cells"] if c["ranks"] == k and c["arm"] == arm]
            assert sorted(c["repeat"] for c in cells) == [0, 1, 2], (k, arm, cells)
            for c in cells:
                for ph in ("save", "load"):
                    cell = c[ph]
                    assert "error" not in cell, (k, arm, ph, cell.get("error"))
                    assert cell["ranks"] == k and len(cell["rank_s"]) == k
                    assert all(t > 0 for t in cell["rank_s"]), cell["rank_s"]
                    assert cell["stall_s"] >= max(cell["rank_s"]) > 0
                    assert cell["bytes"] == sum(payload[:k])
                    assert cell["gbps"] > 0 and cell["host_cpu_s"] >= 0
                    assert cell["server_cpu_s"] >= 0 and cell["client_cpu_s"] > 0
                    w = cell["rdma_witness"]
                    moved = w["wharf_rdma_write_bytes_total" if ph == "save" else
                              "wharf_rdma_read_bytes_total"]
                    if arm in ("rdma", "dcp"):
                        g = cell["gate"]
                        assert g["passed"] and g["ratio"] >= 0.99, g
                        assert moved >= 0.99 * cell["bytes"], (moved, cell["bytes"])
                    else:
                        assert moved == 0, (arm, ph, w)
                v = c["load"]["verified"]
                assert v["ok"] and v["ranks_checked"] == k, v
                assert v["tensors_checked"] == k * TENSORS_PER_RANK, v
            summ = res["by_ranks"][str(k)][arm]
            for ph in ("save", "load"):
                s = summ[ph]
                assert s["failures"] == [] and s["stall_s"]["n"] == 3, s
                assert s["stall_s"]["median"] > 0 and s["gbps"]["median"] > 0
                assert len(s["rank_s_median"]) == k
            assert summ["load"]["verified"] == 3
            if arm in ("rdma", "dcp"):
                assert summ["save"]["gated"] == 3 and summ["load"]["gated"] == 3


def test_two_gloo_ranks_every_arm(tmp_path):
    root, out = run_bench(tmp_path, "--nproc", "2", "--backend", "gloo")
    assert root["schema"] == "wharf-bench/1" and root["benchmark"] == "ddp-ckpt"
    assert root["complete"] is True
    p = root["params"]
    assert p["world_size"] == 2 and p["backend"] == "gloo" and p["device"] == "cpu"
    assert p["ranks"] == [2] and p["repeats"] == 3
    res = root["results"]
    ran = [a for a in ("rdma", "http", "dcp", "torch", "dcpfs") if a not in res["skipped"]]
    for arm, why in res["skipped"].items():   # a skipped arm says why
        assert arm in ("dcp", "torch", "dcpfs") and len(why) > 10, (arm, why)
    assert "rdma" in ran and "http" in ran, res["skipped"]
    try:
        import torch.distributed.checkpoint  # noqa: F401
    except ImportError:
        assert "dcp" in res["skipped"] and "dcpfs" in res["skipped"]
    else:
        assert "dcp" in ran and "dcpfs" in ran, res["skipped"]
    try:
        import boto3  # noqa: F401
    except ImportError:
        assert "torch" in res["skipped"]
    else:
        assert "torch" in ran, res["skipped"]
    assert set(res["arms"]) == set(ran)
    check_cells(root, [2], ran)
    assert "save_speedup_rdma_vs_http" in res["ratios"]["2"]
    assert "ranks 2 rdma" in out


def test_scaling_against_a_running_wharfd(tmp_path, wharfd):
    root, _ = run_bench(tmp_path, "--nproc", "2", "--backend", "gloo", "--ranks", "1,2",
                        "--arms", "rdma", "--endpoint", wharfd.endpoint,
                        "--unix-socket", wharfd.unix_socket)
    assert root["params"]["ranks"] == [1, 2]
    assert root["params"]["server"].startswith("external")
    check_cells(root, [1, 2], ["rdma"])
    sc = root["results"]["scaling"]
    assert list(sc) == ["rdma"]
    for ph in ("save", "load"):
        assert sc["rdma"][ph]["ranks"] == [1, 2]
        assert all(g > 0 for g in sc["rdma"][ph]["gbps_median"]), sc["rdma"][ph]
        assert isinstance(sc["rdma"][ph]["non_decreasing"], bool)
    assert wharfd.alive()


def test_gate_and_verdict_fail_when_they_should():
    import ddp_ckpt as d
    cell = {"bytes": 1000, "rdma_witness": {"wharf_rdma_write_bytes_total": 980.0,
                                            "wharf_rdma_read_bytes_total": 0.0}}
    d.gate(cell, "rdma", "put")
    assert not cell["gate"]["passed"] and cell["error"].startswith("rdma-not-used"), cell
    ok = {"bytes": 1000, "rdma_witness": {"wharf_rdma_write_bytes_total": 0.0,
                                          "wharf_rdma_read_bytes_total": 995.0}}
    d.gate(ok, "dcp", "get")
    assert ok["gate"]["passed"] and "error" not in ok
    http = {"bytes": 1000, "rdma_witness": {"wharf_rdma_write_bytes_total": 0.0,
                                            "wharf_rdma_read_bytes_total": 0.0}}
    d.gate(http, "http", "put")
    assert "gate" not in http and "error" not in http
    sd = d.rank_state(64 * 1024, 0, "cpu")
    other = d.rank_state(64 * 1024, 1, "cpu")
    import ckpt
    assert ckpt.verify(sd, d.rank_state(64 * 1024, 0, "cpu"))["ok"]
    assert not ckpt.verify(sd, other)["ok"]   # ranks hold different bytes
    bad = d.rank_state(64 * 1024, 0, "cpu")
    bad["model"]["layers.5.weight"][3] += 1
    v = ckpt.verify(sd, bad)
    assert not v["ok"] and any("layers.5.weight" in m for m in v["mismatched"]), v
    assert len(ckpt.tensors_of(sd)) == TENSORS_PER_RANK
    assert sorted(d.flat_state(sd, 3))[0].startswith("rank3/")
    summ = d.summarize([{"stall_s": 1.0, "rank_max_s": 1.0, "gbps": 1.0, "rank_s": [1.0],
                         "host_cpu_s_per_gb": 1.0, "server_cpu_s_per_gb": 1.0,
                         "client_cpu_s_per_gb": 1.0, "verified": {"ok": True}},
                        {"error": "verify-failed: x", "verified": {"ok": False}}])
    assert summ["stall_s"]["n"] == 1 and summ["failures"] == ["verify-failed: x"]
    assert summ["verified"] == 1
    with pytest.raises(SystemExit):
        d.parse_ranks("1,16", 8)
    assert d.parse_ranks("4,1,2", 4) == [1, 2, 4] and d.parse_ranks("", 8) == [8]
