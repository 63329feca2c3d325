# SPDX-License-Identifier: Apache-2.0
"""Clients that know several gateways of one cluster (libwharf and wharf.Client with a list of
endpoints; docs/cluster.md, "Several gateways"):

- round robin: one thread's requests alternate between the two gateways, counted on each
  gateway's /metrics; several threads spread too.
- failover: readers and writers (HTTP and RDMA over ofi+tcp) run through both gateways, one
  gateway is killed (-9) mid-load, and the load goes on through the other with zero failed
  operations and zero wrong bytes; every acknowledged PUT reads back intact through the
  survivor, and requests kept completing after the kill.
- WHARF_ENDPOINT with commas gives the same client; bad lists are refused, naming why.
"""
import os
import random
import threading
import time

import pytest

import wharf
from cluster import Cluster
from wharfd import ACCESS_KEY, REGION, SECRET_KEY, unique_bucket

CHUNK = 256 * 1024


def api_count(gw, api):
    return sum(v for k, v in gw.metrics().items()
               if k.startswith("wharf_requests_total{") and f'api="{api}"' in k)


def client(cl, **kw):
    return wharf.Client([g.endpoint for g in cl.gateways], ACCESS_KEY, SECRET_KEY,
                        region=REGION, **kw)


def test_round_robin_spreads():
    with Cluster(storage=2, gateways=2, replicas=2, providers="none") as cl:
        g0, g1 = cl.gateways
        c = client(cl, provider="none")
        try:
            assert c.endpoints == [g0.endpoint, g1.endpoint]
            b = unique_bucket("rr")
            c.create_bucket(b)
            c.put(b, "k", b"x" * 1000)
            h0, h1 = api_count(g0, "HeadObject"), api_count(g1, "HeadObject")
            for _ in range(40):
                assert c.stat(b, "k").length == 1000
            # one thread: each request goes to the next gateway in turn
            assert api_count(g0, "HeadObject") - h0 == 20
            assert api_count(g1, "HeadObject") - h1 == 20

            # four threads of 10 each: every thread alternates, so each gateway gets half
            h0, h1 = api_count(g0, "HeadObject"), api_count(g1, "HeadObject")
            errs = []

            def heads():
                try:
                    for _ in range(10):
                        c.stat(b, "k")
                except Exception as e:  # noqa: BLE001 - judged below
                    errs.append(repr(e))
            ts = [threading.Thread(target=heads) for _ in range(4)]
            for t in ts:
                t.start()
            for t in ts:
                t.join(timeout=60)
            assert not errs
            assert api_count(g0, "HeadObject") - h0 == 20
            assert api_count(g1, "HeadObject") - h1 == 20

            # a large GET's ranged requests spread over both
            data = random.Random(3).randbytes(8 * CHUNK)
            c.put(b, "big", data)
            q0, q1 = api_count(g0, "GetObject"), api_count(g1, "GetObject")
            c2 = client(cl, provider="none", chunk_size=CHUNK, concurrency=4)
            try:
                assert c2.get(b, "big") == data
            finally:
                c2.close()
            d0, d1 = api_count(g0, "GetObject") - q0, api_count(g1, "GetObject") - q1
            assert d0 + d1 == 8 and d0 >= 2 and d1 >= 2, (d0, d1)
        finally:
            c.close()


def test_endpoint_list_from_env_and_refusals(tmp_path):
    with Cluster(storage=1, gateways=2, replicas=1, providers="none") as cl:
        g0, g1 = cl.gateways
        env = {"WHARF_ENDPOINT": f"{g0.endpoint}, {g1.endpoint}",
               "WHARF_ACCESS_KEY": ACCESS_KEY, "WHARF_SECRET_KEY": SECRET_KEY,
               "WHARF_REGION": REGION}
        c = wharf.config.client_from_env(env)
        try:
            assert c.endpoints == [g0.endpoint, g1.endpoint]
            b = unique_bucket("env")
            c.create_bucket(b)
            h0, h1 = api_count(g0, "HeadObject"), api_count(g1, "HeadObject")
            c.put(b, "k", b"abc")
            for _ in range(4):
                c.stat(b, "k")
            assert api_count(g0, "HeadObject") - h0 == 2
            assert api_count(g1, "HeadObject") - h1 == 2
        finally:
            c.close()
        for bad, why in ((f"{g0.endpoint},,{g1.endpoint}", "empty entry"),
                         (f"{g0.endpoint},{g0.endpoint}/", "listed twice"),
                         (f"{g0.endpoint},127.0.0.1:1", "must start with http")):
            with pytest.raises(wharf.WharfError, match=why):
                wharf.Client(bad, ACCESS_KEY, SECRET_KEY, region=REGION)
        with pytest.raises(wharf.WharfError, match="none empty"):
            wharf.Client([g0.endpoint, ""], ACCESS_KEY, SECRET_KEY, region=REGION)
        with pytest.raises(wharf.WharfError, match="reaches one server"):
            wharf.Client([g0.endpoint, g1.endpoint], ACCESS_KEY, SECRET_KEY, region=REGION,
                         unix_socket=g0.unix_socket)


