#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Released generations given back in durable steps, parts batched (build-device) against one
# unlink per file (build-device-pre, main at 7023b69): the 8 GiB GPU checkpoint saved over
# itself, 4 repeats per run, A B A B, wharfd at --log-level info (each DELETE's dur_ms and each
# released file given back), the kernel stacks of wharfd's threads in D state sampled every
# 20 ms; then build-device once more at 16 requests per shard. The disk's durable write rate
# first (disk_commit.py, wharfd's commit pattern, 16 writers). From the repo root on the GPU
# machine (root); carry build-device and build-device-pre. Results in $OUT/ab.tgz.
set -u
OUT=${OUT:-/tmp/ab-out}
DISK=/root/wharf-disk
W=$(mktemp -d)
rm -rf "$DISK"; mkdir -p "$DISK/lim"
{ df -hT "$DISK"; grep -E " / " /proc/mounts; nproc; } > "$W/disk.txt"
timeout 40 python3 bench/disk_commit.py "$DISK/lim" --patterns commit+sfr --writers 16 \
  --mib 64 --files 4 --repeats 1 --best | tee "$W/durable.txt"
rm -rf "$DISK/lim"
python3 - > "$W/stacks.txt" 2>&1 <<'PY' &
import os, time
t_end = time.time() + 480
while time.time() < t_end:
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            if open(f"/proc/{p}/comm").read().strip() != "wharfd":
                continue
            for t in os.listdir(f"/proc/{p}/task"):
                st = open(f"/proc/{p}/task/{t}/stat").read()
                if st[st.rindex(")") + 2] == "D":
                    comm = open(f"/proc/{p}/task/{t}/comm").read().strip()
                    stk = [l.split()[1].split("+")[0] for l in open(f"/proc/{p}/task/{t}/stack")]
                    print(f"{time.time():.3f} {t} {comm} {' < '.join(stk[:12])}", flush=True)
        except (OSError, ValueError, IndexError):
            pass
    time.sleep(0.02)
PY
SAMP=$!
one() { # build round conc
  rm -rf "$DISK/ck"; mkdir -p "$DISK/ck"
  ( source "$1/env.sh" && timeout 80 python3 bench/py/ckpt.py --gib 8 --device cuda --arms rdma \
      --repeats 4 --overwrite --no-limits --data "$DISK/ck" --server-arg=--log-level=info \
      --concurrency "$3" --results "$W" --tag "disk-$1-$2-c$3" > "$W/ckpt-$1-$2-c$3.log" 2>&1 )
  echo "== $1 round $2 c$3 rc=$? $(date +%s.%N)"; grep -E "^  save|^rdma" "$W/ckpt-$1-$2-c$3.log"
  grep -E "method=DELETE|index.json api=PutObject|gave back" "$DISK/ck/wharfd.log" > "$W/req-$1-$2-c$3.txt"
  grep "method=DELETE" "$W/req-$1-$2-c$3.txt" | sed -E 's/.*dur_ms=([0-9.]+).*/\1/' | tr '\n' ' '; echo
  tar -C "$W" -czf "$OUT/ab.tgz" . # after each run: a kill at the limit keeps what ran
}
LIMIT=${LIMIT:-600}
left() { [ $((LIMIT - SECONDS)) -gt 60 ] || { echo "stopped: ${SECONDS}s used of ${LIMIT}"; false; }; }
for r in 1 2; do
  left && one build-device $r 4
  left && one build-device-pre $r 4
done
left && one build-device 3 16
kill $SAMP 2>/dev/null; wait $SAMP 2>/dev/null
echo "stack samples: $(wc -l < "$W/stacks.txt")"
awk '{ $1=""; $2=""; print }' "$W/stacks.txt" | sort | uniq -c | sort -rn | head -12 | cut -c1-300
tar -C "$W" -czf "$OUT/ab.tgz" .
rm -rf "$DISK" "$W"
