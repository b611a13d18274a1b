"""Jobs started by PyTorch's own `torchrun` (the training image's PyTorch 2.15) on real pods, as
users start them: the manifests of examples/ with only the image (and small requests) changed, no
coach-launch. torchrun reads the operator's PET_* variables (node rank, master, rendezvous) and
starts 2 processes in each of 2 pods; all 4 ranks must train and agree on the parameters."""
import os

import yaml

import kube
from test_pytorch import ROOT, all_results, assert_trained_in_sync, example
from test_trainjob import RUNTIME, completed_pods, placement_patches

EXAMPLE_TRAINJOB = "examples/trainer/torch-ddp-torchrun.yaml"


def assert_torchrun_started(pods, namespace):
    """Each pod's log has torchrun's own agent lines (logged from torch/distributed/run.py), and
    none of coach-launch's."""
    for name in pods:
        log = kube.logs(name, namespace)
        assert "torch/distributed/run.py" in log, "%s: no line of torchrun's:\n%s" % (name, log)
        assert "coach-launch" not in log, "%s ran behind coach-launch:\n%s" % (name, log)


def run_example(path, name, namespace, pod_names):
    """Applies the example of `path` as job `name`; asserts it Succeeded with exactly `pod_names`,
    each running torchrun; returns its pods."""
    kube.apply(example(path, name), namespace)
    done = kube.wait_finished("PyTorchJob", name, namespace)
    assert kube.condition(done, "Succeeded")["status"] == "True", done["status"]
    pods = kube.pods_of(name, namespace)
    assert set(pods) == set(pod_names)
    for pod in pods.values():
        assert pod["spec"]["containers"][0]["command"][0] == "torchrun"
    return pods


def env_of(pod):
    return {e["name"]: e.get("value") for e in pod["spec"]["containers"][0].get("env", [])}


def test_master_and_worker_each_run_torchrun_with_two_processes(ns):
    pods = run_example("examples/pytorch/pytorch-ddp-torchrun.yaml", "tr", ns,
                       ["tr-master-0", "tr-worker-0"])
    for pod in pods.values():
        env = env_of(pod)
        assert env.get("PET_NNODES") == "2" and env.get("PET_MASTER_PORT"), env
    assert_trained_in_sync(all_results(pods, ns), 4)
    assert_torchrun_started(pods, ns)


def test_workers_only_meet_through_the_c10d_rendezvous(ns):
    pods = run_example("examples/pytorch/pytorch-ddp-torchrun-elastic.yaml", "el", ns,
                       ["el-worker-0", "el-worker-1"])
    env = env_of(pods["el-worker-1"])
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
    job["spec"]["runtimePatches"] = placement_patches()
    kube.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(job))

    _, pods = completed_pods("trt", ns)
    assert len(pods) == 2, sorted(pods)
    for pod in pods.values():
        assert pod["spec"]["containers"][0]["command"][0] == "torchrun"
    assert_trained_in_sync(all_results(pods, ns), 4)
    assert_torchrun_started(pods, ns)

