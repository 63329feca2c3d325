# SPDX-License-Identifier: Apache-2.0
"""Storage servers under resource limits.

- Locked memory: each storage server sizes its registered buffer pool from the host and
  RLIMIT_MEMLOCK (src/server/engine/rdma_pool.c: within the limit where the provider pins memory).
  Under `ulimit -l 8192` (8 MiB) the storage servers start, see the limit, and RDMA GETs and
  PUTs (ofi+shm and ofi+tcp) still work with every byte checked; the throughput is printed
  (docs/cluster.md records it).
- Memory: each storage server in a memory cgroup capped far below the data it holds (1/7),
  so a pass over every object must come from disk; bytes checked. Skipped, with the reason,
  where cgroups are not writable."""
import os
import time
import uuid

import pytest

import wharf
from cluster import Cluster
from wharfd import ACCESS_KEY, REGION, SECRET_KEY, unique_bucket, wait_until

MIB = 1 << 20


def test_memlock_8mib_budget():
    limit = 8192 * 1024
    with Cluster(storage=2, replicas=2, chunk_size=MIB, providers="shm,tcp",
                 storage_prefix=["prlimit", f"--memlock={limit}:{limit}", "--"]) as cl:
        for s in cl.storage:
            log = s.log_tail(20000)
            assert "rdma pool sized from the host" in log and "memlock=8388608" in log, log
        g = cl.gateway
        data = os.urandom(24 * MIB + 3)
        for prov in ("ofi+shm", "ofi+tcp"):
            c = wharf.Client(g.endpoint, ACCESS_KEY, SECRET_KEY, region=REGION, provider=prov,
                             unix_socket=os.path.join(g.data_dir, "wharfd.sock")
                             if prov == "ofi+shm" else None, multipart_threshold=1 << 40)
            b = unique_bucket("clmem")
            c.create_bucket(b)
            w0 = cl.storage_sum("wharf_rdma_read_bytes_total")
            t0 = time.monotonic()
            assert c.put(b, "o", data, transport="rdma").transport == "rdma"
            t1 = time.monotonic()
            got = c.get(b, "o", transport="rdma")
            t2 = time.monotonic()
            assert got == data
            assert cl.storage_sum("wharf_rdma_read_bytes_total") - w0 >= 0.99 * len(data)
            print(f"memlock 8 MiB {prov}: PUT {len(data) / (t1 - t0) / 1e9:.3f} GB/s "
                  f"GET {len(data) / (t2 - t1) / 1e9:.3f} GB/s")
            c.close()


