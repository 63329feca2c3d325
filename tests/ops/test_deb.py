# SPDX-License-Identifier: Apache-2.0
"""make deb: the Debian packages, built offline (scripts/build_deb.sh, dpkg-buildpackage), then
installed by dpkg into a fresh root of their own (dpkg --root with its maintainer scripts run
chrootless, DPKG_ROOT set, as debhelper's snippets expect). The installed wharfd (from its
default configuration where this build has configuration files) serves, and the installed
`wharf verify` gets PASS against it over RDMA (libfabric shm and tcp, as make run); postinst
made the wharf user and /var/lib/wharf inside that root; purging wharfd leaves the data
directory and its files alone.

The root holds the packages' files only, not a whole system: the installed programs run
from it with the host's system libraries (libwharf from the root, LD_LIBRARY_PATH)."""
import glob
import os
import pwd
import re
import shutil
import subprocess
import time

import pytest

from opslib import ROOT, has_config_support, source_etc_files
from wharfd import WharfServer

ARCH = subprocess.run(["dpkg-architecture", "-qDEB_HOST_MULTIARCH"], capture_output=True,
                      text=True, timeout=20).stdout.strip()


def _dpkg(root, *args):
    r = subprocess.run(["dpkg", f"--root={root}", "--force-script-chrootless",
                        "--force-depends", "--log=/dev/null", *args],
                       capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, PATH="/usr/sbin:/usr/bin:/sbin:/bin"))
    assert r.returncode == 0, f"dpkg {' '.join(args)}: {r.stdout}{r.stderr}"
    return r


@pytest.fixture(scope="module")
def debs(tmp_path_factory):
    out = tmp_path_factory.mktemp("debs")
    t0 = time.monotonic()
    r = subprocess.run(["bash", os.path.join(ROOT, "scripts", "build_deb.sh"), str(out)],
                       capture_output=True, text=True, timeout=900,
                       env=dict(os.environ, JOBS="2", TMPDIR=str(out)))
    assert r.returncode == 0, r.stdout + r.stderr
    print(f"build_deb.sh took {time.monotonic() - t0:.1f} s")
    return {os.path.basename(p).split("_")[0]: p for p in glob.glob(str(out / "*.deb"))}


@pytest.fixture(scope="module")
def root(debs, tmp_path_factory):
    """A fresh dpkg root with libwharf0, wharfd and wharf-cli installed."""
    r = tmp_path_factory.mktemp("root")
    os.makedirs(r / "var/lib/dpkg/info")
    os.makedirs(r / "var/lib/dpkg/updates")
    (r / "var/lib/dpkg/status").write_text("")
    os.makedirs(r / "etc")  # as in any root: systemd-sysusers writes etc/passwd there
    _dpkg(r, "-i", debs["libwharf0"], debs["wharfd"], debs["wharf-cli"], debs["libwharf-dev"])
    return r


def test_package_version_is_the_projects(debs):
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        v = re.search(r"project\(wharf VERSION ([0-9.]+)", f.read()).group(1)
    for name in ("wharfd", "libwharf0", "libwharf-dev", "wharf-cli"):
        info = subprocess.run(["dpkg-deb", "-f", debs[name], "Version", "Package"],
                              capture_output=True, text=True, timeout=20).stdout
        assert f"Version: {v}\n" in info and f"Package: {name}\n" in info, info


def test_default_configuration_is_conffiles(debs):
    """Every etc/wharfd-*.conf of the tree is in wharfd as a conffile (kept on upgrade when
    edited, removed on purge)."""
    r = subprocess.run(["dpkg-deb", "-I", debs["wharfd"], "conffiles"], capture_output=True,
                       text=True, timeout=20)
    listed = set(r.stdout.split()) if r.returncode == 0 else set()
    assert listed == {f"/etc/wharf/{f}" for f in source_etc_files()}, (listed, r.stderr)


