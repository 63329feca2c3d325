# SPDX-License-Identifier: Apache-2.0
"""wharfd's configuration files (docs/operations.md, Configuration; Reload and signals).

- the shipped files under etc/ pass `wharfd check-config`, and name every key of their role;
  every option of a role's --help is a key;
- check-config names the bad key, its line and why (unknown, bad value, out of range, syntax,
  another role's section), exit 2;
- an option on the command line wins over its key; --print-config names each setting's
  source and masks secrets;
- secrets from files: refused when others may read them, warned of when the group may;
- SIGHUP: log_level, max_uploads and lifecycle_period change live on a running wharfd (a
  shortened period runs the next lifecycle pass without a restart); a bad file changes
  nothing; a non-live key is logged as needing a restart; the TLS pair is read again;
- sd_notify: READY=1 once the port accepts, WATCHDOG=1 pings with WATCHDOG_USEC, RELOADING=1
  around a SIGHUP, STOPPING=1 at SIGTERM, over a NOTIFY_SOCKET this test binds.
"""
import os
import re
import signal
import socket
import ssl
import stat
import subprocess
import threading
import time

import boto3
import botocore.exceptions
import pytest
from botocore.config import Config

from wharfd import (ACCESS_KEY, REGION, SECRET_KEY, TestCert, WharfServer, build_dir,
                    unique_bucket)

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
ROLES = ("serve", "gateway", "storage")


def wharfd(*args, env=None, timeout=30):
    e = dict(os.environ)
    for k in ("WHARF_ACCESS_KEY", "WHARF_SECRET_KEY", "WHARF_CLUSTER_SECRET",
              "WHARF_SERVER_KEY_FILE", "NOTIFY_SOCKET", "WATCHDOG_USEC"):
        e.pop(k, None)
    e.update(env or {})
    return subprocess.run([os.path.join(build_dir(), "wharfd"), *args], capture_output=True,
                          text=True, env=e, timeout=timeout)


def write(path, text, mode=0o600):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)
    return str(path)


def help_flags(role):
    out = wharfd(role, "--help").stdout
    if role == "serve":  # wharfd --help lists serve's and the common ones
        out = wharfd("--help").stdout
    flags = set(re.findall(r"(?m)^\s+--([a-z][a-z0-9-]+)", out))
    flags |= set(re.findall(r"FILE --(tls-key) FILE", out))
    return flags - {"help", "config", "print-config", "version"}


def print_config(role, *args, env=None):
    need = {"serve": ["--data", "/nonexistent"], "gateway": ["--meta", "postgresql://u@h/d"],
            "storage": ["--data", "/nonexistent", "--meta", "postgresql://u@h/d", "--listen",
                        "10.0.0.2:9100"]}[role]
    r = wharfd(role, *need, *args, "--print-config", env=env)
    assert r.returncode == 0, r.stderr
    rows = {}
    for line in r.stdout.splitlines():
        if line.startswith("#"):
            continue
        m = re.match(r"^([a-z0-9_]+) = (.*?)  # (.*)$", line)
        assert m, line
        rows[m.group(1)] = (m.group(2), m.group(3))
    return rows, r.stdout


@pytest.mark.parametrize("role", ROLES)
def test_shipped_files_check_and_name_every_key(role):
    path = os.path.join(REPO, "etc", f"wharfd-{role}.conf")
    r = wharfd("check-config", path)
    assert r.returncode == 0, r.stderr
    assert f"ok (wharfd {role}" in r.stdout
    rows, _ = print_config(role)
    text = open(path).read()
    for key, (_, src) in rows.items():
        assert re.search(rf"(?m)^#?{key} =", text), f"{key} missing from {path}"
        assert src in ("default", "command line"), (key, src)
    # Every option --help lists is a key, and every key an option --help lists.
    flags = {f.replace("-", "_") for f in help_flags(role)}
    assert flags == set(rows), (flags ^ set(rows))
    assert re.search(r"(?m)^data = /var/lib/wharf$", text) or role == "gateway"


