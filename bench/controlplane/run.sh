#!/usr/bin/env bash
# Control-plane benchmark of coach-operator --backend=kube on a real API server (figures, not a
# test; see bench/README.md, section bench/controlplane). Builds with -c opt, brings up a fresh
# tools/testenv control plane in a temporary folder, applies coach's CRDs, runs
# bazel-out/k8-opt/bin/bench/controlplane/controlplane (every flag is passed on: --jobs,
# --replicas, --compare-qps, --compare-burst, --client-threads, --unrelated, --memory-jobs,
# --only speed|memory, --operator PATH) and takes the control plane down at the end.
#
# Usage: bench/controlplane/run.sh [--jobs 50] [--replicas 8] [--only speed|memory] [...]
#        bench/controlplane/run.sh --jobs 200 --replicas 8        # the full size, 200 x 8
# Environment: COACH_BENCH_KEEP_TESTENV=1 leaves the control plane up (its folder is printed);
# COACH_BENCH_NO_BUILD=1 uses the binaries already in bazel-out/k8-opt (a busy Bazel server).
set -euo pipefail
cd "$(dirname "$0")/../.."
case "${1:-}" in -h|--help) sed -n 2,13p "$0"; exit 0 ;; esac

if [[ "${COACH_BENCH_NO_BUILD:-}" != 1 ]] && ! bazel build -c opt //bench/controlplane:controlplane //operator:coach-operator \
    >/tmp/coach-bench-controlplane-build.log 2>&1; then
  cat /tmp/coach-bench-controlplane-build.log
  exit 1
fi
bin="bazel-out/k8-opt/bin"
operator="$PWD/$bin/operator/coach-operator"
args=()
while (($#)); do
  case "$1" in
    --operator) operator=$(realpath "$2"); shift 2 ;;
    --pin) pin_cpus=1; shift ;;
    *) args+=("$1"); shift ;;
  esac
done

dir=$(mktemp -d /tmp/coach-bench-controlplane.XXXXXX)
rmdir "$dir"  # testenv up wants a fresh (absent or empty) folder
cleanup() {
  if [[ "${COACH_BENCH_KEEP_TESTENV:-}" == 1 ]]; then
    echo "testenv left up in $dir"
  else
    tools/testenv/testenv down --dir "$dir" >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT
# Pods beyond the fake nodes' capacity (110 each) stay Pending; they still count as created.
# COACH_TESTENV_NODES=16 leaves room for 200 x 8 (slower to come up on a busy machine).
kubeconfig=$(COACH_TESTENV_NODES=${COACH_TESTENV_NODES:-4} tools/testenv/testenv up --dir "$dir")
kubectl="$(tools/testenv/testenv bin)/kubectl"
"$kubectl" --kubeconfig "$kubeconfig" apply -f charts/coach/crds/ >/dev/null
"$kubectl" --kubeconfig "$kubeconfig" wait --for condition=established --timeout=60s \
  -f charts/coach/crds/ >/dev/null

# --pin: the control plane on CPU 0, the harness and the operator on the other CPUs, as on a
# real cluster where the operator runs on a node, not beside the API server (see bench/README.md).
pin=()
if [[ -n "${pin_cpus:-}" ]]; then
  (($(nproc) >= 2)) || { echo "--pin needs 2 CPUs" >&2; exit 2; }
  for f in "$dir"/pids/*; do taskset -apc 0 "$(cat "$f")" >/dev/null; done
  pin=(taskset -c "1-$(($(nproc) - 1))")
  echo "pinned: control plane on CPU 0, harness and operator on CPU 1-$(($(nproc) - 1))"
fi
echo "== $(date -u +%FT%TZ) $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)," \
     "git $(git rev-parse --short HEAD)$(git diff --quiet -- operator || echo '+local changes')," \
     "testenv $(basename "$(tools/testenv/testenv bin | xargs dirname)")"
"${pin[@]}" "$bin/bench/controlplane/controlplane" --kubeconfig "$kubeconfig" --operator "$operator" \
  --log-dir "$(dirname "$dir")" "${args[@]}"
