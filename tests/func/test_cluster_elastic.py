# SPDX-License-Identifier: Apache-2.0
"""Cluster elasticity: `wharfd node list|drain|remove`.

- Drill: one of four storage servers is drained while a client PUTs and GETs in a loop; the
  drain moves every copy off it (rate-limited), keeping two copies of every chunk; once
  `node list` says drained it is removed and killed: no acknowledged object lost, no wrong
  byte, every object readable, and the gateway no longer dials it nor logs about it.
- `remove` refuses a server that holds the only live copy of chunks (naming how many); a
  drain survives a restart of the gateway (the state is in the node table); a removed
  server that still runs does not register again.
- A join rebalances: copies move to the new server at --rebalance-rate, while a client reads
  and writes; one walk, then nothing moves.
- Zones (`wharfd storage --zone`): a chunk's two copies are in two zones; a drain moves a copy
  to a server of the zone it leaves, not next to the other copy."""
import hashlib
import os
import random
import re
import threading
import time

from cluster import Cluster
from wharfd import unique_bucket, wait_until

CHUNK = 64 * 1024


def _wait_state(cl, addr, state, timeout):
    ok = wait_until(lambda: cl.node_list()[addr]["state"] == state, timeout=timeout,
                    interval=0.5)
    assert ok, (addr, state, cl.node_list(), cl.gateway.log_tail(3000))


def _all_intact(cl, s3, b, objs, loop, gone=None):
    """Every chunk has two copies on two servers (none on storage index `gone`), each on
    disk; every object, preloaded or acknowledged by the loop, reads back exactly."""
    files = cl.chunk_files()
    for cid, _o, _l, reps in cl.chunk_map():
        assert len(set(reps)) == 2 and None not in reps and gone not in reps, (cid, reps)
        for i in reps:
            assert cid in files[i], (cid, i)
    for k, v in objs.items():
        assert s3.get_object(Bucket=b, Key=k)["Body"].read() == v, k
    for k, h in loop.acked.items():
        got = s3.get_object(Bucket=b, Key=k)["Body"].read()
        assert hashlib.sha256(got).hexdigest() == h, k


class Loop:
    """PUTs of new objects and GETs of acknowledged ones, one thread, bounded in count and
    time; every GET's bytes are checked against what was acknowledged."""

    def __init__(self, cl, bucket, limit_s=240, max_ops=20000):
        self.s3 = cl.boto3()
        self.bucket = bucket
        self.acked = {}
        self.wrong, self.failed, self.gets, self.puts = [], [], 0, 0
        self.stop = threading.Event()
        self.limit_s, self.max_ops = limit_s, max_ops
        self.t = threading.Thread(target=self.run, daemon=True)

    def run(self):
        rnd = random.Random(7)
        t0 = time.monotonic()
        for op in range(self.max_ops):
            if self.stop.is_set() or time.monotonic() - t0 > self.limit_s:
                return
            try:
                if op % 3 == 0 or not self.acked:
                    k = f"loop{op}"
                    body = os.urandom(rnd.randrange(1, CHUNK * 4))
                    self.s3.put_object(Bucket=self.bucket, Key=k, Body=body)
                    self.acked[k] = hashlib.sha256(body).hexdigest()
                    self.puts += 1
                else:
                    k = rnd.choice(list(self.acked))
                    got = self.s3.get_object(Bucket=self.bucket, Key=k)["Body"].read()
                    self.gets += 1
                    if hashlib.sha256(got).hexdigest() != self.acked[k]:
                        self.wrong.append(k)
            except Exception as e:  # noqa: BLE001 - every failure is counted and asserted
                self.failed.append(repr(e))
            time.sleep(0.01)

    def __enter__(self):
        self.t.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.t.join(timeout=60)