@pytest.mark.parametrize("body,line,words", [
    ("bogus_key = 1\n", 3, ["unknown key 'bogus_key'"]),
    ("max_conns = many\n", 3, ["key max_conns", "wants a whole number", "'many'"]),
    ("high_water = 101\n", 3, ["key high_water", "percentage 1..100", "'101'"]),
    ("put_threads = 0\n", 3, ["key put_threads", "1..64"]),
    ("durability = sometimes\n", 3, ["key durability", "disk or memory"]),
    ("this line has no equals sign\n", 3, ["not 'key = value'"]),
    ("region = a\nregion = b\n", 4, ["'region' set twice", "line 3"]),
    ("shm_trust_local = maybe\n", 3, ["'shm_trust_local' wants true or false"]),
    ("[gateway]\nreplicas = 2\n", 4, ["section [gateway] in a file for wharfd serve"]),
    ("max-conns = 5\n", 3, ["unknown key 'max-conns'"]),
])
def test_check_config_names_key_line_and_reason(tmp_path, body, line, words):
    path = write(tmp_path / "w.conf", "[serve]\ndata = /var/lib/wharf\n" + body)
    r = wharfd("check-config", path)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert f"{path}:{line}:" in r.stderr, r.stderr
    for w in words:
        assert w in r.stderr, (w, r.stderr)
    # The same file given to a role that would start refuses to start, with the same words.
    r = wharfd("serve", "--config", path)
    assert r.returncode == 2 and f"{path}:{line}:" in r.stderr, r.stderr


def test_check_config_needs_a_role_and_a_readable_file(tmp_path):
    r = wharfd("check-config", write(tmp_path / "n.conf", "data = /x\n"))
    assert r.returncode == 2 and "no section names its role" in r.stderr
    r = wharfd("check-config", str(tmp_path / "absent.conf"))
    assert r.returncode == 2 and "absent.conf" in r.stderr
    r = wharfd("check-config", write(tmp_path / "r.conf", "[serve]\n"))  # --data required
    assert r.returncode == 2 and "--data DIR is required" in r.stderr


def test_flag_wins_and_print_config_sources_and_masks(tmp_path):
    path = write(tmp_path / "w.conf", "[serve]\ndata = /var/lib/wharf\nhigh_water = 90\n"
                 "log_level = debug\nmeta = postgresql://wharf:hunter2@db:5432/wharf\n")
    r = wharfd("serve", "--config", path, "--high-water", "80", "--print-config",
               env={"WHARF_ACCESS_KEY": "AKIDCONF", "WHARF_SECRET_KEY": "s3cr3t-value-xyz"})
    assert r.returncode == 0, r.stderr
    rows = dict(re.findall(r"(?m)^([a-z_]+) = (.*)$", r.stdout))
    assert rows["high_water"] == "80  # command line"
    assert rows["log_level"] == f"debug  # {path}:4"
    assert rows["data"] == f"/var/lib/wharf  # {path}:2"
    assert rows["meta"] == f"postgresql://wharf:****@db:5432/wharf  # {path}:5"
    assert rows["access_key"] == "AKIDCONF  # environment WHARF_ACCESS_KEY"
    assert rows["secret_key_file"] == "****  # environment WHARF_SECRET_KEY"
    assert rows["durability"] == "disk  # default"
    assert "hunter2" not in r.stdout + r.stderr and "s3cr3t" not in r.stdout + r.stderr


