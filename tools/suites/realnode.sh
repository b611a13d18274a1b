#!/usr/bin/env bash
# The testenv's real node (tools/testenv/testenv up --real-node): real containers next to the kwok
# nodes. Checks the node (Ready, label, taint), a busybox pod's logs and exec, two pods over the pod
# network, CoreDNS (a headless Service by its full and its short name, kubernetes.default), the API
# server's /version and an authenticated call through the kubernetes Service, that a second real
# node is refused, that a failed up and `down` leave nothing on the machine, and that the leftover
# check itself notices leftovers. Prints the timings (build, up, first pod Running).
# Needs root and the packages of tools/bootstrap. Outside CI a machine without them skips; under
# CI=true every missing component is a failure.
set -uo pipefail
# shellcheck source=tools/suites/lib.sh
source "$(dirname "$(readlink -f "$0")")/lib.sh"
suite_init realnode

TESTENV=tools/testenv/testenv

[[ $(id -u) == 0 ]] || skip "needs root (containerd, iptables, cgroups)"
for c in containerd runc ctr iptables gcc /usr/lib/cni/bridge /bin/busybox; do
  command -v "$c" >/dev/null || [[ -x $c ]] || skip "$c is missing (tools/bootstrap installs it)"
done

suite_case "build"
build_start=$SECONDS
suite_testenv_build
BIN=$TESTENV_BIN
build_s=$((SECONDS - build_start))
cold=$(sed -n 's/^seconds_/&/p' "$BIN/.complete" | tr '\n' ' ')
say "build: ${build_s} s now; the cache's own build took: ${cold:-unknown}"

suite_case "the machine is clean"
# One real node per machine: wait for another suite (or a hand-made real node) to finish.
suite_real_node_lock
deadline=$((SECONDS + 300))
while [[ -s /run/coach-testenv-realnode.owner ]]; do
  ((SECONDS < deadline)) ||
    fail "a real node is up in $(cat /run/coach-testenv-realnode.owner) for 5 min; down it or run $TESTENV real-node-clean"
  sleep 5
done
left=$("$TESTENV" real-node-check 2>&1) || fail "this machine is not clean before the test:
$left"

