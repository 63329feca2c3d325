#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The GPU machine, second call: processes that add up (1 and 8 client processes fetching into
# host memory, rdma-shm against HTTP; GETs into GPU memory from 1 and 8 processes; the 8-rank
# checkpoint save and restore with 8 processes on one GPU against 1 rank), PUT on /dev/shm as
# mounted (server CPU per GB), and cold reads against the disk's own O_DIRECT rate. Run from
# the repo root after `source build-device/env.sh`; everything lands in $OUT/all.tgz.
# BUDGET (s, default 560): a step starts only while enough of it is left.
set -u
B=${BUDGET:-560}
O=/tmp/o; rm -rf $O; mkdir -p $O
left() { [ $((SECONDS + $1)) -lt $B ]; }
{ date -u; nvidia-smi -L; nproc; free -g | head -2; uname -r
  mount | grep -E ' on / | /dev/shm '; df -h / /dev/shm /var/tmp; } > $O/machine.txt 2>&1
cat $O/machine.txt
if left 110; then
  timeout 105 python3 bench/py/gpu_procs.py --gib 8 --procs 8 --streams 4 --single-streams 16 \
    --repeats 3 --results $O > $O/gpu_procs.log 2>&1; echo "== $(date -u +%T) gpu_procs rc=$?"
  tail -12 $O/gpu_procs.log | cut -c1-300
fi
if left 110; then
  timeout 105 python3 bench/run_local.py --data /dev/shm/procs -- fetch --sizes 256M \
    --concurrency 4,16 --processes 1,8 --budget 4G --repeats 3 --results $O --tag procs \
    > $O/procs.log 2>&1; echo "== $(date -u +%T) procs rc=$?"; tail -16 $O/procs.log | cut -c1-300
  rm -rf /dev/shm/procs
fi
if left 100; then
  timeout 95 python3 bench/py/ddp_ckpt.py --nproc 8 --ranks 1,8 --device cuda --backend gloo \
    --gib-per-rank 0.5 --arms rdma --repeats 3 --no-limits --data /dev/shm/ddp --results $O \
    > $O/ddp8.log 2>&1; echo "== $(date -u +%T) ddp8 rc=$?"; tail -14 $O/ddp8.log | cut -c1-300
  rm -rf /dev/shm/ddp
fi
if left 80; then
  timeout 75 python3 bench/run_local.py --data /dev/shm/put -- put --sizes 256M \
    --concurrency 1,16 --budget 4G --repeats 3 --results $O --tag put-shm \
    > $O/put-shm.log 2>&1; echo "== $(date -u +%T) put rc=$?"; tail -12 $O/put-shm.log | cut -c1-300
  rm -rf /dev/shm/put
fi
if left 80; then
  timeout 75 python3 bench/py/cold_get.py --gib 2 --repeats 3 --data /var/tmp/cold --results $O \
    > $O/cold_get.log 2>&1; echo "== $(date -u +%T) cold_get rc=$?"; tail -8 $O/cold_get.log | cut -c1-300
  rm -rf /var/tmp/cold
fi
tar czf $OUT/all.tgz -C $O .
echo "== $(date -u +%T) done at ${SECONDS}s"
