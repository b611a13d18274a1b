#!/usr/bin/env bash
# Karpenter: coach's placement against real Karpenter (its kwok provider, tools/testenv/karpenter)
# on a control plane that starts with zero nodes. The operator runs with --backend=kube
# --karpenter on loopback, as the e2e/kube tests start it.
#   - the seed's GPU PyTorchJob (Master + 2 Workers, 1 GPU each), submitted with `coach submit`:
#     NodeClaims in the gpu-workloads NodePool only, every replica scheduled on a Karpenter node
#     of that pool whose allocatable has its GPU, do-not-disrupt and the pool's toleration on
#     every pod, the job Succeeded, then the nodes back to zero;
#   - a CPU-only job: NodeClaims in training-workloads only, never a GPU node;
#   - a mixed job (CPU-only Master, GPU Workers) splits between the pools; a replica whose user
#     placed it (nodeSelector and toleration of their own) keeps that placement;
#   - do-not-disrupt: a protected replica's underused node is not consolidated (DisruptionBlocked
#     names the pod) where a control opting out with "false" is;
#   - Pending explained: a replica asking for 16 GPUs (more than any instance type) makes
#     `coach describe`, `coach get` and a Warning Unschedulable event name Karpenter's reason
#     (the time is printed); the seed's events say which NodeClaim was launching;
#     coach_replica_schedule_seconds{nodepool="gpu-workloads"} counts the seed's replicas;
#   - the chart's optional NodePools and EC2NodeClass pass the API server's validation against
#     Karpenter's CRDs (server-side dry run);
#   - a spot interruption: a job on spot capacity (coach.dev/on-demand-after: 1) has its NodeClaim
#     deleted; Karpenter evicts its pod, coach restarts it uncounted, and the next attempt's pod
#     lands on an on-demand NodeClaim (an OnDemandCapacity event says why).
# Prints the figures: submit -> all replicas scheduled and Running, the same pods created directly
# (coach render --karpenter, kubectl apply) -> scheduled, and job Succeeded -> no node left
# (consolidateAfter 5s, tools/testenv/karpenter.d/nodepools.yaml).
# Outside CI a machine without Go skips; under CI=true a missing component fails.
set -uo pipefail
# shellcheck source=tools/suites/lib.sh
source "$(dirname "$(readlink -f "$0")")/lib.sh"
suite_init karpenter
KARPENTER=tools/testenv/karpenter

command -v go >/dev/null || skip "go is not installed"
command -v curl >/dev/null || skip "curl is not installed"

# Karpenter and coach's CRDs (suite_kube_start calls it once the control plane is up).
karpenter_up() {
  "$KARPENTER" up --dir "$DIR" || fail "karpenter up"
  K apply --server-side -f charts/coach/crds >/dev/null || fail "coach's CRDs"
  suite_crds_established K 60 --all || fail "CRDs established"
}
# No kwok node of the testenv's own: every node is Karpenter's.
suite_kube_start karpenter karpenter_up 0 --karpenter

suite_case "the chart's NodePools and EC2NodeClass pass Karpenter's CRDs"
# ---- the chart's optional NodePools and EC2NodeClass against Karpenter's CRDs (server-side
# dry run: the CRDs' schemas and CEL rules), in three shapes; named apart from the kwok
# NodePools of the same default names, which a dry run would otherwise patch.
K apply --server-side -f "$("$KARPENTER" bin)/crds-aws" >/dev/null || fail "the EC2NodeClass CRD"
suite_crds_established K 300 crd/ec2nodeclasses.karpenter.k8s.aws ||
  fail "the EC2NodeClass CRD is not established"
chart_set=(--set karpenter.gpuNodePool=chart-gpu --set karpenter.cpuNodePool=chart-cpu
  --set karpenter.nodePools.create=true --set karpenter.ec2NodeClass.create=true
  --set karpenter.ec2NodeClass.role=KarpenterNodeRole-coach
  --set 'karpenter.ec2NodeClass.subnetSelectorTerms[0].tags.karpenter\.sh/discovery=coach'
  --set 'karpenter.ec2NodeClass.securityGroupSelectorTerms[0].tags.karpenter\.sh/discovery=coach')
