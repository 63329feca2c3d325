# SPDX-License-Identifier: Apache-2.0
"""Metadata that survives its primary (docs/cluster.md, "PostgreSQL failover"): a cluster whose
gateway and storage servers take a libpq multi-host URL (primary and a synchronous streaming
replica, target_session_attrs=read-write; tests/lib/pgserver.py PgPair). PUTs run in a loop;
the primary is killed (-9) and the replica promoted. Without a restart the gateway takes PUTs
again, the storage servers heartbeat into the new primary, and every PUT acknowledged before,
during and after the failover reads back byte for byte. A request may fail while no server
takes writes, and then only with 503.

The URL is given as documented (primary first, target_session_attrs=read-write) and as an
operator might write it (the replica first, no target_session_attrs: wharfd asks libpq for a
read-write host by default). A switchover that fences the old primary read-only instead of
killing it: the gateway's sessions there reconnect to the promoted replica."""
import random
import threading
import time

import pytest
from botocore.exceptions import ClientError

from cluster import Cluster
from pgserver import PgPair, missing_reason
from wharfd import unique_bucket, wait_until

pytestmark = pytest.mark.skipif(missing_reason() is not None, reason=str(missing_reason()))


class _Url:
    """The pair as Cluster sees a PostgreSQL: its url, and sql on the current primary."""

    def __init__(self, pair, url):
        self.pair, self.url = pair, url

    def sql(self, query, db="postgres", timeout=30):
        return self.pair.sql(query, db=db, timeout=timeout)


def put_ok(s3, b, k, data):
    try:
        s3.put_object(Bucket=b, Key=k, Body=data)
        return 200
    except ClientError as e:
        return e.response["ResponseMetadata"]["HTTPStatusCode"]


def test_fenced_primary_switchover():
    """A switchover that fences the old primary instead of killing it: it turns read-only
    (default_transaction_read_only) under the gateway's open sessions, and the replica is
    promoted. The gateway's sessions on the fenced server meet read-only refusals (503) and
    reconnect to the host that takes writes now."""
    with PgPair() as pair, Cluster(storage=1, replicas=1, pg=_Url(pair, pair.url),
                                   providers="none") as cl:
        s3 = cl.boto3()
        b = unique_bucket("pgro")
        s3.create_bucket(Bucket=b)
        for i in range(20):  # every pooled session in use once
            assert put_ok(s3, b, f"k{i}", b"v%d" % i) == 200
        pair.primary.sql("ALTER SYSTEM SET default_transaction_read_only = on")
        pair.primary.sql("SELECT pg_reload_conf()")
        assert wait_until(lambda: put_ok(s3, b, "probe", b"p") == 503, timeout=10,
                          interval=0.1)
        pair.promote()
        codes = []

        def put_now():
            codes.append(put_ok(s3, b, "after", b"after"))
            return codes[-1] == 200
        assert wait_until(put_now, timeout=30, interval=0.2), (codes[-5:],
                                                                cl.gateway.log_tail(3000))
        assert all(c in (200, 503) for c in codes), codes
        assert pair.current() is pair.replica
        assert s3.get_object(Bucket=b, Key="after")["Body"].read() == b"after"
        for i in range(20):
            assert s3.get_object(Bucket=b, Key=f"k{i}")["Body"].read() == b"v%d" % i


@pytest.mark.parametrize("url_form", ["documented", "replica_first_no_attrs"])
def test_primary_killed_replica_promoted(url_form):
    with PgPair() as pair:
        url = (pair.url if url_form == "documented"
               else pair.db_url("postgres", replica_first=True, attrs=None))
        with Cluster(storage=2, replicas=2, pg=_Url(pair, url), providers="none") as cl:
            drill(pair, cl)


def drill(pair, cl):
    assert pair.replication().endswith("|sync"), pair.replication()
    g = cl.gateway
    pid = g.proc.pid
    s3 = cl.boto3()
    b = unique_bucket("pgfail")
    s3.create_bucket(Bucket=b)

    stop = threading.Event()
    lock = threading.Lock()
    acked, failures = {}, []
    phase = {"name": "before"}
    counts = {"before": 0, "outage": 0, "after": 0}

    def writer(seed):
        rnd = random.Random(seed)
        w = cl.boto3()
        i = 0
        while not stop.is_set():
            k = f"w{seed}-{i}"
            data = rnd.randbytes(rnd.randint(1, 200_000))
            i += 1
            try:
                w.put_object(Bucket=b, Key=k, Body=data)
            except ClientError as e:
                code = e.response["ResponseMetadata"]["HTTPStatusCode"]
                failures.append((phase["name"], code, str(e)[:300]))
                time.sleep(0.05)
                continue
            except Exception as e:  # noqa: BLE001 - every failure is judged below
                failures.append((phase["name"], None, repr(e)[:300]))
                time.sleep(0.05)
                continue
            with lock:
                acked[k] = data
                counts[phase["name"]] += 1

    ts = [threading.Thread(target=writer, args=(n,), daemon=True) for n in (1, 2)]
    for t in ts:
        t.start()
    try:
        assert wait_until(lambda: counts["before"] >= 30, timeout=60, interval=0.05), counts
        phase["name"] = "outage"
        pair.kill_primary()
        time.sleep(1.0)  # PUTs meet no server that takes writes
        pair.promote()
        phase["name"] = "after"
        assert wait_until(lambda: counts["after"] >= 30, timeout=60, interval=0.05), \
            (counts, failures[-5:], g.log_tail(3000))
    finally:
        stop.set()
        for t in ts:
            t.join(timeout=60)
    assert not any(t.is_alive() for t in ts), "a writer hung"

    # the same gateway process, no restart
    assert g.alive() and g.proc.pid == pid
    # a failure only while no server took writes (or the PUT that met the kill), and 503
    assert all(ph != "before" for ph, _c, _m in failures), failures[:5]
    assert all(code == 503 for _ph, code, _m in failures), failures[:5]
    # the storage servers heartbeat into the new primary
    assert wait_until(lambda: cl.nodes_up() == 2, timeout=20, interval=0.2), cl.nodes_up()
    # every acknowledged PUT, before and after the failover, byte for byte
    for k, v in acked.items():
        assert s3.get_object(Bucket=b, Key=k)["Body"].read() == v, k
    listed = set()
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=b):
        listed.update(o["Key"] for o in page.get("Contents", []))
    assert set(acked) <= listed
    # and the gateway writes into the promoted server now
    assert pair.current() is pair.replica
