#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Giving a released generation back in durable steps (holes of 256 MiB punched from the end,
# fdatasync after each; build-device) against one unlink per file (build-device-pre, main at
# 7023b69): the 8 GiB GPU checkpoint saved over itself, 4 repeats per run (from the second on,
# each save deletes the generation before it after its commit), A B A B, with wharfd's
# request log (dur_ms of every DELETE). First the disk's durable write rate (disk_commit.py,
# wharfd's commit pattern at 16 writers) and bench/disk_reclaim.py (unlink against punch, the
# same 8 GiB). From the repo root on the GPU machine; carry build-device and build-device-pre.
set -u
OUT=${OUT:-/tmp/steps-out}
DISK=/root/wharf-disk
mkdir -p "$OUT/r" "$DISK/lim"
{ df -hT "$DISK" "$(pwd)"; grep -E " / " /proc/mounts; } | tee "$OUT/r/disk.txt"
timeout 40 python3 bench/disk_commit.py "$DISK/lim" --patterns commit+sfr --writers 16 \
  --mib 64 --files 4 --repeats 1 --best | tee "$OUT/r/durable.txt"
rm -rf "$DISK/lim"
timeout 120 python3 bench/disk_reclaim.py "$DISK/dr" --gib 8 --rounds 2 --modes unlink,punch \
  --json "$OUT/r/disk_reclaim.json" | tee "$OUT/r/disk_reclaim.txt"
rm -rf "$DISK/dr"
for r in 1 2; do
for b in build-device build-device-pre; do
  rm -rf "$DISK/ck"; mkdir -p "$DISK/ck"
  rc=0
  ( source "$b/env.sh" && timeout 100 python3 bench/py/ckpt.py --gib 8 --device cuda --arms rdma \
      --repeats 4 --overwrite --no-limits --data "$DISK/ck" --server-arg=--log-level=info \
      --results "$OUT/r" --tag "disk-$b-$r" > "$OUT/r/ckpt-$b-$r.log" 2>&1 ) || rc=$?
  echo "== ckpt $b round $r rc=$rc"; grep -E "^  save|^rdma" "$OUT/r/ckpt-$b-$r.log" || true
  grep -E "method=DELETE|index.json api=PutObject" "$DISK/ck/wharfd.log" | \
    sed -E 's/.*ts=([^ ]+).*method=([A-Z]+) path=([^ ]+) api=([^ ]+).*dur_ms=([0-9.]+).*/\1 \2 \4 \3 \5/' \
    > "$OUT/r/requests-$b-$r.txt"
done
done
rm -rf "$DISK"
