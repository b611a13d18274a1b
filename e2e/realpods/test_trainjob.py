"""A Kubeflow Trainer v2 TrainJob that really trains on real pods: upstream's torch runtime, applied
unchanged, the trainer's image and command set in the TrainJob, gloo DDP across 2 nodes that find
each other through the names Trainer v2 gives them (PET_MASTER_ADDR = <job>-node-0-0.<job>). The
ranks start behind coach-launch (coach.dev/launcher), which reads the same PET_* variables as
torchrun; test_torchrun.py runs the same runtime with PyTorch's own torchrun."""
import os
import subprocess

import yaml

import kube
from test_pytorch import assert_trained_in_sync

SHARED = os.environ.get("COACH_SHARED_DIR", "")
HERE = os.path.dirname(os.path.abspath(__file__))
RUNTIME = os.path.join(SHARED, "reference/kubeflow-v2/runtimes/torch_distributed.yaml")


def placement_patches(jobs=("node",)):
    """The runtimePatches that put a TrainJob's pods of the replicated `jobs` where the suite places
    replicas (none where it places them anywhere)."""
    pod_spec = kube.place({})["spec"]
    if not pod_spec:
        return []
    return [{"manager": "coach.dev/realpods-suite",
             "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [
                 {"name": job, "template": {"spec": {"template": {"spec": pod_spec}}}} for job in jobs]}}}}]


def trainjob(name, nodes):
    """A TrainJob on torch-distributed whose node pods go where the suite places replicas."""
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name, "annotations": {"coach.dev/launcher": "true"}},
        "spec": {
            "runtimeRef": {"name": "torch-distributed"},
            "trainer": {
                "numNodes": nodes,
                "image": kube.TRAINING_IMAGE,
                "command": ["/usr/bin/python3", "examples/pytorch/ddp_train.py", "--epochs", "2"],
                "resourcesPerNode": {"requests": {"cpu": "100m", "memory": "256Mi"}},
            },
            "runtimePatches": placement_patches(),
        },
    }


def completed_pods(name, namespace):
    """Waits for TrainJob `name` to finish, asserts it Completed; returns (job, its pods by name)."""
    done = wait_trainjob_finished(name, namespace)
    complete = [c for c in done["status"]["conditions"] if c["type"] == "Complete"]
    assert complete and complete[0]["status"] == "True", done["status"]
    pods = {p["metadata"]["name"]: p for p in kube.get_json(
        "pods", "-n", namespace, "-l", "jobset.sigs.k8s.io/jobset-name=" + name)["items"]}
    return done, pods


def wait_trainjob_finished(name, namespace, timeout=420):
    def finished():
        job = kube.get_json("trainjobs", name, "-n", namespace)
        for c in job.get("status", {}).get("conditions", []):
            if c["type"] in ("Complete", "Failed") and c["status"] == "True":
                return job
        return None
    return kube.wait_for(finished, timeout, "TrainJob %s/%s to finish" % (namespace, name), 2)


def test_torch_trainjob_trains_with_ddp_across_two_nodes(ns):
    assert os.path.isfile(RUNTIME), "COACH_SHARED_DIR must hold the reference runtimes"
    with open(RUNTIME) as f:
        runtime = yaml.safe_load(f)
    kube.kubectl("apply", "--server-side", "-f", "-", stdin=yaml.safe_dump(runtime))
    job = trainjob("tj", 2)
    job["metadata"]["namespace"] = ns
    kube.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(job))

    done, pods = completed_pods("tj", ns)
    assert kube.condition(done, "Complete")["reason"] == "AllJobsCompleted", done["status"]
    assert sorted(p["spec"]["hostname"] for p in pods.values()) == ["tj-node-0-0", "tj-node-0-1"]
    results = []
    for name in pods:
        for line in kube.logs(name, ns).splitlines():
            if line.startswith("coach-result "):
                results.append(dict(kv.split("=", 1) for kv in line.split()[1:]))
    # coach-launch on each node: PET_NNODES=2, PET_NPROC_PER_NODE=1 (100m of CPU), one rank a pod.
    assert_trained_in_sync(results, 2)
    assert done["status"]["jobsStatus"] == [
        {"name": "node", "ready": 0, "succeeded": 1, "failed": 0, "active": 0, "suspended": 0}]


