#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The GPU machine in one call, most important first: the 8 GiB safetensors load and the 8 GiB
# restore from /dev/shm with wharfd's GPU GET reading into pinned buffers (WHARF_CUDA_SOURCE=
# read) against DMA from registered page-cache pages (register), paired A B A B; the Lightning
# preemption test (whole output kept); GETs into GPU memory from 1 and 8 processes; as much of
# tests/python as is left; cold reads against the disk's O_DIRECT rate. Run from the repo root
# after `source build-device/env.sh`; everything lands in $OUT/all.tgz.
# BUDGET (s, default 560): a step starts only while enough of it is left.
set -u
B=${BUDGET:-560}
O=/tmp/o; rm -rf $O; mkdir -p $O
left() { [ $((SECONDS + $1)) -lt $B ]; }
{ date -u; nvidia-smi -L; nproc; free -g | head -2; uname -r
  mount | grep -E ' on / | /dev/shm '; df -h / /dev/shm /var/tmp
  python3 -c 'import torch, sys; print(sys.version.split()[0], "torch", torch.__version__)'
  python3 -c 'import lightning; print("lightning", lightning.__version__)' 2>&1 | tail -1
  python3 -c 'import xdist; print("xdist", xdist.__version__)' 2>&1 | tail -1; } > $O/machine.txt 2>&1
cat $O/machine.txt
st() { # source round
  rm -rf /dev/shm/st
  WHARF_CUDA_SOURCE=$1 timeout 80 python3 bench/py/st_load.py --gib 8 --shards 4 --device cuda \
    --arms rdma --repeats 3 --data /dev/shm/st --results $O --tag shm-$1-$2 > $O/st-shm-$1-$2.log 2>&1
  echo "== $(date -u +%T) st_load $1 $2 rc=$?"; tail -5 $O/st-shm-$1-$2.log | cut -c1-300
  rm -rf /dev/shm/st
}
ck() { # source round
  rm -rf /dev/shm/ck
  WHARF_CUDA_SOURCE=$1 timeout 80 python3 bench/py/ckpt.py --gib 8 --device cuda --arms rdma \
    --repeats 3 --no-limits --data /dev/shm/ck --results $O --tag shm-$1-$2 > $O/ckpt-shm-$1-$2.log 2>&1
  echo "== $(date -u +%T) ckpt $1 $2 rc=$?"; grep -E -i "restore|load|save" $O/ckpt-shm-$1-$2.log | tail -4 | cut -c1-300
  rm -rf /dev/shm/ck
}
left 170 && { st read 1; st register 1; }
left 170 && { ck read 1; ck register 1; }
if left 110; then
  timeout 100 python3 -m pytest -q -p no:cacheprovider -rs -s tests/python/test_lightning_preempt.py \
    > $O/pytest-lightning-preempt.log 2>&1; echo "== $(date -u +%T) preempt rc=$?"
  tail -25 $O/pytest-lightning-preempt.log | cut -c1-300
fi
if left 110; then
  timeout 100 python3 bench/py/gpu_procs.py --gib 8 --procs 8 --streams 4 --single-streams 16 \
    --repeats 3 --results $O > $O/gpu_procs.log 2>&1; echo "== $(date -u +%T) gpu_procs rc=$?"
  tail -8 $O/gpu_procs.log | cut -c1-300
fi
N=""; python3 -c 'import xdist' 2>/dev/null && N="-n 8"
if left 100; then
  timeout $((B - SECONDS - 80)) python3 -m pytest -q -p no:cacheprovider -rs $N tests/python \
    --ignore=tests/python/test_package.py --ignore=tests/python/test_wheel.py \
    --deselect tests/python/test_lightning_preempt.py::test_sigterm_mid_epoch_saves_and_resumes \
    > $O/pytest-all.log 2>&1
  echo "== $(date -u +%T) pytest rc=$?"; tail -25 $O/pytest-all.log | cut -c1-300
fi
if left 70; then
  timeout 65 python3 bench/py/cold_get.py --gib 2 --repeats 3 --data /var/tmp/cold --results $O \
    > $O/cold_get.log 2>&1; echo "== $(date -u +%T) cold_get rc=$?"; tail -6 $O/cold_get.log | cut -c1-300
  rm -rf /var/tmp/cold
fi
tar czf $OUT/all.tgz -C $O .
echo "== $(date -u +%T) done at ${SECONDS}s"