for extra in "" "--set karpenter.gpuTaint=nvidia.com/gpu:NoSchedule --set karpenter.cpuNodePool=" \
  "--set karpenter.nodePools.gpu.consolidationPolicy=WhenEmptyOrUnderutilized --set karpenter.nodePools.gpu.terminationGracePeriod=2h --set karpenter.nodePools.gpu.weight=50"; do
  # shellcheck disable=SC2086  # the extra --set flags, split into words on purpose
  "$BIN/helm" template coach charts/coach "${chart_set[@]}" $extra -s templates/karpenter-nodepools.yaml \
    >"$WORK/pools.yaml" 2>"$WORK/helm.err" || { cat "$WORK/helm.err"; fail "helm template ($extra)"; }
  out=$(K apply --dry-run=server -f "$WORK/pools.yaml" 2>&1) ||
    { echo "$out"; cat "$WORK/pools.yaml"; fail "the chart's NodePools/EC2NodeClass are refused ($extra)"; }
  n=$(grep -c '^kind: ' "$WORK/pools.yaml")
  say "chart NodePools + EC2NodeClass accepted by the API server ($n objects${extra:+; $extra})"
done

nodes() { K get nodes -o name | wc -l; }
(($(nodes) == 0)) || fail "the cluster starts with $(nodes) nodes, want 0"

# A job whose replicas run `seconds` on kwok (the testenv's pod stages read the annotations).
job() { # name master-gpus worker-gpus workers seconds
  local res_m="" res_w=""
  (($2 > 0)) && res_m="resources: {limits: {nvidia.com/gpu: $2}}, "
  # shellcheck disable=SC2034  # used in the Worker heredoc nested in the one below
  (($3 > 0)) && res_w="resources: {limits: {nvidia.com/gpu: $3}}, "
  cat <<YAML
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: $1, namespace: default}
spec:
  runPolicy: {cleanPodPolicy: None}
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        metadata: {annotations: {coach.test/run-seconds: "$5", coach.test/exit-code: "0"}}
        spec: {containers: [{name: pytorch, image: coach.local/none:latest, ${res_m}command: [train]}]}
$( (($4 > 0)) && cat <<W
    Worker:
      replicas: $4
      template:
        metadata: {annotations: {coach.test/run-seconds: "$5", coach.test/exit-code: "0"}}
        spec: {containers: [{name: pytorch, image: coach.local/none:latest, ${res_w}command: [train]}]}
W
)
YAML
}

# Seconds (with a fraction) since the epoch.
now() { date +%s.%N; }
elapsed() { /usr/bin/python3 -c "print(f'{$2 - $1:.1f}')"; }

# Waits until every pod of job $1 is bound to a node; $2: how many pods.
wait_scheduled() {
  local i bound
  for ((i = 0; i < 600; i++)); do
    bound=$(K get pods -l "training.kubeflow.org/job-name=$1" \
      -o jsonpath='{range .items[?(@.spec.nodeName)]}{.metadata.name}{"\n"}{end}' | grep -c .)
    ((bound == $2)) && return 0
    sleep 0.2
  done
  K get pods -l "training.kubeflow.org/job-name=$1" -o wide >&2
  K get nodeclaims >&2
  return 1
}

suite_case "a bad coach.dev/ annotation is refused at admission"
# ---- a bad coach.dev/ annotation is refused at admission, naming it.
job bad 0 0 0 1 | sed 's/^metadata: {name: bad, namespace: default}$/metadata: {name: bad, namespace: default, annotations: {coach.dev\/capacity-type: spto}}/' >"$WORK/bad.yaml"
grep -q 'coach.dev/capacity-type' "$WORK/bad.yaml" || fail "the bad job's manifest lacks its annotation"
if out=$(COACH submit -f "$WORK/bad.yaml" 2>&1); then fail "a job with coach.dev/capacity-type: spto was accepted"; fi
grep -qF 'metadata.annotations[coach.dev/capacity-type]' <<<"$out" || fail "the refusal does not name the annotation: $out"
say "refused at admission: $(tail -n 1 <<<"$out")"

