#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A fuzzing campaign (docs/fuzzing.md): every libFuzzer driver in fuzz/ for a number of
# executions, in parallel over the cores. New inputs are merged into the committed corpora
# (fuzz/corpus/<name>/) with -merge=1, which keeps only those that add coverage, so the growth
# stays small; crashes, hangs, OOMs and leaks are copied to fuzz/regressions/<name>/; a summary
# JSON gives each driver's executions, speed, corpus growth and failures.
#
#   scripts/fuzz-campaign.sh [--runs 10000000] [--slice 60] [--chunk N] [--jobs N] [--drivers a,b]
#                            [--deadline S] [--max-time S] [--rates SUMMARY.json]
#                            [--build-dir build-fuzz] [--no-build] [--summary FILE] [--work DIR]
#                            [--no-merge] [--export FILE.tar]
#   scripts/fuzz-campaign.sh --pack DIR      # drivers + the libraries they need, to run elsewhere
#
# --runs is per driver, run as chunks (one libFuzzer process each, its own seed) of about
# --slice seconds at the driver's speed (--chunk: at most N runs a chunk), spread over --jobs
# processes at a time (default: the online cores). --rates takes the speeds from an earlier
# summary instead of measuring them in each driver's first chunk. --deadline bounds the whole
# campaign's wall time: no chunk starts after it; a driver that got fewer runs than asked is
# marked incomplete in the summary. --max-time bounds each chunk (0: none). --export writes the
# files the campaign added under fuzz/ plus the summary into one tar (for a campaign run on
# another machine: untar it in the checkout). Exit status: 0 when no driver failed, 1 when one
# did, 2 for bad usage.
set -euo pipefail
caller=$PWD
cd "$(dirname "$0")/.."

RUNS=10000000
JOBS=$(nproc)
DRIVERS=""
BUILD=build-fuzz
DO_BUILD=1
MAX_TIME=0
SUMMARY=""
WORK=""
MERGE=1
EXPORT=""
PACK=""
CHUNK=""
DEADLINE=0
SLICE=60
RATES=""

usage() { sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) RUNS=$2; shift 2 ;;
    --jobs) JOBS=$2; shift 2 ;;
    --drivers) DRIVERS=$2; shift 2 ;;
    --build-dir) BUILD=$2; shift 2 ;;
    --no-build) DO_BUILD=0; shift ;;
    --max-time) MAX_TIME=$2; shift 2 ;;
    --chunk) CHUNK=$2; shift 2 ;;
    --slice) SLICE=$2; shift 2 ;;
    --rates) RATES=$2; shift 2 ;;
    --deadline) DEADLINE=$2; shift 2 ;;
    --summary) SUMMARY=$2; shift 2 ;;
    --work) WORK=$2; shift 2 ;;
    --no-merge) MERGE=0; shift ;;
    --export) EXPORT=$2; shift 2 ;;
    --pack) PACK=$2; shift 2 ;;
    -h|--help) usage ;;
    *) echo "fuzz-campaign: unknown option $1" >&2; usage ;;
  esac
done
[[ "$RUNS" =~ ^[0-9]+$ && "$JOBS" =~ ^[0-9]+$ && "$MAX_TIME" =~ ^[0-9]+$ &&
   "$DEADLINE" =~ ^[0-9]+$ && "$CHUNK" =~ ^[0-9]*$ && "$SLICE" =~ ^[0-9]+$ ]] || usage
