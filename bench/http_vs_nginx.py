#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""wharfd against Debian's nginx (sendfile) over HTTP on loopback, one run.

  /usr/bin/python3 bench/http_vs_nginx.py [--size-mib 1024] [--repeats 5] [--results results]

1. Limits of this machine (bench/limits, same run): memcpy, process_vm_writev, loopback TCP, MD5.
2. PUT of a SIZE object to wharfd with curl (SigV4 --aws-sigv4, UNSIGNED-PAYLOAD), --put-repeats
   times; the ETag must be the file's MD5 (checked outside the timer). Goal: >= 1 GB/s.
3. GET of the same bytes: curl from wharfd (signed) and curl from nginx (the same file on disk,
   sendfile on), paired A B A B, after one untimed warm-up GET each. Goal: wharfd >= 0.9x nginx.
   The bytes each server returns are checked once (MD5), outside the timed runs.
4. 16 keep-alive connections doing 256 KiB GETs (bench/loadgen, libcurl multi, one thread)
   against wharfd and nginx, paired A B A B: ops/s, p50/p99 latency.
Per run: curl CPU (rusage of the child), server CPU (wharfd: process_cpu_seconds_total from
/metrics; nginx: /proc of its processes), host CPU (/proc/stat), as CPU-seconds per GB.
wharfd is started by tests/lib/wharfd.py (the one way to start a server); nginx gets a temporary
prefix and config on a free loopback port. Results: one JSON in --results.
"""
import argparse
import hashlib
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests", "lib"))

import benchlib as bl  # noqa: E402
from wharfd import ACCESS_KEY, REGION, SECRET_KEY, WharfServer, free_port  # noqa: E402

CURL = "/usr/bin/curl"
# curl 7.88 does not send x-amz-content-sha256 itself; S3 requires it, and curl signs the
# value given here as the payload hash.
SIGV4 = ["--aws-sigv4", f"aws:amz:{REGION}:s3", "--user", f"{ACCESS_KEY}:{SECRET_KEY}",
         "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD"]
WFMT = ("%{http_code} %{size_download} %{size_upload} %{time_total} %{time_starttransfer} "
        "%{time_pretransfer}")


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def run_child(args, timeout=600):
    """Runs a child; returns (rc, stdout, stderr)."""
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        return 124, out.decode(), err.decode()
    return p.returncode, out.decode(), err.decode()


def timed_child(args, timeout=600):
    """Runs a child and returns (rc, stdout, stderr, child_cpu_s): the child's CPU is the
    growth of RUSAGE_CHILDREN across its wait (nothing else is reaped meanwhile)."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    rc, out, err = run_child(args, timeout)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return rc, out, err, cpu


def metrics(srv):
    with urllib.request.urlopen(srv.endpoint + "/metrics", timeout=10) as r:
        return bl.parse_metrics(r.read().decode())


class Nginx:
    def __init__(self, root):
        self.root = root
        self.prefix = tempfile.mkdtemp(prefix="wharf-bench-nginx-")
        self.port = free_port()
        self.proc = None

    def start(self, workers="auto"):
        os.chmod(self.prefix, 0o755)
        conf = os.path.join(self.prefix, "nginx.conf")
        user = "user root;\n" if os.geteuid() == 0 else ""
        with open(conf, "w") as f:
            f.write(f"""{user}worker_processes {workers};
daemon off;
pid {self.prefix}/nginx.pid;
error_log {self.prefix}/error.log warn;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  sendfile on;
  tcp_nopush on;
  tcp_nodelay on;
  keepalive_requests 1000000;
  keepalive_timeout 120s;
  client_body_temp_path {self.prefix}/body;
  default_type application/octet-stream;
  server {{
    listen 127.0.0.1:{self.port};
    root {self.root};
    location / {{ }}
  }}
}}
""")
        self.log = open(os.path.join(self.prefix, "stderr.log"), "wb")
        self.proc = subprocess.Popen(["nginx", "-p", self.prefix, "-e",
                                      os.path.join(self.prefix, "error.log"), "-c", conf],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"nginx exited {self.proc.returncode}: {self.tail()}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/", timeout=1):
                    return self
            except urllib.error.HTTPError:
                return self  # 403/404 on / is fine: it answers
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError("nginx did not answer in 15 s: " + self.tail())

    def tail(self):
        out = ""
        for n in ("error.log", "stderr.log"):
            try:
                with open(os.path.join(self.prefix, n), errors="replace") as f:
                    out += f.read()[-2000:]
            except OSError:
                pass
        return out

    def cpu_s(self):
        return bl.tree_cpu_s(self.proc.pid) if self.proc else 0.0

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGQUIT)  # graceful
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=15)
        self.proc = None
        shutil.rmtree(self.prefix, ignore_errors=True)