suite_case "Pending explained"
# ---- Pending explained: a replica asking for more GPUs than any instance type has (16; the
# largest in karpenter.d/instance-types.json has 8). `coach describe` (the Created condition
# and the replica's row), `coach get` (MESSAGE) and the job's events name Karpenter's reason.
job huge 16 0 0 600 >"$WORK/huge.yaml"
t_submit=$(now)
COACH submit -f "$WORK/huge.yaml" >/dev/null || fail "coach submit huge"
want_reason='Karpenter: no instance type has enough resources'
for ((i = 0; i < 300; i++)); do
  described=$(COACH describe huge 2>&1)
  [[ $(grep -cF "$want_reason" <<<"$described") -ge 3 ]] && break  # condition, replica, event
  sleep 0.1
done
t_explained=$(now)
[[ $(grep -cF "$want_reason" <<<"$described") -ge 3 ]] ||
  { echo "$described" >&2; fail "coach describe huge does not name Karpenter's reason within 30 s"; }
grep -E '^ +Warning +Unschedulable ' <<<"$described" | grep -qF "$want_reason" ||
  { echo "$described" >&2; fail "no Warning Unschedulable event names Karpenter's reason"; }
grep -qF '"nvidia.com/gpu":"16"' <<<"$described" ||
  { echo "$described" >&2; fail "the reason does not say what did not fit"; }
listed=$(COACH get huge 2>&1)
grep -qF "$want_reason" <<<"$listed" || { echo "$listed" >&2; fail "coach get huge has no MESSAGE"; }
say "unsatisfiable (16 GPUs): submit -> coach describe names Karpenter's reason in $(elapsed "$t_submit" "$t_explained") s; coach get and describe:"
# shellcheck disable=SC2001  # a prefix on every line, which ${var//...} cannot anchor
sed 's/^/    /' <<<"$listed"
# shellcheck disable=SC2001  # as above
sed 's/^/    /' <<<"$described"
COACH delete huge >/dev/null || fail "coach delete huge"

suite_case "the seed's GPU job"
# ---- the seed's GPU job
job seed 1 1 2 15 >"$WORK/seed.yaml"
t_submit=$(now)
COACH submit -f "$WORK/seed.yaml" >/dev/null || fail "coach submit seed"
wait_scheduled seed 3 || fail "the seed's replicas were not all scheduled within 120 s"
t_scheduled=$(now)
for ((i = 0; i < 300; i++)); do
  running=$(K get pods -l training.kubeflow.org/job-name=seed \
    -o jsonpath='{range .items[?(@.status.phase=="Running")]}{.metadata.name}{"\n"}{end}' | grep -c .)
  ((running == 3)) && break
  sleep 0.2
done
((running == 3)) || fail "the seed's replicas were not all Running 60 s after being scheduled"
t_running=$(now)
say "seed (Master + 2 Workers, 1 GPU each) from zero nodes: submit -> all 3 replicas scheduled $(elapsed "$t_submit" "$t_scheduled") s, -> all Running $(elapsed "$t_submit" "$t_running") s"

pools=$(K get nodeclaims -o jsonpath='{range .items[*]}{.metadata.labels.karpenter\.sh/nodepool}{"\n"}{end}' | sort | uniq -c)
# shellcheck disable=SC2086,SC2116  # unquoted on purpose: uniq -c's lines on one line, blanks squeezed
say "NodeClaims per NodePool: $(echo $pools)"
grep -q gpu-workloads <<<"$pools" || fail "no NodeClaim in gpu-workloads: $pools"
! grep -q training-workloads <<<"$pools" || fail "a GPU-only job made a NodeClaim in training-workloads: $pools"
for pod in seed-master-0 seed-worker-0 seed-worker-1; do
  node=$(K get pod "$pod" -o jsonpath='{.spec.nodeName}')
  pool=$(K get node "$node" -o jsonpath='{.metadata.labels.karpenter\.sh/nodepool}')
  gpus=$(K get node "$node" -o jsonpath='{.status.allocatable.nvidia\.com/gpu}')
  itype=$(K get node "$node" -o jsonpath='{.metadata.labels.node\.kubernetes\.io/instance-type}')
  [[ $pool == gpu-workloads ]] || fail "$pod is on $node of pool '$pool'"
  ((${gpus:-0} >= 1)) || fail "$pod's node $node has allocatable nvidia.com/gpu '$gpus'"
  [[ $(K get pod "$pod" -o jsonpath='{.metadata.annotations.karpenter\.sh/do-not-disrupt}') == true ]] ||
    fail "$pod has no karpenter.sh/do-not-disrupt: true"
  K get pod "$pod" -o jsonpath='{.spec.tolerations[*].key}' | grep -qw nvidia.com/gpu ||
    fail "$pod does not tolerate nvidia.com/gpu"
  say "  $pod on $node ($itype, pool $pool, allocatable nvidia.com/gpu $gpus)"
