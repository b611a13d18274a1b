# shellcheck shell=bash
# Sourced by the scripts that run coach on the local backend of this machine (tools/demo,
# tools/gpu_check), from the repository root:
#
#   local_operator_build LOG       bazel build of the operator, the CLI, coach-launch and the shim
#   local_operator_start STATE_DIR [OPERATOR ARGS...]
#                                  starts coach-operator --backend=local on two free loopback ports
#                                  with STATE_DIR (its log in STATE_DIR/operator.log), exports
#                                  COACH_SERVER and COACH_STATE_DIR for the CLI, waits until /readyz
#                                  answers; returns 1 (the log printed) when it exits first.
#                                  Replicas inherit its PATH: set PATH for the call to give them one.
#   local_operator_stop            stops it (SIGTERM, then waits)
#
# Sets LOCAL_OPERATOR_BIN (bazel-bin) and LOCAL_OPERATOR_COACH (the CLI).

LOCAL_OPERATOR_BIN=$PWD/bazel-bin
# shellcheck disable=SC2034  # for the scripts that source this
LOCAL_OPERATOR_COACH=$LOCAL_OPERATOR_BIN/sdk/cpp/cli/coach
local_operator_pid=""

local_operator_build() {
  bazel build //operator:coach-operator //sdk/cpp/cli:coach //launcher:coach-launch \
    //operator/backend/local:coach-replica-shim >"$1" 2>&1 || { cat "$1"; return 1; }
}

local_operator_free_port() {
  /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

local_operator_start() {
  local state_dir=$1 grpc_port http_port
  shift
  grpc_port=$(local_operator_free_port)
  http_port=$(local_operator_free_port)
  export COACH_SERVER=127.0.0.1:$grpc_port
  # The CLI presents the token the operator makes in its state directory (<state>/api-token).
  export COACH_STATE_DIR=$state_dir
  "$LOCAL_OPERATOR_BIN/operator/coach-operator" --backend=local "$@" \
    --listen="127.0.0.1:$grpc_port" --http-listen="127.0.0.1:$http_port" --state-dir="$state_dir" \
    --shim="$LOCAL_OPERATOR_BIN/operator/backend/local/coach-replica-shim" >"$state_dir/operator.log" 2>&1 &
  local_operator_pid=$!
  for _ in $(seq 100); do
    curl -fsS "http://127.0.0.1:$http_port/readyz" >/dev/null 2>&1 && return 0
    if ! kill -0 "$local_operator_pid" 2>/dev/null; then
      echo "coach-operator exited:"
      cat "$state_dir/operator.log"
      return 1
    fi
    sleep 0.1
  done
  echo "coach-operator did not answer /readyz within 10 s; its log: $state_dir/operator.log"
  return 1
}

local_operator_stop() {
  [[ -n $local_operator_pid ]] || return 0
  kill -TERM "$local_operator_pid" 2>/dev/null && wait "$local_operator_pid" 2>/dev/null
  local_operator_pid=""
}
