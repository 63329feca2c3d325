#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# PUT 256 MiB over rdma ofi+shm, 1 and 16 streams: a tmpfs mounted huge=always (2 MiB pages)
# against /dev/shm (4 KiB pages), one build, paired A B A B; then, on the huge tmpfs,
# --data-writes mapped against the default. Run on the GPU machine from the repo root after
# `source build-device/env.sh`; results land in $OUT.
set -eu
OUT=${OUT:-/tmp/put-out}
mkdir -p /mnt/hp
mountpoint -q /mnt/hp || mount -t tmpfs -o huge=always,size=48g tmpfs /mnt/hp
grep /mnt/hp /proc/mounts
G="put --sizes 256M --concurrency 1,16 --arms rdma:ofi+shm --repeats 3 --multipart-threshold 1G"
AB_A_DATA=/mnt/hp/wp AB_A_NAME=huge AB_B_NAME=4k \
  bench/put_ab.sh "$OUT/fs" /dev/shm/wp build-device build-device 3 -- $G > /dev/null 2>&1
grep -E "^==|^put " "$OUT/fs/put-ab.log"
AB_A_ARGS=--wharfd-arg=--data-writes=mapped AB_A_NAME=mapped AB_B_NAME=buffered \
  bench/put_ab.sh "$OUT/mapped" /mnt/hp/wp build-device build-device 2 -- $G > /dev/null 2>&1
grep -E "^==|^put " "$OUT/mapped/put-ab.log"
