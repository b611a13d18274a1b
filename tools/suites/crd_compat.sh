#!/usr/bin/env bash
# coach's CRDs and Helm chart (charts/coach) against a real API server (tools/testenv):
#  1. the generated CRDs are up to date (tools/gen_crds.py and tools/gen_trainer_crds.py
#     --check) and small enough for client-side `kubectl apply` (last-applied annotation limit
#     262144 bytes);
#  2. helm lint / helm template over several value sets, the refusals the chart promises, and
#     the probes on the probe port (--probe-listen);
#  3. a corpus (tools/crd_compat/corpus.py: testdata + manifests walked from upstream's schema +
#     unusual pod templates) goes through `kubectl apply --dry-run=server` first with upstream's
#     CRDs installed, then, after deleting them, with coach's; tools/crd_compat/compare.py fails
#     on anything upstream accepts that coach rejects, and on any stored field that differs;
#     likewise for trainer.kubeflow.org/v1alpha1 (tools/crd_compat/corpus_v2.py: upstream's
#     runtimes and examples, variants, each CEL rule's failing case, updates of the immutable
#     fields, status patches; compare_v2.py also fails on what upstream refuses and coach accepts,
#     and on a CEL message coach does not give);
#  4. on coach's CRDs for real: printer columns (State, Step, Progress, Age; Attempt with
#     -o wide), status.coach stored and its bounds refused, the category, the status and
#     scale subresources (`kubectl scale` changes Worker replicas), unknown template fields kept;
#  5. `helm install` of the chart, and the ServiceAccount's RBAC: what the kube backend needs is
#     allowed (including granting the MPI launcher Role), nothing else is.
# Outside CI a machine without Go (to build tools/testenv) skips; under CI=true that fails.
set -uo pipefail
# shellcheck source=tools/suites/lib.sh
source "$(dirname "$(readlink -f "$0")")/lib.sh"
suite_init crd_compat
UPSTREAM=$COACH_SHARED_DIR/reference/kubeflow-v1-crds
REFERENCE_V2=$COACH_SHARED_DIR/reference/kubeflow-v2
UPSTREAM_V2=$REFERENCE_V2/crds
TESTENV=tools/testenv/testenv

suite_case "generated CRDs are current"
[[ -d $UPSTREAM ]] || fail "upstream CRDs not found in $UPSTREAM (set COACH_SHARED_DIR)"
[[ -d $UPSTREAM_V2 ]] || fail "upstream Trainer v2 CRDs not found in $UPSTREAM_V2 (set COACH_SHARED_DIR)"
python3 tools/gen_crds.py --check || fail "charts/coach/crds is stale: run tools/gen_crds.py"
python3 tools/gen_trainer_crds.py --check ||
  fail "charts/coach/crds is stale: run tools/gen_trainer_crds.py"

suite_case "control plane build"
suite_testenv_build
BIN=$TESTENV_BIN
HELM=$BIN/helm
[[ -x $HELM && -x $BIN/kubectl ]] || fail "helm or kubectl missing in $BIN"

WORK=$(mktemp -d /tmp/coach-crd-compat.XXXXXX)
DIR=$WORK/kube
cleanup() {
  if ((SUITE_RC != 0)) && [[ -d $DIR/logs ]]; then
    tail -n 15 "$DIR/logs/kube-apiserver.log" >&2
  fi
  "$TESTENV" down --dir "$DIR" >/dev/null 2>&1 || true
  if [[ -z ${COACH_KEEP_WORK:-} ]] && { ((SUITE_RC == 0)) || [[ ${CI:-} == true ]]; }; then rm -rf "$WORK"; else say "work dir kept: $WORK" >&2; fi
}
suite_on_exit cleanup

