#!/usr/bin/env bash
# Where an overwriting save's DELETE waits: the 8 GiB GPU save over itself, 4 repeats, wharfd at
# --log-level info (each DELETE's dur_ms, each released file given back), while every wharfd
# thread in uninterruptible sleep (D) has its kernel stack sampled every 20 ms. From the repo
# root on the GPU machine (root: /proc/PID/task/TID/stack); results in $OUT/diag.tgz.
set -u
OUT=${OUT:-/tmp/diag-out}
DISK=/root/wharf-disk
W=$(mktemp -d)
rm -rf "$DISK"; mkdir -p "$DISK/ck"
python3 - > "$W/stacks.txt" 2>&1 <<'PY' &
import os, time
def wharfd():
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                if open(f"/proc/{p}/comm").read().strip() == "wharfd":
                    return p
            except OSError:
                pass
t_end = time.time() + 110
pid = None
while time.time() < t_end:
    pid = pid or wharfd()
    if pid and not os.path.exists(f"/proc/{pid}"):
        pid = None
    if pid:
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            tids = []
        for t in tids:
            try:
                st = open(f"/proc/{pid}/task/{t}/stat").read()
                state = st[st.rindex(")") + 2]
                if state == "D":
                    comm = open(f"/proc/{pid}/task/{t}/comm").read().strip()
                    stk = [l.split()[1].split("+")[0] for l in open(f"/proc/{pid}/task/{t}/stack")]
                    print(f"{time.time():.3f} {t} {comm} {' < '.join(stk[:12])}", flush=True)
            except (OSError, ValueError, IndexError):
                pass
    time.sleep(0.02)
PY
SAMP=$!
timeout 100 python3 bench/py/ckpt.py --gib 8 --device cuda --arms rdma --repeats 4 --overwrite \
  --no-limits --data "$DISK/ck" --server-arg=--log-level=info --results "$W" --tag diag-steps \
  > "$W/ckpt.log" 2>&1; echo "ckpt rc=$?"
kill $SAMP 2>/dev/null; wait $SAMP 2>/dev/null
grep -E "^  save|^rdma" "$W/ckpt.log"
# the same at 16 requests per shard (the bench's default is 4, libwharf's default)
mkdir -p "$DISK/ck16"
timeout 100 python3 bench/py/ckpt.py --gib 8 --device cuda --arms rdma --repeats 4 --overwrite \
  --no-limits --data "$DISK/ck16" --concurrency 16 --results "$W" --tag diag-steps-c16 \
  > "$W/ckpt16.log" 2>&1; echo "ckpt c16 rc=$?"
grep -E "^  save|^rdma" "$W/ckpt16.log"
grep -E "method=DELETE|index.json api=PutObject|gave back" "$DISK/ck/wharfd.log" > "$W/requests.txt"
grep -E "DELETE|gave back" "$W/requests.txt" | sed -E 's/.*ts=([^ ]+).*(path=[^ ]+).*dur_ms=([0-9.]+).*/\1 \2 \3/; s/.*ts=([^ ]+).*gave back/\1 gave back/' | cut -c1-160 | tail -40
echo "stack samples: $(wc -l < "$W/stacks.txt")"
awk '{ $1=""; $2=""; print }' "$W/stacks.txt" | sort | uniq -c | sort -rn | head -25
gzip "$DISK/ck/wharfd.log"; cp "$DISK/ck/wharfd.log.gz" "$W/"
tar -C "$W" -czf "$OUT/diag.tgz" .
rm -rf "$DISK" "$W"
