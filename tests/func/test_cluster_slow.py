# SPDX-License-Identifier: Apache-2.0
"""A slow storage server is not a dead one (3 storage servers, 2 replicas, loopback).

The drill: while clients PUT and GET (HTTP and RDMA, every byte checked), one storage server
at a time is paused (SIGSTOP) for bursts longer than the chunk client's idle-cluster bound
(3 s plus the bytes at 32 MiB/s) and shorter than the heartbeat's down bound (5 s), in turn,
twice round: at every moment two of the three run. Requests to the paused one time out; the
gateway must retry them on a server that answers and keep every server up, so:

- no PUT and no GET fails (no 503 "N storage servers up" while a healthy majority exists),
- zero wrong bytes, and every acknowledged object reads back intact afterwards,
- the timeouts happened and show in /metrics (the drill did slow the servers), with the
  per-server latency estimates;

then a dead server (kill -9) is still declared down within the heartbeat bound (5 s without a
heartbeat, plus the 1 s membership refresh, the 1 s heartbeat period and a margin), and PUTs
go on over the two left.

Before this, a request that timed out made its server "suspect" (avoided as if down) for 5 s:
two paused in turn within 5 s left one server for two replicas, and PUTs got 503."""
import random
import signal
import time

import pytest

from cluster import Cluster, Load
from wharfd import unique_bucket, wait_until

CHUNK = 256 * 1024
BURST_S = 3.6  # > the 3 s floor of a 256 KiB chunk request, < the 5 s heartbeat bound
GAP_S = 0.6
ROUNDS = 2
DOWN_BOUND_S = 5.0 + 1.0 + 1.0 + 1.0  # no heartbeat + refresh + heartbeat period + margin


@pytest.fixture()
def cl():
    c = Cluster(storage=3, replicas=2, chunk_size=CHUNK, providers="tcp")
    c.start()
    yield c
    c.cleanup()


def _pause_in_turn(c):
    """One storage server paused at a time, each for BURST_S, ROUNDS times round."""
    for _ in range(ROUNDS):
        for s in c.storage:
            s.proc.send_signal(signal.SIGSTOP)
            try:
                time.sleep(BURST_S)
            finally:
                s.proc.send_signal(signal.SIGCONT)
            time.sleep(GAP_S)


def test_slow_is_not_dead(cl):
    c = cl
    s3 = c.boto3()
    b = unique_bucket("slow")
    s3.create_bucket(Bucket=b)
    rnd = random.Random(11)
    objs = {f"o{i}": rnd.randbytes(rnd.randint(CHUNK // 2, 4 * CHUNK)) for i in range(10)}
    for k, v in objs.items():
        s3.put_object(Bucket=b, Key=k, Body=v)

    load = Load(c, b, objs, rdma=True, rdma_put=True, readers=1, max_chunk=3 * CHUNK,
                once=True).start()
    time.sleep(2.0)
    try:
        _pause_in_turn(c)
        time.sleep(2.0)
    finally:
        for s in c.storage:  # never leave one paused, whatever failed
            s.proc.send_signal(signal.SIGCONT)
        load.finish()

    g = c.gateway
    log = g.log_tail(3000)
    assert not load.wrong, f"wrong bytes for {load.wrong[:5]}"
    puts = [e for e in load.errors if e[0] == "put"]
    gets = [e for e in load.errors if e[0] == "get"]
    assert not puts, f"{len(puts)} PUTs failed with two of three servers running: {puts[:4]}"
    assert not gets, f"{len(gets)} GETs failed: {gets[:4]}"
    assert load.put_ok >= 10 and load.get_ok >= 10, (load.put_ok, load.get_ok)
    # the drill did slow the servers: requests timed out, and were retried elsewhere
    timeouts = g.metric_sum("wharf_cluster_chunk_timeouts_total")
    assert timeouts >= 1, log
    m = g.metrics()
    per_node = [k for k in m if k.startswith("wharf_cluster_node_timeouts_total{")]
    assert len(per_node) == 3 and sum(m[k] for k in per_node) == timeouts, per_node
    assert any(k.startswith("wharf_cluster_node_srtt_seconds{") and 'op="rput"' in k for k in m)
    assert any(k.startswith("wharf_cluster_node_timeout_seconds{") for k in m)
    assert "wharf_cluster_write_retries_total" in m
    print(f"drill: {load.put_ok} PUTs, {load.get_ok} GETs, slowest {load.slowest}, "
          f"{timeouts:.0f} timeouts, {m['wharf_cluster_write_retries_total']:.0f} write retries, "
          f"{m.get('wharf_cluster_chunk_retries_total', 0):.0f} chunk retries")
    c.wait_nodes_up(3, timeout=15)
    load.verify_all()

    # a dead server is still declared down within the heartbeat bound
    t0 = time.monotonic()
    c.storage[0].kill()
    assert wait_until(lambda: c.nodes_up() == 2, timeout=DOWN_BOUND_S + 5, interval=0.1)
    took = time.monotonic() - t0
    assert took <= DOWN_BOUND_S, f"declared down after {took:.1f} s"
    print(f"kill -9: declared down after {took:.1f} s")
    for i in range(5):
        s3.put_object(Bucket=b, Key=f"after-kill-{i}", Body=b"x" * (CHUNK + i))
        assert s3.get_object(Bucket=b, Key=f"after-kill-{i}")["Body"].read() == b"x" * (CHUNK + i)
    load.verify_all()


def test_slow_server_left_as_the_only_one_for_a_replica():
    """Two storage servers, two replicas: every chunk needs both, so a write to the paused
    one has no other server to go to. It is tried there once more with twice the bound
    (HTTP writes and reads, whose late end cannot hurt), and waits out the pause instead of
    failing the PUT. One pause at a time, 3 times each server; HTTP only (an RDMA request is
    not retried on the server that timed it out: docs/cluster.md)."""
    with Cluster(storage=2, replicas=2, chunk_size=CHUNK, providers="tcp") as c:
        s3 = c.boto3()
        b = unique_bucket("slow2")
        s3.create_bucket(Bucket=b)
        rnd = random.Random(5)
        objs = {f"o{i}": rnd.randbytes(rnd.randint(1, 2 * CHUNK)) for i in range(6)}
        for k, v in objs.items():
            s3.put_object(Bucket=b, Key=k, Body=v)
        load = Load(c, b, objs, readers=1, max_chunk=2 * CHUNK, once=True).start()
        time.sleep(1.0)
        try:
            for _ in range(3):
                for s in c.storage:
                    s.proc.send_signal(signal.SIGSTOP)
                    try:
                        time.sleep(BURST_S)
                    finally:
                        s.proc.send_signal(signal.SIGCONT)
                    time.sleep(GAP_S)
            time.sleep(1.0)
        finally:
            for s in c.storage:
                s.proc.send_signal(signal.SIGCONT)
            load.finish()
        assert not load.wrong, f"wrong bytes for {load.wrong[:5]}"
        assert not load.errors, f"{len(load.errors)} requests failed: {load.errors[:4]}"
        assert load.put_ok >= 5 and load.get_ok >= 10, (load.put_ok, load.get_ok)
        timeouts = c.gateway.metric_sum("wharf_cluster_chunk_timeouts_total")
        assert timeouts >= 1, c.gateway.log_tail(3000)
        print(f"two servers: {load.put_ok} PUTs, {load.get_ok} GETs, slowest {load.slowest}, "
              f"{timeouts:.0f} timeouts")
        c.wait_nodes_up(2, timeout=15)
        load.verify_all()
