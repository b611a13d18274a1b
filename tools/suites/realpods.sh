#!/usr/bin/env bash
# Real pods through the Kubernetes backend, with coach installed by its chart: a control plane
# with one real node (tools/testenv/testenv up --real-node), the operator image and the training
# image imported into the node's containerd, `helm install charts/coach` (2 replicas, leader
# election, the operator and its replicas pinned to the real node), then the e2e/realpods pytest
# suite (the same suite e2e/kind/run.sh runs on kind): real DDP, coach-launch, torchrun, TensorFlow,
# JAX, PaddlePaddle and XGBoost training (the framework images imported too), logs -f, restarts
# with real exit codes, the chart's pods, leader fail-over, RBAC, and job history: the operator
# keeps every attempt's logs and deleted jobs' records in a real S3 store (SeaweedFS,
# tools/testenv/seaweedfs, its S3 gateway on the node's bridge address beside MLflow).
# Then bench/realpods/seed_job.py prints the seed job's figures: apply -> all replicas started and
# -> Succeeded, coach against the same pods created directly, and what init-pytorch adds.
# Needs root. Outside CI a machine without the components skips; under CI=true that fails.
set -uo pipefail
# shellcheck source=tools/suites/lib.sh
source "$(dirname "$(readlink -f "$0")")/lib.sh"
suite_init realpods
TESTENV=tools/testenv/testenv

[[ $(id -u) == 0 ]] || skip "needs root (a real kubelet node)"
command -v go >/dev/null || skip "go is not installed"
command -v mmdebstrap >/dev/null || skip "mmdebstrap is missing (tools/bootstrap installs it)"
/usr/bin/python3 -c "import pytest, yaml" 2>/dev/null || skip "python3-pytest / python3-yaml missing"
# Kubeflow Trainer v2's Python SDK reads a TrainJob's logs from the real node (e2e/realpods/test_trainjob.py).
tools/upstream_sdk_env.sh install kubeflow || fail "tools/upstream_sdk_env.sh install kubeflow failed"
COACH_E2E_KUBEFLOW_SDK_PYTHON=$(tools/upstream_sdk_env.sh python kubeflow) || fail "the kubeflow SDK venv is not usable"
export COACH_E2E_KUBEFLOW_SDK_PYTHON

suite_case "control plane build"
suite_testenv_build
BIN=$TESTENV_BIN
# SeaweedFS for the operator's history store (built once, then cached). Without it the history
# tests skip; under CI=true that fails.
history_s3=1
weed_log=$(mktemp)
if ! tools/testenv/seaweedfs build >"$weed_log" 2>&1; then
  tail -n 30 "$weed_log" >&2
  [[ ${CI:-} == true ]] && { rm -f "$weed_log"; fail "tools/testenv/seaweedfs build"; }
  say "tools/testenv/seaweedfs build failed: no history store, e2e/realpods/test_history.py skips"
  history_s3=0
fi
rm -f "$weed_log"

# Images: the operator's (tools/image/build from the binaries this suite was given) and the
# training image.
suite_case "images"
runfiles=$(suite_runfiles) || exit 1
WORK=$(mktemp -d /tmp/coach-realpods.XXXXXX)
DIR=$WORK/kube
t0=$SECONDS
tools/image/build --bin-dir "$runfiles" --out "$WORK/operator.tar" --tag e2e \
  >"$WORK/operator-image.log" 2>&1 || { tail -n 30 "$WORK/operator-image.log"; fail "tools/image/build"; }
# It prints the image's ref, then the archive's path.
training=$(tools/image/build-training 2>"$WORK/training-image.log") ||
  { tail -n 30 "$WORK/training-image.log"; fail "tools/image/build-training"; }