def make_file(path, size):
    """size bytes: a 1 MiB random block repeated, with the block index stamped in each copy so
    no two MiB are equal."""
    block = bytearray(os.urandom(1 << 20))
    h = hashlib.md5()
    with open(path, "wb") as f:
        left, i = size, 0
        while left > 0:
            block[:8] = i.to_bytes(8, "little")
            chunk = bytes(block[:min(left, len(block))])
            f.write(chunk)
            h.update(chunk)
            left -= len(chunk)
            i += 1
    return h.hexdigest()


def md5_of_get(url, signed):
    """Streams a GET through MD5 (outside any timed window)."""
    args = [CURL, "-sS", "--fail", "-o", "-", url] + (SIGV4 if signed else [])
    p = subprocess.Popen(args, stdout=subprocess.PIPE)
    h = hashlib.md5()
    n = 0
    while True:
        b = p.stdout.read(1 << 22)
        if not b:
            break
        h.update(b)
        n += len(b)
    p.wait(timeout=300)
    return h.hexdigest(), n, p.returncode


def curl_get(url, signed, size):
    args = [CURL, "-sS", "-o", "/dev/null", "-w", WFMT, url] + (SIGV4 if signed else [])
    rc, out, err, cpu = timed_child(args)
    f = out.split()
    if rc != 0 or len(f) < 6 or f[0] != "200" or int(float(f[1])) != size:
        raise RuntimeError(f"GET {url}: rc {rc}, '{out}' {err.strip()}")
    return {"wall_s": float(f[3]), "ttfb_s": float(f[4]), "client_cpu_s": cpu,
            "bytes": int(float(f[1]))}


def curl_put(url, path, size):
    hdr = tempfile.NamedTemporaryFile(prefix="wharf-bench-hdr-", delete=False)
    hdr.close()
    args = [CURL, "-sS", "-o", "/dev/null", "-D", hdr.name, "-w", WFMT, "-T", path,
            url] + SIGV4
    rc, out, err, cpu = timed_child(args)
    with open(hdr.name, errors="replace") as f:
        headers = f.read()
    os.unlink(hdr.name)
    f = out.split()
    if rc != 0 or len(f) < 6 or f[0] != "200" or int(float(f[2])) != size:
        raise RuntimeError(f"PUT {url}: rc {rc}, '{out}' {err.strip()} {headers[:500]}")
    etag = ""
    for line in headers.splitlines():
        if line.lower().startswith("etag:"):
            etag = line.split(":", 1)[1].strip().strip('"')
    return {"wall_s": float(f[3]), "client_cpu_s": cpu, "bytes": size, "etag": etag}


def s3(method, url, data=None):
    args = [CURL, "-sS", "--fail-with-body", "-X", method, url] + SIGV4
    if data is not None:
        args += ["--data-binary", "@" + data]
    rc, out, err, _ = timed_child(args, timeout=120)
    if rc != 0:
        raise RuntimeError(f"{method} {url}: rc {rc} {out[:300]} {err.strip()}")
    return out


