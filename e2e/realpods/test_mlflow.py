"""Training code in a pod logs to MLflow through the standard MLFLOW_* variables, and its metrics land
in the job's one run (the server runs where the pods reach it: COACH_E2E_MLFLOW_URI)."""
import json
import os
import urllib.parse
import urllib.request

import kube

TRAIN = """
import mlflow, os
print("MLFLOW_RUN_ID=%s" % os.environ.get("MLFLOW_RUN_ID", ""), flush=True)
with mlflow.start_run():
    for step in range(1, 4):
        mlflow.log_metric("loss", 1.0 / step, step=step)
print("logged", flush=True)
"""


def api(uri, path, body=None):
    url = uri.rstrip("/") + "/api/2.0/mlflow/" + path
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read() or b"{}")


def test_metrics_from_inside_a_pod_land_in_the_jobs_run(ns):
    uri = os.environ.get("COACH_E2E_MLFLOW_URI", "")
    assert uri, "COACH_E2E_MLFLOW_URI must name an MLflow server the pods reach"
    experiment = "realpods-" + ns
    job = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
           "metadata": {"name": "tracked", "annotations": {
               "coach.dev/mlflow-tracking-uri": uri, "coach.dev/mlflow-experiment": experiment}},
           "spec": {"pytorchReplicaSpecs": {"Master": {
               "replicas": 1, "restartPolicy": "Never",
               "template": {"spec": {"containers": [{
                   "name": "pytorch", "image": kube.TRAINING_IMAGE,
                   "command": ["/usr/bin/python3", "-c", TRAIN],
                   "resources": {"requests": {"cpu": "50m", "memory": "128Mi"}}}]}}}}}}
    kube.apply(job, ns)
    done = kube.wait_finished("PyTorchJob", "tracked", ns, timeout=300)
    assert kube.condition(done, "Succeeded")["status"] == "True", done["status"]
    out = kube.logs("tracked-master-0", ns)
    assert "logged" in out, out
    run_id = [l.split("=", 1)[1] for l in out.splitlines() if l.startswith("MLFLOW_RUN_ID=")][0]
    assert run_id, out

    exp = api(uri, "experiments/get-by-name?experiment_name=" + urllib.parse.quote(experiment))
    runs = api(uri, "runs/search", {"experiment_ids": [exp["experiment"]["experiment_id"]],
                                    "max_results": 100}).get("runs", [])
    # One run for the job: the replica resumed it instead of making its own.
    assert [r["info"]["run_id"] for r in runs] == [run_id], runs
    run = runs[0]
    assert run["info"]["run_name"] == "%s/tracked" % ns, run["info"]
    metrics = {m["key"]: m["value"] for m in run["data"].get("metrics", [])}
    assert abs(metrics.get("loss", -1) - 1.0 / 3) < 1e-9, metrics

    def finished():
        info = api(uri, "runs/get?run_id=" + run_id)["run"]["info"]
        return info["status"] == "FINISHED" and info
    kube.wait_for(finished, 60, "the job's run FINISHED (the job's outcome)")
