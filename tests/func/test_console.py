# SPDX-License-Identifier: Apache-2.0
"""The browser console (/console, docs/console.md) in a real browser: headless Chromium
(Debian's chromium and chromium-driver, through selenium) against a 3-node cluster on
PostgreSQL. It logs in with a user's S3 key, sees every page filled with the cluster's real
state (checked against what the admin API, S3 and /metrics say), sees a killed storage server
go down, and checks the security properties: a user without wharf:Console is refused, the
session cookie is HttpOnly and SameSite=Strict (and Secure over TLS), an API request without
the CSRF token is refused, and no secret reaches any page.

WHARF_CONSOLE_SCREENSHOT=FILE saves a screenshot of the cluster page there (docs/console.png).
"""
import json
import os
import shutil
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

import pytest

from cluster import Cluster
from users import client, create_user, disable_key, enable_key
from wharfd import ACCESS_KEY, SECRET_KEY, WharfServer, build_dir, make_test_cert, \
    unique_bucket, wait_until

CHROMEDRIVER = "/usr/bin/chromedriver"


def _browser(download_dir):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--window-size=1280,900", "--disable-extensions", "--no-first-run"):
        opts.add_argument(a)
    opts.add_experimental_option("prefs", {"download.default_directory": download_dir,
                                           "download.prompt_for_download": False})
    d = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    d.set_page_load_timeout(15)
    d.set_script_timeout(10)
    d.execute_cdp_cmd("Page.setDownloadBehavior", {"behavior": "allow",
                                                   "downloadPath": download_dir})
    return d


def _admin_cluster(cl):
    """`wharf admin cluster --json`: the admin API's view of the cluster."""
    env = cl.client_env()
    p = subprocess.run([os.path.join(build_dir(), "wharf"), "--provider", "none", "admin",
                        "cluster", "--json"], env=env, capture_output=True, text=True,
                       timeout=30)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def _policy(*actions):
    return json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": list(actions), "Resource": "*"}]})


def _fetch(driver, method, path, csrf=None):
    """A fetch from inside the logged-in page (its cookie goes along): [status, body]."""
    return driver.execute_async_script("""
        const [method, path, csrf, done] = arguments;
        const h = csrf ? {'X-Wharf-Csrf': csrf} : {};
        fetch(path, {method: method, credentials: 'same-origin', headers: h})
          .then(r => r.text().then(t => done([r.status, t])))
          .catch(e => done([0, String(e)]));""", method, path, csrf)


def _login(driver, base, ak, sk):
    from selenium.webdriver.common.by import By
    driver.get(base + "/console/")
    assert wait_until(lambda: driver.find_element(By.ID, "login-page").is_displayed(), timeout=10)
    driver.find_element(By.ID, "login-ak").clear()
    driver.find_element(By.ID, "login-ak").send_keys(ak)
    driver.find_element(By.ID, "login-sk").send_keys(sk)
    driver.find_element(By.ID, "login-submit").click()


def _click_row(driver, table, attr, value):
    """Clicks the button of the row whose data-attr is value (in one step: no stale element)."""
    driver.execute_script("""
        const [table, attr, value] = arguments;
        for (const tr of document.querySelectorAll('#' + table + ' tbody tr'))
          if (tr.dataset[attr] === value) { tr.querySelector('button').click(); return; }
        throw new Error('no row ' + value);""", table, attr, value)


def _table(driver, table, attr):
    """The rows of a table in one read (pages that refresh redraw theirs):
    {data-attr: {"data": {its data-* attributes}, "cells": [(text, data-value), ...]}}."""
    return driver.execute_script("""
        const [table, attr] = arguments, out = {};
        for (const tr of document.querySelectorAll('#' + table + ' tbody tr')) {
          if (!(attr in tr.dataset)) continue;
          out[tr.dataset[attr]] = {data: Object.assign({}, tr.dataset),
            cells: Array.from(tr.querySelectorAll('td')).map(
              td => [td.textContent, td.dataset.value === undefined ? null : td.dataset.value])};
        }
        return out;""", table, attr)


