#!/usr/bin/env bash
# Runs bench/upstream's unittest files from the test's runfiles.
set -euo pipefail
cd "${TEST_SRCDIR:-$(dirname "$0")/../..}/${TEST_WORKSPACE:-coach}"
/usr/bin/python3 bench/upstream/trainer_tools_test.py -v
exec /usr/bin/python3 bench/upstream/webhook_config_test.py -v