def test_kubeflow_sdk_reads_the_trained_jobs_logs(ns):
    """Kubeflow Trainer v2's Python SDK (kubeflow 0.5.0, its own venv), unchanged, on the job of the
    real node: get_job says Complete and get_job_logs streams node-0's training output."""
    sdk_python = os.environ.get("COACH_E2E_KUBEFLOW_SDK_PYTHON", "")
    assert os.access(sdk_python, os.X_OK), (
        "COACH_E2E_KUBEFLOW_SDK_PYTHON names no python with the kubeflow SDK "
        "(tools/suites/realpods.sh sets it)")
    with open(RUNTIME) as f:
        kube.kubectl("apply", "--server-side", "-f", "-", stdin=f.read())
    job = trainjob("sdk", 2)
    job["metadata"]["namespace"] = ns
    kube.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(job))
    wait_trainjob_finished("sdk", ns)
    script = "\n".join([
        "import sys",
        "from kubeflow.trainer import KubernetesBackendConfig, TrainerClient",
        "client = TrainerClient(KubernetesBackendConfig(namespace=sys.argv[1]))",
        "print('STATUS', client.get_job(sys.argv[2]).status)",
        "for line in client.get_job_logs(sys.argv[2]):",
        "    print(line)",
    ])
    out = subprocess.run([sdk_python, "-c", script, ns, "sdk"], capture_output=True, text=True,
                         timeout=180)
    assert out.returncode == 0, out.stderr
    assert "STATUS Complete" in out.stdout, out.stdout + out.stderr
    assert "coach-result rank=0" in out.stdout, out.stdout


def test_kubeflow_sdk_trains_a_function_with_ddp_under_torchrun(ns):
    """The kubeflow 0.5.0 SDK's own train(): a Python function (sdk/train_function.py) that trains
    with DDP, shipped by the SDK to upstream's torch-distributed runtime (applied unchanged), whose
    command runs it under torchrun; the image through CustomTrainer's `image`, the pods placed
    through a RuntimePatch. Both ranks train and agree; get_job_logs returns rank 0's output."""
    sdk_python = os.environ.get("COACH_E2E_KUBEFLOW_SDK_PYTHON", "")
    assert os.access(sdk_python, os.X_OK), "COACH_E2E_KUBEFLOW_SDK_PYTHON names no python"
    with open(RUNTIME) as f:
        kube.kubectl("apply", "--server-side", "-f", "-", stdin=f.read())
    out = subprocess.run(
        [sdk_python, os.path.join(HERE, "sdk", "train_function.py"), ns, kube.TRAINING_IMAGE,
         os.environ.get("COACH_E2E_NODE_SELECTOR", ""), os.environ.get("COACH_E2E_TOLERATE", "")],
        capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    name = next(line.split()[1] for line in lines if line.startswith("JOB "))
    assert "STATUS Complete" in lines, out.stdout + out.stderr
    assert any(line.startswith("sdk-result rank=0 ") for line in lines), out.stdout
    pods = kube.get_json("pods", "-n", ns, "-l", "jobset.sigs.k8s.io/jobset-name=" + name)["items"]
    assert len(pods) == 2, [p["metadata"]["name"] for p in pods]
    results = []
    for pod in pods:
        assert pod["spec"]["containers"][0]["command"][:2] == ["bash", "-c"], pod["spec"]["containers"][0]
        assert "torchrun" in pod["spec"]["containers"][0]["command"][2]
        for line in kube.logs(pod["metadata"]["name"], ns).splitlines():
            if line.startswith("sdk-result "):
                results.append(dict(kv.split("=", 1) for kv in line.split()[1:]))
    assert sorted(int(r["rank"]) for r in results) == [0, 1], results
    assert {r["world_size"] for r in results} == {"2"} and {r["status"] for r in results} == {"ok"}
    assert len({r["params_checksum"] for r in results}) == 1, "ranks disagree: %s" % results
