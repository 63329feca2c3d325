# SPDX-License-Identifier: Apache-2.0
"""wharf.Client: buckets and objects over libwharf, with RDMA into numpy arrays, torch tensors
and any Python buffer.

Registration is handled for the caller: a transfer over RDMA needs its buffer registered with
the client, so the client keeps a small cache of registrations keyed by address range. A buffer
found inside a cached range reuses it; otherwise the buffer is registered and cached. The cache
holds a weak reference to the buffer's owner when the owner supports one (numpy arrays, torch
tensors): the registration is dropped when the owner dies. Owners that cannot be weakly
referenced (bytearray, memoryview) are held strongly, in a bounded LRU (max_cached_regs). For
long-lived buffers, client.register(buf) pins a registration until .close().
"""
import ctypes
import dataclasses
import threading
import weakref
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from ._log import log_client, log_report, logger

# What a transfer reads from or writes into: a numpy array, a torch tensor, or any object with
# the buffer protocol (bytes, bytearray, memoryview, mmap). Any, as none of these is a
# dependency.
Buffer = Any

from . import _lib
from ._lib import lib
from .errors import WharfError, check, from_status
# What a buffer argument is, and registrations (_buffers.py); Registration is this module's.
from ._buffers import Registration as Registration
from ._buffers import _Buf, _Reg, _as_buf

_TRANSPORTS = {"auto": _lib.TRANSPORT_AUTO, "rdma": _lib.TRANSPORT_RDMA,
               "http": _lib.TRANSPORT_HTTP}
_TRANSPORT_NAMES = {_lib.TRANSPORT_AUTO: "auto", _lib.TRANSPORT_RDMA: "rdma",
                    _lib.TRANSPORT_HTTP: "http", _lib.TRANSPORT_NONE: "none"}


@dataclasses.dataclass
class Report:
    """What one operation did. transport is "rdma", "http" or "none" (no bytes moved);
    fell_back is True when RDMA was attempted and HTTP moved the bytes, reason says why.
    memory is "host" or "cuda" (the caller's buffer); staged is True when a GPU buffer was
    reached through a host copy instead of directly, and reason then says why. provider
    "cuda+ipc" means the server wrote into (or read from) the GPU memory itself."""
    status: int
    transport: str
    bytes: int
    requests: int
    retries: int
    fell_back: bool
    reason: str
    wall_s: float
    first_byte_s: float
    crc64nvme: int
    etag: str
    provider: str
    memory: str = "host"
    staged: bool = False
    version_id: str = ""  # the object version the server wrote or read ("" when unversioned)
    window_crcs: Optional[List[int]] = None  # get_scatter(crcs=True): each window's crc64nvme

    @classmethod
    def _from_c(cls, r: Any) -> "Report":
        return cls(status=r.status, transport=_TRANSPORT_NAMES.get(r.transport, str(r.transport)),
                   bytes=r.bytes, requests=r.requests, retries=r.retries,
                   fell_back=bool(r.fell_back),
                   reason=r.fallback_reason.decode("utf-8", "replace"), wall_s=r.wall_s,
                   first_byte_s=r.first_byte_s, crc64nvme=r.crc64nvme,
                   etag=r.etag.decode("utf-8", "replace"),
                   provider=r.provider.decode("utf-8", "replace"),
                   version_id=r.version_id.decode("utf-8", "replace"))


@dataclasses.dataclass
class Stat:
    length: int
    mtime: int
    etag: str
    content_type: str
    crc64nvme: Optional[int] = None


@dataclasses.dataclass
class ObjectInfo:
    key: str
    length: int
    mtime: int
    etag: str


