#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The 8 GiB GPU checkpoint saved over itself on the GPU machine's disk: this build (the
# reclaiming queue grows) against build-device-pre (main at 7023b69: a queue of 1024 files,
# the DELETE unlinking in place when it is full), A B A B, 4 repeats per run, libwharf's
# default 4 requests per shard; ckpt.py measures the disk's durable write rate (wharfd's
# commit pattern, 16 writers) before every repeat and after the last. Then this build beside
# torch.save + fsync and DCP's FileSystemWriter on the same disk (3 repeats). From the repo
# root on the GPU machine; carry build-device and build-device-pre. Results in $OUT/ab.tgz.
set -u
OUT=${OUT:-/tmp/ab-out}
DISK=/root/wharf-disk
W=$(mktemp -d)
rm -rf "$DISK"; mkdir -p "$DISK"
{ df -hT "$DISK"; grep -E " / " /proc/mounts; nproc; } > "$W/disk.txt"
one() { # build round arms repeats
  rm -rf "$DISK/ck" "$DISK/loc"; mkdir -p "$DISK/ck" "$DISK/loc"
  ( source "$1/env.sh" && timeout 200 python3 bench/py/ckpt.py --gib 8 --device cuda \
      --arms "$3" --repeats "$4" --overwrite --no-limits --data "$DISK/ck" \
      --local-dir "$DISK/loc" --server-arg=--log-level=info --results "$W" \
      --tag "disk-$1-$2" > "$W/ckpt-$1-$2.log" 2>&1 )
  echo "== $1 round $2 rc=$?"
  grep -E "^  save|^rdma|^torchfs|^dcpfs|durable write|_over_" "$W/ckpt-$1-$2.log"
  grep -E "method=DELETE|index.json api=PutObject" "$DISK/ck/wharfd.log" > "$W/req-$1-$2.txt"
  echo "DELETE dur_ms: $(grep "method=DELETE" "$W/req-$1-$2.txt" | \
    sed -E 's/.*dur_ms=([0-9.]+).*/\1/' | tr '\n' ' ')"
  tar -C "$W" -czf "$OUT/ab.tgz" .
}
LIMIT=${LIMIT:-590}
left() { [ $((LIMIT - SECONDS)) -gt "$1" ] || { echo "stopped: ${SECONDS}s used of ${LIMIT}"; false; }; }
for r in 1 2; do
  left 90 && one build-device $r rdma 4
  left 90 && one build-device-pre $r rdma 4
done
left 150 && one build-device 3 rdma,torchfs,dcpfs 3
tar -C "$W" -czf "$OUT/ab.tgz" .
rm -rf "$DISK" "$W"
