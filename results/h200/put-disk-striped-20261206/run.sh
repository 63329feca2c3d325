#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# PUT 256 MiB over rdma ofi+shm on the machine's disk, striped (the default: one file per two
# cores, each with its writeback started as it fills), 1 / 4 / 16 streams, two rounds, the
# disk's durable write rate measured first in each (bench/disk_commit.py with wharfd's own
# patterns); then the 8 GiB GPU checkpoint saved to and restored from the same disk.
# From the repo root on the GPU machine after `source build-device/env.sh`. $OUT/all.tgz.
set -u
OUT=${OUT:-/tmp/disk-out}
D=/root/wharf-disk
mkdir -p "$OUT/r" "$D"
{ df -hT "$D"; grep -E " / | /root" /proc/mounts; } | tee "$OUT/r/disk.txt"
for r in 1 2; do
  rm -rf "$D/wp"; mkdir -p "$D/wp"
  timeout 200 python3 bench/run_local.py --data "$D/wp" --durable-limit -- put --sizes 256M \
    --concurrency 1,4,16 --arms rdma:ofi+shm --repeats 3 --multipart-threshold 1G \
    --results "$OUT/r" --tag disk-$r > "$OUT/r/put-disk-$r.log" 2>&1
  echo "== put disk round $r rc=$?"; grep -E "durable write limit|^put " "$OUT/r/put-disk-$r.log"
done
rm -rf "$D/wp"; mkdir -p "$D/ck"
timeout 240 python3 bench/py/ckpt.py --gib 8 --device cuda --arms rdma --repeats 3 --overwrite \
  --no-limits --data "$D/ck" --results "$OUT/r" --tag disk > "$OUT/r/ckpt-disk.log" 2>&1
echo "== ckpt disk rc=$?"; grep -E "^  save|^rdma" "$OUT/r/ckpt-disk.log"
rm -rf "$D"
tar -C "$OUT/r" -czf "$OUT/all.tgz" . && rm -rf "$OUT/r"
