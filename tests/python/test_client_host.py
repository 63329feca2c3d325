# SPDX-License-Identifier: Apache-2.0
"""libwharf as a guest in someone else's process: what the host set stays as it was (signal
handlers), what a caller did not ask for is not invented (a multipart object's Content-Type),
a client from the environment alone takes the fastest path the server offers, and the
request timeouts fit multi-GB objects."""
import ctypes
import os
import signal
import socket
import subprocess
import sys
import threading
import urllib.request

import boto3
import pytest
from botocore.config import Config

import wharf
from wharf._lib import lib
from conftest import make_client
from wharfd import ACCESS_KEY, REGION, SECRET_KEY, WharfServer, build_dir, unique_bucket

MiB = 1 << 20
PYDIR = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                      "python"))


def boto(srv):
    return boto3.client("s3", endpoint_url=srv.endpoint, aws_access_key_id=ACCESS_KEY,
                        aws_secret_access_key=SECRET_KEY, region_name=REGION,
                        config=Config(retries={"max_attempts": 1}))


# ---- Content-Type ------------------------------------------------------------------------

@pytest.mark.parametrize("provider", ["http", "ofi+tcp"])
def test_multipart_object_gets_the_single_put_content_type(wharfd, provider):
    """A multipart upload's initiation carries no Content-Type of its own: the object gets the
    default a single PUT gets, not application/xml (the type of the completion's body)."""
    c = make_client(wharfd, provider, multipart_threshold=5 * MiB, part_size=5 * MiB)
    b = unique_bucket("ct")
    try:
        c.create_bucket(b)
        c.put(b, "single", b"s" * MiB)
        rep = c.put(b, "multi", b"m" * (11 * MiB))
        assert rep.etag.endswith('-3"'), rep  # three parts: it did go multipart
        s3 = boto(wharfd)
        single = s3.head_object(Bucket=b, Key="single")["ContentType"]
        multi = s3.head_object(Bucket=b, Key="multi")["ContentType"]
        assert multi == single, (multi, single)
        assert multi != "application/xml"
        assert c.stat(b, "multi").content_type == single
    finally:
        for k in ("single", "multi"):
            try:
                c.delete(b, k)
            except wharf.WharfError:
                pass
        c.delete_bucket(b)
        c.close()


# ---- signals -----------------------------------------------------------------------------
# Debian's libfabric links its psm provider's library, whose constructor replaces the handlers
# of SIGTERM, SIGINT, SIGSEGV, SIGABRT, SIGBUS and SIGILL with its own (a backtrace, exit 1).
# libwharf opens libfabric only when a client opens an RDMA provider, and puts back any handler
# that opening changed (src/shared/xfer/ofi_dl.c).

SIGNAL_ARMS = [pytest.param("none", id="http"), pytest.param("ofi+tcp", id="tcp"),
               pytest.param("ofi+shm", id="shm")]


def provider_env(srv, provider):
    env = srv.client_env()
    env["WHARF_PROVIDER"] = provider
    if provider != "ofi+shm":
        env.pop("WHARF_UNIX_SOCKET", None)
    return env


def libwharf_path():
    return os.path.join(build_dir(), "libwharf.so")


@pytest.mark.parametrize("provider", SIGNAL_ARMS)
def test_a_program_that_dlopens_libwharf_keeps_its_signal_handlers(wharfd, provider):
    prog = os.path.join(build_dir(), "tests", "host_signals")
    p = subprocess.run([prog, libwharf_path(), unique_bucket("sig")], capture_output=True,
                       text=True, timeout=60, env=provider_env(wharfd, provider))
    assert p.returncode == 0 and p.stdout.endswith("OK\n"), (p.returncode, p.stdout, p.stderr)
    assert f"provider {provider}" in p.stdout


