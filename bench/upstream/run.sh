#!/usr/bin/env bash
# coach side by side with the upstream Kubeflow Training Operator (v1.9.4, built from its Go
# module by bench/upstream/upstream-operator) on one tools/testenv control plane (figures, not a
# test; see bench/README.md, section bench/upstream). The harness is bench/controlplane's
# (--only upstream): the same creating client and measuring code for both operators, run one at
# a time in alternating rounds, each operator with its own CRDs, upstream with its validating
# webhook installed (a ValidatingWebhookConfiguration reaching it on loopback, as its manifests
# install it but with clientConfig.url instead of a Service; serving certificate made here with
# openssl and handed to upstream's cert-controller through its Secret).
#
# With --kind trainjob (first argument): Kubeflow Trainer v2's TrainJobs instead, coach against
# upstream Trainer v2.3 + JobSet v0.12 (bench/upstream/upstream-trainer builds and starts them,
# each with its webhooks on loopback): 50 TrainJobs x 8 nodes on upstream's torch-distributed
# runtime, --only trainjob of the harness; speed only.
#
# Usage: bench/upstream/run.sh                       # 50 x 8, 3 rounds; memory at 0/2000/10000 pods
#        bench/upstream/run.sh --kind trainjob       # 50 TrainJobs x 8 nodes, 3 rounds
#        bench/upstream/run.sh --jobs 10 --replicas 4 --rounds 1 --unrelated-pods 0,200   # quick
#        every other flag goes to the harness: --upstream-raised-qps, --upstream-raised-burst,
#        --memory-jobs, --client-threads, --timeout, --settle, --skip-memory, --skip-speed
# Environment: COACH_BENCH_KEEP_TESTENV=1 leaves the control plane up (its folder is printed);
# COACH_BENCH_NO_BUILD=1 uses the binaries already in bazel-out/k8-opt (a busy Bazel server).
set -euo pipefail
cd "$(dirname "$0")/../.."
COACH_SHARED_DIR=${COACH_SHARED_DIR:-$(cd .. && pwd)/shared}
case "${1:-}" in -h|--help) sed -n 2,22p "$0"; exit 0 ;; esac
kind=pytorchjob
if [[ ${1:-} == --kind ]]; then
  kind=${2:-}
  shift 2
  [[ $kind == pytorchjob || $kind == trainjob ]] || { echo "--kind: pytorchjob or trainjob" >&2; exit 2; }
fi

if [[ "${COACH_BENCH_NO_BUILD:-}" != 1 ]] && ! bazel build -c opt //bench/controlplane:controlplane \
    //operator:coach-operator >/tmp/coach-bench-upstream-build.log 2>&1; then
  cat /tmp/coach-bench-upstream-build.log
  exit 1
fi
bin="bazel-out/k8-opt/bin"
if [[ $kind == trainjob ]]; then
  upstream=$(bench/upstream/upstream-trainer bin)
else
  upstream=$(bench/upstream/upstream-operator bin)
fi