def test_console_in_a_browser_against_a_cluster():
    from selenium.webdriver.common.by import By
    t0 = time.monotonic()
    work = tempfile.mkdtemp(prefix="wharf-console-")
    keyfile = os.path.join(work, "server.key")
    with open(keyfile, "w") as f:
        f.write(os.urandom(32).hex() + "\n")
    os.chmod(keyfile, 0o600)
    downloads = os.path.join(work, "downloads")
    os.makedirs(downloads)
    driver = None
    with Cluster(storage=3, replicas=2, chunk_size=256 * 1024, providers="shm",
                 zones=["za", "zb"], gateway_args=["--server-key-file", keyfile]) as cl:
        try:
            g = cl.gateway
            base = g.endpoint
            s3 = cl.boto3()
            ba, bb, bc = unique_bucket("cona"), unique_bucket("conb"), unique_bucket("conc")
            for b in (ba, bb, bc):
                s3.create_bucket(Bucket=b)
            bodies = {}
            for k, n in [("top1", 1000), ("top2", 300 * 1024), ("dir/a", 10), ("dir/b", 20),
                         ("dir/sub/c", 5)]:
                bodies[k] = os.urandom(n)
                s3.put_object(Bucket=ba, Key=k, Body=bodies[k])
            for i in range(3):
                s3.put_object(Bucket=bb, Key=f"x{i}", Body=b"y" * (100 + i))
            s3.get_object(Bucket=ba, Key="top2")["Body"].read()
            with pytest.raises(Exception):
                s3.get_object(Bucket=ba, Key="missing-key")

            alice = create_user(g, "alice")
            bob = create_user(g, "bob")
            iam = client(g, ACCESS_KEY, SECRET_KEY, service="iam")
            iam.put_user_policy(UserName="alice", PolicyName="console", PolicyDocument=_policy(
                "wharf:Console", "s3:ListAllMyBuckets", "s3:ListBucket", "s3:GetObject"))
            iam.put_user_policy(UserName="alice", PolicyName="not-c", PolicyDocument=json.dumps({
                "Version": "2012-10-17", "Statement": [{
                    "Effect": "Deny", "Action": "s3:ListBucket",
                    "Resource": f"arn:aws:s3:::{bc}"}]}))
            iam.put_user_policy(UserName="bob", PolicyName="s3", PolicyDocument=_policy("s3:*"))
            secrets = [alice.secret_key, bob.secret_key, SECRET_KEY]

            driver = _browser(downloads)

            # bob may use S3 but not the console: refused, and no session cookie
            _login(driver, base, bob.access_key, bob.secret_key)
            assert wait_until(lambda: "wharf:Console" in
                              driver.find_element(By.ID, "login-error").text, timeout=10)
            assert not [c for c in driver.get_cookies() if c["name"] == "wharf_console"]
            # a wrong secret is refused alike
            _login(driver, base, alice.access_key, alice.secret_key[:-1] + "x")
            assert wait_until(lambda: "wrong" in driver.find_element(By.ID, "login-error").text,
                              timeout=10)

            # alice logs in
            _login(driver, base, alice.access_key, alice.secret_key)
            assert wait_until(lambda: driver.find_element(By.ID, "page-cluster").is_displayed(),
                              timeout=10)
            assert driver.find_element(By.ID, "who-name").text == "alice"
            cookies = [c for c in driver.get_cookies() if c["name"] == "wharf_console"]
            assert len(cookies) == 1, driver.get_cookies()
            ck = cookies[0]
            assert ck["httpOnly"] is True and ck["sameSite"] == "Strict", ck
            assert ck["secure"] is False and ck["path"] == "/console", ck  # plain HTTP here
            assert 0 < ck["expiry"] - time.time() <= 8 * 3600 + 60, ck
            assert driver.execute_script("return document.cookie") == ""
            assert ck["value"] not in secrets

            # cluster: the admin API's nodes, zones, states, capacities and the leader
            assert wait_until(lambda: _admin_cluster(cl).get("leader") is not None, timeout=15)
            adm = _admin_cluster(cl)
            want = {n["addr"]: n for n in adm["nodes"]}
            assert set(want) == {cl.addr(i) for i in range(3)}

            def cluster_shown():
                rows = _table(driver, "cluster-table", "addr")
                return set(rows) == set(want) and \
                    driver.find_element(By.ID, "cluster-summary").get_attribute("data-leader")
            assert wait_until(cluster_shown, timeout=10)
            rows = _table(driver, "cluster-table", "addr")
            for a, n in want.items():
                tr = rows[a]
                assert tr["data"]["state"] == n["state"] == "up"
                assert int(tr["data"]["id"]) == n["id"]
                assert tr["cells"][2][0] == (n["zone"] or "-")
                assert int(tr["cells"][4][1]) == n["capacity"]
                free = int(tr["cells"][5][1])
                assert abs(free - n["free"]) <= n["capacity"] // 100, (free, n)
            summ = driver.find_element(By.ID, "cluster-summary")
            assert summ.get_attribute("data-leader") == adm["leader"]["addr"]
            assert summ.get_attribute("data-up") == "3"
            backlog = _table(driver, "backlog-table", "key")
            assert set(backlog) == set(adm["backlog"]), (set(backlog), adm["backlog"])
            assert int(backlog["repair_pending"]["cells"][0][1]) == \
                adm["backlog"]["repair_pending"]
            shot = os.environ.get("WHARF_CONSOLE_SCREENSHOT")
            if shot:
                driver.save_screenshot(shot)
            pages = {"cluster": driver.page_source}

            # buckets: counts and bytes as S3 lists them
            driver.get(base + "/console/#buckets")
            assert wait_until(lambda: {ba, bb} <= set(_table(driver, "buckets-table", "bucket")),
                              timeout=10)
            rows = _table(driver, "buckets-table", "bucket")
            assert bc not in rows  # alice may not list it: not named
            for b in (ba, bb):
                objs = s3.list_objects_v2(Bucket=b)["Contents"]
                assert int(rows[b]["cells"][1][1]) == len(objs)
                assert int(rows[b]["cells"][2][1]) == sum(o["Size"] for o in objs)
            pages["buckets"] = driver.page_source

            # objects: the delimiter's prefixes, then a prefix, then one object's head and bytes
            driver.get(base + f"/console/#objects/{ba}")
            assert wait_until(lambda: set(_table(driver, "objects-table", "key")) ==
                              {"top1", "top2"}, timeout=10)
            assert set(_table(driver, "objects-table", "prefix")) == {"dir/"}
            _click_row(driver, "objects-table", "prefix", "dir/")
            assert wait_until(lambda: set(_table(driver, "objects-table", "key")) ==
                              {"dir/a", "dir/b"} and
                              set(_table(driver, "objects-table", "prefix")) == {"dir/sub/"},
                              timeout=10)
            driver.find_element(By.ID, "objects-prefix").clear()
            driver.find_element(By.ID, "objects-form").find_element(
                By.TAG_NAME, "button").click()
            assert wait_until(lambda: "top1" in _table(driver, "objects-table", "key"),
                              timeout=10)
            _click_row(driver, "objects-table", "key", "top1")
            assert wait_until(lambda: driver.find_element(By.ID, "object-detail").is_displayed(),
                              timeout=10)
            head = s3.head_object(Bucket=ba, Key="top1")
            fields = _table(driver, "object-head", "field")
            assert fields["size"]["cells"][0][0].startswith(f"{head['ContentLength']} bytes")
            assert fields["etag"]["cells"][0][0] == head["ETag"].strip('"')
            driver.find_element(By.ID, "object-download").click()
            assert wait_until(lambda: driver.find_element(By.ID, "object-note").text ==
                              f"downloaded {len(bodies['top1'])} bytes", timeout=10)
            path = os.path.join(downloads, "top1")
            assert wait_until(lambda: os.path.exists(path) and
                              os.path.getsize(path) == len(bodies["top1"]), timeout=10)
            with open(path, "rb") as f:
                assert f.read() == bodies["top1"]
            pages["objects"] = driver.page_source

            # throughput: the /metrics counters by transport, sampled while objects move over
            # HTTP (boto3) and RDMA (libwharf over ofi+shm: the storage servers move the bytes,
            # the gateway counts them as delegated)
            driver.get(base + "/console/#throughput")
            src = os.path.join(work, "payload")
            dst = os.path.join(work, "payload.back")
            payload = os.urandom(512 * 1024)
            with open(src, "wb") as f:
                f.write(payload)
            env = cl.client_env()
            rdma_moved = 0
            deadline = time.monotonic() + 3
            while time.monotonic() < deadline:
                s3.put_object(Bucket=bb, Key="load", Body=payload)
                s3.get_object(Bucket=bb, Key="load")["Body"].read()
                for a, b in ((src, f"s3://{bb}/rload"), (f"s3://{bb}/rload", dst)):
                    p = subprocess.run([os.path.join(build_dir(), "wharf"), "--provider",
                                        "ofi+shm", "--quiet", "cp", "--transport", "rdma", a, b],
                                       env=env, capture_output=True, text=True, timeout=30)
                    assert p.returncode == 0, (p.stdout, p.stderr)
                with open(dst, "rb") as f:
                    assert f.read() == payload
                rdma_moved += 2 * len(payload)

            def totals_match():
                raw = g.metrics()

                def m(name):  # summed over labels
                    return sum(v for k, v in raw.items() if k.split("{")[0] == name)
                tp = _table(driver, "tp-table", "transport")
                want = [m("wharf_http_read_bytes_total"), m("wharf_http_write_bytes_total"),
                        m("wharf_rdma_read_bytes_total") +
                        m("wharf_rdma_delegated_read_bytes_total"),
                        m("wharf_rdma_write_bytes_total") +
                        m("wharf_rdma_delegated_write_bytes_total")]
                got = [tp["http"]["cells"][2][1], tp["http"]["cells"][3][1],
                       tp["rdma"]["cells"][2][1], tp["rdma"]["cells"][3][1]]
                return got == [str(int(v)) for v in want]
            assert wait_until(totals_match, timeout=10, interval=0.5)
            assert int(driver.find_element(By.ID, "tp-graph").get_attribute("data-samples")) >= 2
            tp = _table(driver, "tp-table", "transport")
            # every RDMA byte the test moved, and only those, shows as RDMA
            assert int(tp["rdma"]["cells"][2][1]) + int(tp["rdma"]["cells"][3][1]) == \
                rdma_moved, (tp["rdma"], rdma_moved)
            # the storage servers moved them (each replica pulled every PUT byte)
            assert cl.storage_sum("wharf_rdma_read_bytes_total") >= rdma_moved // 2
            pages["throughput"] = driver.page_source

            # recent errors: the GET of a missing key
            driver.get(base + "/console/#errors")

            def missing_shown():
                for tr in _table(driver, "errors-table", "seq").values():
                    if tr["cells"][5][0] == f"/{ba}/missing-key":
                        return tr
                return None
            assert wait_until(missing_shown, timeout=10)
            tr = missing_shown()
            assert tr["data"]["status"] == "404" and tr["cells"][2][0] == "NoSuchKey", tr
            pages["errors"] = driver.page_source

            # CSRF: the page's own cookie without the token is refused; the session lives on
            st, body = _fetch(driver, "POST", "/console/api/logout")
            assert st == 403 and "CsrfTokenMissing" in body, (st, body)
            st, body = _fetch(driver, "GET", "/console/api/cluster")
            assert st == 403 and "CsrfTokenMissing" in body, (st, body)
            st, body = _fetch(driver, "GET", "/console/api/session")
            assert st == 200, (st, body)
            csrf = json.loads(body)["csrf"]
            st, body = _fetch(driver, "GET", "/console/api/cluster", csrf)
            assert st == 200, (st, body)

            # no secret in any page the browser held, nor in what the API answered
            for name, src in pages.items():
                for sec in secrets:
                    assert sec not in src, name
            for path in ("session", "cluster", "buckets", "errors", "metrics"):
                _st, body = _fetch(driver, "GET", "/console/api/" + path, csrf)
                for sec in secrets:
                    assert sec not in body, path

            # a killed storage server shows down on the cluster page
            driver.get(base + "/console/#cluster")
            cl.storage[2].kill()

            def down():
                tr = _table(driver, "cluster-table", "addr").get(cl.addr(2))
                return tr is not None and tr["data"]["state"] == "down"
            assert wait_until(down, timeout=20, interval=0.5)
            assert {n["addr"]: n["state"] for n in _admin_cluster(cl)["nodes"]}[cl.addr(2)] \
                == "down"
            assert driver.find_element(By.ID, "cluster-summary").get_attribute("data-up") == "2"

            # logout ends the session on the server
            driver.find_element(By.ID, "logout").click()
            assert wait_until(lambda: driver.find_element(By.ID, "login-page").is_displayed(),
                              timeout=10)
            st, _b = _fetch(driver, "GET", "/console/api/session")
            assert st == 401
            # a clean exit (under ASan: no leak) of the gateway and the live storage servers
            driver.quit()
            driver = None
            rcs = cl.stop()
            assert rcs[:3] == [0, 0, 0], rcs
        finally:
            if driver:
                driver.quit()
            shutil.rmtree(work, ignore_errors=True)
    assert time.monotonic() - t0 < 90


