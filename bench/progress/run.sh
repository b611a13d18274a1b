#!/usr/bin/env bash
# The operator's cost of replicas' progress reports (ReportProgress): CPU per report against gRPC's
# floor, reconcile passes asked for, memory per reporting pod. Figures, not a test.
# Usage: bench/progress/run.sh [--pods N] [--interval S] [--seconds S] [--pods-per-job K] [--threads T]
set -euo pipefail
cd "$(dirname "$0")/../.."
bazel build -c opt //bench/progress:progress_bench >/dev/null 2>&1 || bazel build -c opt //bench/progress:progress_bench
exec "$(bazel info -c opt bazel-bin 2>/dev/null)/bench/progress/progress_bench" "$@"
