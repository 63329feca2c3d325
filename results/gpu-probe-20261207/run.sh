#!/usr/bin/env bash
# What bounds a load into GPU memory, restores on /dev/shm as mounted (4 KiB pages), and cold
# reads against the disk: the probe without wharf, then wharfd's GPU GET reading its source
# from a mapping (map, the default) against pread into its pinned buffers (read), paired
# A B A B. Run on the GPU machine from the repo root after `source build-device/env.sh`;
# everything lands in $OUT/all.tgz. Each step is skipped once 540 s have passed.
set -u
O=/tmp/o; rm -rf $O; mkdir -p $O
P=build-device/bench/h2d_probe
left() { [ $SECONDS -lt ${1:-540} ]; }
{ date -u; nvidia-smi -L; nproc; free -g | head -2; uname -r
  mount | grep -E ' on / | /dev/shm |/var/tmp'; df -h / /dev/shm /var/tmp
  cat /sys/kernel/mm/transparent_hugepage/shmem_enabled /sys/kernel/mm/transparent_hugepage/enabled
  lsblk -d -o NAME,ROTA,SIZE,MODEL; } > $O/machine.txt 2>&1
cat $O/machine.txt
probe() { # tag file [args]
  local tag=$1 f=$2; shift 2
  timeout 120 $P --file "$f" --gib 8 --repeats 3 "$@" > $O/h2d-$tag.json 2> $O/h2d-$tag.log
  echo "== $(date -u +%T) h2d $tag rc=$?"; cat $O/h2d-$tag.json; tail -3 $O/h2d-$tag.log; rm -f "$f"
}
probe shm /dev/shm/h2d.bin
left 400 && probe disk /var/tmp/h2d.bin
for round in 1 2; do
  for src in map read; do
    left 480 || break
    rm -rf /dev/shm/ck
    WHARF_CUDA_SOURCE=$src timeout 100 python3 bench/py/ckpt.py --gib 8 --device cuda --arms rdma \
      --repeats 3 --no-limits --data /dev/shm/ck --results $O --tag shm-$src-$round \
      > $O/ckpt-shm-$src-$round.log 2>&1
    echo "== $(date -u +%T) ckpt $src $round rc=$?"; grep -E -i "restore|load" $O/ckpt-shm-$src-$round.log | tail -4
  done
done
rm -rf /dev/shm/ck
if left 470; then
  timeout 70 python3 bench/py/cold_get.py --gib 2 --repeats 3 --data /var/tmp/cold --results $O \
    > $O/cold_get.log 2>&1; echo "== cold_get rc=$?"; tail -8 $O/cold_get.log
fi
rm -rf /var/tmp/cold
tar czf $OUT/all.tgz -C $O .
echo "== $(date -u +%T) done at ${SECONDS}s"
