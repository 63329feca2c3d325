# SPDX-License-Identifier: Apache-2.0
"""Errors travel: every WharfError subclass survives pickle with its type, status, message and
report (so a failure in a DataLoader worker or a process pool reaches the parent as itself),
and the ones with a built-in meaning are that built-in too (FileNotFoundError,
ConnectionError, TimeoutError), from real failures against a real wharfd and a dead port."""
import concurrent.futures
import errno
import multiprocessing
import pickle
import socket

import pytest

import wharf
import wharf.config
import wharf.errors
from conftest import make_client
from wharfd import free_port, unique_bucket
import mp_worker


def _all_subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _all_subclasses(sub)


def _instance(cls):
    try:
        return cls(-4, "what failed and what to do")
    except TypeError:
        return cls("what failed and what to do")


def test_every_subclass_round_trips_through_pickle():
    import wharf.torch  # noqa: F401  (its modules may define subclasses too)
    classes = [wharf.WharfError] + list(_all_subclasses(wharf.WharfError))
    assert {wharf.NotFoundError, wharf.config.UrlError, wharf.MissingDependencyError,
            wharf.errors.CheckpointConflictError, wharf.TransportError,
            wharf.TimedOutError} <= set(classes)
    for cls in classes:
        e = _instance(cls)
        e.report = wharf.Report(status=e.status, transport="http", bytes=3, requests=1,
                                retries=0, fell_back=False, reason="", wall_s=0.1,
                                first_byte_s=0.01, crc64nvme=7, etag="e", provider="")
        for proto in range(2, pickle.HIGHEST_PROTOCOL + 1):
            back = pickle.loads(pickle.dumps(e, protocol=proto))
            assert type(back) is cls
            assert (back.status, back.status_name, back.message, str(back)) == \
                (e.status, e.status_name, e.message, str(e))
            assert back.report == e.report
            assert back.args == e.args


def test_builtin_bases():
    nf = wharf.NotFoundError(wharf._lib.WHARF_ERR_NOT_FOUND, "GET b/k: no such key")
    assert isinstance(nf, FileNotFoundError) and nf.errno == errno.ENOENT
    assert str(nf) == "GET b/k: no such key [WHARF_ERR_NOT_FOUND]"
    assert isinstance(wharf.TransportError(-10, "x"), ConnectionError)
    to = wharf.TimedOutError(-9, "x")
    assert isinstance(to, TimeoutError) and to.errno == errno.ETIMEDOUT
    assert isinstance(pickle.loads(pickle.dumps(nf)), FileNotFoundError)
    for cls in (wharf.NotFoundError, wharf.TransportError, wharf.TimedOutError):
        assert issubclass(cls, wharf.WharfError)


def test_real_not_found_is_a_file_not_found_error(http_client):
    b = unique_bucket("err")
    http_client.create_bucket(b)
    with pytest.raises(FileNotFoundError) as ei:
        http_client.get(b, "missing")
    e = ei.value
    assert type(e) is wharf.NotFoundError and "missing" in str(e)
    back = pickle.loads(pickle.dumps(e))
    assert type(back) is wharf.NotFoundError and back.message == e.message


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_error_raised_in_a_worker_reaches_the_parent(wharfd, method):
    b = unique_bucket("errw")
    c = make_client(wharfd, "http")
    c.create_bucket(b)
    ctx = multiprocessing.get_context(method)
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=ctx) as ex:
        with pytest.raises(wharf.NotFoundError) as ei:
            ex.submit(mp_worker.get_missing, c.config, b).result(timeout=120)
        assert ei.value.status == wharf._lib.WHARF_ERR_NOT_FOUND
        assert "no-such-key" in ei.value.message
        with pytest.raises(wharf.config.UrlError, match="bad"):
            ex.submit(mp_worker.raise_error,
                      (wharf.config.UrlError, (-1, "bad URL"))).result(timeout=120)
    c.close()


def test_refused_connection_is_a_connection_error():
    port = free_port()  # nothing listens there
    c = wharf.Client(f"http://127.0.0.1:{port}", "ak", "sk", max_retries=0)
    with pytest.raises(ConnectionError) as ei:
        c.list_buckets()
    assert type(ei.value) is wharf.TransportError
    assert ei.value.status == wharf._lib.WHARF_ERR_TRANSPORT
    c.close()


def test_silent_server_is_a_timeout_error():
    # a listener that never accepts: the connection completes in the backlog and no answer
    # ever comes, so the client's timeout is what ends the call
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    try:
        c = wharf.Client(f"http://127.0.0.1:{s.getsockname()[1]}", "ak", "sk",
                         timeout_ms=300, max_retries=0)
        with pytest.raises(TimeoutError) as ei:
            c.list_buckets()
        assert type(ei.value) is wharf.TimedOutError and ei.value.errno == errno.ETIMEDOUT
        c.close()
    finally:
        s.close()
