#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# crc64nvme in AVX-512 registers (build-device) against four 128-bit lanes (build-device-base,
# the commit before), RDMA PUT of 256 MiB objects on a tmpfs mounted huge=always, paired
# A B A B, 3 rounds, 3 repeats per cell, machine limits (the crc's rate and code among them) in
# every run. From the repo root on the GPU machine after `source build-device/env.sh`; carry
# build-device and build-device-base. Results in $OUT.
set -eu
OUT=${OUT:-/tmp/crc-out}
mkdir -p /mnt/hp "$OUT"
mountpoint -q /mnt/hp || mount -t tmpfs -o huge=always,size=48g tmpfs /mnt/hp
for b in build-device build-device-base; do
  echo "== limits $b"; "$b/bench/limits" --bytes 256 --repeats 1 | tee "$OUT/limits-$b.json" |
    grep -A3 -E '"crc64nvme_1"|crc64nvme_impl|"memcpy_n"' | grep -E 'crc|median|memcpy'
done
G="put --sizes 256M --concurrency 1,16 --arms rdma:ofi+shm --repeats 3 --multipart-threshold 1G"
AB_A_NAME=wide AB_B_NAME=base \
  bench/put_ab.sh "$OUT/huge" /mnt/hp/wp build-device build-device-base 3 -- $G >/dev/null 2>&1 || echo "put_ab rc=$?"
grep -E "^==|^put " "$OUT/huge/put-ab.log"