def test_secret_file_modes(tmp_path):
    base = ["serve", "--data", str(tmp_path / "d"), "--access-key", "AKIDFILE"]
    open_ = write(tmp_path / "open.secret", "secret-from-file\n", 0o644)
    r = wharfd(*base, "--secret-key-file", open_, "--print-config")
    assert r.returncode == 2 and "other users may read or write it (mode 0644)" in r.stderr
    grp = write(tmp_path / "grp.secret", "secret-from-file\n", 0o640)
    r = wharfd(*base, "--secret-key-file", grp, "--print-config")
    assert r.returncode == 0, r.stderr
    r = wharfd("serve", "--data", str(tmp_path / "d"), "--access-key", "AKIDFILE",
               "--print-config")
    assert r.returncode == 2 and "needs both an access key" in r.stderr
    r = wharfd("gateway", "--meta", "postgresql://u@h/d", "--cluster-secret-file", open_)
    assert r.returncode == 2 and "cluster_secret_file" in r.stderr and "mode 0644" in r.stderr
    short = write(tmp_path / "short.secret", "tooshort\n")
    r = wharfd("storage", "--data", str(tmp_path / "s"), "--meta", "postgresql://u@h/d",
               "--listen", "10.0.0.2:9100", "--cluster-secret-file", short, "--print-config")
    assert r.returncode == 2 and "16 characters or more" in r.stderr, r.stderr
    good = write(tmp_path / "cluster.secret", "a-cluster-secret-of-32-characters\n")
    rows, out = print_config("gateway", "--cluster-secret-file", good)
    assert rows["cluster_secret_file"] == (good, "command line")
    assert "a-cluster-secret" not in out
    r = wharfd("serve", "--data", str(tmp_path / "d"), "--meta", "postgresql://u@h/d",
               "--meta-password-file", open_, "--print-config")
    assert r.returncode == 2 and "meta_password_file" in r.stderr and "mode 0644" in r.stderr
    empty = write(tmp_path / "empty.secret", "\n")
    r = wharfd("serve", "--data", str(tmp_path / "d"), "--meta-password-file", empty,
               "--print-config")
    assert r.returncode == 2 and "is empty" in r.stderr


def test_root_credentials_from_config_and_secret_file(tmp_path):
    """A server whose root key pair comes from the file (access_key) and a secret file: a
    request signed with them works, one signed with the environment's test pair does not;
    the group-readable file is warned of in the log."""
    sk = write(tmp_path / "root.secret", "secret-from-a-file-123\n", 0o640)
    conf = write(tmp_path / "w.conf", f"[serve]\naccess_key = AKIDFROMFILE\n"
                 f"secret_key_file = {sk}\n")
    srv = WharfServer(extra_args=["--config", conf], providers="none",
                      env={"WHARF_ACCESS_KEY": "", "WHARF_SECRET_KEY": ""})
    srv.start()
    try:
        cfg = Config(retries={"max_attempts": 1})
        good = boto3.client("s3", endpoint_url=srv.endpoint, aws_access_key_id="AKIDFROMFILE",
                            aws_secret_access_key="secret-from-a-file-123",
                            region_name=REGION, config=cfg)
        good.create_bucket(Bucket=unique_bucket("cfg"))
        bad = boto3.client("s3", endpoint_url=srv.endpoint, aws_access_key_id=ACCESS_KEY,
                           aws_secret_access_key=SECRET_KEY, region_name=REGION, config=cfg)
        with pytest.raises(botocore.exceptions.ClientError):
            bad.list_buckets()
        assert "may be read by its group (mode 0640)" in srv.log_tail(20000)
    finally:
        srv.stop()
        srv.cleanup()


