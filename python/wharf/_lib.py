# SPDX-License-Identifier: Apache-2.0
"""ctypes bindings of libwharf's public C ABI (include/wharf/wharf.h), and nothing else.

The library is found through, in order: $WHARF_LIB (a path: an explicit choice wins), the copy
bundled in the wheel (wharf/_libs/libwharf.so.0, `make wheel`), $WHARF_BUILD_DIR/libwharf.so,
<repo>/build/libwharf.so (when this package runs from the source tree), then the system's
libwharf.so.0 (ctypes.util.find_library). Every struct here mirrors the header field for field;
structs that begin with a size field are set up by the library's own *_init(&x, sizeof x).

A wheel bundles rdma-core's libibverbs, librdmacm and libefa as well, but the host's own copies
are loaded first where it has them: rdma-core's device drivers (/usr/lib/*/libibverbs/) must
match the libibverbs that loads them, and a library already loaded is what the bundled
libfabric then links to (the dynamic linker matches it by soname).
"""
import ctypes
import ctypes.util
import os
import threading
from typing import Any, Iterator, Optional

WHOLE = 0xFFFFFFFFFFFFFFFF  # WHARF_WHOLE

OK = 0
# wharf_status_t (include/wharf/wharf.h), spelled out so that type checkers see them
WHARF_OK = 0
WHARF_ERR_INVALID = -1
WHARF_ERR_NOMEM = -2
WHARF_ERR_IO = -3
WHARF_ERR_NOT_FOUND = -4
WHARF_ERR_EXISTS = -5
WHARF_ERR_UNSUPPORTED = -6
WHARF_ERR_DECLINED = -7
WHARF_ERR_AUTH = -8
WHARF_ERR_TIMEOUT = -9
WHARF_ERR_TRANSPORT = -10
WHARF_ERR_CHECKSUM = -11
WHARF_ERR_PROTOCOL = -12
WHARF_ERR_HTTP = -13
WHARF_ERR_BUSY = -14
WHARF_ERR_RANGE = -15
WHARF_ERR_TOO_LARGE = -16
WHARF_ERR_NOT_EMPTY = -17
WHARF_ERR_CANCELED = -18
WHARF_ERR_PRECONDITION = -19
WHARF_ERR_INTERNAL = -20
STATUS_NAMES = {v: k for k, v in dict(globals()).items()
                if k.startswith("WHARF_") and isinstance(v, int) and v <= 0}

FALLBACK_FAIL, FALLBACK_HTTP = 0, 1
TRANSPORT_AUTO, TRANSPORT_RDMA, TRANSPORT_HTTP, TRANSPORT_NONE = 0, 1, 2, 3
MEM_HOST, MEM_CUDA = 0, 1
ST_MAX_DIMS = 64
ST_MAX_HEADER = 100000000
BATCH_MAX_KEYS = 1000  # WHARF_BATCH_MAX_KEYS
BATCH_MAX_OBJECT = 64 << 20  # WHARF_BATCH_MAX_OBJECT

c_char_p, c_void_p, c_size_t = ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t
c_u64, c_u32, c_i64, c_int, c_uint = (ctypes.c_uint64, ctypes.c_uint32, ctypes.c_int64,
                                      ctypes.c_int, ctypes.c_uint)


class ClientConfig(ctypes.Structure):
    _fields_ = [
        ("size", c_size_t), ("endpoint", c_char_p), ("access_key", c_char_p),
        ("secret_key", c_char_p), ("region", c_char_p), ("provider", c_char_p),
        ("unix_socket", c_char_p), ("concurrency", c_uint), ("chunk_size", c_u64),
        ("multipart_threshold", c_u64), ("part_size", c_u64), ("fallback", c_int),
        ("verify_checksum", c_int), ("timeout_ms", c_uint), ("max_retries", c_uint),
        ("ca_bundle", c_char_p), ("stall_timeout_ms", c_uint),
    ]


class CReport(ctypes.Structure):
    _fields_ = [
        ("size", c_size_t), ("status", c_int), ("transport", c_int), ("bytes", c_u64),
        ("requests", c_u32), ("retries", c_u32), ("fell_back", c_int),
        ("fallback_reason", ctypes.c_char * 256), ("wall_s", ctypes.c_double),
        ("first_byte_s", ctypes.c_double), ("crc64nvme", c_u64), ("etag", ctypes.c_char * 80),
        ("provider", ctypes.c_char * 32), ("version_id", ctypes.c_char * 128),
    ]


class XferOpts(ctypes.Structure):
    _fields_ = [("size", c_size_t), ("transport", c_int), ("verify_checksum", c_int),
                ("concurrency", c_uint), ("if_none_match", c_int), ("if_match", c_char_p),
                ("version_id", c_char_p), ("append", c_int), ("write_offset", c_u64)]


