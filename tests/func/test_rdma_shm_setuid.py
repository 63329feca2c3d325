# SPDX-License-Identifier: Apache-2.0
"""The shm data path against a requester that becomes privileged, with a real wharfd (root,
--providers shm), a real setuid-root program compiled here, and an attacker run as user nobody
(setpriv):

The attacker connects to wharfd's Unix socket (SO_PEERCRED names its pid and uid nobody),
forks, and execs the setuid-root victim: the victim keeps the pid and the real uid nobody, but
is now a root process. The forked child still holds the connection; it forges an shm endpoint
file naming the victim's pid (its own, owned by nobody) and asks for a GET into (and a PUT
from) the victim's buffer with x-amz-rdma-token. wharfd must refuse both before a byte moves
(the process changed credentials since it connected), and the victim's memory must be
unchanged. Skips where the test cannot be root or the temp directory is mounted nosuid.
"""
import os
import pathlib
import shutil
import tempfile
import subprocess
import sys
import textwrap

import pytest

from s3raw import S3Raw
from wharfd import WharfServer, unique_bucket

VICTIM_C = r"""
#include <stdio.h>
#include <string.h>
#include <unistd.h>
static char buf[1 << 16];
int main(void)
{
    memset(buf, 'V', sizeof buf);
    printf("%lx %d %d\n", (unsigned long)buf, (int)geteuid(), (int)getpid());
    fflush(stdout);
    char line[16];
    while (fgets(line, sizeof line, stdin)) {
        size_t bad = 0;
        for (size_t i = 0; i < sizeof buf; i++)
            bad += buf[i] != 'V';
        printf("%zu\n", bad);
        fflush(stdout);
    }
    return 0;
}
"""

# Run as nobody: argv = socket, victim, endpoint, host, bucket, key, access key, secret key.
ATTACKER_PY = textwrap.dedent(r"""
    import os, socket, sys
    sock, victim, host, bucket, key, ak, sk = sys.argv[1:8]
    from s3raw import S3Raw, UNSIGNED
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sock)                      # SO_PEERCRED: this pid, uid nobody
    out_r, out_w = os.pipe()
    in_r, in_w = os.pipe()
    pid = os.fork()
    if pid:                              # becomes the setuid-root victim, same pid
        os.dup2(out_w, 1)
        os.dup2(in_r, 0)
        os.execv(victim, [victim])
    os.close(out_w)
    os.close(in_r)
    vout, vin = os.fdopen(out_r), os.fdopen(in_w, "w")
    addr, euid, vpid = vout.readline().split()
    assert int(vpid) == os.getppid()
    print("victim", addr, euid, vpid, flush=True)
    name = f"wharf-atk-{os.getpid()}"
    with open(f"/dev/shm/{name}", "wb") as f:    # an shm region header naming the victim
        f.write(bytes([4, 0, 0, 0]) + int(vpid).to_bytes(4, "little") + bytes(4088))
    ep = (f"fi_shm://{name}".encode() + b"\0").hex()
    size = 1 << 16
    token = f"{int(addr, 16):x}:{size:x}:ofi1:shm:{ep}:0"
    raw = S3Raw(f"http://{host}", ak, sk)

    def send(method, path, payload_hash):
        h, _ = raw.sign_headers(method, path, None, {"x-amz-rdma-token": token},
                                payload_hash)
        lines = [f"{method} {path} HTTP/1.1", f"Host: {h.pop('host')}", "Content-Length: 0"]
        lines += [f"{k}: {v}" for k, v in h.items()]
        s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        head = data.split(b"\r\n\r\n")[0].decode(errors="replace")
        status = head.split(" ")[1] if " " in head else "?"
        msg = [l for l in head.split("\r\n") if l.lower().startswith("x-amz-error-message")]
        print(method, status, msg[0] if msg else "", flush=True)

    send("GET", f"/{bucket}/{key}", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    vin.write("check\n"); vin.flush()
    print("after-get", vout.readline().strip(), flush=True)
    send("PUT", f"/{bucket}/stolen", UNSIGNED)
    vin.write("check\n"); vin.flush()
    print("after-put", vout.readline().strip(), flush=True)
    os.unlink(f"/dev/shm/{name}")
    vin.close()
""")


@pytest.fixture(scope="module")
def setuid_victim():
    if os.geteuid() != 0:
        pytest.skip("needs root: a setuid-root program and a run as nobody")
    if not shutil.which("setpriv") or not shutil.which("cc"):
        pytest.skip("needs setpriv and cc")
    d = pathlib.Path(tempfile.mkdtemp(prefix="wharf-suid-"))  # nobody reads it (pytest's is 0700)
    os.chmod(d, 0o755)
    src = d / "victim.c"
    src.write_text(VICTIM_C)
    exe = d / "victim"
    subprocess.run(["cc", "-O0", "-o", str(exe), str(src)], check=True)
    os.chown(exe, 0, 0)
    os.chmod(exe, 0o4755)
    probe = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                            str(exe)], input="", capture_output=True, text=True, timeout=10)
    if probe.returncode != 0 or probe.stdout.split()[1:2] != ["0"]:
        shutil.rmtree(d, ignore_errors=True)
        pytest.skip(f"the setuid bit does not take here (nosuid mount?): {probe.stdout!r}")
    attacker = d / "attacker.py"
    attacker.write_text(ATTACKER_PY)
    yield exe, attacker
    shutil.rmtree(d, ignore_errors=True)


def test_requester_that_execs_a_setuid_program_is_refused(setuid_victim):
    exe, attacker = setuid_victim
    srv = WharfServer(providers="shm")
    srv.start()
    try:
        os.chmod(srv.data_dir, 0o755)          # nobody may reach the socket
        os.chmod(srv.unix_socket, 0o777)
        raw = S3Raw(srv.endpoint, unix_socket=srv.unix_socket)
        b = unique_bucket("suid")
        assert raw.request("PUT", f"/{b}").status == 200
        assert raw.request("PUT", f"/{b}/o", body=b"\xee" * (1 << 16)).status == 200
        lib = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib")
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": lib,
               "PYTHONDONTWRITEBYTECODE": "1"}
        r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                            sys.executable if sys.executable.startswith("/usr/") else
                            "/usr/bin/python3", str(attacker), srv.unix_socket, str(exe),
                            srv.endpoint.split("//")[1], b, "o", raw.access_key,
                            raw.secret_key],
                           capture_output=True, text=True, timeout=60, env=env)
        out = r.stdout
        assert r.returncode == 0, (out, r.stderr)
        lines = dict(l.split(" ", 1) for l in out.strip().splitlines())
        assert lines["victim"].split()[1] == "0", out  # the victim really runs as root
        assert lines["after-get"] == "0", f"wharfd wrote into the setuid process: {out}"
        assert lines["after-put"] == "0", out
        assert lines["GET"].startswith("403"), out
        assert "changed credentials" in lines["GET"] or "dumpable" in lines["GET"], out
        assert lines["PUT"].startswith("403"), out
        assert raw.request("HEAD", f"/{b}/stolen").status == 404
        assert srv.alive()
    finally:
        if not srv.alive():  # shown with a failure: why the server was gone
            print("wharfd exited early; its log:\n" + srv.log_tail())
        srv.stop()
        srv.cleanup()
