"""PyTorchJobs that really train on real pods: the seed's DDP job, the same through coach-launch,
restarts with the real exit code."""
import copy
import os

import yaml

import kube

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def example(path, name):
    with open(os.path.join(ROOT, path)) as f:
        job = yaml.safe_load(f)
    job["metadata"] = {"name": name}
    for replica in job["spec"][kube.SPECS_KEY[job["kind"]]].values():
        for c in replica["template"]["spec"]["containers"]:
            c["image"] = kube.TRAINING_IMAGE
            # A small node runs every replica: ask little, keep the example's limits.
            c.setdefault("resources", {})["requests"] = {"cpu": "100m", "memory": "256Mi"}
    return job


def all_results(pods, namespace):
    """Every `coach-result` line of every pod (a coach-launch pod prints one per process)."""
    out = []
    for name in pods:
        for line in kube.logs(name, namespace).splitlines():
            if line.startswith("coach-result "):
                out.append(dict(kv.split("=", 1) for kv in line.split()[1:]))
    return out


def assert_trained_in_sync(results, world_size, checksum="params_checksum"):
    """One `coach-result` per rank 0..world_size-1, every one ok, all with one `checksum` field."""
    assert len(results) == world_size, results
    assert sorted(int(r["rank"]) for r in results) == list(range(world_size)), results
    assert {r["world_size"] for r in results} == {str(world_size)}, results
    assert {r["status"] for r in results} == {"ok"}, results
    assert len({r[checksum] for r in results}) == 1, "ranks disagree: %s" % results


def test_seed_ddp_job_trains_and_workers_wait_for_the_master(ns):
    job = example("examples/pytorch/pytorch-ddp.yaml", "ddp")
    kube.apply(job, ns)
    done = kube.wait_finished("PyTorchJob", "ddp", ns)
    assert kube.condition(done, "Succeeded")["status"] == "True", done["status"]
    pods = kube.pods_of("ddp", ns)
    assert set(pods) == {"ddp-master-0", "ddp-worker-0", "ddp-worker-1"}
    assert_trained_in_sync(all_results(pods, ns), 3)
    # Workers started only once the Master's name resolved (upstream's init-pytorch, done by
    # coach-launch from the operator's image); the Master has no such wait.
    assert not pods["ddp-master-0"]["spec"].get("initContainers")
    for name in ("ddp-worker-0", "ddp-worker-1"):
        inits = pods[name]["status"]["initContainerStatuses"]
        assert [s["name"] for s in inits] == ["init-pytorch"]
        assert inits[0]["state"]["terminated"]["exitCode"] == 0, inits
    # `kubectl logs` shows the training lines of rank 0 (the metric lines).
    assert "coach-metric name=test_accuracy" in kube.logs("ddp-master-0", ns)


def test_a_job_naming_only_the_image_runs_the_images_own_command(ns):
    """The pytorch-mnist pattern: no command in the manifest, the image's default trains."""
    job = example("examples/pytorch/pytorch-image-command.yaml", "imgcmd")
    for replica in job["spec"]["pytorchReplicaSpecs"].values():
        assert "command" not in replica["template"]["spec"]["containers"][0]
    kube.apply(job, ns)
    done = kube.wait_finished("PyTorchJob", "imgcmd", ns)
    assert kube.condition(done, "Succeeded")["status"] == "True", done["status"]
    pods = kube.pods_of("imgcmd", ns)
    assert set(pods) == {"imgcmd-master-0", "imgcmd-worker-0"}
    # The operator left the container's command to the image (it added no command of its own).
    for pod in pods.values():
        container = [c for c in pod["spec"]["containers"] if c["name"] == "pytorch"][0]
        assert "command" not in container and "args" not in container, container
    assert_trained_in_sync(all_results(pods, ns), 2)


