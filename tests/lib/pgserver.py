"""A private PostgreSQL for tests and benchmarks: the one way wharf's tests start one.

PgServer runs initdb in a temporary directory (as the postgres user when started as root, since
PostgreSQL refuses to run as root), starts postgres on a free 127.0.0.1 port with its socket in
that directory, and gives a URL for wharfd --meta. stop(), kill() and start() again on the same
directory and port drill restarts; nothing outside the temporary directory is touched. Every
wait is bounded.

    with PgServer() as pg:
        url = pg.url            # postgresql://postgres@127.0.0.1:PORT/postgres
        url2 = pg.create_db("t1")

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
import socket
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


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PgServer:
    def __init__(self, fsync=False, port=None, listen=("127.0.0.1",), trust=()):
        """listen: addresses to accept TCP on (the first is the URL's host); trust: extra
        networks ("10.231.5.0/24") allowed in without a password, e.g. a test's network
        namespaces."""
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