def test_gateway_killed_mid_load():
    with Cluster(storage=3, gateways=2, replicas=2, chunk_size=CHUNK,
                 providers="tcp") as cl:
        g0, g1 = cl.gateways
        b = unique_bucket("gwkill")
        setup = client(cl, provider="none")
        rnd = random.Random(11)
        objs = {f"o{i}": rnd.randbytes(rnd.randint(CHUNK // 2, 6 * CHUNK)) for i in range(10)}
        setup.create_bucket(b)
        for k, v in objs.items():
            setup.put(b, k, v)
        setup.close()

        stop = threading.Event()
        lock = threading.Lock()
        written, failures, wrong = {}, [], []
        done = {"get": 0, "put": 0}
        after_kill = {"get": 0, "put": 0}
        killed = threading.Event()
        clients = []

        def note(kind):
            with lock:
                done[kind] += 1
                if killed.is_set():
                    after_kill[kind] += 1

        def reader(seed, transport, provider):
            r = random.Random(seed)
            c = client(cl, provider=provider, chunk_size=CHUNK, concurrency=3, timeout_ms=20000)
            clients.append(c)
            keys = sorted(objs)
            while not stop.is_set():
                k = r.choice(keys)
                try:
                    got = c.get(b, k, transport=transport)
                except Exception as e:  # noqa: BLE001 - every failure is recorded and judged
                    failures.append(("get", transport, k, repr(e)[:400]))
                    continue
                if got != objs[k]:
                    wrong.append(k)
                note("get")

        def writer(seed):
            r = random.Random(seed)
            c = client(cl, provider="none", timeout_ms=20000)
            clients.append(c)
            i = 0
            while not stop.is_set():
                k = f"w{seed}-{i}"
                data = r.randbytes(r.randint(1, 3 * CHUNK))
                try:
                    c.put(b, k, data)
                except Exception as e:  # noqa: BLE001
                    failures.append(("put", "http", k, repr(e)[:400]))
                else:
                    with lock:
                        written[k] = data
                    note("put")
                i += 1

        ts = [threading.Thread(target=reader, args=(1, "http", "none")),
              threading.Thread(target=reader, args=(2, "http", "none")),
              threading.Thread(target=reader, args=(3, "rdma", "ofi+tcp")),
              threading.Thread(target=writer, args=(4,)),
              threading.Thread(target=writer, args=(5,))]
        for t in ts:
            t.daemon = True
            t.start()
        try:
            deadline = time.monotonic() + 30
            while (done["get"] < 20 or done["put"] < 10) and time.monotonic() < deadline:
                time.sleep(0.1)
            assert done["get"] >= 20 and done["put"] >= 10, ("load did not start", done)
            served_by_g1 = api_count(g1, "GetObject") + api_count(g1, "PutObject")
            assert served_by_g1 > 0, "gateway 1 served nothing before the kill"
            killed.set()
            g1.kill()
            deadline = time.monotonic() + 30
            while ((after_kill["get"] < 40 or after_kill["put"] < 20)
                   and time.monotonic() < deadline and not failures):
                time.sleep(0.1)
        finally:
            stop.set()
            for t in ts:
                t.join(timeout=90)
        assert not any(t.is_alive() for t in ts), "a load thread hung"
        stats = [c.stats() for c in clients]
        for c in clients:
            c.close()
        assert not failures, failures[:5]
        assert not wrong, wrong[:5]
        assert after_kill["get"] >= 40 and after_kill["put"] >= 20, after_kill
        # the dead gateway was met (connections refused or dropped) and passed over
        assert sum(s["retries"] for s in stats) > 0, stats

        # every acknowledged write is there, byte for byte, through the survivor
        assert g0.alive()
        check = wharf.Client(g0.endpoint, ACCESS_KEY, SECRET_KEY, region=REGION)
        try:
            for k, v in list(objs.items()) + list(written.items()):
                assert check.get(b, k) == v, k
        finally:
            check.close()