done

# While they waited, the job said so: one event per new explanation (the NodeClaim's progress).
waited=$(COACH describe seed | grep -E '^ +Normal +WaitingForCapacity ')
grep -qE 'NodeClaim gpu-workloads-[a-z0-9]+ .*\(NodePool gpu-workloads\)' <<<"$waited" ||
  { COACH describe seed >&2; fail "no WaitingForCapacity event names the seed's NodeClaim"; }
say "seed's WaitingForCapacity events ($(grep -c . <<<"$waited")):"
# shellcheck disable=SC2001  # the indent of every line, which ${var//...} cannot anchor
sed 's/^ */    /' <<<"$waited"
# coach_replica_schedule_seconds{nodepool}: the 3 GPU replicas, from zero nodes.
metrics=$(curl -fsS "http://127.0.0.1:$http_port/metrics") || fail "GET /metrics"
count=$(sed -nE 's/^coach_replica_schedule_seconds_count\{nodepool="gpu-workloads"\} ([0-9]+)$/\1/p' <<<"$metrics")
sum=$(sed -nE 's/^coach_replica_schedule_seconds_sum\{nodepool="gpu-workloads"\} ([0-9.e+-]+)$/\1/p' <<<"$metrics")
((${count:-0} >= 3)) ||
  { grep coach_replica_schedule <<<"$metrics" >&2; fail "coach_replica_schedule_seconds{nodepool=\"gpu-workloads\"} count '${count}', want >= 3"; }
say "coach_replica_schedule_seconds{nodepool=\"gpu-workloads\"}: count $count, sum $sum s (mean $(/usr/bin/python3 -c "print(f'{$sum / $count:.1f}')") s)"

COACH wait seed --for Succeeded --timeout 3m >/dev/null || fail "seed did not succeed"
t_done=$(now)
for ((i = 0; i < 900; i++)); do
  (($(nodes) == 0)) && break
  sleep 0.2
done
t_zero=$(now)
(($(nodes) == 0)) || { K get nodes >&2; fail "nodes left 180 s after the seed Succeeded"; }
say "seed Succeeded; -> zero nodes: $(elapsed "$t_done" "$t_zero") s (consolidateAfter 5s)"

suite_case "the same pods created directly"
# ---- the same 3 pods created directly (what `coach render --karpenter` shows, renamed, without
# the owner), from zero nodes again: what coach adds to provisioning time.
sed 's/name: seed, namespace/name: direct, namespace/' "$WORK/seed.yaml" >"$WORK/direct.yaml"
"$WORK/coach" render --karpenter -f "$WORK/direct.yaml" -o json | /usr/bin/python3 -c '
import json, sys
pods = [o for o in json.load(sys.stdin)["items"] if o["kind"] == "Pod"]
for p in pods: p["metadata"].pop("ownerReferences", None)
print(json.dumps({"apiVersion": "v1", "kind": "List", "items": pods}))' >"$WORK/direct-pods.json" ||
  fail "coach render --karpenter"
t_submit=$(now)
K apply -f "$WORK/direct-pods.json" >/dev/null || fail "creating the pods directly"
wait_scheduled direct 3 || fail "the directly created pods were not all scheduled"
say "the same 3 pods created directly from zero nodes: -> all scheduled $(elapsed "$t_submit" "$(now)") s"
K delete -f "$WORK/direct-pods.json" --wait=false >/dev/null

