#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The whole suite on this machine, one result JSON per program in RESULTS (default results/),
# then the report (RESULTS/report.md and RESULTS/plots/). About 20 minutes on a 2-core VM.
#   WHARF_BUILD_DIR=build bash bench/run_suite.sh [RESULTS]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
results=${1:-$here/../results}
export WHARF_BUILD_DIR=${WHARF_BUILD_DIR:-$here/../build}
py=/usr/bin/python3
data=$(mktemp -d /tmp/wharf-bench-data-XXXXXX)
trap 'rm -rf "$data"' EXIT
run() { echo "== $*" >&2; "$py" "$here/run_local.py" --data "$data" -- "$@" --results "$results" || echo "== failed ($?): $*" >&2; }

# B1 default grid: sizes 1..256 MiB x concurrency 1..32, rdma (ofi+shm) vs http
run fetch
# RDMA against HTTP: 256 MiB, c1 and c4, rdma-shm / rdma-tcp / http, GET and PUT
run rdma-vs-http --skip-upload
# scaling across client processes
run fetch --sizes 64M,256M --concurrency 1,4 --processes 1,2,4 \
    --arms rdma:ofi+shm,rdma:ofi+tcp,http --skip-upload --tag scaling
# PUT grid (small: PUT is server-bound here)
run put --sizes 4M,64M,256M --concurrency 1,4 --arms rdma:ofi+shm,rdma:ofi+tcp,http
# wharfd against nginx over HTTP
echo "== http_vs_nginx" >&2
"$py" "$here/http_vs_nginx.py" --results "$results" || echo "== failed: http_vs_nginx" >&2
"$py" "$here/report.py" "$results"
