"""Jobs started by PyTorch's own `torchrun` (the training image's PyTorch 2.15) on real pods, as
users start them: the manifests of examples/ with only the image (and small requests) changed, no
coach-launch. torchrun reads the operator's PET_* variables (node rank, master, rendezvous) and
starts 2 processes in each of 2 pods; all 4 ranks must train and agree on the parameters."""
import os

import yaml

import kube
from test_pytorch import ROOT, all_results, assert_trained_in_sync, example
from test_trainjob import RUNTIME, wait_trainjob_finished

EXAMPLE_TRAINJOB = "examples/trainer/torch-ddp-torchrun.yaml"


def assert_torchrun_started(pods, namespace):
    """Each pod's log has torchrun's own agent lines (logged from torch/distributed/run.py), and
    none of coach-launch's."""
    for name in pods:
        log = kube.logs(name, namespace)
        assert "torch/distributed/run.py" in log, "%s: no line of torchrun's:\n%s" % (name, log)
        assert "coach-launch" not in log, "%s ran behind coach-launch:\n%s" % (name, log)


def test_master_and_worker_each_run_torchrun_with_two_processes(ns):
    job = example("examples/pytorch/pytorch-ddp-torchrun.yaml", "tr")
    kube.apply(job, ns)
    done = kube.wait_finished("PyTorchJob", "tr", ns)
    assert kube.condition(done, "Succeeded")["status"] == "True", done["status"]
    pods = kube.pods_of("tr", ns)
    assert set(pods) == {"tr-master-0", "tr-worker-0"}
    for pod in pods.values():
        env = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0].get("env", [])}
        assert env.get("PET_NNODES") == "2" and env.get("PET_MASTER_PORT"), env
        assert pod["spec"]["containers"][0]["command"][0] == "torchrun"
    assert_trained_in_sync(all_results(pods, ns), 4)
    assert_torchrun_started(pods, ns)


def test_workers_only_meet_through_the_c10d_rendezvous(ns):
    job = example("examples/pytorch/pytorch-ddp-torchrun-elastic.yaml", "el")
    kube.apply(job, ns)
    done = kube.wait_finished("PyTorchJob", "el", ns)
    assert kube.condition(done, "Succeeded")["status"] == "True", done["status"]
    pods = kube.pods_of("el", ns)
    assert set(pods) == {"el-worker-0", "el-worker-1"}
    env = {e["name"]: e.get("value")
           for e in pods["el-worker-1"]["spec"]["containers"][0].get("env", [])}
    assert env.get("PET_RDZV_BACKEND") == "c10d" and env.get("PET_RDZV_ENDPOINT"), env
    assert_trained_in_sync(all_results(pods, ns), 4)
    assert_torchrun_started(pods, ns)


def test_trainjob_on_the_torch_runtime_runs_its_torchrun_command(ns):
    """Upstream's torch-distributed runtime applied unchanged; the TrainJob of examples/ with only
    the image, small requests and the suite's placement added."""
    with open(RUNTIME) as f:
        kube.kubectl("apply", "--server-side", "-f", "-", stdin=f.read())
    with open(os.path.join(ROOT, EXAMPLE_TRAINJOB)) as f:
        job = yaml.safe_load(f)
    job["metadata"] = {"name": "trt", "namespace": ns}
    job["spec"]["trainer"]["image"] = kube.TRAINING_IMAGE
    job["spec"]["trainer"]["resourcesPerNode"] = {"requests": {"cpu": "100m", "memory": "256Mi"}}
    pod_spec = kube.place({})["spec"]
    if pod_spec:
        job["spec"]["runtimePatches"] = [{
            "manager": "coach.dev/realpods-suite",
            "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [
                {"name": "node", "template": {"spec": {"template": {"spec": pod_spec}}}}]}}}}]
    kube.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(job))

    done = wait_trainjob_finished("trt", ns)
    complete = [c for c in done["status"]["conditions"] if c["type"] == "Complete"]
    assert complete and complete[0]["status"] == "True", done["status"]
    pods = {p["metadata"]["name"]: p for p in kube.get_json(
        "pods", "-n", ns, "-l", "jobset.sigs.k8s.io/jobset-name=trt")["items"]}
    assert len(pods) == 2, sorted(pods)
    for pod in pods.values():
        assert pod["spec"]["containers"][0]["command"][0] == "torchrun"
    assert_trained_in_sync(all_results(pods, ns), 4)
    assert_torchrun_started(pods, ns)

