"""An MPIJob runs `mpirun` across its workers the way upstream's launcher does: the kubectl-delivery
init container copies kubectl and waits for the workers, Open MPI starts its daemons on them
through the operator's kubexec.sh (`kubectl exec` with the launcher's own ServiceAccount and Role),
and the ranks talk over the pod network."""
import kube

# Each rank all-gathers its host name and all-reduces its rank; rank 0 prints the result. Output
# of ranks on the workers reaches the launcher's log through Open MPI's daemons.
ALLREDUCE = r'''
import socket
from mpi4py import MPI
comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
hosts = comm.allgather(socket.gethostname())
total = comm.allreduce(rank + 1, op=MPI.SUM)
print("coach-mpi rank=%d size=%d host=%s" % (rank, size, socket.gethostname()), flush=True)
if rank == 0:
    print("coach-result world_size=%d sum=%d hosts=%s" % (size, total, ",".join(sorted(hosts))),
          flush=True)
'''


def mpi_job(name, workers):
    small = {"requests": {"cpu": "50m", "memory": "64Mi"}}
    return {
        "apiVersion": "kubeflow.org/v1", "kind": "MPIJob", "metadata": {"name": name},
        "spec": {
            "slotsPerWorker": 1,
            "runPolicy": {"cleanPodPolicy": "Running"},
            "mpiReplicaSpecs": {
                "Launcher": {"replicas": 1, "restartPolicy": "Never", "template": {"spec": {
                    "containers": [{
                        "name": "mpi", "image": kube.TRAINING_IMAGE, "resources": small,
                        # As upstream's examples: mpirun with the hostfile and rsh agent the
                        # operator configured through OMPI_MCA_* variables.
                        "command": ["mpirun", "-np", str(workers), "--bind-to", "none",
                                    "--mca", "btl", "tcp,self",
                                    "/usr/bin/python3", "-c", ALLREDUCE]}]}}},
                # No command: the operator gives workers `sleep 365d`, as upstream does.
                "Worker": {"replicas": workers, "restartPolicy": "Never", "template": {"spec": {
                    "containers": [{"name": "mpi", "image": kube.TRAINING_IMAGE,
                                    "resources": small}]}}},
            }}}


def test_mpijob_runs_mpirun_across_its_workers(ns):
    kube.apply(mpi_job("mpi", 2), ns)
    done = kube.wait_finished("MPIJob", "mpi", ns, timeout=300)
    assert kube.condition(done, "Succeeded")["status"] == "True", done["status"]

    log = kube.logs("mpi-launcher", ns)
    result = [line for line in log.splitlines() if line.startswith("coach-result ")]
    assert len(result) == 1, log
    fields = dict(kv.split("=", 1) for kv in result[0].split()[1:])
    # Ranks 0 and 1 ran one on each worker (slotsPerWorker 1), not on the launcher.
    assert fields == {"world_size": "2", "sum": "3", "hosts": "mpi-worker-0,mpi-worker-1"}, log
    assert sorted(line.split()[1] for line in log.splitlines()
                  if line.startswith("coach-mpi ")) == ["rank=0", "rank=1"], log

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
