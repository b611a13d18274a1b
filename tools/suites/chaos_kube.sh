#!/usr/bin/env bash
# The Kubernetes backend's chaos suites (e2e/chaos/README.md): coach-operator --backend=kube on a
# real control plane under operator SIGKILLs, kube-apiserver restarts with etcd compacted, and a
# fault-injecting proxy. Each prints a table of counts; a wrong count fails its case. Sizes come
# from COACH_CHAOS_* (pass them with --test_env); COACH_CHAOS_SUITES picks suites (default
# "kills apiserver proxy").
set -uo pipefail
# shellcheck source=tools/suites/lib.sh
source "$(dirname "$(readlink -f "$0")")/lib.sh"
suite_init chaos_kube

suite_case "control plane build"
suite_testenv_build
# A private copy: every restart of the run starts the same binary, whatever builds meanwhile.
work=$(mktemp -d /tmp/coach-chaos-bin.XXXXXX)
suite_on_exit rm -rf "$work"
operator=$(suite_bin operator/coach-operator) || exit 1
cp "$operator" "$work/coach-operator" || fail "copy coach-operator"

for chaos in ${COACH_CHAOS_SUITES:-kills apiserver proxy}; do
  case $chaos in
    kills) size="${COACH_CHAOS_JOBS:-200} jobs, ${COACH_CHAOS_KILLS:-20} operator SIGKILLs" ;;
    apiserver)
      size="${COACH_CHAOS_JOBS:-200} jobs, ${COACH_CHAOS_APISERVER_RESTARTS:-2} restarts" ;;
    proxy) size="${COACH_CHAOS_PROXY_JOBS:-30} jobs, fault rate ${COACH_CHAOS_FAULT_RATE:-0.10}" ;;
    *) size="" ;;
  esac
  suite_case "$chaos"
  say "$chaos ($size; load $(cut -d' ' -f1-3 /proc/loadavg))"
  /usr/bin/python3 e2e/chaos/chaos.py "$chaos" --operator "$work/coach-operator" ||
    suite_case_failed "$chaos: a count is wrong (table above)"
done
