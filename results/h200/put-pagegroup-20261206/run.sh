#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Whole-page writes on a huge-page tmpfs: this build (grouped: each copy thread writes 2 MiB
# at a time where st_blksize says 2 MiB) against the build before it (256 KiB writes), paired
# A B A B on a tmpfs mounted huge=always; then on /dev/shm (4 KiB pages: nothing changes
# there); then the 8 GiB GPU checkpoint save and restore with each build on the huge tmpfs.
# From the repo root on the GPU machine after `source build-device/env.sh`; carry
# build-device and build-device-base. Results in $OUT.
set -eu
OUT=${OUT:-/tmp/pg-out}
mkdir -p /mnt/hp "$OUT"
mountpoint -q /mnt/hp || mount -t tmpfs -o huge=always,size=48g tmpfs /mnt/hp
G="put --sizes 256M --concurrency 1,16 --arms rdma:ofi+shm --repeats 3 --multipart-threshold 1G"
AB_A_NAME=grouped AB_B_NAME=base \
  bench/put_ab.sh "$OUT/huge" /mnt/hp/wp build-device build-device-base 3 -- $G >/dev/null 2>&1
grep -E "^==|^put " "$OUT/huge/put-ab.log"
AB_A_NAME=grouped AB_B_NAME=base \
  bench/put_ab.sh "$OUT/4k" /dev/shm/wp build-device build-device-base 2 -- $G >/dev/null 2>&1
grep -E "^==|^put " "$OUT/4k/put-ab.log"
for r in 1 2; do
  for b in build-device build-device-base; do
    rm -rf /mnt/hp/ck; mkdir -p /mnt/hp/ck
    WHARF_BUILD_DIR=$PWD/$b timeout 200 python3 bench/py/ckpt.py --gib 8 --device cuda \
      --arms rdma --repeats 3 --overwrite --no-limits --data /mnt/hp/ck --results "$OUT" \
      --tag "ckpt-$b-$r" > "$OUT/ckpt-$b-$r.log" 2>&1
    echo "== ckpt $b round $r rc=$?"; grep -E "^  save|^rdma" "$OUT/ckpt-$b-$r.log"
  done
done
rm -rf /mnt/hp/ck
