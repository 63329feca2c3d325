# SPDX-License-Identifier: Apache-2.0
"""The systemd units as `make install` writes them: systemd-analyze verify accepts them with no
warning (offline: systemd need not be PID 1), with ExecStart pointed at the installed wharfd;
and they say what docs/operations.md ("Units") promises: Type=notify with a watchdog, the
wharf user, the hardening, LimitMEMLOCK above the largest default RDMA pool, a stop timeout
above the drain bound."""
import os
import re
import subprocess

import pytest

from opslib import ROOT, cmake_install, unit_settings

UNITS = ("wharfd-serve.service", "wharfd-gateway.service", "wharfd-storage@.service")


def _size(s):
    m = re.fullmatch(r"(\d+)([KMGT]?)", s)
    assert m, s
    return int(m.group(1)) << (10 * " KMGT".index(m.group(2) or " "))


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    dest = tmp_path_factory.mktemp("dest")
    return cmake_install(dest, "/usr")


def _verify(paths, man_root):
    r = subprocess.run(["systemd-analyze", "verify"] + paths, capture_output=True, text=True,
                       timeout=60, env=dict(os.environ, MANPATH=os.path.join(man_root, "share",
                                                                              "man")))
    return r.returncode, (r.stdout + r.stderr).strip()


def _staged(installed, tmp_path, text_edit=None):
    """Copies of the installed units whose ExecStart names the installed wharfd (verify checks
    that the program exists), the template instantiated as wharfd-storage@a."""
    out = []
    for u in UNITS:
        with open(os.path.join(installed, "lib", "systemd", "system", u)) as f:
            text = f.read().replace("/usr/bin/wharfd", os.path.join(installed, "bin", "wharfd"))
        if text_edit:
            text = text_edit(u, text)
        name = u.replace("@.", "@a.")
        (tmp_path / name).write_text(text)
        out.append(str(tmp_path / name))
    return out


def test_units_verify(installed, tmp_path):
    rc, out = _verify(_staged(installed, tmp_path), installed)
    assert rc == 0 and out == "", out


def test_verify_catches_a_bad_unit(installed, tmp_path):
    """The check can fail: a misspelt key and a bad value are reported."""
    def edit(u, text):
        return text.replace("ProtectSystem=strict", "ProtectSystem=stricct") \
                   .replace("WatchdogSec=", "WatchdogSecc=")
    rc, out = _verify(_staged(installed, tmp_path, edit), installed)
    assert "WatchdogSecc" in out and "stricct" in out, out


def test_units_settings(installed):
    for u in UNITS:
        s = unit_settings(os.path.join(installed, "lib", "systemd", "system", u))
        one = {k: v[-1] for k, v in s.items()}
        assert one["Type"] == "notify", u
        assert one["WatchdogSec"].endswith("s") and int(one["WatchdogSec"][:-1]) >= 10, u
        assert one["User"] == "wharf" and one["Group"] == "wharf", u
        assert one["ProtectSystem"] == "strict" and one["NoNewPrivileges"] == "yes", u
        assert one["PrivateTmp"] == "yes" and one["ReadWritePaths"] == "/var/lib/wharf", u
        assert one["Restart"] == "on-failure", u
        role = u.split("-")[1].split("@")[0].split(".")[0]
        assert one["ExecStart"].startswith(f"/usr/bin/wharfd {role} --config /etc/wharf/"), u
        # the RDMA pool's default is at most 1 GiB (src/server/engine/rdma_pool.c); the limit must
        # hold it with room for the provider's queues
        with open(os.path.join(ROOT, "src", "server", "engine", "rdma_pool.c")) as f:
            m = re.search(r"#define RDMA_POOL_MAX \((\d+)ULL << (\d+)\)", f.read())
        assert m, "RDMA_POOL_MAX moved: point this test at the pool's largest default"
        pool_max = int(m.group(1)) << int(m.group(2))
        assert _size(one["LimitMEMLOCK"]) > pool_max, u
        # above the drain bound: the HTTP front's shutdown grace (src/server/front/http_front.c),
        # or the role's default configuration's shutdown_grace where it sets a longer one
        with open(os.path.join(ROOT, "src", "server", "front", "http_front.c")) as f:
            m = re.search(r"shutdown_grace_s = (\d+);", f.read())
        assert m, "the shutdown grace's default moved: point this test at the drain bound"
        grace = int(m.group(1))
        conf = os.path.join(ROOT, "etc", f"wharfd-{role}.conf")
        if os.path.exists(conf):
            with open(conf) as f:
                m = re.search(r"^shutdown_grace\s*=\s*(\d+)", f.read(), re.M)
            grace = max(grace, int(m.group(1))) if m else grace
        assert int(one["TimeoutStopSec"].rstrip("s")) >= 2 * grace, (u, grace)
    with open(os.path.join(installed, "lib", "sysusers.d", "wharfd.conf")) as f:
        assert re.search(r"^u wharf - .* /var/lib/wharf ", f.read(), re.M)
    with open(os.path.join(installed, "lib", "tmpfiles.d", "wharfd.conf")) as f:
        assert re.search(r"^d /var/lib/wharf 0750 wharf wharf", f.read(), re.M)
