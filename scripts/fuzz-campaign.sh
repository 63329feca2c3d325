#!/usr/bin/env bash
# A fuzzing campaign (docs/fuzzing.md): every libFuzzer driver in fuzz/ for a number of
# executions, in parallel over the cores. New inputs are merged into the committed corpora
# (fuzz/corpus/<name>/) with -merge=1, which keeps only those that add coverage, so the growth
# stays small; crashes, hangs, OOMs and leaks are copied to fuzz/regressions/<name>/; a summary
# JSON gives each driver's executions, speed, corpus growth and failures.
#
#   scripts/fuzz-campaign.sh [--runs 10000000] [--chunk 1000000] [--jobs N] [--drivers a,b]
#                            [--deadline S] [--max-time S] [--build-dir build-fuzz] [--no-build]
#                            [--summary FILE] [--work DIR] [--no-merge] [--export FILE.tar]
#   scripts/fuzz-campaign.sh --pack DIR      # drivers + the libraries they need, to run elsewhere
#
# --runs is per driver, run as chunks of --chunk executions (one libFuzzer process each, its
# own seed) spread over --jobs processes at a time (default: the online cores). --deadline
# bounds the whole campaign's wall time: no chunk starts after it; a driver that got fewer
# runs than asked is marked incomplete in the summary. --max-time bounds each chunk (0: none).
# --export writes the files the campaign added under fuzz/ plus the summary into one tar (for
# a campaign run on another machine: untar it in the checkout). Exit status: 0 when no driver
# failed, 1 when one did, 2 for bad usage.
set -euo pipefail
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

usage() { sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) RUNS=$2; shift 2 ;;
    --jobs) JOBS=$2; shift 2 ;;
    --drivers) DRIVERS=$2; shift 2 ;;
    --build-dir) BUILD=$2; shift 2 ;;
    --no-build) DO_BUILD=0; shift ;;
    --max-time) MAX_TIME=$2; shift 2 ;;
    --chunk) CHUNK=$2; shift 2 ;;
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
   "$DEADLINE" =~ ^[0-9]+$ && "$CHUNK" =~ ^[0-9]*$ ]] || usage
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
  # the drivers link the sanitizers statically; of their shared libraries, these are the ones
  # a stock Ubuntu or Debian image without the project's build dependencies lacks (libpq with
  # the LDAP and SASL libraries it needs, whose sonames differ between releases)
  rm -rf "$PACK" && mkdir -p "$PACK/fuzz" "$PACK/lib"
  for n in "${names[@]}"; do cp "$(bin "$n")" "$PACK/fuzz/"; done
  # what they were built from (a copy of the tree elsewhere may carry no or a stale .git)
  echo "$(git rev-parse HEAD 2>/dev/null)$(git diff --quiet HEAD 2>/dev/null || echo -dirty)" \
    > "$PACK/BUILT_FROM"
  for so in libmicrohttpd.so.12 libisal.so.2 libpq.so.5 libldap-2.5.so.0 liblber-2.5.so.0 \
            libsasl2.so.2; do
    p=$(ldconfig -p | awk -v s="$so" '$1==s && !f {print $NF; f=1}')
    if [ -n "$p" ]; then cp -L "$p" "$PACK/lib/"; fi
  done
  du -sh "$PACK" | awk '{print "fuzz-campaign: packed " $2 " (" $1 "); run there with LD_LIBRARY_PATH=" $2 "/lib and --no-build --build-dir " $2}'
  exit 0
fi

[ -n "$WORK" ] || WORK=$(mktemp -d /tmp/fuzz-campaign.XXXXXX)
mkdir -p "$WORK"
[ -n "$SUMMARY" ] || SUMMARY="$WORK/summary.json"
before="$WORK/files.before"
{ find fuzz/corpus fuzz/regressions -type f 2>/dev/null || true; } | sort > "$before"

