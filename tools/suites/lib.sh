# shellcheck shell=bash
# What every suite of tools/suites shares. A suite is a Bazel sh_test (tools/suites/BUILD.bazel)
# that sources this file and calls `suite_init NAME` first. It then works in the source tree
# (the suites check the tree, build images from it and start real components beside it), takes
# the binaries it runs from its runfiles (`suite_bin`), never from a Bazel run of its own, and
# reports each of its checks as a test case:
#
#   suite_case "helm install"     # ends the case before it (passed) and starts this one
#   fail "what went wrong"        # fails the case running now and ends the suite (exit 1)
#   suite_case_failed "why"       # fails the case running now; the suite goes on (and fails)
#   skip "why"                    # a missing component: a failure under CI=true, else a skip
#   suite_on_exit cmd args...     # clean-up, run when the suite ends (last registered first),
#                                 # in the suite's shell (so it can wait for the processes it
#                                 # stops), with the suite's exit status in SUITE_RC; never `exit`
#   suite_add_report FILE         # the JUnit report of a runner inside the suite (pytest, gtest):
#                                 # its cases are counted as this suite's
#   suite_report_file NAME        # a path for such a report, kept until the suite's is written
#
# The report goes to $XML_OUTPUT_FILE, which `tools/run_tests` counts case by case. Run one suite
# with `bazel test //tools/suites:NAME`; `COACH_TEST_FULL=1` (tools/run_tests --full) asks the
# suites for their longest runs, the ones whose figures bench/README.md keeps.

suite_init() {
  SUITE=$1
  SUITE_STARTED=$SECONDS
  SUITE_CASES=$(mktemp "/tmp/coach-suite-$SUITE.XXXXXX")
  SUITE_REPORTS=()
  SUITE_REPORT_DIR=$(mktemp -d "/tmp/coach-suite-$SUITE-reports.XXXXXX")
  SUITE_EXIT_HOOKS=()
  SUITE_CASE=""
  SUITE_CASE_STARTED=$SECONDS
  SUITE_CASE_FAILURE=""
  # Bazel points TMPDIR at the test's own deep folder; sockets of the components the suites start
  # (containerd, etcd) must fit the 108 bytes of a unix socket path.
  export TMPDIR=/tmp
  # Bazel gives a test /bin:/usr/bin only; the suites need the system tools (chroot, iptables),
  # Go where this machine's image installs it, and Debian's python3 for `python3`.
  export PATH="/usr/local/go/bin:$HOME/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
  SUITE_ROOT=$(suite_source_root) || { echo "$SUITE: cannot find the source tree" >&2; exit 1; }
  cd "$SUITE_ROOT" || exit 1
  export COACH_SHARED_DIR="${COACH_SHARED_DIR:-$(cd .. && pwd)/shared}"
  trap suite_finish EXIT
}

# The checkout: the suites read it whole (lint) and build from it (images), so they work there
# rather than in the runfiles tree, whose files are links into it.
suite_source_root() {
  local self
  self=$(readlink -f "${BASH_SOURCE[0]}") || return 1
  (cd "$(dirname "$self")/../.." && pwd)
}

say() { echo "$SUITE: $*"; }

suite_full() { [[ ${COACH_TEST_FULL:-0} == 1 ]]; }

# The suite's runfiles: what Bazel built for it, laid out as bazel-bin is.
suite_runfiles() {
  [[ -n ${TEST_SRCDIR:-} ]] ||
    fail "run this suite through Bazel (bazel test //tools/suites:$SUITE), which builds what it runs"
  echo "$TEST_SRCDIR/${TEST_WORKSPACE:-coach}"
}

# suite_bin PATH: a binary of this tree by its path under bazel-bin (operator/coach-operator).
# Call it as `x=$(suite_bin ...) || exit 1`.
suite_bin() {
  local root
  root=$(suite_runfiles) || exit 1
  [[ -x $root/$1 ]] || fail "$1 is not in the suite's runfiles (add it to data in tools/suites/BUILD.bazel)"
  readlink -f "$root/$1"
}

suite_case() {
  suite_end_case passed
  SUITE_CASE=$1
  SUITE_CASE_STARTED=$SECONDS
  say "case: $1"
}