def window(srv, ngx, fn):
    """Runs fn() with server, host and client CPU around it."""
    m0 = metrics(srv) if srv else None
    n0 = ngx.cpu_s() if ngx else None
    h0 = bl.host_cpu()
    r = fn()
    h1 = bl.host_cpu()
    if srv:
        m1 = metrics(srv)
        r["server_cpu_s"] = m1.get("process_cpu_seconds_total", 0) - \
            m0.get("process_cpu_seconds_total", 0)
        r["metrics_delta"] = bl.metrics_delta(m0, m1)
    if ngx:
        r["server_cpu_s"] = ngx.cpu_s() - n0
    r["host_cpu_s"] = bl.host_busy_s(h0, h1)
    gb = r["bytes"] / 1e9
    r["throughput_gbps_bytes"] = gb / r["wall_s"] if r["wall_s"] > 0 else 0
    for k in ("client_cpu_s", "server_cpu_s", "host_cpu_s"):
        r[k + "_per_gb"] = r[k] / gb if gb > 0 and k in r else None
    return r


def arm_summary(runs):
    out = {"runs": runs}
    for k in ("throughput_gbps_bytes", "wall_s", "client_cpu_s_per_gb", "server_cpu_s_per_gb",
              "host_cpu_s_per_gb", "ttfb_s", "ops_per_s"):
        vals = [r[k] for r in runs if r.get(k) is not None]
        if vals:
            out[k] = bl.summary(vals)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--size-mib", type=int, default=1024)
    ap.add_argument("--repeats", type=int, default=5, help="paired GET repeats (>= 3)")
    ap.add_argument("--put-repeats", type=int, default=3)
    ap.add_argument("--small-kib", type=int, default=256)
    ap.add_argument("--small-objects", type=int, default=64)
    ap.add_argument("--connections", type=int, default=16)
    ap.add_argument("--duration", type=float, default=5.0, help="seconds per loadgen run")
    ap.add_argument("--load-repeats", type=int, default=3)
    ap.add_argument("--nginx-workers", default="auto")
    ap.add_argument("--results", default=os.path.join(bl.REPO, "results"))
    ap.add_argument("--tag", default="")
    ap.add_argument("--workdir", default=None, help="where the test file goes (default /tmp)")
    ap.add_argument("--no-limits", action="store_true")
    a = ap.parse_args()
    if a.repeats < 1 or a.put_repeats < 1 or a.load_repeats < 1:
        ap.error("repeats must be >= 1")
    size = a.size_mib << 20
    t_run = time.monotonic()
    work = tempfile.mkdtemp(prefix="wharf-bench-http-", dir=a.workdir)
    os.chmod(work, 0o755)
    root = os.path.join(work, "www")
    os.makedirs(os.path.join(root, "small"))
    os.chmod(root, 0o755)
    big = os.path.join(root, "big.bin")
    srv = ngx = None
    res = {"params": vars(a) | {"size_bytes": size,
                                "method": "paired A B A B GETs with curl -o /dev/null after one "
                                          "warm-up GET per server; PUT with curl -T (SigV4, "
                                          "UNSIGNED-PAYLOAD); loadgen = libcurl multi, one "
                                          "thread, keep-alive; CPU: curl via RUSAGE_CHILDREN, "
                                          "wharfd via /metrics process_cpu_seconds_total, "
                                          "nginx via /proc of its process tree, host via "
                                          "/proc/stat"}}
    try:
        limits = None if a.no_limits else bl.measure_limits()
        if limits and "error" not in limits:
            log("limits GB/s: memcpy %.2f  process_vm_writev %.2f  tcp %.2f (x%d %.2f)  md5 %.2f" % (
                limits["memcpy_1"]["median"], limits["process_vm_writev_1"]["median"],
                limits["tcp_loopback_1"]["median"], limits["streams_n"],
                limits["tcp_loopback_n"]["median"], limits["md5_1"]["median"]))
        log(f"writing a {a.size_mib} MiB test file in {work}")
        md5 = make_file(big, size)
        small_md5 = []
        for i in range(a.small_objects):
            p = os.path.join(root, "small", f"{i:05d}.bin")
            data = os.urandom(a.small_kib << 10)
            with open(p, "wb") as f:
                f.write(data)
            small_md5.append(hashlib.md5(data).hexdigest())
        for dp, dn, fn in os.walk(root):
            for n in dn:
                os.chmod(os.path.join(dp, n), 0o755)
            for n in fn:
                os.chmod(os.path.join(dp, n), 0o644)

        srv = WharfServer(log_level="warn").start()
        ngx = Nginx(root).start(a.nginx_workers)
        bucket = "bench-http"
        wurl = f"{srv.endpoint}/{bucket}"
        nurl = f"http://127.0.0.1:{ngx.port}"
        s3("PUT", wurl)

        # PUT (also creates the object the GETs read)
        put_runs = []
        for r in range(a.put_repeats):
            run = window(srv, None, lambda: curl_put(f"{wurl}/big.bin", big, size))
            run["etag_ok"] = run["etag"] == md5
            put_runs.append(run)
            log(f"put  wharfd r{r}: {run['throughput_gbps_bytes']:.3f} GB/s  etag "
                f"{'ok' if run['etag_ok'] else 'WRONG ' + run['etag']}")
        # small objects into wharfd
        for i in range(a.small_objects):
            s3("PUT", f"{wurl}/small/{i:05d}.bin", os.path.join(root, "small", f"{i:05d}.bin"))

        # GET, paired
        curl_get(f"{wurl}/big.bin", True, size)
        curl_get(f"{nurl}/big.bin", False, size)
        get_w, get_n = [], []
        for r in range(a.repeats):
            get_w.append(window(srv, None, lambda: curl_get(f"{wurl}/big.bin", True, size)))
            get_n.append(window(None, ngx, lambda: curl_get(f"{nurl}/big.bin", False, size)))
            log(f"get  r{r}: wharfd {get_w[-1]['throughput_gbps_bytes']:.3f} GB/s  nginx "
                f"{get_n[-1]['throughput_gbps_bytes']:.3f} GB/s")
        # bytes check, outside the timed runs
        vw = md5_of_get(f"{wurl}/big.bin", True)
        vn = md5_of_get(f"{nurl}/big.bin", False)
        verify = {"big_wharfd_md5_ok": vw[0] == md5 and vw[1] == size,
                  "big_nginx_md5_ok": vn[0] == md5 and vn[1] == size}
        bad_small = [i for i in range(a.small_objects)
                     if md5_of_get(f"{wurl}/small/{i:05d}.bin", True)[0] != small_md5[i]]
        verify["small_wharfd_md5_ok"] = not bad_small
        verify["small_objects_checked"] = a.small_objects

        # 16 connections x 256 KiB GETs, paired
        lg = os.path.join(bl.build_dir(), "bench", "loadgen")

        def load(url_fmt, signed):
            args = [lg, "--url-fmt", url_fmt, "--keys", str(a.small_objects), "--connections",
                    str(a.connections), "--duration", str(a.duration), "--warmup", "1",
                    "--expect-bytes", str(a.small_kib << 10)]
            if signed:
                args += ["--sigv4", REGION, "--user", f"{ACCESS_KEY}:{SECRET_KEY}"]
            rc, out, err, cpu = timed_child(args, timeout=a.duration + 200)
            if not out.strip():
                raise RuntimeError(f"loadgen: rc {rc}: {err.strip()}")
            j = json.loads(out)
            if rc != 0:
                raise RuntimeError(f"loadgen: {j.get('errors')} errors: {j.get('first_error')}")
            j["wall_s_total"] = j["wall_s"]
            return j

        load_w, load_n = [], []
        for r in range(a.load_repeats):
            for arm, lst in (("wharfd", load_w), ("nginx", load_n)):
                def fn():
                    j = load(f"{wurl}/small/%05u.bin" if arm == "wharfd"
                             else f"{nurl}/small/%05u.bin", arm == "wharfd")
                    return j
                j = window(srv if arm == "wharfd" else None, ngx if arm == "nginx" else None, fn)
                lst.append(j)
                log(f"load r{r} {arm}: {j['ops_per_s']:.0f} ops/s  p50 "
                    f"{j['latency']['p50_ms']:.2f} ms  p99 {j['latency']['p99_ms']:.2f} ms")

        def lat_summary(runs):
            return {k: bl.summary([r["latency"][k] for r in runs])
                    for k in ("p50_ms", "p90_ms", "p99_ms", "max_ms")}

        gw, gn = arm_summary(get_w), arm_summary(get_n)
        ratios = [w["throughput_gbps_bytes"] / n["throughput_gbps_bytes"]
                  for w, n in zip(get_w, get_n)]
        pw = arm_summary(put_runs)
        lw, ln = arm_summary(load_w), arm_summary(load_n)
        lw["latency"], ln["latency"] = lat_summary(load_w), lat_summary(load_n)
        lratio = [w["ops_per_s"] / n["ops_per_s"] for w, n in zip(load_w, load_n)]
        goals = [
            {"goal": f"GET {a.size_mib} MiB: wharfd / nginx >= 0.9 (paired)", "target": 0.9,
             "value": bl.summary(ratios)["median"], "paired": bl.summary(ratios),
             "met": bl.summary(ratios)["median"] >= 0.9},
            {"goal": f"PUT {a.size_mib} MiB with curl >= 1 GB/s, MD5 ETag", "target": 1.0,
             "value": pw["throughput_gbps_bytes"]["median"],
             "met": pw["throughput_gbps_bytes"]["median"] >= 1.0 and
             all(r["etag_ok"] for r in put_runs)},
        ]
        res["results"] = {
            "get_big": {"wharfd": gw, "nginx": gn, "ratio_wharfd_over_nginx":
                         bl.summary(ratios)},
            "put_big": pw | {"etag_md5_ok": all(r["etag_ok"] for r in put_runs)},
            "small_gets": {"wharfd": lw, "nginx": ln, "ratio_ops_wharfd_over_nginx":
                           bl.summary(lratio)},
            "verification": verify,
            "goals": goals,
        }
        res["limits"] = limits
        res["environment"] = bl.environment()
        res["wall_s"] = time.monotonic() - t_run
        path = bl.write_result(a.results, "http-vs-nginx", res, a.tag)
        for g in goals:
            print(f"goal {'MET ' if g['met'] else 'MISS'} {g['goal']:<45} {g['value']:.3f}")
        print(f"GET {a.size_mib} MiB GB/s: wharfd {gw['throughput_gbps_bytes']['median']:.3f} "
              f"({gw['throughput_gbps_bytes']['min']:.3f}-{gw['throughput_gbps_bytes']['max']:.3f})"
              f"  nginx {gn['throughput_gbps_bytes']['median']:.3f} "
              f"({gn['throughput_gbps_bytes']['min']:.3f}-{gn['throughput_gbps_bytes']['max']:.3f})")
        print(f"PUT {a.size_mib} MiB GB/s: {pw['throughput_gbps_bytes']['median']:.3f} "
              f"({pw['throughput_gbps_bytes']['min']:.3f}-{pw['throughput_gbps_bytes']['max']:.3f})")
        print(f"{a.connections} x {a.small_kib} KiB GETs: wharfd "
              f"{lw['ops_per_s']['median']:.0f} ops/s p50 {lw['latency']['p50_ms']['median']:.2f} "
              f"ms p99 {lw['latency']['p99_ms']['median']:.2f} ms;  nginx "
              f"{ln['ops_per_s']['median']:.0f} ops/s p50 {ln['latency']['p50_ms']['median']:.2f} "
              f"ms p99 {ln['latency']['p99_ms']['median']:.2f} ms")
        print(f"verification: {verify}")
        print(path)
        ok = all(verify[k] for k in verify if k.endswith("_ok"))
        return 0 if ok else 1
    finally:
        if ngx:
            ngx.stop()
        if srv:
            srv.cleanup()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
