#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# On the 2-vCPU VM: a 3 GiB checkpoint of CPU tensors saved over itself on the VM's disk (ext4,
# discard), this build (BUILD_A, default build/) against BUILD_B (main at 7023b69: the reclaim
# queue of 1024 files), A B A B, 4 repeats per run; ckpt.py measures the disk's durable write
# rate before every repeat and after the last. From the repo root, as root.
set -u
A=${BUILD_A:-$(pwd)/build}
B=${BUILD_B:?set BUILD_B to the build before}
OUT=${OUT:-$(pwd)/results/vm/ckpt-overwrite-durable-20261206/r}
DISK=${DISK:-/var/tmp/wharf-ckpt-disk}
mkdir -p "$OUT"; rm -rf "$DISK"; mkdir -p "$DISK"
{ df -hT "$DISK"; grep -E " / " /proc/mounts; nproc; } > "$OUT/disk.txt"
unset AWS_CA_BUNDLE
one() { # label build round
  rm -rf "$DISK/ck"; mkdir -p "$DISK/ck"
  WHARF_BUILD_DIR="$2" WHARF_LIB="$2/libwharf.so" timeout 400 /usr/bin/python3 bench/py/ckpt.py \
    --gib 3 --arms rdma --repeats 4 --overwrite --no-limits --data "$DISK/ck" \
    --server-arg=--log-level=info --results "$OUT" --tag "vm-$1-$3" > "$OUT/ckpt-$1-$3.log" 2>&1
  echo "== $1 round $3 rc=$?"
  grep -E "^  save|^rdma|durable write|_over_" "$OUT/ckpt-$1-$3.log"
  echo "DELETE dur_ms: $(grep "method=DELETE" "$DISK/ck/wharfd.log" | \
    sed -E 's/.*dur_ms=([0-9.]+).*/\1/' | tr '\n' ' ')"
}
for r in 1 2; do one A "$A" $r; one B "$B" $r; done 2>&1 | tee "$OUT/summary.txt"
rm -rf "$DISK"
