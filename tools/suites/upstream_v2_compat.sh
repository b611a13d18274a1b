#!/usr/bin/env bash
# coach side by side with upstream Kubeflow Trainer v2.3 + JobSet v0.12 on one control plane
# (tools/testenv): the same TrainJobs rendered by both, their objects compared field by field.
#
#  1. bench/upstream/upstream-trainer build (both managers from their Go modules at the pins,
#     cached), coach-operator from the suite's runfiles, tools/testenv/testenv build;
#  2. testenv up; upstream's CRDs (Trainer's and JobSet's) and both managers with their
#     webhooks (`upstream-trainer up`); upstream's shipped ClusterTrainingRuntimes
#     (shared/reference/kubeflow-v2/runtimes) applied;
#  3. upstream: bench/upstream/trainjob_cases.yaml applied into namespace compat; TrainJob ->
#     JobSet -> Jobs -> pods by kube-controller-manager's Job controller, run by kwok; once every
#     TrainJob has its pods, the namespace's pods, Services, ConfigMaps, Secrets and PVCs are
#     saved; the TrainJobs deleted (and everything they owned gone); both managers stopped and
#     their webhooks removed (`upstream-trainer down`);
#     (One operator at a time: both act on every TrainJob whose spec.managedBy is the default,
#     trainer.kubeflow.org/trainjob-controller, and leave the others alone.)
#  4. coach: coach's CRDs applied over upstream's (one field manager, so upstream-only fields
#     go), coach's admission webhooks registered as its chart does (called on loopback) and
#     coach-operator --backend=kube serving them, the same cases into the same namespace (through
#     coach's webhooks, as they went through upstream's), the same objects saved;
#  5. bench/upstream/trainjob_compare.py: pods paired by (TrainJob, replicated job, index), the
#     rest by name, compared after removing only the deliberate differences of
#     operator/trainer/README.md; any other difference fails naming object and field.
# Outside CI a machine without Go skips; under CI=true that fails. COACH_KEEP_WORK=1 keeps the
# work folder (both dumps, logs).
set -uo pipefail
# shellcheck source=tools/suites/lib.sh
source "$(dirname "$(readlink -f "$0")")/lib.sh"
suite_init upstream_v2_compat
TESTENV=tools/testenv/testenv
UPSTREAM=bench/upstream/upstream-trainer
REFERENCE=$COACH_SHARED_DIR/reference/kubeflow-v2
CASES=bench/upstream/trainjob_cases.yaml
NS=compat
PY=/usr/bin/python3

suite_case "what it needs"
command -v go >/dev/null || skip "go is not installed (upstream's managers and tools/testenv build with it)"
command -v curl >/dev/null || skip "curl is not installed"
[[ -d $REFERENCE/runtimes ]] || fail "upstream's runtimes not found in $REFERENCE (set COACH_SHARED_DIR)"