DIR=$(mktemp -d /tmp/coach-realnode.XXXXXX)
rmdir "$DIR"
OTHER=$(mktemp -d /tmp/coach-realnode-other.XXXXXX)
rmdir "$OTHER"
cleanup() {
  if ((SUITE_RC != 0)) && [[ -d $DIR/logs ]]; then
    for f in "$DIR"/logs/*.log; do
      echo "---- last lines of $f" >&2
      tail -n 15 "$f" >&2
    done
    k get pods -o wide >&2 2>/dev/null
  fi
  "$TESTENV" down --dir "$DIR" >/dev/null 2>&1 || true
  "$TESTENV" down --dir "$OTHER" >/dev/null 2>&1 || true
}
suite_on_exit cleanup

suite_case "a failed up leaves nothing behind"
# CoreDNS refuses an invalid upstream: the last step of up fails.
if COACH_TESTENV_DNS_UPSTREAM="not-an-address" "$TESTENV" up --dir "$DIR" --real-node >/dev/null 2>&1; then
  fail "up with a broken CoreDNS configuration succeeded"
fi
left=$("$TESTENV" real-node-check 2>&1) || fail "a failed up left behind:
$left"
"$TESTENV" down --dir "$DIR" >/dev/null || fail "down after a failed up"
say "a failed up cleaned up after itself"

suite_case "up"
up_start=$SECONDS
kubeconfig=$("$TESTENV" up --dir "$DIR" --real-node) || fail "up --real-node failed"
up_s=$((SECONDS - up_start))
say "up --real-node in ${up_s} s"
k() { "$BIN/kubectl" --kubeconfig "$kubeconfig" "$@"; }
# shellcheck disable=SC1091  # the testenv's env file, written by testenv up
source "$DIR/env"
NODE=$COACH_TESTENV_REAL_NODE
IMAGE=$COACH_TESTENV_BUSYBOX_IMAGE

suite_case "the node: Ready, labelled, tainted; the kwok nodes are still there"
[[ $(k get node "$NODE" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}') == True ]] ||
  fail "$NODE is not Ready"
labels=$(k get node "$NODE" -o jsonpath='{.metadata.labels.coach\.dev/real-node} {.metadata.labels.kubernetes\.io/hostname} {.metadata.labels.kubernetes\.io/os} {.metadata.labels.kubernetes\.io/arch}')
[[ $labels == "true $NODE linux amd64" ]] || fail "$NODE labels: '$labels'"
taints=$(k get node "$NODE" -o jsonpath='{range .spec.taints[*]}{.key}={.value}:{.effect} {end}')
[[ $taints == *"coach.dev/real-node=true:NoSchedule"* ]] || fail "$NODE taints: '$taints'"
[[ $(k get nodes -l type=kwok -o name | wc -l) -ge 1 ]] || fail "the kwok nodes are gone"
ip=$(k get node "$NODE" -o jsonpath='{.status.addresses[?(@.type=="InternalIP")].address}')
say "$NODE Ready at $ip, labels and taint as expected"

# pod NAME COMMAND [LABELS] [TOLERATE=yes]: a busybox pod pinned to the real node.
pod() {
  local tolerations='  tolerations: [{key: coach.dev/real-node, operator: Equal, value: "true", effect: NoSchedule}]'
  [[ ${4:-yes} == yes ]] || tolerations=""
  cat <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: $1
  labels: {${3:-}}
spec:
  nodeSelector: {kubernetes.io/hostname: $NODE}
$tolerations
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: $IMAGE
    imagePullPolicy: Never
    command: [sh, -c, '$2']
EOF
}
wait_running() {
  local deadline=$((SECONDS + $2)) phase=""
  while ((SECONDS < deadline)); do
    phase=$(k get pod "$1" -o jsonpath='{.status.phase}' 2>/dev/null)
    [[ $phase == Running ]] && return 0
    sleep 0.2
  done
  k describe pod "$1" | tail -20 >&2
  fail "pod $1 is '$phase' after $2 s, want Running"
}

suite_case "a pod without the toleration never lands on the real node"
pod intolerant 'sleep 1' "" no | k apply -f - >/dev/null || fail "create intolerant"

suite_case "busybox: runs, logs, exec"
first_start=$SECONDS
pod hello 'echo hello from the real node; exec sleep 3600' | k apply -f - >/dev/null || fail "create hello"
wait_running hello 90
first_s=$((SECONDS - first_start))
say "first pod Running ${first_s} s after it was created"
deadline=$((SECONDS + 20))
until [[ $(k logs hello 2>&1) == *"hello from the real node"* ]]; do
  ((SECONDS < deadline)) || fail "kubectl logs hello: '$(k logs hello 2>&1)'"
  sleep 0.5
done
# shellcheck disable=SC2016  # $(hostname) is the pod's, run by its sh
out=$(k exec hello -- sh -c 'echo exec:$(hostname)' 2>"$DIR.exec.err")
[[ $out == "exec:hello" ]] || fail "kubectl exec hello: '$out' $(cat "$DIR.exec.err")"
rm -f "$DIR.exec.err"
say "kubectl logs and exec work"
[[ -z $(k get pod intolerant -o jsonpath='{.spec.nodeName}') ]] || fail "a pod without the toleration was scheduled"

suite_case "two pods over the pod network, a headless Service, a ClusterIP Service"
# shellcheck disable=SC2016  # $(hostname) is the pod's, run by its sh
pod web 'mkdir -p /www && echo coach-web-$(hostname) >/www/index.html && exec httpd -f -p 8080 -h /www' 'app: web' |
  k apply -f - >/dev/null || fail "create web"
cat <<EOF | k apply -f - >/dev/null || fail "create the Services"
apiVersion: v1
kind: Service
metadata: {name: web-headless}
spec:
  clusterIP: None
  selector: {app: web}
  ports: [{name: http, port: 8080}]
---
apiVersion: v1
kind: Service
metadata: {name: web-svc}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: 8080}]
EOF
pod client 'exec sleep 3600' | k apply -f - >/dev/null || fail "create client"
wait_running web 60
wait_running client 60
web_ip=$(k get pod web -o jsonpath='{.status.podIP}')
client_ip=$(k get pod client -o jsonpath='{.status.podIP}')
[[ -n $web_ip && $web_ip != "$client_ip" ]] || fail "pod IPs: web '$web_ip' client '$client_ip'"

# in_client WHAT SECONDS COMMAND: retried until it succeeds (endpoints and DNS follow the pods).
# Debian's busybox-static 1.35 `wget -T` crashes (SIGSEGV): time out with `timeout` instead.
# The answer is the command's stdout: kubectl's own warnings (its exec stream's) go to stderr,
# which is shown only when the command keeps failing.
in_client() {
  local what=$1 secs=$2 deadline out err
  err=$(mktemp)
  deadline=$((SECONDS + secs))
  until out=$(k exec client -- sh -c "$3" 2>"$err"); do
    ((SECONDS < deadline)) || fail "$what: $out $(cat "$err")"
    sleep 1
  done
  rm -f "$err"
  printf '%s' "$out"
}
out=$(in_client "client -> web by pod IP" 30 "timeout 5 wget -qO- http://$web_ip:8080/") || exit 1
[[ $out == coach-web-web ]] || fail "client -> $web_ip:8080 answered '$out'"
say "pod $client_ip -> pod $web_ip:8080 over the pod network"
out=$(in_client "nslookup web-headless.default.svc.cluster.local" 30 \
  "nslookup web-headless.default.svc.cluster.local | grep -A1 '^Name:' | grep -q 'Address: $web_ip' && echo ok") || exit 1
out=$(in_client "wget http://web-headless:8080/ (search domains)" 30 "timeout 5 wget -qO- http://web-headless:8080/") || exit 1
[[ $out == coach-web-web ]] || fail "web-headless:8080 answered '$out'"
say "headless Service by full name (nslookup) and short name (wget) -> $web_ip"
out=$(in_client "wget http://web-svc/ (ClusterIP, kube-proxy)" 30 "timeout 5 wget -qO- http://web-svc/") || exit 1
[[ $out == coach-web-web ]] || fail "web-svc answered '$out'"
say "ClusterIP Service web-svc -> web through kube-proxy"
out=$(in_client "nslookup kubernetes.default" 30 "nslookup kubernetes.default.svc.cluster.local") || exit 1
[[ $out == *"Address: 10.96.0.1"* ]] || fail "kubernetes.default resolved to: $out"
# An in-cluster client over TLS: the testenv's static kubectl, mounted into a busybox pod. Not
# busybox's wget: its built-in TLS 1.2 client sends no signature_algorithms, which Go's TLS
# server refuses since Go 1.25 (SHA-1 off), and Kubernetes 1.36 is built with Go 1.26. kubectl
# also verifies the serving certificate for kubernetes.default against the pod's CA.
cat <<EOF | k apply -f - >/dev/null || fail "create kclient"
apiVersion: v1
kind: Pod
metadata: {name: kclient}
spec:
  nodeSelector: {kubernetes.io/hostname: $NODE}
  tolerations: [{key: coach.dev/real-node, operator: Equal, value: "true", effect: NoSchedule}]
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: $IMAGE
    imagePullPolicy: Never
    command: [sh, -c, 'exec sleep 3600']
    volumeMounts: [{name: kubectl, mountPath: /kubectl, readOnly: true}]
  volumes: [{name: kubectl, hostPath: {path: "$TESTENV_BIN/kubectl", type: File}}]
EOF
wait_running kclient 60
sa='/var/run/secrets/kubernetes.io/serviceaccount'
# in_kclient HOST PATH: GET PATH from https://HOST as the pod's ServiceAccount, retried for 30 s;
# prints the body (or the last error).
in_kclient() {
  local deadline=$((SECONDS + 30)) out
  until out=$(k exec kclient -- sh -c "/kubectl --server https://$1 --certificate-authority $sa/ca.crt \
      --token \"\$(cat $sa/token)\" get --raw $2" 2>&1); do
    ((SECONDS < deadline)) || { printf '%s' "$out"; return 1; }
    sleep 1
  done
  printf '%s' "$out"
}
version=$(in_kclient kubernetes.default /version) || fail "GET https://kubernetes.default/version: $version"
# The API server reports the release the testenv pins (stamped into the binaries at build time).
want=$("$TESTENV" version) || fail "$TESTENV version"
[[ ${version// /} == *"\"gitVersion\":\"$want\""* ]] || fail "/version through the kubernetes Service (want $want): $version"
# In-cluster credentials: the pod's ServiceAccount token is accepted (discovery needs authentication).
out=$(in_kclient kubernetes.default.svc /api) ||
  fail "GET /api with the pod's token: $out"
[[ ${out// /} == *'"kind":"APIVersions"'* ]] || fail "/api with the ServiceAccount token: $out"
say "kubernetes.default resolves to 10.96.0.1; /version and /api (ServiceAccount token) through the kubernetes Service"

suite_case "a second real node is refused at once, naming the DIR that holds it"
t=$SECONDS
if msg=$("$TESTENV" up --dir "$OTHER" --real-node 2>&1); then fail "a second up --real-node succeeded"; fi
[[ $msg == *"already up"*"$DIR"* ]] || fail "second up --real-node said: $msg"
((SECONDS - t <= 5)) || fail "the second up --real-node took $((SECONDS - t)) s to fail"
[[ ! -e $OTHER ]] || fail "the refused up created $OTHER"
if msg=$("$TESTENV" up --dir "$DIR" --real-node 2>&1); then fail "up --real-node on the same DIR succeeded"; fi
[[ $msg == *"already up"*"$DIR"* ]] || fail "up --real-node on the same DIR said: $msg"
say "a second up --real-node fails at once: ${msg#testenv: error: }" | cut -c1-200

suite_case "down leaves nothing behind"
down_start=$SECONDS
"$TESTENV" down --dir "$DIR" >/dev/null || fail "down failed"
down_s=$((SECONDS - down_start))
[[ ! -e $DIR ]] || fail "down left $DIR"
left=$("$TESTENV" real-node-check 2>&1) || fail "down left behind:
$left"
say "down in ${down_s} s; nothing left (containers, shims, mounts, bridge, veths, iptables, cgroups, host paths)"

suite_case "real-node-check notices leftovers, real-node-clean removes them"
# Planted: a chain, a cgroup, a file, the bridge.
iptables -w 5 -N KUBE-COACH-SELFTEST
mkdir -p /sys/fs/cgroup/pids/kubepods /var/lib/kubelet/device-plugins
touch /var/lib/kubelet/device-plugins/selftest
ip link add coach0 type bridge
if left=$("$TESTENV" real-node-check 2>&1); then fail "real-node-check missed planted leftovers"; fi
for want in "chain KUBE-COACH-SELFTEST" "cgroup /sys/fs/cgroup/pids/kubepods" "/var/lib/kubelet" "bridge coach0"; do
  [[ $left == *"$want"* ]] || fail "real-node-check did not name '$want': $left"
done
"$TESTENV" real-node-clean >/dev/null 2>&1 || fail "real-node-clean failed"
left=$("$TESTENV" real-node-check 2>&1) || fail "real-node-clean left:
$left"
say "real-node-check names planted leftovers; real-node-clean removes them"

say "timings: build ${build_s} s (cache: ${cold:-?}), up ${up_s} s, first pod Running ${first_s} s, down ${down_s} s"
