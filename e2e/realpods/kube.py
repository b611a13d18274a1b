"""Small kubectl-based helpers for the real-pod suite: any cluster KUBECONFIG names, coach installed.

Environment (tools/suites/realpods.sh and e2e/kind/run.sh set these):
  KUBECONFIG                  the cluster
  COACH_E2E_KUBECTL           kubectl to use (default: kubectl on PATH)
  COACH_E2E_TRAINING_IMAGE    image with python3, torch, xgboost, the examples (default
                              coach.local/coach-training:dev)
  COACH_E2E_IMAGE_<FRAMEWORK> the framework images (TENSORFLOW, JAX, PADDLE, XGBOOST; default
                              coach.local/coach-training-<framework>:dev)
  COACH_E2E_NODE_SELECTOR     "key=value": replicas go to nodes with this label (the testenv's real
                              node); empty: anywhere
  COACH_E2E_TOLERATE          a taint key the replicas tolerate (the testenv's real node's)
  COACH_E2E_OPERATOR_NS       the namespace coach was installed in (default coach)
  COACH_E2E_OPERATOR_SERVICE  the chart's Service there (default coach)
  COACH_E2E_COACH_CLI         the coach binary
  COACH_E2E_KUBEFLOW_SDK_PYTHON  a python with Kubeflow Trainer v2's SDK (kubeflow 0.5.0)
"""
import contextlib
import copy
import json
import os
import socket
import subprocess
import time

KUBECTL = os.environ.get("COACH_E2E_KUBECTL", "kubectl")
TRAINING_IMAGE = os.environ.get("COACH_E2E_TRAINING_IMAGE", "coach.local/coach-training:dev")
# tools/image/build-framework-image's images, by framework.
FRAMEWORK_IMAGES = {fw: os.environ.get("COACH_E2E_IMAGE_" + fw.upper(), "coach.local/coach-training-%s:dev" % fw)
                    for fw in ("tensorflow", "jax", "paddle", "xgboost")}
OPERATOR_NS = os.environ.get("COACH_E2E_OPERATOR_NS", "coach")
OPERATOR_SERVICE = os.environ.get("COACH_E2E_OPERATOR_SERVICE", "coach")
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


def coach_cli():
    """The coach binary (COACH_E2E_COACH_CLI)."""
    cli = os.environ.get("COACH_E2E_COACH_CLI", "")
    assert cli and os.access(cli, os.X_OK), "COACH_E2E_COACH_CLI must name the coach binary"
    return cli


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def reader_token(namespace, directory, name, resources):
    """A token file (in `directory`) for a new ServiceAccount `name` that may only `get`
    `resources` (kubectl create role's --resource) in `namespace`: the chart's default
    auth.mode=kubernetes has coach check the caller's own RBAC."""
    kubectl("create", "serviceaccount", name, "-n", namespace)
    kubectl("create", "role", name, "-n", namespace, "--verb=get", "--resource=" + resources)
    kubectl("create", "rolebinding", name, "-n", namespace, "--role=" + name,
            "--serviceaccount=%s:%s" % (namespace, name))
    path = os.path.join(directory, name + ".token")
    with open(path, "w") as f:
        f.write(kubectl("create", "token", name, "-n", namespace).stdout.strip())
    return path


@contextlib.contextmanager
def operator_api():
    """Yields "127.0.0.1:<port>", forwarded to the gRPC port of the chart's Service until the
    block ends."""
    port = free_port()
    forward = subprocess.Popen([KUBECTL, "port-forward", "-n", OPERATOR_NS,
                                "svc/" + OPERATOR_SERVICE, "%d:7450" % port],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_for(lambda: socket.socket().connect_ex(("127.0.0.1", port)) == 0, 30,
                 "the port-forward")
        yield "127.0.0.1:%d" % port
    finally:
        forward.kill()
        forward.wait()


def table_cell(table, row, column):
    """The cell of `column` in the row whose first cell is `row`, from a table as kubectl and
    coach print them (columns aligned under their headers); None without either."""
    lines = table.splitlines()
    if not lines:
        return None
    header = lines[0]
    starts = [i for i in range(len(header))
              if header[i] != " " and (i == 0 or header[i - 1] == " ")]
    names = [header[i:].split(" ", 1)[0] for i in starts]
    if column not in names:
        return None
    k = names.index(column)
    for line in lines[1:]:
        if line.split(" ", 1)[0] == row:
            end = starts[k + 1] if k + 1 < len(starts) else len(line)
            return line[starts[k]:end].strip()
    return None
