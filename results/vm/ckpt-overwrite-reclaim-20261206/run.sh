#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# On the 2-vCPU VM's disk (ext4, mounted with discard): a 2 GiB checkpoint (CPU tensors) saved
# over itself 3 times (--overwrite: from the second repeat on the save deletes the old
# generation after its commit), with large released objects given back off the request (A:
# this tree's build) against the build before (B: unlinked inside the DELETE), paired A B A B,
# 3 rounds; the disk's durable write rate measured first with wharfd's commit pattern.
#   results/vm/ckpt-overwrite-reclaim-20261206/run.sh BUILD_A BUILD_B OUT
set -eu
A=$1 B=$2 OUT=$3
D=/root/wharf-ckpt-ab
mkdir -p "$OUT" "$D/lim"
{ df -hT "$D"; grep -E " / " /proc/mounts; } > "$OUT/disk.txt"
/usr/bin/python3 bench/disk_commit.py "$D/lim" --patterns commit+sfr --writers 1,16 --mib 64 \
  --files 4 --repeats 3 --best | tee "$OUT/durable.txt"
rm -rf "$D/lim"
for r in 1 2 3; do
  for side in A B; do
    b=$A; [ $side = B ] && b=$B
    rm -rf "$D/ck"; mkdir -p "$D/ck"
    WHARF_BUILD_DIR=$(cd "$b" && pwd) timeout 600 /usr/bin/python3 bench/py/ckpt.py --gib 2 \
      --device cpu --arms rdma --repeats 3 --overwrite --no-limits --data "$D/ck" \
      --results "$OUT" --tag "overwrite-$side-$r" > "$OUT/ckpt-$side-$r.log" 2>&1 || echo "rc=$?"
    echo "== $side round $r"; grep -E "^  save" "$OUT/ckpt-$side-$r.log"
  done
done
rm -rf "$D"