suite_case "a CPU-only job"
# ---- a CPU-only job: training-workloads only. From zero NodeClaims again (deleting them is
# quicker than waiting for consolidation).
K delete nodeclaims --all >/dev/null 2>&1
for ((i = 0; i < 600; i++)); do
  [[ -z $(K get nodeclaims -o name) ]] && break
  sleep 0.2
done
[[ -z $(K get nodeclaims -o name) ]] || fail "NodeClaims left: $(K get nodeclaims -o name)"
job cpu 0 0 1 5 >"$WORK/cpu.yaml"
t_submit=$(now)
COACH submit -f "$WORK/cpu.yaml" >/dev/null || fail "coach submit cpu"
wait_scheduled cpu 2 || fail "the CPU job's replicas were not all scheduled within 120 s"
say "CPU-only job (Master + 1 Worker): submit -> scheduled: $(elapsed "$t_submit" "$(now)") s"
pools=$(K get nodeclaims -o jsonpath='{range .items[*]}{.metadata.labels.karpenter\.sh/nodepool}{"\n"}{end}' | sort | uniq -c)
# shellcheck disable=SC2086,SC2116  # unquoted on purpose: uniq -c's lines on one line, blanks squeezed
say "NodeClaims per NodePool: $(echo $pools)"
grep -q training-workloads <<<"$pools" || fail "no NodeClaim in training-workloads: $pools"
! grep -q gpu-workloads <<<"$pools" || fail "a CPU-only job made a NodeClaim in gpu-workloads: $pools"
for pod in cpu-master-0 cpu-worker-0; do
  node=$(K get pod "$pod" -o jsonpath='{.spec.nodeName}')
  gpus=$(K get node "$node" -o jsonpath='{.status.allocatable.nvidia\.com/gpu}')
  [[ -z $gpus || $gpus == 0 ]] || fail "CPU-only $pod landed on $node with $gpus GPUs"
done
COACH wait cpu --for Succeeded --timeout 3m >/dev/null || fail "cpu did not succeed"

suite_case "a mixed job splits; a job's own placement wins"
# ---- a mixed job (CPU-only Master, GPU Workers) splits; a job's own placement wins: a CPU-only
# replica its user put on the GPU pool (nodeSelector + toleration) stays there, as written.
job mixed 0 1 2 5 >"$WORK/mixed.yaml"
cat >"$WORK/own.yaml" <<'YAML'
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: own, namespace: default}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        metadata: {annotations: {coach.test/run-seconds: "5", coach.test/exit-code: "0"}}
        spec:
          nodeSelector: {karpenter.sh/nodepool: gpu-workloads}
          tolerations: [{key: nvidia.com/gpu, operator: Equal, value: "true", effect: NoSchedule}]
          containers: [{name: pytorch, image: coach.local/none:latest, command: [train]}]
YAML
COACH submit -f "$WORK/mixed.yaml" >/dev/null || fail "coach submit mixed"
COACH submit -f "$WORK/own.yaml" >/dev/null || fail "coach submit own"
wait_scheduled mixed 3 || fail "the mixed job's replicas were not all scheduled"
wait_scheduled own 1 || fail "the own-placement job's replica was not scheduled"
pool_of() { K get node "$(K get pod "$1" -o jsonpath='{.spec.nodeName}')" -o jsonpath='{.metadata.labels.karpenter\.sh/nodepool}'; }
[[ $(pool_of mixed-master-0) == training-workloads ]] || fail "mixed's CPU-only Master is on pool '$(pool_of mixed-master-0)'"
for pod in mixed-worker-0 mixed-worker-1; do
  [[ $(pool_of $pod) == gpu-workloads ]] || fail "mixed's GPU $pod is on pool '$(pool_of $pod)'"
done
say "mixed job: CPU-only Master on training-workloads, 2 GPU Workers on gpu-workloads"
[[ $(pool_of own-master-0) == gpu-workloads ]] || fail "own-master-0 is on pool '$(pool_of own-master-0)'"
[[ $(K get pod own-master-0 -o jsonpath='{.spec.tolerations[?(@.key=="nvidia.com/gpu")].operator}') == Equal ]] ||
  fail "own-master-0's own toleration was changed: $(K get pod own-master-0 -o jsonpath='{.spec.tolerations}')"
