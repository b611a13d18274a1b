#!/usr/bin/env bash
# The real-pod suite (e2e/realpods) on a kind cluster, for machines with Docker or Podman:
# creates the cluster (e2e/kind/cluster.yaml), builds and loads the operator and training images
# (`kind load image-archive`), installs charts/coach with Helm, runs the suite, deletes the cluster.
#
#   e2e/kind/run.sh [pytest args...]
#
# Needs: kind, kubectl, helm, Docker or Podman, and what tools/bootstrap installs (the images are
# built without a container engine: tools/image/build, tools/image/build-training).
# COACH_KIND_KEEP=1 keeps the cluster. On a machine without a container engine (like the one
# coach is developed on) it says so and exits 1: there the same suite runs on the testenv's real
# node instead (tools/suites/realpods.sh, part of `make test`).
set -euo pipefail
cd "$(dirname "$0")/../.."
CLUSTER=coach-e2e
die() { echo "e2e/kind: $*" >&2; exit 1; }

engine=""
if command -v docker >/dev/null && docker info >/dev/null 2>&1; then
  engine=docker
elif command -v podman >/dev/null && podman info >/dev/null 2>&1; then
  engine=podman
  export KIND_EXPERIMENTAL_PROVIDER=podman
fi
[[ -n $engine ]] || die "kind needs a container engine (Docker or Podman) and none answers here.
On this kind of machine the same suite runs on a real kubelet node of the test control plane:
  tools/suites/realpods.sh"
for tool in kind kubectl helm; do
  command -v "$tool" >/dev/null || die "$tool is not installed"
done

work=$(mktemp -d)
cleanup() {
  local rc=$?
  [[ -n ${COACH_KIND_KEEP:-} ]] || kind delete cluster --name "$CLUSTER" >/dev/null 2>&1 || true
  rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT

echo "e2e/kind: images (no container engine needed to build them)"
tools/image/build --out "$work/operator.tar" --tag e2e >/dev/null
training=$(tools/image/build-training)
# kubectl for the MPIJob launchers' kubectl-delivery: the one on PATH when it is static.
tools/image/build-kubectl-delivery --out "$work/kubectl-delivery.tar" --tag e2e \
  --kubectl "$(command -v kubectl)" >/dev/null
training_ref=$(sed -n 1p <<<"$training")
training_archive=$(sed -n 2p <<<"$training")
framework_archives=()
for framework in tensorflow jax paddle xgboost; do
  built=$(tools/image/build-framework-image "$framework")
  export "COACH_E2E_IMAGE_${framework^^}=$(sed -n 1p <<<"$built")"
  framework_archives+=("$(sed -n 2p <<<"$built")")
done
bazel build //sdk/cpp/cli:coach >/dev/null
cp "$(bazel info bazel-bin 2>/dev/null)/sdk/cpp/cli/coach" "$work/coach"

echo "e2e/kind: cluster $CLUSTER ($engine)"
kind create cluster --name "$CLUSTER" --config e2e/kind/cluster.yaml --wait 120s
kind load image-archive "$work/operator.tar" --name "$CLUSTER"
kind load image-archive "$training_archive" --name "$CLUSTER"
for archive in "${framework_archives[@]}"; do kind load image-archive "$archive" --name "$CLUSTER"; done
kind load image-archive "$work/kubectl-delivery.tar" --name "$CLUSTER"

kubectl apply --server-side -f charts/coach/crds
helm install coach charts/coach -n coach --create-namespace --wait --timeout 180s \
  --set image.tag=e2e --set image.pullPolicy=Never --set replicas=2 \
  --set operator.mpiKubectlDeliveryImage=ghcr.io/coach/coach-kubectl-delivery:e2e

export COACH_E2E_KUBECTL=kubectl
export COACH_E2E_TRAINING_IMAGE=$training_ref
export COACH_E2E_NODE_SELECTOR=coach.dev/pool=training
export COACH_E2E_OPERATOR_NS=coach
export COACH_E2E_COACH_CLI=$work/coach
(cd e2e/realpods && python3 -m pytest -p no:cacheprovider -v "$@")
