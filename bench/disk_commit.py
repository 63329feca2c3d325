#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Durable write patterns on one file system: which part of wharfd's commit costs what.

  /usr/bin/python3 bench/disk_commit.py DIR [--writers 1,16] [--mib 64] [--files 4] [--repeats 3]

Each writer thread writes --files files of --mib MiB (4 MiB writes from one prefilled buffer,
as wharfd's RDMA chunks arrive) and makes each durable, in one of these patterns, paired
(every pattern once per repeat, in turn):
  fsync          write, fsync                                    (dd conv=fsync)
  commit         write, fsync, rename into a subdirectory, fsync that directory
                                                                  (wharfd's data_local finish)
  commit+sfr     commit, with sync_file_range(SYNC_FILE_RANGE_WRITE) after every 8 MiB
                                                                  (wharfd today)
  commit+sfr+meta  commit+sfr, then a metadata row committed to one SQLite database in the
                 same directory (WAL, synchronous=FULL, one writer at a time, as wharfd's
                 SQLite store commits each object)
  inplace        size the file, map it, copy 8 MiB windows into the mapping with
                 sync_file_range after each, fsync, rename, fsync the directory
                                                                  (wharfd's RDMA PUT in place)
  direct         O_DIRECT writes, fdatasync                      (no page cache)
GB/s = all writers' bytes / wall time. Python's os calls release the GIL, so the threads
write in parallel. The limit of the file system is the best of these; wharfd's own PUT rate
on the same directory is measured by wharf_bench put.
"""
import argparse
import ctypes
import mmap
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import threading
import time

SFR_CHUNK = 8 << 20
WRITE = 4 << 20
SYNC_FILE_RANGE_WRITE = 2
_libc = ctypes.CDLL(None, use_errno=True)
_libc.sync_file_range.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]


def sync_file_range(fd, off, n):
    if _libc.sync_file_range(fd, off, n, SYNC_FILE_RANGE_WRITE) != 0:
        raise OSError(ctypes.get_errno(), "sync_file_range")


class Meta:
    """One SQLite database, one writer at a time (wharfd's SQLite store)."""

    def __init__(self, d):
        self.db = sqlite3.connect(os.path.join(d, "meta.db"), check_same_thread=False,
                                  isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.execute("CREATE TABLE IF NOT EXISTS o (k TEXT PRIMARY KEY, size INTEGER)")
        self.lock = threading.Lock()

    def commit(self, name, size):
        with self.lock:
            self.db.execute("BEGIN IMMEDIATE")
            self.db.execute("INSERT OR REPLACE INTO o VALUES (?, ?)", (name, size))
            self.db.execute("COMMIT")


META = None


def inplace_file(tmp, nbytes, buf):
    fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o640)
    os.ftruncate(fd, nbytes)
    m = mmap.mmap(fd, nbytes, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    done = 0
    while done < nbytes:
        end = min(done + SFR_CHUNK, nbytes)
        for off in range(done, end, WRITE):
            n = min(WRITE, end - off)
            m[off:off + n] = buf[:n]
        sync_file_range(fd, done, end - done)
        done = end
    m.close()
    return fd


def one_file(d, name, nbytes, buf, pattern):
    tmp = os.path.join(d, "tmp", name)
    if pattern == "inplace":
        fd = inplace_file(tmp, nbytes, buf)
        os.fsync(fd)
        os.close(fd)
        sub = os.path.join(d, "objects", name[:2])
        os.rename(tmp, os.path.join(sub, name))
        dfd = os.open(sub, os.O_RDONLY | os.O_DIRECTORY)
        os.fsync(dfd)
        os.close(dfd)
        return
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    if pattern == "direct":
        flags |= os.O_DIRECT
    fd = os.open(tmp, flags, 0o640)
    done = synced = 0
    while done < nbytes:
        n = min(WRITE, nbytes - done)
        os.write(fd, buf[:n])
        done += n
        if pattern.startswith("commit+sfr") and done - synced >= SFR_CHUNK:
            sync_file_range(fd, synced, done - synced)
            synced = done
    if pattern == "direct":
        os.fdatasync(fd)
    else:
        os.fsync(fd)
    os.close(fd)
    if pattern.startswith("commit"):
        sub = os.path.join(d, "objects", name[:2])
        os.rename(tmp, os.path.join(sub, name))
        dfd = os.open(sub, os.O_RDONLY | os.O_DIRECTORY)
        os.fsync(dfd)
        os.close(dfd)
    if pattern.endswith("+meta"):
        META.commit(name, nbytes)


def run(d, writers, files, nbytes, pattern, buf):
    errs = []

    def w(i):
        try:
            for k in range(files):
                one_file(d, f"{i % 256:02x}{k:04d}{i:04d}", nbytes, buf, pattern)
        except OSError as e:
            errs.append(e)
    ts = [threading.Thread(target=w, args=(i,)) for i in range(writers)]
    t0 = time.perf_counter()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    wall = time.perf_counter() - t0
    if errs:
        raise errs[0]
    for sub in ("tmp", "objects"):
        for root, _, names in os.walk(os.path.join(d, sub)):
            for n in names:
                os.unlink(os.path.join(root, n))
    return writers * files * nbytes / wall / 1e9


def prepare(d):
    """The directories a run writes in: d/tmp and d/objects/00..ff (wharfd's layout)."""
    os.makedirs(os.path.join(d, "tmp"), exist_ok=True)
    for b in range(256):
        os.makedirs(os.path.join(d, "objects", f"{b:02x}"), exist_ok=True)


def durable_rate(parent, writers=16, files=4, mib=64, pattern="commit+sfr"):
    """One measure of the durable write rate (GB/s) of the file system under parent, in
    wharfd's commit pattern: what a benchmark records as limits.durable_write_gbps beside its
    own disk cells (bench/py/ckpt.py between repeats). Writes in a directory of its own under
    parent and removes it."""
    d = tempfile.mkdtemp(prefix=".durable-limit-", dir=parent)
    try:
        prepare(d)
        buf = mmap.mmap(-1, WRITE)
        buf.write(os.urandom(WRITE))
        return run(d, writers, files, mib << 20, pattern, memoryview(buf))
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("dir")
    ap.add_argument("--writers", default="1,16")
    ap.add_argument("--mib", type=int, default=64)
    ap.add_argument("--files", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--patterns",
                    default="fsync,commit,commit+sfr,commit+sfr+meta,inplace,direct")
    ap.add_argument("--best", action="store_true",
                    help="print only the best median GB/s over all patterns and writer counts")
    a = ap.parse_args()
    global META
    d = os.path.join(a.dir, "disk-commit")
    prepare(d)
    META = Meta(d)
    buf = mmap.mmap(-1, WRITE)  # page-aligned, as O_DIRECT needs
    buf.write(os.urandom(WRITE))
    buf = memoryview(buf)
    nbytes = a.mib << 20
    patterns = a.patterns.split(",")
    if not a.best:
        print(f"dir={a.dir} file={a.mib} MiB files/writer={a.files} repeats={a.repeats}")
    best = (0.0, "")
    for wn in (int(x) for x in a.writers.split(",")):
        got = {p: [] for p in patterns}
        for _ in range(a.repeats):
            for p in patterns:
                got[p].append(run(d, wn, a.files, nbytes, p, buf))
        for p in patterns:
            v = got[p]
            best = max(best, (statistics.median(v), f"{p}, {wn} writers"))
            if not a.best:
                print(f"writers={wn:3d} {p:15s} GB/s median {statistics.median(v):.2f} "
                      f"({min(v):.2f}-{max(v):.2f})", flush=True)
    if a.best:
        print(f"{best[0]:.3f} {best[1]}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
