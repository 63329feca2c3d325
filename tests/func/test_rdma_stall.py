# SPDX-License-Identifier: Apache-2.0
"""Stalled tcp clients against a real wharfd: they must not take the RDMA buffer pool away.

12 ofi+tcp client processes (tests/libwharf_c/stall.c) each start an RDMA GET of a 256 MiB object
and are stopped with SIGSTOP 20 ms after they start it. Their transfers then hold pool buffers
with ops in flight that the stopped clients never acknowledge. wharfd must:
- keep serving other clients meanwhile (tcp GET, tcp PUT, shm PUT): a client's first buffer
  is always there while fewer than an eighth of the pool's worth of clients stall at once;
- get every buffer back, with the stallers still stopped, within a bounded time: the
  inactivity timeout (10 s) + the reap time (2 s) + the replacement of the endpoint (the old one
  closes once its last request has ended), well inside BOUND_S;
- serve the stalled clients' endpoints again, and keep working after they are killed.
Before the fix the buffers never came back (every tcp GET and every RDMA PUT answered
"503 SlowDown: all 64 RDMA buffers are busy", even after the clients were killed).

And the other side of a transfer that ends unfinished (test_no_bytes_land_after_a_failed_get):
once libwharf has returned a failed ofi+tcp GET, nothing the server still sends for it may land
in the buffer the caller got back. tcp;ofi_rxm checks a write's key when its header arrives and
then copies its payload in later progress calls, so deregistering the buffer did not stop a
write already begun: in the 10-minute soak such bytes landed in buffers that other client
threads had mapped at the same addresses meanwhile (checksum mismatches on shm and HTTP GETs, a
BadDigest on an shm UploadPart, an object stored with 3.8 MB of another's bytes), and the
rejected writes that followed broke the client's connection, failing its next requests with
502 "Transport endpoint is not connected"."""
import os
import select
import signal
import subprocess
import time
import uuid

from wharfd import WharfServer, build_dir, wait_until

MiB = 1 << 20
STALLERS = 12
BIG = 256 * MiB
SMALL = 8 * MiB
BOUND_S = 45.0  # timeout 10 s + reap 2 s + a request still on the old endpoint (<= 10 s + 5 s)


def client_bin():
    return os.path.join(build_dir(), "tests", "client_stall")


def env_for(srv, provider):
    env = srv.client_env()
    env["WHARF_PROVIDER"] = provider
    if provider != "ofi+shm":
        env.pop("WHARF_UNIX_SOCKET", None)
    return env


def probe(srv, provider, bucket):
    p = subprocess.run([client_bin(), "probe", bucket, "small", str(SMALL)],
                       env=env_for(srv, provider), capture_output=True, text=True, timeout=120)
    return p.returncode == 0 and p.stdout.rstrip().endswith("OK"), p.stdout + p.stderr


def pool(srv):
    m = srv.metrics()
    return (m.get('wharf_rdma_pool_buffers{state="free"}'),
            m.get('wharf_rdma_pool_buffers{state="total"}'))


def start_stallers(srv, bucket):
    """Starts the GETs; each is stopped 20 ms after it says GO. Returns the processes."""
    procs = []
    for _ in range(STALLERS):
        procs.append(subprocess.Popen([client_bin(), "get", bucket, "big", str(BIG)],
                                      env=env_for(srv, "ofi+tcp"), stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True))
    pending = {p.stdout.fileno(): p for p in procs}
    deadline = time.monotonic() + 60
    while pending and time.monotonic() < deadline:
        ready, _, _ = select.select(list(pending), [], [], 1.0)
        for fd in ready:
            p = pending[fd]
            line = p.stdout.readline()
            if line.strip() == "GO":
                time.sleep(0.02)
                p.send_signal(signal.SIGSTOP)
                del pending[fd]
            elif not line:
                del pending[fd]
                raise AssertionError(f"a stalling client exited early: {p.wait(10)}")
    assert not pending, "stalling clients never got ready"
    return procs


