#!/usr/bin/env bash
# The Kubernetes backend's chaos suites (operator SIGKILLs, kube-apiserver restarts with etcd
# compacted, a fault-injecting proxy), as make test runs them: e2e/chaos/run.sh at its defaults.
exec "$(dirname "$0")/../../e2e/chaos/run.sh" "$@"
