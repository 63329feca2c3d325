#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Restore of an 8 GiB GPU checkpoint: where does the first load after a save lose its time?
# A: /dev/shm, --overwrite (as before)   B: /dev/shm, a fresh key per repeat (no old
# generation being deleted)   C: a tmpfs of our own mounted huge=always (2 MiB pages), when
# the machine lets us mount one. Run on the GPU machine from the repo root, after
# `source build-device/env.sh`; results land in $OUT.
set -u
OUT=${OUT:-/tmp/restore-out}
mkdir -p "$OUT"
{ uname -r; nproc; id; cat /sys/kernel/mm/transparent_hugepage/shmem_enabled
  cat /sys/kernel/mm/transparent_hugepage/enabled; mount | grep -E "shm|tmpfs"
  command -v perf || echo "no perf"; } > "$OUT/machine.txt" 2>&1
HP=""
mkdir -p /mnt/hp && mount -t tmpfs -o huge=always,size=48g tmpfs /mnt/hp && HP=/mnt/hp
echo "huge tmpfs: ${HP:-refused}" >> "$OUT/machine.txt"
cat "$OUT/machine.txt"
run() { # tag data-dir [ckpt args]
  local tag=$1 dir=$2; shift 2
  rm -rf "$dir"; mkdir -p "$dir"
  timeout 240 python3 bench/py/ckpt.py --gib 8 --device cuda --arms rdma --repeats 3 \
    --reloads 1 --no-limits --data "$dir" --results "$OUT" --tag "$tag" "$@" \
    > "$OUT/$tag.log" 2>&1
  echo "== $tag rc=$?"; grep -E "load|save" "$OUT/$tag.log" | tail -8
  rm -rf "$dir"
}
for round in 1 2; do
  run shm-ow-$round /dev/shm/ck --overwrite
  [ -n "$HP" ] && run hp-ow-$round $HP/ck --overwrite
  run shm-fresh-$round /dev/shm/ck
done
