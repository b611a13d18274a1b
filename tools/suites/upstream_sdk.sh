#!/usr/bin/env bash
# The upstream Kubeflow Python SDKs, unchanged, against coach's Kubernetes backend: kubeflow-training
# 1.9.4 (v1 jobs, e2e/upstream_sdk) and kubeflow 0.5.0 (Trainer v2's TrainJobs, e2e/kubeflow_sdk). Their
# pytest tests drive a real control plane (tools/testenv) on which the real coach-operator --backend=kube
# reconciles the jobs. See e2e/upstream_sdk/README.md and e2e/kubeflow_sdk/README.md.
#
#  1. tools/upstream_sdk_env.sh install (the pinned venv), coach-operator from the suite's
#     runfiles, tools/testenv/testenv build (a no-op once the binaries are cached);
#  2. testenv up, coach's CRDs applied server-side and Established;
#  3. the chart's admission webhook configurations (helm template) registered at
#     https://localhost:PORT (tools/testenv/coach_webhooks.py), and coach-operator --backend=kube on
#     free loopback ports serving them with the certificate it makes in a Secret, ready when
#     /readyz answers 200;
#  4. pytest e2e/upstream_sdk, then pytest e2e/kubeflow_sdk (each SDK's venv), KUBECONFIG set;
#  5. the operator stopped: a TrainJob is refused (failurePolicy Fail); started again: admission
#     answers with the same certificate; bench/admission/webhook_latency.py prints its figures;
#  6. always: the operator stopped, the control plane down (trap).
# Outside CI a machine without Go (to build tools/testenv) skips; under CI=true every missing
# component fails. COACH_KEEP_WORK=1 keeps the work folder (logs, control plane down) on success too;
# COACH_UPSTREAM_SDK_CRDS=DIR applies other CRDs than charts/coach/crds (e.g. an older commit's, to see
# what the tests catch); extra arguments go to pytest (e.g. -k pytorch).
set -uo pipefail
# shellcheck source=tools/suites/lib.sh
source "$(dirname "$(readlink -f "$0")")/lib.sh"
suite_init upstream_sdk
TESTENV=tools/testenv/testenv

suite_case "what it needs"
command -v go >/dev/null || skip "go is not installed (needed to build tools/testenv)"
command -v curl >/dev/null || skip "curl is not installed"
tools/upstream_sdk_env.sh install || fail "tools/upstream_sdk_env.sh install failed"
PY=$(tools/upstream_sdk_env.sh python training) || fail "the kubeflow-training venv is not usable"
PY_V2=$(tools/upstream_sdk_env.sh python kubeflow) || fail "the kubeflow (Trainer v2 SDK) venv is not usable"

WORK=$(mktemp -d /tmp/coach-upstream-sdk.XXXXXX)
DIR=$WORK/kube
OP_PID=""
cleanup() {
  if [[ -n $OP_PID ]] && kill -0 "$OP_PID" 2>/dev/null; then
    kill -TERM "$OP_PID" 2>/dev/null
    for _ in $(seq 1 100); do kill -0 "$OP_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$OP_PID" 2>/dev/null || true
    wait "$OP_PID" 2>/dev/null || true
  fi
  if ((SUITE_RC != 0)); then
    for f in "$WORK"/operator-*.log; do
      [[ -f $f ]] || continue
      echo "---- last lines of $f" >&2
      tail -n 40 "$f" >&2
    done
    if [[ -d $DIR/logs ]]; then
      echo "---- last lines of $DIR/logs/kube-apiserver.log" >&2
      tail -n 15 "$DIR/logs/kube-apiserver.log" >&2
    fi
  fi
  "$TESTENV" down --dir "$DIR" >/dev/null 2>&1 || true
  if [[ -z ${COACH_KEEP_WORK:-} ]] && { ((SUITE_RC == 0)) || [[ ${CI:-} == true ]]; }; then
    rm -rf "$WORK"
  else
    say "work dir kept: $WORK" >&2
  fi
}
suite_on_exit cleanup
trap 'exit 130' INT TERM

OPERATOR=$(suite_bin operator/coach-operator) || exit 1
# A copy, so another engineer's rebuild of bazel-bin cannot swap the binary under the running suite.
cp "$OPERATOR" "$WORK/coach-operator" || fail "copy coach-operator"

suite_testenv_build
BIN=$TESTENV_BIN
for b in kubectl kube-apiserver etcd kwok helm; do
  [[ -x $BIN/$b ]] || fail "testenv binary $b missing in $BIN"
done

suite_case "control plane and CRDs"
t0=$SECONDS
kubeconfig=$("$TESTENV" up --dir "$DIR") || fail "testenv up failed"
k() { "$BIN/kubectl" --kubeconfig "$kubeconfig" "$@"; }
CRDS=${COACH_UPSTREAM_SDK_CRDS:-charts/coach/crds}
k apply --server-side -f "$CRDS" >"$WORK/crds.log" 2>&1 ||
  { cat "$WORK/crds.log" >&2; fail "kubectl apply --server-side -f $CRDS"; }
suite_crds_established k 60 --all || fail "coach's CRDs not Established in 60 s"
say "control plane up and CRDs ($CRDS) Established in $((SECONDS - t0)) s ($DIR)"