class Client:
    """A libwharf client. Thread-safe: several threads may transfer at once, each into its own
    buffer (or disjoint ranges of one). Survives fork: a DataLoader worker may use a client
    made in the parent (libwharf re-initialises its transport in the child).

    provider: "ofi+shm" (needs unix_socket, the server's Unix socket), "ofi+tcp", "auto",
    or None/"none"/"http" for HTTP only. fallback: "fail" (default: an RDMA decline is an
    error) or "http" (re-sent over HTTP; the Report says so and why). wharf.Client() from the
    environment alone (no endpoint, WHARF_PROVIDER or WHARF_UNIX_SOCKET given) takes ofi+shm
    where the server names its Unix socket to this host and it is reachable (fallback "http"
    unless given), else HTTP; transport and transport_reason say which and why. ca_bundle: a
    PEM file of the CAs an https:// endpoint's certificate must chain to (default: the
    system's).

    endpoint: one URL, or several gateways of one cluster as a list or a comma-separated
    string ("http://gw1:9000,http://gw2:9000"; WHARF_ENDPOINT takes the same). Each thread
    sends its requests to them in turn, and a request whose gateway refuses the connection
    goes to the next; GET, HEAD and unconditional PUTs of an object or part also go to the
    next when the gateway dies mid-request (docs/cluster.md, "Several gateways")."""

    def __init__(self, endpoint: Optional[Union[str, Sequence[str]]] = None, access_key: Optional[str] = None,
                 secret_key: Optional[str] = None, region: Optional[str] = None,
                 provider: Optional[str] = None, unix_socket: Optional[str] = None,
                 concurrency: Optional[int] = None, chunk_size: Optional[int] = None,
                 multipart_threshold: Optional[int] = None, part_size: Optional[int] = None,
                 fallback: Optional[str] = None, verify_checksum: bool = True,
                 timeout_ms: Optional[int] = None, max_retries: Optional[int] = None,
                 max_cached_regs: int = 64, ca_bundle: Optional[str] = None) -> None:
        choose = False  # no endpoint, provider or socket given: take what the server offers
        if not (endpoint and access_key and secret_key):
            # wharf.Client(): what was not given comes from the environment, then the AWS
            # profile (wharf.config says the order); explicit arguments always win
            from .config import missing_error, resolve_settings
            got, _ = resolve_settings()
            if not endpoint:
                provider = provider or got["provider"]
                unix_socket = unix_socket or got["unix_socket"]
                choose = not provider and not unix_socket
            endpoint = endpoint or got["endpoint"]
            if not (access_key and secret_key):
                access_key, secret_key = got["access_key"], got["secret_key"]
            region = region or got["region"]
            ca_bundle = ca_bundle or got.get("ca_bundle")
            err = missing_error(dict(endpoint=endpoint, access_key=access_key,
                                     secret_key=secret_key))
            if err:
                raise err
        if endpoint is not None and not isinstance(endpoint, str):
            eps = [str(e).strip() for e in endpoint]
            if not eps or not all(eps) or any("," in e for e in eps):
                raise WharfError(_lib.WHARF_ERR_INVALID,
                                 f"endpoint list {list(endpoint)!r} must hold one or more URLs, "
                                 f"none empty or with a comma")
            endpoint = ",".join(eps)
        region = region or "us-east-1"
        if provider in ("http",):
            provider = "none"
        # how the transport was chosen (Client.transport_reason)
        self.transport_reason = "asked for" if provider and provider != "none" else \
            "HTTP only: no provider was given"
        if choose:
            unix_socket, why = find_unix_socket(str(endpoint), ca_bundle)
            if unix_socket:
                # the server's own socket on this host: ofi+shm, and a decline (a server with
                # RDMA off) re-sent over HTTP unless the caller chose the policy
                provider, fallback = "ofi+shm", fallback or "http"
                self.transport_reason = f"the server's Unix socket {unix_socket} is reachable"
            else:
                self.transport_reason = f"HTTP: {why}"
        fallback = fallback or "fail"
        if fallback not in ("fail", "http"):
            raise WharfError(_lib.WHARF_ERR_INVALID,
                             f'fallback must be "fail" or "http", not {fallback!r}')
        self._h = None
        cfg = _lib.ClientConfig()
        lib.wharf_client_config_init(ctypes.byref(cfg), ctypes.sizeof(cfg))
        self._keep: List[bytes] = []  # the config's strings must outlive the create call

        def s(v: Any) -> Optional[bytes]:
            if v is None:
                return None
            b = str(v).encode()
            self._keep.append(b)
            return b
        cfg.endpoint, cfg.access_key, cfg.secret_key = s(endpoint), s(access_key), s(secret_key)
        cfg.region = s(region) if region else cfg.region
        cfg.provider = s(provider)
        cfg.unix_socket = s(unix_socket)
        cfg.ca_bundle = s(ca_bundle)
        if concurrency:
            cfg.concurrency = int(concurrency)
        if chunk_size:
            cfg.chunk_size = int(chunk_size)
        if multipart_threshold:
            cfg.multipart_threshold = int(multipart_threshold)
        if part_size:
            cfg.part_size = int(part_size)
        cfg.fallback = _lib.FALLBACK_HTTP if fallback == "http" else _lib.FALLBACK_FAIL
        cfg.verify_checksum = 1 if verify_checksum else 0
        if timeout_ms:
            cfg.timeout_ms = int(timeout_ms)
        if max_retries is not None:
            cfg.max_retries = int(max_retries)
        h = ctypes.c_void_p()
        st = lib.wharf_client_create(ctypes.byref(cfg), ctypes.byref(h))
        if st != _lib.OK and choose and unix_socket:
            # the provider would not open here (no libfabric, say): HTTP, as before
            self.transport_reason = f"HTTP: ofi+shm did not open: {_lib.last_error()}"
            provider, unix_socket, cfg.provider, cfg.unix_socket = None, None, None, None
            st = lib.wharf_client_create(ctypes.byref(cfg), ctypes.byref(h))
        check(st, f"creating a client for {endpoint}")
        self._h = h
        self.endpoint = endpoint  # as given: one URL or the comma-separated list
        self.endpoints = [e.strip() for e in str(endpoint).split(",")]
        self.config = dict(endpoint=endpoint, access_key=access_key, secret_key=secret_key,
                           region=region, provider=provider, unix_socket=unix_socket,
                           concurrency=concurrency, chunk_size=chunk_size,
                           multipart_threshold=multipart_threshold, part_size=part_size,
                           fallback=fallback, verify_checksum=verify_checksum,
                           timeout_ms=timeout_ms, max_retries=max_retries,
                           ca_bundle=ca_bundle)
        log_client(self, provider)
        if choose:
            logger.info("client from the environment: transport %s provider %s (%s)",
                        self.transport, self.provider, self.transport_reason)
        self._regs: List[_Reg] = []  # most recently used last
        self._reg_lock = threading.RLock()
        self._max_cached = max_cached_regs
        self._tls = threading.local()

    def __repr__(self) -> str:
        """Where it goes and how, never the credentials: endpoint, transport (the RDMA
        provider, or http), region, and whether it is closed."""
        prov = self.config.get("provider")
        transport = "http" if prov in (None, "", "none") else str(prov)
        extra = f", unix_socket={self.config['unix_socket']!r}" \
            if self.config.get("unix_socket") else ""
        closed = ", closed" if self._h is None else ""
        return (f"<wharf.Client endpoint={self.endpoint!r} transport={transport!r}"
                f"{extra} region={self.config.get('region')!r}{closed}>")

    # ---- lifetime --------------------------------------------------------------------------

    def __reduce__(self) -> Any:
        # A client travels by its configuration: the other process (spawn, forkserver, a
        # process pool, a DataLoader worker) opens its own libwharf client from it. The
        # pickle holds the secret key, as the configuration does.
        return (_reopen, (dict(self.config), self._max_cached))

    def close(self) -> None:
        """Drops every registration and destroys the client (no transfer may be in flight)."""
        if self._h is None:
            return
        with self._reg_lock:
            for r in self._regs:
                lib.wharf_mem_deregister(r.handle)
                r.handle = None
            self._regs = []
        lib.wharf_client_destroy(self._h)
        self._h = None

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def _handle(self) -> Any:
        if self._h is None:
            raise WharfError(_lib.WHARF_ERR_INVALID, "the client is closed")
        return self._h

    @property
    def provider(self) -> str:
        """The data-path provider in use ("ofi+shm", ...) or "none" (HTTP only)."""
        p = lib.wharf_client_provider(self._handle())
        return str(p.decode()) if p else "none"

    @property
    def rdma(self) -> bool:
        return self.provider != "none"

    @property
    def transport(self) -> str:
        """"rdma" or "http": what transfers use by default; transport_reason says why (a
        client from the environment takes ofi+shm where the server's Unix socket is
        reachable from this process, else HTTP)."""
        return "rdma" if self.rdma else "http"

    def stats(self) -> Dict[str, int]:
        """Client-wide counters since creation (a dict)."""
        st = _lib.CStats()
        lib.wharf_stats_init(ctypes.byref(st), ctypes.sizeof(st))
        check(lib.wharf_client_stats(self._handle(), ctypes.byref(st)), "client stats")
        return {f: getattr(st, f) for f, _ in st._fields_ if f != "size"}

    @property
    def last_report(self) -> Optional[Report]:
        """The Report of this thread's last get() on this client (get returns bytes)."""
        return getattr(self._tls, "report", None)

    # ---- buckets ---------------------------------------------------------------------------

    def create_bucket(self, bucket: str) -> None:
        check(lib.wharf_bucket_create(self._handle(), _enc(bucket, "bucket")),
              f"create bucket {bucket}")

    def delete_bucket(self, bucket: str) -> None:
        check(lib.wharf_bucket_delete(self._handle(), _enc(bucket, "bucket")),
              f"delete bucket {bucket}")

    def list_buckets(self) -> List[str]:
        out = []
        self._list(lambda k, n, m, e: out.append(k), lib.wharf_bucket_list, "list buckets",
                   self._handle())
        return out

    # ---- objects ---------------------------------------------------------------------------

    def stat(self, bucket: str, key: str, version_id: Optional[str] = None) -> Stat:
        """HEAD of the object (version_id: of that version)."""
        st = _lib.CStat()
        lib.wharf_stat_init(ctypes.byref(st), ctypes.sizeof(st))
        vid = _enc(version_id, "version_id") if version_id else None
        check(lib.wharf_object_stat_version(self._handle(), _enc(bucket, "bucket"),
                                            _enc(key, "key"), vid, ctypes.byref(st)),
              f"stat {bucket}/{key}" + (f" version {version_id}" if version_id else ""))
        return Stat(length=st.length, mtime=st.mtime, etag=st.etag.decode(),
                    content_type=st.content_type.decode(),
                    crc64nvme=st.crc64nvme if st.has_crc64nvme else None)

    def exists(self, bucket: str, key: str) -> bool:
        try:
            self.stat(bucket, key)
            return True
        except WharfError as e:
            if e.status == _lib.WHARF_ERR_NOT_FOUND:
                return False
            raise

    def delete(self, bucket: str, key: str) -> None:
        check(lib.wharf_object_delete(self._handle(), _enc(bucket, "bucket"), _enc(key, "key")),
              f"delete {bucket}/{key}")

    def list(self, bucket: str, prefix: Optional[str] = None) -> "List[ObjectInfo]":
        """[ObjectInfo] of the keys under prefix, in the server's (lexicographic) order."""
        out = []
        self._list(lambda k, n, m, e: out.append(ObjectInfo(k, n, m, e)), lib.wharf_object_list,
                   f"list {bucket}/{prefix or ''}", self._handle(), _enc(bucket, "bucket"),
                   None if prefix is None else _enc(prefix, "prefix"))
        return out

    def _list(self, sink: Any, fn: Any, what: str, *args: Any) -> None:
        err = []

        def cb(arg: Any, key: bytes, length: int, mtime: int, etag: bytes) -> int:
            try:
                sink(key.decode("utf-8", "replace"), length, mtime,
                     etag.decode("utf-8", "replace") if etag else "")
                return 0
            except BaseException as e:  # stop the listing, re-raise below
                err.append(e)
                return 1
        ccb = _lib.LIST_CB(cb)
        st = fn(*args, ccb, None)
        if err:
            raise err[0]
        check(st, what)

    def put(self, bucket: str, key: str, data: Union[str, Buffer], transport: str = "auto",
            verify: Optional[bool] = None, concurrency: Optional[int] = None,
            if_none_match: bool = False, if_match: Optional[str] = None,
            write_offset: Optional[int] = None) -> Report:
        """PUT bytes (or any buffer) as one object. Returns a Report. if_none_match=True
        stores only if the key has no object, if_match=ETAG only if its ETag is that one
        (checked by the server in the commit, so of racing writers one wins; the others get
        PreconditionFailedError and store nothing). write_offset=N appends the bytes to the
        object, whose size must be N (S3 Express's x-amz-write-offset-bytes; 0 with no object
        creates it): of appends racing at one offset one lands, the others get an
        InvalidWriteOffset error."""
        if isinstance(data, str):
            data = data.encode()
        return self.put_from(bucket, key, data, transport=transport, verify=verify,
                             concurrency=concurrency, cache=False, if_none_match=if_none_match,
                             if_match=if_match, write_offset=write_offset)

    def get(self, bucket: str, key: str, offset: int = 0, length: Optional[int] = None,
            transport: str = "auto", verify: Optional[bool] = None,
            concurrency: Optional[int] = None, version_id: Optional[str] = None) -> bytes:
        """GET an object (or [offset, offset+length); version_id: that version) as bytes.
        The Report is in client.last_report."""
        if length is None:
            size = self.stat(bucket, key, version_id=version_id).length
            if offset > size:
                raise WharfError(_lib.WHARF_ERR_RANGE, f"get {bucket}/{key}: offset {offset} is "
                                 f"past the end of the {size}-byte object")
            length = size - offset
        buf = bytearray(length)
        rep = self.get_into(bucket, key, buf, offset=offset, length=length, transport=transport,
                            verify=verify, concurrency=concurrency, cache=False,
                            version_id=version_id)
        self._tls.report = rep
        return bytes(buf) if rep.bytes == length else bytes(memoryview(buf)[:rep.bytes])

    def get_into(self, bucket: str, key: str, buf: Buffer, offset: int = 0,
                 length: Optional[int] = None, transport: str = "auto",
                 verify: Optional[bool] = None, concurrency: Optional[int] = None,
                 cache: bool = True, version_id: Optional[str] = None) -> Report:
        """GET [offset, offset+length) of an object into buf (numpy array, torch tensor or
        writable buffer; length None = to the end of the object, which must fit). Returns a
        Report whose .bytes says how many bytes landed."""
        b = _as_buf(buf, f"get_into {bucket}/{key}")
        if not b.writable:
            raise WharfError(_lib.WHARF_ERR_INVALID,
                             f"get_into {bucket}/{key}: the destination is read-only")
        if length is not None and length > b.nbytes:
            raise WharfError(_lib.WHARF_ERR_TOO_LARGE, f"get_into {bucket}/{key}: length "
                             f"{length} is larger than the {b.nbytes}-byte destination")
        return self._xfer(True, bucket, key, b, offset,
                          _lib.WHOLE if length is None else int(length), transport, verify,
                          concurrency, cache, version_id=version_id)

    def get_scatter(self, bucket: str, key: str, buf: Buffer,
                    windows: Sequence[Tuple[int, int, int]], transport: str = "auto",
                    verify: Optional[bool] = None, concurrency: Optional[int] = None,
                    cache: bool = True, crcs: bool = False) -> Report:
        """Scatter GET: for each (object offset, length, offset in buf) of windows, those bytes
        of one object land at that offset of buf (numpy array, torch tensor or writable
        buffer), in as few requests as the server's bounds allow (docs/protocol.md, "Scatter
        GET"); over HTTP one ranged GET per window. Destinations must lie inside buf and not
        overlap. With crcs, the Report's .window_crcs lists each window's crc64nvme."""
        import numpy as np
        h = self._handle()
        b = _as_buf(buf, f"get_scatter {bucket}/{key}")
        if not b.writable:
            raise WharfError(_lib.WHARF_ERR_INVALID,
                             f"get_scatter {bucket}/{key}: the destination is read-only")
        if transport not in _TRANSPORTS:
            raise WharfError(_lib.WHARF_ERR_INVALID, f'transport must be "auto", "rdma" or '
                             f'"http", not {transport!r}')
        t = _TRANSPORTS[transport]
        if t == _lib.TRANSPORT_AUTO and not self.rdma:
            t = _lib.TRANSPORT_HTTP
        w = np.ascontiguousarray(np.asarray(windows, dtype=np.uint64).reshape(-1, 3))
        n = int(w.shape[0])
        out = np.zeros(max(n, 1), dtype=np.uint64)
        opts = _lib.XferOpts()
        lib.wharf_xfer_opts_init(ctypes.byref(opts), ctypes.sizeof(opts))
        opts.transport = t
        opts.verify_checksum = -1 if verify is None else (1 if verify else 0)
        opts.concurrency = int(concurrency or 0)
        rep = _lib.CReport()
        lib.wharf_report_init(ctypes.byref(rep), ctypes.sizeof(rep))
        reg = None
        if t != _lib.TRANSPORT_HTTP and b.nbytes > 0:
            reg = self._acquire(b, cache)
        try:
            st = lib.wharf_object_get_scatter(h, _enc(bucket, "bucket"), _enc(key, "key"),
                                              b.addr or None, b.nbytes,
                                              w.ctypes.data_as(ctypes.POINTER(_lib.CWindow)), n,
                                              out.ctypes.data_as(ctypes.POINTER(ctypes.c_uint64)),
                                              ctypes.byref(opts),
                                              ctypes.byref(rep))
        finally:
            if reg is not None:
                self._release(reg)
        if st != _lib.OK:
            raise from_status(st, f"scatter GET {bucket}/{key}", Report._from_c(rep))
        r = Report._from_c(rep)
        r.memory = "cuda" if b.kind == _lib.MEM_CUDA else "host"
        if crcs:
            r.window_crcs = [int(x) for x in out[:n]]
        log_report("SCATTER", bucket, key, r)
        return r

    def put_from(self, bucket: str, key: str, buf: Buffer, offset: int = 0,
                 length: Optional[int] = None, transport: str = "auto",
                 verify: Optional[bool] = None, concurrency: Optional[int] = None,
                 cache: bool = True, if_none_match: bool = False,
                 if_match: Optional[str] = None, write_offset: Optional[int] = None) -> Report:
        """PUT bytes [offset, offset+length) of buf (numpy array, torch tensor or any buffer)
        as one object. Returns a Report."""
        b = _as_buf(buf, f"put_from {bucket}/{key}")
        if offset < 0 or offset > b.nbytes:
            raise WharfError(_lib.WHARF_ERR_RANGE, f"put_from {bucket}/{key}: offset {offset} "
                             f"is outside the {b.nbytes}-byte buffer")
        n = b.nbytes - offset if length is None else int(length)
        if n < 0 or offset + n > b.nbytes:
            raise WharfError(_lib.WHARF_ERR_RANGE, f"put_from {bucket}/{key}: [{offset}, "
                             f"{offset + n}) is outside the {b.nbytes}-byte buffer")
        return self._xfer(False, bucket, key, b.sub(offset, n), 0, n, transport, verify,
                          concurrency, cache, if_none_match=if_none_match, if_match=if_match,
                          write_offset=write_offset)

    # ---- the data path ---------------------------------------------------------------------

    def _xfer(self, is_get: bool, bucket: str, key: str, b: _Buf, offset: int, length: int,
              transport: str, verify: Optional[bool], concurrency: Optional[int], cache: bool,
              if_none_match: bool = False, if_match: Optional[str] = None,
              version_id: Optional[str] = None, write_offset: Optional[int] = None) -> Report:
        h = self._handle()
        if transport not in _TRANSPORTS:
            raise WharfError(_lib.WHARF_ERR_INVALID, f'transport must be "auto", "rdma" or '
                             f'"http", not {transport!r}')
        t = _TRANSPORTS[transport]
        # A PUT staged through host memory keeps its condition and its offset.
        put_kw = dict(if_none_match=if_none_match, if_match=if_match, write_offset=write_offset)
        if t == _lib.TRANSPORT_AUTO and not self.rdma:
            t = _lib.TRANSPORT_HTTP
        if b.kind == _lib.MEM_CUDA and t == _lib.TRANSPORT_HTTP:
            return self._bounce(is_get, bucket, key, b, offset, length, verify, concurrency,
                                "http", "HTTP cannot reach GPU memory", put_kw)
        opts = _lib.XferOpts()
        lib.wharf_xfer_opts_init(ctypes.byref(opts), ctypes.sizeof(opts))
        opts.transport = t
        opts.verify_checksum = -1 if verify is None else (1 if verify else 0)
        opts.concurrency = int(concurrency or 0)
        # (bytes objects held in locals for the duration of the call)
        im = _enc(if_match, "if_match") if if_match else None
        vid = _enc(version_id, "version_id") if version_id else None
        opts.if_none_match = 1 if if_none_match else 0
        opts.if_match = im
        opts.version_id = vid
        if write_offset is not None:
            if int(write_offset) < 0:
                raise WharfError(_lib.WHARF_ERR_INVALID, f"put {bucket}/{key}: write_offset "
                                 f"must be >= 0, not {write_offset}")
            opts.append = 1
            opts.write_offset = int(write_offset)
        rep = _lib.CReport()
        lib.wharf_report_init(ctypes.byref(rep), ctypes.sizeof(rep))
        reg = None
        if t != _lib.TRANSPORT_HTTP and b.nbytes > 0:
            try:
                reg = self._acquire(b, cache)
            except WharfError as e:
                # device memory this libwharf/provider cannot register: through host memory
                if b.kind != _lib.MEM_CUDA or e.status not in (_lib.WHARF_ERR_UNSUPPORTED,
                                                               _lib.WHARF_ERR_INVALID):
                    raise
                return self._bounce(is_get, bucket, key, b, offset, length, verify,
                                    concurrency, _TRANSPORT_NAMES[t], e.message, put_kw)
        try:
            bk, kk = _enc(bucket, "bucket"), _enc(key, "key")
            if is_get:
                st = lib.wharf_object_get(h, bk, kk, b.addr or None, b.nbytes, int(offset),
                                          length, ctypes.byref(opts), ctypes.byref(rep))
            else:
                st = lib.wharf_object_put(h, bk, kk, b.addr or None, length, ctypes.byref(opts),
                                          ctypes.byref(rep))
            if st != _lib.OK:
                err = from_status(st, f"{'GET' if is_get else 'PUT'} {bucket}/{key}",
                                  Report._from_c(rep))
                if b.kind != _lib.MEM_CUDA or st not in (_lib.WHARF_ERR_DECLINED,
                                                         _lib.WHARF_ERR_UNSUPPORTED):
                    raise err
                reason = err.message
        finally:
            if reg is not None:
                self._release(reg)
        if st != _lib.OK:  # the server cannot reach this GPU directly: stage, and say so
            return self._bounce(is_get, bucket, key, b, offset, length, verify, concurrency,
                                _TRANSPORT_NAMES[t], reason, put_kw)
        out = Report._from_c(rep)
        out.memory = "cuda" if b.kind == _lib.MEM_CUDA else "host"
        log_report("GET" if is_get else "PUT", bucket, key, out)
        return out

    def _bounce(self, is_get: bool, bucket: str, key: str, b: _Buf, offset: int, length: int,
                verify: Optional[bool], concurrency: Optional[int], transport: str,
                why: str, put_kw: Optional[Dict[str, Any]] = None) -> Report:
        """A CUDA tensor through a host copy (HTTP cannot write device memory; a client or
        server without the CUDA driver, or a remote server, cannot either). The Report says
        staged=True and reason says why."""
        import torch
        t = b.owner
        flat = t.view(-1).view(torch.uint8) if t.numel() else torch.empty(0, dtype=torch.uint8)
        if is_get:
            host = torch.empty(b.nbytes, dtype=torch.uint8)
            rep = self.get_into(bucket, key, host, offset=offset,
                                length=None if length == _lib.WHOLE else length,
                                transport=transport, verify=verify, concurrency=concurrency,
                                cache=False)
            flat[:rep.bytes].copy_(host[:rep.bytes])
        else:
            host = flat.cpu()
            rep = self.put_from(bucket, key, host, offset=b.addr - t.data_ptr(), length=length,
                                transport=transport, verify=verify, concurrency=concurrency,
                                cache=False, **(put_kw or {}))
        rep.reason = (rep.reason + "; " if rep.reason else "") + \
            f"staged through host memory: {why}"
        rep.memory, rep.staged = "cuda", True
        log_report("GET" if is_get else "PUT", bucket, key, rep)
        return rep

    # ---- registrations ---------------------------------------------------------------------

    def register(self, buf: Buffer) -> Registration:
        """Registers buf for RDMA and pins the registration until the returned object's
        close() (it is a context manager). Transfers into any part of buf then reuse it."""
        b = _as_buf(buf, "register")
        if b.nbytes == 0:
            raise WharfError(_lib.WHARF_ERR_INVALID, "register: the buffer is empty")
        reg = self._new_reg(b.addr, b.nbytes, b.kind)
        reg.pinned = True
        reg.strong = b.owner
        with self._reg_lock:
            self._regs.append(reg)
        return Registration(self, reg, b.owner)

    def deregister(self, buf: Buffer) -> None:
        """Drops cached (not pinned) registrations that overlap buf."""
        b = _as_buf(buf, "deregister")
        with self._reg_lock:
            for r in list(self._regs):
                if not r.pinned and r.addr < b.addr + b.nbytes and b.addr < r.end:
                    r.dead = True
                    self._maybe_drop(r)

    def clear_registrations(self) -> None:
        """Drops every cached (not pinned) registration."""
        with self._reg_lock:
            for r in list(self._regs):
                if not r.pinned:
                    r.dead = True
                    self._maybe_drop(r)

    def _new_reg(self, addr: int, nbytes: int, kind: int) -> _Reg:
        if not self.rdma:
            raise WharfError(_lib.WHARF_ERR_UNSUPPORTED, f"register: the client has no RDMA "
                             f"provider (provider {self.provider}); use transport=\"http\"")
        m = ctypes.c_void_p()
        check(lib.wharf_mem_register(self._handle(), ctypes.c_void_p(addr), nbytes, kind,
                                     ctypes.byref(m)), f"register {nbytes} bytes")
        return _Reg(addr, addr + nbytes, m, kind)

    def _acquire(self, b: _Buf, cache: bool) -> Optional[_Reg]:
        """A registration holding b's range, in use until _release. A new one covers b's
        root (the whole array or tensor b views) and follows the root's life."""
        addr, n = b.addr, b.nbytes
        with self._reg_lock:
            for i in range(len(self._regs) - 1, -1, -1):
                r = self._regs[i]
                if not r.dead and r.addr <= addr and addr + n <= r.end and r.kind == b.kind:
                    r.inuse += 1
                    if not r.pinned:
                        self._regs.append(self._regs.pop(i))
                    return r
        if cache:
            reg = self._new_reg(b.root_addr, b.root_nbytes, b.kind)
        else:
            reg = self._new_reg(addr, n, b.kind)
        reg.inuse = 1
        if not cache:
            reg.dead = True  # dropped at release
            return reg
        if b.weakable:
            try:
                reg.ref = weakref.ref(b.root, self._owner_died_cb(reg))
            except TypeError:
                reg.strong = b.root
        else:
            reg.strong = b.root
        with self._reg_lock:
            self._regs.append(reg)
            self._evict()
        return reg

    def _owner_died_cb(self, reg: _Reg) -> Any:
        wself = weakref.ref(self)

        def cb(_: Any) -> None:
            c = wself()
            if c is None:
                return
            with c._reg_lock:
                reg.dead = True
                c._maybe_drop(reg)
        return cb

    def _release(self, reg: _Reg) -> None:
        with self._reg_lock:
            reg.inuse -= 1
            self._maybe_drop(reg)

    def _unpin(self, reg: _Reg) -> None:
        with self._reg_lock:
            reg.pinned = False
            reg.dead = True
            self._maybe_drop(reg)

    def _maybe_drop(self, reg: _Reg) -> None:
        # under _reg_lock
        if reg.dead and reg.inuse == 0 and reg.handle is not None:
            if reg in self._regs:
                self._regs.remove(reg)
            if self._h is not None:
                lib.wharf_mem_deregister(reg.handle)
            reg.handle = None
            reg.strong = None

    def _evict(self) -> None:
        cached = [r for r in self._regs if not r.pinned]
        excess = len(cached) - self._max_cached
        for r in cached:
            if excess <= 0:
                break
            if r.inuse == 0:
                r.dead = True
                self._maybe_drop(r)
                excess -= 1

    def _cached_regs(self) -> List[Tuple[int, int, bool]]:
        """(addr, nbytes, pinned) of the live registrations (for tests)."""
        with self._reg_lock:
            return [(r.addr, r.end - r.addr, r.pinned) for r in self._regs if not r.dead]


