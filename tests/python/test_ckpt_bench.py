# SPDX-License-Identifier: Apache-2.0
"""bench/py/ckpt.py, the checkpoint benchmark, run for real at a small size against a real
wharfd: on a disk it records the disk's durable write rate between repeats
(limits.durable_write_gbps, measured before every repeat and after the last, in a directory of
its own that it removes) and each arm's durable time over that limit; with --durable-limit off
neither is there."""
import glob
import json
import os
import subprocess
import sys

from wharfd import bench_env

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
PROG = os.path.join(REPO, "bench", "py", "ckpt.py")


def run_bench(tmp_path, *args):
    env = bench_env()
    data, out = tmp_path / "disk" / "data", tmp_path / "results"
    data.mkdir(parents=True)
    cmd = [sys.executable, PROG, "--gib", "0.01", "--arms", "rdma,torchfs", "--repeats", "2",
           "--overwrite", "--no-limits", "--concurrency", "2", "--data", str(data),
           "--local-dir", str(tmp_path / "disk" / "local"), "--results", str(out), *args]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=150)
    assert p.returncode == 0, f"rc {p.returncode}\n{p.stdout[-3000:]}\n{p.stderr[-6000:]}"
    files = glob.glob(str(out / "ckpt-*.json"))
    assert len(files) == 1, files
    with open(files[0]) as f:
        return json.load(f), p.stderr


def test_durable_limit_between_repeats(tmp_path):
    root, err = run_bench(tmp_path, "--durable-limit", "on", "--durable-writers", "2",
                          "--durable-mib", "4")
    lim = root["limits"]["durable_write_gbps"]
    assert lim["n"] == 3 and all(v > 0 for v in lim["values"]), lim
    assert err.count("durable write rate") == 3, err
    assert "2 writers x 4 files x 4 MiB" in root["limits"]["durable_write_how"]
    floor = root["params"]["payload_bytes"] / (lim["median"] * 1e9)
    ratios = root["results"]["ratios"]
    for arm in ("rdma", "torchfs"):
        du = root["results"]["arms"][arm]["durable_s"]["median"]
        assert abs(ratios[f"{arm}_durable_over_disk_limit"] - du / floor) < 1e-9, ratios
    assert [n for n in os.listdir(tmp_path / "disk") if n.startswith(".durable-limit")] == []


def test_durable_limit_off(tmp_path):
    root, err = run_bench(tmp_path, "--durable-limit", "off")
    assert "durable_write_gbps" not in root["limits"], root["limits"]
    assert not [k for k in root["results"]["ratios"] if k.endswith("_over_disk_limit")]
    assert "durable write rate" not in err
