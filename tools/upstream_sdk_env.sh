#!/usr/bin/env bash
# The upstream Kubeflow Python SDKs (PyPI) for coach's compatibility suite (tools/suites/upstream_sdk.sh):
# each pinned, with pytest, in a virtualenv of its own, as a user's fresh venv would hold it.
#   training   kubeflow-training 1.9.4, the v1 SDK (TrainingClient)           e2e/upstream_sdk
#   kubeflow   kubeflow 0.5.0, Kubeflow Trainer v2's SDK (TrainerClient)      e2e/kubeflow_sdk
#
#   tools/upstream_sdk_env.sh install [SDK]   idempotent: create the venv(s), pip install the pins (both
#                                             SDKs when none is named)
#   tools/upstream_sdk_env.sh python [SDK]    print the venv's python (SDK default: training; exit 1 when
#                                             not installed)
#
# The venvs: ${COACH_UPSTREAM_SDK_VENV:-$HOME/.cache/coach/upstream-sdk-venv} (training) and
# ${COACH_KUBEFLOW_SDK_VENV:-$HOME/.cache/coach/kubeflow-sdk-venv} (kubeflow), made from /usr/bin/python3
# WITHOUT system site packages. Both SDKs install into the `kubeflow` Python namespace, hence two venvs.
set -euo pipefail

CACHE="${HOME:?HOME must be set}/.cache/coach"

# Per SDK: the venv, the module that must import, and the pins. kubeflow-training 1.9.4 declares
# kubernetes>=27.2.0,<36 and kubeflow 0.5.0 pulls kubernetes 35.0.0: pinned, so that a new client release
# cannot change the suite's result without a commit here.
sdk_venv() {
  case $1 in
    training) echo "${COACH_UPSTREAM_SDK_VENV:-$CACHE/upstream-sdk-venv}" ;;
    kubeflow) echo "${COACH_KUBEFLOW_SDK_VENV:-$CACHE/kubeflow-sdk-venv}" ;;
    *) echo "upstream_sdk_env: unknown SDK '$1' (training or kubeflow)" >&2; return 2 ;;
  esac
}
sdk_module() { [[ $1 == training ]] && echo kubeflow.training || echo kubeflow.trainer; }
sdk_pins() {
  case $1 in
    training) echo "kubeflow-training==1.9.4 kubernetes==35.0.0 pytest==9.2.0" ;;
    kubeflow) echo "kubeflow==0.5.0 kubeflow_trainer_api==2.3.0 kubernetes==35.0.0 pytest==9.2.0" ;;
  esac
}

# "name==version ..." as installed in the SDK's venv; fails when the venv or its module is missing.
installed_pins() {
  local py pins
  py="$(sdk_venv "$1")/bin/python"
  pins=$(sdk_pins "$1")
  [[ -x "$py" ]] || return 1
  # shellcheck disable=SC2086  # the pins: one word each
  "$py" - "$(sdk_module "$1")" $pins <<'PY' 2>/dev/null
import importlib, importlib.metadata as m, sys
importlib.import_module(sys.argv[1])  # importable, not only listed
print(" ".join(f"{p.split('==')[0]}=={m.version(p.split('==')[0])}" for p in sys.argv[2:]))
PY
}

cmd_install() {
  local sdk venv sdks=("$@")
  ((${#sdks[@]})) || sdks=(training kubeflow)
  for sdk in "${sdks[@]}"; do
    venv=$(sdk_venv "$sdk")
    [[ "$(installed_pins "$sdk" || true)" == "$(sdk_pins "$sdk")" ]] && continue
    echo "upstream_sdk_env: installing $(sdk_pins "$sdk") into $venv" >&2
    mkdir -p "$(dirname "$venv")"
    [[ -x "$venv/bin/python" ]] || /usr/bin/python3 -m venv "$venv"
    # shellcheck disable=SC2046  # the pins: one word each
    "$venv/bin/python" -m pip install -q --disable-pip-version-check $(sdk_pins "$sdk") >&2
    [[ "$(installed_pins "$sdk")" == "$(sdk_pins "$sdk")" ]]
  done
}

cmd_python() {
  local sdk=${1:-training}
  sdk_venv "$sdk" >/dev/null
  [[ "$(installed_pins "$sdk" || true)" == "$(sdk_pins "$sdk")" ]] ||
    { echo "upstream_sdk_env: $sdk not installed; run $0 install $sdk" >&2; exit 1; }
  echo "$(sdk_venv "$sdk")/bin/python"
}

case "${1:-}" in
  install) shift; cmd_install "$@" ;;
  python) shift; cmd_python "$@" ;;
  *) sed -n '2,13p' "$0" >&2; exit 2 ;;
esac
