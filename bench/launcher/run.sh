#!/usr/bin/env bash
# Prints coach-launch's start-up overhead against torchrun's on this machine (figures, not a
# test). Usage: bench/launcher/run.sh [--runs N]
set -euo pipefail
cd "$(dirname "$0")/../.."
bazel build -c opt //launcher:coach-launch >/dev/null 2>&1 || bazel build -c opt //launcher:coach-launch
launcher="$(bazel info -c opt bazel-bin 2>/dev/null)/launcher/coach-launch"
exec /usr/bin/python3 bench/launcher/bench.py --launcher "$launcher" \
  --program launcher/testdata/allreduce.py "$@"
