# SPDX-License-Identifier: Apache-2.0
"""Shared helpers of wharf's Python benchmark programs (run with /usr/bin/python3).

They write the same result schema as the C suite ("wharf-bench/1", docs/benchmarks.md):
{schema, benchmark, backend, params, environment, limits, results, timestamp, wall_s}.
Limits come from bench/limits (the C program) in the same run.
"""
import datetime
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def build_dir():
    return os.environ.get("WHARF_BUILD_DIR") or os.path.join(REPO, "build")


def summary(values):
    """{median, min, max, n, values} of a list of numbers (order kept)."""
    vals = [float(v) for v in values]
    if not vals:
        return {"median": 0.0, "min": 0.0, "max": 0.0, "n": 0, "values": []}
    return {"median": statistics.median(vals), "min": min(vals), "max": max(vals),
            "n": len(vals), "values": vals}


def nearest_rank(sorted_vals, p):
    if not sorted_vals:
        return 0.0
    import math
    r = max(1, min(len(sorted_vals), math.ceil(p / 100.0 * len(sorted_vals))))
    return sorted_vals[r - 1]


def latency_ms(samples_s):
    s = sorted(samples_s)
    if not s:
        return None
    return {"min_ms": s[0] * 1e3, "p50_ms": nearest_rank(s, 50) * 1e3,
            "p90_ms": nearest_rank(s, 90) * 1e3, "p99_ms": nearest_rank(s, 99) * 1e3,
            "max_ms": s[-1] * 1e3, "mean_ms": sum(s) / len(s) * 1e3, "samples": len(s)}