def wait_log(srv, text, timeout=10.0, start=0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in srv.log_tail(200000)[start:]:
            return True
        time.sleep(0.05)
    return False


def test_sighup_reload_live_keys_bad_file_and_restart_keys(tmp_path):
    conf = tmp_path / "w.conf"
    write(conf, "[serve]\nlog_level = info\nmax_uploads = 1\n")
    srv = WharfServer(extra_args=["--config", str(conf)], providers="none", log_level=None)
    srv.start()
    try:
        s3 = boto3.client("s3", endpoint_url=srv.endpoint, aws_access_key_id=ACCESS_KEY,
                          aws_secret_access_key=SECRET_KEY, region_name=REGION,
                          config=Config(retries={"max_attempts": 1}))
        b = unique_bucket("hup")
        s3.create_bucket(Bucket=b)
        s3.create_multipart_upload(Bucket=b, Key="a")

        def too_many(key):
            try:
                s3.create_multipart_upload(Bucket=b, Key=key)
                return False
            except botocore.exceptions.ClientError as e:
                assert e.response["Error"]["Code"] == "TooManyUploads", e.response
                return True

        def debug_logged():
            n = len(srv.log_tail(10 ** 7))
            with pytest.raises(botocore.exceptions.ClientError):
                s3.head_object(Bucket=b, Key="absent")
            time.sleep(0.2)
            return "error reply" in srv.log_tail(10 ** 7)[n:]

        assert too_many("b") and not debug_logged()
        # A live change: the limit and the log level, no restart.
        write(conf, "[serve]\nlog_level = debug\nmax_uploads = 2\n")
        srv.proc.send_signal(signal.SIGHUP)
        assert wait_log(srv, "reload: key max_uploads is now 2"), srv.log_tail()
        assert not too_many("c") and too_many("d")
        assert debug_logged()
        # A bad file changes nothing, and says why.
        write(conf, "[serve]\nlog_level = info\nmax_uploads = 10\nmax_conns = lots\n")
        srv.proc.send_signal(signal.SIGHUP)
        assert wait_log(srv, "reload refused"), srv.log_tail()
        log = srv.log_tail(10 ** 6)
        assert f"{conf}:4: key max_conns" in log and "nothing changed" in log
        assert too_many("e") and debug_logged()
        # A key that cannot change live: logged as such, the live ones still applied.
        write(conf, "[serve]\nlog_level = info\nmax_uploads = 3\nregion = eu-west-1\n")
        srv.proc.send_signal(signal.SIGHUP)
        assert wait_log(srv, "key region changed; it takes effect at the next restart")
        assert wait_log(srv, "reload: key max_uploads is now 3")
        assert not too_many("f") and not debug_logged()
        assert srv.alive()
    finally:
        assert srv.stop() == 0
        srv.cleanup()


def test_sighup_shortens_the_lifecycle_period(tmp_path):
    """A lifecycle period of an hour, shortened to a second by a reload: the expired object is
    gone within seconds, with no restart (one lifecycle "day" is a second here)."""
    conf = tmp_path / "w.conf"
    write(conf, "[serve]\nlifecycle_period = 3600\n")
    srv = WharfServer(extra_args=["--config", str(conf)], providers="none",
                      env={"WHARF_LIFECYCLE_DAY_SECONDS": "1"})
    srv.start()
    try:
        s3 = boto3.client("s3", endpoint_url=srv.endpoint, aws_access_key_id=ACCESS_KEY,
                          aws_secret_access_key=SECRET_KEY, region_name=REGION,
                          config=Config(retries={"max_attempts": 1}))
        b = unique_bucket("huplc")
        s3.create_bucket(Bucket=b)
        s3.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={"Rules": [
            {"ID": "x", "Status": "Enabled", "Filter": {"Prefix": ""},
             "Expiration": {"Days": 1}}]})
        s3.put_object(Bucket=b, Key="old", Body=b"x")

        def gone(limit_s):
            end = time.monotonic() + limit_s
            while time.monotonic() < end:
                if s3.list_objects_v2(Bucket=b).get("KeyCount", 0) == 0:
                    return True
                time.sleep(0.25)
            return False

        assert not gone(3)  # a day has passed for the object, but no pass is due for an hour
        write(conf, "[serve]\nlifecycle_period = 1\n")
        srv.proc.send_signal(signal.SIGHUP)
        assert wait_log(srv, "reload: key lifecycle_period is now 1"), srv.log_tail()
        assert gone(10), srv.log_tail()
        assert srv.alive()
    finally:
        assert srv.stop() == 0
        srv.cleanup()


