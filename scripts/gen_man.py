#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Man pages wharfd(1) and wharf(1), generated from the programs' own --help at build time, so
that they cannot drift from it (tests/ops/test_man.py checks the installed pages against --help).

help2man makes each page from `PROGRAM --help` and `--version`; wharfd's commands that have a
help of their own (gateway, storage, user, node) are added as sections, verbatim.

    gen_man.py --wharfd build/wharfd --wharf build/wharf --out build/man
"""
import argparse
import os
import subprocess
import tempfile

# wharfd's commands with a --help of their own, and the section each becomes.
WHARFD_COMMANDS = (("gateway", "GATEWAY"), ("storage", "STORAGE"), ("user", "USERS AND KEYS"),
                   ("node", "NODES"))


def roff_verbatim(text):
    """text as roff that prints it as is: backslashes escaped, lines that would be requests
    (a leading . or ') guarded, inside no-fill."""
    out = [".nf"]
    for line in text.splitlines():
        line = line.replace("\\", "\\e")
        if line.startswith((".", "'")):
            line = "\\&" + line
        out.append(line)
    out.append(".fi")
    return "\n".join(out) + "\n"


def help_of(argv):
    r = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        raise SystemExit(f"gen_man: {' '.join(argv)} exited {r.returncode}: {r.stderr}")
    return r.stdout


def help2man(program, name, include, out):
    subprocess.run(["help2man", "--no-info", "--no-discard-stderr", "--name", name,
                    "--include", include, "--output", out, program], check=True, timeout=60,
                   env=dict(os.environ, LC_ALL="C.UTF-8"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--wharfd", required=True)
    ap.add_argument("--wharf", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        inc = os.path.join(tmp, "wharfd.h2m")
        with open(inc, "w") as f:
            for cmd, section in WHARFD_COMMANDS:
                f.write(f"[{section}]\n")
                f.write(f"Run \\fBwharfd {cmd} \\-\\-help\\fR for this text.\n.PP\n")
                f.write(roff_verbatim(help_of([a.wharfd, cmd, "--help"])))
            f.write("[SEE ALSO]\n\\fBwharf\\fR(1); docs/operations.md in the source.\n")
        help2man(a.wharfd, "S3-compatible object server with an RDMA data path", inc,
                 os.path.join(a.out, "wharfd.1"))
        inc = os.path.join(tmp, "wharf.h2m")
        with open(inc, "w") as f:
            f.write("[SEE ALSO]\n\\fBwharfd\\fR(1)\n")
        help2man(a.wharf, "command-line client of wharf (S3 over RDMA)", inc,
                 os.path.join(a.out, "wharf.1"))


if __name__ == "__main__":
    main()
