#!/usr/bin/env bash
# One report of coach's figures: runs the benches and suites that print figures, one after the
# other, at a size chosen by --size, parses what they print (bench/report_lib.py) and writes one
# Markdown table (date, commit, machine, load average per bench) into bench/README.md between
# the markers `<!-- bench/report.sh: begin ... -->` and `<!-- bench/report.sh: end -->`.
# Every run's whole output is kept in a log folder (printed), so each figure can be traced back.
#
# Usage: bench/report.sh [--size quick|full] [--only "local store controlplane scale upstream
#                        chaos mlflow"] [--operator PATH] [--readme PATH | --no-write]
#   quick: small sizes (about 15-25 minutes here); full: the full sizes (2,000 x 8 on kwok,
#          5,000 stored jobs, 200 chaos jobs; an hour or more on a 2-core machine)
#   --operator PATH  a coach-operator to measure, for the benches that take one (local, store,
#                    controlplane, scale); the others build their own
# bench/upstream/run.sh runs only where it exists. A bench that fails still gets its row (its
# exit status and whatever it printed); report.sh then exits 1.
# Environment: COACH_BENCH_NO_BUILD=1 is passed on (benches use the binaries already built).
set -uo pipefail
cd "$(dirname "$0")/.." || exit

size=quick
only="local store controlplane scale upstream chaos mlflow"
operator=""
readme=bench/README.md
write=1
while (($#)); do
  case "$1" in
    --size) size=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --operator) operator=$(realpath "$2"); shift 2 ;;
    --readme) readme=$2; shift 2 ;;
    --no-write) write=0; shift ;;
    -h|--help) sed -n 2,16p "$0"; exit 0 ;;
    *) echo "report.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
case "$size" in quick|full) ;; *) echo "report.sh: --size must be quick or full" >&2; exit 2 ;; esac
for b in $only; do
  case "$b" in local|store|controlplane|scale|upstream|chaos|mlflow) ;;
    *) echo "report.sh: --only: unknown bench $b" >&2; exit 2 ;; esac
done
op=()
[[ -n "$operator" ]] && op=(--operator "$operator")

logs=$(mktemp -d /tmp/coach-report.XXXXXX)
echo "report.sh: size $size; logs in $logs"
load() { cut -d' ' -f1-3 /proc/loadavg; }
started=$(date -u +%FT%TZ)
load_start=$(load)
rc=0
sections=()  # name|status|load|seconds|command, one per bench run

run() {  # run NAME PARSER TIMEOUT_S COMMAND...: runs a bench, keeps its output and status
  local name=$1 parser=$2 limit=$3; shift 3
  local l t0 status
  l=$(load)
  t0=$SECONDS
  echo "== $(date -u +%T) $name: $* (load $l)"
  timeout "$limit" "$@" >"$logs/$name.log" 2>&1
  status=$?
  case $status in
    0) status=ok ;;
    124) status="timed out after $limit s"; rc=1 ;;
    *) status="exit $status"; rc=1 ;;
  esac
  echo "   $status in $((SECONDS - t0)) s"
  printf '%s\n' "$parser" >"$logs/$name.parser"
  sections+=("$name|$status|${l%% *}|$((SECONDS - t0))|$*")
}

want() { [[ " $only " == *" $1 "* ]]; }
if [[ $size == quick ]]; then
  want local && run local local 1200 bench/local/run.sh --iterations 20 --jobs 300 "${op[@]}"
  want store && run store store 1200 bench/local/store_scale.sh --stages "0 200 1000" \
    --iterations 15 "${op[@]}"
  want controlplane && run controlplane controlplane 1200 bench/controlplane/run.sh --jobs 50 \
    --rounds 1 --compare-qps 0 --only speed "${op[@]}"
  want scale && run scale scale 1800 bench/scale/run.sh --jobs 100 "${op[@]}"
  want upstream && [[ -x bench/upstream/run.sh ]] && run upstream controlplane 1800 \
    bench/upstream/run.sh --jobs 10 --replicas 4 --rounds 1 --unrelated-pods 0,200
  want chaos && run chaos chaos 1800 bazel test //tools/suites:chaos_kube --test_output=streamed \
    --cache_test_results=no --test_env=COACH_CHAOS_JOBS=30 --test_env=COACH_CHAOS_KILLS=4 \
    --test_env=COACH_CHAOS_PROXY_JOBS=10
  want mlflow && run mlflow mlflow 1200 bench/mlflow/run.sh --points 50000 --seconds 5
else
  want local && run local local 3600 bench/local/run.sh "${op[@]}"
  want store && run store store 3600 bench/local/store_scale.sh "${op[@]}"
  want controlplane && run controlplane controlplane 3600 bench/controlplane/run.sh --jobs 200 \
    --rounds 3 --compare-qps 0 "${op[@]}"
  want scale && run scale scale 7200 bench/scale/run.sh --jobs 2000 "${op[@]}"
  want upstream && [[ -x bench/upstream/run.sh ]] && run upstream controlplane 7200 \
    bench/upstream/run.sh
  want chaos && run chaos chaos 3600 bazel test //tools/suites:chaos_kube --test_output=streamed \
    --cache_test_results=no
  want mlflow && run mlflow mlflow 1800 bench/mlflow/run.sh
fi

header=(
  "**bench/report.sh --size $size**, $started to $(date -u +%FT%TZ)," \
  "commit \`$(git rev-parse --short HEAD)\`$(git diff --quiet HEAD -- operator common api || echo ' (with uncommitted changes under operator/, common/ or api/)')$([[ -n "$operator" ]] && echo ", operator binary given with --operator")."
  "Machine: $(nproc) CPUs ($(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)), $(awk '/^MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo) memory, $(uname -sr);" \
  "load average $load_start at the start, $(load) at the end (the load column: 1-minute load when each bench started)."
  "Every figure was printed by the command in its first row; ratios are against a floor measured in the same run. Whole outputs were in \`$logs\`."
)
printf '%s\n' "${sections[@]}" >"$logs/sections"
printf '%s\n' "${header[@]}" >"$logs/header"
/usr/bin/python3 - "$logs" "$readme" "$write" <<'PY' || rc=1
import os, sys
sys.path.insert(0, "bench")
import report_lib
logs, readme, write = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
header = [" ".join(open(os.path.join(logs, "header")).read().split("\n")).strip()]
sections = []
for line in open(os.path.join(logs, "sections")).read().splitlines():
    if not line:
        continue
    name, status, load, seconds, command = line.split("|", 4)
    text = open(os.path.join(logs, name + ".log"), errors="replace").read()
    parser = open(os.path.join(logs, name + ".parser")).read().strip()
    rows = report_lib.PARSERS[parser](text) + (report_lib.parse_generic(text)
                                               if parser != "generic" else [])
    sections.append((name, command, "%s, %s s" % (status, seconds), load, rows))
block = report_lib.render(header, sections)
print(block)
if write:
    with open(readme) as f:
        doc = f.read()
    with open(readme, "w") as f:
        f.write(report_lib.replace_between_markers(doc, block))
    print("report.sh: table written into %s" % readme)
PY
exit $rc
