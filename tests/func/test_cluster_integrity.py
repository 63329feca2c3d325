# SPDX-License-Identifier: Apache-2.0
"""Integrity of what a cluster stores: bit rot, scrubbing, and the identity of data directories.

- A copy damaged on disk is never served: a ranged RDMA GET inside the damage (the storage
  server verifies the blocks it serves, per-block crc64nvme) gets the good replica's bytes, and
  the damaged copy is moved aside and rewritten from the good replica at once.
- The scrubber finds damage no read touched and has it repaired the same way; its progress
  and findings are in /metrics, where it is kept in DIR/scrub.state.
"""
import os
import time

import wharf
from cluster import Cluster
from wharfd import ACCESS_KEY, REGION, SECRET_KEY, unique_bucket, wait_until

MIB = 1 << 20


def rdma_client(cl):
    g = cl.gateway
    return wharf.Client(g.endpoint, ACCESS_KEY, SECRET_KEY, region=REGION, provider="ofi+shm",
                        unix_socket=os.path.join(g.data_dir, "wharfd.sock"),
                        multipart_threshold=64 * MIB)


def copy_intact(cl, i, chunk_id, want):
    p = cl.chunk_path(i, chunk_id)
    if not os.path.exists(p):
        return False
    with open(p, "rb") as f:
        return f.read(len(want)) == want


def test_bitrot_ranged_rdma_serves_the_good_copy_and_repairs():
    chunk = 4 * MIB
    with Cluster(storage=3, replicas=2, chunk_size=chunk, providers="shm",
                 storage_args=["--scrub-rate", "0"]) as cl:
        s3 = cl.boto3()
        b = unique_bucket("clrot")
        s3.create_bucket(Bucket=b)
        data = os.urandom(2 * chunk + 777)
        s3.put_object(Bucket=b, Key="obj", Body=data)
        cmap = cl.chunk_map()
        assert len(cmap) == 3, cmap
        cid, off, ln, reps = cmap[1]
        first = reps[0]  # the replica a read goes to first
        bad_at = MIB + MIB // 2
        cl.corrupt(first, cid, bad_at)
        c = rdma_client(cl)
        try:
            for _ in range(3):
                o = off + bad_at + 100
                got = c.get(b, "obj", offset=o, length=1000, transport="rdma")
                rep = c.last_report
                assert rep.transport == "rdma" and not rep.fell_back, rep
                assert got == data[o:o + 1000]
            # a range ending in the damaged block's neighbour, and the whole object
            o = off + bad_at - 5000
            assert c.get(b, "obj", offset=o, length=MIB, transport="rdma") == data[o:o + MIB]
            assert c.get(b, "obj", transport="rdma") == data
        finally:
            c.close()
        st = cl.storage[first]
        assert st.metric_sum("wharf_storage_checksum_failures_total") >= 1
        g = cl.gateway
        ok = wait_until(lambda: copy_intact(cl, first, cid, data[off:off + ln])
                        and g.metric_sum("wharf_cluster_damage_repaired_total") >= 1
                        and st.metric_sum("wharf_storage_damaged_chunks") == 0,
                        timeout=30, interval=0.5)
        assert ok, (g.log_tail(2000), st.log_tail(2000))
        assert s3.get_object(Bucket=b, Key="obj")["Body"].read() == data
        # the repaired copy alone serves the object: the other replica gone
        other = reps[1]
        cl.storage[other].kill()
        c = rdma_client(cl)
        try:
            o = off + bad_at + 100
            assert c.get(b, "obj", offset=o, length=1000, transport="rdma") == data[o:o + 1000]
        finally:
            c.close()


