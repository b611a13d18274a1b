#!/usr/bin/env bash
# Runs binding_test.py (pytest) from the runfiles tree, its JUnit report where Bazel collects it.
set -euo pipefail
cd "${TEST_SRCDIR:?run by bazel test}/${TEST_WORKSPACE:?}/integrations/mlflow/python"
args=(-q -p no:cacheprovider binding_test.py)
[[ -n "${XML_OUTPUT_FILE:-}" ]] && args+=("--junitxml=$XML_OUTPUT_FILE")
exec /usr/bin/python3 -m pytest "${args[@]}"