def test_drain_remove_kill_drill():
    rate = 1 << 20
    with Cluster(storage=4, replicas=2, chunk_size=CHUNK, providers="none",
                 gateway_args=["--drain-rate", str(rate)]) as cl:
        s3 = cl.boto3()
        b = unique_bucket("cldrain")
        s3.create_bucket(Bucket=b)
        objs = {f"pre{i}": os.urandom(CHUNK * 3 + i) for i in range(24)}
        for k, v in objs.items():
            s3.put_object(Bucket=b, Key=k, Body=v)
        victim = cl.addr(0)
        before = cl.node_list()
        assert set(before) == {cl.addr(i) for i in range(4)}
        assert all(n["state"] == "up" and n["up"] and n["capacity"] > 0 for n in before.values())
        held = before[victim]["copies"]
        assert held == len(cl.chunk_files()[0]) and held > 0, (before, cl.chunk_files()[0])
        g = cl.gateway
        with Loop(cl, b) as loop:
            assert wait_until(lambda: loop.puts >= 5, timeout=30)
            rc, out, _ = cl.node_cmd("drain", victim)
            assert "state=draining" in out
            t0 = time.monotonic()
            assert cl.node_list()[victim]["state"] == "draining"
            # rate-limited: never ahead of the rate (plus one group of 8 chunks)
            for _ in range(6):
                time.sleep(0.5)
                moved = g.metric_sum("wharf_cluster_drain_bytes_total")
                assert moved <= rate * (time.monotonic() - t0) + 8 * CHUNK, (moved, rate)
            _wait_state(cl, victim, "drained", timeout=90)
            took = time.monotonic() - t0
            assert g.metric_sum("wharf_cluster_drain_chunks_total") >= held
            assert g.metric_sum("wharf_cluster_drain_pending") == 0 or wait_until(
                lambda: g.metric_sum("wharf_cluster_drain_pending") == 0, timeout=10)
            rc, out, _ = cl.node_cmd("remove", victim)
            assert "state=removed" in out
            assert cl.node_list()[victim]["state"] == "removed"
            # the gateway's next refresh (1 s) says it once; from then on it is not dialed
            assert wait_until(lambda: b"storage node removed" in open(g.log_path, "rb").read(),
                              timeout=10)
            time.sleep(2.5)  # a GC pass in flight when the refresh came has ended
            cl.storage[0].kill()
            n_log = len(open(g.log_path, "rb").read().splitlines())
            time.sleep(5)  # the loop goes on without it
            later = open(g.log_path, "rb").read().splitlines()[n_log:]
        assert not loop.wrong, loop.wrong
        assert not loop.failed, loop.failed[:5]
        assert loop.puts > 10 and loop.gets > 10, (loop.puts, loop.gets)
        # the removed, dead server is not dialed nor warned about
        about = [ln for ln in later if victim.encode() in ln or b"level=warn" in ln]
        assert len(about) == 0, about[:5]
        _all_intact(cl, s3, b, objs, loop, gone=0)
        print(f"drained {held} chunks in {took:.1f}s at --drain-rate {rate}; "
              f"loop {loop.puts} PUTs {loop.gets} GETs")


def test_remove_refused_with_only_copies_drain_resumes_after_gateway_restart():
    with Cluster(storage=2, replicas=1, chunk_size=CHUNK, providers="none",
                 gateway_args=["--drain-rate", str(256 * 1024)]) as cl:
        s3 = cl.boto3()
        b = unique_bucket("clrm")
        s3.create_bucket(Bucket=b)
        objs = {f"o{i}": os.urandom(CHUNK * 4 + i) for i in range(10)}
        for k, v in objs.items():
            s3.put_object(Bucket=b, Key=k, Body=v)
        victim = cl.addr(0)
        sole = len(cl.chunk_files()[0])
        assert sole > 0
        rc, out, err = cl.node_cmd("remove", victim, check=False)
        assert rc == 4, (rc, out, err)
        assert f"holds the only live copy of {sole} chunks" in err, err
        assert cl.node_list()[victim]["state"] == "up"
        rc, _, err = cl.node_cmd("drain", "127.0.0.1:1", check=False)
        assert rc == 3 and "no storage node at 127.0.0.1:1" in err, err
        cl.node_cmd("drain", victim)
        g = cl.gateway
        assert wait_until(lambda: g.metric_sum("wharf_cluster_drain_chunks_total") >= 1,
                          timeout=30)
        # the gateway restarts mid-drain: the new one goes on (the state is in the database)
        g.stop()
        left = cl.node_list()[victim]["copies"]
        assert 0 < left < sole, (left, sole)
        g.start()
        _wait_state(cl, victim, "drained", timeout=90)
        # new PUTs go to the other server only, while the drained one is still up
        s3.put_object(Bucket=b, Key="after", Body=os.urandom(CHUNK * 5))
        assert all(reps == [1] for _c, _o, _l, reps in cl.chunk_map()), cl.chunk_map()
        cl.node_cmd("remove", victim)
        # still running, removed: it does not register again, and nothing dials it
        served = cl.storage[0].metric_sum("wharf_http_read_bytes_total")
        for k, v in objs.items():
            assert s3.get_object(Bucket=b, Key=k)["Body"].read() == v, k
        time.sleep(3)
        assert cl.storage[0].metric_sum("wharf_http_read_bytes_total") == served
        assert cl.node_list()[victim]["state"] == "removed"
        assert cl.storage[0].log_tail(100000).count("was removed from the cluster") == 1, \
            cl.storage[0].log_tail(3000)
        assert cl.nodes_up() == 1
        cl.storage[0].kill()
        for k, v in objs.items():
            assert s3.get_object(Bucket=b, Key=k)["Body"].read() == v, k