def test_postinst_made_the_user_and_data_dir(root):
    with open(root / "etc" / "passwd") as f:
        users = {l.split(":")[0]: l.split(":") for l in f if l.strip()}
    assert "wharf" in users, users.keys()
    uid = int(users["wharf"][2])
    assert users["wharf"][5] == "/var/lib/wharf" and users["wharf"][6].strip().endswith("nologin")
    st = os.stat(root / "var" / "lib" / "wharf")
    assert st.st_uid == uid and oct(st.st_mode & 0o777) == "0o750", (st.st_uid, oct(st.st_mode))
    # units are where systemd looks, and not enabled
    units = os.listdir(root / "lib" / "systemd" / "system")
    assert sorted(units) == ["wharfd-gateway.service", "wharfd-serve.service",
                             "wharfd-storage@.service"]
    assert not os.path.exists(root / "etc" / "systemd" / "system" / "multi-user.target.wants"
                              / "wharfd-serve.service")


class InstalledServer(WharfServer):
    """WharfServer (the one test-server starter) running the packaged wharfd."""

    def __init__(self, root, **kw):
        super().__init__(**kw)
        self._root = root

    @property
    def binary(self):
        return os.path.join(str(self._root), "usr", "bin", "wharfd")


def _verify(root, srv, provider):
    env = srv.client_env()
    env["WHARF_PROVIDER"] = provider
    env["LD_LIBRARY_PATH"] = os.path.join(str(root), "usr", "lib", ARCH)
    if provider != "ofi+shm":
        env.pop("WHARF_UNIX_SOCKET", None)
    cli = os.path.join(str(root), "usr", "bin", "wharf")
    ldd = subprocess.run(["ldd", cli], env=env, capture_output=True, text=True, timeout=20).stdout
    assert os.path.join(str(root), "usr", "lib", ARCH, "libwharf.so.0") in ldd, ldd
    p = subprocess.run([cli, "verify"], env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and "PASS" in p.stdout and "FAIL" not in p.stdout, \
        p.stdout + p.stderr
    return p.stdout


@pytest.mark.parametrize("provider", ["ofi+shm", "ofi+tcp"])
def test_installed_wharf_verify_passes(root, tmp_path, provider):
    with InstalledServer(root, data_dir=str(tmp_path / "data")) as srv:
        out = _verify(root, srv, provider)
    assert f"provider {provider}" in out or provider.split("+")[1] in out, out


def test_installed_wharfd_starts_from_its_default_configuration(root, tmp_path):
    wharfd = os.path.join(str(root), "usr", "bin", "wharfd")
    if not has_config_support(wharfd):
        pytest.skip("this wharfd has no configuration files yet (`wharfd check-config` is "
                    "missing): the package's /etc/wharf/wharfd-serve.conf cannot be used")
    conf = root / "etc" / "wharf" / "wharfd-serve.conf"
    assert conf.is_file(), "the package has no /etc/wharf/wharfd-serve.conf"
    r = subprocess.run([wharfd, "check-config", str(conf)], capture_output=True, text=True,
                       timeout=20)
    assert r.returncode == 0, r.stdout + r.stderr
    # the default configuration, its data directory moved to the test's (the root's
    # /var/lib/wharf is the package's), the address chosen by the harness (--listen after it)
    local = tmp_path / "wharfd-serve.conf"
    local.write_text(conf.read_text().replace("/var/lib/wharf", str(tmp_path / "data")))
    with InstalledServer(root, data_dir=str(tmp_path / "data"),
                         extra_args=["--config", str(local)]) as srv:
        _verify(root, srv, "ofi+shm")


def test_purge_keeps_the_data_directory(root):
    data = root / "var" / "lib" / "wharf"
    (data / "objects").mkdir(exist_ok=True)
    (data / "objects" / "keep.bin").write_bytes(b"x" * 4096)
    (data / "server.key").write_text("0" * 64 + "\n")
    r = _dpkg(root, "--purge", "wharfd")
    assert "/var/lib/wharf" in r.stderr + r.stdout  # postrm says it is kept
    assert not os.path.exists(root / "usr" / "bin" / "wharfd")
    assert not os.path.exists(root / "lib" / "systemd" / "system" / "wharfd-serve.service")
    assert not os.path.exists(root / "etc" / "wharf" / "wharfd-serve.conf")  # conffiles go
    assert (data / "objects" / "keep.bin").read_bytes() == b"x" * 4096
    assert (data / "server.key").exists()