class CStat(ctypes.Structure):
    _fields_ = [
        ("size", c_size_t), ("length", c_u64), ("mtime", c_i64), ("etag", ctypes.c_char * 80),
        ("content_type", ctypes.c_char * 128), ("crc64nvme", c_u64), ("has_crc64nvme", c_int),
    ]


class CWindow(ctypes.Structure):
    _fields_ = [("offset", c_u64), ("length", c_u64), ("dst_off", c_u64)]


class CStats(ctypes.Structure):
    _fields_ = [
        ("size", c_size_t), ("rdma_ops", c_u64), ("rdma_bytes", c_u64), ("http_ops", c_u64),
        ("http_bytes", c_u64), ("fallbacks", c_u64), ("declines", c_u64), ("retries", c_u64),
        ("checksum_failures", c_u64),
    ]


class CBatchEntry(ctypes.Structure):
    _fields_ = [
        ("size", c_size_t), ("key", c_char_p), ("offset", c_u64), ("length", c_u64),
        ("if_none_match", c_int), ("status", c_int), ("bytes", c_u64), ("crc64nvme", c_u64),
        ("code", ctypes.c_char * 48), ("etag", ctypes.c_char * 80),
        ("message", ctypes.c_char * 208),
    ]


LIST_CB = ctypes.CFUNCTYPE(c_int, c_void_p, c_char_p, c_u64, c_i64, c_char_p)

# name: (restype, argtypes). Optional symbols (missing in an older library) are bound lazily.
_SIGS = {
    "wharf_status_str": (c_char_p, [c_int]),
    "wharf_last_error": (c_char_p, []),
    "wharf_version": (c_char_p, []),
    "wharf_client_config_init": (None, [ctypes.POINTER(ClientConfig), c_size_t]),
    "wharf_client_create": (c_int, [ctypes.POINTER(ClientConfig), ctypes.POINTER(c_void_p)]),
    "wharf_client_destroy": (None, [c_void_p]),
    "wharf_client_provider": (c_char_p, [c_void_p]),
    "wharf_endpoint_unix_socket": (c_int, [c_char_p, c_char_p, c_char_p, c_size_t]),
    "wharf_mem_register": (c_int, [c_void_p, c_void_p, c_size_t, c_int,
                                   ctypes.POINTER(c_void_p)]),
    "wharf_mem_deregister": (None, [c_void_p]),
    "wharf_report_init": (None, [ctypes.POINTER(CReport), c_size_t]),
    "wharf_xfer_opts_init": (None, [ctypes.POINTER(XferOpts), c_size_t]),
    "wharf_object_get": (c_int, [c_void_p, c_char_p, c_char_p, c_void_p, c_u64, c_u64, c_u64,
                                 ctypes.POINTER(XferOpts), ctypes.POINTER(CReport)]),
    "wharf_object_get_scatter": (c_int, [c_void_p, c_char_p, c_char_p, c_void_p, c_u64,
                                         ctypes.POINTER(CWindow), c_size_t,
                                         ctypes.POINTER(c_u64),
                                         ctypes.POINTER(XferOpts), ctypes.POINTER(CReport)]),
    "wharf_object_put": (c_int, [c_void_p, c_char_p, c_char_p, c_void_p, c_u64,
                                 ctypes.POINTER(XferOpts), ctypes.POINTER(CReport)]),
    "wharf_stat_init": (None, [ctypes.POINTER(CStat), c_size_t]),
    "wharf_object_stat": (c_int, [c_void_p, c_char_p, c_char_p, ctypes.POINTER(CStat)]),
    "wharf_object_stat_version": (c_int, [c_void_p, c_char_p, c_char_p, c_char_p,
                                          ctypes.POINTER(CStat)]),
    "wharf_object_delete": (c_int, [c_void_p, c_char_p, c_char_p]),
    "wharf_object_list": (c_int, [c_void_p, c_char_p, c_char_p, LIST_CB, c_void_p]),
    "wharf_bucket_create": (c_int, [c_void_p, c_char_p]),
    "wharf_bucket_delete": (c_int, [c_void_p, c_char_p]),
    "wharf_bucket_list": (c_int, [c_void_p, LIST_CB, c_void_p]),
    "wharf_admin_cluster": (c_int, [c_void_p, c_int, c_char_p, c_size_t,
                                    ctypes.POINTER(c_size_t)]),
    "wharf_batch_entry_init": (None, [ctypes.POINTER(CBatchEntry), c_size_t]),
    "wharf_batch_get": (c_int, [c_void_p, c_char_p, c_void_p, c_u64, ctypes.POINTER(CBatchEntry),
                                c_size_t, ctypes.POINTER(XferOpts), ctypes.POINTER(CReport)]),
    "wharf_batch_put": (c_int, [c_void_p, c_char_p, c_void_p, c_u64, ctypes.POINTER(CBatchEntry),
                                c_size_t, ctypes.POINTER(XferOpts), ctypes.POINTER(CReport)]),
    "wharf_stats_init": (None, [ctypes.POINTER(CStats), c_size_t]),
    "wharf_client_stats": (c_int, [c_void_p, ctypes.POINTER(CStats)]),
    # safetensors headers
    "wharf_st_header_len": (c_int, [c_void_p, c_u64, ctypes.POINTER(c_u64)]),
    "wharf_st_parse": (c_int, [c_void_p, c_size_t, c_u64, ctypes.POINTER(c_void_p)]),
    "wharf_st_count": (c_size_t, [c_void_p]),
    "wharf_st_data_offset": (c_u64, [c_void_p]),
    "wharf_st_data_len": (c_u64, [c_void_p]),
    "wharf_st_tensor": (c_int, [c_void_p, c_size_t, ctypes.POINTER(c_char_p),
                                ctypes.POINTER(c_char_p), ctypes.POINTER(c_u32),
                                ctypes.POINTER(c_u64), c_u32, ctypes.POINTER(c_u64),
                                ctypes.POINTER(c_u64)]),
    "wharf_st_metadata_json": (c_char_p, [c_void_p]),
    "wharf_st_dtype_bits": (c_uint, [c_char_p]),
    "wharf_st_free": (None, [c_void_p]),
}


