#!/usr/bin/env bash
# The 8 GiB GPU checkpoint on the machine's disk: a save to a fresh key each repeat against a
# save over the last one (--overwrite: the old generation's shards are deleted inside the
# save, after its commit), 3 repeats each, with the disk's durable write rate measured first
# (bench/disk_commit.py, wharfd's commit pattern at 16 writers, the best cell of the last
# runs; shortened to fit the device time left). From the
# repo root on the GPU machine after `source build-device/env.sh`. Results in $OUT.
set -eu
OUT=${OUT:-/tmp/ck-out}
D=/root/wharf-disk
mkdir -p "$OUT/r" "$D/lim"
{ df -hT "$D"; grep -E " / " /proc/mounts; } | tee "$OUT/r/disk.txt"
timeout 40 python3 bench/disk_commit.py "$D/lim" --patterns commit+sfr --writers 16 \
  --mib 64 --files 4 --repeats 2 --best | tee "$OUT/r/durable.txt" || true
rm -rf "$D/lim"
for mode in fresh overwrite; do
  rm -rf "$D/ck"; mkdir -p "$D/ck"
  ow=""; [ $mode = overwrite ] && ow=--overwrite
  rc=0; timeout 75 python3 bench/py/ckpt.py --gib 8 --device cuda --arms rdma --repeats 3 $ow \
    --no-limits --data "$D/ck" --results "$OUT/r" --tag "disk-$mode" > "$OUT/r/ckpt-$mode.log" 2>&1 || rc=$?
  echo "== ckpt $mode rc=$rc"; grep -E "^  save|^rdma" "$OUT/r/ckpt-$mode.log"
done
rm -rf "$D"
