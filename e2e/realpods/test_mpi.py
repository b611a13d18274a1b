"""An MPIJob runs `mpirun` across its workers the way upstream's launcher does: the kubectl-delivery
init container copies kubectl and waits for the workers, Open MPI starts its daemons on them
through the operator's kubexec.sh (`kubectl exec` with the launcher's own ServiceAccount and Role),
and the ranks talk over the pod network."""
import os

import yaml

import kube
from test_pytorch import ROOT, all_results, assert_trained_in_sync


def mpi_job(name, workers, example="examples/mpi/mpijob.yaml"):
    """The MPIJob `example` with `workers` Workers, `mpirun -np` as many."""
    with open(os.path.join(ROOT, example)) as f:
        job = yaml.safe_load(f)
    job["metadata"] = {"name": name}
    specs = job["spec"]["mpiReplicaSpecs"]
    specs["Worker"]["replicas"] = workers
    command = specs["Launcher"]["template"]["spec"]["containers"][0]["command"]
    command[command.index("-np") + 1] = str(workers)
    for replica in specs.values():
        for c in replica["template"]["spec"]["containers"]:
            c["image"] = kube.TRAINING_IMAGE
            c["resources"] = {"requests": {"cpu": "50m", "memory": "64Mi"}}
    return job


def test_mpijob_runs_mpirun_across_its_workers(ns):
    kube.apply(mpi_job("mpi", 2), ns)
    done = kube.wait_finished("MPIJob", "mpi", ns, timeout=300)
    assert kube.condition(done, "Succeeded")["status"] == "True", done["status"]

    # Every rank's result reaches the launcher's log through Open MPI's daemons: ranks 0 and 1
    # trained one on each worker (slotsPerWorker 1), not on the launcher, and agree.
    results = all_results(["mpi-launcher"], ns)
    assert sorted((r["rank"], r["host"]) for r in results) == [
        ("0", "mpi-worker-0"), ("1", "mpi-worker-1")], results
    assert_trained_in_sync(results, 2, "checksum")

    # The init container delivered kubectl after the workers were Running.
    delivery = kube.logs("mpi-launcher", ns, container="kubectl-delivery")
    assert "all 2 worker pod(s) Running" in delivery, delivery
    launcher = kube.get_json("pod", "mpi-launcher", "-n", ns)
    assert launcher["spec"]["serviceAccountName"] == "mpi-launcher"
    inits = launcher["status"]["initContainerStatuses"]
    assert [(s["name"], s["state"]["terminated"]["exitCode"]) for s in inits] == \
        [("kubectl-delivery", 0)], inits
    # cleanPodPolicy Running: the workers' `sleep 365d` is gone once the job Succeeded.
    kube.wait_for(lambda: not [p for p in kube.pods_of("mpi", ns) if "worker" in p], 60,
                  "the workers deleted by cleanPodPolicy Running")


def test_mpijob_trains_with_deepspeed_over_mpi(ns):
    """examples/deepspeed/mpijob.yaml: DeepSpeed finds its peers from Open MPI's environment (rank 0's
    pod address through mpi4py) and trains with ZeRO stage 1 over gloo across the two workers."""
    kube.apply(mpi_job("ds", 2, "examples/deepspeed/mpijob.yaml"), ns)
    done = kube.wait_finished("MPIJob", "ds", ns, timeout=300)
    launcher = kube.logs("ds-launcher", ns)
    assert kube.condition(done, "Succeeded")["status"] == "True", (done["status"], launcher[-3000:])
    results = all_results(["ds-launcher"], ns)
    assert sorted((r["rank"], r["host"], r["device"]) for r in results) == [
        ("0", "ds-worker-0", "cpu"), ("1", "ds-worker-1", "cpu")], results
    assert_trained_in_sync(results, 2, "checksum")


def test_mpijob_launcher_can_exec_only_into_its_own_workers(ns):
    """The launcher's Role names its workers: kubectl exec into any other pod is Forbidden."""
    kube.apply(mpi_job("mpiexec", 1), ns)
    kube.wait_finished("MPIJob", "mpiexec", ns, timeout=300)
    role = kube.get_json("role", "mpiexec-launcher", "-n", ns)
    exec_rules = [r for r in role["rules"] if "pods/exec" in r["resources"]]
    assert exec_rules == [{"apiGroups": [""], "resources": ["pods/exec"], "verbs": ["create"],
                           "resourceNames": ["mpiexec-worker-0"]}], role["rules"]
    sa = "system:serviceaccount:%s:mpiexec-launcher" % ns
    allowed = kube.kubectl("auth", "can-i", "create", "pods/mpiexec-worker-0",
                           "--subresource=exec", "-n", ns, "--as", sa, check=False)
    assert allowed.stdout.strip() == "yes", allowed.stdout + allowed.stderr
    denied = kube.kubectl("auth", "can-i", "create", "pods/mpiexec-launcher",
                          "--subresource=exec", "-n", ns, "--as", sa, check=False)
    assert denied.stdout.strip() == "no", denied.stdout + denied.stderr
