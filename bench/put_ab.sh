#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Paired PUT runs of two wharfd builds, A B A B, each with a fresh wharfd of its own on the same
# data file system (bench/run_local.py), the machine's limits measured in every run:
#   bench/put_ab.sh OUT DATA BUILD_A BUILD_B ROUNDS [run_local args --] wharf_bench args
# e.g. bench/put_ab.sh results/x /dev/shm/wp build-device build-base 2 -- put --sizes 256M \
#        --concurrency 1,16 --arms rdma:ofi+shm --repeats 3 --multipart-threshold 1G
# Each run's JSON (tag ab-<A or B>-<round>) and log go to OUT. The result JSONs carry the
# build's name in params.tag, so report.py can pair them. One build against itself with other
# server flags: AB_A_ARGS / AB_B_ARGS (run_local args for that side only, split on spaces) and
# AB_A_NAME / AB_B_NAME (the names in the tags; default the build folder's name), e.g.
#   AB_A_ARGS=--wharfd-arg=--data-writes=mapped AB_A_NAME=mapped AB_B_NAME=buffered \
#     bench/put_ab.sh results/x /dev/shm/wp build-device build-device 2 -- put ...
# or striped PUTs (one PUT into N files) against one file:
#   AB_A_ARGS=--wharfd-arg=--put-stripes=8 AB_A_NAME=striped \
#   AB_B_ARGS=--wharfd-arg=--put-stripes=1 AB_B_NAME=onefile \
#     bench/put_ab.sh results/x /dev/shm/wp build-device build-device 3 -- put ...
# or one build on two data file systems (AB_A_DATA / AB_B_DATA replace DATA for that side):
#   AB_A_DATA=/mnt/huge/wp AB_A_NAME=tmpfs-huge AB_B_NAME=tmpfs-4k \
#     bench/put_ab.sh results/x /dev/shm/wp build-device build-device 3 -- put ...
set -euo pipefail
[ $# -ge 6 ] || { sed -n 2,8p "$0" >&2; exit 2; }
out=$1 data=$2 a=$3 b=$4 rounds=$5
shift 5
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
rl=() ; while [ $# -gt 0 ] && [ "$1" != "--" ]; do rl+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
for r in $(seq 1 "$rounds"); do
  for side in A B; do
    if [ $side = A ]; then build=$a name=${AB_A_NAME:-} extra=${AB_A_ARGS:-} dir=${AB_A_DATA:-$data}
    else build=$b name=${AB_B_NAME:-} extra=${AB_B_ARGS:-} dir=${AB_B_DATA:-$data}; fi
    [ -n "$name" ] || name=$(basename "$build")
    read -r -a ex <<<"$extra"
    rm -rf "$dir" && mkdir -p "$dir"
    echo "== $name round $r ${extra} (data $dir)" | tee -a "$out/put-ab.log"
    WHARF_BUILD_DIR=$(cd "$build" && pwd) /usr/bin/env python3 "$here/run_local.py" --data "$dir" \
      ${rl[@]+"${rl[@]}"} ${ex[@]+"${ex[@]}"} -- "$@" --results "$out" --tag "ab-$name-$r" 2>&1 |
      tee -a "$out/put-ab.log"
    rm -rf "$dir"
  done
done
