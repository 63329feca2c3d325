# SPDX-License-Identifier: Apache-2.0
"""The one harness for every cluster test and the cluster benchmark.

Cluster starts a private PostgreSQL (tests/lib/pgserver.py), N storage servers and one (or
more) gateways, each a real wharfd on a free port, all sharing WHARF_CLUSTER_SECRET. Every
process goes through WharfServer (tests/lib/wharfd.py), the one way to start a wharfd.

netns mode (Cluster(netns=True)) puts each storage server in a network namespace of its own,
joined by veth pairs to a bridge that the test creates (and removes), on the test's own
private addresses (10.231.<test>.0/24 by default); the gateway and the clients stay in the
root namespace on the bridge's address. RDMA then goes over the tcp provider between
namespaces. netns_available() says whether the machine allows it, and why not.

Every wait is bounded in time.
"""
import hashlib
import hmac
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
import uuid

from wharfd import WharfServer, build_dir, wait_until

SECRET = "wharf-test-cluster-secret-" + "0123456789abcdef"


def target_of(st):
    """The address a token names its storage server by (as the gateway addresses it)."""
    return f"{st.host}:{st.port}"


def sign_itoken(op, chunk, off, length, expires=None, peer="tcp", addr="127.0.0.1:1",
                pid=0, uid=4294967295, mtok="-", secret=SECRET, target="-", crc=None,
                nonce=None):
    """An internal token as a gateway signs it (an independent implementation, so tests can
    forge, alter and replay tokens against a storage server). target: the storage server
    (target_of(st)); crc: the chunk's crc64nvme (a put needs it); nonce: 16 hex, random unless
    given (a storage server admits each token once)."""
    if expires is None:
        expires = int(time.time()) + 60
    crc = "-" if crc is None else f"{crc:016x}"
    nonce = nonce or os.urandom(8).hex()
    body = (f"wit2|{op}|{chunk}|{off:x}|{length:x}|{expires}|{peer}|{addr}|{pid}|{uid}|{mtok}|"
            f"{crc}|{target}|{nonce}|")
    mac = hmac.new(secret.encode(), body[:-1].encode(), hashlib.sha256).hexdigest()
    return body + mac


def crc64nvme(data):
    """crc64nvme (reflected, poly 0x9a6c9329ac4bc9b5, init and xorout all ones), an
    independent implementation for the tests (storage servers check copies against it)."""
    table = crc64nvme.table
    if table is None:
        table = []
        for i in range(256):
            c = i
            for _ in range(8):
                c = (c >> 1) ^ 0x9A6C9329AC4BC9B5 if c & 1 else c >> 1
            table.append(c)
        crc64nvme.table = table
    crc = 0xFFFFFFFFFFFFFFFF
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFFFFFFFFFF


crc64nvme.table = None


def new_chunk_id():
    return uuid.uuid4().hex


def _run(args, check=True):
    return subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=20,
                          check=check)


def netns_available():
    """(True, "") when this process may create network namespaces, veths and a bridge; else
    (False, why)."""
    if shutil.which("ip") is None:
        return False, "the ip command (iproute2) is not installed"
    name = "whprobe" + uuid.uuid4().hex[:6]
    r = _run(["ip", "netns", "add", name], check=False)
    if r.returncode != 0:
        return False, "ip netns add is refused here: " + r.stdout.decode(errors="replace").strip()
    try:
        r = _run(["ip", "link", "add", "whp" + name[-6:], "type", "bridge"], check=False)
        if r.returncode != 0:
            return False, "creating a bridge is refused: " + r.stdout.decode().strip()
        _run(["ip", "link", "del", "whp" + name[-6:]], check=False)
    finally:
        _run(["ip", "netns", "del", name], check=False)
    return True, ""


