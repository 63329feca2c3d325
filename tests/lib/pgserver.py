# SPDX-License-Identifier: Apache-2.0
"""A private PostgreSQL for tests and benchmarks: the one way wharf's tests start one.

PgServer runs initdb in a temporary directory (as the postgres user when started as root, since
PostgreSQL refuses to run as root), starts postgres on a free 127.0.0.1 port with its socket in
that directory, and gives a URL for wharfd --meta. stop(), kill() and start() again on the same
directory and port drill restarts; nothing outside the temporary directory is touched. Every
wait is bounded.

    with PgServer() as pg:
        url = pg.url            # postgresql://postgres@127.0.0.1:PORT/postgres
        url2 = pg.create_db("t1")

PgPair is a primary with one streaming replica (pg_basebackup -R), synchronous
(synchronous_standby_names = '*', so a commit is acknowledged only once the replica has it),
and a multi-host URL that libpq follows to whichever is read-write; kill_primary() and
promote() drill a failover:

    with PgPair() as pair:
        url = pair.url          # postgresql://postgres@127.0.0.1:P1,127.0.0.1:P2/postgres?...
        pair.kill_primary(); pair.promote()

As a program it runs a command with WHARF_TEST_PG_URL set (how ctest runs the C store unit
tests against PostgreSQL):

    python3 tests/lib/pgserver.py run -- ./unit_store_test_store

Where the PostgreSQL binaries are missing, missing_reason() says so and `run` exits 77 (ctest's
skip code, SKIP_RETURN_CODE)."""
import glob
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time

SKIP_RC = 77


def bin_dir():
    """The directory of initdb/postgres/pg_ctl, or None."""
    env = os.environ.get("WHARF_PG_BIN")
    cands = [env] if env else []
    cands += sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    for d in cands:
        if d and os.path.exists(os.path.join(d, "initdb")) and os.path.exists(os.path.join(d, "postgres")):
            return d
    return None


def missing_reason():
    if not bin_dir():
        return "PostgreSQL server binaries not found (install postgresql-15: scripts/deps.sh)"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and there is no postgres user to run PostgreSQL as"
    if not shutil.which("psql") and not os.path.exists(os.path.join(bin_dir(), "psql")):
        return "psql not found (install postgresql-client-15: scripts/deps.sh)"
    return None


if os.path.dirname(os.path.abspath(__file__)) not in sys.path:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ports import free_port  # noqa: E402


