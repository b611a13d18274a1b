#!/usr/bin/env bash
# The example training programs, run by hand as the operator would run their replicas: 3 processes
# on this host with MASTER_ADDR=127.0.0.1, a free MASTER_PORT, WORLD_SIZE=3 and RANK=0/1/2.
#   1. examples/pytorch/ddp_train.py (DDP, gloo): every rank exits 0, prints a coach-result line with
#      status=ok and accuracy >= 0.95, and all three params_checksum values agree.
#   2. examples/xgboost/xgb_train.py (Rabit): the same with accuracy >= 0.93 and model_checksum.
#   3. ddp_train.py --fail-rank 1 --exit-code 7: rank 1 exits 7, the others exit non-zero, promptly.
# Torch and XGBoost must be importable by /usr/bin/python3; without one, its part is skipped (the
# whole suite without torch), and under CI=true the suite fails instead. Takes about 20 s on 2 cores.
set -euo pipefail
# shellcheck source=tools/suites/lib.sh
source "$(dirname "$(readlink -f "$0")")/lib.sh"
suite_init examples_direct
PY=/usr/bin/python3
WORLD=3

# have MODULE PACKAGE: true if importable; false (a skip) when not, except under CI=true: a failure.
have() {
  "$PY" -c "import $1" 2>/dev/null && return 0
  [[ "${CI:-}" == "true" ]] && fail "$PY cannot import $1 (install $2; required under CI=true)"
  say "SKIP: $PY cannot import $1 (install $2)"
  return 1
}

suite_case "torch and xgboost importable"
have "torch, torch.distributed" python3-torch || exit 0
have_xgb=1
have xgboost python3-xgboost || have_xgb=0

WORK=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$WORK"
}
suite_on_exit cleanup
export GLOO_SOCKET_IFNAME=lo  # one host: keep gloo on loopback whatever the hostname resolves to
export PYTHONUNBUFFERED=1
unset LOCAL_RANK LOCAL_WORLD_SIZE PET_NNODES PET_NODE_RANK PET_NPROC_PER_NODE

free_port() {
  "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# run_world TAG PROGRAM ARGS...: starts WORLD ranks, waits for all; rank r's output in
# $WORK/TAG.r.log and its exit status in $WORK/TAG.r.rc.
run_world() {
  local tag=$1 port rank i
  shift
  port=$(free_port)
  pids=()
  for ((rank = 0; rank < WORLD; rank++)); do
    MASTER_ADDR=127.0.0.1 MASTER_PORT=$port WORLD_SIZE=$WORLD RANK=$rank \
      timeout 90 "$PY" "$@" >"$WORK/$tag.$rank.log" 2>&1 &
    pids+=($!)
  done
  for ((i = 0; i < WORLD; i++)); do
    local rc=0
    wait "${pids[$i]}" || rc=$?
    echo "$rc" >"$WORK/$tag.$i.rc"
  done
  pids=()
}

show_logs() {  # show_logs TAG: the tail of every rank's log, on stderr
  local rank
  for ((rank = 0; rank < WORLD; rank++)); do
    echo "--- $1 rank $rank (exit $(cat "$WORK/$1.$rank.rc")):" >&2
    grep -v '^coach-metric ' "$WORK/$1.$rank.log" | tail -n 15 >&2
  done
}

# field LINE KEY: the value of KEY=... in a coach-result line.
field() {
  local kv
  for kv in $1; do
    if [[ "$kv" == "$2="* ]]; then echo "${kv#*=}"; return 0; fi
  done
  return 1
}

# check_success TAG CHECKSUM_KEY MIN_ACCURACY
check_success() {
  local tag=$1 key=$2 min=$3 rank line sum first=""
  for ((rank = 0; rank < WORLD; rank++)); do
    line=$(grep '^coach-result ' "$WORK/$tag.$rank.log" | tail -n 1 || true)
    if [[ "$(cat "$WORK/$tag.$rank.rc")" != 0 || -z "$line" ]]; then
      show_logs "$tag"
      fail "$tag rank $rank exited $(cat "$WORK/$tag.$rank.rc") with result '${line}'"
    fi
    if [[ "$(field "$line" rank)" != "$rank" || "$(field "$line" world_size)" != "$WORLD" ||
          "$(field "$line" status)" != ok ]]; then
      fail "$tag rank $rank reported '$line'"
    fi
    if ! "$PY" -c 'import sys; sys.exit(0 if float(sys.argv[1]) >= float(sys.argv[2]) else 1)' \
        "$(field "$line" accuracy)" "$min"; then
      fail "$tag rank $rank accuracy below $min: '$line'"
    fi
    sum=$(field "$line" "$key")
    if [[ -z "$first" ]]; then
      first=$sum
    elif [[ "$sum" != "$first" ]]; then
      fail "$tag rank $rank $key=$sum differs from rank 0's $first"
    fi
  done
  if ! grep -q '^coach-metric name=[a-z_]* value=[-0-9.e+na]* step=[0-9]*$' "$WORK/$tag.0.log"; then
    fail "$tag rank 0 printed no well-formed coach-metric line"
  fi
  say "ok: $tag: $WORLD ranks, status=ok, $key=$first, $(field "$line" accuracy) accuracy"
}

suite_case "DDP, $WORLD processes"
run_world ddp examples/pytorch/ddp_train.py --epochs 6
check_success ddp params_checksum 0.95

if ((have_xgb)); then
  suite_case "XGBoost (Rabit), $WORLD processes"
  run_world xgb examples/xgboost/xgb_train.py --rounds 60
  check_success xgb model_checksum 0.93
fi

suite_case "DDP with --fail-rank 1 --exit-code 7"
t0=$SECONDS
run_world fail examples/pytorch/ddp_train.py --epochs 3 --fail-rank 1 --exit-code 7
for ((rank = 0; rank < WORLD; rank++)); do
  rc=$(cat "$WORK/fail.$rank.rc")
  if [[ $rank == 1 && "$rc" != 7 ]] || [[ $rank != 1 && ("$rc" == 0 || "$rc" == 124) ]]; then
    show_logs fail
    fail "failing run: rank $rank exited $rc (want 7 on rank 1, non-zero and no timeout elsewhere)"
  fi
done
if grep -q '^coach-result ' "$WORK"/fail.*.log; then
  fail "failing run printed a coach-result line"
fi
say "ok: failing run: rank 1 exited 7, peers exited non-zero in $((SECONDS - t0)) s"
