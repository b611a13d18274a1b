#!/usr/bin/env bash
# Runs bench/report_lib_test.py (unittest) from the test's runfiles.
set -euo pipefail
cd "${TEST_SRCDIR:-$(dirname "$0")/..}/${TEST_WORKSPACE:-coach}"
exec python3 bench/report_lib_test.py -v