def test_stalled_tcp_clients_release_the_pool():
    # 256 MiB: the pool of the original report (64 buffers of 4 MiB).
    srv = WharfServer(providers="shm,tcp", extra_args=["--rdma-mem", "256M"])
    srv.start()
    procs = []
    try:
        bucket = f"stall-{uuid.uuid4().hex[:10]}"
        for key, size in (("big", BIG), ("small", SMALL)):
            p = subprocess.run([client_bin(), "put", bucket, key, str(size)],
                               env=env_for(srv, "none"), capture_output=True, text=True,
                               timeout=120)
            assert p.returncode == 0, p.stdout + p.stderr
        free0, total = pool(srv)
        assert total == 64 and free0 == total

        procs = start_stallers(srv, bucket)
        t_stop = time.monotonic()
        time.sleep(1.0)  # their requests are in and their transfers stuck
        free_stalled, _ = pool(srv)
        print(f"pool while {STALLERS} clients are stopped: {free_stalled:.0f} of {total:.0f} free")
        assert free_stalled < total, "the stopped clients' transfers should hold buffers"

        # Others are served meanwhile: beyond the stallers' share, nothing is lost.
        for provider in ("ofi+tcp", "ofi+shm"):
            ok, out = probe(srv, provider, bucket)
            assert ok, f"{provider} client not served while others are stopped:\n{out}"

        # Every buffer comes back, the stallers still stopped.
        back = wait_until(lambda: pool(srv)[0] == total, timeout=BOUND_S, interval=0.5)
        took = time.monotonic() - t_stop
        print(f"all {total:.0f} buffers free {took:.1f}s after the stop")
        assert back, (f"buffers still held {took:.0f}s after the stop: {pool(srv)}\n"
                      f"{srv.log_tail()}")
        assert all(p.poll() is None for p in procs), "the stallers must still be stopped"
        log = srv.log_tail(200000)
        assert "replacing rdma endpoint" in log
        assert srv.metric_sum("wharf_rdma_endpoint_replacements_total") >= 1
        for provider in ("ofi+tcp", "ofi+shm"):
            ok, out = probe(srv, provider, bucket)
            assert ok, f"{provider} after the buffers came back:\n{out}"

        # Resumed, the stallers finish (their GETs failed or completed); killed ones cost
        # nothing either.
        for p in procs[: STALLERS // 2]:
            p.send_signal(signal.SIGCONT)
        for p in procs[STALLERS // 2:]:
            p.kill()
        for p in procs:
            p.wait(timeout=90)
        ok, out = probe(srv, "ofi+tcp", bucket)
        assert ok, out
        assert wait_until(lambda: pool(srv)[0] == total, timeout=BOUND_S, interval=0.5), pool(srv)
        assert srv.metric_sum("wharf_rdma_pipelines_active") == 0
        assert srv.alive()
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(timeout=10)
        srv.cleanup()


LATE_SIZE = 256 * MiB
LATE_TIMEOUT_MS = 150  # a 256 MiB tcp GET takes ~0.9 s here: the client gives up mid-stream
LATE_RUNS = 3  # GETs that timed out while the server was writing
LATE_ATTEMPTS = 10


def test_no_bytes_land_after_a_failed_get():
    """A GET that the client gives up on (its timeout) while the server is writing into it: after
    the call returns, the buffer is deregistered and filled with 0x5a, and the same client makes
    small RDMA GETs for 2 s, which drive its progress. Without the fix, some runs found up to
    1.2 MB of the handed-back buffer overwritten, and in every run some small GETs failed with
    502 "Transport endpoint is not connected (provider: Broken pipe)": the server's later
    writes of the abandoned GET, refused by the client once the buffer was deregistered, had
    broken its connection."""
    srv = WharfServer(providers="shm,tcp")
    srv.start()
    try:
        bucket = f"late-{uuid.uuid4().hex[:10]}"
        for key, size in (("big", LATE_SIZE), ("small", SMALL)):
            p = subprocess.run([client_bin(), "put", bucket, key, str(size)],
                               env=env_for(srv, "none"), capture_output=True, text=True,
                               timeout=120)
            assert p.returncode == 0, p.stdout + p.stderr
        tested = 0
        for _ in range(LATE_ATTEMPTS):
            if tested == LATE_RUNS:
                break
            p = subprocess.run([client_bin(), "late", bucket, "big", str(LATE_SIZE),
                                str(LATE_TIMEOUT_MS)], env=env_for(srv, "ofi+tcp"),
                               capture_output=True, text=True, timeout=120)
            out = p.stdout + p.stderr
            print(out)
            if p.returncode in (4, 5):
                continue  # the GET beat the timeout, or the server had not begun writing
            tested += 1
            assert "LATE changed=0 " in out and p.returncode == 0, (
                f"bytes landed in the buffer after the failed GET returned, or the client's "
                f"later GETs failed:\n{out}")
        assert tested > 0, "no GET timed out mid-transfer: the test did not test anything"
        ok, out = probe(srv, "ofi+tcp", bucket)
        assert ok, out
        assert srv.alive()
    finally:
        srv.cleanup()