training_ref=$(sed -n 1p <<<"$training")
training_archive=$(sed -n 2p <<<"$training")
[[ -f $training_archive ]] || fail "tools/image/build-training printed no archive: $training"
# The framework images (tools/image/build-framework-image: the same Debian layer and a venv).
framework_archives=()
for framework in tensorflow jax paddle xgboost; do
  built=$(tools/image/build-framework-image "$framework" 2>"$WORK/$framework-image.log") ||
    { tail -n 30 "$WORK/$framework-image.log"; fail "tools/image/build-framework-image $framework"; }
  [[ -f $(sed -n 2p <<<"$built") ]] || fail "tools/image/build-framework-image $framework printed no archive: $built"
  export "COACH_E2E_IMAGE_${framework^^}=$(sed -n 1p <<<"$built")"
  framework_archives+=("$(sed -n 2p <<<"$built")")
done
# MPIJob launchers' kubectl-delivery (busybox + the testenv's kubectl; seconds).
tools/image/build-kubectl-delivery --out "$WORK/kubectl-delivery.tar" --tag e2e \
  >"$WORK/kubectl-delivery-image.log" 2>&1 ||
  { tail -n 30 "$WORK/kubectl-delivery-image.log"; fail "tools/image/build-kubectl-delivery"; }
cp "$runfiles/sdk/cpp/cli/coach" "$WORK/coach" || fail "the coach CLI is not in the runfiles"
say "images and CLI: $((SECONDS - t0)) s (operator: the chart's repository, tag e2e; training $training_ref)"

# One real node per machine (see tools/suites/realnode.sh).
suite_real_node_lock

cleanup() {
  if ((SUITE_RC != 0)) && [[ -f $DIR/kubeconfig ]]; then
    KUBECONFIG=$DIR/kubeconfig "$BIN/kubectl" get pods -A -o wide >&2 2>/dev/null
    KUBECONFIG=$DIR/kubeconfig "$BIN/kubectl" logs -n coach -l app.kubernetes.io/name=coach --tail 40 >&2 2>/dev/null
  fi
  if [[ -n ${COACH_REALPODS_KEEP_CLUSTER:-} && $SUITE_RC == 0 ]]; then
    say "cluster kept: KUBECONFIG=$DIR/kubeconfig; tools/testenv/testenv down --dir $DIR" >&2
    return
  fi
  tools/mlflow_env.sh stop "$WORK/mlflow" >/dev/null 2>&1 || true
  tools/testenv/seaweedfs down --dir "$WORK/seaweedfs" >/dev/null 2>&1 || true
  "$TESTENV" down --dir "$DIR" >/dev/null 2>&1 || true
  if [[ -z ${COACH_KEEP_WORK:-} ]] && { ((SUITE_RC == 0)) || [[ ${CI:-} == true ]]; }; then rm -rf "$WORK"; else say "work dir kept: $WORK" >&2; fi
}
suite_on_exit cleanup

suite_case "control plane with a real node"
t0=$SECONDS
"$TESTENV" up --dir "$DIR" --real-node >"$WORK/up.log" 2>&1 || { tail -n 30 "$WORK/up.log"; fail "testenv up --real-node"; }
export KUBECONFIG=$DIR/kubeconfig
K() { "$BIN/kubectl" "$@"; }
"$TESTENV" image-import --dir "$DIR" "$WORK/operator.tar" >/dev/null || fail "import the operator image"
"$TESTENV" image-import --dir "$DIR" "$training_archive" >/dev/null || fail "import the training image"
for archive in "${framework_archives[@]}"; do
  "$TESTENV" image-import --dir "$DIR" "$archive" >/dev/null || fail "import $archive"
done
"$TESTENV" image-import --dir "$DIR" "$WORK/kubectl-delivery.tar" >/dev/null || fail "import the kubectl-delivery image"
say "control plane with a real node, images imported: $((SECONDS - t0)) s"

# An MLflow server the pods reach: on the bridge address the real node's pods route to.
bridge=$(sed -n 's|^COACH_TESTENV_SERVER=https://\([0-9.]*\):.*|\1|p' "$DIR/env")
[[ -n $bridge ]] || fail "no bridge address in $DIR/env"
mlflow_uri=$(COACH_MLFLOW_HOST=$bridge tools/mlflow_env.sh start "$WORK/mlflow") ||
  fail "MLflow server on $bridge"
