# SPDX-License-Identifier: Apache-2.0
"""monitoring/: the Prometheus rules pass promtool; every metric that the rules and the Grafana
dashboard name is one a live wharfd exports (serve, and a cluster's gateway and storage
servers); and a real Prometheus (Debian's, on a loopback port, 1 s scrapes and evaluations)
scraping a 3-server cluster fires WharfStorageServerDown once a storage server is killed."""
import json
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.request

import pytest

from opslib import ROOT
from cluster import Cluster
from wharfd import WharfServer, free_port

RULES = os.path.join(ROOT, "monitoring", "wharf-rules.yml")
DASHBOARD = os.path.join(ROOT, "monitoring", "wharf-dashboard.json")
PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"

KEYWORDS = {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left",
            "group_right", "offset", "bool", "inf", "nan"}


def metric_names(expr):
    """The metric names a PromQL expression selects (not functions, keywords, labels,
    strings, durations or this file's recording rules, which have a colon)."""
    e = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)          # strings
    e = re.sub(r"\{[^}]*\}", "", e)                        # label matchers
    e = re.sub(r"\[[^\]]*\]", "", e)                       # ranges, subqueries
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)
    e = re.sub(r"\$\w+", " ", e)                           # Grafana variables
    e = re.sub(r"(?<![A-Za-z0-9_:])\d[\w.]*", " ", e)        # numbers, durations (offset 1d)
    out = set()
    for m in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", e):
        name = m.group(0)
        after = e[m.end():].lstrip()
        if after.startswith("(") or name.lower() in KEYWORDS or ":" in name:
            continue
        out.add(name)
    return out


def rule_exprs():
    import yaml
    with open(RULES) as f:
        doc = yaml.safe_load(f)
    return [r["expr"] for g in doc["groups"] for r in g["rules"]]


def dashboard_exprs():
    with open(DASHBOARD) as f:
        d = json.load(f)
    exprs = [t["expr"] for p in d["panels"] for t in p.get("targets", [])]
    exprs += [re.sub(r"^label_values\((.*),\s*\w+\)$", r"\1", v["query"])
              for v in d["templating"]["list"] if v["type"] == "query"]
    return exprs


def exported(url):
    with urllib.request.urlopen(url + "/metrics", timeout=10) as r:
        text = r.read().decode()
    return {l.split("{")[0].split(" ")[0] for l in text.splitlines()
            if l and not l.startswith("#")}


@pytest.fixture(scope="module")
def cluster():
    with Cluster(storage=3) as c:
        yield c


@pytest.fixture(scope="module")
def live_names(cluster):
    with WharfServer() as srv:
        names = exported(srv.endpoint)
    for m in [cluster.gateway] + cluster.storage:
        names |= exported(m.endpoint)
    return names


def test_promtool_check_rules():
    r = subprocess.run([PROMTOOL, "check", "rules", RULES], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert re.search(r"SUCCESS: \d+ rules found", r.stdout), r.stdout


def test_every_named_metric_is_exported(live_names):
    used = {}
    for src, exprs in (("rules", rule_exprs()), ("dashboard", dashboard_exprs())):
        for e in exprs:
            for n in metric_names(e):
                used.setdefault(n, set()).add(src)
    assert len(used) >= 20, used
    missing = {n: sorted(s) for n, s in used.items() if n not in live_names}
    assert missing == {}, f"named but not exported by a live wharfd: {missing}"


def test_the_check_catches_a_name_wharfd_does_not_export(live_names):
    names = metric_names('sum by (instance) (rate(wharf_rdma_declines_total{reason="busy"}[5m]))'
                         ' / on(instance) wharf_rdma_pool_buffer_total > 0')
    assert names == {"wharf_rdma_declines_total", "wharf_rdma_pool_buffer_total"}
    assert names - live_names == {"wharf_rdma_pool_buffer_total"}


def _get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return json.loads(r.read().decode())


def test_storage_server_down_alert_fires(cluster, tmp_path):
    # the rules as shipped, with their `for:` shortened so that the test takes seconds
    with open(RULES) as f:
        rules = re.sub(r"(\n\s+for: )\S+", r"\g<1>2s", f.read())
    (tmp_path / "rules.yml").write_text(rules)
    hostport = lambda m: m.endpoint.split("//")[1]
    cfg = ("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n"
           "rule_files: [rules.yml]\nscrape_configs:\n"
           "  - job_name: wharf-gateway\n"
           f"    static_configs: [{{targets: ['{hostport(cluster.gateway)}']}}]\n"
           "  - job_name: wharf-storage\n    static_configs: [{targets: ["
           + ", ".join(f"'{hostport(s)}'" for s in cluster.storage) + "]}]\n")
    (tmp_path / "prometheus.yml").write_text(cfg)
    port = free_port()
    log = open(tmp_path / "prometheus.log", "wb")
    proc = subprocess.Popen([PROMETHEUS, f"--config.file={tmp_path / 'prometheus.yml'}",
                             f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                             f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
                            stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path)
    api = f"http://127.0.0.1:{port}/api/v1"

    def alert_state():
        for a in _get(api + "/alerts")["data"]["alerts"]:
            if a["labels"]["alertname"] == "WharfStorageServerDown":
                return a["state"], a["labels"]
        return "inactive", None

    try:
        deadline = time.monotonic() + 60
        ready = False
        while time.monotonic() < deadline:  # every target scraped, the rules evaluated
            try:
                targets = _get(api + "/targets")["data"]["activeTargets"]
                groups = _get(api + "/rules")["data"]["groups"]
                up = [t for t in targets if t["health"] == "up"]
                evald = [g for g in groups if g["name"] == "wharf-alerts"
                         and not g["lastEvaluation"].startswith("0001")]
                if len(up) == 4 and evald and _get(
                        api + "/query?query=wharf_storage_nodes_up")["data"]["result"]:
                    ready = True
                    break
            except OSError:
                pass
            assert proc.poll() is None, (tmp_path / "prometheus.log").read_text()
            time.sleep(0.5)
        assert ready, (tmp_path / "prometheus.log").read_text()
        time.sleep(3)  # a few evaluations with every server up: nothing fires
        assert alert_state()[0] != "firing", "WharfStorageServerDown fired with every server up"

        cluster.storage[2].kill()
        deadline = time.monotonic() + 90
        state = None
        while time.monotonic() < deadline:
            state, labels = alert_state()
            if state == "firing":
                break
            time.sleep(0.5)
        assert state == "firing", f"WharfStorageServerDown is {state} 90 s after the kill"
        assert labels["job"] == "wharf-gateway" and labels["severity"] == "critical", labels
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        log.close()