def test_scrubber_finds_damage_no_read_touched():
    chunk = MIB
    with Cluster(storage=3, replicas=2, chunk_size=chunk, providers="none",
                 storage_args=["--scrub-rate", "64M", "--scrub-interval", "2"]) as cl:
        s3 = cl.boto3()
        b = unique_bucket("clscr")
        s3.create_bucket(Bucket=b)
        objs = {f"o{i}": os.urandom(chunk * 2 + 1000 * i) for i in range(4)}
        for k, v in objs.items():
            s3.put_object(Bucket=b, Key=k, Body=v)
        cmap = cl.chunk_map()
        # every storage server finishes a pass (the copies were written during the first)
        for s in cl.storage:
            assert wait_until(lambda: s.metric_sum("wharf_storage_scrub_passes_total") >= 2,
                              timeout=30, interval=0.5), s.log_tail(2000)
            assert s.metric_sum("wharf_storage_scrub_damaged_total") == 0
            assert s.metric_sum("wharf_storage_scrub_bytes_total") > 0
            with open(os.path.join(s.data_dir, "scrub.state")) as f:
                assert f.read().startswith("wharf-scrub-1 ")
        # damage two copies of different chunks on different servers; no read touches them
        victims = []
        for cid, off, ln, reps in cmap:
            if len(victims) < 2 and all(reps[1] != v[0] for v in victims):
                victims.append((reps[1], cid, off, ln))
        for i, cid, off, ln in victims:
            cl.corrupt(i, cid, min(ln - 10, 300000), 10)
        g = cl.gateway
        reads0 = g.metric_sum("wharf_cluster_chunks_read_total")

        def repaired():
            for i, cid, off, ln in victims:
                if cl.storage[i].metric_sum("wharf_storage_scrub_damaged_total") < 1:
                    return False
                if cl.storage[i].metric_sum("wharf_storage_damaged_chunks") != 0:
                    return False
            return g.metric_sum("wharf_cluster_damage_repaired_total") >= len(victims)
        assert wait_until(repaired, timeout=40, interval=0.5), g.log_tail(3000)
        assert g.metric_sum("wharf_cluster_chunks_read_total") == reads0  # no S3 read did it
        assert g.metric_sum("wharf_cluster_damage_pending") == 0
        # every copy on disk is intact again: compare each file with the object's bytes
        rows = cl.pg.sql("SELECT convert_from(o.key, 'UTF8'), c.chunk_id, c.off, c.len"
                         " FROM objects o"
                         " JOIN chunks c ON c.data_id = o.data_id")
        for line in rows.splitlines():
            key, cid, off, ln = line.split("|")
            off, ln = int(off), int(ln)
            reps = [r for c2, _o, _l, r in cmap if c2 == cid][0]
            for i in reps:
                assert copy_intact(cl, i, cid, objs[key][off:off + ln]), (key, i, cid)
        for k, v in objs.items():
            assert s3.get_object(Bucket=b, Key=k)["Body"].read() == v


