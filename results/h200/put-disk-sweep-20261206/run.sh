#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# PUT 256 MiB over rdma ofi+shm on the machine's disk, this tree: striped (the default, one
# file per two cores) against one file per PUT (--put-stripes 1), A B A B, 1 / 4 / 16 streams,
# 8 GiB per measurement (--budget 8G: more than the durable-rate measurement writes, and two
# or more PUTs per stream, so that neither the last sync nor the slowest of 16 concurrent PUTs
# rules the measurement, as with the default 512 MiB). Each run measures the
# disk's durable write rate first with wharfd's own patterns (run_local.py --durable-limit);
# before them, the disk's rate by pattern and writer count (bench/disk_commit.py, commit+sfr
# and O_DIRECT). From the repo root on the GPU machine after `source build-device/env.sh`;
# carry build-device. Results in $OUT/r.
set -u
OUT=${OUT:-/tmp/sweep-out}
D=/root/wharf-disk
mkdir -p "$OUT/r" "$D/lim"
{ df -hT "$D"; grep -E " / " /proc/mounts; } | tee "$OUT/r/disk.txt"
timeout 60 python3 bench/disk_commit.py "$D/lim" --patterns commit+sfr,direct \
  --writers 1,4,16,32 --mib 64 --files 4 --repeats 1 | tee "$OUT/r/disk-patterns.txt"
rm -rf "$D/lim"
for r in 1 2; do
  for cfg in striped onefile; do
    ex=(); [ $cfg = onefile ] && ex=(--wharfd-arg=--put-stripes=1)
    rm -rf "$D/wp"; mkdir -p "$D/wp"
    timeout 125 python3 bench/run_local.py --data "$D/wp" --durable-limit "${ex[@]}" -- put \
      --sizes 256M --concurrency 1,4,16 --arms rdma:ofi+shm --repeats 3 \
      --multipart-threshold 1G --budget 8G --results "$OUT/r" --tag "disk-$cfg-$r" \
      > "$OUT/r/put-disk-$cfg-$r.log" 2>&1
    echo "== $cfg round $r rc=$?"
    grep -E "durable write limit|^put " "$OUT/r/put-disk-$cfg-$r.log"
  done
done
rm -rf "$D"
