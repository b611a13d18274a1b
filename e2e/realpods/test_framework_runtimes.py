"""TrainJobs on upstream's JAX, XGBoost and MPI runtimes (jax-distributed, xgboost-distributed,
deepspeed-distributed, with DeepSpeed itself) train for real. Upstream's images are out of reach here: the TrainJob sets the
trainer's image and command, and the MPI runtime, whose node pods keep the runtime's image, is applied
with coach's image in its place, nothing else changed; the programs find each other through the variables
Trainer v2 gives them (JAX_COORDINATOR_ADDRESS, JAX_NUM_PROCESSES, JAX_PROCESS_ID; DMLC_TRACKER_URI,
DMLC_TRACKER_PORT, DMLC_TASK_ID, DMLC_NUM_WORKER) or, on the MPI runtime, through mpirun, which
reaches the nodes' sshd with the job's key pair and the hostfile the operator wrote."""
import os

import yaml

import kube
from test_pytorch import all_results, assert_trained_in_sync
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


def apply_trainjob(runtime, name, ns, image, command, nodes, placed=("node",)):
    """Applies a TrainJob on `runtime` whose trainer runs `command` in `image` on `nodes` nodes, its
    `placed` replicated jobs' pods where the suite places replicas."""
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
            "runtimePatches": placement_patches(placed),
        },
    }
    kube.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(job))


def run_trainjob(runtime, name, ns, image, command, nodes, placed=("node",)):
    """apply_trainjob, then waits for Complete; returns the job's pods."""
    apply_trainjob(runtime, name, ns, image, command, nodes, placed)
    return completed_pods(name, ns)[1]


def train_on(runtime, name, ns, image, command, checksum, nodes=2):
    """A TrainJob whose node pods each print one result; checks each pod's rank is its completion
    index and the ranks agree; returns its pods."""
    pods = run_trainjob(runtime, name, ns, image, command, nodes)
    assert sorted(p["spec"]["hostname"] for p in pods.values()) == [
        "%s-node-0-%d" % (name, i) for i in range(nodes)], sorted(pods)
    results = kube.results(pods, ns)
    assert len(results) == nodes, {p: kube.logs(p, ns)[-2000:] for p in pods}
    # Rank = the pod's completion index, as the runtime's fieldRef gives it.
    ranks = {pods[p]["spec"]["hostname"]: int(r["rank"]) for p, r in results.items()}
    assert ranks == {"%s-node-0-%d" % (name, i): i for i in range(nodes)}, results
    assert_trained_in_sync(list(results.values()), nodes, checksum)
    return pods


def test_jax_runtime_trains_with_jax_distributed(ns):
    runtime = apply_runtime("jax_distributed.yaml")
    pods = train_on(runtime, "tj-jax", ns, kube.FRAMEWORK_IMAGES["jax"],
                    ["python3", "examples/jax/jax_train.py", "--steps", "100"], "checksum")
    env = {e["name"]: e for e in next(iter(pods.values()))["spec"]["containers"][0]["env"]}
    assert env["JAX_COORDINATOR_ADDRESS"]["value"] == "tj-jax-node-0-0.tj-jax:29500", env


def test_xgboost_runtime_trains_with_the_collective_tracker(ns):
    runtime = apply_runtime("xgboost_distributed.yaml")
    pods = train_on(runtime, "tj-xgb", ns, kube.FRAMEWORK_IMAGES["xgboost"],
                    ["python3", "examples/xgboost/xgb_train.py", "--rounds", "40"], "model_checksum")
    env = {e["name"]: e for e in next(iter(pods.values()))["spec"]["containers"][0]["env"]}
    assert env["DMLC_TRACKER_URI"]["value"] == "tj-xgb-node-0-0.tj-xgb", env


def test_deepspeed_runtime_trains_with_deepspeed_over_mpirun_and_ssh(ns):
    # deepspeed-distributed: mpirun on the launcher, which is a node too (runLauncherAsNode), sshd on
    # the node pods as the image's user; only the images and the command are the test's. DeepSpeed
    # takes its ranks from Open MPI's environment and rank 0's address through mpi4py.
    runtime = apply_runtime("deepspeed_distributed.yaml", image=kube.TRAINING_IMAGE)
    apply_trainjob(
        runtime, "tj-mpi", ns, kube.TRAINING_IMAGE,
        ["mpirun", "--bind-to", "none", "--mca", "btl", "tcp,self", "python3",
         "examples/deepspeed/ds_train.py"],
        2, placed=("node", "launcher"))

    # The node pod runs the runtime's sshd. Read while the job runs: its pods go once it Completes.
    def node_pod():
        return [p for p in kube.get_json("pods", "-n", ns, "-l", "jobset.sigs.k8s.io/jobset-name=tj-mpi")["items"]
                if p["spec"].get("hostname") == "tj-mpi-node-0-0"]
    node = kube.wait_for(node_pod, 120, "the node pod of tj-mpi")[0]
    assert node["spec"]["containers"][0]["command"] == ["/usr/sbin/sshd"], node["spec"]["containers"][0]
    pods = completed_pods("tj-mpi", ns)[1]
    launcher = [p for p in pods if "-launcher-" in p]
    assert len(launcher) == 1, sorted(pods)
    # Every rank's line reaches the launcher's log through mpirun.
    results = all_results(launcher, ns)
    # The hostfile names 2 hosts of 1 slot: one rank on the launcher (mpirun's own host, so rank 0),
    # the other on the node pod, which only ssh can have started (the runtime has no other way in).
    assert sorted((r["rank"], r["host"], r["device"]) for r in results) == [
        ("0", "tj-mpi-launcher-0-0", "cpu"), ("1", "tj-mpi-node-0-0", "cpu")], results
    assert_trained_in_sync(results, 2, "checksum")
