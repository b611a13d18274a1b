"""Training code in pods logs to MLflow the way it already does, and everything it logs is findable from the
job (docs/mlflow.md). The server runs where the pods reach it: COACH_E2E_MLFLOW_URI."""
import json
import os
import urllib.parse
import urllib.request

import kube

# The snippet most MLflow users write, verbatim but for the server's address and where the values come from.
SNIPPET = """
import os
import mlflow
world_size = int(os.environ["WORLD_SIZE"])
loss = 1.0 / (1 + int(os.environ["RANK"]))
mlflow.set_tracking_uri("%s")
mlflow.set_experiment("distributed-training")
with mlflow.start_run():
    mlflow.log_param("world_size", world_size)
    mlflow.log_metric("loss", loss)
print("logged", flush=True)
"""

# As distributed code does, the ranks meet before and after (on Kubernetes a PyTorchJob's workers start
# once the master answers, and a master that ended first would end the job before they ran at all).
RENDEZVOUS = """
import torch.distributed as dist
dist.init_process_group("gloo")
dist.barrier()
"""
SNIPPET_BETWEEN_BARRIERS = RENDEZVOUS + SNIPPET + "dist.barrier()\n"

# Names no experiment: behind coach-launch the master resumes the job's run.
PLAIN = """
import os
import mlflow
print("COACH_MLFLOW_RUN_ID=%s" % os.environ.get("COACH_MLFLOW_RUN_ID", ""), flush=True)
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


def server():
    uri = os.environ.get("COACH_E2E_MLFLOW_URI", "")
    assert uri, "COACH_E2E_MLFLOW_URI must name an MLflow server the pods reach"
    return uri


def experiment_id(uri, name):
    got = api(uri, "experiments/get-by-name?experiment_name=" + urllib.parse.quote(name))
    return got["experiment"]["experiment_id"]


def runs_tagged(uri, experiment_ids, uid):
    found = api(uri, "runs/search", {"experiment_ids": experiment_ids, "max_results": 100,
                                     "filter": "tags.`coach.job_uid` = '%s'" % uid}).get("runs", [])
    out = []
    for run in found:
        out.append({"id": run["info"]["run_id"], "name": run["info"]["run_name"],
                    "experiment_id": run["info"]["experiment_id"],
                    "tags": {t["key"]: t["value"] for t in run["data"].get("tags", [])},
                    "params": {p["key"]: p["value"] for p in run["data"].get("params", [])},
                    "metrics": {m["key"]: m["value"] for m in run["data"].get("metrics", [])}})
    return out


def pytorch_job(name, code, uri, experiment, workers=0, annotations=None):
    def replica(n):
        return {"replicas": n, "restartPolicy": "Never",
                "template": {"spec": {"containers": [{
                    "name": "pytorch", "image": kube.TRAINING_IMAGE,
                    "command": ["/usr/bin/python3", "-c", code],
                    "resources": {"requests": {"cpu": "50m", "memory": "128Mi"}}}]}}}
    specs = {"Master": replica(1)}
    if workers:
        specs["Worker"] = replica(workers)
    meta = {"coach.dev/mlflow-tracking-uri": uri, "coach.dev/mlflow-experiment": experiment}
    meta.update(annotations or {})
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
            "metadata": {"name": name, "annotations": meta},
            "spec": {"runPolicy": {"cleanPodPolicy": "None"}, "pytorchReplicaSpecs": specs}}


def listed_runs(name, ns, count):
    """The job's annotation coach.dev/mlflow-runs once it lists `count` runs."""
    def listed():
        job = kube.get_json("pytorchjob", name, "-n", ns)
        value = job["metadata"].get("annotations", {}).get("coach.dev/mlflow-runs")
        runs = json.loads(value) if value else []
        return runs if len(runs) == count else None
    return kube.wait_for(listed, 90, "coach.dev/mlflow-runs listing %d runs" % count)


def test_the_snippet_runs_on_every_rank_and_the_job_lists_its_runs(ns):
    uri = server()
    experiment = "realpods-" + ns
    kube.apply(pytorch_job("snippet", SNIPPET_BETWEEN_BARRIERS % uri, uri, experiment, workers=2), ns)
    done = kube.wait_finished("PyTorchJob", "snippet", ns, timeout=300)
    assert kube.condition(done, "Succeeded")["status"] == "True", done["status"]
    uid = done["metadata"]["uid"]
    job_run = done["metadata"]["annotations"]["coach.dev/mlflow-run-id"]
    runs = listed_runs("snippet", ns, 4)
    assert runs[0] == {"replica": "job", "run_id": job_run,
                       "url": "%s/#/experiments/%s/runs/%s" % (uri, experiment_id(uri, experiment), job_run)}
    # A plain pod has no binding: every rank's run is its own, tagged with the job, under the job's run.
    # (A rank that loses MLflow's race to create the experiment logs into the job's experiment instead.)
    own = [r for r in runs_tagged(uri, [experiment_id(uri, "distributed-training"),
                                        experiment_id(uri, experiment)], uid) if r["id"] != job_run]
    assert sorted(r["tags"]["coach.replica"] for r in own) == ["master-0", "worker-0", "worker-1"], own
    for run in own:
        assert run["params"] == {"world_size": "3"}, run
        assert "loss" in run["metrics"], run
        assert run["tags"]["mlflow.parentRunId"] == job_run, run
        assert run["tags"]["coach.namespace"] == ns, run
    assert sorted(r["run_id"] for r in runs[1:]) == sorted(r["id"] for r in own)


def test_behind_coach_launch_the_masters_points_land_in_the_jobs_run(ns):
    uri = server()
    experiment = "realpods-launch-" + ns
    kube.apply(pytorch_job("launched", PLAIN, uri, experiment,
                           annotations={"coach.dev/launcher": "true"}), ns)
    done = kube.wait_finished("PyTorchJob", "launched", ns, timeout=300)
    assert kube.condition(done, "Succeeded")["status"] == "True", done["status"]
    out = kube.logs("launched-master-0", ns)
    assert "logged" in out, out
    job_run = done["metadata"]["annotations"]["coach.dev/mlflow-run-id"]
    assert "COACH_MLFLOW_RUN_ID=" + job_run in out, out
    runs = runs_tagged(uri, [experiment_id(uri, experiment)], done["metadata"]["uid"])
    # One run for the job: the master resumed it instead of making its own.
    assert [r["id"] for r in runs] == [job_run], runs
    assert runs[0]["name"] == "%s/launched" % ns
    assert abs(runs[0]["metrics"].get("loss", -1) - 1.0 / 3) < 1e-9, runs[0]

    def finished():
        info = api(uri, "runs/get?run_id=" + job_run)["run"]["info"]
        return info["status"] == "FINISHED" and info
    kube.wait_for(finished, 60, "the job's run FINISHED (the job's outcome)")