# The work is cut into chunks of --chunk runs (a libFuzzer process each, its own seed), run JOBS
# at a time. A driver's chunks share its output corpus, so each starts from what the earlier
# ones found. A free core goes first to a driver that has not run yet, then to the one with the
# least estimated work left (chunks left x its mean chunk time): the fast drivers finish early
# and the slow ones then get every core. With --deadline, no chunk starts after it and each
# running one is limited to the time left.
nd=${#names[@]}
[ -n "$CHUNK" ] || CHUNK=$(( RUNS < 1000000 ? RUNS : 1000000 ))
[ "$CHUNK" -ge 1 ] || CHUNK=1
for n in "${names[@]}"; do mkdir -p "$WORK/$n/new" "$WORK/$n/artifacts" "fuzz/corpus/$n"; done
echo "fuzz-campaign: ${nd} drivers x ${RUNS} runs in chunks of ${CHUNK}, ${JOBS} at a time; work in $WORK" >&2
t_start=$(date +%s)
python3 - "$WORK" "$RUNS" "$CHUNK" "$JOBS" "$DEADLINE" "$MAX_TIME" "$BUILD" "${names[@]}" <<'PY'
import os, subprocess, sys, time
work, build = sys.argv[1], sys.argv[7]
runs, chunk, jobs, deadline, max_time = (int(x) for x in sys.argv[2:7])
names = sys.argv[8:]


def binary(n):
    p = os.path.join(build, "fuzz", "fuzz_" + n)
    return p if os.access(p, os.X_OK) else os.path.join(build, "fuzz_" + n)


nchunks = (runs + chunk - 1) // chunk
todo = {n: list(range(nchunks)) for n in names}
done = {n: [] for n in names}  # seconds of each finished chunk
running = {}  # Popen -> (name, chunk, start, log file)
t0 = time.time()
end = t0 + deadline if deadline else None
seed = int(t0) % 100000 * 1000


def estimate(n):
    """Mean seconds of a chunk of n; a running first chunk counts its time so far."""
    el = [time.time() - v[2] for v in running.values() if v[0] == n]
    if done[n]:
        return max(sum(done[n]) / len(done[n]), max(el, default=0))
    return max(el, default=0)


def pick():
    cand = [n for n in names if todo[n]]
    fresh = [n for n in cand if not done[n] and all(v[0] != n for v in running.values())]
    if fresh:
        return fresh[0]
    return min(cand, key=lambda n: len(todo[n]) * estimate(n), default=None)


def record(n, k, text):
    with open(f"{work}/{n}/rc.{k}", "w") as f:
        f.write(text + "\n")


try:
    while True:
        for p in [p for p in running if p.poll() is not None]:
            n, k, st, f = running.pop(p)
            f.close()
            done[n].append(time.time() - st)
            record(n, k, f"{p.returncode} {done[n][-1]:.3f}")
        now = time.time()
        if end and now >= end - 5:
            for n in names:
                for k in todo[n]:
                    record(n, k, "skipped 0")
                todo[n] = []
        while len(running) < jobs:
            n = pick()
            if n is None:
                break
            k = todo[n].pop(0)
            lim = max_time
            if end:
                left = int(end - now)
                lim = left if lim == 0 or lim > left else lim
            seed += 1
            f = open(f"{work}/{n}/log.{k}", "w")
            cmd = [binary(n), f"-runs={min(chunk, runs - k * chunk)}", f"-seed={seed}",
                   "-rss_limit_mb=2048", "-timeout=25", f"-max_total_time={lim}",
                   "-print_final_stats=1", f"-artifact_prefix={work}/{n}/artifacts/",
                   f"{work}/{n}/new", f"fuzz/corpus/{n}"]
            running[subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT)] = (n, k, now, f)
        if not running and not any(todo.values()):
            break
        time.sleep(0.2)
finally:
    for p in running:
        p.kill()
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
python3 - "$WORK" "$SUMMARY" "$RUNS" "$JOBS" "$CHUNK" "$t_start" "$t_end" "$DEADLINE" "${names[@]}" <<'PY'
import glob, json, os, platform, re, subprocess, sys, time
work, out, runs, jobs, chunk, t0, t1, deadline = sys.argv[1:9]
names = sys.argv[9:]
def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=20).stdout.strip()
    except Exception:
        return ""
res = {"runs_per_driver_requested": int(runs), "parallel_jobs": int(jobs),
       "runs_per_chunk": int(chunk), "deadline_s": int(deadline), "wall_s": int(t1) - int(t0),
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