def test_zones_spread_copies_and_drain_keeps_them():
    zones = ["za", "za", "zb", "zb"]
    with Cluster(storage=4, replicas=2, chunk_size=CHUNK, providers="none", zones=zones,
                 gateway_args=["--drain-rate", "16M"]) as cl:
        s3 = cl.boto3()
        b = unique_bucket("clzone")
        s3.create_bucket(Bucket=b)
        objs = {f"o{i}": os.urandom(CHUNK * 4) for i in range(12)}
        for k, v in objs.items():
            s3.put_object(Bucket=b, Key=k, Body=v)
        nodes = cl.node_list()
        assert [nodes[cl.addr(i)]["zone"] for i in range(4)] == zones, nodes

        def spread():
            cm = cl.chunk_map()
            assert len(cm) == 48, len(cm)
            for cid, _o, _l, reps in cm:
                assert len(reps) == 2 and {zones[i] for i in reps} == {"za", "zb"}, (cid, reps)
            return cm
        spread()
        on2 = sum(1 for *_x, reps in cl.chunk_map() if 2 in reps)
        assert on2 > 0
        cl.node_cmd("drain", cl.addr(2))
        _wait_state(cl, cl.addr(2), "drained", timeout=60)
        # every copy that left zb went to the other zb server
        cm = spread()
        assert all(2 not in reps for *_x, reps in cm)
        assert sum(1 for *_x, reps in cm if 3 in reps) == 48
        for k, v in objs.items():
            assert s3.get_object(Bucket=b, Key=k)["Body"].read() == v, k


