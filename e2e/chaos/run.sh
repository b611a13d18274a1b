#!/usr/bin/env bash
# Chaos suites of coach-operator --backend=kube on a real control plane (e2e/chaos/README.md):
# operator SIGKILLs, kube-apiserver restarts with etcd compacted, a fault-injecting proxy.
# Each prints a table of counts; a wrong count fails the suite. Sizes come from COACH_CHAOS_*
# (defaults: 200 jobs and 20 kills, 10% faults on 30 jobs: see the README for why the
# proxy suite is smaller and for the full figures). COACH_CHAOS_SUITES picks suites
# (default "kills apiserver proxy"). Outside CI a machine without the testenv binaries skips.
# make test runs it as tools/suites/chaos_kube.sh.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit

fail() { echo "chaos_kube: FAIL: $*" >&2; exit 1; }

if ! BIN=$(tools/testenv/testenv bin 2>/dev/null) || [[ ! -x $BIN/kube-apiserver ]]; then
  [[ ${CI:-} == true ]] && fail "the testenv binaries are not built (tools/testenv/testenv build)"
  echo "chaos_kube: SKIP: the testenv binaries are not built"
  exit 0
fi

bazel build //operator:coach-operator >/tmp/chaos_kube_build.$$.log 2>&1 || {
  tail -n 30 /tmp/chaos_kube_build.$$.log >&2
  rm -f /tmp/chaos_kube_build.$$.log
  fail "bazel build //operator:coach-operator"
}
rm -f /tmp/chaos_kube_build.$$.log
# A private copy: every restart of the run starts the same binary, whatever builds meanwhile.
work=$(mktemp -d /tmp/coach-chaos-bin.XXXXXX)
trap 'rm -rf "$work"' EXIT
cp "$(bazel info bazel-bin 2>/dev/null)/operator/coach-operator" "$work/coach-operator" ||
  fail "cannot find the coach-operator binary"

started=$SECONDS
status=0
for suite in ${COACH_CHAOS_SUITES:-kills apiserver proxy}; do
  case $suite in
    kills) size="${COACH_CHAOS_JOBS:-200} jobs, ${COACH_CHAOS_KILLS:-20} operator SIGKILLs" ;;
    apiserver)
      size="${COACH_CHAOS_JOBS:-200} jobs, ${COACH_CHAOS_APISERVER_RESTARTS:-2} restarts" ;;
    proxy) size="${COACH_CHAOS_PROXY_JOBS:-30} jobs, fault rate ${COACH_CHAOS_FAULT_RATE:-0.10}" ;;
    *) size="" ;;
  esac
  echo "== chaos_kube: $suite ($size; load $(cut -d' ' -f1-3 /proc/loadavg))"
  /usr/bin/python3 e2e/chaos/chaos.py "$suite" --operator "$work/coach-operator" || status=1
done
echo "chaos_kube: $([[ $status == 0 ]] && echo PASS || echo FAIL) in $((SECONDS - started)) s"
exit "$status"
