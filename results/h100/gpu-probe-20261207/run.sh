#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What bounds a load into GPU memory, restores on /dev/shm as mounted (4 KiB pages), and cold
# reads against the disk: the probe without wharf (bench/h2d_probe), then wharfd's GPU GET
# reading its source from a mapping (map, the default) against pread into its pinned buffers
# (read), paired A B A B; then the Lightning preemption test on CUDA. Run on the GPU machine
# from the repo root after `source build-device/env.sh`; everything lands in $OUT/all.tgz.
# BUDGET (s, default 540): a step starts only while enough of it is left.
set -u
B=${BUDGET:-540}
O=/tmp/o; rm -rf $O; mkdir -p $O
P=build-device/bench/h2d_probe
left() { [ $((SECONDS + $1)) -lt $B ]; }
{ date -u; nvidia-smi -L; nproc; free -g | head -2; uname -r
  mount | grep -E ' on / | /dev/shm '; df -h / /dev/shm
  cat /sys/kernel/mm/transparent_hugepage/shmem_enabled /sys/kernel/mm/transparent_hugepage/enabled
  python3 -c 'import torch; print("torch", torch.__version__)'
  python3 -c 'import lightning; print("lightning", lightning.__version__)' 2>&1 | tail -1; } > $O/machine.txt 2>&1
cat $O/machine.txt
probe() { # tag file [args]
  local tag=$1 f=$2; shift 2
  timeout 100 $P --file "$f" --gib 8 --repeats 3 "$@" > $O/h2d-$tag.json 2> $O/h2d-$tag.log
  echo "== $(date -u +%T) h2d $tag rc=$?"; cat $O/h2d-$tag.json; tail -3 $O/h2d-$tag.log; rm -f "$f"
}
ck() { # source round
  rm -rf /dev/shm/ck
  WHARF_CUDA_SOURCE=$1 timeout 90 python3 bench/py/ckpt.py --gib 8 --device cuda --arms rdma \
    --repeats 3 --no-limits --data /dev/shm/ck --results $O --tag shm-$1-$2 > $O/ckpt-shm-$1-$2.log 2>&1
  echo "== $(date -u +%T) ckpt $1 $2 rc=$?"; grep -E -i "restore|load|save" $O/ckpt-shm-$1-$2.log | tail -5
  rm -rf /dev/shm/ck
}
left 100 && probe shm /dev/shm/h2d.bin
left 200 && { ck map 1; ck read 1; }
if left 130; then
  timeout 120 python3 -m pytest -q -p no:cacheprovider -rs -s tests/python/test_lightning_preempt.py \
    > $O/pytest-lightning-preempt.log 2>&1; echo "== preempt rc=$?"; tail -6 $O/pytest-lightning-preempt.log
fi
left 200 && { ck map 2; ck read 2; }
left 100 && probe disk /var/tmp/h2d.bin
if left 80; then
  timeout 70 python3 bench/py/cold_get.py --gib 2 --repeats 3 --data /var/tmp/cold --results $O \
    > $O/cold_get.log 2>&1; echo "== cold_get rc=$?"; tail -4 $O/cold_get.log
fi
rm -rf /var/tmp/cold
tar czf $OUT/all.tgz -C $O .
echo "== $(date -u +%T) done at ${SECONDS}s"
