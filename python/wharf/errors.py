"""Exceptions. Every error from the C library carries its status and its message
(wharf_last_error()), which says what failed and what to do."""
from . import _lib


class WharfError(Exception):
    """A failed libwharf call. .status is the wharf_status_t value (negative), .status_name its
    name ("WHARF_ERR_NOT_FOUND"), .message the library's message, .report the operation's
    Report when there was one."""

    def __init__(self, status, message, report=None):
        self.status = int(status)
        self.status_name = _lib.STATUS_NAMES.get(self.status, f"status {self.status}")
        self.message = message
        self.report = report
        super().__init__(f"{message} [{self.status_name}]" if message else self.status_name)


class NotFoundError(WharfError):
    """No such bucket or key (404)."""


class DeclinedError(WharfError):
    """The server declined RDMA and the fallback policy is "fail"."""


class AuthError(WharfError):
    """403: bad credentials, signature or clock."""


class ChecksumError(WharfError):
    """The bytes landed (or a tensor loaded with verify=True) do not match their checksum."""


class PreconditionFailedError(WharfError):
    """412: a conditional write (if_none_match / if_match) found the key in another state, so
    nothing was stored: another writer got there first."""


class CheckpointConflictError(PreconditionFailedError):
    """Another writer committed a checkpoint at the same URL while this save ran: the
    commit point (index or .metadata) is written conditionally, so this save's commit was
    refused and the other writer's checkpoint stands, whole."""


class SafetensorsError(WharfError):
    """A malformed safetensors header or index (the message names the tensor and field)."""


class IncompleteCheckpointError(WharfError):
    """A checkpoint whose index was never written: the save did not finish."""


class ConfigError(WharfError):
    """No endpoint or credentials: the message names the variables to set."""


class MissingDependencyError(WharfError, ImportError):
    """An optional package (torch.distributed.checkpoint, lightning, transformers) is missing
    or too old: the message names it and the version needed."""

    def __init__(self, message):
        WharfError.__init__(self, _lib.WHARF_ERR_UNSUPPORTED, message)


_BY_STATUS = {
    _lib.WHARF_ERR_NOT_FOUND: NotFoundError,
    _lib.WHARF_ERR_DECLINED: DeclinedError,
    _lib.WHARF_ERR_AUTH: AuthError,
    _lib.WHARF_ERR_CHECKSUM: ChecksumError,
    _lib.WHARF_ERR_PRECONDITION: PreconditionFailedError,
}


def from_status(status, what=None, report=None, cls=None):
    """The exception for a failed call, with the calling thread's wharf_last_error()."""
    msg = _lib.last_error() or _lib.status_str(status)
    if what:
        msg = f"{what}: {msg}"
    return (cls or _BY_STATUS.get(status, WharfError))(status, msg, report)


def check(status, what=None, report=None, cls=None):
    if status != _lib.OK:
        raise from_status(status, what, report, cls)