def _hold_row_lock(cl, bucket, key, seconds):
    """A psql session that locks the object row (bucket, key) FOR UPDATE for `seconds`: a
    commit that writes that row waits for it, nothing else does."""
    import shutil
    import subprocess
    psql = os.path.join(cl.pg.bin, "psql")
    if not os.path.exists(psql):
        psql = shutil.which("psql")
    q = (f"BEGIN; SELECT 1 FROM objects WHERE bucket = '{bucket}'"
         f" AND key = convert_to('{key}', 'UTF8') FOR UPDATE; SELECT pg_sleep({seconds}); COMMIT;")
    return subprocess.Popen([psql, "-X", "-q", "-A", "-t", "-h", "127.0.0.1", "-p",
                             str(cl.pg.port), "-U", "postgres", "-d", "postgres", "-c", q],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def test_copy_racing_delete_of_its_source_never_acknowledges_lost_bytes():
    """CopyObject takes the source's chunks by reference. Its commit is held back (the
    destination's row is locked) while the source is deleted and garbage collection removes
    the source's chunk files; then the commit goes on. It must fail (the source is gone), not
    answer 200 for an object whose bytes GC removed."""
    import threading
    chunk = 256 * 1024
    with Cluster(storage=3, replicas=2, chunk_size=chunk, providers="none") as cl:
        s3 = cl.boto3()
        b = unique_bucket("clcpy")
        s3.create_bucket(Bucket=b)
        src = os.urandom(chunk * 3)
        s3.put_object(Bucket=b, Key="src", Body=src)
        src_chunks = {c for c, *_ in cl.chunk_map()}
        assert len(src_chunks) == 3
        s3.put_object(Bucket=b, Key="dst", Body=b"old")
        locker = _hold_row_lock(cl, b, "dst", 6)
        try:
            assert wait_until(lambda: cl.pg.sql("SELECT count(*) FROM pg_locks l JOIN pg_class"
                                                " c ON c.oid = l.relation WHERE c.relname ="
                                                " 'objects' AND l.mode = 'RowShareLock'") != "0",
                              timeout=5)
            result = {}

            def copy():
                try:
                    result["r"] = s3.copy_object(Bucket=b, Key="dst",
                                                 CopySource={"Bucket": b, "Key": "src"})
                except Exception as e:  # noqa: BLE001 - the answer is what is judged
                    result["e"] = e
            t = threading.Thread(target=copy)
            t.start()
            time.sleep(0.5)  # the copy has read the source and waits on its commit
            s3.delete_object(Bucket=b, Key="src")

            def src_collected():
                files = cl.chunk_files()
                return not any(c in v for v in files.values() for c in src_chunks)
            assert wait_until(src_collected, timeout=5, interval=0.1), "\n".join(l for l in cl.gateway.log_tail(20000).splitlines() if "api=Health" not in l and "api=Metrics" not in l)[-3000:]
            t.join(timeout=30)
            assert not t.is_alive()
        finally:
            locker.kill()
            locker.wait()
        if "r" in result:  # acknowledged: every byte must be there
            assert s3.get_object(Bucket=b, Key="dst")["Body"].read() == src
        else:
            assert "e" in result
            # the old destination is untouched
            assert s3.get_object(Bucket=b, Key="dst")["Body"].read() == b"old"
        assert "r" not in result, "the source's bytes were collected; a 200 cannot be true"


def test_emptied_data_directory_is_a_new_node_and_its_copies_are_repaired():
    """A storage server back at its address with an empty data directory holds none of the
    copies its old row lists: it registers as a new node, the old row is retired and its
    copies are re-replicated at once (not after --repair-after); then one more server can die
    with every object still readable."""
    chunk = 256 * 1024
    with Cluster(storage=4, replicas=2, chunk_size=chunk, providers="none") as cl:
        s3 = cl.boto3()
        b = unique_bucket("clwipe")
        s3.create_bucket(Bucket=b)
        objs = {f"o{i}": os.urandom(chunk * 2 + 100 * i) for i in range(12)}
        for k, v in objs.items():
            s3.put_object(Bucket=b, Key=k, Body=v)
        old_id = cl.pg.sql(f"SELECT id FROM nodes WHERE addr = '127.0.0.1:{cl.storage[0].port}'")
        lost = len(cl.chunk_files()[0])
        assert lost > 0
        st = cl.storage[0]
        st.stop()
        for name in os.listdir(st.data_dir):  # a new, empty disk at the same mount point
            p = os.path.join(st.data_dir, name)
            if os.path.isdir(p):
                import shutil
                shutil.rmtree(p)
            else:
                os.unlink(p)
        st.start()
        g = cl.gateway
        assert wait_until(lambda: cl.pg.sql(f"SELECT retired FROM nodes WHERE id = {old_id}")
                          == "t", timeout=10)
        new_id = cl.pg.sql(f"SELECT id FROM nodes WHERE addr = '127.0.0.1:{st.port}'")
        assert new_id != old_id

        def two_live_copies():
            for cid, off, ln, reps in cl.chunk_map():
                if None in reps or len(set(reps)) != 2:
                    return False
                if not all(os.path.exists(cl.chunk_path(i, cid)) for i in reps):
                    return False
            return True
        assert wait_until(two_live_copies, timeout=60, interval=0.5), g.log_tail(3000)
        assert g.metric_sum("wharf_cluster_repair_chunks_total") >= lost
        assert wait_until(lambda: g.metric_sum("wharf_cluster_repair_pending") == 0, timeout=10)
        assert g.metric_sum("wharf_storage_nodes") == 4  # the retired row is not a server
        cl.storage[1].kill()
        for k, v in objs.items():
            assert s3.get_object(Bucket=b, Key=k)["Body"].read() == v, k


def test_a_data_directory_refuses_another_clusters_database():
    """A storage server whose data directory belongs to one cluster, started with another
    cluster's --meta, exits with the reason and never registers there."""
    from wharfd import WharfServer
    with Cluster(storage=2, replicas=2, providers="none") as cl:
        s3 = cl.boto3()
        b = unique_bucket("clid")
        s3.create_bucket(Bucket=b)
        s3.put_object(Bucket=b, Key="k", Body=b"x" * 1000)
        st = cl.storage[0]
        st.stop()
        cl.pg.create_db("othercluster")
        other = WharfServer(data_dir=st.data_dir, role="storage", providers="none",
                            env=cl.env, extra_args=["--meta", cl.pg.db_url("othercluster")])
        try:
            try:
                other.start(timeout=15)
            except RuntimeError:
                pass
            assert wait_until(lambda: not other.alive(), timeout=15)
            assert "belongs to cluster" in other.log_tail(4000), other.log_tail(4000)
        finally:
            other.stop()
        assert cl.pg.sql("SELECT count(*) FROM nodes", db="othercluster") == "0"
        # its own cluster takes it back, as the same node
        st.start()
        cl.wait_nodes_up(2)
        assert cl.pg.sql("SELECT count(*) FROM nodes") == "2"
        assert s3.get_object(Bucket=b, Key="k")["Body"].read() == b"x" * 1000


def test_gc_goes_on_around_a_dead_node_with_a_backlog():
    """A storage server dies for good holding more pending deletes than one GC batch (256);
    deletes on the live servers are still collected."""
    chunk = 64 * 1024
    with Cluster(storage=3, replicas=2, chunk_size=chunk, providers="none") as cl:
        s3 = cl.boto3()
        b = unique_bucket("clgc")
        s3.create_bucket(Bucket=b)
        for i in range(8):  # 512 chunks, about 341 copies on each server
            s3.put_object(Bucket=b, Key=f"a{i}", Body=os.urandom(chunk * 64))
        for i in range(4):
            s3.put_object(Bucket=b, Key=f"b{i}", Body=os.urandom(chunk * 4))
        assert len(cl.chunk_files()[0]) > 300
        cl.storage[0].kill()
        for i in range(8):
            s3.delete_object(Bucket=b, Key=f"a{i}")
        for i in range(4):
            s3.delete_object(Bucket=b, Key=f"b{i}")
        queued = int(cl.pg.sql("SELECT count(*) FROM gc_queue g JOIN nodes n ON n.id = g.node"
                               f" WHERE n.addr = '127.0.0.1:{cl.storage[0].port}'"))
        assert queued >= 256, queued

        def live_collected():
            f = cl.chunk_files()
            return len(f[1]) == 0 and len(f[2]) == 0
        assert wait_until(live_collected, timeout=40, interval=0.5), \
            ({i: len(v) for i, v in cl.chunk_files().items()}, cl.gateway.log_tail(2000))


def test_one_maintenance_leader_across_postgresql_restarts():
    """Two gateways; exactly one holds the maintenance lock and says so. PostgreSQL restarts
    (its sessions, and the lock, end): within a few passes again exactly one gateway leads, it
    holds the advisory lock in the database, and GC runs."""
    with Cluster(storage=2, gateways=2, replicas=2, providers="none") as cl:
        gws = cl.gateways

        def leaders():
            return [int(g.metric_sum("wharf_cluster_leader")) for g in gws]

        def db_locks():
            return int(cl.pg.sql("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'"
                                 " AND granted"))
        assert wait_until(lambda: sum(leaders()) == 1 and db_locks() == 1, timeout=10)
        s3 = cl.boto3()
        b = unique_bucket("cllead")
        s3.create_bucket(Bucket=b)
        for rnd in range(2):
            cl.pg.restart()
            cl.wait_nodes_up(2, timeout=30)
            stable = 0
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and stable < 6:  # 3 s of one leader
                ok = sum(leaders()) == 1 and db_locks() == 1
                stable = stable + 1 if ok else 0
                time.sleep(0.5)
            assert stable >= 6, (rnd, leaders(), db_locks())
            # the leader collects garbage
            s3.put_object(Bucket=b, Key="k", Body=os.urandom(5000))
            before = cl.chunk_files()
            assert sum(len(v) for v in before.values()) >= 2
            s3.delete_object(Bucket=b, Key="k")
            assert wait_until(lambda: sum(len(v) for v in cl.chunk_files().values()) == 0,
                              timeout=15), leaders()
