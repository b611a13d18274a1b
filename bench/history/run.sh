#!/usr/bin/env bash
# The cost of keeping every replica's log at 2,000 pods: the operator reading each log at the end
# and keeping it in an S3 store (what is built), against reading alone and against launchers
# shipping their output as they run. One fresh SeaweedFS (tools/testenv/seaweedfs) for the run.
# Figures, not a test (bench/README.md, bench/history).
# Usage: bench/history/run.sh [--log-kib KIB] [--jobs N] [--replicas K] [--flush-s S]
#        [--attempt-minutes M] [--ship-pods P] [--max-pending-mib M] [...]   (history_bench --help)
set -euo pipefail
cd "$(dirname "$0")/../.."
tools/testenv/seaweedfs check || {
  echo "bench/history: weed is not built: run tools/testenv/seaweedfs build" >&2
  exit 2
}
bazel build -c opt //bench/history:history_bench >/dev/null 2>&1 ||
  bazel build -c opt //bench/history:history_bench
bench="$(bazel info -c opt bazel-bin 2>/dev/null)/bench/history/history_bench"
dir="$(mktemp -d)"
trap 'tools/testenv/seaweedfs down --dir "$dir" 2>/dev/null || true; rm -rf "$dir"' EXIT
tools/testenv/seaweedfs up --dir "$dir" --owner-pid $$
env_lines="$(tools/testenv/seaweedfs env --dir "$dir")"
while IFS= read -r line; do export "${line?}"; done <<<"$env_lines"
"$bench" --store-pid "$(cat "$dir/seaweedfs/pid")" "$@"
