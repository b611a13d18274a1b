#!/usr/bin/env bash
# One version: VERSION is the source; charts/coach/Chart.yaml (version and appVersion, which Helm
# reads there) must repeat it, and the binaries must report it: coach-operator --version,
# coach --version, coach-launch --version, and `coach render` names the operator image of this
# version for the init containers it adds.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit
fail() { echo "version: FAIL: $*" >&2; exit 1; }

want=$(tr -d '[:space:]' <VERSION)
[[ $want =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] || fail "VERSION is not MAJOR.MINOR.PATCH: $want"
chart_version=$(sed -n 's/^version:[[:space:]]*"\{0,1\}\([^"[:space:]]*\)"\{0,1\}.*/\1/p' charts/coach/Chart.yaml)
app_version=$(sed -n 's/^appVersion:[[:space:]]*"\{0,1\}\([^"[:space:]]*\)"\{0,1\}.*/\1/p' charts/coach/Chart.yaml)
[[ $chart_version == "$want" ]] || fail "charts/coach/Chart.yaml version $chart_version, VERSION $want"
[[ $app_version == "$want" ]] || fail "charts/coach/Chart.yaml appVersion $app_version, VERSION $want"

bazel build //operator:coach-operator //sdk/cpp/cli:coach //launcher:coach-launch >/tmp/coach-version-build.log 2>&1 ||
  { tail -20 /tmp/coach-version-build.log; fail "bazel build"; }
bin=$(bazel info bazel-bin 2>/dev/null)
for pair in "operator/coach-operator:coach-operator" "sdk/cpp/cli/coach:coach" "launcher/coach-launch:coach-launch"; do
  path=${pair%%:*} name=${pair##*:}
  got=$("$bin/$path" --version 2>&1) || fail "$name --version exited non-zero: $got"
  [[ $got == "$name $want" ]] || fail "$name --version printed '$got', want '$name $want'"
done

manifest=$(mktemp /tmp/coach-version.XXXXXX.yaml)
trap 'rm -f "$manifest"' EXIT
cat >"$manifest" <<'YAML'
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: v, namespace: default, annotations: {coach.dev/launcher: "true"}}
spec:
  pytorchReplicaSpecs:
    Master: {replicas: 1, template: {spec: {containers: [{name: pytorch, image: train:1}]}}}
    Worker: {replicas: 1, template: {spec: {containers: [{name: pytorch, image: train:1}]}}}
YAML
images=$("$bin/sdk/cpp/cli/coach" render -f "$manifest" -o json | /usr/bin/python3 -c '
import json, sys
items = json.load(sys.stdin)["items"]
print("\n".join(sorted({c["image"] for o in items if o["kind"] == "Pod"
                        for c in o["spec"].get("initContainers", [])})))') || fail "coach render"
[[ $images == "ghcr.io/coach/coach-operator:$want" ]] ||
  fail "coach render's init container images: '$images', want ghcr.io/coach/coach-operator:$want"
echo "version: PASS ($want everywhere)"