def host_cpu():
    """(busy_jiffies, total_jiffies) from the first line of /proc/stat."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    total = sum(v[:8])
    return total - v[3] - v[4], total


def host_busy_s(a, b):
    return (b[0] - a[0]) / os.sysconf("SC_CLK_TCK")


def proc_cpu_s(pid):
    """utime+stime of one process, seconds (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except OSError:
        return 0.0


def tree_pids(root):
    """root and every descendant pid."""
    kids = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            kids.setdefault(ppid, []).append(int(d))
        except (OSError, ValueError, IndexError):
            pass
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


def tree_cpu_s(root):
    return sum(proc_cpu_s(p) for p in tree_pids(root))


def parse_metrics(text):
    """Prometheus text -> {name: value summed over label sets}."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name = line.split("{", 1)[0].split(" ", 1)[0]
        rest = line.rsplit("}", 1)[1] if "{" in line else line[len(name):]
        val = rest.split()
        if not name or not val:
            continue
        try:
            out[name] = out.get(name, 0.0) + float(val[0])
        except ValueError:
            pass
    return out


def metrics_delta(before, after, prefixes=("wharf_", "minio_api_rdma_", "process_cpu")):
    return {k: after[k] - before.get(k, 0.0) for k in sorted(after)
            if k.startswith(prefixes) and after[k] != before.get(k, 0.0)}


def _line(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True,
                              timeout=20).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


def environment(provider="none"):
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    gpus = []
    if shutil.which("nvidia-smi"):
        for line in _line("nvidia-smi --query-gpu=index,name,memory.total,driver_version "
                          "--format=csv,noheader,nounits").splitlines():
            p = [x.strip() for x in line.split(",")]
            if len(p) == 4:
                gpus.append({"index": int(p[0]), "name": p[1], "memory_mib": int(p[2]),
                             "driver": p[3]})
    fi = _line("fi_info --version 2>/dev/null | grep '^libfabric:' | cut -d' ' -f2")
    return {
        "cpu_model": model, "cpu_cores": os.cpu_count(),
        "memory_bytes": os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"),
        "kernel": f"{platform.system()} {platform.release()} {platform.machine()}",
        "hostname": socket.gethostname(), "libfabric_version": fi, "provider": provider,
        "gpus": gpus,
        "git_commit": _line(f"git -C {REPO} rev-parse HEAD"),
        "git_dirty": bool(_line(f"git -C {REPO} status --porcelain --untracked-files=no")),
        "python": platform.python_version(),
        "curl": _line("curl --version | head -1"),
        "nginx": _line("nginx -v 2>&1"),
    }


def measure_limits(repeats=3, mib=1024):
    """Runs bench/limits (same run); returns its JSON, or {"error": ...}."""
    exe = os.path.join(build_dir(), "bench", "limits")
    try:
        p = subprocess.run([exe, "--repeats", str(repeats), "--bytes", str(mib)],
                           capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"error": f"{exe}: {e}"}
    if p.returncode != 0:
        return {"error": f"{exe} exited {p.returncode}: {p.stderr.strip()}"}
    return json.loads(p.stdout)


def write_result(results_dir, benchmark, root, tag="", backend="wharf"):
    os.makedirs(results_dir, exist_ok=True)
    ts = datetime.datetime.utcnow().strftime("%Y%m%d-%H%M%S")
    name = f"{benchmark}{'-' + tag if tag else ''}-{backend}-{ts}.json"
    path = os.path.join(results_dir, name)
    k = 1
    while os.path.exists(path):
        path = os.path.join(results_dir, name.replace(".json", f"-{k}.json"))
        k += 1
    root.setdefault("schema", "wharf-bench/1")
    root.setdefault("benchmark", benchmark)
    root.setdefault("backend", backend)
    root.setdefault("timestamp", datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%M:%SZ"))
    with open(path, "w") as f:
        json.dump(root, f, indent=1, sort_keys=True)
    return path


def now():
    return time.monotonic()


def parse_size(s):
    """"64M", "1GiB", "4096": bytes (K, M, G, T are powers of 1024)."""
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    s = s.strip().upper().replace("IB", "")
    return int(float(s[:-1]) * mult[s[-1]]) if s[-1] in mult else int(s)


def memcpy_gbps(n=256 << 20, repeats=3):
    """One core's memcpy rate (numpy's copy of n bytes), best of repeats."""
    import numpy as np
    a = np.ones(n, dtype=np.uint8)
    b = np.empty_like(a)
    best = 0.0
    for _ in range(repeats):
        t = time.perf_counter()
        np.copyto(b, a)
        best = max(best, n / (time.perf_counter() - t) / 1e9)
    return best


def read_all(c, pid, bucket, keys, size, streams, transport, buf_of):
    """GB/s and the server's (pid) CPU-s per GB of reading every key of size bytes once with
    wharf.Client c on `streams` threads; buf_of(thread, key) is the destination. Every read
    must land size bytes over transport."""
    todo = list(keys)
    lock = threading.Lock()
    errors = []

    def work(i):
        while True:
            with lock:
                if not todo:
                    return
                k = todo.pop()
            try:
                rep = c.get_into(bucket, k, buf_of(i, k), transport=transport)
                if rep.bytes != size or rep.transport != transport:
                    errors.append(f"{k}: {rep.bytes} bytes over {rep.transport}")
            except Exception as e:  # noqa: BLE001
                errors.append(f"{k}: {e}")
                return
    c0 = proc_cpu_s(pid)
    t0 = time.perf_counter()
    th = [threading.Thread(target=work, args=(i,)) for i in range(streams)]
    for t in th:
        t.start()
    for t in th:
        t.join(timeout=600)
    dt = time.perf_counter() - t0
    cpu = proc_cpu_s(pid) - c0
    if errors:
        raise RuntimeError("; ".join(errors[:3]))
    gb = len(keys) * size / 1e9
    return gb / dt, cpu / gb


def fs_type(path):
    """The file system type of path from /proc/mounts (longest mount point that holds it):
    params.data_fs of a result (tmpfs, ext4, xfs, ...)."""
    path = os.path.realpath(path)
    best, kind = "", ""
    with open("/proc/mounts") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 3 and (path == parts[1] or path.startswith(parts[1].rstrip("/") + "/")):
                if len(parts[1]) > len(best):
                    best, kind = parts[1], parts[2]
    return kind
