# SPDX-License-Identifier: Apache-2.0
"""`wharf admin cluster` (the S3 client, text and --json) against a real cluster: it reads the
gateway's GET /?x-wharf-cluster, a SigV4-signed request that only root's credentials may make,
and shows what `wharfd node status` shows from the database: every storage server (address,
id, zone, state, capacity and free bytes), the backlogs, the maintenance (GC and repair)
leader. A killed server shows down; a bad signature is refused; `wharfd serve` answers 501."""
import json
import os
import re
import subprocess
import tempfile

from cluster import Cluster
from wharfd import WharfServer, build_dir, unique_bucket, wait_until


def wharf(env, *args):
    p = subprocess.run([os.path.join(build_dir(), "wharf"), "--provider", "none", *args],
                       env=env, capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def test_admin_cluster_text_json_and_a_dead_server():
    with Cluster(storage=3, replicas=2, chunk_size=256 * 1024, providers="none",
                 zones=["za", "zb"]) as cl:
        g = cl.gateway
        env = cl.client_env()
        s3 = cl.boto3()
        b = unique_bucket("cladm")
        s3.create_bucket(Bucket=b)
        for i in range(4):
            s3.put_object(Bucket=b, Key=f"o{i}", Body=os.urandom(256 * 1024 * 2))
        # the leader writes its view every pass (2 s)
        assert wait_until(lambda: json.loads(wharf(env, "admin", "cluster", "--json")[1])
                          .get("leader") is not None, timeout=15)
        rc, out, err = wharf(env, "admin", "cluster", "--json")
        assert rc == 0, (rc, out, err)
        d = json.loads(out)
        nodes = {n["addr"]: n for n in d["nodes"]}
        assert set(nodes) == {cl.addr(i) for i in range(3)}, nodes
        for i in range(3):
            n = nodes[cl.addr(i)]
            assert n["state"] == "up" and n["up"] is True, n
            assert n["zone"] == ["za", "zb", ""][i], n
            assert isinstance(n["id"], int) and n["id"] > 0
            assert 0 < n["free"] <= n["capacity"], n
        assert sum(n["copies"] for n in d["nodes"]) == 4 * 2 * 2
        assert d["servers"]["up"] == 3 and d["servers"]["down"] == 0
        assert d["leader"]["addr"] == f"{g.host}:{g.port}" and d["leader"]["live"] is True
        for k in ("repair_pending", "repair_nodes", "drain_pending", "damage_pending",
                  "damaged_copies", "scrub_servers", "scrub_mid_pass",
                  "scrub_lowest_progress"):
            assert k in d["backlog"], (k, d["backlog"])
        assert d["backlog"]["repair_pending"] == 0
        # the same from the database (wharfd node status --json): one dashboard
        db = json.loads(cl.node_cmd("status", "--json")[1])
        assert {n["addr"]: n["state"] for n in db["nodes"]} == \
            {a: n["state"] for a, n in nodes.items()}

        rc, text, err = wharf(env, "admin", "cluster")
        assert rc == 0, (rc, text, err)
        assert re.search(r"^servers:\s+3 \(3 up\)$", text, re.M), text
        assert re.search(rf"^leader:\s+{re.escape(g.host)}:{g.port} \(last pass \d+ s ago\)$",
                         text, re.M), text
        assert re.search(r"^backlog:\s+repair 0 chunks on 0 servers", text, re.M), text
        rows = {}
        for line in text.splitlines():
            f = line.split()
            if len(f) >= 9 and f[0].isdigit() and ":" in f[1]:
                rows[f[1]] = f
        assert set(rows) == set(nodes), text
        for a, f in rows.items():
            assert int(f[0]) == nodes[a]["id"] and f[2] == "up", f
            assert int(f[5]) == nodes[a]["capacity"], f

        # a killed server shows down (no heartbeat for 5 s)
        cl.storage[2].kill()

        def down():
            _rc, o, _e = wharf(env, "admin", "cluster", "--json")
            n = {x["addr"]: x for x in json.loads(o)["nodes"]}[cl.addr(2)]
            return n["state"] == "down" and n["up"] is False
        assert wait_until(down, timeout=20, interval=0.5)
        rc, text, _e = wharf(env, "admin", "cluster")
        assert re.search(r"^servers:\s+3 \(2 up, 1 down\)$", text, re.M), text
        assert rows and re.search(rf"{re.escape(cl.addr(2))}\s+down\s", text), text

        # a bad signature, and a format it does not know
        bad = dict(env, WHARF_SECRET_KEY="not-the-secret")
        rc, out, err = wharf(bad, "admin", "cluster")
        assert rc != 0 and ("403" in err or "Signature" in err), (rc, out, err)
        rc, out, err = wharf(env, "admin", "nodes")
        assert rc == 2 and "cluster" in err


def test_admin_cluster_on_a_single_server_is_501():
    with tempfile.TemporaryDirectory(prefix="wharf-adm-") as d:
        s = WharfServer(data_dir=d, providers="none")
        s.start()
        try:
            rc, out, err = wharf(s.client_env(), "admin", "cluster")
            assert rc != 0 and "NotImplemented" in err and "not a cluster gateway" in err, \
                (rc, out, err)
        finally:
            s.stop()
            s.cleanup()
