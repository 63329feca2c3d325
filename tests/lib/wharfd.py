# SPDX-License-Identifier: Apache-2.0
"""The one way to start a wharfd for tests and benchmarks.

WharfServer starts a real wharfd on a free 127.0.0.1 port with a temporary data directory,
waits for /health, and stops it with SIGTERM (SIGKILL after a bounded wait). Every wait here
is bounded in time.
"""
import os
import sys
import shutil
import signal
import subprocess
import tempfile
import time
import hashlib
import ssl
import urllib.request
import uuid

# An ASan-built libwharf cannot be loaded into Debian's Python through ctypes ("ASan runtime
# does not come first": the process aborts). Tests that drive libwharf from Python skip under
# make test-asan (ASAN_OPTIONS set) with this reason; the normal pass runs them.
# Use: @pytest.mark.skipif(**CTYPES_UNDER_ASAN)
CTYPES_UNDER_ASAN = {"condition": "ASAN_OPTIONS" in os.environ,
                     "reason": "an ASan libwharf cannot be loaded into Debian's Python through "
                               "ctypes; the normal pass runs this test"}

ACCESS_KEY = "wharftest"
SECRET_KEY = "wharftest-secret-key"
REGION = "us-east-1"


def build_dir():
    d = os.environ.get("WHARF_BUILD_DIR")
    if d:
        return d
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.join(here, "..", "..", "build")


def bench_env():
    """The environment a test runs a bench/ program in: this build, the repo's python/ and
    tests/lib first, the caller's own PYTHONPATH after them (where boto3 lives outside the
    interpreter's site-packages, the program must find it too); AWS_CA_BUNDLE unset."""
    repo = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    env = dict(os.environ, WHARF_BUILD_DIR=build_dir())
    env.pop("AWS_CA_BUNDLE", None)
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(repo, "python"),
                                         os.path.join(repo, "tests", "lib")] +
                                        ([os.environ["PYTHONPATH"]]
                                         if os.environ.get("PYTHONPATH") else []))
    return env


if os.path.dirname(os.path.abspath(__file__)) not in sys.path:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ports import free_port  # noqa: E402  (re-exported: tests import it from here)


class _PortTaken(Exception):
    """wharfd could not bind the port it was given: another socket took it first."""