dir=$(mktemp -d /tmp/coach-bench-upstream.XXXXXX)
rmdir "$dir"  # testenv up wants a fresh (absent or empty) folder
work=$(mktemp -d /tmp/coach-bench-upstream-work.XXXXXX)
cleanup() {
  if [[ "${COACH_BENCH_KEEP_TESTENV:-}" == 1 ]]; then
    echo "testenv left up in $dir"
  else
    tools/testenv/testenv down --dir "$dir" >/dev/null 2>&1 || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
kubeconfig=$(COACH_TESTENV_NODES=${COACH_TESTENV_NODES:-4} tools/testenv/testenv up --dir "$dir")
kubectl="$(tools/testenv/testenv bin)/kubectl"
k() { "$kubectl" --kubeconfig "$kubeconfig" "$@"; }

if [[ $kind == trainjob ]]; then
  k apply --server-side --field-manager=coach-bench --force-conflicts -f charts/coach/crds/ >/dev/null
  for _ in $(seq 1 300); do
    [[ $(k get crd trainjobs.trainer.kubeflow.org \
      -o 'jsonpath={.status.conditions[?(@.type=="Established")].status}' 2>/dev/null) == True ]] && break
    sleep 0.2
  done
  # Upstream's torch runtime, and a copy whose pods name a scheduler that does not exist, so
  # that they stay Pending and neither kube-scheduler nor kwok works inside the measurement
  # (the harness's --schedule uses the runtime itself).
  runtime=$COACH_SHARED_DIR/reference/kubeflow-v2/runtimes/torch_distributed.yaml
  k apply -f "$runtime" >/dev/null
  /usr/bin/python3 - "$runtime" <<'PY' | k apply -f - >/dev/null
import json, sys, yaml
runtime = yaml.safe_load(open(sys.argv[1]))
runtime["metadata"]["name"] = "torch-distributed-unscheduled"
for rjob in runtime["spec"]["template"]["spec"]["replicatedJobs"]:
    rjob["template"]["spec"]["template"]["spec"]["schedulerName"] = "coach-bench-unscheduled"
print(json.dumps(runtime))
PY
  echo "== $(date -u +%FT%TZ) $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)," \
       "git $(git rev-parse --short HEAD)$(git diff --quiet -- operator bench || echo '+local changes')," \
       "testenv $(basename "$(tools/testenv/testenv bin | xargs dirname)")," \
       "upstream $(tr '\n' ' ' <"$upstream/VERSION")"
  rounds=(--rounds 3)
  for a in "$@"; do [[ $a == --rounds || $a == --rounds=* ]] && rounds=(); done
  "$bin/bench/controlplane/controlplane" "${rounds[@]}" --kubeconfig "$kubeconfig" \
    --operator "$PWD/$bin/operator/coach-operator" --log-dir "$(dirname "$dir")" --only trainjob \
    --upstream-trainer "$PWD/bench/upstream/upstream-trainer" --upstream-crds "$upstream/crds" \
    --coach-crds "$PWD/charts/coach/crds" --kubectl "$kubectl" "$@"
  exit
fi

# Upstream's namespace (its default, "kubeflow") and the Secret its cert-controller keeps the
# CA and serving certificate in (made once by `upstream-operator certs`, which says why).
certs=$(bench/upstream/upstream-operator certs)
k create namespace kubeflow >/dev/null
k -n kubeflow create secret generic training-operator-webhook-cert --from-file=ca.crt="$certs/ca.crt" \
  --from-file=ca.key="$certs/ca.key" --from-file=tls.crt="$certs/tls.crt" \
  --from-file=tls.key="$certs/tls.key" >/dev/null
# Its Deployment mounts that Secret at this fixed path (pkg/cert's certDir; the rotator waits for
# tls.crt there and the webhook server serves it): put the same files there.
certdir=/tmp/k8s-webhook-server/serving-certs
mkdir -p "$certdir"
# The same files in every run, so a run beside this one cannot change what this one serves.
cmp -s "$certs/tls.crt" "$certdir/tls.crt" || install -m 0600 "$certs/tls.crt" "$certdir/tls.crt.new"
cmp -s "$certs/tls.key" "$certdir/tls.key" || install -m 0600 "$certs/tls.key" "$certdir/tls.key.new"
[[ -f $certdir/tls.key.new ]] && mv -f "$certdir/tls.key.new" "$certdir/tls.key"
[[ -f $certdir/tls.crt.new ]] && mv -f "$certdir/tls.crt.new" "$certdir/tls.crt"

# The module's ValidatingWebhookConfiguration with its kustomize patch (the name), each webhook's
# service reference turned into https://127.0.0.1:<port><its path>, the CA as caBundle. The
# harness creates it before every upstream run and deletes it after (with failurePolicy Fail it
# would refuse coach's jobs while upstream is down).
webhook_port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
/usr/bin/python3 bench/upstream/webhook_config.py "$upstream/webhook.yaml" \
  "$upstream/webhook-patch.yaml" "$certs/ca.crt" "$webhook_port" >"$work/webhook.json"

k apply --server-side --field-manager=coach-bench --force-conflicts -f charts/coach/crds/ >/dev/null
k wait --for condition=established --timeout=60s -f charts/coach/crds/ >/dev/null

echo "== $(date -u +%FT%TZ) $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)," \
     "git $(git rev-parse --short HEAD)$(git diff --quiet -- operator bench || echo '+local changes')," \
     "testenv $(basename "$(tools/testenv/testenv bin | xargs dirname)")," \
     "upstream training-operator $(cat "$upstream/VERSION")"
# Three rounds unless --rounds is given (the harness takes each flag once).
rounds=(--rounds 3)
for a in "$@"; do [[ $a == --rounds || $a == --rounds=* ]] && rounds=(); done
"$bin/bench/controlplane/controlplane" "${rounds[@]}" --kubeconfig "$kubeconfig" \
  --operator "$PWD/$bin/operator/coach-operator" --log-dir "$(dirname "$dir")" --only upstream \
  --upstream "$upstream/training-operator" --upstream-crds "$upstream/crds" \
  --coach-crds "$PWD/charts/coach/crds" --kubectl "$kubectl" \
  --upstream-webhook "$work/webhook.json" --upstream-webhook-port "$webhook_port" "$@"
