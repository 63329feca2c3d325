# SPDX-License-Identifier: Apache-2.0
"""Crash and shutdown behaviour of a real wharfd.

- kill -9 in the middle of a large PUT, restart on the same data directory: the partial object
  is absent, objects acknowledged before the crash are intact, no temp file is left.
- SIGTERM while a GET is streaming or a PUT body is arriving: the request completes, then
  wharfd exits 0.
- --durability disk (the default) syncs each object's file before the reply, memory does not
  (strace counts the syncs) and survives a kill -9 all the same; /metrics names the mode.
"""
import hashlib
import os
import signal
import socket
import time

from s3raw import S3Raw
from wharfd import WharfServer, assert_start_refused, md5_hex, unique_bucket, wait_until

MIB = 1024 * 1024


def _put(raw, path, body):
    r = raw.request("PUT", path, body=body)
    assert r.status == 200, r
    return r


def _grown_file(srv, before, size):
    """A file that appeared under the data directory since before and holds size bytes or
    more (a write's temp file), or None."""
    for rel in srv.data_files() - before:
        try:
            if os.path.getsize(os.path.join(srv.data_dir, rel)) >= size:
                return rel
        except OSError:
            pass
    return None


def _read_headers(sock, deadline):
    buf = b""
    while b"\r\n\r\n" not in buf:
        assert time.monotonic() < deadline, "no response headers in time"
        chunk = sock.recv(65536)
        assert chunk, f"connection closed before headers: {buf[:200]!r}"
        buf += chunk
    head, _, rest = buf.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    return status, headers, rest


