#!/usr/bin/env bash
# Kueue: coach's jobs queued by real Kueue (v0.19.0, built from its Go module by
# tools/testenv/kueue, its webhooks on loopback) on a real control plane with kwok nodes. The
# operator runs with --backend=kube on loopback, as the e2e/kube tests start it. The jobs are
# written as a team writes them for Kueue: the label kueue.x-k8s.io/queue-name, nothing else.
#   - queues: ResourceFlavor default-flavor (nodeLabels type=kwok), ClusterQueue cluster-queue
#     with 2 CPUs (one job at a time: every job below asks for 2), LocalQueue user-queue;
#   - three TrainJobs on upstream's torch-distributed runtime (2 nodes x 1 CPU): the first gets
#     pods, with the nodeSelector and podset label Kueue patched in (runtimePatches); the others
#     stay suspended, and `coach get`, `coach describe`, `kubectl get` (PHASE) and an event say
#     they wait for quota in user-queue -> cluster-queue, in Kueue's words, while upstream's
#     status.conditions holds no condition of coach's; when the first finishes (its pods exit 0
#     through kwok's coach.test/exit-code) the second is admitted, then the third;
#   - the same for three PyTorchJobs (Master + Worker) and three TFJobs (2 Workers);
#   - eviction: a running PyTorchJob, then a TrainJob, whose Workload is deactivated is suspended
#     again, its pods deleted, nothing counted as a failure; reactivated, it runs again and
#     succeeds.
# Also the unit tests of tools/testenv/kueue.d/webhook_config.py. Prints the time from one job's end
# to the next job's pods Running.
# Outside CI a machine without Go skips; under CI=true a missing component fails.
set -uo pipefail
# shellcheck source=tools/suites/lib.sh
source "$(dirname "$(readlink -f "$0")")/lib.sh"
suite_init kueue

command -v go >/dev/null || skip "go is not installed"
command -v curl >/dev/null || skip "curl is not installed"
RUNTIME=${COACH_SHARED_DIR:-../shared}/reference/kubeflow-v2/runtimes/torch_distributed.yaml
[[ -f $RUNTIME ]] || skip "upstream's torch runtime is not at $RUNTIME (COACH_SHARED_DIR)"

suite_case "the webhook configurations' rendering"
out=$(/usr/bin/python3 tools/testenv/kueue.d/webhook_config_test.py 2>&1) ||
  { echo "$out"; fail "tools/testenv/kueue.d/webhook_config_test.py"; }

# coach's CRDs, Kueue and the queues (suite_kube_start calls it once the control plane is up).
# shellcheck disable=SC2317  # called by suite_kube_start
kueue_up() {
  # coach's CRDs first: Kueue waits for the kinds of the frameworks it integrates.
  K apply --server-side -f charts/coach/crds >/dev/null || fail "coach's CRDs"
  suite_crds_established K 60 --all || fail "CRDs established"
  tools/testenv/kueue up --dir "$DIR" || fail "kueue up"
  K apply -f "$RUNTIME" >/dev/null || fail "upstream's torch runtime"
  K apply -f - >/dev/null <<'YAML' || fail "the queues"
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default-flavor}
spec: {nodeLabels: {type: kwok}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cluster-queue}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default-flavor
      resources:
      - {name: cpu, nominalQuota: 2}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: user-queue, namespace: default}
spec: {clusterQueue: cluster-queue}
YAML
}
suite_kube_start kueue kueue_up ""
grep -q "watching Kueue's workloads and localqueues" "$WORK/operator.log" ||
  fail "the operator does not watch Kueue's Workloads and LocalQueues"

# Seconds (with a fraction) since the epoch.
now() { date +%s.%N; }
elapsed() { /usr/bin/python3 -c "print(f'{$2 - $1:.1f}')"; }