# suite_end_case STATUS [MESSAGE]: records the case running now, if any; a case that
# suite_case_failed marked stays failed.
suite_end_case() {
  [[ -n $SUITE_CASE ]] || return 0
  local status=$1 message=${2:-}
  if [[ -n $SUITE_CASE_FAILURE ]]; then
    status=failed
    message="$SUITE_CASE_FAILURE${message:+; $message}"
  fi
  message=${message//$'\t'/ }
  printf '%s\t%s\t%s\t%s\n' "$status" "$SUITE_CASE" "$((SECONDS - SUITE_CASE_STARTED))" \
    "${message//$'\n'/ }" >>"$SUITE_CASES"
  SUITE_CASE=""
  SUITE_CASE_FAILURE=""
}

suite_case_failed() {
  echo "$SUITE: FAIL: $*" >&2
  SUITE_CASE_FAILURE="${SUITE_CASE_FAILURE:+$SUITE_CASE_FAILURE; }$*"
}

fail() {
  echo "$SUITE: FAIL: $*" >&2
  [[ -n $SUITE_CASE ]] || SUITE_CASE=setup
  suite_end_case failed "$*"
  exit 1
}

skip() {
  [[ ${CI:-} == true ]] && fail "$* (CI=true: a missing component is a failure)"
  echo "$SUITE: SKIP: $*"
  [[ -n $SUITE_CASE ]] || SUITE_CASE=setup
  suite_end_case skipped "$*"
  exit 0
}

suite_on_exit() { SUITE_EXIT_HOOKS+=("$(printf '%q ' "$@")"); }

suite_add_report() { SUITE_REPORTS+=("$1"); }

suite_report_file() { echo "$SUITE_REPORT_DIR/$1"; }

suite_finish() {
  local rc=$? i
  trap - EXIT
  if ((rc == 0)); then
    suite_end_case passed
  else
    suite_end_case failed "the suite exited with status $rc"
  fi
  # shellcheck disable=SC2034  # read by the suites' clean-up hooks
  SUITE_RC=$rc
  for ((i = ${#SUITE_EXIT_HOOKS[@]} - 1; i >= 0; i--)); do
    eval "${SUITE_EXIT_HOOKS[i]}" || true
  done
  /usr/bin/python3 "$SUITE_ROOT/tools/suites/junit_report.py" "$SUITE" "$SUITE_CASES" \
    "${XML_OUTPUT_FILE:-}" "${SUITE_REPORTS[@]}" || rc=1
  rm -rf "$SUITE_CASES" "$SUITE_REPORT_DIR"
  say "$( ((rc == 0)) && echo PASS || echo FAIL) in $((SECONDS - SUITE_STARTED)) s"
  exit "$rc"
}

# The test control plane's binaries (tools/testenv/testenv build: built from their Go modules once,
# then cached): sets TESTENV_BIN to their folder. Not in a command substitution: it may skip.
suite_testenv_build() {
  command -v go >/dev/null || skip "go is not installed (tools/testenv builds the control plane with it)"
  local log
  log=$(mktemp)
  if ! tools/testenv/testenv build >"$log" 2>&1; then
    tail -n 40 "$log" >&2
    rm -f "$log"
    fail "tools/testenv/testenv build failed"
  fi
  rm -f "$log"
  # shellcheck disable=SC2034  # read by the suites
  TESTENV_BIN=$(tools/testenv/testenv bin) || fail "tools/testenv/testenv bin"
}

# Waits until CRDs are Established: `suite_crds_established KUBECTL SECONDS NAME...` (`crd/<name>`, or `--all` for
# every CRD), KUBECTL a command or function taking kubectl's arguments. `kubectl wait
# --for=condition=Established` fails at once, rather than waiting, on a CRD so new that its
# status has no conditions yet ("status.conditions accessor error").
suite_crds_established() {
  local kubectl=$1 deadline=$((SECONDS + $2)) crd
  local established='jsonpath={.status.conditions[?(@.type=="Established")].status}'
  shift 2
  local crds=("$@")
  if [[ ${crds[0]:-} == --all ]]; then
    mapfile -t crds < <("$kubectl" get crd -o name) || return 1
  fi
  for crd in "${crds[@]}"; do
    until [[ $("$kubectl" get "$crd" -o "$established" 2>/dev/null) == True ]]; do
      ((SECONDS < deadline)) || return 1
      sleep 0.2
    done
  done
}

# One real kubelet node per machine (fixed host paths, iptables chains): the suites that bring one
# up take turns here, for as long as the suite runs.
suite_real_node_lock() {
  exec 7>/tmp/coach-testenv-realnode-suite.lock
  flock -w 1200 7 || fail "another real-node suite held the lock for 20 min"
}

# coach's admission webhooks registered as the chart registers them (`helm template`), but called
# by the API server at https://localhost:PORT (tools/testenv/coach_webhooks.py), for an operator
# that runs on this host: `suite_coach_webhooks KUBECTL HELM PORT WORKDIR`, KUBECTL a command or
# function taking kubectl's arguments. Sets COACH_WEBHOOK_FLAGS, the operator's flags that serve them
# (its certificate made in the Secret coach-system/coach-webhook-cert, its CA written into the
# configurations' caBundle).
suite_coach_webhooks() {
  local kubectl=$1 helm=$2 port=$3 work=$4
  "$kubectl" create namespace coach-system >/dev/null || return 1
  "$helm" template coach charts/coach -n coach-system --show-only templates/webhook.yaml \
    >"$work/webhook-chart.yaml" 2>"$work/webhook-chart.log" || { cat "$work/webhook-chart.log" >&2; return 1; }
  /usr/bin/python3 tools/testenv/coach_webhooks.py "$work/webhook-chart.yaml" "$port" \
    >"$work/webhooks.json" || return 1
  "$kubectl" apply -f "$work/webhooks.json" >/dev/null || return 1
  # shellcheck disable=SC2034  # read by the suites
  COACH_WEBHOOK_FLAGS=(--webhook-listen="127.0.0.1:$port" --webhook-secret=coach-system/coach-webhook-cert
    --webhook-extra-names=localhost --webhook-mutating-configuration=coach-trainer
    --webhook-validating-configuration=coach-trainer)
}

# The start of a suite that runs the operator against an add-on on the test control plane
# (tools/testenv/kueue, tools/testenv/karpenter), after the suite's own checks:
#
#   suite_kube_start ADDON SETUP NODES [OPERATOR_FLAG...]
#
# Makes WORK (removed at the end) and DIR=$WORK/kube, and registers the clean-up: the operator
# stopped; when the suite failed, the last lines of its log and of the add-on's; the add-on and the
# control plane down. Case "builds": the control plane's binaries (BIN), the add-on's
# (tools/testenv/ADDON build), coach-operator and coach from the runfiles into WORK. Case "control
# plane, ADDON and coach up": `tools/testenv/testenv up` (NODES kwok nodes; "" for its default),
# kubeconfig and K (kubectl on it), then SETUP, the suite's function (the add-on up, CRDs...), then
# coach-operator --backend=kube --api-auth=none on loopback (grpc_port, http_port, OP_PID) with
# OPERATOR_FLAG..., ready, and COACH (the CLI on it).
suite_kube_start() {
  SUITE_KUBE_ADDON=$1
  local setup=$2 nodes=$3 addon=tools/testenv/$1 title="${1^}" runfiles t0 up_env=()
  shift 3
  WORK=$(mktemp -d "/tmp/coach-$SUITE_KUBE_ADDON.XXXXXX")
  DIR=$WORK/kube
  OP_PID=""
  suite_on_exit suite_kube_cleanup

  suite_case "builds"
  t0=$SECONDS
  suite_testenv_build
  BIN=$TESTENV_BIN
  "$addon" build >"$WORK/$SUITE_KUBE_ADDON-build.log" 2>&1 ||
    { tail -n 30 "$WORK/$SUITE_KUBE_ADDON-build.log"; fail "$SUITE_KUBE_ADDON build"; }
  runfiles=$(suite_runfiles) || exit 1
  cp "$runfiles/operator/coach-operator" "$runfiles/sdk/cpp/cli/coach" "$WORK/" || fail "binaries from the runfiles"
  say "builds: $((SECONDS - t0)) s"

  suite_case "control plane, $title and coach up"
  t0=$SECONDS
  [[ -n $nodes ]] && up_env=("COACH_TESTENV_NODES=$nodes")
  kubeconfig=$(env "${up_env[@]}" tools/testenv/testenv up --dir "$DIR") || fail "testenv up"
  # shellcheck disable=SC2317  # called by the suite
  K() { "$BIN/kubectl" --kubeconfig "$kubeconfig" "$@"; }
  "$setup"
  read -r grpc_port http_port <<<"$(/usr/bin/python3 -c '
import socket; s=[socket.socket() for _ in range(2)]
[x.bind(("127.0.0.1", 0)) for x in s]; print(*[x.getsockname()[1] for x in s])')"
  mkdir -p "$WORK/state"
  # The suite calls the API as nobody in particular, on loopback (the default,
  # --api-auth=kubernetes, is e2e/kube/api_auth_test's subject).
  HOME=$WORK/state "$WORK/coach-operator" --backend=kube --kubeconfig="$kubeconfig" \
    --state-dir="$WORK/state" --listen="127.0.0.1:$grpc_port" --http-listen="127.0.0.1:$http_port" \
    --api-auth=none "$@" >"$WORK/operator.log" 2>&1 &
  OP_PID=$!
  local i
  for ((i = 0; i < 100; i++)); do
    curl -fsS -o /dev/null "http://127.0.0.1:$http_port/readyz" 2>/dev/null && break
    kill -0 "$OP_PID" 2>/dev/null || fail "coach-operator exited"
    sleep 0.3
  done
  curl -fsS -o /dev/null "http://127.0.0.1:$http_port/readyz" || fail "coach-operator not ready"
  say "control plane, $title and coach up: $((SECONDS - t0)) s"
  # shellcheck disable=SC2317  # called by the suite
  COACH() { "$WORK/coach" --server "127.0.0.1:$grpc_port" "$@"; }
}

# shellcheck disable=SC2317  # run by suite_finish, through suite_on_exit
suite_kube_cleanup() {
  local f
  [[ -n $OP_PID ]] && kill -TERM "$OP_PID" 2>/dev/null && wait "$OP_PID" 2>/dev/null
  if ((SUITE_RC != 0)); then
    for f in "$WORK/operator.log" "$DIR/logs/$SUITE_KUBE_ADDON.log"; do
      [[ -f $f ]] && { echo "---- last lines of $f" >&2; tail -n 25 "$f" >&2; }
    done
  fi
  "tools/testenv/$SUITE_KUBE_ADDON" down --dir "$DIR" >/dev/null 2>&1
  tools/testenv/testenv down --dir "$DIR" >/dev/null 2>&1
  rm -rf "$WORK"
}