class Netns:
    """A bridge in the root namespace and one namespace per member, each joined by a veth
    pair. Addresses: bridge .1, members .2, .3, ... of subnet (a /24 of the test's own)."""

    def __init__(self, n, subnet=None):
        tag = uuid.uuid4().hex[:6]
        self.tag = tag
        third = int(tag[:2], 16) % 200 + 20
        self.prefix = subnet or f"10.231.{third}"
        self.bridge = "whbr" + tag
        self.names = [f"whns{tag}{i}" for i in range(n)]
        self.host_addr = f"{self.prefix}.1"
        self.addrs = [f"{self.prefix}.{i + 2}" for i in range(n)]
        self.made = []

    def create(self):
        _run(["ip", "link", "add", self.bridge, "type", "bridge"])
        self.made.append(("link", self.bridge))
        _run(["ip", "addr", "add", f"{self.host_addr}/24", "dev", self.bridge])
        _run(["ip", "link", "set", self.bridge, "up"])
        for i, ns in enumerate(self.names):
            _run(["ip", "netns", "add", ns])
            self.made.append(("netns", ns))
            host_end, ns_end = f"whv{self.tag}{i}", f"whp{self.tag}{i}"
            _run(["ip", "link", "add", host_end, "type", "veth", "peer", "name", ns_end])
            self.made.append(("link", host_end))
            _run(["ip", "link", "set", host_end, "master", self.bridge])
            _run(["ip", "link", "set", host_end, "up"])
            _run(["ip", "link", "set", ns_end, "netns", ns])
            ex = ["ip", "netns", "exec", ns]
            _run(ex + ["ip", "addr", "add", f"{self.addrs[i]}/24", "dev", ns_end])
            _run(ex + ["ip", "link", "set", ns_end, "up"])
            _run(ex + ["ip", "link", "set", "lo", "up"])
            _run(ex + ["ip", "route", "add", "default", "via", self.host_addr])
        return self

    def exec_prefix(self, i):
        return ["ip", "netns", "exec", self.names[i]]

    def remove(self):
        for kind, name in reversed(self.made):
            if kind == "netns":
                _run(["ip", "netns", "del", name], check=False)
            else:
                _run(["ip", "link", "del", name], check=False)
        self.made = []


