#!/usr/bin/env bash
# The upstream Kubeflow Training Python SDK (`kubeflow-training`, PyPI) for coach's compatibility suite
# (e2e/upstream_sdk, run by tools/suites/upstream_sdk.sh): a pinned SDK and pytest in a virtualenv.
#
#   tools/upstream_sdk_env.sh install     idempotent: create the venv, pip install the pinned packages
#   tools/upstream_sdk_env.sh python      print the venv's python (exit 1 when not installed)
#
# The venv: ${COACH_UPSTREAM_SDK_VENV:-$HOME/.cache/coach/upstream-sdk-venv}, made from /usr/bin/python3
# WITHOUT system site packages, so the SDK sees exactly the versions pinned here, as a user's fresh venv would.
set -euo pipefail

SDK_VERSION="1.9.4"
# kubeflow-training 1.9.4 declares kubernetes>=27.2.0,<36; pinned to what pip resolves today so that a new
# kubernetes client release cannot change the suite's result without a commit here.
PINS=("kubeflow-training==$SDK_VERSION" "kubernetes==35.0.0" "pytest==9.2.0")
VENV="${COACH_UPSTREAM_SDK_VENV:-${HOME:?HOME must be set}/.cache/coach/upstream-sdk-venv}"
PY="$VENV/bin/python"

# Prints "<kubeflow-training> <kubernetes> <pytest>" versions; fails when the venv or a package is missing.
installed_versions() {
  [[ -x "$PY" ]] || return 1
  "$PY" - <<'PY' 2>/dev/null
import importlib.metadata as m
import kubeflow.training  # noqa: F401  (importable, not only listed)
print(m.version("kubeflow-training"), m.version("kubernetes"), m.version("pytest"))
PY
}

wanted_versions() {
  local p out=()
  for p in "${PINS[@]}"; do out+=("${p#*==}"); done
  echo "${out[*]}"
}

cmd_install() {
  if [[ "$(installed_versions || true)" == "$(wanted_versions)" ]]; then
    return 0
  fi
  echo "upstream_sdk_env: installing ${PINS[*]} into $VENV" >&2
  mkdir -p "$(dirname "$VENV")"
  [[ -x "$PY" ]] || /usr/bin/python3 -m venv "$VENV"
  "$PY" -m pip install -q --disable-pip-version-check "${PINS[@]}" >&2
  [[ "$(installed_versions)" == "$(wanted_versions)" ]]
}

cmd_python() {
  [[ "$(installed_versions || true)" == "$(wanted_versions)" ]] ||
    { echo "upstream_sdk_env: not installed; run $0 install" >&2; exit 1; }
  echo "$PY"
}

case "${1:-}" in
  install) cmd_install ;;
  python) cmd_python ;;
  *) sed -n '2,9p' "$0" >&2; exit 2 ;;
esac
