#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The 8 GiB GPU checkpoint saved over itself on the machine's disk (--overwrite: from the second
# repeat on, the old generation's shards are deleted inside the save, after its commit), with
# large released objects given back off the request (build-device) against the build before
# (build-device-pre: unlinked inside the DELETE), A B A B, 3 repeats each (the first repeat of
# each deletes nothing). The disk's durable write rate measured first (bench/disk_commit.py,
# wharfd's commit pattern at 16 writers, the best cell of the earlier runs; shortened to fit the
# device time left). From the repo root on the GPU machine; carry build-device and
# build-device-pre. Results in $OUT.
set -eu
# (not D: env.sh sets D to its build folder; the 15:17 run used D and so wrote its checkpoints
# under the repo copy's build-device*/ck, see README.md)
OUT=${OUT:-/tmp/ck-out}
DISK=/root/wharf-disk
mkdir -p "$OUT/r" "$DISK/lim"
{ df -hT "$DISK" "$(pwd)"; grep -E " / | /work" /proc/mounts; } | tee "$OUT/r/disk.txt"
timeout 30 python3 bench/disk_commit.py "$DISK/lim" --patterns commit+sfr --writers 16 \
  --mib 64 --files 4 --repeats 1 --best | tee "$OUT/r/durable.txt" || true
rm -rf "$DISK/lim"
for r in 1 2; do
for b in build-device build-device-pre; do
  rm -rf "$DISK/ck"; mkdir -p "$DISK/ck"
  rc=0
  ( source "$b/env.sh" && timeout 70 python3 bench/py/ckpt.py --gib 8 --device cuda --arms rdma \
      --repeats 3 --overwrite --no-limits --data "$DISK/ck" --results "$OUT/r" --tag "disk-$b-$r" \
      > "$OUT/r/ckpt-$b-$r.log" 2>&1 ) || rc=$?
  echo "== ckpt $b round $r rc=$rc"; grep -E "^  save|^rdma" "$OUT/r/ckpt-$b-$r.log" || true
done
done
rm -rf "$DISK"