class Cluster:
    """A PostgreSQL, `storage` storage servers and `gateways` gateways.

    replicas, chunk_size: the gateway's --replicas and --chunk-size. providers: RDMA
    providers of every member. netns: put each storage server in its own namespace.
    tls: a TestCert (wharfd.py): every member serves HTTPS with it, and the gateways dial the
    storage servers over HTTPS, trusting its CA (--cluster-ca). zones: storage server i gets
    --zone zones[i] (None or a short list: no zone for the rest)."""

    def __init__(self, storage=3, gateways=1, replicas=2, chunk_size=None, providers=None,
                 netns=False, gateway_args=(), storage_args=(), log_level="info",
                 pg=None, env=None, storage_prefix=(), tls=None, zones=None):
        self.n_storage = storage
        self.n_gateways = gateways
        self.replicas = replicas
        self.chunk_size = chunk_size
        self.providers = providers
        self.use_netns = netns
        self.gateway_args = list(gateway_args)
        self.storage_args = list(storage_args)
        self.storage_prefix = list(storage_prefix)  # e.g. prlimit --memlock=... --
        self.log_level = log_level
        self.tls = tls
        self.zones = list(zones or [])
        self.pg = pg
        self.own_pg = pg is None
        self.env = {"WHARF_CLUSTER_SECRET": SECRET}
        if env:
            self.env.update(env)
        self.netns = None
        self.storage = []
        self.gateways = []
        self.root = tempfile.mkdtemp(prefix="wharf-cluster-")

    # ---- lifecycle ----
    def start(self, timeout=30.0):
        try:
            if self.use_netns:
                self.netns = Netns(self.n_storage).create()
            if self.pg is None:
                from pgserver import PgServer
                if self.netns:  # reachable from the namespaces, over the bridge
                    self.pg = PgServer(listen=(self.netns.host_addr, "127.0.0.1"),
                                       trust=(f"{self.netns.prefix}.0/24",))
                else:
                    self.pg = PgServer()
                self.pg.start()
            for i in range(self.n_storage):
                self.add_storage(timeout=timeout)
            for _ in range(self.n_gateways):
                self.add_gateway(timeout=timeout)
            self.wait_nodes_up(self.n_storage, timeout=timeout)
        except Exception:
            self.cleanup()
            raise
        return self

    @property
    def meta_url(self):
        return self.pg.url

    @property
    def gateway(self):
        return self.gateways[0]

    def add_storage(self, timeout=30.0):
        i = len(self.storage)
        host, prefix = "127.0.0.1", ()
        if self.netns:
            host, prefix = self.netns.addrs[i], self.netns.exec_prefix(i)
        d = os.path.join(self.root, f"storage{i}")
        os.makedirs(d, exist_ok=True)
        zone = ["--zone", self.zones[i]] if i < len(self.zones) and self.zones[i] else []
        s = WharfServer(data_dir=d, role="storage", host=host,
                        prefix=list(prefix) + self.storage_prefix,
                        providers=self.providers, log_level=self.log_level, env=self.env,
                        extra_args=["--meta", self.meta_url] + zone + self.storage_args,
                        tls=self.tls)
        s.start(timeout=timeout)
        self.storage.append(s)
        return s

    def add_gateway(self, timeout=30.0):
        i = len(self.gateways)
        d = os.path.join(self.root, f"gateway{i}")
        os.makedirs(d, exist_ok=True)
        args = ["--meta", self.meta_url, "--replicas", str(self.replicas),
                "--unix", os.path.join(d, "wharfd.sock")]
        if self.chunk_size:
            args += ["--chunk-size", str(self.chunk_size)]
        if self.tls:
            args += ["--cluster-ca", self.tls.ca]
        host = self.netns.host_addr if self.netns else "127.0.0.1"
        g = WharfServer(data_dir=d, role="gateway", host=host, providers=self.providers,
                        log_level=self.log_level, env=self.env,
                        extra_args=args + self.gateway_args, tls=self.tls)
        g.start(timeout=timeout)
        self.gateways.append(g)
        return g

    def stop(self):
        """SIGTERM to every member (a paused one is continued first); returns their exit
        codes, gateways first (None for one that was not running)."""
        rcs = [g.stop() for g in self.gateways]
        for s in self.storage:
            if s.proc is not None and s.proc.poll() is None:
                try:
                    s.proc.send_signal(signal.SIGCONT)
                except OSError:
                    pass
            rcs.append(s.stop())
        return rcs

    def cleanup(self):
        self.stop()
        for m in self.gateways + self.storage:
            m.cleanup()
        if self.netns:
            self.netns.remove()
        if self.own_pg and self.pg is not None:
            self.pg.close()
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.cleanup()

    # ---- observation ----
    def nodes_up(self, gw=None):
        try:
            return int((gw or self.gateway).metric_sum("wharf_storage_nodes_up"))
        except OSError:
            return -1

    def wait_nodes_up(self, n, timeout=30.0):
        ok = wait_until(lambda: self.nodes_up() == n, timeout=timeout, interval=0.1)
        if not ok:
            raise RuntimeError(f"gateway sees {self.nodes_up()} storage servers up, want {n}: "
                               + self.gateway.log_tail(2000))

    def storage_sum(self, name):
        """Sum of a counter over every running storage server (the cluster's witness)."""
        return sum(s.metric_sum(name) for s in self.storage if s.alive())

    def gateway_sum(self, name):
        return sum(g.metric_sum(name) for g in self.gateways if g.alive())

    def chunk_files(self):
        """{storage index: set of chunk ids on its disk}."""
        out = {}
        for i, s in enumerate(self.storage):
            ids = set()
            for root, _d, files in os.walk(os.path.join(s.data_dir, "chunks")):
                ids.update(files)
            out[i] = ids
        return out

    def storage_index(self, node_id):
        """The index in self.storage of node node_id (by its registered address), or None."""
        addr = self.pg.sql(f"SELECT addr FROM nodes WHERE id = {int(node_id)}").strip()
        for i, s in enumerate(self.storage):
            if addr == f"{s.host}:{s.port}":
                return i
        return None

    def chunk_map(self):
        """[(chunk_id, object offset, length, [storage index of each replica, in map order])]
        of every committed chunk, from the database."""
        out = []
        rows = self.pg.sql("SELECT c.chunk_id, c.off, c.len, (SELECT string_agg(coalesce(n.addr,"
                           " '-'), ',' ORDER BY u.ord) FROM unnest(c.replicas) WITH ORDINALITY"
                           " u(id, ord) LEFT JOIN nodes n ON n.id = u.id)"
                           " FROM chunks c ORDER BY c.data_id, c.idx")
        index = {f"{s.host}:{s.port}": i for i, s in enumerate(self.storage)}
        for line in rows.splitlines():
            if not line.strip():
                continue
            cid, off, ln, reps = line.split("|")
            out.append((cid, int(off), int(ln),
                        [index.get(a) for a in reps.split(",") if a]))
        return out

    def node_cmd(self, *args, check=True):
        """`wharfd node ARGS --meta URL`: (exit code, stdout, stderr); check: assert it exited
        0."""
        r = subprocess.run([os.path.join(build_dir(), "wharfd"), "node", *args, "--meta",
                            self.meta_url], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=30, env=dict(os.environ, **self.env))
        out, err = r.stdout.decode(), r.stderr.decode()
        assert not check or r.returncode == 0, (args, r.returncode, out, err)
        return r.returncode, out, err

    def node_list(self):
        """`wharfd node list --json`: {registered address: node dict}."""
        import json
        return {n["addr"]: n for n in json.loads(self.node_cmd("list", "--json")[1])["nodes"]}

    def addr(self, i):
        s = self.storage[i]
        return f"{s.host}:{s.port}"

    def chunk_path(self, i, chunk_id):
        return os.path.join(self.storage[i].data_dir, "chunks", chunk_id[:2], chunk_id)

    def corrupt(self, i, chunk_id, offset, n=4096):
        """Flips n bytes of storage i's copy of chunk_id at offset, on disk (bit rot)."""
        with open(self.chunk_path(i, chunk_id), "r+b") as f:
            f.seek(offset)
            b = f.read(n)
            f.seek(offset)
            f.write(bytes(x ^ 0xFF for x in b))
            f.flush()
            os.fsync(f.fileno())

    def tmp_files(self):
        return sum(len(os.listdir(os.path.join(s.data_dir, "tmp")))
                   for s in self.storage if os.path.isdir(os.path.join(s.data_dir, "tmp")))

    def client_env(self, gw=None):
        return (gw or self.gateway).client_env()

    def boto3(self, gw=None, attempts=None):
        """A boto3 S3 client of the gateway. retries={"max_attempts": 1} is botocore's
        legacy count of retries: one retry after a failure. attempts=1: no retry at all (a
        test that counts failed requests)."""
        import boto3
        from botocore.config import Config
        from wharfd import ACCESS_KEY, SECRET_KEY, REGION
        return boto3.client("s3", endpoint_url=(gw or self.gateway).endpoint,
                            aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY,
                            region_name=REGION, verify=self.tls.ca if self.tls else None,
                            config=Config(retries={"total_max_attempts": attempts}
                                          if attempts else {"max_attempts": 1},
                                          connect_timeout=5, read_timeout=60))