WORK=$(mktemp -d /tmp/coach-upstream-v2-compat.XXXXXX)
DIR=$WORK/kube
OP_PID=""
kubeconfig=""
cleanup() {
  if [[ -n $OP_PID ]] && kill -0 "$OP_PID" 2>/dev/null; then
    kill -TERM "$OP_PID" 2>/dev/null
    for _ in $(seq 1 100); do kill -0 "$OP_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$OP_PID" 2>/dev/null || true
    wait "$OP_PID" 2>/dev/null || true
  fi
  if [[ -n $kubeconfig ]]; then
    "$UPSTREAM" down --kubeconfig "$kubeconfig" --dir "$WORK/upstream" >/dev/null 2>&1 || true
  fi
  if ((SUITE_RC != 0)); then
    for f in "$WORK"/upstream/trainer.log "$WORK"/upstream/jobset.log "$WORK"/operator.log; do
      [[ -f $f ]] || continue
      echo "---- last lines of $f" >&2
      tail -n 20 "$f" >&2
    done
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
t0=$SECONDS
"$UPSTREAM" build >"$WORK/upstream-build.log" 2>&1 ||
  { tail -n 40 "$WORK/upstream-build.log" >&2; fail "bench/upstream/upstream-trainer build failed"; }
say "upstream Trainer and JobSet built or cached ($((SECONDS - t0)) s): $("$UPSTREAM" bin)"
suite_testenv_build
BIN=$TESTENV_BIN

suite_case "control plane"
kubeconfig=$("$TESTENV" up --dir "$DIR") || fail "testenv up failed"
k() { "$BIN/kubectl" --kubeconfig "$kubeconfig" "$@"; }
k create namespace "$NS" >/dev/null || fail "create namespace $NS"

# Waits until every TrainJob of the cases has as many pods as its coach.test/expect-pods says
# (and no more), up to 180 s. $1 names the operator in messages.
wait_for_pods() {
  local deadline=$((SECONDS + 180)) report
  while :; do
    report=$(k get trainjobs,pods -n "$NS" -o json | "$PY" -c '
import collections, json, sys
items = json.load(sys.stdin)["items"]
want = {i["metadata"]["name"]: int(i["metadata"]["annotations"]["coach.test/expect-pods"])
        for i in items if i["kind"] == "TrainJob"}
have = collections.Counter(i["metadata"].get("labels", {}).get("jobset.sigs.k8s.io/jobset-name")
                           for i in items if i["kind"] == "Pod")
short = ["%s %d/%d" % (n, have[n], w) for n, w in sorted(want.items()) if have[n] != w]
print("; ".join(short) if short else "ok %d" % sum(want.values()))')
    [[ $report == ok* ]] && { say "$1: every TrainJob has its pods (${report#ok } pods)"; return 0; }
    ((SECONDS < deadline)) || fail "$1: TrainJobs without their pods after 180 s: $report"
    sleep 0.5
  done
}

# The namespace's objects both operators may make, as one List.
save_objects() {
  k get pods,services,configmaps,secrets,persistentvolumeclaims -n "$NS" -o json >"$1" ||
    fail "saving the objects of $NS"
}

# With field validation Warn, as a client that asks for none (the Python SDK) gets it: torch-multi's
# patch holds fields upstream's CRD does not have, which upstream then prunes (kubectl's default,
# Strict, would refuse them there).
apply_cases() {
  k apply --validate=warn -n "$NS" -f "$CASES" >"$WORK/apply-$1.log" 2>&1 ||
    { cat "$WORK/apply-$1.log" >&2; fail "$1: applying $CASES"; }
}

suite_case "upstream renders the TrainJobs"
t0=$SECONDS
"$UPSTREAM" up --kubeconfig "$kubeconfig" --dir "$WORK/upstream" >"$WORK/upstream-up.log" 2>&1 ||
  { cat "$WORK/upstream-up.log" >&2; fail "upstream-trainer up"; }
for r in torch_distributed deepspeed_distributed jax_distributed xgboost_distributed; do
  k apply -f "$REFERENCE/runtimes/$r.yaml" >/dev/null || fail "applying upstream's runtime $r"
done
apply_cases upstream
wait_for_pods upstream
sleep 2 # anything upstream would still add (a second pass) is in the dump too
save_objects "$WORK/upstream.json"
say "upstream: rendered in $((SECONDS - t0)) s"
k delete trainjobs --all -n "$NS" --wait=true >/dev/null || fail "deleting upstream's TrainJobs"
deadline=$((SECONDS + 120))
until [[ -z $(k get pods,services,jobs.batch,jobsets.jobset.x-k8s.io -n "$NS" -o name) ]] &&
  [[ $(k get configmaps,secrets -n "$NS" -o name) == configmap/kube-root-ca.crt ]]; do
  ((SECONDS < deadline)) || fail "upstream's objects still there 120 s after the TrainJobs were deleted"
  sleep 0.5
done
"$UPSTREAM" down --kubeconfig "$kubeconfig" --dir "$WORK/upstream" || fail "upstream-trainer down"

suite_case "coach renders the TrainJobs"
t0=$SECONDS
k apply --server-side --field-manager=coach-bench --force-conflicts \
  -f charts/coach/crds/trainer.kubeflow.org_trainjobs.yaml \
  -f charts/coach/crds/trainer.kubeflow.org_trainingruntimes.yaml \
  -f charts/coach/crds/trainer.kubeflow.org_clustertrainingruntimes.yaml >"$WORK/crds.log" 2>&1 ||
  { cat "$WORK/crds.log" >&2; fail "applying coach's trainer.kubeflow.org CRDs"; }
suite_crds_established k 60 crd/trainjobs.trainer.kubeflow.org crd/trainingruntimes.trainer.kubeflow.org \
  crd/clustertrainingruntimes.trainer.kubeflow.org || fail "coach's CRDs not Established in 60 s"
free_port() {
  "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
STATE=$WORK/operator-state
mkdir -p "$STATE"
grpc=$(free_port)
http=$(free_port)
webhook=$(free_port)
# The cases go through coach's admission webhooks, as they went through upstream's.
suite_coach_webhooks k "$BIN/helm" "$webhook" "$WORK" || fail "registering coach's webhooks"
env -i PATH="$PATH" HOME="$STATE" "$WORK/coach-operator" --backend=kube --kubeconfig="$kubeconfig" \
  --listen="127.0.0.1:$grpc" --http-listen="127.0.0.1:$http" --state-dir="$STATE" \
  "${COACH_WEBHOOK_FLAGS[@]}" >"$WORK/operator.log" 2>&1 &
OP_PID=$!
deadline=$((SECONDS + 60))
until curl -fsS -o /dev/null --max-time 2 "http://127.0.0.1:$http/readyz" 2>/dev/null; do
  kill -0 "$OP_PID" 2>/dev/null || fail "coach-operator exited before it was ready"
  ((SECONDS < deadline)) || fail "coach-operator not ready in 60 s"
  sleep 0.1
done
apply_cases coach
# Admitted by coach's webhooks: the defaulter stamped every runtime patch.
unstamped=$(k get trainjobs -n "$NS" -o json | "$PY" -c '
import json, sys
jobs = json.load(sys.stdin)["items"]
patched = [j for j in jobs if j["spec"].get("runtimePatches")]
bad = [j["metadata"]["name"] for j in patched if not all(p.get("time") for p in j["spec"]["runtimePatches"])]
print(" ".join(bad) if bad else ("" if patched else "(no case has runtimePatches)"))') || fail "reading the TrainJobs"
[[ -z $unstamped ]] || fail "runtimePatches without a time (not through coach's defaulter): $unstamped"
wait_for_pods coach
sleep 2
save_objects "$WORK/coach.json"
say "coach: rendered in $((SECONDS - t0)) s"

suite_case "pods, Services, ConfigMaps and Secrets compared"
"$PY" bench/upstream/trainjob_compare.py "$WORK/upstream.json" "$WORK/coach.json" ||
  fail "coach renders the TrainJobs differently (above)"
