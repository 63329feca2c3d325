#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# scripts/check_readme.sh [ROOT]: README.md is the front door, at most README_MAX_LINES (150)
# lines: what wharf is, the quick start, where things are, the docs index. Detail goes in docs/.
# `make doc-check` calls this.
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"
max=${README_MAX_LINES:-150}
n=$(wc -l <README.md)
if [ "$n" -gt "$max" ]; then
    echo "check_readme: README.md has $n lines, at most $max: move detail into docs/ and" \
         "link it from docs/README.md" >&2
    exit 1
fi
echo "check_readme: README.md has $n lines (at most $max)"
