#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# This tree's build only: three rounds of (the disk's durable write rate with wharfd's commit
# pattern at 16 writers, then the 8 GiB GPU checkpoint saved over itself 3 times). As run at
# 15:29 from the device tool's command line, with DISK in place of the D it used (env.sh sets
# D: the run wrote its checkpoints under the repo copy's build-device/ck, see ../README.md).
set -u
OUT=${OUT:-/tmp/ck2-out}
DISK=/root/wharf-disk
mkdir -p "$OUT/r" "$DISK"
{ df -hT "$DISK" "$(pwd)"; grep -E " / | /work" /proc/mounts; } | tee "$OUT/r/disk.txt"
for r in $(seq 1 "${ROUNDS:-3}"); do
  mkdir -p "$DISK/lim"
  timeout 30 python3 bench/disk_commit.py "$DISK/lim" --patterns commit+sfr --writers 16 \
    --mib 64 --files 4 --repeats 1 --best | tee "$OUT/r/durable-$r.txt"
  rm -rf "$DISK/lim" "$DISK/ck"; mkdir -p "$DISK/ck"
  ( source build-device/env.sh && timeout 75 python3 bench/py/ckpt.py --gib 8 --device cuda \
      --arms rdma --repeats 3 --overwrite --no-limits --data "$DISK/ck" --results "$OUT/r" \
      --tag "disk-new-$r" > "$OUT/r/ckpt-new-$r.log" 2>&1 )
  echo "== round $r rc=$?"; grep -E "^  save|^rdma" "$OUT/r/ckpt-new-$r.log"
done
rm -rf "$DISK"