def _reopen(config: Dict[str, Any], max_cached_regs: int) -> "Client":
    return Client(max_cached_regs=max_cached_regs, **config)


def _enc(s: Any, what: str) -> bytes:
    if not isinstance(s, str) or not s:
        raise WharfError(_lib.WHARF_ERR_INVALID, f"{what} must be a non-empty string, not "
                         f"{s!r}")
    if "\0" in s:
        raise WharfError(_lib.WHARF_ERR_INVALID, f"{what} {s!r} contains a NUL character")
    return s.encode()


def find_unix_socket(endpoint: str, ca_bundle: Optional[str] = None
                     ) -> Tuple[Optional[str], str]:
    """(path, "") of the server's Unix socket when its /health names one to this host and this
    process can connect to it (wharf_endpoint_unix_socket), else (None, why)."""
    if "," in endpoint:
        return None, "several endpoints: a Unix socket reaches one server"
    buf = ctypes.create_string_buffer(128)
    st = lib.wharf_endpoint_unix_socket(str(endpoint).encode(),
                                        str(ca_bundle).encode() if ca_bundle else None,
                                        buf, len(buf))
    if st == _lib.OK:
        return buf.value.decode(), ""
    return None, _lib.last_error()


def client_from_env(**kw: Any) -> "Client":
    """A Client from the environment (wharf.config says which variables, in which order);
    keyword arguments override them."""
    from .config import client_from_env as from_env
    return from_env(**kw)