def test_kill9_mid_put_then_restart(fresh_wharfd):
    srv = fresh_wharfd
    raw = S3Raw(srv.endpoint)
    bucket = unique_bucket("dur")
    assert raw.request("PUT", f"/{bucket}").status == 200
    earlier = {"small": os.urandom(1000), "dir/medium": os.urandom(3 * MIB + 5),
               "empty": b""}
    for k, v in earlier.items():
        _put(raw, f"/{bucket}/{k}", v)
    before = srv.data_files()

    # A 256 MiB PUT of which 48 MiB arrive, then the server dies without warning.
    total, sent = 256 * MIB, 48 * MIB
    sock = raw.open_socket("PUT", f"/{bucket}/partial", total)
    block = os.urandom(MIB)
    try:
        for _ in range(sent // MIB):
            sock.sendall(block)
        # Wait (bounded) until the upload's temp file under the data dir holds some MiB, so the
        # crash leaves a real leftover for start-up to clean (store.h: temp files live under
        # DIR; if that ever changes, this wait must look where they went).
        temp = wait_until(lambda: _grown_file(srv, before, 8 * MIB), timeout=10)
        srv.proc.send_signal(signal.SIGKILL)
        srv.proc.wait(timeout=10)
    finally:
        sock.close()
    assert temp, f"no temp file grew under {srv.data_dir} during the PUT"
    assert os.path.exists(os.path.join(srv.data_dir, temp))  # still there after the crash

    again = WharfServer(data_dir=srv.data_dir)
    again.start()
    try:
        raw2 = S3Raw(again.endpoint)
        assert raw2.request("HEAD", f"/{bucket}/partial").status == 404
        r = raw2.request("GET", f"/{bucket}", query=[("list-type", "2")])
        assert r.status == 200, r
        assert b"partial" not in r.body
        for k, v in earlier.items():
            g = raw2.request("GET", f"/{bucket}/{k}")
            assert g.status == 200 and g.body == v, (k, g)
            assert g.headers["etag"] == f'"{md5_hex(v)}"'
        # Start-up cleaned the leftovers: the same files as before the crashed PUT.
        after = again.data_files()
        assert after == before, \
            f"left over: {sorted(after - before)}, lost: {sorted(before - after)}"
        # And it still takes writes.
        _put(raw2, f"/{bucket}/partial", b"now complete")
        assert raw2.request("GET", f"/{bucket}/partial").body == b"now complete"
    finally:
        rc = again.stop()
    assert rc == 0, again.log_tail()


def test_sigterm_lets_inflight_get_finish(fresh_wharfd):
    srv = fresh_wharfd
    raw = S3Raw(srv.endpoint)
    bucket = unique_bucket("term")
    assert raw.request("PUT", f"/{bucket}").status == 200
    size = 64 * MIB
    data = os.urandom(size)
    _put(raw, f"/{bucket}/obj", data)
    want = hashlib.md5(data).hexdigest()
    del data

    h, _ = raw.sign_headers("GET", f"/{bucket}/obj")
    h.pop("host")
    req = f"GET /{bucket}/obj HTTP/1.1\r\nHost: {raw.netloc}\r\n" + \
        "".join(f"{k}: {v}\r\n" for k, v in h.items()) + "\r\n"
    # A small receive buffer keeps most of the object on the server's side of the socket.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    sock.settimeout(20)
    sock.connect(("127.0.0.1", srv.port))
    deadline = time.monotonic() + 60
    try:
        sock.sendall(req.encode())
        status, headers, rest = _read_headers(sock, deadline)
        assert status == 200, (status, rest[:300])
        assert int(headers["content-length"]) == size
        md5 = hashlib.md5(rest)
        got = len(rest)
        while got < MIB:
            chunk = sock.recv(65536)
            assert chunk
            md5.update(chunk)
            got += len(chunk)

        srv.proc.send_signal(signal.SIGTERM)
        time.sleep(0.5)
        assert srv.proc.poll() is None, "wharfd exited with a GET still in flight"

        while got < size:
            assert time.monotonic() < deadline, f"GET stalled at {got} of {size} bytes"
            chunk = sock.recv(1 << 20)
            assert chunk, f"connection closed at {got} of {size} bytes"
            md5.update(chunk)
            got += len(chunk)
        assert got == size and md5.hexdigest() == want
    finally:
        sock.close()
    rc = srv.proc.wait(timeout=20)
    assert rc == 0, srv.log_tail()
    # Restarted on the same directory, the object is there.
    again = WharfServer(data_dir=srv.data_dir)
    again.start()
    try:
        r = S3Raw(again.endpoint).request("HEAD", f"/{bucket}/obj")
        assert r.status == 200 and int(r.headers["content-length"]) == size
    finally:
        assert again.stop() == 0


def test_kill9_after_ack_keeps_objects(fresh_wharfd):
    """Writes acknowledged just before a kill -9 survive it (fsync and the metadata commit
    happen before the 200): new objects, an overwrite and a delete."""
    srv = fresh_wharfd
    raw = S3Raw(srv.endpoint)
    bucket = unique_bucket("ack")
    assert raw.request("PUT", f"/{bucket}").status == 200
    objs = {f"k{i}": os.urandom(100_000 + i) for i in range(5)}
    for k, v in objs.items():
        _put(raw, f"/{bucket}/{k}", v)
    objs["k0"] = b"overwritten"
    _put(raw, f"/{bucket}/k0", objs["k0"])
    assert raw.request("DELETE", f"/{bucket}/k4").status == 204
    del objs["k4"]
    srv.kill()
    again = WharfServer(data_dir=srv.data_dir)
    again.start()
    try:
        raw2 = S3Raw(again.endpoint)
        for k, v in objs.items():
            g = raw2.request("GET", f"/{bucket}/{k}")
            assert g.status == 200 and g.body == v, k
        assert raw2.request("HEAD", f"/{bucket}/k4").status == 404
    finally:
        assert again.stop() == 0


def test_sigterm_lets_inflight_put_finish(fresh_wharfd):
    """SIGTERM while a PUT body is half sent: the PUT completes and is stored, then wharfd
    exits 0; a restart on the same directory serves the object."""
    srv = fresh_wharfd
    raw = S3Raw(srv.endpoint)
    bucket = unique_bucket("termput")
    assert raw.request("PUT", f"/{bucket}").status == 200
    size = 32 * MIB
    block = os.urandom(MIB)
    want = hashlib.md5(block * (size // MIB)).hexdigest()
    sock = raw.open_socket("PUT", f"/{bucket}/obj", size)
    deadline = time.monotonic() + 60
    try:
        for _ in range(size // MIB // 2):
            sock.sendall(block)
        srv.proc.send_signal(signal.SIGTERM)
        time.sleep(0.5)
        assert srv.proc.poll() is None, "wharfd exited with a PUT still in flight"
        for _ in range(size // MIB // 2):
            sock.sendall(block)
        status, headers, _ = _read_headers(sock, deadline)
        assert status == 200, (status, headers)
        assert headers["etag"] == f'"{want}"'
    finally:
        sock.close()
    assert srv.proc.wait(timeout=20) == 0, srv.log_tail()
    again = WharfServer(data_dir=srv.data_dir)
    again.start()
    try:
        r = S3Raw(again.endpoint).request("HEAD", f"/{bucket}/obj")
        assert r.status == 200 and r.headers["etag"] == f'"{want}"', r
    finally:
        assert again.stop() == 0


def _children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def _running(pid):
    """pid exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _synced_object_files(mode, tmp_path):
    """Runs a wharfd with --durability mode under strace, PUTs two objects, and returns how many
    fsync/fdatasync calls named a file of DIR/tmp (the objects' files before their rename), and
    the server's wharf_storage_durability series."""
    trace = tmp_path / f"strace-{mode}"
    srv = WharfServer(extra_args=["--durability", mode],
                      prefix=["strace", "-f", "-y", "-e", "trace=fsync,fdatasync", "-o", str(trace)])
    srv.start(timeout=60)
    try:
        raw = S3Raw(srv.endpoint)
        bucket = unique_bucket("dur")
        assert raw.request("PUT", f"/{bucket}").status == 200
        data = os.urandom(300_000)
        _put(raw, f"/{bucket}/a", data)
        _put(raw, f"/{bucket}/b", data)
        m = srv.metrics()
        modes = {k: m.get(f'wharf_storage_durability{{mode="{k}"}}') for k in ("disk", "memory")}
        g = raw.request("GET", f"/{bucket}/a")
        assert g.status == 200 and g.body == data
    finally:
        # SIGTERM to strace would detach wharfd and leave it running: stop wharfd itself
        # first (strace's child), then strace, which exits with it.
        kids = _children(srv.proc.pid) if srv.proc else []
        for k in kids:
            os.kill(k, signal.SIGTERM)
        wait_until(lambda: not any(os.path.exists(f"/proc/{k}") and _running(k) for k in kids),
                   timeout=30)
        srv.stop(timeout=60)  # strace's own exit status, not wharfd's
    tmpdir = os.path.join(srv.data_dir, "tmp") + "/"
    calls = [ln for ln in trace.read_text().splitlines() if tmpdir in ln]
    srv.cleanup()
    return len(calls), modes


def test_durability_disk_syncs_each_object_memory_does_not(tmp_path):
    """--durability disk (the default) syncs each object's file before the reply;
    --durability memory leaves it to writeback; /metrics says which mode runs; a bad value
    stops wharfd at start."""
    n, modes = _synced_object_files("disk", tmp_path)
    assert n >= 2, n
    assert modes == {"disk": 1, "memory": 0}, modes
    n, modes = _synced_object_files("memory", tmp_path)
    assert n == 0, n
    assert modes == {"disk": 0, "memory": 1}, modes
    assert_start_refused(["--durability", "never"], "--durability wants disk or memory, got 'never'")


def test_durability_memory_survives_kill9(tmp_path):
    """--durability memory: an acknowledged object survives a crash of wharfd (the page cache
    holds it; only a host crash could lose it)."""
    srv = WharfServer(extra_args=["--durability", "memory"])
    srv.start()
    try:
        raw = S3Raw(srv.endpoint)
        bucket = unique_bucket("dur")
        assert raw.request("PUT", f"/{bucket}").status == 200
        data = os.urandom(2 * MIB + 5)
        _put(raw, f"/{bucket}/k", data)
        srv.kill()
        srv.start()
        g = S3Raw(srv.endpoint).request("GET", f"/{bucket}/k")
        assert g.status == 200 and g.body == data
    finally:
        srv.cleanup()


def test_kill9_mid_positional_rdma_put_then_restart(fresh_wharfd, tmp_path):
    """The positional RDMA PUT (copy threads writing at their offsets): objects it acknowledged
    survive a kill -9 byte for byte, and one killed in the middle leaves no object and no temp
    file after the restart. Over ofi+shm by the C CLI (it runs under ASan too)."""
    import subprocess
    from wharfd import build_dir
    srv = fresh_wharfd
    cli = os.path.join(build_dir(), "wharf")

    def wharf(*args, wait=True):
        cmd = [cli, "--quiet", *args]
        if not wait:
            return subprocess.Popen(cmd, env=srv.client_env(), stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
        p = subprocess.run(cmd, env=srv.client_env(), capture_output=True, text=True,
                           timeout=120)
        assert p.returncode == 0, (args, p.stdout, p.stderr)

    bucket = unique_bucket("durpos")
    wharf("--provider", "none", "mb", f"s3://{bucket}")
    acked = {}
    for i in range(3):
        data = os.urandom((24 << 20) + 4097 * i)
        f = tmp_path / f"o{i}"
        f.write_bytes(data)
        wharf("--provider", "ofi+shm", "cp", "--transport", "rdma", str(f), f"s3://{bucket}/o{i}")
        acked[f"o{i}"] = data
    m = srv.metrics()
    assert m['wharf_rdma_put_positional_total{unit="requests"}'] == 3, m
    before = srv.data_files()
    big = tmp_path / "big"
    big.write_bytes(os.urandom(768 << 20))
    p = wharf("--provider", "ofi+shm", "cp", "--transport", "rdma", str(big),
              f"s3://{bucket}/partial", wait=False)
    try:
        temp = wait_until(lambda: _grown_file(srv, before, 32 * MIB), timeout=30)
        srv.proc.send_signal(signal.SIGKILL)
        srv.proc.wait(timeout=10)
    finally:
        p.wait(timeout=60)
    assert temp, "no temp file grew during the positional PUT"
    assert p.returncode != 0  # never acknowledged
    again = WharfServer(data_dir=srv.data_dir)
    again.start()
    try:
        raw = S3Raw(again.endpoint)
        assert raw.request("HEAD", f"/{bucket}/partial").status == 404
        for k, v in acked.items():
            g = raw.request("GET", f"/{bucket}/{k}")
            assert g.status == 200 and g.body == v, k
        after = again.data_files()
        assert after == before, \
            f"left over: {sorted(after - before)}, lost: {sorted(before - after)}"
    finally:
        rc = again.stop()
    assert rc == 0, again.log_tail()
