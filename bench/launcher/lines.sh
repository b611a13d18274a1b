#!/usr/bin/env bash
# Prints output throughput (lines/s) and the lines kept whole through coach-launch and the torch
# venv's torchrun (tools/torch_env.sh; its default and --tee 3) against the same workers writing
# straight to a file or pipe (figures, not a test). Usage: bench/launcher/lines.sh [--lines N]
# [--workers W] [--runs R]
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=bench/launcher/torch_venv.sh
. bench/launcher/torch_venv.sh
bin="$(opt_bin //launcher:coach-launch //launcher/testdata:line_writer)"
exec /usr/bin/python3 bench/launcher/lines.py --launcher "$bin/launcher/coach-launch" \
  --writer "$bin/launcher/testdata/line_writer" --torchrun "$torch_bin/torchrun" "$@"