say "own placement kept: a CPU-only replica its user put on gpu-workloads runs there, its toleration as written"
COACH wait mixed --for Succeeded --timeout 3m >/dev/null || fail "mixed did not succeed"
COACH wait own --for Succeeded --timeout 3m >/dev/null || fail "own did not succeed"

suite_case "do-not-disrupt"
# ---- do-not-disrupt: two underused nodes, one replica each, either of which could move to the
# other node. The protected replica's (coach's default) is kept and Karpenter says why (a
# DisruptionBlocked event naming the pod); the control's, which opts out with
# karpenter.sh/do-not-disrupt: "false" in its template, is consolidated onto the first.
cpujob() { # name cpu seconds [do-not-disrupt value]
  cat <<YAML
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: $1, namespace: default}
spec:
  runPolicy: {cleanPodPolicy: None}
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        metadata:
          annotations:
            coach.test/run-seconds: "$3"
            coach.test/exit-code: "0"
${4:+            karpenter.sh/do-not-disrupt: \"$4\"}
        spec: {containers: [{name: pytorch, image: coach.local/none:latest, command: [train], resources: {requests: {cpu: "$2"}}}]}
YAML
}
node_of() { K get pod "$1" -o jsonpath='{.spec.nodeName}'; }
cpujob protected 1500m 600 >"$WORK/protected.yaml"
cpujob filler 2400m 10 >"$WORK/filler.yaml"
cpujob control 1500m 600 false >"$WORK/control.yaml"
COACH submit -f "$WORK/protected.yaml" >/dev/null || fail "coach submit protected"
wait_scheduled protected 1 || fail "protected was not scheduled"
# The filler takes the rest of the protected replica's node, so that the control gets its own.
COACH submit -f "$WORK/filler.yaml" >/dev/null || fail "coach submit filler"
wait_scheduled filler 1 || fail "filler was not scheduled"
COACH submit -f "$WORK/control.yaml" >/dev/null || fail "coach submit control"
wait_scheduled control 1 || fail "control was not scheduled"
n_protected=$(node_of protected-master-0)
n_control=$(node_of control-master-0)
[[ $n_protected != "$n_control" ]] || fail "protected and control share $n_protected"
say "protected replica on $n_protected, filler on $(node_of filler-master-0), control on $n_control"
COACH wait filler --for Succeeded --timeout 3m >/dev/null || fail "filler did not succeed"
t0=$(now)
for ((i = 0; i < 900; i++)); do
  K get node "$n_control" >/dev/null 2>&1 || break
  sleep 0.2
done
K get node "$n_control" >/dev/null 2>&1 && fail "the control's node $n_control was not consolidated within 180 s"
say "control (do-not-disrupt \"false\"): node $n_control consolidated $(elapsed "$t0" "$(now)") s after the filler finished"
for ((i = 0; i < 900; i++)); do
  blocked=$(K get events -A --field-selector reason=DisruptionBlocked \
    -o jsonpath='{range .items[*]}{.involvedObject.kind}/{.involvedObject.name}: {.message}{"\n"}{end}' |
    grep -F 'protected-master-0' | head -1)
  [[ -n $blocked ]] && break
  sleep 0.2
done
[[ -n $blocked ]] || { K get events -A | tail -20 >&2; fail "no DisruptionBlocked event names protected-master-0"; }
say "protected: $blocked ($(elapsed "$t0" "$(now)") s after the filler finished)"
K get node "$n_protected" >/dev/null 2>&1 || fail "the protected replica's node $n_protected was removed"
[[ $(node_of protected-master-0) == "$n_protected" ]] || fail "protected-master-0 was moved"
COACH delete protected >/dev/null || fail "coach delete protected"
COACH delete control >/dev/null || fail "coach delete control"