# Per kind: the resource kubectl names, the pods' job label, where suspend lives.
resource_of() { case $1 in trainjob) echo trainjobs.trainer.kubeflow.org ;; pytorchjob) echo pytorchjobs.kubeflow.org ;; tfjob) echo tfjobs.kubeflow.org ;; esac; }
pod_selector() { if [[ $1 == trainjob ]]; then echo "coach.dev/job-name=$2"; else echo "training.kubeflow.org/job-name=$2"; fi; }
suspended() {
  local path='{.spec.runPolicy.suspend}'
  [[ $1 == trainjob ]] && path='{.spec.suspend}'
  [[ $(K get "$(resource_of "$1")" "$2" -o jsonpath="$path") == true ]]
}
# shellcheck disable=SC2317  # called through admitted, which `eventually` runs
running_pods() {
  K get pods -l "$(pod_selector "$1" "$2")" \
    -o jsonpath='{range .items[?(@.status.phase=="Running")]}{.metadata.name}{"\n"}{end}' | grep -c .
}
all_pods() { K get pods -l "$(pod_selector "$1" "$2")" -o name | grep -c .; }

# A job of kind $1 named $2 in user-queue, whose pods run until the test ends them: 2 pods of 1
# CPU each.
manifest() {
  case $1 in
    trainjob) cat <<YAML ;;
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: $2
  namespace: default
  labels: {kueue.x-k8s.io/queue-name: user-queue}
spec:
  runtimeRef: {name: torch-distributed}
  trainer:
    numNodes: 2
    resourcesPerNode: {requests: {cpu: "1"}}
    command: [torchrun, train.py]
YAML
    pytorchjob) cat <<YAML ;;
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: $2
  namespace: default
  labels: {kueue.x-k8s.io/queue-name: user-queue}
spec:
  runPolicy: {cleanPodPolicy: None}
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec: {containers: [{name: pytorch, image: coach.local/none:latest, command: [train], resources: {requests: {cpu: "1"}}}]}
    Worker:
      replicas: 1
      template:
        spec: {containers: [{name: pytorch, image: coach.local/none:latest, command: [train], resources: {requests: {cpu: "1"}}}]}
YAML
    tfjob) cat <<YAML ;;
apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: $2
  namespace: default
  labels: {kueue.x-k8s.io/queue-name: user-queue}
spec:
  runPolicy: {cleanPodPolicy: None}
  tfReplicaSpecs:
    Worker:
      replicas: 2
      template:
        spec: {containers: [{name: tensorflow, image: coach.local/none:latest, command: [train], resources: {requests: {cpu: "1"}}}]}
YAML
  esac
}

# Waits up to $1 seconds for the command after it to succeed.
eventually() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@"; do
    ((SECONDS < deadline)) || return 1
    sleep 0.2
  done
}

# Each Workload's conditions, for a failure's report.
workloads_status() {
  K get workloads -o jsonpath='{range .items[*]}{.metadata.name}:{"\n"}{range .status.conditions[*]}{"  "}{.type}={.status} {.reason}: {.message}{"\n"}{end}{end}'
}

# shellcheck disable=SC2317  # run by `eventually`
admitted() { ! suspended "$1" "$2" && (($(running_pods "$1" "$2") == 2)); }
# Suspended, without pods, and shown as waiting for quota in user-queue -> cluster-queue.
WAIT_WORDS="Waiting for quota: LocalQueue user-queue -> ClusterQueue cluster-queue"
# Kueue's words, once it has tried the Workload (it tries the head of the queue; a Workload
# behind it may wait untried, without a QuotaReserved condition, and says only where it waits).
KUEUE_WORDS="insufficient unused quota for cpu in flavor default-flavor"
waits() {
  suspended "$1" "$2" && (($(all_pods "$1" "$2") == 0)) || return 1
  local row
  row=$(COACH get "$2" 2>&1) || return 1
  [[ $row == *" Queued "* && $row == *"$WAIT_WORDS"* ]] || return 1
  [[ -z ${3:-} || $row == *"$WAIT_WORDS: "*"$3"* ]]
}
# Ends job $2 of kind $1: its pods exit 0 (kwok's contract), the job succeeds.
finish() {
  local pod
  for pod in $(K get pods -l "$(pod_selector "$1" "$2")" -o name); do
    K annotate "$pod" coach.test/exit-code=0 >/dev/null || return 1
  done
  COACH wait "$2" --for Succeeded --timeout 2m >/dev/null
}

