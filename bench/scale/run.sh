#!/usr/bin/env bash
# Scale bench of coach-operator --backend=kube on kwok nodes (figures, not a test; see
# bench/README.md, section bench/scale). One command, two parts on one fresh tools/testenv
# control plane with enough kwok nodes for every pod (110 pods each):
#  1. bench/controlplane's binary at the same size, pods scheduled and run by kwok (--schedule),
#     one round: coach against the tight client creating the same pods and services (the
#     direct-creation floor; goal within 1.25x) and to the same end state;
#  2. bench/scale/scale.py: one operator owns JOBS x REPLICAS pods, all Running on kwok nodes:
#     operator CPU and RSS per 1,000 owned pods; then every job's Master finishes and the
#     time from the pod's Succeeded to the job's Succeeded (both seen on watches) is printed as
#     p50/p90/p99 (reconcile latency while every job changes state).
#
# Usage: bench/scale/run.sh [--jobs 2000] [--replicas 8] [--pin] [--only floor|scale]
#                          [--no-schedule] [--operator PATH]   (another coach-operator build)
#   --pin   the control plane on CPU 0, harness and operator on the others (bench/controlplane)
#   --no-schedule  part 1 leaves the pods Pending (a scheduler name that does not exist), so
#           kube-scheduler and kwok do not work inside the measurement: on 2 CPUs they,
#           not the creating clients, set the pace at 2,000 x 8 (about 21 pods/s scheduled)
# Environment: COACH_BENCH_NO_BUILD=1 uses the binaries already in bazel-out/k8-opt;
# COACH_BENCH_KEEP_TESTENV=1 leaves the control plane up; COACH_BENCH_CONTROLPLANE_BIN another
# build of bench/controlplane's binary.
set -euo pipefail
cd "$(dirname "$0")/../.."

jobs=2000
replicas=8
only=""
pin=""
schedule=--schedule
operator=""
while (($#)); do
  case "$1" in
    --jobs) jobs=$2; shift 2 ;;
    --replicas) replicas=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --pin) pin=1; shift ;;
    --no-schedule) schedule=""; shift ;;
    --operator) operator=$(realpath "$2"); shift 2 ;;
    -h|--help) sed -n 2,22p "$0"; exit 0 ;;
    *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ "$jobs" =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: --jobs must be a positive integer" >&2; exit 2; }
[[ "$replicas" =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: --replicas must be a positive integer" >&2; exit 2; }
case "$only" in ""|scale|floor) ;; *) echo "run.sh: --only floor|scale" >&2; exit 2 ;; esac

if [[ "${COACH_BENCH_NO_BUILD:-}" != 1 ]] && ! bazel build -c opt //bench/controlplane:controlplane \
    //operator:coach-operator >/tmp/coach-bench-scale-build.log 2>&1; then
  cat /tmp/coach-bench-scale-build.log
  exit 1
fi
bin="$PWD/bazel-out/k8-opt/bin"
[[ -n "$operator" ]] || operator="$bin/operator/coach-operator"

dir=$(mktemp -d /tmp/coach-bench-scale.XXXXXX)
rmdir "$dir"  # testenv up wants a fresh (absent or empty) folder
# shellcheck disable=SC2317  # run by the EXIT trap below, which shellcheck does not follow
cleanup() {
  if [[ "${COACH_BENCH_KEEP_TESTENV:-}" == 1 ]]; then
    echo "testenv left up in $dir"
  else
    tools/testenv/testenv down --dir "$dir" >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT
# Room for every pod and half as much again (the floor's namespaces are deleted between its runs,
# waiting up to 300 s; pods still terminating hold their room). testenv's 4 nodes take 110 pods
# each, so the bench adds kwok nodes of 1,000 pods (kwok runs every node with testenv's
# annotation; a few large nodes instead of 220 small ones for kwok to keep alive on 2 cores).
nodes=$(( (jobs * replicas * 3 / 2 + 999) / 1000 ))
echo "== $(date -u +%FT%TZ) $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)," \
     "git $(git rev-parse --short HEAD)$(git diff --quiet -- operator || echo '+local changes')," \
     "$jobs jobs x $replicas replicas, $nodes more kwok nodes of 1,000 pods"
kubeconfig=$(tools/testenv/testenv up --dir "$dir")
kubectl="$(tools/testenv/testenv bin)/kubectl"
for ((i = 0; i < nodes; i++)); do
  printf -- '---\n%s\n' "apiVersion: v1
kind: Node
metadata:
  name: kwok-scale-$i
  annotations: {kwok.x-k8s.io/node: fake, node.alpha.kubernetes.io/ttl: \"0\"}
  labels: {type: kwok, coach.dev/bench: scale, kubernetes.io/hostname: kwok-scale-$i}
spec: {}
status:
  allocatable: {cpu: \"1000\", memory: 8Ti, pods: \"1000\", ephemeral-storage: 10Ti}
  capacity: {cpu: \"1000\", memory: 8Ti, pods: \"1000\", ephemeral-storage: 10Ti}"
done | "$kubectl" --kubeconfig "$kubeconfig" apply -f - >/dev/null
"$kubectl" --kubeconfig "$kubeconfig" wait --for condition=Ready --timeout=300s node \
  -l coach.dev/bench=scale >/dev/null
"$kubectl" --kubeconfig "$kubeconfig" apply -f charts/coach/crds/ >/dev/null
"$kubectl" --kubeconfig "$kubeconfig" wait --for condition=established --timeout=60s \
  -f charts/coach/crds/ >/dev/null

pinned=()
if [[ -n "$pin" ]]; then
  (($(nproc) >= 2)) || { echo "--pin needs 2 CPUs" >&2; exit 2; }
  for f in "$dir"/pids/*; do taskset -apc 0 "$(cat "$f")" >/dev/null; done
  pinned=(taskset -c "1-$(($(nproc) - 1))")
  echo "pinned: control plane on CPU 0, harness and operator on CPU 1-$(($(nproc) - 1))"
fi

rc=0
if [[ -z "$only" || "$only" == floor ]]; then
  echo
  echo "== part 1: coach vs the direct-creation floor ($(date -u +%T), load $(cut -d' ' -f1-3 /proc/loadavg))"
  "${pinned[@]}" "${COACH_BENCH_CONTROLPLANE_BIN:-$bin/bench/controlplane/controlplane}" --kubeconfig "$kubeconfig" \
    --operator "$operator" --log-dir /tmp --jobs "$jobs" --replicas "$replicas" \
    --only speed ${schedule:+"$schedule"} --rounds 1 --compare-qps 0 --timeout 1800 || rc=1
fi
if [[ -z "$only" || "$only" == scale ]]; then
  echo
  echo "== part 2: owned pods, reconcile latency ($(date -u +%T), load $(cut -d' ' -f1-3 /proc/loadavg))"
  ns=coach-scale
  "${pinned[@]}" python3 bench/scale/scale.py --env "$dir/env" --operator "$operator" \
    --jobs "$jobs" --replicas "$replicas" --namespace "$ns" --log-dir /tmp || rc=1
fi
exit $rc
