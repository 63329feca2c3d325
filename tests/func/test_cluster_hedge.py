# SPDX-License-Identifier: Apache-2.0
"""Hedged reads: an HTTP GET whose first replica has not answered within its hedge deadline
(from that server's latency estimate, src/server/cluster/rtt.c) asks the next replica too, and the
first good answer wins. Drill: one of three storage servers SIGSTOPped (it accepts
connections and answers nothing) for 3.5 s, under the 5 s heartbeat bound, so it stays up and
first in line for its chunks; GETs go on the whole time: every one returns the right bytes and
none takes anything near the 3 s per-request bound a GET waited before it moved on."""
import hashlib
import os
import signal
import time

from cluster import Cluster
from wharfd import unique_bucket

CHUNK = 256 * 1024


def test_sigstop_of_a_replica_keeps_get_latency_bounded():
    with Cluster(storage=3, replicas=2, chunk_size=CHUNK, providers="none") as cl:
        s3 = cl.boto3(attempts=1)
        b = unique_bucket("clhedge")
        s3.create_bucket(Bucket=b)
        objs = {f"o{i}": os.urandom(CHUNK * 4 + 17 * i) for i in range(6)}
        for k, v in objs.items():
            s3.put_object(Bucket=b, Key=k, Body=v)
        digest = {k: hashlib.sha256(v).digest() for k, v in objs.items()}
        on0 = {cid for cid, _o, _l, reps in cl.chunk_map() if 0 in reps}
        assert on0
        for _ in range(3):  # latency estimates of every server
            for k in objs:
                assert hashlib.sha256(s3.get_object(Bucket=b, Key=k)["Body"].read()).digest() \
                    == digest[k]
        g = cl.gateway
        h0 = g.metric_sum("wharf_cluster_chunk_hedges_total")
        w0 = g.metric_sum("wharf_cluster_chunk_hedge_wins_total")
        victim = cl.storage[0]
        lat, wrong, n = [], 0, 0
        victim.proc.send_signal(signal.SIGSTOP)
        try:
            t_end = time.monotonic() + 3.5
            while time.monotonic() < t_end and n < 300:
                k = f"o{n % len(objs)}"
                t0 = time.monotonic()
                body = s3.get_object(Bucket=b, Key=k)["Body"].read()
                lat.append(time.monotonic() - t0)
                wrong += hashlib.sha256(body).digest() != digest[k]
                n += 1
        finally:
            victim.proc.send_signal(signal.SIGCONT)
        hedges = g.metric_sum("wharf_cluster_chunk_hedges_total") - h0
        wins = g.metric_sum("wharf_cluster_chunk_hedge_wins_total") - w0
        print(f"{n} GETs during the pause, slowest {max(lat):.3f} s, "
              f"median {sorted(lat)[len(lat) // 2]:.3f} s, hedges {hedges:.0f}, wins {wins:.0f}")
        assert wrong == 0
        assert n >= 6, n
        assert hedges >= 1 and wins >= 1, (hedges, wins)
        # without hedging the first chunk request to the paused server waited its whole
        # bound (3 s or more) before the next replica was asked
        assert max(lat) < 1.5, sorted(lat)[-5:]
        for k in objs:
            assert hashlib.sha256(s3.get_object(Bucket=b, Key=k)["Body"].read()).digest() == \
                digest[k]
