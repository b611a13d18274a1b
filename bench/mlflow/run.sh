#!/usr/bin/env bash
# MLflow figures on this machine: coach's MetricLogger vs the Python client's mlflow.log_metric loop
# and vs the server's own log-batch ceiling, all against one fresh local server; plus the cost of
# one Log() call on the training thread. Figures, not a test.
# Usage: bench/mlflow/run.sh [--points N] [--senders K] [--seconds S] [--threads T] [--workers W]
set -euo pipefail
cd "$(dirname "$0")/../.."
points=200000 senders=4 seconds=10 threads=4 workers=4
while (($#)); do
  case "$1" in
    --points) points=$2; shift 2 ;;
    --senders) senders=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --workers) workers=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
tools/mlflow_env.sh install
py="$(tools/mlflow_env.sh python)"
bazel build -c opt //bench/mlflow:mlflow_bench >/dev/null 2>&1 || bazel build -c opt //bench/mlflow:mlflow_bench
bench="$(bazel info -c opt bazel-bin 2>/dev/null)/bench/mlflow/mlflow_bench"
dir="$(mktemp -d)"
trap 'tools/mlflow_env.sh stop "$dir"; rm -rf "$dir"' EXIT
uri="$(COACH_MLFLOW_WORKERS=$workers tools/mlflow_env.sh start "$dir")"
echo "server: $uri (mlflow $("$py" -c 'import mlflow; print(mlflow.__version__)'), $workers workers, sqlite)" >&2

python_json="$(MLFLOW_TRACKING_URI=$uri "$py" bench/mlflow/python_log_metric.py "$seconds" 2>/dev/null | grep "^{" | tail -1)"
coach_json="$("$bench" coach "$uri" "$points" "$senders" | grep "^{")"
coach1_json="$("$bench" coach "$uri" "$points" 1 | grep "^{")"
ingest_json="$("$bench" ingest "$uri" "$threads" "$seconds" | grep "^{")"

/usr/bin/python3 - "$python_json" "$coach_json" "$coach1_json" "$ingest_json" <<'PY'
import json, sys
py, coach, coach1, ingest = (json.loads(a) for a in sys.argv[1:])
rows = [
    ("python mlflow.log_metric loop", py["metrics_per_s"], f'{py["points"]} points in {py["seconds"]:.1f} s'),
    (f'coach MetricLogger, {coach["senders"]} senders', coach["metrics_per_s"],
     f'{coach["delivered"]}/{coach["points"]} delivered in {coach["seconds"]:.1f} s, {coach["requests"]} requests'),
    ("coach MetricLogger, 1 sender", coach1["metrics_per_s"],
     f'{coach1["delivered"]}/{coach1["points"]} delivered in {coach1["seconds"]:.1f} s'),
    (f'server ceiling: bare log-batch x{ingest["threads"]} threads', ingest["metrics_per_s"],
     f'{ingest["requests"]} requests of 1000, {ingest["failed"]} failed'),
]
print(f'{"measurement":45} {"metrics/s":>12}  note')
for name, rate, note in rows:
    print(f'{name:45} {rate:12,.0f}  {note}')
print()
print(f'coach ({coach["senders"]} senders) / python: {coach["metrics_per_s"] / py["metrics_per_s"]:8.1f}x   (goal >= 50x)')
print(f'coach ({coach["senders"]} senders) / server ceiling: {100 * coach["metrics_per_s"] / ingest["metrics_per_s"]:5.1f}%   (goal >= 80%)')
print(f'coach (1 sender) / server ceiling: {100 * coach1["metrics_per_s"] / ingest["metrics_per_s"]:5.1f}%')
print(f'Log() on the training thread: mean {coach["log_ns_mean"]:.0f} ns, p50 {coach["log_ns_p50"]:.0f} ns, '
      f'p99 {coach["log_ns_p99"]:.0f} ns (per call, chunks of 1000, while senders deliver)')
PY