suite_case "CRD sizes"
# ---- 1. sizes --------------------------------------------------------------------------------
for f in charts/coach/crds/*.yaml; do
  size=$(wc -c <"$f")
  if [[ $(basename "$f") == trainer.kubeflow.org_* ]]; then
    up=$(wc -c <"$UPSTREAM_V2/$(basename "$f")")
  else
    up=$(wc -c <"$UPSTREAM/$(basename "$f")")
  fi
  say "$(basename "$f"): $size bytes (upstream $up)"
  ((size < 200000)) || fail "$f is $size bytes: too big for client-side kubectl apply"
done

suite_case "helm lint and template"
# ---- 2. helm lint and template ---------------------------------------------------------------
CHART=charts/coach
"$HELM" lint "$CHART" >"$WORK/lint.txt" 2>&1 || { cat "$WORK/lint.txt" >&2; fail "helm lint"; }
declare -A VALUESETS=(
  [default]=""
  [ha]="--set replicas=3"
  [namespaced]="--set rbac.scope=namespaced --set rbac.namespaces={team-a,team-b}"
  [secure]="--set auth.token.enabled=true --set auth.token.value=s3cret --set tls.enabled=true --set tls.secretName=coach-tls --set tls.clientCA=true"
  [volcano]="--set operator.gangScheduler=volcano --set nodeSelector.pool=system --set tolerations[0].operator=Exists"
  [plugins]="--set operator.gangScheduler=scheduler-plugins --set leaderElection.enabled=true"
  [certmanager]="--set webhook.certificate=cert-manager --set webhook.certManager.issuerRef.name=ca --set webhook.certManager.issuerRef.kind=ClusterIssuer"
  [nowebhook]="--set webhook.enabled=false"
)
for name in "${!VALUESETS[@]}"; do
  # shellcheck disable=SC2086  # a values set: --set flags, split into words on purpose
  "$HELM" lint "$CHART" ${VALUESETS[$name]} >"$WORK/lint-$name.txt" 2>&1 ||
    { cat "$WORK/lint-$name.txt" >&2; fail "helm lint ($name)"; }
  # shellcheck disable=SC2086  # as above
  "$HELM" template coach "$CHART" --namespace coach ${VALUESETS[$name]} >"$WORK/tmpl-$name.yaml" 2>&1 ||
    { cat "$WORK/tmpl-$name.yaml" >&2; fail "helm template ($name)"; }
done
grep -q -- '--backend=kube' "$WORK/tmpl-default.yaml" || fail "no --backend=kube"
grep -q -- '--leader-elect' "$WORK/tmpl-default.yaml" && fail "leader election on with 1 replica"
grep -q -- '--leader-elect=true' "$WORK/tmpl-ha.yaml" || fail "no leader election with 3 replicas"
# Namespaced mode: the only ClusterRoles are for cluster-scoped things, auth.mode=kubernetes's
# token/access reviews, rbac.readNodes's Nodes and the webhooks' (ClusterTrainingRuntimes, their
# configurations).
grep -A2 'kind: ClusterRole$' "$WORK/tmpl-namespaced.yaml" | grep 'name:' |
  grep -qvE 'coach-(auth-delegator|nodes|webhook)$' &&
  fail "namespaced mode renders a ClusterRole other than the auth delegator, the nodes reader and the webhooks'"
# The admission webhooks: served on their own port, the operator's certificate by default,
# cert-manager's when told, none when off.
for flag in --webhook-listen=0.0.0.0:9443 --webhook-secret=coach/coach-webhook-cert \
  --webhook-service=coach/coach-webhook --webhook-validating-configuration=coach-trainer; do
  grep -q -- "$flag" "$WORK/tmpl-default.yaml" || fail "default: no $flag"
done
[[ $(grep -c 'name: validator\.\|name: defaulter\.' "$WORK/tmpl-default.yaml") == 4 ]] ||
  fail "default: want upstream's 4 webhooks"
grep -q 'cert-manager.io/inject-ca-from: coach/coach-webhook' "$WORK/tmpl-certmanager.yaml" ||
  fail "cert-manager: no CA injection"
grep -q -- '--webhook-cert-dir=/etc/coach/webhook' "$WORK/tmpl-certmanager.yaml" || fail "cert-manager: no --webhook-cert-dir"
grep -q 'kind: Issuer$' "$WORK/tmpl-certmanager.yaml" && fail "cert-manager with an issuerRef still renders an Issuer"
grep -q 'mutatingwebhookconfigurations' "$WORK/tmpl-certmanager.yaml" &&
  fail "cert-manager: the operator may still patch the webhook configurations"
grep -qE 'WebhookConfiguration|--webhook-' "$WORK/tmpl-nowebhook.yaml" && fail "webhook.enabled=false still renders webhooks"
nodes=$(grep -A12 'name: coach-nodes$' "$WORK/tmpl-namespaced.yaml")
[[ $nodes == *'resources: [nodes]'* && $nodes == *'verbs: [list, watch]'* ]] ||
  fail "namespaced: the nodes ClusterRole does not grant list and watch on nodes"
grep -q -- '--lost-node-grace=2m' "$WORK/tmpl-default.yaml" || fail "default: no --lost-node-grace=2m"
grep -q -- '--in-place-restart-timeout=60s' "$WORK/tmpl-default.yaml" ||
  fail "default: no --in-place-restart-timeout=60s"
"$HELM" template coach "$CHART" --set rbac.readNodes=false | grep -q 'coach-nodes' &&
  fail "rbac.readNodes=false still grants nodes"
grep -q -- '--api-auth=kubernetes' "$WORK/tmpl-default.yaml" || fail "default: no --api-auth=kubernetes"
delegator=$(grep -A16 'name: coach-auth-delegator$' "$WORK/tmpl-default.yaml")
[[ $delegator == *'resources: [tokenreviews]'* && $delegator == *'resources: [subjectaccessreviews]'* ]] ||
  fail "default: the auth delegator ClusterRole does not grant token and access reviews"
grep -q -- '--api-auth=token' "$WORK/tmpl-secure.yaml" || fail "auth.token.enabled: no --api-auth=token"
grep -q 'coach-auth-delegator' "$WORK/tmpl-secure.yaml" && fail "auth.mode=token grants token reviews"
[[ $(grep -c '^kind: Role$' "$WORK/tmpl-namespaced.yaml") == 3 ]] ||
  fail "namespaced mode: want 3 Roles (2 namespaces, the webhook certificate's Secret)"
grep -q 'scheduling.volcano.sh' "$WORK/tmpl-volcano.yaml" || fail "volcano PodGroups not granted"
grep -q 'scheduling.x-k8s.io' "$WORK/tmpl-volcano.yaml" && fail "volcano mode grants scheduler-plugins PodGroups"
grep -q 'scheduling\.' "$WORK/tmpl-default.yaml" && fail "gangScheduler=none grants PodGroups"
if ! grep -q -- '--token-file=' "$WORK/tmpl-secure.yaml" || ! grep -q -- '--tls-client-ca=' "$WORK/tmpl-secure.yaml"; then
  fail "token/TLS flags missing"
fi
grep -nE '"\*"|\[\*\]|- \*$|: \*$' "$WORK"/tmpl-*.yaml && fail "a wildcard in rendered RBAC"
# The kubelet's probes go to --probe-listen's port, which clients of the http port cannot starve.
grep -q -- '--probe-listen=0.0.0.0:7452' "$WORK/tmpl-default.yaml" || fail "default: no --probe-listen=0.0.0.0:7452"
grep -A2 -- '- name: probe$' "$WORK/tmpl-default.yaml" | grep -q 'containerPort: 7452' ||
  fail "default: no container port probe (7452)"
for probe in livenessProbe readinessProbe; do
  [[ $(grep -A3 "^ *$probe:" "$WORK/tmpl-default.yaml" | grep -c 'port: probe$') == 1 ]] ||
    fail "default: the $probe does not use the probe port"
done
for bad in "--set replicas=2 --set leaderElection.enabled=false" "--set operator.gangScheduler=kueue" \
  "--set rbac.scope=everything" "--set auth.token.enabled=true" "--set tls.enabled=true" \
  "--set operator.workers=0" "--set auth.mode=basic" "--set operator.probePort=7451" \
  "--set auth.mode=kubernetes --set auth.token.enabled=true --set auth.token.value=x" \
  "--set operator.lostNodeGrace=soon" "--set webhook.certificate=self" "--set webhook.port=7450" \
  "--set webhook.failurePolicy=Never"; do
  # shellcheck disable=SC2086  # a bad values set: --set flags, split into words on purpose
  if "$HELM" template coach "$CHART" $bad >/dev/null 2>&1; then fail "helm template accepted: $bad"; fi
done
[[ $("$HELM" template coach "$CHART" --include-crds | grep -c '^kind: CustomResourceDefinition') == 9 ]] ||
  fail "helm template --include-crds does not render the 9 CRDs"
# The operator runs TrainJobs and only reads the runtimes they name.
grep -q 'resources: \[trainjobs\]' "$WORK/tmpl-default.yaml" || fail "the chart's RBAC lacks trainjobs"
[[ $(grep -A1 'resources: \[trainingruntimes, clustertrainingruntimes\]' "$WORK/tmpl-default.yaml" |
  grep -c 'verbs: \[get, list, watch\]') == 1 ]] || fail "the chart's RBAC does more than read runtimes"
say "helm lint/template: ${#VALUESETS[@]} value sets render, 13 bad ones are refused; probes on the probe port"

suite_case "the corpus under upstream's and coach's CRDs"
# ---- 3. the corpus under both CRD sets -------------------------------------------------------
kubeconfig=$("$TESTENV" up --dir "$DIR") || fail "testenv up failed"
k() { "$BIN/kubectl" --kubeconfig "$kubeconfig" "$@"; }
export -f k
export BIN kubeconfig
for ns in compat team-a kubeflow; do k create namespace "$ns" >/dev/null || fail "create namespace $ns"; done

crd_names=(pytorchjobs tfjobs xgboostjobs mpijobs paddlejobs jaxjobs)
v2_names=(trainjobs trainingruntimes clustertrainingruntimes)
all_crds=()
for p in "${crd_names[@]}"; do all_crds+=("$p.kubeflow.org"); done
for p in "${v2_names[@]}"; do all_crds+=("$p.trainer.kubeflow.org"); done
wait_established() {
  for c in "${all_crds[@]}"; do
    suite_crds_established k 60 "crd/$c" || fail "crd $c not Established"
  done
}
wait_gone() {
  local deadline=$((SECONDS + 90))
  for c in "${all_crds[@]}"; do
    while k get "crd/$c" >/dev/null 2>&1; do
      ((SECONDS < deadline)) || fail "crd $c not deleted in 90 s"
      sleep 0.5
    done
  done
  # Discovery must forget the kinds too before the next set is installed.
  local g
  for g in kubeflow.org trainer.kubeflow.org; do
    while k api-resources --api-group=$g -o name 2>/dev/null | grep -q .; do
      ((SECONDS < deadline)) || fail "$g still served 90 s after deleting the CRDs"
      sleep 0.5
    done
  done
}
run_corpus() { # results-dir
  mkdir -p "$1"
  # shellcheck disable=SC2016  # the script's $1 (the file) and $2 (the results dir) are its own
  find "$WORK/corpus" -name '*.json' -o -name '*.yaml' | sort |
    xargs -P 8 -I{} bash -c '
      f=$1; c=$(basename "${f%.*}")
      k apply --dry-run=server -o json -f "$f" >"$2/$c.out" 2>&1; echo $? >"$2/$c.rc"' bash {} "$1" ||
    true
  [[ $(find "$1" -maxdepth 1 -name '*.rc' | wc -l) == $(($(wc -l <"$WORK/corpus/index.tsv"))) ]] ||
    fail "corpus run incomplete in $1"
}

# The v2 corpus, case by case (corpus_v2.py): a plain case is a server-side dry run; an update
# case first creates its base for real, then dry-runs the change (apply) or the status patch.
run_corpus_v2() { # results-dir
  mkdir -p "$1"
  # shellcheck disable=SC2016  # the script's $1..$3 are its own
  cut -f1 "$WORK/corpus-v2/index.tsv" |
    xargs -P 8 -I{} bash -c '
      d=$1 c=$2 r=$3
      if [[ -f $d/$c.base.json ]]; then
        if ! k apply -f "$d/$c.base.json" >"$r/$c.base.out" 2>&1; then
          cp "$r/$c.base.out" "$r/$c.out"; echo 1 >"$r/$c.rc"; exit 0
        fi
        if [[ -f $d/$c.status.json ]]; then
          k patch -f "$d/$c.base.json" --subresource=status --type=merge \
            --patch-file "$d/$c.status.json" --dry-run=server -o json >"$r/$c.out" 2>&1
        else
          k apply --dry-run=server -o json -f "$d/$c.json" >"$r/$c.out" 2>&1
        fi
      else
        k apply --dry-run=server -o json -f "$d/$c.json" >"$r/$c.out" 2>&1
      fi
      echo $? >"$r/$c.rc"' bash "$WORK/corpus-v2" {} "$1" ||
    true
  [[ $(find "$1" -maxdepth 1 -name '*.rc' | wc -l) == $(($(wc -l <"$WORK/corpus-v2/index.tsv"))) ]] ||
    fail "v2 corpus run incomplete in $1"
}
python3 tools/crd_compat/corpus_v2.py "$REFERENCE_V2" "$WORK/corpus-v2" >/dev/null ||
  fail "v2 corpus generation"
say "v2 corpus: $(wc -l <"$WORK/corpus-v2/index.tsv") cases"

up_files=()
for p in "${crd_names[@]}"; do up_files+=(-f "$UPSTREAM/kubeflow.org_$p.yaml"); done
for p in "${v2_names[@]}"; do up_files+=(-f "$UPSTREAM_V2/trainer.kubeflow.org_$p.yaml"); done
# Upstream's CRDs are too big for client-side apply (the last-applied annotation): show it, then
# create them.
if k apply --dry-run=server -f "$UPSTREAM/kubeflow.org_pytorchjobs.yaml" >"$WORK/up-apply.txt" 2>&1; then
  say "note: client-side apply of upstream's pytorchjobs CRD was accepted"
else
  say "upstream's CRDs with client-side apply: $(grep -o 'Too long[^"]*' "$WORK/up-apply.txt" | head -n 1)"
fi
k create "${up_files[@]}" -o name >/dev/null || fail "create upstream CRDs"
wait_established
mkdir -p "$WORK/up"
for p in "${crd_names[@]}"; do k get "crd/$p.kubeflow.org" -o json >"$WORK/up/kubeflow.org_$p.json"; done
python3 tools/crd_compat/corpus.py "$WORK/up" api/v1/testdata/valid "$WORK/corpus" >/dev/null ||
  fail "corpus generation"
say "corpus: $(wc -l <"$WORK/corpus/index.tsv") manifests"
t0=$SECONDS
run_corpus "$WORK/res-upstream"
say "upstream CRDs: corpus applied in $((SECONDS - t0)) s"
t0=$SECONDS
run_corpus_v2 "$WORK/res-v2-upstream"
say "upstream v2 CRDs: v2 corpus applied in $((SECONDS - t0)) s"
k delete "${up_files[@]}" --wait=true >/dev/null || fail "delete upstream CRDs"
wait_gone

# coach's CRDs: plain client-side apply must work, twice (the second is a no-op).
k apply -f charts/coach/crds/ >"$WORK/apply1.txt" 2>&1 || { cat "$WORK/apply1.txt" >&2; fail "client-side kubectl apply of charts/coach/crds"; }
k apply -f charts/coach/crds/ >"$WORK/apply2.txt" 2>&1 || { cat "$WORK/apply2.txt" >&2; fail "second kubectl apply"; }
[[ $(grep -c unchanged "$WORK/apply2.txt") == 9 ]] || { cat "$WORK/apply2.txt" >&2; fail "second apply changed something"; }
wait_established
t0=$SECONDS
run_corpus "$WORK/res-coach"
say "coach CRDs: corpus applied in $((SECONDS - t0)) s"
t0=$SECONDS
run_corpus_v2 "$WORK/res-v2-coach"
say "coach v2 CRDs: v2 corpus applied in $((SECONDS - t0)) s"
v1_same=true
python3 tools/crd_compat/compare.py "$WORK/corpus" "$WORK/res-upstream" "$WORK/res-coach" || v1_same=false
python3 tools/crd_compat/compare_v2.py "$WORK/corpus-v2" "$WORK/res-v2-upstream" "$WORK/res-v2-coach" ||
  fail "coach's trainer.kubeflow.org CRDs differ from upstream's (see above)"
$v1_same || fail "coach's kubeflow.org CRDs differ from upstream's (see above)"

suite_case "coach's CRDs: columns, category, subresources"
# ---- 4. coach's CRDs for real ----------------------------------------------------------------
k apply -n compat -f "$WORK/corpus/unknown-pytorchjob.json" >/dev/null || fail "create unknown-pytorchjob"
name=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["metadata"]["name"])' "$WORK/corpus/unknown-pytorchjob.json")
k get pytorchjob "$name" -n compat -o json >"$WORK/stored.json"
python3 - "$WORK/stored.json" <<'PY' || fail "unknown pod template fields were not kept"
import json, sys
spec = json.load(open(sys.argv[1]))["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]
assert spec["futurePodField"] == {"x": 1}, spec
assert spec["containers"][0]["futureContainerKnob"] is True, spec
PY
header=$(k get pytorchjobs -n compat | head -n 1)
[[ $header =~ ^NAME\ +STATE\ +STEP\ +PROGRESS\ +AGE ]] || fail "kubectl get pytorchjobs header is '$header'"
header=$(k get pytorchjobs -n compat -o wide | head -n 1)
[[ $header =~ ^NAME\ +STATE\ +STEP\ +PROGRESS\ +ATTEMPT\ +AGE ]] ||
  fail "kubectl get pytorchjobs -o wide header is '$header'"
k patch pytorchjob "$name" -n compat --subresource=status --type=merge -p '{"status":{
  "conditions":[{"type":"Created","status":"True","reason":"PyTorchJobCreated"},
                {"type":"Running","status":"True","reason":"PyTorchJobRunning"}],
  "replicaStatuses":{"Worker":{"active":1,"selector":"training.kubeflow.org/job-name='"$name"',training.kubeflow.org/replica-type=worker"}},
  "startTime":"2025-01-01T00:00:00Z",
  "coach":{"attempt":2,"restarts":1,"restartsByType":{"Worker":1},"attemptRunningTime":"2025-01-01T00:00:00Z",
           "progress":{"step":1200,"metrics":{"loss":0.25,"epoch":3},"stepsPerSecond":3.5,
                       "lastProgressTime":"2025-01-01T00:05:00Z"},
           "elastic":{"minWorkers":1,"maxWorkers":2,"workers":1,
                      "changes":[{"time":"2025-01-01T00:04:00Z","workers":1,"step":1100,
                                  "why":"Worker replica 1 exited with code 137"}]}}}}' >/dev/null || fail "status patch"
read -r _ state step _ attempt _ <<<"$(k get pytorchjob "$name" -n compat --no-headers -o wide)"
[[ $state == Running ]] || fail "STATE column is '$state', want Running"
[[ $step == 1200 && $attempt == 2 ]] || fail "STEP and ATTEMPT columns are '$step' and '$attempt', want 1200 and 2"
k get pytorchjob "$name" -n compat -o jsonpath='{.status.coach.progress.metrics.loss}' | grep -qx 0.25 ||
  fail "status.coach.progress.metrics was not stored"
k get pytorchjob "$name" -n compat -o jsonpath='{.status.coach.elastic.changes[0].step}' | grep -qx 1100 ||
  fail "status.coach.elastic was not stored"
# The bounds coach's decoder holds status.coach to (api/v1/coach_status.h) hold at the API server.
why513=$(printf 'w%.0s' {1..513})
for bad in '{"attempt":-1}' '{"progress":{"metrics":{"":1}}}' '{"progress":{"stepsPerSecond":-1}}' \
  '{"elastic":{"workers":-1}}' '{"elastic":{"workers":1,"changes":[{"workers":1,"why":"'"$why513"'"}]}}' \
  '{"elastic":{"workers":1,"changes":['"$(printf '{"workers":1},%.0s' {1..20})"'{"workers":1}]}}'; do
  if k patch pytorchjob "$name" -n compat --subresource=status --type=merge \
    -p '{"status":{"coach":'"$bad"'}}' >/dev/null 2>&1; then
    fail "status.coach $bad was accepted"
  fi
done
k get kubeflow -n compat -o name | grep -q "pytorchjob.kubeflow.org/$name" || fail "category kubeflow does not list the job"
k scale "pytorchjob/$name" -n compat --replicas=3 >/dev/null || fail "kubectl scale"
replicas=$(k get pytorchjob "$name" -n compat -o jsonpath='{.spec.pytorchReplicaSpecs.Worker.replicas}')
[[ $replicas == 3 ]] || fail "Worker replicas after scale: '$replicas', want 3"
scale=$(k get --raw "/apis/kubeflow.org/v1/namespaces/compat/pytorchjobs/$name/scale")
python3 -c 'import json,sys; s=json.loads(sys.argv[1]); assert s["spec"]["replicas"]==3 and s["status"]["replicas"]==1 and "job-name=" in s["status"]["selector"], s' "$scale" ||
  fail "scale subresource: $scale"
for p in paddlejobs jaxjobs; do
  k get --raw "/apis/kubeflow.org/v1/namespaces/compat/$p" >/dev/null || fail "list $p"
done
say "coach CRDs: State/Step/Progress/Age (and Attempt) columns, status.coach, category, status and scale subresources, unknown fields kept"

suite_case "coach's Trainer v2 CRDs: columns, scope, status"
k apply -n compat -f - >/dev/null <<'YAML' || fail "create a TrainJob"
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: state}
spec: {runtimeRef: {name: torch-distributed}}
YAML
header=$(k get trainjobs -n compat | head -n 1)
[[ $header =~ ^NAME\ +STATE\ +PHASE\ +AGE$ ]] || fail "kubectl get trainjobs header is '$header'"
# STATE is the last upstream condition's type whatever its status (a resumed job shows
# Suspended); PHASE the last of coach's own conditions in status.coach.
k patch trainjob state -n compat --subresource=status --type=merge -p '{"status":{"conditions":[
  {"type":"Failed","status":"False","reason":"R","message":"","lastTransitionTime":"2025-01-01T00:00:00Z"},
  {"type":"Suspended","status":"False","reason":"Resumed","message":"TrainJob is resumed","lastTransitionTime":"2025-01-01T00:00:00Z"}],
  "coach":{"conditions":[{"type":"Created","status":"True"},{"type":"Running","status":"True"}],
           "replicaStatuses":{"node":{"active":2,"replicas":2}}}}}' \
  >/dev/null || fail "TrainJob status patch"
read -r _ state phase _ <<<"$(k get trainjob state -n compat --no-headers)"
[[ $state == Suspended ]] || fail "TrainJob STATE column is '$state', want Suspended"
[[ $phase == Running ]] || fail "TrainJob PHASE column is '$phase', want Running"
kept=$(k get trainjob state -n compat -o jsonpath='{.status.coach.replicaStatuses.node.replicas}')
[[ $kept == 2 ]] || fail "TrainJob status.coach.replicaStatuses pruned: '$kept'"
defaults=$(k get trainjob state -n compat -o jsonpath='{.spec.runtimeRef.apiGroup} {.spec.runtimeRef.kind} {.spec.managedBy} {.spec.suspend}')
[[ $defaults == "trainer.kubeflow.org ClusterTrainingRuntime trainer.kubeflow.org/trainjob-controller false" ]] ||
  fail "TrainJob defaults: '$defaults'"
scopes=$(k api-resources --api-group=trainer.kubeflow.org --no-headers | awk '{print $1, $(NF-1)}' | sort | tr '\n' ' ')
[[ $scopes == "clustertrainingruntimes false trainingruntimes true trainjobs true " ]] ||
  fail "trainer.kubeflow.org scopes (resource, namespaced): '$scopes'"
say "coach v2 CRDs: TrainJob STATE/PHASE/AGE columns, status.coach kept, defaults, ClusterTrainingRuntime cluster-scoped"

suite_case "helm install and RBAC"
# ---- 5. helm install and RBAC ----------------------------------------------------------------
"$HELM" --kubeconfig "$kubeconfig" install coach "$CHART" --namespace coach --create-namespace \
  --skip-crds --set replicas=2 --wait --timeout 90s >"$WORK/install.txt" 2>&1 ||
  { cat "$WORK/install.txt" >&2; k -n coach get deploy,pods -o wide >&2; fail "helm install"; }
sa=system:serviceaccount:coach:coach
can() { k auth can-i --as="$sa" "$@" >/dev/null 2>&1; }
for check in "create pytorchjobs.kubeflow.org -n compat" "update mpijobs.kubeflow.org --subresource=status -n compat" \
  "watch jaxjobs.kubeflow.org --all-namespaces" "delete pods -n compat" "get pods --subresource=log -n compat" \
  "create services -n compat" "update configmaps -n compat" "create serviceaccounts -n compat" \
  "create roles.rbac.authorization.k8s.io -n compat" "create rolebindings.rbac.authorization.k8s.io -n compat" \
  "create events -n compat" "list events -n compat" "update leases.coordination.k8s.io/coach-operator -n coach" \
  "update tfjobs.kubeflow.org --subresource=finalizers -n compat" \
  "create tokenreviews.authentication.k8s.io" "create subjectaccessreviews.authorization.k8s.io" \
  "list nodes" "watch nodes" "create trainjobs.trainer.kubeflow.org -n compat" \
  "update trainjobs.trainer.kubeflow.org --subresource=status -n compat" \
  "watch clustertrainingruntimes.trainer.kubeflow.org" "get trainingruntimes.trainer.kubeflow.org -n compat" \
  "create secrets -n compat" "create persistentvolumeclaims -n compat" "watch persistentvolumeclaims -n compat" \
  "get secrets/coach-webhook-cert -n coach" "update secrets/coach-webhook-cert -n coach" \
  "patch validatingwebhookconfigurations.admissionregistration.k8s.io/coach-trainer" \
  "patch mutatingwebhookconfigurations.admissionregistration.k8s.io/coach-trainer"; do
  # shellcheck disable=SC2086  # a can-i query (verb, resource, flags), split into words on purpose
  can $check || fail "the operator's ServiceAccount cannot: $check"
done
for check in "get secrets -n compat" "list secrets -n compat" "watch secrets -n compat" \
  "update secrets -n compat" "delete secrets -n compat" "delete persistentvolumeclaims -n compat" \
  "update pods --subresource=status -n compat" \
  "update leases.coordination.k8s.io/other -n coach" "create podgroups.scheduling.volcano.sh -n compat" \
  "delete nodes" "update nodes --subresource=status" "create clusterroles.rbac.authorization.k8s.io" \
  "delete namespaces" "update clustertrainingruntimes.trainer.kubeflow.org" \
  "create trainingruntimes.trainer.kubeflow.org -n compat" "get secrets/coach-token -n coach" \
  "delete secrets/coach-webhook-cert -n coach" \
  "patch validatingwebhookconfigurations.admissionregistration.k8s.io/other" \
  "delete validatingwebhookconfigurations.admissionregistration.k8s.io/coach-trainer"; do
  # shellcheck disable=SC2086  # as above
  can $check && fail "the operator's ServiceAccount can: $check (least privilege)"
done
# Kueue's kinds, whose CRDs this control plane lacks (`kubectl auth can-i` then answers no
# whatever RBAC says): asked as SubjectAccessReviews. Read-only: the Workloads and LocalQueues.
sar() { # verb resource namespace ("" all)
  k create -o jsonpath='{.status.allowed}' -f - <<YAML
apiVersion: authorization.k8s.io/v1
kind: SubjectAccessReview
spec:
  user: $sa
  groups: [system:serviceaccounts, system:serviceaccounts:coach, system:authenticated]
  resourceAttributes: {group: kueue.x-k8s.io, verb: $1, resource: $2, namespace: "${3:-}"}
YAML
}
for check in "watch workloads" "list workloads compat" "watch localqueues compat"; do
  # shellcheck disable=SC2086  # verb, resource, namespace: split into words on purpose
  [[ $(sar $check) == true ]] || fail "the operator's ServiceAccount cannot: $check (kueue.x-k8s.io)"
done
for check in "update workloads compat" "patch workloads compat" "get clusterqueues" "create localqueues compat"; do
  # shellcheck disable=SC2086  # as above
  [[ $(sar $check) == true ]] && fail "the operator's ServiceAccount can: $check (kueue.x-k8s.io; least privilege)"
done
# The MPI launcher Role the backend creates: RBAC lets the operator grant only what it holds.
k --as="$sa" -n compat create role mpi-launcher-probe --verb=get,list,watch --resource=pods \
  >/dev/null || fail "the operator cannot create the MPI launcher Role (pods get/list/watch)"
k --as="$sa" -n compat apply -f - >/dev/null <<'YAML' || fail "the operator cannot grant pods/exec to the MPI launcher"
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: mpi-launcher-exec}
rules:
- {apiGroups: [""], resources: [pods/exec], verbs: [create]}
YAML
"$HELM" --kubeconfig "$kubeconfig" uninstall coach --namespace coach >/dev/null || fail "helm uninstall"
say "helm install (2 replicas, leader election) ok; RBAC allows the backend's checks and refuses the rest"

"$TESTENV" down --dir "$DIR" >/dev/null || fail "testenv down"
