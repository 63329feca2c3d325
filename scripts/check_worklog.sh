#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# scripts/check_worklog.sh: fails when a file in the repository reads like a work log: it
# speaks of the session or the wave it was written in, of machines lent for it, of a work log,
# of issue numbers, or of folders outside the repository (../shared). The repository states
# facts (what was measured, on which machine and date), not how the work went.
# `make doc-check` calls this; tests/docs/test_doc_checks.sh checks that it fails on such text.
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"
# Built from pieces, so this file does not match itself.
s='session' w='wave' l='lent'
pattern="this $s|last $w|this $w|\\b$l\\b|work log|issue #[0-9]|\\.\\./shared|/work/shared"
if hits=$(git grep -n -I -i -E --untracked "$pattern" -- . ':!scripts/check_worklog.sh'); then
    echo "check_worklog: these lines read like a work log (say what is true, with its machine" \
         "and date, instead):" >&2
    cut -c1-200 <<<"$hits" >&2
    exit 1
fi
echo "check_worklog: no work-log phrases"