def test_status_dashboard():
    """`wharfd node status`: servers by state, zones, capacity, the maintenance leader and
    its backlogs (a drain held back by a tiny --drain-rate), the scrubbers' passes."""
    import json
    zones = ["za", "za", "zb"]
    with Cluster(storage=3, replicas=2, chunk_size=CHUNK, providers="none", zones=zones,
                 storage_args=["--scrub-interval", "1"],
                 gateway_args=["--drain-rate", "4K"]) as cl:
        s3 = cl.boto3()
        b = unique_bucket("clstat")
        s3.create_bucket(Bucket=b)
        for i in range(8):
            s3.put_object(Bucket=b, Key=f"o{i}", Body=os.urandom(CHUNK * 3))
        g = cl.gateway

        def status():
            return json.loads(cl.node_cmd("status", "--json")[1])
        assert wait_until(lambda: (status()["leader"] or {}).get("live"), timeout=20)
        st = status()
        assert st["leader"]["addr"] == f"{g.host}:{g.port}", st["leader"]
        assert st["leader"]["age_s"] <= 15
        assert st["servers"]["total"] == 3 and st["servers"]["up"] == 3, st["servers"]
        z = {x["zone"]: x for x in st["zones"]}
        assert z["za"]["servers"] == 2 and z["zb"]["servers"] == 1 and z["za"]["up"] == 2, z
        assert st["copies"] == 8 * 3 * 2 == sum(x["copies"] for x in st["zones"])
        assert st["capacity"] == sum(n["capacity"] for n in st["nodes"]) > 0
        assert st["free"] <= st["capacity"]
        # every scrubber finished passes (--scrub-interval 1) and said so
        assert wait_until(lambda: all(n["scrub_passes"] >= 1 for n in status()["nodes"]),
                          timeout=30), status()["nodes"]
        # a drain at 4 KiB/s: the backlog is the drained server's copies, still there
        # (the za server with more copies: more than the one group of 8 a pass may move)
        nl = cl.node_list()
        victim = max((cl.addr(0), cl.addr(1)), key=lambda a: nl[a]["copies"])
        held = nl[victim]["copies"]
        assert held > 8, nl
        cl.node_cmd("drain", victim)
        assert wait_until(lambda: status()["backlog"]["drain_pending"] > 0, timeout=20)
        st = status()
        assert st["servers"]["draining"] == 1 and st["servers"]["up"] == 2, st["servers"]
        assert 0 < st["backlog"]["drain_pending"] <= held, (st["backlog"], held)
        assert st["backlog"]["repair_pending"] == 0
        # text: the same, for a person
        out = cl.node_cmd("status")[1]
        assert f"leader:   {g.host}:{g.port}" in out, out
        assert "1 draining" in out and "zones:    2" in out, out
        assert re.search(r"backlog:  repair 0 chunks on 0 servers, drain [1-9][0-9]* chunks", out), out
        for a in (cl.addr(i) for i in range(3)):
            assert a in out
        # the leader's gateway stops: its view goes stale, and status says so
        g.stop()
        assert wait_until(lambda: not status()["leader"]["live"], timeout=40)
        assert "no gateway holds the maintenance lock" in cl.node_cmd("status")[1]


def test_join_rebalances_gradually():
    rate = 1 << 20
    with Cluster(storage=3, replicas=2, chunk_size=CHUNK, providers="none",
                 gateway_args=["--rebalance-rate", str(rate)]) as cl:
        s3 = cl.boto3()
        b = unique_bucket("clbal")
        s3.create_bucket(Bucket=b)
        objs = {f"o{i}": os.urandom(CHUNK * 4) for i in range(16)}
        for k, v in objs.items():
            s3.put_object(Bucket=b, Key=k, Body=v)
        g = cl.gateway
        # the walk after the leader's start finds every chunk where placement puts it
        assert wait_until(lambda: g.metric_sum("wharf_cluster_rebalance_walks_total") >= 1,
                          timeout=30)
        assert g.metric_sum("wharf_cluster_rebalance_chunks_total") == 0
        walks = g.metric_sum("wharf_cluster_rebalance_walks_total")
        with Loop(cl, b) as loop:
            cl.add_storage()
            new = cl.addr(3)
            t0 = time.monotonic()
            cl.wait_nodes_up(4)
            for _ in range(6):
                time.sleep(0.5)
                moved = g.metric_sum("wharf_cluster_rebalance_bytes_total")
                assert moved <= rate * (time.monotonic() - t0) + 8 * CHUNK, (moved, rate)
            assert wait_until(lambda: g.metric_sum("wharf_cluster_rebalance_walks_total")
                              > walks, timeout=120), g.log_tail(3000)
            took = time.monotonic() - t0
            moved = g.metric_sum("wharf_cluster_rebalance_chunks_total")
            time.sleep(4)  # no churn after the walk
            assert g.metric_sum("wharf_cluster_rebalance_chunks_total") == moved
        assert not loop.wrong, loop.wrong
        assert not loop.failed, loop.failed[:5]
        on_new = cl.node_list()[new]["copies"]
        # about half the chunks rank the new server in their top two now (fewer move: the
        # gain threshold), and the loop's new objects went there too
        assert on_new >= 10 and moved >= 10, (on_new, moved)
        _all_intact(cl, s3, b, objs, loop)
        print(f"join: {moved:.0f} chunks moved in {took:.1f}s at {rate} B/s, "
              f"{on_new} copies on the new server")