def test_launcher_runs_two_nodes_of_two_processes(ns):
    job = example("examples/pytorch/pytorch-ddp.yaml", "launch")
    job["metadata"]["annotations"] = {"coach.dev/launcher": "true"}
    job["spec"]["nprocPerNode"] = "2"
    job["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = 1
    kube.apply(job, ns)
    done = kube.wait_finished("PyTorchJob", "launch", ns)
    assert kube.condition(done, "Succeeded")["status"] == "True", done["status"]
    pods = kube.pods_of("launch", ns)
    assert set(pods) == {"launch-master-0", "launch-worker-0"}
    assert_trained_in_sync(all_results(pods, ns), 4)
    for pod in pods.values():
        inits = [c["name"] for c in pod["spec"]["initContainers"]]
        assert inits == ["coach-launch-install"], inits  # coach-launch waits, not init-pytorch


SLEEP_THEN_SUCCEED = """
import os, sys, time
marker = "/scratch/ran-once"
if os.path.exists(marker):
    print("second run: exiting 0 in 15 s", flush=True)
    time.sleep(15)
    sys.exit(0)
open(marker, "w").close()
print("first run: waiting to be killed", flush=True)
time.sleep(600)
"""


def test_killed_replica_restarts_in_place_with_the_real_exit_code(ns):
    """OnFailure: the kubelet restarts the container; the pod records exit code 137."""
    job = {
        "apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "killed"},
        "spec": {"pytorchReplicaSpecs": {"Master": {
            "replicas": 1, "restartPolicy": "OnFailure",
            "template": {"spec": {
                "volumes": [{"name": "scratch", "emptyDir": {}}],
                "containers": [{
                    "name": "pytorch", "image": kube.TRAINING_IMAGE,
                    # sh stays PID 1, so the program can be killed from inside the container.
                    "command": ["/bin/sh", "-c", "/usr/bin/python3 -c \"$0\"; exit $?",
                                SLEEP_THEN_SUCCEED],
                    "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}],
                    "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}}}]}}}}}}
    kube.apply(job, ns)
    kube.wait_for(lambda: "first run" in kube.logs("killed-master-0", ns), 180, "the first run")
    # The program is PID 1's only child (an exec'd process's parent is outside the container).
    # The container then stops, and this exec with it: its own status says nothing.
    kube.kubectl("exec", "-n", ns, "killed-master-0", "--", "/bin/sh", "-c",
                 "for s in /proc/[0-9]*/status; do grep -q '^PPid:[[:space:]]*1$' $s && "
                 "p=${s#/proc/} && kill -9 ${p%/status}; done; true", check=False)
    # While the second run runs (the kubelet may drop the first container once the pod ends).
    def restarted():
        statuses = kube.get_json("pod", "killed-master-0", "-n", ns)["status"].get(
            "containerStatuses", [])
        return statuses and statuses[0]["restartCount"] >= 1 and "running" in statuses[0]["state"] \
            and statuses[0]
    status = kube.wait_for(restarted, 120, "the container restarted in place")
    assert status["restartCount"] == 1, status
    assert status["lastState"]["terminated"]["exitCode"] == 137, status
    done = kube.wait_finished("PyTorchJob", "killed", ns, timeout=240)
    assert kube.condition(done, "Succeeded")["status"] == "True", done["status"]


def test_exit_code_policy_fails_the_job_on_a_program_error(ns):
    """ExitCode: rank 1 exits 3 (not retryable), so the job fails and says which pod and code."""
    job = example("examples/pytorch/pytorch-fail.yaml", "fail")
    kube.apply(job, ns)
    done = kube.wait_finished("PyTorchJob", "fail", ns)
    failed = kube.condition(done, "Failed")
    assert failed and failed["status"] == "True", done["status"]
    # The worker's container ended with the program's own code; whichever replica's exit the
    # operator saw first (the Master then fails with 1 on the lost peer) is in an event.
    worker = kube.get_json("pod", "fail-worker-0", "-n", ns)["status"]["containerStatuses"][0]
    assert worker["state"]["terminated"]["exitCode"] == 3, worker
    events = kube.get_json("events", "-n", ns)["items"]
    exits = [e["message"] for e in events if e.get("reason") == "ExitedWithCode"]
    assert any("exited with code 3" in m or "exited with code 1" in m for m in exits), exits
