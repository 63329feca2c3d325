# SPDX-License-Identifier: Apache-2.0
"""Chunk copies storage server to storage server (repair, drain, rebalance, damaged copies).

- The push and cput requests themselves: signed like every internal request; the source
  checks its copy against the chunk map's crc before it sends, the target stores the bytes
  only when their crc64nvme is the chunk map's; forged, malformed or misdirected ones are
  refused and leave nothing.
- Drill: a storage server killed and its data directory removed; repair restores two copies
  of every chunk within a time bound, with not one chunk byte through the gateway (its chunk
  client's rx/tx byte counters do not move, the storage servers' push counters account for
  every repaired byte); every object reads back byte for byte, also after a second server
  dies.
- TLS storage servers without --cluster-ca cannot dial each other: they answer a push with
  501 and the gateway relays the copy itself (counted), so repair still completes."""
import hashlib
import os
import shutil
import time

from cluster import Cluster, crc64nvme, http, new_chunk_id, sign_itoken, target_of
from wharfd import TestCert, unique_bucket, wait_until

CHUNK = 256 * 1024


def put_chunk(st, c, body):
    url = f"{st.endpoint}/chunk/{c}"
    tok = sign_itoken("put", c, 0, len(body), target=target_of(st), crc=crc64nvme(body))
    assert http("PUT", url, {"x-wharf-itoken": tok}, body)[0] == 200


def get_chunk(st, c, n):
    return http("GET", f"{st.endpoint}/chunk/{c}",
                {"x-wharf-itoken": sign_itoken("get", c, 0, n, target=target_of(st))})


def push(st, c, n, mtok, method="POST", **kw):
    return http(method, f"{st.endpoint}/chunk/{c}",
                {"x-wharf-itoken": sign_itoken("push", c, 0, n, mtok=mtok, target=target_of(st),
                                               **kw)}, b"")


def test_push_and_checked_put_requests():
    with Cluster(storage=2, replicas=2, chunk_size=CHUNK, providers="none") as cl:
        a, b = cl.storage
        body = os.urandom(100_000)
        crc = crc64nvme(body)
        c = new_chunk_id()
        put_chunk(a, c, body)
        # the right push: a sends its copy to b, which stores it
        st, h, msg = push(a, c, len(body), f"{crc:016x}@{cl.addr(1)}")
        assert st == 200, (st, msg)
        assert int(h["x-wharf-crc64nvme"], 16) == crc and int(h["x-wharf-bytes"]) == len(body)
        st, _h, got = get_chunk(b, c, len(body))
        assert st == 200 and got == body
        assert a.metric_sum("wharf_storage_push_bytes_total") == len(body)
        assert a.metric_sum("wharf_storage_push_chunks_total") == 1
        assert b.metric_sum("wharf_storage_copy_received_bytes_total") == len(body)
        assert b.metric_sum("wharf_http_write_bytes_total") == 0  # not from a gateway

        # a push naming another crc than the copy's: refused before a byte leaves
        c2 = new_chunk_id()
        put_chunk(a, c2, body)
        st, _h, msg = push(a, c2, len(body), f"{crc ^ 1:016x}@{cl.addr(1)}")
        assert st == 409, (st, msg)
        assert get_chunk(b, c2, len(body))[0] == 404
        # a checked put whose bytes do not have the crc it names: not stored
        refused0 = b.metric_sum("wharf_storage_copy_refused_total")
        url = f"{b.endpoint}/chunk/{c2}"
        tok = sign_itoken("cput", c2, 0, len(body), mtok=f"{crc ^ 1:016x}", target=target_of(b))
        st, _h, msg = http("PUT", url, {"x-wharf-itoken": tok}, body)
        assert st == 409 and b"not stored" in msg, (st, msg)
        assert get_chunk(b, c2, len(body))[0] == 404
        assert b.metric_sum("wharf_storage_copy_refused_total") == refused0 + 1
        assert cl.tmp_files() == 0
        # ...and with the right crc it is
        tok = sign_itoken("cput", c2, 0, len(body), mtok=f"{crc:016x}", target=target_of(b))
        assert http("PUT", url, {"x-wharf-itoken": tok}, body)[0] == 200
        assert get_chunk(b, c2, len(body))[2] == body

        # forged, malformed, misdirected: 403, nothing sent
        rejects0 = a.metric_sum("wharf_storage_token_rejects_total")
        pushed0 = a.metric_sum("wharf_storage_push_chunks_total")
        c3 = new_chunk_id()
        put_chunk(a, c3, body)
        good = f"{crc:016x}@{cl.addr(1)}"
        cases = [
            push(a, c3, len(body), good, secret="y" * 40),   # bad MAC
            push(a, c3, len(body), "-"),                      # no target
            push(a, c3, len(body), f"{crc:016x}"),            # no '@ADDR'
            push(a, c3, len(body), f"{crc:016x}"[1:] + f"@{cl.addr(1)}"),  # short crc
            push(a, c3, len(body), good, method="GET"),       # another method
            push(a, c3, len(body), good, expires=int(time.time()) - 5),
        ]
        for i, (st, _h, msg) in enumerate(cases):
            assert st == 403, (i, st, msg)
        assert a.metric_sum("wharf_storage_token_rejects_total") == rejects0 + len(cases)
        assert a.metric_sum("wharf_storage_push_chunks_total") == pushed0
        assert get_chunk(b, c3, len(body))[0] == 404
        # a push of a chunk this server does not hold, to itself, to nobody
        assert push(a, new_chunk_id(), 10, good)[0] == 404
        assert push(a, c3, len(body), f"{crc:016x}@{cl.addr(0)}")[0] == 400
        st, _h, msg = push(a, c3, len(body), f"{crc:016x}@127.0.0.1:1")
        assert st == 502, (st, msg)
        assert a.metric_sum("wharf_storage_push_failures_total") == 1


