"""Small kubectl-based helpers for the real-pod suite: any cluster KUBECONFIG names, coach installed.

Environment (tools/suites/realpods.sh and e2e/kind/run.sh set these):
  KUBECONFIG                  the cluster
  COACH_E2E_KUBECTL           kubectl to use (default: kubectl on PATH)
  COACH_E2E_TRAINING_IMAGE    image with python3, torch, xgboost, the examples (default
                              coach.local/coach-training:dev)
  COACH_E2E_NODE_SELECTOR     "key=value": replicas go to nodes with this label (the testenv's real
                              node); empty: anywhere
  COACH_E2E_TOLERATE          a taint key the replicas tolerate (the testenv's real node's)
  COACH_E2E_OPERATOR_NS       the namespace coach was installed in (default coach)
"""
import copy
import json
import os
import subprocess
import time

KUBECTL = os.environ.get("COACH_E2E_KUBECTL", "kubectl")
TRAINING_IMAGE = os.environ.get("COACH_E2E_TRAINING_IMAGE", "coach.local/coach-training:dev")
OPERATOR_NS = os.environ.get("COACH_E2E_OPERATOR_NS", "coach")
SPECS_KEY = {"PyTorchJob": "pytorchReplicaSpecs", "TFJob": "tfReplicaSpecs",
             "XGBoostJob": "xgbReplicaSpecs", "MPIJob": "mpiReplicaSpecs",
             "PaddleJob": "paddleReplicaSpecs", "JAXJob": "jaxReplicaSpecs"}
PLURAL = {k: k.lower() + "s" for k in SPECS_KEY}


def kubectl(*args, stdin=None, check=True, timeout=120):
    r = subprocess.run([KUBECTL, *args], input=stdin, capture_output=True, text=True,
                       timeout=timeout)
    if check and r.returncode != 0:
        raise AssertionError("kubectl %s failed (%d): %s" % (" ".join(args), r.returncode,
                                                             r.stderr.strip()))
    return r


def get_json(*args):
    return json.loads(kubectl("get", *args, "-o", "json").stdout)


def place(template):
    """Adds the suite's node selector and toleration to a pod template (kept: the user's own)."""
    spec = template.setdefault("spec", {})
    selector = os.environ.get("COACH_E2E_NODE_SELECTOR", "")
    if selector:
        key, _, value = selector.partition("=")
        spec.setdefault("nodeSelector", {})[key] = value
    taint = os.environ.get("COACH_E2E_TOLERATE", "")
    if taint:
        spec.setdefault("tolerations", []).append(
            {"key": taint, "operator": "Exists", "effect": "NoSchedule"})
    return template


def placed(job):
    """A copy of `job` with every replica template placed."""
    job = copy.deepcopy(job)
    for replica in job["spec"][SPECS_KEY[job["kind"]]].values():
        place(replica.setdefault("template", {}))
    return job


def apply(job, namespace):
    job = placed(job)
    job.setdefault("metadata", {})["namespace"] = namespace
    kubectl("apply", "-f", "-", stdin=json.dumps(job))
    return job


def condition(job, type_):
    for c in job.get("status", {}).get("conditions", []):
        if c.get("type") == type_:
            return c
    return None


def wait_for(predicate, timeout, what, interval=1.0):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError("timed out after %ds waiting for %s (last: %r)" % (timeout, what, last))


def wait_finished(kind, name, namespace, timeout=420):
    """Waits until the job is Succeeded or Failed; returns the job."""
    def finished():
        job = get_json(PLURAL[kind], name, "-n", namespace)
        for t in ("Succeeded", "Failed"):
            c = condition(job, t)
            if c and c.get("status") == "True":
                return job
        return None
    return wait_for(finished, timeout, "%s %s/%s to finish" % (kind, namespace, name), 2)


def pods_of(job_name, namespace):
    pods = get_json("pods", "-n", namespace, "-l",
                    "training.kubeflow.org/job-name=" + job_name)["items"]
    return {p["metadata"]["name"]: p for p in pods}


def logs(pod, namespace, container=None):
    args = ["logs", pod, "-n", namespace]
    if container:
        args += ["-c", container]
    return kubectl(*args, check=False).stdout


def results(pods, namespace):
    """The `coach-result key=value ...` lines of every pod, as dicts, by pod name."""
    out = {}
    for name in pods:
        for line in logs(name, namespace).splitlines():
            if line.startswith("coach-result "):
                out[name] = dict(kv.split("=", 1) for kv in line.split()[1:])
    return out


def describe_namespace(namespace):
    """What a failing test prints: the namespace's jobs, pods and events."""
    parts = []
    for args in (["get", "pytorchjobs,tfjobs,xgboostjobs,mpijobs,paddlejobs,jaxjobs,pods,svc", "-n",
                  namespace, "-o", "wide"],
                 ["get", "events", "-n", namespace, "--sort-by=.lastTimestamp"]):
        parts.append(kubectl(*args, check=False).stdout)
    for name in get_json("pods", "-n", namespace)["items"]:
        pod = name["metadata"]["name"]
        parts.append("--- logs %s\n%s" % (pod, "\n".join(logs(pod, namespace).splitlines()[-20:])))
    return "\n".join(parts)