class WharfServer:
    def __init__(self, data_dir=None, extra_args=(), env=None, providers=None, log_level="info",
                 role="serve", host="127.0.0.1", prefix=(), tls=None):
        """role: serve (default), gateway or storage (tests/lib/cluster.py starts those);
        host: the address to listen on; prefix: a command to run wharfd under (e.g.
        ip netns exec NS); tls: a TestCert (make_test_cert) to serve HTTPS with."""
        self.role = role
        self.host = host
        self.prefix = list(prefix)
        self.owns_dir = data_dir is None
        self.data_dir = data_dir or tempfile.mkdtemp(prefix="wharf-test-")
        self.port = None
        self.proc = None
        self.extra_args = list(extra_args)
        self.providers = providers
        self.log_level = log_level
        self.env = dict(os.environ)
        self.env.update({"WHARF_ACCESS_KEY": ACCESS_KEY, "WHARF_SECRET_KEY": SECRET_KEY})
        if env:
            self.env.update(env)
        self.log_path = os.path.join(self.data_dir, "wharfd.log")
        self.tls = tls
        if tls:
            self.extra_args += ["--tls-cert", tls.cert, "--tls-key", tls.key]

    @property
    def endpoint(self):
        return f"{'https' if self.tls else 'http'}://{self.host}:{self.port}"

    def _urlopen(self, url, timeout):
        ctx = ssl.create_default_context(cafile=self.tls.ca) if self.tls else None
        return urllib.request.urlopen(url, timeout=timeout, context=ctx)

    @property
    def unix_socket(self):
        return os.path.join(self.data_dir, "wharfd.sock")

    @property
    def binary(self):
        return os.path.join(build_dir(), "wharfd")

    def start(self, timeout=15.0, port=None):
        # Cluster members keep their port across restarts (a storage server is known by its
        # address); a plain server takes a fresh one each start, and another if a socket of a
        # test running beside it took that one first (ports.py).
        chosen = not (port or (self.port if self.role != "serve" else None))
        for attempt in range(5):
            try:
                return self._start(timeout, port)
            except _PortTaken:
                if not chosen or attempt == 4:
                    raise RuntimeError(f"wharfd could not listen: {self.log_tail()}") from None
                self.port = None

    def _start(self, timeout, port):
        self.port = port or (self.port if self.role != "serve" else None) or free_port()
        args = self.prefix + [self.binary, self.role]
        if self.role != "gateway":
            args += ["--data", self.data_dir]
        args += ["--listen", f"{self.host}:{self.port}"]
        if self.log_level:  # None: the level a --config file sets
            args += ["--log-level", self.log_level]
        if self.providers is not None:
            args += ["--providers", self.providers]
        # wharfd's default grace (30 s; an S3 front adds up to 5 s for its handlers) outlasts
        # stop()'s 15 s wait: tests keep the 10 s the front had before the option, unless
        # they set it themselves.
        if "--shutdown-grace" not in self.extra_args and "--config" not in self.extra_args:
            args += ["--shutdown-grace", "10"]
        args += self.extra_args
        os.makedirs(os.path.dirname(self.log_path), exist_ok=True)
        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(args, env=self.env, stdout=self._log, stderr=subprocess.STDOUT)
        # make test-tsan sets WHARF_TEST_START_SCALE: a TSan wharfd takes several times longer
        # to pin its RDMA pool and open its providers (16 s measured on a loaded 2-core VM).
        timeout *= float(os.environ.get("WHARF_TEST_START_SCALE", "1"))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                tail = self.log_tail()
                if f"cannot listen on {self.host}:{self.port}" in tail:
                    self.proc = None
                    self._log.close()
                    raise _PortTaken()
                raise RuntimeError(f"wharfd exited with {self.proc.returncode}: {tail}")
            try:
                with self._urlopen(self.endpoint + "/health", timeout=1) as r:
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(0.05)
        self.stop()
        self.port = None
        raise RuntimeError(f"wharfd did not become healthy in {timeout}s: {self.log_tail()}")

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout=15.0):
        """SIGTERM and wait; returns the exit code (SIGKILL after timeout)."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=timeout)
        rc = self.proc.returncode
        self.proc = None
        self._log.close()
        if rc == 66:  # a sanitizer's report (make test-tsan's exitcode): show it before the
            # directory with the log goes
            sys.stderr.write(f"wharfd exited 66, its log:\n{self.log_tail(30000)}\n")
        return rc

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)

    def cleanup(self):
        self.stop()
        if self.owns_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def log_tail(self, n=4000):
        try:
            with open(self.log_path, "rb") as f:
                return f.read()[-n:].decode("utf-8", "replace")
        except OSError:
            return ""

    def metrics(self):
        """Parsed /metrics: {name_with_labels: float}."""
        with self._urlopen(self.endpoint + "/metrics", timeout=5) as r:
            text = r.read().decode()
        out = {}
        for line in text.splitlines():
            if not line or line.startswith("#"):
                continue
            name, _, val = line.rpartition(" ")
            try:
                out[name] = float(val)
            except ValueError:
                pass
        return out

    def metric_sum(self, prefix):
        """Sum of every series whose name (before labels) equals prefix."""
        return sum(v for k, v in self.metrics().items() if k.split("{")[0] == prefix)

    def client_env(self):
        """Environment for aws/boto3/s3cmd/rclone/wharf CLI subprocesses."""
        env = dict(os.environ)
        env.pop("AWS_CA_BUNDLE", None)
        env.update({
            "AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_DEFAULT_REGION": REGION, "AWS_EC2_METADATA_DISABLED": "true",
            "WHARF_ENDPOINT": self.endpoint, "WHARF_ACCESS_KEY": ACCESS_KEY,
            "WHARF_SECRET_KEY": SECRET_KEY, "WHARF_UNIX_SOCKET": self.unix_socket,
        })
        if self.tls:
            env["WHARF_CA_BUNDLE"] = self.tls.ca  # aws takes --ca-bundle; rclone fails on
            # AWS_CA_BUNDLE, so it is not set here
        return env

    def data_files(self):
        """Relative paths of the plain files under the data directory that hold objects or
        leftovers: everything except the metadata database (meta.db*), the log and the socket.
        Tests compare two snapshots to prove a failed request stored nothing and left no temp
        file behind."""
        return data_dir_files(self.data_dir)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.cleanup()


class TestCert:
    __test__ = False  # not a pytest class

    """A test CA and a server certificate it signed (for 127.0.0.1 and localhost), made with
    the openssl command: ca (PEM of the CA, what clients trust), cert (the server's chain),
    key (its private key)."""

    def __init__(self, directory, cn="127.0.0.1", days=2):
        self.dir = directory
        os.makedirs(directory, exist_ok=True)
        self.ca = os.path.join(directory, "ca.pem")
        ca_key = os.path.join(directory, "ca-key.pem")
        self.cert = os.path.join(directory, "cert.pem")
        self.key = os.path.join(directory, "key.pem")
        run = lambda *a: subprocess.run(a, check=True, capture_output=True, timeout=60)
        if not os.path.exists(self.ca):
            run("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", ca_key, "-out", self.ca,
                "-days", str(days), "-subj", "/CN=wharf test CA")
        self.issue(cn, days)

    def issue(self, cn="127.0.0.1", days=2):
        """A new server key and certificate (a reload test swaps them in place)."""
        csr = os.path.join(self.dir, "req.csr")
        ext = os.path.join(self.dir, "ext.cnf")
        with open(ext, "w") as f:
            f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
        run = lambda *a: subprocess.run(a, check=True, capture_output=True, timeout=60)
        run("openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-keyout", self.key + ".new", "-out", csr, "-subj", f"/CN={cn}")
        run("openssl", "x509", "-req", "-in", csr, "-CA", self.ca, "-CAkey",
            os.path.join(self.dir, "ca-key.pem"), "-CAcreateserial", "-out", self.cert + ".new",
            "-days", str(days), "-extfile", ext)
        os.replace(self.key + ".new", self.key)
        os.replace(self.cert + ".new", self.cert)
        return self


def make_test_cert(directory, cn="127.0.0.1"):
    return TestCert(directory, cn)


def assert_start_refused(extra_args, message):
    """A wharfd given extra_args exits at start-up (a bad flag), and its log names message."""
    srv = WharfServer(extra_args=extra_args)
    try:
        try:
            srv.start()
        except RuntimeError:
            pass
        else:
            srv.stop()
            raise AssertionError(f"wharfd started with {extra_args}")
        assert message in srv.log_tail(), srv.log_tail()
    finally:
        srv.cleanup()


def rclone_remote_env(endpoint, conf_dir, **options):
    """The variables that configure Debian's rclone with the remote "w:" on endpoint (its S3
    backend, path style, the test credentials, none from the environment), and an empty
    rclone.conf in conf_dir. options: more backend options, location_constraint="us-east-1"
    say. The caller adds HOME / XDG_CACHE_HOME where it wants rclone's files kept apart."""
    conf = os.path.join(str(conf_dir), "rclone.conf")
    with open(conf, "w"):
        pass
    env = {"RCLONE_CONFIG": conf,
           "RCLONE_CONFIG_W_TYPE": "s3", "RCLONE_CONFIG_W_PROVIDER": "Other",
           "RCLONE_CONFIG_W_ENDPOINT": endpoint,
           "RCLONE_CONFIG_W_ACCESS_KEY_ID": ACCESS_KEY,
           "RCLONE_CONFIG_W_SECRET_ACCESS_KEY": SECRET_KEY,
           "RCLONE_CONFIG_W_REGION": REGION, "RCLONE_CONFIG_W_FORCE_PATH_STYLE": "true",
           "RCLONE_CONFIG_W_ENV_AUTH": "false"}
    for k, v in options.items():
        env[f"RCLONE_CONFIG_W_{k.upper()}"] = v
    return env


