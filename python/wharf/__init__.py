# SPDX-License-Identifier: Apache-2.0
"""wharf: Python bindings of libwharf (the wharf S3-over-RDMA client), through ctypes over the
public C ABI only.

    import wharf
    c = wharf.Client("http://127.0.0.1:9000", "ak", "sk", provider="ofi+shm",
                     unix_socket="/data/wharfd.sock")
    rep = c.get_into("bucket", "key", numpy_array_or_tensor)   # a Report: transport, bytes...

wharf.torch (imported separately: it needs torch) has checkpoints, Hugging Face weights,
datasets and (wharf.torch.dcp) torch.distributed.checkpoint storage; wharf.lightning a
Lightning CheckpointIO. Every entry point takes s3://bucket/key URLs; credentials come from
the environment as wharf.config says.
"""
import os as _os

from ._lib import WHOLE, lib as _lib_handle
from ._version import __version__
from .client import Client, ObjectInfo, Registration, Report, Stat, client_from_env
from .config import parse_url, settings_from_env
from .reader import ObjectReader, open_object
from .errors import (AuthError, CheckpointChangedError, CheckpointConflictError, ChecksumError,
                     ConfigError, DeclinedError,
                     IncompleteCheckpointError, MissingDependencyError, NotFoundError,
                     PreconditionFailedError, SafetensorsError, TimedOutError, TransportError,
                     WharfError)


if _os.environ.get("WHARF_FSSPEC_S3") == "1":  # s3:// through wharf.fsspec (its doc says)
    try:
        from . import fsspec  # noqa: F401  (registers wharf:// and s3://)
    except ImportError:  # no fsspec installed: nothing to register with
        pass


def library_version() -> str:
    """libwharf's version string (loads the library)."""
    return str(_lib_handle.wharf_version().decode())


def library_path() -> str:
    """Path of the libwharf loaded (loads it)."""
    _lib_handle._load()
    return str(_lib_handle.path)


__all__ = ["Client", "Report", "Stat", "ObjectInfo", "Registration", "WharfError",
           "NotFoundError", "TransportError", "TimedOutError", "PreconditionFailedError",
           "DeclinedError", "AuthError", "ChecksumError", "SafetensorsError",
           "IncompleteCheckpointError", "CheckpointChangedError", "CheckpointConflictError",
           "ConfigError", "MissingDependencyError",
           "client_from_env", "parse_url", "settings_from_env", "library_version", "library_path",
           "WHOLE", "ObjectReader", "open_object"]