BUNDLE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_libs")
PREFER_HOST = ("libibverbs.so.1", "librdmacm.so.1", "libefa.so.1")


def _prefer_host_rdma() -> None:
    """Loads the host's rdma-core libraries (global, by soname) where it has them, so that
    the bundled libfabric uses them rather than the copies beside it. Libraries the host lacks
    are left to the bundled copies."""
    for so in PREFER_HOST:
        try:
            ctypes.CDLL(so, mode=ctypes.RTLD_GLOBAL)
        except OSError:
            if so == PREFER_HOST[0]:
                return  # no host libibverbs: the bundled set, all of it


def _candidates() -> Iterator[str]:
    env = os.environ.get("WHARF_LIB")
    if env:
        yield env
        return
    bundled = os.path.join(BUNDLE_DIR, "libwharf.so.0")
    if os.path.exists(bundled):
        _prefer_host_rdma()
        yield bundled
    bd = os.environ.get("WHARF_BUILD_DIR")
    if bd:
        yield os.path.join(bd, "libwharf.so")
    here = os.path.dirname(os.path.abspath(__file__))
    yield os.path.normpath(os.path.join(here, "..", "..", "build", "libwharf.so"))
    found = ctypes.util.find_library("wharf")
    if found:
        yield found


class _Lib:
    """The loaded library, bound on first use (importing wharf never fails for lack of it)."""

    def __init__(self) -> None:
        self._dll: Optional[ctypes.CDLL] = None
        self._lock = threading.Lock()
        self.path: Optional[str] = None

    def _load(self) -> ctypes.CDLL:
        with self._lock:
            if self._dll is not None:
                return self._dll
            tried = []
            for cand in _candidates():
                if os.path.sep in cand and not os.path.exists(cand):
                    tried.append(f"{cand} (missing)")
                    continue
                try:
                    dll = ctypes.CDLL(cand)
                except OSError as e:
                    tried.append(f"{cand} ({e})")
                    continue
                self.path = cand
                self._dll = dll
                return dll
            raise OSError("libwharf not found; tried: " + "; ".join(tried or ["nothing"]) +
                          ". Build it (cmake --build build) or set WHARF_LIB to the .so path "
                          "or WHARF_BUILD_DIR to the build directory")

    def __getattr__(self, name: str) -> Any:
        if name not in _SIGS:
            raise AttributeError(name)
        dll = self._load()
        try:
            fn = getattr(dll, name)
        except AttributeError:
            raise OSError(f"{self.path} has no symbol {name}: the library is older than this "
                          f"Python package; rebuild libwharf") from None
        fn.restype, fn.argtypes = _SIGS[name]
        setattr(self, name, fn)
        return fn


lib = _Lib()


def last_error() -> str:
    msg = lib.wharf_last_error()
    return str(msg.decode("utf-8", "replace")) if msg else ""


def status_str(st: int) -> str:
    s = lib.wharf_status_str(st)
    return str(s.decode()) if s else STATUS_NAMES.get(st, str(st))