PY_HOST = r"""
import faulthandler, os, signal, sys, time
got = []
signal.signal(signal.SIGTERM, lambda s, f: got.append("TERM"))
signal.signal(signal.SIGINT, lambda s, f: got.append("INT"))
faulthandler.enable()  # its own SIGSEGV, SIGABRT, SIGBUS, SIGILL and SIGFPE handlers
import wharf
c = wharf.Client(provider=sys.argv[1])
assert c.provider == sys.argv[1], c.provider
c.list_buckets()
b = sys.argv[2]
c.create_bucket(b)
buf = bytearray(os.urandom(1 << 20))
c.put_from(b, "o", buf)
assert c.get(b, "o") == bytes(buf)
c.delete(b, "o")
c.delete_bucket(b)
os.kill(os.getpid(), signal.SIGTERM)
os.kill(os.getpid(), signal.SIGINT)
for _ in range(100):
    if len(got) == 2:
        break
    time.sleep(0.01)
print("handlers ran:", " ".join(got), flush=True)
if sys.argv[3] == "segv":
    import ctypes
    ctypes.string_at(0)  # faulthandler reports it, and the default action ends the process
"""


@pytest.mark.parametrize("provider", SIGNAL_ARMS)
def test_python_handlers_run_after_libwharf_calls(wharfd, provider):
    """The issue's report: a SIGTERM handler registered before the first client call never ran,
    and the process exited 1 (psm's handler). Also SIGINT, and faulthandler's SIGSEGV."""
    env = provider_env(wharfd, provider)
    env["PYTHONPATH"] = os.pathsep.join([PYDIR, env.get("PYTHONPATH", "")])
    for mode in ("plain", "segv"):
        p = subprocess.run([sys.executable, "-c", PY_HOST, provider, unique_bucket("psig"), mode],
                           capture_output=True, text=True, timeout=60, env=env)
        assert "handlers ran: TERM INT\n" in p.stdout, (p.returncode, p.stdout, p.stderr)
        if mode == "plain":
            assert p.returncode == 0, (p.returncode, p.stderr)
        else:
            assert p.returncode == -signal.SIGSEGV, (p.returncode, p.stderr)
            assert "Fatal Python error: Segmentation fault" in p.stderr, p.stderr


def caught_signals(pid):
    """The signals pid has a handler for (SigCgt of /proc/PID/status)."""
    with open(f"/proc/{pid}/status") as f:
        mask = int(next(line for line in f if line.startswith("SigCgt:")).split()[1], 16)
    return {s for s in signal.Signals if mask & (1 << (s - 1))}


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGINT], ids=["TERM", "INT"])
def test_wharfd_shuts_down_cleanly_after_serving_rdma(how):
    """wharfd waits for SIGTERM/SIGINT with sigwait; after its providers opened and served an
    RDMA request it still exits 0 on either, and has no handler of a provider's for the
    signals that end a process (a crash leaves a core, not a provider's exit 1)."""
    with WharfServer() as srv:
        c = make_client(srv, "ofi+tcp")
        b = unique_bucket("sd")
        c.create_bucket(b)
        buf = bytearray(b"x" * MiB)
        assert c.put_from(b, "o", buf).transport == "rdma"
        assert c.get(b, "o") == bytes(buf) and c.last_report.transport == "rdma"
        c.close()
        fatal = {signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS, signal.SIGILL}
        assert not caught_signals(srv.proc.pid) & fatal, caught_signals(srv.proc.pid)
        srv.proc.send_signal(how)
        assert srv.proc.wait(timeout=30) == 0, srv.log_tail()
        assert "signal received sig=" + how.name[3:] in srv.log_tail()


# ---- the transport of a client from the environment ----------------------------------------

def aws_only_env(monkeypatch, srv):
    """Only AWS_* variables, as an S3 user has them; no WHARF_* and no AWS profile files."""
    for k in list(os.environ):
        if k.startswith("WHARF_") and k != "WHARF_BUILD_DIR" or k.startswith("AWS_"):
            monkeypatch.delenv(k)
    monkeypatch.setenv("AWS_ENDPOINT_URL", srv.endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/config")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials")


