#!/usr/bin/env bash
# Local-backend benchmarks: submit-to-running latency of a 4-replica PyTorchJob and the
# throughput of 1000 tiny jobs, each against a baseline measured in the same run (figures,
# not a test; see bench/README.md). Builds with -c opt, starts its own coach-operator
# (temporary state dir, loopback ports) for each benchmark and stops it afterwards.
#
# Usage: bench/local/run.sh [--iterations N] [--jobs N] [--clients N]
#                           [--operator PATH] [--only latency|throughput|recovery]
#   --only recovery   whole-job recovery with real torch (recovery --help), not run otherwise
#   --operator PATH   an already built coach-operator to measure instead (A/B comparisons)
# Environment: COACH_BENCH_LATENCY_ARGS / _THROUGHPUT_ARGS / _RECOVERY_ARGS add flags to each
# binary (see `submit_latency --help`, `throughput --help`).
set -euo pipefail
cd "$(dirname "$0")/../.."

iterations=50
jobs=1000
clients=4
operator=""
only=""
while (($#)); do
  case "$1" in
    --iterations) iterations=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --clients) clients=$2; shift 2 ;;
    --operator) operator=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    -h|--help) sed -n 2,12p "$0"; exit 0 ;;
    *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

targets=(//bench/local:submit_latency //bench/local:throughput //bench/local:replica_probe
         //bench/local:recovery
         //operator:coach-operator //operator/backend/local:coach-replica-shim)
if ! bazel build -c opt "${targets[@]}" >/tmp/coach-bench-local-build.log 2>&1; then
  cat /tmp/coach-bench-local-build.log
  exit 1
fi
bin="bazel-out/k8-opt/bin"
common=(--shim "$PWD/$bin/operator/backend/local/coach-replica-shim")
if [[ -n "$operator" ]]; then
  common+=(--operator "$(realpath "$operator")")
else
  common+=(--operator "$PWD/$bin/operator/coach-operator")
fi

echo "== $(date -u +%FT%TZ) $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)," \
     "git $(git rev-parse --short HEAD)$(git diff --quiet -- operator || echo '+local changes')"
state_parent=${TMPDIR:-/tmp}
echo "operator state under $state_parent ($(stat -f -c %T "$state_parent") filesystem; TMPDIR=/dev/shm for tmpfs)"
rc=0
if [[ -z "$only" || "$only" == latency ]]; then
  echo
  # shellcheck disable=SC2086  # the extra flags, split into words on purpose
  "$bin/bench/local/submit_latency" --iterations "$iterations" "${common[@]}" \
    --probe "$PWD/$bin/bench/local/replica_probe" ${COACH_BENCH_LATENCY_ARGS:-} || rc=1
fi
if [[ -z "$only" || "$only" == throughput ]]; then
  echo
  # shellcheck disable=SC2086  # the extra flags, split into words on purpose
  "$bin/bench/local/throughput" --jobs "$jobs" --clients "$clients" "${common[@]}" \
    ${COACH_BENCH_THROUGHPUT_ARGS:-} || rc=1
fi
# Minutes of real torch training: only when asked for.
if [[ "$only" == recovery ]]; then
  echo
  # shellcheck disable=SC2086  # the extra flags, split into words on purpose
  "$bin/bench/local/recovery" --program "$PWD/examples/pytorch/ddp_train.py" "${common[@]}" \
    ${COACH_BENCH_RECOVERY_ARGS:-} || rc=1
fi
exit $rc
