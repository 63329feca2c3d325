#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# scripts/format.sh check|fix [FILE|DIR...]: clang-format over the C sources (src/ include/
# tests/ fuzz/ bench/, *.c and *.h), or over the files and directories named. The version is
# pinned: clang-format's output changes between major versions, so a tree formatted by one
# fails another's check.
# `make format-check` and `make format` call this.
set -euo pipefail
cd "$(dirname "$0")/.."
WANT_MAJOR=14
CLANG_FORMAT=${CLANG_FORMAT:-clang-format-$WANT_MAJOR}
mode=${1:?usage: scripts/format.sh check|fix [FILE...]}
shift

if ! command -v "$CLANG_FORMAT" >/dev/null; then
    echo "format: $CLANG_FORMAT not found; install Debian's clang-format-$WANT_MAJOR" \
         "(make deps) or set CLANG_FORMAT to a clang-format $WANT_MAJOR" >&2
    exit 2
fi
ver=$("$CLANG_FORMAT" --version)
major=$(sed -n 's/.*clang-format version \([0-9]*\)\..*/\1/p' <<<"$ver")
if [ "$major" != "$WANT_MAJOR" ]; then
    echo "format: $CLANG_FORMAT is major version ${major:-unknown} ($ver); the tree is" \
         "formatted with clang-format $WANT_MAJOR: install clang-format-$WANT_MAJOR" >&2
    exit 2
fi

# Directories (the default: the five source trees) stand for their *.c and *.h files.
[ $# -gt 0 ] || set -- src include tests fuzz bench
files=()
for a in "$@"; do
    if [ -d "$a" ]; then
        mapfile -t -O ${#files[@]} files < <(find "$a" -type f \( -name '*.c' -o -name '*.h' \) |
                                             LC_ALL=C sort)
    else
        files+=("$a")
    fi
done
[ ${#files[@]} -gt 0 ] || { echo "format: no files" >&2; exit 2; }

case $mode in
check)
    # --dry-run --Werror: exit non-zero and name each file and line that would change
    if ! "$CLANG_FORMAT" --style=file --dry-run --Werror "${files[@]}"; then
        echo "format: files above differ from clang-format $WANT_MAJOR; run 'make format'" >&2
        exit 1
    fi
    echo "format: ${#files[@]} files match clang-format $WANT_MAJOR"
    ;;
fix)
    "$CLANG_FORMAT" --style=file -i "${files[@]}"
    echo "format: ${#files[@]} files formatted with clang-format $WANT_MAJOR"
    ;;
*)
    echo "usage: scripts/format.sh check|fix [FILE...]" >&2
    exit 2
    ;;
esac
