#!/usr/bin/env bash
# A fuzzing campaign (docs/fuzzing.md): every libFuzzer driver in fuzz/ for a number of
# executions, in parallel over the cores. New inputs are merged into the committed corpora
# (fuzz/corpus/<name>/) with -merge=1, which keeps only those that add coverage, so the growth
# stays small; crashes, hangs, OOMs and leaks are copied to fuzz/regressions/<name>/; a summary
# JSON gives each driver's executions, speed, corpus growth and failures.
#
#   scripts/fuzz-campaign.sh [--runs 10000000] [--jobs N] [--drivers sigv4,xml]
#                            [--build-dir build-fuzz] [--no-build] [--max-time S]
#                            [--summary FILE] [--work DIR] [--no-merge] [--export FILE.tar]
#   scripts/fuzz-campaign.sh --pack DIR      # drivers + the libraries they need, to run elsewhere
#
# --runs is per driver: with more cores than drivers a driver gets several workers (distinct
# seeds, one shared output corpus) that split its runs. --jobs defaults to the online cores.
# --max-time bounds each worker's wall time (0: none). --export writes the files the campaign
# added under fuzz/ plus the summary into one tar (for a campaign run on another machine:
# untar it in the checkout). Exit status: 0 when no driver failed, 1 when one did, 2 for bad
# usage.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

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

usage() { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) RUNS=$2; shift 2 ;;
    --jobs) JOBS=$2; shift 2 ;;
    --drivers) DRIVERS=$2; shift 2 ;;
    --build-dir) BUILD=$2; shift 2 ;;
    --no-build) DO_BUILD=0; shift ;;
    --max-time) MAX_TIME=$2; shift 2 ;;
    --summary) SUMMARY=$2; shift 2 ;;
    --work) WORK=$2; shift 2 ;;
    --no-merge) MERGE=0; shift ;;
    --export) EXPORT=$2; shift 2 ;;
    --pack) PACK=$2; shift 2 ;;
    -h|--help) usage ;;
    *) echo "fuzz-campaign: unknown option $1" >&2; usage ;;
  esac
done
[[ "$RUNS" =~ ^[0-9]+$ && "$JOBS" =~ ^[0-9]+$ && "$MAX_TIME" =~ ^[0-9]+$ ]] || usage
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
done

if [ -n "$PACK" ]; then
  # the drivers link the sanitizers statically; of their shared libraries, these two are the
  # ones a stock Ubuntu or Debian image without the project's build dependencies lacks
  rm -rf "$PACK" && mkdir -p "$PACK/fuzz" "$PACK/lib"
  for n in "${names[@]}"; do cp "$(bin "$n")" "$PACK/fuzz/"; done
  for so in libmicrohttpd.so.12 libisal.so.2; do
    p=$(ldconfig -p | awk -v s="$so" '$1==s {print $NF; exit}')
    [ -n "$p" ] && cp -L "$p" "$PACK/lib/"
  done
  du -sh "$PACK" | awk '{print "fuzz-campaign: packed " $2 " (" $1 "); run there with LD_LIBRARY_PATH=" $2 "/lib and --no-build --build-dir " $2}'
  exit 0
fi

[ -n "$WORK" ] || WORK=$(mktemp -d /tmp/fuzz-campaign.XXXXXX)
mkdir -p "$WORK"
[ -n "$SUMMARY" ] || SUMMARY="$WORK/summary.json"
before="$WORK/files.before"
find fuzz/corpus fuzz/regressions -type f 2>/dev/null | sort > "$before" || true

