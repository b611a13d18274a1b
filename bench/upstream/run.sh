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
# Usage: bench/upstream/run.sh                       # 50 x 8, 3 rounds; memory at 0/2000/10000 pods
#        bench/upstream/run.sh --jobs 10 --replicas 4 --rounds 1 --unrelated-pods 0,200   # quick
#        every other flag goes to the harness: --upstream-raised-qps, --upstream-raised-burst,
#        --memory-jobs, --client-threads, --timeout, --settle, --skip-memory, --skip-speed
# Environment: COACH_BENCH_KEEP_TESTENV=1 leaves the control plane up (its folder is printed);
# COACH_BENCH_NO_BUILD=1 uses the binaries already in bazel-out/k8-opt (a busy Bazel server).
set -euo pipefail
cd "$(dirname "$0")/../.."
case "${1:-}" in -h|--help) sed -n 2,17p "$0"; exit 0 ;; esac

if [[ "${COACH_BENCH_NO_BUILD:-}" != 1 ]] && ! bazel build -c opt //bench/controlplane:controlplane \
    //operator:coach-operator >/tmp/coach-bench-upstream-build.log 2>&1; then
  cat /tmp/coach-bench-upstream-build.log
  exit 1
fi
bin="bazel-out/k8-opt/bin"
upstream=$(bench/upstream/upstream-operator bin)

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

# Upstream's namespace (its default, "kubeflow") and the Secret its cert-controller keeps the
# CA and serving certificate in. The rotator keeps a valid certificate it finds there (signed by
# the CA in the Secret, naming training-operator.kubeflow.svc, valid past its 90-day lookahead)
# and writes it to its cert dir; ours also names IP 127.0.0.1, the address the API server calls.
k create namespace kubeflow >/dev/null
(
  cd "$work"
  openssl genrsa -traditional -out ca.key 2048 2>/dev/null
  openssl req -x509 -new -key ca.key -days 3650 -subj "/O=training-operator/CN=training-operator-ca" \
    -addext "subjectAltName=DNS:training-operator-ca" -out ca.crt 2>/dev/null
  openssl genrsa -traditional -out tls.key 2048 2>/dev/null
  openssl req -new -key tls.key -subj "/CN=training-operator.kubeflow.svc" -out tls.csr 2>/dev/null
  printf '%s\n' "subjectAltName=DNS:training-operator.kubeflow.svc,IP:127.0.0.1" \
    "extendedKeyUsage=serverAuth" >tls.ext
  openssl x509 -req -in tls.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 \
    -extfile tls.ext -out tls.crt 2>/dev/null
)
k -n kubeflow create secret generic training-operator-webhook-cert --from-file=ca.crt="$work/ca.crt" \
  --from-file=ca.key="$work/ca.key" --from-file=tls.crt="$work/tls.crt" \
  --from-file=tls.key="$work/tls.key" >/dev/null
# Its Deployment mounts that Secret at this fixed path (pkg/cert's certDir; the rotator waits for
# tls.crt there and the webhook server serves it): put the same files there.
certdir=/tmp/k8s-webhook-server/serving-certs
mkdir -p "$certdir"
install -m 0600 "$work/tls.crt" "$work/tls.key" "$certdir/"

# The module's ValidatingWebhookConfiguration with its kustomize patch (the name), each webhook's
# service reference turned into https://127.0.0.1:<port><its path>, the CA as caBundle. The
# harness creates it before every upstream run and deletes it after (with failurePolicy Fail it
# would refuse coach's jobs while upstream is down).
webhook_port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
/usr/bin/python3 bench/upstream/webhook_config.py "$upstream/webhook.yaml" \
  "$upstream/webhook-patch.yaml" "$work/ca.crt" "$webhook_port" >"$work/webhook.json"

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
