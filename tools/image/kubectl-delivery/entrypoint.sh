#!/bin/sh
# coach's kubectl-delivery, the MPIJob launcher's init container (what upstream's
# mpioperator/kubectl-delivery does): copy kubectl to $TARGET_DIR, where the launcher's
# kubexec.sh runs it from, then wait until every worker pod named in the hostfile is Running, so
# that mpirun's first `kubectl exec` finds a container to exec into.
#
# Env (set by the operator): TARGET_DIR, NAMESPACE. Optional: HOSTFILE (default
# /etc/mpi/hostfile), POLL_SECONDS (default 1).
set -eu
: "${TARGET_DIR:?TARGET_DIR: the folder to copy kubectl into}"
: "${NAMESPACE:?NAMESPACE: the job namespace}"
hostfile=${HOSTFILE:-/etc/mpi/hostfile}
poll=${POLL_SECONDS:-1}

cp /bin/kubectl "$TARGET_DIR/kubectl.tmp"
chmod 0755 "$TARGET_DIR/kubectl.tmp"
mv "$TARGET_DIR/kubectl.tmp" "$TARGET_DIR/kubectl"
echo "kubectl-delivery: kubectl copied to $TARGET_DIR"

# Hostfile lines are "<pod> slots=N"; a GPU launcher lists itself first, and waiting for the pod
# this init container belongs to would never end.
self=$(hostname)
pods=""
count=0
while read -r host _; do
  case $host in "" | "#"*) continue ;; esac
  [ "$host" = "$self" ] && continue
  pods="$pods $host"
  count=$((count + 1))
done <"$hostfile"
[ "$count" -gt 0 ] || { echo "kubectl-delivery: no worker in $hostfile"; exit 0; }
echo "kubectl-delivery: waiting for $count worker pod(s) to be Running:$pods"

started=$(date +%s)
last_report=$started
while :; do
  # One request for all of them; pods not created yet are simply absent.
  # shellcheck disable=SC2086 # $pods is a list of pod names (DNS-1123 labels, no blanks)
  running=$(kubectl get pods -n "$NAMESPACE" --ignore-not-found \
    -o custom-columns=PHASE:.status.phase --no-headers $pods 2>/dev/null |
    grep -c '^Running$' || true)
  if [ "$running" -ge "$count" ]; then
    echo "kubectl-delivery: all $count worker pod(s) Running after $(($(date +%s) - started)) s"
    exit 0
  fi
  now=$(date +%s)
  if [ $((now - last_report)) -ge 30 ]; then
    echo "kubectl-delivery: $running of $count worker pod(s) Running after $((now - started)) s"
    last_report=$now
  fi
  sleep "$poll"
done