def test_health_names_the_unix_socket_to_a_peer_on_this_host(wharfd):
    with urllib.request.urlopen(wharfd.endpoint + "/health", timeout=10) as r:
        assert r.headers["x-wharf-unix-socket"] == os.path.realpath(wharfd.unix_socket)
    got = ctypes.create_string_buffer(128)
    assert lib.wharf_endpoint_unix_socket(wharfd.endpoint.encode(), None, got, 128) == 0
    assert got.value.decode() == os.path.realpath(wharfd.unix_socket)


def test_client_from_aws_environment_takes_rdma_over_the_reachable_socket(wharfd, monkeypatch):
    aws_only_env(monkeypatch, wharfd)
    c = wharf.Client()
    try:
        assert (c.transport, c.provider) == ("rdma", "ofi+shm"), c.transport_reason
        assert os.path.realpath(wharfd.unix_socket) in c.transport_reason
        b = unique_bucket("env")
        c.create_bucket(b)
        data = bytearray(os.urandom(2 * MiB))
        before = wharfd.metric_sum("wharf_rdma_write_bytes_total")
        rep = c.put_from(b, "o", data)
        assert rep.transport == "rdma" and not rep.fell_back, rep
        assert wharfd.metric_sum("wharf_rdma_write_bytes_total") - before >= len(data)
        assert c.get(b, "o") == bytes(data) and c.last_report.transport == "rdma"
        c.delete(b, "o")
        c.delete_bucket(b)
    finally:
        c.close()
    # what the caller gives still wins: an endpoint of its own means HTTP unless it asks
    explicit = wharf.Client(wharfd.endpoint, ACCESS_KEY, SECRET_KEY)
    assert explicit.transport == "http"
    explicit.close()


def test_torch_client_from_aws_environment_takes_rdma_too(wharfd, monkeypatch):
    """wharf.torch and the datasets build their client with client_from_env: it chooses as
    wharf.Client() does."""
    from wharf.config import client_from_env
    aws_only_env(monkeypatch, wharfd)
    c = client_from_env()
    try:
        assert (c.transport, c.provider) == ("rdma", "ofi+shm"), c.transport_reason
    finally:
        c.close()
    # an endpoint given by the caller is taken as given (HTTP unless it asks)
    c = client_from_env(endpoint=wharfd.endpoint)
    assert c.transport == "http"
    c.close()


def test_client_from_environment_stays_on_http_without_a_socket(monkeypatch):
    with WharfServer(extra_args=["--unix", "none"]) as srv:
        with urllib.request.urlopen(srv.endpoint + "/health", timeout=10) as r:
            assert r.headers["x-wharf-unix-socket"] is None
        aws_only_env(monkeypatch, srv)
        c = wharf.Client()
        assert c.transport == "http" and c.provider == "none"
        assert "names no Unix socket" in c.transport_reason, c.transport_reason
        assert c.list_buckets() == []
        c.close()


def test_auto_provider_finds_the_socket_itself(wharfd):
    """libwharf's provider "auto" with no unix_socket asks the server for it (the C CLI's
    default provider), and takes shm."""
    c = wharf.Client(wharfd.endpoint, ACCESS_KEY, SECRET_KEY, provider="auto")
    assert c.provider == "ofi+shm"
    c.close()


# ---- request timeouts ------------------------------------------------------------------------
# No bound on a whole request by default (a multi-GB part takes what the link gives it); a
# request during which no byte moves for stall_timeout_ms fails. A server of the test's own
# answers ListBuckets slowly or not at all.

LIST_BODY = (b'<?xml version="1.0" encoding="UTF-8"?>\n<ListAllMyBucketsResult><Owner><ID>o</ID>'
             b'</Owner><Buckets><Bucket><Name>slow</Name><CreationDate>2026-01-01T00:00:00.000Z'
             b'</CreationDate></Bucket></Buckets></ListAllMyBucketsResult>')


