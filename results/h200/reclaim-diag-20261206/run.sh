#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Where the third overwriting save's commit waits (H100 machine, ext4 on /dev/vda mounted
# `discard`): (1) bench/disk_reclaim.py, giving 8 GiB back in one unlink per file against
# truncating it in 256 MiB synced steps, while a committer and a streamer write; (2) the 8 GiB
# GPU save over itself, 4 repeats, wharfd at --log-level info (every request's dur_ms) and the
# disk's discard counters sampled every 50 ms. From the repo root; results in $OUT.
set -u
OUT=${OUT:-/tmp/diag-out}
DISK=/root/wharf-disk
mkdir -p "$OUT/r" "$DISK"
{ df -hT "$DISK"; grep -E " / " /proc/mounts; dev=$(lsblk -no PKNAME "$(df --output=source "$DISK" | tail -1)" 2>/dev/null | head -1); echo "dev=$dev";
  for f in discard_max_bytes discard_granularity rotational scheduler write_cache; do echo "$f=$(cat /sys/block/vda/queue/$f 2>/dev/null)"; done; uname -r; } | tee "$OUT/r/disk.txt"
timeout 150 python3 bench/disk_reclaim.py "$DISK/dr" --gib 8 --rounds 2 --json "$OUT/r/disk_reclaim.json" | tee "$OUT/r/disk_reclaim.txt"
rm -rf "$DISK/dr"
# discard counters every 50 ms, bounded
python3 - "$DISK" > "$OUT/r/diskstats.txt" <<'PY' &
import os, sys, time
st = os.stat(sys.argv[1]); p = f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}/stat"
for _ in range(4000):
    f = open(p).read().split()
    print(f"{time.time():.3f} wsect={f[6]} wticks={f[7]} inflight={f[8]} dios={f[11]} dsect={f[13]} dticks={f[14]}", flush=True)
    time.sleep(0.05)
PY
SAMP=$!
rm -rf "$DISK/ck"; mkdir -p "$DISK/ck"
timeout 120 python3 bench/py/ckpt.py --gib 8 --device cuda --arms rdma --repeats 4 --overwrite \
  --no-limits --data "$DISK/ck" --server-arg=--log-level=info --results "$OUT/r" --tag diag \
  > "$OUT/r/ckpt.log" 2>&1; echo "ckpt rc=$?"
kill $SAMP 2>/dev/null
grep -E "^  save|^rdma|repeat" "$OUT/r/ckpt.log"
grep -E "method=(DELETE|PUT)" "$DISK/ck/wharfd.log" | grep -v "partNumber" | grep -E "index|ckpt" | tail -60 > "$OUT/r/requests.txt"
gzip -c "$DISK/ck/wharfd.log" > "$OUT/r/wharfd.log.gz"
rm -rf "$DISK"
