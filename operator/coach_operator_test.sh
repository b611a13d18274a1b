#!/usr/bin/env bash
# coach-operator as a process: flag validation (exit 2 naming the flag), start with the
# local backend, /healthz and /readyz (on --http-listen and --probe-listen), graceful stop on
# SIGTERM.
set -u
BIN="$(dirname "$0")/coach-operator"
[[ -x "$BIN" ]] || BIN="$TEST_SRCDIR/coach/operator/coach-operator"
TMP="${TEST_TMPDIR:-$(mktemp -d)}"
fail() { echo "FAIL: $*"; exit 1; }

expect_usage() {  # expect_usage <text in stderr> <args...>
  local want="$1"; shift
  local out rc
  out="$(env -u COACH_BACKEND "$BIN" --state-dir "$TMP/state" "$@" 2>&1)"; rc=$?
  [[ $rc -eq 2 ]] || fail "$* exited $rc, want 2: $out"
  [[ "$out" == *"$want"* ]] || fail "$*: output lacks '$want': $out"
}

# --backend=kube: every flag is checked (and named) before the kubeconfig is read.
export KUBECONFIG="$TMP/no-such-kubeconfig"
expect_usage "--kubeconfig" --backend=kube
expect_usage "--kubeconfig" --backend=kube --kubeconfig="$TMP/missing"
expect_usage "--kube-api-qps" --backend=kube --kube-api-qps=200000
expect_usage "--kube-api-qps" --backend=kube --kube-api-qps=inf
expect_usage "--kube-api-burst" --backend=kube --kube-api-burst=0
expect_usage "--kube-event-qps" --backend=kube --kube-event-qps=0
expect_usage "--kube-event-burst" --backend=kube --kube-event-burst=-1
expect_usage "--mlflow-run-wait" --mlflow-run-wait=-1
expect_usage "--history-max-log-bytes" --history-max-log-bytes=10
expect_usage "--history-retention-hours" --history-retention-hours=0
expect_usage "--history-s3-bucket: required" --history-s3-endpoint=http://127.0.0.1:9
expect_usage "--history-s3-bucket: needs" --history-s3-bucket=b
expect_usage "AWS_ACCESS_KEY_ID" --history-s3-endpoint=http://127.0.0.1:9 --history-s3-bucket=coach-logs
AWS_ACCESS_KEY_ID=k AWS_SECRET_ACCESS_KEY=s expect_usage "--history-s3-bucket" \
  --history-s3-endpoint=http://127.0.0.1:9 --history-s3-bucket=Bad_Bucket
AWS_ACCESS_KEY_ID=k AWS_SECRET_ACCESS_KEY=s expect_usage "--history-s3-endpoint" \
  --history-s3-endpoint=ftp://127.0.0.1:9 --history-s3-bucket=coach-logs
AWS_ACCESS_KEY_ID=k AWS_SECRET_ACCESS_KEY=s expect_usage "--history-s3-prefix" \
  --history-s3-endpoint=http://127.0.0.1:9 --history-s3-bucket=coach-logs --history-s3-prefix=x
expect_usage "--mlflow-run-wait" --mlflow-run-wait=4000
expect_usage "--kube-event-shutdown-grace" --backend=kube --kube-event-shutdown-grace=-1
expect_usage "--lost-node-grace" --backend=kube --lost-node-grace=2h
expect_usage "--lost-node-grace" --backend=kube --lost-node-grace=-1s
expect_usage "--lost-node-grace" --backend=kube --lost-node-grace=soon
# Both ends of the range pass (the kubeconfig, read last, is what fails).
expect_usage "--kubeconfig" --backend=kube --lost-node-grace=0s
expect_usage "--kubeconfig" --backend=kube --lost-node-grace=1h
expect_usage "--in-place-restart-timeout" --backend=kube --in-place-restart-timeout=4s
expect_usage "--in-place-restart-timeout" --backend=kube --in-place-restart-timeout=61m
expect_usage "--in-place-restart-timeout" --backend=kube --in-place-restart-timeout=later
expect_usage "--kubeconfig" --backend=kube --in-place-restart-timeout=5s
expect_usage "--pytorch-init-container-max-tries" --pytorch-init-container-max-tries=0
expect_usage "--pytorch-restart-scope: must be Replica or Job" --pytorch-restart-scope=job
expect_usage "--pytorch-wait-for-master" --pytorch-wait-for-master=maybe
expect_usage "--namespaces" --backend=kube --namespaces=team-a,Not_A_Namespace
expect_usage "--leader-elect: only with --backend=kube" --leader-elect=true
expect_usage "--leader-elect-lease-duration" --backend=kube --leader-elect=true --leader-elect-lease-duration=soon
expect_usage "--leader-elect-retry-period" --backend=kube --leader-elect --leader-elect-retry-period=0s
expect_usage "--leader-elect-lease-duration: must be greater than --leader-elect-renew-deadline" \
  --backend=kube --leader-elect=true --leader-elect-lease-duration=10s --leader-elect-renew-deadline=10s
