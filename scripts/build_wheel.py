#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Builds dist/wharf-<version>-py3-none-linux_<arch>.whl: the Python package, libwharf.so and
every shared library libwharf needs that a stock Debian 12 or Ubuntu 24.04 may lack, found
by each other through an $ORIGIN run path. Nothing is downloaded: the wheel is a zip written
here, with its RECORD (PEP 427), from python/pyproject.toml's metadata.

    /usr/bin/python3 scripts/build_wheel.py [--build build] [--out dist]

Not bundled (BASELINE): glibc's own libraries, and the few that every Debian 12 and Ubuntu
24.04 with a python3 has, under the same soname: zlib and zstd (dpkg needs them), OpenSSL 3's
libssl/libcrypto, libexpat and libffi (python3's standard library needs them). Everything else
libwharf pulls in (libfabric and its RDMA and PSM provider libraries, libcurl and its TLS,
Kerberos, LDAP, SSH and IDN libraries, ISA-L, jansson) goes into wharf/_libs/. A wheel tag
of linux_<arch>, not manylinux: OpenSSL and the rest of BASELINE stay outside the wheel, which
the manylinux policies do not allow, and the bundled libraries need glibc >= the build host's
(printed at the end).

The rdma-core libraries (libibverbs, librdmacm, libefa) are bundled too, as the fallback for
a host without them; wharf/_lib.py loads the host's own copies first where they exist,
because rdma-core's device drivers must match the libibverbs that loads them.
"""
import argparse
import base64
import hashlib
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
import zipfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
PYDIR = os.path.join(ROOT, "python")

# soname prefixes that stay outside the wheel (see the module doc for why each)
BASELINE = ("libc.so", "libm.so", "libdl.so", "librt.so", "libpthread.so", "libresolv.so",
            "ld-linux", "libgcc_s.so", "linux-vdso", "libz.so", "libzstd.so", "libssl.so",
            "libcrypto.so", "libexpat.so", "libffi.so")


def run(*cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


# Libraries libwharf opens with dlopen, not linked (so ldd does not list them): libfabric,
# opened on a client's first RDMA provider (src/shared/xfer/ofi_dl.c says why).
DLOPENED = ("libfabric.so.1",)


def ldconfig_path(soname, dirs):
    """Where the dynamic linker finds soname, preferring dirs (those of libwharf's own
    libraries: the same architecture)."""
    found = []
    for line in run("/sbin/ldconfig", "-p").splitlines():
        name, _, path = line.strip().partition(" => ")
        if name.split(" (")[0] == soname:
            found.append(path.strip())
    found.sort(key=lambda p: os.path.dirname(p) not in dirs)
    if not found:
        sys.exit(f"build_wheel: {soname} (libwharf opens it) is not installed: install it "
                 "first (scripts/deps.sh)")
    return found[0]


def closure(lib):
    """{soname: path} of every library lib loads, as the dynamic linker resolves them here,
    and, for libwharf, of those it opens itself (DLOPENED)."""
    out = ldd(lib)
    if os.path.basename(lib).startswith("libwharf"):
        for so in DLOPENED:
            path = out.get(so) or ldconfig_path(so, {os.path.dirname(p) for p in out.values()})
            out[so] = path
            out.update({k: v for k, v in ldd(path).items() if k not in out})
    return out


def ldd(lib):
    out = {}
    for line in run("ldd", lib).splitlines():
        m = re.match(r"\s*(\S+)\s+=>\s+(\S+)\s+\(", line)
        if m:
            out[m.group(1)] = m.group(2)
        elif "not found" in line:
            sys.exit(f"build_wheel: {lib}: {line.strip()}: install it first (scripts/deps.sh)")
    return out


def glibc_needed(path):
    """The highest GLIBC_x.y symbol version path references."""
    best = (2, 0)
    for m in re.finditer(r"GLIBC_(\d+)\.(\d+)", run("objdump", "-T", path)):
        best = max(best, (int(m.group(1)), int(m.group(2))))
    return best


def metadata(proj):
    lines = ["Metadata-Version: 2.1", f"Name: {proj['name']}", f"Version: {proj['version']}",
             f"Summary: {proj['description']}", f"Requires-Python: {proj['requires-python']}"]
    for dep in proj.get("dependencies", []):
        lines.append(f"Requires-Dist: {dep}")
    for extra, deps in proj.get("optional-dependencies", {}).items():
        lines.append(f"Provides-Extra: {extra}")
        for dep in deps:
            lines.append(f'Requires-Dist: {dep}; extra == "{extra}"')
    readme = os.path.join(PYDIR, proj.get("readme", "README.md"))
    lines.append("Description-Content-Type: text/markdown")
    body = open(readme, encoding="utf-8").read() if os.path.exists(readme) else ""
    return "\n".join(lines) + "\n\n" + body


def entry_points(proj):
    out = []
    for group, eps in proj.get("entry-points", {}).items():
        out.append(f"[{group}]")
        out += [f"{k} = {v}" for k, v in eps.items()]
        out.append("")
    return "\n".join(out)


def record_line(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arcname},sha256={digest},{len(data)}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out", default=os.path.join(ROOT, "dist"))
    args = ap.parse_args()
    if not shutil.which("patchelf"):
        sys.exit("build_wheel: patchelf is missing: apt-get install -y patchelf "
                 "(scripts/deps.sh installs it)")
    lib = os.path.join(args.build, "libwharf.so")
    if not os.path.exists(lib):
        sys.exit(f"build_wheel: no {lib}: build first (make build)")
    with open(os.path.join(PYDIR, "pyproject.toml"), "rb") as f:
        proj = tomllib.load(f)["project"]
    name = proj["name"]
    version = proj.get("version")
    if version is None:  # dynamic: the one statement of it, wharf/_version.py
        ns = {}
        with open(os.path.join(PYDIR, "wharf", "_version.py")) as f:
            exec(f.read(), ns)  # noqa: S102 (our own one-line file)
        version = ns["__version__"]
        proj = dict(proj, version=version)
    tag = f"py3-none-linux_{platform.machine()}"

    files = {}  # arcname: bytes
    pkg = os.path.join(PYDIR, "wharf")
    for dirpath, dirnames, filenames in os.walk(pkg):
        dirnames[:] = sorted(d for d in dirnames if d not in ("__pycache__", "_libs"))
        for fn in sorted(filenames):
            if fn.endswith((".py", ".typed")):
                full = os.path.join(dirpath, fn)
                with open(full, "rb") as f:
                    files[os.path.relpath(full, PYDIR)] = f.read()

    bundled, kept = {}, []
    for soname, path in sorted(closure(lib).items()):
        if soname.startswith(BASELINE):
            kept.append(soname)
        else:
            bundled[soname] = path
    glibc = glibc_needed(lib)
    with tempfile.TemporaryDirectory() as tmp:
        # libwharf under its soname, as the bundled libraries' copies are
        soname = re.search(r"SONAME\)\s+Library soname: \[(.+)\]",
                           run("readelf", "-d", lib)).group(1)
        todo = {soname: lib, **bundled}
        for so, src in todo.items():
            dst = os.path.join(tmp, so)
            shutil.copyfile(os.path.realpath(src), dst)
            os.chmod(dst, 0o755)
            # DT_RUNPATH: each finds its neighbours beside it, LD_LIBRARY_PATH still first
            run("patchelf", "--set-rpath", "$ORIGIN", dst)
            glibc = max(glibc, glibc_needed(dst))
            with open(dst, "rb") as f:
                files[f"wharf/_libs/{so}"] = f.read()
    di = f"{name}-{version}.dist-info"
    files[f"{di}/METADATA"] = metadata(proj).encode()
    files[f"{di}/WHEEL"] = (f"Wheel-Version: 1.0\nGenerator: wharf scripts/build_wheel.py\n"
                            f"Root-Is-Purelib: false\nTag: {tag}\n").encode()
    files[f"{di}/top_level.txt"] = b"wharf\n"
    ep = entry_points(proj)
    if ep:
        files[f"{di}/entry_points.txt"] = ep.encode()
    record = [record_line(a, d) for a, d in files.items()] + [f"{di}/RECORD,,"]
    files[f"{di}/RECORD"] = ("\n".join(record) + "\n").encode()

    os.makedirs(args.out, exist_ok=True)
    whl = os.path.join(args.out, f"{name}-{version}-{tag}.whl")
    with zipfile.ZipFile(whl + ".tmp", "w", zipfile.ZIP_DEFLATED) as z:
        for arc, data in files.items():
            zi = zipfile.ZipInfo(arc, date_time=(2020, 1, 1, 0, 0, 0))
            zi.external_attr = (0o755 if arc.startswith("wharf/_libs/") else 0o644) << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, data)
    os.replace(whl + ".tmp", whl)
    print(f"wrote {whl} ({os.path.getsize(whl) >> 10} KiB)")
    print(f"bundled {len(todo)}: {' '.join(sorted(todo))}")
    print(f"from the host: {' '.join(sorted(kept))}")
    print(f"needs glibc >= {glibc[0]}.{glibc[1]} (this host: {platform.libc_ver()[1]})")


if __name__ == "__main__":
    main()