# Workers: with more cores than drivers, each driver gets JOBS/drivers of them (at least one);
# they split the driver's runs and share its output corpus (libFuzzer reloads it).
nd=${#names[@]}
per=$(( JOBS / nd )); [ "$per" -ge 1 ] || per=1
tasks="$WORK/tasks"
: > "$tasks"
seed=1
for n in "${names[@]}"; do
  mkdir -p "$WORK/$n/new" "$WORK/$n/artifacts" "fuzz/corpus/$n"
  share=$(( (RUNS + per - 1) / per ))
  for ((w = 0; w < per; w++)); do
    echo "$n $w $share $seed" >> "$tasks"
    seed=$((seed + 1))
  done
done

run_one() { # name worker runs seed
  local n=$1 w=$2 r=$3 s=$4 b
  b=$(bin "$n")
  local t0; t0=$(date +%s.%N)
  set +e
  "$b" -runs="$r" -seed="$s" -rss_limit_mb=2048 -timeout=25 -max_total_time="$MAX_TIME" \
       -print_final_stats=1 -artifact_prefix="$WORK/$n/artifacts/" \
       "$WORK/$n/new" "fuzz/corpus/$n" > "$WORK/$n/log.$w" 2>&1
  local rc=$?
  set -e
  local t1; t1=$(date +%s.%N)
  echo "$rc $(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')" > "$WORK/$n/rc.$w"
}
export -f run_one bin
export WORK BUILD MAX_TIME
echo "fuzz-campaign: ${nd} drivers, ${per} worker(s) each, ${RUNS} runs per driver, ${JOBS} at a time; work in $WORK" >&2
t_start=$(date +%s)
xargs -P "$JOBS" -L 1 bash -c 'run_one "$@"' _ < "$tasks"
t_end=$(date +%s)

# Merge what the workers found into the committed corpora; keep the failures as regressions.
for n in "${names[@]}"; do
  c0=$(find "fuzz/corpus/$n" -type f | wc -l)
  if [ "$MERGE" = 1 ] && [ -n "$(ls -A "$WORK/$n/new")" ]; then
    "$(bin "$n")" -merge=1 -rss_limit_mb=2048 -timeout=25 "fuzz/corpus/$n" "$WORK/$n/new" \
      > "$WORK/$n/merge.log" 2>&1 || echo "fuzz-campaign: merge of $n failed (see $WORK/$n/merge.log)" >&2
  fi
  c1=$(find "fuzz/corpus/$n" -type f | wc -l)
  echo "$c0 $c1" > "$WORK/$n/corpus.count"
  for a in "$WORK/$n/artifacts"/*; do
    [ -f "$a" ] || continue
    case "$(basename "$a")" in crash-*|timeout-*|oom-*|leak-*) ;; *) continue ;; esac
    mkdir -p "fuzz/regressions/$n"
    cp "$a" "fuzz/regressions/$n/"
  done
done

# The summary.
set +e
python3 - "$WORK" "$SUMMARY" "$RUNS" "$JOBS" "$per" "$t_start" "$t_end" "${names[@]}" <<'PY'
import glob, json, os, platform, re, subprocess, sys, time
work, out, runs, jobs, per, t0, t1 = sys.argv[1:8]
names = sys.argv[8:]
def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=20).stdout.strip()
    except Exception:
        return ""
res = {"runs_per_driver_requested": int(runs), "parallel_jobs": int(jobs),
       "workers_per_driver": int(per), "wall_s": int(t1) - int(t0),
       "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(int(t0))),
       "host": {"cpu_cores": os.cpu_count(), "machine": platform.machine(),
                "kernel": platform.release(), "clang": sh("clang --version | head -1")},
       "git_commit": sh("git rev-parse HEAD"), "drivers": {}}
failed = 0
for n in names:
    d = {"executions": 0, "workers": 0, "worker_rc": [], "seconds": 0.0, "failures": []}
    for log in sorted(glob.glob(f"{work}/{n}/log.*")):
        w = log.rsplit(".", 1)[1]
        text = open(log, errors="replace").read()
        m = re.findall(r"stat::number_of_executed_units: (\d+)", text)
        if m:
            execs = int(m[-1])
        else:  # a worker that died early prints no final stats: its last status line
            m = re.findall(r"^#(\d+)\s", text, re.M)
            execs = int(m[-1]) if m else 0
        rc, secs = open(f"{work}/{n}/rc.{w}").read().split()
        d["executions"] += execs
        d["workers"] += 1
        d["worker_rc"].append(int(rc))
        d["seconds"] = max(d["seconds"], float(secs))
        if int(rc) != 0:
            s = re.findall(r"^SUMMARY: .*$", text, re.M)
            d["failures"].append({"worker": int(w), "rc": int(rc),
                                  "summary": s[-1] if s else text.strip().splitlines()[-1:]})
    arts = sorted(os.path.basename(a) for a in glob.glob(f"{work}/{n}/artifacts/*")
                  if re.match(r"(crash|timeout|oom|leak)-", os.path.basename(a)))
    d["regression_inputs"] = [f"fuzz/regressions/{n}/{a}" for a in arts]
    c0, c1 = open(f"{work}/{n}/corpus.count").read().split()
    d["corpus_files_before"], d["corpus_files_after"] = int(c0), int(c1)
    d["new_inputs_found"] = len(os.listdir(f"{work}/{n}/new"))
    d["exec_per_s"] = round(d["executions"] / d["seconds"], 1) if d["seconds"] else 0
    if d["failures"] or arts:
        failed += 1
    res["drivers"][n] = d
res["total_executions"] = sum(d["executions"] for d in res["drivers"].values())
res["drivers_failed"] = failed
with open(out, "w") as f:
    json.dump(res, f, indent=1, sort_keys=True)
    f.write("\n")
print(f"{'driver':16} {'executions':>12} {'exec/s':>9} {'corpus':>11} failures")
for n, d in res["drivers"].items():
    print(f"{n:16} {d['executions']:12d} {d['exec_per_s']:9.0f} "
          f"{d['corpus_files_before']:5d}->{d['corpus_files_after']:<5d} {len(d['failures'])}")
print(f"summary: {out}")
sys.exit(1 if failed else 0)
PY
rc=$?
set -e

if [ -n "$EXPORT" ]; then
  find fuzz/corpus fuzz/regressions -type f 2>/dev/null | sort > "$WORK/files.after"
  comm -13 "$before" "$WORK/files.after" > "$WORK/files.added"
  cp "$SUMMARY" "$WORK/fuzz-campaign-summary.json"
  tar -cf "$EXPORT" -T "$WORK/files.added" -C "$WORK" fuzz-campaign-summary.json
  echo "fuzz-campaign: exported $(wc -l < "$WORK/files.added") added files and the summary to $EXPORT" >&2
fi
exit $rc
