# SPDX-License-Identifier: Apache-2.0
"""Exceptions. Every error from the C library carries its status and its message
(wharf_last_error()), which says what failed and what to do.

Every WharfError pickles with its type, status, message and report, so an error raised in a
ProcessPoolExecutor reaches the parent as itself. Every class can also be built from one
message, cls("text") (its status then the class's own), which is how torch's DataLoader
rebuilds an error raised in a worker (torch._utils.ExceptionWrapper: exc_type(msg)): it
reaches the parent as the same class, its message the worker's traceback. Some are also the
built-in exception a caller already catches: NotFoundError is a FileNotFoundError (errno
ENOENT), TransportError a ConnectionError, TimedOutError a TimeoutError (errno ETIMEDOUT).
"""
import builtins
import errno as _errno
from typing import Any, Dict, Optional, Type, Union

from . import _lib
from ._log import logger as _logger


def _rebuild(cls: "Type[WharfError]", status: int, message: str, report: Any,
             state: Dict[str, Any]) -> "WharfError":
    """Unpickles any WharfError subclass whatever its __init__ signature."""
    e = cls.__new__(cls)
    WharfError._setup(e, status, message, report)
    e.__dict__.update(state)
    return e


class WharfError(Exception):
    """A failed libwharf call. .status is the wharf_status_t value (negative), .status_name its
    name ("WHARF_ERR_NOT_FOUND"), .message the library's message, .report the operation's
    Report when there was one."""

    status: int
    status_name: str
    message: str
    report: Any
    _errno: Optional[int] = None  # errno of the OSError this class also is
    _status: int = _lib.WHARF_ERR_INTERNAL  # the status of cls("message")

    def __init__(self, status: "Union[int, str]", message: Optional[str] = None,
                 report: Any = None) -> None:
        if isinstance(status, str):  # cls("message")
            self._setup(self._status, status if message is None else message, report)
            return
        self._setup(int(status), "" if message is None else message, report)

    def _setup(self, status: int, message: str, report: Any) -> None:
        self.status = int(status)
        self.status_name = _lib.STATUS_NAMES.get(self.status, f"status {self.status}")
        self.message = message
        self.report = report
        text = f"{message} [{self.status_name}]" if message else self.status_name
        # the next base's __init__ (Exception, OSError, ImportError) with one argument, so
        # that str() is the text
        super(WharfError, self).__init__(text)
        if self._errno is not None:
            self.errno = self._errno  # strerror stays None, so str() is still the text

    def __reduce__(self) -> Any:
        state = {k: v for k, v in self.__dict__.items()
                 if k not in ("status", "status_name", "message", "report")}
        return (_rebuild, (type(self), self.status, self.message, self.report, state))


class NotFoundError(WharfError, FileNotFoundError):
    """No such bucket or key (404). Also a FileNotFoundError (errno ENOENT), as fsspec and
    open() callers expect."""
    _status = _lib.WHARF_ERR_NOT_FOUND
    _errno = _errno.ENOENT


class TransportError(WharfError, ConnectionError):
    """The connection or the data path failed (refused, reset, fabric error). Also a
    ConnectionError."""
    _status = _lib.WHARF_ERR_TRANSPORT


class TimedOutError(WharfError, builtins.TimeoutError):
    """The operation ran past the client's timeout_ms. Also a TimeoutError (errno
    ETIMEDOUT)."""
    _status = _lib.WHARF_ERR_TIMEOUT
    _errno = _errno.ETIMEDOUT


class DeclinedError(WharfError):
    """The server declined RDMA and the fallback policy is "fail"."""
    _status = _lib.WHARF_ERR_DECLINED


class AuthError(WharfError):
    """403: bad credentials, signature or clock."""
    _status = _lib.WHARF_ERR_AUTH


class ChecksumError(WharfError):
    """The bytes landed (or a tensor loaded with verify=True) do not match their checksum."""
    _status = _lib.WHARF_ERR_CHECKSUM


class PreconditionFailedError(WharfError):
    """412: a conditional write (if_none_match / if_match) found the key in another state, so
    nothing was stored: another writer got there first."""
    _status = _lib.WHARF_ERR_PRECONDITION


class CheckpointConflictError(PreconditionFailedError):
    """Another writer committed a checkpoint at the same URL while this save ran: the
    commit point (index or .metadata) is written conditionally, so this save's commit was
    refused and the other writer's checkpoint stands, whole."""


class CheckpointChangedError(WharfError):
    """A load raced a save to the same URL: the checkpoint (or snapshot) was replaced while
    it was read, and still was on the load's restart. Nothing partial is returned; load again
    (or raise the writer's grace_s, docs/pytorch.md "Readers and an overwrite")."""
    _status = _lib.WHARF_ERR_PRECONDITION


class SafetensorsError(WharfError):
    """A malformed safetensors header or index (the message names the tensor and field)."""
    _status = _lib.WHARF_ERR_INVALID


class IncompleteCheckpointError(WharfError):
    """A checkpoint whose index was never written: the save did not finish."""
    _status = _lib.WHARF_ERR_NOT_FOUND


class ConfigError(WharfError):
    """No endpoint or credentials: the message names the variables to set."""
    _status = _lib.WHARF_ERR_INVALID


class MissingDependencyError(WharfError, ImportError):
    """An optional package (torch.distributed.checkpoint, lightning, transformers) is missing
    or too old: the message names it and the version needed."""

    _status = _lib.WHARF_ERR_UNSUPPORTED

    def __init__(self, message: str) -> None:
        WharfError.__init__(self, _lib.WHARF_ERR_UNSUPPORTED, message)


_BY_STATUS: Dict[int, Type[WharfError]] = {
    _lib.WHARF_ERR_NOT_FOUND: NotFoundError,
    _lib.WHARF_ERR_TRANSPORT: TransportError,
    _lib.WHARF_ERR_TIMEOUT: TimedOutError,
    _lib.WHARF_ERR_DECLINED: DeclinedError,
    _lib.WHARF_ERR_AUTH: AuthError,
    _lib.WHARF_ERR_CHECKSUM: ChecksumError,
    _lib.WHARF_ERR_PRECONDITION: PreconditionFailedError,
}


def from_status(status: int, what: Optional[str] = None, report: Any = None,
                cls: Optional[Type[WharfError]] = None) -> WharfError:
    """The exception for a failed call, with the calling thread's wharf_last_error()."""
    msg = _lib.last_error() or _lib.status_str(status)
    if what:
        msg = f"{what}: {msg}"
    make = cls if cls is not None else _BY_STATUS.get(status, WharfError)
    err = make(status, msg, report)
    _logger.debug("error %s status %s message \"%s\"", type(err).__name__, err.status_name, msg)
    return err


def check(status: int, what: Optional[str] = None, report: Any = None,
          cls: Optional[Type[WharfError]] = None) -> None:
    if status != _lib.OK:
        raise from_status(status, what, report, cls)
