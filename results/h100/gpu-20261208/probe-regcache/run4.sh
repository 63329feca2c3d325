#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Why DMA from registered page-cache pages ran at 5-6 GB/s inside wharfd when the probe ran it
# at the copy engine's rate: the probe with wharfd's registrations (32 MiB pieces, READ_ONLY with
# and without PORTABLE) against its own (one registration per thread's share), then wharfd's
# safetensors load with the registration's flags and size varied, against the read path.
# BUDGET (s, default 380).
set -u
B=${BUDGET:-380}
O=/tmp/o; rm -rf $O; mkdir -p $O
left() { [ $((SECONDS + $1)) -lt $B ]; }
{ date -u; nvidia-smi -L; nproc; uname -r; } > $O/machine.txt 2>&1; cat $O/machine.txt
P=build-device/bench/h2d_probe
probe() { # tag args
  local tag=$1; shift
  timeout 80 $P --file /dev/shm/h2d.bin --gib 4 --repeats 3 "$@" > $O/h2d-$tag.json 2> $O/h2d-$tag.log
  echo "== $(date -u +%T) h2d $tag rc=$?"; python3 -c "import json,sys; d=json.load(open('$O/h2d-$tag.json')); print({k: v['median'] for k, v in d['gbps'].items()}, d['register_split_s'])" 2>&1 | tail -1
  rm -f /dev/shm/h2d.bin
}
left 90 && probe share8
left 90 && probe c32f8 --reg-chunk-mib 32 --reg-flags 8
left 90 && probe c32f9 --reg-chunk-mib 32 --reg-flags 9
st() { # tag env...
  local tag=$1; shift
  rm -rf /dev/shm/st
  env "$@" timeout 75 python3 bench/py/st_load.py --gib 8 --shards 4 --device cuda \
    --arms rdma --repeats 3 --data /dev/shm/st --results $O --tag shm-$tag > $O/st-shm-$tag.log 2>&1
  echo "== $(date -u +%T) st_load $tag rc=$?"; grep -E "^repeat|^rdma" $O/st-shm-$tag.log | cut -c1-200
  rm -rf /dev/shm/st
}
left 80 && st reg-f8 WHARF_CUDA_SOURCE=register WHARF_CUDA_REGCACHE_FLAGS=8
left 80 && st reg-c512 WHARF_CUDA_SOURCE=register WHARF_CUDA_REGCACHE_CHUNK=512M
left 80 && st read WHARF_CUDA_SOURCE=read
tar czf $OUT/all.tgz -C $O .
echo "== $(date -u +%T) done at ${SECONDS}s"
