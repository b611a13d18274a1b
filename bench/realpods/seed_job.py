#!/usr/bin/env python3
"""The seed's PyTorchJob (1 Master + 2 Workers, gloo DDP) on real pods: coach against the floor.

  seed_job.py --coach CLI [--rounds N]     (KUBECONFIG and the COACH_E2E_* variables as for
                                           e2e/realpods; run by tools/suites/realpods.sh)

Each round, in fresh namespaces, one after the other:
  coach     `kubectl apply` of the job: coach-operator creates the pods and services;
  floor     the same Pods and Services as `coach render` prints them, created directly by
            `kubectl apply` (no operator, no job): what any controller would at best achieve;
  no-wait   the floor without the Workers' init-pytorch container: what that wait costs.
Measured from the apply: every replica's main container started (its startedAt), and every pod
Succeeded. Prints one line per run and the medians.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "e2e",
                                "realpods"))
import kube  # noqa: E402
from test_pytorch import example  # noqa: E402

NAME = "seed"


def parse_time(ts):
    return time.mktime(time.strptime(ts, "%Y-%m-%dT%H:%M:%SZ")) - time.timezone


def wait_pods(ns, count, timeout=600):
    """Waits until `count` pods exist and all Succeeded; returns them."""
    def done():
        pods = kube.get_json("pods", "-n", ns)["items"]
        if len(pods) == count and all(p["status"].get("phase") == "Succeeded" for p in pods):
            return pods
        if any(p["status"].get("phase") == "Failed" for p in pods):
            raise AssertionError("a pod failed in %s" % ns)
        return None
    return kube.wait_for(done, timeout, "%d pods Succeeded in %s" % (count, ns), 0.5)


def started_and_done(pods, t_apply):
    starts, ends = [], []
    for p in pods:
        s = p["status"]["containerStatuses"][0]["state"]["terminated"]
        starts.append(parse_time(s["startedAt"]))
        ends.append(parse_time(s["finishedAt"]))
    # The API's timestamps have 1 s resolution: the figures are rounded to the second.
    return max(starts) - t_apply, max(ends) - t_apply


def namespace(tag):
    ns = "bench-%s-%s" % (tag, uuid.uuid4().hex[:5])
    kube.kubectl("create", "namespace", ns)
    kube.wait_for(lambda: kube.kubectl("get", "sa", "default", "-n", ns, check=False)
                  .returncode == 0, 60, "default ServiceAccount")
    return ns


def rendered(cli, job, ns, init):
    job = kube.placed(job)
    job["metadata"]["namespace"] = ns
    out = subprocess.run([cli, "render", "-f", "-", "-o", "json"], input=json.dumps(job),
                         capture_output=True, text=True, check=True).stdout
    items = json.loads(out)["items"]
    for item in items:
        item["metadata"].pop("ownerReferences", None)  # no job exists on this path
        if item["kind"] == "Pod" and not init:
            item["spec"].pop("initContainers", None)
        if item["kind"] == "Pod":
            for c in item["spec"].get("initContainers", []):
                c["image"] = os.environ["COACH_E2E_OPERATOR_IMAGE"]
    return {"apiVersion": "v1", "kind": "List", "items": items}


def run(cli, mode):
    ns = namespace(mode)
    job = example("examples/pytorch/pytorch-ddp.yaml", NAME)
    try:
        t0 = time.time()
        if mode == "coach":
            kube.apply(job, ns)
        else:
            kube.kubectl("apply", "-f", "-", stdin=json.dumps(rendered(cli, job, ns,
                                                                        mode == "floor")))
        pods = wait_pods(ns, 3)
        return started_and_done(pods, t0)
    finally:
        kube.kubectl("delete", "namespace", ns, "--wait=false", check=False)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--coach", required=True, help="the coach CLI (for `coach render`)")
    ap.add_argument("--rounds", type=int, default=1)
    args = ap.parse_args()
    results = {m: [] for m in ("coach", "floor", "no-wait")}
    for r in range(args.rounds):
        for mode in results:
            started, done = run(args.coach, mode)
            results[mode].append((started, done))
            print("bench/realpods: round %d %-8s all replicas started %5.1f s, Succeeded %5.1f s"
                  % (r + 1, mode, started, done), flush=True)
    med = {m: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v))
           for m, v in results.items()}
    print("bench/realpods: medians of %d round(s), from kubectl apply (1 s resolution):"
          % args.rounds)
    for m, (s, d) in med.items():
        print("bench/realpods:   %-8s started %5.1f s  Succeeded %5.1f s" % (m, s, d))
    print("bench/realpods: coach / floor to Succeeded: x%.2f; init-pytorch adds %.1f s to the start"
          % (med["coach"][1] / med["floor"][1], med["floor"][0] - med["no-wait"][0]))


if __name__ == "__main__":
    main()