expect_usage "--leader-elect-renew-deadline" \
  --backend=kube --leader-elect=true --leader-elect-renew-deadline=2s --leader-elect-retry-period=2s
expect_usage "--leader-elect-namespace" --backend=kube --leader-elect=true --leader-elect-namespace=Bad_NS
expect_usage "--backend" --backend=slurm
expect_usage "--karpenter-zone-policy" --karpenter --karpenter-zone-policy=strict
expect_usage "--karpenter-gpu-taint" --karpenter-gpu-taint=nvidia.com/gpu=true:Never
expect_usage "--karpenter-gpu-nodepool" --karpenter-gpu-nodepool="not a pool"
expect_usage "--karpenter-cpu-nodepool: must differ" --karpenter-cpu-nodepool=gpu-workloads
expect_usage "--token-file" --token-file="$TMP/missing-token"
expect_usage "--api-auth: must be none, token or kubernetes" --api-auth=basic
expect_usage "--api-auth=kubernetes: needs --backend=kube" --api-auth=kubernetes
expect_usage "--api-auth=token: needs --token-file" --backend=kube --api-auth=token
echo "s3cret-0123456789abcdef" > "$TMP/token"
chmod 644 "$TMP/token"
expect_usage "--token-file: $TMP/token is readable by every user (mode 0644); chmod 600 it" \
  --token-file="$TMP/token"
chmod 600 "$TMP/token"
echo "s3cret" > "$TMP/short-token"
chmod 600 "$TMP/short-token"
expect_usage "6 characters; use at least 16" --token-file="$TMP/short-token"
expect_usage "--token-file: not used with --api-auth=none" --api-auth=none --token-file="$TMP/token"
expect_usage "--tls-cert and --tls-key" --tls-cert="$TMP/cert.pem"
echo "x" > "$TMP/key.pem"
expect_usage "--tls-cert" --tls-cert="$TMP/missing.pem" --tls-key="$TMP/key.pem"
expect_usage "--tls-client-ca" --tls-client-ca="$TMP/ca.pem"
# A key that is not the certificate's: named as such, not reported as a busy port.
for pair in a b; do
  openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=$pair" \
    -keyout "$TMP/$pair.key" -out "$TMP/$pair.pem" 2>/dev/null || fail "openssl req"
done
expect_usage "--tls-key: it is not the private key of the certificate" \
  --tls-cert="$TMP/a.pem" --tls-key="$TMP/b.key"
expect_usage "--tls-cert: no PEM certificate" --tls-cert="$TMP/a.key" --tls-key="$TMP/a.key"
# Admission webhooks: where they listen and where their certificate comes from.
expect_usage "--webhook-listen: only with --backend=kube" --webhook-listen=127.0.0.1:9443
expect_usage "--webhook-*: only with --webhook-listen" --backend=kube --webhook-secret=coach/cert
expect_usage "--webhook-listen: want host:port" --backend=kube --webhook-listen=9443
expect_usage "--webhook-listen: needs --webhook-cert-dir or --webhook-secret" --backend=kube \
  --webhook-listen=127.0.0.1:9443
expect_usage "--webhook-secret: want NAMESPACE/NAME" --backend=kube --webhook-listen=127.0.0.1:9443 \
  --webhook-secret=cert
expect_usage "--webhook-secret: needs --webhook-service or --webhook-extra-names" --backend=kube \
  --webhook-listen=127.0.0.1:9443 --webhook-secret=coach/cert
expect_usage "--webhook-extra-names: \"Not_A_Name\" is not a DNS name" --backend=kube \
  --webhook-listen=127.0.0.1:9443 --webhook-secret=coach/cert --webhook-extra-names=localhost,Not_A_Name
expect_usage "--webhook-cert-dir: the certificate and the caBundle are someone else's" --backend=kube \
  --webhook-listen=127.0.0.1:9443 --webhook-cert-dir="$TMP" --webhook-secret=coach/cert
expect_usage "--webhook-client-ca: $TMP/a.key holds no PEM certificate" --backend=kube \
  --webhook-listen=127.0.0.1:9443 --webhook-cert-dir="$TMP" --webhook-client-ca="$TMP/a.key"
# Replicas' progress reports: where pods reach the API and what they trust there.
expect_usage "--progress-report-address: only with --backend=kube" \
  --progress-report-address=coach.coach-system.svc:7450
expect_usage "--progress-report-address: want host:port" --backend=kube \
  --progress-report-address=http://coach:7450
expect_usage "--progress-report-address: want host:port" --backend=kube --progress-report-address=coach
expect_usage "--progress-report-ca-file: only with --progress-report-address" --backend=kube \
  --progress-report-ca-file="$TMP/a.pem"