# ---- helpers for checking results (shared by the functional suites) ----

_SKIP_DATA_FILES = ("wharfd.log", "wharfd.sock")


def data_dir_files(data_dir):
    """See WharfServer.data_files: a set of relative paths under data_dir."""
    out = set()
    for root, _dirs, files in os.walk(data_dir):
        for f in files:
            rel = os.path.relpath(os.path.join(root, f), data_dir)
            if rel in _SKIP_DATA_FILES or os.path.basename(rel).startswith("meta.db"):
                continue
            out.add(rel)
    return out


def wait_until(pred, timeout=10.0, interval=0.05):
    """Polls pred() until it returns a true value or timeout seconds pass; returns the last
    value."""
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v or time.monotonic() >= deadline:
            return v
        time.sleep(interval)


def unique_bucket(prefix):
    """A valid, unique S3 bucket name: prefix-<12 hex>."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def md5_hex(data):
    return hashlib.md5(data).hexdigest()


def file_md5_hex(path):
    h = hashlib.md5()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def multipart_etag(data, part_size):
    """S3's multipart ETag (md5 of the parts' binary md5s, then -N) for data cut into
    part_size pieces, without quotes."""
    digests = b"".join(hashlib.md5(data[i:i + part_size]).digest()
                       for i in range(0, len(data), part_size))
    n = (len(data) + part_size - 1) // part_size
    return f"{hashlib.md5(digests).hexdigest()}-{n}"


def _crc32c_table():
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        t.append(c)
    return t


_CRC32C = _crc32c_table()


def crc32c(data, crc=0):
    """CRC-32C (Castagnoli) in pure Python: an independent check of the server's ISA-L value.
    Slow (about 5 MB/s): use it on small bodies."""
    crc ^= 0xFFFFFFFF
    t = _CRC32C
    for b in data:
        crc = t[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def crc32c_b64(data):
    """The S3 wire form (x-amz-checksum-crc32c): base64 of the big-endian CRC."""
    import base64
    return base64.b64encode(crc32c(data).to_bytes(4, "big")).decode()