def _post_login(base, ctx, ak, sk, origin=True, ctype="application/json"):
    body = json.dumps({"access_key": ak, "secret_key": sk}).encode()
    h = {"Content-Type": ctype}
    if origin:
        h["Origin"] = base
    req = urllib.request.Request(base + "/console/api/login", data=body, method="POST",
                                 headers=h)
    try:
        with urllib.request.urlopen(req, timeout=10, context=ctx) as r:
            return r.status, dict(r.headers), json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), json.loads(e.read() or b"{}")


def test_console_cookie_is_secure_over_tls_and_login_needs_origin():
    with tempfile.TemporaryDirectory(prefix="wharf-contls-") as d:
        cert = make_test_cert(d)
        s = WharfServer(data_dir=os.path.join(d, "srv"), providers="none", tls=cert)
        s.start()
        try:
            ctx = ssl.create_default_context(cafile=cert.ca)
            st, h, j = _post_login(s.endpoint, ctx, ACCESS_KEY, SECRET_KEY)
            assert st == 200, (st, j)
            c = h["Set-Cookie"]
            for attr in ("HttpOnly", "SameSite=Strict", "Secure", "Path=/console", "Max-Age="):
                assert attr in c, c
            assert SECRET_KEY not in json.dumps(j) and SECRET_KEY not in c
            # the single server's cluster page is the server itself
            req = urllib.request.Request(s.endpoint + "/console/api/cluster", headers={
                "Cookie": c.split(";")[0], "X-Wharf-Csrf": j["csrf"]})
            with urllib.request.urlopen(req, timeout=10, context=ctx) as r:
                cj = json.loads(r.read())
            assert cj["mode"] == "single", cj
            assert [n["addr"] for n in cj["status"]["nodes"]] == [f"{s.host}:{s.port}"], cj
            # a user's session ends with its key, and its requests end with its permission
            u = create_user(s, "carol")
            import boto3
            from wharfd import REGION
            iam = boto3.client("iam", endpoint_url=s.endpoint, aws_access_key_id=ACCESS_KEY,
                               aws_secret_access_key=SECRET_KEY, region_name=REGION,
                               verify=cert.ca)
            iam.put_user_policy(UserName="carol", PolicyName="console",
                                PolicyDocument=_policy("wharf:Console"))

            def get(path, cookie, csrf):
                req = urllib.request.Request(s.endpoint + "/console/api/" + path, headers={
                    "Cookie": cookie, "X-Wharf-Csrf": csrf})
                try:
                    with urllib.request.urlopen(req, timeout=10, context=ctx) as r:
                        return r.status, json.loads(r.read())
                except urllib.error.HTTPError as e:
                    return e.code, json.loads(e.read())
            st, h, j = _post_login(s.endpoint, ctx, u.access_key, u.secret_key)
            assert st == 200 and j["user"] == "carol", j
            ck = h["Set-Cookie"].split(";")[0]
            assert get("cluster", ck, j["csrf"])[0] == 200
            disable_key(s, u.access_key)
            st, e = get("cluster", ck, j["csrf"])
            assert st == 401 and e["error"] == "NoSession", e
            enable_key(s, u.access_key)
            assert get("cluster", ck, j["csrf"])[0] == 401  # that session is gone
            st, h, j = _post_login(s.endpoint, ctx, u.access_key, u.secret_key)
            assert st == 200, j
            ck = h["Set-Cookie"].split(";")[0]
            iam.delete_user_policy(UserName="carol", PolicyName="console")
            st, e = get("cluster", ck, j["csrf"])
            assert st == 403 and e["error"] == "AccessDenied" and "wharf:Console" in e["message"], e
            st, _h, e = _post_login(s.endpoint, ctx, u.access_key, u.secret_key)
            assert st == 403 and e["error"] == "AccessDenied", e
            # a login without Origin (a cross-site form cannot forge it), or not as JSON
            st, _h, j = _post_login(s.endpoint, ctx, ACCESS_KEY, SECRET_KEY, origin=False)
            assert st == 403 and j["error"] == "CrossOriginRefused", j
            st, _h, j = _post_login(s.endpoint, ctx, ACCESS_KEY, SECRET_KEY,
                                    ctype="application/x-www-form-urlencoded")
            assert st == 415, j
            assert s.stop() == 0
        finally:
            s.stop()
            s.cleanup()