suite_case "the operator"
free_port() {
  "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
STATE=$WORK/operator-state
mkdir -p "$STATE"
# The admission webhooks as the chart registers them, called on loopback (docs/admission.md).
WEBHOOK_PORT=$(free_port)
suite_coach_webhooks k "$BIN/helm" "$WEBHOOK_PORT" "$WORK" || fail "registering coach's webhooks"
start_operator() { # attempt-number; 0 when /readyz answers, 1 otherwise (the process is gone then)
  local grpc http log=$WORK/operator-$1.log
  grpc=$(free_port)
  http=$(free_port)
  while [[ $http == "$grpc" || $http == "$WEBHOOK_PORT" ]]; do http=$(free_port); done
  while [[ $grpc == "$WEBHOOK_PORT" ]]; do grpc=$(free_port); done
  # Only what the operator needs from this environment: no COACH_* or KUBECONFIG of the caller.
  env -i PATH="$PATH" HOME="$STATE" "$WORK/coach-operator" --backend=kube --kubeconfig="$kubeconfig" \
    --listen="127.0.0.1:$grpc" --http-listen="127.0.0.1:$http" --state-dir="$STATE" \
    "${COACH_WEBHOOK_FLAGS[@]}" --log-level=debug >"$log" 2>&1 &
  OP_PID=$!
  local deadline=$((SECONDS + 60))
  while ((SECONDS < deadline)); do
    if curl -fsS -o /dev/null --max-time 2 "http://127.0.0.1:$http/readyz" 2>/dev/null; then
      say "coach-operator ready (pid $OP_PID, grpc 127.0.0.1:$grpc, http 127.0.0.1:$http)"
      return 0
    fi
    kill -0 "$OP_PID" 2>/dev/null || { wait "$OP_PID"; say "coach-operator exited ($?) before it was ready"; OP_PID=""; return 1; }
    sleep 0.1
  done
  kill -KILL "$OP_PID" 2>/dev/null; wait "$OP_PID" 2>/dev/null; OP_PID=""
  say "coach-operator not ready in 60 s"
  return 1
}
ok=0
for attempt in 1 2 3; do  # a port taken between free_port and the bind: new ports
  if start_operator "$attempt"; then ok=1; break; fi
done
((ok)) || fail "coach-operator did not start (see its log below)"

suite_case "the tests"
t0=$SECONDS
collected=0
# A -k argument may select tests of one SDK only: "no tests collected" (5) is a failure only when
# neither SDK's pytest ran any.
for sdk in upstream_sdk kubeflow_sdk; do
  py=$PY
  [[ $sdk == kubeflow_sdk ]] && py=$PY_V2
  status=0
  report=$(suite_report_file "$sdk-pytest.xml")
  suite_add_report "$report"
  env KUBECONFIG="$kubeconfig" COACH_UPSTREAM_SDK_OPERATOR_LOG="$WORK/operator-$attempt.log" \
    COACH_UPSTREAM_SDK_KUBECTL="$BIN/kubectl" COACH_UPSTREAM_SDK_WEBHOOK="https://localhost:$WEBHOOK_PORT" \
    "$py" -m pytest -p no:cacheprovider -v -rfEs --junitxml="$report" "e2e/$sdk" "$@" || status=$?
  kill -0 "$OP_PID" 2>/dev/null || fail "coach-operator died during the $sdk tests"
  case $status in
    0) collected=1; say "$sdk tests: $((SECONDS - t0)) s" ;;
    5) ;;
    *) fail "$sdk: pytest exited $status (tests $((SECONDS - t0)) s)" ;;
  esac
done
((collected)) || fail "pytest collected no tests"

suite_case "admission across an operator restart"
# A TrainJob admission refuses (its runtime does not exist), as kubectl sends it.
bad_trainjob() {
  k create -f - 2>&1 <<'YAML'
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: no-runtime, namespace: default}
spec:
  runtimeRef: {name: no-such-runtime}
YAML
}
refusal='admission webhook "validator.trainjob.trainer.kubeflow.org" denied the request: spec.RuntimeRef'
out=$(bad_trainjob) && fail "a TrainJob on a missing runtime was stored: $out"
[[ $out == *"$refusal"* ]] || fail "not upstream's refusal: $out"
secret_version=$(k -n coach-system get secret coach-webhook-cert -o 'jsonpath={.metadata.resourceVersion}')
kill -TERM "$OP_PID"; wait "$OP_PID" 2>/dev/null; OP_PID=""
out=$(bad_trainjob) && fail "a TrainJob was stored while no operator answered admission: $out"
[[ $out == *"failed calling webhook"* ]] || fail "while the operator is down, not a webhook failure: $out"
say "operator down: refused ($(grep -o 'failed calling webhook[^:]*' <<<"$out" | head -1))"
restarted=0
for attempt in 4 5 6; do
  if start_operator "$attempt"; then restarted=1; break; fi
done
((restarted)) || fail "coach-operator did not start again"
out=$(bad_trainjob) && fail "a TrainJob on a missing runtime was stored after the restart: $out"
[[ $out == *"$refusal"* ]] || fail "after the restart, not upstream's refusal: $out"
[[ $(k -n coach-system get secret coach-webhook-cert -o 'jsonpath={.metadata.resourceVersion}') == "$secret_version" ]] ||
  fail "the restarted operator rewrote its certificate's Secret"
say "operator restarted: admission refuses as before, with the same certificate"

suite_case "admission latency"
k -n coach-system get secret coach-webhook-cert -o 'jsonpath={.data.ca\.crt}' | base64 -d >"$WORK/webhook-ca.crt" ||
  fail "read the webhook CA"
/usr/bin/python3 bench/admission/webhook_latency.py --kubeconfig "$kubeconfig" --kubectl "$BIN/kubectl" \
  --webhook "https://localhost:$WEBHOOK_PORT" --ca "$WORK/webhook-ca.crt" \
  --runtimes "$COACH_SHARED_DIR/reference/kubeflow-v2/runtimes" || fail "bench/admission/webhook_latency.py"
