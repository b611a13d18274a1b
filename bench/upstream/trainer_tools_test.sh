#!/usr/bin/env bash
# Runs bench/upstream/trainer_tools_test.py (unittest) from the test's runfiles.
set -euo pipefail
cd "${TEST_SRCDIR:-$(dirname "$0")/../..}/${TEST_WORKSPACE:-coach}"
exec /usr/bin/python3 bench/upstream/trainer_tools_test.py -v