def peer_cert_der(port, ca):
    ctx = ssl.create_default_context(cafile=ca)
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        with ctx.wrap_socket(s, server_hostname="127.0.0.1") as t:
            return t.getpeercert(binary_form=True)


def test_sighup_reloads_tls_pair_from_config(tmp_path):
    cert = TestCert(str(tmp_path / "pki"))
    conf = write(tmp_path / "w.conf", f"[serve]\ntls_cert = {cert.cert}\ntls_key = {cert.key}\n")
    srv = WharfServer(extra_args=["--config", conf], providers="none")
    srv.tls = cert  # the endpoint and /health over HTTPS; the pair comes from the file
    srv.start()
    try:
        first = peer_cert_der(srv.port, cert.ca)
        cert.issue()
        srv.proc.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and peer_cert_der(srv.port, cert.ca) == first:
            time.sleep(0.1)
        second = peer_cert_der(srv.port, cert.ca)
        assert second != first and second == ssl.PEM_cert_to_DER_cert(
            open(cert.cert).read().split("-----END CERTIFICATE-----")[0] +
            "-----END CERTIFICATE-----\n")
    finally:
        srv.stop()
        srv.cleanup()


class Notify:
    """A NOTIFY_SOCKET bound here: every datagram wharfd sends, with when it came and whether
    the server's port accepted a connection at that moment."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        self.sock.settimeout(0.2)
        self.path = path
        self.port = None
        self.msgs = []  # (monotonic, text, port accepted)
        self.stop = False
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def accepts(self):
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
            return True
        except OSError:
            return False

    def run(self):
        end = time.monotonic() + 60
        while not self.stop and time.monotonic() < end:
            try:
                data = self.sock.recv(4096).decode()
            except socket.timeout:
                continue
            ok = self.accepts() if "READY=1" in data and self.port else None
            self.msgs.append((time.monotonic(), data, ok))

    def wait(self, text, count=1, timeout=10.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            hits = [m for m in self.msgs if text in m[1]]
            if len(hits) >= count:
                return hits
            time.sleep(0.02)
        raise AssertionError(f"{text} x{count} not received: {self.msgs}")

    def close(self):
        self.stop = True
        self.t.join(5)
        self.sock.close()


def test_sd_notify_ready_watchdog_reload_stopping(tmp_path):
    note = Notify(str(tmp_path / "notify.sock"))
    srv = WharfServer(providers="none",
                      env={"NOTIFY_SOCKET": note.path, "WATCHDOG_USEC": "200000"})
    try:
        from ports import free_port
        port = free_port()
        note.port = port
        srv.start(port=port)
        ready = note.wait("READY=1")
        assert ready[0][2] is True, "READY=1 came before the port accepted"
        assert not any("WATCHDOG=1" in m[1] for m in note.msgs if m[0] < ready[0][0] - 0.5)
        dogs = note.wait("WATCHDOG=1", count=4, timeout=5)
        gaps = [b[0] - a[0] for a, b in zip(dogs, dogs[1:])]
        assert all(0.03 < g < 0.5 for g in gaps), gaps  # every ~100 ms: half of 200 ms
        srv.proc.send_signal(signal.SIGHUP)
        rel = note.wait("RELOADING=1")
        assert "MONOTONIC_USEC=" in rel[0][1]
        ready2 = note.wait("READY=1", count=2)
        assert ready2[1][0] >= rel[0][0]
        assert srv.stop() == 0
        note.wait("STOPPING=1")
    finally:
        srv.cleanup()
        note.close()
    # Without WATCHDOG_USEC: READY=1 and no pings.
    note = Notify(str(tmp_path / "notify2.sock"))
    srv = WharfServer(providers="none", env={"NOTIFY_SOCKET": note.path})
    try:
        srv.start()
        note.wait("READY=1")
        time.sleep(0.5)
        assert not any("WATCHDOG=1" in m[1] for m in note.msgs)
    finally:
        srv.stop()
        srv.cleanup()
        note.close()
