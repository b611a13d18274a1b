"""TrainJobs on upstream's JAX and XGBoost runtimes (jax-distributed, xgboost-distributed, applied
unchanged) train for real: the TrainJob sets only the trainer's image (upstream's are out of reach
here) and command; the programs find each other through the variables Trainer v2 gives them
(JAX_COORDINATOR_ADDRESS, JAX_NUM_PROCESSES, JAX_PROCESS_ID; DMLC_TRACKER_URI, DMLC_TRACKER_PORT,
DMLC_TASK_ID, DMLC_NUM_WORKER)."""
import os

import yaml

import kube
from test_trainjob import SHARED, completed_pods, placement_patches


def apply_runtime(filename):
    path = os.path.join(SHARED, "reference/kubeflow-v2/runtimes", filename)
    assert os.path.isfile(path), "COACH_SHARED_DIR must hold the reference runtimes"
    with open(path) as f:
        runtime = yaml.safe_load(f)
    kube.kubectl("apply", "--server-side", "-f", "-", stdin=yaml.safe_dump(runtime))
    return runtime["metadata"]["name"]


def train_on(runtime, name, ns, image, command, nodes=2):
    job = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "runtimeRef": {"name": runtime},
            "trainer": {
                "numNodes": nodes, "image": image, "command": command,
                "resourcesPerNode": {"requests": {"cpu": "100m", "memory": "512Mi"}},
            },
            "runtimePatches": placement_patches(),
        },
    }
    kube.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(job))
    _, pods = completed_pods(name, ns)
    assert sorted(p["spec"]["hostname"] for p in pods.values()) == [
        "%s-node-0-%d" % (name, i) for i in range(nodes)], sorted(pods)
    results = kube.results(pods, ns)
    assert len(results) == nodes, {p: kube.logs(p, ns)[-2000:] for p in pods}
    # Rank = the pod's completion index, as the runtime's fieldRef gives it.
    ranks = {pods[p]["spec"]["hostname"]: int(r["rank"]) for p, r in results.items()}
    assert ranks == {"%s-node-0-%d" % (name, i): i for i in range(nodes)}, results
    assert {r["world_size"] for r in results.values()} == {str(nodes)}, results
    assert {r["status"] for r in results.values()} == {"ok"}, results
    return pods, results


def test_jax_runtime_trains_with_jax_distributed(ns):
    runtime = apply_runtime("jax_distributed.yaml")
    pods, results = train_on(runtime, "tj-jax", ns, kube.FRAMEWORK_IMAGES["jax"],
                             ["python3", "examples/jax/jax_train.py", "--steps", "100"])
    assert len({r["checksum"] for r in results.values()}) == 1, results
    env = {e["name"]: e for e in next(iter(pods.values()))["spec"]["containers"][0]["env"]}
    assert env["JAX_COORDINATOR_ADDRESS"]["value"] == "tj-jax-node-0-0.tj-jax:29500", env


def test_xgboost_runtime_trains_with_the_collective_tracker(ns):
    runtime = apply_runtime("xgboost_distributed.yaml")
    pods, results = train_on(runtime, "tj-xgb", ns, kube.FRAMEWORK_IMAGES["xgboost"],
                             ["python3", "examples/xgboost/xgb_train.py", "--rounds", "40"])
    assert len({r["model_checksum"] for r in results.values()}) == 1, results
    env = {e["name"]: e for e in next(iter(pods.values()))["spec"]["containers"][0]["env"]}
    assert env["DMLC_TRACKER_URI"]["value"] == "tj-xgb-node-0-0.tj-xgb", env
