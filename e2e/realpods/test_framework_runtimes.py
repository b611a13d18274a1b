"""TrainJobs on upstream's JAX, XGBoost and MPI runtimes (jax-distributed, xgboost-distributed,
deepspeed-distributed) train for real. Upstream's images are out of reach here: the TrainJob sets the
trainer's image and command, and the MPI runtime, whose node pods keep the runtime's image, is applied
with coach's image in its place, nothing else changed; the programs find each other through the variables
Trainer v2 gives them (JAX_COORDINATOR_ADDRESS, JAX_NUM_PROCESSES, JAX_PROCESS_ID; DMLC_TRACKER_URI,
DMLC_TRACKER_PORT, DMLC_TASK_ID, DMLC_NUM_WORKER) or, on the MPI runtime, through mpirun, which
reaches the nodes' sshd with the job's key pair and the hostfile the operator wrote."""
import os

import yaml

import kube
from test_trainjob import SHARED, completed_pods, placement_patches


def apply_runtime(filename, image=None):
    """Applies upstream's runtime; with `image`, that image in place of upstream's in every container
    (an MPI runtime's node pods run the runtime's image: trainer.image replaces only the launcher's)."""
    path = os.path.join(SHARED, "reference/kubeflow-v2/runtimes", filename)
    assert os.path.isfile(path), "COACH_SHARED_DIR must hold the reference runtimes"
    with open(path) as f:
        runtime = yaml.safe_load(f)
    if image:
        for rjob in runtime["spec"]["template"]["spec"]["replicatedJobs"]:
            for c in rjob["template"]["spec"]["template"]["spec"]["containers"]:
                c["image"] = image
    kube.kubectl("apply", "--server-side", "-f", "-", stdin=yaml.safe_dump(runtime))
    return runtime["metadata"]["name"]


def train_on_mpi(runtime, name, ns, image, command, nodes=2):
    """A TrainJob on an MPI runtime whose launcher runs `command` (mpirun) across the nodes;
    returns its pods, the launcher's coach-result lines and its log."""
    job = trainjob_manifest(runtime, name, ns, image, command, nodes)
    job["spec"]["runtimePatches"] = placement_patches(("node", "launcher"))
    kube.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(job))
    _, pods = completed_pods(name, ns)
    launcher = [p for p in pods if "-launcher-" in p]
    assert len(launcher) == 1, sorted(pods)
    log = kube.logs(launcher[0], ns)
    results = [dict(kv.split("=", 1) for kv in line.split()[1:])
               for line in log.splitlines() if line.startswith("coach-result ")]
    return pods, results, log


def trainjob_manifest(runtime, name, ns, image, command, nodes):
    return {
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


def train_on(runtime, name, ns, image, command, nodes=2):
    job = trainjob_manifest(runtime, name, ns, image, command, nodes)
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


def test_mpi_runtime_trains_with_mpirun_over_ssh(ns):
    # deepspeed-distributed: mpirun on the launcher, which is a node too (runLauncherAsNode), sshd on
    # the node pods as the image's user; only the images and the command are the test's.
    runtime = apply_runtime("deepspeed_distributed.yaml", image=kube.TRAINING_IMAGE)
    pods, results, log = train_on_mpi(
        runtime, "tj-mpi", ns, kube.TRAINING_IMAGE,
        ["mpirun", "--bind-to", "none", "--mca", "btl", "tcp,self", "python3", "examples/mpi/mpi_train.py"])
    # The hostfile names 2 hosts of 1 slot: one rank on the launcher (mpirun's own host, so rank 0),
    # the other on the node pod, which only ssh can have started (the runtime has no other way in).
    assert sorted((r["rank"], r["host"]) for r in results) == [
        ("0", "tj-mpi-launcher-0-0"), ("1", "tj-mpi-node-0-0")], log[-3000:]
    assert {(r["world_size"], r["status"]) for r in results} == {("2", "ok")}, results
    assert len({r["checksum"] for r in results}) == 1, results
    node = [p for p in pods.values() if p["spec"]["hostname"] == "tj-mpi-node-0-0"][0]
    assert node["spec"]["containers"][0]["command"] == ["/usr/sbin/sshd"], node["spec"]["containers"][0]
