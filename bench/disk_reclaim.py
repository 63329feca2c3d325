#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Giving a large file's blocks back: what another writer's durable commits see meanwhile.

  /usr/bin/python3 bench/disk_reclaim.py DIR [--gib 8] [--files 3] [--modes unlink,punch]
                                             [--step-mib 256] [--rounds 3]

Each round writes --files files of --gib GiB together (4 MiB writes, fdatasync: an old
checkpoint generation), then, for each mode in turn (paired: every mode once per round, the
files rewritten before each), gives them back while two other threads keep writing:
  a committer   every 10 ms a 4 KiB file written, fsync'd, renamed into a subdirectory and that
                directory fsync'd (an index PUT or a DELETE's metadata commit), its latency
                recorded;
  a streamer    64 MiB files of 4 MiB writes, each fdatasync'd (the next save's shards), its
                rate recorded.
Modes:
  unlink        each file unlinked in one call (the data table's reclaiming thread today)
  steps         each file truncated by --step-mib at a time from its end, fdatasync after each
                step, then unlinked empty (RocksDB's delete scheduler)
  punch         holes of --step-mib punched from its end, fdatasync after each, then unlinked
                (wharfd's data table: a reader still holding the file reads zeros, not SIGBUS)
The window runs from the first unlink or truncate to 1 s after the last (a file system mounted
`discard` may discard in the next journal commit). Reported per mode: the give-back time, the
committer's latencies in the window (max, p99, median) against the 1 s before it, the
streamer's GB/s in the window against before, and the device's discard counters
(/sys/dev/block/M:m/stat) over the window.
"""
import argparse
import ctypes
import json
import os
import statistics
import sys
import threading
import time

WRITE = 4 << 20
FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE = 1, 2
_libc = ctypes.CDLL(None, use_errno=True)
_libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]


def punch(fd, off, n):
    if _libc.fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off, n) != 0:
        raise OSError(ctypes.get_errno(), "fallocate(PUNCH_HOLE)")


def dev_stat(path):
    """(discard ios, discard sectors) of the block device under path, or None."""
    st = os.stat(path)
    for p in (f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}/stat",):
        try:
            f = open(p).read().split()
            if len(f) >= 15:
                return int(f[11]), int(f[13])
        except OSError:
            pass
    return None


def write_file(path, nbytes, buf):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        left = nbytes
        while left > 0:
            left -= os.write(fd, buf[:min(left, len(buf))])
        os.fdatasync(fd)
    finally:
        os.close(fd)


class Load:
    """The committer and the streamer, both running until stop."""

    def __init__(self, d, buf):
        self.d = d
        self.buf = buf
        self.commits = []  # (t_start, latency_s)
        self.streams = []  # (t_end, bytes, seconds)
        self.stop = threading.Event()
        os.makedirs(os.path.join(d, "c"), exist_ok=True)
        os.makedirs(os.path.join(d, "s"), exist_ok=True)
        self.cdir = os.open(os.path.join(d, "c"), os.O_RDONLY | os.O_DIRECTORY)
        self.th = [threading.Thread(target=self._commit), threading.Thread(target=self._stream)]

    def _commit(self):
        i = 0
        small = b"x" * 4096
        while not self.stop.is_set() and i < 100000:
            t = time.perf_counter()
            tmp = os.path.join(self.d, f"c.tmp{i % 2}")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.write(fd, small)
            os.fsync(fd)
            os.close(fd)
            os.rename(tmp, os.path.join(self.d, "c", f"{i % 64}"))
            os.fsync(self.cdir)
            self.commits.append((t, time.perf_counter() - t))
            i += 1
            self.stop.wait(0.01)

    def _stream(self):
        i = 0
        while not self.stop.is_set() and i < 100000:
            t = time.perf_counter()
            write_file(os.path.join(self.d, "s", f"{i % 8}"), 64 << 20, self.buf)
            self.streams.append((time.perf_counter(), 64 << 20, time.perf_counter() - t))
            i += 1

    def __enter__(self):
        for t in self.th:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for t in self.th:
            t.join()
        os.close(self.cdir)


def give_back(paths, mode, step):
    for p in paths:
        if mode in ("steps", "punch"):
            fd = os.open(p, os.O_WRONLY)
            try:
                size = os.fstat(fd).st_size
                for _ in range(100000):
                    if size <= 0:
                        break
                    start = max(0, size - step)
                    if mode == "steps":
                        os.ftruncate(fd, start)
                    else:
                        punch(fd, start, size - start)
                    size = start
                    os.fdatasync(fd)
            finally:
                os.close(fd)
        os.unlink(p)


def window_stats(load, t0, t1, before_s=1.0):
    def lat(a, b):
        v = sorted(x[1] for x in load.commits if a <= x[0] < b)
        if not v:
            return {"n": 0}
        return {"n": len(v), "max_ms": v[-1] * 1e3, "p99_ms": v[int(0.99 * (len(v) - 1))] * 1e3,
                "median_ms": statistics.median(v) * 1e3}

    def rate(a, b):
        s = [x for x in load.streams if a <= x[0] < b]
        secs = sum(x[2] for x in s)
        return sum(x[1] for x in s) / secs / 1e9 if secs > 0 else None

    return {"commit_in_window": lat(t0, t1), "commit_before": lat(t0 - before_s, t0),
            "stream_gbps_in_window": rate(t0, t1), "stream_gbps_before": rate(t0 - before_s, t0)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("dir")
    ap.add_argument("--gib", type=float, default=8.0)
    ap.add_argument("--files", type=int, default=3)
    ap.add_argument("--modes", default="unlink,punch")
    ap.add_argument("--step-mib", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", default=None, help="write the rounds here as JSON")
    a = ap.parse_args()
    modes = a.modes.split(",")
    for m in modes:
        if m not in ("unlink", "steps", "punch"):
            ap.error(f"--modes: unknown mode {m!r} (unlink, steps, punch)")
    if not 1 <= a.rounds <= 20 or a.files < 1 or a.gib <= 0:
        ap.error("--rounds 1..20, --files >= 1, --gib > 0")
    os.makedirs(a.dir, exist_ok=True)
    buf = os.urandom(WRITE)
    per = int(a.gib * (1 << 30)) // a.files
    rows = []
    for r in range(a.rounds):
        for m in modes:
            paths = [os.path.join(a.dir, f"old{i}") for i in range(a.files)]
            for p in paths:
                write_file(p, per, buf)
            with Load(os.path.join(a.dir, "load"), buf) as load:
                time.sleep(1.2)
                d0 = dev_stat(a.dir)
                t0 = time.perf_counter()
                give_back(paths, m, a.step_mib << 20)
                t1 = time.perf_counter()
                time.sleep(1.0)
                d1 = dev_stat(a.dir)
                t2 = time.perf_counter()
            row = {"round": r, "mode": m, "give_back_s": t1 - t0, **window_stats(load, t0, t2)}
            if d0 and d1:
                row["discard_ios"] = d1[0] - d0[0]
                row["discard_gib"] = (d1[1] - d0[1]) * 512 / (1 << 30)
            rows.append(row)
            c, b = row["commit_in_window"], row["commit_before"]
            print(f"round {r} {m:6s} give back {row['give_back_s']:.3f}s  commit max "
                  f"{c.get('max_ms', 0):.1f} p99 {c.get('p99_ms', 0):.1f} med "
                  f"{c.get('median_ms', 0):.1f} ms (before: max {b.get('max_ms', 0):.1f} med "
                  f"{b.get('median_ms', 0):.1f})  stream {row['stream_gbps_in_window'] or 0:.2f}"
                  f" GB/s (before {row['stream_gbps_before'] or 0:.2f})  discard "
                  f"{row.get('discard_gib', float('nan')):.2f} GiB", flush=True)
    for m in modes:
        v = [x for x in rows if x["mode"] == m]
        print(f"{m:6s} median: give back {statistics.median(x['give_back_s'] for x in v):.3f}s"
              f"  commit max {statistics.median(x['commit_in_window'].get('max_ms', 0) for x in v):.1f}"
              f" ms  stream {statistics.median((x['stream_gbps_in_window'] or 0) for x in v):.2f}"
              " GB/s")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"params": vars(a), "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
