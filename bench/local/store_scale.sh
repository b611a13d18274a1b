#!/usr/bin/env bash
# Local backend with a growing store (figures, not a test; see bench/README.md, section
# "bench/local: a store of 5,000 jobs"). One coach-operator --backend=local runs the whole
# time; for each stage (default 0, 1000, 5000 finished jobs in its store) the store is first
# filled up to the stage with one-replica /bin/true jobs (`throughput`, left Succeeded in the
# store), then `submit_latency` measures submit-to-running of a 1 Master + 3 Workers job and the
# operator's RSS is read (before the latency run: what the store and the earlier runs left).
# Then the operator is restarted on the last store and measured again ("5000r"): a fresh
# process tells what the store itself costs. The last lines print each stage over the first,
# and its RSS per stored job ("slope", over the first stage and over the one before).
#
# Usage: bench/local/store_scale.sh [--stages "0 1000 5000"] [--iterations 30] [--operator PATH]
# Environment: COACH_BENCH_NO_BUILD=1 uses the binaries already in bazel-out/k8-opt.
set -euo pipefail
cd "$(dirname "$0")/../.."

stages="0 1000 5000"
iterations=30
operator=""
while (($#)); do
  case "$1" in
    --stages) stages=$2; shift 2 ;;
    --iterations) iterations=$2; shift 2 ;;
    --operator) operator=$(realpath "$2"); shift 2 ;;
    -h|--help) sed -n 2,13p "$0"; exit 0 ;;
    *) echo "store_scale.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
prev=-1
for s in $stages; do
  if ! [[ "$s" =~ ^[0-9]+$ ]] || ((s <= prev)); then
    echo "store_scale.sh: --stages must be increasing integers" >&2
    exit 2
  fi
  prev=$s
done
[[ "$iterations" =~ ^[1-9][0-9]*$ ]] || { echo "store_scale.sh: --iterations must be >= 1" >&2; exit 2; }