say "MLflow server at $mlflow_uri"
# The history store (docs/history.md): SeaweedFS's S3 gateway on the bridge address too, its
# credentials in a Secret of the release's namespace that the chart hands the operator alone.
history_values=()
if ((history_s3)); then
  tools/testenv/seaweedfs up --dir "$WORK/seaweedfs" --ip "$bridge" >"$WORK/seaweedfs-up.log" 2>&1 ||
    { tail -n 30 "$WORK/seaweedfs-up.log"; fail "SeaweedFS on $bridge"; }
  # COACH_S3_ENDPOINT, _BUCKET, _ACCESS_KEY_ID, _SECRET_ACCESS_KEY, _REGION; never printed.
  s3_env=$(tools/testenv/seaweedfs env --dir "$WORK/seaweedfs") || fail "tools/testenv/seaweedfs env"
  s3_value() { sed -n "s/^COACH_S3_$1=//p" <<<"$s3_env"; }
  (
    umask 077
    printf '%s\n' "AWS_ACCESS_KEY_ID=$(s3_value ACCESS_KEY_ID)" \
      "AWS_SECRET_ACCESS_KEY=$(s3_value SECRET_ACCESS_KEY)" >"$WORK/history-s3.env"
  )
  K create namespace coach >/dev/null || fail "namespace coach"
  # From a file, so that no command line (ps) shows the secret.
  K create secret generic coach-history-s3 -n coach --from-env-file="$WORK/history-s3.env" \
    >/dev/null || fail "the history store's Secret"
  rm -f "$WORK/history-s3.env"
  history_values=(--set-string "history.s3.endpoint=$(s3_value ENDPOINT)"
    --set-string "history.s3.bucket=$(s3_value BUCKET)"
    --set-string "history.s3.region=$(s3_value REGION)"
    --set-string history.s3.existingSecret=coach-history-s3)
  say "history store (SeaweedFS S3) at $(s3_value ENDPOINT), bucket $(s3_value BUCKET)"
fi

suite_case "helm install"
t0=$SECONDS
K apply --server-side -f charts/coach/crds >/dev/null || fail "CRDs"
"$BIN/helm" install coach charts/coach -n coach --create-namespace --wait --timeout 180s \
  --set image.tag=e2e \
  --set image.pullPolicy=Never --set replicas=2 \
  --set operator.mpiKubectlDeliveryImage=ghcr.io/coach/coach-kubectl-delivery:e2e \
  --set "mlflow.allowedTrackingUris[0]=$mlflow_uri" "${history_values[@]}" \
  --set-string 'nodeSelector.coach\.dev/real-node=true' \
  --set 'tolerations[0].key=coach.dev/real-node' --set 'tolerations[0].operator=Exists' \
  --set 'tolerations[0].effect=NoSchedule' >"$WORK/helm.log" 2>&1 ||
  { cat "$WORK/helm.log"; fail "helm install"; }
say "helm install (2 replicas, leader election): $((SECONDS - t0)) s"

export COACH_E2E_KUBECTL=$BIN/kubectl
export COACH_E2E_TRAINING_IMAGE=$training_ref
export COACH_E2E_NODE_SELECTOR=coach.dev/real-node=true
export COACH_E2E_TOLERATE=coach.dev/real-node
export COACH_E2E_OPERATOR_NS=coach
export COACH_E2E_COACH_CLI=$WORK/coach
export COACH_E2E_MLFLOW_URI=$mlflow_uri
# The operator has a history store (e2e/realpods/test_history.py skips without one).
export COACH_E2E_HISTORY_S3=$history_s3
suite_case "e2e/realpods"
t0=$SECONDS
report=$(suite_report_file realpods-pytest.xml)
suite_add_report "$report"
( cd e2e/realpods && /usr/bin/python3 -m pytest -p no:cacheprovider -v --junitxml="$report" "$@" ) ||
  fail "e2e/realpods"
say "suite: $((SECONDS - t0)) s"
suite_case "the seed job's figures"
export COACH_E2E_OPERATOR_IMAGE=ghcr.io/coach/coach-operator:e2e
/usr/bin/python3 bench/realpods/seed_job.py --coach "$WORK/coach" --rounds "${COACH_REALPODS_BENCH_ROUNDS:-1}" ||
  fail "bench/realpods/seed_job.py"
