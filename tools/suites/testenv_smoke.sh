#!/usr/bin/env bash
# Smoke test of tools/testenv: a real control plane comes up, kwok pods finish with the exit code
# their annotations ask for, the garbage collector removes orphans, and everything goes down.
# Builds the binaries first when the cache lacks them (tens of minutes on a fresh machine).
# Outside CI a machine without Go skips; under CI=true every failure, build included, fails.
set -uo pipefail
# shellcheck source=tools/suites/lib.sh
source "$(dirname "$(readlink -f "$0")")/lib.sh"
suite_init testenv_smoke

TESTENV=tools/testenv/testenv

suite_case "build"
suite_testenv_build
BIN=$TESTENV_BIN

DIR=$(mktemp -d /tmp/coach-testenv-smoke.XXXXXX)
rmdir "$DIR"
cleanup() {
  if ((SUITE_RC != 0)) && [[ -d $DIR/logs ]]; then
    for f in "$DIR"/logs/*.log; do
      echo "---- last lines of $f" >&2
      tail -n 15 "$f" >&2
    done
  fi
  "$TESTENV" down --dir "$DIR" >/dev/null 2>&1 || true
}
suite_on_exit cleanup

suite_case "up"
up_start=$SECONDS
kubeconfig=$("$TESTENV" up --dir "$DIR") || fail "up failed"
say "up in $((SECONDS - up_start)) s: $kubeconfig"
[[ $kubeconfig == "$DIR/kubeconfig" && -f $kubeconfig ]] || fail "up printed '$kubeconfig'"
# A second up on a healthy DIR reuses it.
again=$("$TESTENV" up --dir "$DIR" 2>/dev/null) || fail "second up on a healthy DIR failed"
[[ $again == "$kubeconfig" ]] || fail "second up printed '$again'"

k() { "$BIN/kubectl" --kubeconfig "$kubeconfig" "$@"; }

suite_case "kwok nodes with GPUs"
[[ $(k get nodes -l type=kwok -o name | wc -l) -ge 1 ]] || fail "no kwok nodes"
gpus=$(k get node kwok-node-0 -o jsonpath='{.status.allocatable.nvidia\.com/gpu}')
[[ $gpus == 8 ]] || fail "kwok-node-0 allocatable nvidia.com/gpu is '$gpus', want 8"

pod() { # name restartPolicy exit-code run-seconds [extra annotation lines]
  cat <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: $1
  annotations:
    coach.test/exit-code: "$3"
    coach.test/run-seconds: "$4"
${5:-}
spec:
  restartPolicy: $2
  containers:
  - name: main
    image: coach.local/none:latest
    resources:
      limits:
        nvidia.com/gpu: "1"
EOF
}

suite_case "pods end as their annotations say"
pod fail-137 Never 137 2 | k apply -f - >/dev/null || fail "create fail-137"
pod succeed OnFailure 0 1 | k apply -f - >/dev/null || fail "create succeed"
pod crashloop OnFailure 1 1 '    coach.test/succeed-after-restarts: "2"' | k apply -f - >/dev/null ||
  fail "create crashloop"
cat <<EOF | k apply -f - >/dev/null || fail "create forever"
apiVersion: v1
kind: Pod
metadata:
  name: forever
spec:
  containers:
  - name: main
    image: coach.local/none:latest
EOF

# phase_of POD WANT SECONDS
wait_phase() {
  local deadline=$((SECONDS + $3)) phase=""
  while ((SECONDS < deadline)); do
    phase=$(k get pod "$1" -o jsonpath='{.status.phase}' 2>/dev/null)
    [[ $phase == "$2" ]] && return 0
    sleep 0.2
  done
  fail "pod $1 is '$phase' after $3 s, want $2"
}

# Its Running phase lasts 2 s and a loaded host can miss it: that it ran is read from its
# container's start and finish times below, not by polling for the transient phase.
wait_phase fail-137 Failed 30
# It must have run for its run-seconds (2 s; the timestamps have 1 s resolution) before exiting.
times=$(k get pod fail-137 -o jsonpath='{.status.containerStatuses[0].state.terminated.startedAt} {.status.containerStatuses[0].state.terminated.finishedAt}')
ran=$(($(date -d "${times#* }" +%s) - $(date -d "${times% *}" +%s)))
((ran >= 1 && ran <= 6)) || fail "fail-137 ran ${ran} s ($times), want about 2"
code=$(k get pod fail-137 -o jsonpath='{.status.containerStatuses[0].state.terminated.exitCode}')
[[ $code == 137 ]] || fail "fail-137 exit code '$code', want 137"
reason=$(k get pod fail-137 -o jsonpath='{.status.containerStatuses[0].state.terminated.reason}')
[[ $reason == Error ]] || fail "fail-137 reason '$reason', want Error"
say "fail-137 Failed with 137 after running ${ran} s ($times)"

wait_phase succeed Succeeded 30
code=$(k get pod succeed -o jsonpath='{.status.containerStatuses[0].state.terminated.exitCode}')
[[ $code == 0 ]] || fail "succeed exit code '$code', want 0"

# OnFailure, exit 1, succeed-after-restarts 2: two restarts, then Succeeded with restartCount 2.
wait_phase crashloop Succeeded 40
rc=$(k get pod crashloop -o jsonpath='{.status.containerStatuses[0].restartCount}')
last=$(k get pod crashloop -o jsonpath='{.status.containerStatuses[0].lastState.terminated.exitCode}')
[[ $rc == 2 && $last == 1 ]] || fail "crashloop restartCount '$rc' lastState exit '$last', want 2 and 1"

[[ $(k get pod forever -o jsonpath='{.status.phase}') == Running ]] || fail "forever is not Running"

suite_case "garbage collection"
# Garbage collection: a ConfigMap owned by a ConfigMap that no longer exists is removed.
k create configmap owner >/dev/null || fail "create owner"
uid=$(k get configmap owner -o jsonpath='{.metadata.uid}')
k delete configmap owner --wait=true >/dev/null || fail "delete owner"
cat <<EOF | k apply -f - >/dev/null || fail "create orphan"
apiVersion: v1
kind: ConfigMap
metadata:
  name: orphan
  ownerReferences:
  - apiVersion: v1
    kind: ConfigMap
    name: owner
    uid: $uid
data: {a: b}
EOF
deadline=$((SECONDS + 60))
while k get configmap orphan >/dev/null 2>&1; do
  ((SECONDS < deadline)) || fail "the garbage collector did not remove the orphan ConfigMap in 60 s"
  sleep 0.5
done
say "garbage collector removed the orphan"

suite_case "delete and down"
# Deleting a running pod removes it (kwok's delete stage).
k delete pod forever --wait=true --timeout=30s >/dev/null || fail "delete forever"

"$TESTENV" down --dir "$DIR" >/dev/null || fail "down failed"
[[ ! -e $DIR ]] || fail "down left $DIR"