targets=(//bench/local:submit_latency //bench/local:throughput //bench/local:replica_probe
         //operator:coach-operator //operator/backend/local:coach-replica-shim)
if [[ "${COACH_BENCH_NO_BUILD:-}" != 1 ]] && ! bazel build -c opt "${targets[@]}" \
    >/tmp/coach-bench-store-build.log 2>&1; then
  cat /tmp/coach-bench-store-build.log
  exit 1
fi
bin="$PWD/bazel-out/k8-opt/bin"
[[ -n "$operator" ]] || operator="$bin/operator/coach-operator"
shim="$bin/operator/backend/local/coach-replica-shim"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
state=$(mktemp -d /tmp/coach-bench-store.XXXXXX)
grpc=$(free_port)
http=$(free_port)
log="$state.operator.log"
op=0
start_operator() {
  "$operator" --backend=local "--listen=127.0.0.1:$grpc" "--http-listen=127.0.0.1:$http" \
    "--state-dir=$state" "--shim=$shim" --log-level=warn >>"$log" 2>&1 &
  op=$!
  for _ in $(seq 600); do
    curl -fsS "http://127.0.0.1:$http/readyz" >/dev/null 2>&1 && break
    sleep 0.1
  done
  curl -fsS "http://127.0.0.1:$http/readyz" >/dev/null || { echo "operator not ready; log $log" >&2; exit 1; }
  server=(--server "127.0.0.1:$grpc" --operator-pid "$op")
}
# shellcheck disable=SC2317  # run by the EXIT trap below, which shellcheck does not follow
cleanup() {
  kill "$op" 2>/dev/null && wait "$op" 2>/dev/null
  rm -rf "$state"
}
trap cleanup EXIT
start_operator
rss_mib() { awk '/^VmRSS:/ {printf "%.1f", $2 / 1024}' "/proc/$op/status"; }
hwm_mib() { awk '/^VmHWM:/ {printf "%.1f", $2 / 1024}' "/proc/$op/status"; }
# p50 and p99 of a submit_latency row: the label, then n p50 p90 p99 min max.
row() { awk -v l="$1" 'index($0, l) == 1 {print $(NF-4), $(NF-2)}' "$2"; }

echo "== $(date -u +%FT%TZ) $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)," \
     "git $(git rev-parse --short HEAD)$(git diff --quiet -- operator || echo '+local changes')," \
     "operator pid $op, state $state"
results=()
rc=0
measure() {  # measure LABEL: submit latency and RSS now, one line and one entry of results
  local out acc50 acc99 all50 all99 view50 view99 base50 load rss_before
  sleep 3  # let the last jobs' passes and syncs finish before measuring
  rss_before=$(rss_mib)
  out=$(mktemp)
  "$bin/bench/local/submit_latency" "${server[@]}" --iterations "$iterations" --warmup 3 \
    --namespace "lat-$1" --probe "$bin/bench/local/replica_probe" >"$out" 2>&1 || { cat "$out"; rc=1; }
  read -r acc50 acc99 < <(row "CreateJob returned" "$out")
  read -r all50 all99 < <(row "all 4 replica processes started" "$out")
  read -r view50 view99 < <(row "operator view" "$out")
  read -r base50 _ < <(row "baseline: posix_spawn" "$out")
  rm -f "$out"
  load=$(cut -d' ' -f1 /proc/loadavg)
  printf '%-6s stored: CreateJob p50 %6s p99 %6s ms | all 4 started p50 %6s p99 %6s ms | operator view p50 %6s p99 %6s ms | floor p50 %5s ms | RSS %6s MiB (before %s, peak %s) | load %s\n' \
    "$1" "$acc50" "$acc99" "$all50" "$all99" "$view50" "$view99" "$base50" "$(rss_mib)" \
    "$rss_before" "$(hwm_mib)" "$load"
  results+=("$1 $acc50 $acc99 $all50 $all99 $view50 $view99 $rss_before $load")
}
stored=0
for s in $stages; do
  if ((s > stored)); then
    out=$(mktemp)
    "$bin/bench/local/throughput" "${server[@]}" --jobs $((s - stored)) --namespace "fill-$s" \
      --skip-baseline --timeout 1800 >"$out" 2>&1 || { cat "$out"; rc=1; }
    grep -E "^(accepted|completion rate)" "$out" | sed "s/^/fill to $s: /"
    rm -f "$out"
    stored=$s
  fi
  measure "$s"
done
# The same store read by a fresh operator: what it holds because of the store, not because of
# the jobs it ran (the allocator keeps what the runs above freed).
kill "$op" && wait "$op" 2>/dev/null
start_operator
echo "restarted on the same store (pid $op): RSS when ready $(rss_mib) MiB"
measure "${stored}r"

# Each stage over the first (same operator, same run).
read -r s0 a50 a99 l50 l99 v50 v99 r0 _ <<<"${results[0]}"
pn=$s0
prss=$r0
summary="STORE-SUMMARY"
for r in "${results[@]}"; do
  read -r s acc50 acc99 all50 all99 view50 view99 rss load <<<"$r"
  ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
  echo "ratio ${s}/${s0} stored: CreateJob p50 x$(ratio "$acc50" "$a50") p99 x$(ratio "$acc99" "$a99")," \
       "all started p50 x$(ratio "$all50" "$l50") p99 x$(ratio "$all99" "$l99")," \
       "operator view p50 x$(ratio "$view50" "$v50") p99 x$(ratio "$view99" "$v99"), RSS x$(ratio "$rss" "$r0")"
  # RSS per stored job (the store's cost) over the first stage and, for a stage of
  # the same process, over the one before: sqlite's page cache fills within the first 1,000
  # jobs, so the second is the slope that goes on.
  n=${s%r}
  if ((n > s0)); then
    slope() { awk -v a="$1" -v b="$2" -v n="$3" 'BEGIN { printf "%.2f", (a - b) * 1024 / n }'; }
    line="slope ${s}/${s0} stored: RSS $(slope "$rss" "$r0" $((n - s0))) KiB per stored job"
    [[ "$s" == "$n" && "$pn" -gt "$s0" ]] &&
      line+=", over ${pn} stored: $(slope "$rss" "$prss" $((n - pn))) KiB per stored job"
    echo "$line"
  fi
  [[ "$s" == "$n" ]] && { pn=$n; prss=$rss; }
  summary+=" s${s}_create_p50=$acc50 s${s}_create_p99=$acc99 s${s}_started_p50=$all50 s${s}_started_p99=$all99"
  summary+=" s${s}_view_p50=$view50 s${s}_view_p99=$view99 s${s}_rss_mib=$rss s${s}_load=$load"
done
labels=$(for r in "${results[@]}"; do echo "${r%% *}"; done | paste -sd,)
echo "$summary stages=$labels"
exit $rc
