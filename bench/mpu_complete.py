#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""CompleteMultipartUpload latency and whole multipart upload throughput, two wharfd builds
paired (A B A B ...): --base (e.g. main's build, which copies the parts into a new file at
Complete) and --new (this build, which composes the object from the part files).

For each file system (--fs NAME=DIR: the data directory is made under DIR) and object size, per
round and arm: a fresh wharfd, a bucket, CreateMultipartUpload, the parts (--part-size, sent by
--streams threads with UNSIGNED-PAYLOAD from memory), then CompleteMultipartUpload, timed alone;
then one HTTP GET of the whole object (curl --aws-sigv4 to /dev/null; wharfd's CPU seconds
over it per GB) and, with --rdma 1, one RDMA GET (ofi+shm, python wharf) into one buffer. Every
byte of both GETs is checked by SHA-256 outside the timed windows (the HTTP one by a second
GET). The files the object leaves under objects/ are counted (base: 1; new: one per part).

Limits in the same run, per file system: copy_file_range of an object-sized file (what base's
Complete does) with fdatasync, and a sequential write of the same size with fdatasync (what
the parts' upload cannot beat). Figures: median and min-max of --rounds rounds.

    /usr/bin/python3 bench/mpu_complete.py --base ../base/build --new build \\
        --fs tmpfs=/dev/shm --fs disk=/var/tmp --sizes 1G,4G --part-size 64M --rounds 3
"""
import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

import benchlib  # noqa: E402
from s3raw import UNSIGNED, S3Raw  # noqa: E402
from wharfd import ACCESS_KEY, SECRET_KEY, WharfServer  # noqa: E402

NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"
# curl 7.88 does not send x-amz-content-sha256 itself; S3 requires it, and curl signs it.
SIGV4 = ["--aws-sigv4", "aws:amz:us-east-1:s3", "--user", f"{ACCESS_KEY}:{SECRET_KEY}",
         "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD"]


def limit_copy(dirpath, size):
    """copy_file_range of a size-byte file into a new one, with fdatasync: GB/s."""
    src = os.path.join(dirpath, "limit-src")
    dst = os.path.join(dirpath, "limit-dst")
    w = limit_write(dirpath, size, keep=src)
    fi = os.open(src, os.O_RDONLY)
    fo = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    t0 = time.monotonic()
    left = size
    while left:
        n = os.copy_file_range(fi, fo, min(left, 1 << 30))
        if n <= 0:
            raise RuntimeError("copy_file_range stopped early")
        left -= n
    os.fdatasync(fo)
    dt = time.monotonic() - t0
    os.close(fi)
    os.close(fo)
    os.unlink(src)
    os.unlink(dst)
    return size / dt / 1e9, w


def limit_write(dirpath, size, keep=None):
    """Sequential write of size bytes (8 MiB writes) with fdatasync: GB/s."""
    path = keep or os.path.join(dirpath, "limit-write")
    buf = os.urandom(8 << 20)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    t0 = time.monotonic()
    left = size
    while left:
        left -= os.write(fd, buf[:min(left, len(buf))])
    os.fdatasync(fd)
    dt = time.monotonic() - t0
    os.close(fd)
    if not keep:
        os.unlink(path)
    return size / dt / 1e9


class ArmServer(WharfServer):
    """The one test server starter, running the wharfd of one arm's build."""
    def __init__(self, binary_dir, **kw):
        super().__init__(**kw)
        self.binary_dir = binary_dir

    @property
    def binary(self):
        return os.path.join(self.binary_dir, "wharfd")


def get_sha256(endpoint):
    """The whole object by HTTP, hashed (outside the timed window)."""
    p = subprocess.Popen(["curl", "-sS", "--fail", *SIGV4, f"{endpoint}/bench/obj"],
                         stdout=subprocess.PIPE)
    h = hashlib.sha256()
    while True:
        b = p.stdout.read(8 << 20)
        if not b:
            break
        h.update(b)
    return h.hexdigest() if p.wait() == 0 else ""


def rdma_get(srv, size, want_sha, provider):
    """GET of the whole object by RDMA (python wharf, libwharf of the --new build) into one
    buffer: seconds, and whether every byte is right (hashed after the window)."""
    import wharf
    c = wharf.Client(srv.endpoint, ACCESS_KEY, SECRET_KEY, region="us-east-1",
                     provider=provider,
                     unix_socket=srv.unix_socket if provider == "ofi+shm" else None)
    try:
        buf = bytearray(size)
        c.get_into("bench", "obj", buf, transport="rdma")  # registers buf; warm
        t0 = time.monotonic()
        rep = c.get_into("bench", "obj", buf, transport="rdma")
        dt = time.monotonic() - t0
        ok = rep.transport == "rdma" and rep.bytes == size and \
            hashlib.sha256(buf).hexdigest() == want_sha
        return dt, ok
    finally:
        c.close()


def rdma_ranges(srv, raw, data, part_size, provider, range_size):
    """Ranged RDMA GETs that straddle part boundaries, of the composed object and of a one-file
    copy of it (CopyObject), alternating per range: seconds for each, and whether every byte
    was right (compared after each window)."""
    import wharf
    r = raw.request("PUT", "/bench/flat", headers={"x-amz-copy-source": "/bench/obj"},
                    timeout=600)
    assert r.status == 200, r.body
    c = wharf.Client(srv.endpoint, ACCESS_KEY, SECRET_KEY, region="us-east-1",
                     provider=provider,
                     unix_socket=srv.unix_socket if provider == "ofi+shm" else None)
    try:
        buf = bytearray(range_size)
        offs = [k * part_size - range_size // 2 for k in range(1, len(data) // part_size)]
        t = {"obj": 0.0, "flat": 0.0}
        ok = True
        c.get_into("bench", "obj", buf, offset=offs[0], length=range_size, transport="rdma")
        for i, off in enumerate(offs):
            for key in (("obj", "flat") if i % 2 == 0 else ("flat", "obj")):
                t0 = time.monotonic()
                rep = c.get_into("bench", key, buf, offset=off, length=range_size,
                                 transport="rdma")
                t[key] += time.monotonic() - t0
                ok = ok and rep.transport == "rdma" and buf == data[off:off + range_size]
        n = len(offs) * range_size
        return {"composed_gbps": n / t["obj"] / 1e9, "one_file_gbps": n / t["flat"] / 1e9,
                "ranges": len(offs), "range_bytes": range_size, "bytes_ok": ok}
    finally:
        c.close()


def one_round(binary_dir, fsdir, size, part_size, streams, data, want_sha, rdma,
              ranged=None):
    d = tempfile.mkdtemp(prefix="wharf-mpu-bench-", dir=fsdir)
    srv = ArmServer(binary_dir, data_dir=d,
                    providers="shm,tcp" if ranged else "shm" if rdma else "none",
                    log_level="warn")
    srv.start()
    try:
        raw = S3Raw(srv.endpoint)
        assert raw.request("PUT", "/bench").status == 200
        t0 = time.monotonic()
        r = raw.request("POST", "/bench/obj", query=[("uploads", None)])
        assert r.status == 200, r.body
        uid = ET.fromstring(r.body).find(NS + "UploadId").text
        nparts = (size + part_size - 1) // part_size
        etags = [None] * nparts
        errs = []

        def sender(k):
            conn = S3Raw(srv.endpoint)
            for i in range(k, nparts, streams):
                lo = i * part_size
                body = memoryview(data)[lo:min(size, lo + part_size)]
                rr = conn.request("PUT", "/bench/obj",
                                  query=[("partNumber", str(i + 1)), ("uploadId", uid)],
                                  body=body, payload_hash=UNSIGNED, timeout=600)
                if rr.status != 200:
                    errs.append(rr.body)
                    return
                etags[i] = rr.headers["etag"]
        ths = [threading.Thread(target=sender, args=(k,)) for k in range(streams)]
        for t in ths:
            t.start()
        for t in ths:
            t.join()
        assert not errs, errs[:1]
        xml = "<CompleteMultipartUpload>" + "".join(
            f"<Part><PartNumber>{i + 1}</PartNumber><ETag>{e}</ETag></Part>"
            for i, e in enumerate(etags)) + "</CompleteMultipartUpload>"
        tc = time.monotonic()
        r = raw.request("POST", "/bench/obj", query=[("uploadId", uid)], body=xml.encode(),
                        timeout=600)
        t1 = time.monotonic()
        assert r.status == 200 and b"<ETag>" in r.body, r.body
        files = sum(len(f) for _, _, f in os.walk(os.path.join(d, "objects")))
        # One GET of the whole object over HTTP into /dev/null, timed; then every byte
        # checked by a second GET, hashed outside the timed window.
        cpu0 = benchlib.proc_cpu_s(srv.proc.pid)
        g0 = time.monotonic()
        p = subprocess.run(
            ["curl", "-sS", "--fail", "-o", "/dev/null", *SIGV4, f"{srv.endpoint}/bench/obj"],
            capture_output=True, text=True, timeout=600)
        g1 = time.monotonic()
        get_cpu = benchlib.proc_cpu_s(srv.proc.pid) - cpu0
        ok = p.returncode == 0 and get_sha256(srv.endpoint) == want_sha
        out = {"complete_s": t1 - tc, "upload_s": t1 - t0, "get_s": g1 - g0,
               "get_server_cpu_s": get_cpu, "files": files, "bytes_ok": ok}
        if rdma:
            out["rdma_get_s"], rok = rdma_get(srv, size, want_sha, "ofi+shm")
            out["bytes_ok"] = ok and rok
        if ranged:
            out["rdma_ranges"] = {p: rdma_ranges(srv, raw, data, part_size, p, ranged)
                                  for p in ("ofi+shm", "ofi+tcp")}
            out["bytes_ok"] = out["bytes_ok"] and all(
                v["bytes_ok"] for v in out["rdma_ranges"].values())
        return out
    finally:
        srv.stop()
        shutil.rmtree(d, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", required=True, help="build dir of the base arm (its wharfd)")
    ap.add_argument("--new", default=benchlib.build_dir(), help="build dir of the new arm")
    ap.add_argument("--fs", action="append", required=True, help="NAME=DIR, repeatable")
    ap.add_argument("--sizes", default="1G,4G")
    ap.add_argument("--part-size", default="64M")
    ap.add_argument("--streams", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rdma", type=int, default=1,
                    help="1: also GET the object by RDMA (ofi+shm, python wharf)")
    ap.add_argument("--rdma-max-size", default="1G",
                    help="RDMA GET only for objects up to this size (it needs one more "
                         "object-sized buffer in this process)")
    ap.add_argument("--ranged-rdma", default="0",
                    help="range size (e.g. 8M): in the new arm, also ranged RDMA GETs across "
                         "part boundaries (ofi+shm, ofi+tcp) of the composed object against "
                         "a one-file copy of it; 0: not run")
    ap.add_argument("--results", default=os.path.join(benchlib.REPO, "results"))
    a = ap.parse_args()
    sizes = [benchlib.parse_size(s) for s in a.sizes.split(",")]
    part = benchlib.parse_size(a.part_size)
    arms = {"base": os.path.abspath(a.base), "new": os.path.abspath(a.new)}
    t_start = time.monotonic()
    root = {"params": {"sizes": sizes, "part_size": part, "streams": a.streams,
                       "rounds": a.rounds, "fs": a.fs, "arms": arms, "rdma": a.rdma,
                       "rdma_max_size": benchlib.parse_size(a.rdma_max_size),
                       "ranged_rdma": benchlib.parse_size(a.ranged_rdma),
                       "order": "paired: base new per round, a fresh wharfd each"},
            "environment": benchlib.environment(), "limits": {}, "results": {}}
    if benchlib.parse_size(a.ranged_rdma):
        # memcpy, process_vm_writev, loopback TCP: what the RDMA providers cannot beat here.
        root["limits"]["host"] = benchlib.measure_limits(repeats=3, mib=256)
    for spec in a.fs:
        name, fsdir = spec.split("=", 1)
        for size in sizes:
            data = os.urandom(size)
            want = hashlib.sha256(data).hexdigest()
            cell = {arm: [] for arm in arms}
            cp, wr = [], []
            for rnd in range(a.rounds):
                c, w = limit_copy(fsdir, size)
                cp.append(c)
                wr.append(w)
                order = list(arms) if rnd % 2 == 0 else list(arms)[::-1]
                for arm in order:
                    ranged = benchlib.parse_size(a.ranged_rdma) if arm == "new" else 0
                    r = one_round(arms[arm], fsdir, size, part, a.streams, data, want,
                                  a.rdma and size <= benchlib.parse_size(a.rdma_max_size), ranged)
                    if "rdma_ranges" in r:
                        print(f"  ranged rdma: {r['rdma_ranges']}", flush=True)
                    cell[arm].append(r)
                    print(f"{name} {size >> 20} MiB round {rnd} {arm}: complete "
                          f"{r['complete_s'] * 1e3:.1f} ms, upload {size / r['upload_s'] / 1e9:.2f}"
                          f" GB/s, get {size / r['get_s'] / 1e9:.2f} GB/s "
                          f"(server cpu {r['get_server_cpu_s'] / (size / 1e9):.2f} s/GB), rdma get "
                          f"{size / r.get('rdma_get_s', float('inf')) / 1e9:.2f} GB/s, "
                          f"files {r['files']}, "
                          f"bytes_ok {r['bytes_ok']}", flush=True)
            key = f"{name}-{size >> 20}MiB"
            root["limits"][key] = {"copy_file_range_gbps": benchlib.summary(cp),
                                   "write_fdatasync_gbps": benchlib.summary(wr)}
            res = {}
            for arm, rs in cell.items():
                res[arm] = {
                    "complete_ms": benchlib.summary([r["complete_s"] * 1e3 for r in rs]),
                    "upload_gbps": benchlib.summary([size / r["upload_s"] / 1e9 for r in rs]),
                    "get_gbps": benchlib.summary([size / r["get_s"] / 1e9 for r in rs]),
                    "get_server_cpu_s_per_gb": benchlib.summary(
                        [r["get_server_cpu_s"] / (size / 1e9) for r in rs]),
                    "rdma_get_gbps": benchlib.summary(
                        [size / r["rdma_get_s"] / 1e9 for r in rs if "rdma_get_s" in r]),
                    "files": [r["files"] for r in rs],
                    "rdma_ranges": {p: {k: benchlib.summary([r["rdma_ranges"][p][k] for r in rs])
                                        for k in ("composed_gbps", "one_file_gbps")}
                                    for p in ("ofi+shm", "ofi+tcp")}
                    if all("rdma_ranges" in r for r in rs) else None,
                    "bytes_ok": all(r["bytes_ok"] for r in rs),
                }
            res["complete_speedup_paired"] = benchlib.summary(
                [b["complete_s"] / n["complete_s"] for b, n in zip(cell["base"], cell["new"])])
            res["upload_ratio_paired"] = benchlib.summary(
                [b["upload_s"] / n["upload_s"] for b, n in zip(cell["base"], cell["new"])])
            root["results"][key] = res
            del data
    root["wall_s"] = time.monotonic() - t_start
    print(benchlib.write_result(a.results, "mpu_complete", root))


if __name__ == "__main__":
    main()