# Three jobs of kind $1 through the one-job ClusterQueue, in the order they were created.
queue_in_order() {
  local kind=$1 a=$2 b=$3 c=$4 res t_end out described pod
  res=$(resource_of "$kind")
  for name in "$a" "$b" "$c"; do
    manifest "$kind" "$name" | K apply -f - >/dev/null || fail "kubectl apply $kind $name"
    sleep 1.1  # creation timestamps one second apart: Kueue's FIFO order is theirs
  done
  eventually 60 admitted "$kind" "$a" || { K get "$res" -o wide >&2; fail "$a was not admitted (2 pods Running) within 60 s"; }
  eventually 30 waits "$kind" "$b" "$KUEUE_WORDS" ||
    { COACH get "$b" >&2; workloads_status >&2; fail "$b is not shown waiting for quota in user-queue, in Kueue's words, within 30 s"; }
  eventually 30 waits "$kind" "$c" ||
    { COACH get "$c" >&2; workloads_status >&2; fail "$c is not shown waiting for quota in user-queue within 30 s"; }
  # Kueue's admission reached the pods: the flavor's node label and the podset label.
  for pod in $(K get pods -l "$(pod_selector "$kind" "$a")" -o name); do
    [[ $(K get "$pod" -o jsonpath='{.spec.nodeSelector.type}') == kwok ]] ||
      { K get "$pod" -o yaml >&2; fail "$pod lacks the nodeSelector type=kwok of Kueue's flavor"; }
    [[ -n $(K get "$pod" -o jsonpath='{.metadata.labels.kueue\.x-k8s\.io/podset}') ]] ||
      fail "$pod lacks Kueue's kueue.x-k8s.io/podset label"
  done
  say "$kind: $a admitted (pods carry Kueue's nodeSelector and podset label); $b and $c wait:"
  # shellcheck disable=SC2001  # the indent of every line, which ${var//...} cannot anchor
  COACH list | sed 's/^/    /'
  described=$(COACH describe "$b") || fail "coach describe $b"
  grep -qE "^Queue: +$WAIT_WORDS: .*$KUEUE_WORDS" <<<"$described" ||
    { echo "$described" >&2; fail "coach describe $b has no Queue: line with Kueue's words"; }
  grep -qE "^ +Normal +WaitingForQuota +.*$WAIT_WORDS" <<<"$described" ||
    { echo "$described" >&2; fail "no WaitingForQuota event on $b"; }
  grep -E '^(Queue|State):' <<<"$described" | sed 's/^/    /'
  grep -E '^ +Normal +WaitingForQuota' <<<"$described" | sed 's/^ */    event: /'
  out=$(K get "$res" "$b")
  grep -qE "^$b +.*Queued" <<<"$out" || { echo "$out" >&2; fail "kubectl get $res $b does not show Queued"; }
  if [[ $kind == trainjob ]]; then
    # Upstream readers (the SDK, Kueue) see upstream's conditions only: Suspended here.
    [[ $(K get "$res" "$b" -o jsonpath='{.status.conditions[*].type}') == Suspended ]] ||
      fail "$b's status.conditions: '$(K get "$res" "$b" -o jsonpath='{.status.conditions[*].type}')', want Suspended only"
    [[ $(K get "$res" "$b" -o jsonpath='{.status.coach.conditions[-1:].type}') == Queued ]] ||
      fail "$b's status.coach.conditions does not end with Queued"
  fi
  say "kubectl get $res $b:"
  # shellcheck disable=SC2001  # as above
  sed 's/^/    /' <<<"$out"

  finish "$kind" "$a" || fail "$a did not succeed once its pods exited 0"
  t_end=$(now)
  eventually 60 admitted "$kind" "$b" || { workloads_status >&2; fail "$b was not admitted after $a finished"; }
  say "$kind: $a Succeeded -> $b's pods Running: $(elapsed "$t_end" "$(now)") s"
  waits "$kind" "$c" || fail "$c stopped waiting while $b runs"
  described=$(COACH describe "$b") || fail "coach describe $b"
  grep -qE "^ +Queued +False +[A-Za-z]+Admitted .*Admitted by ClusterQueue cluster-queue" <<<"$described" ||
    { echo "$described" >&2; fail "$b's Queued condition does not say it was admitted"; }

  finish "$kind" "$b" || fail "$b did not succeed"
  t_end=$(now)
  eventually 60 admitted "$kind" "$c" || fail "$c was not admitted after $b finished"
  say "$kind: $b Succeeded -> $c's pods Running: $(elapsed "$t_end" "$(now)") s"
  finish "$kind" "$c" || fail "$c did not succeed"
  for name in "$a" "$b" "$c"; do COACH delete "$name" >/dev/null || fail "coach delete $name"; done
}