def live_copies(cl, dead):
    """{chunk id: number of distinct replicas in the chunk map on servers not in dead}."""
    out = {}
    for cid, _o, _l, reps in cl.chunk_map():
        out[cid] = len({r for r in reps if r is not None and r not in dead})
    return out


def test_repair_drill_bytes_bypass_the_gateway():
    chunk = 1024 * 1024
    with Cluster(storage=4, replicas=2, chunk_size=chunk, providers="none",
                 gateway_args=["--repair-after", "2", "--repair-parallel", "16"]) as cl:
        s3 = cl.boto3()
        bkt = unique_bucket("clpush")
        s3.create_bucket(Bucket=bkt)
        objs = {f"o{i}": os.urandom(chunk * 4 + 1000 * i) for i in range(12)}
        for k, v in objs.items():
            s3.put_object(Bucket=bkt, Key=k, Body=v)
        digests = {k: hashlib.sha256(v).hexdigest() for k, v in objs.items()}
        g = cl.gateway
        assert s3.get_object(Bucket=bkt, Key="o0")["Body"].read() == objs["o0"]
        lens = {cid: ln for cid, _o, ln, _r in cl.chunk_map()}
        victim = {cid for cid, _o, _l, reps in cl.chunk_map() if 0 in reps}
        assert len(victim) > 8, len(victim)
        victim_bytes = sum(lens[c] for c in victim)
        rx0 = g.metric_sum("wharf_cluster_chunk_rx_bytes_total")
        tx0 = g.metric_sum("wharf_cluster_chunk_tx_bytes_total")
        rep0 = g.metric_sum("wharf_cluster_repair_bytes_total")
        assert rx0 > 0 and tx0 > 0  # the counters move for chunk bytes the gateway handles
        cl.storage[0].kill()
        shutil.rmtree(cl.storage[0].data_dir, ignore_errors=True)
        t0 = time.monotonic()
        ok = wait_until(lambda: g.metric_sum("wharf_cluster_repair_pending") == 0
                        and min(live_copies(cl, {0}).values()) >= 2, timeout=60, interval=0.5)
        took = time.monotonic() - t0
        assert ok, (g.metric_sum("wharf_cluster_repair_pending"),
                    g.metric_sum("wharf_cluster_repair_chunks_total"), g.log_tail(3000))
        # 2 s --repair-after, 5 s until down, a pass every 2 s: the copies themselves are fast
        print(f"repair of {len(victim)} chunks ({victim_bytes} bytes) took {took:.1f} s "
              "after the kill")
        assert took < 30, took
        assert g.metric_sum("wharf_cluster_repair_bytes_total") - rep0 == victim_bytes
        # not one chunk byte through the gateway: the storage servers moved them all
        assert g.metric_sum("wharf_cluster_chunk_rx_bytes_total") == rx0
        assert g.metric_sum("wharf_cluster_chunk_tx_bytes_total") == tx0
        assert g.metric_sum("wharf_cluster_repair_relayed_total") == 0
        live = cl.storage[1:]
        assert sum(s.metric_sum("wharf_storage_push_bytes_total") for s in live) == victim_bytes
        assert sum(s.metric_sum("wharf_storage_copy_received_bytes_total") for s in live) \
            == victim_bytes
        assert sum(s.metric_sum("wharf_storage_copy_refused_total") for s in live) == 0
        # every chunk's copies are where the chunk map says, on disk
        files = cl.chunk_files()
        for cid, _o, _l, reps in cl.chunk_map():
            for r in reps:
                assert r != 0 and cid in files[r], (cid, reps)
        for k in objs:
            got = s3.get_object(Bucket=bkt, Key=k)["Body"].read()
            assert hashlib.sha256(got).hexdigest() == digests[k], k
        cl.storage[1].kill()
        for k in objs:
            got = s3.get_object(Bucket=bkt, Key=k)["Body"].read()
            assert hashlib.sha256(got).hexdigest() == digests[k], k


def test_tls_servers_without_cluster_ca_relay(tmp_path):
    cert = TestCert(str(tmp_path / "c"))
    with Cluster(storage=3, replicas=2, chunk_size=CHUNK, providers="none", tls=cert,
                 gateway_args=["--repair-after", "2"]) as cl:
        s3 = cl.boto3()
        bkt = unique_bucket("clrelay")
        s3.create_bucket(Bucket=bkt)
        objs = {f"o{i}": os.urandom(CHUNK * 3 + i) for i in range(4)}
        for k, v in objs.items():
            s3.put_object(Bucket=bkt, Key=k, Body=v)
        g = cl.gateway
        victim = {cid for cid, _o, _l, reps in cl.chunk_map() if 0 in reps}
        assert victim
        lens = {cid: ln for cid, _o, ln, _r in cl.chunk_map()}
        rx0 = g.metric_sum("wharf_cluster_chunk_rx_bytes_total")
        cl.storage[0].kill()
        ok = wait_until(lambda: g.metric_sum("wharf_cluster_repair_pending") == 0
                        and min(live_copies(cl, {0}).values()) >= 2, timeout=60, interval=0.5)
        assert ok, g.log_tail(3000)
        assert g.metric_sum("wharf_cluster_repair_relayed_total") == len(victim)
        # relayed bytes do pass through the gateway, and its counter says so (the drill above
        # would see them)
        assert g.metric_sum("wharf_cluster_chunk_rx_bytes_total") - rx0 == \
            sum(lens[c] for c in victim)
        assert sum(s.metric_sum("wharf_storage_push_chunks_total") for s in cl.storage[1:]) == 0
        for k, v in objs.items():
            assert s3.get_object(Bucket=bkt, Key=k)["Body"].read() == v, k
