# SPDX-License-Identifier: Apache-2.0
"""make install with PREFIX and DESTDIR: the programs, libwharf with its soname links, wharf.h,
wharf.pc, the default configuration, the systemd units, the service user's sysusers.d and
tmpfiles.d entries and the man pages land under DESTDIR/PREFIX; a C program built against the
installed header through pkg-config runs with the installed libwharf."""
import os
import subprocess

from opslib import build_dir, cmake_install, source_etc_files

PREFIX = "/opt/wharf-it"


def _version():
    return os.environ.get("WHARF_PROJECT_VERSION") or subprocess.run(
        [os.path.join(build_dir(), "wharf"), "--version"], capture_output=True, text=True,
        timeout=20).stdout.split()[1]


def test_install_layout(tmp_path):
    root = cmake_install(tmp_path / "dest", PREFIX)
    v = _version()
    for rel in ("bin/wharfd", "bin/wharf"):
        p = os.path.join(root, rel)
        assert os.path.isfile(p) and os.access(p, os.X_OK), rel
    lib = os.path.join(root, "lib")
    assert os.path.isfile(os.path.join(lib, f"libwharf.so.{v}"))
    assert os.readlink(os.path.join(lib, "libwharf.so.0")) == f"libwharf.so.{v}"
    assert os.readlink(os.path.join(lib, "libwharf.so")) == "libwharf.so.0"
    dyn = subprocess.run(["readelf", "-d", os.path.join(lib, f"libwharf.so.{v}")],
                         capture_output=True, text=True, timeout=20).stdout
    assert "Library soname: [libwharf.so.0]" in dyn
    # the installed CLI finds libwharf by the system's rules, not through the build tree
    dyn = subprocess.run(["readelf", "-d", os.path.join(root, "bin", "wharf")],
                         capture_output=True, text=True, timeout=20).stdout
    assert build_dir() not in dyn and "RUNPATH" not in dyn and "RPATH" not in dyn, dyn
    assert os.path.isfile(os.path.join(root, "include", "wharf", "wharf.h"))
    with open(os.path.join(lib, "pkgconfig", "wharf.pc")) as f:
        pc = f.read()
    assert f"prefix={PREFIX}\n" in pc and f"Version: {v}\n" in pc, pc
    for f in source_etc_files():  # the default configuration, under PREFIX/etc/wharf
        assert os.path.isfile(os.path.join(root, "etc", "wharf", f)), f
    units = os.path.join(root, "lib", "systemd", "system")
    assert sorted(os.listdir(units)) == ["wharfd-gateway.service", "wharfd-serve.service",
                                         "wharfd-storage@.service"]
    for u in os.listdir(units):
        with open(os.path.join(units, u)) as f:
            text = f.read()
        assert f"ExecStart={PREFIX}/bin/wharfd " in text and f"{PREFIX}/etc/wharf/" in text, u
        assert "@" not in text.replace("wharfd-storage@", "").replace("%i", ""), u
    assert os.path.isfile(os.path.join(root, "lib", "sysusers.d", "wharfd.conf"))
    assert os.path.isfile(os.path.join(root, "lib", "tmpfiles.d", "wharfd.conf"))
    for m in ("wharfd.1", "wharf.1"):
        assert os.path.getsize(os.path.join(root, "share", "man", "man1", m)) > 1000, m


PROG = r"""
#include <wharf/wharf.h>
#include <stdio.h>
#include <string.h>
int main(void)
{
    char line[4096];
    FILE *f = fopen("/proc/self/maps", "r");
    const char *path = NULL;
    while (f && fgets(line, sizeof line, f))
        if (strstr(line, "libwharf.so")) {
            path = strchr(line, '/');
            break;
        }
    printf("version %s\nlib %s", wharf_version(), path ? path : "none\n");
    wharf_client_config_t cfg;
    wharf_client_config_init(&cfg, sizeof cfg);
    return 0;
}
"""


def test_program_builds_against_the_install(tmp_path):
    root = cmake_install(tmp_path / "dest", PREFIX)
    src = tmp_path / "t.c"
    src.write_text(PROG)
    env = dict(os.environ, PKG_CONFIG_SYSROOT_DIR=str(tmp_path / "dest"),
               PKG_CONFIG_LIBDIR=os.path.join(root, "lib", "pkgconfig"))
    pc = subprocess.run(["pkg-config", "--cflags", "--libs", "wharf"], env=env,
                        capture_output=True, text=True, timeout=20)
    assert pc.returncode == 0, pc.stderr
    flags = pc.stdout.split()
    assert f"-I{root}/include" in flags and f"-L{root}/lib" in flags, flags
    exe = tmp_path / "t"
    cc = subprocess.run(["cc", "-Wall", "-Werror", "-o", str(exe), str(src)] + flags,
                        capture_output=True, text=True, timeout=60)
    assert cc.returncode == 0, cc.stderr
    mv = subprocess.run(["pkg-config", "--modversion", "wharf"], env=env, capture_output=True,
                        text=True, timeout=20).stdout.strip()
    run = subprocess.run([str(exe)],
                         env=dict(os.environ, LD_LIBRARY_PATH=os.path.join(root, "lib")),
                         capture_output=True, text=True, timeout=20)
    assert run.returncode == 0, run.stderr
    lines = dict(l.split(" ", 1) for l in run.stdout.splitlines())
    assert lines["version"] == mv
    assert os.path.realpath(lines["lib"]) == os.path.realpath(
        os.path.join(root, "lib", f"libwharf.so.{mv}")), lines
