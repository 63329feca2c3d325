#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# PUT and GET of 256 MiB over rdma ofi+shm on a tmpfs mounted huge=always: this tree (A, "probe":
# a bound shm transfer probes one byte of the requester's /proc/PID/mem around each copy)
# against main at 29bfa9e (B, "base": the full /proc check before and after every 256 KiB
# piece), paired A B A B with bench/put_ab.sh (a fresh wharfd per run, the machine's limits
# measured in every run). The client library is build-device's in both (env.sh). From the
# repo root on the GPU machine after `source build-device/env.sh`; carry build-device and
# build-device-base. Results in $OUT/r.
set -u
OUT=${OUT:-/tmp/probe-out}
mkdir -p "$OUT/r" /mnt/hp
mountpoint -q /mnt/hp || mount -t tmpfs -o huge=always,size=48g tmpfs /mnt/hp
grep " /mnt/hp " /proc/mounts | tee "$OUT/r/mount.txt"
AB_A_NAME=probe AB_B_NAME=base timeout 240 bench/put_ab.sh "$OUT/r/put" /mnt/hp/wp build-device \
  build-device-base 2 -- put --sizes 256M --concurrency 1,16 --arms rdma:ofi+shm --repeats 3 \
  --multipart-threshold 1G > /dev/null 2>&1
echo "== put rc=$?"
grep -E "^==|^put |limits GB/s" "$OUT/r/put/put-ab.log"
AB_A_NAME=probe AB_B_NAME=base timeout 150 bench/put_ab.sh "$OUT/r/get" /mnt/hp/wp build-device \
  build-device-base 1 -- fetch --sizes 256M --concurrency 1,16 --arms rdma:ofi+shm --repeats 3 \
  > /dev/null 2>&1
echo "== get rc=$?"
grep -E "^==|^get |limits GB/s" "$OUT/r/get/put-ab.log"
rm -rf /mnt/hp/wp
