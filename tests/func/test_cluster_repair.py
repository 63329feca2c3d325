# SPDX-License-Identifier: Apache-2.0
"""Repair and orphan collection.

- A storage server killed for good has its chunks re-replicated from the remaining replicas
  after --repair-after, by the one gateway holding the maintenance lock; /metrics shows the
  progress. Then a second server is killed: every object still reads back.
- A PUT that dies with its gateway (kill -9 mid-body) leaves chunk copies that no commit
  lists; they are collected once --orphan-grace has passed."""
import os

import pytest

from cluster import Cluster
from s3raw import S3Raw
from wharfd import unique_bucket, wait_until

CHUNK = 256 * 1024


def test_repair_then_second_failure():
    with Cluster(storage=4, replicas=2, chunk_size=CHUNK, providers="none",
                 gateway_args=["--repair-after", "3"]) as cl:
        s3 = cl.boto3()
        b = unique_bucket("clrep")
        s3.create_bucket(Bucket=b)
        objs = {f"o{i}": os.urandom(CHUNK * 3 + i) for i in range(10)}
        for k, v in objs.items():
            s3.put_object(Bucket=b, Key=k, Body=v)
        g = cl.gateway
        assert g.metric_sum("wharf_cluster_leader") == 1
        victim_chunks = len(cl.chunk_files()[0])
        assert victim_chunks > 0
        cl.storage[0].kill()
        ok = wait_until(lambda: g.metric_sum("wharf_cluster_repair_chunks_total")
                        >= victim_chunks and g.metric_sum("wharf_cluster_repair_pending") == 0,
                        timeout=60, interval=0.5)
        assert ok, (g.metric_sum("wharf_cluster_repair_chunks_total"), victim_chunks,
                    g.log_tail(3000))
        assert g.metric_sum("wharf_cluster_repair_bytes_total") > 0
        # every chunk has two live copies again
        files = cl.chunk_files()
        live = {}
        for i in (1, 2, 3):
            for c in files[i]:
                live[c] = live.get(c, 0) + 1
        assert all(n >= 2 for n in live.values()), live
        cl.storage[1].kill()
        for k, v in objs.items():
            assert s3.get_object(Bucket=b, Key=k)["Body"].read() == v, k


def test_orphans_of_a_dead_put_are_collected():
    with Cluster(storage=2, replicas=2, chunk_size=CHUNK, providers="none",
                 gateway_args=["--orphan-grace", "3"]) as cl:
        s3 = cl.boto3()
        b = unique_bucket("clorph")
        s3.create_bucket(Bucket=b)
        s3.put_object(Bucket=b, Key="kept", Body=os.urandom(CHUNK * 2))
        kept = cl.chunk_files()
        # a signed PUT that announces 16 chunks and sends 6, then its gateway dies
        raw = S3Raw(cl.gateway.endpoint)
        sock = raw.open_socket("PUT", f"/{b}/dies", CHUNK * 16)
        sock.sendall(os.urandom(CHUNK * 6))
        assert wait_until(lambda: sum(len(v) for v in cl.chunk_files().values())
                          >= sum(len(v) for v in kept.values()) + 8, timeout=20)
        cl.gateway.kill()
        sock.close()
        orphans = sum(len(v) for v in cl.chunk_files().values()) - \
            sum(len(v) for v in kept.values())
        assert orphans > 0
        cl.gateway.start()
        assert wait_until(lambda: cl.chunk_files() == kept, timeout=30, interval=0.5), \
            (cl.chunk_files(), kept)
        assert s3.get_object(Bucket=b, Key="kept")["ContentLength"] == CHUNK * 2
        with pytest.raises(s3.exceptions.NoSuchKey):
            s3.get_object(Bucket=b, Key="dies")


def test_repair_goes_past_chunks_it_cannot_repair():
    """Two of four servers die: the chunks with both copies on them cannot be repaired (no
    live source), and there are more of them than one repair batch (64). Every other chunk
    is still repaired, and wharf_cluster_repair_pending is the whole backlog (the chunks still
    with a copy on a dead server), not one batch."""
    chunk = 64 * 1024
    with Cluster(storage=4, replicas=2, chunk_size=chunk, providers="none",
                 gateway_args=["--repair-after", "2"]) as cl:
        s3 = cl.boto3()
        b = unique_bucket("clskip")
        s3.create_bucket(Bucket=b)
        for i in range(12):  # 720 chunks; about 120 on the two victims together
            s3.put_object(Bucket=b, Key=f"o{i}", Body=os.urandom(chunk * 60))
        cmap = cl.chunk_map()
        both = [c for c, _o, _l, reps in cmap if set(reps) == {0, 1}]
        assert len(both) > 64, len(both)
        cl.storage[0].kill()
        cl.storage[1].kill()
        g = cl.gateway

        def done():
            for cid, _o, _l, reps in cl.chunk_map():
                if set(reps) == {None} or cid in both:
                    continue
                if None in reps or len(set(reps)) != 2 or not set(reps) <= {2, 3}:
                    return False
            return True
        assert wait_until(done, timeout=120, interval=1), (
            g.metric_sum("wharf_cluster_repair_chunks_total"), g.log_tail(2000))
        assert wait_until(lambda: g.metric_sum("wharf_cluster_repair_pending") == len(both),
                          timeout=15), (g.metric_sum("wharf_cluster_repair_pending"), len(both))
        # the unrepairable ones are retried every pass, and said once a minute per server at
        # most, not one line per chunk per pass (that was dozens of lines a second)
        assert g.metric_sum("wharf_cluster_repair_failures_total") >= len(both)
        with open(g.log_path, "rb") as f:
            warns = [ln for ln in f.read().splitlines()
                     if b"level=warn" in ln and b"mod=members" in ln]
        assert 1 <= len(warns) <= 4, (len(warns), warns[:5])