class PgServer:
    def __init__(self, fsync=False, port=None, listen=("127.0.0.1",), trust=(), standby_of=None):
        """listen: addresses to accept TCP on (the first is the URL's host); trust: extra
        networks ("10.231.5.0/24") allowed in without a password, e.g. a test's network
        namespaces. standby_of: a running PgServer; this one is then its streaming replica,
        its data directory a pg_basebackup -R of it instead of a new initdb."""
        reason = missing_reason()
        if reason:
            raise RuntimeError(reason)
        self.bin = bin_dir()
        self.dir = tempfile.mkdtemp(prefix="wharf-pg-")
        self.data = os.path.join(self.dir, "data")
        self.port = port or free_port()
        self.fsync = fsync
        self.listen = list(listen)
        self.proc = None
        self.log_path = os.path.join(self.dir, "postgres.log")
        self._as = None
        if os.geteuid() == 0:
            pw = pwd.getpwnam("postgres")
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)
            self._as = pw
        os.chmod(self.dir, 0o700)
        if standby_of is not None:
            # -R writes standby.signal and primary_conninfo; -X stream brings the WAL along
            self._run([os.path.join(self.bin, "pg_basebackup"), "-D", self.data, "-R",
                       "-X", "stream", "-c", "fast", "-h", "127.0.0.1",
                       "-p", str(standby_of.port), "-U", "postgres", "--no-sync"], timeout=120)
            return
        self._run([os.path.join(self.bin, "initdb"), "-D", self.data, "-U", "postgres",
                   "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync"], timeout=120)
        if trust:
            with open(os.path.join(self.data, "pg_hba.conf"), "a") as f:
                for net in trust:
                    f.write(f"host all all {net} trust\n")

    @property
    def url(self):
        return self.db_url("postgres")

    def db_url(self, db):
        return f"postgresql://postgres@{self.listen[0]}:{self.port}/{db}"

    def _demote(self):
        if self._as:
            os.setgid(self._as.pw_gid)
            os.setuid(self._as.pw_uid)

    def _run(self, argv, timeout=60):
        r = subprocess.run(argv, preexec_fn=self._demote, capture_output=True, text=True,
                           timeout=timeout, cwd=self.dir)
        if r.returncode != 0:
            raise RuntimeError(f"{argv[0]} failed ({r.returncode}): {r.stdout}{r.stderr}")
        return r.stdout

    def start(self, timeout=30):
        """Starts postgres and waits until it accepts connections."""
        log = open(self.log_path, "ab")
        argv = [os.path.join(self.bin, "postgres"), "-D", self.data, "-p", str(self.port),
                "-c", "listen_addresses=" + ",".join(self.listen), "-c", f"unix_socket_directories={self.dir}",
                "-c", "max_connections=200", "-c", f"fsync={'on' if self.fsync else 'off'}",
                "-c", "shared_buffers=32MB", "-c", "max_locks_per_transaction=256",
                "-c", "log_min_messages=warning"]
        self.proc = subprocess.Popen(argv, preexec_fn=self._demote, stdout=log,
                                     stderr=subprocess.STDOUT, cwd=self.dir)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"postgres exited ({self.proc.returncode}); log:\n{self.log()}")
            try:
                self.sql("SELECT 1", timeout=5)
                return self
            except (RuntimeError, subprocess.TimeoutExpired):
                time.sleep(0.1)
        raise RuntimeError(f"postgres did not accept connections in {timeout}s; log:\n{self.log()}")

    def sql(self, query, db="postgres", timeout=30):
        """Runs one SQL string with psql; returns its unaligned output."""
        psql = os.path.join(self.bin, "psql")
        if not os.path.exists(psql):
            psql = shutil.which("psql")
        r = subprocess.run([psql, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1",
                            "-p", str(self.port), "-U", "postgres", "-d", db, "-c", query],
                           capture_output=True, text=True, timeout=timeout)
        if r.returncode != 0:
            raise RuntimeError(f"psql failed: {r.stderr.strip()}")
        return r.stdout.strip()

    def create_db(self, name):
        self.sql(f'CREATE DATABASE "{name}"')
        return self.db_url(name)

    def stop(self, timeout=30):
        """Fast shutdown (SIGINT): committed transactions are kept."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.proc = None

    def kill(self):
        """SIGKILL of the postmaster; start() recovers from the WAL."""
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
            # Its backends notice the postmaster is gone and exit; give them a moment.
            time.sleep(0.5)
        self.proc = None

    def restart(self):
        self.stop()
        return self.start()

    def promote(self, timeout=30):
        """pg_ctl promote of a standby; waits until it takes writes."""
        self._run([os.path.join(self.bin, "pg_ctl"), "promote", "-D", self.data, "-w",
                   "-t", str(int(timeout))], timeout=timeout + 10)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.sql("SELECT pg_is_in_recovery()", timeout=5) == "f":
                return self
            time.sleep(0.1)
        raise RuntimeError(f"the promoted standby still recovers after {timeout}s:\n{self.log()}")

    def log(self):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()[-4000:]
        except OSError:
            return ""

    def close(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()


class PgPair:
    """A primary and its synchronous streaming replica, on 127.0.0.1. url lists both
    (target_session_attrs=read-write: libpq connects to whichever takes writes)."""

    def __init__(self, fsync=False):
        self.fsync = fsync
        self.primary = None
        self.replica = None

    def start(self, timeout=60):
        try:
            self.primary = PgServer(fsync=self.fsync).start()
            self.replica = PgServer(fsync=self.fsync, standby_of=self.primary).start()
            # Only now: the replica's copy of the configuration must not name a standby, or
            # once promoted (with none of its own) it would wait for one on every commit.
            self.primary.sql("ALTER SYSTEM SET synchronous_standby_names = '*'")
            self.primary.sql("SELECT pg_reload_conf()")
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                if self.primary.sql("SELECT sync_state FROM pg_stat_replication") == "sync":
                    return self
                time.sleep(0.1)
            raise RuntimeError("the replica did not become a synchronous standby in "
                               f"{timeout}s:\n{self.replica.log()}")
        except Exception:
            self.close()
            raise

    @property
    def url(self):
        return self.db_url("postgres")

    def db_url(self, db, replica_first=False, attrs="read-write"):
        """Both hosts (the primary first unless replica_first), and target_session_attrs
        unless attrs is None."""
        ports = [self.primary.port, self.replica.port]
        if replica_first:
            ports.reverse()
        q = f"?target_session_attrs={attrs}" if attrs else ""
        return f"postgresql://postgres@{','.join(f'127.0.0.1:{p}' for p in ports)}/{db}{q}"

    def current(self):
        """The member that takes writes now."""
        for s in (self.primary, self.replica):
            if s.proc is not None and s.proc.poll() is None:
                try:
                    if s.sql("SELECT pg_is_in_recovery() OR "
                             "current_setting('transaction_read_only')::bool", timeout=5) == "f":
                        return s
                except (RuntimeError, subprocess.TimeoutExpired):
                    pass
        raise RuntimeError("no member of the pair takes writes")

    def sql(self, query, db="postgres", timeout=30):
        return self.current().sql(query, db=db, timeout=timeout)

    def replication(self):
        """pg_stat_replication's (application_name, state, sync_state) rows on the primary."""
        return self.primary.sql("SELECT application_name, state, sync_state FROM "
                                "pg_stat_replication")

    def kill_primary(self):
        self.primary.kill()

    def promote(self, timeout=30):
        return self.replica.promote(timeout=timeout)

    def close(self):
        for s in (self.replica, self.primary):
            if s is not None:
                s.close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()


def main(argv):
    if len(argv) < 3 or argv[1] != "run" or "--" not in argv:
        print("usage: pgserver.py run -- COMMAND [ARGS...]", file=sys.stderr)
        return 2
    cmd = argv[argv.index("--") + 1:]
    reason = missing_reason()
    if reason:
        print(f"SKIP: {reason}")
        return SKIP_RC
    with PgServer() as pg:
        env = dict(os.environ, WHARF_TEST_PG_URL=pg.url)
        r = subprocess.run(cmd, env=env)
        if r.returncode != 0:
            print(f"postgres log (tail):\n{pg.log()}", file=sys.stderr)
        return r.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv))
