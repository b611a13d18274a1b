#!/usr/bin/env python3
"""How fast the operator's admission webhooks answer under load: prints figures, checks nothing.

Usage: webhook_latency.py --kubeconfig K --kubectl KUBECTL --webhook https://localhost:PORT
                          --ca CA_PEM --runtimes DIR [--requests N] [--concurrency C]

Run by tools/suites/upstream_sdk.sh once its operator serves the webhooks (bench/README.md,
"admission"). Two paths, each 1 at a time (the baseline) and C at once (50 by default, each
worker on its own kept-alive connection):
  1. the TrainJob validator called directly: an AdmissionReview of a TrainJob on upstream's
     torch-distributed runtime (each review reads the runtime from the API server);
  2. through the API server as kubectl's requests go: server-side dry-run creates of that TrainJob
     (the defaulter and the validator called), against dry-run creates of a ConfigMap (no webhook)
     at the same concurrency, the floor of the same API server.
The client is Python threads on the same 2 cores: its own time is in every figure.
"""

import argparse
import base64
import http.client
import json
import os
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

import yaml

TRAINJOB = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": "bench", "namespace": "default"},
            "spec": {"runtimeRef": {"apiGroup": "trainer.kubeflow.org",
                                    "kind": "ClusterTrainingRuntime", "name": "torch-distributed"},
                     "trainer": {"numNodes": 2},
                     "runtimePatches": [{"manager": "example.com/bench", "trainer": {}}]}}
CONFIGMAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bench"},
             "data": {"a": "b"}}
VALIDATOR = "/validate-trainer-kubeflow-org-v1alpha1-trainjob"


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100.0 * (len(ordered) - 1))))]


class Target:
    """A host reached over TLS with one kept-alive connection per worker."""

    def __init__(self, url, context):
        parsed = urllib.parse.urlparse(url)
        self.host, self.port, self.context = parsed.hostname, parsed.port or 443, context

    def connect(self):
        return http.client.HTTPSConnection(self.host, self.port, context=self.context, timeout=30)


def run(target, method, path, body, headers, total, concurrency, ok_status):
    """Latencies (seconds) of `total` requests by `concurrency` workers, and the wall time."""
    latencies, errors, lock = [], [], threading.Lock()
    counter = iter(range(total))

    def worker():
        conn = target.connect()
        while True:
            with lock:
                if next(counter, None) is None:
                    break
            began = time.perf_counter()
            try:
                conn.request(method, path, body=body, headers=headers)
                response = conn.getresponse()
                data = response.read()
                status = response.status
            except (OSError, http.client.HTTPException) as e:
                conn.close()
                conn = target.connect()
                with lock:
                    errors.append(repr(e))
                continue
            elapsed = time.perf_counter() - began
            with lock:
                if status == ok_status:
                    latencies.append(elapsed)
                else:
                    errors.append("%d %s" % (status, data[:200]))
        conn.close()

    began = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return latencies, errors, time.perf_counter() - began


def report(label, latencies, errors, wall):
    if not latencies:
        print("[admission] %s: no answer (%d errors: %s)" % (label, len(errors), errors[:1]))
        return None
    p50, p99 = percentile(latencies, 50) * 1e3, percentile(latencies, 99) * 1e3
    print("[admission] %s: %d answered, p50 %.2f ms, p99 %.2f ms, max %.2f ms, %.0f/s, %d errors"
          % (label, len(latencies), p50, p99, max(latencies) * 1e3, len(latencies) / wall,
             len(errors)))
    return p99


def api_server(kubeconfig, workdir):
    """The kubeconfig's server as a Target, and its client certificate as headers-free TLS."""
    with open(kubeconfig) as f:
        config = yaml.safe_load(f)
    cluster = config["clusters"][0]["cluster"]
    user = config["users"][0]["user"]
    context = ssl.create_default_context()
    ca = os.path.join(workdir, "api-ca.crt")
    with open(ca, "wb") as f:
        f.write(base64.b64decode(cluster["certificate-authority-data"]))
    context.load_verify_locations(ca)
    cert, key = os.path.join(workdir, "client.crt"), os.path.join(workdir, "client.key")
    with open(cert, "wb") as f:
        f.write(base64.b64decode(user["client-certificate-data"]))
    with open(key, "wb") as f:
        f.write(base64.b64decode(user["client-key-data"]))
    context.load_cert_chain(cert, key)
    return Target(cluster["server"], context)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kubeconfig", required=True)
    ap.add_argument("--kubectl", required=True)
    ap.add_argument("--webhook", required=True)
    ap.add_argument("--ca", required=True)
    ap.add_argument("--runtimes", required=True)
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--concurrency", type=int, default=50)
    args = ap.parse_args()
    if not 1 <= args.concurrency <= 500 or not args.concurrency <= args.requests <= 100000:
        ap.error("--concurrency 1..500 and --requests concurrency..100000")
    subprocess.run([args.kubectl, "--kubeconfig", args.kubeconfig, "apply", "--server-side", "-f",
                    os.path.join(args.runtimes, "torch_distributed.yaml")],
                   check=True, capture_output=True)

    context = ssl.create_default_context(cafile=args.ca)
    webhook = Target(args.webhook, context)
    review = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                         "request": {"uid": "bench", "operation": "CREATE", "namespace": "default",
                                     "kind": {"group": "trainer.kubeflow.org",
                                              "version": "v1alpha1", "kind": "TrainJob"},
                                     "object": TRAINJOB}})
    headers = {"Content-Type": "application/json"}
    run(webhook, "POST", VALIDATOR, review, headers, 50, 1, 200)  # warm-up
    direct_1 = report("validator direct, 1 at a time",
                      *run(webhook, "POST", VALIDATOR, review, headers, 200, 1, 200))
    direct_c = report("validator direct, %d at once" % args.concurrency,
                      *run(webhook, "POST", VALIDATOR, review, headers, args.requests,
                           args.concurrency, 200))

    with tempfile.TemporaryDirectory() as workdir:
        server = api_server(args.kubeconfig, workdir)
        trainjobs = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs?dryRun=All"
        configmaps = "/api/v1/namespaces/default/configmaps?dryRun=All"
        through = args.requests // 2
        report("API server dry-run TrainJob create (both webhooks), 1 at a time",
               *run(server, "POST", trainjobs, json.dumps(TRAINJOB), headers, 100, 1, 201))
        floor = report("API server dry-run ConfigMap create (no webhook), %d at once"
                       % args.concurrency,
                       *run(server, "POST", configmaps, json.dumps(CONFIGMAP), headers, through,
                            args.concurrency, 201))
        api_c = report("API server dry-run TrainJob create (both webhooks), %d at once"
                       % args.concurrency,
                       *run(server, "POST", trainjobs, json.dumps(TRAINJOB), headers, through,
                            args.concurrency, 201))
    if direct_1 and direct_c:
        print("[admission] validator direct p99, %d at once / 1 at a time: x%.1f"
              % (args.concurrency, direct_c / direct_1))
    if api_c and floor:
        print("[admission] API server p99 at %d at once: TrainJob %.1f ms = x%.1f the ConfigMap floor; "
              "%.1f%% of the webhooks' 10 s timeout" % (args.concurrency, api_c, api_c / floor,
                                                         api_c / 100.0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