expect_usage "--progress-report-ca-file: only with TLS" --backend=kube \
  --progress-report-address=coach:7450 --progress-report-ca-file="$TMP/a.pem"
expect_usage "--progress-report-ca-file must name the CA" --backend=kube \
  --progress-report-address=coach:7450 --tls-cert="$TMP/a.pem" --tls-key="$TMP/a.key"
expect_usage "--progress-report-ca-file: $TMP/a.key holds no PEM certificate" --backend=kube \
  --progress-report-address=coach:7450 --tls-cert="$TMP/a.pem" --tls-key="$TMP/a.key" \
  --progress-report-ca-file="$TMP/a.key"
expect_usage "replica pods have no client certificate for --tls-client-ca" --backend=kube \
  --progress-report-address=coach:7450 --tls-cert="$TMP/a.pem" --tls-key="$TMP/a.key" \
  --tls-client-ca="$TMP/b.pem" --progress-report-ca-file="$TMP/a.pem"
# Good ones get as far as the kubeconfig.
expect_usage "--kubeconfig" --backend=kube --progress-report-address=coach.coach-system.svc:7450 \
  --tls-cert="$TMP/a.pem" --tls-key="$TMP/a.key" --progress-report-ca-file="$TMP/a.pem"
expect_usage "--kubeconfig" --backend=kube --progress-report-address="[::1]:7450"
expect_usage "--workers" --workers=0
expect_usage "--gang-scheduler" --gang-scheduler=kueue
expect_usage "--log-level" --log-level=loud
expect_usage "--listen" --listen=nowhere
expect_usage "--probe-listen" --probe-listen=nowhere
expect_usage "--probe-listen" --probe-listen=127.0.0.1:99999
expect_usage "--probe-listen: \"0.0.0.0:7451\" overlaps --http-listen" --probe-listen=0.0.0.0:7451
COACH_BACKEND=kube "$BIN" --state-dir "$TMP/state" >/dev/null 2>&1; rc=$?
[[ $rc -eq 2 ]] || fail "COACH_BACKEND=kube without a kubeconfig exited $rc, want 2"
unset KUBECONFIG

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
GRPC_PORT=$(free_port)
HTTP_PORT=$(free_port)
PROBE_PORT=$(free_port)
"$BIN" --state-dir "$TMP/state" --listen "127.0.0.1:$GRPC_PORT" \
  --http-listen "127.0.0.1:$HTTP_PORT" --probe-listen "127.0.0.1:$PROBE_PORT" >"$TMP/operator.log" 2>&1 &
PID=$!
ready=""
for _ in $(seq 1 100); do
  if [[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$HTTP_PORT/readyz")" == 200 ]]; then
    ready=1; break
  fi
  kill -0 $PID 2>/dev/null || { cat "$TMP/operator.log"; fail "operator exited early"; }
  sleep 0.1
done
[[ -n "$ready" ]] || { cat "$TMP/operator.log"; fail "never ready"; }
[[ "$(curl -s "http://127.0.0.1:$HTTP_PORT/healthz")" == "ok" ]] || fail "/healthz"
curl -s "http://127.0.0.1:$HTTP_PORT/metrics" | grep -q '^coach_backend_up 1' || fail "/metrics"
[[ "$(curl -s "http://127.0.0.1:$PROBE_PORT/healthz")" == "ok" ]] || fail "--probe-listen /healthz"
[[ "$(curl -s "http://127.0.0.1:$PROBE_PORT/readyz")" == "ready" ]] || fail "--probe-listen /readyz"
[[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PROBE_PORT/metrics")" == 404 ]] ||
  fail "--probe-listen serves /metrics"
[[ -f "$TMP/state/coach.db" ]] || fail "no database in the state dir"
# The default authenticates: a token made on first start, private to the operator's user.
[[ "$(stat -c %a "$TMP/state/api-token")" == 600 ]] || fail "api-token is not mode 600"
[[ "$(tr -d '\n' <"$TMP/state/api-token" | wc -c)" == 64 ]] || fail "api-token is not 64 hex digits"
grep -q "auth token" "$TMP/operator.log" || fail "the log does not say the API takes a token"
grep -q "$TMP/state/api-token" "$TMP/operator.log" || fail "the log does not name the token file"
grep -qF "$(cat "$TMP/state/api-token")" "$TMP/operator.log" && fail "the log holds the token"
kill -TERM $PID
for _ in $(seq 1 100); do kill -0 $PID 2>/dev/null || break; sleep 0.1; done
kill -0 $PID 2>/dev/null && { kill -KILL $PID; fail "did not stop on SIGTERM"; }
wait $PID; rc=$?
[[ $rc -eq 0 ]] || { cat "$TMP/operator.log"; fail "exit $rc after SIGTERM"; }
grep -q "stopped" "$TMP/operator.log" || fail "no clean stop in the log"
echo PASS
