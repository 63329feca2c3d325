#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# scripts/thread-safety.sh BUILD_DIR: clang's thread-safety analysis (-Wthread-safety, as an
# error) over every src/ translation unit of BUILD_DIR/compile_commands.json, with each unit's
# own flags (its -W flags replaced). Only code that locks through src/shared/base/tsa.h's
# wh_mutex_t and annotations is analysed; the rest compiles silently. `make thread-safety` calls this.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: scripts/thread-safety.sh BUILD_DIR}
CLANG=${CLANG:-clang}
command -v "$CLANG" >/dev/null || { echo "thread-safety: $CLANG not found (make deps)" >&2; exit 2; }
[ -f "$build/compile_commands.json" ] ||
    { echo "thread-safety: no $build/compile_commands.json; configure first" >&2; exit 2; }
start=$(date +%s)
/usr/bin/python3 - "$build/compile_commands.json" "$PWD/src/" "$CLANG" "${JOBS:-$(nproc)}" <<'PY'
import json, shlex, subprocess, sys
from concurrent.futures import ThreadPoolExecutor

db, root, clang, jobs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
units = [e for e in json.load(open(db)) if e["file"].startswith(root)]

def check(e):
    args = e["arguments"] if "arguments" in e else shlex.split(e["command"])
    out, skip = [clang], False
    for a in args[1:]:
        if skip:
            skip = False
        elif a == "-o":
            skip = True
        elif a.startswith("-W") or a == "-c":
            continue
        else:
            out.append(a)
    out += ["-fsyntax-only", "-Wthread-safety", "-Werror"]
    p = subprocess.run(out, cwd=e["directory"], capture_output=True, text=True)
    return e["file"], p.returncode, p.stderr

bad = 0
with ThreadPoolExecutor(jobs) as ex:
    for f, rc, err in ex.map(check, units):
        if rc != 0:
            bad += 1
            sys.stderr.write(err)
print(f"thread-safety: {len(units)} translation units, {bad} with findings")
sys.exit(1 if bad else 0)
PY
echo "thread-safety: $(( $(date +%s) - start )) s"