suite_case "a spot interruption: the NodeClaim deleted, the job on on-demand capacity next"
# ---- a spot interruption as Karpenter carries it out: the job asks for spot capacity and to
# leave it after one interruption (coach.dev/on-demand-after: 1); its NodeClaim is deleted (what
# Karpenter does on a spot interruption notice): Karpenter taints the node karpenter.sh/disrupted
# and evicts the pod (its template opts out of do-not-disrupt, as a kwok pod cannot checkpoint),
# coach restarts the job without spending its budget (max-restarts 0), and the next attempt's
# pod asks for on-demand capacity: Karpenter launches an on-demand NodeClaim for it.
cat >"$WORK/spot.yaml" <<'YAML'
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: spot
  namespace: default
  annotations:
    coach.dev/restart-scope: Job
    coach.dev/max-restarts: "0"
    coach.dev/capacity-type: spot
    coach.dev/on-demand-after: "1"
spec:
  runPolicy: {cleanPodPolicy: None}
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        metadata:
          annotations: {coach.test/run-seconds: "600", coach.test/exit-code: "0", karpenter.sh/do-not-disrupt: "false"}
        spec: {containers: [{name: pytorch, image: coach.local/none:latest, command: [train]}]}
YAML
capacity_of() { K get node "$1" -o jsonpath='{.metadata.labels.karpenter\.sh/capacity-type}'; }
COACH submit -f "$WORK/spot.yaml" >/dev/null || fail "coach submit spot"
wait_scheduled spot 1 || fail "spot-master-0 was not scheduled"
n_spot=$(node_of spot-master-0)
[[ $(capacity_of "$n_spot") == spot ]] || fail "spot-master-0 is on $n_spot, capacity type '$(capacity_of "$n_spot")'"
claim=$(K get nodeclaims -o jsonpath="{range .items[?(@.status.nodeName==\"$n_spot\")]}{.metadata.name}{end}")
[[ -n $claim ]] || fail "no NodeClaim for node $n_spot"
t0=$(now)
K delete nodeclaim "$claim" --wait=false >/dev/null || fail "kubectl delete nodeclaim $claim"
for ((i = 0; i < 600; i++)); do
  [[ $(K get pytorchjob spot -o jsonpath='{.status.coach.attempt}') == 1 ]] && break
  sleep 0.2
done
t_restarted=$(now)
[[ $(K get pytorchjob spot -o jsonpath='{.status.coach.attempt}') == 1 ]] ||
  { COACH describe spot >&2; fail "spot did not restart within 120 s of its NodeClaim's deletion"; }
[[ $(K get pytorchjob spot -o jsonpath='{.status.coach.disruptions}') == 1 ]] ||
  fail "the restart was not a disruption: $(K get pytorchjob spot -o jsonpath='{.status.coach}')"
ended=$(K get pytorchjob spot -o jsonpath='{.status.coach.attempts[0].reason}')
for ((i = 0; i < 600; i++)); do
  n_next=$(node_of spot-master-0 2>/dev/null)
  [[ -n $n_next && $n_next != "$n_spot" ]] && break
  sleep 0.2
done
[[ -n $n_next && $n_next != "$n_spot" ]] || fail "spot-master-0 was not scheduled again within 120 s"
t_placed=$(now)
[[ $(capacity_of "$n_next") == on-demand ]] ||
  fail "attempt 1 is on $n_next, capacity type '$(capacity_of "$n_next")', not on-demand"
[[ $(K get pod spot-master-0 -o jsonpath='{.spec.nodeSelector.karpenter\.sh/capacity-type}') == on-demand ]] ||
  fail "attempt 1's pod does not ask for on-demand capacity"
described=$(COACH describe spot 2>&1)
grep -qE '^ +Normal +OnDemandCapacity ' <<<"$described" ||
  { echo "$described" >&2; fail "no OnDemandCapacity event"; }
say "NodeClaim $claim (spot, node $n_spot) deleted: attempt 0 ended ($ended) and the job restarted, not counted, $(elapsed "$t0" "$t_restarted") s later; attempt 1 on $n_next (on-demand) $(elapsed "$t0" "$t_placed") s after the deletion"
COACH delete spot >/dev/null || fail "coach delete spot"