class SlowServer:
    """Answers each request with 200 and LIST_BODY padded to `pieces` pieces (whitespace
    before the document's end), one piece every `every` s; stall: after the first piece,
    nothing more (the connection stays open until the server is closed, at most 60 s)."""

    def __init__(self, pieces, every, stall=False):
        self.pieces, self.every, self.stall = pieces, every, stall
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.endpoint = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        self.sock.settimeout(30)
        try:
            conn, _ = self.sock.accept()
        except OSError:
            return
        with conn:
            conn.settimeout(30)
            req = b""
            while b"\r\n\r\n" not in req and len(req) < 65536:
                got = conn.recv(4096)
                if not got:
                    return
                req += got
            head, tail = LIST_BODY[:-len(b"</ListAllMyBucketsResult>")], \
                b"</ListAllMyBucketsResult>"
            pad = [b" " * 16] * (self.pieces - 2)
            body = [head] + pad + [tail]
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/xml\r\n"
                         b"Content-Length: %d\r\n\r\n" % sum(map(len, body)))
            try:
                for i, piece in enumerate(body):
                    if i and self.stall:
                        self.done.wait(60)
                        return
                    conn.sendall(piece)
                    if i + 1 < len(body) and self.done.wait(self.every):
                        return
            except OSError:
                return

    def close(self):
        self.done.set()
        self.sock.close()
        self.thread.join(timeout=10)


def list_with(srv, stall_ms, total_ms):
    env = dict(os.environ, WHARF_ENDPOINT=srv.endpoint, WHARF_ACCESS_KEY=ACCESS_KEY,
               WHARF_SECRET_KEY=SECRET_KEY)
    prog = os.path.join(build_dir(), "tests", "client_timeouts")
    p = subprocess.run([prog, str(stall_ms), str(total_ms)], capture_output=True, text=True,
                       timeout=60, env=env)
    assert p.returncode == 0 and p.stdout.endswith("OK\n"), (p.stdout, p.stderr)
    out = dict(line.split(" ", 1) for line in p.stdout.splitlines() if " " in line)
    st = out["status"].split()
    return int(st[0]), float(st[2]), out["error"], out["defaults"]


def test_default_timeouts_have_no_total_bound_and_a_stall_bound():
    srv = SlowServer(pieces=3, every=0.05)
    try:
        status, _, err, defaults = list_with(srv, 0, 0)
    finally:
        srv.close()
    assert status == wharf._lib.WHARF_OK, err
    assert defaults == "timeout_ms 0 stall_timeout_ms 60000"


def test_a_stalled_server_fails_by_the_stall_bound():
    srv = SlowServer(pieces=3, every=0.05, stall=True)
    try:
        status, ms, err, _ = list_with(srv, 2000, 0)
    finally:
        srv.close()
    assert status == wharf._lib.WHARF_ERR_TIMEOUT, err
    assert 1900 <= ms <= 4000, ms  # checked at least once a second
    assert "no byte moved for 2000 ms" in err and "stall_timeout_ms 2000" in err, err


def test_a_long_transfer_that_keeps_moving_is_not_killed():
    """6 s of a reply that moves a piece every 0.4 s: three times the stall bound, and never
    stalled, so it completes; the same with a whole-request bound of 2 s fails at 2 s."""
    srv = SlowServer(pieces=16, every=0.4)
    try:
        status, ms, err, _ = list_with(srv, 2000, 0)
    finally:
        srv.close()
    assert status == wharf._lib.WHARF_OK, err
    assert ms >= 5000, ms
    srv = SlowServer(pieces=16, every=0.4)
    try:
        status, ms, err, _ = list_with(srv, 2000, 2000)
    finally:
        srv.close()
    assert status == wharf._lib.WHARF_ERR_TIMEOUT and 1800 <= ms <= 5000, (status, ms, err)
