#!/usr/bin/env bash
# Prints coach-launch's start-up overhead against the torch venv's torchrun (PyTorch 2.x,
# tools/torch_env.sh) on this machine (figures, not a test). Usage: bench/launcher/run.sh [--runs N]
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=bench/launcher/torch_venv.sh
. bench/launcher/torch_venv.sh
launcher="$(opt_bin //launcher:coach-launch)/launcher/coach-launch"
exec "$torch_python" bench/launcher/bench.py --launcher "$launcher" --python "$torch_python" \
  --torchrun "$torch_bin/torchrun" --program launcher/testdata/allreduce.py "$@"
