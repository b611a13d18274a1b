#!/usr/bin/env bash
# Real distributed check of coach-launch: a gloo all-reduce (launcher/testdata/allreduce.py)
# on 1 node x 2 processes, then on 2 "nodes" x 2 processes on this host (two launchers,
# PET_NNODES=2, PET_NODE_RANK=0/1, MASTER_ADDR=127.0.0.1). Every rank's result is checked.
# Torch must be importable by /usr/bin/python3; without it the suite skips, or fails under CI=true.
set -euo pipefail
# shellcheck source=tools/suites/lib.sh
source "$(dirname "$(readlink -f "$0")")/lib.sh"
suite_init launcher_torch

PY=/usr/bin/python3
"$PY" -c 'import torch, torch.distributed' 2>/dev/null || skip "$PY cannot import torch"

LAUNCH=$(suite_bin launcher/coach-launch) || exit 1
PROGRAM=launcher/testdata/allreduce.py
WORK=$(mktemp -d)
suite_on_exit rm -rf "$WORK"
export GLOO_SOCKET_IFNAME=lo  # one host: keep gloo on loopback whatever the hostname resolves to

free_port() {
  "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# check DIR WORLD: every rank 0..WORLD-1 reported the sum WORLD*(WORLD+1)/2.
check() {
  local dir=$1 world=$2 want rank line fields
  want=$((world * (world + 1) / 2))
  for ((rank = 0; rank < world; rank++)); do
    [[ -s "$dir/result.$rank" ]] || fail "rank $rank of $world wrote no result"
    read -r line <"$dir/result.$rank"
    # "<rank> <world> <local_rank> <sum>"
    read -ra fields <<<"$line"
    if [[ "${fields[0]}" != "$rank" || "${fields[1]}" != "$world" || "${fields[3]}" != "$want" ]]; then
      fail "rank $rank reported '$line', want sum $want of world $world"
    fi
  done
  say "ok: $world ranks, each all-reduced to $want"
}

suite_case "1 node x 2 processes"
mkdir -p "$WORK/one"
env -u PET_NNODES -u PET_NODE_RANK -u MASTER_ADDR -u MASTER_PORT \
  PET_NPROC_PER_NODE=2 PET_MASTER_PORT="$(free_port)" \
  timeout 120 "$LAUNCH" --grace-period=5s -- "$PY" "$PROGRAM" "$WORK/one"
check "$WORK/one" 2

suite_case "2 nodes x 2 processes"
mkdir -p "$WORK/two"
port=$(free_port)
pids=()
for node in 1 0; do  # the worker node first: it must wait for the master to come up
  env PET_NNODES=2 PET_NODE_RANK=$node PET_NPROC_PER_NODE=2 MASTER_ADDR=127.0.0.1 \
    MASTER_PORT="$port" timeout 120 "$LAUNCH" --peer-timeout=60s --grace-period=5s -- \
    "$PY" "$PROGRAM" "$WORK/two" &
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=$?; done
((status == 0)) || fail "a launcher exited $status"
check "$WORK/two" 4
