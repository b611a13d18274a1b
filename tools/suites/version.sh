#!/usr/bin/env bash
# One version: VERSION is the source; charts/coach/Chart.yaml (version and appVersion, which Helm
# reads there) must repeat it, and the binaries must report it: coach-operator --version,
# coach --version, coach-launch --version, and `coach render` names the operator image of this
# version for the init containers it adds.
set -uo pipefail
# shellcheck source=tools/suites/lib.sh
source "$(dirname "$(readlink -f "$0")")/lib.sh"
suite_init version

suite_case "VERSION and the chart"
want=$(tr -d '[:space:]' <VERSION)
[[ $want =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] || fail "VERSION is not MAJOR.MINOR.PATCH: $want"
chart_version=$(sed -n 's/^version:[[:space:]]*"\{0,1\}\([^"[:space:]]*\)"\{0,1\}.*/\1/p' charts/coach/Chart.yaml)
app_version=$(sed -n 's/^appVersion:[[:space:]]*"\{0,1\}\([^"[:space:]]*\)"\{0,1\}.*/\1/p' charts/coach/Chart.yaml)
[[ $chart_version == "$want" ]] || fail "charts/coach/Chart.yaml version $chart_version, VERSION $want"
[[ $app_version == "$want" ]] || fail "charts/coach/Chart.yaml appVersion $app_version, VERSION $want"

suite_case "every binary's --version"
bin=$(suite_runfiles) || exit 1
for pair in "operator/coach-operator:coach-operator" "sdk/cpp/cli/coach:coach" "launcher/coach-launch:coach-launch"; do
  path=${pair%%:*} name=${pair##*:}
  got=$("$bin/$path" --version 2>&1) || fail "$name --version exited non-zero: $got"
  [[ $got == "$name $want" ]] || fail "$name --version printed '$got', want '$name $want'"
done

suite_case "coach render's init container image"
manifest=$(mktemp /tmp/coach-version.XXXXXX.yaml)
suite_on_exit rm -f "$manifest"
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
say "$want everywhere"