# paths given to the options name files from where the script was called
abs() { case "$1" in ''|/*) echo "$1" ;; *) echo "$caller/$1" ;; esac; }
PACK=$(abs "$PACK"); EXPORT=$(abs "$EXPORT"); SUMMARY=$(abs "$SUMMARY"); WORK=$(abs "$WORK")
RATES=$(abs "$RATES")
[ -z "$RATES" ] || [ -f "$RATES" ] || { echo "fuzz-campaign: no summary $RATES" >&2; exit 2; }
[ "$SLICE" -ge 1 ] || SLICE=1
[ "$JOBS" -ge 1 ] || JOBS=1

# The drivers: fuzz/fuzz_<name>.c, optionally only those named.
all=()
for f in fuzz/fuzz_*.c; do n=$(basename "$f" .c); all+=("${n#fuzz_}"); done
names=()
if [ -n "$DRIVERS" ]; then
  IFS=, read -r -a want <<< "$DRIVERS"
  for w in "${want[@]}"; do
    [ -f "fuzz/fuzz_$w.c" ] || { echo "fuzz-campaign: no driver fuzz/fuzz_$w.c" >&2; exit 2; }
    names+=("$w")
  done
else
  names=("${all[@]}")
fi

if [ "$DO_BUILD" = 1 ]; then
  targets=(); for n in "${names[@]}"; do targets+=("fuzz_$n"); done
  cmake --preset fuzz -DFUZZ_SECONDS=20 >/dev/null
  cmake --build "$BUILD" -j "$JOBS" --target "${targets[@]}"
fi
bin() { if [ -x "$BUILD/fuzz/fuzz_$1" ]; then echo "$BUILD/fuzz/fuzz_$1"; else echo "$BUILD/fuzz_$1"; fi; }
for n in "${names[@]}"; do
  [ -x "$(bin "$n")" ] || { echo "fuzz-campaign: $(bin "$n") is missing (build it)" >&2; exit 2; }
  if missing=$(ldd "$(bin "$n")" 2>/dev/null | awk '/not found/ {print $1}' | tr '\n' ' ') &&
     [ -n "$missing" ]; then
    echo "fuzz-campaign: $(bin "$n") cannot load ${missing% }: set LD_LIBRARY_PATH to a --pack's lib/" >&2
    exit 2
  fi
done

if [ -n "$PACK" ]; then
  # The drivers link the sanitizers statically. Of their shared libraries every one but the C
  # library's own is copied: a machine without the project's build dependencies lacks some
  # (libmicrohttpd, ISA-L, libfabric, libpq with its LDAP and SASL libraries, jansson), and the
  # sonames differ between releases. PACK ending in .tar.gz: the folder, packed into that file
  # (the drivers and libraries compress about 3 to 1).
  dir=$PACK
  case "$PACK" in *.tar.gz) dir=$(mktemp -d /tmp/fuzz-pack.XXXXXX)/pack ;; esac
  rm -rf "$dir" && mkdir -p "$dir/fuzz" "$dir/lib"
  for n in "${names[@]}"; do cp "$(bin "$n")" "$dir/fuzz/"; done
  # what they were built from (a copy of the tree elsewhere may carry no or a stale .git)
  echo "$(git rev-parse HEAD 2>/dev/null)$(git diff --quiet HEAD 2>/dev/null || echo -dirty)" \
    > "$dir/BUILT_FROM"
  for n in "${names[@]}"; do ldd "$(bin "$n")"; done | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' |
    sort -u | while read -r so path; do
      case "$so" in
        ld-linux*|libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|libresolv.so.*|\
        libutil.so.*|libanl.so.*|libmvec.so.*|libnss_*|libBrokenLocale.so.*) ;;
        *) cp -L "$path" "$dir/lib/$so" ;;
      esac
    done
  if [ "$dir" != "$PACK" ]; then
    tar -czf "$PACK" -C "$(dirname "$dir")" pack && rm -rf "$(dirname "$dir")"
    echo "fuzz-campaign: packed $PACK ($(du -h "$PACK" | cut -f1)); there: mkdir -p /tmp/fz &&" \
         "tar -xzf $(basename "$PACK") -C /tmp/fz, then LD_LIBRARY_PATH=/tmp/fz/pack/lib" \
         "scripts/fuzz-campaign.sh --no-build --build-dir /tmp/fz/pack ..." >&2
  else
    echo "fuzz-campaign: packed $PACK ($(du -sh "$PACK" | cut -f1)); run there with" \
         "LD_LIBRARY_PATH=$PACK/lib and --no-build --build-dir $PACK" >&2
  fi
  exit 0
fi

[ -n "$WORK" ] || WORK=$(mktemp -d /tmp/fuzz-campaign.XXXXXX)
mkdir -p "$WORK"
[ -n "$SUMMARY" ] || SUMMARY="$WORK/summary.json"
before="$WORK/files.before"
{ find fuzz/corpus fuzz/regressions -type f 2>/dev/null || true; } | sort > "$before"

# The work is cut into chunks (a libFuzzer process each, its own seed), run JOBS at a time. A
# driver's chunks share its output corpus, so each starts from what the earlier ones found.
# Chunks are sized in time, not runs: about --slice seconds at the driver's measured speed
# (between 10 s of it and 1/JOBS of what the driver has left, at most --chunk runs when given),
# so that at the end the slowest driver's last runs spread over every core instead of one
# 1,000,000-run process holding a core for minutes. A driver's first chunk measures its speed
# (or --rates gives it from an earlier summary). A free core goes first to a driver that has not
# run yet, then to the one with the least estimated work left (runs left / its speed): the fast
# drivers finish early, and the slow ones then get every core. With --deadline no chunk starts
# after it, each running one is limited to the time left, and the plan (CPU-seconds needed
# against JOBS x the time left) is printed once the speeds are known.
nd=${#names[@]}
for n in "${names[@]}"; do mkdir -p "$WORK/$n/new" "$WORK/$n/artifacts" "fuzz/corpus/$n"; done
echo "fuzz-campaign: ${nd} drivers x ${RUNS} runs, chunks of about ${SLICE} s${CHUNK:+ (at most $CHUNK runs)}, ${JOBS} at a time; work in $WORK" >&2
t_start=$(date +%s)
python3 - "$WORK" "$RUNS" "${CHUNK:-0}" "$JOBS" "$DEADLINE" "$MAX_TIME" "$BUILD" "$SLICE" \
  "$RATES" "${names[@]}" <<'PY'
import json, math, os, re, subprocess, sys, time
work, build = sys.argv[1], sys.argv[7]
runs, chunk_max, jobs, deadline, max_time, slice_s = (int(x) for x in sys.argv[2:7] + [sys.argv[8]])
rates_file = sys.argv[9]
names = sys.argv[10:]
PROBE_S = 20  # a driver's first chunk, when no speed is known yet


def binary(n):
    p = os.path.join(build, "fuzz", "fuzz_" + n)
    return p if os.access(p, os.X_OK) else os.path.join(build, "fuzz_" + n)


def executions(log):
    text = open(log, errors="replace").read()
    m = re.findall(r"stat::number_of_executed_units: (\d+)", text)
    if not m:  # a worker that died early prints no final stats: its last status line
        m = re.findall(r"^#(\d+)\s", text, re.M)
    return int(m[-1]) if m else 0


done_runs = {n: 0 for n in names}    # executions of finished chunks
inflight = {n: 0 for n in names}     # runs handed to running chunks
secs = {n: 0.0 for n in names}       # seconds of finished chunks
rate = {}                            # executions per second of one process
if rates_file:
    prev = json.load(open(rates_file)).get("drivers", {})
    rate = {n: prev[n]["exec_per_s"] for n in names if prev.get(n, {}).get("exec_per_s")}
running = {}  # Popen -> (name, chunk number, start, runs, log file)
nchunk = {n: 0 for n in names}
t0 = time.time()
end = t0 + deadline if deadline else None
seed = int(t0) % 100000 * 1000
planned = False


failed = {n: 0 for n in names}       # chunks that ended in a crash, leak, OOM or timeout
MAX_FAILED = 3  # then the driver is left alone: each failure is in the summary


def left(n):
    if failed[n] >= MAX_FAILED:
        return 0
    return max(0, runs - done_runs[n] - inflight[n])


def probing(n):
    return n not in rate and any(v[0] == n for v in running.values())


def pick():
    cand = [n for n in names if left(n) and not probing(n)]
    fresh = [n for n in cand if n not in rate]
    if fresh:
        return fresh[0]
    return min(cand, key=lambda n: left(n) / rate[n], default=None)


def chunk_runs(n):
    if n not in rate:
        return left(n)  # the probe: bounded by PROBE_S
    r = rate[n]
    c = min(r * slice_s, max(r * 10, math.ceil(left(n) / jobs)))
    if chunk_max:
        c = min(c, chunk_max)
    return max(1, min(left(n), int(c)))


def plan(now):
    need = {n: (runs - done_runs[n]) / rate[n] for n in names if n in rate}
    have = jobs * (end - now) if end else None
    print("fuzz-campaign: plan: %.0f CPU-seconds left for %s runs each%s" %
          (sum(need.values()), f"{runs:,}",
           f" in {have:.0f} available ({jobs} x {end - now:.0f} s)" if have else ""), file=sys.stderr)
    for n in sorted(need, key=need.get, reverse=True)[:5]:
        print(f"fuzz-campaign:   {n}: {rate[n]:,.0f} exec/s, {need[n]:.0f} CPU-s", file=sys.stderr)


def record(n, k, text):
    with open(f"{work}/{n}/rc.{k}", "w") as f:
        f.write(text + "\n")


def finish(p):
    n, k, st, want, f = running.pop(p)
    f.close()
    el = time.time() - st
    got = executions(f"{work}/{n}/log.{k}")
    inflight[n] -= want
    done_runs[n] += got
    secs[n] += el
    if got:
        rate[n] = max(1.0, done_runs[n] / secs[n])
    if p.returncode != 0 or not got:
        failed[n] += 1
    record(n, k, f"{p.returncode} {el:.3f}")


try:
    while True:
        for p in [p for p in running if p.poll() is not None]:
            finish(p)
        now = time.time()
        if not planned and all(n in rate for n in names):
            planned = True
            plan(now)
        if end and now >= end - 5:
            break
        while len(running) < jobs:
            n = pick()
            if n is None:
                break
            k = nchunk[n]
            nchunk[n] += 1
            want = chunk_runs(n)
            lim = max_time
            if n not in rate:
                lim = PROBE_S if lim == 0 or lim > PROBE_S else lim
            if end:
                tl = int(end - now)
                lim = tl if lim == 0 or lim > tl else lim
            seed += 1
            f = open(f"{work}/{n}/log.{k}", "w")
            cmd = [binary(n), f"-runs={want}", f"-seed={seed}",
                   "-rss_limit_mb=2048", "-timeout=25", f"-max_total_time={lim}",
                   "-print_final_stats=1", f"-artifact_prefix={work}/{n}/artifacts/",
                   f"{work}/{n}/new", f"fuzz/corpus/{n}"]
            inflight[n] += want
            running[subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT)] = (n, k, now, want, f)
        if not running and not any(left(n) for n in names):
            break
        time.sleep(0.2)
    # At the deadline the running chunks end on their own time limit.
    for p in list(running):
        try:
            p.wait(timeout=max(1.0, (end or time.time()) - time.time() + 30))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        finish(p)
finally:
    for p in running:
        p.kill()
for n in names:
    if done_runs[n] < runs:
        record(n, nchunk[n], "skipped 0")  # the runs the time did not allow
PY
t_end=$(date +%s)

# Merge what the workers found into the committed corpora (one merge per driver, in parallel);
# keep the failures as regressions.
merge_one() {
  local n=$1
  if [ "$MERGE" = 1 ] && [ -n "$(ls -A "$WORK/$n/new")" ]; then
    "$(bin "$n")" -merge=1 -rss_limit_mb=2048 -timeout=25 "fuzz/corpus/$n" "$WORK/$n/new" \
      > "$WORK/$n/merge.log" 2>&1 || echo "fuzz-campaign: merge of $n failed (see $WORK/$n/merge.log)" >&2
  fi
}
export -f merge_one bin
export MERGE WORK BUILD
for n in "${names[@]}"; do find "fuzz/corpus/$n" -type f | wc -l > "$WORK/$n/corpus.before"; done
printf '%s\n' "${names[@]}" | xargs -P "$JOBS" -I{} bash -c 'merge_one {}'
for n in "${names[@]}"; do
  echo "$(cat "$WORK/$n/corpus.before") $(find "fuzz/corpus/$n" -type f | wc -l)" > "$WORK/$n/corpus.count"
  for a in "$WORK/$n/artifacts"/*; do
    [ -f "$a" ] || continue
    case "$(basename "$a")" in crash-*|timeout-*|oom-*|leak-*) ;; *) continue ;; esac
    mkdir -p "fuzz/regressions/$n"
    cp "$a" "fuzz/regressions/$n/"
  done
done

# The summary.
set +e
python3 - "$WORK" "$SUMMARY" "$RUNS" "$JOBS" "${CHUNK:-0}" "$t_start" "$t_end" "$DEADLINE" \
  "$SLICE" "${names[@]}" <<'PY'
import glob, json, os, platform, re, subprocess, sys, time
work, out, runs, jobs, chunk, t0, t1, deadline, slice_s = sys.argv[1:10]
names = sys.argv[10:]
def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=20).stdout.strip()
    except Exception:
        return ""
res = {"runs_per_driver_requested": int(runs), "parallel_jobs": int(jobs),
       "chunk_seconds": int(slice_s),
       "chunk_max_runs": int(chunk) or None, "deadline_s": int(deadline), "wall_s": int(t1) - int(t0),
       "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(int(t0))),
       "host": {"cpu_cores": os.cpu_count(), "machine": platform.machine(),
                "kernel": platform.release(), "clang": sh("clang --version | head -1")},
       "git_commit": sh("git rev-parse HEAD"), "drivers": {}}
built = os.path.join(os.environ.get("BUILD", ""), "BUILT_FROM")
if os.path.exists(built):
    res["drivers_built_from"] = open(built).read().strip()
failed = 0
for n in names:
    d = {"executions": 0, "chunks_run": 0, "chunks_skipped": 0, "cpu_seconds": 0.0,
         "failures": []}
    for rcf in sorted(glob.glob(f"{work}/{n}/rc.*")):
        w = rcf.rsplit(".", 1)[1]
        rc, secs = open(rcf).read().split()
        if rc == "skipped":
            d["chunks_skipped"] += 1
            continue
        text = open(f"{work}/{n}/log.{w}", errors="replace").read()
        m = re.findall(r"stat::number_of_executed_units: (\d+)", text)
        if m:
            execs = int(m[-1])
        else:  # a worker that died early prints no final stats: its last status line
            m = re.findall(r"^#(\d+)\s", text, re.M)
            execs = int(m[-1]) if m else 0
        d["executions"] += execs
        d["chunks_run"] += 1
        d["cpu_seconds"] += float(secs)
        if int(rc) != 0:
            s = re.findall(r"^SUMMARY: .*$", text, re.M)
            d["failures"].append({"chunk": int(w), "rc": int(rc),
                                  "summary": s[-1] if s else text.strip().splitlines()[-1:]})
    arts = sorted(os.path.basename(a) for a in glob.glob(f"{work}/{n}/artifacts/*")
                  if re.match(r"(crash|timeout|oom|leak)-", os.path.basename(a)))
    d["regression_inputs"] = [f"fuzz/regressions/{n}/{a}" for a in arts]
    c0, c1 = open(f"{work}/{n}/corpus.count").read().split()
    d["corpus_files_before"], d["corpus_files_after"] = int(c0), int(c1)
    d["new_inputs_found"] = len(os.listdir(f"{work}/{n}/new"))
    d["cpu_seconds"] = round(d["cpu_seconds"], 1)
    d["exec_per_s"] = round(d["executions"] / d["cpu_seconds"], 1) if d["cpu_seconds"] else 0
    d["complete"] = d["executions"] >= int(runs)
    if d["failures"] or arts:
        failed += 1
    res["drivers"][n] = d
res["total_executions"] = sum(d["executions"] for d in res["drivers"].values())
res["drivers_failed"] = failed
res["drivers_incomplete"] = sorted(n for n, d in res["drivers"].items() if not d["complete"])
with open(out, "w") as f:
    json.dump(res, f, indent=1, sort_keys=True)
    f.write("\n")
print(f"{'driver':16} {'executions':>12} {'exec/s':>9} {'corpus':>11} failures")
for n, d in res["drivers"].items():
    print(f"{n:16} {d['executions']:12d} {d['exec_per_s']:9.0f} "
          f"{d['corpus_files_before']:5d}->{d['corpus_files_after']:<5d} {len(d['failures'])}"
          + ("" if d["complete"] else "  (short of the runs asked for)"))
print(f"summary: {out}")
sys.exit(1 if failed else 0)
PY
rc=$?
set -e

if [ -n "$EXPORT" ]; then
  { find fuzz/corpus fuzz/regressions -type f 2>/dev/null || true; } | sort > "$WORK/files.after"
  comm -13 "$before" "$WORK/files.after" > "$WORK/files.added"
  cp "$SUMMARY" "$WORK/fuzz-campaign-summary.json"
  tar -cf "$EXPORT" -T "$WORK/files.added" -C "$WORK" fuzz-campaign-summary.json
  echo "fuzz-campaign: exported $(wc -l < "$WORK/files.added") added files and the summary to $EXPORT" >&2
fi
exit $rc
