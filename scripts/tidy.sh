#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# scripts/tidy.sh BUILD_DIR [REGEX]: clang-tidy 14 over every translation unit of
# BUILD_DIR/compile_commands.json under src/ (or those matching REGEX, e.g. "/tests/"), with
# the checks of .clang-tidy; any finding fails. The version is pinned (another major has other
# checks and other false positives). `make tidy` calls this.
set -euo pipefail
cd "$(dirname "$0")/.."
WANT_MAJOR=14
build=${1:?usage: scripts/tidy.sh BUILD_DIR [REGEX]}
regex=${2:-"^$PWD/src/"}
jobs=${JOBS:-$(nproc)}
CLANG_TIDY=${CLANG_TIDY:-clang-tidy-$WANT_MAJOR}
RUN_CLANG_TIDY=${RUN_CLANG_TIDY:-run-clang-tidy-$WANT_MAJOR}

for t in "$CLANG_TIDY" "$RUN_CLANG_TIDY"; do
    command -v "$t" >/dev/null ||
        { echo "tidy: $t not found; install Debian's clang-tidy-$WANT_MAJOR (make deps)" >&2; exit 2; }
done
ver=$("$CLANG_TIDY" --version)
major=$(sed -n 's/.*LLVM version \([0-9]*\)\..*/\1/p' <<<"$ver" | head -1)
if [ "$major" != "$WANT_MAJOR" ]; then
    echo "tidy: $CLANG_TIDY is LLVM ${major:-unknown}; the tree is checked with clang-tidy" \
         "$WANT_MAJOR: install clang-tidy-$WANT_MAJOR" >&2
    exit 2
fi
[ -f "$build/compile_commands.json" ] ||
    { echo "tidy: no $build/compile_commands.json; configure first (cmake --preset default)" >&2; exit 2; }

# The layering probes (build/layering) are sources that must fail to compile: never tidied.
n=$(/usr/bin/python3 -c 'import json, re, sys
print(sum(1 for e in json.load(open(sys.argv[1])) if re.search(sys.argv[2], e["file"])))' \
    "$build/compile_commands.json" "$regex")
echo "tidy: $n translation units, $jobs jobs, $("$CLANG_TIDY" --version | sed -n 's/.*LLVM version/LLVM/p')"
start=$(date +%s)
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# (run-clang-tidy 14 always asks for colour: stripped.)
set +o pipefail
"$RUN_CLANG_TIDY" -clang-tidy-binary "$(command -v "$CLANG_TIDY")" -p "$build" -j "$jobs" \
    -quiet "$regex" 2>&1 | sed 's/\x1b\[[0-9;]*m//g' >"$out"
rc=${PIPESTATUS[0]}
set -o pipefail
# run-clang-tidy prints each command and clang-tidy's "N warnings generated" (system headers,
# filtered out); show the findings only.
noise='^([^ ]*clang-tidy-[0-9]+ |[0-9]+ warnings?( and [0-9]+ errors?)? generated\.$|Suppressed [0-9]+ '
noise+='warnings|Use -header-filter|Running clang-tidy|Enabled checks:)'
grep -vE "$noise" "$out" || true
findings=$(grep -cE '\[[a-z]+-[a-zA-Z0-9.,-]+\]$' "$out" || true)
echo "tidy: $findings findings in $n translation units, $(( $(date +%s) - start )) s"
[ "$rc" -eq 0 ] && [ "$findings" -eq 0 ]
