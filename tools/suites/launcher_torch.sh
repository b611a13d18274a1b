#!/usr/bin/env bash
# Real distributed check of coach-launch: a gloo all-reduce (launcher/testdata/allreduce.py)
# on 1 node x 2 processes, then on 2 "nodes" x 2 processes on this host (two launchers,
# PET_NNODES=2, PET_NODE_RANK=0/1, MASTER_ADDR=127.0.0.1). Every rank's result is checked.
# Torch must be importable by /usr/bin/python3; without it the suite skips, or fails under CI=true.
set -euo pipefail
cd "$(dirname "$0")/../.."

PY=/usr/bin/python3
if ! "$PY" -c 'import torch, torch.distributed' 2>/dev/null; then
  if [[ "${CI:-}" == "true" ]]; then
    echo "launcher_torch: FAIL: $PY cannot import torch (required under CI=true)" >&2
    exit 1
  fi
  echo "launcher_torch: SKIP: $PY cannot import torch" >&2
  exit 0
fi

bazel build //launcher:coach-launch >/dev/null 2>&1 || bazel build //launcher:coach-launch
LAUNCH="$(bazel info bazel-bin 2>/dev/null)/launcher/coach-launch"
PROGRAM=launcher/testdata/allreduce.py
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export GLOO_SOCKET_IFNAME=lo  # one host: keep gloo on loopback whatever the hostname resolves to

free_port() {
  "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# check DIR WORLD: every rank 0..WORLD-1 reported the sum WORLD*(WORLD+1)/2.
check() {
  local dir=$1 world=$2 want rank line fields
  want=$((world * (world + 1) / 2))
  for ((rank = 0; rank < world; rank++)); do
    if [[ ! -s "$dir/result.$rank" ]]; then
      echo "launcher_torch: FAIL: rank $rank of $world wrote no result" >&2
      return 1
    fi
    read -r line <"$dir/result.$rank"
    # "<rank> <world> <local_rank> <sum>"
    read -ra fields <<<"$line"
    if [[ "${fields[0]}" != "$rank" || "${fields[1]}" != "$world" || "${fields[3]}" != "$want" ]]; then
      echo "launcher_torch: FAIL: rank $rank reported '$line', want sum $want of world $world" >&2
      return 1
    fi
  done
  echo "launcher_torch: ok: $world ranks, each all-reduced to $want"
}

echo "launcher_torch: 1 node x 2 processes"
mkdir -p "$WORK/one"
env -u PET_NNODES -u PET_NODE_RANK -u MASTER_ADDR -u MASTER_PORT \
  PET_NPROC_PER_NODE=2 PET_MASTER_PORT="$(free_port)" \
  timeout 120 "$LAUNCH" --grace-period=5s -- "$PY" "$PROGRAM" "$WORK/one"
check "$WORK/one" 2

echo "launcher_torch: 2 nodes x 2 processes"
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
if ((status != 0)); then
  echo "launcher_torch: FAIL: a launcher exited $status" >&2
  exit 1
fi
check "$WORK/two" 4
echo "launcher_torch: PASS"
