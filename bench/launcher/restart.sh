#!/usr/bin/env bash
# Prints the time from a rank's SIGKILL to every rank running again, and the exit code on the
# final failure, behind torchrun --max-restarts=1 (the torch venv's, tools/torch_env.sh) and behind
# coach-launch's in-place restart (figures, not a test). Usage: bench/launcher/restart.sh [--runs N]
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=bench/launcher/torch_venv.sh
. bench/launcher/torch_venv.sh
bin="$(opt_bin //launcher:coach-launch //bench/launcher:in_place_operator)"
exec /usr/bin/python3 bench/launcher/restart.py --launcher "$bin/launcher/coach-launch" \
  --operator "$bin/bench/launcher/in_place_operator" --python "$torch_python" \
  --torchrun "$torch_bin/torchrun" "$@"