def http(method, url, headers=None, body=None, timeout=10):
    """(status, headers dict lowercased, body bytes) of one plain HTTP request."""
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, {k.lower(): v for k, v in r.headers.items()}, r.read()
    except urllib.error.HTTPError as e:
        return e.code, {k.lower(): v for k, v in e.headers.items()}, e.read()


class Load:
    """Reader and writer threads against a cluster's gateway, every outcome recorded and
    every byte checked (the fault drills' load): `readers` HTTP readers and one HTTP writer,
    plus an RDMA reader (rdma) and an RDMA writer (rdma_put) over ofi+tcp. Objects written
    are 1..max_chunk bytes. Each thread stops at stop, or after max_ops requests. once: each
    HTTP request is sent once (boto3 does not retry it), so every failure counts."""

    def __init__(self, cl, bucket, objects, rdma=False, rdma_put=False, readers=2,
                 max_chunk=768 * 1024, max_ops=5000, once=False):
        import threading
        self.cl, self.bucket, self.objects = cl, bucket, dict(objects)
        self.rdma, self.rdma_put, self.readers = rdma, rdma_put, readers
        self.max_chunk, self.max_ops, self.once = max_chunk, max_ops, once
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.get_ok = self.get_fail = self.put_ok = self.put_fail = 0
        self.wrong = []
        self.errors = []  # (kind "get" or "put", time.time(), what)
        self.max_wait = 0.0
        self.slowest = None
        self.written = {}
        self.threads = []

    def _note(self, t0, ok, kind, err=None):
        dt = time.monotonic() - t0
        with self.lock:
            if dt > self.max_wait:
                self.slowest = (kind, dt, time.time())
            self.max_wait = max(self.max_wait, dt)
            if kind.startswith("get"):
                self.get_ok += ok
                self.get_fail += not ok
            else:
                self.put_ok += ok
                self.put_fail += not ok
            if err is not None:
                self.errors.append((kind, time.time(), err))

    def _rdma_client(self):
        import wharf
        from wharfd import ACCESS_KEY, REGION, SECRET_KEY
        return wharf.Client(self.cl.gateway.endpoint, ACCESS_KEY, SECRET_KEY, region=REGION,
                            provider="ofi+tcp")

    def _reader(self, seed, rdma=False):
        import random
        rnd = random.Random(seed)
        c = self._rdma_client() if rdma else None
        s3 = None if rdma else self.cl.boto3(attempts=1 if self.once else None)
        keys = sorted(self.objects)
        try:
            for _ in range(self.max_ops):
                if self.stop.is_set():
                    break
                k = rnd.choice(keys)
                t0 = time.monotonic()
                try:
                    if rdma:
                        body = c.get(self.bucket, k, transport="rdma")
                    else:
                        body = s3.get_object(Bucket=self.bucket, Key=k)["Body"].read()
                    if body != self.objects[k]:
                        self.wrong.append(k)
                    self._note(t0, True, "get-rdma" if rdma else "get-http")
                except Exception as e:  # noqa: BLE001 - every failure is recorded and judged
                    self._note(t0, False, "get", ("rdma " if rdma else "") + repr(e)[:300])
        finally:
            if c:
                c.close()

    def _writer(self, seed, rdma=False):
        import random
        rnd = random.Random(seed)
        c = self._rdma_client() if rdma else None
        s3 = None if rdma else self.cl.boto3(attempts=1 if self.once else None)
        try:
            for i in range(self.max_ops):
                if self.stop.is_set():
                    break
                k = f"w{seed}-{i}"
                data = rnd.randbytes(rnd.randint(1, self.max_chunk))
                t0 = time.monotonic()
                try:
                    if rdma:
                        c.put(self.bucket, k, data, transport="rdma")
                    else:
                        s3.put_object(Bucket=self.bucket, Key=k, Body=data)
                    with self.lock:
                        self.written[k] = data
                    self._note(t0, True, "put")
                except Exception as e:  # noqa: BLE001
                    self._note(t0, False, "put", ("rdma " if rdma else "") + repr(e)[:300])
        finally:
            if c:
                c.close()

    def start(self):
        import threading
        fns = [(self._reader, 1 + i, False) for i in range(self.readers)]
        fns.append((self._writer, 3, False))
        if self.rdma:
            fns.append((self._reader, 4, True))
        if self.rdma_put:
            fns.append((self._writer, 5, True))
        for fn, seed, rdma in fns:
            t = threading.Thread(target=fn, args=(seed, rdma), daemon=True)
            t.start()
            self.threads.append(t)
        return self

    def finish(self, timeout=90):
        self.stop.set()
        for t in self.threads:
            t.join(timeout=timeout)
        assert not any(t.is_alive() for t in self.threads), "a load thread hung"

    def verify_all(self):
        s3 = self.cl.boto3()
        for k, v in list(self.objects.items()) + list(self.written.items()):
            assert s3.get_object(Bucket=self.bucket, Key=k)["Body"].read() == v, k
