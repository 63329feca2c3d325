#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# On a huge-page tmpfs (whole-page writes): one copy thread per file (--put-stripes 16
# --put-threads 1: no two threads of a PUT meet on a file's lock) against the default
# (8 stripes on 16 cores, 2 threads each), paired A B A B. Then the 8 GiB GPU save with
# async_=True (blocking time). Results in $OUT/all.tgz.
set -eu
OUT=${OUT:-/tmp/s16-out}
mkdir -p /mnt/hp "$OUT/r"
mountpoint -q /mnt/hp || mount -t tmpfs -o huge=always,size=48g tmpfs /mnt/hp
G="put --sizes 256M --concurrency 1,16 --arms rdma:ofi+shm --repeats 3 --multipart-threshold 1G"
AB_A_ARGS="--wharfd-arg=--put-stripes=16 --wharfd-arg=--put-threads=1" AB_A_NAME=s16t1 \
AB_B_NAME=default \
  bench/put_ab.sh "$OUT/r" /mnt/hp/wp build-device build-device 3 -- $G >/dev/null 2>&1
grep -E "^==|^put " "$OUT/r/put-ab.log"
rm -rf /mnt/hp/ck; mkdir -p /mnt/hp/ck
timeout 200 python3 bench/py/ckpt.py --gib 8 --device cuda --arms rdma --repeats 3 --overwrite \
  --async-save --no-limits --data /mnt/hp/ck --results "$OUT/r" --tag async-huge \
  > "$OUT/r/ckpt-async-huge.log" 2>&1
echo "== ckpt async rc=$?"; grep -E "^  save|^rdma" "$OUT/r/ckpt-async-huge.log"
rm -rf /mnt/hp/ck
tar -C "$OUT/r" -czf "$OUT/all.tgz" . && rm -rf "$OUT/r"
