#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The 8 GiB GPU checkpoint saved over itself on the GPU machine's disk, with the reclaiming
# queue that grows (this build): how many part requests per shard (--concurrency, libwharf's
# default 4) bring the upload to the disk's durable rate. First the durable rate at 4 and 16
# writers (disk_commit.py, wharfd's commit pattern), then ckpt.py --repeats 4 --overwrite at
# c4 c16 c4 c16 c8, wharfd at --log-level info (each DELETE's dur_ms). From the repo root on
# the GPU machine; carry build-device. Results in $OUT/r.tgz after each run.
set -u
OUT=${OUT:-/tmp/conc-out}
DISK=/root/wharf-disk
W=$(mktemp -d)
rm -rf "$DISK"; mkdir -p "$DISK/lim"
{ df -hT "$DISK"; grep -E " / " /proc/mounts; nproc; } > "$W/disk.txt"
timeout 60 python3 bench/disk_commit.py "$DISK/lim" --patterns commit+sfr --writers 4,16 \
  --mib 64 --files 4 --repeats 1 --best | tee "$W/durable.txt"
rm -rf "$DISK/lim"
one() { # round conc
  rm -rf "$DISK/ck"; mkdir -p "$DISK/ck"
  ( source build-device/env.sh && timeout 90 python3 bench/py/ckpt.py --gib 8 --device cuda \
      --arms rdma --repeats 4 --overwrite --no-limits --data "$DISK/ck" \
      --server-arg=--log-level=info --concurrency "$2" --results "$W" --tag "disk-$1-c$2" \
      > "$W/ckpt-$1-c$2.log" 2>&1 )
  echo "== round $1 c$2 rc=$?"; grep -E "^  save|^rdma" "$W/ckpt-$1-c$2.log"
  grep -E "method=DELETE|index.json api=PutObject|CompleteMultipart" "$DISK/ck/wharfd.log" \
    > "$W/req-$1-c$2.txt"
  echo "DELETE dur_ms: $(grep "method=DELETE" "$W/req-$1-c$2.txt" | \
    sed -E 's/.*dur_ms=([0-9.]+).*/\1/' | tr '\n' ' ')"
  tar -C "$W" -czf "$OUT/r.tgz" .
}
LIMIT=${LIMIT:-590}
left() { [ $((LIMIT - SECONDS)) -gt 75 ] || { echo "stopped: ${SECONDS}s used of ${LIMIT}"; false; }; }
left && one 1 4
left && one 1 16
left && one 2 4
left && one 2 16
left && one 1 8
tar -C "$W" -czf "$OUT/r.tgz" .
rm -rf "$DISK" "$W"