suite_case "TrainJobs wait for quota and are admitted in order"
queue_in_order trainjob tj-1 tj-2 tj-3

suite_case "PyTorchJobs wait for quota and are admitted in order"
queue_in_order pytorchjob pt-1 pt-2 pt-3

suite_case "TFJobs wait for quota and are admitted in order"
queue_in_order tfjob tf-1 tf-2 tf-3

# A running job of kind $1 named $2 whose Workload is deactivated: suspended, its pods deleted,
# shown as deactivated, nothing counted as a failure; reactivated, it runs again and succeeds.
evict_and_readmit() {
  local kind=$1 name=$2 res workload failures
  res=$(resource_of "$kind")
  manifest "$kind" "$name" | K apply -f - >/dev/null || fail "kubectl apply $name"
  eventually 60 admitted "$kind" "$name" || fail "$name was not admitted"
  workload=$(K get workloads -o jsonpath="{range .items[?(@.metadata.ownerReferences[0].name==\"$name\")]}{.metadata.name}{end}")
  [[ -n $workload ]] || { K get workloads -o yaml >&2; fail "no Workload owned by $name"; }
  K patch workload "$workload" --type merge -p '{"spec":{"active":false}}' >/dev/null ||
    fail "deactivating $workload"
  eventually 60 evicted "$kind" "$name" ||
    { COACH describe "$name" >&2; workloads_status >&2; fail "$name was not suspended, its pods deleted and shown deactivated"; }
  say "$kind evicted: $(COACH get "$name" | tail -n 1)"
  # Failed, failed pods, counted restarts: none (zeros are no failures).
  failures=$(K get "$res" "$name" -o jsonpath='{.status.conditions[?(@.type=="Failed")].status}{.status.replicaStatuses.*.failed}{.status.jobsStatus[*].failed}{.status.coach.restarts}{.status.coach.conditions[?(@.type=="Failed")].status}' | tr -d '0 ')
  [[ -z $failures ]] || { K get "$res" "$name" -o yaml >&2; fail "the eviction of $name counted as a failure: '$failures'"; }
  K patch workload "$workload" --type merge -p '{"spec":{"active":true}}' >/dev/null ||
    fail "reactivating $workload"
  eventually 60 admitted "$kind" "$name" || { workloads_status >&2; fail "$name was not admitted again"; }
  finish "$kind" "$name" || fail "$name did not succeed after its eviction"
  say "$kind $name admitted again and Succeeded; no failure counted"
}
# shellcheck disable=SC2317  # run by `eventually`
evicted() {
  suspended "$1" "$2" && (($(all_pods "$1" "$2") == 0)) &&
    [[ $(COACH get "$2" 2>&1) == *" Queued "*"Deactivated: LocalQueue user-queue -> ClusterQueue cluster-queue"* ]]
}

suite_case "an evicted PyTorchJob is suspended, and runs again when admitted again"
evict_and_readmit pytorchjob pt-e

suite_case "an evicted TrainJob is suspended, and runs again when admitted again"
evict_and_readmit trainjob tj-e

suite_finish
