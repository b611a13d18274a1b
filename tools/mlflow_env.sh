#!/usr/bin/env bash
# MLflow for coach's integration tests and benchmarks: a pinned MLflow in a virtualenv and
# loopback servers with a sqlite store and artifact serving.
#
#   tools/mlflow_env.sh install            idempotent: create the venv, pip install the pinned MLflow
#   tools/mlflow_env.sh python             print the venv's python (exit 1 when not installed)
#   tools/mlflow_env.sh version            print the pinned MLflow version of the line
#   tools/mlflow_env.sh start DIR [PORT]   start a server whose state lives in DIR (store, artifacts, log,
#                                          pid); PORT, else DIR/port from an earlier start, else a free port;
#                                          waits until /health answers and prints the URL.
#                                          COACH_MLFLOW_AUTH=1: basic auth (--app-name basic-auth), admin user
#                                          admin/password1234, auth db DIR/basic_auth.db.
#                                          COACH_MLFLOW_WORKERS=N: gunicorn workers (default 4).
#                                          COACH_MLFLOW_HOST=ADDR: listen there (default 127.0.0.1;
#                                          the real-pod suite uses the testenv's bridge address).
#   tools/mlflow_env.sh stop DIR           stop that server (its whole process group); fine when not running.
#
# Two release lines, chosen by COACH_MLFLOW_LINE: 2 (default, 2.22.5) and 3 (3.17.2). Each has its own
# venv, ${COACH_MLFLOW_VENV:-$HOME/.cache/coach/mlflow-venv} (line 2) or .../mlflow3-venv (line 3), made
# with --system-site-packages from /usr/bin/python3 so that Debian's PyTorch stays importable next to
# MLflow. `install` installs the chosen line; COACH_MLFLOW_LINE=all installs both.
set -euo pipefail

LINE="${COACH_MLFLOW_LINE:-2}"
if [[ "${1:-}" == install && "$LINE" == all ]]; then
  COACH_MLFLOW_LINE=2 "$0" install && COACH_MLFLOW_LINE=3 "$0" install
  exit
fi
case "$LINE" in
  2)
    MLFLOW_VERSION="2.22.5"
    # Constraints MLflow 2.22 needs but does not declare (SQLAlchemy 2.1 removed a pool class it imports).
    CONSTRAINTS=("sqlalchemy>=2.0,<2.1")
    CHECK="import flask_wtf; from sqlalchemy.pool import FallbackAsyncAdaptedQueuePool"
    VENV="${COACH_MLFLOW_VENV:-${HOME:?HOME must be set}/.cache/coach/mlflow-venv}"
    ;;
  3)
    MLFLOW_VERSION="3.17.2"
    CONSTRAINTS=()
    CHECK="import flask_wtf"
    VENV="${COACH_MLFLOW_VENV:-${HOME:?HOME must be set}/.cache/coach/mlflow3-venv}"
    ;;
  *) echo "mlflow_env: COACH_MLFLOW_LINE must be 2, 3 or all (install), got '$LINE'" >&2; exit 2 ;;
esac
PY="$VENV/bin/python"

installed_version() {
  [[ -x "$PY" ]] || return 1
  "$PY" - <<'PY' 2>/dev/null
import importlib.metadata as m
print(m.version("mlflow"))
PY
}

cmd_install() {
  if [[ "$(installed_version || true)" == "$MLFLOW_VERSION" ]] &&
    "$PY" -c "$CHECK" 2>/dev/null; then
    return 0
  fi
  echo "mlflow_env: installing mlflow $MLFLOW_VERSION into $VENV" >&2
  mkdir -p "$(dirname "$VENV")"
  [[ -x "$PY" ]] || /usr/bin/python3 -m venv --system-site-packages "$VENV"
  "$PY" -m pip install -q --disable-pip-version-check "mlflow[auth]==$MLFLOW_VERSION" "${CONSTRAINTS[@]+"${CONSTRAINTS[@]}"}" requests >&2
  [[ "$(installed_version)" == "$MLFLOW_VERSION" ]]
}

cmd_python() {
  [[ "$(installed_version || true)" == "$MLFLOW_VERSION" ]] || { echo "mlflow_env: not installed; run $0 install" >&2; exit 1; }
  echo "$PY"
}

free_port() {
  /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

cmd_start() {
  local dir="${1:?usage: start DIR [PORT]}" port="${2:-}"
  cmd_python >/dev/null
  mkdir -p "$dir/artifacts"
  dir="$(cd "$dir" && pwd)"
  if [[ -f "$dir/pid" ]] && kill -0 "$(cat "$dir/pid")" 2>/dev/null; then
    echo "mlflow_env: a server for $dir is already running" >&2; exit 1
  fi
  [[ -n "$port" ]] || { [[ -f "$dir/port" ]] && port="$(cat "$dir/port")"; } || true
  [[ -n "$port" ]] || port="$(free_port)"
  echo "$port" >"$dir/port"
  local host=${COACH_MLFLOW_HOST:-127.0.0.1}
  local args=(server --host "$host" --port "$port" --backend-store-uri "sqlite:///$dir/mlflow.db"
    --artifacts-destination "$dir/artifacts" --serve-artifacts --workers "${COACH_MLFLOW_WORKERS:-4}")
  if [[ "${COACH_MLFLOW_AUTH:-0}" == 1 ]]; then
    cat >"$dir/basic_auth.ini" <<INI
[mlflow]
default_permission = READ
database_uri = sqlite:///$dir/basic_auth.db
admin_username = admin
admin_password = password1234
authorization_function = mlflow.server.auth:authenticate_request_basic_auth
INI
    export MLFLOW_AUTH_CONFIG_PATH="$dir/basic_auth.ini"
    # CSRF protection wants a static key; one per server directory, kept across restarts.
    [[ -s "$dir/flask_secret" ]] || (umask 077; "$PY" -c 'import secrets; print(secrets.token_hex(32))' >"$dir/flask_secret")
    MLFLOW_FLASK_SERVER_SECRET_KEY="$(cat "$dir/flask_secret")"
    export MLFLOW_FLASK_SERVER_SECRET_KEY
    args+=(--app-name basic-auth)
  fi
  # Own session, so that stop can end gunicorn and its workers together.
  setsid "$VENV/bin/mlflow" "${args[@]}" >>"$dir/server.log" 2>&1 </dev/null &
  echo $! >"$dir/pid"
  local url="http://$host:$port"
  for _ in $(seq 1 600); do
    if curl -fsS -o /dev/null "$url/health" 2>/dev/null; then echo "$url"; return 0; fi
    kill -0 "$(cat "$dir/pid")" 2>/dev/null || { echo "mlflow_env: server exited; log:" >&2; tail -30 "$dir/server.log" >&2; exit 1; }
    sleep 0.1
  done
  echo "mlflow_env: server did not answer on $url within 60 s" >&2
  cmd_stop "$dir"; exit 1
}

cmd_stop() {
  local dir="${1:?usage: stop DIR}"
  [[ -f "$dir/pid" ]] || return 0
  local pid; pid="$(cat "$dir/pid")"
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 -- "-$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$pid" 2>/dev/null || true
  fi
  rm -f "$dir/pid"
}

case "${1:-}" in
  install) cmd_install ;;
  version) echo "$MLFLOW_VERSION" ;;
  python) cmd_python ;;
  start) shift; cmd_start "$@" ;;
  stop) shift; cmd_stop "$@" ;;
  *) sed -n '2,/^[^#]/{/^#/p}' "$0" >&2; exit 2 ;;
esac