def _memory_cgroup():
    """(make, add, remove) for a memory cgroup of the test's own, or a reason string."""
    v2 = "/sys/fs/cgroup/unified" if os.path.exists("/sys/fs/cgroup/unified/cgroup.procs") \
        else "/sys/fs/cgroup"
    if os.path.exists("/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        root, limit_file = "/sys/fs/cgroup/memory", "memory.limit_in_bytes"
    elif os.path.exists(os.path.join(v2, "cgroup.controllers")) and \
            "memory" in open(os.path.join(v2, "cgroup.controllers")).read():
        root, limit_file = v2, "memory.max"
    else:
        return "no memory cgroup controller is mounted"
    path = os.path.join(root, f"wharf-test-{uuid.uuid4().hex[:8]}")
    try:
        os.mkdir(path)
    except OSError as e:
        return f"cannot create a memory cgroup under {root}: {e}"
    return path, limit_file


def test_cgroup_capped_storage_reads_from_disk():
    cg = _memory_cgroup()
    if isinstance(cg, str):
        pytest.skip(cg)
    path, limit_file = cg
    cap = 32 * MIB
    try:
        try:
            with open(os.path.join(path, limit_file), "w") as f:
                f.write(str(cap))
        except OSError as e:
            pytest.skip(f"cannot set {limit_file}: {e}")
        with Cluster(storage=2, replicas=1, chunk_size=4 * MIB, providers="none") as cl:
            for s in cl.storage:
                with open(os.path.join(path, "cgroup.procs"), "w") as f:
                    f.write(str(s.proc.pid))
            s3 = cl.boto3()
            b = unique_bucket("clcg")
            s3.create_bucket(Bucket=b)
            per = 8 * MIB
            n = (2 * 7 * cap) // per  # seven times each server's cap, over two servers
            seeds = {}
            for i in range(n):
                seed = os.urandom(16)
                seeds[f"o{i}"] = seed
                s3.put_object(Bucket=b, Key=f"o{i}", Body=seed * (per // 16))
            for i in range(n):
                k = f"o{i}"
                body = s3.get_object(Bucket=b, Key=k)["Body"].read()
                assert body == seeds[k] * (per // 16), k
            held = sum(sum(os.path.getsize(os.path.join(r, f)) for f in fs)
                       for s in cl.storage
                       for r, _d, fs in os.walk(os.path.join(s.data_dir, "chunks")))
            assert held >= 6 * cap, held
            assert all(s.alive() for s in cl.storage), "a capped storage server died"
    finally:
        # members are gone by now; the cgroup is empty and can go
        wait_until(lambda: not open(os.path.join(path, "cgroup.procs")).read().strip(), 10)
        os.rmdir(path)


def test_full_disks_placement_and_507():
    """Each storage server on a small tmpfs of its own (server 0's the smallest). Placement
    weighs real free space above the gateway's --storage-reserve: once server 0 has no room
    no copy is sent to it (no failed chunk request) while the others take every PUT; once no
    two servers have room a PUT answers 507 InsufficientStorage, never 503 or 500; every
    acknowledged object reads back."""
    import subprocess
    from botocore.exceptions import ClientError
    cl = Cluster(storage=3, replicas=2, chunk_size=MIB, providers="none",
                 gateway_args=["--storage-reserve", "3M"])
    sizes = ["8m", "40m", "40m"]
    mounted = []
    try:
        for i, size in enumerate(sizes):
            d = os.path.join(cl.root, f"storage{i}")
            os.makedirs(d, exist_ok=True)
            r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs",
                                d], capture_output=True, text=True)
            if r.returncode != 0:
                pytest.skip(f"cannot mount a tmpfs here: {(r.stderr or r.stdout).strip()}")
            mounted.append(d)
        cl.start()
        s3 = cl.boto3()
        g = cl.gateway
        b = unique_bucket("clfull")
        s3.create_bucket(Bucket=b)
        acked = {}
        full_seen = None
        small_full_at = None
        for i in range(80):
            body = os.urandom(MIB)
            try:
                s3.put_object(Bucket=b, Key=f"o{i}", Body=body)
                acked[f"o{i}"] = body
            except ClientError as e:
                full_seen = (e.response["ResponseMetadata"]["HTTPStatusCode"],
                             e.response["Error"]["Code"])
                break
            if small_full_at is None and len(cl.chunk_files()[0]) >= 2:
                small_full_at = (i, g.metric_sum("wharf_cluster_chunk_failures_total"))
            time.sleep(0.3)  # free space reaches the gateway with the next heartbeat
        assert full_seen == (507, "InsufficientStorage"), (full_seen, len(acked))
        assert small_full_at is not None
        # no copy was sent to a server known to be without room
        # (at most a couple: free space reaches the gateway with the heartbeats, once a second)
        assert g.metric_sum("wharf_cluster_chunk_failures_total") <= 2, g.log_tail(3000)
        on0 = len(cl.chunk_files()[0])
        assert on0 <= 7, on0
        assert len(acked) >= 30, len(acked)
        for k, v in acked.items():
            assert s3.get_object(Bucket=b, Key=k)["Body"].read() == v, k
    finally:
        cl.cleanup()
        for d in mounted:
            subprocess.run(["umount", "-l", d], capture_output=True)
