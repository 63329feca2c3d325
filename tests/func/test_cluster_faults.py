# SPDX-License-Identifier: Apache-2.0
"""Fault drills on a loopback cluster (3 storage servers, 2 replicas), each with GETs and PUTs
running throughout and every byte checked: kill -9 of a storage server, SIGSTOP of one for
15 s, a storage server restart, a PostgreSQL restart and a gateway restart.

Each drill asserts: zero wrong bytes; with 2 replicas zero failed GETs through a single
storage-server fault; no request waits longer than the documented bound (the chunk client's
3 s stall bound, plus the connect bound and a margin) plus the pause; every object written
(before or during the drill) reads back intact at the end. During a PostgreSQL outage
requests may fail, and only with 503."""
import random
import signal
import time

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError

from cluster import Cluster, Load
from wharfd import unique_bucket, wait_until

CHUNK = 256 * 1024
STALL_BOUND_S = 3.0 + 1.0 + 2.0  # no-progress bound + connect bound + scheduling margin
PAUSE_S = 15


@pytest.fixture()
def drill(request):
    c = Cluster(storage=3, replicas=2, chunk_size=CHUNK, providers="tcp",
                gateway_args=[], log_level="info")
    c.start()
    s3 = c.boto3()
    b = unique_bucket("drill")
    s3.create_bucket(Bucket=b)
    rnd = random.Random(7)
    objs = {f"o{i}": rnd.randbytes(rnd.randint(CHUNK // 2, 4 * CHUNK)) for i in range(12)}
    for k, v in objs.items():
        s3.put_object(Bucket=b, Key=k, Body=v)
    yield c, b, objs
    c.cleanup()


def run_load(c, b, objs, during, settle=3.0, rdma=False):
    load = Load(c, b, objs, rdma=rdma, max_chunk=3 * CHUNK).start()
    time.sleep(settle)
    during()
    time.sleep(settle)
    load.finish()
    return load


def assert_clean(load, allow_get_fail=False, pause=0.0):
    assert not load.wrong, f"wrong bytes for {load.wrong[:5]}"
    if not allow_get_fail:
        fails = [e for e in load.errors if e[0] == "get"]
        assert load.get_fail == 0, fails[:5]
    assert load.get_ok > 10, (load.get_ok, load.errors[:5])
    assert load.max_wait <= STALL_BOUND_S + pause, (load.slowest, load.errors[:5])


def test_kill9_storage(drill):
    c, b, objs = drill
    load = run_load(c, b, objs, lambda: c.storage[1].kill(), rdma=True)
    assert_clean(load)
    assert load.put_ok > 0
    c.wait_nodes_up(2, timeout=15)
    load.verify_all()
    # it comes back with its chunks
    c.storage[1].start()
    c.wait_nodes_up(3, timeout=15)
    load.verify_all()


def test_sigstop_storage_15s(drill):
    c, b, objs = drill
    victim = c.storage[2]

    def pause():
        victim.proc.send_signal(signal.SIGSTOP)
        try:
            time.sleep(PAUSE_S)
        finally:
            victim.proc.send_signal(signal.SIGCONT)

    load = run_load(c, b, objs, pause, rdma=True)
    assert_clean(load, pause=0.0)
    assert load.put_ok > 0
    c.wait_nodes_up(3, timeout=15)
    load.verify_all()


def test_restart_storage(drill):
    c, b, objs = drill

    def restart():
        c.storage[0].stop()
        time.sleep(1)
        c.storage[0].start()

    load = run_load(c, b, objs, restart)
    assert_clean(load)
    c.wait_nodes_up(3, timeout=15)
    load.verify_all()


def test_restart_postgresql(drill):
    c, b, objs = drill

    def restart():
        c.pg.stop()
        time.sleep(3)
        c.pg.start()

    load = run_load(c, b, objs, restart, settle=4.0)
    assert not load.wrong
    for kind, _t, err in load.errors:  # only the outage's 503s, never another failure
        assert "503" in err or "ServiceUnavailable" in err or "SlowDown" in err, err
    # recovered: new requests work, and everything committed is there
    assert wait_until(lambda: _put_ok(c, b), timeout=20)
    load.verify_all()


def _put_ok(c, b):
    try:
        c.boto3().put_object(Bucket=b, Key="after-pg", Body=b"x")
        return True
    except (ClientError, EndpointConnectionError):
        return False


def test_restart_gateway(drill):
    c, b, objs = drill

    def restart():
        c.gateway.stop()
        c.gateway.start()

    load = run_load(c, b, objs, restart)
    assert not load.wrong
    c.wait_nodes_up(3, timeout=15)
    load.verify_all()
