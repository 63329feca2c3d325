#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# scripts/check_spdx.sh [ROOT] [--fix]: every source file the repository tracks (C, Python,
# shell, CMake) names its license on an SPDX line within its first three lines. --fix adds
# the line where it is missing (after a shebang). `make doc-check` calls this.
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"
fix=0
[ "${2:-}" = "--fix" ] && fix=1
tag="SPDX-License-Identifier: Apache-2.0"
missing=()
while IFS= read -r f; do
    [ -f "$f" ] || continue
    head -n 3 "$f" | grep -q "SPDX-License-Identifier:" && continue
    if [ $fix = 1 ]; then
        case "$f" in
            *.c|*.h) line="/* $tag */" ;;
            *) line="# $tag" ;;
        esac
        if head -n 1 "$f" | grep -q '^#!'; then
            { head -n 1 "$f"; echo "$line"; tail -n +2 "$f"; } >"$f.spdx"
        else
            { echo "$line"; cat "$f"; } >"$f.spdx"
        fi
        chmod --reference="$f" "$f.spdx"
        mv "$f.spdx" "$f"
    else
        missing+=("$f")
    fi
done < <(git ls-files '*.c' '*.h' '*.py' '*.sh' '*.cmake' 'CMakeLists.txt' '*/CMakeLists.txt' \
           ':!:fuzz/corpus/**' ':!:tests/fixtures/**')
if [ ${#missing[@]} -gt 0 ]; then
    printf 'check_spdx: no SPDX line in the first three lines of %s\n' "${missing[@]}" >&2
    echo "check_spdx: ${#missing[@]} file(s); scripts/check_spdx.sh . --fix adds it" >&2
    exit 1
fi
echo "check_spdx: every source file names its license"
